"""The read side of a crawl's WARC files (store/warc_read.py): which files a crawl holds, its stored
responses as records, filtered; a file still being written, a damaged one."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from harvestman.model.errors import StorageError
from harvestman.model.records import FetchResult
from harvestman.store.warc import WarcWriter
from harvestman.store.warc_read import (
    ReadCounts,
    crawl_warc_files,
    read_response,
    stored_responses,
)

HTML = (("Content-Type", "text/html; charset=utf-8"),)


def _fetch(url: str, body: bytes, *, status: int = 200, headers: tuple[tuple[str, str], ...] = HTML,
           at: float = 1_700_000_000.0, requested: str = "") -> FetchResult:
    return FetchResult(url=requested or url, final_url=url, status=status, headers=headers, body=body,
                       started_at=at)


def _write(directory: Path, *fetches: FetchResult, finish: bool = True) -> WarcWriter:
    writer = WarcWriter(directory)
    for fetch in fetches:
        writer.write(fetch, (), [])
    if finish:
        writer.close()
    return writer


# -- the read side -------------------------------------------------------------------------------


def test_every_warc_file_of_a_crawl_in_path_order_other_machines_and_open_ones_in(tmp_path: Path) -> None:
    _write(tmp_path / "warc", _fetch("http://a.test/", b"<p>a</p>"))
    _write(tmp_path / "segments" / "20240101" / "warc", _fetch("http://a.test/s", b"<p>s</p>"))
    _write(tmp_path / "machines" / "b" / "warc", _fetch("http://a.test/b", b"<p>b</p>"))
    open_one = _write(tmp_path / "warc", _fetch("http://a.test/o", b"<p>o</p>"), finish=False)
    every = crawl_warc_files(tmp_path)
    assert [p.relative_to(tmp_path).parts[0] for p in every] == ["machines", "segments", "warc", "warc"]
    assert open_one.current_path in every
    assert open_one.current_path not in crawl_warc_files(tmp_path, open_files=False)
    open_one.close()


def test_responses_filtered_html_latest_and_by_url(tmp_path: Path) -> None:
    _write(tmp_path / "warc",
           _fetch("http://a.test/", b"<p>old</p>", at=1_700_000_000.0),
           _fetch("http://a.test/logo.png", b"\x89PNG", headers=(("Content-Type", "image/png"),)),
           _fetch("http://a.test/gone", b"<p>no</p>", status=404),
           _fetch("http://a.test/b", b"<p>b</p>", requested="http://a.test/to-b"))
    _write(tmp_path / "segments" / "s1" / "warc", _fetch("http://a.test/", b"<p>new</p>", at=1_700_000_100.0))
    pages = list(stored_responses(tmp_path))
    assert sorted(r.url for r in pages) == ["http://a.test/", "http://a.test/", "http://a.test/b"]
    every = list(stored_responses(tmp_path, html_only=False, ok_only=False))
    assert {r.url: r.status for r in every}["http://a.test/gone"] == 404
    latest = {r.url: r for r in stored_responses(tmp_path, latest=True)}
    assert latest["http://a.test/"].body == b"<p>new</p>"  # by WARC-Date, not by file order
    assert latest["http://a.test/b"].requested_url == "http://a.test/to-b"
    assert latest["http://a.test/b"].content_type == "text/html; charset=utf-8"
    [only] = stored_responses(tmp_path, urls={"http://a.test/b"}, bodies=False)
    assert only.body is None
    assert read_response(only.file, only.offset).body == b"<p>b</p>"


def test_a_file_being_written_is_read_up_to_its_last_whole_record(tmp_path: Path) -> None:
    writer = _write(tmp_path / "warc", _fetch("http://a.test/1", b"<p>one</p>"), finish=False)
    path = writer.current_path
    assert path is not None
    first = path.stat().st_size
    noise = random.Random(1).randbytes(20_000).hex().encode()  # incompressible: a long gzip member
    writer.write(_fetch("http://a.test/2", b"<p>" + noise + b"</p>"), (), [])
    data = path.read_bytes()
    path.write_bytes(data[: first + 5_000])  # as if the writer were half-way through its response
    counts = ReadCounts()
    found = [r.url for r in stored_responses(tmp_path, counts=counts)]
    assert found == ["http://a.test/1"]
    assert counts.torn_files == 1
    assert list(stored_responses(tmp_path, open_files=False)) == []  # finished files only
    writer.close()


def test_a_damaged_finished_file_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "warc").mkdir()
    (tmp_path / "warc" / "x.warc.gz").write_bytes(gzip.compress(b"not a WARC record\r\n\r\n"))
    with pytest.raises(StorageError, match=r"x\.warc\.gz"):
        list(stored_responses(tmp_path))

"""WARC output: readable by warcio, rotated by size, and recoverable after a kill at any moment."""

from __future__ import annotations

import gzip
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestman.records import FetchResult, RedirectHop, Timings
from harvestman.warc import OPEN_SUFFIX, WarcWriter, complete_length, recover


def result(i: int = 0, body: bytes = b"<html>hello</html>", **kw: object) -> FetchResult:
    fields: dict[str, object] = {
        "url": f"http://a.test/start/{i}",
        "final_url": f"http://a.test/page/{i}?q=1",
        "redirects": (RedirectHop(f"http://a.test/start/{i}", 301, f"/page/{i}?q=1"),),
        "status": 200,
        "headers": (
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Length", "7"),
            ("X-Evil", "a\r\nWARC-Type: forged"),
        ),
        "content_type": "text/html",
        "body": body,
        "started_at": 1_700_000_000.25,
        "timings": Timings(0.001, 0.002, 0.0, 0.01, 0.02),
        "wire_bytes": 99,
        "remote_addr": "127.0.0.1",
    }
    fields.update(kw)
    return FetchResult(**fields)  # type: ignore[arg-type]


def read_all(path: Path) -> list[tuple[str, str | None, bytes, dict[str, str]]]:
    out = []
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, check_digests="raise"):
            headers = dict(rec.rec_headers.headers)
            http = dict(rec.http_headers.headers) if rec.http_headers else {}
            headers.update({f"http:{k}": v for k, v in http.items()})
            if rec.http_headers and rec.rec_type == "request":
                headers["http:line"] = rec.http_headers.protocol
            out.append(
                (
                    rec.rec_type,
                    rec.rec_headers.get_header("WARC-Target-URI"),
                    rec.content_stream().read(),
                    headers,
                )
            )
    return out


def test_records_are_readable(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as w:
        w.write(result(), (("User-Agent", "harvestman-test"),), ["http://a.test/x", "http://b.test/y"])
        w.write(result(1, body=b"x" * 50, truncated=True), (), [])
        w.write(
            result(2, status=0, headers=(), body=b"", error_class="timeout", error_message="slow"), (), []
        )
    [path] = list(tmp_path.iterdir())
    assert path.name.startswith("harvestman-") and path.name.endswith(".warc.gz")
    records = read_all(path)
    types = [r[0] for r in records]
    assert types == [
        "warcinfo",
        "response",
        "request",
        "metadata",
        "response",
        "request",
        "metadata",
        "request",
        "metadata",
    ]
    _, uri, payload, headers = records[1]
    assert uri == "http://a.test/page/0?q=1" and payload == b"<html>hello</html>"
    assert headers["WARC-Payload-Digest"].startswith("sha1:") and headers["WARC-IP-Address"] == "127.0.0.1"
    assert headers["WARC-Date"].startswith("2023-11-14T22:13:20.25")
    assert "http:Content-Encoding" not in headers and "http:Transfer-Encoding" not in headers
    assert headers["http:Content-Length"] == str(len(payload))
    assert headers["http:X-Harvestman-Original-Content-Encoding"] == "gzip"
    assert "\n" not in headers["http:X-Evil"]
    response_id = headers["WARC-Record-ID"]
    assert records[2][3]["WARC-Concurrent-To"] == response_id
    assert records[2][1] == uri and records[2][3]["http:User-Agent"] == "harvestman-test"
    assert records[3][3]["WARC-Concurrent-To"] == response_id
    meta = records[3][2].decode()
    assert "outlink: http://a.test/x\r\n" in meta and "outlink: http://b.test/y\r\n" in meta
    assert "requestedURL: http://a.test/start/0" in meta and "fetchTimeMs: 20" in meta
    assert records[4][3]["WARC-Truncated"] == "length"
    assert "WARC-Truncated" not in headers
    assert "error: timeout: slow" in records[8][2].decode()
    assert all(r[3].get("WARC-Type") != "forged" for r in records)


def test_each_record_is_its_own_gzip_member(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as w:
        w.write(result(), (), [])
    [path] = list(tmp_path.iterdir())
    data = path.read_bytes()
    assert data.count(b"\x1f\x8b\x08") >= 4
    assert gzip.decompress(data).startswith(b"WARC/1.1\r\n")


def test_rotation_by_size(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, max_bytes=4000, prefix="rot") as w:
        for i in range(20):
            w.write(result(i, body=os.urandom(1000)), (), [])
        assert w.current_path is not None and w.current_path.name.endswith(OPEN_SUFFIX)
    paths = sorted(tmp_path.iterdir())
    assert len(paths) > 3 and all(p.name.startswith("rot-") and p.name.endswith(".warc.gz") for p in paths)
    assert [int(p.name.split("-")[2]) for p in paths] == list(range(1, len(paths) + 1))
    responses = 0
    for p in paths:
        records = read_all(p)
        assert records[0][0] == "warcinfo"
        responses += sum(1 for r in records if r[0] == "response")
        assert p.stat().st_size <= 4000 or len(records) == 4
    assert responses == 20


def test_recover_cuts_a_torn_tail(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write(result(i), (), [])
    path = w.current_path
    assert path is not None
    whole = path.read_bytes()
    assert complete_length(path) == len(whole)
    w.write(result(3, body=os.urandom(5000)), (), [])
    torn = path.read_bytes()
    path.write_bytes(torn[: len(whole) + (len(torn) - len(whole)) // 2])  # a kill in mid-write
    (tmp_path / f"x.warc.gz{OPEN_SUFFIX}").write_bytes(b"\x1f\x8b\x08garbage")  # nothing complete
    [fixed] = recover(tmp_path)
    assert fixed.name == path.name.removesuffix(OPEN_SUFFIX)
    assert fixed.read_bytes() == whole
    assert [r[0] for r in read_all(fixed)].count("response") == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [fixed.name]
    assert recover(tmp_path) == []


def _writer_child(directory: str) -> None:
    w = WarcWriter(Path(directory), max_bytes=200_000)
    i = 0
    while True:
        i += 1
        w.write(result(i, body=os.urandom(i % 7000)), (("User-Agent", "t"),), [f"http://a.test/{i}"])


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8])
def test_sigkilled_writer_then_recover(tmp_path: Path, delay: float) -> None:
    child = multiprocessing.get_context("fork").Process(target=_writer_child, args=(str(tmp_path),))
    child.start()
    time.sleep(delay)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    recover(tmp_path)
    paths = sorted(tmp_path.iterdir())
    assert paths and all(p.name.endswith(".warc.gz") for p in paths)
    for p in paths:
        records = read_all(p)  # raises on a torn record or a bad digest
        assert records[0][0] == "warcinfo"

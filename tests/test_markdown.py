"""Markdown with provenance (issue 28): a page's main content as Markdown (headings, lists, tables, code,
links made absolute), chunks that break at headings then paragraphs and never inside code or a
table that fits, `harvestman export DIR --what markdown` over real sockets (a continuous crawl, a
cycle crawl with segments, a crawl whose WARC file is still open), rows whose provenance opens the
very response record, the `--markdown` sink writing the same rows, and clear errors."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from harvestman import CrawlConfig, Crawler
from harvestman.index.markdown import Chunk, MarkdownPage, Provenance, blocks, chunk_markdown, page_markdown
from harvestman.index.markdown_files import write_markdown
from harvestman.launch.export import export_records
from harvestman.model.errors import EXIT_USAGE
from harvestman.store import warc_read
from harvestman.store.crawldir import CrawlDir
from tests.support.crawlcheck import run_cli
from tests.support.markdownsite import CODE, GUIDE, REFERENCE, SQL, write_markdown_site
from tests.support.nginx import NginxServer, free_port

HOST = "127.62.0.1"
NET = "127.62.0.0/16"
PROVENANCE = ("warc_record_id", "warc_file", "warc_offset", "fetch_time")


# ----- the conversion --------------------------------------------------------------------------------


def test_a_sphinx_page_keeps_headings_lists_code_tables_and_absolute_links() -> None:
    md = page_markdown(GUIDE, "http://docs.test/guide/greeting.html")
    assert [line for line in md.splitlines() if line.startswith("#")] == [
        "# Guide to greeting", "## Installing", "## Usage", "### Options"]  # no ¶ permalinks
    assert f"```python\n{CODE}```" in md  # the language from Sphinx's wrapper; the blank line kept
    assert "| Option | Meaning            |\n| ------ | ------------------ |\n| loud   |" in md
    assert "- Unpack it:\n  * on Linux with tar," in md  # the nested list stays nested
    assert "[reference](http://docs.test/api/ref.html)" in md  # ../api/ref.html
    assert "[usage section](http://docs.test/guide/greeting.html#usage)" in md
    assert "![a waving hand](http://docs.test/guide/img/wave.png)" in md
    for chrome in ("Navigation", "Quick search", "Sidebar words", "Copyright", "trackingcode", "index"):
        assert chrome not in md


def test_a_page_without_a_content_element_loses_its_chrome_and_follows_its_base_href() -> None:
    md = page_markdown(REFERENCE, "http://docs.test/api/ref.html")
    assert md.startswith("## Querying books\n")
    assert f"```\n{SQL}```" in md
    assert "| title  | text    |" in md
    assert "[table list](http://docs.test/api/v2/tables.html)" in md  # <base href="/api/v2/">
    assert "Prev" not in md and "Home" not in md and "Next" not in md


def test_a_page_with_nothing_to_say_has_no_markdown() -> None:
    assert page_markdown("<html><head><title>t</title></head><body></body></html>", "http://x.test/") == ""
    assert page_markdown("", "http://x.test/") == ""
    assert chunk_markdown("", 100) == []


# ----- chunks ----------------------------------------------------------------------------------------

DOC = """# Title

Intro paragraph one.

## Alpha

Alpha paragraph that is fairly long, long enough to matter for the size of a chunk here.

```python
x = 1

y = 2
```

## Beta

| a | b |
| --- | --- |
| 1 | 2 |

### Beta one

Beta one text.
"""


def _blocks_of(chunks: list[Chunk]) -> list[str]:
    return [b.text for chunk in chunks for b in blocks(chunk.text)]


def test_chunks_break_at_headings_and_keep_code_and_tables_whole() -> None:
    for size in (90, 120, 200, 10_000):  # every block fits (the longest is 88 characters)
        chunks = chunk_markdown(DOC, size)
        assert [c.index for c in chunks] == list(range(len(chunks)))
        assert _blocks_of(chunks) == [b.text for b in blocks(DOC)]  # every block, once, in order
        for chunk in chunks:
            assert "```" not in chunk.text or chunk.text.count("```") == 2  # a fenced block is whole
            assert len(chunk.text) <= size
    assert chunk_markdown(DOC, 10_000) == [Chunk(0, ("Title",), DOC.strip())]
    chunks = chunk_markdown(DOC, 120)
    assert all(len(c.text) <= 120 for c in chunks)
    alpha = "Alpha paragraph that is fairly long, long enough to matter for the size of a chunk here."
    # Alpha's section does not fit beside the title's: its heading starts a chunk; it breaks between
    # paragraphs; the short sections after share a chunk (it starts in Alpha, under its path).
    assert chunks == [
        Chunk(0, ("Title",), "# Title\n\nIntro paragraph one."),
        Chunk(1, ("Title", "Alpha"), f"## Alpha\n\n{alpha}"),
        Chunk(2, ("Title", "Alpha"), "```python\nx = 1\n\ny = 2\n```\n\n## Beta\n\n| a | b |\n| --- | --- |\n"
                                     "| 1 | 2 |\n\n### Beta one\n\nBeta one text."),
    ]
    assert [c.heading_path for c in chunk_markdown(DOC, 60)][-2:] == [("Title", "Beta"),
                                                                      ("Title", "Beta", "Beta one")]


def test_a_code_block_or_table_larger_than_a_chunk_is_cut_at_lines_into_valid_blocks() -> None:
    code = "```sql\n" + "\n".join(f"SELECT {i} FROM t;" for i in range(40)) + "\n```"
    table = "| n | square |\n| --- | --- |\n" + "\n".join(f"| {i} | {i * i} |" for i in range(40))
    chunks = chunk_markdown(f"## Big\n\n{code}\n\n{table}\n", 150)
    assert all(len(c.text) <= 150 for c in chunks)
    pieces = [c.text for c in chunks[1:]]
    code_pieces = [p for p in pieces if p.startswith("```sql")]
    table_pieces = [p for p in pieces if p.startswith("| n | square |\n| --- | --- |")]
    assert len(code_pieces) > 1 and len(table_pieces) > 1
    assert len(pieces) == len(code_pieces) + len(table_pieces)
    assert all(p.endswith("\n```") for p in code_pieces)  # each piece fenced again
    assert [line for p in code_pieces for line in p.splitlines()[1:-1]] == code.splitlines()[1:-1]
    assert [line for p in table_pieces for line in p.splitlines()[2:]] == table.splitlines()[2:]
    assert {c.heading_path for c in chunks} == {("Big",)}


def test_a_long_paragraph_is_cut_at_spaces_and_size_zero_means_one_chunk() -> None:
    text = " ".join(f"word{i}" for i in range(200))
    chunks = chunk_markdown(text, 100)
    assert all(len(c.text) <= 100 for c in chunks)
    assert " ".join(c.text for c in chunks) == text
    assert chunk_markdown(text, 0) == [Chunk(0, (), text)]


_WORDS = st.text(alphabet="abcdefgh", min_size=1, max_size=9)
_BLOCK = st.one_of(
    st.builds(lambda level, words: "#" * level + " " + " ".join(words), st.integers(1, 4),
              st.lists(_WORDS, min_size=1, max_size=4)),
    st.lists(_WORDS, min_size=1, max_size=60).map(" ".join),
    st.lists(st.lists(_WORDS, max_size=6).map(" ".join), min_size=1, max_size=12).map(
        lambda lines: "```py\n" + "\n".join(lines) + "\n```"),  # blank lines inside, often
    st.lists(st.tuples(_WORDS, _WORDS), min_size=1, max_size=12).map(
        lambda rows: "| k | v |\n| --- | --- |\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCK, min_size=1, max_size=25), st.integers(40, 600))
def test_chunks_hold_every_block_in_order_and_never_exceed_the_size(parts: list[str], size: int) -> None:
    markdown = "\n\n".join(parts) + "\n"
    chunks = chunk_markdown(markdown, size)
    assert chunks and all(len(c.text) <= size for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    if all(len(b.text) <= size for b in blocks(markdown)):  # nothing had to be cut
        assert _blocks_of(chunks) == [b.text for b in blocks(markdown)]
    for chunk in chunks:  # each chunk is whole Markdown: its code fences pair up
        assert chunk.text.count("```") % 2 == 0


# ----- over real sockets -----------------------------------------------------------------------------


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        return list(pq.read_table(path).to_pylist())
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _sink_rows(out: Path, kind: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for part in sorted((out / "markdown").glob(f"{kind}-w*.jsonl")):
        rows.extend(_read(part))
    return rows


def _key(row: dict[str, Any]) -> tuple[str, int]:
    return row["url"], row.get("chunk", -1)


def _check_provenance(out: Path, rows: list[dict[str, Any]]) -> None:
    """Each row's WARC file, at its offset, holds the response record it names, of its URL."""
    for row in rows:
        with open(out / row["warc_file"], "rb") as stream:
            stream.seek(row["warc_offset"])
            record = next(iter(ArchiveIterator(stream)))
            assert record.rec_type == "response"
            assert record.rec_headers.get_header("WARC-Record-ID") == row["warc_record_id"]
            assert record.rec_headers.get_header("WARC-Target-URI") == row["url"]
            assert record.rec_headers.get_header("WARC-Date") == row["fetch_time"]


def _export(out: Path, target: Path, *extra: str) -> list[str]:
    fmt = target.suffix[1:]
    done = run_cli("export", str(out), "--what", "markdown", "--format", fmt, "--out", str(target), *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_crawl_with_the_sink_then_export_both_formats(tmp_path: Path) -> None:
    root = tmp_path / "www"
    write_markdown_site(root / HOST)
    out = tmp_path / "out"
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", NET, "-q",
                       "--markdown", "--markdown-chunk-size", "150", "--workers", "2")
        assert done.returncode == 0, done.stderr
        guide, ref = server.url(HOST, "/guide/greeting.html"), server.url(HOST, "/api/ref.html")
    assert not list((out / "markdown").glob("*.open"))
    sink_pages, sink_chunks = _sink_rows(out, "pages"), _sink_rows(out, "chunks")
    assert {r["url"] for r in sink_pages} == {server.url(HOST, "/"), guide, ref}
    by_url = {r["url"]: r for r in sink_pages}
    assert by_url[guide]["title"] == "Guide to greeting" and by_url[guide]["language"] == "en"
    assert f"```python\n{CODE}```" in by_url[guide]["markdown"]
    assert f"[reference]({ref})" in by_url[guide]["markdown"]
    assert all(row["warc_file"].startswith("warc/") and row["warc_file"].endswith(".warc.gz")
               for row in sink_pages)
    _check_provenance(out, sink_pages)
    _check_provenance(out, sink_chunks)
    assert all(len(c["text"]) <= 150 for c in sink_chunks)
    guide_chunks = sorted((c for c in sink_chunks if c["url"] == guide), key=lambda c: c["chunk"])
    assert guide_chunks[0]["heading_path"] == ["Guide to greeting"]
    assert any(c["heading_path"] == ["Guide to greeting", "Usage", "Options"] for c in guide_chunks)
    code = [c for c in guide_chunks if "```" in c["text"]]
    assert len(code) == 1 and f"```python\n{CODE}```" in code[0]["text"]  # the code block whole, in one
    assert code[0]["heading_path"] == ["Guide to greeting", "Usage"]

    for target in (tmp_path / "md.jsonl", tmp_path / "md.parquet"):
        printed = _export(out, target, "--chunk-size", "150")
        chunks_file = target.with_name(f"md-chunks{target.suffix}")
        assert printed == [f"3 pages written to {target}",
                           f"{len(sink_chunks)} chunks of at most 150 characters written to {chunks_file}"]
        # The crawl's sink and the export from the WARC files wrote the same rows.
        assert sorted(_read(target), key=_key) == sorted(sink_pages, key=_key)
        assert sorted(_read(chunks_file), key=_key) == sorted(sink_chunks, key=_key)

    # Without --chunk-size: 2000 characters; 0: no chunks file.
    printed = _export(out, tmp_path / "whole.jsonl", "--chunk-size", "0")
    assert printed == [f"3 pages written to {tmp_path / 'whole.jsonl'}"]
    assert not (tmp_path / "whole-chunks.jsonl").exists()
    printed = _export(out, tmp_path / "default.jsonl")
    assert printed[1].startswith("3 chunks of at most 2000 characters")  # one a page: they are short


def test_a_default_crawl_writes_no_markdown_and_its_pages_say_where_they_are_stored(tmp_path: Path) -> None:
    root = tmp_path / "www"
    write_markdown_site(root / HOST)
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        cfg = CrawlConfig(seeds=(server.url(HOST, "/"),), out_dir=tmp_path / "out", allow_net=(NET,),
                          quiet=True)
        pages = list(Crawler(cfg))
    assert not (tmp_path / "out" / "markdown").exists()
    assert len([page for page in pages if page.result.status == 200]) == 3  # and a 404 (tables.html)
    for page in pages:  # the library's page record tells where its response record is
        assert page.warc is not None
        with open(page.warc.file, "rb") as stream:
            stream.seek(page.warc.offset)
            record = next(iter(ArchiveIterator(stream)))
        assert record.rec_headers.get_header("WARC-Record-ID") == page.warc.record_id
        assert record.rec_headers.get_header("WARC-Date") == page.warc.date


def test_a_cycle_crawl_with_segments_exports_with_segment_provenance(tmp_path: Path) -> None:
    root = tmp_path / "www"
    write_markdown_site(root / HOST)
    out = tmp_path / "cycle"
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", NET, "-q",
                       "--rounds", "2", "--top-n", "10", "--markdown", timeout=300)
        assert done.returncode == 0, done.stderr
    target = out / "markdown.jsonl"
    printed = _export(out, target)  # the default place
    assert printed[0] == f"3 pages written to {target}"
    exported = _read(target)
    assert all(re.fullmatch(r"segments/[^/]+/warc/[^/]+\.warc\.gz", r["warc_file"]) for r in exported)
    _check_provenance(out, exported)
    assert len({r["warc_file"] for r in exported}) == 2  # the seed in round one, its links in round two
    # The fetch steps' sink wrote the same rows, into the crawl's folder, not the segments'.
    assert sorted(_sink_rows(out, "pages"), key=_key) == sorted(exported, key=_key)
    assert not list((out / "segments").glob("*/markdown"))


def test_a_crawl_still_writing_its_warc_file_exports_what_it_holds(tmp_path: Path) -> None:
    root = tmp_path / "www"
    write_markdown_site(root / HOST)
    out = tmp_path / "out"
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", NET, "-q")
        assert done.returncode == 0, done.stderr
    [warc] = (out / "warc").glob("*.warc.gz")
    finished = _export(out, tmp_path / "finished.jsonl", "--chunk-size", "0")
    # As a running (or killed) crawl leaves it: the file under its `.open` name, a record torn at its end.
    data = warc.read_bytes()
    warc.unlink()
    (out / "warc" / (warc.name + ".open")).write_bytes(data + data[:100])
    assert _export(out, tmp_path / "running.jsonl", "--chunk-size", "0") == [
        line.replace("finished", "running") for line in finished]
    rows = _read(tmp_path / "running.jsonl")
    assert rows == _read(tmp_path / "finished.jsonl")  # files named as they will be once finished
    assert all(row["warc_file"] == f"warc/{warc.name}" for row in rows)


@pytest.mark.parametrize(("args", "message"), [
    (("--what", "markdown", "--format", "cdxj"), "--what markdown is written as jsonl or parquet"),
    (("--what", "markdown", "--chunk-size", "-5"), "--chunk-size must be 0 (no chunks) or more"),
    (("--what", "urls", "--chunk-size", "100"), "--chunk-size is the Markdown export's"),
    (("--what", "markdown", "--chunk-size", "ten"), "invalid int value: 'ten'"),
    (("--what", "markdown", "--out", "-"), "--what markdown is written to files"),
])
def test_bad_export_arguments_are_refused_clearly(tmp_path: Path, args: tuple[str, ...],
                                                  message: str) -> None:
    (tmp_path / "warc").mkdir()
    done = run_cli("export", str(tmp_path), *args)
    assert done.returncode == EXIT_USAGE
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.glob("markdown*"))


def test_export_of_a_folder_without_warc_files_and_a_bad_chunk_size_setting(tmp_path: Path) -> None:
    done = run_cli("export", str(tmp_path), "--what", "markdown")
    assert done.returncode == EXIT_USAGE
    assert f"{tmp_path} holds no WARC files" in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.glob("markdown*"))
    done = run_cli("crawl", "http://127.62.0.9/", "--out", str(tmp_path / "c"), "--markdown",
                   "--markdown-chunk-size", "-1")
    assert done.returncode == EXIT_USAGE
    assert "markdown_chunk_size must be >= 0" in done.stderr and "Traceback" not in done.stderr


def test_a_page_fetched_again_exports_its_last_response_each_warc_file_read_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "www"
    write_markdown_site(root / HOST)
    out = tmp_path / "out"
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", NET, "-q")
        assert done.returncode == 0, done.stderr
        guide = root / HOST / "guide" / "greeting.html"
        guide.write_text(guide.read_text().replace("This guide", "A revised paragraph. This guide"))
        done = run_cli("recrawl", str(out), "--all", "--strategy", "full", "-q")  # the guide's 2nd response
        assert done.returncode == 0, done.stderr
        guide_url = server.url(HOST, "/guide/greeting.html")
    reads: Counter[Path] = Counter()
    every_record = warc_read.warc_records

    def counted(path: Path, *args: Any, **kwargs: Any) -> Any:
        reads[path] += 1
        yield from every_record(path, *args, **kwargs)

    monkeypatch.setattr(warc_read, "warc_records", counted)
    monkeypatch.setattr(warc_read, "read_response", lambda *_: pytest.fail("a record read again"))
    for target in (tmp_path / "md.jsonl", tmp_path / "md.parquet"):
        reads.clear()
        written = export_records(out, target.suffix[1:], target, what="markdown", chunk_size=150)
        assert sorted(reads) == CrawlDir(out).warc_files() and set(reads.values()) == {1}
        pages = _read(target)
        assert written.count == len(pages) == len({r["url"] for r in pages}) == 3
        [row] = [r for r in pages if r["url"] == guide_url]
        assert "A revised paragraph." in row["markdown"] and row["warc_file"].startswith("segments/")
        _check_provenance(out, pages)
        chunks = _read(target.with_name(f"md-chunks{target.suffix}"))
        assert {c["warc_record_id"] for c in chunks if c["url"] == guide_url} == {row["warc_record_id"]}


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_newer_response_read_after_the_older_one_replaces_its_rows(tmp_path: Path, fmt: str) -> None:
    def made(record: str, date: str, text: str) -> MarkdownPage:
        return MarkdownPage("http://a.test/", "A", "en", f"# A\n\n{text}\n",
                            Provenance(record, "warc/b.warc.gz", 10, date))

    other = MarkdownPage("http://b.test/", "B", "en", "# B\n\nb\n",
                         Provenance("<urn:b>", "warc/b.warc.gz", 90, "x"))
    pages = [made("<urn:old>", "2026-01-01T00:00:00Z", "old words"), other,
             made("<urn:new>", "2026-02-01T00:00:00Z", "new words"),
             made("<urn:older>", "2025-12-01T00:00:00Z", "older words")]
    target = tmp_path / f"md.{fmt}"
    assert write_markdown(pages, target, fmt, 100) == (2, 2)
    rows = {r["url"]: r for r in _read(target)}
    assert rows["http://a.test/"]["warc_record_id"] == "<urn:new>" and len(rows) == 2
    chunks = _read(target.with_name(f"md-chunks.{fmt}"))
    assert sorted(c["warc_record_id"] for c in chunks) == ["<urn:b>", "<urn:new>"]

"""status and export over a crawl of a loopback server: per-host figures, final URLs of redirects,
titles, times, and the CDXJ index read back through warcio."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console
from warcio.archiveiterator import ArchiveIterator

from harvestman.launch.export import export_records
from harvestman.launch.progress import SUMMARY_HOSTS, print_summary
from harvestman.launch.status import run_figures
from harvestman.model.config import SECTION_OF, CrawlConfig, config_from_mapping, load_toml
from harvestman.model.records import FetchOutcome, NewUrl, UrlState
from harvestman.store.sqlite_store import SqliteStore
from tests.support.crawlcheck import run_cli
from tests.support.httpserver import RouteServer

HOST = "127.5.0.1"
HTML = {"Content-Type": "text/html; charset=utf-8"}


def page(title: str, *links: str) -> tuple[int, dict[str, str], bytes]:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    return 200, HTML, f"<html><head><title>{title}</title></head><body>{anchors}</body></html>".encode()


ROUTES = {
    "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow:\n"),
    # /old points at /page, which the crawl knows already: the 301 is recorded, not followed.
    # /moved points at /landing, which nothing links to: followed, and /landing recorded as fetched.
    "/": page("Home", "/page", "/old", "/moved", "/gone", "/logo.png"),
    "/page": page("A page"),
    "/old": (301, {"Location": "/page", **HTML}, b"<p>moved"),
    "/moved": (302, {"Location": "/landing"}, b""),
    "/landing": page("Landed"),
    "/logo.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(200)),
}


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RouteServer, Path]]:
    out = tmp_path_factory.mktemp("report") / "out"
    with RouteServer(ROUTES, host=HOST) as srv:
        done = run_cli("crawl", srv.url("/"), "--out", str(out), "--allow-net", "127.5.0.0/16",
                       "--workers", "1", "-q")
        assert done.returncode == 0, done.stderr
        yield srv, out


def _parse_iso(text: object) -> datetime:
    assert isinstance(text, str) and text.endswith("Z"), text
    return datetime.fromisoformat(text)


def test_status_names_responses_and_breaks_down_hosts(crawled: tuple[RouteServer, Path]) -> None:
    _, out = crawled
    done = run_cli("status", str(out), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # Seven URLs; each got a response (the 404 too); the 302 and its target are two URLs.
    assert report["urls"] == 7 and report["responses"] == 7
    assert report["states"]["fetched"] == 4  # /, /page, /landing, /logo.png
    assert report["states"]["redirect_perm"] == 1 and report["states"]["redirect_temp"] == 1
    assert report["states"]["gone"] == 1 and report["errors"] == {"http_404": 1}
    assert report["host_count"] == 1
    host = report["hosts"][HOST]
    assert host["urls"] == 7 and host["states"] == report["states"] and host["errors"] == 1
    assert host["wire_bytes"] == report["wire_bytes"] > sum(len(body) for _, _, body in ROUTES.values())
    first, last = _parse_iso(report["first_fetch"]), _parse_iso(report["last_fetch"])
    assert first.tzinfo == UTC and first <= last
    assert report["elapsed_seconds"] == pytest.approx((last - first).total_seconds(), abs=1e-5)

    human = run_cli("status", str(out))
    assert human.returncode == 0, human.stderr
    assert "URLs with a response" in human.stdout and HOST in human.stdout
    assert report["first_fetch"] in human.stdout


def test_export_final_urls_titles_and_times(crawled: tuple[RouteServer, Path]) -> None:
    srv, out = crawled
    done = run_cli("export", str(out))
    assert done.returncode == 0, done.stderr
    rows = {row["url"]: row for row in map(json.loads, (out / "export.jsonl").read_text().splitlines())}
    url = srv.url
    finals = {u.removeprefix(url("")): (row["final_url"] or "").removeprefix(url(""))
              for u, row in rows.items()}
    # A redirect ends where it points (followed or not); any other URL with a response ends at itself.
    assert finals == {"/": "/", "/page": "/page", "/old": "/page", "/moved": "/landing",
                      "/landing": "/landing", "/gone": "/gone", "/logo.png": "/logo.png"}
    titles = {u.removeprefix(url("")): row["title"] for u, row in rows.items()}
    # /moved's row describes the page it ended on; a 301 not followed, a 404 and an image have none.
    assert titles == {"/": "Home", "/page": "A page", "/old": "", "/moved": "Landed",
                      "/landing": "Landed", "/gone": "", "/logo.png": ""}
    assert rows[url("/old")]["state"] == "redirect_perm" and rows[url("/old")]["http_status"] == 301
    for row in rows.values():
        assert _parse_iso(row["fetch_time"]).tzinfo == UTC
        assert row["next_fetch_time"] is None  # nothing waits for a retry

    pq = pytest.importorskip("pyarrow.parquet")
    target = out / "urls.parquet"
    done = run_cli("export", str(out), "--format", "parquet", "--output", str(target))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(target)
    assert str(table.schema.field("fetch_time").type) == "timestamp[us, tz=UTC]"
    by_url = {row["url"]: row for row in table.to_pylist()}
    assert by_url[url("/old")]["final_url"] == url("/page") and by_url[url("/")]["title"] == "Home"
    fetched = by_url[url("/")]["fetch_time"]
    assert isinstance(fetched, datetime) and fetched == _parse_iso(rows[url("/")]["fetch_time"])


def test_export_gives_null_for_what_never_happened(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "crawl"
    folder.mkdir()
    with SqliteStore(folder / "crawl.db", host_of=lambda u: "a.test") as frontier:
        frontier.add([NewUrl("http://a.test/", "a.test"), NewUrl("http://a.test/never", "a.test")])
        frontier.lease(1, 1_000.0)
        frontier.complete([FetchOutcome("http://a.test/", UrlState.FETCHED, 1_000.5, http_status=200,
                                        title="Root")], 1_000.5)
    export_records(folder, "jsonl")
    rows = {r["url"]: r for r in map(json.loads, (folder / "export.jsonl").read_text().splitlines())}
    assert rows["http://a.test/"]["fetch_time"] == "1970-01-01T00:16:40.500000Z"
    root = rows["http://a.test/"]
    assert (root["final_url"], root["title"]) == ("http://a.test/", "Root")
    never = rows["http://a.test/never"]
    assert (never["fetch_time"], never["next_fetch_time"], never["final_url"]) == (None, None, None)
    export_records(folder, "parquet")
    parquet = {r["url"]: r for r in pq.read_table(folder / "export.parquet").to_pylist()}
    assert parquet["http://a.test/never"]["fetch_time"] is None
    assert parquet["http://a.test/"]["fetch_time"] == datetime(1970, 1, 1, 0, 16, 40, 500000, tzinfo=UTC)


def test_cdxj_index_finds_a_urls_body_in_the_warc(crawled: tuple[RouteServer, Path]) -> None:
    srv, out = crawled
    done = run_cli("export", str(out), "--format", "cdxj")
    assert done.returncode == 0, done.stderr
    lines = (out / "index.cdxj").read_text().splitlines()
    assert f"{len(lines)} index lines written to {out / 'index.cdxj'}" in done.stdout
    assert lines == sorted(lines)  # replay tools binary-search the index
    entries = [json.loads(line.split(" ", 2)[2]) for line in lines]
    # One per response record (requests and metadata are not indexed): /moved's fetch stored the
    # response it ended on, /landing's, and its 302 only as a `redirect:` line of the metadata.
    assert sorted(e["url"].removeprefix(srv.url("")) for e in entries) == [
        "/", "/gone", "/landing", "/logo.png", "/old", "/page"]
    [entry] = [e for e in entries if e["url"] == srv.url("/page")]
    assert entry["status"] == "200" and entry["mime"] == "text/html"
    with open(out / entry["filename"], "rb") as warc:  # relative to DIR, as pywb is given it
        warc.seek(int(entry["offset"]))
        member = warc.read(int(entry["length"]))
    record = next(iter(ArchiveIterator(io.BytesIO(member))))  # read before the iterator moves on
    assert record.rec_type == "response"
    assert record.rec_headers.get_header("WARC-Target-URI") == srv.url("/page")
    assert record.content_stream().read() == ROUTES["/page"][2]
    [old] = [e for e in entries if e["url"] == srv.url("/old")]
    assert old["status"] == "301"


def test_export_of_a_folder_without_a_crawl_is_one_line(tmp_path: Path) -> None:
    done = run_cli("export", str(tmp_path), "--format", "cdxj")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no crawl.db" in done.stderr


def test_text_summary_lists_the_busiest_hosts() -> None:
    states = {s.name.lower(): 0 for s in UrlState}
    hosts = {f"h{i:02d}.test": {"urls": i + 1, "states": {**states, "fetched": i + 1}, "errors": 0,
                                "wire_bytes": 100 * i} for i in range(SUMMARY_HOSTS + 2)}
    report = {
        "dir": "x", "urls": 0, "states": states, "responses": 0, "errors": {}, "wire_bytes": 0,
        "host_count": len(hosts), "hosts": hosts, "first_fetch": None, "last_fetch": None,
        "elapsed_seconds": 0.0, "pages_per_second": 0.0,
    }
    buffer = io.StringIO()
    print_summary(report, Console(file=buffer, width=120))
    text = buffer.getvalue()
    assert f"the {SUMMARY_HOSTS} hosts with most URLs, of {SUMMARY_HOSTS + 2}" in text
    assert "h11.test" in text and "h02.test" in text  # the most URLs first
    assert "h01.test" not in text and "h00.test" not in text


def test_example_config_documents_every_setting_at_its_default() -> None:
    example = Path(__file__).parent.parent / "docs" / "harvestman.example.toml"
    table = load_toml(example)
    cfg = config_from_mapping(table)
    fields = [f.name for f in dataclasses.fields(CrawlConfig)]
    assert sorted(table) == sorted(fields), set(fields) ^ set(table)  # each setting, and no other
    lines = example.read_text().splitlines()
    for name in fields:
        # Set on a line of its own, under a comment (a group of settings may share one), in the
        # table of its section.
        tables = ("extra_headers", "stop_rules", "render_rules")
        at = lines.index(f"[{SECTION_OF[name]}.{name}]") if name in tables else next(
            i for i, line in enumerate(lines) if line.startswith(f"{name} = "))
        above = next(line for line in reversed(lines[:at]) if " = " not in line or line.startswith("#"))
        assert above.startswith("#"), f"{name} has no comment above it"
        table_at = lines[:at + 1] if name in tables else lines[:at]
        section = next(line for line in reversed(table_at) if line.startswith("["))
        assert section.startswith(f"[{SECTION_OF[name]}"), f"{name} is not in [{SECTION_OF[name]}]"
    # The values shown are the defaults, except the seeds an example must fill in.
    default = CrawlConfig()
    changed = {name for name in fields if getattr(cfg, name) != getattr(default, name)}
    assert changed == {"seeds"}, changed


def _log(path: Path, *lines: tuple[str, float, str]) -> Path:
    """An events log of (kind, time, more JSON fields) lines, as store/journal.py writes them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f'{{"kind": "{kind}", "time": {when}{more}}}\n' for kind, when, more in lines))
    return path


def test_runs_are_read_from_the_events_logs_workers_kills_and_segments(tmp_path: Path) -> None:
    fetched = ', "url": "http://a.test/", "status": 200, "bytes": 100'
    _log(tmp_path / "events.jsonl",
         # two worker processes of one run, each with its start and end
         ("crawl_started", 1000.0, ""), ("crawl_started", 1000.1, ""), ("fetched", 1001.0, fetched),
         ("fetched", 1002.0, fetched), ("crawl_finished", 1003.0, ""), ("crawl_finished", 1004.0, ""),
         # a day later: a run killed after its first page, then resumed an hour on
         ("crawl_started", 87400.0, ""), ("fetched", 87402.0, fetched),
         ("crawl_started", 91000.0, ""), ("fetched", 91001.0, fetched), ("crawl_finished", 91002.0, ""))
    _log(tmp_path / "segments" / "20270101000000" / "events.jsonl",  # a re-crawl's segment: two 304s
         ("crawl_started", 200000.0, ""), ("fetched", 200001.0, fetched.replace("200", "304")),
         ("fetched", 200002.0, fetched.replace("200", "304")), ("crawl_finished", 200003.0, ""))
    runs = run_figures(tmp_path)
    assert (runs["count"], runs["responses"], runs["bytes"]) == (4, 6, 600)
    assert runs["seconds"] == pytest.approx(4.0 + 2.0 + 2.0 + 3.0)  # no idle day between
    assert runs["pages_per_second"] == pytest.approx(6 / 11)
    last = runs["last"]
    assert (last["responses"], last["not_modified"], last["bytes"], last["seconds"]) == (2, 2, 200, 3.0)
    assert run_figures(tmp_path / "none") == {}


def test_status_after_a_recrawl_tells_the_last_run_and_all_runs(crawled: tuple[RouteServer, Path],
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(crawled[1], out)
    first = json.loads(run_cli("status", str(out), "--json").stdout)
    done = run_cli("recrawl", str(out), "--all", "-q")
    assert done.returncode == 0, done.stderr
    report = json.loads(run_cli("status", str(out), "--json").stdout)
    runs, before = report["runs"], first["runs"]
    assert runs["count"] == before["count"] + 1
    assert runs["responses"] == before["responses"] + runs["last"]["responses"]
    assert runs["bytes"] == before["bytes"] + runs["last"]["bytes"]
    assert runs["last"]["responses"] == first["states"]["fetched"]  # every fetched URL checked again
    assert runs["last"]["not_modified"] == 0  # RouteServer gives no validators: full GETs, same bodies
    assert report["states"]["not_modified"] > 0 and report["states"]["fetched"] == 0
    assert report["pages_per_second"] == pytest.approx(runs["responses"] / runs["seconds"])
    text = run_cli("status", str(out)).stdout
    assert "last run" in text and "responses in all runs" in text


def test_export_readdb_dump_and_snapshot_write_the_same_values(tmp_path: Path) -> None:
    """The three paths out of a crawl database read one definition (batch/rows.py): the same values in
    the same format, and JSON and Parquet one value each (a time, a SimHash with its top bit set)."""
    pq = pytest.importorskip("pyarrow.parquet")
    from harvestman.batch.readdb import dump
    from harvestman.batch.rows import iso
    from harvestman.batch.snapshot import write_snapshot
    from harvestman.store.crawldir import CrawlDir
    from tests.support.batchgraph import Page, make_crawl

    top_bit = (1 << 63) | 0b1011
    make_crawl(tmp_path, {"http://a.test/": Page(links=("http://a.test/b", ("http://b.test/", True, "b")),
                                                 signature="s1", simhash=top_bit, score=0.5)},
               unfetched=["http://a.test/b"])
    exported: dict[str, dict[str, list[dict[str, object]]]] = {}
    for fmt in ("jsonl", "parquet"):
        rows = {}
        for what in ("urls", "links"):
            written = export_records(tmp_path, fmt, tmp_path / f"{what}.{fmt}", what=what)
            rows[what] = (list(map(json.loads, written.path.read_text().splitlines())) if fmt == "jsonl"
                          else pq.read_table(written.path).to_pylist())
        exported[fmt] = rows
        dump(tmp_path, fmt=fmt, output=tmp_path / f"readdb-{fmt}")
        read = (lambda p: list(map(json.loads, p.read_text().splitlines()))) if fmt == "jsonl" else \
            (lambda p: pq.read_table(p).to_pylist())
        assert read(tmp_path / f"readdb-{fmt}" / f"crawldb.{fmt}") == rows["urls"]
        assert read(tmp_path / f"readdb-{fmt}" / f"linkdb.{fmt}") == rows["links"]
    crawl = CrawlDir(tmp_path).read()
    try:
        snap = write_snapshot(crawl, tmp_path / "snapshot")
    finally:
        crawl.close()
    parquet = {r["url"]: r for r in exported["parquet"]["urls"]}
    for row in pq.read_table(snap.urls_path).to_pylist():
        assert {k: v for k, v in row.items() if k != "seq"} == {k: parquet[row["url"]][k] for k in row
                                                                 if k != "seq"}
    snap_links = [{k: v for k, v in r.items() if k != "internal"}
                  for r in pq.read_table(snap.links_path).to_pylist()]
    assert sorted(snap_links, key=str) == sorted(exported["parquet"]["links"], key=str)
    # JSON and Parquet: one value, each in its format's words.
    for line in exported["jsonl"]["urls"]:
        same = parquet[str(line["url"])]
        assert line["simhash"] == int(same["simhash"]) & ((1 << 64) - 1)  # type: ignore[call-overload]
        assert line["fetch_time"] == (None if same["fetch_time"] is None else iso(same["fetch_time"]))
        assert line["state"] == same["state"] and line["final_url"] == same["final_url"]
    assert parquet["http://a.test/"]["simhash"] == top_bit - (1 << 64)  # the same 64 bits, signed
    assert {line["simhash"] for line in exported["jsonl"]["urls"]} == {top_bit, 0}

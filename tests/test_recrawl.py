"""harvestman recrawl (issue 14, first half): over a changing web of two hosts, one nginx (ETag and
Last-Modified, gzip) and one server without validators (Content-Length only), each strategy finds
what it should, stores WARC records for changed pages only, reports its counts, and schedules the
next fetches; --all against due; PostgreSQL; bad input."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestman.model.records import UrlRecord, UrlState
from harvestman.store.sqlite_store import SqliteStore
from tests.support.changingweb import ChangingSite
from tests.support.crawlcheck import run_cli
from tests.support.httpserver import RouteHandler, RouteServer
from tests.support.nginx import NginxServer, free_port, require_nginx

A, B = "127.63.0.1", "127.63.0.2"
NET = ("--allow-net", "127.63.0.0/16")
PAGES = 12


def _static(root: Path, path: str) -> object:
    """A route serving root/path with Content-Length and no validators (read at request time)."""

    def serve(handler: RouteHandler) -> None:
        ctype = "text/html" if path.endswith(".html") else "application/xml" if path.endswith(".xml") \
            else "text/plain"
        handler.send_simple(200, {"Content-Type": ctype}, (root / path.lstrip("/")).read_bytes())

    return serve


@dataclass
class Web:
    """The two sites, their servers, and a crawl of them as first seen."""

    nginx: NginxServer
    plain: RouteServer
    a: ChangingSite
    b: ChangingSite
    crawl: Path  # the first crawl (copy it before re-crawling)
    changed: dict[str, str]  # URL -> kind of change


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    require_nginx()
    tmp = tmp_path_factory.mktemp("web")
    port = free_port(A)
    nginx = NginxServer(tmp / "www", [A], port, extra_http="gzip on; gzip_min_length 100;")
    a = ChangingSite(tmp / "www" / A, f"http://{A}:{port}", PAGES)
    a.write()
    plain_root = tmp / "plain"
    b_port = free_port(B)
    b = ChangingSite(plain_root, f"http://{B}:{b_port}", PAGES, seed=4)
    b.write()
    served = ["/", "/index.html", "/robots.txt", "/sitemap.xml", *b.paths()]
    routes = {p: _static(plain_root, p) for p in served}
    routes["/"] = _static(plain_root, "/index.html")
    plain = RouteServer(routes, host=B, port=b_port)  # type: ignore[arg-type]
    with nginx, plain:
        crawl = tmp / "crawl"
        done = run_cli("crawl", f"{a.base}/", f"{b.base}/", "--out", str(crawl), *NET, "-q")
        assert done.returncode == 0, done.stderr
        at = time.time() + 5  # after every fetch of the first crawl, to the second
        changed = a.change(0.5, at=at) | b.change(0.5, at=at, seed=6)
        yield Web(nginx, plain, a, b, crawl, changed)


def _recrawl(out: Path, *args: str) -> dict[str, object]:
    done = run_cli("recrawl", str(out), *NET, "-q", "--json", *args)
    assert done.returncode == 0, (done.stdout, done.stderr)
    report: dict[str, object] = json.loads(done.stdout)
    return report


def _copy(web: Web, tmp_path: Path) -> Path:
    out = tmp_path / "crawl"
    shutil.copytree(web.crawl, out)
    return out


def _records(out: Path) -> dict[str, UrlRecord]:
    with SqliteStore.open_read_only(out / "crawl.db") as store:
        return {r.url: r for r in store.records()}


def _warc_responses(out: Path, segment: str) -> set[str]:
    found: set[str] = set()
    for path in (out / "segments" / segment / "warc").glob("*.warc.gz"):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    found.add(record.rec_headers.get_header("WARC-Target-URI"))
    return found


def _pages(web: Web) -> set[str]:
    return {s.base + p for s in (web.a, web.b) for p in s.paths()}


def _found(out: Path, web: Web) -> set[str]:
    """The pages the re-crawl took for changed."""
    return {u for u, r in _records(out).items() if u in _pages(web) and r.change in ("minor", "major")}


@pytest.mark.parametrize("strategy", ["conditional", "size", "sitemap", "full"])
def test_each_strategy_finds_what_it_should(web: Web, tmp_path: Path, strategy: str) -> None:
    out = _copy(web, tmp_path)
    before = _records(out)
    report = _recrawl(out, "--all", "--strategy", strategy)
    after = _records(out)
    found = _found(out, web)
    same_size_on_b = {u for u, kind in web.changed.items()
                      if kind == "same_size" and u.startswith(web.b.base)}
    if strategy == "size":
        # The seed's comparator: a change that keeps the size is missed where no validator tells it
        # (nginx's ETag and Last-Modified do).
        assert same_size_on_b
        assert found == set(web.changed) - same_size_on_b
        for url in same_size_on_b:
            assert after[url].state == UrlState.NOT_MODIFIED and after[url].checked_by == "size"
    else:
        assert found == set(web.changed)
    # WARC records for changed URLs only: the pages, and the sitemaps (they changed with them)
    # where they were re-fetched as pages (`sitemap` fetches them in a segment of their own first;
    # `size` misses the one whose size stayed).
    changed_urls = {u for u, r in after.items() if r.change in ("minor", "major")}
    sitemaps = {s.base + "/sitemap.xml" for s in (web.a, web.b)}
    assert changed_urls - found <= sitemaps
    assert _warc_responses(out, str(report["segment"])) == changed_urls
    unchanged = _pages(web) - found
    for url in unchanged:
        rec = after[url]
        assert rec.state == UrlState.NOT_MODIFIED and rec.change == "unchanged", rec
        assert rec.body_size == before[url].body_size  # the page as stored: its size kept
        if rec.checked_by != "full":
            assert rec.saved_bytes > 0, rec
    for url in found:
        assert after[url].state == UrlState.FETCHED and after[url].simhash
        assert after[url].body_wire_bytes and after[url].body_wire_bytes <= after[url].wire_bytes
    by = {after[u].checked_by for u in _pages(web) if u.startswith(web.a.base)}
    by_b = {after[u].checked_by for u in _pages(web) if u.startswith(web.b.base)}
    expected = {"conditional": ({"conditional"}, {"full"}), "size": ({"size"}, {"size"}),
                "sitemap": ({"sitemap", "conditional"}, {"sitemap", "full"}), "full": ({"full"}, {"full"})}
    assert (by, by_b) == expected[strategy]
    assert report["changed"] == len(changed_urls)
    assert report["checked"] == len([u for u in before if before[u].state == UrlState.FETCHED]) - (
        2 if strategy == "sitemap" else 0)
    assert report["new"] == 0 and report["gone"] == 0 and report["not_fetched"] == 0
    assert report["full_bytes"] == int(str(report["wire_bytes"])) - int(str(report["sitemap_bytes"])) \
        + int(str(report["saved_bytes"]))
    if strategy != "full":
        assert int(str(report["wire_bytes"])) < int(str(report["full_bytes"]))
    # The major rewrites are told from the small edits by their SimHash distance.
    for url, kind in web.changed.items():
        if url in found:
            assert after[url].change == ("major" if kind == "major" else "minor"), (url, kind)


def test_sitemap_sends_no_request_for_pages_its_lastmod_says_are_unchanged(web: Web, tmp_path: Path) -> None:
    out = _copy(web, tmp_path)
    start = len(web.nginx.requests())
    _recrawl(out, "--all", "--strategy", "sitemap")
    asked = {e.uri for e in web.nginx.requests()[start:]}
    changed_a = {u.removeprefix(web.a.base) for u in web.changed if u.startswith(web.a.base)}
    pages_a = set(web.a.paths())
    assert asked & pages_a == changed_a
    assert "/sitemap.xml" in asked


def test_due_against_all_and_the_schedule(web: Web, tmp_path: Path) -> None:
    out = _copy(web, tmp_path)
    # The continuous crawl scheduled nothing: nothing is due, and the table says how to check all;
    # -q prints neither.
    assert _recrawl(out)["checked"] == 0
    quiet = run_cli("recrawl", str(out), *NET, "-q")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    told = run_cli("recrawl", str(out), *NET)
    assert "checked            0" in told.stdout and "recrawl DIR --all` checks every one" in told.stderr
    first = _recrawl(out, "--all", "--schedule", "adaptive", "--fetch-interval", "1000")
    assert first["checked"] == 2 * PAGES + 4  # pages, index pages, sitemaps (robots.txt is no URL)
    rows = _records(out)
    for url in _pages(web):
        assert rows[url].fetch_interval == pytest.approx(1000)  # a first interval: the initial one
        assert rows[url].next_fetch_time == pytest.approx(rows[url].fetch_time + 1000)
    # Not due yet: a re-crawl of the due URLs checks nothing; all of them again, and the adaptive
    # schedule grows the unchanged pages' interval (x1.4), shrinks the changed ones' (x0.9 minor,
    # x0.8 major).
    idle = _recrawl(out)
    assert idle["checked"] == 0
    assert idle["next_due"] == pytest.approx(min(rows[url].next_fetch_time for url in _pages(web)), abs=5)
    _recrawl(out, "--all", "--schedule", "adaptive", "--fetch-interval", "1000")
    rows = _records(out)
    factors = {"unchanged": 1.4, "minor": 0.9, "major": 0.8}
    for url in _pages(web):
        assert rows[url].change == "unchanged"
        assert rows[url].fetch_interval == pytest.approx(1000 * factors["unchanged"])


def test_minor_and_major_changes_shrink_the_interval_by_their_factors(tmp_path: Path) -> None:
    from harvestman.model.records import FetchOutcome, LeasedUrl
    from harvestman.policy.schedule import AdaptiveInterval

    schedule = AdaptiveInterval(1000.0, 1.0, 1e9)
    leased = LeasedUrl("http://x.test/", "x.test", 0, 0, 0.0, fetch_interval=1000.0)
    for change, factor in (("minor", 0.9), ("major", 0.8), ("", 0.8)):
        outcome = FetchOutcome("http://x.test/", UrlState.FETCHED, 10.0, change=change)
        assert schedule(outcome, leased) == pytest.approx(10.0 + 1000 * factor)
    same = FetchOutcome("http://x.test/", UrlState.NOT_MODIFIED, 10.0, change="unchanged")
    assert schedule(same, leased) == pytest.approx(10.0 + 1400)


def test_recrawl_on_postgresql(web: Web, tmp_path: Path, postgres_url: str) -> None:
    out = tmp_path / "pg"
    done = run_cli("crawl", f"{web.a.base}/", "--out", str(out), "--db", postgres_url, *NET, "-q")
    assert done.returncode == 0, done.stderr
    report = _recrawl(out, "--db", postgres_url, "--all")
    # Everything is as the first crawl saw it (the site changed before this crawl).
    assert report["changed"] == 0 and report["unchanged"] == report["checked"] == PAGES + 2
    assert report["checked_by"] == {"conditional": PAGES + 2}
    assert _recrawl(out, "--db", postgres_url)["checked"] == 0  # the schedule: due in 30 days


def test_bad_input_is_a_one_line_error(web: Web, tmp_path: Path) -> None:
    for args, words in ((["recrawl", str(tmp_path / "none")], "holds no crawl"),
                        (["recrawl", str(web.crawl), "--strategy", "psychic"], "--strategy must be one of"),
                        (["recrawl", str(web.crawl), "--fetch-interval", "-1"], "fetch_interval")):
        done = run_cli(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("harvestman: error: ") and words in lines[0], lines


def _no_length(body: bytes) -> object:
    """A route answering without Content-Length (the body ends with the connection), no validators."""

    def serve(handler: RouteHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Connection", "close")
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)
        handler.close_connection = True

    return serve


def test_size_without_content_length_falls_back_to_a_full_get(tmp_path: Path) -> None:
    pages = {"/": b"<title>home</title><a href='/a'>a</a><a href='/b'>b</a>", "/a": b"<p>alpha",
             "/b": b"<p>beta"}
    routes = {path: _no_length(body) for path, body in pages.items()}
    with RouteServer(routes, host="127.63.0.9") as server:  # type: ignore[arg-type]
        out = tmp_path / "crawl"
        done = run_cli("crawl", server.url("/"), "--out", str(out), *NET, "-q")
        assert done.returncode == 0, done.stderr
        server.routes["/b"] = _no_length(b"<p>BETA")  # the same size, told by no Content-Length
        report = _recrawl(out, "--all", "--strategy", "size")
    rows = _records(out)
    # No Content-Length on the HEAD: each page had a full GET, said so, and the change was found.
    assert {rows[server.url(p)].checked_by for p in ("/", "/a", "/b")} == {"full"}
    assert rows[server.url("/b")].change in ("minor", "major")
    assert rows[server.url("/a")].change == "unchanged"
    assert report["changed"] == 1 and report["unchanged"] == 2


def test_sitemap_lastmods_are_read_as_w3c_datetimes() -> None:
    from harvestman.crawl.recrawl import lastmod_time

    assert lastmod_time("2024-05-01") == 1714521600.0
    assert lastmod_time("2024-05-01T10:20:30Z") == 1714558830.0
    assert lastmod_time("2024-05-01T12:20:30+02:00") == 1714558830.0
    assert lastmod_time("soon") is None and lastmod_time("") is None

"""The crawl engine's logic over an in-memory transport: robots, redirects, retries, limits, faces."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from harvestman.crawl.engine import Crawler
from harvestman.fetch.transport import MemoryTransport, Route, make_response
from harvestman.launch.status import crawl_report
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConnectFetchError
from harvestman.model.events import Event, EventKind
from harvestman.model.records import HttpRequest, HttpResponse, UrlState
from harvestman.store.sqlite_store import SqliteStore

SITE = "http://a.test"


def html(*links: str, title: str = "t", extra: str = "") -> HttpResponse:
    body = f"<html><head><title>{title}</title>{extra}</head><body>"
    body += "".join(f'<a href="{href}">{href}</a>' for href in links) + "</body></html>"
    return make_response("", 200, (("Content-Type", "text/html; charset=utf-8"),), body.encode())


def routes(**pages: HttpResponse | Route) -> dict[str, Route]:
    table: dict[str, Route] = {
        f"{SITE}/robots.txt": make_response("", 200, (), b"User-agent: *\nDisallow: /private/\n")
    }
    for path, page in pages.items():
        table[f"{SITE}/{path.replace('_', '/')}" if path != "index" else f"{SITE}/"] = page
    return table


def crawl(
    tmp_path: Path, table: dict[str, Route], **options: object
) -> tuple[MemoryTransport, list[Event], Crawler]:
    transport = MemoryTransport(table)
    events: list[Event] = []
    cfg = CrawlConfig(seeds=(f"{SITE}/",), out_dir=tmp_path / "out", **options)  # type: ignore[arg-type]
    crawler = Crawler(cfg, transport=transport, on_event=events.append)
    asyncio.run(crawler.run())
    return transport, events, crawler


def fetched_paths(transport: MemoryTransport) -> list[str]:
    return [r.url.removeprefix(SITE) for r in transport.requests]


def test_follows_links_obeys_robots_and_fetches_each_page_once(tmp_path: Path) -> None:
    table = routes(
        index=html("/a", "/b", "/private/x", "http://other.test/"), a=html("/", "/b"), b=html("/a")
    )
    transport, events, crawler = crawl(tmp_path, table)
    paths = fetched_paths(transport)
    assert sorted(paths) == ["/", "/a", "/b", "/robots.txt"]
    assert crawler.stats.fetched == 3 and crawler.stats.skipped == 1
    kinds = [e.kind for e in events]
    assert kinds[0] == EventKind.CRAWL_STARTED and kinds[-1] == EventKind.CRAWL_FINISHED
    assert any(e.kind == EventKind.SKIPPED and e.url.endswith("/private/x") for e in events)
    log = (tmp_path / "out" / "download.log").read_text().splitlines()
    assert f"{SITE}/a|Success" in log
    assert f"{SITE}/private/x|FAILED|disallowed by robots.txt" in log


def test_max_pages_and_max_depth(tmp_path: Path) -> None:
    chain = {f"p{i}": html(f"/p{i + 1}") for i in range(20)}
    table = routes(index=html("/p0"), **chain)
    transport, _, _ = crawl(tmp_path / "depth", table, max_depth=3)
    assert sorted(fetched_paths(transport)) == ["/", "/p0", "/p1", "/p2", "/robots.txt"]
    transport, _, _ = crawl(tmp_path / "pages", table, max_pages=5)
    assert len([p for p in fetched_paths(transport) if p != "/robots.txt"]) == 5


def test_redirect_is_followed_in_scope_and_refused_out_of_scope(tmp_path: Path) -> None:
    moved = make_response("", 301, (("Location", "/new"),))
    away = make_response("", 302, (("Location", "http://elsewhere.test/"),))
    table = routes(index=html("/old", "/away"), old=moved, new=html(), away=away)
    transport, _, _ = crawl(tmp_path, table)
    assert "/new" in fetched_paths(transport)
    assert not any("elsewhere" in r.url for r in transport.requests)
    report = crawl_report(tmp_path / "out")
    assert report["states"]["redirect_perm"] == 1  # /old
    assert report["states"]["redirect_temp"] == 1  # /away, refused out of scope


def test_transient_errors_are_retried_then_given_up(tmp_path: Path) -> None:
    table = routes(index=html("/flaky"), flaky=ConnectFetchError("connection reset"))
    transport, _events, crawler = crawl(tmp_path, table, retries=0)
    assert fetched_paths(transport).count("/flaky") == 1
    assert crawler.stats.failed == 1
    assert crawl_report(tmp_path / "out")["errors"] == {"connect": 1}


def test_meta_robots_nofollow_and_rel_nofollow(tmp_path: Path) -> None:
    table = routes(
        index=html("/a", extra='<meta name="robots" content="nofollow">'),
        a=html(),
    )
    transport, _, _ = crawl(tmp_path / "meta", table)
    assert "/a" not in fetched_paths(transport)
    page = make_response(
        "", 200, (("Content-Type", "text/html"),), b'<a rel="nofollow" href="/a">a</a><a href="/b">b</a>'
    )
    transport, _, _ = crawl(tmp_path / "rel", routes(index=page, a=html(), b=html()))
    assert "/a" not in fetched_paths(transport) and "/b" in fetched_paths(transport)


def test_robots_server_error_means_disallow_all(tmp_path: Path) -> None:
    table = routes(index=html("/a"))
    table[f"{SITE}/robots.txt"] = make_response("", 500)
    # retries=0: the unreachable robots.txt is given up on at once (no deferral and second ask).
    transport, _, crawler = crawl(tmp_path, table, retries=0)
    assert fetched_paths(transport) == ["/robots.txt"]
    assert crawler.stats.fetched == 0 and crawler.stats.failed == 1
    assert crawl_report(tmp_path / "out")["errors"] == {"robots_unavailable": 1}


def test_pages_async_iterator_yields_parsed_pages(tmp_path: Path) -> None:
    table = routes(index=html("/a", title="home"), a=html(title="A"))
    cfg = CrawlConfig(seeds=(f"{SITE}/",), out_dir=tmp_path / "out")

    async def collect() -> list[str]:
        crawler = Crawler(cfg, transport=MemoryTransport(table))
        return [page.parsed.title async for page in crawler.pages() if page.parsed]

    assert sorted(asyncio.run(collect())) == ["A", "home"]


def test_sync_iteration_and_early_break(tmp_path: Path) -> None:
    chain = {f"p{i}": html(f"/p{i + 1}") for i in range(50)}
    table = routes(index=html("/p0"), **chain)
    cfg = CrawlConfig(seeds=(f"{SITE}/",), out_dir=tmp_path / "out", max_depth=100)
    seen = []
    for page in Crawler(cfg, transport=MemoryTransport(table)):
        seen.append(page.result.final_url)
        if len(seen) == 3:
            break
    assert len(seen) == 3
    # The crawl stopped cleanly: it can be resumed and finishes the rest.
    resumed = Crawler(cfg.replace(resume=True, seeds=()), transport=MemoryTransport(table))
    rest = [page.result.final_url for page in resumed]
    # Pages stored while the consumer was leaving (in flight, or buffered for it) are not handed
    # out again; nothing is lost and nothing is fetched twice: 52 URLs (/, p0..p49, p50 a 404).
    assert not set(seen) & set(rest) and len(seen) + len(rest) <= 52
    assert crawl_report(cfg.out_dir)["states"]["fetched"] + crawl_report(cfg.out_dir)["states"]["gone"] == 52


def test_an_exception_inside_a_page_is_recorded_not_fatal(tmp_path: Path) -> None:
    def explode(request: HttpRequest) -> HttpResponse:
        raise RuntimeError("boom")

    table = routes(index=html("/bad", "/good"), bad=explode, good=html())
    transport, _, crawler = crawl(tmp_path, table)
    assert "/good" in fetched_paths(transport)
    assert crawl_report(tmp_path / "out")["errors"].get("internal", 0) + crawler.stats.failed >= 1


def test_bad_config_values_are_refused() -> None:
    from harvestman.model.errors import ConfigError

    with pytest.raises(ConfigError, match="per_host"):
        CrawlConfig(per_host=0)
    with pytest.raises(ConfigError, match="scope"):
        CrawlConfig(scope="galaxy")


@pytest.mark.serial  # a wall-clock bound
def test_stop_abandon_cancels_slow_fetches_and_resume_fetches_them(tmp_path: Path) -> None:
    import threading
    import time

    from tests.support.httpserver import RouteHandler, RouteServer

    release = threading.Event()

    def slow(handler: RouteHandler) -> None:
        release.wait(timeout=10)  # held until the test is over: only abandoning can end the crawl
        handler.send_simple(200, {"Content-Type": "text/html"}, b"<p>slow</p>")

    page = (200, {"Content-Type": "text/html"}, b'<a href="/slow1">1</a><a href="/slow2">2</a>')
    routes_ = {"/": page, "/robots.txt": (404, {}, b""), "/slow1": slow, "/slow2": slow}
    with RouteServer(routes_, host="127.1.0.9") as server:
        cfg = CrawlConfig(seeds=(server.url("/"),), out_dir=tmp_path / "out", allow_net=("127.1.0.0/16",))
        crawler = Crawler(cfg)

        async def main() -> float:
            task = asyncio.create_task(crawler.run())
            while server.paths.count("/slow1") + server.paths.count("/slow2") < 2:
                await asyncio.sleep(0.02)
            started = time.monotonic()
            crawler.stop(abandon=True)
            await task
            return time.monotonic() - started

        assert asyncio.run(main()) < 5
        release.set()
        report = crawl_report(tmp_path / "out")
        assert report["states"]["unfetched"] == 2  # abandoned, not lost
        resumed = Crawler(cfg.replace(resume=True))
        asyncio.run(resumed.run())
        assert crawl_report(tmp_path / "out")["states"]["fetched"] == 3


def test_a_redirect_to_a_known_page_does_not_fetch_it_twice(tmp_path: Path) -> None:
    # nginx answers /docs with a 301 to /docs/; a site linking both must still see /docs/ once.
    table = routes(index=html("/docs", "/docs/"), docs=make_response("", 301, (("Location", "/docs/"),)))
    table[f"{SITE}/docs/"] = html()
    transport, _, _ = crawl(tmp_path, table)
    assert fetched_paths(transport).count("/docs/") == 1
    assert fetched_paths(transport).count("/docs") == 1
    report = crawl_report(tmp_path / "out")
    assert report["states"]["redirect_perm"] == 1 and report["errors"] == {}
    log = (tmp_path / "out" / "download.log").read_text()
    assert f"{SITE}/docs|Success" in log


def test_a_full_disk_stops_the_crawl_and_resume_fetches_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    import harvestman.store.warc
    from harvestman.model.errors import StorageError
    from tests.support.crawlcheck import read_all_warcs

    chain = {f"p{i}": html(f"/p{i + 1}") for i in range(10)}
    table = routes(index=html("/p0"), **chain)
    real_write = os.write
    writes = {"n": 0}

    def filling_disk(fd: int, data: bytes | memoryview) -> int:
        writes["n"] += 1
        if writes["n"] > 5:  # warcinfo, then a few pages, then the disk is full
            real_write(fd, bytes(data)[:100])  # half a record reaches the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(harvestman.store.warc.os, "write", filling_disk)
    cfg = CrawlConfig(seeds=(f"{SITE}/",), out_dir=tmp_path / "out", per_host=1)
    with pytest.raises(StorageError, match="No space left"):
        asyncio.run(Crawler(cfg, transport=MemoryTransport(table)).run())
    monkeypatch.setattr(harvestman.store.warc.os, "write", real_write)
    assert read_all_warcs(tmp_path / "out") > 0  # the half record was cut off
    report = crawl_report(tmp_path / "out")
    assert report["errors"] == {} and report["states"]["unfetched"] >= 1  # nothing marked failed
    asyncio.run(Crawler(cfg.replace(resume=True), transport=MemoryTransport(table)).run())
    report = crawl_report(tmp_path / "out")
    assert report["states"]["unfetched"] == 0 and report["states"]["fetched"] == 11


def test_a_host_stops_at_its_page_budget_and_the_rest_is_recorded(tmp_path: Path) -> None:
    trap = {f"day{i}": html(f"/day{i + 1}", f"/day{i + 2}") for i in range(30)}
    table = routes(index=html("/private/a", "/day0"), **trap)  # a refused URL uses no budget
    transport, _, _ = crawl(tmp_path, table, max_pages_per_host=6)
    assert len([p for p in fetched_paths(transport) if p != "/robots.txt"]) == 6
    with SqliteStore.open_read_only(tmp_path / "out" / "crawl.db") as frontier:
        over = [r for r in frontier.records() if r.error_class == "host_budget"]
        assert over and all(r.state == UrlState.GONE for r in over)
        assert "budget of 6 pages" in over[0].error_message
        assert not frontier.counts()[UrlState.UNFETCHED]  # nothing left waiting: the crawl ended


def test_a_host_stays_busy_until_the_last_of_its_fetches_in_flight_ends(tmp_path: Path) -> None:
    import threading

    from tests.support.httpserver import RouteHandler, RouteServer

    released = {"/slow1": threading.Event(), "/slow2": threading.Event()}

    def held(handler: RouteHandler) -> None:
        released[handler.path].wait(timeout=10)
        handler.send_simple(200, {"Content-Type": "text/html"}, b"<p>slow</p>")

    page = (200, {"Content-Type": "text/html"}, b'<a href="/slow1">1</a><a href="/slow2">2</a>')
    with RouteServer({"/": page, "/robots.txt": (404, {}, b""), "/slow1": held, "/slow2": held},
                     host="127.1.0.10") as server:
        events: list[Event] = []
        cfg = CrawlConfig(seeds=(server.url("/"),), out_dir=tmp_path / "out", allow_net=("127.1.0.0/16",))
        crawler = Crawler(cfg, on_event=events.append)

        async def until(check: Callable[[], bool]) -> None:
            for _ in range(500):  # 10 s at most
                if check():
                    return
                await asyncio.sleep(0.02)
            raise AssertionError("not reached in 10 s")

        async def main() -> tuple[frozenset[str], frozenset[str]]:
            task = asyncio.create_task(crawler.run())
            await until(lambda: server.paths.count("/slow1") + server.paths.count("/slow2") == 2)
            both = crawler.stats.snapshot().busy_hosts
            released["/slow1"].set()  # one of the host's two fetches ends, the other is in flight
            await until(lambda: any(e.url.endswith("/slow1") for e in events if e.kind == EventKind.FETCHED)
                        and crawler.stats.in_flight == 1)
            one = crawler.stats.snapshot().busy_hosts
            released["/slow2"].set()
            await task
            return both, one

        both, one = asyncio.run(main())
        assert both == one == {"127.1.0.10"}
        assert not crawler.stats.busy_hosts

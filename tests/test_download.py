"""`harvestman.download()` over real loopback sockets: streaming order, result fields, retries, timeouts,
invalid URLs, the download log, the private-address guard and leaving the iterator early."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import harvestman
from harvestman.crawl.download import download_retry
from harvestman.fetch.fetcher import Fetcher
from harvestman.fetch.transport import MemoryTransport, make_response
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import (
    ConfigError,
    ConnectFetchError,
    DnsFetchError,
    FetchError,
    FramingFetchError,
    TimeoutFetchError,
    TlsFetchError,
)
from harvestman.model.records import FetchResult, LeasedUrl, RedirectHop
from harvestman.policy.outcome import decide
from tests.support.httpserver import RawServer, RouteHandler, RouteServer, raw_response, read_request
from tests.support.partialpages import head_page

# Wall-clock bounds on back-off and refusals: .ci/run runs this file alone, after the rest.
pytestmark = pytest.mark.serial

LOOPBACK = ["127.0.0.0/8"]
HTML = "<html><head><title>Café</title></head><body><p>crème brûlée</p></body></html>".encode("latin-1")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
TEXT = b"orchard " * 2000


def collect(mode: str, urls: list[str], **options: Any) -> list[tuple[float, FetchResult]]:
    """Run download() synchronously or under asyncio; each result with its arrival time (seconds)."""
    start = time.monotonic()
    if mode == "sync":
        return [(time.monotonic() - start, r) for r in harvestman.download(urls, **options)]

    async def run() -> list[tuple[float, FetchResult]]:
        return [(time.monotonic() - start, r) async for r in harvestman.download(urls, **options)]

    return asyncio.run(run())


def sleeper(seconds: float, body: bytes = b"<p>slow</p>") -> Callable[[RouteHandler], None]:
    """A route that answers after `seconds` (bounded; gives up early if the client has gone)."""

    def route(handler: RouteHandler) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(0.02)
        handler.send_simple(200, {"Content-Type": "text/html"}, body)

    return route


def flaky(failures: int, status: int = 503) -> tuple[list[int], Callable[[RouteHandler], None]]:
    """A route answering `status` `failures` times, then 200; the list counts the requests."""
    calls: list[int] = []

    def route(handler: RouteHandler) -> None:
        calls.append(1)
        if len(calls) <= failures:
            handler.send_simple(status, {"Retry-After": "0", "Content-Type": "text/plain"}, b"busy")
        else:
            handler.send_simple(200, {"Content-Type": "text/plain"}, b"finally")

    return calls, route


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_results_stream_as_they_complete(mode: str) -> None:
    with RouteServer({"/slow": sleeper(0.8)}, host="127.1.0.2") as slow, RouteServer(
        {f"/f{i}": (200, {"Content-Type": "text/plain"}, b"fast") for i in range(6)}, host="127.1.0.3"
    ) as fast:
        urls = [slow.url("/slow")] + [fast.url(f"/f{i}") for i in range(6)]
        got = collect(mode, urls, allow_net=LOOPBACK, per_host=6)
    assert sorted(r.url for _, r in got) == sorted(urls)  # one result per URL
    assert [r.url for _, r in got][-1] == slow.url("/slow")  # listed first, arrives last
    fast_times = [t for t, r in got if r.url != slow.url("/slow")]
    assert max(fast_times) < 0.6, fast_times  # the fast ones did not wait for the slow one
    assert got[-1][0] >= 0.75
    assert all(r.status == 200 and not r.error for _, r in got)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_field_of_the_result(mode: str) -> None:
    routes = {
        "/start": (301, {"Location": "/moved"}, b""),
        "/moved": (302, {"Location": "/page.html"}, b""),
        "/page.html": (200, {"Content-Type": "text/html; charset=iso-8859-1"}, HTML),
        "/logo.png": (200, {"Content-Type": "image/png"}, PNG),
        "/big.txt": (200, {"Content-Type": "text/plain; charset=utf-8"}, b"x" * 200_000),
        "/packed.txt": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip.compress(TEXT)),
    }
    before = time.time()
    with RouteServer(routes, host="127.1.0.4") as srv:
        urls = [srv.url(p) for p in ("/start", "/logo.png", "/big.txt", "/packed.txt")]
        got = {r.url: r for _, r in collect(mode, urls, allow_net=LOOPBACK, max_size=50_000)}
    after = time.time()

    page = got[srv.url("/start")]
    assert page.final_url == srv.url("/page.html")
    assert page.redirects == (
        RedirectHop(srv.url("/start"), 301, srv.url("/moved")),
        RedirectHop(srv.url("/moved"), 302, srv.url("/page.html")),
    )
    assert page.status == 200 and page.server_success
    assert page.header("content-type") == "text/html; charset=iso-8859-1"
    assert ("Content-Length", str(len(HTML))) in page.headers
    assert page.content_type == "text/html"
    assert page.charset in ("iso-8859-1", "cp1252", "windows-1252")  # WHATWG reads latin-1 as 1252
    assert page.text is not None and "crème brûlée" in page.text and "<title>Café</title>" in page.text
    assert page.body == HTML and page.body_size == len(HTML) and not page.is_binary
    assert not page.error and page.error_class == "" and page.error_message == ""
    assert before <= page.started_at <= after
    t = page.timings
    assert 0 <= t.dns <= t.connect <= t.first_byte <= t.total <= after - before
    assert t.total > 0 and t.tls == 0  # plain http: no handshake
    assert page.wire_bytes > 3 * 100  # three responses' heads, plus the body
    assert page.wire_bytes > page.body_size
    assert not page.truncated and page.attempt == 1
    assert page.remote_addr == "127.1.0.4"

    logo = got[srv.url("/logo.png")]
    assert logo.final_url == logo.url and logo.redirects == ()
    assert logo.status == 200 and logo.content_type == "image/png"
    assert logo.is_binary and logo.text is None and logo.body == PNG and logo.body_size == len(PNG)
    assert logo.charset == "" and not logo.error

    big = got[srv.url("/big.txt")]
    assert big.truncated and big.status == 200 and not big.error
    assert 0 < big.body_size <= 50_000 and big.body == b"x" * big.body_size
    assert big.wire_bytes < 200_000  # reading stopped near the cap

    packed = got[srv.url("/packed.txt")]
    assert packed.body == TEXT and packed.text == TEXT.decode()  # content-decoded ...
    assert packed.wire_bytes < packed.body_size  # ... while the wire carried the compressed form
    assert packed.charset and not packed.truncated


def test_a_transient_status_is_retried_until_it_succeeds() -> None:
    calls, route = flaky(2, 503)
    with RouteServer({"/flaky": route}, host="127.1.0.5") as srv:
        [result] = list(harvestman.download([srv.url("/flaky")], allow_net=LOOPBACK, retries=3))
    assert len(calls) == 3
    assert result.status == 200 and result.attempt == 3 and result.text == "finally"
    assert not result.error and result.server_success


def test_a_url_that_always_fails_gives_up_after_retries_plus_one_attempts() -> None:
    def hang_up(conn: socket.socket) -> None:
        read_request(conn)  # then close without a word: libcurl calls it an empty reply

    with RawServer(hang_up, host="127.1.0.6") as dead:
        start = time.monotonic()
        # obey_robots off: robots.txt on this server fails too, and would be waited for (tested below).
        [result] = list(harvestman.download([dead.url("/")], allow_net=LOOPBACK, retries=2, timeout=5,
                                            obey_robots=False))
        elapsed = time.monotonic() - start
        time.sleep(0.05)
        connections = dead.connections
    assert connections == 3
    assert result.error and result.error_class == "connect" and result.error_message
    assert result.attempt == 3 and result.status == 0 and not result.server_success
    assert elapsed < 5  # back-off 0.5 s then 1 s, not the crawl's minutes


def test_a_server_error_that_persists_ends_with_the_last_status() -> None:
    calls, route = flaky(100, 500)
    with RouteServer({"/down": route}, host="127.1.0.7") as srv:
        [result] = list(harvestman.download([srv.url("/down")], allow_net=LOOPBACK, retries=1))
    assert len(calls) == 2
    assert result.status == 500 and result.attempt == 2 and not result.server_success


def test_a_404_is_not_retried() -> None:
    with RouteServer({}, host="127.1.0.8") as srv:
        [result] = list(harvestman.download([srv.url("/gone")], allow_net=LOOPBACK, retries=3))
    assert srv.paths == ["/robots.txt", "/gone"]
    assert result.status == 404 and result.attempt == 1 and not result.error and not result.server_success
    assert not result.ok  # a 404 is no error, and not a success either


def test_started_at_is_when_the_first_attempt_began() -> None:
    calls, route = flaky(1, 503)
    before = time.time()
    with RouteServer({"/flaky": route}, host="127.1.0.5") as srv:
        [result] = list(harvestman.download([srv.url("/flaky")], allow_net=LOOPBACK, retries=2))
    assert result.attempt == 2 and len(calls) == 2
    assert before <= result.started_at <= before + 0.2


def test_a_trickling_server_is_cut_at_the_timeout() -> None:
    stop = threading.Event()

    def trickle(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(raw_response(200, [("Content-Type", "text/plain"), ("Content-Length", "1000")]))
        for _ in range(100):  # at most 10 s, never the whole body
            if stop.is_set():
                return
            conn.sendall(b"x")
            time.sleep(0.1)

    with RawServer(trickle, host="127.1.0.9") as srv:
        start = time.monotonic()
        [result] = list(harvestman.download([srv.url("/")], allow_net=LOOPBACK, timeout=1.0, retries=0,
                                            obey_robots=False))
        elapsed = time.monotonic() - start
        stop.set()
    assert 0.9 <= elapsed < 2.5
    assert result.error and result.error_class == "timeout" and "curl error 28" in result.error_message
    assert result.attempt == 1 and not result.server_success


def test_invalid_urls_give_error_results_never_exceptions() -> None:
    bad = ["not a url", "ftp://x/", "", "http://", "https://", "http://[::1/", "http://x:99999/",
           "javascript:alert(1)", "http://exa mple.com/"]
    with RouteServer({"/ok": (200, {"Content-Type": "text/plain"}, b"ok")}, host="127.1.0.10") as srv:
        start = time.monotonic()
        results = list(harvestman.download([*bad, srv.url("/ok")], allow_net=LOOPBACK, retries=3, timeout=5))
        elapsed = time.monotonic() - start
    assert sorted(r.url for r in results) == sorted([*bad, srv.url("/ok")])
    for result in results:
        if result.url == srv.url("/ok"):
            assert result.status == 200 and not result.error
        else:
            assert result.error and result.error_class == "unsupported_url", result
            assert result.error_message and result.status == 0 and result.attempt == 1
    assert elapsed < 1.5  # refused up front, never retried


def test_log_dir_writes_the_download_log(tmp_path: Path) -> None:
    routes = {"/ok": (200, {"Content-Type": "text/plain"}, b"ok")}
    with RouteServer(routes, host="127.1.0.11") as srv:
        urls = [srv.url("/ok"), srv.url("/missing"), "not a url"]
        list(harvestman.download(urls, allow_net=LOOPBACK, log_dir=tmp_path / "logs"))
        list(harvestman.download([srv.url("/ok")], allow_net=LOOPBACK, log_dir=tmp_path / "logs"))
    lines = (tmp_path / "logs" / "download.log").read_text().splitlines()
    assert len(lines) == 4  # appended, one line per URL
    assert lines.count(f"{srv.url('/ok')}|Success") == 2
    assert f"{srv.url('/missing')}|FAILED|HTTP 404" in lines
    [invalid] = [line for line in lines if line.startswith("not a url|")]
    assert invalid.startswith("not a url|FAILED|") and len(invalid.split("|")) == 3


def test_private_addresses_are_refused_without_allow_net() -> None:
    with RawServer(lambda conn: None, host="127.0.0.1") as canary, RouteServer(
        {"/hop": (302, {"Location": canary.url("/secret")}, b"")}, host="127.1.0.12"
    ) as public:
        direct, hop = (
            list(harvestman.download([canary.url("/secret")], retries=3)),
            list(harvestman.download([public.url("/hop")], allow_net=["127.1.0.0/16"], retries=3)),
        )
        time.sleep(0.2)  # any connection would have been accepted by now
        assert canary.connections == 0
    assert public.paths == ["/robots.txt", "/hop"]
    for [result] in (direct, hop):
        assert result.error and result.error_class == "blocked_address" and result.attempt == 1
        assert "refused to connect to 127.0.0.1" in result.error_message
    assert direct[0].status == 0
    # The hop is refused when its robots.txt is asked for (as the crawler does): the 302 is the result.
    assert hop[0].status == 302 and hop[0].redirects == () and hop[0].final_url == public.url("/hop")
    assert canary.url("/secret") in hop[0].error_message


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "harvestman-loop" or t.name.startswith("asyncio_")]


def _break_after_first(seconds: float) -> float:
    """Break out of a sync download after its first result while slow URLs are in flight; time it."""
    routes: dict[str, Any] = {f"/slow{i}": sleeper(seconds) for i in range(10)}
    routes["/fast"] = (200, {"Content-Type": "text/plain"}, b"fast")
    with RouteServer(routes, host="127.1.0.13") as srv:
        urls = [srv.url(p) for p in routes]
        start = time.monotonic()
        for result in harvestman.download(urls, allow_net=LOOPBACK, per_host=20, timeout=10):
            assert result.url == srv.url("/fast")
            break
        return time.monotonic() - start


def test_breaking_out_of_the_sync_iterator_leaves_no_thread_running() -> None:
    assert not _loop_threads()
    elapsed = _break_after_first(1.0)
    assert not _loop_threads()  # the loop thread and its helpers are gone when `for` ends
    assert elapsed < 2.5


def test_breaking_out_of_the_sync_iterator_returns_promptly() -> None:
    assert _break_after_first(2.0) < 1.0


def test_breaking_out_of_the_async_iterator_returns_promptly() -> None:
    with RouteServer({f"/slow{i}": sleeper(3.0) for i in range(5)}, host="127.1.0.14") as srv:
        urls = [srv.url(f"/slow{i}") for i in range(5)] + ["not a url"]

        async def first() -> FetchResult:
            async for result in harvestman.download(urls, allow_net=LOOPBACK, timeout=10):
                return result
            raise AssertionError("no result")

        start = time.monotonic()
        result = asyncio.run(first())
        assert time.monotonic() - start < 1.5
    assert result.url == "not a url" and result.error


def test_a_long_list_is_read_lazily_through_a_bounded_window() -> None:
    urls = [f"http://h{i % 50}.test/{i}" for i in range(3000)]
    transport = MemoryTransport({u: make_response(u, 200, body=b"ok") for u in urls})
    consumed = 0

    def feed() -> Iterator[str]:
        nonlocal consumed
        for url in urls:
            consumed += 1
            yield url

    async def main() -> tuple[int, int]:
        first_seen_at = -1
        count = 0
        async for result in harvestman.download(feed(), concurrency=10, transport=transport):
            assert result.status == 200
            if first_seen_at < 0:
                first_seen_at = consumed
            count += 1
        return first_seen_at, count

    first_seen_at, count = asyncio.run(main())
    assert count == 3000
    assert first_seen_at <= 10 * 8 + 1  # the window: concurrency x WINDOW_PER_SLOT, not the whole list


# robots.txt: download() is as polite as the crawler.

ROBOTS = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private/\n")
PAGE = (200, {"Content-Type": "text/html"}, b"<p>page</p>")


def test_ok_is_no_error_and_a_2xx_status() -> None:
    assert FetchResult("u", "u", status=200).ok and FetchResult("u", "u", status=204).ok
    assert not FetchResult("u", "u", status=404).ok  # no error, yet no success
    assert not FetchResult("u", "u", status=301).ok
    assert not FetchResult("u", "u", status=200, error_class="content").ok  # a response, but a failure
    assert not FetchResult("u", "u").ok


def test_robots_txt_is_read_once_per_origin_and_disallowed_urls_are_never_requested() -> None:
    routes = {"/robots.txt": ROBOTS, "/a": PAGE, "/b": PAGE, "/private/x": PAGE, "/private/y": PAGE}
    with RouteServer(routes, host="127.1.0.20") as one, RouteServer(routes, host="127.1.0.21") as two:
        urls = [srv.url(p) for srv in (one, two) for p in ("/a", "/b", "/private/x", "/private/y")]
        results = {r.url: r for r in harvestman.download(urls, allow_net=LOOPBACK)}
    assert sorted(results) == sorted(urls)
    for srv in (one, two):
        assert srv.paths[0] == "/robots.txt" and sorted(srv.paths) == ["/a", "/b", "/robots.txt"]
        assert results[srv.url("/a")].ok and results[srv.url("/b")].ok
        for path in ("/private/x", "/private/y"):
            refused = results[srv.url(path)]
            assert refused.error and refused.error_class == "robots" and not refused.ok
            assert refused.status == 0 and refused.attempt == 1
            assert f"disallowed by {srv.url('/robots.txt')}" in refused.error_message


def test_obey_robots_false_asks_for_no_robots_txt() -> None:
    with RouteServer({"/robots.txt": ROBOTS, "/private/x": PAGE}, host="127.1.0.22") as srv:
        [result] = list(harvestman.download([srv.url("/private/x")], allow_net=LOOPBACK, obey_robots=False))
    assert srv.paths == ["/private/x"] and result.ok


def test_a_redirect_hop_is_checked_against_its_targets_robots_txt() -> None:
    target_routes = {"/robots.txt": ROBOTS, "/private/x": PAGE, "/open": PAGE}
    with RouteServer(target_routes, host="127.1.0.24") as target, RouteServer(
        {
            "/robots.txt": ROBOTS,
            "/to-private": (301, {"Location": target.url("/private/x")}, b""),
            "/to-open": (302, {"Location": target.url("/open")}, b""),
            "/to-own-private": (301, {"Location": "/private/x"}, b""),
            "/private/x": PAGE,
        },
        host="127.1.0.23",
    ) as origin:
        urls = [origin.url(p) for p in ("/to-private", "/to-open", "/to-own-private")]
        results = {r.url: r for r in harvestman.download(urls, allow_net=LOOPBACK)}
    assert sorted(target.paths) == ["/open", "/robots.txt"]  # read once for both hops; /private/x never
    assert "/private/x" not in origin.paths and origin.paths.count("/robots.txt") == 1
    for path in ("/to-private", "/to-own-private"):
        refused = results[origin.url(path)]
        assert refused.error_class == "redirect_refused"
        assert "disallowed by robots.txt" in refused.error_message
        assert refused.status == 301 and refused.final_url == origin.url(path) and not refused.ok
    followed = results[origin.url("/to-open")]
    assert followed.ok and followed.final_url == target.url("/open") and len(followed.redirects) == 1


def test_a_deferred_robots_txt_is_waited_for_and_asked_again() -> None:
    calls: list[int] = []

    def robots(handler: RouteHandler) -> None:
        calls.append(1)
        if len(calls) == 1:
            handler.send_simple(429, {"Content-Type": "text/plain"}, b"slow down")
        else:
            handler.send_simple(*ROBOTS)

    with RouteServer({"/robots.txt": robots, "/a": PAGE, "/private/x": PAGE}, host="127.1.0.25") as srv:
        # robots_ttl caps how long a 429 on robots.txt defers the host: 1 s here, not 5 minutes.
        urls = [srv.url("/a"), srv.url("/private/x")]
        results = {r.url: r for r in harvestman.download(urls, allow_net=LOOPBACK, robots_ttl=1.0)}
    assert srv.paths == ["/robots.txt", "/robots.txt", "/a"]
    assert results[srv.url("/a")].ok
    assert results[srv.url("/private/x")].error_class == "robots"


def test_a_robots_txt_that_keeps_deferring_fails_the_urls_after_retries() -> None:
    with RouteServer({"/robots.txt": (429, {}, b"slow down"), "/a": PAGE}, host="127.1.0.26") as srv:
        [result] = list(harvestman.download([srv.url("/a")], allow_net=LOOPBACK, robots_ttl=0.3, retries=2))
    assert srv.paths == ["/robots.txt"] * 3  # asked again after each of `retries` waits, then given up
    assert result.error_class == "robots_unavailable" and not result.ok and result.status == 0
    assert "429" in result.error_message and "still deferred" in result.error_message


def test_an_unreachable_robots_txt_fails_its_urls_with_the_cause() -> None:
    with RouteServer({"/robots.txt": (500, {}, b"oops"), "/a": PAGE}, host="127.1.0.27") as srv:
        [result] = list(harvestman.download([srv.url("/a")], allow_net=LOOPBACK, retries=0))
    assert srv.paths == ["/robots.txt"]
    assert result.error_class == "robots_unavailable" and "HTTP 500" in result.error_message


def _request_times(robots: bytes, count: int, **options: Any) -> list[float]:
    """Download `count` pages of one host whose robots.txt is `robots`; when the server saw each."""
    seen: list[float] = []

    def page(handler: RouteHandler) -> None:
        seen.append(time.monotonic())
        handler.send_simple(*PAGE)

    routes: dict[str, Any] = {f"/p{i}": page for i in range(count)}
    routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, robots)
    with RouteServer(routes, host="127.1.0.28") as srv:
        results = list(harvestman.download([srv.url(f"/p{i}") for i in range(count)], allow_net=LOOPBACK,
                                           per_host=count, **options))
    assert len(results) == count and all(r.ok for r in results)
    return sorted(seen)


def test_crawl_delay_spaces_the_fetches_of_a_host_whatever_its_slots() -> None:
    seen = _request_times(b"User-agent: *\nCrawl-delay: 0.3\n", 4)
    assert min(b - a for a, b in itertools.pairwise(seen)) >= 0.25  # 4 slots, yet one fetch per 0.3 s


def test_crawl_delay_is_capped_by_crawl_delay_cap() -> None:
    start = time.monotonic()
    seen = _request_times(b"User-agent: *\nCrawl-delay: 60\n", 3, crawl_delay_cap=0.2)
    assert min(b - a for a, b in itertools.pairwise(seen)) >= 0.15
    assert time.monotonic() - start < 30  # not the minutes 60 s apart would take


# One retry rule: download() and the crawl's outcome.decide() agree on what is retried.

RULE_NOW = 1_800_000_000.0
LOOP = "http://loop.test/"
RETRY_TABLE: list[tuple[str, Any, bool]] = [  # name, the transport's answer, retried?
    ("timeout", TimeoutFetchError("deadline"), True),
    ("reset", ConnectFetchError("curl error 56: Connection reset by peer"), True),
    ("dns", DnsFetchError("curl error 6: could not resolve"), True),
    ("429 with Retry-After", ((("Retry-After", "0"),), 429), True),
    ("503", ((), 503), True),
    ("500", ((), 500), True),
    ("501", ((), 501), True),
    ("404", ((), 404), False),
    ("200", ((), 200), False),
    ("framing", FramingFetchError("ambiguous framing"), False),
    ("tls", TlsFetchError("certificate"), False),
    ("too many redirects", ((("Location", LOOP),), 302), False),
]


def rule_transport() -> tuple[MemoryTransport, dict[str, str]]:
    """A transport answering each row of RETRY_TABLE at its own host; the URL of each row."""
    routes: dict[str, Any] = {}
    urls: dict[str, str] = {}
    for i, (name, answer, _retried) in enumerate(RETRY_TABLE):
        url = LOOP if name == "too many redirects" else f"http://row{i}.test/"
        urls[name] = url
        routes[url] = answer if isinstance(answer, FetchError) else make_response(url, answer[1], answer[0])
    return MemoryTransport(routes), urls


def first_results() -> dict[str, FetchResult]:
    """Each row's result of a first attempt, as the crawl's Fetcher returns it."""
    transport, urls = rule_transport()

    async def main() -> dict[str, FetchResult]:
        fetcher = Fetcher(transport, max_redirects=3)
        return {name: await fetcher.fetch(url, timeout=5, max_size=1000) for name, url in urls.items()}

    return asyncio.run(main())


def test_decide_and_download_give_each_result_the_same_retry_verdict() -> None:
    cfg = CrawlConfig(retries=1)
    results = first_results()
    assert results["too many redirects"].error_class == "too_many_redirects"
    leased = LeasedUrl("http://x.test/", "x.test", 0, 0, RULE_NOW)
    rules = cfg.politeness
    by_decide = {name: not decide(r, leased, RULE_NOW, rules).final for name, r in results.items()}
    by_rule = {name: download_retry(r, 1, cfg.politeness).retry for name, r in results.items()}
    # download()'s whole path: one attempt more where the rule retries. A short Retry-After cap
    # keeps the 503 (no Retry-After: the default wait) quick here.
    transport, urls = rule_transport()
    got = {r.url: r for r in harvestman.download(urls.values(), retries=1, obey_robots=False,
                                                 retry_after_cap=0.2, max_redirects=3, transport=transport)}
    by_download = {name: got[url].attempt == 2 for name, url in urls.items()}
    expected = {name: retried for name, _answer, retried in RETRY_TABLE}
    assert by_decide == by_rule == by_download == expected


def test_retry_after_is_honoured_and_capped_alike_and_only_the_back_off_differs() -> None:
    cfg = CrawlConfig(retries=2, retry_after_cap=600).politeness
    leased = LeasedUrl("http://x.test/", "x.test", 0, 0, RULE_NOW)

    def waits(status: int, *headers: tuple[str, str]) -> tuple[float, float, float]:
        r = FetchResult(url="http://x.test/", final_url="http://x.test/", status=status, headers=headers)
        d = decide(r, leased, RULE_NOW, cfg)
        assert not d.final
        return d.outcome.next_fetch_time - RULE_NOW, download_retry(r, 1, cfg).wait, d.pause_host_until

    assert waits(429, ("Retry-After", "120")) == (120, 120, RULE_NOW + 120)
    assert waits(503, ("Retry-After", "99999")) == (600, 600, RULE_NOW + 600)  # capped
    assert waits(503) == (60, 60, RULE_NOW + 60)  # none given: a minute, not a hammering
    assert waits(429, ("Retry-After", "0")) == (2.0, 0.5, RULE_NOW)  # never sooner than the back-off
    assert waits(500) == (2.0, 0.5, 0.0)  # the back-off: a list download's is shorter
    # The last attempt is not retried, through either.
    r = FetchResult(url="http://x.test/", final_url="http://x.test/", status=500)
    last = LeasedUrl("http://x.test/", "x.test", 0, 2, RULE_NOW)
    assert decide(r, last, RULE_NOW, cfg).final
    assert not download_retry(r, 3, cfg).retry and download_retry(r, 2, cfg).retry


# Every setting download() takes has its effect, or is refused.


def test_stop_at_head_reads_a_page_only_to_its_head() -> None:
    page = head_page(2_000, 300_000, seed=1).encode()
    routes = {"/robots.txt": ROBOTS, "/big": (200, {"Content-Type": "text/html"}, page)}
    with RouteServer(routes, host="127.1.0.40") as srv:
        [stopped] = list(harvestman.download([srv.url("/big")], allow_net=LOOPBACK, stop_at="head"))
        [whole] = list(harvestman.download([srv.url("/big")], allow_net=LOOPBACK))
    assert stopped.ok and stopped.partial == "head"
    assert b"</head>" in stopped.body and len(stopped.body) < len(page)
    assert whole.ok and not whole.partial and whole.body == page


def test_stop_rules_pick_the_pages_read_in_part() -> None:
    page = head_page(2_000, 300_000, seed=2).encode()
    routes = {"/robots.txt": ROBOTS, "/v/big": (200, {"Content-Type": "text/html"}, page),
              "/big": (200, {"Content-Type": "text/html"}, page)}
    with RouteServer(routes, host="127.1.0.41") as srv:
        results = {r.url: r for r in harvestman.download([srv.url("/v/big"), srv.url("/big")],
                                                         allow_net=LOOPBACK, stop_rules={"/v/": "head"})}
    assert results[srv.url("/v/big")].partial == "head"
    assert not results[srv.url("/big")].partial and results[srv.url("/big")].body == page


@pytest.mark.parametrize("setting", [{"max_depth": 2}, {"scope": "domain"}, {"out_dir": "elsewhere"},
                                     {"max_pages_per_host": 3}, {"host_key": "ip"},
                                     {"links": {"follow_links": False}}, {"features": True}])
def test_a_crawl_setting_download_does_not_use_is_refused_before_any_request(setting: dict[str, Any]) -> None:
    with RouteServer({"/robots.txt": ROBOTS, "/a": PAGE}, host="127.1.0.42") as srv:
        with pytest.raises(ConfigError, match="download"):
            list(harvestman.download([srv.url("/a")], allow_net=LOOPBACK, **setting))
        assert srv.paths == []

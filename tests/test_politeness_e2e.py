"""Politeness end to end: real crawls (Crawler + CurlTransport) against loopback servers that keep score.

Each server records when every request started and ended and how many were in flight per host, so the
tests check what the servers saw: per-host and total concurrency, delays, Retry-After pauses, the
circuit breaker, robots.txt outcomes, refused redirect hops and the private-address guard.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harvestman.crawl.engine import Crawler
from harvestman.crawl.robots_gate import RobotsGate
from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.config import CrawlConfig
from harvestman.model.events import Event, EventKind
from harvestman.model.records import UrlRecord, UrlState
from harvestman.store.sqlite_store import SqliteStore
from tests.support.crawlcheck import RSS_LIMIT, run_cli
from tests.support.hostile import peak_rss
from tests.support.httpserver import (
    RawServer,
    RouteHandler,
    RouteServer,
    RouteValue,
    raw_response,
    read_request,
)

# It compares the spans of delayed crawls: .ci/run runs this file alone, after the rest.
pytestmark = pytest.mark.serial

HTML = {"Content-Type": "text/html; charset=utf-8"}
ROBOTS_TEXT = {"Content-Type": "text/plain"}
JITTER = 0.02  # timer and clock slack allowed on a waited-for interval


# ----- servers that keep score ---------------------------------------------------------------


@dataclass(slots=True)
class Hit:
    """One request as the server saw it."""

    host: str
    path: str
    start: float
    end: float = 0.0
    status: int = 0


@dataclass
class Tracker:
    """Shared by every server of a test: requests per host, in flight now and at most."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    hits: list[Hit] = field(default_factory=list)
    in_flight: Counter[str] = field(default_factory=Counter)
    max_in_flight: Counter[str] = field(default_factory=Counter)
    total: int = 0
    max_total: int = 0

    def route(self, respond: Callable[[RouteHandler, Hit], tuple[int, dict[str, str], bytes]],
              sleep: float = 0.0) -> Callable[[RouteHandler], None]:
        """A route that records the request, sleeps, then sends what `respond` returns."""

        def handle(handler: RouteHandler) -> None:
            hit = Hit(handler.server.owner.host, handler.path, time.time())
            with self.lock:
                self.hits.append(hit)
                self.in_flight[hit.host] += 1
                self.max_in_flight[hit.host] = max(self.max_in_flight[hit.host], self.in_flight[hit.host])
                self.total += 1
                self.max_total = max(self.max_total, self.total)
            try:
                if sleep:
                    time.sleep(sleep)
                status, headers, body = respond(handler, hit)
                hit.status = status
            finally:
                # Counted out before the response leaves: once the client has it, it may rightly send
                # the next request before this thread runs again.
                hit.end = time.time()
                with self.lock:
                    self.in_flight[hit.host] -= 1
                    self.total -= 1
            handler.send_simple(status, headers, body)

        return handle

    def page(self, links: Sequence[str] = (), sleep: float = 0.0) -> Callable[[RouteHandler], None]:
        """An HTML page linking `links`."""
        body = page_html(links)
        return self.route(lambda _h, _hit: (200, HTML, body), sleep)

    def on(self, host: str, *, pages_only: bool = True) -> list[Hit]:
        """The requests `host` received, in start order (robots.txt left out unless asked)."""
        with self.lock:
            hits = [h for h in self.hits if h.host == host]
        if pages_only:
            hits = [h for h in hits if h.path != "/robots.txt"]
        return sorted(hits, key=lambda h: h.start)


def page_html(links: Sequence[str]) -> bytes:
    items = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
    return f"<!DOCTYPE html><html><head><title>t</title></head><body><ul>{items}</ul></body></html>".encode()


@pytest.fixture
def servers(route_server: Callable[..., RouteServer]) -> Callable[[str, dict[str, RouteValue]], RouteServer]:
    """Factory: servers(host, routes) starts a RouteServer on `host`, stopped after the test."""
    return lambda host, routes: route_server(routes, host=host)


# ----- crawling -------------------------------------------------------------------------------


def crawl_config(tmp_path: Path, seeds: list[str], **changes: Any) -> CrawlConfig:
    base: dict[str, Any] = {
        "seeds": tuple(seeds),
        "out_dir": tmp_path / "out",
        "allow_net": ("127.0.0.0/8",),
        "quiet": True,
        "timeout": 10.0,
        "connect_timeout": 3.0,
    }
    base.update(changes)
    return CrawlConfig(**base)


def crawl(tmp_path: Path, seeds: list[str], **changes: Any) -> tuple[list[Event], dict[str, UrlRecord]]:
    """Run a crawl to its end; return its events and the crawl database's records by URL."""
    cfg = crawl_config(tmp_path, seeds, **changes)
    events: list[Event] = []
    asyncio.run(Crawler(cfg, on_event=events.append).run())
    return events, records(cfg.out_dir)


def records(out: Path) -> dict[str, UrlRecord]:
    frontier = SqliteStore.open_read_only(out / "crawl.db")
    try:
        return {r.url: r for r in frontier.records()}
    finally:
        frontier.close()


def paused(events: list[Event], host: str, reason: str) -> list[Event]:
    return [e for e in events if e.kind is EventKind.HOST_PAUSED and e.host == host and reason in e.message]


def gaps(hits: list[Hit]) -> list[float]:
    return [b.start - a.start for a, b in itertools.pairwise(hits)]


# ----- per-host and total concurrency -----------------------------------------------------------


def test_per_host_concurrency_and_total_concurrency_hold(tmp_path: Path, servers: Any) -> None:
    tracker = Tracker()
    hosts = ["127.1.1.1", "127.1.1.2", "127.1.1.3"]
    seeds = []
    for host in hosts:
        paths = [f"/p{i}.html" for i in range(29)]
        routes: dict[str, RouteValue] = {"/": tracker.page(paths, sleep=0.05)}
        routes.update({p: tracker.page(["/"], sleep=0.05) for p in paths})
        seeds.append(servers(host, routes).url("/"))
    _events, recs = crawl(tmp_path, seeds, per_host=2, concurrency=5)
    assert sum(r.state == UrlState.FETCHED for r in recs.values()) == 90
    for host in hosts:
        assert len(tracker.on(host)) == 30  # each page once
        assert tracker.max_in_flight[host] == 2, dict(tracker.max_in_flight)  # the limit, and reached
    assert 3 <= tracker.max_total <= 5


# ----- delays -------------------------------------------------------------------------------------


def test_robots_crawl_delay_spaces_one_host_and_not_the_others(tmp_path: Path, servers: Any) -> None:
    tracker = Tracker()
    slow, fast, capped = "127.1.1.11", "127.1.1.12", "127.1.1.13"
    seeds = []
    for host, n, robots in ((slow, 6, "Crawl-delay: 0.2"), (fast, 20, ""), (capped, 4, "Crawl-delay: 1000")):
        paths = [f"/p{i}.html" for i in range(n - 1)]
        routes: dict[str, RouteValue] = {"/": tracker.page(paths)}
        routes.update({p: tracker.page() for p in paths})
        if robots:
            routes["/robots.txt"] = (200, {"Content-Type": "text/plain"},
                                     f"User-agent: *\n{robots}\nDisallow: /nothing\n".encode())
        seeds.append(servers(host, routes).url("/"))
    _events, recs = crawl(tmp_path, seeds, crawl_delay_cap=0.3)
    assert sum(r.state == UrlState.FETCHED for r in recs.values()) == 30
    slow_hits, fast_hits, capped_hits = tracker.on(slow), tracker.on(fast), tracker.on(capped)
    assert len(slow_hits) == 6 and len(fast_hits) == 20 and len(capped_hits) == 4
    assert min(gaps(slow_hits)) >= 0.2 - JITTER, gaps(slow_hits)
    assert tracker.max_in_flight[slow] == 1
    # Crawl-delay 1000 is capped at crawl_delay_cap (0.3 s), not honoured as 1000 s.
    assert min(gaps(capped_hits)) >= 0.3 - JITTER, gaps(capped_hits)
    assert max(gaps(capped_hits)) < 1.5, gaps(capped_hits)
    # The host without a delay is not held back by its slow neighbours.
    # (Told by order, not by a time: the machine may be loaded.)
    fast_span = fast_hits[-1].start - fast_hits[0].start
    slow_span = slow_hits[-1].start - slow_hits[0].start
    assert fast_span < slow_span / 2, (fast_span, slow_span)
    assert fast_hits[-1].start < slow_hits[2].start


def test_crawl_delay_holds_from_the_first_request(tmp_path: Path, servers: Any) -> None:
    tracker = Tracker()
    paths = ["/a", "/b", "/c"]
    routes: dict[str, RouteValue] = {p: tracker.page(sleep=0.05) for p in paths}
    routes["/robots.txt"] = (200, ROBOTS_TEXT, b"User-agent: *\nCrawl-delay: 0.3\n")
    srv = servers("127.1.1.14", routes)
    crawl(tmp_path, [srv.url(p) for p in paths], per_host=2)
    hits = tracker.on(srv.host)
    assert len(hits) == 3
    assert min(gaps(hits)) >= 0.3 - JITTER, gaps(hits)


def test_cli_delay_spaces_every_host(tmp_path: Path, servers: Any) -> None:
    tracker = Tracker()
    hosts = ["127.1.1.21", "127.1.1.22"]
    seeds = []
    for host in hosts:
        paths = [f"/p{i}.html" for i in range(4)]
        routes: dict[str, RouteValue] = {"/": tracker.page(paths)}
        routes.update({p: tracker.page() for p in paths})
        seeds.append(servers(host, routes).url("/"))
    done = run_cli("crawl", *seeds, "--out", str(tmp_path / "out"), "--allow-net", "127.0.0.0/8", "--quiet",
                   "--delay", "0.15", "--per-host", "2", timeout=60)
    assert done.returncode == 0, done.stderr
    for host in hosts:
        hits = tracker.on(host)
        assert len(hits) == 5
        assert min(gaps(hits)) >= 0.15 - JITTER, gaps(hits)
        assert tracker.max_in_flight[host] == 1  # a delay means one request at a time
    # Both hosts ran side by side: the second host did not wait for the first to finish.
    first, second = tracker.on(hosts[0]), tracker.on(hosts[1])
    assert second[0].start < first[-1].start and first[0].start < second[-1].start


# ----- Retry-After ------------------------------------------------------------------------------------


RETRY_AFTER_CAP = 2.5


@pytest.mark.parametrize(
    "status, value, wait",
    [
        (429, "1", 1.0),  # delta-seconds
        (503, "date+2", 1.0),  # an HTTP date 2 s ahead (whole seconds: 1 to 2 s from the response)
        (429, "soon, please", RETRY_AFTER_CAP),  # garbage: the default back-off (60 s), capped
        (503, "1000000000", RETRY_AFTER_CAP),  # huge: capped
    ],
    ids=["seconds", "http-date", "garbage", "huge"],
)
def test_retry_after_pauses_the_host_only(
    tmp_path: Path, servers: Any, status: int, value: str, wait: float
) -> None:
    tracker = Tracker()
    host, other = "127.1.2.1", "127.1.2.2"
    answered: list[Hit] = []

    def front(_handler: RouteHandler, hit: Hit) -> tuple[int, dict[str, str], bytes]:
        if answered:
            return 200, HTML, page_html([])
        answered.append(hit)
        header = email.utils.formatdate(time.time() + 2, usegmt=True) if value == "date+2" else value
        return status, {"Retry-After": header, "Content-Type": "text/plain"}, b"slow down"

    srv = servers(host, {"/": tracker.route(front), "/a": tracker.page(), "/b": tracker.page()})
    other_paths = [f"/o{i}" for i in range(12)]
    other_routes: dict[str, RouteValue] = {"/": tracker.page(other_paths, sleep=0.02)}
    other_routes.update({p: tracker.page(sleep=0.15) for p in other_paths})
    other_srv = servers(other, other_routes)
    with peak_rss() as rss:
        events, recs = crawl(tmp_path, [srv.url("/"), srv.url("/a"), srv.url("/b"), other_srv.url("/")],
                             per_host=1, retry_after_cap=RETRY_AFTER_CAP, retries=3)
    assert rss.growth < RSS_LIMIT, rss
    hits = tracker.on(host)
    assert answered and hits[0] is answered[0]
    sent = answered[0].end
    later = hits[1:]
    assert [h.path for h in later].count("/") == 1 and {h.path for h in later} == {"/", "/a", "/b"}
    # Nothing reached the host before min(Retry-After, cap) had passed ...
    assert min(h.start for h in later) >= sent + wait - JITTER, [h.start - sent for h in later]
    # ... and the cap (or the value) was honoured, not something far longer.
    assert min(h.start for h in later) <= sent + max(wait, 2.0) + 1.5
    assert paused(events, host, f"HTTP {status}")
    # The other host kept going while this one rested.
    others = tracker.on(other)
    assert len(others) == 13
    assert any(sent < h.start < sent + wait for h in others), [h.start - sent for h in others]
    front_record = recs[srv.url("/")]
    assert front_record.state == UrlState.FETCHED and front_record.retries == 1
    assert all(recs[srv.url(p)].state == UrlState.FETCHED for p in ("/a", "/b"))


# ----- the circuit breaker ------------------------------------------------------------------------------


def _resetting_server(host: str, tracker: Tracker) -> RawServer:
    def handler(conn: socket.socket) -> None:
        head = read_request(conn)
        path = head.split(b" ", 2)[1].decode() if head.count(b" ") >= 2 else ""
        with tracker.lock:
            tracker.hits.append(Hit(host, path, time.time(), time.time()))
        if path == "/robots.txt":
            conn.sendall(raw_response(404, [("Content-Length", "0"), ("Connection", "close")]))
            return
        # RST instead of FIN: SO_LINGER with a zero timeout.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    return RawServer(handler, host=host).start()


@pytest.mark.parametrize("failure", ["http_500", "reset"])
def test_circuit_breaker_pauses_a_failing_host_only(tmp_path: Path, servers: Any, failure: str) -> None:
    tracker = Tracker()
    bad, good = "127.1.3.1", "127.1.3.2"
    raw: RawServer | None = None
    if failure == "http_500":
        routes: dict[str, RouteValue] = {
            f"/{i}": tracker.route(lambda _h, _hit: (500, {"Content-Type": "text/plain"}, b"oops"))
            for i in range(7)
        }
        bad_url = servers(bad, routes).url
    else:
        raw = _resetting_server(bad, tracker)
        bad_url = raw.url
    try:
        good_paths = [f"/g{i}" for i in range(8)]
        good_routes: dict[str, RouteValue] = {"/": tracker.page(good_paths)}
        good_routes.update({p: tracker.page(sleep=0.05) for p in good_paths})
        good_srv = servers(good, good_routes)
        bad_urls = [bad_url(f"/{i}") for i in range(7)]
        cfg = crawl_config(tmp_path, [*bad_urls, good_srv.url("/")], per_host=1, retries=0)
        events: list[Event] = []
        crawler = Crawler(cfg, on_event=events.append)

        async def main() -> None:
            task = asyncio.create_task(crawler.run())
            deadline = time.monotonic() + 20
            # The bad host is paused for 30 s: stop once the good host is done and the pause is seen.
            while time.monotonic() < deadline and not task.done():
                if paused(events, bad, "circuit breaker") and len(tracker.on(good)) == 9:
                    await asyncio.sleep(0.5)  # room for a (wrong) request during the pause
                    break
                await asyncio.sleep(0.05)
            crawler.stop()
            await asyncio.wait_for(task, 10)

        asyncio.run(main())
    finally:
        if raw is not None:
            raw.stop()
    assert paused(events, bad, "circuit breaker")
    assert len(tracker.on(bad)) == 5  # BREAKER_THRESHOLD consecutive failures, then nothing
    recs = records(cfg.out_dir)
    ended = [recs[u] for u in bad_urls if recs[u].state == UrlState.GONE]
    assert len(ended) == 5
    expected = {"http_500"} if failure == "http_500" else {"connect", "protocol"}
    assert {r.error_class for r in ended} <= expected, [(r.error_class, r.error_message) for r in ended]
    assert sum(recs[u].state == UrlState.UNFETCHED for u in bad_urls) == 2
    assert len(tracker.on(good)) == 9
    assert all(recs[good_srv.url(p)].state == UrlState.FETCHED for p in ["/", *good_paths])


# ----- robots.txt ----------------------------------------------------------------------------------------



def _robots_routes(case: str, tracker: Tracker) -> dict[str, RouteValue]:
    disallow = b"User-agent: *\nDisallow: /secret\n"
    if case == "404":
        return {}
    if case == "403":
        return {"/robots.txt": (403, ROBOTS_TEXT, b"forbidden")}
    if case == "500":
        return {"/robots.txt": (500, ROBOTS_TEXT, b"broken")}
    if case == "429":
        asked: list[int] = []

        def robots(_h: RouteHandler, _hit: Hit) -> tuple[int, dict[str, str], bytes]:
            asked.append(1)
            return (429, ROBOTS_TEXT, b"later") if len(asked) == 1 else (404, ROBOTS_TEXT, b"none")

        return {"/robots.txt": tracker.route(robots)}
    if case.startswith("redirect"):
        hops = int(case.removeprefix("redirect"))
        chain = ["/robots.txt", *[f"/r{i}" for i in range(1, hops + 1)]]
        routes: dict[str, RouteValue] = {
            a: (302, {"Location": b, "Content-Length": "0"}, b"") for a, b in itertools.pairwise(chain)
        }
        routes[chain[-1]] = (200, ROBOTS_TEXT, disallow)
        return routes
    if case == "big":
        filler = b"".join(b"# %06d padding padding padding padding padding padding padding\n" % i
                          for i in range(32 * 1024))  # ~2 MiB of comments
        cut = filler.index(b"\n", 400 * 1024) + 1  # the rule starts a line after 400 KiB
        body = b"User-agent: *\nDisallow: /nothing\n" + filler[:cut] + b"Disallow: /secret\n" + filler[cut:]
        assert len(body) >= 2 * 1024 * 1024
        return {"/robots.txt": (200, ROBOTS_TEXT, body)}
    if case == "timeout":
        return {"/robots.txt": tracker.route(lambda _h, _hit: (200, ROBOTS_TEXT, b""), sleep=2.5)}
    raise AssertionError(case)


# case -> (pages requested, error class of the seed when robots.txt stays unreachable: "disallow all")
ROBOTS_CASES = {
    "404": ({"/", "/ok", "/secret"}, ""),  # unavailable: allow all
    "403": ({"/", "/ok", "/secret"}, ""),  # any 4xx but 429 is "unavailable" too (RFC 9309 §2.3.1.3)
    "500": (set(), "robots_unavailable"),  # unreachable: disallow all
    "429": ({"/", "/ok", "/secret"}, ""),  # deferred, then 404 on the second ask
    "redirect5": ({"/", "/ok"}, ""),  # five redirects are followed (RFC 9309 §2.3.1.2)
    "redirect6": ({"/", "/ok", "/secret"}, ""),  # more: unavailable, allow all
    "big": ({"/", "/ok"}, ""),  # a rule after 400 KiB of a 2 MiB file is obeyed
    "timeout": (set(), "timeout"),  # unreachable: disallow all
}


@pytest.mark.parametrize("case", list(ROBOTS_CASES))
def test_robots_txt_outcomes(tmp_path: Path, servers: Any, case: str) -> None:
    tracker = Tracker()
    host = f"127.1.4.{list(ROBOTS_CASES).index(case) + 1}"
    routes = _robots_routes(case, tracker)
    routes["/"] = tracker.page(["/ok", "/secret"])
    routes["/ok"] = tracker.page()
    routes["/secret"] = tracker.page()
    srv = servers(host, routes)
    started = time.time()
    # robots_ttl bounds every robots.txt wait, the 429 deferral included (300 s otherwise); with
    # retries=0 an unreachable robots.txt is given up on at once (test_robots_5xx_* covers waiting).
    events, recs = crawl(tmp_path, [srv.url("/")], timeout=1.0, robots_ttl=1.0, retries=0)
    expected, unreachable = ROBOTS_CASES[case]
    assert {h.path for h in tracker.on(host)} == expected
    assert len(tracker.on(host)) == len(expected)  # no page twice
    if unreachable:
        assert recs[srv.url("/")].state == UrlState.GONE
        assert recs[srv.url("/")].error_class == unreachable
        assert "robots.txt unreachable" in recs[srv.url("/")].error_message
    if case == "429":
        assert paused(events, host, "robots.txt answered 429")
        robots_hits = [h for h in tracker.on(host, pages_only=False) if h.path == "/robots.txt"]
        assert len(robots_hits) >= 2
        assert tracker.on(host)[0].start >= robots_hits[0].end + 1.0 - JITTER  # the host was left alone
    if "/secret" not in expected and not unreachable:
        secret = recs.get(srv.url("/secret"))
        assert secret is not None and secret.error_class == "robots"
    if case == "timeout":
        assert time.time() - started < 8


def test_robots_5xx_makes_the_host_wait_not_drop_its_urls(tmp_path: Path, servers: Any) -> None:
    tracker = Tracker()
    asked: list[int] = []

    def robots(_h: RouteHandler, _hit: Hit) -> tuple[int, dict[str, str], bytes]:
        asked.append(1)
        return (503, ROBOTS_TEXT, b"busy") if len(asked) == 1 else (404, ROBOTS_TEXT, b"none")

    srv = servers("127.1.4.20", {"/robots.txt": tracker.route(robots), "/": tracker.page()})
    events, recs = crawl(tmp_path, [srv.url("/")], robots_ttl=1.0)
    assert {h.path for h in tracker.on(srv.host)} == {"/"}
    assert recs[srv.url("/")].state == UrlState.FETCHED
    assert recs[srv.url("/")].retries == 0  # the wait is the host's, not counted against the URL
    assert paused(events, srv.host, "robots.txt unreachable")


class _Clock:
    """Stands in for the `time` module inside robots_gate: a wall clock that tests move forward."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now


@pytest.mark.parametrize("status", [500, 200])
def test_robots_gate_asks_again_soon_after_5xx_and_daily_after_success(servers: Any, status: int) -> None:
    from harvestman.crawl.robots_gate import ROBOTS_GIVE_UP_TTL

    clock = _Clock()
    tracker = Tracker()
    srv = servers("127.1.4.30", {"/robots.txt": tracker.route(
        lambda _h, _hit: (status, ROBOTS_TEXT, b"User-agent: *\nDisallow: /x\n"))})
    cfg = CrawlConfig(allow_net=("127.0.0.0/8",), retries=2)
    if status == 500:
        # Deferred 5 s, asked again, deferred 10 s, asked again, then given up on for ROBOTS_GIVE_UP_TTL.
        steps = (0.0, 1.0, 5.0, 11.0, 100.0, ROBOTS_GIVE_UP_TTL)
        expected = [1, 1, 2, 3, 3, 4]
    else:
        steps = (0.0, 60.0, 601.0, 23 * 3600.0, 3600.0 + 1)
        expected = [1, 1, 1, 1, 2]

    async def main() -> list[int]:
        transport = CurlTransport(TransportSettings.from_fetch(cfg.fetch))
        gate = RobotsGate(transport, cfg.robots, cfg.fetch, cfg.politeness, clock=clock.time)
        asks = []
        try:
            for step in steps:
                clock.now += step
                verdict = await gate.check(srv.url("/page"))
                assert verdict.allowed is (status == 200)
                asks.append(len(tracker.on(srv.host, pages_only=False)))
        finally:
            await transport.aclose()
        return asks

    assert asyncio.run(main()) == expected


# ----- robots.txt on redirect hops -------------------------------------------------------------------------


def test_redirect_into_a_disallowed_page_is_not_followed(tmp_path: Path, servers: Any) -> None:
    tracker = Tracker()
    main_host, other_host = "127.1.4.41", "127.1.4.42"
    other = servers(other_host, {
        "/robots.txt": (200, ROBOTS_TEXT, b"User-agent: *\nDisallow: /blocked\n"),
        "/blocked": tracker.page(),
        "/fine": tracker.page(),
    })
    srv = servers(main_host, {
        "/robots.txt": (200, ROBOTS_TEXT, b"User-agent: *\nDisallow: /private/\n"),
        "/": tracker.page(["/go", "/go-other", "/go-fine"]),
        "/go": (302, {"Location": "/private/x"}, b""),
        "/go-other": (301, {"Location": other.url("/blocked")}, b""),
        "/go-fine": (302, {"Location": other.url("/fine")}, b""),
        "/private/x": tracker.page(),
    })
    _events, recs = crawl(tmp_path, [srv.url("/")], scope="any")
    assert {h.path for h in tracker.on(main_host)} == {"/"}
    assert {h.path for h in tracker.on(other_host)} == {"/fine"}
    for path, state in (("/go", UrlState.REDIRECT_TEMP), ("/go-other", UrlState.REDIRECT_PERM)):
        record = recs[srv.url(path)]
        assert record.state == state
        assert record.error_class == "redirect_refused"
        assert "robots.txt" in record.error_message
    assert recs[srv.url("/go-fine")].state == UrlState.REDIRECT_TEMP
    assert recs[other.url("/fine")].state == UrlState.FETCHED


# ----- the private-address guard during a crawl ---------------------------------------------------------


@dataclass
class Canary:
    """Listeners that must never be connected to; a connection waits in the backlog until checked."""

    port: int
    sockets: list[socket.socket]

    def connections(self) -> int:
        count = 0
        for sock in self.sockets:
            sock.setblocking(False)
            while True:
                try:
                    conn, _ = sock.accept()
                except BlockingIOError:
                    break
                conn.close()
                count += 1
        return count


@pytest.fixture
def canary() -> Iterator[Canary]:
    v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    v4.bind(("127.0.0.1", 0))
    v4.listen(64)
    port = v4.getsockname()[1]
    sockets = [v4]
    try:
        v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        v6.bind(("::1", port))
        v6.listen(64)
        sockets.append(v6)
    except OSError:
        pass  # no IPv6 loopback here: the [::1] link is still checked, against nothing
    yield Canary(port, sockets)
    for sock in sockets:
        sock.close()


PRIVATE_SPELLINGS = [
    "http://127.0.0.1:{port}/plain",
    "http://2130706433:{port}/decimal",
    "http://0x7f000001:{port}/hex",
    "http://[::1]:{port}/v6",
    "http://127.1:{port}/short",
    "http://[::ffff:7f00:1]:{port}/mapped",
    "http://0.0.0.0:{port}/zero",
    "http://localhost:{port}/name",  # a name: refused at connect time, on the resolved address
]


def _guarded_crawl(tmp_path: Path, servers: Any, canary: Canary) -> tuple[RouteServer, dict[str, UrlRecord]]:
    tracker = Tracker()
    links = [s.format(port=canary.port) for s in PRIVATE_SPELLINGS] + ["/redir"]
    srv = servers("127.1.5.1", {
        "/": tracker.page(links),
        "/redir": (302, {"Location": f"http://127.0.0.1:{canary.port}/redirected"}, b""),
    })
    _events, recs = crawl(tmp_path, [srv.url("/")], allow_net=("127.1.0.0/16",), scope="any", retries=0)
    assert canary.connections() == 0
    return srv, recs


def _canary_records(recs: dict[str, UrlRecord], port: int) -> list[UrlRecord]:
    return [r for u, r in recs.items() if f":{port}/" in u]


def test_private_addresses_are_never_connected_to(tmp_path: Path, servers: Any, canary: Canary) -> None:
    srv, recs = _guarded_crawl(tmp_path, servers, canary)
    assert recs[srv.url("/")].state == UrlState.FETCHED
    linked = _canary_records(recs, canary.port)
    # 127.1, 2130706433, 0x7f000001 all normalize to 127.0.0.1; each path is its own URL.
    assert len(linked) == len(PRIVATE_SPELLINGS)
    assert all(r.state == UrlState.GONE and r.error_class for r in linked), [
        (r.url, r.state, r.error_class) for r in linked]
    assert recs[srv.url("/redir")].error_class in ("blocked_address", "redirect_refused")


def test_private_addresses_are_recorded_as_blocked(tmp_path: Path, servers: Any, canary: Canary) -> None:
    srv, recs = _guarded_crawl(tmp_path, servers, canary)
    linked = _canary_records(recs, canary.port)
    assert {r.error_class for r in linked} == {"blocked_address"}, [(r.url, r.error_class) for r in linked]
    assert recs[srv.url("/redir")].error_class == "blocked_address"

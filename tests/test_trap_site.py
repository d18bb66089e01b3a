"""The trap site, end to end: one crawl of a loopback site full of traps, as the acceptance check runs it.

    harvestman crawl URL --out DIR --allow-net 127.1.0.0/16 --timeout 10

must finish with exit 0; every normal page is fetched once; robots.txt is obeyed; a canary on
127.0.0.1 sees no connection; redirect loops, calendars and growing paths stay bounded; a 429 with
Retry-After pauses its host; a slow page is cut at the timeout; peak RSS stays under 600 MB.

With one seed and the default scope ("host"), only the seed's host is in scope, so the site is
several servers (origins) on the seed's address: the main one with the pages and most traps, and a
slow one on another port. A second host on 127.1.201.1 and the canary on 127.0.0.1 are linked (and
redirected to) but out of scope: neither may see a connection. Everything else is the CLI's defaults.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestman.model.config import CrawlConfig
from harvestman.model.records import UrlState
from harvestman.net.urls import MAX_SEGMENT_REPEATS
from tests.support import hostile
from tests.support.crawlcheck import RSS_LIMIT, consistent_records, run_cli_measured
from tests.support.hostile import Behaviour, Hit, HostileServer

SITE = "127.1.200.1"
ELSEWHERE = "127.1.201.1"
TIMEOUT = 10.0
RETRY_AFTER = 3
NORMAL = ["/", *(f"/n{i}.html" for i in range(1, 16))]
JITTER = 0.05
GRACE = 0.25  # a fetch leased before the 429 arrived starts within this long; nothing may start later
TEXT = [("Content-Type", "text/plain")]


class Canary:
    """A listener on 127.0.0.1 that must never be connected to (connections wait in its backlog)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.port: int = self.sock.getsockname()[1]

    def connections(self) -> int:
        """How many connections arrived (accepted and closed here)."""
        count = 0
        for _ in range(1000):  # bounded: far more than any test could have caused
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                break
            conn.close()
            count += 1
        return count


@pytest.fixture
def canary() -> Iterator[Canary]:
    watch = Canary()
    yield watch
    watch.sock.close()


def _once_then(first: Behaviour, then: Behaviour) -> Behaviour:
    """`first` for the first request of a path, `then` for every later one."""
    asked: list[Hit] = []

    def choose(hit: Hit) -> Behaviour:
        asked.append(hit)
        return first if len(asked) == 1 else then

    return hostile.dynamic(choose)


def _next_day(hit: Hit) -> Behaviour:
    day = int(hit.path.rsplit("=", 1)[1])
    return hostile.html(f'<title>day {day}</title><a href="/cal?d={day + 1}" rel="next">next day</a>')


def _next_hop(hit: Hit) -> Behaviour:
    n = int(hit.path.rsplit("=", 1)[1])
    return hostile.redirect(f"/count?n={n + 1}")


_GROW = hostile.html('<title>grow</title><a href="x/">deeper</a>')


def _grow_or_404(hit: Hit) -> Behaviour:
    return _GROW if hit.path.startswith("/grow/") else hostile.not_found


def _page(title: str, links: list[str]) -> Behaviour:
    return hostile.html(f"<title>{title}</title>" + "".join(f'<a href="{u}">{u}</a>' for u in links))


def test_the_trap_site_is_crawled_once_safely(tmp_path: Path, canary: Canary) -> None:
    slow_routes = {"/slow": _once_then(hostile.trickle_body(interval=0.5, max_seconds=3 * TIMEOUT),
                                       hostile.html("<title>slow, then fine</title>"))}
    with HostileServer(slow_routes, host=SITE) as slow, \
            HostileServer({"/": hostile.html("<title>elsewhere</title>")}, host=ELSEWHERE) as elsewhere:
        traps = ["/private/secret", "/loop-a", "/count?n=0", "/cal?d=0", "/grow/", "/busy", "/to-canary",
                 slow.url("/slow"), elsewhere.url("/"), f"http://127.0.0.1:{canary.port}/direct"]
        routes: dict[str, Behaviour] = {
            "/robots.txt": hostile.respond(200, TEXT, b"User-agent: *\nDisallow: /private/\n"),
            "/": _page("home", [*NORMAL[1:], *traps]),
            "/private/secret": _page("secret", []),
            "/loop-a": hostile.redirect("/loop-b"),
            "/loop-b": hostile.redirect("/loop-a"),
            "/count": hostile.dynamic(_next_hop),
            "/cal": hostile.dynamic(_next_day),
            "/busy": _once_then(hostile.respond(429, [*TEXT, ("Retry-After", str(RETRY_AFTER))], b"later"),
                                _page("busy, then fine", [])),
            "/to-canary": hostile.redirect(f"http://127.0.0.1:{canary.port}/redirected"),
        }
        for i, path in enumerate(NORMAL[1:], start=1):
            routes[path] = _page(f"normal {i}", ["/", NORMAL[(i + 1) % len(NORMAL)], "/cal?d=0"])
        with HostileServer(routes, host=SITE, default=hostile.dynamic(_grow_or_404)) as site:
            out = tmp_path / "out"
            run = run_cli_measured("crawl", site.url("/"), "--out", str(out), "--allow-net", "127.1.0.0/16",
                                   "--timeout", str(int(TIMEOUT)), timeout=120)
    # The run: exit 0, bounded memory and time.
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.peak_rss < RSS_LIMIT, run.peak_rss
    assert run.elapsed < 60, run.elapsed
    records = consistent_records(out)

    # Every normal page fetched, once.
    asked = Counter(h.path for h in site.hits)
    for path in NORMAL:
        assert asked[path] == 1, (path, asked[path])
        assert records[site.url(path)].state == UrlState.FETCHED
    assert asked["/robots.txt"] == 1 and len(slow.hits_for("/robots.txt")) == 1

    # robots.txt obeyed.
    assert asked["/private/secret"] == 0
    assert records[site.url("/private/secret")].error_class == "robots"

    # The canary and the other host (out of scope, outside --allow-net or both) saw no connection.
    assert canary.connections() == 0
    assert elsewhere.connections == 0
    to_canary = records[site.url("/to-canary")]
    assert to_canary.error_class == "redirect_refused", to_canary

    # Redirect loops: A -> B -> (A, known) ends; ?n=k -> k+1 stops after 10 hops.
    assert asked["/loop-a"] == 1 and asked["/loop-b"] == 1
    assert records[site.url("/loop-a")].state == UrlState.REDIRECT_TEMP
    hops = [p for p in asked if p.startswith("/count")]
    assert sorted(hops) == sorted(f"/count?n={n}" for n in range(11)) and all(asked[p] == 1 for p in hops)
    assert records[site.url("/count?n=0")].error_class == "too_many_redirects"

    # The calendar stops at the depth limit; the growing path at the repeated-segment cap.
    days = [p for p in asked if p.startswith("/cal")]
    max_depth = CrawlConfig().max_depth
    assert sorted(days) == sorted(f"/cal?d={d}" for d in range(max_depth)), sorted(days)
    assert all(asked[p] == 1 for p in days)
    grown = sorted(p for p in asked if p.startswith("/grow/"))
    assert grown == ["/grow/" + "x/" * k for k in range(MAX_SEGMENT_REPEATS + 1)], grown
    assert all(asked[p] == 1 for p in grown)

    # The 429 paused the host: after a grace for fetches already under way, no request to the site
    # (either server) started until Retry-After had passed; then the page was fetched.
    first_busy, second_busy = site.hits_for("/busy")
    pause_end = first_busy.accepted + RETRY_AFTER - JITTER
    during = [h for h in site.hits + slow.hits if first_busy.accepted + GRACE < h.accepted < pause_end]
    assert not during, [(h.path, h.accepted - first_busy.accepted) for h in during]
    assert second_busy.accepted >= pause_end
    busy = records[site.url("/busy")]
    assert busy.state == UrlState.FETCHED and busy.retries == 1, busy

    # The slow page was cut at the timeout (as the server saw it), then fetched on its retry.
    first_slow, *_later = slow.hits_for("/slow")
    assert first_slow.closed_after is not None and abs(first_slow.closed_after - TIMEOUT) <= 0.1 * TIMEOUT
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    slow_failures = [e for e in events if e["kind"] == "failed" and e.get("url") == slow.url("/slow")]
    assert [e.get("error_class") for e in slow_failures] == ["timeout"], slow_failures
    assert records[slow.url("/slow")].state == UrlState.FETCHED

    # Nothing else was asked for: robots.txt, the pages, both loop ends, 11 hops, days, paths, /busy
    # twice, /to-canary.
    expected = 1 + len(NORMAL) + 2 + 11 + len(days) + len(grown) + 2 + 1
    assert sum(asked.values()) == expected, asked
    print(f"trap site: {run.elapsed:.1f} s, peak RSS {run.peak_rss / 2**20:.0f} MiB")

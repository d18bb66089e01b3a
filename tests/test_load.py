"""Load (docs/reliability.md, "Load"): a big host beside 10^4 small ones, and a soak, judged by nginx's log.

The load test crawls one host of 10^5 tiny pages beside 10^4 hosts of 10 through the CLI, with the
default 2 fetches a host, and reads from nginx's access log that every page came once, no host had
more than 2 requests in flight, Crawl-delay hosts were spaced, and no host starved. The soak crawls
10^5 pages of 100 hosts, a steady load, sampling the memory of the crawler's process tree, and fits
it against pages served after warm-up; from nginx's log it also checks that pages/s held up, the
late half of the soak against the early half of the same run. (The load crawl is no soak: when its
crowd of small hosts is done, its one remaining host fills its worker's caches anew, a step that is
not a leak.)

HARVESTMAN_LOAD_SCALE (default 1.0, the sizes docs/reliability.md asks for) shrinks the load crawl for a
quick run, e.g. HARVESTMAN_LOAD_SCALE=0.05; the soak keeps its 10^5 pages (~30 s) unless the scale is
below 0.1. Both take a while, so they are marked slow.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harvestman.model.records import UrlState
from tests.support.crawlcheck import consistent_records
from tests.support.loadweb import (
    CRAWL_DELAY,
    DELAYED_EVERY,
    PRIVATE,
    SMALL_PAGES,
    LoadWeb,
    Sample,
    SampledRun,
    by_host,
    generate_load_web,
    least_squares_slope,
    max_in_flight,
    memory_trend,
    pages_at,
    rate_windows,
    rss_profile,
    run_crawl_sampled,
    run_soak,
    serve_load_web,
    start_gaps,
)
from tests.support.nginx import LogEntry, free_port, require_nginx

# Pages/s and memory measured: .ci/run runs this file alone, after the rest.
pytestmark = pytest.mark.serial

SCALE = float(os.environ.get("HARVESTMAN_LOAD_SCALE", "1.0"))
BIG_PAGES = max(100, round(100_000 * SCALE))
SMALL_HOSTS = max(DELAYED_EVERY, round(10_000 * SCALE))
SOAK_HOSTS = 100
SOAK_PAGES_PER_HOST = 1000 if SCALE >= 0.1 else max(200, round(1000 * SCALE))
PER_HOST = 2  # the CLI's default
LOAD_TIMEOUT = 120 + 1200 * SCALE  # seconds the load crawl may take (~320 s measured on 2 cores)
SOAK_TIMEOUT = 720  # ... and the soak (~30 s)
SETUP_TIME = 300  # seconds to write a web, read the log back and remove it all

JITTER = 0.3  # s: a server-side gap may shrink by the client's stall between taking its turn and sending
STARVE_SLACK = 5.0  # s a host may wait beyond its Crawl-delay and two rounds over all hosts
BIG_HOST_LEFT = 0.25  # share of the big host's pages still to come when the last small host is done
RSS_SLOPE_LIMIT_MB = 30.0  # per 10^5 pages, after warm-up
RSS_PEAK_LIMIT_MB = 600.0
# Pages/s must stay stable through the soak: the late half's median pages/s (1 s windows) at least
# this share of the early half's, both measured in the same run, after warm-up and before the last
# hosts finish. A ratio, not a speed: a machine that is slow all through passes. Generous, because
# this 2-core machine is shared: a neighbour that takes a core for seconds can cost a third of the
# rate in one half, and medians of windows only ride out shorter stalls. What it still catches is
# a crawl that slows as it goes (a per-page cost growing with the URLs known or fetched), which
# halves the rate of a 10^5-page soak long before it is noticed any other way. Measured: ratios
# of 1.41 and 1.31 (the late half is the faster, its caches filled), so 0.5 leaves a wide margin.
RATE_STABILITY_MIN = 0.5
RATE_WINDOW = 1.0  # s


# ----- the measures themselves, on made-up logs ------------------------------------------------------------


def _entry(host: str, start: float, end: float, uri: str = "/") -> LogEntry:
    return LogEntry("127.0.0.1", host, 80, 1, 1, end, 200, 0, "GET", uri, "HTTP/1.1", "t",
                    request_time=round(end - start, 3))


def test_max_in_flight_counts_overlapping_requests() -> None:
    assert max_in_flight([]) == 0
    back_to_back = [_entry("h", 0.0, 1.0), _entry("h", 1.0, 2.0), _entry("h", 2.0, 2.5)]
    assert max_in_flight(back_to_back) == 1  # an end and a start in one millisecond: not together
    assert max_in_flight([_entry("h", 0.0, 1.0), _entry("h", 0.5, 1.5), _entry("h", 0.9, 3.0)]) == 3
    assert max_in_flight([_entry("h", 0.0, 1.0), _entry("h", 0.5, 1.5), _entry("h", 1.2, 3.0)]) == 2
    assert start_gaps([_entry("h", 2.0, 2.1), _entry("h", 0.5, 0.6)]) == [1.5]


def test_memory_trend_fits_rss_over_pages_after_warm_up() -> None:
    assert least_squares_slope([1, 2, 3], [2, 4, 6]) == pytest.approx(2.0)
    assert least_squares_slope([1, 1], [2, 4]) == 0.0
    page_times = [float(t) for t in range(1000)]  # one page a second
    # 100 MB growing by 1 MB every 100 s after a warm-up jump: 1000 MB per 10^5 pages.
    samples = [Sample(t, (50 if t < 100 else 100 + t // 100) * 2**20, 1) for t in range(0, 1000, 10)]
    trend = memory_trend(samples, page_times)
    assert trend.slope_mb_per_100k == pytest.approx(1000, rel=0.1)
    assert trend.peak_mb == 109 and trend.warm_mb == 102
    flat = memory_trend([Sample(t, 80 * 2**20, 3) for t in range(0, 1000, 10)], page_times)
    assert flat.slope_mb_per_100k == 0.0 and flat.points == 80
    # A worker done with its share leaves the sum smaller: not a fall in memory.
    ending = memory_trend([Sample(t, (80 if t < 900 else 40) * 2**20, 3 if t < 900 else 2)
                           for t in range(0, 1000, 10)], page_times)
    assert ending.slope_mb_per_100k == 0.0 and ending.points == 70
    assert rate_windows([0.5, 1.5, 1.6, 2.2], 0.0, 1.0) == [(0.0, 1.0), (1.0, 2.0), (2.0, 1.0)]


def rate_stability(page_times: list[float], warmup: float = 0.2, end: float = 0.95,
                   window: float = RATE_WINDOW) -> tuple[float, float]:
    """(early, late): median pages/s over `window`-second windows in the first and the second half
    of the time between the `warmup` and `end` shares of the sorted `page_times`."""
    start, stop = page_times[int(len(page_times) * warmup)], page_times[int(len(page_times) * end) - 1]
    middle = (start + stop) / 2
    windows = [(start + offset, rate) for offset, rate in rate_windows(page_times, start, window)]
    early = [rate for at, rate in windows if at + window <= middle]
    late = [rate for at, rate in windows if at >= middle and at + window <= stop]
    if not early or not late:
        raise ValueError(f"too short to compare its halves in {window:g} s windows")
    return statistics.median(early), statistics.median(late)


def test_rate_stability_compares_the_late_half_with_the_early_half() -> None:
    steady = [i / 100 for i in range(6000)]  # 100 pages/s for 60 s
    assert rate_stability(steady) == (pytest.approx(100, rel=0.02), pytest.approx(100, rel=0.02))
    # Twice as slow from half-way: the late half's rate is half the early half's.
    halving = steady[:3000] + [30 + i / 50 for i in range(3000)]
    early, late = rate_stability(halving)
    assert late / early == pytest.approx(0.5, rel=0.05)
    # A stall of 3 s in the late half (a busy neighbour) moves the median by little.
    stalled = [t if t < 45 else t + 3 for t in steady]
    early, late = rate_stability(stalled)
    assert late / early > 0.9
    # The first fifth (warm-up) and the last twentieth (the last hosts finishing) do not count.
    slow_ends = [i / 10 for i in range(600)] + [60 + i / 100 for i in range(4800)] + \
        [108 + i / 10 for i in range(300)]
    early, late = rate_stability(slow_ends)
    assert late / early == pytest.approx(1.0, rel=0.05)
    with pytest.raises(ValueError, match="too short"):
        rate_stability([0.0, 0.1, 0.2, 0.3, 0.4])


def test_load_web_pages_are_tiny_and_all_reachable(web_scratch: Path) -> None:
    tmp_path = web_scratch
    web = generate_load_web(tmp_path, 8080, big_pages=3000, small_hosts=DELAYED_EVERY)
    assert web.page_count == 3000 + DELAYED_EVERY * SMALL_PAGES and len(web.delayed) == 1
    assert "Crawl-delay" in (tmp_path / next(iter(web.delayed)) / "robots.txt").read_text()
    href = re.compile(r'href="([^"]+)"')
    for host in (web.big_host, web.small_hosts[0]):
        files = {p: tmp_path / host / ("index.html" if p == "/" else p[1:]) for p in web.paths[host]}
        assert max(f.stat().st_size for f in files.values()) < 400
        depth = {"/": 0}
        frontier = ["/"]
        while frontier:  # breadth first; bounded by the number of pages
            path = frontier.pop(0)
            for link in href.findall(files[path].read_text()):
                if link not in depth and not link.startswith(PRIVATE):
                    depth[link] = depth[path] + 1
                    frontier.append(link)
        assert set(depth) == set(web.paths[host])
        assert max(depth.values()) <= 25  # within the default --max-depth


# ----- the load crawl ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadCrawl:
    """The finished crawl of the load web and what nginx logged meanwhile."""

    web: LoadWeb
    run: SampledRun
    entries: list[LogEntry]
    states: Counter[UrlState]

    def pages(self) -> list[LogEntry]:
        """The page requests (robots.txt aside), in log order."""
        return [e for e in self.entries if e.uri != "/robots.txt"]


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder removed afterwards; not in pytest's basetemp, which a pytest session started meanwhile
    may prune while a crawl of several minutes still uses it."""
    root = Path(tempfile.mkdtemp(prefix="harvestman-load-"))
    try:
        yield root
    finally:
        began = time.monotonic()
        shutil.rmtree(root, ignore_errors=True)
        print(f"removed in {time.monotonic() - began:.1f} s")


MEMORY_FS = Path("/dev/shm")
WEB_ROOM = 2 * 2**30  # bytes free a memory file system needs to hold a web (10^5 files of one page each)


@pytest.fixture
def web_scratch() -> Iterator[Path]:
    """A folder, removed afterwards, for the web nginx serves: on a memory file system where there is
    one with room. The web is the test's fixture, not the crawler's output (which stays in `scratch`,
    on disk): its 10^5 tiny files took minutes to write and remove on a busy virtual disk, seconds here."""
    memory = (MEMORY_FS.is_dir() and os.access(MEMORY_FS, os.W_OK)
              and shutil.disk_usage(MEMORY_FS).free > WEB_ROOM)
    root = Path(tempfile.mkdtemp(prefix="harvestman-load-web-", dir=MEMORY_FS if memory else None))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def crawl_load_web(root: Path, web_root: Path) -> LoadCrawl:
    """Write the load web under `web_root`, serve it with nginx and crawl it once from every front page
    into `root`/out."""
    began = time.monotonic()
    web = generate_load_web(web_root, free_port("0.0.0.0"), big_pages=BIG_PAGES, small_hosts=SMALL_HOSTS)
    print(f"\nload web: 1 host x {BIG_PAGES} pages + {SMALL_HOSTS} hosts x {SMALL_PAGES} pages "
          f"({web.page_count} pages, {len(web.delayed)} with Crawl-delay {CRAWL_DELAY:g}, {len(web.held)} "
          f"held) written in {time.monotonic() - began:.1f} s")
    seeds = root / "seeds.txt"
    seeds.write_text("\n".join(web.seeds) + "\n")
    with serve_load_web(web) as server:
        run = run_crawl_sampled(
            ["crawl", "-i", str(seeds), "--out", str(root / "out"), "--allow-net", "127.0.0.0/8", "--quiet"],
            timeout=LOAD_TIMEOUT,
        )
        time.sleep(0.2)  # nginx logs just after it responds
        began = time.monotonic()
        entries = server.requests()
    states = Counter(r.state for r in consistent_records(root / "out").values())
    print(f"crawl: {len(entries)} requests in {run.elapsed:.1f} s ({len(entries) / run.elapsed:.0f}/s), exit "
          f"{run.returncode}; log and crawl database read in {time.monotonic() - began:.1f} s")
    return LoadCrawl(web, run, entries, states)


@pytest.mark.slow
@pytest.mark.timeout(LOAD_TIMEOUT + SETUP_TIME)
def test_one_big_host_beside_many_small_ones(scratch: Path, web_scratch: Path) -> None:
    require_nginx()
    load_crawl = crawl_load_web(scratch, web_scratch)
    web, run = load_crawl.web, load_crawl.run
    # The measures first, printed whatever the verdicts below.
    requested = Counter((e.server_addr, e.uri) for e in load_crawl.pages())
    expected = {(host, path) for host, paths in web.paths.items() for path in paths}
    robots = Counter(e.server_addr for e in load_crawl.entries if e.uri == "/robots.txt")
    hosts = by_host(load_crawl.entries)
    in_flight = {host: max_in_flight(entries) for host, entries in hosts.items()}
    quick = [h for h in web.small_hosts if h not in web.delayed and h in hosts]
    delayed = [h for h in web.delayed if h in hosts]
    first = min(e.start for e in load_crawl.entries)
    small_done = max(e.msec for h in quick for e in hosts[h])
    # Hosts take turns of up to PER_HOST fetches; at the pace of the crowd a turn comes round every
    # `crowd_round` seconds. A host that waits more than two rounds, beyond its Crawl-delay, starves.
    crowd_rate = sum(e.msec <= small_done for e in load_crawl.entries) / (small_done - first)
    crowd_round = len(web.hosts) * PER_HOST / crowd_rate
    waits = {h: [min(e.start for e in es) - first, *start_gaps(es)] for h, es in hosts.items()}
    longest = {h: max(w) - (CRAWL_DELAY if h in web.delayed else 0.0) for h, w in waits.items()}
    big_times = sorted(e.msec for e in hosts[web.big_host] if e.uri != "/robots.txt")
    big_by_then = pages_at(big_times, small_done)
    delayed_done = max(e.msec for h in delayed for e in hosts[h])
    delay_gaps = {h: start_gaps([e for e in hosts[h] if e.uri != "/robots.txt"]) for h in delayed}
    all_delay_gaps = [g for gaps in delay_gaps.values() for g in gaps]
    page_times = sorted(e.msec for e in load_crawl.pages())
    print(f"in flight at most: big host {in_flight[web.big_host]}, held hosts at 2: "
          f"{sum(in_flight.get(h) == PER_HOST for h in web.held)}/{len(web.held)}, other small hosts at 2: "
          f"{sum(in_flight[h] == PER_HOST for h in quick if h not in web.held)}")
    print(f"small hosts done {small_done - first:.1f} s in (Crawl-delay ones {delayed_done - first:.1f} s), "
          f"the big host then at {big_by_then}/{len(big_times)} pages, done {big_times[-1] - first:.1f} s "
          f"in; longest wait beyond Crawl-delay: big host {longest[web.big_host]:.1f} s, small hosts "
          f"{max(longest[h] for h in quick):.1f} s, Crawl-delay hosts "
          f"{max(longest[h] for h in delayed):.1f} s (a round: {crowd_round:.1f} s at {crowd_rate:.0f}/s)")
    print(f"Crawl-delay gaps: min {min(all_delay_gaps):.3f} s, "
          f"median {statistics.median(all_delay_gaps):.3f} s; crawl wall time {run.elapsed:.1f} s")
    print(f"RSS by pages served (pages:RSS/processes): {rss_profile(run.samples, page_times)}")

    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    # Every page once, every robots.txt once, nothing disallowed, nothing else.
    assert set(requested) - expected == set(), sorted(set(requested) - expected)[:20]
    assert expected - set(requested) == set(), sorted(expected - set(requested))[:20]
    assert [k for k, n in requested.items() if n > 1] == []
    assert set(robots) == set(web.hosts) and max(robots.values()) == 1
    assert {e.status for e in load_crawl.entries} == {200}
    assert load_crawl.states[UrlState.FETCHED] == web.page_count
    assert load_crawl.states[UrlState.GONE] == len(web.hosts)  # each front page's /private/ link

    # Per-host concurrency, robots.txt included: never above the limit; the log does see overlaps.
    assert {h: n for h, n in in_flight.items() if n > PER_HOST} == {}
    assert in_flight[web.big_host] == PER_HOST
    assert max(in_flight[h] for h in web.held) == PER_HOST

    # Crawl-delay: a delayed host's page requests start CRAWL_DELAY apart (less a stall's jitter).
    for host, gaps in delay_gaps.items():
        assert min(gaps) >= CRAWL_DELAY - JITTER, (host, gaps)
        assert sum(gaps) >= len(gaps) * CRAWL_DELAY - JITTER, (host, gaps)

    # No host starves: none waits two rounds, and every small host is done while the big host still
    # has a good share of its pages to go (a Crawl-delay host needs its 9 delays; at full scale it is
    # done long before the big host too, but the waits above are what it is held to).
    starved = {h: wait for h, wait in longest.items() if wait > 2 * crowd_round + STARVE_SLACK}
    assert starved == {}
    assert big_by_then <= (1 - BIG_HOST_LEFT) * len(big_times)

    # Memory beside 10^4 hosts: bounded (its slope is the soak's to judge, below).
    assert run.peak_rss < RSS_PEAK_LIMIT_MB * 2**20


# ----- the soak ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(SOAK_TIMEOUT + SETUP_TIME)
def test_soak_pages_per_second_are_stable_and_memory_flat_after_warm_up(scratch: Path,
                                                                       web_scratch: Path) -> None:
    require_nginx()
    soak = run_soak(scratch, SOAK_HOSTS, SOAK_PAGES_PER_HOST, timeout=SOAK_TIMEOUT, web=web_scratch)
    run, page_times = soak.run, soak.page_times
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(page_times) == soak.expected_pages
    trend = memory_trend(run.samples, page_times)
    rates = [rate for _, rate in rate_windows(page_times, run.started, 5.0)]
    print(f"\nsoak: {len(page_times)} pages of {SOAK_HOSTS} hosts in {run.elapsed:.1f} s, "
          f"{len(run.samples)} RSS samples; after warm-up RSS {trend.warm_mb:.0f} -> {trend.end_mb:.0f} MB, "
          f"slope {trend.slope_mb_per_100k:+.2f} MB per 10^5 pages ({trend.points} samples), peak "
          f"{trend.peak_mb:.0f} MB; pages/s over 5 s windows: min {min(rates):.0f}, "
          f"median {statistics.median(rates):.0f}, max {max(rates):.0f}")
    print(f"RSS by pages served (pages:RSS/processes): {rss_profile(run.samples, page_times)}")
    early, late = rate_stability(page_times)
    print(f"pages/s after warm-up, median of {RATE_WINDOW:g} s windows: early half {early:.0f}, "
          f"late half {late:.0f} (ratio {late / early:.2f}, at least {RATE_STABILITY_MIN} asked)")
    assert trend.points >= 10, "too few samples after warm-up to fit a slope"
    assert trend.slope_mb_per_100k < RSS_SLOPE_LIMIT_MB
    assert trend.peak_mb < RSS_PEAK_LIMIT_MB
    assert late >= RATE_STABILITY_MIN * early, f"pages/s fell from {early:.0f} to {late:.0f}"

"""The webs of docs/reliability.md "Load" and what a crawl of them is judged by.

The load web: one big host with many tiny pages beside many small hosts with a few each; the soak
web: a hundred hosts of a thousand tiny pages, a steady load. Both are written to disk for
`NginxServer(..., by_address=True)`. A crawl runs in a child process whose process tree's resident
memory is sampled as it goes; the measures come from nginx's access log: requests in flight per host,
the spacing of a host's requests, pages over time, and the slope of memory over pages served.
Shared by tests/test_load.py and bench/soak.py.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
import time
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from bench.synthweb import host_addresses
from tests.support.crawlcheck import harvestman_cmd
from tests.support.httpserver import RouteHandler, RouteServer
from tests.support.nginx import LogEntry, NginxServer, free_port
from tests.support.proctree import process_tree

MiB = 1024 * 1024
BIG_HOST = "127.1.200.1"
SMALL_PREFIX = "127.2"  # small hosts are 127.2.y.z, z in 1..250
SMALL_PAGES = 10
FANOUT = 4  # page i links pages FANOUT*i+1 .. FANOUT*i+FANOUT: depth ~log4(n), far below max_depth 25
CRAWL_DELAY = 1.0  # robots.txt Crawl-delay of every DELAYED_EVERY-th small host
DELAYED_EVERY = 10
PRIVATE = "/private/"  # disallowed by every robots.txt, linked from every front page
SAMPLE_EVERY = 0.5  # seconds between samples of the crawler's memory
# nginx answers a tiny page within the millisecond it reads the request, so requests a crawler has
# in flight together would not overlap in its log. Two ways make nginx hold requests, so that its log
# shows them: every HELD_EVERY-th small host waits HOLD seconds before each answer (an auth_request
# to a sleeping loopback server), and the big host is served BIG_HOST_RATE requests a second
# (limit_req delays one that comes too soon after the last). A request's span in nginx's log lies
# within the crawler's, so an overlap the log shows is one the crawler made.
HELD_EVERY, HELD_OFFSET = 50, 4  # not a Crawl-delay host: 4 % DELAYED_EVERY != DELAYED_EVERY - 1
HOLD = 0.1  # seconds
BIG_HOST_RATE = 500  # requests/s


@dataclass(frozen=True, slots=True)
class LoadWeb:
    """What was written: the hosts, each one's page paths, which hosts ask for a Crawl-delay."""

    root: Path
    port: int
    big_host: str
    small_hosts: tuple[str, ...]
    delayed: frozenset[str]  # small hosts whose robots.txt sets Crawl-delay: CRAWL_DELAY
    held: frozenset[str]  # small hosts whose every answer nginx holds HOLD seconds
    paths: dict[str, tuple[str, ...]]  # host -> every page path on it, "/" first

    @property
    def hosts(self) -> list[str]:
        """Every host, the big one first."""
        return [self.big_host, *self.small_hosts]

    @property
    def seeds(self) -> list[str]:
        """Every host's front page."""
        return [f"http://{host}:{self.port}/" for host in self.hosts]

    @property
    def page_count(self) -> int:
        """How many pages the web holds (robots.txt aside)."""
        return sum(len(p) for p in self.paths.values())


def _page_path(i: int) -> str:
    return "/" if i == 0 else f"/p{i}.html"


def _page(host: str, i: int, n: int) -> bytes:
    """Page `i` of `n` on `host`: ~300 bytes linking its children, its parent and one more page."""
    targets = [c for c in range(FANOUT * i + 1, FANOUT * i + FANOUT + 1) if c < n]
    if i:
        targets.append((i - 1) // FANOUT)  # the parent: a link to a known URL, for the seen-set
    targets.append(i * 7919 % n)  # a link across the tree, usually to a URL known already
    links = "".join(f'<a href="{_page_path(t)}">{t}</a> ' for t in targets)
    if i == 0:
        links += f'<a href="{PRIVATE}secret.html">secret</a>'
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>page {i} of {host}</title></head>\n'
        f"<body><h1>page {i} of {n}</h1>\n<p>{links}</p>\n</body></html>\n"
    ).encode()


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def write_host(directory: Path, host: str, pages: int, crawl_delay: float = 0.0) -> tuple[str, ...]:
    """Write `host`'s robots.txt and its `pages` pages under `directory`; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    robots = f"User-agent: *\nDisallow: {PRIVATE}\n"
    if crawl_delay:
        robots += f"Crawl-delay: {crawl_delay:g}\n"
    _write(directory / "robots.txt", robots.encode())
    for i in range(pages):
        _write(directory / ("index.html" if i == 0 else f"p{i}.html"), _page(host, i, pages))
    return tuple(_page_path(i) for i in range(pages))


def generate_load_web(root: Path, port: int, *, big_pages: int, small_hosts: int) -> LoadWeb:
    """Write one host of `big_pages` pages and `small_hosts` hosts of SMALL_PAGES pages under `root`."""
    if big_pages < 2 or small_hosts < 1:
        raise ValueError("the load web needs a big host of 2+ pages and at least one small host")
    smalls = host_addresses(small_hosts, prefix=SMALL_PREFIX)
    delayed = frozenset(smalls[DELAYED_EVERY - 1 :: DELAYED_EVERY])
    paths = {BIG_HOST: write_host(root / BIG_HOST, BIG_HOST, big_pages)}
    for host in smalls:
        paths[host] = write_host(root / host, host, SMALL_PAGES, CRAWL_DELAY if host in delayed else 0.0)
    held = frozenset(smalls[HELD_OFFSET::HELD_EVERY])
    return LoadWeb(root, port, BIG_HOST, tuple(smalls), delayed, held, paths)


def holder(seconds: float) -> RouteHandler:
    """A route that answers 204 after `seconds`: what nginx's auth_request waits for (see `held`)."""

    def hold(handler: RouteHandler) -> None:
        time.sleep(seconds)
        handler.send_simple(204, {}, b"")

    return hold


def held(sleeper: RouteServer) -> str:
    """nginx server directives that hold every answer until `sleeper`'s /hold answers (`holder`)."""
    return f"""auth_request /hold;
        location = /hold {{
            internal;
            auth_request off;
            proxy_pass {sleeper.url("/hold")};
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }}"""


@contextmanager
def serve_load_web(web: LoadWeb) -> Iterator[NginxServer]:
    """nginx serving `web` by address, holding requests as HOLD and BIG_HOST_RATE say, while in use."""
    with RouteServer({"/hold": holder(HOLD)}) as sleeper:
        # Beside the wildcard listener nginx opens no socket for these: it picks them by address.
        held_servers = "".join(
            f"""
    server {{
        listen {host}:{web.port};
        server_name _;
        root {web.root.resolve()}/$server_addr;
        {held(sleeper)}
    }}"""
            for host in sorted(web.held)
        )
        limit = f"""
    map $server_addr $big_host_key {{ {web.big_host} $server_addr; default ""; }}
    limit_req_zone $big_host_key zone=big_host:1m rate={BIG_HOST_RATE}r/s;"""
        # The burst is far above a polite crawler's 2 in flight: a request beyond it is refused.
        with NginxServer(web.root, web.hosts, web.port, by_address=True, extra_http=limit + held_servers,
                         extra_server="limit_req zone=big_host burst=20;") as server:
            yield server


# ----- the crawler's memory, sampled ------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    """VmRSS of one process (0 once it has gone)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class Sample(NamedTuple):
    """The crawler's process tree at one moment: its summed RSS and how many processes it had."""

    time: float  # epoch seconds
    rss: int  # bytes
    processes: int


@dataclass(frozen=True, slots=True)
class SampledRun:
    """A finished crawl: exit code, output, wall time and the samples of its process tree."""

    returncode: int
    stdout: str
    stderr: str
    started: float  # epoch seconds
    elapsed: float
    samples: tuple[Sample, ...]

    @property
    def peak_rss(self) -> int:
        """The largest RSS sampled, in bytes."""
        return max((s.rss for s in self.samples), default=0)


def run_crawl_sampled(args: Sequence[str], *, timeout: float, every: float = SAMPLE_EVERY) -> SampledRun:
    """Run `harvestman ARGS` to its end, sampling its process tree's RSS every `every` seconds."""
    samples: list[Sample] = []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started, clock = time.time(), time.monotonic()
        proc = subprocess.Popen(harvestman_cmd(*args), stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            while proc.poll() is None:  # bounded by the deadline
                if time.monotonic() - clock > timeout:
                    raise subprocess.TimeoutExpired(proc.args, timeout)
                tree = process_tree(proc.pid)
                rss = sum(rss_bytes(pid) for pid in tree)
                if rss:
                    samples.append(Sample(time.time(), rss, len(tree)))
                time.sleep(every)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        elapsed = time.monotonic() - clock
        out.seek(0)
        err.seek(0)
        return SampledRun(proc.returncode, out.read().decode(errors="replace"),
                          err.read().decode(errors="replace"), started, elapsed, tuple(samples))


# ----- the soak ------------------------------------------------------------------------------------------


SOAK_PREFIX = "127.3"
# Often enough for a slope over tens of points, however fast the machine: 10^5 pages took 6-32 s.
SOAK_SAMPLE_EVERY = 0.1


@dataclass(frozen=True, slots=True)
class Soak:
    """A finished soak: the crawl's run and samples, and when nginx served each page."""

    run: SampledRun
    page_times: list[float]  # sorted epoch seconds of each page request's log line
    expected_pages: int


def run_soak(root: Path, hosts: int, pages: int, *, timeout: float, extra: Sequence[str] = (),
             web: Path | None = None) -> Soak:
    """Crawl `hosts` hosts of `pages` tiny pages each (a steady load), written to `web` (default
    `root`/web) and served from there; the crawl's folder is `root`/out."""
    port = free_port("0.0.0.0")
    names = host_addresses(hosts, prefix=SOAK_PREFIX)
    web = root / "web" if web is None else web
    for host in names:
        write_host(web / host, host, pages)
    seeds = root / "seeds.txt"
    seeds.write_text("".join(f"http://{host}:{port}/\n" for host in names))
    with NginxServer(web, names, port, by_address=True) as server:
        run = run_crawl_sampled(["crawl", "-i", str(seeds), "--out", str(root / "out"),
                                 "--allow-net", "127.0.0.0/8", "--quiet", *extra], timeout=timeout,
                                every=SOAK_SAMPLE_EVERY)
        time.sleep(0.2)  # nginx logs just after it responds
        page_times = sorted(e.msec for e in server.requests() if e.uri != "/robots.txt")
    return Soak(run, page_times, hosts * pages)


# ----- measures read from nginx's access log ------------------------------------------------------------


def by_host(entries: Iterable[LogEntry]) -> dict[str, list[LogEntry]]:
    """Log entries grouped by the address they were sent to, each group in log order."""
    groups: dict[str, list[LogEntry]] = defaultdict(list)
    for entry in entries:
        groups[entry.server_addr].append(entry)
    return dict(groups)


def max_in_flight(entries: Iterable[LogEntry]) -> int:
    """The most requests nginx was serving at once among `entries` (one host's, say).

    A request is in flight from its first byte (`start`) to its log line (`msec`). At equal
    milliseconds an end counts before a start: nginx runs one worker, so a request read in the same
    event-loop turn in which another was logged came after it.
    """
    edges = sorted([(round(e.start * 1000), 1) for e in entries]
                   + [(round(e.msec * 1000), -1) for e in entries])
    peak = now = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def start_gaps(entries: Iterable[LogEntry]) -> list[float]:
    """Seconds between the starts of consecutive requests."""
    starts = sorted(e.start for e in entries)
    return [b - a for a, b in itertools.pairwise(starts)]


def pages_at(times: Sequence[float], when: float) -> int:
    """How many of the sorted log `times` are at or before `when`."""
    return bisect_right(times, when)


def least_squares_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The slope of the least-squares line through the points (0 for fewer than two distinct xs)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var


@dataclass(frozen=True, slots=True)
class MemoryTrend:
    """RSS against pages served after warm-up: the fitted slope, the peak, and what it was fitted on."""

    slope_mb_per_100k: float  # MB of RSS gained per 10^5 pages served
    peak_mb: float
    warm_mb: float  # RSS at the first sample fitted
    end_mb: float  # RSS at the last sample fitted
    points: int  # samples fitted


def memory_trend(samples: Sequence[Sample], page_times: Sequence[float],
                 warmup: float = 0.2) -> MemoryTrend:
    """Fit RSS over pages served (from the log's sorted `page_times`), leaving out the first `warmup`.

    Only samples of the whole process tree count: before the workers have started or once one has
    finished its share, the sum is of fewer processes. Nor do samples after the last page.
    """
    total = len(page_times)
    full = max((s.processes for s in samples), default=0)
    points = [(pages_at(page_times, s.time), s.rss / MiB, s.processes) for s in samples]
    fitted = [(p, mb) for p, mb, n in points if warmup * total <= p < total and n == full]
    slope = least_squares_slope([p for p, _ in fitted], [mb for _, mb in fitted])
    return MemoryTrend(
        slope_mb_per_100k=slope * 100_000,
        peak_mb=max((mb for _, mb, _ in points), default=0.0),
        warm_mb=fitted[0][1] if fitted else 0.0,
        end_mb=fitted[-1][1] if fitted else 0.0,
        points=len(fitted),
    )


def rss_profile(samples: Sequence[Sample], page_times: Sequence[float], parts: int = 10) -> str:
    """RSS (MB) and process count at the first sample past each 1/`parts` of the pages, as one line."""
    out: list[str] = []
    for k in range(parts + 1):
        mark = len(page_times) * k // parts
        sample = next((s for s in samples if pages_at(page_times, s.time) >= mark), None)
        if sample is not None:
            out.append(f"{mark}:{sample.rss / MiB:.0f}MB/{sample.processes}p")
    return " ".join(out)


def rate_windows(page_times: Sequence[float], start: float, window: float) -> list[tuple[float, float]]:
    """(seconds since `start`, pages/s) for each `window`-second window from `start` to the last page."""
    if window <= 0:
        raise ValueError("window must be > 0")
    if not page_times:
        return []
    out: list[tuple[float, float]] = []
    edge = start
    while edge <= page_times[-1]:  # bounded: the edge moves by `window` > 0 each turn
        count = pages_at(page_times, edge + window) - pages_at(page_times, edge)
        out.append((edge - start, count / window))
        edge += window
    return out

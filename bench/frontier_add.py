"""Grow the frontier to 10^7 URLs as discovered outlinks arrive; print URLs/s and RSS on the way.

    python bench/frontier_add.py [--total 10000000] [--hosts 10000] [--batch 1000] [--known-share 0.9]
                                 [--spread] [--dir /tmp] [--pragma NAME=VALUE ...]
                                 [--db postgresql://... | --postgres] [--lease N]

Opens a SqliteStore on a new file in a temporary directory under `--dir` (or, with --db, the
PostgreSQL store at that location, whose database must be empty; with --postgres, one on a private
server started here as the tests start theirs, tests/support/postgres.py, with durable settings:
fsync on, and the store's own synchronous_commit=off), adds the home page of
each of `--hosts` hosts, then calls add() with batches of `--batch` discovered outlinks until the
frontier knows `--total` URLs. A batch is the outlinks of pages of 25 links each, as complete()
passes them on: each page is a known URL of a random host; `--known-share` of its links are URLs
the frontier already knows and the rest are new; 80% of the links stay on the page's host, 20% go
to a random host. A known link is one of the host's first 20 URLs (its navigation) 30% of the time,
else any of its URLs. With --spread every link goes to a random host instead (no locality at all:
the worst case). URLs look like http://host-1234.example/news/2011/city-report?id=5678, ~60
characters; each carries its parent page's URL, as the engine's do.

At 10^6, 2·10^6, 5·10^6 and 10^7 known URLs (those up to --total) it prints:
  offered/s  URLs passed to add() per second of add() calls since the last mark (wall clock),
  new/s      of which new (inserted),
  last 10^6  offered/s over the last ~10^6 URLs offered before the mark,
  cpu/s      offered per second of this process's CPU time (steadier than the wall clock on a
             shared machine),
  p50/p99/max  milliseconds per add() call since the last mark,
  RSS/peak   this process's VmRSS and VmHWM, split into anonymous (Python, SQLite's page cache)
             and file-backed (libraries, pages of the database mapped by mmap_size),
  DB/WAL     the sizes of the database file and its write-ahead log.
Only add() is timed: making the URLs is not. The generator keeps 4 bytes per host, nothing per URL,
so the RSS is the frontier's. --pragma runs a PRAGMA on the frontier's connection after opening,
for trying settings without editing the code (page_size cannot be changed this way). On
PostgreSQL, RSS is this process's alone (the server's is not counted), DB is the database's size
and WAL is left blank.

With --lease N, the grown frontier then hands out N URLs as the engine asks for them: complete()
with the outcomes of the last lease and `lease=100`, every URL FETCHED; it prints leased URLs per
second (wall clock, and per CPU second of this process) and milliseconds per call. Run from the
repository root with harvestman installed (the project's venv active).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
import time
from array import array
from pathlib import Path

from harvestman.model.records import FetchOutcome, NewUrl, UrlState
from harvestman.store.factory import open_store
from harvestman.store.frontier import Store
from harvestman.store.sqlite_store import SqliteStore

LINKS_PER_PAGE = 25
INTERNAL = 0.8  # share of a page's links on its own host
NAV_LINKS = 20  # a host's first URLs: its navigation, linked from all its pages
NAV_SHARE = 0.3  # share of known links that go to a navigation URL
SECTIONS = ("news", "blog", "products", "docs", "forum/thread", "tags", "category/books", "events")
WORDS = (
    "city", "report", "market", "update", "guide", "review", "local", "world", "sport", "music", "travel",
    "food", "health", "science", "money", "style", "photo", "video", "story", "notes", "archive", "weekly",
    "daily", "open", "special",
)
MARKS = (1_000_000, 2_000_000, 5_000_000, 10_000_000)
WINDOW = 1_000_000  # URLs offered in the "last 10^6" rate


def proc_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM, RssAnon, RssFile), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class Web:
    """A synthetic web: how many URLs each host has so far (4 bytes a host), and the URL of each."""

    def __init__(self, hosts: int, rng: random.Random) -> None:
        self.rng = rng
        self.count: array[int] = array("I", [0]) * hosts
        self.prefix = [f"http://host-{h}.example/" for h in range(hosts)]
        # 4096 path shapes, picked by a mix of (host, serial): neighbouring serials land far apart
        # in the URL index, as real URLs of one site do.
        self.paths = [
            f"{SECTIONS[i % 8]}/{2000 + (i >> 3) % 25}/{WORDS[(i >> 5) % 25]}-{WORDS[(i >> 7) % 25]}?id="
            for i in range(4096)
        ]

    def url(self, host: int, serial: int) -> str:
        """The URL number `serial` of `host`."""
        mix = (serial * 2654435761 + host * 40503) >> 7
        return f"{self.prefix[host]}{self.paths[mix & 4095]}{serial}"

    def batch(self, size: int, known_share: float, spread: bool) -> tuple[list[NewUrl], int]:
        """`size` outlinks of fresh pages, `known_share` of them known; returns them and how many are new."""
        rng = self.rng
        random_ = rng.random
        count = self.count
        hosts = len(count)
        new = round(size * (1 - known_share))
        out: list[NewUrl] = []
        fresh: list[int] = []  # hosts given a new URL: counted after the batch, so a known link
        # never points at a URL first made in this same batch
        made = 0
        for start in range(0, size, LINKS_PER_PAGE):
            page_host = int(random_() * hosts)
            page_serial = int(random_() * count[page_host])
            parent = self.url(page_host, page_serial)
            depth = 1 + page_serial % 7
            for i in range(start, min(start + LINKS_PER_PAGE, size)):
                host = page_host if not spread and random_() < INTERNAL else int(random_() * hosts)
                if (i + 1) * new // size > made:  # new links spread evenly over the batch
                    serial = count[host] + fresh.count(host)
                    fresh.append(host)
                    made += 1
                else:
                    n = count[host]
                    r = random_()
                    if not spread and r < NAV_SHARE:
                        serial = int(r / NAV_SHARE * min(n, NAV_LINKS))
                    else:
                        serial = int(random_() * n)
                out.append(NewUrl(self.url(host, serial), self.prefix[host][7:-1], depth, 0.0, parent))
        for host in fresh:
            count[host] += 1
        return out, made


def db_size(frontier: Store, path: Path) -> tuple[float, float]:
    """The database's size and its WAL's, in MB (PostgreSQL: the database alone, WAL 0)."""
    if isinstance(frontier, SqliteStore):
        return path.stat().st_size / 1e6, Path(f"{path}-wal").stat().st_size / 1e6
    [(size,)] = frontier._read("SELECT pg_database_size(current_database())")  # type: ignore[attr-defined]
    return int(size) / 1e6, 0.0


def measure_leases(frontier: Store, count: int) -> None:
    """Lease and complete `count` URLs as the engine does; print the rate."""
    spent: array[float] = array("d")
    cpu = 0.0
    leased = []
    total = 0
    while total < count:
        outcomes = [FetchOutcome(x.url, UrlState.FETCHED, fetch_time=time.time(), http_status=200)
                    for x in leased]
        t0, c0 = time.perf_counter(), time.process_time()
        leased = frontier.complete(outcomes, time.time(), lease=min(100, count - total))
        spent.append(time.perf_counter() - t0)
        cpu += time.process_time() - c0
        if not leased:
            raise SystemExit(f"nothing left to lease after {total:,} URLs")
        total += len(leased)
    ms = sorted(x * 1000 for x in spent)
    print(f"leased and completed {total:,} URLs: {total / sum(spent):,.0f}/s, {total / cpu:,.0f} per CPU "
          f"second; ms a call (100 URLs): p50 {statistics.median(ms):.1f}, "
          f"p99 {ms[int(len(ms) * 0.99)]:.1f}, max {ms[-1]:.0f}", flush=True)


def main() -> None:
    """Parse options, grow the frontier, print the figures at each mark."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--total", type=float, default=1e7, help="known URLs to grow the frontier to")
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000, help="URLs per add() call")
    parser.add_argument("--known-share", type=float, default=0.9, help="share of each batch already known")
    parser.add_argument("--spread", action="store_true", help="links to random hosts only (no locality)")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the database file goes")
    parser.add_argument("--pragma", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db", default="", help="a postgresql:// location (an empty database) instead")
    parser.add_argument("--postgres", action="store_true", help="on a private PostgreSQL server started here")
    parser.add_argument("--lease", type=int, default=0, help="then lease and complete this many URLs")
    args = parser.parse_args()
    total = int(args.total)
    marks = [m for m in MARKS if m < total] + [total]
    if total < MARKS[0]:
        marks = [total // 10, total // 2, total]
    web = Web(args.hosts, random.Random(args.seed))
    print(f"{total:,} URLs over {args.hosts:,} hosts, batches of {args.batch}, {args.known_share:.0%} known"
          f"{' (spread)' if args.spread else ''}; RSS before opening {proc_mb('VmRSS'):.0f} MB")
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="harvestman-frontier-bench-", dir=args.dir))
        path = Path(tmp) / "crawl.db"
        location = args.db or str(path)
        if args.postgres:
            from tests.support.postgres import PostgresServer

            location = stack.enter_context(PostgresServer(durable=True)).create_database()
        print(f"store: {location}", flush=True)
        frontier = stack.enter_context(open_store(location, host_of=lambda url: url.split("/")[2]))
        for pragma in args.pragma:
            if not isinstance(frontier, SqliteStore):
                raise SystemExit("--pragma is for the SQLite store")
            frontier._db.execute(f"PRAGMA {pragma}")
        homes = [NewUrl(web.url(h, 0), web.prefix[h][7:-1], 0, 1.0) for h in range(args.hosts)]
        for i in range(0, len(homes), args.batch):
            frontier.add(homes[i : i + args.batch])
        web.count = array("I", [1]) * args.hosts
        known = args.hosts
        started = time.perf_counter()
        print(f"{'known':>10} {'offered/s':>9} {'new/s':>7} {'last 10^6':>9} {'cpu/s':>7} "
              f"{'p50':>5} {'p99':>5} {'max':>5}  {'RSS':>5} {'peak':>5} {'anon':>5} {'file':>5}  "
              f"{'DB':>6} {'WAL':>4}  {'elapsed':>7}", flush=True)
        results: dict[int, tuple[float, float]] = {}
        for mark in marks:
            spent: array[float] = array("d")
            offered = added = 0
            cpu = 0.0
            while known < mark:
                urls, new = web.batch(args.batch, args.known_share, args.spread)
                t0, c0 = time.perf_counter(), time.process_time()
                got = frontier.add(urls)
                spent.append(time.perf_counter() - t0)
                cpu += time.process_time() - c0
                if got != new:
                    raise SystemExit(f"add() returned {got} new URLs, {new} were new")
                offered += len(urls)
                added += got
                known += got
            wall = sum(spent)
            last = spent[-max(1, WINDOW // args.batch) :]
            ms = sorted(x * 1000 for x in spent)
            rss = proc_mb("VmRSS")
            results[mark] = (offered / wall, rss)
            size, wal = db_size(frontier, path)
            print(f"{known:>10,} {offered / wall:>9,.0f} {added / wall:>7,.0f} "
                  f"{len(last) * args.batch / sum(last):>9,.0f} {offered / cpu:>7,.0f} "
                  f"{statistics.median(ms):>5.1f} {ms[int(len(ms) * 0.99)]:>5.1f} {ms[-1]:>5.0f}  "
                  f"{rss:>5.0f} {proc_mb('VmHWM'):>5.0f} {proc_mb('RssAnon'):>5.0f} "
                  f"{proc_mb('RssFile'):>5.0f}  {size:>6.0f} {wal:>4.0f}  "
                  f"{time.perf_counter() - started:>6.0f}s", flush=True)
        if args.lease:
            measure_leases(frontier, args.lease)
    top = max(results)
    rate, rss = results[top]
    print(f"at {top:,}: {rate:,.0f} offered URLs/s (target >= 100,000), RSS {rss:.0f} MB (target <= 1024)")
    if MARKS[0] in results and top > MARKS[0]:
        print(f"RSS growth from {MARKS[0]:,} to {top:,}: {rss - results[MARKS[0]][1]:.0f} MB (target <= 300)")


if __name__ == "__main__":
    main()

"""Time the SQLite frontier's seen-check and insert as outlinks arrive, and one lease / complete round.

    python bench/frontier_add.py [--known 200000] [--hosts 20000] [--adds 100000] [--batch 500]

Builds a SqliteFrontier in a temporary directory holding `--known` URLs over `--hosts` hosts (added
in batches of 1000), then times `--adds` URLs passed to add() in batches of `--batch`, 90% of them
already known (the seen-check) and 10% new (the insert). Then times lease(100) and complete() of a
batch of 30 outcomes carrying 750 outlinks (once with 90% of them known, once all new), as a worker
reports back. Prints URLs/s, milliseconds per call (median of several) and the process RSS (VmRSS).
Run with harvestman installed (the project's venv active).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

from harvestman.records import FetchOutcome, NewUrl, UrlState
from harvestman.sqlite_frontier import SqliteFrontier


def rss_mb(field: str = "VmRSS") -> float:
    """A memory figure of this process from /proc/self/status (VmRSS: resident set size), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def host_name(i: int) -> str:
    """The name of synthetic host `i`."""
    return f"www.site{i}.example"


def new_url(host: int, serial: int, parent: str = "") -> NewUrl:
    """A synthetic URL of a typical length on host `host`."""
    name = host_name(host)
    return NewUrl(f"https://{name}/articles/2024/{serial:08d}/some-page-title.html", name, 1, 0.0, parent)


class Urls:
    """Makes fresh URLs over the hosts and draws known ones again (4 bytes kept per URL made)."""

    def __init__(self, hosts: int, rng: random.Random) -> None:
        self.hosts = hosts
        self.rng = rng
        # The host of every URL made, by serial: a list of NewUrl would weigh more than the frontier's
        # own memory, which is what the RSS figure is for.
        self.host_of: array[int] = array("I")

    def fresh(self, n: int) -> list[NewUrl]:
        """`n` URLs never made before, on random hosts."""
        start = len(self.host_of)
        hosts = [self.rng.randrange(self.hosts) for _ in range(n)]
        self.host_of.extend(hosts)
        return [new_url(host, start + i) for i, host in enumerate(hosts)]

    def mixed(self, n: int, known_share: float) -> list[NewUrl]:
        """`n` URLs in random order, `known_share` of them already made (known to the frontier)."""
        known = round(n * known_share)
        serials = [self.rng.randrange(len(self.host_of)) for _ in range(known)]
        urls = [new_url(self.host_of[s], s) for s in serials] + self.fresh(n - known)
        self.rng.shuffle(urls)
        return urls


def median_ms(calls: Callable[[], object], times: int) -> float:
    """Median milliseconds of `times` calls."""
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        calls()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1000


def main() -> None:
    """Parse options, fill the frontier, time add(), lease() and complete(), print the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--known", type=int, default=200_000, help="URLs in the frontier before timing")
    parser.add_argument("--hosts", type=int, default=20_000)
    parser.add_argument("--adds", type=int, default=100_000, help="URLs passed to add() while timed")
    parser.add_argument("--batch", type=int, default=500, help="URLs per add() call")
    parser.add_argument("--rounds", type=int, default=20, help="lease / complete calls timed")
    args = parser.parse_args()
    rng = random.Random(7)
    urls = Urls(args.hosts, rng)
    print(f"RSS before opening the frontier: {rss_mb():.0f} MB")
    with tempfile.TemporaryDirectory(prefix="harvestman-frontier-bench-") as tmp:
        frontier = SqliteFrontier(Path(tmp) / "crawl.db", host_of=lambda url: url.split("/")[2])
        with frontier:
            started = time.perf_counter()
            for done in range(0, args.known, 1000):
                frontier.add(urls.fresh(min(1000, args.known - done)))
            fill = time.perf_counter() - started
            print(f"filled: {args.known:,} URLs over {args.hosts:,} hosts in {fill:.1f} s "
                  f"({args.known / fill:,.0f} URLs/s, batches of 1000); RSS {rss_mb():.0f} MB")

            batches = [urls.mixed(args.batch, 0.9) for _ in range(args.adds // args.batch)]
            total = sum(map(len, batches))
            started = time.perf_counter()
            added = sum(frontier.add(batch) for batch in batches)
            spent = time.perf_counter() - started
            print(f"add(): {total:,} URLs in batches of {args.batch}, 90% known: {spent:.2f} s, "
                  f"{total / spent:,.0f} URLs/s ({added:,} new)")

            now = time.time()
            leased = []

            def lease() -> None:
                leased.extend(frontier.lease(100, now))

            lease_ms = median_ms(lease, args.rounds)
            print(f"lease(100): {lease_ms:.2f} ms median over {args.rounds} calls "
                  f"({len(leased):,} URLs leased)")
            for share in (0.9, 0.0):
                # Built before timing: only the frontier's work is measured.
                reports = []
                for _ in range(min(args.rounds, len(leased) // 60)):
                    batch, leased[:] = leased[:30], leased[30:]
                    outcomes = [
                        FetchOutcome(u.url, UrlState.FETCHED, now, now + 86_400, 200,
                                     content_type="text/html", body_size=20_000, wire_bytes=6_000)
                        for u in batch
                    ]
                    reports.append((outcomes, urls.mixed(750, share)))
                pending = iter(reports)

                def complete(pending: Iterator[tuple[list[FetchOutcome], list[NewUrl]]] = pending) -> None:
                    outcomes, outlinks = next(pending)
                    frontier.complete(outcomes, now, outlinks)

                complete_ms = median_ms(complete, len(reports))
                print(f"complete(): 30 outcomes + 750 outlinks ({share:.0%} known): "
                      f"{complete_ms:.2f} ms median over {len(reports)} calls")
            # Counts the pages of the database file mapped (mmap_size) and cached (cache_size) so far.
            size = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 1e6
            print(f"RSS at the end: {rss_mb():.0f} MB: {rss_mb('RssAnon'):.0f} MB anonymous (Python, SQLite's"
                  f" page cache), {rss_mb('RssFile'):.0f} MB file-backed (libraries, the mapped database);"
                  f" database + WAL files {size:.0f} MB")


if __name__ == "__main__":
    main()

"""CPU a page of SqliteStore.complete() by pages a call: what committing fewer, larger batches would save.

    python bench/commit_batch.py [--hosts 30] [--pages 100] [--new 3] [--runs 5] [--batches 1,4,17,32,64,128]

A store of `--hosts` x `--pages` URLs, all leased; then every page's outcome (a 200 with its signature,
size and title) and `--new` discovered URLs (of a few hundred a host, so some are known already) are
committed `batch` pages a call, as crawl/commit.py's PendingCommit.flush does, each call one
transaction. Printed: the median over `--runs` of µs of CPU a page, for each batch size. The default
crawl commits ~17 pages a call (bench/synthweb.py's web, 30 hosts, 2 workers: ~94 complete() calls
and ~10 lease-only calls a worker for ~1590 outcomes), so the difference between that row and the
larger ones is the most that bigger batches could save a page.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from harvestman.model.records import FetchOutcome, NewUrl, UrlState
from harvestman.store.sqlite_store import SqliteStore


def host_of(url: str) -> str:
    return url.split("/")[2]


def run(path: Path, hosts: int, pages: int, new: int, batch: int) -> float:
    """µs of CPU a page to complete every page `batch` a call, in a fresh store at `path`."""
    rng = random.Random(1)
    urls = [f"http://h{h}.test/p{i}.html" for h in range(hosts) for i in range(pages)]
    with SqliteStore(path, host_of=host_of, per_host=pages) as db:
        db.add([NewUrl(u, host_of(u), 0) for u in urls])
        work = []
        for leased in db.lease(len(urls), time.time()):
            host = host_of(leased.url)
            found = [NewUrl(f"http://{host}/q{rng.randrange(400)}.html", host, 1, 0.0, leased.url)
                     for _ in range(new)]
            outcome = FetchOutcome(leased.url, UrlState.FETCHED, time.time(), http_status=200,
                                   signature="sha1:" + "A" * 32, content_type="text/html", body_size=20_000,
                                   wire_bytes=20_300, title="a page")
            work.append((outcome, found))
        started = time.process_time()
        for i in range(0, len(work), batch):
            part = work[i : i + batch]
            db.complete([w[0] for w in part], time.time(), [u for w in part for u in w[1]])
        return (time.process_time() - started) / len(work) * 1e6


def main() -> None:
    """Time complete() at each batch size, alternating, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=30)
    parser.add_argument("--pages", type=int, default=100, help="pages a host")
    parser.add_argument("--new", type=int, default=3, help="new URLs a page")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batches", default="1,4,17,32,64,128")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    figures: dict[int, list[float]] = {b: [] for b in batches}
    with tempfile.TemporaryDirectory(prefix="harvestman-commit-") as tmp:
        for r in range(args.runs):
            for b in batches:
                figures[b].append(run(Path(tmp) / f"{r}-{b}.db", args.hosts, args.pages, args.new, b))
    print(f"{args.hosts * args.pages} pages, {args.new} new URLs a page; medians of {args.runs} runs")
    for b in batches:
        print(f"complete(), {b:4d} pages a call: {statistics.median(figures[b]):6.1f} µs CPU a page")


if __name__ == "__main__":
    main()

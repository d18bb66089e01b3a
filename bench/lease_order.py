"""The lease's cost on a large frontier: SQLite, `--hosts` hosts of `--per-host` queued URLs each.

    python bench/lease_order.py [--hosts 10000] [--per-host 100] [--rounds 300] [--limit 64]
                                [--scores] [--ordered] [--dir /tmp] [--db FILE]

Adds the URLs (host after host in turn, batches of 1,000, as a crawl's discoveries come) to a new
SqliteStore, then runs `--rounds` rounds of what the engine does: lease(`--limit`) and complete()
of every leased URL as FETCHED, per_host 2, no delay. Priorities are depths 0-3 (bfs, the default)
or, with --scores, random scores (a crawl by score, opic or pagerank: each host's best URLs lie
anywhere in the file, not in the first pages written); --ordered leases them with the global order
across hosts (SqliteStore(ordered=True)), else each host's queue alone is ordered (main's way).
Prints add() URLs/s, and the median and p90 microseconds per leased URL of lease() and of
complete(). With --db FILE, the frontier is built once and kept in FILE, and later runs start
from a copy of it (no add() timed). Run against another checkout (for example main, which has no
--ordered) with PYTHONPATH=that/src; a shared machine is noisy: alternate runs of the variants
and compare medians.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from harvestman.model.records import FetchOutcome, NewUrl, UrlState
from harvestman.store.sqlite_store import SqliteStore

T0 = 1_000_000.0


def host_of(url: str) -> str:
    return url.split("/", 3)[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--per-host", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--limit", type=int, default=64)
    ap.add_argument("--scores", action="store_true")
    ap.add_argument("--ordered", action="store_true")
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--db", type=Path, help="keep the built frontier here; start from a copy when it exists")
    args = ap.parse_args()
    rng = random.Random(7)
    kw: dict[str, Any] = {"ordered": True} if args.ordered else {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "crawl.db"
        built = args.db is not None and args.db.is_file()
        if built:
            shutil.copyfile(args.db, path)
        store = SqliteStore(path, host_of=host_of, per_host=2, **kw)
        batch: list[NewUrl] = []
        added = 0
        spent = 0.0
        for i in range(0 if built else args.per_host):
            for h in range(args.hosts):
                url = f"http://host-{h}.example/page/{i}"
                depth = min(i, 3)
                scored = args.scores or args.ordered
                priority = -rng.random() if scored else float(depth)
                score = -priority if scored else 0.0
                batch.append(NewUrl(url, host_of(url), depth, score, "", priority))
                if len(batch) == 1000:
                    start = time.perf_counter()
                    added += store.add(batch)
                    spent += time.perf_counter() - start
                    batch = []
        if batch:
            start = time.perf_counter()
            added += store.add(batch)
            spent += time.perf_counter() - start
        if args.db is not None and not built:
            store.close()
            shutil.copyfile(path, args.db)
            store = SqliteStore(path, host_of=host_of, per_host=2, **kw)
        lease_us: list[float] = []
        complete_us: list[float] = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            leased = store.lease(args.limit, T0)
            mid = time.perf_counter()
            store.complete([FetchOutcome(x.url, UrlState.FETCHED, fetch_time=T0, http_status=200)
                            for x in leased], T0)
            end = time.perf_counter()
            if leased:
                lease_us.append((mid - start) * 1e6 / len(leased))
                complete_us.append((end - mid) * 1e6 / len(leased))
        store.close()

    def show(xs: list[float]) -> str:
        return f"median {statistics.median(xs):7.1f}  p90 {statistics.quantiles(xs, n=10)[-1]:7.1f}"

    rate = f"add {added / spent:7.0f} URLs/s" if spent else "(copied)"
    kind = "ordered" if args.ordered else "scores" if args.scores else "bfs"
    print(f"{kind:8s} {rate}  "
          f"lease µs/URL {show(lease_us)}  complete µs/URL {show(complete_us)}")


if __name__ == "__main__":
    main()

"""PageRank and dedup at crawl scale (10^6 pages, 10^7 links) on DuckDB and on Spark local mode.

    python bench/batch_scale.py [--pages 1000000] [--links 10000000] [--iterations 20]
                                [--engines duckdb,spark] [--jobs pagerank,dedup] [--dir /tmp]
    python bench/batch_scale.py --snapshot-pages 100000 [--dir /tmp]

Writes a synthetic snapshot straight into Parquet (no crawl; DuckDB's SQL generates it in seconds):
`--pages` fetched pages on 20,000 hosts, `--links` links from uniformly chosen pages to targets
drawn with a power-law in-degree (target rank r gets ~ r^(-2/3) of the links), 2% nofollow;
2% of the pages are exact copies of their neighbour (signature and SimHash), 2% are near copies
(the neighbour's SimHash with one bit flipped), the rest have random SimHashes. Each job then runs
in a fresh process (`--run`), timed, with the peak RSS of that process and its children (Spark's
JVM) sampled from /proc. PageRank runs `--iterations` iterations (0: until the L1 change < 1e-9).

With --snapshot-pages N it measures the other end instead: a SQLite crawl database of N fetched
pages with 10 links each is written through the store's API, then `write_snapshot` turns it into
Parquet (in a fresh process, timed, with its peak RSS).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.proctree import TreePeak

HOSTS = 20_000


def generate(folder: Path, pages: int, links: int) -> None:
    """Write urls.parquet and links.parquet of a synthetic crawl into `folder`."""
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    db = duckdb.connect(":memory:")
    db.execute("SELECT setseed(0.42)")
    url = f"'http://h' || (id % {HOSTS}) || '.test/p' || id"
    base = "CAST(hash(id) >> 1 AS BIGINT)"
    near = "xor(CAST(hash(id - 2) >> 1 AS BIGINT), CAST(1 AS BIGINT) << CAST(id % 60 AS BIGINT))"
    db.execute(f"""COPY (SELECT id AS seq, {url} AS url, 'h' || (id % {HOSTS}) || '.test' AS host,
        'fetched' AS state, CAST(1 AS INT) AS depth, random() AS score, 1.0e9 AS fetch_time,
        200 AS http_status, 'text/html' AS content_type,
        CASE WHEN id % 50 = 1 THEN 'sig' || (id - 1) ELSE 'sig' || id END AS signature,
        CASE WHEN id % 50 = 1 THEN CAST(hash(id - 1) >> 1 AS BIGINT)
             WHEN id % 50 = 2 THEN {near} ELSE {base} END AS simhash,
        '' AS duplicate_of, CAST(0 AS BIGINT) AS inlinks, CAST(20000 AS BIGINT) AS body_size
        FROM range({pages}) t(id)) TO '{folder / "urls.parquet"}' (FORMAT PARQUET)""")
    src = f"CAST(floor(random() * {pages}) AS BIGINT)"
    dst = f"CAST(floor(pow(random(), 3) * {pages}) AS BIGINT)"
    db.execute(f"""COPY (SELECT 'http://h' || (s % {HOSTS}) || '.test/p' || s AS from_url,
        'http://h' || (d % {HOSTS}) || '.test/p' || d AS to_url, '' AS anchor, 'a' AS kind,
        random() < 0.02 AS nofollow, s % {HOSTS} = d % {HOSTS} AS internal
        FROM (SELECT {src} AS s, {dst} AS d FROM range({links}))) TO '{folder / "links.parquet"}'
        (FORMAT PARQUET)""")
    db.close()


def run_job(engine_name: str, job: str, folder: Path, iterations: int) -> dict[str, object]:
    """One job on one engine over the snapshot in `folder` (run in its own process)."""
    from harvestman.batch.duplicates import find_duplicates
    from harvestman.batch.engine import DuckDbEngine
    from harvestman.batch.ranks import pagerank

    started = time.perf_counter()
    if engine_name == "spark":
        from harvestman.batch.spark_engine import SparkEngine

        engine = SparkEngine(shuffle_partitions=8, driver_memory="12g")
    else:
        engine = DuckDbEngine(temp_dir=folder / "duckdb.tmp")
    ready = time.perf_counter()
    engine.register("urls", folder / "urls.parquet")
    engine.register("links", folder / "links.parquet")
    out = folder / f"{job}-{engine_name}.parquet"
    figures: dict[str, object]
    if job == "pagerank":
        ranked = pagerank(engine, out, iterations=iterations or None)
        figures = {"iterations": ranked.iterations, "l1_change": ranked.change, "rows": ranked.urls}
    else:
        found = find_duplicates(engine, out, distance=3)
        figures = {"duplicates": found.duplicates, "groups": found.groups, "rounds": found.rounds}
    done = time.perf_counter()
    engine.close()
    return {"start_s": round(ready - started, 1), "job_s": round(done - ready, 1), **figures}


def build_store(folder: Path, pages: int) -> None:
    """A SQLite crawl database of `pages` fetched pages, 10 links each, power-law targets."""
    import random

    from harvestman.model.records import FetchOutcome, Link, NewUrl, PageLinks, UrlState
    from harvestman.store.factory import open_store

    rng = random.Random(5)
    store = open_store(str(folder / "crawl.db"), host_of=lambda u: u.split("/")[2], per_host=1 << 20)
    try:
        urls = [f"http://h{i % HOSTS}.test/p{i}" for i in range(pages)]
        for start in range(0, pages, 10_000):
            store.add([NewUrl(u, u.split("/")[2]) for u in urls[start : start + 10_000]])
        while leased := store.lease(10_000, 0.0):  # ends: each page is completed once
            outcomes = [FetchOutcome(x.url, UrlState.FETCHED, 1.0, http_status=200, signature=x.url[-6:],
                                     content_type="text/html") for x in leased]
            links = [PageLinks(x.url, tuple(Link(urls[int(rng.random() ** 3 * pages)], anchor="a")
                                            for _ in range(10))) for x in leased]
            store.complete(outcomes, 1.0, links=links)
    finally:
        store.close()


def run_snapshot(folder: Path) -> dict[str, object]:
    """Write the Parquet snapshot of the crawl database in `folder` (run in its own process)."""
    from harvestman.batch.snapshot import write_snapshot
    from harvestman.store.factory import open_store

    started = time.perf_counter()
    store = open_store(str(folder / "crawl.db"), read_only=True)
    try:
        snap = write_snapshot(store, folder / "snapshot")
    finally:
        store.close()
    return {"snapshot_s": round(time.perf_counter() - started, 1), "urls": snap.urls, "links": snap.links}


def measure(engine: str, job: str, folder: Path, iterations: int) -> dict[str, object]:
    """Run one job in a child process; its figures, wall time and peak RSS of its process tree."""
    cmd = [sys.executable, __file__, "--dir", str(folder), "--iterations", str(iterations)]
    cmd += ["--run-snapshot"] if job == "snapshot" else ["--run", engine, job]
    started = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc, TreePeak(proc.pid, 0.2) as peak:
        stdout, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{engine} {job} failed (exit {proc.returncode})")
    figures = json.loads(stdout.strip().splitlines()[-1])
    return {"engine": engine, "job": job, "wall_s": round(time.perf_counter() - started, 1),
            "peak_rss_mb": round(peak.kib / 1024), **figures}


def main() -> None:
    """Parse options, generate the snapshot, time the jobs, print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--links", type=int, default=10_000_000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--engines", default="duckdb,spark")
    parser.add_argument("--jobs", default="pagerank,dedup")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--snapshot-pages", type=int, default=0)
    parser.add_argument("--run", nargs=2, metavar=("ENGINE", "JOB"), help=argparse.SUPPRESS)
    parser.add_argument("--run-snapshot", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_job(args.run[0], args.run[1], args.dir, args.iterations)))
        return
    if args.run_snapshot:
        print(json.dumps(run_snapshot(args.dir)))
        return
    if args.snapshot_pages:
        folder = Path(tempfile.mkdtemp(prefix="batch-snapshot-", dir=args.dir))
        started = time.perf_counter()
        build_store(folder, args.snapshot_pages)
        print(f"crawl database: {args.snapshot_pages:,} pages, {10 * args.snapshot_pages:,} links written "
              f"in {time.perf_counter() - started:.1f} s in {folder}", flush=True)
        print(json.dumps(measure("python", "snapshot", folder, 0)), flush=True)
        return
    folder = Path(tempfile.mkdtemp(prefix="batch-scale-", dir=args.dir))
    started = time.perf_counter()
    generate(folder, args.pages, args.links)
    print(f"snapshot: {args.pages:,} pages, {args.links:,} links in {time.perf_counter() - started:.1f} s "
          f"({sum(p.stat().st_size for p in folder.glob('*.parquet')) / 2**20:.0f} MiB Parquet) in {folder}",
          flush=True)
    for job in args.jobs.split(","):
        for engine in args.engines.split(","):
            print(json.dumps(measure(engine, job, folder, args.iterations)), flush=True)


if __name__ == "__main__":
    main()

"""DuckDB and Spark (local mode) give the same results from the same snapshot, job by job.

A Spark session costs a JVM start (seconds): one is started for the test run and shared by this
module's tests, the only ones that run Spark; it stops when they are done rather than at the end of
the session, so that its idle JVM (over 1 GB resident, GC threads awake) does not sit beside the
rest of the suite.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import harvestman.batch as hb
from harvestman.batch.engine import BatchEngine, DuckDbEngine
from tests.support.batchgraph import Page, make_crawl

pytest.importorskip("pyspark", reason="pyspark (the test extra) runs the Spark engine")
if shutil.which("java") is None:
    pytest.skip("Java (default-jre-headless) runs Spark's local mode", allow_module_level=True)


@pytest.fixture(scope="module")
def spark() -> Iterator[BatchEngine]:
    from harvestman.batch.spark_engine import SparkEngine, start_session

    session = start_session("local[2]", shuffle_partitions=2, driver_memory="1g")
    engine = SparkEngine(session)
    try:
        yield engine
    finally:
        engine.close()
        session.stop()


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A crawl with links (dangling pages, nofollow, self links, cross-host) and duplicates."""
    folder = tmp_path_factory.mktemp("crawl")
    rng = random.Random(9)
    urls = [f"http://h{i % 5}.test/p{i}" for i in range(80)]
    pages: dict[str, Page] = {}
    for i, url in enumerate(urls):
        links: list[str | tuple[str, bool, str]] = [rng.choice(urls) for _ in range(rng.randint(0, 6))]
        links += [url, (rng.choice(urls), True, f"nf{i}"), (rng.choice(urls), False, f"anchor {i}")]
        links.append(f"http://unfetched.test/{i % 13}")
        base = 0x5555_AAAA_0F0F_F0F0 ^ (i // 4)  # groups of 4 pages one or two bits apart
        pages[url] = Page(tuple(links) if i % 7 else (), signature=f"sig{i // 3 if i < 30 else i}",
                          simhash=base if i < 40 else rng.getrandbits(63) or 1, score=rng.random())
    make_crawl(folder, pages, unfetched=[f"http://unfetched.test/{n}" for n in range(13)])
    hb.take_snapshot(folder)
    return folder


def _run(job: str, folder: Path, engine: BatchEngine | str, out: Path) -> Any:
    """One job on the crawl's existing snapshot, results under `out` (nothing written back)."""
    work = out / f"{job}-{engine if isinstance(engine, str) else engine.name}"
    shutil.copytree(folder, work)
    common: dict[str, Any] = {"engine": engine, "reuse_snapshot": True}
    if job == "stats":
        return hb.stats(work, **common)
    if job == "invertlinks":
        result = hb.invertlinks(work, ignore_internal=True, write_back=False, **common)
        return pq.read_table(result.inlinks_path).to_pylist(), pq.read_table(result.counts_path).to_pylist()
    if job == "dedup":
        return pq.read_table(hb.dedup(work, distance=3, write_back=False, **common).path).to_pylist()
    # A fixed number of iterations: each runs every statement of the job on both engines, and 12 of them
    # (scores that differ by 1e-12 would show) take a fraction of the ~130 that convergence to 1e-9 takes
    # at damping 0.85, three Spark jobs each. The stop at convergence is the same Python for both
    # engines; tests/test_batch_jobs.py checks it against networkx.
    iterations = {"pagerank": 12, "opic": 5}.get(job)
    result = hb.rank(work, algorithm=job, iterations=iterations, write_back=False, **common)
    return {r["url"]: r["score"] for r in pq.read_table(result.path).to_pylist()}


@pytest.mark.parametrize("job", ["invertlinks", "pagerank", "indegree", "opic", "dedup", "stats"])
def test_spark_and_duckdb_agree(job: str, crawl: Path, spark: BatchEngine, tmp_path: Path) -> None:
    duck = DuckDbEngine(threads=1)
    try:
        ours = _run(job, crawl, duck, tmp_path)
    finally:
        duck.close()
    theirs = _run(job, crawl, spark, tmp_path)
    if isinstance(ours, dict) and job not in ("stats",):
        assert set(ours) == set(theirs) and ours
        assert max(abs(ours[u] - theirs[u]) for u in ours) < 1e-12
    else:
        assert ours == theirs
    if job == "dedup":
        assert ours and any(not row["exact"] for row in ours)  # both kinds were found

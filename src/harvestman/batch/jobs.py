"""The batch jobs as library calls on a crawl folder: snapshot the crawl database, run the job on an
engine, write the result to DIR/<job>/ and (unless told not to) back into the crawl database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harvestman.batch.crawlstats import crawl_stats
from harvestman.batch.duplicates import DedupResult, check_distance, find_duplicates
from harvestman.batch.engine import ENGINES, BatchEngine, DuckDbEngine, write_arrow
from harvestman.batch.linkdb import InvertResult, invert_links
from harvestman.batch.ranks import FETCHED_STATES, RankResult, check_rank_options, rank_urls
from harvestman.batch.simhash import unsigned
from harvestman.batch.snapshot import Snapshot, existing_snapshot, snapshot_folder, write_snapshot
from harvestman.batch.warcpages import simhashes_from_warc
from harvestman.model.errors import ConfigError
from harvestman.store.crawldir import CrawlDir
from harvestman.store.frontier import CrawlDb

EngineChoice = str | BatchEngine


def open_engine(name: str) -> BatchEngine:
    """The engine called `name` (duckdb or spark), started with its defaults."""
    if name == "duckdb":
        return DuckDbEngine()
    if name == "spark":
        from harvestman.batch.spark_engine import SparkEngine  # pyspark: the `spark` extra

        return SparkEngine()
    raise ConfigError(f"unknown batch engine {name!r}: choose one of {', '.join(ENGINES)}")


def take_snapshot(folder: Path, db: str = "") -> Snapshot:
    """Write DIR/snapshot/{urls,links}.parquet from the crawl database (opened read-only)."""
    with CrawlDir(Path(folder), db).read() as store:
        return write_snapshot(store, snapshot_folder(folder))


@contextmanager
def _session(folder: Path, db: str, engine: EngineChoice, reuse_snapshot: bool) -> Iterator[BatchEngine]:
    """An engine with the crawl's snapshot registered as `urls` and `links` (taken now unless reused)."""
    folder = Path(folder)
    if reuse_snapshot and (snapshot_folder(folder) / "urls.parquet").is_file():
        snap = existing_snapshot(snapshot_folder(folder))
    else:
        snap = take_snapshot(folder, db)
    running = open_engine(engine) if isinstance(engine, str) else engine
    try:
        running.register("urls", snap.urls_path)
        running.register("links", snap.links_path)
        yield running
    finally:
        if isinstance(engine, str):  # an engine passed in belongs to the caller
            running.close()


@contextmanager
def _writable(folder: Path, db: str) -> Iterator[CrawlDb]:
    store = CrawlDir(Path(folder), db).open()
    try:
        yield store
    finally:
        store.close()


def _column_pairs(table: pa.Table, *names: str) -> Iterator[tuple[Any, ...]]:
    for batch in table.to_batches(max_chunksize=65_536):
        yield from zip(*(batch.column(name).to_pylist() for name in names), strict=True)


def invertlinks(folder: Path, *, db: str = "", engine: EngineChoice = "duckdb", ignore_internal: bool = False,
                write_back: bool = True, reuse_snapshot: bool = False) -> InvertResult:
    """Invert the crawl's links into DIR/linkdb/ (inlinks with anchors, inlink counts); store the
    counts in the crawl database's `inlinks` column."""
    with _session(folder, db, engine, reuse_snapshot) as running:
        result = invert_links(running, Path(folder) / "linkdb", ignore_internal=ignore_internal)
    if write_back:
        counts = pq.read_table(result.counts_path)
        with _writable(folder, db) as store:
            store.set_inlinks(_column_pairs(counts, "url", "inlinks"))
    return result


def rank(folder: Path, *, db: str = "", engine: EngineChoice = "duckdb", algorithm: str = "pagerank",
         damping: float = 0.85, iterations: int | None = None, write_back: bool = True,
         reuse_snapshot: bool = False) -> RankResult:
    """Rank the crawl's URLs into DIR/ranks/<algorithm>.parquet; store score and priority (-score,
    so the frontier leases the best first) and the meta key score_source = algorithm."""
    check_rank_options(algorithm, damping, iterations)
    with _session(folder, db, engine, reuse_snapshot) as running:
        result = rank_urls(running, Path(folder) / "ranks", algorithm, damping=damping, iterations=iterations)
    if write_back:
        scores = pq.read_table(result.path)
        with _writable(folder, db) as store:
            store.set_scores((url, score, -score) for url, score in _column_pairs(scores, "url", "score"))
            store.set_meta("score_source", algorithm)
    return result


def _fill_simhashes(folder: Path, running: BatchEngine) -> dict[str, int]:
    """SimHashes (unsigned) from the WARC files for fetched HTML pages whose row holds none."""
    missing = running.arrow(
        f"SELECT url FROM urls WHERE state IN {FETCHED_STATES} AND simhash = 0"
        " AND lower(content_type) LIKE '%html%'")
    return simhashes_from_warc(Path(folder), set(missing.column("url").to_pylist()))


def dedup(folder: Path, *, db: str = "", engine: EngineChoice = "duckdb", distance: int = 3,
          write_back: bool = True, reuse_snapshot: bool = False) -> DedupResult:
    """Mark exact and near duplicates (DIR/dedup/duplicates.parquet); SimHashes missing from the
    crawl database are computed from the WARC files first, and stored with the duplicates."""
    check_distance(distance)
    folder = Path(folder)
    with _session(folder, db, engine, reuse_snapshot) as running:
        filled = _fill_simhashes(folder, running)
        table = ""
        if filled:
            path = snapshot_folder(folder) / "simhash_fill.parquet"
            write_arrow(pa.table({"url": list(filled), "simhash": pa.array(
                [v - (1 << 64) if v >= 1 << 63 else v for v in filled.values()], pa.int64())}), path)
            running.register("simhash_fill", path)
            table = "simhash_fill"
        result = find_duplicates(running, folder / "dedup" / "duplicates.parquet", distance=distance,
                                 simhash_table=table)
    if write_back:
        pairs = pq.read_table(result.path)
        with _writable(folder, db) as store:
            if filled:
                store.set_simhashes((url, unsigned(value)) for url, value in filled.items())
            store.set_duplicates(_column_pairs(pairs, "url", "duplicate_of"))
    return result


def stats(folder: Path, *, db: str = "", engine: EngineChoice = "duckdb",
          reuse_snapshot: bool = False) -> dict[str, Any]:
    """Counts by state, HTTP status and host, and of links, over a snapshot of the crawl."""
    with _session(folder, db, engine, reuse_snapshot) as running:
        return crawl_stats(running)

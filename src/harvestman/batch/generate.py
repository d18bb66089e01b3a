"""generate: select the URLs that are due, best first and capped per host, into a new segment."""

from __future__ import annotations

import time
from pathlib import Path

from harvestman.batch import segments
from harvestman.batch.crawldir import open_crawl_store
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlRecord
from harvestman.policy.ordering import RANKED_ORDERINGS
from harvestman.store.crawldir import stored_seeds
from harvestman.store.frontier import CrawlDb
from harvestman.store.sqlite_store import SqliteStore

ORDERS = ("bfs", "dfs", "indegree", "opic", "pagerank")
SCORE_SOURCE_KEY = "score_source"  # meta: the algorithm the stored scores come from (rank sets it)
DEFAULT_SOURCE = "opic"  # scores no rank job has replaced: the online OPIC of inject and updatedb


def score_source(db: CrawlDb) -> str:
    """The algorithm the crawl's stored scores come from."""
    return db.get_meta(SCORE_SOURCE_KEY) or DEFAULT_SOURCE


def check_score_source(db: CrawlDb, order: str, folder: Path) -> None:
    """Refuse an order by scores that the crawl's stored scores do not hold."""
    source = score_source(db)
    if order in RANKED_ORDERINGS and source != order:
        raise ConfigError(f"--order {order} orders by the scores `harvestman rank` stores, and this crawl's "
                          f"are {source}'s: run harvestman rank {folder} --algorithm {order} first")
    if order == "opic" and source != DEFAULT_SOURCE:
        raise ConfigError(f"--order opic orders by online OPIC scores, and this crawl's were replaced by "
                          f"{source}'s (harvestman rank): use --order {source}")


def generate_order(cfg: CrawlConfig, order: str | None) -> str:
    """The order a generate takes: the one given, else the crawl's `ordering` (bfs when it is not one
    that generate knows)."""
    chosen = order or cfg.ordering
    if order is not None and order not in ORDERS:
        raise ConfigError(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
    return chosen if chosen in ORDERS else "bfs"


def generate(folder: Path, cfg: CrawlConfig, *, top_n: int, max_per_host: int = 0, order: str | None = None,
             now: float | None = None) -> Path | None:
    """Select up to `top_n` due URLs (unfetched, or fetched and past their next fetch time), best
    first by `order`, at most `max_per_host` a host (0: no cap), into a new segment; its folder, or
    None when nothing is due. The URLs are held (not generated or leased again) until the segment is
    merged by updatedb or `cfg.segment_expiry` passes."""
    if top_n < 1:
        raise ConfigError(f"--top-n must be at least 1, got {top_n}")
    if max_per_host < 0:
        raise ConfigError(f"--max-per-host must be 0 (no cap) or more, got {max_per_host}")
    order = generate_order(cfg, order)
    now = time.time() if now is None else now
    store = open_crawl_store(folder, cfg.db, cfg)
    try:
        check_score_source(store, order, folder)
        key = "score" if order not in ("bfs", "dfs") else order
        records = store.generate(top_n, max_per_host, key, now, now + cfg.segment_expiry)
        if not records:
            return None
        seeds = stored_seeds(store)
        wanted = {r.url for r in records}
        # The crawl's seeds, known to the segment's store but not queued there: the engine queues
        # its seeds again on every start (a resumed crawl), which must add nothing to a segment.
        seed_rows = [r for url in seeds if url not in wanted and (r := store.get(url)) is not None]
    finally:
        store.close()
    segment = segments.new_segment(folder, now)
    write_segment(segment, records, seed_rows, seeds)
    return segment


def write_segment(segment: Path, records: list[UrlRecord], seed_rows: list[UrlRecord],
                  seeds: list[str]) -> None:
    """Write a segment's fetch list and its store (the rows the engine fetches), then its marker."""
    segments.write_fetchlist(segment, records)
    store = SqliteStore(segment / segments.STORE, host_of=lambda url: url)
    try:
        store.put_records(records)
        store.put_records(seed_rows, queued=False)
        store.set_meta("seeds", "\n".join(seeds))  # the crawl's scope is drawn from its seeds
    finally:
        store.close()
    segments.mark(segment, "generated")

"""Batch jobs over a Parquet snapshot of a crawl: invertlinks, rank, dedup, stats (DuckDB or Spark)."""

from harvestman.batch.jobs import dedup, invertlinks, rank, snapshot, stats

__all__ = ["dedup", "invertlinks", "rank", "snapshot", "stats"]

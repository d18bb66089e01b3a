"""The crawl cycle's steps over a crawl's database (inject, generate, fetch, parse, updatedb, readdb,
the cycle that runs them) and the batch jobs over a Parquet snapshot of it (invertlinks, rank,
dedup, stats; on DuckDB or Spark)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvestman.batch.jobs import dedup, invertlinks, rank, stats, take_snapshot

__all__ = ["dedup", "invertlinks", "rank", "stats", "take_snapshot"]


def __getattr__(name: str) -> Any:
    # The jobs bring pyarrow (~0.3 s to import): loaded on first use, so that the CLI, which reads
    # this package's option names at every start, does not pay for it.
    if name in __all__:
        from harvestman.batch import jobs

        return getattr(jobs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

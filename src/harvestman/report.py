"""Reports over a crawl folder: `status` figures and `export` of one record per URL."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harvestman.errors import ConfigError
from harvestman.records import UrlRecord, UrlState
from harvestman.sqlite_frontier import SqliteFrontier

EXPORT_BATCH = 10_000


@dataclass(frozen=True, slots=True)
class Exported:
    """Where an export went and how many records it holds."""

    path: Path
    count: int


def open_crawl(folder: Path) -> SqliteFrontier:
    """Open a crawl folder's database for reading, with a clear error when there is none."""
    db = Path(folder) / "crawl.db"
    if not db.is_file():
        raise ConfigError(f"{folder} holds no crawl (no crawl.db there)")
    return SqliteFrontier.open_read_only(db)


def crawl_report(folder: Path) -> dict[str, Any]:
    """URLs by state, hosts, errors by class, bytes, and the run's pages/s."""
    frontier = open_crawl(folder)
    try:
        counts = frontier.counts()
        totals = frontier.totals()
        span = totals.last_fetch - totals.first_fetch
        return {
            "dir": str(folder),
            "states": {state.name.lower(): counts.get(state, 0) for state in UrlState},
            "hosts": len(frontier.host_stats()),
            "errors": dict(sorted(frontier.error_counts().items(), key=lambda kv: -kv[1])),
            "wire_bytes": totals.wire_bytes,
            "fetched": totals.responses,
            "pages_per_second": totals.responses / span if span > 0 else float(totals.responses),
        }
    finally:
        frontier.close()


def _as_row(record: UrlRecord) -> dict[str, Any]:
    row = asdict(record)
    row["state"] = record.state.name.lower()
    return row


def export_records(folder: Path, fmt: str, output: Path | None = None) -> Exported:
    """Write one record per URL as JSON lines or Parquet."""
    path = output or Path(folder) / f"export.{fmt}"
    frontier = open_crawl(folder)
    try:
        if fmt == "jsonl":
            count = 0
            with open(path, "w", encoding="utf-8") as out:
                for record in frontier.records():
                    out.write(json.dumps(_as_row(record), ensure_ascii=False) + "\n")
                    count += 1
            return Exported(path, count)
        if fmt == "parquet":
            return Exported(path, _write_parquet(frontier, path))
        raise ConfigError(f"unknown export format {fmt!r}: use jsonl or parquet")
    finally:
        frontier.close()


def _write_parquet(frontier: SqliteFrontier, path: Path) -> int:
    import pyarrow as pa  # imported here: it is heavy, and only this export needs it
    import pyarrow.parquet as pq

    # The schema comes from a blank record, so an empty crawl still exports a valid file.
    blank = UrlRecord(
        "", "", UrlState.UNFETCHED, 0, 0, 0.0, "", 0.0, 0.0, 0, "", "", "", "", "", "", 0, 0, ""
    )
    schema = pa.Table.from_pylist([_as_row(blank)]).schema
    count = 0
    batch: list[dict[str, Any]] = []
    with pq.ParquetWriter(str(path), schema) as writer:
        for record in frontier.records():
            batch.append(_as_row(record))
            count += 1
            if len(batch) >= EXPORT_BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch.clear()
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return count

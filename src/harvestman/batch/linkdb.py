"""invertlinks: each URL's inlinks with their anchor texts (Nutch's LinkDb), and an inlink count per URL."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harvestman.batch.engine import BatchEngine


@dataclass(frozen=True, slots=True)
class InvertResult:
    """What invertlinks wrote."""

    inlinks_path: Path  # url, from_url, anchor, kind, nofollow, internal: one row a distinct inlink
    counts_path: Path  # url, inlinks: distinct linking pages, for every URL with one
    inlinks: int
    linked_urls: int


def _inlinks_sql(ignore_internal: bool) -> str:
    # A page linking to itself is no inlink; the same link repeated on one page counts once.
    internal = " AND NOT internal" if ignore_internal else ""
    return ("SELECT DISTINCT to_url AS url, from_url, anchor, kind, nofollow, internal FROM links"
            f" WHERE from_url <> to_url{internal}")


def invert_links(engine: BatchEngine, out_folder: Path, *, ignore_internal: bool = False) -> InvertResult:
    """Invert the snapshot's `links` table into out_folder/inlinks.parquet and inlink_counts.parquet.

    `ignore_internal` drops links between pages of one host (Nutch's db.ignore.internal.links), so
    that navigation does not drown the anchors other sites give a page. Nofollow links are kept (marked).
    """
    engine.materialize("inv_inlinks", _inlinks_sql(ignore_internal))
    inlinks_path = Path(out_folder) / "inlinks.parquet"
    counts_path = Path(out_folder) / "inlink_counts.parquet"
    rows = engine.write_parquet("SELECT * FROM inv_inlinks ORDER BY url, from_url, anchor, kind",
                                inlinks_path)
    linked = engine.write_parquet(
        "SELECT url, count(DISTINCT from_url) AS inlinks FROM inv_inlinks GROUP BY url ORDER BY url",
        counts_path)
    engine.drop("inv_inlinks")
    return InvertResult(inlinks_path, counts_path, rows, linked)

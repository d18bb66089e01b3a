"""A Parquet snapshot of a crawl database (urls.parquet, links.parquet), what every batch job reads.

Written once per job run from the store's `records()` and `links()` streams, in Arrow record batches,
so memory stays bounded whatever the crawl's size. Stored links are resolved but not normalized;
here `to_url` is normalized as the crawl normalizes the links it follows (net/urls.py), so that it
matches `urls.url`. Links whose target does not normalize (mailto:, too long, spider traps) are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from harvestman.batch.rows import LINK_COLUMNS as EDGE_COLUMNS
from harvestman.batch.rows import Column, columns, link_row, url_row, write_parquet
from harvestman.model.errors import InvalidUrlError
from harvestman.net.urls import host_of, normalize_with_host
from harvestman.store.frontier import CrawlDb

BATCH_ROWS = 65_536  # rows an Arrow record batch: a few MB, whatever the crawl's size
_ANSWERS_MAX = 1 << 18  # normalized targets remembered (popular ones recur page after page); ~50 MB

# The columns the batch jobs read, written as every export writes them (batch/rows.py): states by name,
# times as UTC timestamps, SimHashes as signed int64.
URL_COLUMNS = columns(("seq", "url", "host", "state", "depth", "score", "fetch_time", "http_status",
                       "content_type", "signature", "simhash", "duplicate_of", "inlinks", "body_size"),
                      extra=[Column("seq", "int")])  # insertion order: the order the crawl first knew the URL
LINK_COLUMNS = (*EDGE_COLUMNS, Column("internal", "bool"))  # both ends on one host


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Where a snapshot's files are, and how many rows they hold."""

    folder: Path
    urls: int
    links: int
    dropped_links: int  # links whose target did not normalize

    @property
    def urls_path(self) -> Path:
        """The URL table."""
        return self.folder / "urls.parquet"

    @property
    def links_path(self) -> Path:
        """The link table."""
        return self.folder / "links.parquet"


def snapshot_folder(crawl_dir: Path) -> Path:
    """DIR/snapshot, where a crawl's snapshot is written."""
    return Path(crawl_dir) / "snapshot"


def _url_rows(db: CrawlDb) -> Iterator[dict[str, Any]]:
    for seq, record in enumerate(db.records()):
        yield {**url_row(record), "seq": seq}


class _LinkRows:
    """The link rows of a snapshot, with targets normalized; counts what it drops."""

    def __init__(self, max_length: int) -> None:
        self.max_length = max_length
        self.dropped = 0
        self._answers: dict[str, tuple[str, str] | None] = {}

    def _target(self, url: str) -> tuple[str, str] | None:
        answer = self._answers.get(url, ())
        if answer == ():
            try:
                answer = normalize_with_host(url, max_length=self.max_length)
            except InvalidUrlError:
                answer = None
            if len(self._answers) >= _ANSWERS_MAX:
                self._answers.clear()  # memory stays bounded; the next pages refill what recurs
            self._answers[url] = answer
        return answer  # type: ignore[return-value]

    def rows(self, db: CrawlDb) -> Iterator[dict[str, Any]]:
        page, page_host = "", ""
        for edge in db.links():
            if edge.from_url != page:
                page = edge.from_url
                try:
                    page_host = host_of(page)
                except InvalidUrlError:
                    page_host = ""
            target = self._target(edge.to_url)
            if target is None:
                self.dropped += 1
                continue
            row = link_row(edge)
            row["to_url"], row["internal"] = target[0], target[1] == page_host
            yield row


def _write(rows: Iterable[dict[str, Any]], cols: Sequence[Column], path: Path) -> int:
    return write_parquet(rows, cols, path, compression="zstd", batch_rows=BATCH_ROWS)


def _max_url_length(db: CrawlDb) -> int:
    """The crawl's own URL length limit (its stored settings), else the default."""
    stored = db.get_meta("settings")
    try:
        value = json.loads(stored).get("max_url_length") if stored else None
    except (ValueError, AttributeError):
        value = None
    return int(value) if isinstance(value, int) and value > 0 else 2048


def write_snapshot(db: CrawlDb, folder: Path) -> Snapshot:
    """Write the URL and link tables of `db` into `folder` (urls.parquet, links.parquet)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    urls = _write(_url_rows(db), URL_COLUMNS, folder / "urls.parquet")
    links = _LinkRows(_max_url_length(db))
    count = _write(links.rows(db), LINK_COLUMNS, folder / "links.parquet")
    return Snapshot(folder, urls, count, links.dropped)


def existing_snapshot(folder: Path) -> Snapshot:
    """A snapshot written before (its row counts read from the Parquet footers)."""
    folder = Path(folder)
    urls = pq.ParquetFile(folder / "urls.parquet").metadata.num_rows
    links = pq.ParquetFile(folder / "links.parquet").metadata.num_rows
    return Snapshot(folder, urls, links, 0)

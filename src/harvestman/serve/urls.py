"""The crawl database as pages of URL rows, filtered by state, host and a substring."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlRecord, UrlState
from harvestman.store.frontier import CrawlDb

MAX_LIMIT = 1000
STATES = {state.name.lower(): state for state in UrlState}


@dataclass(frozen=True, slots=True)
class UrlFilter:
    """Which rows a page of the URL table holds."""

    state: str = ""
    host: str = ""
    q: str = ""

    def check(self) -> None:
        """A ConfigError for a state no URL can be in."""
        if self.state and self.state not in STATES:
            raise ConfigError(f"state must be one of {', '.join(STATES)}, got {self.state!r}")

    def keeps(self, record: UrlRecord) -> bool:
        """Whether `record` passes the filter."""
        if self.state and record.state is not STATES[self.state]:
            return False
        if self.host and record.host != self.host.lower():
            return False
        return not self.q or self.q.lower() in record.url.lower()


def _row(record: UrlRecord) -> dict[str, Any]:
    return {
        "url": record.url,
        "state": record.state.name.lower(),
        "status": record.http_status,
        "fetched_at": record.fetch_time or None,
        "bytes": record.wire_bytes,
        "host": record.host,
        "title": record.title,
        "error_class": record.error_class,
    }


def url_page(db: CrawlDb | None, wanted: UrlFilter, limit: int, cursor: str) -> dict[str, Any]:
    """Up to `limit` rows after `cursor` (the count of rows already scanned, in the database's order),
    and the cursor of the next page (None at the end)."""
    wanted.check()
    if not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    try:
        skip = int(cursor) if cursor else 0
    except ValueError:
        raise ConfigError(f"not a cursor: {cursor[:40]!r}") from None
    if skip < 0:
        raise ConfigError("not a cursor: it must be >= 0")
    rows: list[dict[str, Any]] = []
    if db is None:
        return {"urls": rows, "next_cursor": None}
    scanned = 0
    for scanned, record in enumerate(db.records(), start=1):
        if scanned <= skip or not wanted.keeps(record):
            continue
        rows.append(_row(record))
        if len(rows) == limit:
            break
    else:
        return {"urls": rows, "next_cursor": None}
    return {"urls": rows, "next_cursor": str(scanned)}

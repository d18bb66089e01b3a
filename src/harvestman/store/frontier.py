"""The store seam: the fetch hot path (`Frontier`) and the database of record (`CrawlDb`).

One backend implements both on one database (SQLite by default, PostgreSQL for many machines);
`store.factory.open_store` picks it from a location. Modules that only fetch take a `Frontier`,
reports and batch jobs a `CrawlDb`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, Self, runtime_checkable

from harvestman.model.records import (
    CrawlTotals,
    FetchOutcome,
    HostTotals,
    LeasedUrl,
    LinkEdge,
    NewUrl,
    PageLinks,
    UrlRecord,
    UrlState,
)

HostStats = tuple[str, int, int, int]  # host, pending (queued), fetched, errors

# generate()'s orders: the columns a selection is sorted by, best first (the row id breaks ties).
GENERATE_ORDERS = {"bfs": "depth, id", "dfs": "depth DESC, id", "score": "score DESC, id"}
_SIMHASH_COLUMN = 20  # the position of simhash in a record row (see UrlRecord)


def signed64(value: int) -> int:
    """A 64-bit SimHash as the databases store it (a signed 64-bit integer)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def row_to_record(row: Sequence[Any]) -> UrlRecord:
    """A UrlRecord from a row of the record columns (both backends select them in this order)."""
    values = list(row)
    values[2] = UrlState(values[2])
    if len(values) > _SIMHASH_COLUMN:
        values[_SIMHASH_COLUMN] = int(values[_SIMHASH_COLUMN]) & 0xFFFF_FFFF_FFFF_FFFF
    return UrlRecord(*values)


@runtime_checkable
class Frontier(Protocol):
    """The URLs queued for a fetch, in per-host queues that carry the politeness clocks.

    A URL is queued while it is UNFETCHED, or in any other state once its `next_fetch_time` (set by
    a fetch schedule) is above 0; it is leased when that time has come, lowest `priority` first
    within its host, then in insertion order. Times (`now`, `until`, `next_fetch_time`) are
    wall-clock seconds (time.time()) supplied by the caller, so that policy stays testable and
    several processes, on several machines, can share one database.
    """

    def add(self, urls: Sequence[NewUrl]) -> int:
        """Insert URLs not yet known as UNFETCHED; return how many were new (known ones stay as they are)."""
        ...

    def lease(self, limit: int, now: float) -> list[LeasedUrl]:
        """Hand out up to `limit` due URLs from ready hosts, honouring per-host concurrency and delay."""
        ...

    def complete(self, outcomes: Sequence[FetchOutcome], now: float, new_urls: Sequence[NewUrl] = (), *,
                 links: Sequence[PageLinks] = (), lease: int = 0) -> list[LeasedUrl]:
        """Record fetch outcomes, free their leases, add discovered URLs, replace the stored links of
        the pages in `links`, and lease up to `lease` URLs (as `lease()` would, returned), all in
        one transaction."""
        ...

    def set_host_delay(self, host: str, delay: float) -> None:
        """Set the seconds between two requests to `host` (robots.txt Crawl-delay)."""
        ...

    def pause_host(self, host: str, until: float, reason: str) -> None:
        """Lease nothing from `host` before `until` (Retry-After, back-off, circuit breaker)."""
        ...

    def host_failure(self, host: str, now: float) -> int:
        """Count one more URL in the failure streak of `host` (the engine counts each URL once) and
        return the count."""
        ...

    def host_success(self, host: str) -> None:
        """Reset the consecutive-failure count of `host`."""
        ...

    def release_leases(self) -> int:
        """Hand back every lease (a crawl resumed by its only process); returns how many there were."""
        ...

    def pending(self) -> int:
        """Number of queued URLs, due or not, leased or not: the work the crawl has left."""
        ...

    def due_count(self, now: float) -> int:
        """Number of queued URLs that are due and not leased."""
        ...

    def in_flight(self) -> int:
        """Number of URLs currently leased."""
        ...

    def next_ready_time(self, *, everywhere: bool = False) -> float | None:
        """Earliest time a lease may succeed (never later than the truth), or None when nothing is queued.

        A process that leases from a share of the hosts asks about its share, or with `everywhere`
        about the whole crawl.
        """
        ...

    def get_meta(self, key: str) -> str | None:
        """A stored run-metadata value (seeds, config, start time), or None."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Store a run-metadata value."""
        ...

    def close(self) -> None:
        """Release the database (and its lock); idempotent."""
        ...


@runtime_checkable
class CrawlDb(Protocol):
    """The database of record: every URL with its last fetch, statistics, metadata, the link graph,
    and the bulk operations of batch jobs."""

    def counts(self) -> dict[UrlState, int]:
        """Number of URLs in each state (every state present, zero included)."""
        ...

    def records(self) -> Iterator[UrlRecord]:
        """Stream every URL row in insertion order (for export)."""
        ...

    def get(self, url: str) -> UrlRecord | None:
        """The row of `url`, or None when it is not known."""
        ...

    def links(self) -> Iterator[LinkEdge]:
        """Stream every stored link, page by page in the order the pages were first known."""
        ...

    def host_stats(self) -> list[HostStats]:
        """Per host: (host, queued, fetched, errors)."""
        ...

    def host_totals(self) -> list[HostTotals]:
        """Per host, by name: URLs by state, URLs with an error, bytes on the wire."""
        ...

    def totals(self) -> CrawlTotals:
        """Responses, bytes on the wire, and the span of fetch times over all URLs."""
        ...

    def error_counts(self) -> dict[str, int]:
        """Number of URLs per recorded error class."""
        ...

    def set_scores(self, scores: Iterable[tuple[str, float, float]]) -> int:
        """Set (url, score, priority) of known URLs (a batch job's ranking); returns how many were known."""
        ...

    def set_simhashes(self, items: Iterable[tuple[str, int]]) -> int:
        """Set (url, 64-bit SimHash) of known URLs; returns how many were known."""
        ...

    def add_scores(self, items: Iterable[tuple[str, float]]) -> int:
        """Add (url, amount) to the score of known URLs (OPIC's cash, a URL given twice gets both);
        returns how many rows were updated."""
        ...

    def set_inlinks(self, items: Iterable[tuple[str, int]]) -> int:
        """Replace every URL's inlink count (those not given get 0); returns how many were known."""
        ...

    def set_duplicates(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Replace the crawl's duplicates: each (url, kept url) becomes DUPLICATE of the kept one; URLs
        marked before and not given now are FETCHED again. Returns how many were marked."""
        ...

    def failures(self) -> Iterator[UrlRecord]:
        """Stream every URL that ended GONE, in insertion order (what a `--resume` may revive)."""
        ...

    def requeue(self, urls: Iterable[str]) -> int:
        """Queue GONE URLs again as UNFETCHED, their failure forgotten (its cause was mended);
        returns how many were GONE."""
        ...

    def set_metadata(self, items: Iterable[tuple[str, Mapping[str, str]]]) -> int:
        """Merge keys into the metadata of known URLs (a seed's `key=value`s, a sitemap's lastmod);
        returns how many were known."""
        ...

    def generate(self, limit: int, max_per_host: int, order: str, now: float,
                 until: float) -> list[UrlRecord]:
        """Select up to `limit` due URLs (queued, next fetch time come, not leased or generated), best
        first by GENERATE_ORDERS[order], at most `max_per_host` a host (0: no cap), and hold them until
        `until` (a segment's expiry: they are not generated or leased again before, unless reported)."""
        ...

    def get_meta(self, key: str) -> str | None:
        """A stored run-metadata value (seeds, config, start time), or None."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Store a run-metadata value."""
        ...

    def close(self) -> None:
        """Release the database (and its lock); idempotent."""
        ...


@runtime_checkable
class Store(Frontier, CrawlDb, Protocol):
    """Both faces on one database, as `open_store` returns them; `with store:` closes it."""

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

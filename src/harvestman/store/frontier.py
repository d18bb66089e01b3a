"""The crawl database and frontier as one backend-neutral protocol (SQLite now, PostgreSQL later)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from harvestman.model.records import (
    CrawlTotals,
    FetchOutcome,
    HostTotals,
    LeasedUrl,
    NewUrl,
    UrlRecord,
    UrlState,
)

HostStats = tuple[str, int, int, int]  # host, pending (unfetched), fetched, errors


@runtime_checkable
class Frontier(Protocol):
    """Every known URL with its state, grouped into per-host queues that carry the politeness clock.

    Times (`now`, `until`, `next_fetch_time`) are wall-clock seconds (time.time()) supplied by the
    caller, so that policy stays testable and several processes can share one database.
    """

    def add(self, urls: Sequence[NewUrl]) -> int:
        """Insert URLs not yet known as UNFETCHED; return how many were new (known ones stay as they are)."""
        ...

    def lease(self, limit: int, now: float) -> list[LeasedUrl]:
        """Hand out up to `limit` due URLs from ready hosts, honouring per-host concurrency and delay."""
        ...

    def complete(self, outcomes: Sequence[FetchOutcome], now: float, new_urls: Sequence[NewUrl] = (), *,
                 lease: int = 0) -> list[LeasedUrl]:
        """Record fetch outcomes, free their leases, add discovered URLs and lease up to `lease` URLs
        (as `lease()` would, returned), all in one transaction."""
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

    def counts(self) -> dict[UrlState, int]:
        """Number of URLs in each state (every state present, zero included)."""
        ...

    def due_count(self, now: float) -> int:
        """Number of unfetched URLs that are due and not leased."""
        ...

    def in_flight(self) -> int:
        """Number of URLs currently leased."""
        ...

    def next_ready_time(self, *, everywhere: bool = False) -> float | None:
        """Earliest time a lease may succeed (never later than the truth), or None when nothing is pending.

        A worker asks about its share of the hosts, or with `everywhere` about the whole crawl.
        """
        ...

    def records(self) -> Iterator[UrlRecord]:
        """Stream every URL row in insertion order (for export)."""
        ...

    def host_stats(self) -> list[HostStats]:
        """Per host: (host, pending, fetched, errors)."""
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

    def get(self, url: str) -> UrlRecord | None:
        """The row of `url`, or None when it is not known."""
        ...

    def get_meta(self, key: str) -> str | None:
        """A stored run-metadata value (seeds, config, start time), or None."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Store a run-metadata value."""
        ...

    def close(self) -> None:
        """Release the database and its lock; idempotent."""
        ...

"""What each URL of a run came to: counted, reported as events, and hosts paused that ask for rest
or keep failing. The engine decides; the ledger keeps the books."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from harvestman.crawl.stats import CrawlStats, PageCounts
from harvestman.model.events import Event, EventKind
from harvestman.model.records import FetchOutcome, FetchResult, LeasedUrl, UrlState
from harvestman.policy.outcome import Decision
from harvestman.policy.politeness import FailureStreaks, breaker_pause
from harvestman.store.frontier import Store
from harvestman.store.journal import RunJournal

MAX_SPACED_HOSTS = 10_000  # per-host start times kept before the stale ones are dropped

EventHandler = Callable[[Event], None]


class RunLedger:
    """The run's counters, events and host pauses, shared by its fetch tasks."""

    def __init__(self, stats: CrawlStats, listeners: list[EventHandler]) -> None:
        self.stats = stats
        self.listeners = listeners  # the caller's list: a journal joins it for the run
        self.done_total = 0  # URLs ended (this run and, on resume, before), for max_pages
        # Hosts whose failure streak the frontier is counting, with the URLs counted in it.
        self._failing_hosts = FailureStreaks()
        self._retrying: set[str] = set()  # URLs handed back for another attempt, for the display

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)

    def pause(self, frontier: Store, host: str, until: float, reason: str) -> None:
        frontier.pause_host(host, until, reason)
        if self.stats.metrics is not None:
            self.stats.metrics.paused(host, max(0.0, until - time.time()))
        message = f"{reason}; until {until:.0f}"
        self.emit(Event(EventKind.HOST_PAUSED, time.time(), host=host, message=message))

    def account(self, decision: Decision, result: FetchResult, leased: LeasedUrl, frontier: Store,
                journal: RunJournal) -> None:
        """Count the result, pause its host if it asked for rest or keeps failing, log it."""
        now = time.time()
        host = leased.host
        outcome = decision.outcome
        if self.stats.metrics is not None:
            self.stats.metrics.fetched(result.timings.total, result.status, outcome.error_class)
        if decision.pause_host_until > now:
            self.pause(frontier, host, decision.pause_host_until, decision.reason)
        if decision.host_failed:
            # A retry of a URL already in the streak is not counted again: the breaker pauses a
            # host when several of its URLs fail in a row, not when one URL is retried.
            if self._failing_hosts.failed(host, leased.url):
                pause = breaker_pause(frontier.host_failure(host, now))
                if pause:
                    self.pause(frontier, host, now + pause, "circuit breaker: repeated failures")
        elif host in self._failing_hosts:  # a write only when there is a failure streak to end
            self._failing_hosts.succeeded(host)
            frontier.host_success(host)
        if not decision.final:
            self.stats.retried += 1
            self.retry_later(leased.url)
            self.emit(Event(EventKind.FAILED, now, url=leased.url, host=host, status=result.status,
                            error_class=outcome.error_class, message=decision.reason))
            return
        self.done_total += 1
        ok = not decision.reason
        counted = PageCounts.of_outcome(outcome)  # as the crawl database will count it
        self.stats.fetched += counted.pages
        self.stats.failed += counted.failed
        if result.status:
            self.emit(Event(EventKind.FETCHED, now, url=leased.url, host=host, status=result.status,
                            bytes=result.wire_bytes, error_class=outcome.error_class))
        if not ok and not result.status:
            self.emit(Event(EventKind.GAVE_UP, now, url=leased.url, host=host,
                            error_class=outcome.error_class, message=decision.reason))
        journal.download(leased.url, ok, decision.reason)

    def refused(self, leased: LeasedUrl, error_class: str, reason: str, journal: RunJournal,
                *, failed: bool = False) -> FetchOutcome:
        """The outcome of a URL ended unfetched: disallowed (skipped), or its robots.txt
        unreachable (failed); counted and reported."""
        now = time.time()
        self.done_total += 1
        if self.stats.metrics is not None:
            self.stats.metrics.error(error_class)
        if failed:
            self.stats.failed += 1
        else:
            self.stats.skipped += 1
        journal.download(leased.url, False, reason)
        kind = EventKind.GAVE_UP if failed else EventKind.SKIPPED
        self.emit(Event(kind, now, url=leased.url, host=leased.host, error_class=error_class, message=reason))
        return FetchOutcome(leased.url, UrlState.GONE, now, error_class=error_class, error_message=reason)

    def retry_later(self, url: str) -> None:
        """Count `url` as waiting for another attempt, until it is leased again."""
        self._retrying.add(url)
        self.stats.retrying = len(self._retrying)

    def leased_again(self, url: str) -> None:
        if self._retrying:  # empty unless something failed: no cost on a crawl that goes well
            self._retrying.discard(url)
            self.stats.retrying = len(self._retrying)


class HostTurns:
    """Spaces the starts of fetches to one host by its delay, also for those leased together.

    The frontier spaces leases once it knows a host's delay, but the first few URLs of a host
    are leased before its robots.txt (and Crawl-delay) is read.
    """

    def __init__(self, on_wait: Callable[[str, float], None] | None = None) -> None:
        self._next_start: dict[str, float] = {}  # host -> earliest start of its next fetch (monotonic)
        self._on_wait = on_wait  # told each wait (host, seconds): the run's metrics, when collected

    async def take(self, host: str, delay: float) -> None:
        now = time.monotonic()
        start = max(now, self._next_start.get(host, 0.0))
        self._next_start[host] = start + delay
        if len(self._next_start) > MAX_SPACED_HOSTS:  # forget hosts whose turn has long passed
            self._next_start = {h: t for h, t in self._next_start.items() if t > now}
        if start > now:
            if self._on_wait is not None:
                self._on_wait(host, start - now)
            await asyncio.sleep(start - now)

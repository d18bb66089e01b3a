"""A run's counters, the share of a crawl one process works on, and the lines that sum a run up;
what counts as a page and as a failure, for the run's counters and the crawl database's alike."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harvestman.crawl.metrics import CrawlMetrics, MetricsSnapshot
from harvestman.model.records import FetchOutcome, UrlState, landing_state

PAGE_STATES = frozenset({UrlState.FETCHED, UrlState.NOT_MODIFIED})
# Error classes of URLs refused before a fetch (crawl/engine.py): robots.txt disallows them, or
# their host's page budget is spent. Skipped: neither a page nor a failure.
REFUSED_CLASSES = frozenset({"robots", "host_budget"})


@dataclass(frozen=True, slots=True)
class PageCounts:
    """A crawl's pages and failures: one definition for a run's counters (the CRAWL_FINISHED event,
    the progress display, `fetch`'s line) and the crawl database's figures (the API's summary, the
    web page's cards, `updatedb`'s line), counted over URL rows as the store writes them.

    pages: URLs that ended holding a page, fetched or not modified. A followed redirect is one page,
    the one it ended on (the redirecting URL is a redirect); a 404 is no page.
    failed: URLs that ended in an error (gone): an error status (404, 500 ...), no answer, robots.txt
    unreachable. Not the URLs robots.txt disallows or a host's budget refuses (skipped), nor a redirect
    not followed, nor a page kept with a remark (truncated, a parse problem).

    A run counts its own URLs; the database every URL of the crawl (a resumed crawl's runs add up).
    """

    pages: int = 0
    failed: int = 0

    @classmethod
    def of_row(cls, state: UrlState, error_class: str) -> PageCounts:
        """What one URL row in `state` with `error_class` counts for."""
        failed = state == UrlState.GONE and error_class not in REFUSED_CLASSES
        return cls(int(state in PAGE_STATES), int(failed))

    @classmethod
    def of_outcome(cls, outcome: FetchOutcome) -> PageCounts:
        """What a final outcome adds: its URL's row, and the row of the page its redirects ended on."""
        counts = cls.of_row(outcome.state, outcome.error_class)
        landing = landing_state(outcome)
        return counts if landing is None else counts + cls.of_row(landing, outcome.error_class)

    def __add__(self, other: PageCounts) -> PageCounts:
        return PageCounts(self.pages + other.pages, self.failed + other.failed)

    @classmethod
    def of_database(cls, states: Mapping[UrlState, int], errors: Mapping[str, int]) -> PageCounts:
        """The counts of a crawl database, from its URLs by state and by error class (`counts()` and
        `error_counts()`): refused URLs are gone with their class."""
        refused = sum(errors.get(name, 0) for name in REFUSED_CLASSES)
        return cls(sum(states.get(state, 0) for state in PAGE_STATES), states.get(UrlState.GONE, 0) - refused)


@dataclass(frozen=True, slots=True)
class CrawlCounts:
    """A snapshot of a run's counters: what a worker reports to its parent a few times a second, and
    what a job's status holds. One record for both, made by `CrawlStats.snapshot` alone."""

    started_at: float = 0.0
    fetched: int = 0  # pages: URLs that ended holding a page (PageCounts)
    failed: int = 0  # URLs that ended in an error (PageCounts)
    retried: int = 0  # attempts that will be retried
    skipped: int = 0  # refused before fetching (robots.txt, invalid seed)
    bytes: int = 0  # bytes on the wire
    in_flight: int = 0
    queued: int = 0  # URLs waiting in the frontier (sampled a few times a second)
    retrying: int = 0  # URLs waiting for another attempt (a failed fetch, or robots.txt unreachable)
    next_attempt_at: float = 0.0  # when nothing is in flight: when the next URL is due (0: unknown)
    # The run ended because every URL left waits beyond --max-wait: how many, and the earliest due.
    deferred: int = 0
    deferred_until: float = 0.0
    deferred_revisits: int = 0  # of `deferred`, the URLs fetched before that wait for a re-visit
    busy_hosts: frozenset[str] = frozenset()
    metrics: MetricsSnapshot | None = None  # latency, errors by class ... (crawl/metrics.py), if collected

    @classmethod
    def total(cls, parts: Iterable[CrawlCounts], queued: int) -> CrawlCounts:
        """The counts of a crawl run by several processes, from each one's (`queued`: the crawl's)."""
        parts = list(parts)
        measured = [p.metrics for p in parts if p.metrics is not None]
        return cls(
            fetched=sum(p.fetched for p in parts),
            failed=sum(p.failed for p in parts),
            retried=sum(p.retried for p in parts),
            skipped=sum(p.skipped for p in parts),
            bytes=sum(p.bytes for p in parts),
            in_flight=sum(p.in_flight for p in parts),
            queued=queued,
            retrying=sum(p.retrying for p in parts),
            next_attempt_at=min((p.next_attempt_at for p in parts if p.next_attempt_at), default=0.0),
            # Every worker that ended so counted the whole crawl's waiting URLs.
            deferred=max((p.deferred for p in parts), default=0),
            deferred_until=min((p.deferred_until for p in parts if p.deferred), default=0.0),
            deferred_revisits=max((p.deferred_revisits for p in parts), default=0),
            busy_hosts=frozenset().union(*(p.busy_hosts for p in parts)),
            metrics=MetricsSnapshot.total(measured) if measured else None,
        )


_COUNTS = tuple(name for name in CrawlCounts.__dataclass_fields__ if name not in ("started_at", "metrics"))


@dataclass(slots=True)
class CrawlStats:
    """Counters of this run, read by the progress display and the summary."""

    started_at: float = field(default_factory=time.time)
    fetched: int = 0  # the fields are CrawlCounts': see there
    failed: int = 0
    retried: int = 0
    skipped: int = 0
    bytes: int = 0
    in_flight: int = 0
    queued: int = 0
    retrying: int = 0
    next_attempt_at: float = 0.0
    deferred: int = 0
    deferred_until: float = 0.0
    deferred_revisits: int = 0
    # Fetches in flight per host: a host is busy until the last of its parallel fetches ends.
    busy_hosts: Counter[str] = field(default_factory=Counter)
    # Collected only when asked for (--metrics-port, serve): None costs a default crawl nothing.
    metrics: CrawlMetrics | None = None
    shown_metrics: MetricsSnapshot | None = None  # a parent's: its workers' metrics, summed

    def host_busy(self, host: str) -> None:
        """A fetch of `host` began."""
        self.busy_hosts[host] += 1

    def host_done(self, host: str) -> None:
        """A fetch of `host` ended."""
        left = self.busy_hosts[host] - 1
        if left > 0:
            self.busy_hosts[host] = left
        else:
            del self.busy_hosts[host]

    def pages_per_second(self, now: float | None = None) -> float:
        """Pages per second since the run started."""
        elapsed = (now or time.time()) - self.started_at
        return self.fetched / elapsed if elapsed > 0 else 0.0

    def snapshot(self) -> CrawlCounts:
        """The counters now, frozen (the next attempt's time only when nothing is in flight)."""
        return CrawlCounts(
            self.started_at, self.fetched, self.failed, self.retried, self.skipped, self.bytes,
            self.in_flight, self.queued, self.retrying,
            self.next_attempt_at if self.in_flight == 0 else 0.0,
            self.deferred, self.deferred_until, self.deferred_revisits, frozenset(self.busy_hosts),
            self.metrics.snapshot() if self.metrics is not None else self.shown_metrics,
        )

    def show(self, counts: CrawlCounts) -> None:
        """Take `counts` as this run's counters (a parent's, summed from its workers'), its start aside."""
        for name in _COUNTS:
            setattr(self, name, getattr(counts, name))
        self.busy_hosts = Counter(counts.busy_hosts)
        self.shown_metrics = counts.metrics


@dataclass(frozen=True, slots=True)
class WorkerSlot:
    """One process's share of a crawl run by several: the hosts whose id modulo `count` is `index`."""

    index: int
    count: int




def deferred_note(count: int, until: float, max_wait: float, revisits: int = 0) -> str:
    """The one line that says a run ended with URLs deferred beyond --max-wait, and what to do
    (`revisits`: how many of them were fetched and wait for a re-visit)."""
    try:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(until))
    except (OverflowError, OSError, ValueError):  # "never": a host with nothing it could lease
        when = "later"
    urls = "1 URL waits" if count == 1 else f"{count} URLs wait"
    if revisits:
        urls += " for a re-visit" if revisits == count else f", {revisits} of them for a re-visit"
    return (f"{urls} (the first until {when}), longer than --max-wait {max_wait:g}s: "
            "--resume continues them")


def finished_message(stats: CrawlStats, max_wait: float) -> str:
    """The message of a run's CRAWL_FINISHED event: its counts (PageCounts), and what waits beyond
    --max-wait."""
    message = f"{stats.fetched} pages, {stats.failed} failed"
    if stats.deferred:
        message += "; " + deferred_note(stats.deferred, stats.deferred_until, max_wait,
                                        stats.deferred_revisits)
    return message

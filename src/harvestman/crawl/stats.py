"""A run's counters, the share of a crawl one process works on, and the lines that sum a run up."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(slots=True)
class CrawlStats:
    """Counters of this run, read by the progress display and the summary."""

    started_at: float = field(default_factory=time.time)
    fetched: int = 0  # responses stored
    failed: int = 0  # URLs that ended in an error
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
    busy_hosts: set[str] = field(default_factory=set)

    def pages_per_second(self, now: float | None = None) -> float:
        """Responses stored per second since the run started."""
        elapsed = (now or time.time()) - self.started_at
        return self.fetched / elapsed if elapsed > 0 else 0.0


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
    """The message of a run's CRAWL_FINISHED event: its counts, and what waits beyond --max-wait."""
    message = f"{stats.fetched} fetched, {stats.failed} failed"
    if stats.deferred:
        message += "; " + deferred_note(stats.deferred, stats.deferred_until, max_wait,
                                        stats.deferred_revisits)
    return message

"""Fetch schedules: when a URL is fetched again after a fetch that ended (re-visits).

Beside `outcome.decide`: `decide` says what a fetch result means for the URL (its state, and when
to retry an attempt that failed); a schedule says when a URL whose fetch ended is due again. The
frontier keeps a URL with a next fetch time queued, and leases it again once that time has come,
with the last fetch's validators, so that a re-visit is conditional (a 304 is NOT_MODIFIED).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from harvestman.model.config import LinkSettings
from harvestman.model.errors import ConfigError
from harvestman.model.records import FetchOutcome, LeasedUrl, UrlState
from harvestman.policy.outcome import Decision

# AdaptiveInterval's rates: Nutch's db.fetch.schedule.adaptive.inc_rate and dec_rate defaults.
GROWTH = 0.4
SHRINK = 0.2
# A page whose text changed only a little (harvestman recrawl's change class "minor": a SimHash a
# few bits away) shrinks its interval by half as much: a counter or a date that ticks should not
# pull a page towards daily fetches as fast as a rewritten one.
MINOR_SHRINK = 0.1


class FetchSchedule(Protocol):
    """When to fetch a URL again, after a fetch of it that ended (not an attempt to be retried).

    `outcome` is what the fetch recorded (state, status, fetch time, signature, validators);
    `leased` is the URL as the crawl leased it, with what the crawl knew of it (depth, retries, the
    previous fetch's etag and last_modified). The answer is a wall-clock time (time.time()
    seconds), or 0 for never. With worker processes it runs in every worker, like a link scorer.
    """

    def __call__(self, outcome: FetchOutcome, leased: LeasedUrl) -> float:
        """The URL's next fetch time, or 0 for never."""
        ...


@dataclass(frozen=True, slots=True)
class FixedInterval:
    """Every URL again `seconds` after each of its fetches (the `revisit_after` setting)."""

    seconds: float

    def __call__(self, outcome: FetchOutcome, leased: LeasedUrl) -> float:
        """`seconds` after this fetch."""
        return outcome.fetch_time + self.seconds


@dataclass(frozen=True, slots=True)
class AdaptiveInterval:
    """Nutch's AdaptiveFetchSchedule: each URL keeps its own interval, `initial` at first, shrunk by
    SHRINK when its page changed since the last fetch and grown by GROWTH when it did not (a 304, or
    the same content signature), always within [`least`, `most`]. A page that changes every day is
    soon fetched daily; one that never changes drifts towards `most`."""

    initial: float
    least: float
    most: float

    def __call__(self, outcome: FetchOutcome, leased: LeasedUrl) -> float:
        """The fetch time plus the URL's interval, adapted to whether its page changed."""
        interval = leased.fetch_interval or self.initial
        if leased.fetch_interval:  # a first fetch says nothing about change: `initial` stands
            if outcome.state == UrlState.NOT_MODIFIED:
                interval *= 1 + GROWTH
            elif outcome.state == UrlState.FETCHED:
                interval *= 1 - (MINOR_SHRINK if outcome.change == "minor" else SHRINK)
        return outcome.fetch_time + min(max(interval, self.least), self.most)


def schedule_for(links: LinkSettings, schedule: FetchSchedule | None,
                 interval: float | None = None) -> FetchSchedule | None:
    """The crawl's schedule: one given in Python, else the settings' (`schedule` over `interval`, by
    default `revisit_after`); None means never again."""
    interval = links.revisit_after if interval is None else interval
    if schedule is not None:
        if interval:
            raise ConfigError("give either revisit_after or a fetch schedule, not both")
        return schedule
    if not interval:
        return None
    if links.schedule == "adaptive":
        return AdaptiveInterval(interval, links.min_interval, links.max_interval)
    return FixedInterval(interval)


def scheduled(decision: Decision, schedule: FetchSchedule, leased: LeasedUrl) -> Decision:
    """`decision` with its URL's next fetch time from `schedule`, when its fetch ended (a retry
    keeps the time `decide` gave it)."""
    if not decision.final:
        return decision
    outcome = decision.outcome
    due = schedule(outcome, leased)
    if not due > 0:  # 0, a negative time or NaN: never again
        return decision
    # The interval is kept with the URL: the next fetch's schedule starts from it.
    interval = max(due - outcome.fetch_time, 0.0)
    timed = dataclasses.replace(outcome, next_fetch_time=due, fetch_interval=interval)
    return dataclasses.replace(decision, outcome=timed)

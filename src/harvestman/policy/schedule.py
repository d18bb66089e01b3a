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

from harvestman.model.errors import ConfigError
from harvestman.model.records import FetchOutcome, LeasedUrl
from harvestman.policy.outcome import Decision


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


def schedule_for(revisit_after: float, schedule: FetchSchedule | None) -> FetchSchedule | None:
    """The crawl's schedule: one given in Python, else `revisit_after`'s; None means never again."""
    if schedule is not None:
        if revisit_after:
            raise ConfigError("give either revisit_after or a fetch schedule, not both")
        return schedule
    return FixedInterval(revisit_after) if revisit_after else None


def scheduled(decision: Decision, schedule: FetchSchedule, leased: LeasedUrl) -> Decision:
    """`decision` with its URL's next fetch time from `schedule`, when its fetch ended (a retry
    keeps the time `decide` gave it)."""
    if not decision.final:
        return decision
    due = schedule(decision.outcome, leased)
    if not due > 0:  # 0, a negative time or NaN: never again
        return decision
    return dataclasses.replace(decision, outcome=dataclasses.replace(decision.outcome, next_fetch_time=due))

"""Focused crawling's part in the crawl's chain (policy/focus.py judges; crawl/assembly.py adds these
when a focus is on): its page rule, its link rule, the slot between them, and its lease share."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from harvestman.crawl.page_step import Draft, Fetched, Scores, Withheld
from harvestman.policy.focus import Focus

# A focused crawl's order only matters when it chooses: with --concurrency 100 over a frontier of a few
# hundred URLs, a lease takes nearly all of them and the crawl is breadth-first whatever the scores.
# In flight at most a tenth of what is queued: full concurrency once the frontier is ten times it
# (any real web soon), fewer fetches at once while it is small (bench/focus_curves.py).
FOCUS_LEASE_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class Focused:
    """The slot FocusRule leaves for FocusScores: focus's scores for the page's followed links."""

    scores: Scores


@dataclass(frozen=True, slots=True)
class FocusRule:
    """The page's topic and relevance recorded; the page or its links withheld where focus says so,
    and their scores kept for FocusScores. Judged before the known-URL check."""

    focus: Focus

    def __call__(self, page: Fetched, draft: Draft) -> Draft:
        if page.parsed is None:
            return draft
        focused, scores = self.focus.assess(page.page(), page.leased.score, page.hosts, page.follow)
        outcome = dataclasses.replace(draft.decision.outcome, topic=focused.topic,
                                      relevance=focused.relevance)
        slots: tuple[object, ...] = (Focused(scores),)
        if not (focused.keep and focused.follow):
            slots += (Withheld(page=not focused.keep, links=not focused.follow),)
        return dataclasses.replace(draft, decision=dataclasses.replace(draft.decision, outcome=outcome),
                                   context=draft.context.with_slots(*slots))


class FocusScores:
    """The links take the scores focus gave them (over any other)."""

    def __call__(self, page: Fetched, draft: Draft, fresh: Sequence[str],
                 scores: Scores | None) -> Scores | None:
        focused = draft.context.get(Focused)
        return scores if focused is None else focused.scores


@dataclass(frozen=True, slots=True)
class FocusLeaseShare:
    """A soft or rules focus leases where it chooses: URLs in flight at most `share` of those queued."""

    share: float = FOCUS_LEASE_SHARE

    def __call__(self, budget: int, queued: int, in_flight: int) -> int:
        return min(budget, max(0, max(1, int(queued * self.share)) - in_flight))

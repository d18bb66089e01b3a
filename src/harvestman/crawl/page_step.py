"""The page step: what one fetched URL comes to, decided with no I/O and no clock (the time is given).

In the manner of `policy/outcome.decide` (and of h2's sans-IO core): from the leased URL, its fetch
result, its parse and the crawl's rules to a frozen `PagePlan` (the outcome to record, the new URLs
with their priorities, the page's link edges, whether the response is stored and whether the page
goes on to the features, sinks and `on_page`). The crawl loop, `download()`'s caller and the tests
run it the same; the loop then does what the plan says (crawl/engine.py).

A feature takes part through a `PageRule` (on the decision: schedule, re-crawl, focus, sitemaps) or
a `LinkRule` (on the new URLs' scores: scorer, OPIC, focus), composed once by crawl/assembly.py; a
feature that is off is absent from the rules, and the page pays nothing for it. What a feature's step
carries for a later one (a re-crawl's check, focus's scores) is a typed slot of the page's context
(crawl/context.py), not a field here; the default crawl's pages have none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from harvestman.crawl.context import NO_SLOTS, PageContext
from harvestman.crawl.pagelinks import page_links
from harvestman.crawl.sitemaps import SITEMAP_ERROR, SitemapPage, sitemap_depths
from harvestman.model.config import PolitenessSettings
from harvestman.model.records import (
    CrawledPage,
    FetchResult,
    Headers,
    LeasedUrl,
    NewUrl,
    PageLinks,
    ParsedPage,
    StopCondition,
    WarcPlace,
)
from harvestman.policy.ordering import LinkScorer, link_scores, opic_shares, ranked_urls
from harvestman.policy.outcome import Decision, decide
from harvestman.policy.schedule import FetchSchedule, scheduled

HostKey = Callable[[str, str], str]  # (URL, host) -> politeness key (net/hostkeys.py, prepared)
Scores = dict[str, float]
NO_HOSTS: Mapping[str, str] = MappingProxyType({})
NO_FOLLOW: Mapping[str, tuple[str, str] | None] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Ticket:
    """What the checks before a fetch found: the request's headers, where it may stop, the host's
    Crawl-delay, and the slots the gates added for later steps."""

    headers: Headers = ()
    stop: StopCondition | None = None
    crawl_delay: float | None = None
    context: PageContext = NO_SLOTS


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched URL as the page step reads it."""

    leased: LeasedUrl
    result: FetchResult
    ticket: Ticket
    parsed: ParsedPage | None
    hosts: Mapping[str, str]  # followed links (normalized, in scope) -> host
    follow: Mapping[str, tuple[str, str] | None]  # link as found -> (normalized, host)

    def page(self, warc: WarcPlace | None = None) -> CrawledPage:
        """The page as sinks, scorers and `on_page` see it (`warc`: where its response was stored)."""
        return CrawledPage(self.result, self.parsed, self.leased.depth, tuple(self.hosts), warc=warc)


@dataclass(frozen=True, slots=True)
class Draft:
    """The decision while the page rules amend it, with the page's slots (the gates' to begin with)."""

    decision: Decision
    store: bool  # the response goes to the WARC
    wire_bytes: int = 0  # bytes this URL cost on the wire
    context: PageContext = NO_SLOTS


@dataclass(frozen=True, slots=True)
class Withheld:
    """A slot a page rule adds to hold back the page (not stored, not handed on) or its links (not
    queued); absent, both go on."""

    page: bool
    links: bool


@dataclass(frozen=True, slots=True)
class PagePlan:
    """What to do with one fetched URL."""

    decision: Decision
    new_urls: list[NewUrl]  # to add to the frontier, with their priorities
    fresh: list[str]  # the links new to this process (the known-URL cache takes them)
    links: PageLinks | None  # the page's edges for the link graph
    store: bool  # write the response to the WARC
    deliver: bool  # hand the page to the features, sinks and on_page
    wire_bytes: int  # bytes to count


class PageRule(Protocol):
    """A feature's part in the decision on a page."""

    def __call__(self, page: Fetched, draft: Draft) -> Draft: ...


class LinkRule(Protocol):
    """A feature's part in the scores of a page's new links (`fresh`), given the scores so far."""

    def __call__(self, page: Fetched, draft: Draft, fresh: Sequence[str],
                 scores: Scores | None) -> Scores | None: ...


class Queueing(Protocol):
    """How a page's new links become NewUrls (their depth, score and lease priority)."""

    def __call__(self, page: Fetched, fresh: Sequence[str], scores: Scores | None) -> list[NewUrl]: ...


# ----- the rules -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScheduleRule:
    """Re-visits: the URL's next fetch time from the crawl's schedule (policy/schedule.py)."""

    schedule: FetchSchedule

    def __call__(self, page: Fetched, draft: Draft) -> Draft:
        return dataclasses.replace(draft, decision=scheduled(draft.decision, self.schedule, page.leased))


class SitemapRule:
    """A sitemap not read whole (crawl/sitemaps.py): why, recorded on its URL."""

    def __call__(self, page: Fetched, draft: Draft) -> Draft:
        parsed = page.parsed
        if not isinstance(parsed, SitemapPage):
            return draft
        problem = parsed.sitemap.problem
        outcome = draft.decision.outcome
        if not problem or outcome.error_class:
            return draft
        outcome = dataclasses.replace(outcome, error_class=SITEMAP_ERROR, error_message=problem[:500])
        return dataclasses.replace(draft, decision=dataclasses.replace(draft.decision, outcome=outcome))


@dataclass(frozen=True, slots=True)
class ScorerRule:
    """A link scorer (given in Python or by a plugin) scores the page's new links."""

    scorer: LinkScorer

    def __call__(self, page: Fetched, draft: Draft, fresh: Sequence[str],
                 scores: Scores | None) -> Scores | None:
        return link_scores(self.scorer, page.page(), set(fresh), page.follow)


class OpicRule:
    """Online OPIC: the page's score split over its followed links, given to the new ones."""

    def __call__(self, page: Fetched, draft: Draft, fresh: Sequence[str],
                 scores: Scores | None) -> Scores | None:
        links = list(page.hosts)
        return opic_shares(page.leased.score, links, fresh, scores) if links else scores


@dataclass(frozen=True, slots=True)
class BreadthFirst:
    """The default crawl's new URLs: one hop deeper, unscored, leased shallowest first."""

    key: HostKey

    def __call__(self, page: Fetched, fresh: Sequence[str], scores: Scores | None) -> list[NewUrl]:
        depth = page.leased.depth + 1
        parent, hosts, key = page.leased.url, page.hosts, self.key
        return [NewUrl(url, key(url, hosts[url]), depth, 0.0, parent, depth) for url in fresh]


@dataclass(frozen=True, slots=True)
class Ranked:
    """New URLs leased by a rank of their depth and score (policy/ordering.py)."""

    rank: Callable[[int, float], float]
    key: HostKey

    def __call__(self, page: Fetched, fresh: Sequence[str], scores: Scores | None) -> list[NewUrl]:
        leased = page.leased
        return ranked_urls(self.rank, scores or {}, fresh, page.hosts, self.key, leased.depth + 1, leased.url)


@dataclass(frozen=True, slots=True)
class SitemapDepths:
    """A sitemap's child sitemaps queued at its own depth (an index of indexes is followed whole)."""

    inner: Queueing

    def __call__(self, page: Fetched, fresh: Sequence[str], scores: Scores | None) -> list[NewUrl]:
        new_urls = self.inner(page, fresh, scores)
        if isinstance(page.parsed, SitemapPage):
            return sitemap_depths(new_urls, page.parsed, page.leased.depth)
        return new_urls


# ----- the step --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PageStep:
    """The crawl's rules for a fetched page, composed once; `plan` is the page step itself."""

    politeness: PolitenessSettings  # the retry rules `decide` follows
    queueing: Queueing
    rules: tuple[PageRule, ...] = ()
    link_rules: tuple[LinkRule, ...] = ()

    def plan(self, page: Fetched, known: Container[str], now: float) -> PagePlan:
        """What to do with `page`, fetched and parsed by `now`; `known`: links this process has
        queued already (skipped: the frontier would only refuse them)."""
        result, parsed = page.result, page.parsed
        # The title from the parse the links needed anyway: no page is parsed for it alone.
        decision = decide(result, page.leased, now, self.politeness, title=parsed.title if parsed else "",
                          parse_error=parsed.error if parsed else "")
        draft = Draft(decision, bool(result.status), result.wire_bytes, page.ticket.context)
        for rule in self.rules:
            draft = rule(page, draft)
        withheld = draft.context.get(Withheld)  # None unless a rule (focus) holds something back
        keep = withheld is None or not withheld.page
        follow = withheld is None or not withheld.links
        fresh = [url for url in page.hosts if url not in known] if follow else []
        scores: Scores | None = None
        for link_rule in self.link_rules:
            scores = link_rule(page, draft, fresh, scores)
        decision = draft.decision
        return PagePlan(
            decision,
            self.queueing(page, fresh, scores),
            fresh,
            page_links(page.leased.url, parsed) if parsed is not None and parsed.links else None,
            draft.store and keep,
            bool(result.status) and decision.final and keep,
            draft.wire_bytes,
        )

"""The crawl's steps at its edges: the checks before a URL is fetched (robots.txt, a host's budget and
turn, validators, a re-crawl's check, where a fetch may stop), the redirect hop check, the parse,
and what a stored page passes through after (WARC, sitemaps, features, sinks).

Each is a small object built once by crawl/assembly.py, for a feature that is on; the page step in
between is pure (crawl/page_step.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from harvestman.crawl.documents import DocumentParser
from harvestman.crawl.ledger import HostTurns
from harvestman.crawl.page_step import NO_FOLLOW, NO_HOSTS, Fetched, PagePlan, Ticket
from harvestman.crawl.pagelinks import outlinks
from harvestman.crawl.recrawl import RecrawlCheck
from harvestman.crawl.robots_gate import RobotsGate, RobotsVerdict
from harvestman.crawl.sinks import PageFeaturer, SinkPipeline
from harvestman.crawl.sitemap_queue import SitemapQueue
from harvestman.crawl.sitemaps import SitemapPage
from harvestman.fetch.fetcher import FOLLOW, Fetcher, HopVerdict
from harvestman.fetch.partial import StopPlan
from harvestman.fetch.transport import ACCEPT_ENCODING
from harvestman.model.config import LinkSettings
from harvestman.model.errors import error_for
from harvestman.model.records import (
    CrawledPage,
    FetchOutcome,
    FetchResult,
    Headers,
    LeasedUrl,
    NewUrl,
    UrlRecord,
    WarcPlace,
)
from harvestman.net.hostkeys import HostKeys
from harvestman.policy.outcome import Decision
from harvestman.policy.scope import Scope, UrlRefiner, followed_links
from harvestman.store.warc import WarcWriter

RefusalKind = Literal["later", "skipped", "failed"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A URL ended, or handed back, before its fetch: `later` (robots.txt deferred its host until
    `until`), `skipped` (disallowed, over budget) or `failed` (robots.txt unreachable)."""

    kind: RefusalKind
    error_class: str = ""
    reason: str = ""
    until: float = 0.0


@dataclass(frozen=True, slots=True)
class Answered:
    """A URL answered before its fetch, a success (a re-crawl's check found the page unchanged with
    no GET): the page and its plan, settled as a fetched page's are."""

    page: Fetched
    plan: PagePlan


def answered(leased: LeasedUrl, ticket: Ticket, outcome: FetchOutcome,
             result: FetchResult | None) -> Answered:
    """A URL's `outcome` found with no GET (`result`: what was sent instead, a HEAD, if anything):
    nothing to store, follow or hand on; its wire bytes counted."""
    result = result or FetchResult(leased.url, leased.url)
    page = Fetched(leased, result, ticket, None, NO_HOSTS, NO_FOLLOW)
    return Answered(page, PagePlan(Decision(outcome), [], [], None, False, False, result.wire_bytes))


class Gate(Protocol):
    """A check before the fetch: the ticket, amended, or a refusal, or the URL's answer."""

    async def __call__(self, leased: LeasedUrl, ticket: Ticket) -> Ticket | Refusal | Answered: ...


def crawl_delay(verdict: RobotsVerdict, delay: float, cap: float) -> float:
    """The delay between a host's fetches: the crawl's, or robots.txt's Crawl-delay (capped) if longer."""
    return delay if verdict.crawl_delay is None else max(delay, min(verdict.crawl_delay, cap))


# ----- before the fetch ------------------------------------------------------------------------


class RobotsStep:
    """robots.txt: the URL allowed, deferred or refused; the sitemaps it names queued."""

    def __init__(self, robots: RobotsGate, sitemaps: Callable[[int], Awaitable[None]]) -> None:
        self._robots = robots
        self._sitemaps = sitemaps  # queues the sitemaps robots.txt files named (RobotsSitemaps)

    async def __call__(self, leased: LeasedUrl, ticket: Ticket) -> Ticket | Refusal:
        robots = self._robots
        verdict = await robots.check(leased.url)
        if robots.found_sitemaps:  # a robots.txt just read names sitemaps (or probe mode)
            await self._sitemaps(leased.depth)
        if verdict.deferred_until:
            # robots.txt answered 429 or could not be read yet: the URL goes back untouched.
            return Refusal("later", until=verdict.deferred_until)
        if verdict.failure is not None:
            return Refusal("failed", verdict.failure.error_class, verdict.failure.message)
        if not verdict.allowed:
            return Refusal("skipped", "robots", "disallowed by robots.txt")
        if verdict.crawl_delay is None:
            return ticket
        return dataclasses.replace(ticket, crawl_delay=verdict.crawl_delay)


class RobotsSitemaps:
    """Queues the sitemaps robots.txt files named (or probed ones) as links of their robots.txt, at
    the depth of the URL that had it read: normalized, in scope, fetched like any URL."""

    def __init__(self, robots: RobotsGate, scope: Scope, follow: dict[str, tuple[str, str] | None],
                 keys: HostKeys, queue: SitemapQueue, max_length: int) -> None:
        self._robots, self._scope, self._follow = robots, scope, follow
        self._keys, self._queue, self._max_length = keys, queue, max_length

    async def __call__(self, depth: int) -> None:
        for url, robots in self._robots.take_sitemaps():
            found = followed_links((url,), self._scope, self._follow, max_length=self._max_length)
            await self._keys.prepare(list(found))
            for sitemap, host in found.items():
                self._queue.queue(NewUrl(sitemap, self._keys.key(sitemap, host), depth, 0.0, robots,
                                         float(depth)))


class HostBudget:
    """--max-pages-per-host: a host's pages past its budget are refused (a page counts once, at its
    first allowed attempt). A host is leased by one process only: each worker counts its own hosts."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._started: dict[str, int] = {}

    async def __call__(self, leased: LeasedUrl, ticket: Ticket) -> Ticket | Refusal:
        if leased.retries:
            return ticket
        started = self._started.get(leased.host, 0)
        if started >= self._budget:
            return Refusal("skipped", "host_budget", f"host reached its budget of {self._budget} pages")
        self._started[leased.host] = started + 1
        return ticket


class HostTurn:
    """The host's turn: fetches spaced by the crawl's delay, or its robots.txt Crawl-delay (which
    the frontier then keeps for the host's next leases)."""

    def __init__(self, delay: float, cap: float, turns: HostTurns,
                 set_host_delay: Callable[[str, float], None]) -> None:
        self._delay, self._cap, self._turns, self._set_host_delay = delay, cap, turns, set_host_delay

    async def __call__(self, leased: LeasedUrl, ticket: Ticket) -> Ticket | Refusal:
        delay = self._delay
        if ticket.crawl_delay is not None:
            delay = max(delay, min(ticket.crawl_delay, self._cap))  # as crawl_delay() has it
            self._set_host_delay(leased.host, delay)
        if delay > 0:
            await self._turns.take(leased.host, delay)
        return ticket


class Validators:
    """The request's headers: the crawl's own, and the validators of the URL's last fetch (a 304
    then costs no body)."""

    def __init__(self, extra: Headers) -> None:
        self._extra = extra
        self._plain = Ticket(extra)  # shared by every URL without validators: no allocation

    async def __call__(self, leased: LeasedUrl, ticket: Ticket) -> Ticket | Refusal:
        if not leased.etag and not leased.last_modified:
            # The turn (HostTurn) has used the Crawl-delay already: a shared ticket will do.
            return self._plain
        headers = list(self._extra)
        if leased.etag:
            headers.append(("If-None-Match", leased.etag))
        if leased.last_modified:
            headers.append(("If-Modified-Since", leased.last_modified))
        return Ticket(tuple(headers))


class RecrawlGate:
    """harvestman recrawl's check (crawl/recrawl.py) in place of the validators: the page's answer
    with no GET, or the GET's headers and the check in the page's context (for RecrawlRule)."""

    def __init__(self, check: RecrawlCheck, record: Callable[[str], UrlRecord | None],
                 fetcher: Fetcher) -> None:
        self._check, self._record, self._fetcher = check, record, fetcher

    async def __call__(self, leased: LeasedUrl, ticket: Ticket) -> Ticket | Answered:
        prior = self._record(leased.url)
        checked = await self._check.check(leased, prior, self._fetcher)
        if checked.unchanged is not None:
            return answered(leased, ticket, checked.unchanged, checked.head)
        return dataclasses.replace(ticket, headers=checked.headers,
                                   context=ticket.context.with_slots(checked))


class StopRules:
    """stop_at / stop_rules: where the URL's fetch may end early (fetch/partial.py)."""

    def __init__(self, plan: StopPlan) -> None:
        self._plan = plan

    async def __call__(self, leased: LeasedUrl, ticket: Ticket) -> Ticket | Refusal:
        return dataclasses.replace(ticket, stop=self._plan.for_url(leased.url))


# ----- the redirect hop check ------------------------------------------------------------------


class HopCheck:
    """Whether to follow a redirect hop to a URL: in scope, not known to the crawl, allowed by its
    robots.txt. The crawl and `download()` follow redirects by this one check.

    A target the crawl database already holds is not fetched again here: the redirect is recorded
    and the target keeps its own turn (a 301 from /docs to an already fetched /docs/ must not fetch
    it twice). When the hop's robots.txt cannot be had (a blocked address, a TLS failure), the hop
    fails with that error, so the URL records the real cause.
    """

    def __init__(self, robots: Callable[[str], Awaitable[RobotsVerdict]], scope: Scope | None = None,
                 known: Callable[[str], object] | None = None) -> None:
        self._robots, self._scope, self._known = robots, scope, known

    async def __call__(self, url: str) -> HopVerdict:
        if self._scope is not None and (reason := self._scope.reason(url)):
            return HopVerdict(False, reason)
        if self._known is not None and self._known(url) is not None:
            return HopVerdict(False)
        verdict = await self._robots(url)
        if verdict.failure is not None:
            failure = verdict.failure
            raise error_for(failure.error_class, f"redirect to {url[:200]}: {failure.message}")
        if not verdict.allowed or verdict.deferred_until:
            return HopVerdict(False, "disallowed by robots.txt")
        return FOLLOW


# ----- the parse -------------------------------------------------------------------------------


class LinkParse:
    """A fetched page's parse and the links worth queueing (crawl/pagelinks.py)."""

    def __init__(self, links: LinkSettings, scope: Scope, follow: dict[str, tuple[str, str] | None], *,
                 with_text: bool, sitemaps: SitemapQueue, parsers: Mapping[str, DocumentParser],
                 refine: UrlRefiner | None, share_tree: bool = False) -> None:
        self._links, self._scope, self._follow, self._with_text = links, scope, follow, with_text
        self._sitemaps, self._parsers, self._refine = sitemaps, parsers, refine
        self._share_tree = share_tree

    def __call__(self, leased: LeasedUrl, result: FetchResult, ticket: Ticket) -> Fetched:
        parsed, hosts = outlinks(result, leased.depth, self._links, self._scope, self._follow,
                                 with_text=self._with_text, as_sitemap=leased.url in self._sitemaps,
                                 parsers=self._parsers, refine=self._refine, share_tree=self._share_tree)
        return Fetched(leased, result, ticket, parsed, hosts, self._follow)


def no_parse(leased: LeasedUrl, result: FetchResult, ticket: Ticket) -> Fetched:
    """A crawl that follows no links (follow_links off) parses nothing."""
    return Fetched(leased, result, ticket, None, NO_HOSTS, NO_FOLLOW)


Parse = Callable[[LeasedUrl, FetchResult, Ticket], Fetched]


# ----- after the page step ---------------------------------------------------------------------


class Effect(Protocol):
    """Something a planned page leaves behind, in this process or on disk; the WARC's tells where
    it stored the response (the delivered page carries it), the others None."""

    def __call__(self, page: Fetched, plan: PagePlan) -> WarcPlace | None: ...


class WarcRecord:
    """The response, request and metadata records in the crawl's WARC files (when the plan stores it)."""

    def __init__(self, warc: WarcWriter, user_agent: str) -> None:
        self._warc = warc
        self._sent = (("User-Agent", user_agent), ("Accept", "*/*"), ("Accept-Encoding", ACCEPT_ENCODING))

    def __call__(self, page: Fetched, plan: PagePlan) -> WarcPlace | None:
        if plan.store:
            return self._warc.write(page.result, (*self._sent, *page.ticket.headers), list(page.hosts),
                                    plan.decision.outcome.signature)
        return None


class SitemapIntake:
    """A fetched sitemap taken in: its child sitemaps known, its URLs' lastmods kept for the commit."""

    def __init__(self, queue: SitemapQueue) -> None:
        self._queue = queue

    def __call__(self, page: Fetched, plan: PagePlan) -> None:
        if isinstance(page.parsed, SitemapPage):
            self._queue.take(page.parsed, page.hosts)
        return None


Deliver = Callable[[CrawledPage], CrawledPage]  # a step a kept page passes through, in order


def featured(featurer: PageFeaturer) -> Deliver:
    """--features: the page with its features, before the sinks and on_page see it."""

    def add(page: CrawledPage) -> CrawledPage:
        return dataclasses.replace(page, features=featurer(page))

    return add


def into(sinks: SinkPipeline) -> Deliver:
    """The run's sinks (index writers, the features' table, a library's sinks) take the page."""

    def write(page: CrawledPage) -> CrawledPage:
        sinks.write(page)
        return page

    return write


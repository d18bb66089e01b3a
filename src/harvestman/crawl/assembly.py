"""The one place a crawl's steps are composed: from the settings, the plugins and the focus file, once
when the crawl is built (`assemble`) and once when a run starts (`CrawlParts.chain`). A feature that
is off is absent from the chain; a new per-page feature is a new step added here.

The order a URL passes (the README's design section has the table):
gates (robots, host budget, host turn, validators or re-crawl check, stop rules) -> fetch -> parse ->
the page step (decide, schedule, re-crawl, focus, sitemap; scorer, OPIC, focus scores; queueing) ->
effects (WARC, sitemaps) -> delivery (features, sinks, then on_page).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harvestman.crawl.documents import DocumentParser, document_parsers
from harvestman.crawl.focus_step import FocusLeaseShare, FocusRule, FocusScores
from harvestman.crawl.focusfile import focus_for
from harvestman.crawl.ledger import HostTurns
from harvestman.crawl.page_step import (
    BreadthFirst,
    LinkRule,
    OpicRule,
    PageRule,
    PageStep,
    Queueing,
    Ranked,
    ScheduleRule,
    ScorerRule,
    SitemapDepths,
    SitemapRule,
)
from harvestman.crawl.plugins import load_plugins, with_plugin_scorer
from harvestman.crawl.recrawl import RecrawlCheck, RecrawlRule
from harvestman.crawl.robots_gate import RobotsGate
from harvestman.crawl.sinks import NO_STAGES, PageFeaturer, PageStages, SinkFactory, SinkPipeline
from harvestman.crawl.sitemap_queue import SitemapQueue
from harvestman.crawl.steps import (
    Deliver,
    Effect,
    Gate,
    HostBudget,
    HostTurn,
    LinkParse,
    Parse,
    RecrawlGate,
    RobotsSitemaps,
    RobotsStep,
    SitemapIntake,
    StopRules,
    Validators,
    WarcRecord,
    featured,
    into,
    no_parse,
)
from harvestman.fetch.fetcher import Fetcher
from harvestman.fetch.partial import StopPlan
from harvestman.fetch.transport import Transport
from harvestman.model.config import CrawlConfig
from harvestman.model.records import CrawledPage
from harvestman.net.hostkeys import HostKeys
from harvestman.policy.focus import Focus
from harvestman.policy.ordering import RANKS, LinkScorer, check_ordering
from harvestman.policy.schedule import FetchSchedule, schedule_for
from harvestman.policy.scope import Scope, UrlRefiner
from harvestman.store.frontier import Store
from harvestman.store.warc import WarcWriter

PageHandler = Callable[[CrawledPage], Awaitable[None]]


class LeaseCap(Protocol):
    """A feature's cap on how many URLs the engine leases now (focus: crawl/focus_step.py), given the
    room it has (`budget`), the URLs queued and those in flight; a crawl without one leases the room."""

    def __call__(self, budget: int, queued: int, in_flight: int) -> int: ...


@dataclass(frozen=True, slots=True)
class RunPlace:
    """The collaborators of one run a chain is bound to (built by `Crawler.run`)."""

    frontier: Store
    robots: RobotsGate
    scope: Scope
    fetcher: Fetcher
    warc: WarcWriter
    sinks: SinkPipeline | None
    on_page: PageHandler | None
    turns: HostTurns
    sitemaps: SitemapQueue
    # Resolved link -> (normalized URL, host) when it is to be followed, else None (followed_links).
    follow: dict[str, tuple[str, str] | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Chain:
    """A run's steps in the order a URL passes them."""

    gates: tuple[Gate, ...]
    parse: Parse
    page: PageStep
    effects: tuple[Effect, ...]
    deliver: tuple[Deliver, ...]
    on_page: PageHandler | None

    @property
    def delivers(self) -> bool:
        """Whether a kept page goes anywhere past the WARC (else no CrawledPage is built for it)."""
        return bool(self.deliver) or self.on_page is not None


@dataclass(frozen=True, slots=True)
class CrawlParts:
    """What a crawl's per-page behaviour is made of, built once from its settings and plugins."""

    config: CrawlConfig
    keys: HostKeys
    page: PageStep
    parsers: Mapping[str, DocumentParser]
    refine: UrlRefiner | None  # plugins' URL normalizers and filters; None: no call per link
    sink_factories: tuple[SinkFactory, ...]
    featurer: PageFeaturer | None
    schedule: FetchSchedule | None  # re-visits; None: a fetched URL is done
    recrawl: RecrawlCheck | None
    stops: StopPlan | None
    with_text: bool  # a scorer or focus reads the page's text
    shares_tree: bool = False  # steps after the parse read the page's tree (features, Markdown, blocks)
    lease_order: str = "bfs"  # the order URLs are leased in, across hosts too unless bfs (lease_order)
    lease_cap: LeaseCap | None = None  # a soft or rules focus's; None: the engine leases what it has room for

    def chain(self, run: RunPlace) -> Chain:
        """The steps of one run, bound to its frontier, robots.txt gate, WARC and sinks."""
        cfg = self.config
        gates: list[Gate] = [RobotsStep(run.robots, RobotsSitemaps(
            run.robots, run.scope, run.follow, self.keys, run.sitemaps, cfg.links.max_url_length))]
        if cfg.max_pages_per_host:
            gates.append(HostBudget(cfg.max_pages_per_host))
        if cfg.delay > 0 or cfg.robots.obey_robots:  # a Crawl-delay can only come from robots.txt
            gates.append(HostTurn(cfg.delay, cfg.crawl_delay_cap, run.turns, run.frontier.set_host_delay))
        gates.append(Validators(cfg.extra_headers) if self.recrawl is None
                     else RecrawlGate(self.recrawl, run.frontier.get, run.fetcher))
        if self.stops is not None:
            gates.append(StopRules(self.stops))
        parse: Parse = no_parse
        if cfg.follow_links:
            with_text = self.with_text or run.on_page is not None or run.sinks is not None
            parse = LinkParse(cfg.links, run.scope, run.follow, with_text=with_text, sitemaps=run.sitemaps,
                              parsers=self.parsers, refine=self.refine, share_tree=self.shares_tree)
        effects: list[Effect] = [WarcRecord(run.warc, cfg.user_agent)]
        if cfg.follow_links and cfg.links.sitemaps != "off":
            effects.append(SitemapIntake(run.sitemaps))
        deliver: list[Deliver] = [] if self.featurer is None else [featured(self.featurer)]
        if run.sinks is not None:
            deliver.append(into(run.sinks))
        return Chain(tuple(gates), parse, self.page, tuple(effects), tuple(deliver), run.on_page)


def assemble(config: CrawlConfig, *, scorer: LinkScorer | None = None, schedule: FetchSchedule | None = None,
             sinks: Sequence[SinkFactory] = (), focus: Focus | None = None,
             stages: PageStages = NO_STAGES) -> CrawlParts:
    """A crawl's parts: its plugins loaded (by name, in every process that crawls), its focus read
    (or trained and saved) from the focus file unless given, its page `stages` taken as its settings
    ask (`features`, `markdown`: given by the layers above), and its page step composed."""
    plugins = load_plugins(config.plugins)
    scorer = with_plugin_scorer(scorer, plugins)
    check_ordering(config.ordering, scorer)
    if focus is None:
        focus = focus_for(config.focus, Path(config.out_dir), resume=config.resume)
    featurer, staged = stages.for_config(config)
    factories = tuple(sinks) + plugins.index_writers + staged
    keys = HostKeys(config.host_key, config.resolve)
    timed = schedule_for(config.links, schedule)
    recrawl = RecrawlCheck(config.recrawl_strategy, config.extra_headers, timeout=config.timeout,
                           max_size=config.max_size) if config.recrawl_strategy else None
    page = page_step(config, keys, scorer=scorer, schedule=timed, focus=focus, recrawl=recrawl is not None)
    parsers = document_parsers(config.documents, plugins.parsers)  # feeds, PDF, plugins'
    return CrawlParts(config, keys, page, parsers, plugins.refiner(), factories, featurer, timed, recrawl,
                      StopPlan.from_fetch(config.fetch),
                      with_text=scorer is not None or focus is not None,
                      shares_tree=featurer is not None or config.markdown
                      or bool(focus and focus.reads_blocks),
                      lease_order=lease_order(config, focus),
                      lease_cap=FocusLeaseShare() if focus is not None and focus.ordered else None)


def lease_order(config: CrawlConfig, focus: Focus | None) -> str:
    """The ordering a crawl leases by (policy/ordering.RANKS): the crawl's, or `score` for a soft or
    rules focus, which leases the best score first (hard focus keeps the crawl's ordering)."""
    return "score" if focus is not None and focus.ordered else config.ordering


def page_step(config: CrawlConfig, keys: HostKeys, *, scorer: LinkScorer | None = None,
              schedule: FetchSchedule | None = None, focus: Focus | None = None,
              recrawl: bool = False) -> PageStep:
    """The pure page step of a crawl with these settings: its rules in the order they apply."""
    rules: list[PageRule] = []
    if schedule is not None:
        rules.append(ScheduleRule(schedule))
    if recrawl:
        rules.append(RecrawlRule())
    if focus is not None:
        rules.append(FocusRule(focus))
    sitemaps = config.follow_links and config.links.sitemaps != "off"
    if sitemaps:
        rules.append(SitemapRule())
    link_rules: list[LinkRule] = []
    if scorer is not None:
        link_rules.append(ScorerRule(scorer))
    if config.ordering == "opic":  # online OPIC: a page's score split over its new links
        link_rules.append(OpicRule())
    if focus is not None:
        link_rules.append(FocusScores())
    ordering = lease_order(config, focus)
    queueing: Queueing = BreadthFirst(keys.key)
    if ordering != "bfs" or scorer is not None:
        queueing = Ranked(RANKS[ordering], keys.key)
    if sitemaps:
        queueing = SitemapDepths(queueing)
    return PageStep(config.politeness, queueing, tuple(rules), tuple(link_rules))


def page_transport(config: CrawlConfig, transport: Transport, robots: RobotsGate, turns: HostTurns,
                   keys: HostKeys) -> Transport | None:
    """The transport that renders pages in a browser (fetch/browser.py), None when no page is
    rendered; imported only then, so the default crawl never loads Playwright."""
    if config.render == "never" and not config.render_rules:
        return None
    from harvestman.crawl.rendering import PageRequestRules, open_page_transport, renders

    if not renders(config.rendering):
        return None
    rules = PageRequestRules(robots, turns.take, keys.key, config.delay, config.crawl_delay_cap)
    return open_page_transport(transport, config.rendering, config.user_agent, rules)

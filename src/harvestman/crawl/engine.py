"""The crawl engine: lease URLs from the frontier, fetch, parse, store, report back."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from harvestman.crawl.documents import document_parsers
from harvestman.crawl.focusfile import focus_for
from harvestman.crawl.ledger import EventHandler, HostTurns, RunLedger
from harvestman.crawl.pagelinks import outlinks, page_links
from harvestman.crawl.plugins import load_plugins, with_plugin_scorer
from harvestman.crawl.recrawl import Checked, RecrawlCheck
from harvestman.crawl.robots_gate import RobotsGate
from harvestman.crawl.seeding import store_seeds
from harvestman.crawl.sinks import PageFeaturer, SinkContext, SinkFactory, SinkPipeline, features_stage
from harvestman.crawl.sitemap_queue import SitemapQueue
from harvestman.crawl.sitemaps import SitemapPage, sitemap_depths
from harvestman.crawl.stats import CrawlStats, WorkerSlot, finished_message
from harvestman.fetch.fetcher import FOLLOW, Fetcher, HopVerdict
from harvestman.fetch.partial import StopPlan, open_transport
from harvestman.fetch.transport import ACCEPT_ENCODING, Transport
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError, StorageError, error_for
from harvestman.model.events import Event, EventKind
from harvestman.model.faults import crash_point
from harvestman.model.records import (
    CrawledPage,
    FetchOutcome,
    FetchResult,
    LeasedUrl,
    NewUrl,
    PageLinks,
    UrlState,
)
from harvestman.model.sync import iterate_in_thread
from harvestman.net.hostkeys import HostKeys
from harvestman.policy.ordering import (
    RANKS,
    LinkScorer,
    check_ordering,
    link_scores,
    opic_shares,
    ranked_urls,
)
from harvestman.policy.outcome import Decision, decide
from harvestman.policy.schedule import FetchSchedule, schedule_for, scheduled
from harvestman.policy.scope import Scope, followed_links
from harvestman.store.factory import open_store, store_location
from harvestman.store.frontier import Store
from harvestman.store.journal import RunJournal
from harvestman.store.warc import WarcWriter, recover

IDLE_POLL = 0.25  # longest sleep while waiting for a host to become ready
# A worker whose share is done asks this often whether the whole crawl is: a cheap read, and the
# crawl's end (and the command's exit) should not wait a whole IDLE_POLL for it.
SHARE_EMPTY_POLL = 0.05
KNOWN_URLS = 1 << 17  # URLs this process has sent to the frontier, remembered to skip resending
QUEUE_SAMPLE_EVERY = 0.25  # seconds between samples of the frontier's size for the display


PageHandler = Callable[[CrawledPage], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _Run:
    """The collaborators of one run, built by `Crawler.run` and shared by its fetch tasks."""

    frontier: Store
    journal: RunJournal
    warc: WarcWriter
    fetcher: Fetcher
    robots: RobotsGate
    scope: Scope
    on_page: PageHandler | None
    sinks: SinkPipeline | None  # None when there is none: one check a page
    # Resolved link -> (normalized URL, host) when it is to be followed, else None (followed_links).
    follow: dict[str, tuple[str, str] | None] = field(default_factory=dict)


class Crawler:
    """Runs one crawl (or a download of a list) into `config.out_dir`, resumable at any moment."""

    def __init__(
        self,
        config: CrawlConfig,
        *,
        transport: Transport | None = None,
        frontier: Store | None = None,
        on_event: EventHandler | None = None,
        worker: WorkerSlot | None = None,
        sinks: Sequence[SinkFactory] = (),
        scorer: LinkScorer | None = None,
        schedule: FetchSchedule | None = None,
    ) -> None:
        # Plugins are loaded here, by name, in every process that crawls (crawl/plugins.py).
        plugins = load_plugins(config.plugins)
        scorer = with_plugin_scorer(scorer, plugins)
        check_ordering(config.ordering, scorer)
        self.config = config
        self.worker = worker  # None: this process runs the whole crawl
        self._sink_factories = tuple(sinks) + plugins.index_writers
        self._featurer: PageFeaturer | None = None  # opt-in: the default crawl pays one check a page
        if config.features:
            self._featurer, store_features = features_stage()
            self._sink_factories += (store_features,)
        self._parsers = document_parsers(config.documents, plugins.parsers)  # feeds, PDF, plugins'
        self._refine = plugins.refiner()  # None without URL plugins: no call per link
        self.stats = CrawlStats()
        self._transport = transport
        self._frontier = frontier
        self._listeners: list[EventHandler] = [on_event] if on_event else []
        self._ledger = RunLedger(self.stats, self._listeners)  # crawl/ledger.py
        self._emit = self._ledger.emit
        self._stopping = False
        self._abandon = False
        self._fatal: StorageError | None = None  # why the run had to stop, raised when it has
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[tuple[FetchOutcome, list[NewUrl]]] = []
        self._pending_links: list[PageLinks] = []  # the link graph of those fetched pages
        self._wake = asyncio.Event()
        self._keys = HostKeys(config.host_key, config.resolve)
        self._politeness = config.politeness  # made once: outcome.decide reads it for every page
        self._stops = StopPlan.from_fetch(config.fetch)  # None unless pages are to be read in part
        self._links = config.links
        self._turns = HostTurns()
        # Outlinks already sent to the frontier (committed, or pending in this process's next
        # commit). Most outlinks are known; skipping them here saves their insert attempt. The
        # database stays the seen check: forgetting (the set is cleared when full) costs only time.
        self._known: set[str] = set()
        # Pages started per host (politeness key) in this run, for the page budget; a host is
        # leased by one process only, so each worker counts its own hosts completely.
        self._host_pages: dict[str, int] = {}
        # Ordering and re-visits (policy/ordering.py, policy/schedule.py). None on the default crawl
        # (bfs, no scorer, no re-visits), whose page path then stays as it was: no call per link.
        self._scorer = scorer
        self._rank = None if config.ordering == "bfs" and scorer is None else RANKS[config.ordering]
        self._schedule = schedule_for(config.links, schedule)
        self._sitemaps = SitemapQueue(KNOWN_URLS)  # crawl/sitemaps.py
        # Online OPIC (opt-in, ordering "opic"): a page's score split over its new links.
        self._opic = config.ordering == "opic"
        # harvestman recrawl's checks (crawl/recrawl.py); None in any other crawl: no cost a page.
        self._recrawl = RecrawlCheck(config.recrawl_strategy, config.extra_headers, timeout=config.timeout,
                                     max_size=config.max_size) if config.recrawl_strategy else None
        self._rendering: Transport | None = None  # the browser's transport, when pages are rendered
        # Focused crawling (opt-in, policy/focus.py): None without a focus file, one check a page.
        # Soft and rules focus lease the best score first; hard focus keeps the crawl's ordering.
        self._focus = focus_for(config.focus, Path(config.out_dir), resume=config.resume)
        if self._focus is not None and self._focus.ordered:
            self._rank = RANKS["score"]

    # ----- faces -----------------------------------------------------------------------------

    def stop(self, *, abandon: bool = False) -> None:
        """Ask the crawl to finish the fetches in flight, commit, and return (thread-safe).

        With `abandon`, fetches in flight are cancelled instead of awaited; their URLs stay leased
        in the crawl database and are fetched again by `--resume`.
        """
        self._stopping = True
        self._abandon = self._abandon or abandon
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._wake.set)

    async def pages(self) -> AsyncGenerator[CrawledPage, None]:
        """Run the crawl, yielding each page as soon as it is stored."""
        pages: asyncio.Queue[CrawledPage | None] = asyncio.Queue(maxsize=256)

        async def handler(page: CrawledPage) -> None:
            await pages.put(page)

        task = asyncio.create_task(self.run(on_page=handler))
        task.add_done_callback(lambda _: pages.put_nowait(None))
        try:
            while (page := await pages.get()) is not None:
                yield page
        finally:
            if not task.done():
                self.stop()
                while not task.done():  # drain so the producer is never blocked on a full queue
                    with contextlib.suppress(asyncio.QueueEmpty):
                        pages.get_nowait()
                    await asyncio.sleep(0.01)
            await task  # re-raise what the crawl raised

    def __iter__(self) -> Iterator[CrawledPage]:
        """Run the crawl on a background thread, yielding pages to this (synchronous) consumer."""
        return iterate_in_thread(self.pages)

    # ----- the run ---------------------------------------------------------------------------

    async def run(self, on_page: PageHandler | None = None) -> CrawlStats:
        """Crawl until the frontier is exhausted, `max_pages` is reached, or `stop()` is called."""
        cfg = self.config
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        out = self._make_output_folder()
        worker = self.worker
        frontier = self._frontier or self.open_frontier()
        journal = RunJournal(out, sys.stdout if cfg.log_json else None)
        self._listeners.insert(0, journal.event)
        transport = self._transport or open_transport(cfg.fetch)
        try:
            if worker is None:
                seeds = await self._prepare(frontier, journal)
                recover(out / "warc")
            else:  # the parent prepared the run: seeds stored, leases released, WARC files recovered
                seeds = (frontier.get_meta("seeds") or "").split("\n")
            prefix = "harvestman" if worker is None else f"harvestman-w{worker.index}"
            warc = WarcWriter(out / "warc", max_bytes=cfg.warc_max_bytes, prefix=prefix)
            sinks: SinkPipeline | None = None
            try:
                if self._sink_factories:
                    place = SinkContext(out, worker.index, worker.count) if worker else SinkContext(out)
                    sinks = SinkPipeline(self._sink_factories, place)
                scope = Scope(seeds, cfg.scope, cfg.include, cfg.exclude)
                robots = RobotsGate(
                    transport,
                    cfg.robots,
                    cfg.fetch,
                    self._politeness,
                    on_defer=lambda host, until, why: self._ledger.pause(frontier, host, until, why),
                    host_key=self._keys.key,
                    sitemaps=self._links.sitemaps if cfg.follow_links else "off",
                )
                pages = self._page_transport(transport, robots)  # the browser's, when rendering
                # The hop check reads `run`, bound below, only when a redirect is followed.
                fetcher = Fetcher(pages or transport, max_redirects=cfg.max_redirects,
                                  hop_check=lambda url: self._hop_check(url, run))
                run = _Run(frontier, journal, warc, fetcher, robots, scope, on_page, sinks)
                self._emit(Event(EventKind.CRAWL_STARTED, time.time(), message=" ".join(seeds)))
                await self._loop_until_done(run)
            finally:
                try:
                    warc.close()
                finally:
                    if sinks is not None:
                        sinks.close()
                    if self._rendering is not None:
                        await self._rendering.aclose()
        finally:
            try:
                self._flush(frontier, journal, time.time())
                self._emit(
                    Event(
                        EventKind.CRAWL_FINISHED,
                        time.time(),
                        bytes=self.stats.bytes,
                        message=finished_message(self.stats, cfg.max_wait),
                    )
                )
            finally:
                if self._transport is None:
                    await transport.aclose()
                if self._frontier is None:
                    frontier.close()
                journal.close()
                self._listeners.remove(journal.event)
        if self._fatal is not None:
            raise self._fatal
        return self.stats

    def _page_transport(self, transport: Transport, robots: RobotsGate) -> Transport | None:
        """The transport that renders pages in a browser (fetch/browser.py), None when no page is
        rendered; imported only then, so the default crawl never loads Playwright."""
        cfg = self.config
        if cfg.render == "never" and not cfg.render_rules:
            return None
        from harvestman.crawl.rendering import PageRequestRules, open_page_transport, renders

        if not renders(cfg.rendering):
            return None
        rules = PageRequestRules(robots, self._turns.take, self._keys.key, cfg.delay, cfg.crawl_delay_cap)
        self._rendering = open_page_transport(transport, cfg.rendering, cfg.user_agent, rules)
        return self._rendering

    def _make_output_folder(self) -> Path:
        out = Path(self.config.out_dir)
        try:
            (out / "warc").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot use {out} as the output folder: {exc.strerror}") from None
        return out

    def open_frontier(self) -> Store:
        """The crawl's store (`--db`, or crawl.db in the output folder), as this process uses it."""
        cfg = self.config
        self._make_output_folder()
        return open_store(
            store_location(cfg.db, cfg.out_dir),
            per_host=cfg.per_host,
            delay=cfg.delay,
            lease_seconds=cfg.lease_seconds,
            host_of=self._keys.key,
            worker=(self.worker.index, self.worker.count) if self.worker else (0, 1),
        )

    async def prepare(self) -> None:
        """Do what starts a run (seeds stored and queued, leases handed back on resume, WARC files
        recovered) without crawling: the parent of worker processes calls this before starting them.
        """
        out = Path(self.config.out_dir)
        if self._frontier is None:
            raise ConfigError("prepare() needs the crawl's frontier, opened by the caller")
        journal = RunJournal(out, sys.stdout if self.config.log_json else None)
        try:
            await self._prepare(self._frontier, journal)
            recover(out / "warc")
        finally:
            journal.close()

    async def _prepare(self, frontier: Store, journal: RunJournal) -> list[str]:
        """Record the run's seeds, or take them back from the database when resuming."""

        def skipped(event: Event) -> None:
            self.stats.skipped += 1
            self._emit(event)

        seeds = await store_seeds(frontier, self.config, self._keys, journal, emit=self._emit,
                                  skipped=skipped)
        counts = frontier.counts()
        self._ledger.done_total = sum(n for state, n in counts.items() if state != UrlState.UNFETCHED)
        return seeds

    async def _loop_until_done(self, run: _Run) -> None:
        cfg = self.config
        frontier = run.frontier
        tasks: set[asyncio.Task[None]] = set()

        def finished(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            self._wake.set()

        sampled_at = 0.0
        while True:
            if self._abandon:
                self._flush(frontier, run.journal, time.time())
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                return
            if time.monotonic() - sampled_at > QUEUE_SAMPLE_EVERY:
                sampled_at = time.monotonic()
                self.stats.queued = frontier.pending()
            budget = 0 if self._stopping else cfg.concurrency - len(tasks)
            if cfg.max_pages:
                budget = min(budget, cfg.max_pages - self._ledger.done_total - len(tasks))
            now = time.time()
            leased = self._flush(frontier, run.journal, now, lease=budget)
            for item in leased:
                task = asyncio.create_task(self._process(item, run))
                tasks.add(task)
                task.add_done_callback(finished)
            self.stats.in_flight = len(tasks)
            if leased and len(leased) == budget:
                continue  # lease more while there is room; fewer than asked: nothing else is ready
            if not tasks:
                if self._stopping or (cfg.max_pages and self._ledger.done_total >= cfg.max_pages):
                    return
                ready = frontier.next_ready_time()
                self.stats.next_attempt_at = ready or 0.0
                if ready is None:
                    # A worker's share is empty, but another worker may still add to it: the
                    # crawl is over when no URL anywhere waits or is being fetched.
                    if self.worker is None or not frontier.pending():
                        return
                    if self._all_deferred(frontier, now):  # what others have left waits too long
                        return
                    ready = now + SHARE_EMPTY_POLL
                elif ready - now > cfg.max_wait and self._all_deferred(frontier, now):
                    return
                await asyncio.sleep(min(max(ready - now, 0.001), IDLE_POLL))
                continue
            self._wake.clear()
            ready = frontier.next_ready_time() if budget > 0 else None
            wait = IDLE_POLL if ready is None else min(max(ready - now, 0.001), IDLE_POLL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=wait)

    def _all_deferred(self, frontier: Store, now: float) -> bool:
        """Whether all the crawl has left waits beyond --max-wait (then noted in the stats).

        Called with nothing in flight here. A worker ends only when that holds for the whole crawl
        and no other worker has a fetch in flight (one could add URLs to this worker's share), so
        that every worker sees the same and they all end.
        """
        if self.worker is not None and frontier.in_flight():
            return False
        ready = frontier.next_ready_time(everywhere=True)
        if ready is None or ready - now <= self.config.max_wait:
            return False
        self.stats.deferred = frontier.pending()
        if self._schedule is not None:  # what waits is queued; all but the unfetched wait for a re-visit
            self.stats.deferred_revisits = self.stats.deferred - frontier.counts()[UrlState.UNFETCHED]
        self.stats.deferred_until = ready
        return True

    def _flush(
        self, frontier: Store, journal: RunJournal, now: float, *, lease: int = 0
    ) -> list[LeasedUrl]:
        """Commit finished fetches with their outlinks and lease up to `lease` URLs, in one
        transaction (a transaction each cost more than the work in it); then their log lines."""
        if not self._pending and not self._sitemaps.waiting:
            return frontier.lease(lease, now) if lease > 0 else []
        batch, self._pending = self._pending, []
        links, self._pending_links = self._pending_links, []
        outcomes = [outcome for outcome, _ in batch]
        new_urls = [url for _, urls in batch for url in urls]
        new_urls.extend(self._sitemaps.take_urls())
        leased = frontier.complete(outcomes, now, new_urls, links=links, lease=max(lease, 0))
        if lastmods := self._sitemaps.take_lastmods():
            frontier.set_metadata(lastmods)
        journal.flush()
        return leased

    async def _process(self, leased: LeasedUrl, run: _Run) -> None:
        """Fetch one leased URL and queue its outcome; never raises (a failure is recorded on the URL)."""
        cfg = self.config
        host = leased.host
        self.stats.busy_hosts.add(host)
        self._ledger.leased_again(leased.url)
        try:
            verdict = await run.robots.check(leased.url)
            if run.robots.found_sitemaps:  # a robots.txt just read names sitemaps (or probe mode)
                await self._queue_sitemaps(run, leased.depth)
            if verdict.deferred_until:
                # robots.txt answered 429 or could not be read yet: hand the URL back untouched and
                # let the host rest.
                back = FetchOutcome(leased.url, UrlState.UNFETCHED, time.time(),
                                    next_fetch_time=verdict.deferred_until)
                self._pending.append((back, []))
                self._ledger.retry_later(leased.url)
                return
            if verdict.failure is not None:
                failure = verdict.failure
                self._refuse(leased, failure.error_class, failure.message, run.journal, failed=True)
                return
            if not verdict.allowed:
                self._refuse(leased, "robots", "disallowed by robots.txt", run.journal)
                return
            budget = cfg.max_pages_per_host
            if budget and leased.retries == 0:  # a page counts once: at its first allowed attempt
                started = self._host_pages.get(host, 0)
                if started >= budget:
                    self._refuse(leased, "host_budget",
                                         f"host reached its budget of {budget} pages", run.journal)
                    return
                self._host_pages[host] = started + 1
            delay = cfg.delay
            if verdict.crawl_delay is not None:
                delay = max(cfg.delay, min(verdict.crawl_delay, cfg.crawl_delay_cap))
                run.frontier.set_host_delay(host, delay)
            if delay > 0:
                await self._turns.take(host, delay)
            checked: Checked | None = None
            prior = None
            if self._recrawl is None:
                headers = self._conditional_headers(leased)
            else:  # a re-crawl: the strategy's check first, perhaps instead of the GET
                prior = run.frontier.get(leased.url)
                checked = await self._recrawl.check(leased, prior, run.fetcher)
                if checked.unchanged is not None:
                    self._finish_unchanged(leased, checked, run)
                    return
                headers = checked.headers
            stops = self._stops
            result = await run.fetcher.fetch(leased.url, headers=headers, timeout=cfg.timeout,
                                             max_size=cfg.max_size, attempt=leased.retries + 1,
                                             stop=None if stops is None else stops.for_url(leased.url))
            parsed, hosts = (outlinks(result, leased.depth, self._links, run.scope, run.follow,
                                      with_text=run.on_page is not None or run.sinks is not None
                                      or self._scorer is not None or self._focus is not None,
                                      as_sitemap=leased.url in self._sitemaps,
                                      parsers=self._parsers, refine=self._refine)
                             if cfg.follow_links else (None, {}))
            # The title from the parse the links needed anyway: no page is parsed for it alone.
            decision = decide(result, leased, time.time(), self._politeness,
                              title=parsed.title if parsed else "",
                              parse_error=parsed.error if parsed else "")
            if self._schedule is not None:
                decision = scheduled(decision, self._schedule, leased)
            if checked is not None:
                decision = RecrawlCheck.recorded(decision, checked, prior)
            self.stats.bytes += decision.outcome.wire_bytes if checked else result.wire_bytes
            links = list(hosts)
            focused = None
            if self._focus is not None and parsed is not None:  # judged before the known-URL check
                focused, focus_scores = self._focus.assess(
                    CrawledPage(result, parsed, leased.depth, tuple(links)), leased.score, hosts, run.follow)
                decision = replace(decision, outcome=replace(decision.outcome, topic=focused.topic,
                                                             relevance=focused.relevance))
            known = self._known
            fresh = [url for url in links if url not in known] if focused is None or focused.follow else []
            if len(known) + len(fresh) > KNOWN_URLS:
                known.clear()
            known.update(fresh)
            # Scored before the await below: another page's parse may clear run.follow meanwhile.
            scores = None if self._scorer is None else link_scores(
                self._scorer, CrawledPage(result, parsed, leased.depth, tuple(links)), set(fresh), run.follow)
            if self._opic and links:
                scores = opic_shares(leased.score, links, fresh, scores)
            if focused is not None:
                scores = focus_scores
            await self._keys.prepare(fresh)
            depth = leased.depth + 1
            key = self._keys.key
            if self._rank is None:
                new_urls = [NewUrl(url, key(url, hosts[url]), depth, 0.0, leased.url, depth) for url in fresh]
            else:
                new_urls = ranked_urls(self._rank, scores or {}, fresh, hosts, key, depth, leased.url)
            if isinstance(parsed, SitemapPage):
                new_urls = sitemap_depths(new_urls, parsed, leased.depth)
                decision = self._sitemaps.read(parsed, decision, hosts)
            # A re-crawl stores only what changed: a 304 or the same body again adds no record;
            # hard focus stores an off-topic page only when asked to.
            if (result.status and (checked is None or decision.outcome.state != UrlState.NOT_MODIFIED)
                    and (focused is None or focused.keep)):
                run.warc.write(result, self._request_headers(headers), links, decision.outcome.signature)
            self._pending.append((decision.outcome, new_urls))
            if parsed is not None and parsed.links:
                self._pending_links.append(page_links(leased.url, parsed))
            crash_point("fetched-before-commit")  # crash tests: stored in the WARC, not yet committed
            self._ledger.account(decision, result, leased, run.frontier, run.journal)
            if (run.on_page is not None or run.sinks is not None) and result.status and decision.final \
                    and (focused is None or focused.keep):
                page = CrawledPage(result, parsed, leased.depth, tuple(links))
                if self._featurer is not None:
                    page = replace(page, features=self._featurer(page))
                if run.sinks is not None:
                    run.sinks.write(page)
                if run.on_page is not None:
                    await run.on_page(page)
        except StorageError as exc:
            # Nothing can be stored (a full disk, say): stop, leaving this URL and those in flight
            # leased, so that --resume fetches them once the cause is mended.
            self._fatal = self._fatal or exc
            self.stop(abandon=True)
        except Exception as exc:  # a bug in one page must not end the crawl: record it on the URL
            message = f"{type(exc).__name__}: {exc}"
            failed = FetchOutcome(leased.url, UrlState.GONE, time.time(), error_class="internal",
                                  error_message=message[:500])
            self._pending.append((failed, []))
            self.stats.failed += 1
            run.journal.download(leased.url, False, f"internal error: {message}")
            self._emit(Event(EventKind.GAVE_UP, time.time(), url=leased.url, host=host,
                             error_class="internal", message=message))
        finally:
            self.stats.busy_hosts.discard(host)

    async def _queue_sitemaps(self, run: _Run, depth: int) -> None:
        """Queue the sitemaps robots.txt files named (or probed ones) as links of their robots.txt,
        at the depth of the URL that had it read: normalized, in scope, fetched like any URL."""
        for url, robots in run.robots.take_sitemaps():
            found = followed_links((url,), run.scope, run.follow, max_length=self._links.max_url_length)
            await self._keys.prepare(list(found))
            for sitemap, host in found.items():
                self._sitemaps.queue(NewUrl(sitemap, self._keys.key(sitemap, host), depth, 0.0, robots,
                                            float(depth)))

    def _finish_unchanged(self, leased: LeasedUrl, checked: Checked, run: _Run) -> None:
        """Record a page a re-crawl's check found unchanged with no GET (by its size or its sitemap)."""
        assert checked.unchanged is not None
        result = checked.head or FetchResult(leased.url, leased.url)
        self.stats.bytes += result.wire_bytes
        self._pending.append((checked.unchanged, []))
        self._ledger.account(Decision(checked.unchanged), result, leased, run.frontier, run.journal)

    def _refuse(self, leased: LeasedUrl, error_class: str, reason: str, journal: RunJournal,
                *, failed: bool = False) -> None:
        """Record a URL ended unfetched: disallowed (skipped), or its robots.txt unreachable (failed)."""
        self._pending.append((self._ledger.refused(leased, error_class, reason, journal, failed=failed), []))

    async def _hop_check(self, url: str, run: _Run) -> HopVerdict:
        """Whether to follow a redirect hop to `url`: in scope, allowed by robots.txt, not yet known.

        A target the crawl database already holds is not fetched again here: the redirect is
        recorded and the target keeps its own turn (a 301 from /docs to an already fetched /docs/
        must not fetch it twice). When the hop's robots.txt cannot be had (a blocked address, a
        TLS failure), the hop fails with that error, so the URL records the real cause.
        """
        reason = run.scope.reason(url)
        if reason:
            return HopVerdict(False, reason)
        if run.frontier.get(url) is not None:
            return HopVerdict(False)
        verdict = await run.robots.check(url)
        if verdict.failure is not None:
            failure = verdict.failure
            raise error_for(failure.error_class, f"redirect to {url[:200]}: {failure.message}")
        if not verdict.allowed or verdict.deferred_until:
            return HopVerdict(False, "disallowed by robots.txt")
        return FOLLOW

    def _conditional_headers(self, leased: LeasedUrl) -> tuple[tuple[str, str], ...]:
        headers = list(self.config.extra_headers)
        if leased.etag:
            headers.append(("If-None-Match", leased.etag))
        if leased.last_modified:
            headers.append(("If-Modified-Since", leased.last_modified))
        return tuple(headers)

    def _request_headers(self, extra: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """The request headers as sent, for the WARC request record."""
        return (
            ("User-Agent", self.config.user_agent),
            ("Accept", "*/*"),
            ("Accept-Encoding", ACCEPT_ENCODING),
            *extra,
        )

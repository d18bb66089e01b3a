"""The crawl engine: lease URLs from the frontier, fetch, parse, store, report back."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harvestman.crawl.assembly import Chain, CrawlParts, PageHandler, RunPlace, assemble, page_transport
from harvestman.crawl.commit import PendingCommit, internal_error_outcome, refusal_outcome
from harvestman.crawl.ledger import EventHandler, HostTurns, RunLedger
from harvestman.crawl.metrics import CrawlMetrics
from harvestman.crawl.page_step import Fetched, PagePlan, Ticket
from harvestman.crawl.robots_gate import RobotsGate
from harvestman.crawl.seeding import store_seeds
from harvestman.crawl.sinks import NO_STAGES, PageStages, SinkContext, SinkFactory, SinkPipeline
from harvestman.crawl.stats import CrawlStats, WorkerSlot, finished_message
from harvestman.crawl.steps import HopCheck, Refusal
from harvestman.fetch.fetcher import Fetcher
from harvestman.fetch.partial import open_transport
from harvestman.fetch.transport import Transport
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError, DatabaseUnavailable, OutputClosed, StorageError
from harvestman.model.events import Event, EventKind
from harvestman.model.faults import crash_point
from harvestman.model.records import CrawledPage, LeasedUrl, UrlState, WarcPlace
from harvestman.model.sync import iterate_in_thread
from harvestman.policy.ordering import LinkScorer
from harvestman.policy.schedule import FetchSchedule
from harvestman.policy.scope import Scope
from harvestman.store.factory import open_store, store_location
from harvestman.store.frontier import Store
from harvestman.store.journal import RunJournal
from harvestman.store.warc import WarcWriter, recover

IDLE_POLL = 0.25  # longest sleep while waiting for a host to become ready
# A worker whose share is done asks this often whether the whole crawl is: a cheap read, and the
# crawl's end (and the command's exit) should not wait a whole IDLE_POLL for it.
SHARE_EMPTY_POLL = 0.05
QUEUE_SAMPLE_EVERY = 0.25  # seconds between samples of the frontier's size for the display
NO_TICKET = Ticket()


@dataclass(frozen=True, slots=True)
class _Run:
    """One run: where its pages go (`place`), its journal, and its chain of steps."""

    place: RunPlace
    journal: RunJournal
    chain: Chain


class Crawler:
    """Runs one crawl (or a download of a list) into `config.out_dir`, resumable at any moment.

    Its steps come composed (crawl/assembly.py): `parts`, or assembled here from the config with
    `sinks`, `scorer`, `schedule` and the index layer's page `stages` (plugins loaded, the focus file
    read, by the assembly). `harvestman.Crawler` is this crawler given the stages its settings ask for.
    """

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
        parts: CrawlParts | None = None,
        metrics: bool = False,
        stages: PageStages = NO_STAGES,
    ) -> None:
        if parts is None:
            parts = assemble(config, scorer=scorer, schedule=schedule, sinks=sinks, stages=stages)
        elif sinks or scorer is not None or schedule is not None or stages != NO_STAGES:
            raise ConfigError("give the crawl's sinks, scorer, schedule and stages to assemble(), or parts, "
                              "not both")
        self.config = config
        self.worker = worker  # None: this process runs the whole crawl
        self._parts = parts
        self._keys = parts.keys
        # `metrics`: collect latency, errors by class, host waits (crawl/metrics.py) into the stats.
        self.stats = CrawlStats(metrics=CrawlMetrics() if metrics else None)
        self._transport = transport
        self._frontier = frontier
        self._listeners: list[EventHandler] = [on_event] if on_event else []
        self._ledger = RunLedger(self.stats, self._listeners)  # crawl/ledger.py
        self._emit = self._ledger.emit
        self._stopping = False
        self._abandon = False
        # Why the run had to stop, raised when it has.
        self._fatal: StorageError | DatabaseUnavailable | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._commit = PendingCommit()  # crawl/commit.py: what the next transaction commits
        self._wake = asyncio.Event()
        self._turns = HostTurns(self.stats.metrics.waited if self.stats.metrics is not None else None)
        self._rendering: Transport | None = None  # the browser's transport, when pages are rendered

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
        frontier = self._frontier or self.open_frontier()
        journal = RunJournal(out, sys.stdout if cfg.log_json else None, on_closed=self.stop)
        self._listeners.insert(0, journal.event)
        transport = self._transport or open_transport(cfg.fetch)
        try:
            if self.worker is None:
                seeds = await self._prepare(frontier, journal)
                recover(out / "warc")
            else:  # the parent prepared the run: seeds stored, leases released, WARC files recovered
                seeds = (frontier.get_meta("seeds") or "").split("\n")
            await self._run_chain(out, seeds, frontier, journal, transport, on_page)
        finally:
            try:
                self._flush(frontier, journal, time.time())
                self._emit(Event(EventKind.CRAWL_FINISHED, time.time(), bytes=self.stats.bytes,
                                 message=finished_message(self.stats, cfg.max_wait)))
            finally:
                if self._transport is None:
                    await transport.aclose()
                if self._frontier is None:
                    frontier.close()
                journal.close()
                self._listeners.remove(journal.event)
        if self._fatal is not None:
            raise self._fatal
        if journal.output_closed:
            raise OutputClosed(f"standard output was closed: the crawl stopped ({cfg.out_dir}; --resume "
                               "continues it)")
        return self.stats

    async def _run_chain(self, out: Path, seeds: list[str], frontier: Store, journal: RunJournal,
                         transport: Transport, on_page: PageHandler | None) -> None:
        """Open the run's WARC writer and sinks, bind the chain of steps to them, and crawl."""
        cfg, worker = self.config, self.worker
        prefix = "harvestman" if worker is None else f"harvestman-w{worker.index}"
        warc = WarcWriter(out / "warc", max_bytes=cfg.warc_max_bytes, prefix=prefix)
        sinks: SinkPipeline | None = None
        try:
            if self._parts.sink_factories:
                where = SinkContext(out, worker.index, worker.count) if worker else SinkContext(out)
                sinks = SinkPipeline(self._parts.sink_factories, where)
            scope = Scope(seeds, cfg.scope, cfg.include, cfg.exclude)
            robots = RobotsGate(
                transport, cfg.robots, cfg.fetch, cfg.politeness,
                on_defer=lambda host, until, why: self._ledger.pause(frontier, host, until, why),
                host_key=self._keys.key, sitemaps=cfg.links.sitemaps if cfg.follow_links else "off",
            )
            # The browser's transport, when pages are rendered (closed with the run).
            self._rendering = page_transport(cfg, transport, robots, self._turns, self._keys)
            hops = HopCheck(robots.check, scope, frontier.get)
            fetcher = Fetcher(self._rendering or transport, max_redirects=cfg.max_redirects, hop_check=hops)
            place = RunPlace(frontier, robots, scope, fetcher, warc, sinks, on_page, self._turns,
                             self._commit.sitemaps)
            run = _Run(place, journal, self._parts.chain(place))
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
            ordered=self._parts.lease_order != "bfs",
            outage_limit=cfg.db_outage_limit,
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
        frontier = run.place.frontier
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
            if self._parts.lease_cap is not None and budget > 0:  # a focused crawl: lease where it chooses
                budget = self._parts.lease_cap(budget, self.stats.queued, len(tasks))
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
        if self._parts.schedule is not None:  # all that waits but the unfetched waits for a re-visit
            self.stats.deferred_revisits = self.stats.deferred - frontier.counts()[UrlState.UNFETCHED]
        self.stats.deferred_until = ready
        return True

    def _flush(self, frontier: Store, journal: RunJournal, now: float, *, lease: int = 0) -> list[LeasedUrl]:
        """Commit finished fetches with their outlinks and lease up to `lease` URLs, in one transaction."""
        return self._commit.flush(frontier, journal, now, lease=lease)

    async def _process(self, leased: LeasedUrl, run: _Run) -> None:
        """Take one leased URL through the chain and queue its outcome; never raises (a failure is
        recorded on the URL)."""
        host = leased.host
        self.stats.host_busy(host)
        self._ledger.leased_again(leased.url)
        chain, cfg = run.chain, self.config
        try:
            ticket = NO_TICKET
            for gate in chain.gates:
                passed = await gate(leased, ticket)
                if not isinstance(passed, Ticket):
                    if isinstance(passed, Refusal):
                        self._commit.add(refusal_outcome(self._ledger, leased, passed, run.journal))
                    else:  # answered with no fetch (a re-crawl's unchanged page): settled as a fetch is
                        self._settle(passed.page, passed.plan, run)
                    return
                ticket = passed
            if self.stats.metrics is not None:
                self.stats.metrics.starting(host, time.monotonic())
            result = await run.place.fetcher.fetch(leased.url, headers=ticket.headers, timeout=cfg.timeout,
                                                   max_size=cfg.max_size, attempt=leased.retries + 1,
                                                   stop=ticket.stop)
            page = chain.parse(leased, result, ticket)
            # "ip" host keys: the new links' hosts resolved before their NewUrls are keyed.
            await self._keys.prepare(page.hosts)
            plan = chain.page.plan(page, self._commit.known, time.time())
            stored = self._settle(page, plan, run)
            if plan.deliver and chain.delivers:
                await self._deliver(page, chain, stored)
        except (StorageError, DatabaseUnavailable) as exc:
            # Nothing can be stored (a full disk, the crawl database away too long, say): stop,
            # leaving this URL and those in flight leased, so that --resume fetches them once the
            # cause is mended.
            self._fatal = self._fatal or exc
            self.stop(abandon=True)
        except Exception as exc:  # a bug in one page must not end the crawl: record it on the URL
            self._commit.add(internal_error_outcome(self._ledger, leased, exc, run.journal))
        finally:
            self.stats.host_done(host)

    def _settle(self, page: Fetched, plan: PagePlan, run: _Run) -> WarcPlace | None:
        """Do what the page step planned: count, store, queue for the commit, account; where the
        response record went, if it was stored."""
        self.stats.bytes += plan.wire_bytes
        stored = None
        for effect in run.chain.effects:
            stored = effect(page, plan) or stored
        self._commit.add_plan(plan)
        crash_point("fetched-before-commit")  # crash tests: stored in the WARC, not yet committed
        self._ledger.account(plan.decision, page.result, page.leased, run.place.frontier, run.journal)
        return stored

    async def _deliver(self, fetched: Fetched, chain: Chain, stored: WarcPlace | None) -> None:
        """Hand a kept page to the features and sinks, in order, then to the run's on_page."""
        page = fetched.page(stored)
        for step in chain.deliver:
            page = step(page)
        if chain.on_page is not None:
            await chain.on_page(page)
        if page.tree is not None:
            page.tree.release()  # the steps that share it are done: a kept page keeps no tree

"""Run one crawl in several worker processes (one per core by default) sharing its crawl database.

The parent forks the workers, holds the database's lock and prepares the run (seeds, resume, WARC
recovery), then lets them go; each worker crawls its share of the hosts (see SqliteStore) with its
own connection pool, parser and WARC file. Python parses and compresses on one core per process, so
this is how a crawl uses every core. The result (pages and states) is the one a single process
reaches: the seen check and every state change are the database's, and a host is only ever fetched
by one worker.

Signals: the parent relays a first SIGINT/SIGTERM as "stop after the fetches in flight" (SIGTERM to
the workers) and a second as "abandon them" (SIGUSR1); workers ignore the terminal's own SIGINT so a
Ctrl-C counts once. Workers die with the parent (PR_SET_PDEATHSIG), so a killed crawl leaves no
process behind and resumes like a killed single-process crawl.

Events and pages: only when the parent listens (an `on_event` or `on_page` given to the pool) does
each worker send them, in batches over a pipe of its own, and the parent hands them on in the order
each worker sent them. A pipe is a few pages deep: a parent slower than its workers blocks their
sends (back-pressure, as a slow `on_page` slows a one-process crawl), so memory stays bounded. The
workers' own CRAWL_STARTED and CRAWL_FINISHED are not sent; the parent reports one of each for the
run, as one process does. Without a listener nothing is sent: the counters alone feed the display.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import gc
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from harvestman.crawl.assembly import assemble
from harvestman.crawl.engine import Crawler
from harvestman.crawl.ledger import EventHandler
from harvestman.crawl.sinks import SinkFactory
from harvestman.crawl.stats import CrawlCounts, CrawlStats, WorkerSlot, finished_message
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import DatabaseUnavailable, HarvestmanError, OutputClosed
from harvestman.model.events import Event, EventKind
from harvestman.model.records import CrawledPage
from harvestman.policy.ordering import LinkScorer
from harvestman.policy.schedule import FetchSchedule
from harvestman.store.frontier import Store
from harvestman.store.warc import recover

REPORT_EVERY = 0.3  # seconds between a worker's counter reports
REPORT_POLL = 0.05  # seconds between the parent's looks at the reports
IDLE_WAIT = 0.5  # seconds between a waiting worker's checks that its parent lives
STOP_GRACE = 30.0  # seconds workers get to finish after a worker failed, before they are killed
_PR_SET_PDEATHSIG = 1
GC_THRESHOLD = 20_000  # allocations between collections of the youngest generation (default 700)
HEAP_TOP_PAD = 4 * 1024 * 1024  # bytes of heap glibc keeps beyond what is in use
_M_TOP_PAD = -2  # mallopt parameter, <malloc.h>
FORWARD_EVERY = 0.05  # seconds a forwarded event or page waits at most in a worker's batch
FORWARD_BATCH = 64  # items a batch holds at most (one pickle and one pipe write a batch) ...
FORWARD_BATCH_BYTES = 1 << 20  # ... and body bytes: a batch of big pages is sent sooner
_RUN_EVENTS = (EventKind.CRAWL_STARTED, EventKind.CRAWL_FINISHED)  # the parent reports these


def tune_for_crawling() -> None:
    """Tune the memory management of a crawling process (the CLI's and each worker's).

    A page makes hundreds of short-lived objects and a few big buffers (its body, text, WARC
    records). The cyclic garbage collector ran every 700 allocations, walking the imported modules'
    objects too at each older-generation pass: frozen at start-up and run every 20,000 allocations,
    collections of a one-worker crawl of 6,030 pages took 9-16 ms instead of 62-83 ms (~1.5 % of its
    CPU; gc.callbacks). Nearly everything is freed by reference counting, so memory holds.
    glibc gave the top of its heap back to the kernel after almost every page and faulted it in
    again for the next (3 brk calls a page, strace): keeping 4 MiB spare (M_TOP_PAD) took the same
    crawl from 0.64 to 0.56 ms of CPU a page (medians of 5 alternating runs).
    """
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)
    with contextlib.suppress(OSError, AttributeError):  # glibc only
        ctypes.CDLL(None).mallopt(_M_TOP_PAD, HEAP_TOP_PAD)


def worker_count(cfg: CrawlConfig) -> int:
    """How many processes a crawl runs: `cfg.workers`, or one per usable core when that is 0.

    A `--max-pages` crawl runs in one process, where the limit is exact.
    """
    if cfg.max_pages:
        return 1
    if cfg.workers:
        return cfg.workers
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """A worker's counters, sent to the parent a few times a second and once at its end."""

    index: int
    counts: CrawlCounts
    finished: bool = False
    error: str = ""  # why the worker could not go on (a full disk, say)
    output_closed: bool = False  # it stopped because standard output was closed (`--log-json | head`)
    database_lost: bool = False  # it stopped because the crawl database was away too long


def _report(index: int, stats: CrawlStats, *, finished: bool = False, error: str = "",
            output_closed: bool = False, database_lost: bool = False) -> WorkerReport:
    return WorkerReport(index, stats.snapshot(), finished, error, output_closed, database_lost)


class _Outbox:
    """A worker's events and pages for its parent, sent in batches over a pipe (a full one blocks)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._items: list[Event | CrawledPage] = []
        self._bytes = 0

    def event(self, event: Event) -> None:
        """Queue one event (the engine's listener)."""
        if event.kind in _RUN_EVENTS:
            return
        self._items.append(event)
        if len(self._items) >= FORWARD_BATCH:
            self.send()

    async def page(self, page: CrawledPage) -> None:
        """Queue one page (the engine's page handler)."""
        self._items.append(page)
        self._bytes += len(page.result.body)
        if len(self._items) >= FORWARD_BATCH or self._bytes >= FORWARD_BATCH_BYTES:
            self.send()

    def send(self) -> None:
        """Send what is queued."""
        if self._items:
            batch, self._items, self._bytes = self._items, [], 0
            self._conn.send(batch)


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):  # Linux only; elsewhere the pipe check below
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Policies:
    """The Python policies a crawl runs with, handed to every worker: inherited by a forked worker,
    pickled for a spawned one (then they must be module-level functions or classes)."""

    scorer: LinkScorer | None = None
    schedule: FetchSchedule | None = None


NO_POLICIES = Policies()


def _worker_main(cfg: CrawlConfig, slot: WorkerSlot, reports: Any, parent_pid: int, go: Any,
                 sinks: Sequence[SinkFactory] = (), forward: Connection | None = None,
                 events: bool = False, pages: bool = False, policies: Policies = NO_POLICIES,
                 metrics: bool = False) -> None:
    """A worker process: once the parent has prepared the run, crawl this slot's share, reporting
    counters (with its `metrics`, if asked; and over `forward` its `events` and `pages`, as asked)
    to the parent."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what a Ctrl-C means
    # Until the crawl starts there is nothing to finish or to drop: a stop ends the worker.
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(sig, lambda _sig, _frame: os._exit(0))
    while not go.acquire(timeout=IDLE_WAIT):
        if os.getppid() != parent_pid:  # the parent died (perhaps before the death signal was armed)
            return
    tune_for_crawling()
    outbox = _Outbox(forward) if forward is not None else None
    crawler = Crawler(cfg, worker=slot, sinks=sinks, on_event=outbox.event if outbox and events else None,
                      scorer=policies.scorer, schedule=policies.schedule, metrics=metrics)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, crawler.stop)
        loop.add_signal_handler(signal.SIGUSR1, lambda: crawler.stop(abandon=True))

        async def report() -> None:
            while True:
                await asyncio.sleep(REPORT_EVERY)
                if os.getppid() != parent_pid:
                    crawler.stop(abandon=True)
                reports.put(_report(slot.index, crawler.stats))

        async def forward_now_and_then(outbox: _Outbox) -> None:
            while True:
                await asyncio.sleep(FORWARD_EVERY)
                outbox.send()

        tasks = [asyncio.create_task(report())]
        if outbox is not None:
            tasks.append(asyncio.create_task(forward_now_and_then(outbox)))
        try:
            await crawler.run(on_page=outbox.page if outbox and pages else None)
        finally:
            for task in tasks:
                task.cancel()

    error = ""
    closed = lost = False
    try:
        asyncio.run(main())
    except OutputClosed:
        closed = True
    except HarvestmanError as exc:
        error = str(exc)
        lost = isinstance(exc, DatabaseUnavailable)
    finally:
        if outbox is not None:
            with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
                outbox.send()
    reports.put(_report(slot.index, crawler.stats, finished=True, error=error, output_closed=closed,
                        database_lost=lost))


PageCallback = Callable[[CrawledPage], None]


class WorkerPool:
    """Runs a prepared crawl in `count` worker processes and sums their counters (and `metrics`,
    when they collect them) into `stats`.

    `on_event` and `on_page` get the workers' events and pages (see the module's docstring), called
    on the thread that runs `wait()`; `sinks` are built in each worker.
    """

    def __init__(self, cfg: CrawlConfig, count: int, stats: CrawlStats, *,
                 on_event: EventHandler | None = None, on_page: PageCallback | None = None,
                 sinks: Sequence[SinkFactory] = (), join: bool = False,
                 policies: Policies = NO_POLICIES, metrics: bool = False) -> None:
        self.cfg = cfg
        self.metrics = metrics  # the workers collect metrics (crawl/metrics.py), summed into `stats`
        self.policies = policies
        self.count = count
        self.join = join  # join a crawl started elsewhere: its seeds and leases are not touched
        self.stats = stats
        self._on_event = on_event
        self._on_page = on_page
        self._sinks = tuple(sinks)
        self._procs: list[BaseProcess] = []
        self._reports: Any = None
        self._frontier: Store | None = None
        self._go: Any = None
        self._inbox: list[Connection] = []  # the workers' pipes of events and pages, while open
        self._early: list[Event] = []  # events of the run's preparation, handed on by wait()
        self._relayed: set[int] = set()  # exit codes of the stop signals sent to the workers

    def stop(self, *, abandon: bool = False) -> None:
        """Relay a stop to the workers: finish the fetches in flight, or (`abandon`) drop them."""
        sig = signal.SIGUSR1 if abandon else signal.SIGTERM
        self._relayed.add(-sig)
        for proc in self._procs:
            if proc.pid is not None and proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, sig)

    def start(self) -> None:
        """Start the workers, prepare the run, then let them crawl.

        The workers are forked first (no import to repeat, ~0.2 s a crawl sooner), while the parent
        holds no database connection (SQLite's must not cross a fork); they wait for the parent to
        have prepared the run (seeds, resume, WARC recovery).
        """
        cfg = self.cfg
        share = max(cfg.per_host, cfg.concurrency // self.count)
        worker_cfg = dataclasses.replace(cfg, concurrency=share)
        # A fork copies only the calling thread, and a lock another thread held stays held in the
        # child: with threads running (the demo's web servers), or off Linux, a fresh interpreter.
        forkable = sys.platform == "linux" and threading.active_count() == 1
        method = "fork" if forkable else "spawn"
        context: Any = multiprocessing.get_context(method)
        self._reports = context.Queue()
        # Released once a worker when the run is prepared. Not an Event: setting one waits for every
        # waiter to wake, and a worker stopped while it waits never does.
        go = self._go = context.Semaphore(0)  # kept: a spawned worker may unpickle it late
        listening = self._on_event is not None or self._on_page is not None
        self._fork(context, worker_cfg, go, listening)
        try:
            parts = assemble(cfg, scorer=self.policies.scorer, schedule=self.policies.schedule)
            # Held open: its lock keeps other crawls out.
            self._frontier = Crawler(cfg, parts=parts).open_frontier()
            early = self._early.append if listening else None
            if self.join:
                recover(Path(cfg.out_dir) / "warc")  # this machine's own files, from a run killed before
            else:
                asyncio.run(Crawler(cfg, frontier=self._frontier, on_event=early, parts=parts).prepare())
            if listening:
                seeds = (self._frontier.get_meta("seeds") or "").split("\n")
                self._early.append(Event(EventKind.CRAWL_STARTED, time.time(), message=" ".join(seeds)))
        except BaseException:
            for proc in self._procs:
                proc.kill()
                proc.join()
            if self._frontier is not None:
                self._frontier.close()
            for reader in self._inbox:
                reader.close()
            raise
        for _ in self._procs:
            go.release()

    def _fork(self, context: Any, worker_cfg: CrawlConfig, go: Any, listening: bool) -> None:
        """Start the worker processes (each waits for `go`), with a pipe each when someone listens."""
        pages = self._on_page is not None
        self._procs = []
        for i in range(self.count):
            writer: Connection | None = None
            if listening:
                reader, writer = context.Pipe(duplex=False)
                self._inbox.append(reader)
            proc = context.Process(target=_worker_main, name=f"harvestman-worker-{i}",
                                   args=(worker_cfg, WorkerSlot(i, self.count), self._reports, os.getpid(),
                                         go, self._sinks, writer, self._on_event is not None, pages,
                                         self.policies, self.metrics))
            self._procs.append(proc)
            proc.start()
            if writer is not None:
                # The worker holds it now. Closed here before the next fork, so that only its own
                # worker holds a pipe's sending end, and that worker's exit reads as its end.
                writer.close()

    def wait(self) -> None:
        """Wait for the workers, summing their counters; raise if one failed or died."""
        assert self._frontier is not None, "start() first"
        try:
            for event in self._early:
                self._hand_on(event)
            self._early = []
            self._wait(self._reports, self._frontier.pending)
        except BaseException as exc:
            # A listener raised, say: the workers must not crawl on unwatched (those that ended
            # already, after a worker failed, are only joined).
            self._end_workers()
            if isinstance(exc, HarvestmanError):  # the run ended, badly: its end is reported
                self._report_end()
            raise
        else:
            self._report_end()
        finally:
            self._frontier.close()
            for reader in self._inbox:
                reader.close()

    def _report_end(self) -> None:
        if self._on_event is not None:
            self._on_event(Event(EventKind.CRAWL_FINISHED, time.time(), bytes=self.stats.bytes,
                                 message=finished_message(self.stats, self.cfg.max_wait)))

    def _end_workers(self) -> None:
        """Stop the workers for good: abandon their fetches, kill those that do not end in time."""
        for reader in self._inbox:  # a worker blocked sending to the parent gets an error instead
            reader.close()
        self._inbox = []
        self.stop(abandon=True)
        deadline = time.monotonic() + STOP_GRACE
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.exitcode is None:
                proc.kill()
                proc.join()

    def _hand_on(self, item: Event | CrawledPage) -> None:
        if isinstance(item, Event):
            if self._on_event is not None:
                self._on_event(item)
        elif self._on_page is not None:
            self._on_page(item)

    def _receive(self, ready: list[Any]) -> None:
        """Hand on a batch from each worker pipe that has one; forget pipes whose worker ended."""
        for reader in ready:
            if reader not in self._inbox:
                continue
            try:
                batch: list[Event | CrawledPage] = reader.recv()
            except (EOFError, OSError):
                self._inbox.remove(reader)
                reader.close()
                continue
            for item in batch:
                self._hand_on(item)

    def _wait(self, reports: Any, pending: Callable[[], int]) -> None:
        cfg = self.cfg
        latest: dict[int, WorkerReport] = {}
        errors: list[str] = []
        lost = False  # a worker ended because the crawl database was away too long
        closed = False  # a worker's standard output was closed: the others stop too, and the run ends so
        sampled = 0.0
        failed_at: float | None = None
        while any(proc.is_alive() for proc in self._procs) or not reports.empty() or self._inbox:
            # A worker's exit wakes the parent at once (the crawl's end should not wait for a poll).
            running = [proc.sentinel for proc in self._procs if proc.exitcode is None]
            ready = multiprocessing.connection.wait([*running, *self._inbox], REPORT_POLL)
            if self._inbox:
                self._receive(ready)
            with contextlib.suppress(queue.Empty):
                while True:
                    report: WorkerReport = reports.get_nowait()
                    latest[report.index] = report
                    if report.error:
                        errors.append(f"worker {report.index}: {report.error}")
                        lost = lost or report.database_lost
                    if report.output_closed and not closed:
                        closed = True
                        self.stop()
            for i, proc in enumerate(self._procs):
                code = proc.exitcode
                said = any(e.startswith((f"worker {i}:", f"worker {i} ")) for e in errors)
                # A worker killed by a stop the parent relayed got it before it could handle it (a
                # spawned worker still starting, say): it has crawled nothing, and the run was to end.
                stopped = code in self._relayed
                if code not in (None, 0) and not said and not stopped:  # said once, not at every turn
                    errors.append(f"worker {i} ended with {_describe_exit(code)}")
            if errors and failed_at is None:
                failed_at = time.monotonic()
                self.stop(abandon=True)  # the others stop too: the run is resumable as it stands
            if failed_at is not None and time.monotonic() - failed_at > STOP_GRACE:
                for proc in self._procs:
                    proc.kill()
            if time.monotonic() - sampled > 0.25:
                sampled = time.monotonic()
                self._sum(latest.values(), pending())
        for proc in self._procs:
            proc.join()
        self._sum(latest.values(), 0)
        if errors:
            failed = DatabaseUnavailable if lost else HarvestmanError
            raise failed("; ".join(errors) + f" (the crawl stopped; --resume continues it: {cfg.out_dir})")
        if closed:
            raise OutputClosed(f"standard output was closed: the crawl stopped ({cfg.out_dir}; --resume "
                               "continues it)")

    def _sum(self, reports: Iterable[WorkerReport], queued: int) -> None:
        self.stats.show(CrawlCounts.total((r.counts for r in reports), queued))


def _describe_exit(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"exit status {code}"

"""A crawl job: one run started in the background, stopped, watched and waited for.

What the command line does with a crawl, for any caller (the CLI, a REST server running several):
the job runs the crawl in one process or in a `WorkerPool` (`worker_count` decides, as it always
has), on a thread of its own, and reports a frozen `JobStatus` and a stream of events.

Listeners are fixed when the job starts: an `on_event` or `on_page` callback, or an event stream
opened before `start()`. Without one, nothing is forwarded from worker processes (the counters
alone feed a progress display); with one, the workers' events and pages reach this process too.
Callbacks run on the job's thread (events of the run's preparation with worker processes: on the
thread that calls `start()`); a slow one slows the crawl, as it does in one process, and one that
raises ends the run (fetches in flight abandoned, resumable) and fails the job with its error.
"""

from __future__ import annotations

import asyncio
import enum
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from harvestman.crawl.engine import Crawler
from harvestman.crawl.sinks import SinkFactory
from harvestman.crawl.stats import CrawlCounts, CrawlStats
from harvestman.crawl.workers import (
    NO_POLICIES,
    PageCallback,
    Policies,
    WorkerPool,
    tune_for_crawling,
    worker_count,
)
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.events import Event
from harvestman.model.records import CrawledPage, RunVerdict

T = TypeVar("T")
STREAM_SIZE = 4096  # events an event stream holds by default before it drops the oldest


class JobState(enum.Enum):
    """Where a job is in its life."""

    READY = "ready"  # made, not started
    RUNNING = "running"
    STOPPING = "stopping"  # asked to stop; finishing (or abandoning) the fetches in flight
    FINISHED = "finished"  # the run ended (done, or stopped): resumable with --resume if stopped
    FAILED = "failed"  # the run could not go on (see `error`); resumable once the cause is mended


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A snapshot of a job: its state, the run's counters, and once it ended, its verdict."""

    state: JobState
    processes: int  # processes crawling: 1, or the worker processes'
    counts: CrawlCounts  # the run's counters (crawl/stats.py)
    error: str = ""  # why the job failed
    verdict: RunVerdict | None = None  # the exit status and its explanation, once FINISHED


class EventStream:
    """One consumer's copy of a job's events, iterable from any thread (`for`) or event loop
    (`async for`); the iteration ends after the job's last event.

    It holds at most `maxsize` events: when it is full, the oldest is dropped and counted in
    `dropped`, so a slow consumer costs bounded memory and never slows the crawl, and the newest
    events (the run's CRAWL_FINISHED last of all) are always there to read.
    """

    def __init__(self, maxsize: int = STREAM_SIZE) -> None:
        if maxsize < 1:
            raise ConfigError(f"an event stream holds at least 1 event, not {maxsize}")
        self.maxsize = maxsize
        self.dropped = 0
        self._items: deque[Event] = deque()
        self._closed = False
        self._cond = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def put(self, event: Event) -> None:
        """Add an event (the job's side)."""
        with self._cond:
            if len(self._items) >= self.maxsize:
                self._items.popleft()
                self.dropped += 1
            self._items.append(event)
            self._wake()

    def close(self) -> None:
        """Say that no event will follow (the job's side)."""
        with self._cond:
            self._closed = True
            self._wake()

    def _wake(self) -> None:
        self._cond.notify_all()
        for loop, waiter in self._waiters:
            loop.call_soon_threadsafe(_resolve, waiter)
        self._waiters = []

    def get(self, timeout: float | None = None) -> Event | None:
        """The next event, waiting for it; None once the job has ended and every event was read.

        Raises TimeoutError when `timeout` seconds pass without one.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self._items or self._closed, timeout):
                raise TimeoutError("no event yet")
            return self._items.popleft() if self._items else None

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> Event:
        event = self.get()
        if event is None:
            raise StopIteration
        return event

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        while True:
            with self._cond:
                if self._items:
                    return self._items.popleft()
                if self._closed:
                    raise StopAsyncIteration
                loop = asyncio.get_running_loop()
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, waiter))
            await waiter


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class CrawlJob:
    """One crawl run in the background: `start`, `stop`, `status`, `events`, `wait`, `result`.

    `sinks` are built in every crawling process (see harvestman.crawl.sinks); `verdict` reads the
    finished crawl folder into the run's verdict (the CLI passes `launch.seeds.run_verdict`).
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        on_event: Callable[[Event], None] | None = None,
        on_page: PageCallback | None = None,
        sinks: Sequence[SinkFactory] = (),
        verdict: Callable[[Path], RunVerdict] | None = None,
        join: bool = False,
        policies: Policies = NO_POLICIES,
        metrics: bool = False,
    ) -> None:
        self.config = config
        self.metrics = metrics  # collect latency, errors by class ... (crawl/metrics.py) in every process
        self.processes = worker_count(config)
        self.join = join  # join a crawl started elsewhere (`harvestman worker`): always worker processes
        self.policies = policies  # a link scorer and a fetch schedule, for every crawling process
        self._on_event = on_event
        self._on_page = on_page
        self._sinks = tuple(sinks)
        self._judge = verdict
        self._streams: list[EventStream] = []
        self._state = JobState.READY
        self._error: BaseException | None = None
        self._verdict: RunVerdict | None = None
        self._stats = CrawlStats()
        self._stop: Callable[..., None] | None = None
        self._stop_asked: bool | None = None  # a stop asked before start(): abandon or not
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stats(self) -> CrawlStats:
        """The run's live counters (what a progress display reads)."""
        return self._stats

    def events(self, maxsize: int = STREAM_SIZE) -> EventStream:
        """A new stream of this job's events, opened before `start()` (it counts as a listener)."""
        with self._lock:
            if self._state is not JobState.READY:
                raise ConfigError("open an event stream before the job starts")
            stream = EventStream(maxsize)
            self._streams.append(stream)
            return stream

    def start(self) -> None:
        """Start the run in the background; its failure, if any, is the job's (see `result`)."""
        with self._lock:
            if self._state is not JobState.READY:
                raise ConfigError("a job starts once")
            self._state = JobState.RUNNING
        try:
            body = self._prepare()
        except BaseException as exc:
            self._end(exc)
            return
        with self._lock:  # a stop asked while the run was being set up
            asked = self._stop_asked
            if asked is not None:
                self._state = JobState.STOPPING
        if asked is not None and self._stop is not None:
            self._stop(abandon=asked)
        self._thread = threading.Thread(target=self._run, args=(body,), name="harvestman-job")
        self._thread.start()

    def _prepare(self) -> Callable[[], None]:
        """Set up the run (with worker processes: fork them and prepare the crawl); what runs it."""
        cfg = self.config
        listening = self._on_event is not None or bool(self._streams)
        on_event = self._dispatch if listening else None
        tune_for_crawling()
        if self.processes > 1 or self.join:
            pool = WorkerPool(cfg, self.processes, self._stats, on_event=on_event, on_page=self._on_page,
                              sinks=self._sinks, join=self.join, policies=self.policies,
                              metrics=self.metrics)
            self._stop = pool.stop
            pool.start()  # here, before this job's thread exists: the workers are forked
            return pool.wait
        # A callback that raises ends the run and fails the job, as with worker processes (the
        # engine alone would record the error on the page's URL and go on).
        broken: list[BaseException] = []

        def guarded(callback: Callable[[T], None]) -> Callable[[T], None]:
            def call(item: T) -> None:
                if broken:
                    return
                try:
                    callback(item)
                except Exception as exc:
                    broken.append(exc)
                    crawler.stop(abandon=True)
            return call

        crawler = Crawler(cfg, on_event=guarded(on_event) if on_event else None, sinks=self._sinks,
                          scorer=self.policies.scorer, schedule=self.policies.schedule,
                          stages=self.policies.stages, metrics=self.metrics)
        self._stats = crawler.stats
        self._stop = crawler.stop
        on_page = guarded(self._on_page) if self._on_page else None

        async def handler(page: CrawledPage) -> None:
            assert on_page is not None
            on_page(page)

        def body() -> None:
            asyncio.run(crawler.run(on_page=handler if on_page is not None else None))
            if broken:
                raise broken[0]

        return body

    def stop(self, *, abandon: bool = False) -> None:
        """Ask the run to finish the fetches in flight, or (`abandon`) to drop them; thread-safe."""
        with self._lock:
            if self._state is JobState.RUNNING:
                self._state = JobState.STOPPING
            stop = self._stop
            if stop is None:  # not started, or being set up: start() passes it on
                self._stop_asked = abandon or bool(self._stop_asked)
        if stop is not None:
            stop(abandon=abandon)

    def status(self) -> JobStatus:
        """A snapshot of the job now."""
        return JobStatus(self._state, self.processes, self._stats.snapshot(),
                         error=str(self._error) if self._error else "", verdict=self._verdict)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run to end (at most `timeout` seconds); whether it has."""
        if self._state is JobState.READY:
            raise ConfigError("the job has not been started")
        return self._done.wait(timeout)

    def result(self) -> JobStatus:
        """Wait for the run to end; its final status, or the error that ended it, raised."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self.status()

    # ----- the job's thread ------------------------------------------------------------------

    def _run(self, body: Callable[[], None]) -> None:
        try:
            body()
            if self._judge is not None:
                self._verdict = self._judge(Path(self.config.out_dir))
        except BaseException as exc:  # the job's failure, handed to whoever asks for the result
            self._end(exc)
            return
        self._end(None)

    def _end(self, error: BaseException | None) -> None:
        with self._lock:
            self._error = error
            self._state = JobState.FAILED if error is not None else JobState.FINISHED
        for stream in self._streams:
            stream.close()
        self._done.set()

    def _dispatch(self, event: Event) -> None:
        if self._on_event is not None:
            self._on_event(event)
        for stream in self._streams:
            stream.put(event)

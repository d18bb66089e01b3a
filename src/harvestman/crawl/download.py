"""`download()`: fetch a list of URLs in parallel, with retries, yielding each result as it completes.

As polite as the crawler: each origin's robots.txt is read first (one RobotsGate per call) and
obeyed for every URL and every redirect hop, its Crawl-delay spaces the fetches of the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harvestman.crawl.assembly import page_transport
from harvestman.crawl.ledger import HostTurns
from harvestman.crawl.robots_gate import RobotsFailure, RobotsGate, RobotsVerdict
from harvestman.crawl.steps import HopCheck, crawl_delay
from harvestman.fetch.fetcher import Fetcher
from harvestman.fetch.partial import StopPlan, open_transport
from harvestman.fetch.transport import Transport
from harvestman.model.config import CrawlConfig, PolitenessSettings, flat_settings, merge_settings
from harvestman.model.errors import ConfigError, UnsupportedUrlError
from harvestman.model.records import FetchResult
from harvestman.model.settings import SETTING, applies_to
from harvestman.model.sync import iterate_in_thread
from harvestman.net.hostkeys import HostKeys
from harvestman.net.urls import host_of, resolve
from harvestman.policy.politeness import RetryVerdict, retry_verdict
from harvestman.store.journal import RunJournal

WINDOW_PER_SLOT = 8  # URLs in progress (fetching or waiting their turn) per concurrent fetch
DOWNLOAD_BACKOFF_BASE = 0.5  # seconds; a list download retries sooner than a crawl would
DOWNLOAD_BACKOFF_CAP = 30.0
ALLOWED = RobotsVerdict(True)
# The settings download() takes, each of which takes effect: those declared for `list`
# (model/settings.py): every fetch and rendering setting, and those of politeness, robots.txt and
# the run that act on one fetch. The others are a crawl's (links, storage, processes, ...): refused,
# not silently ignored.
DOWNLOAD_SETTINGS = applies_to("list")


class Download:
    """The results of one `download()` call: iterate with `for` or `async for`."""

    def __init__(
        self, urls: Iterable[str], config: CrawlConfig, transport: Transport | None, log_dir: Path | None
    ) -> None:
        self._urls = urls  # read lazily: a list of millions is never copied, a generator works
        self._config = config
        self._transport = transport
        self._log_dir = log_dir

    def __iter__(self) -> Iterator[FetchResult]:
        return iterate_in_thread(self._run)

    def __aiter__(self) -> AsyncIterator[FetchResult]:
        return self._run()

    async def _run(self) -> AsyncGenerator[FetchResult, None]:
        transport = self._transport or open_transport(self._config.fetch)
        journal = RunJournal(self._log_dir, events=False) if self._log_dir else None
        fetching = _ListFetch(self._config, transport)
        done: asyncio.Queue[FetchResult] = asyncio.Queue()

        async def one(url: str) -> None:
            result = await fetching.result(url)
            if journal is not None:
                journal.download(url, result.ok, result.error_message or f"HTTP {result.status}")
                journal.flush()  # the log is a list download's only record of each URL
            await done.put(result)

        # A bounded window of tasks, refilled as results come: memory follows the concurrency, not
        # the length of the list.
        urls = iter(self._urls)
        window = self._config.run.concurrency * WINDOW_PER_SLOT
        tasks: set[asyncio.Task[None]] = set()
        started = yielded = 0

        def refill() -> None:
            nonlocal started
            while started - yielded < window:  # URLs whose result has not been handed out yet
                url = next(urls, None)
                if url is None:
                    return
                task = asyncio.create_task(one(url))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                started += 1

        try:
            refill()
            while yielded < started:
                result = await done.get()
                yielded += 1
                refill()
                yield result
        finally:
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await fetching.aclose()
            if self._transport is None:
                await transport.aclose()
            if journal is not None:
                journal.close()


class _ListFetch:
    """How one `download()` call fetches a URL: robots.txt first (a deferral waited out), redirect
    hops checked as the crawl checks them (crawl/steps.py HopCheck), the host's slots and delay,
    where a fetch may stop, rendering, and retries."""

    def __init__(self, cfg: CrawlConfig, transport: Transport) -> None:
        self._fetch, self._polite, self._obey = cfg.fetch, cfg.politeness, cfg.robots.obey_robots
        self._deferrals: dict[str, str] = {}  # origin + "/" -> why robots.txt last deferred it
        self._gate = RobotsGate(transport, cfg.robots, cfg.fetch, cfg.politeness,
                                host_key=lambda origin: origin,
                                on_defer=lambda origin, _until, why: self._deferrals.__setitem__(origin, why))
        self._total = asyncio.Semaphore(cfg.run.concurrency)
        self._per_host = _HostSlots(cfg.politeness.per_host)
        self._stops = StopPlan.from_fetch(cfg.fetch)  # None unless pages are to be read in part
        # The browser's transport, when pages are rendered: the same as the crawl's (assembly.py).
        self._rendering = page_transport(cfg, transport, self._gate, HostTurns(),
                                         HostKeys(cfg.host_key, cfg.resolve))
        hops = HopCheck(lambda url: self._verdict(url, holding_slot=True)) if self._obey else None
        self._fetcher = Fetcher(self._rendering or transport, max_redirects=cfg.fetch.max_redirects,
                                hop_check=hops)

    async def aclose(self) -> None:
        """Close the browser, when pages were rendered."""
        if self._rendering is not None:
            await self._rendering.aclose()

    async def result(self, url: str) -> FetchResult:
        """The result of `url`, always one (an error result for what went wrong)."""
        try:
            return await self._attempts(url)
        except Exception as exc:  # a result must come for every URL, or the consumer waits forever
            message = f"{type(exc).__name__}: {exc}"
            return FetchResult(url=url, final_url=url, error_class="internal", error_message=message)

    async def _verdict(self, url: str, *, holding_slot: bool) -> RobotsVerdict:
        """robots.txt's verdict on `url`; a deferral (429, unreachable) is waited out `retries` times."""
        if not self._obey:
            return ALLOWED
        checks = self._polite.retries + 1
        for check in range(1, checks + 1):
            if holding_slot:  # a redirect hop: its fetch already holds a global slot
                verdict = await self._gate.check(url)
            else:
                async with self._total:  # robots.txt fetches count against the concurrency too
                    verdict = await self._gate.check(url)
            if not verdict.deferred_until:
                return verdict
            if check < checks:
                await asyncio.sleep(max(0.0, verdict.deferred_until - time.time()))
        why = self._deferrals.get(_origin(url) + "/", "robots.txt deferred the host")
        message = f"{why} (still deferred after {checks} checks)"
        return RobotsVerdict(False, failure=RobotsFailure("robots_unavailable", message, 0.0))

    async def _attempts(self, url: str) -> FetchResult:
        if resolve(url) is None:
            # Refused here: libcurl calls a malformed URL a protocol error, which looks transient.
            return _refused(url, UnsupportedUrlError.error_class, f"not a valid URL: {url[:200]!r}")
        host = host_of(url)  # it parsed just above, so this does not raise
        verdict = await self._verdict(url, holding_slot=False)
        if verdict.failure is not None:
            return _refused(url, verdict.failure.error_class, verdict.failure.message)
        if not verdict.allowed:
            return _refused(url, "robots", f"disallowed by {_origin(url)}/robots.txt; not requested")
        fetch, polite = self._fetch, self._polite
        delay = crawl_delay(verdict, polite.delay, polite.crawl_delay_cap)
        stop = None if self._stops is None else self._stops.for_url(url)
        attempt = 1
        started_at = 0.0
        while True:
            # The host's slot first: a URL waiting for a busy host must not hold a global one.
            async with self._per_host.slot(host, delay):
                async with self._total:
                    result = await self._fetcher.fetch(url, timeout=fetch.timeout, attempt=attempt,
                                                       max_size=fetch.max_size, headers=fetch.extra_headers,
                                                       stop=stop)
                if delay:
                    await asyncio.sleep(delay)  # held inside the host's slot: the delay is per host
            started_at = started_at or result.started_at
            again = download_retry(result, attempt, polite)
            if not again.retry:
                # started_at is when the first attempt began, as FetchResult documents.
                return dataclasses.replace(result, started_at=started_at)
            attempt += 1
            await asyncio.sleep(again.wait)


@dataclass(slots=True)
class _Host:
    """One host's slots, the URLs using them, and when its next fetch may start."""

    semaphore: asyncio.Semaphore
    users: int = 0
    next_start: float = 0.0  # time.monotonic()


class _HostSlots:
    """Per-host limits on concurrent fetches, kept only while the host has a URL in progress."""

    def __init__(self, per_host: int) -> None:
        self._per_host = per_host
        self._hosts: dict[str, _Host] = {}

    @contextlib.asynccontextmanager
    async def slot(self, host: str, delay: float = 0.0) -> AsyncIterator[None]:
        """Hold one of `host`'s slots for the duration of the block, starting `delay` after the last start."""
        entry = self._hosts.get(host) or _Host(asyncio.Semaphore(self._per_host))
        entry.users += 1
        self._hosts[host] = entry
        try:
            async with entry.semaphore:
                if delay:
                    # A delay (Crawl-delay) is one fetch per `delay`, however many slots the host has.
                    now = time.monotonic()
                    start = max(now, entry.next_start)
                    entry.next_start = start + delay
                    if start > now:
                        await asyncio.sleep(start - now)
                yield
        finally:
            entry.users -= 1
            if not entry.users:
                del self._hosts[host]  # no one else waits: forget the host


def _origin(url: str) -> str:
    """`scheme://netloc` of `url`, as RobotsGate keys its robots.txt."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _refused(url: str, error_class: str, message: str) -> FetchResult:
    """The result of a URL never requested (invalid, or refused by robots.txt)."""
    return FetchResult(url=url, final_url=url, error_class=error_class, error_message=message,
                       started_at=time.time())


def download_retry(result: FetchResult, attempt: int, politeness: PolitenessSettings) -> RetryVerdict:
    """The crawl's retry rule (outcome.decide follows it too) with a list download's shorter back-off.

    The one difference: a crawl re-queues the URL and has other work meanwhile, a list download
    waits on it, so its back-off starts at 0.5 s and stops at 30 s. Retry-After is honoured the
    same; host_wait is not needed here, as the URL itself waits it out (no host queue to pause).
    """
    return retry_verdict(result, attempt, retries=politeness.retries, now=time.time(),
                         retry_after_cap=politeness.retry_after_cap,
                         backoff_base=DOWNLOAD_BACKOFF_BASE, backoff_cap=DOWNLOAD_BACKOFF_CAP)


def download(
    urls: Iterable[str],
    *,
    concurrency: int = 100,
    retries: int = 3,
    timeout: float = 60.0,
    log_dir: str | Path | None = None,
    transport: Transport | None = None,
    **options: Any,
) -> Download:
    """Fetch `urls` (no links followed), yielding one FetchResult per URL as each completes.

    robots.txt is obeyed as the crawler obeys it: a disallowed URL is never requested and ends with
    error_class "robots"; Crawl-delay spaces a host's fetches (`obey_robots=False` turns this off).
    Other options are CrawlConfig's fetch and rendering settings (max_size, user_agent, allow_net,
    resolve, stop_at, render, ...) and per_host, delay, crawl_delay_cap, retry_after_cap,
    robots_ttl; a crawl's other settings are refused (ConfigError).
    With `log_dir`, a `download.log` in the seed's format is appended there.
    """
    for name in flat_settings(options):
        if name not in DOWNLOAD_SETTINGS:
            setting = SETTING[name]
            crawl = (f"; `harvestman download`, a crawl that follows no link, takes {setting.flag}"
                     if setting.flags and "download" in setting.commands else "")
            raise ConfigError(f"download() fetches a list of URLs: the crawl setting {name!r} is not "
                              f"taken{crawl}")
    given = {"concurrency": concurrency, "retries": retries, "timeout": timeout}
    cfg, _ = merge_settings({}, given, options)
    folder = Path(log_dir) if log_dir is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    return Download(urls, cfg, transport, folder)

"""robots.txt at crawl time: fetch each origin's file once, cache it, and judge URLs against it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from harvestman.fetch.fetcher import SENSITIVE_HEADERS, Fetcher
from harvestman.fetch.transport import Transport
from harvestman.model.config import FetchSettings, PolitenessSettings, RobotsSettings
from harvestman.model.errors import is_transient
from harvestman.model.records import FetchResult
from harvestman.net.urls import origin_of
from harvestman.policy.robots import RobotsCache, rules_for_response

ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309 asks crawlers to parse at least 500 KiB
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309: follow at least five redirects
ROBOTS_TIMEOUT_CAP = 30.0
# An unreachable robots.txt (5xx, timeout, reset) means "disallow all" for now (RFC 9309 §2.3.1.3).
# The host is deferred and the file asked for again after 5 s, 10 s, 20 s ... up to `retries` times;
# then the host's URLs end as failed, and the file is tried again after ROBOTS_GIVE_UP_TTL.
ROBOTS_RETRY_BASE = 5.0
ROBOTS_GIVE_UP_TTL = 600.0
# Fetch errors after which robots.txt counts as unavailable (allow all), per RFC 9309 §2.3.1.2.
UNAVAILABLE_ERRORS = frozenset({"too_many_redirects", "redirect_refused"})


@dataclass(frozen=True, slots=True)
class RobotsFailure:
    """Why an origin's robots.txt could not be had, recorded on the URLs it keeps from being fetched."""

    error_class: str
    message: str
    until: float


@dataclass(frozen=True, slots=True)
class RobotsVerdict:
    """Whether a URL may be fetched, the Crawl-delay that applies, and whether to come back later."""

    allowed: bool
    crawl_delay: float | None = None
    deferred_until: float = 0.0  # nothing from this host before then (429, or a retry of robots.txt)
    failure: RobotsFailure | None = None  # robots.txt is unreachable: the URL fails with this


class RobotsGate:
    """Decides per URL from its origin's robots.txt, fetching each file once at a time."""

    def __init__(
        self,
        transport: Transport,
        robots: RobotsSettings,
        fetch: FetchSettings,
        politeness: PolitenessSettings,
        on_defer: Callable[[str, float, str], None] | None = None,
        host_key: Callable[[str], str] | None = None,
        clock: Callable[[], float] | None = None,
        sitemaps: str = "off",
    ) -> None:
        """`robots`: obey and trust; `fetch`: the user agent, deadline and headers of robots.txt
        fetches; `politeness`: how often an unreachable robots.txt is asked for again (retries);
        `sitemaps`: the links setting of that name, which sitemaps an origin gives the crawl."""
        self._obey = robots.obey_robots
        self._ttl = robots.robots_ttl
        self._agent = fetch.user_agent
        self._timeout = min(fetch.timeout, ROBOTS_TIMEOUT_CAP)
        # The configured headers, but never credentials: robots.txt is public by definition, and it
        # is also fetched for the target of a cross-origin redirect hop, where they must not go.
        self._headers = tuple((k, v) for k, v in fetch.extra_headers if k.lower() not in SENSITIVE_HEADERS)
        self._retries = politeness.retries
        self._fetcher = Fetcher(transport, max_redirects=ROBOTS_MAX_REDIRECTS)
        self._cache = RobotsCache()
        self._inflight: dict[str, asyncio.Future[None]] = {}
        self._deferred: dict[str, float] = {}  # origin -> no verdict before then
        self._attempts: dict[str, int] = {}  # origin -> robots.txt fetches failed in a row
        self._failures: dict[str, RobotsFailure] = {}  # origin -> gave up on its robots.txt until ...
        self._on_defer = on_defer
        self._host_key = host_key or (lambda url: urlsplit(url).hostname or "")
        self._clock = clock or time.time
        self._sitemaps = sitemaps
        self._sitemap_origins: set[str] = set()  # origins whose sitemaps were given to the crawl
        # Sitemap URLs found since the crawl last took them (take_sitemaps): robots.txt's Sitemap
        # lines, and with "probe" each origin's /sitemap.xml; each with the robots.txt URL that led
        # to it. Empty on most pages: one test a page.
        self.found_sitemaps: list[tuple[str, str]] = []

    def take_sitemaps(self) -> list[tuple[str, str]]:
        """The (sitemap URL as written, robots.txt URL) found since the last call."""
        found, self.found_sitemaps = self.found_sitemaps, []
        return found

    def _sitemaps_of(self, origin: str, named: tuple[str, ...]) -> None:
        if self._sitemaps == "off" or origin in self._sitemap_origins:
            return
        self._sitemap_origins.add(origin)
        robots = f"{origin}/robots.txt"
        self.found_sitemaps.extend((url, robots) for url in named)
        if self._sitemaps == "probe":
            self.found_sitemaps.append((f"{origin}/sitemap.xml", robots))

    async def check(self, url: str) -> RobotsVerdict:
        """The verdict for `url` under its origin's robots.txt (fetched on first use)."""
        if not self._obey:
            if self._sitemaps == "probe":  # no robots.txt read, but /sitemap.xml is still asked for
                parts = urlsplit(url)
                self._sitemaps_of(f"{parts.scheme}://{parts.netloc}", ())
            return RobotsVerdict(True)
        origin = origin_of(url)
        for _ in range(2):  # the second pass reads what the load stored
            now = self._clock()
            deferred_until = self._deferred.get(origin, 0.0)
            if deferred_until > now:
                return RobotsVerdict(False, deferred_until=deferred_until)
            failure = self._failures.get(origin)
            if failure is not None and failure.until > now:
                return RobotsVerdict(False, failure=failure)
            rules = self._cache.get(origin, now)
            if rules is not None:
                agent = self._agent
                return RobotsVerdict(rules.allowed(url, agent), rules.crawl_delay(agent))
            await self._load(origin)
        # The load stored nothing that is still valid (a zero TTL): refuse for now, ask again later.
        return RobotsVerdict(False, deferred_until=self._clock() + ROBOTS_RETRY_BASE)

    async def _load(self, origin: str) -> None:
        pending = self._inflight.get(origin)
        if pending is not None:
            await asyncio.shield(pending)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._inflight[origin] = future
        try:
            await self._fetch(origin)
            future.set_result(None)
        except asyncio.CancelledError:
            future.cancel()  # the crawl is abandoning its fetches: so are the waiters
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here so a failure with no other waiter is not reported twice
            raise
        finally:
            del self._inflight[origin]

    async def _fetch(self, origin: str) -> None:
        result = await self._fetcher.fetch(f"{origin}/robots.txt", timeout=self._timeout,
                                           max_size=ROBOTS_MAX_BYTES, headers=self._headers)
        now = self._clock()
        rules, ttl, defer = rules_for_response(result.status, result.body, result.error_class)
        if defer:  # 429: the host asks for rest; judge nothing until it has had it
            self._defer(origin, now + min(ttl, self._ttl), "robots.txt answered 429")
            return
        if result.status >= 500 or (result.error_class and result.error_class not in UNAVAILABLE_ERRORS):
            self._unreachable(origin, result, now)
            return
        self._attempts.pop(origin, None)
        self._failures.pop(origin, None)
        self._cache.put(origin, rules, now + min(ttl, self._ttl))
        self._sitemaps_of(origin, rules.sitemaps)

    def _unreachable(self, origin: str, result: FetchResult, now: float) -> None:
        """Defer the host and try again, or after enough attempts fail its URLs with the cause."""
        attempts = self._attempts.get(origin, 0) + 1
        if result.error_class:
            error_class, cause = result.error_class, result.error_message or result.error_class
            transient = is_transient(error_class)
        else:
            error_class, cause, transient = "robots_unavailable", f"HTTP {result.status}", True
        if transient and attempts <= self._retries:
            self._attempts[origin] = attempts
            wait = ROBOTS_RETRY_BASE * 2 ** (attempts - 1)
            self._defer(origin, now + wait, f"robots.txt unreachable: {cause}")
            return
        self._attempts.pop(origin, None)
        message = f"robots.txt unreachable: {cause}"
        if transient:
            message += f" (after {attempts} attempts)"
        self._failures[origin] = RobotsFailure(error_class, message, now + ROBOTS_GIVE_UP_TTL)

    def _defer(self, origin: str, until: float, why: str) -> None:
        self._deferred[origin] = until
        if self._on_defer is not None:
            self._on_defer(self._host_key(origin + "/"), until, why)

"""robots.txt at crawl time: fetch each origin's file once, cache it, and judge URLs against it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from harvestman.config import CrawlConfig
from harvestman.fetcher import Fetcher
from harvestman.robots import RobotsCache, RobotsRules, rules_for_response
from harvestman.transport import Transport

ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309 asks crawlers to parse at least 500 KiB
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309: follow at least five redirects
ROBOTS_TIMEOUT_CAP = 30.0


@dataclass(frozen=True, slots=True)
class RobotsVerdict:
    """Whether a URL may be fetched, the Crawl-delay that applies, and whether to come back later."""

    allowed: bool
    crawl_delay: float | None = None
    deferred_until: float = 0.0  # robots.txt answered 429: nothing from this host before then


class RobotsGate:
    """Decides per URL from its origin's robots.txt, fetching each file once at a time."""

    def __init__(
        self,
        transport: Transport,
        config: CrawlConfig,
        on_defer: Callable[[str, float], None] | None = None,
        host_key: Callable[[str], str] | None = None,
    ) -> None:
        self._config = config
        self._fetcher = Fetcher(transport, max_redirects=ROBOTS_MAX_REDIRECTS)
        self._cache = RobotsCache()
        self._inflight: dict[str, asyncio.Future[tuple[RobotsRules, float]]] = {}
        self._deferred: dict[str, float] = {}  # origin -> until when its robots.txt said 429
        self._on_defer = on_defer
        self._host_key = host_key or (lambda url: urlsplit(url).hostname or "")

    async def check(self, url: str) -> RobotsVerdict:
        """The verdict for `url` under its origin's robots.txt (fetched on first use)."""
        if not self._config.obey_robots:
            return RobotsVerdict(True)
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        now = time.time()
        deferred_until = self._deferred.get(origin, 0.0)
        if deferred_until > now:
            return RobotsVerdict(False, deferred_until=deferred_until)
        rules = self._cache.get(origin, now)
        if rules is None:
            rules, deferred_until = await self._load(origin)
            if deferred_until:
                return RobotsVerdict(False, deferred_until=deferred_until)
        agent = self._config.user_agent
        return RobotsVerdict(rules.allowed(url, agent), rules.crawl_delay(agent))

    async def _load(self, origin: str) -> tuple[RobotsRules, float]:
        pending = self._inflight.get(origin)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[tuple[RobotsRules, float]] = asyncio.get_running_loop().create_future()
        self._inflight[origin] = future
        try:
            loaded = await self._fetch(origin)
            future.set_result(loaded)
            return loaded
        except asyncio.CancelledError:
            future.cancel()  # the crawl is abandoning its fetches: so are the waiters
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here so a failure with no other waiter is not reported twice
            raise
        finally:
            del self._inflight[origin]

    async def _fetch(self, origin: str) -> tuple[RobotsRules, float]:
        cfg = self._config
        result = await self._fetcher.fetch(
            f"{origin}/robots.txt", timeout=min(cfg.timeout, ROBOTS_TIMEOUT_CAP), max_size=ROBOTS_MAX_BYTES
        )
        rules, ttl, defer = rules_for_response(result.status, result.body, result.error_class)
        now = time.time()
        ttl = min(ttl, cfg.robots_ttl)
        if defer:
            # 429 on robots.txt: the host asks for rest; judge nothing until it has had it.
            until = now + ttl
            self._deferred[origin] = until
            if self._on_defer is not None:
                self._on_defer(self._host_key(origin + "/"), until)
            return rules, until
        self._cache.put(origin, rules, now + ttl)
        return rules, 0.0

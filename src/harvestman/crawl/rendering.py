"""The crawl's side of rendering pages in a browser: the rules every request of a page passes.

fetch/browser.py routes each request a page makes through a check handed to it here: robots.txt of
the request's origin (as for any URL of the crawl), then the per-host politeness clock, so that a
page's scripts, API calls and stylesheets take turns with the crawl's own fetches of that host.
Imported only when a crawl renders (Playwright stays out of the default crawl).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from harvestman.crawl.robots_gate import RobotsGate
from harvestman.crawl.steps import crawl_delay
from harvestman.fetch.browser import RenderingTransport, open_rendering
from harvestman.fetch.transport import Transport
from harvestman.model.config import RenderSettings
from harvestman.model.errors import InvalidUrlError
from harvestman.net.urls import host_of

TakeTurn = Callable[[str, float], Awaitable[None]]


def renders(settings: RenderSettings) -> bool:
    """Whether any page of this crawl may be rendered (a mode or a rule other than never)."""
    return settings.render != "never" or any(mode != "never" for _, mode in settings.render_rules)


class PageRequestRules:
    """Judges one request a rendered page makes: robots.txt, then a turn on its host's clock."""

    def __init__(self, robots: RobotsGate, take_turn: TakeTurn, host_key: Callable[[str, str], str],
                 delay: float, crawl_delay_cap: float) -> None:
        self.robots = robots
        self.take_turn = take_turn
        self.host_key = host_key
        self.delay = delay
        self.crawl_delay_cap = crawl_delay_cap
        self.requests: dict[str, int] = {}  # requests let through, per politeness key

    async def __call__(self, url: str, kind: str, page_url: str) -> str:
        verdict = await self.robots.check(url)
        if verdict.failure is not None:
            return f"robots.txt unavailable: {verdict.failure.error_class}"
        if not verdict.allowed or verdict.deferred_until:
            return "disallowed by robots.txt"
        try:
            key = self.host_key(url, host_of(url))
        except InvalidUrlError:
            return "invalid URL"
        delay = crawl_delay(verdict, self.delay, self.crawl_delay_cap)
        if delay > 0:
            await self.take_turn(key, delay)
        self.requests[key] = self.requests.get(key, 0) + 1
        return ""


def open_page_transport(transport: Transport, settings: RenderSettings, user_agent: str,
                        rules: PageRequestRules) -> RenderingTransport:
    """The crawl's page transport: `transport`, with pages rendered where the settings say."""
    return open_rendering(transport, settings, user_agent=user_agent, check=rules)

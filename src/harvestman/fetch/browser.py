"""Pages rendered in a browser: Playwright driving the system's Chromium, every request it makes
fetched by harvestman under the crawl's rules.

`RenderingTransport` sits behind the transport seam: it fetches a page as any transport would (the
inner one, libcurl), and when the page is to be rendered (`--render always`, or `auto` and the HTML
looks like an application shell: fetch/shell.py) hands the response to `BrowserRenderer`, which
loads it in a browser context and returns the DOM once the page has settled.

Why every request is fetched by harvestman and none by Chromium: a page's scripts fetch what they
like, from any host, including loopback and private addresses. Chromium's request interception
(`context.route`) sees every http(s) request a page, its frames and its workers make; each one is
judged there (scheme, resource kind, third-party host, the byte budget, then the crawl's own check:
robots.txt and the per-host politeness clock) and, if allowed, fetched by harvestman's own
transport (libcurl, with the crawl's resolver, `--resolve` map and the private-address guard on
every socket it opens) and handed back with `route.fulfill`; a redirect is followed here, each hop
judged as a request of its own. The page's document itself is the response already fetched, not a
second request. So Chromium itself never opens a connection for a
routed request, and a DNS answer that changes between check and connect (rebinding) cannot steer it.

What `route` does not see is closed at launch: Chromium's own network goes to a proxy that is a
harvestman socket accepting and closing every connection (and counting them: `escaped`), with no
loopback bypass, so WebSockets, any request that escapes interception, and the browser's
background traffic fail; with a fixed proxy Chromium resolves no names itself, so DNS prefetch
sends nothing; service workers are blocked (their fetches would bypass the page's routing);
WebRTC may only use the proxy (none for UDP: no ICE candidates to any address).

Chromium comes from the system's packages (`apt-get install chromium`, `browser_path`); Playwright's
Python package drives it over its pipe and never downloads a browser. Playwright is imported only
when a crawl renders (the default crawl never imports it).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harvestman.fetch.content import media_type
from harvestman.fetch.shell import shell_reason
from harvestman.fetch.transport import REDIRECT_STATUSES, Transport
from harvestman.model.config import RenderSettings
from harvestman.model.errors import ConfigError, FetchError, RenderFetchError
from harvestman.model.records import Headers, HttpRequest, HttpResponse, Rendering
from harvestman.net.urls import header_text, resolve

# Judges one request a page makes: (url, resource kind, the page's URL) -> why it is refused, or ''.
RequestCheck = Callable[[str, str, str], Awaitable[str]]
MAX_RESOURCE_REDIRECTS = 5  # hops a page's request may take (each judged as a request of its own)
IDLE_SECONDS = 0.5  # "idle": no request in flight for this long after the load event
CLOSE_TIMEOUT = 5.0  # a context that does not close in this long (a hung renderer): restart the browser
_HTML = frozenset({"text/html", "application/xhtml+xml"})
# Response headers that describe the wire, not the (decoded) body handed to the browser.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection",
                           "keep-alive"})
# Request headers the transport sets itself, or that must not be forwarded.
_OWN_HEADERS = frozenset({"user-agent", "accept-encoding", "host", "connection", "content-length",
                          "cookie", "proxy-authorization", "upgrade"})
# Switches for a browser that reaches the network only through harvestman (see the module's docstring).
_SAFE_ARGS = (
    "--proxy-bypass-list=<-loopback>",  # loopback too goes to the (dead) proxy
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-sync",
    "--no-pings",
    "--no-first-run",
    "--disable-features=NetworkPrediction,InterestFeedContentSuggestions,MediaRouter",
    "--disable-dev-shm-usage",
)


def check_browser(path: str) -> None:
    """Refuse a crawl that renders without a browser to drive, or without Playwright."""
    if not os.access(path, os.X_OK):
        raise ConfigError(f"browser {path!r} not found: install Chromium (apt-get install chromium) "
                          "or set browser_path")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        raise ConfigError("rendering needs Playwright: "
                          "pip install '.[render]' (in harvestman's folder)") from None


class _BlackHole:
    """The browser's proxy: accepts and closes every connection, counting them (none is expected)."""

    def __init__(self) -> None:
        self.escaped = 0
        self.attempts: list[str] = []  # the first line of each (a CONNECT or GET naming the target)
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        async def closed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.escaped += 1
            with contextlib.suppress(Exception):
                line = await asyncio.wait_for(reader.readline(), 1.0)
                if len(self.attempts) < 100:
                    self.attempts.append(line.decode("latin-1").strip()[:200])
            writer.close()

        self.server = await asyncio.start_server(closed, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 1.0)


@dataclass
class _Visit:
    """One page being rendered: what its requests did so far."""

    url: str
    host: str
    original: HttpResponse
    deadline: float
    budget: int
    served_document: bool = False
    phase: str = "start"  # what the page was doing (the error names it when the deadline passes)
    inflight: int = 0
    last_change: float = 0.0
    requests: int = 0
    resource_bytes: int = 0
    wire_bytes: int = 0
    refused: list[tuple[str, str]] = dataclasses.field(default_factory=list)


@dataclass
class _Slot:
    """One browser context of the pool and how many pages it has rendered."""

    context: Any = None
    pages: int = 0
    generation: int = -1  # the browser it belongs to
    visit: _Visit | None = None
    # One page (tab) reused for the context's renders: making and closing one costs ~0.3 s a page.
    page: Any = None
    crashed: asyncio.Event | None = None


def _host(url: str) -> str:
    return (urllib.parse.urlsplit(url).hostname or "").lower()


def _response_headers(headers: Headers) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in _WIRE_HEADERS:
            continue
        out[key] = f"{out[key]}\n{value}" if key == "set-cookie" and key in out else (
            f"{out[key]}, {value}" if key in out else value)
    return out


class BrowserRenderer:
    """A Chromium started on first use, a pool of `concurrency` contexts, one page at a time in each."""

    def __init__(self, settings: RenderSettings, resources: Transport, *, user_agent: str,
                 check: RequestCheck | None = None) -> None:
        self.settings = settings
        self.resources = resources  # fetches every request a page makes (the crawl's guarded transport)
        self.user_agent = user_agent
        self.check = check
        self.block = frozenset(settings.render_block)
        self._slots: asyncio.Queue[_Slot] = asyncio.Queue()
        for _ in range(settings.render_concurrency):
            self._slots.put_nowait(_Slot())
        self._launching = asyncio.Lock()
        self._pw: Any = None
        self._browser: Any = None
        self._generation = 0
        self._hole = _BlackHole()
        self._token = secrets.token_hex(6)  # marks this renderer's browser process (browser_pids)
        self.rendered = 0
        self.failed = 0
        self.contexts_made = 0
        self.restarts = 0

    # ----- the browser -------------------------------------------------------------------------

    async def _ensure_browser(self) -> Any:
        async with self._launching:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            from playwright.async_api import async_playwright

            if self._hole.server is None:
                await self._hole.start()
            if self._pw is None:
                self._pw = await async_playwright().start()
            if self._generation:
                self.restarts += 1
            if self._browser is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._browser.close(), CLOSE_TIMEOUT)
                self._browser = None
            try:
                self._browser = await self._pw.chromium.launch(
                    executable_path=self.settings.browser_path,
                    headless=True,
                    args=[f"--proxy-server=http://127.0.0.1:{self._hole.port}", *_SAFE_ARGS,
                          f"--harvestman-renderer={self._token}"],
                )
            except Exception:
                # The driver itself may be what died: start it afresh next time.
                pw, self._pw = self._pw, None
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(pw.stop(), CLOSE_TIMEOUT)
                raise
            self._generation += 1
            return self._browser

    def browser_pids(self) -> list[int]:
        """The browser's processes (its main process and every descendant), for RSS figures and tests."""
        parents: dict[int, int] = {}
        main = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                if not main and f"--harvestman-renderer={self._token}".encode() in (
                        entry / "cmdline").read_bytes():
                    main = int(entry.name)
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
        if not main:
            return []
        pids = [main]
        for pid in pids:  # bounded: each pid is added once, as a child of one already listed
            pids.extend(child for child, parent in parents.items() if parent == pid)
        return pids

    @property
    def escaped(self) -> int:
        """Connections the browser opened outside harvestman's routing (reached the dead proxy)."""
        return self._hole.escaped

    async def aclose(self) -> None:
        """Close the browser and Playwright."""
        if self._browser is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._browser.close(), CLOSE_TIMEOUT)
        if self._pw is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pw.stop(), CLOSE_TIMEOUT)
        self._browser = self._pw = None
        await self._hole.close()

    # ----- one page ----------------------------------------------------------------------------

    async def render(self, request: HttpRequest, original: HttpResponse, reason: str) -> Rendering:
        """Load `original` (the page's response, already fetched) in a browser and wait for it to
        settle; RenderFetchError when it does not within the deadline or the browser fails."""
        slot = await self._slots.get()
        try:
            return await self._render_in(slot, request, original, reason)
        finally:
            self._slots.put_nowait(slot)

    async def _context(self, slot: _Slot) -> Any:
        browser = await self._ensure_browser()
        if slot.context is not None and (slot.generation != self._generation
                                         or slot.pages >= self.settings.render_recycle):
            await self._drop(slot)
        if slot.context is None:
            context = await browser.new_context(
                user_agent=self.user_agent, service_workers="block", accept_downloads=False,
                viewport={"width": 1280, "height": 800})

            async def on_route(route: Any, req: Any) -> None:
                await self._route(slot, route, req)

            await context.route("**/*", on_route)
            slot.context, slot.pages, slot.generation = context, 0, self._generation
            self.contexts_made += 1
        return slot.context

    async def _drop(self, slot: _Slot) -> None:
        """Close the slot's context; a browser that cannot close it is restarted."""
        context, slot.context, slot.page = slot.context, None, None
        if context is None:
            return
        try:
            await asyncio.wait_for(context.close(), CLOSE_TIMEOUT)
        except Exception:  # a hung renderer or a dead browser: start afresh
            # Only the browser this context belongs to: another slot may have started a new one.
            if self._browser is not None and slot.generation == self._generation:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._browser.close(), CLOSE_TIMEOUT)
                self._browser = None

    async def _render_in(self, slot: _Slot, request: HttpRequest, original: HttpResponse,
                         reason: str) -> Rendering:
        started = time.monotonic()
        timeout = min(self.settings.render_timeout, max(0.1, request.timeout))
        visit = _Visit(original.url, _host(original.url), original, started + timeout,
                       self.settings.render_max_bytes, last_change=started)
        from playwright.async_api import Error as PlaywrightError

        try:
            context = await asyncio.wait_for(self._context(slot), timeout)
            slot.visit = visit
            slot.pages += 1
            if slot.page is None or slot.crashed is None or slot.page.is_closed():
                slot.page = await asyncio.wait_for(context.new_page(), timeout)
                crashed = slot.crashed = asyncio.Event()
                slot.page.on("crash", lambda _page: crashed.set())
            # The page stays as it is until the next navigation replaces it: leaving it for
            # about:blank cost ~30% more browser CPU a page (a renderer process swap each time), and
            # its late requests are refused (the slot has no visit then).
            dom, png = await asyncio.wait_for(self._load(slot.page, visit, slot.crashed), timeout)
        except TimeoutError:
            self.failed += 1
            await self._drop(slot)
            raise RenderFetchError(f"the page did not {visit.phase} within {timeout:g}s "
                                   f"({visit.requests} requests made)") from None
        except (PlaywrightError, RenderFetchError) as exc:
            self.failed += 1
            await self._drop(slot)
            if isinstance(exc, RenderFetchError):
                raise
            raise RenderFetchError(f"browser: {str(exc).splitlines()[0][:300]}") from None
        finally:
            slot.visit = None
        self.rendered += 1
        return Rendering(
            original_headers=original.headers, original_body=original.body, dom=dom, screenshot=png,
            screenshot_mode=self.settings.screenshot if png else "", settle=self.settings.render_settle,
            requests=visit.requests, refused=tuple(visit.refused), resource_bytes=visit.resource_bytes,
            elapsed=time.monotonic() - started, reason=reason)

    async def _load(self, page: Any, visit: _Visit, crashed: asyncio.Event) -> tuple[str, bytes]:
        async def watch() -> None:
            await crashed.wait()

        crash = asyncio.ensure_future(watch())
        work = asyncio.ensure_future(self._settle(page, visit))
        try:
            done, _ = await asyncio.wait({work, crash}, return_when=asyncio.FIRST_COMPLETED)
            if work not in done:
                raise RenderFetchError("the page's renderer crashed")
            return work.result()
        finally:
            for task in (crash, work):
                if not task.done():
                    task.cancel()
                # Its error (the page closed under it) is this render's failure, reported already.
                task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _settle(self, page: Any, visit: _Visit) -> tuple[str, bytes]:
        visit.phase = "load"
        await page.goto(visit.url, wait_until="load", timeout=0)
        # Requests a script issued just before the load event reach the route a moment later: the
        # idle rule counts from here.
        visit.last_change = time.monotonic()
        kind, _, selector = self.settings.render_settle.partition(":")
        if kind == "selector":
            visit.phase = f"show {selector.strip()}"
            await page.wait_for_selector(selector.strip(), state="attached", timeout=0)
        else:
            # Idle: nothing in flight for IDLE_SECONDS. Bounded by the caller's deadline.
            visit.phase = "settle (its requests never stopped)"
            while visit.inflight or time.monotonic() - visit.last_change < IDLE_SECONDS:
                await asyncio.sleep(0.05)
        visit.phase = "give its DOM (a script kept it busy)"
        dom = await page.content()
        png = b""
        if self.settings.screenshot:
            visit.phase = "give its screenshot"
            png = await page.screenshot(full_page=self.settings.screenshot == "full", type="png", timeout=0)
        return dom, png

    # ----- every request the page makes --------------------------------------------------------

    async def _route(self, slot: _Slot, route: Any, req: Any) -> None:
        visit = slot.visit
        try:
            if visit is None:  # a late request of a page already done
                await route.abort("blockedbyclient")
                return
            url = req.url
            if not visit.served_document and req.is_navigation_request() and url == visit.url:
                visit.served_document = True
                await route.fulfill(status=visit.original.status,
                                    headers=_response_headers(visit.original.headers),
                                    body=visit.original.body)
                return
            # In flight from here (its checks may wait: robots.txt, the host's turn) until answered.
            visit.inflight += 1
            visit.last_change = time.monotonic()
            try:
                why = await self._judge(visit, url, req)
                response = None if why else await self._fetch(visit, url, req)
            finally:
                visit.inflight -= 1
                visit.last_change = time.monotonic()
            if why:
                visit.refused.append((url[:500], why))
                await route.abort("blockedbyclient")
            elif response is None:
                await route.abort("failed")
            else:
                await route.fulfill(status=response.status, headers=_response_headers(response.headers),
                                    body=response.body)
        except Exception:  # the page is gone meanwhile (closed, crashed): nothing to answer
            with contextlib.suppress(Exception):
                await route.abort("failed")

    async def _judge(self, visit: _Visit, url: str, req: Any) -> str:
        """Why the page's request for `url` is refused ('' when it may be fetched)."""
        kind = req.resource_type
        if kind in self.block:
            return f"kind {kind} blocked"
        if req.method not in ("GET", "HEAD"):
            return f"method {req.method}"
        frame = req.frame
        if req.is_navigation_request() and frame.parent_frame is None:
            return "navigation away from the page"
        return await self._judge_target(visit, url, kind)

    async def _judge_target(self, visit: _Visit, url: str, kind: str) -> str:
        """Why fetching `url` (a request's URL, or a redirect's target) for the page is refused."""
        scheme = url.partition(":")[0].lower()
        if scheme not in ("http", "https"):
            return f"scheme {scheme}"
        host = _host(url)
        if host != visit.host and not self.settings.render_third_party:
            return "third-party host"
        if visit.resource_bytes >= visit.budget:
            return "byte budget spent"
        if self.check is not None:
            return await self.check(url, kind, visit.url)
        return ""

    async def _fetch(self, visit: _Visit, url: str, req: Any) -> HttpResponse | None:
        """The response to the page's request, redirects followed here, each hop judged as a request.

        Chromium fails a request answered (`route.fulfill`) with a redirect, so hops are taken here;
        the page sees the final response under the URL it asked for.
        """
        headers = tuple((k, v) for k, v in req.headers.items() if k.lower() not in _OWN_HEADERS)
        method: Literal["GET", "HEAD"] = "HEAD" if req.method == "HEAD" else "GET"
        response = await self._fetch_one(visit, url, headers, method)
        for _ in range(MAX_RESOURCE_REDIRECTS):  # bounded: a hop more each turn
            location = response.header("location") if response is not None else None
            if response is None or response.status not in REDIRECT_STATUSES or not location:
                return response
            target = resolve(header_text(location), url)
            why = "invalid redirect" if target is None else await self._judge_target(
                visit, target, req.resource_type)
            if target is None or why:
                visit.refused.append(((target or location)[:500], f"redirect: {why}"))
                return None
            url = target
            response = await self._fetch_one(visit, url, headers, method)
        visit.refused.append((url[:500], "too many redirects"))
        return None

    async def _fetch_one(self, visit: _Visit, url: str, headers: Headers,
                         method: Literal["GET", "HEAD"]) -> HttpResponse | None:
        remaining = visit.deadline - time.monotonic()
        if remaining <= 0:
            return None
        visit.requests += 1
        try:
            response = await self.resources.fetch(HttpRequest(
                url, headers=headers, timeout=remaining, method=method,
                max_size=max(1, visit.budget - visit.resource_bytes)))
        except FetchError as exc:
            visit.refused.append((url[:500], f"{exc.error_class}: {exc.message[:200]}"))
            return None
        visit.resource_bytes += len(response.body)
        visit.wire_bytes += response.wire_bytes
        if response.truncated:
            visit.refused.append((url[:500], "byte budget spent"))
            return None
        return response


def _mode_rules(settings: RenderSettings) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern), mode) for pattern, mode in settings.render_rules)


class RenderingTransport:
    """A transport whose HTML pages are rendered in a browser where the crawl says so."""

    def __init__(self, inner: Transport, renderer: BrowserRenderer, settings: RenderSettings) -> None:
        self.inner = inner
        self.renderer = renderer
        self.mode = settings.render
        self.rules = _mode_rules(settings)
        self.judged = 0  # pages `auto` looked at
        self.shells = 0  # ... and judged application shells

    def mode_for(self, url: str) -> str:
        """never, auto or always for `url`: the first rule whose pattern matches, else the crawl's mode."""
        for pattern, mode in self.rules:
            if pattern.search(url):
                return mode
        return self.mode

    async def fetch(self, request: HttpRequest) -> HttpResponse:
        """The response as the inner transport fetched it, its body the rendered DOM when rendered."""
        response = await self.inner.fetch(request)
        if (request.method != "GET" or response.status != 200 or response.partial or response.truncated
                or media_type(response.header("content-type")) not in _HTML):
            return response
        mode = self.mode_for(request.url)
        if mode == "never":
            return response
        reason = "always"
        if mode == "auto":
            self.judged += 1
            reason = shell_reason(response.body.decode("utf-8", "replace"))
            if not reason:
                return response
            self.shells += 1
        rendering = await self.renderer.render(request, response, reason)
        headers = tuple((k, v) for k, v in response.headers if k.lower() != "content-type")
        return dataclasses.replace(
            response, headers=(*headers, ("Content-Type", "text/html; charset=utf-8")),
            body=rendering.dom.encode("utf-8"), rendering=rendering,
            wire_bytes=response.wire_bytes + rendering.resource_bytes)

    async def aclose(self) -> None:
        """Close the browser (the inner transport is its owner's to close)."""
        await self.renderer.aclose()


def open_rendering(inner: Transport, settings: RenderSettings, *, user_agent: str,
                   check: RequestCheck | None = None,
                   resources: Transport | None = None) -> RenderingTransport:
    """A RenderingTransport over `inner`; the page's own requests go through `resources` (default
    `inner`), each judged by `check` first."""
    check_browser(settings.browser_path)
    renderer = BrowserRenderer(settings, resources or inner, user_agent=user_agent, check=check)
    return RenderingTransport(inner, renderer, settings)


__all__: Sequence[str] = ("BrowserRenderer", "RenderingTransport", "RequestCheck", "check_browser",
                          "open_rendering")

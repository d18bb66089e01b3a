"""The transport boundary: one HTTP request (GET or HEAD) in, one response out; redirects are above it,
unless a transport is set to follow them itself (then its response reports the hops it took).

`CurlTransport` drives libcurl's multi-socket API from the asyncio event loop (measured fastest of
five clients against nginx on loopback, 20k requests at concurrency 100: ~77 µs of client CPU a
request, against 238 µs for aiohttp and 1.3-4.5 ms for niquests and httpx). libcurl tells us which
sockets to watch (SOCKETFUNCTION) and when to wake it (TIMERFUNCTION); the loop calls
`socket_action` back, so no thread and no polling. Bodies are decoded by `content.BodyDecoder`
inside WRITEFUNCTION rather than by libcurl, so the size cap applies to decoded bytes and a bomb is
stopped early.

The address guard (net/addrguard.py) judges the address each socket connects to (OPENSOCKETFUNCTION):
the private-address ban and `--only-net`. With a proxy (`--proxy`) libcurl's sockets go to the proxy,
so the target is judged before the request instead, its name resolved here (`--resolve` pins first):
- https:// (any proxy) and http:// through socks5: the first address the guard allows is pinned with
  CONNECT_TO and the proxy handed that address, never the name (a CONNECT tunnel to ADDRESS:PORT, or
  socks5's IP form), so neither the proxy's DNS nor a rebinding name can steer the request elsewhere.
- http:// through an http(s) proxy: forwarded (`GET http://HOST:PORT/path`), not tunnelled, as
  squid's default rules allow CONNECT to port 443 only. libcurl switches to a tunnel whenever
  CONNECT_TO names another host (CURLOPT_CONNECT_TO(3)), so the address goes in the URL instead: an
  IP literal as it is, a name pinned with `--resolve` replaced by its pinned address. A name from DNS
  stays a name, every one of its addresses judged first: squid and tinyproxy both replace the Host
  header by the URL's authority (RFC 9112 3.2.2), so an address there would lose the site's name-based
  virtual host. The proxy resolves that name itself: a proxy whose DNS answers otherwise than ours
  (split DNS, a rebinding name) is beyond the guard's reach.
`MemoryTransport` serves canned responses for unit tests, delivered as the wire would deliver them
(HEAD without a body, Content-Encoding decoded, the size cap, the deadline of a slow route), so that
both pass one contract (tests/test_transport_contract.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import socket
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pycurl

from harvestman.fetch.content import BodyDecoder, media_type
from harvestman.fetch.stop import StopChecker
from harvestman.model.config import FetchSettings
from harvestman.model.errors import (
    BlockedAddressError,
    ConfigError,
    ConnectFetchError,
    ContentError,
    DnsFetchError,
    FetchError,
    FramingFetchError,
    OutsideNetError,
    ProtocolFetchError,
    TimeoutFetchError,
    TlsFetchError,
    TooManyRedirectsError,
    UnsupportedUrlError,
)
from harvestman.model.records import Headers, HttpRequest, HttpResponse, RedirectHop, Timings, last_header
from harvestman.net.addrguard import OUTSIDE, AddressGuard, parse_ip
from harvestman.net.urls import header_text, resolve

ACCEPT_ENCODING = "gzip, deflate, br, zstd"
MAX_HEADER_BYTES = 64 * 1024
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class Transport(Protocol):
    """Fetches one URL; raises only FetchError subclasses (and ConfigError for a method other than
    GET and HEAD, a caller's mistake). A redirect is returned as it is, or, by a transport that
    follows redirects itself, followed and reported in the response's `redirects`."""

    async def fetch(self, request: HttpRequest) -> HttpResponse:
        """Perform one request and return the (content-decoded) response; HEAD's has an empty body."""
        ...

    async def aclose(self) -> None:
        """Release connections and handles."""
        ...


@dataclass(frozen=True, slots=True)
class TransportSettings:
    """What every request of a CurlTransport shares."""

    user_agent: str
    connect_timeout: float = 15.0
    low_speed_limit: int = 100
    low_speed_time: float = 30.0
    resolve: tuple[str, ...] = ()  # curl form HOST:PORT:ADDR
    guard: AddressGuard = field(default_factory=AddressGuard)
    verify_tls: bool = True
    ca_file: str = ""  # PEM bundle of CAs to trust instead of the system's (a test CA, an intranet's)
    http2: bool = True
    # 0: each redirect is returned as it is (the Fetcher follows it, checking each hop first). N:
    # libcurl follows up to N itself (FOLLOWLOCATION), reporting the hops; the Fetcher judges them after.
    follow_redirects: int = 0
    proxy: str = ""  # http://, https:// or socks5:// HOST:PORT; '' connects directly

    @classmethod
    def from_fetch(cls, fetch: FetchSettings) -> TransportSettings:
        """Settings taken from a crawl configuration's fetch section."""
        return cls(
            user_agent=fetch.user_agent,
            connect_timeout=fetch.connect_timeout,
            low_speed_limit=fetch.low_speed_limit,
            low_speed_time=fetch.low_speed_time,
            resolve=tuple(r.curl_form() for r in fetch.resolve),
            guard=AddressGuard(fetch.allow_net, fetch.only_net),
            verify_tls=fetch.verify_tls,
            proxy=fetch.proxy,
            # No extra_headers here: they go with each request (engine, download(), robots gate),
            # so that the Fetcher can drop credentials on a cross-origin or downgraded hop.
        )


def _set_proxy(curl: pycurl.Curl, s: TransportSettings) -> None:
    """Send a handle's requests through `s.proxy` (tunnel or not is set per request: `_proxy_route`)."""
    curl.setopt(pycurl.PROXY, s.proxy)
    curl.setopt(pycurl.NOPROXY, "")  # no_proxy in the environment must not send a request around it
    if s.proxy.lower().startswith("https://"):
        if s.ca_file:
            curl.setopt(pycurl.PROXY_CAINFO, s.ca_file)
        if not s.verify_tls:
            curl.setopt(pycurl.PROXY_SSL_VERIFYPEER, 0)
            curl.setopt(pycurl.PROXY_SSL_VERIFYHOST, 0)


# libcurl error codes by the FetchError they mean (curl/curl.h).
_TIMEOUT = {28}
_DNS = {5, 6}
_CONNECT = {7, 52, 55, 56, 45}  # couldn't connect, empty reply, send/recv error (resets), interface
_TLS = {35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98}
_URL_MALFORMAT = 3
_PROTOCOL = {1, 8, 16, 18, 61, 92, 100}  # ... 18: partial file, 100: headers too large
_WRITE_ABORT = {23, 42}  # our callbacks stopped the transfer
_TOO_MANY_REDIRECTS = 47  # FOLLOWLOCATION's MAXREDIRS reached
_HTTP_VERSIONS = {1: "1.0", 2: "1.1", 3: "2", 30: "3"}


_RECV_ERROR = 56
_WEIRD_REPLY = 8
_TOO_LARGE = 100


def curl_error(code: int, message: str) -> FetchError:
    """The FetchError for a libcurl error code."""
    if not message and code == _TOO_LARGE:
        message = "response head too large"  # libcurl gives no text for an over-long header line
    text = f"curl error {code}: {message}"
    lowered = message.lower()
    if (code == _RECV_ERROR and "chunk" in lowered) or (code == _WEIRD_REPLY and "length" in lowered):
        # A malformed chunked body (reported as a receive error) or a bad Content-Length: the server's
        # framing, which the same server will get wrong again.
        return FramingFetchError(text)
    if code in _TIMEOUT and lowered.startswith("resolving timed out"):
        # The deadline passed while the name was still being looked up: a DNS failure (a server that
        # never answers), not a slow web server. The class must say which one failed.
        return DnsFetchError(text)
    if code in _TIMEOUT:
        return TimeoutFetchError(text)
    if code in _DNS:
        return DnsFetchError(text)
    if code in _CONNECT:
        return ConnectFetchError(text)
    if code in _TLS:
        return TlsFetchError(text)
    if code in _PROTOCOL:
        return ProtocolFetchError(text)
    if code == _URL_MALFORMAT:  # no retry can mend the URL itself
        return UnsupportedUrlError(text)
    if code == _TOO_MANY_REDIRECTS:
        return TooManyRedirectsError(text)
    return FetchError(text)


class _Job:
    """State of one request in flight: what the callbacks collect, and the future to resolve."""

    __slots__ = ("blocked", "blocked_why", "checker", "decoder", "error", "future", "head_lines",
                 "header_bytes", "headers", "max_size", "partial", "parts_seen", "read_lines", "redirects",
                 "request", "status", "target", "truncated", "wire_body")

    def __init__(self, request: HttpRequest, future: asyncio.Future[HttpResponse], *,
                 follow: bool = False) -> None:
        self.request = request
        self.future = future
        # The raw header lines as libcurl hands them over (HEADERFUNCTION is this list's append: a
        # C call, where a Python callback a line cost ~1 µs, ten a page), read by `read_head()`.
        self.head_lines: list[bytes] = []
        self.read_lines = 0  # how many of them read_head() has read
        self.headers: list[tuple[str, str]] = []
        self.header_bytes = 0
        self.wire_body = 0
        self.max_size = request.max_size
        self.decoder: BodyDecoder | None = None
        self.truncated = False
        self.error: FetchError | None = None
        self.blocked = ""  # the address the guard refused, and why (net/addrguard.py's reasons)
        self.blocked_why = ""
        self.target = ""  # through a proxy: the target's address, judged and pinned
        # With libcurl following redirects: the (status, Location) of each redirect it followed.
        self.redirects: list[tuple[int, str]] | None = [] if follow else None
        self.status = 0  # the status of the head being read (kept only when following)
        # A stop condition: the transfer is aborted once it holds (HTTP/1.1: the connection closes).
        self.checker = None if request.stop is None else StopChecker(request.stop)
        self.parts_seen = 0
        self.partial = ""

    def read_head(self) -> bool:
        """Read the header lines received since the last call into `headers`; False (with `error`
        set) when they break a rule: over MAX_HEADER_BYTES, or ambiguous framing.

        Called at the first body chunk and at the end: libcurl caps what it buffers of a head
        itself (300 KB), so a longer one still ends the transfer, at its body's start.
        """
        lines = self.head_lines
        for line in lines[self.read_lines:]:
            self.header_bytes += len(line)
            if self.header_bytes > MAX_HEADER_BYTES:
                self.error = ProtocolFetchError(f"response headers over {MAX_HEADER_BYTES} bytes")
                return False
            text = line.decode("latin-1").rstrip("\r\n")
            if text.startswith("HTTP/"):
                if self.redirects is not None:
                    self._next_head(text)
                self.headers = []  # a new response (after 1xx): forget the interim one's headers
            elif not text:
                # The end of a head. Content-Length beside Transfer-Encoding is ambiguous framing (the
                # shape of response splitting and smuggling); RFC 9112 §6.3 says to treat it as an error.
                names = {k.lower() for k, _ in self.headers}
                if "content-length" in names and "transfer-encoding" in names:
                    self.error = FramingFetchError("ambiguous framing: Content-Length with Transfer-Encoding")
                    return False
            elif ":" in text:
                name, value = text.split(":", 1)
                self.headers.append((name.strip(), value.strip()))
        self.read_lines = len(lines)
        return True

    def _next_head(self, status_line: str) -> None:
        """Keep the head just read when it was a redirect (libcurl followed it), and note the new status."""
        assert self.redirects is not None
        location = last_header(tuple(self.headers), "location")
        if self.status in REDIRECT_STATUSES and location:
            self.redirects.append((self.status, location))
        parts = status_line.split(" ", 2)
        self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0

    def hops(self, final_url: str) -> tuple[RedirectHop, ...]:
        """The redirects libcurl followed, as hops from the requested URL to `final_url`."""
        hops: list[RedirectHop] = []
        current = self.request.url
        for status, location in self.redirects or ():
            target = resolve(header_text(location), current) or location
            hops.append(RedirectHop(current, status, target))
            current = target
        if hops and current != final_url:  # libcurl's own reading of a Location is what it fetched
            hops[-1] = RedirectHop(hops[-1].url, hops[-1].status, final_url)
        return tuple(hops)

    def on_body(self, chunk: bytes) -> int | None:
        self.wire_body += len(chunk)
        try:
            if self.decoder is None:
                if not self.read_head():
                    return 0  # any count but len(chunk) makes libcurl abort the transfer
                encodings = [v for k, v in self.headers if k.lower() == "content-encoding"]
                self.decoder = BodyDecoder(encodings, self.max_size)
                if self.checker is not None:
                    self.checker = _for_body(self.checker, self.headers)
            self.decoder.feed(chunk)
        except ContentError as exc:
            self.error = exc
            return 0
        if self.decoder.truncated or self.wire_body > self.max_size:
            # Stop reading: the rest of an endless or huge body is never wanted.
            self.truncated = True
            return 0
        if self.checker is not None:
            new = self.decoder.parts_from(self.parts_seen)
            self.parts_seen += len(new)
            if self.checker.feed_parts(new):
                self.partial = self.checker.condition.label
                return 0  # abort: over HTTP/1.1 the connection closes (libcurl cannot keep it)
        return None


_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", ""})


def _for_body(checker: StopChecker, headers: list[tuple[str, str]]) -> StopChecker | None:
    """The checker to apply to a body with these headers: head and selector mean HTML, so any other
    body is read whole; bytes:N applies to every body."""
    if checker.condition.kind == "bytes":
        return checker
    ctype = media_type(last_header(tuple(headers), "content-type"))
    return checker if ctype in _HTML_TYPES else None


def full_size(headers: Headers) -> int:
    """The whole body's size on the wire as the head tells it (Content-Range's total, else
    Content-Length), or -1."""
    content_range = last_header(headers, "content-range")
    if content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[1].strip()
        return int(total) if total.isdigit() else -1
    length = last_header(headers, "content-length")
    return int(length) if length is not None and length.strip().isdigit() else -1


def _asks_encoding(headers: Headers) -> bool:
    """Whether a request names its own Accept-Encoding (then it replaces the default one)."""
    return any(k.lower() == "accept-encoding" for k, _ in headers)


def _check_method(request: HttpRequest) -> None:
    """Refuse a method we do not send (the type allows only GET and HEAD; this catches the untyped)."""
    if request.method != "GET" and request.method != "HEAD":
        raise ConfigError(f"HTTP method {request.method!r} is not supported: only GET and HEAD")


def _guard_socket(guard: AddressGuard, job: _Job) -> Callable[[int, Any], Any]:
    def opensocket(purpose: int, address: Any) -> Any:
        ip = address.addr[0]
        why = guard.refusal(ip)
        if why:
            job.blocked, job.blocked_why = ip, why
            return pycurl.SOCKET_BAD
        return socket.socket(address.family, address.socktype, address.protocol)

    return opensocket


def refused_error(guard: AddressGuard, ip: str, why: str) -> FetchError:
    """The error for a connection the guard refused: outside --only-net, or a private address."""
    if why == OUTSIDE:
        return OutsideNetError(f"refused to connect to {ip}: outside the crawl's --only-net ranges "
                               f"({', '.join(guard.only_nets)})")
    return BlockedAddressError(f"refused to connect to {ip}: a private or reserved address "
                               "(--allow-net CIDR permits a range)")


def url_origin(url: str) -> tuple[str, int]:
    """The host (lower case, IPv6 without brackets) and port a URL's request goes to."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise UnsupportedUrlError(f"cannot request {url[:200]!r}: bad port") from None
    if not parts.hostname:
        raise UnsupportedUrlError(f"cannot request {url[:200]!r}: no host")
    return parts.hostname, port if port is not None else (443 if parts.scheme.lower() == "https" else 80)


def pinned_address(resolve_pins: tuple[str, ...], host: str, port: int) -> str:
    """The address a `--resolve` pin (curl form HOST:PORT:ADDR) gives host:port, or ''."""
    for entry in resolve_pins:
        pinned, _, rest = entry.partition(":")
        pin_port, _, addr = rest.partition(":")
        if pinned.lower() == host and pin_port == str(port):
            return addr.strip("[]")
    return ""


async def host_addresses(resolve_pins: tuple[str, ...], host: str, port: int, timeout: float) -> list[str]:
    """The addresses of host:port: a `--resolve` pin's, else DNS's."""
    pinned = pinned_address(resolve_pins, host, port)
    if pinned:
        return [pinned]
    try:
        async with asyncio.timeout(timeout):
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise DnsFetchError(f"resolving {host} timed out") from None
    except (socket.gaierror, UnicodeError) as exc:
        raise DnsFetchError(f"cannot resolve {host}: {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def guarded_address(guard: AddressGuard, host: str, addresses: list[str]) -> str:
    """The first of `addresses` the guard allows; the refusal's error for the first when none is."""
    reasons = [guard.refusal(a) for a in addresses]
    for address, why in zip(addresses, reasons, strict=True):
        if not why:
            return address
    raise refused_error(guard, addresses[0] if addresses else host, reasons[0] if reasons else "")


@dataclass(frozen=True, slots=True)
class _ProxyRoute:
    """How a request goes through the proxy: the URL asked for, and by a tunnel to `address` or not."""

    url: str
    address: str  # the target's address when harvestman chose it ('' when a forwarding proxy resolves)
    port: int
    tunnel: bool  # CONNECT (or socks5) to address:port; else forwarded as GET absolute-URL


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _with_host(url: str, address: str, port: int) -> str:
    """`url` with its host replaced by `address` (and the port written out), the rest byte for byte."""
    start = url.index("//") + 2
    end = min((i for i in (url.find(c, start) for c in "/?#") if i >= 0), default=len(url))
    userinfo = url[start:end].rpartition("@")[0]
    return f"{url[:start]}{userinfo + '@' if userinfo else ''}{_bracketed(address)}:{port}{url[end:]}"


class CurlTransport:
    """libcurl (pycurl CurlMulti) on the asyncio loop: HTTP/1.1 and HTTP/2, connection reuse."""

    def __init__(self, settings: TransportSettings) -> None:
        if settings.proxy and settings.follow_redirects:
            # Each hop's target must be resolved and judged here before libcurl connects.
            raise ConfigError("a proxy cannot be used with libcurl following redirects itself")
        self.settings = settings
        self._multi = pycurl.CurlMulti()
        self._multi.setopt(pycurl.M_SOCKETFUNCTION, self._on_socket_change)
        self._multi.setopt(pycurl.M_TIMERFUNCTION, self._on_timer_change)
        self._free: list[pycurl.Curl] = []
        self._jobs: dict[pycurl.Curl, _Job] = {}
        self._watched: dict[int, int] = {}
        # libcurl's one timer, kept lazily: `_due` is when libcurl wants socket_action(TIMEOUT) (loop
        # time; None: never), `_timer` a wake-up at or before it, re-armed when it fires early.
        # libcurl asks for 0 ms at every add_handle and then for its nearest deadline (seconds away);
        # cancelling and re-arming a TimerHandle for each cost 2 call_later and a cancel a request
        # (with the header lines below: 104.8 -> 93.8 µs of CPU a fetch, bench/page_costs.py fetch loop).
        self._due: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._soon = False  # a call_soon of _on_timeout is pending (the 0 ms case)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._base_headers = [f"Accept-Encoding: {ACCEPT_ENCODING}"]
        self._http_proxy = settings.proxy.lower().startswith(("http://", "https://"))

    # --- libcurl -> event loop ------------------------------------------------------------

    def _on_socket_change(self, what: int, fd: int, multi: Any, socketp: Any) -> None:
        loop = self._loop
        assert loop is not None
        old = self._watched.pop(fd, 0)
        if old & pycurl.POLL_IN:
            loop.remove_reader(fd)
        if old & pycurl.POLL_OUT:
            loop.remove_writer(fd)
        if what == pycurl.POLL_REMOVE:
            return
        if what & pycurl.POLL_IN:
            loop.add_reader(fd, self._on_ready, fd, pycurl.CSELECT_IN)
        if what & pycurl.POLL_OUT:
            loop.add_writer(fd, self._on_ready, fd, pycurl.CSELECT_OUT)
        self._watched[fd] = what

    def _on_timer_change(self, timeout_ms: int) -> None:
        # Never call socket_action from inside this callback (libcurl forbids re-entry).
        loop = self._loop
        if timeout_ms < 0 or loop is None:
            self._due = None  # a wake-up still armed finds nothing due
            return
        if timeout_ms == 0:
            self._due = loop.time()
            if not self._soon:
                self._soon = True
                loop.call_soon(self._on_soon)
            return
        due = self._due = loop.time() + timeout_ms / 1000.0
        timer = self._timer
        if timer is not None:
            if timer.when() <= due:
                return  # it fires first, and re-arms for `due`
            timer.cancel()
        self._timer = loop.call_at(due, self._on_timer)

    def _on_soon(self) -> None:
        self._soon = False
        self._on_timeout()

    def _on_timer(self) -> None:
        self._timer = None
        self._on_timeout()

    def _on_timeout(self) -> None:
        due = self._due
        if due is None or self._closed:
            return
        loop = self._loop
        assert loop is not None
        if due > loop.time() + 0.001:  # woken before libcurl's deadline (it moved later): wait on
            # (within a millisecond, libcurl's own granularity, is due: it asks again if early)
            if self._timer is None:
                self._timer = loop.call_at(due, self._on_timer)
            return
        self._due = None
        self._act(pycurl.SOCKET_TIMEOUT, 0)

    def _on_ready(self, fd: int, event: int) -> None:
        self._act(fd, event)

    def _act(self, fd: int, event: int) -> None:
        # A multi-level error affects no single transfer; each still finishes through info_read.
        with contextlib.suppress(pycurl.error):
            self._multi.socket_action(fd, event)
        self._collect()

    def _collect(self) -> None:
        while True:
            _queued, done, failed = self._multi.info_read()
            for curl in done:
                self._finish(curl, 0, "")
            for curl, code, message in failed:
                self._finish(curl, code, message)
            if not _queued:
                return

    # --- one request --------------------------------------------------------------------------

    def _handle(self) -> pycurl.Curl:
        if self._free:
            return self._free.pop()
        curl = pycurl.Curl()
        s = self.settings
        curl.setopt(pycurl.NOSIGNAL, 1)
        curl.setopt(pycurl.FOLLOWLOCATION, 0)
        curl.setopt(pycurl.HTTP_CONTENT_DECODING, 0)  # we decode, with a cap on decoded bytes
        curl.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        curl.setopt(pycurl.USERAGENT, s.user_agent)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(s.connect_timeout * 1000)))
        curl.setopt(pycurl.LOW_SPEED_LIMIT, max(0, s.low_speed_limit))
        curl.setopt(pycurl.LOW_SPEED_TIME, max(1, int(s.low_speed_time)))
        curl.setopt(pycurl.HTTP_VERSION,
                    pycurl.CURL_HTTP_VERSION_2TLS if s.http2 else pycurl.CURL_HTTP_VERSION_1_1)
        curl.setopt(pycurl.BUFFERSIZE, 64 * 1024)  # fewer WRITEFUNCTION calls per page
        if s.resolve:
            curl.setopt(pycurl.RESOLVE, list(s.resolve))
        if s.ca_file:
            curl.setopt(pycurl.CAINFO, s.ca_file)
        if not s.verify_tls:
            curl.setopt(pycurl.SSL_VERIFYPEER, 0)
            curl.setopt(pycurl.SSL_VERIFYHOST, 0)
        if s.proxy:
            _set_proxy(curl, s)
        if s.follow_redirects:
            curl.setopt(pycurl.FOLLOWLOCATION, 1)
            curl.setopt(pycurl.MAXREDIRS, s.follow_redirects)
            curl.setopt(pycurl.REDIR_PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        return curl

    async def fetch(self, request: HttpRequest) -> HttpResponse:
        """Perform one request; FetchError subclasses on failure, truncated=True when capped."""
        if self._closed:
            raise FetchError("transport is closed")
        _check_method(request)
        # Through a proxy: the target judged here, and how the proxy is asked for it (`_proxy_route`).
        route = await self._proxy_route(request) if self.settings.proxy else None
        self._loop = loop = asyncio.get_running_loop()
        future: asyncio.Future[HttpResponse] = loop.create_future()
        job = _Job(request, future, follow=self.settings.follow_redirects > 0)
        curl = self._handle()
        try:
            curl.setopt(pycurl.URL, request.url if route is None else route.url)
            if route is not None:
                job.target = route.address
                if self._http_proxy:
                    curl.setopt(pycurl.HTTPPROXYTUNNEL, int(route.tunnel))
                # Any host and port: the handle fetches this one URL (redirects are followed above).
                curl.setopt(pycurl.CONNECT_TO, [f"::{_bracketed(route.address)}:{route.port}"]
                            if route.tunnel else [])
            # Set on every request: a pooled handle may have served a HEAD (NOBODY) last time.
            if request.method == "HEAD":
                curl.setopt(pycurl.NOBODY, 1)
            else:
                curl.setopt(pycurl.HTTPGET, 1)
            base = self._base_headers
            if request.headers and _asks_encoding(request.headers):
                base = []  # the request's own (a HEAD for the size, a Range request: identity)
            curl.setopt(pycurl.HTTPHEADER, base + [f"{k}: {v}" for k, v in request.headers])
            curl.setopt(pycurl.TIMEOUT_MS, max(1, int(request.timeout * 1000)))
            curl.setopt(pycurl.CONNECTTIMEOUT_MS,
                        max(1, int(min(self.settings.connect_timeout, request.timeout) * 1000)))
            curl.setopt(pycurl.HEADERFUNCTION, job.head_lines.append)
            curl.setopt(pycurl.WRITEFUNCTION, job.on_body)
            if not self.settings.proxy:  # (through a proxy, the sockets go to the proxy)
                curl.setopt(pycurl.OPENSOCKETFUNCTION, _guard_socket(self.settings.guard, job))
        except (pycurl.error, UnicodeEncodeError, TypeError) as exc:
            self._release(curl)
            raise ProtocolFetchError(f"cannot request {request.url!r}: {exc}") from None
        self._jobs[curl] = job
        # add_handle makes libcurl ask for a 0 ms timer: the transfer starts from _on_timeout.
        self._multi.add_handle(curl)
        try:
            return await future
        except asyncio.CancelledError:
            if self._jobs.pop(curl, None) is not None:
                self._multi.remove_handle(curl)
                self._release(curl)
            raise

    async def _proxy_route(self, request: HttpRequest) -> _ProxyRoute:
        """How the proxy is asked for the request's target, judged here first (`--resolve` pins first)."""
        s = self.settings
        host, port = url_origin(request.url)
        timeout = max(0.001, min(s.connect_timeout, request.timeout))
        addresses = await host_addresses(s.resolve, host, port, timeout)
        if not (self._http_proxy and request.url[:5].lower() == "http:"):
            return _ProxyRoute(request.url, guarded_address(s.guard, host, addresses), port, True)
        # Forwarded: a proxy resolving the name may connect to any of its addresses, so each must pass.
        for address in addresses:
            why = s.guard.refusal(address)
            if why:
                raise refused_error(s.guard, address, why)
        if parse_ip(host) is not None:
            return _ProxyRoute(request.url, host, port, False)
        pinned = pinned_address(s.resolve, host, port)
        if pinned:  # a name only harvestman knows: the proxy is handed its pinned address
            return _ProxyRoute(_with_host(request.url, pinned, port), pinned, port, False)
        return _ProxyRoute(request.url, "", port, False)

    def _finish(self, curl: pycurl.Curl, code: int, message: str) -> None:
        job = self._jobs.pop(curl, None)
        self._multi.remove_handle(curl)
        if job is None:
            self._release(curl)
            return
        try:
            result: HttpResponse | FetchError = self._result(curl, job, code, message)
        except FetchError as exc:
            result = exc
        except Exception as exc:  # a bug here must still resolve the future, never hang the caller
            result = FetchError(f"internal transport error: {type(exc).__name__}: {exc}")
        self._release(curl)
        if job.future.done():
            return
        if isinstance(result, FetchError):
            job.future.set_exception(result)
        else:
            job.future.set_result(result)

    def _result(self, curl: pycurl.Curl, job: _Job, code: int, message: str) -> HttpResponse:
        job.read_head()  # the lines after the body's start: a bodiless response's, a trailer's
        if job.blocked:
            raise refused_error(self.settings.guard, job.blocked, job.blocked_why)
        if job.error is not None:
            raise job.error
        if code and not (code in _WRITE_ABORT and (job.truncated or job.partial)):
            raise curl_error(code, message)
        body = b""
        size = full_size(tuple(job.headers)) if job.partial else -1
        if job.partial and 0 <= size <= job.wire_body and job.checker is not None and job.checker.cut < 0:
            job.partial = ""  # the stop held on the last bytes: the whole body is here
        if job.decoder is not None and job.partial:
            body = job.decoder.cut()  # stopped on purpose: a compressed stream is cut short
            if job.checker is not None and job.checker.cut >= 0:
                body = body[:job.checker.cut]
        elif job.decoder is not None:
            body = job.decoder.finish()  # may raise ContentError for a cut-short stream
            job.truncated = job.truncated or job.decoder.truncated
        timings = Timings(
            dns=curl.getinfo(pycurl.NAMELOOKUP_TIME),
            connect=curl.getinfo(pycurl.CONNECT_TIME),
            tls=curl.getinfo(pycurl.APPCONNECT_TIME),
            first_byte=curl.getinfo(pycurl.STARTTRANSFER_TIME),
            total=curl.getinfo(pycurl.TOTAL_TIME),
        )
        url = job.request.url
        hops: tuple[RedirectHop, ...] = ()
        if job.redirects:
            url = str(curl.getinfo(pycurl.EFFECTIVE_URL))
            hops = job.hops(url)
        return HttpResponse(
            url=url,
            status=int(curl.getinfo(pycurl.RESPONSE_CODE)),
            headers=tuple(job.headers),
            body=body,
            wire_bytes=job.header_bytes + job.wire_body,
            truncated=job.truncated,
            timings=timings,
            # Through a proxy, PRIMARY_IP is the proxy's: the server's is the address handed to it
            # ('' when a forwarding proxy resolved the name itself).
            remote_addr=job.target if self.settings.proxy else str(curl.getinfo(pycurl.PRIMARY_IP) or ""),
            http_version=_HTTP_VERSIONS.get(int(curl.getinfo(pycurl.INFO_HTTP_VERSION)), ""),
            redirects=hops,
            partial=job.partial,
            body_wire_bytes=job.wire_body,
            full_size=size,
        )

    def _release(self, curl: pycurl.Curl) -> None:
        # Drop the callbacks (they hold the job and its body) before the handle waits in the pool.
        curl.unsetopt(pycurl.HEADERFUNCTION)
        curl.unsetopt(pycurl.WRITEFUNCTION)
        curl.unsetopt(pycurl.OPENSOCKETFUNCTION)
        if self._closed or len(self._free) >= 512:
            curl.close()
        else:
            self._free.append(curl)

    async def aclose(self) -> None:
        """Abort transfers in flight, close pooled handles and the connection cache."""
        if self._closed:
            return
        self._closed = True
        for curl, job in list(self._jobs.items()):
            self._multi.remove_handle(curl)
            if not job.future.done():
                job.future.set_exception(FetchError("transport closed"))
            curl.close()
        self._jobs.clear()
        for curl in self._free:
            curl.close()
        self._free.clear()
        if self._timer is not None:
            self._timer.cancel()
        self._due = None
        self._multi.close()
        if self._loop is not None:
            for fd, what in self._watched.items():
                if what & pycurl.POLL_IN:
                    self._loop.remove_reader(fd)
                if what & pycurl.POLL_OUT:
                    self._loop.remove_writer(fd)
        self._watched.clear()


Route = (HttpResponse | FetchError | Callable[[HttpRequest], HttpResponse]
         | Callable[[HttpRequest], Awaitable[HttpResponse]])


class MemoryTransport:
    """A transport serving canned responses by URL, for unit tests; records every request.

    A route is a response, a FetchError to raise, or a function of the request returning a
    response (an async one is a slow server: the request's timeout applies to it). With
    `follow_redirects` N it follows up to N http(s) redirects itself, reporting the hops, as
    CurlTransport does with libcurl's FOLLOWLOCATION.
    """

    def __init__(self, routes: Mapping[str, Route], *, follow_redirects: int = 0) -> None:
        self.routes = dict(routes)
        self.requests: list[HttpRequest] = []
        self.closed = False
        self.follow_redirects = follow_redirects

    async def fetch(self, request: HttpRequest) -> HttpResponse:
        """The route's response for request.url (a 404 when there is none), as the wire delivers it."""
        _check_method(request)
        response = await self._answer(request)
        return await self._follow(request, response) if self.follow_redirects else response

    async def _follow(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        """Follow redirects from `response` as libcurl's FOLLOWLOCATION does: http(s) targets only,
        at most `follow_redirects` (then TooManyRedirectsError, libcurl's error 47)."""
        hops: list[RedirectHop] = []
        wire_bytes = response.wire_bytes
        while True:  # bounded: each turn adds a hop, and hops are capped
            location = response.header("location")
            if response.status not in REDIRECT_STATUSES or not location:
                break
            target = resolve(header_text(location), response.url)
            if target is None or not target.startswith(("http://", "https://")):
                raise ProtocolFetchError(f"redirect to a protocol not followed: {location[:200]!r}")
            if len(hops) >= self.follow_redirects:
                raise TooManyRedirectsError(f"maximum ({self.follow_redirects}) redirects followed")
            hops.append(RedirectHop(response.url, response.status, target))
            response = await self._answer(dataclasses.replace(request, url=target))
            wire_bytes += response.wire_bytes
        if hops:
            response = dataclasses.replace(response, redirects=tuple(hops), wire_bytes=wire_bytes)
        return response

    async def _answer(self, request: HttpRequest) -> HttpResponse:
        """One request's response, its route's."""
        self.requests.append(request)
        route = self.routes.get(request.url)
        if route is None:
            return make_response(request.url, 404, body=b"not found" if request.method == "GET" else b"")
        if isinstance(route, FetchError):
            raise route
        answer = route(request) if callable(route) else route
        if inspect.isawaitable(answer):
            try:
                async with asyncio.timeout(request.timeout):
                    answer = await answer
            except TimeoutError:
                raise TimeoutFetchError(f"no answer within {request.timeout:g}s (a slow route)") from None
        return _delivered(answer, request)

    async def aclose(self) -> None:
        """Mark the transport closed."""
        self.closed = True


def _delivered(response: HttpResponse, request: HttpRequest) -> HttpResponse:
    """A canned response as CurlTransport would return it: its body content-decoded and capped at
    the request's max_size, none for a HEAD; it answers whatever URL it is routed from."""
    changes: dict[str, Any] = {}
    if response.url != request.url:
        changes["url"] = request.url
    if request.method == "HEAD":
        changes["body"] = b""
    else:
        encodings = [v for k, v in response.headers if k.lower() == "content-encoding"]
        if encodings or len(response.body) > request.max_size:
            decoder = BodyDecoder(encodings, request.max_size)  # ContentError as over the wire
            decoder.feed(response.body)
            changes["body"] = decoder.finish()
            # Over the cap on the wire counts too, as CurlTransport stops reading there.
            changes["truncated"] = (response.truncated or decoder.truncated
                                    or len(response.body) > request.max_size)
    return dataclasses.replace(response, **changes) if changes else response


def make_response(url: str, status: int = 200, headers: Headers = (), body: bytes = b"") -> HttpResponse:
    """A plain HttpResponse, for tests and MemoryTransport routes."""
    return HttpResponse(url=url, status=status, headers=headers, body=body, wire_bytes=len(body),
                        truncated=False, timings=Timings(), remote_addr="", http_version="1.1")


"""Which wire a request takes when only part of a page is wanted: HTTP/2 (h2) or HTTP/1.1 (libcurl).

`PartialTransport` routes each request (`--http2 auto|always|never`):

- no stop condition: libcurl, as in every crawl (`always`: the h2 transport where ALPN says h2);
- a stop condition on an https origin whose ALPN says "h2" (`auto`, `always`): the h2 transport,
  which resets the stream at the stop and keeps the connection for the next page;
- otherwise HTTP/1.1: where the host said `Accept-Ranges: bytes` (learnt from an earlier answer),
  the body is read in Range requests of growing size until the stop holds, on one kept-alive
  connection; where it did not (or before we know), the transfer is aborted at the stop, which
  closes the connection (HTTP/1.1 cannot end a response early otherwise).

A response assembled from ranges keeps the server's 206 and says what it holds:
`Content-Range: bytes 0-END/TOTAL` and `Content-Length` of the body as assembled.
"""

from __future__ import annotations

import dataclasses
import re
import time
import urllib.parse
from typing import TYPE_CHECKING, Literal

from harvestman.fetch.stop import StopChecker, parse_stop
from harvestman.fetch.transport import CurlTransport, Transport, TransportSettings, full_size
from harvestman.model.config import FetchSettings
from harvestman.model.errors import ConfigError, ProtocolFetchError
from harvestman.model.records import HttpRequest, HttpResponse, StopCondition

# The h2 stack is imported when a crawl asks for it (open_transport): the default crawl never does.
if TYPE_CHECKING:
    from harvestman.fetch.h2_transport import H2Transport

Http2Mode = Literal["auto", "always", "never"]
HTTP2_MODES = ("auto", "always", "never")
FIRST_RANGE = 16 * 1024  # the first Range asked for; each next one is twice as long ...
MAX_RANGE = 256 * 1024  # ... up to this


def check_http2_mode(value: str) -> Http2Mode:
    """`value` as an --http2 mode (ConfigError for any other)."""
    if value == "auto":
        return "auto"
    if value == "always":
        return "always"
    if value == "never":
        return "never"
    raise ConfigError(f"--http2 must be one of {', '.join(HTTP2_MODES)}, not {value!r}")


def _host(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class PartialTransport:
    """Routes requests between libcurl and the h2 transport, and stops HTTP/1.1 bodies with Range."""

    def __init__(self, curl: Transport, h2: H2Transport | None, mode: Http2Mode = "auto") -> None:
        self.curl = curl
        self.h2 = h2 if mode != "never" else None
        self.mode = mode
        self.ranges: dict[str, bool] = {}  # per origin: whether it answers Range requests
        self.range_requests = 0  # Range requests sent (for tests and the benchmark)

    async def fetch(self, request: HttpRequest) -> HttpResponse:
        """Fetch over the wire that suits the request (see the module's docstring)."""
        if request.stop is None and self.mode != "always":
            return await self.curl.fetch(request)
        if (self.h2 is not None and request.url[:8].lower() == "https://"
                and await self.h2.protocol(request.url, request.timeout) == "h2"):
            return await self.h2.fetch(request)
        if request.stop is None or request.method == "HEAD":
            return await self.curl.fetch(request)
        origin = _host(request.url)
        if self.ranges.get(origin):
            return await self._ranged(request, origin)
        response = await self.curl.fetch(request)  # aborted at the stop: the connection closes
        accepts = (response.header("accept-ranges") or "").strip().lower() == "bytes"
        self.ranges.setdefault(origin, accepts)
        return response

    async def _ranged(self, request: HttpRequest, origin: str) -> HttpResponse:
        """The body read in growing Range requests until the stop condition holds or it ends."""
        assert request.stop is not None
        checker = StopChecker(request.stop)
        start = time.monotonic()
        deadline = start + request.timeout
        parts: list[bytes] = []
        offset = wire = 0
        size = FIRST_RANGE
        if request.stop.kind == "bytes":
            size = max(1, min(int(request.stop.value), request.max_size))
        first: HttpResponse | None = None
        total = -1
        partial = ""
        truncated = False
        base = tuple((k, v) for k, v in request.headers
                     if k.lower() not in ("range", "accept-encoding"))
        # Bounded: every turn adds at least one byte to `offset` (or ends), which is capped by max_size.
        while True:
            remaining = deadline - time.monotonic()
            end = min(offset + size, request.max_size) - 1
            headers = (*base, ("Range", f"bytes={offset}-{end}"), ("Accept-Encoding", "identity"))
            self.range_requests += 1
            answer = await self.curl.fetch(dataclasses.replace(
                request, headers=headers, stop=None, timeout=max(0.001, remaining)))
            wire += answer.wire_bytes
            if answer.status != 206:
                if first is None:  # the server does not do ranges after all (or an error status)
                    if answer.status == 200:
                        self.ranges[origin] = False
                    return dataclasses.replace(answer, wire_bytes=wire)
                raise ProtocolFetchError(f"a Range request got HTTP {answer.status} mid-body")
            if first is None:
                first = answer
                total = full_size(answer.headers)
            parts.append(answer.body)
            if checker.feed(answer.body):
                partial = request.stop.label
                break
            offset += len(answer.body)
            if not answer.body or (total >= 0 and offset >= total):
                break
            if offset >= request.max_size:
                truncated = True
                break
            size = min(size * 2, MAX_RANGE)
        assert first is not None
        body = b"".join(parts)
        if partial and checker.cut >= 0:
            body = body[:checker.cut]
        whole = total >= 0 and len(body) >= total
        headers_out = tuple((k, v) for k, v in first.headers
                            if k.lower() not in ("content-range", "content-length"))
        if body and not whole:
            headers_out += (("Content-Range", f"bytes 0-{len(body) - 1}/{total if total >= 0 else '*'}"),)
        headers_out += (("Content-Length", str(len(body))),)
        return dataclasses.replace(
            first, headers=headers_out, body=body, wire_bytes=wire, truncated=truncated,
            partial="" if whole else partial, body_wire_bytes=len(body), full_size=total,
            status=200 if whole else 206)

    async def aclose(self) -> None:
        """Close both transports."""
        await self.curl.aclose()
        if self.h2 is not None:
            await self.h2.aclose()


class StopPlan:
    """Which stop condition a URL gets: the first matching `stop_rules` pattern's, else `stop_at`'s."""

    def __init__(self, stop_at: str, rules: tuple[tuple[str, str], ...] = ()) -> None:
        self.default = parse_stop(stop_at) if stop_at else None
        self.rules = [(re.compile(pattern), parse_stop(spec)) for pattern, spec in rules]

    @classmethod
    def from_fetch(cls, fetch: FetchSettings) -> StopPlan | None:
        """The plan of a crawl's fetch settings; None when no page is to be stopped."""
        if not fetch.stop_at and not fetch.stop_rules:
            return None
        return cls(fetch.stop_at, fetch.stop_rules)

    def for_url(self, url: str) -> StopCondition | None:
        """The stop condition of `url` (None: read it whole)."""
        for pattern, condition in self.rules:
            if pattern.search(url):
                return condition
        return self.default


def open_transport(fetch: FetchSettings) -> Transport:
    """The transport a crawl with these settings fetches with: libcurl alone unless a stop condition
    or `http2 = "always"` asks for the h2 transport (so the default crawl pays nothing for it)."""
    settings = TransportSettings.from_fetch(fetch)
    mode = check_http2_mode(fetch.http2)
    if mode == "never":
        settings = dataclasses.replace(settings, http2=False)
    curl = CurlTransport(settings)
    if not fetch.stop_at and not fetch.stop_rules and mode != "always":
        return curl
    from harvestman.fetch.h2_transport import H2Transport  # the h2 stack loads only when asked for

    # The h2 transport connects by itself, never through a proxy: with one, libcurl takes every request.
    h2 = None if mode == "never" or fetch.proxy else H2Transport(settings)
    return PartialTransport(curl, h2, mode)

"""HTTP/2 over asyncio TLS with the sans-IO `h2` library: one connection per origin carrying many
streams, and a body stopped early with RST_STREAM (CANCEL) while the connection stays open.

Why `h2` and not libcurl for stopping: measured against a 13.5 MB body, `h2` on an asyncio socket let
~1% cross the wire after the reset, libcurl 30-45% (its receive windows are large and not ours to
steer). Here the receive window is ours (RFC 9113 §5.2.1): every stream starts with a small window
(SETTINGS_INITIAL_WINDOW_SIZE = `stop_window`), and a stream with a stop condition pending gets
WINDOW_UPDATEs only for bytes the stop checker has judged, so at most one window crosses past the
stop point. A stream with no stop condition (or whose body is not HTML, for head/selector) is given
a large window at once. libcurl stays the transport of the default crawl: it costs ~77 µs of CPU a
request where pure-Python framing costs several times that.

The private-address guard is kept: the host is resolved here, every address checked with the
AddressGuard (the private-address ban and --only-net), and only an allowed one connected to. It never
goes through a proxy: with --proxy, fetch/partial.py keeps every request on libcurl. ALPN offers "h2"
and "http/1.1"; an origin that picks HTTP/1.1 is remembered, and `protocol()` tells the caller
(fetch/partial.py) to go elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from harvestman.fetch.content import BodyDecoder, media_type
from harvestman.fetch.stop import StopChecker
from harvestman.fetch.transport import (
    ACCEPT_ENCODING,
    MAX_HEADER_BYTES,
    TransportSettings,
    _check_method,
    guarded_address,
    host_addresses,
)
from harvestman.model.errors import (
    ConfigError,
    ConnectFetchError,
    ContentError,
    FetchError,
    ProtocolFetchError,
    TimeoutFetchError,
    TlsFetchError,
    UnsupportedUrlError,
)
from harvestman.model.records import HttpRequest, HttpResponse, Timings

STOP_WINDOW = 8 * 1024  # a stream's receive window while its stop condition is pending
FULL_WINDOW = 4 * 1024 * 1024  # a stream's window when the whole body is wanted
CONNECTION_WINDOW = 64 * 1024 * 1024  # the connection's window (every stream shares it)
READ_SIZE = 256 * 1024
FRAME_HEAD = 9  # bytes of an HTTP/2 frame header
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", ""})
# Hop-by-hop request headers HTTP/2 forbids (RFC 9113 §8.2.2); Host becomes :authority.
_DROPPED = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade",
                      b"host", b"te"})


@dataclass(frozen=True, slots=True)
class Origin:
    """scheme, host and port: what one connection serves."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of an http(s) URL (UnsupportedUrlError for any other)."""
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        if scheme not in ("http", "https") or not parts.hostname:
            raise UnsupportedUrlError(f"not an http(s) URL: {url[:200]!r}")
        return cls(scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80))

    @property
    def authority(self) -> str:
        """host[:port] as :authority carries it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


class _Stream:
    """One request on a connection: what its frames brought, and the future its caller waits on."""

    __slots__ = (
        "body_wire",
        "checker",
        "decoder",
        "error",
        "first_byte",
        "full_size",
        "future",
        "header_bytes",
        "headers",
        "partial",
        "parts_seen",
        "request",
        "started",
        "status",
        "stopped",
        "truncated",
        "wire",
    )

    def __init__(self, request: HttpRequest, future: asyncio.Future[None]) -> None:
        self.request = request
        self.future = future
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.header_bytes = 0
        self.wire = 0
        self.body_wire = 0
        self.full_size = -1
        self.decoder: BodyDecoder | None = None
        self.checker = StopChecker(request.stop) if request.stop is not None else None
        self.parts_seen = 0
        self.partial = ""
        self.stopped = False  # we reset the stream on purpose (a stop, or the size cap)
        self.truncated = False
        self.error: FetchError | None = None
        self.started = time.monotonic()
        self.first_byte = 0.0


class _Connection:
    """One TLS connection speaking HTTP/2 to one origin; a reader task dispatches frames to streams."""

    def __init__(self, origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 remote_addr: str, stop_window: int, connect_time: float) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.remote_addr = remote_addr
        self.stop_window = stop_window
        self.connect_time = connect_time
        config = h2.config.H2Configuration(client_side=True, header_encoding=None)
        self.h2 = h2.connection.H2Connection(config=config)
        self.h2.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: stop_window,
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_BYTES,
        })
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self.streams: dict[int, _Stream] = {}
        self.closed = False
        self.requests = 0  # streams opened, over the connection's life
        self.received = 0  # bytes read from the socket (TLS payload)
        self._room = asyncio.Condition()
        self._flush()
        self.task = asyncio.get_running_loop().create_task(self._read_loop())

    # --- sending ------------------------------------------------------------------------------

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.closed:
            self.writer.write(data)

    def _has_room(self) -> bool:
        limit = self.h2.remote_settings.max_concurrent_streams or 100
        return self.closed or len(self.streams) < limit

    async def request(self, request: HttpRequest, user_agent: str) -> _Stream:
        """Open a stream for `request` and wait for its end (raises FetchError)."""
        async with self._room:
            await self._room.wait_for(self._has_room)
        if self.closed:
            raise ConnectFetchError(f"connection to {self.origin.authority} closed")
        path = urllib.parse.urlsplit(request.url)
        target = (path.path or "/") + (f"?{path.query}" if path.query else "")
        headers: list[tuple[bytes, bytes]] = [
            (b":method", request.method.encode()), (b":scheme", self.origin.scheme.encode()),
            (b":authority", self.origin.authority.encode()), (b":path", target.encode("ascii", "replace")),
            (b"user-agent", user_agent.encode("latin-1", "replace")),
        ]
        names = set()
        for name, value in request.headers:
            key = name.strip().lower().encode("latin-1", "replace")
            if key in _DROPPED:
                continue
            names.add(key)
            headers.append((key, value.encode("latin-1", "replace")))
        if b"accept-encoding" not in names:
            headers.append((b"accept-encoding", ACCEPT_ENCODING.encode()))
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stream = _Stream(request, future)
        try:
            stream_id = self.h2.get_next_available_stream_id()
            self.h2.send_headers(stream_id, headers, end_stream=True)
            if stream.checker is None and request.method == "GET":
                self.h2.increment_flow_control_window(FULL_WINDOW - self.stop_window, stream_id=stream_id)
        except h2.exceptions.H2Error as exc:
            raise ProtocolFetchError(f"cannot send the request to {self.origin.authority}: {exc}") from None
        self.requests += 1
        self.streams[stream_id] = stream
        self._flush()
        try:
            async with asyncio.timeout(request.timeout):
                await future
        except TimeoutError:
            self._reset(stream_id, stream)
            raise TimeoutFetchError(f"no complete answer within {request.timeout:g}s") from None
        except asyncio.CancelledError:
            self._reset(stream_id, stream)
            raise
        if stream.error is not None:
            raise stream.error
        return stream

    def _reset(self, stream_id: int, stream: _Stream) -> None:
        """Cancel a stream (RST_STREAM CANCEL); the connection stays."""
        if self.streams.pop(stream_id, None) is None or self.closed:
            return
        with contextlib.suppress(h2.exceptions.H2Error):
            self.h2.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        self._flush()
        self._wake()

    def _wake(self) -> None:
        async def notify() -> None:
            async with self._room:
                self._room.notify_all()
        asyncio.get_running_loop().create_task(notify())

    # --- receiving ------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        error: FetchError = ConnectFetchError(f"connection to {self.origin.authority} closed by the server")
        try:
            while True:  # ends at EOF, a connection error or the end of the connection
                data = await self.reader.read(READ_SIZE)
                if not data:
                    break
                self.received += len(data)
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError as exc:
                    error = ProtocolFetchError(f"HTTP/2 protocol error from {self.origin.authority}: {exc}")
                    break
                for event in events:
                    self._on_event(event)
                self._flush()
                if self.closed:
                    break
        except (OSError, ssl.SSLError) as exc:
            error = ConnectFetchError(f"connection to {self.origin.authority} failed: {exc}")
        except asyncio.CancelledError:
            error = FetchError("transport closed")
        finally:
            self._fail_all(error)

    def _fail_all(self, error: FetchError) -> None:
        self.closed = True
        for stream in self.streams.values():
            if not stream.future.done():
                stream.error = error
                stream.future.set_result(None)
        self.streams.clear()
        with contextlib.suppress(Exception):
            self.writer.close()
        self._wake()

    def _on_event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            self._on_headers(event)
        elif isinstance(event, h2.events.DataReceived):
            self._on_data(event)
        elif isinstance(event, h2.events.StreamEnded):
            self._end(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            stream = self.streams.pop(event.stream_id, None)
            if stream is not None and not stream.future.done():
                stream.error = ProtocolFetchError(
                    f"the server reset the stream (HTTP/2 error {event.error_code})")
                stream.future.set_result(None)
                self._wake()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._fail_all(ConnectFetchError(
                f"the server ended the connection (GOAWAY, error {event.error_code})"))
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            self._wake()

    def _on_headers(self, event: h2.events.ResponseReceived) -> None:
        stream = self.streams.get(event.stream_id)
        if stream is None:
            return
        stream.first_byte = time.monotonic() - stream.started
        for raw_name, raw_value in event.headers or ():
            name = bytes(raw_name).decode("latin-1")
            value = bytes(raw_value).decode("latin-1")
            stream.header_bytes += len(name) + len(value) + 4  # as an HTTP/1.1 line would be
            if name == ":status":
                stream.status = int(value) if value.isdigit() else 0
            elif not name.startswith(":"):
                stream.headers.append((name, value))
        stream.wire += stream.header_bytes + FRAME_HEAD
        length = next((v for k, v in stream.headers if k == "content-length"), "")
        stream.full_size = int(length) if length.isdigit() else -1
        checker = stream.checker
        ctype = media_type(next((v for k, v in stream.headers if k == "content-type"), None))
        if checker is not None and checker.condition.kind != "bytes" and ctype not in _HTML_TYPES:
            # head and selector mean HTML: any other body is wanted whole (bytes:N applies to all).
            stream.checker = None
        if stream.checker is None and stream.request.method == "GET" and checker is not None:
            with contextlib.suppress(h2.exceptions.H2Error):
                self.h2.increment_flow_control_window(FULL_WINDOW - self.stop_window,
                                                      stream_id=event.stream_id)

    def _on_data(self, event: h2.events.DataReceived) -> None:
        stream_id = event.stream_id
        size = event.flow_controlled_length
        stream = self.streams.get(stream_id)
        if stream is None:  # a stream we gave up on (a timeout): its bytes still free the connection
            with contextlib.suppress(h2.exceptions.H2Error):
                self.h2.acknowledge_received_data(size, stream_id)
            return
        stream.wire += size + FRAME_HEAD
        stream.body_wire += size
        data = event.data or b""
        try:
            if stream.decoder is None:
                encodings = [v for k, v in stream.headers if k == "content-encoding"]
                stream.decoder = BodyDecoder(encodings, stream.request.max_size)
            stream.decoder.feed(data)
        except ContentError as exc:
            stream.error = exc
            self._finish_early(stream_id, stream, size)
            return
        if stream.decoder.truncated or stream.body_wire > stream.request.max_size:
            stream.truncated = True
            self._finish_early(stream_id, stream, size)
            return
        checker = stream.checker
        if checker is not None:
            new = stream.decoder.parts_from(stream.parts_seen)
            stream.parts_seen += len(new)
            if checker.feed_parts(new):
                stream.partial = checker.condition.label
                self._finish_early(stream_id, stream, size)
                return
        # Judged and still wanted: hand the bytes back to the window (the stop's budget moves on).
        with contextlib.suppress(h2.exceptions.H2Error):
            self.h2.acknowledge_received_data(size, stream_id)

    def _finish_early(self, stream_id: int, stream: _Stream, size: int) -> None:
        """Stop a stream on purpose: RST_STREAM (CANCEL), the caller gets what arrived."""
        stream.stopped = True
        self._reset(stream_id, stream)
        # After the reset only the connection's window takes the last frame's bytes back; the
        # stream's is never reopened, so nothing more is sent on it.
        with contextlib.suppress(h2.exceptions.H2Error):
            self.h2.acknowledge_received_data(size, stream_id)
        self._flush()
        if not stream.future.done():
            stream.future.set_result(None)

    def _end(self, stream_id: int) -> None:
        stream = self.streams.pop(stream_id, None)
        if stream is None:
            return
        if stream.checker is not None and stream.checker.condition.kind == "selector":
            stream.checker.matches()  # for the record only: the whole body came anyway
        if not stream.future.done():
            stream.future.set_result(None)
        self._wake()

    async def aclose(self) -> None:
        """Say goodbye (GOAWAY) and close the socket."""
        if not self.closed:
            with contextlib.suppress(Exception):
                self.h2.close_connection()
                self._flush()
        self._fail_all(FetchError("transport closed"))
        self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


class H2Transport:
    """HTTP/2 (over TLS, by ALPN) with stop conditions; one connection per origin, reused."""

    def __init__(self, settings: TransportSettings, *, stop_window: int = STOP_WINDOW) -> None:
        if settings.proxy:  # it connects by itself; fetch/partial.py keeps to libcurl with a proxy
            raise ConfigError("the HTTP/2 transport does not go through a proxy")
        self.settings = settings
        self.stop_window = stop_window
        self._connections: dict[Origin, _Connection] = {}
        self._protocols: dict[Origin, str] = {}  # what ALPN chose, per origin
        self._locks: dict[Origin, asyncio.Lock] = {}
        self._closed = False
        self.connections_opened = 0
        self._ssl = self._context()

    def _context(self) -> ssl.SSLContext:
        s = self.settings
        context = ssl.create_default_context(cafile=s.ca_file or None)
        if not s.verify_tls:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2", "http/1.1"])
        return context

    async def protocol(self, url: str, timeout: float) -> str:
        """The protocol the URL's origin speaks ("h2" or "http/1.1"), connecting when not yet known
        (the connection is kept for the fetches to come). Plain http:// is always HTTP/1.1 here."""
        origin = Origin.of(url)
        if origin.scheme != "https":
            return "http/1.1"
        known = self._protocols.get(origin)
        if known:
            return known
        await self._connection(origin, timeout)
        return self._protocols.get(origin, "http/1.1")

    async def fetch(self, request: HttpRequest) -> HttpResponse:
        """Fetch over HTTP/2; ProtocolFetchError when the origin does not speak it."""
        if self._closed:
            raise FetchError("transport is closed")
        _check_method(request)
        origin = Origin.of(request.url)
        if origin.scheme != "https":
            raise ProtocolFetchError(f"HTTP/2 here is over TLS only: {request.url[:200]!r}")
        start = time.monotonic()
        connection = await self._connection(origin, request.timeout)
        if connection is None:
            raise ProtocolFetchError(f"{origin.authority} does not speak HTTP/2 (ALPN chose HTTP/1.1)")
        remaining = max(0.001, request.timeout - (time.monotonic() - start))
        if remaining != request.timeout:
            request = HttpRequest(request.url, request.headers, remaining, request.max_size,
                                  request.method, request.stop)
        stream = await connection.request(request, self.settings.user_agent)
        return self._response(stream, connection, start)

    def _response(self, stream: _Stream, connection: _Connection, start: float) -> HttpResponse:
        body = b""
        if stream.decoder is not None:
            if stream.stopped:
                body = stream.decoder.cut()
            else:
                body = stream.decoder.finish()  # may raise ContentError for a cut-short stream
                stream.truncated = stream.truncated or stream.decoder.truncated
        checker = stream.checker
        if stream.partial and checker is not None and checker.cut >= 0:
            body = body[:checker.cut]
        elif stream.partial and 0 <= stream.full_size <= stream.body_wire:
            stream.partial = ""  # the stop held on the last bytes: the whole body is here
        total = time.monotonic() - start
        return HttpResponse(
            url=stream.request.url,
            status=stream.status,
            headers=tuple(stream.headers),
            body=body,
            wire_bytes=stream.wire,
            truncated=stream.truncated,
            timings=Timings(connect=connection.connect_time, first_byte=stream.first_byte, total=total),
            remote_addr=connection.remote_addr,
            http_version="2",
            partial=stream.partial,
            body_wire_bytes=stream.body_wire,
            full_size=stream.full_size,
        )

    async def _connection(self, origin: Origin, timeout: float) -> _Connection | None:
        """The open HTTP/2 connection to `origin`, made when there is none; None when ALPN chose HTTP/1.1."""
        current = self._connections.get(origin)
        if current is not None and not current.closed:
            return current
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:  # one connection per origin, however many fetches ask at once
            current = self._connections.get(origin)
            if current is not None and not current.closed:
                return current
            if self._protocols.get(origin) == "http/1.1":
                return None
            connection = await self._connect(origin, timeout)
            if connection is not None:
                self._connections[origin] = connection
            return connection

    async def _connect(self, origin: Origin, timeout: float) -> _Connection | None:
        start = time.monotonic()
        timeout = min(timeout, self.settings.connect_timeout)
        guard = self.settings.guard
        addresses = await host_addresses(self.settings.resolve, origin.host, origin.port, timeout)
        allowed = [a for a in addresses if guard.is_allowed(a)]
        if not allowed:
            guarded_address(guard, origin.host, addresses)  # raises the refusal's error
        last: FetchError = ConnectFetchError(f"cannot connect to {origin.authority}")
        for address in allowed:  # bounded by the addresses DNS gave
            try:
                async with asyncio.timeout(max(0.001, timeout - (time.monotonic() - start))):
                    reader, writer = await asyncio.open_connection(
                        address, origin.port, ssl=self._ssl, server_hostname=origin.host,
                        limit=READ_SIZE * 4)
            except TimeoutError:
                last = TimeoutFetchError(f"connecting to {origin.authority} timed out")
                continue
            except ssl.SSLError as exc:
                raise TlsFetchError(f"TLS with {origin.authority} failed: {exc}") from None
            except OSError as exc:
                last = ConnectFetchError(f"cannot connect to {origin.authority} ({address}): {exc}")
                continue
            ssl_object = writer.get_extra_info("ssl_object")
            chosen = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
            self._protocols[origin] = "h2" if chosen == "h2" else "http/1.1"
            if chosen != "h2":
                writer.close()
                return None
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections_opened += 1
            return _Connection(origin, reader, writer, address, self.stop_window, time.monotonic() - start)
        raise last

    async def aclose(self) -> None:
        """Close every connection."""
        self._closed = True
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await connection.aclose()

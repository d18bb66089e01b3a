"""Hostile loopback servers: responses whose timing, framing or size is wrong on purpose.

`HostileServer` is a `RawServer` that reads one request head per connection, records it, and hands
the socket to a *behaviour* chosen by path (exact path first, then the path without its query). A
behaviour writes whatever bytes it likes and the connection is closed after it, so every response
is framed by what the behaviour sends and nothing else. Paths without a behaviour get `default` (a 404), so a
crawler's robots.txt request never meets the hostile behaviour by accident.

    with HostileServer({"/slow": trickle_body(interval=0.5)}, host="127.3.0.1") as srv:
        ... crawl srv.url("/slow") ...
        assert srv.hits_for("/slow")[0].closed_after < 3

Every loop here is bounded (by a byte budget, a count, or a deadline), and a behaviour stops as soon
as the client has gone. `bomb()` builds decompression bombs of ~1 GiB of zeros in well under a
second each; `PeakRss` measures the growth of this process's peak resident memory.
"""

from __future__ import annotations

import functools
import select
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import brotli
import zstandard

from tests.support.httpserver import RawServer, raw_response, read_request

MiB = 1024 * 1024
GiB = 1024 * MiB
MAX_SEND = 256 * MiB  # no behaviour sends more than this on one connection


@dataclass(slots=True)
class Hit:
    """One request as a hostile server saw it; `closed_after`: seconds until the client hung up."""

    path: str
    headers: dict[str, str]  # by lower-case name; a repeated name keeps its last value
    accepted: float
    closed_after: float | None = None
    raw_headers: list[tuple[str, str]] = field(default_factory=list)  # as sent, repeats included


@dataclass(slots=True)
class Conn:
    """A connection handed to a behaviour: the socket, the request, and its record."""

    sock: socket.socket
    hit: Hit

    def send(self, data: bytes) -> bool:
        """Send `data`; False (and the hang-up time recorded) once the client has gone."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.hung_up()
            return False
        return True

    def hung_up(self) -> None:
        """Record that the client has closed the connection (the first time only)."""
        if self.hit.closed_after is None:
            self.hit.closed_after = time.monotonic() - self.hit.accepted

    def wait_closed(self, seconds: float) -> bool:
        """Wait up to `seconds` for the client to close (or send anything); True if it closed."""
        try:
            ready, _, _ = select.select([self.sock], [], [], seconds)
            # A TLS socket cannot peek; reading is harmless, the response has been sent.
            peek = 0 if isinstance(self.sock, ssl.SSLSocket) else socket.MSG_PEEK
            if ready and not self.sock.recv(4096, peek):
                self.hung_up()
                return True
        except OSError:
            self.hung_up()
            return True
        return False


Behaviour = Callable[[Conn], None]


class HostileServer(RawServer):
    """A raw loopback HTTP server whose responses are behaviours chosen by request path."""

    def __init__(self, routes: Mapping[str, Behaviour], host: str = "127.0.0.1",
                 default: Behaviour | None = None, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(self._dispatch, host)
        self.tls = tls  # a server context: speak HTTPS (HTTP/1.1) instead of plain HTTP
        self.routes = dict(routes)
        self.default = default or not_found
        self.hits: list[Hit] = []
        self._lock = threading.Lock()

    def url(self, path: str = "/") -> str:
        """Absolute URL of `path` on this server (https when it speaks TLS)."""
        plain = super().url(path)
        return "https" + plain.removeprefix("http") if self.tls is not None else plain

    def _dispatch(self, sock: socket.socket) -> None:
        if self.tls is None:
            self._serve_one(sock)
            return
        # wrap_socket takes the descriptor over, so the TLS socket is the one to close.
        with self.tls.wrap_socket(sock, server_side=True) as tls_sock:  # a bad handshake raises OSError
            self._serve_one(tls_sock)

    def _serve_one(self, sock: socket.socket) -> None:
        head = read_request(sock)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        path = parts[1] if len(parts) > 1 else "/"
        raw_headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                raw_headers.append((name.strip(), value.strip()))
        hit = Hit(path, {k.lower(): v for k, v in raw_headers}, time.monotonic(), raw_headers=raw_headers)
        with self._lock:
            self.hits.append(hit)
        sock.settimeout(30)
        behaviour = self.routes.get(path) or self.routes.get(path.split("?", 1)[0]) or self.default
        behaviour(Conn(sock, hit))

    def start(self) -> HostileServer:
        """Start accepting in a background thread."""
        super().start()
        return self

    def __enter__(self) -> HostileServer:
        return self.start()

    def hits_for(self, path: str) -> list[Hit]:
        """Requests for `path` (with or without a query string), in arrival order."""
        with self._lock:
            return [h for h in self.hits if h.path == path or h.path.split("?", 1)[0] == path]

    def paths(self) -> list[str]:
        """Every requested path, in arrival order."""
        with self._lock:
            return [h.path for h in self.hits]


# ----- plain answers -----------------------------------------------------------------------------


def respond(status: int = 200, headers: list[tuple[str, str]] | None = None, body: bytes = b"",
            *, content_length: bool = True) -> Behaviour:
    """Send exactly this response (a correct Content-Length is added unless asked not to)."""
    items = list(headers or [])
    if content_length and not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in items):
        items.append(("Content-Length", str(len(body))))
    items.append(("Connection", "close"))
    data = raw_response(status, items, body)
    return lambda conn: _send_then_wait(conn, data)


def _send_then_wait(conn: Conn, data: bytes) -> None:
    if conn.send(data):
        conn.wait_closed(1.0)  # let the client read to the end before the close


not_found = respond(404, [("Content-Type", "text/plain")], b"not found")


def html(body: str | bytes, status: int = 200, extra: list[tuple[str, str]] | None = None) -> Behaviour:
    """A complete HTML response."""
    data = body.encode() if isinstance(body, str) else body
    return respond(status, [("Content-Type", "text/html; charset=utf-8"), *(extra or [])], data)


def redirect(location: str, status: int = 302, body: bytes = b"",
             headers: list[tuple[str, str]] | None = None) -> Behaviour:
    """A redirect to `location` (sent as given: relative, absolute or any scheme)."""
    return respond(status, [("Location", location), *(headers or [])], body)


def dynamic(make: Callable[[Hit], Behaviour]) -> Behaviour:
    """A behaviour chosen per request, from the request itself (its path, its headers)."""
    return lambda conn: make(conn.hit)(conn)


# ----- slow servers ------------------------------------------------------------------------------


def trickle_body(interval: float = 0.5, declared: int = 100_000, max_seconds: float = 30.0) -> Behaviour:
    """Headers at once, then the body one byte every `interval` seconds until the client hangs up."""

    def behave(conn: Conn) -> None:
        head = raw_response(200, [("Content-Type", "text/html"), ("Content-Length", str(declared))])
        if not conn.send(head):
            return
        for _ in range(int(max_seconds / interval)):
            if not conn.send(b"x") or conn.wait_closed(interval):
                return

    return behave


def trickle_headers(interval: float = 0.5, max_seconds: float = 30.0) -> Behaviour:
    """The status line, then header bytes one at a time, `interval` apart; the head never ends."""

    def behave(conn: Conn) -> None:
        if not conn.send(b"HTTP/1.1 200 OK\r\n"):
            return
        filler = b"X-Slow: " + b"z" * 10_000
        for i in range(int(max_seconds / interval)):
            if not conn.send(filler[i % len(filler) : i % len(filler) + 1]) or conn.wait_closed(interval):
                return

    return behave


def silent(max_seconds: float = 30.0) -> Behaviour:
    """Accept, read the request, and never answer (until the client hangs up)."""

    def behave(conn: Conn) -> None:
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            if conn.wait_closed(0.1):
                return

    return behave


# ----- endless and lying bodies --------------------------------------------------------------------


def endless_chunked(chunk: int = 64 * 1024, max_bytes: int = MAX_SEND) -> Behaviour:
    """Transfer-Encoding: chunked, chunks of `chunk` bytes with no last chunk (up to `max_bytes`)."""

    def behave(conn: Conn) -> None:
        head = raw_response(200, [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")])
        piece = f"{chunk:x}\r\n".encode() + b"a" * chunk + b"\r\n"
        if conn.send(head):
            for _ in range(max_bytes // chunk):
                if not conn.send(piece):
                    return

    return behave


def huge_length(declared: int = 5 * GiB, max_bytes: int = MAX_SEND) -> Behaviour:
    """Content-Length `declared` (5 GiB), then body bytes until the client hangs up or `max_bytes`."""

    def behave(conn: Conn) -> None:
        head = raw_response(200, [("Content-Type", "text/html"), ("Content-Length", str(declared))])
        piece = b"<p>" + b"b" * (64 * 1024 - 3)
        if conn.send(head):
            for _ in range(max_bytes // len(piece)):
                if not conn.send(piece):
                    return

    return behave


def short_body(declared: int = 1000, body: bytes = b"0123456789") -> Behaviour:
    """Content-Length `declared`, then fewer bytes, then close."""
    return lambda conn: _send_close(conn, raw_response(200, [("Content-Type", "text/html"),
                                                             ("Content-Length", str(declared))], body))


def _send_close(conn: Conn, data: bytes) -> None:
    conn.send(data)
    # Returning closes the socket: the client sees the end of the stream right after `data`.


def raw(data: bytes) -> Behaviour:
    """Send these bytes exactly, then close."""
    return lambda conn: _send_close(conn, data)


def conflicting_lengths() -> Behaviour:
    """Two Content-Length headers that disagree."""
    return raw(raw_response(200, [("Content-Type", "text/html"), ("Content-Length", "5"),
                                  ("Content-Length", "50")], b"hello" + b"x" * 45))


def length_and_chunked() -> Behaviour:
    """Content-Length and Transfer-Encoding: chunked together (a request-smuggling shape)."""
    body = b"5\r\nhello\r\n0\r\n\r\n"
    return raw(raw_response(200, [("Content-Type", "text/html"), ("Content-Length", "3"),
                                  ("Transfer-Encoding", "chunked")], body))


def bad_chunk_terminator() -> Behaviour:
    """A chunk whose data is not followed by CRLF (a size that lies)."""
    body = b"5\r\nhelloXXXX\r\n0\r\n\r\n"
    return raw(raw_response(200, [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")], body))


def reset(after: bytes = b"") -> Behaviour:
    """Send `after` (perhaps a head and part of a body), then abort the connection with a TCP RST."""

    def behave(conn: Conn) -> None:
        if after and not conn.send(after):
            return
        # SO_LINGER on with a zero timeout: close() sends RST instead of FIN.
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    return behave


# ----- oversized heads ------------------------------------------------------------------------------


def huge_header(size: int = MiB) -> Behaviour:
    """One header line `size` bytes long."""

    def behave(conn: Conn) -> None:
        if conn.send(b"HTTP/1.1 200 OK\r\nX-Huge: "):
            for _ in range(size // 4096):
                if not conn.send(b"h" * 4096):
                    return
            if conn.send(b"\r\nContent-Length: 0\r\n\r\n"):
                conn.wait_closed(5.0)  # the kernel took it all: see when the client hangs up

    return behave


def many_headers(count: int = 100_000) -> Behaviour:
    """`count` small header lines, sent in batches."""

    def behave(conn: Conn) -> None:
        if not conn.send(b"HTTP/1.1 200 OK\r\n"):
            return
        for start in range(0, count, 1000):
            batch = b"".join(b"X-H%d: v\r\n" % i for i in range(start, min(count, start + 1000)))
            if not conn.send(batch):
                return
        if conn.send(b"Content-Length: 0\r\n\r\n"):
            conn.wait_closed(5.0)

    return behave


def endless_header_line(max_bytes: int = 64 * MiB) -> Behaviour:
    """A header line that never ends (no CR or LF ever comes), up to `max_bytes`."""

    def behave(conn: Conn) -> None:
        if conn.send(b"HTTP/1.1 200 OK\r\nX-Endless: "):
            for _ in range(max_bytes // 4096):
                if not conn.send(b"e" * 4096):
                    return

    return behave


# ----- decompression bombs ---------------------------------------------------------------------------


def _zlib_bomb(size: int, wbits: int) -> bytes:
    """A gzip (wbits 31) or zlib (wbits 15) stream of `size` zero bytes, built without compressing them.

    After a full flush deflate restarts with an empty window, so every further MiB of zeros compresses
    to the same bytes: compress two MiB, then repeat the second block and write the trailer by hand.
    """
    chunk = bytes(MiB)
    n = size // MiB
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    last_block = b"\x03\x00"  # a final, empty fixed-Huffman block
    if wbits > 15:
        crc = 0
        for _ in range(n):
            crc = zlib.crc32(chunk, crc)
        trailer = crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little")
    else:
        trailer = ((size % 65521) << 16 | 1).to_bytes(4, "big")  # adler32 of zeros
    return first + block * (n - 1) + last_block + trailer


def _streamed(compressor: Callable[[bytes], bytes], finish: Callable[[], bytes], size: int) -> bytes:
    chunk = bytes(MiB)
    return b"".join([*(compressor(chunk) for _ in range(size // MiB)), finish()])


@functools.cache
def bomb(encoding: str, size: int = GiB) -> bytes:
    """`size` zero bytes compressed with `encoding` (gzip, deflate, br, zstd); cached per process."""
    if encoding == "gzip":
        return _zlib_bomb(size, 31)
    if encoding == "deflate":
        return _zlib_bomb(size, 15)
    if encoding == "br":
        br = brotli.Compressor(quality=1)
        return _streamed(br.process, br.finish, size)
    if encoding == "zstd":
        zc = zstandard.ZstdCompressor(level=1).compressobj()
        return _streamed(zc.compress, zc.flush, size)
    raise ValueError(f"no bomb for {encoding!r}")


def empty_gzip_members(count: int = 100_000) -> bytes:
    """`count` gzip members of nothing, one after another."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = c.compress(b"") + c.flush()
    return member * count


# ----- memory ----------------------------------------------------------------------------------------


def _status_kib(field_name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field_name} not in /proc/self/status")


@dataclass(slots=True)
class PeakRss:
    """Growth of this process's peak resident memory over a block, in bytes (`growth`)."""

    before: int = 0
    growth: int = 0
    exact: bool = field(default=False)  # False: the peak could not be reset, `growth` is a lower bound


@contextmanager
def peak_rss() -> Iterator[PeakRss]:
    """Measure how far the peak RSS rises above the current RSS inside the block.

    Writing 5 to /proc/self/clear_refs resets VmHWM to the current RSS (Linux >= 4.0), so earlier
    tests in the same process do not hide this block's peak.
    """
    result = PeakRss()
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        result.exact = True
    except OSError:
        pass
    result.before = _status_kib("VmRSS") * 1024
    try:
        yield result
    finally:
        result.growth = max(0, _status_kib("VmHWM") * 1024 - result.before)

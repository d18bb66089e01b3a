"""Loopback test servers shared by the test suite.

`RouteServer`: a threaded HTTP/1.1 server on a chosen loopback address and a free port, serving
routes `path -> (status, headers, body)` or `path -> callable(handler)`, recording every request.

    with RouteServer({"/": (200, {"Content-Type": "text/html"}, b"<p>hi")}, host="127.1.0.5") as srv:
        url = srv.url("/")          # http://127.1.0.5:PORT/
        ...
        assert srv.paths == ["/"]

`RawServer`: a TCP server that hands each accepted connection to `handler(conn)` in a thread, for
hostile framing (short bodies, trickles, endless headers); `raw_response` builds byte strings.
`route_server` is a pytest fixture factory: `def test_x(route_server): srv = route_server(routes)`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class RouteHandler(BaseHTTPRequestHandler):
    """The request handler given to callable routes; `send_simple` sends a whole response."""

    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse can be observed
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        owner = self.server.owner
        with owner.lock:
            owner.paths.append(self.path)
            owner.requests.append((self.path, list(self.headers.items()), self.client_address))
        route = owner.routes.get(self.path)
        if route is None:
            route = owner.routes.get(self.path.split("?", 1)[0])
        if route is None:
            self.send_simple(404, {"Content-Type": "text/plain"}, b"not found")
        elif callable(route):
            route(self)
        else:
            status, headers, body = route
            self.send_simple(status, headers, body)

    do_HEAD = do_GET

    def send_simple(self, status: int, headers: Mapping[str, str] | list[tuple[str, str]],
                    body: bytes) -> None:
        """Send a complete response; Content-Length is added unless given."""
        items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
        self.send_response(status)
        for key, value in items:
            self.send_header(key, value)
        if not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in items):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


Handler = RouteHandler
RouteValue = tuple[int, Mapping[str, str] | list[tuple[str, str]], bytes] | Callable[[RouteHandler], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512  # the default 5 drops SYNs under 100+ concurrent clients
    owner: RouteServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that abort on purpose (size caps, timeouts) are not failures of the server


class RouteServer:
    """A threaded HTTP/1.1 loopback server with fixed routes; records request paths and headers."""

    def __init__(self, routes: Mapping[str, RouteValue], host: str = "127.0.0.1", port: int = 0) -> None:
        self.routes: dict[str, RouteValue] = dict(routes)
        self.paths: list[str] = []
        self.requests: list[tuple[str, list[tuple[str, str]], Any]] = []
        self.lock = threading.Lock()
        self.host = host
        self._httpd = _Server((host, port), RouteHandler)
        self._httpd.owner = self
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def url(self, path: str = "/") -> str:
        """Absolute URL of `path` on this server."""
        return f"http://{self.host}:{self.port}{path}"

    def start(self) -> RouteServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> RouteServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RawServer:
    """A loopback TCP server running `handler(conn)` per connection in a thread; counts connections."""

    def __init__(self, handler: Callable[[socket.socket], None], host: str = "127.0.0.1") -> None:
        self.handler = handler
        self.host = host
        self.connections = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self._sock.listen(128)
        self._sock.settimeout(0.1)
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, path: str = "/") -> str:
        """Absolute http URL of `path` on this server."""
        return f"http://{self.host}:{self.port}{path}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            self.handler(conn)
        except OSError:
            pass  # the client went away: expected in hostile-server tests
        finally:
            conn.close()

    def start(self) -> RawServer:
        """Start accepting in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting and close the listening socket."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> RawServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def read_request(conn: socket.socket, limit: int = 65536) -> bytes:
    """Read one request head (up to the blank line) from a raw connection."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < limit:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def raw_response(status: int = 200, headers: list[tuple[str, str]] | None = None, body: bytes = b"",
                 reason: str = "OK") -> bytes:
    """Bytes of an HTTP/1.1 response exactly as given (no Content-Length is added)."""
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers or [])
    return head.encode("latin-1") + b"\r\n" + body


@pytest.fixture
def route_server() -> Iterator[Callable[..., RouteServer]]:
    """Factory fixture: route_server(routes, host=...) starts a RouteServer stopped after the test."""
    started: list[RouteServer] = []

    def start(routes: Mapping[str, RouteValue], host: str = "127.0.0.1") -> RouteServer:
        srv = RouteServer(routes, host=host).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()

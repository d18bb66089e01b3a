"""CurlTransport over real loopback sockets: decoding, caps, framing lies, timeouts, the guard."""

from __future__ import annotations

import asyncio
import gzip
import os
import socket
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import brotli
import pytest
import zstandard

from harvestman.fetch.transport import (
    CurlTransport,
    MemoryTransport,
    TransportSettings,
    curl_error,
    make_response,
)
from harvestman.model.config import CrawlConfig, ResolveEntry
from harvestman.model.errors import (
    BlockedAddressError,
    ConnectFetchError,
    ContentError,
    DnsFetchError,
    FetchError,
    ProtocolFetchError,
    TimeoutFetchError,
    TlsFetchError,
)
from harvestman.model.records import HttpRequest, HttpResponse
from harvestman.net.addrguard import AddressGuard
from tests.support.httpserver import RawServer, RouteServer, raw_response, read_request

# Wall-clock bounds on timeouts: .ci/run runs this file alone, after the rest.
pytestmark = pytest.mark.serial

T = TypeVar("T")
LOOPBACK = AddressGuard(["127.0.0.0/8"])
BODY = b"<html><body>" + b"hello harvestman " * 4000 + b"</body></html>"


def settings(**changes: object) -> TransportSettings:
    base: dict[str, object] = {"user_agent": "harvestman-test", "guard": LOOPBACK, "connect_timeout": 3.0}
    base.update(changes)
    return TransportSettings(**base)  # type: ignore[arg-type]


def run(fn: Callable[[CurlTransport], Awaitable[T]], **changes: object) -> T:
    async def main() -> T:
        transport = CurlTransport(settings(**changes))
        try:
            return await fn(transport)
        finally:
            await transport.aclose()

    return asyncio.run(main())


def get(url: str, **request: object) -> Callable[[CurlTransport], Awaitable[HttpResponse]]:
    async def fetch(t: CurlTransport) -> HttpResponse:
        return await t.fetch(HttpRequest(url, **request))  # type: ignore[arg-type]

    return fetch


@pytest.fixture(scope="module")
def server() -> Iterator[RouteServer]:
    routes = {
        "/": (200, {"Content-Type": "text/html; charset=utf-8"}, BODY),
        "/gzip": (200, {"Content-Encoding": "gzip"}, gzip.compress(BODY)),
        "/deflate": (200, {"Content-Encoding": "deflate"}, zlib.compress(BODY)),
        "/br": (200, {"Content-Encoding": "br"}, brotli.compress(BODY)),
        "/zstd": (200, {"Content-Encoding": "zstd"}, zstandard.ZstdCompressor().compress(BODY)),
        "/bomb": (200, {"Content-Encoding": "gzip"}, gzip.compress(b"\0" * (64 << 20), 6)),
        "/six": (200, {"Content-Encoding": "gzip, gzip, gzip, gzip, gzip, gzip"}, b"x"),
        "/badgzip": (200, {"Content-Encoding": "gzip"}, b"not gzip data here"),
        "/big": (200, {}, b"x" * 300_000),
        "/redirect": (302, {"Location": "/"}, b""),
    }
    with RouteServer(routes, host="127.1.0.5") as srv:
        yield srv


def test_plain_get(server: RouteServer) -> None:
    resp = run(get(server.url("/")))
    assert resp.status == 200
    assert resp.body == BODY
    assert resp.header("content-type") == "text/html; charset=utf-8"
    assert resp.remote_addr == "127.1.0.5"
    assert resp.http_version == "1.1"
    assert resp.wire_bytes > len(BODY)
    assert 0 < resp.timings.first_byte <= resp.timings.total
    _path, headers, _ = server.requests[-1]
    sent = {k.lower(): v for k, v in headers}
    assert sent["accept-encoding"] == "gzip, deflate, br, zstd"
    assert sent["user-agent"] == "harvestman-test"


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/br", "/zstd"])
def test_encoded_bodies(server: RouteServer, path: str) -> None:
    resp = run(get(server.url(path)))
    assert resp.body == BODY
    assert resp.wire_bytes < len(BODY)


def test_bomb_capped(server: RouteServer) -> None:
    start = time.process_time()
    resp = run(get(server.url("/bomb"), max_size=1 << 20))
    assert len(resp.body) == 1 << 20
    assert resp.truncated
    assert time.process_time() - start < 2.0


def test_six_encodings_and_bad_data(server: RouteServer) -> None:
    with pytest.raises(ContentError):
        run(get(server.url("/six")))
    with pytest.raises(ContentError):
        run(get(server.url("/badgzip")))


def test_size_cap(server: RouteServer) -> None:
    resp = run(get(server.url("/big"), max_size=100_000))
    assert len(resp.body) == 100_000
    assert resp.truncated


def test_redirect_not_followed(server: RouteServer) -> None:
    resp = run(get(server.url("/redirect")))
    assert resp.status == 302
    assert resp.header("location") == "/"


def _endless(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(raw_response(200, [("Content-Length", str(5 << 30))]))
    chunk = b"a" * 65536
    for _ in range(2000):  # bounded: at most 128 MiB, the client stops long before
        conn.sendall(chunk)


def test_huge_content_length_truncated() -> None:
    with RawServer(_endless) as srv:
        resp = run(get(srv.url(), max_size=200_000))
    assert resp.truncated
    assert len(resp.body) == 200_000


def _short(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(raw_response(200, [("Content-Length", "1000")], b"0123456789"))


def test_short_body_is_an_error() -> None:
    with RawServer(_short) as srv, pytest.raises(ProtocolFetchError):
        run(get(srv.url()))


def _trickle(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(raw_response(200, [("Content-Length", "100000")]))
    for _ in range(40):  # bounded: 20 s at most, the client gives up after 1.5 s
        conn.sendall(b"x")
        time.sleep(0.5)


def test_total_timeout_on_trickle() -> None:
    with RawServer(_trickle) as srv:
        start = time.monotonic()
        with pytest.raises(TimeoutFetchError):
            run(get(srv.url(), timeout=1.5))
        assert 1.3 < time.monotonic() - start < 2.5


def _huge_headers(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for i in range(20_000):  # bounded; the client aborts after 64 KiB
        conn.sendall(f"X-Filler-{i}: {'v' * 40}\r\n".encode())


def test_header_cap() -> None:
    with RawServer(_huge_headers) as srv, pytest.raises(ProtocolFetchError):
        run(get(srv.url()))


def _conflicting_lengths(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(raw_response(200, [("Content-Length", "5"), ("Content-Length", "50")], b"hello"))


def test_conflicting_content_lengths_rejected() -> None:
    with RawServer(_conflicting_lengths) as srv, pytest.raises(FetchError):
        run(get(srv.url()))


def test_a_deadline_hit_while_resolving_is_a_dns_error() -> None:
    # libcurl reports a name server that never answers as a timeout (28); the class must name DNS.
    err = curl_error(28, "Resolving timed out after 1500 milliseconds")
    assert isinstance(err, DnsFetchError) and err.error_class == "dns" and err.transient
    assert isinstance(curl_error(28, "Operation timed out after 1500 milliseconds"), TimeoutFetchError)
    assert isinstance(curl_error(6, "Could not resolve host: nx.test"), DnsFetchError)


def test_guard_blocks_loopback_without_allow_list() -> None:
    canary = RawServer(lambda conn: conn.sendall(raw_response(200, [("Content-Length", "0")])))
    with canary:
        with pytest.raises(BlockedAddressError):
            run(get(canary.url()), guard=AddressGuard())
        # Through a RESOLVE pin too: the guard checks the address actually connected to.
        url = f"http://public.example:{canary.port}/"
        pin = (f"public.example:{canary.port}:127.0.0.1",)
        with pytest.raises(BlockedAddressError):
            run(get(url), guard=AddressGuard(), resolve=pin)
        time.sleep(0.2)
        assert canary.connections == 0
        resp = run(get(url), resolve=pin)
        assert resp.status == 200
        assert canary.connections == 1


def test_connection_refused() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now
    with pytest.raises(ConnectFetchError):
        run(get(f"http://127.0.0.1:{port}/"))


def test_concurrent_requests_reuse_handles(server: RouteServer) -> None:
    async def many(t: CurlTransport) -> list[HttpResponse]:
        results = await asyncio.gather(*(t.fetch(HttpRequest(server.url("/gzip"))) for _ in range(200)))
        # Sequential rounds afterwards must not grow file descriptors: handles and sockets are reused.
        fds = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            await asyncio.gather(*(t.fetch(HttpRequest(server.url("/"))) for _ in range(50)))
        assert len(os.listdir("/proc/self/fd")) <= fds + 5
        return list(results)

    results = run(many)
    assert len(results) == 200
    assert all(r.body == BODY for r in results)


def test_cancelled_fetch_does_not_break_transport(server: RouteServer) -> None:
    with RawServer(_trickle) as slow:
        async def cancel_then_fetch(t: CurlTransport) -> HttpResponse:
            task = asyncio.ensure_future(t.fetch(HttpRequest(slow.url(), timeout=10)))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await t.fetch(HttpRequest(server.url("/")))

        resp = run(cancel_then_fetch)
    assert resp.status == 200


def test_settings_from_the_fetch_section() -> None:
    cfg = CrawlConfig(allow_net=("127.0.0.0/8",), resolve=(ResolveEntry("a.test", 80, "::1"),),
                      verify_tls=False, user_agent="ua")
    s = TransportSettings.from_fetch(cfg.fetch)
    assert s.resolve == ("a.test:80:[::1]",)
    assert s.guard.is_allowed("127.0.0.1")
    assert not s.verify_tls
    assert s.user_agent == "ua"


def test_memory_transport() -> None:
    ok = make_response("http://a.test/", body=b"hi")

    async def main() -> None:
        t = MemoryTransport({"http://a.test/": ok, "http://a.test/err": TimeoutFetchError("slow"),
                             "http://a.test/fn": lambda r: make_response(r.url, 201)})
        assert await t.fetch(HttpRequest("http://a.test/")) is ok
        assert (await t.fetch(HttpRequest("http://a.test/fn"))).status == 201
        assert (await t.fetch(HttpRequest("http://a.test/none"))).status == 404
        with pytest.raises(TimeoutFetchError):
            await t.fetch(HttpRequest("http://a.test/err"))
        assert [r.url for r in t.requests][-1] == "http://a.test/err"
        await t.aclose()
        assert t.closed

    asyncio.run(main())


def test_tls_handshake_failure(server: RouteServer) -> None:
    # https to a plain-HTTP server: the handshake fails and is reported as a TLS error, not a crash.
    with pytest.raises(TlsFetchError):
        run(get(server.url("/").replace("http://", "https://")))

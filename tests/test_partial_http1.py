"""Partial fetches over HTTP/1.1 (nginx, plain http): where the server accepts ranges (nginx's
default, `Accept-Ranges: bytes`) the body is read in Range requests on one kept-alive connection;
where it does not (`max_ranges 0`), the transfer is aborted at the stop, closing the connection."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harvestman.fetch.partial import PartialTransport
from harvestman.fetch.stop import parse_stop
from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.records import HttpRequest, HttpResponse
from harvestman.net.addrguard import AddressGuard
from tests.support.nginx import NginxServer
from tests.support.partialpages import head_length, head_page

RANGES = "127.63.0.1"
PAGE = 300_000


def _serve(tmp_path: Path, extra: str = "") -> NginxServer:
    www = tmp_path / "www"
    (www / RANGES).mkdir(parents=True)
    for i in range(3):
        (www / RANGES / f"p{i}.html").write_text(head_page(8_000, PAGE, seed=i))
    return NginxServer(www, [RANGES], extra_server=extra)


def _fetch(requests: list[HttpRequest], mode: str = "never") -> tuple[list[HttpResponse], int]:
    async def run() -> tuple[list[HttpResponse], int]:
        settings = TransportSettings(user_agent="h1-test", guard=AddressGuard(("127.0.0.0/8",)))
        transport = PartialTransport(CurlTransport(settings), None, "never")
        try:
            return [await transport.fetch(r) for r in requests], transport.range_requests
        finally:
            await transport.aclose()
    return asyncio.run(run())


def test_ranges_are_used_where_the_server_accepts_them(tmp_path: Path) -> None:
    with _serve(tmp_path) as srv:
        urls = [srv.url(RANGES, f"/p{i}.html") for i in range(3)]
        responses, ranged = _fetch([HttpRequest(u, stop=parse_stop("head")) for u in urls])
        entries = srv.wait_for_requests(1 + ranged)
        head = head_length((srv.root / RANGES / "p1.html").read_text())
    first, *rest = responses
    # The first answer teaches that the host accepts ranges (it was aborted: its connection closed).
    assert first.partial == "head" and first.status == 200
    assert ranged >= 2
    for response in rest:
        assert response.partial == "head" and response.status == 206
        assert (response.header("content-range") or "").startswith("bytes 0-")
        assert b"</head>" in response.body
        assert response.full_size >= PAGE
    ranged_entries = entries[1:]
    assert all(e.status == 206 for e in ranged_entries)
    assert len({e.connection for e in ranged_entries}) == 1  # kept alive between the ranges
    per_page = sum(e.total_sent for e in ranged_entries) / 2
    assert per_page <= head + 16 * 1024 + 1024


def test_bytes_stop_asks_for_exactly_that_range(tmp_path: Path) -> None:
    with _serve(tmp_path) as srv:
        url = srv.url(RANGES, "/p0.html")
        responses, ranged = _fetch([HttpRequest(url, stop=parse_stop("head")),
                                    HttpRequest(url, stop=parse_stop("bytes:5000"))])
    assert ranged == 1
    assert responses[1].partial == "bytes:5000" and len(responses[1].body) == 5000
    assert responses[1].body == (srv.root / RANGES / "p0.html").read_bytes()[:5000]


def test_without_ranges_the_connection_is_closed_at_the_stop(tmp_path: Path) -> None:
    with _serve(tmp_path, "max_ranges 0;") as srv:
        urls = [srv.url(RANGES, f"/p{i}.html") for i in range(3)]
        responses, ranged = _fetch([HttpRequest(u, stop=parse_stop("head")) for u in urls])
        entries = srv.wait_for_requests(3)
    assert ranged == 0
    assert all(r.partial == "head" and r.status == 200 for r in responses)
    assert all(r.header("accept-ranges") is None for r in responses)
    # Each aborted transfer closed its connection: every page came on a new one.
    assert len({e.connection for e in entries}) == 3
    assert all(r.wire_bytes < PAGE // 2 for r in responses)


@pytest.mark.parametrize("spec", ["head", "selector:div.late", "bytes:100"])
def test_a_page_that_arrived_whole_is_not_partial(tmp_path: Path, spec: str) -> None:
    with _serve(tmp_path) as srv:
        small = "<html><head><title>t</title></head><body>x</body></html>"
        (srv.root / RANGES / "small.html").write_text(small)
        url = srv.url(RANGES, "/small.html")
        responses, _ = _fetch([HttpRequest(url, stop=parse_stop(spec))] * 2)
    whole = (srv.root / RANGES / "small.html").read_bytes()
    for response in responses:
        assert response.body == whole and not response.partial

"""Partial fetches over HTTP/2 against nginx (TLS + h2 on loopback, a test CA made here): the stop
conditions, the bytes nginx sent ($bytes_sent), one connection per host, RST_STREAM keeping the
connection, the private-address guard, and a crawl's records, WARC and status."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestman.crawl.engine import Crawler
from harvestman.fetch.h2_transport import STOP_WINDOW, H2Transport
from harvestman.fetch.partial import PartialTransport, open_transport
from harvestman.fetch.stop import parse_stop
from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import BlockedAddressError
from harvestman.model.records import HttpRequest
from harvestman.net.addrguard import AddressGuard
from harvestman.store.factory import open_store
from tests.support.crawlcheck import run_cli
from tests.support.partialpages import head_length, head_page
from tests.support.tlsfixture import TlsNginx, make_pki

IP = "127.62.0.1"
IP2 = "127.62.0.2"
PAGE = 500_000
HEAD = 10_000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("h2site")
    pki = make_pki(tmp / "pki")
    certs = {ip: pki.server_cert(ip, names=("h2.test",), ips=(ip,)) for ip in (IP, IP2)}
    www = tmp / "www"
    for ip in (IP, IP2):
        (www / ip).mkdir(parents=True)
        for i in range(6):
            links = (f"/p{i + 1}.html",) if i < 5 else ()
            (www / ip / f"p{i}.html").write_text(head_page(HEAD, PAGE, links=links, seed=i))
        (www / ip / "index.html").write_text(head_page(HEAD, PAGE, links=("/p0.html",)))
        (www / ip / "data.bin").write_bytes(b"\0binary" * 20_000)
    with TlsNginx(www, certs) as srv:
        yield srv, pki


def _settings(pki) -> TransportSettings:  # type: ignore[no-untyped-def]
    return TransportSettings(user_agent="h2-test", guard=AddressGuard(("127.0.0.0/8",)),
                             ca_file=str(pki.ca.cert))


def _fetch_all(pki, requests: list[HttpRequest]):  # type: ignore[no-untyped-def]
    async def run():  # type: ignore[no-untyped-def]
        transport = H2Transport(_settings(pki))
        try:
            responses = [await transport.fetch(r) for r in requests]
            return responses, transport.connections_opened
        finally:
            await transport.aclose()
    return asyncio.run(run())


def _new_entries(srv, before: int, count: int):  # type: ignore[no-untyped-def]
    return srv.wait_for_requests(before + count)[before:]


def test_head_stop_sends_at_most_head_plus_16k_and_keeps_one_connection(site) -> None:  # type: ignore[no-untyped-def]
    srv, pki = site
    before = len(srv.requests())
    urls = [srv.url(IP, f"/p{i}.html") for i in range(6)]
    responses, opened = _fetch_all(pki, [HttpRequest(u, stop=parse_stop("head")) for u in urls])
    entries = _new_entries(srv, before, 6)
    assert opened == 1
    assert len({e.connection for e in entries}) == 1  # one connection carried every stream
    head = head_length((srv.root / IP / "p0.html").read_text())
    for response, entry in zip(responses, entries, strict=True):
        assert response.status == 200 and response.partial == "head"
        assert b"</head>" in response.body and len(response.body) < PAGE
        assert response.full_size == PAGE or response.full_size > PAGE - 10
        assert entry.protocol == "HTTP/2.0"
        assert entry.total_sent <= head + 16 * 1024, (entry.total_sent, head)


def test_rst_stream_keeps_the_connection_for_a_full_fetch(site) -> None:  # type: ignore[no-untyped-def]
    srv, pki = site
    before = len(srv.requests())
    url = srv.url(IP, "/p1.html")
    responses, opened = _fetch_all(pki, [HttpRequest(url, stop=parse_stop("head")), HttpRequest(url),
                                         HttpRequest(url, stop=parse_stop("bytes:1000"))])
    entries = _new_entries(srv, before, 3)
    assert opened == 1 and len({e.connection for e in entries}) == 1
    assert [e.connection_requests for e in entries] == [1, 2, 3]
    stopped, full, tiny = responses
    assert stopped.partial == "head" and not full.partial
    assert full.body == (srv.root / IP / "p1.html").read_bytes()
    assert tiny.partial == "bytes:1000" and len(tiny.body) == 1000
    assert full.body.startswith(stopped.body) and full.body.startswith(tiny.body)
    assert entries[1].total_sent > PAGE and entries[2].total_sent <= 1000 + STOP_WINDOW + 1024


def test_selector_stop(site) -> None:  # type: ignore[no-untyped-def]
    srv, pki = site
    before = len(srv.requests())
    responses, _ = _fetch_all(pki, [
        HttpRequest(srv.url(IP, "/p2.html"), stop=parse_stop('selector:a[href="/p3.html"]')),
        HttpRequest(srv.url(IP, "/p2.html"), stop=parse_stop("selector:div.late")),
        HttpRequest(srv.url(IP, "/p2.html"), stop=parse_stop("selector:div.never")),
    ])
    early, late, never = responses
    entries = _new_entries(srv, before, 3)
    assert early.partial == 'selector:a[href="/p3.html"]' and b'href="/p3.html"' in early.body
    assert entries[0].total_sent < 64 * 1024
    assert not late.partial and late.body.endswith(b"</html>")  # matched only at the very end
    assert not never.partial and len(never.body) == len((srv.root / IP / "p2.html").read_bytes())


def test_head_stop_reads_a_non_html_body_whole(site) -> None:  # type: ignore[no-untyped-def]
    srv, pki = site
    responses, _ = _fetch_all(pki, [HttpRequest(srv.url(IP, "/data.bin"), stop=parse_stop("head"))])
    assert not responses[0].partial and len(responses[0].body) == 140_000


def test_private_address_guard_over_h2(site) -> None:  # type: ignore[no-untyped-def]
    srv, pki = site

    async def run() -> None:
        settings = TransportSettings(user_agent="h2-test", ca_file=str(pki.ca.cert))  # no --allow-net
        transport = H2Transport(settings)
        try:
            with pytest.raises(BlockedAddressError):
                await transport.fetch(HttpRequest(srv.url(IP, "/p0.html"), stop=parse_stop("head")))
            assert transport.connections_opened == 0
        finally:
            await transport.aclose()

    before = len(srv.requests())
    asyncio.run(run())
    assert len(srv.requests()) == before


def test_partial_transport_routes_by_alpn(site) -> None:  # type: ignore[no-untyped-def]
    srv, pki = site

    async def run() -> None:
        settings = _settings(pki)
        transport = PartialTransport(CurlTransport(settings), H2Transport(settings), "auto")
        try:
            stopped = await transport.fetch(HttpRequest(srv.url(IP2, "/p0.html"), stop=parse_stop("head")))
            whole = await transport.fetch(HttpRequest(srv.url(IP2, "/p0.html")))
            assert stopped.partial == "head" and stopped.http_version == "2"
            assert transport.h2 is not None and transport.h2.connections_opened == 1
            assert not whole.partial and len(whole.body) >= PAGE - 10  # libcurl, its own HTTP/2
        finally:
            await transport.aclose()

    asyncio.run(run())


def test_open_transport_keeps_libcurl_alone_by_default() -> None:
    assert isinstance(open_transport(CrawlConfig().fetch), CurlTransport)
    assert isinstance(open_transport(CrawlConfig(stop_at="head").fetch), PartialTransport)


def test_crawl_with_stop_at_head_records_warc_and_status(site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    srv, pki = site
    out = tmp_path / "out"
    cfg = CrawlConfig(seeds=(srv.url(IP2, "/index.html"),), out_dir=out, stop_at="head",
                      stop_rules=(("/p5\\.html$", "bytes:2000"),), allow_net=("127.0.0.0/8",),
                      quiet=True, obey_robots=False, max_depth=3)
    transport = PartialTransport(CurlTransport(_settings(pki)), H2Transport(_settings(pki)), "auto")

    async def crawl() -> None:
        try:
            await Crawler(cfg, transport=transport).run()
        finally:
            await transport.aclose()

    asyncio.run(crawl())
    store = open_store(str(out / "crawl.db"))
    try:
        index = store.get(srv.url(IP2, "/index.html"))
        p0 = store.get(srv.url(IP2, "/p0.html"))
        p5 = store.get(srv.url(IP2, "/p5.html"))
    finally:
        store.close()
    # Links in the body past the head were not seen: the crawl stops at what arrived.
    assert index is not None and index.partial == "head"
    full = len((srv.root / IP2 / "index.html").read_bytes())
    assert index.body_wire_bytes < PAGE and index.saved_bytes == full - index.body_wire_bytes
    assert index.wire_bytes > index.body_wire_bytes
    warc = {}
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    warc[record.rec_headers.get_header("WARC-Target-URI")] = (
                        record.rec_headers.get_header("WARC-Truncated"),
                        record.rec_headers.get_header("WARC-Stop-Condition"))
    assert warc[srv.url(IP2, "/index.html")] == ("stop-head", "head")
    if p0 is not None and p0.partial:  # found only if the link fell within what arrived
        assert warc[srv.url(IP2, "/p0.html")] == ("stop-head", "head")
    assert p5 is None or p5.partial == "bytes:2000"
    done = run_cli("status", str(out), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    bandwidth = report["bandwidth"]
    assert bandwidth["partial_pages"] >= 1
    assert bandwidth["saved_bytes"] >= PAGE - 32 * 1024
    assert bandwidth["body_wire_bytes"] <= bandwidth["wire_bytes"]
    assert bandwidth["decoded_bytes"] >= bandwidth["body_wire_bytes"] - 2000

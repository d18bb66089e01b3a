"""The nginx test fixture: starts, serves one site per loopback address, logs every request."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.nginx import NginxServer, parse_log_line
from tests.support.sitegen import SiteSpec, generate_site

HOSTS = ["127.88.0.1", "127.88.0.2", "127.88.0.3"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NginxServer, SiteSpec]]:
    root = tmp_path_factory.mktemp("www")
    server = NginxServer(root, HOSTS)
    spec = generate_site(root, HOSTS, pages_per_host=20, links_per_page=4, seed=7, port=server.port)
    with server:
        yield server, spec


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    conn.request("GET", path, headers={"User-Agent": "fixture-test"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def test_each_address_is_its_own_host(site: tuple[NginxServer, SiteSpec]) -> None:
    server, spec = site
    for host in HOSTS:
        conn = http.client.HTTPConnection(host, server.port, timeout=5)
        status, body = _get(conn, "/robots.txt")
        assert status == 200 and b"Disallow: /private/" in body
        status, body = _get(conn, "/")
        assert status == 200 and f"/ on {host}".encode() in body
        status, _ = _get(conn, "/missing-0.html")
        assert status == 404
        conn.close()
    assert all(u.startswith(server.url(HOSTS[0], "/")) or u.startswith("http://127.88.") for u in spec.pages)


def test_access_log_records_host_path_and_connection(site: tuple[NginxServer, SiteSpec]) -> None:
    server, _ = site
    before = len(server.requests())
    conn = http.client.HTTPConnection(HOSTS[1], server.port, timeout=5)
    paths = ("/p1.html", "/p2.html?x=1")
    for path in paths:
        assert _get(conn, path)[0] == 200
    conn.close()
    # nginx logs a request after answering it, so another test's last line may come after `before`:
    # pick this test's own lines rather than slicing the log.
    logged = server.wait_for_requests(before + 2)
    entries = [e for e in logged if e.server_addr == HOSTS[1] and e.uri in paths]
    assert [(e.server_addr, e.uri, e.status) for e in entries] == [
        (HOSTS[1], "/p1.html", 200),
        (HOSTS[1], "/p2.html?x=1", 200),
    ]
    assert entries[0].connection == entries[1].connection  # keep-alive: one connection ...
    assert [e.connection_requests for e in entries] == [1, 2]  # ... two requests on it
    assert entries[0].user_agent == "fixture-test" and entries[0].method == "GET"
    assert entries[0].remote_addr.startswith("127.") and entries[0].msec > 0


def test_spec_matches_what_is_on_disk(site: tuple[NginxServer, SiteSpec]) -> None:
    server, spec = site
    assert spec.seeds == (server.url(HOSTS[0], "/"),)
    assert spec.seeds[0] in spec.reachable
    assert spec.robots == {server.url(h, "/robots.txt") for h in HOSTS}
    assert spec.disallowed and all("/private/" in u for u in spec.disallowed)
    assert spec.missing and not spec.missing & spec.pages
    assert not spec.reachable & spec.disallowed
    for host in HOSTS:  # the cross-host links from the seed bring every host into the crawl
        assert spec.urls_on(host, spec.reachable)
    # every reachable page exists and is served
    conn = http.client.HTTPConnection(HOSTS[2], server.port, timeout=5)
    for url in sorted(spec.urls_on(HOSTS[2], spec.reachable)):
        assert _get(conn, url.split(str(server.port), 1)[1])[0] == 200
    conn.close()


def test_generation_is_deterministic(tmp_path: Path) -> None:
    one = generate_site(tmp_path / "a", HOSTS[:2], 15, 3, seed=3, port=8000)
    two = generate_site(tmp_path / "b", HOSTS[:2], 15, 3, seed=3, port=8000)
    assert one.links == two.links and one.reachable == two.reachable
    assert (tmp_path / "a" / HOSTS[0] / "index.html").read_bytes() == (
        tmp_path / "b" / HOSTS[0] / "index.html"
    ).read_bytes()
    big = generate_site(tmp_path / "c", HOSTS[:1], 3, 2, seed=1, port=8000, page_bytes=50_000)
    assert 45_000 < (tmp_path / "c" / HOSTS[0] / "p1.html").stat().st_size < 60_000
    assert len(big.pages) == 3


def test_parse_log_line_rejects_garbage() -> None:
    assert parse_log_line("not a log line") is None


def test_start_failure_is_reported(tmp_path: Path) -> None:
    server = NginxServer(tmp_path, ["127.88.0.9"], extra_http="this_is_not_a_directive on;")
    with pytest.raises(RuntimeError, match="nginx exited"):
        server.start()

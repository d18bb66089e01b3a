"""The bundled demo web: pages, robots.txt, port substitution, redirect, 404, conditional GET, ranges."""

from __future__ import annotations

import http.client
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestman.config import config_from_mapping
from harvestman.demo import DEMO_ROOT, DEMO_SITES, DemoServer, demo_config_values


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server


def _get(
    demo: DemoServer, address: str, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(address, demo.port, timeout=5)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


A, B, C = (site.address for site in DEMO_SITES)


def test_bundled_files_are_there() -> None:
    for site in DEMO_SITES:
        directory = DEMO_ROOT / site.directory
        assert (directory / "robots.txt").is_file()
        assert 10 <= len(list(directory.rglob("*.html"))) <= 20
    assert (DEMO_ROOT / "site-a/images/logo.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_pages_and_port_substitution(demo: DemoServer) -> None:
    status, headers, body = _get(demo, A, "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert b"<title>Orchard Almanac</title>" in body
    assert f"http://site-b.demo:{demo.port}/".encode() in body
    assert b"{{PORT}}" not in body
    status, _, body = _get(demo, C, "/guides/start.html")
    assert status == 200 and b"Start here" in body


def test_robots_per_site(demo: DemoServer) -> None:
    assert b"Disallow: /private/" in _get(demo, A, "/robots.txt")[2]
    robots_b = _get(demo, B, "/robots.txt")[2].decode()
    assert "Crawl-delay: 0.1" in robots_b
    assert f"Sitemap: http://site-b.demo:{demo.port}/sitemap.xml" in robots_b
    assert "Disallow:\n" in _get(demo, C, "/robots.txt")[2].decode()
    status, headers, body = _get(demo, B, "/sitemap.xml")
    assert status == 200 and headers["content-type"].startswith("application/xml")
    assert f"http://site-b.demo:{demo.port}/only-in-sitemap.html".encode() in body


def test_redirects_and_404(demo: DemoServer) -> None:
    status, headers, _ = _get(demo, A, "/old-news.html")
    assert status == 301 and headers["location"] == f"http://site-a.demo:{demo.port}/news.html"
    status, headers, _ = _get(demo, A, "/crops")
    assert status == 301 and headers["location"] == f"http://site-a.demo:{demo.port}/crops/"
    assert _get(demo, A, "/crops/")[0] == 200
    assert _get(demo, A, "/missing.html")[0] == 404
    assert _get(demo, A, "/../site-b/index.html")[0] == 404
    assert _get(demo, A, "/%2e%2e/site-b/index.html")[0] == 404
    assert _get(demo, B, "/posts/2023-12-lost.html")[0] == 404


def test_binary_head_conditional_and_range(demo: DemoServer) -> None:
    status, headers, body = _get(demo, A, "/images/logo.png")
    assert status == 200 and headers["content-type"] == "image/png" and body.startswith(b"\x89PNG")
    status, head_headers, head_body = _get(demo, A, "/images/logo.png", method="HEAD")
    assert status == 200 and head_body == b"" and head_headers["content-length"] == str(len(body))
    etag, last_modified = headers["etag"], headers["last-modified"]
    assert _get(demo, A, "/images/logo.png", {"If-None-Match": etag})[0] == 304
    assert _get(demo, A, "/images/logo.png", {"If-Modified-Since": last_modified})[0] == 304
    assert _get(demo, A, "/images/logo.png", {"If-None-Match": '"other"'})[0] == 200
    status, headers, part = _get(demo, A, "/images/logo.png", {"Range": "bytes=0-9"})
    assert status == 206 and part == body[:10] and headers["content-range"] == f"bytes 0-9/{len(body)}"
    assert _get(demo, A, "/images/logo.png", {"Range": "bytes=-4"})[2] == body[-4:]
    assert _get(demo, A, "/images/logo.png", {"Range": f"bytes={len(body)}-"})[0] == 416


def test_requests_are_recorded(demo: DemoServer) -> None:
    _get(demo, C, "/faq.html", {"User-Agent": "demo-test"})
    last = demo.requests()[-1]
    assert (last.host, last.method, last.path, last.status, last.user_agent) == (
        "site-c.demo", "GET", "/faq.html", 200, "demo-test"
    )


def test_config_values_build_a_crawl_config(demo: DemoServer) -> None:
    values = demo_config_values(demo)
    assert values["seeds"] == [f"http://site-a.demo:{demo.port}/"]
    assert values["resolve"] == [f"{s.host}:{demo.port}:{s.address}" for s in DEMO_SITES]
    assert isinstance(values["allow_net"], list)
    net = ipaddress.ip_network(values["allow_net"][0])
    assert all(ipaddress.ip_address(s.address) in net for s in DEMO_SITES)
    assert values == demo.config_values() and values["scope"] == "any"
    cfg = config_from_mapping(values)
    assert [r.curl_form() for r in cfg.resolve] == values["resolve"]
    assert cfg.seeds == tuple(values["seeds"]) and cfg.scope == "any"


def test_start_stop_and_fixed_port(tmp_path: Path) -> None:
    (tmp_path / "site-a").mkdir()
    (tmp_path / "site-a" / "index.html").write_text("port {{PORT}}")
    first = DemoServer(root=tmp_path, sites=DEMO_SITES[:1]).start()
    port = first.port
    first.stop()
    first.stop()  # twice is fine
    with DemoServer(root=tmp_path, port=port, sites=DEMO_SITES[:1]) as again:
        assert again.port == port
        assert _get(again, A, "/")[2] == f"port {port}".encode()

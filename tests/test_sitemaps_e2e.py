"""Sitemaps in a real crawl: an nginx-served site whose robots.txt names a gzipped sitemap index, a
broken sitemap and one on a host out of scope; pages reachable only through sitemaps."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from harvestman.model.records import LinkKind
from harvestman.store.factory import open_store
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx

A, OUTSIDE, C = "127.77.13.1", "127.77.13.2", "127.77.13.3"  # C: a seed host without a Sitemap line
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HIDDEN = ["/hidden/1.html", "/hidden/2.html", "/hidden/3.html", "/hidden/4.html"]


def _urlset(*locs: tuple[str, str]) -> bytes:
    body = "".join(f"<url><loc>{loc}</loc>" + (f"<lastmod>{mod}</lastmod>" if mod else "") + "</url>"
                   for loc, mod in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">{body}</urlset>\n'.encode()


def _page(title: str, *links: str) -> str:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    return f"<html><head><title>{title}</title></head><body>{anchors}</body></html>"


@pytest.fixture
def site(tmp_path: Path) -> NginxServer:
    require_nginx()
    port = free_port(A)
    root = tmp_path / "www"
    a, outside, c = (f"http://{ip}:{port}" for ip in (A, OUTSIDE, C))
    files: dict[str, str | bytes] = {
        f"{A}/robots.txt": (f"User-agent: *\nDisallow: /private/\n\nSitemap: {a}/maps/index.xml.gz\n"
                            f"Sitemap: {a}/maps/broken.xml\nSitemap: {outside}/sitemap.xml\n"),
        f"{A}/index.html": _page("home", "/about.html"),
        f"{A}/about.html": _page("about", "/"),
        f"{A}/maps/index.xml.gz": gzip.compress(
            f'<sitemapindex xmlns="{NS}"><sitemap><loc>{a}/maps/one.xml</loc></sitemap>'
            f'<sitemap><loc>{a}/maps/two.xml.gz</loc><lastmod>2024-03-01</lastmod></sitemap>'
            "</sitemapindex>".encode()),
        f"{A}/maps/one.xml": _urlset((f"{a}/hidden/1.html", "2024-05-01T10:20:30+02:00"),
                                     (f"{a}/hidden/2.html", ""), (f"{a}/about.html", "2023-01-01"),
                                     (f"{a}/private/secret.html", ""), (f"{outside}/elsewhere.html", "")),
        f"{A}/maps/two.xml.gz": gzip.compress(_urlset((f"{a}/hidden/3.html", "2024"),
                                                      (f"{a}/hidden/4.html", ""))),
        f"{A}/maps/broken.xml": _urlset((f"{a}/hidden/5.html", ""))[:-40] + b"<url><loc>oops</url>",
        f"{A}/private/secret.html": _page("secret"),
        f"{OUTSIDE}/robots.txt": "User-agent: *\nDisallow:\n",
        f"{OUTSIDE}/sitemap.xml": _urlset((f"{outside}/only-here.html", "")),
        f"{OUTSIDE}/only-here.html": _page("outside"),
        f"{OUTSIDE}/elsewhere.html": _page("outside"),
        f"{C}/robots.txt": "User-agent: *\nDisallow:\n",
        f"{C}/index.html": _page("c"),
        f"{C}/sitemap.xml": _urlset((f"{c}/probed.html", "2024-06-01")),
        f"{C}/probed.html": _page("probed"),
    }
    for i in range(1, 6):
        files[f"{A}/hidden/{i}.html"] = _page(f"hidden {i}")
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return NginxServer(root, [A, OUTSIDE, C], port)


def _crawl(server: NginxServer, out: Path, *options: str, workers: int = 1) -> set[str]:
    """Crawl A and C; the URLs requested (robots.txt files left out)."""
    with server:
        done = run_cli("crawl", server.url(A, "/"), server.url(C, "/"), "--out", str(out),
                       "--allow-net", "127.77.13.0/24", "--quiet", "--workers", str(workers), *options)
        requested = {server.url(e.server_addr, e.uri) for e in server.requests() if e.uri != "/robots.txt"}
    assert done.returncode == 0, done.stderr
    return requested


@pytest.mark.parametrize("workers", [1, 2])
def test_sitemaps_named_in_robots_txt_are_followed(site: NginxServer, tmp_path: Path, workers: int) -> None:
    out = tmp_path / "out"
    requested = _crawl(site, out, workers=workers)
    url = site.url
    assert {url(A, p) for p in HIDDEN} <= requested  # reachable only through the sitemaps
    assert {url(A, "/maps/index.xml.gz"), url(A, "/maps/one.xml"), url(A, "/maps/two.xml.gz"),
            url(A, "/maps/broken.xml")} <= requested
    assert url(A, "/private/secret.html") not in requested  # robots.txt applies to sitemap pages
    assert not any(u.startswith(f"http://{OUTSIDE}:") for u in requested)  # out of scope: not followed
    assert url(C, "/sitemap.xml") not in requested  # no probe by default
    assert url(A, "/hidden/5.html") not in requested  # after the fault in broken.xml

    status = json.loads(run_cli("status", str(out), "--json").stdout)
    assert status["errors"].get("sitemap") == 1
    store = open_store(str(out / "crawl.db"))
    try:
        broken = store.get(url(A, "/maps/broken.xml"))
        assert broken is not None and broken.error_class == "sitemap"
        assert broken.error_message.startswith("bad XML")
        one = store.get(url(A, "/maps/one.xml"))
        assert one is not None and one.error_class == "" and one.depth == 0  # a child keeps its depth
        hidden = store.get(url(A, "/hidden/1.html"))
        assert hidden is not None and hidden.depth == 1 and hidden.parent == url(A, "/maps/one.xml")
        edges = [e for e in store.links() if e.kind is LinkKind.SITEMAP]
    finally:
        store.close()
    by_page: dict[str, set[str]] = {}
    for edge in edges:
        by_page.setdefault(edge.from_url, set()).add(edge.to_url)
    assert by_page[url(A, "/maps/index.xml.gz")] == {url(A, "/maps/one.xml"), url(A, "/maps/two.xml.gz")}
    # The graph keeps every <loc>, followed or not, as pages keep all their links.
    assert f"http://{OUTSIDE}:{site.port}/elsewhere.html" in by_page[url(A, "/maps/one.xml")]

    with sqlite3.connect(out / "crawl.db") as db:
        metadata = dict(db.execute("SELECT url, metadata FROM urls WHERE metadata != ''").fetchall())
    assert json.loads(metadata[url(A, "/hidden/1.html")]) == {"lastmod": "2024-05-01T08:20:30Z"}
    assert json.loads(metadata[url(A, "/hidden/3.html")]) == {"lastmod": "2024-01-01T00:00:00Z"}
    assert json.loads(metadata[url(A, "/maps/two.xml.gz")]) == {"lastmod": "2024-03-01T00:00:00Z"}
    assert json.loads(metadata[url(A, "/about.html")]) == {"lastmod": "2023-01-01T00:00:00Z"}  # known already
    assert url(A, "/hidden/2.html") not in metadata


def test_sitemaps_off_finds_none(site: NginxServer, tmp_path: Path) -> None:
    requested = _crawl(site, tmp_path / "out", "--sitemaps", "off")
    assert requested == {site.url(A, "/"), site.url(A, "/about.html"), site.url(C, "/")}


def test_probe_finds_sitemap_xml(site: NginxServer, tmp_path: Path) -> None:
    requested = _crawl(site, tmp_path / "out", "--sitemaps", "probe")
    assert {site.url(C, "/sitemap.xml"), site.url(C, "/probed.html")} <= requested
    assert {site.url(A, p) for p in HIDDEN} <= requested
    assert site.url(A, "/sitemap.xml") in requested  # probed too (a 404 here)
    assert not any(u.startswith(f"http://{OUTSIDE}:") for u in requested)


def test_max_depth_zero_reads_sitemaps_but_queues_no_pages(site: NginxServer, tmp_path: Path) -> None:
    requested = _crawl(site, tmp_path / "out", "--max-depth", "0")
    assert site.url(A, "/maps/two.xml.gz") in requested  # child sitemaps keep the index's depth
    assert not {site.url(A, p) for p in HIDDEN} & requested


def test_a_sitemap_on_another_host_is_followed_when_in_scope(site: NginxServer, tmp_path: Path) -> None:
    requested = _crawl(site, tmp_path / "out", "--scope", "any")
    assert {site.url(OUTSIDE, "/sitemap.xml"), site.url(OUTSIDE, "/only-here.html"),
            site.url(OUTSIDE, "/elsewhere.html")} <= requested

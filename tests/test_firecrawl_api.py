"""Firecrawl's shapes on `harvestman serve` (v1: /v1/scrape, /v1/crawl, /v1/map; v2: those and
/v2/batch/scrape, /v2/search): a real server process crawling a real nginx, driven by Firecrawl's
published Python client (firecrawl-py's default class `Firecrawl` for v2, `V1FirecrawlApp` for v1) and
by raw requests for the shapes the client hides; the server's --allow-net decides what they reach."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.serveproc import TOKEN, ServeProcess, wait_for

pytest.importorskip("fastapi")
firecrawl = pytest.importorskip("firecrawl")

HOST, OTHER = "127.5.0.1", "127.5.0.2"
PAGE = """<!DOCTYPE html><html lang="en"><head><title>{title}</title>
<meta name="description" content="About {title}"></head><body>
<nav><a href="/">Home</a> <a href="/docs/a.html">A</a> <a href="#">Top</a></nav>
<main><h1>{title}</h1><p>Some words about {title}, and a <a href="{link}">link</a>.</p>
<h2>Table</h2><table><tr><th>name</th><th>value</th></tr><tr><td>x</td><td>1</td></tr></table>
<pre><code>print("{title}")</code></pre></main>
<script>var tracker = 1;</script></body></html>"""


class Site:
    def __init__(self, root: Path) -> None:
        require_nginx()
        self.port = free_port(HOST)
        self.base = f"http://{HOST}:{self.port}"
        pages = {
            "docs/index.html": ("Docs home", "a.html"),
            "docs/a.html": ("Page A", "b.html"),
            "docs/b.html": ("Page B", "/blog/post.html"),
            "blog/post.html": ("A post", "/docs/index.html"),
            "orphan.html": ("Orphan", "/docs/index.html"),
        }
        site = root / HOST
        for path, (title, link) in pages.items():
            (site / path).parent.mkdir(parents=True, exist_ok=True)
            (site / path).write_text(PAGE.format(title=title, link=link))
        robots = f"User-agent: *\nDisallow: /private/\nSitemap: {self.base}/map.xml\n"
        (site / "robots.txt").write_text(robots)
        urls = "".join(f"<url><loc>{self.base}/{p}</loc></url>" for p in ("orphan.html", "docs/a.html"))
        (site / "map.xml").write_text(
            f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        )
        (root / OTHER).mkdir()
        (root / OTHER / "index.html").write_text(PAGE.format(title="Other", link="/"))
        self.nginx = NginxServer(root, [HOST, OTHER], self.port).start()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    made = Site(tmp_path_factory.mktemp("fcsite"))
    yield made
    made.nginx.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    # Only HOST's address is the server's to reach: OTHER (another loopback address) stays out.
    root = tmp_path_factory.mktemp("fcserve") / "root"
    with ServeProcess(root, extra=("--allow-net", f"{HOST}/32")) as proc:
        yield proc


@pytest.fixture(scope="module")
def app(server: ServeProcess) -> Any:
    return firecrawl.V1FirecrawlApp(api_key=TOKEN, api_url=f"http://127.0.0.1:{server.port}")


def test_scrape_returns_markdown_html_links_and_metadata(app: Any, site: Site) -> None:
    doc = app.scrape_url(f"{site.base}/docs/a.html", formats=["markdown", "html", "rawHtml", "links"])
    assert doc.success
    assert "# Page A" in doc.markdown
    assert "| name | value |" in doc.markdown and "| x    | 1     |" in doc.markdown
    assert 'print("Page A")' in doc.markdown
    assert f"({site.base}/docs/b.html)" in doc.markdown  # links made absolute
    assert "Home" not in doc.markdown  # navigation is not main content
    assert "tracker" not in doc.html and "tracker" in doc.rawHtml
    assert f"{site.base}/docs/b.html" in doc.links
    meta = doc.metadata
    assert meta["title"] == "Page A" and meta["description"] == "About Page A"
    assert meta["statusCode"] == 200 and meta["sourceURL"] == f"{site.base}/docs/a.html"
    assert meta["language"] == "en"
    whole = app.scrape_url(f"{site.base}/docs/a.html", only_main_content=False)
    assert "Home" in whole.markdown and "# Page A" in whole.markdown and "tracker" not in whole.markdown


def test_scrape_refuses_what_the_server_may_not_reach_and_what_it_cannot_do(
    server: ServeProcess, site: Site
) -> None:
    other = server.call("POST", "/v1/scrape", {"url": f"http://{OTHER}:{site.port}/index.html"})
    assert other.status == 403 and other.json()["success"] is False
    assert "blocked" in other.json()["error"]
    robots = server.call("POST", "/v1/scrape", {"url": f"{site.base}/private/x.html"})
    assert robots.status == 403 and "robots" in robots.json()["error"]
    for body, word in [
        ({"url": f"{site.base}/", "formats": ["screenshot"]}, "screenshot"),
        ({"url": f"{site.base}/", "actions": [{"type": "click"}]}, "actions"),
        ({"url": "ftp://x/"}, "url"),
        ({}, "url"),
    ]:
        reply = server.call("POST", "/v1/scrape", body)
        assert reply.status == 400, body
        assert reply.json()["success"] is False and word in reply.json()["error"]
    assert server.call("POST", "/v1/scrape", {"url": f"{site.base}/"}, auth=False).status == 401


def test_crawl_runs_to_completion_with_firecrawl_semantics(app: Any, site: Site) -> None:
    # By default Firecrawl crawls only below the start URL's path: /blog/ and /orphan.html stay out.
    status = app.crawl_url(f"{site.base}/docs/index.html", limit=20, poll_interval=1,
                           scrape_options=firecrawl.v1.client.V1ScrapeOptions(formats=["markdown", "links"]))
    assert status.status == "completed"
    urls = {d.metadata["url"] for d in status.data}
    assert urls == {f"{site.base}/docs/index.html", f"{site.base}/docs/a.html", f"{site.base}/docs/b.html"}
    for doc in status.data:
        assert doc.markdown.startswith("# ") and doc.links
        meta = doc.metadata
        assert meta["warcRecordId"].startswith("<urn:uuid:") and meta["warcFile"] and meta["warcOffset"] >= 0
        assert meta["fetchTime"]
    assert status.completed == 3 and status.total >= 3


def test_crawl_with_backward_links_limit_and_excludes(server: ServeProcess, site: Site) -> None:
    started = server.call("POST", "/v1/crawl", {
        "url": f"{site.base}/docs/index.html", "allowBackwardLinks": True, "limit": 10,
        "excludePaths": ["^/docs/b"],
    }).json()
    assert started["success"] and started["url"].endswith(f"/v1/crawl/{started['id']}")
    status = _until_done(server, started["id"])
    urls = {d["metadata"]["url"] for d in status["data"]}
    assert f"{site.base}/docs/b.html" not in urls and f"{site.base}/docs/a.html" in urls
    assert status["data"][0]["markdown"]  # markdown is the default format
    # The crawl is an ordinary harvestman crawl too.
    assert server.call("GET", f"/api/crawls/{started['id']}").json()["state"] == "finished"


def test_crawl_status_pages_with_next(server: ServeProcess, site: Site) -> None:
    started = server.call("POST", "/v1/crawl", {"url": f"{site.base}/docs/index.html"}).json()
    status = _until_done(server, started["id"])
    assert "next" not in status
    later = server.call("GET", f"/v1/crawl/{started['id']}?skip=2").json()
    assert len(later["data"]) == len(status["data"]) - 2
    assert server.call("GET", "/v1/crawl/000000000000").status == 404
    assert server.call("GET", "/v1/crawl/nope").json() == {"success": False, "error": "Job not found",
                                                            "code": "NOT_FOUND"}
    assert server.call("POST", "/v1/crawl", {"url": f"{site.base}/", "webhook": "http://x/"}).status == 400


def test_cancel_a_crawl(server: ServeProcess, site: Site) -> None:
    started = server.call("POST", "/v1/crawl", {"url": f"{site.base}/docs/index.html", "delay": 2}).json()
    reply = server.call("DELETE", f"/v1/crawl/{started['id']}")
    assert reply.status == 200 and reply.json()["status"] == "cancelled"
    status = _until_done(server, started["id"])
    # Three pages 2 s apart take 4 s or more: a crawl that was not stopped ends "completed" with all three.
    assert status["status"] == "cancelled", status
    assert status["completed"] < 3


def test_map_lists_sitemap_and_page_links(app: Any, site: Site) -> None:
    found = app.map_url(f"{site.base}/docs/index.html")
    links = set(found.links)
    assert f"{site.base}/orphan.html" in links  # from the sitemap robots.txt names
    assert f"{site.base}/docs/a.html" in links  # from the page
    assert f"{site.base}/blog/post.html" in links  # two links away: found by the discovery crawl
    assert not any(OTHER in link or link.endswith("#") for link in links)
    searched = app.map_url(f"{site.base}/docs/index.html", search="orphan")
    assert searched.links[0] == f"{site.base}/orphan.html"  # search orders, it does not drop
    assert set(searched.links) == links
    only = app.map_url(f"{site.base}/docs/index.html", sitemap_only=True, limit=1)
    assert len(only.links) == 1


def _until_done(server: ServeProcess, crawl_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status: dict[str, Any] = server.call("GET", f"/v1/crawl/{crawl_id}").json()
        assert "status" in status, status
        if status["status"] != "scraping":
            return status
        time.sleep(0.3)
    raise AssertionError(f"crawl {crawl_id} still running after {timeout} s")


# ---- v2: firecrawl-py's default class


@pytest.fixture(scope="module")
def fc(server: ServeProcess) -> Any:
    return firecrawl.Firecrawl(api_key=TOKEN, api_url=f"http://127.0.0.1:{server.port}")


@pytest.fixture(scope="module")
def v2_crawl(fc: Any, site: Site) -> Any:
    """One v2 crawl, waited for: three pages below /docs/ are known, the limit takes two."""
    return fc.crawl(f"{site.base}/docs/index.html", limit=2, poll_interval=1, timeout=60,
                    scrape_options=firecrawl.v2.types.ScrapeOptions(formats=["markdown", "links"]))


@pytest.fixture(scope="module")
def v2_batch(fc: Any, site: Site) -> Any:
    """One v2 batch scrape, waited for: a page and the orphan only the sitemap lists."""
    return fc.batch_scrape([f"{site.base}/docs/b.html", f"{site.base}/orphan.html"], formats=["markdown"],
                           poll_interval=1, wait_timeout=60)


def test_v2_scrape(fc: Any, site: Site) -> None:
    doc = fc.scrape(f"{site.base}/docs/a.html", formats=["markdown", "html", "links"])
    assert "# Page A" in doc.markdown and "tracker" not in doc.html
    assert f"{site.base}/docs/b.html" in doc.links
    assert doc.metadata.title == "Page A" and doc.metadata.status_code == 200
    assert doc.warning is None
    waited = fc.scrape(f"{site.base}/docs/a.html", wait_for=500)  # said, not silently ignored
    assert "waitFor" in waited.warning


def test_v2_crawl_waits_and_keeps_to_its_limit(
    fc: Any, server: ServeProcess, v2_crawl: Any, site: Site
) -> None:
    assert v2_crawl.status == "completed"
    assert v2_crawl.completed == len(v2_crawl.data) == 2
    assert v2_crawl.total == 2  # the third known URL is beyond the limit: never counted
    assert isinstance(v2_crawl.credits_used, int)
    for doc in v2_crawl.data:
        assert doc.markdown.startswith("# ") and doc.links and doc.metadata.url.startswith(site.base)
    first = server.call("GET", f"/v2/crawl/{v2_crawl.id}?limit=1").json()
    assert first["next"] == f"/v2/crawl/{v2_crawl.id}?skip=1&limit=1"  # relative to the server
    assert len(first["data"]) == 1
    assert fc.get_crawl_errors(v2_crawl.id).errors == []
    assert fc.cancel_crawl(v2_crawl.id) is False  # it has ended: nothing to cancel


def test_v2_map_finds_the_site_not_just_the_start_page(fc: Any, v2_batch: Any, site: Site) -> None:
    found = fc.map(f"{site.base}/docs/index.html")
    by_url = {link.url: link for link in found.links}
    assert f"{site.base}/orphan.html" in by_url  # its sitemap
    assert f"{site.base}/blog/post.html" in by_url  # two links away
    assert by_url[f"{site.base}/docs/a.html"].title == "Page A"
    assert by_url[f"{site.base}/docs/a.html"].description == "About Page A"
    assert not any(OTHER in url or url.endswith("#") for url in by_url)
    searched = fc.map(f"{site.base}/docs/index.html", search="post", limit=2)
    assert searched.links[0].url == f"{site.base}/blog/post.html"
    assert len(searched.links) == 2
    # Without its sitemap, the orphan is known from the pages this server fetched (the batch).
    unlisted = fc.map(f"{site.base}/docs/index.html", sitemap="skip")
    assert f"{site.base}/orphan.html" in {link.url for link in unlisted.links}


def test_v2_batch_scrape(v2_batch: Any, site: Site) -> None:
    assert v2_batch.status == "completed" and v2_batch.completed == v2_batch.total == 2
    urls = {f"{site.base}/docs/b.html", f"{site.base}/orphan.html"}
    assert {d.metadata.source_url for d in v2_batch.data} == urls  # those alone: no link followed
    assert all(d.markdown.startswith("# ") for d in v2_batch.data)


def test_v2_search_over_the_servers_own_index(fc: Any, v2_crawl: Any, site: Site) -> None:
    found = fc.search("Page", limit=5)
    assert "own full-text index" in found.warning
    urls = {hit.url for hit in found.web}
    assert f"{site.base}/docs/a.html" in urls or f"{site.base}/docs/index.html" in urls
    with_docs = fc.search("Page", limit=1, scrape_options={"formats": ["markdown"]})
    assert with_docs.web[0].markdown.startswith("# ")


def test_v2_refusals_are_errors_the_client_raises(fc: Any, server: ServeProcess, site: Site) -> None:
    with pytest.raises(firecrawl.v2.utils.error_handler.BadRequestError, match="language model"):
        fc.extract(urls=[f"{site.base}/docs/a.html"], prompt="the title")
    with pytest.raises(firecrawl.v2.utils.error_handler.BadRequestError, match="screenshot"):
        fc.scrape(f"{site.base}/docs/a.html", formats=["screenshot"])
    with pytest.raises(firecrawl.v2.utils.error_handler.BadRequestError, match="news"):
        fc.search("Page", sources=["news"])
    for path in ("/v2/nope", "/v1/nope", "/v2/crawl/000000000000"):
        reply = server.call("GET", path)
        assert reply.status == 404 and reply.json()["success"] is False, path
        assert reply.json()["code"] == "NOT_FOUND" and reply.json()["error"]
    too_large = server.call("POST", "/v2/scrape", raw=b" " * (1024 * 1024 + 1),
                            headers={"Content-Type": "application/json"})
    assert too_large.status == 413 and too_large.json()["code"] == "PAYLOAD_TOO_LARGE"
    not_json = server.call("POST", "/v2/crawl", raw=b"{", headers={"Content-Type": "application/json"})
    assert not_json.status == 400 and "JSON" in not_json.json()["error"]
    unauthorized = server.call("POST", "/v2/scrape", {"url": f"{site.base}/"}, auth=False)
    assert unauthorized.status == 401 and unauthorized.json()["code"] == "UNAUTHORIZED"
    # /api keeps its own shape (serve/apierrors.py)
    assert server.call("GET", "/api/nope").json() == {"detail": "no such route: GET /api/nope"}


def test_v2_routes_that_fetch_stay_within_the_servers_network_rules(fc: Any, site: Site) -> None:
    # OTHER is a loopback address the server was not allowed: scrape, map, crawl and batch scrape are
    # each refused it, and its nginx never sees a request.
    other = f"http://{OTHER}:{site.port}/index.html"
    errors = firecrawl.v2.utils.error_handler
    with pytest.raises(errors.WebsiteNotSupportedError, match="blocked"):
        fc.scrape(other)
    with pytest.raises(errors.BadRequestError, match="blocked"):
        fc.map(other)
    crawled = fc.crawl(other, limit=5, poll_interval=1, timeout=60)
    batch_id = fc.start_batch_scrape([other]).id
    batch = wait_for(lambda: (job := fc.get_batch_scrape_status(batch_id)).status != "scraping" and job,
                     60, "the batch scrape to end", every=0.5)
    for job in (crawled, batch):
        assert job.status in ("completed", "failed") and job.data == []
    assert [e.code for e in fc.get_batch_scrape_errors(batch_id).errors] == ["blocked_address"]
    assert not [e for e in site.nginx.requests() if e.server_addr == OTHER]

"""Firecrawl's v1 and v2 request shapes translated to harvestman's settings (serve/fcshapes.py),
without a server."""

from __future__ import annotations

import re

import pytest

from harvestman.model.config import config_from_mapping
from harvestman.policy.scope import Scope
from harvestman.serve.fcshapes import (
    ShapeError,
    batch_request,
    crawl_request,
    crawl_status,
    expires_at,
    map_request,
    scrape_options,
    search_request,
)

START = "http://site.test/docs/guide/index.html"


def _scope(body: dict[str, object]) -> Scope:
    asked = crawl_request({"url": START, **body})
    settings = asked.settings
    config_from_mapping(settings)  # every translated setting is one harvestman takes
    return Scope([asked.url], str(settings["scope"]), settings.get("include", ()),
                 settings.get("exclude", ()))


def test_by_default_only_pages_below_the_start_path_on_its_host() -> None:
    scope = _scope({})
    assert scope.allows("http://site.test/docs/guide/a.html")
    assert scope.allows("http://site.test/docs/guide/deep/b.html?x=1")
    assert not scope.allows("http://site.test/docs/other.html")
    assert not scope.allows("http://site.test/docs/guidebook.html")
    assert not scope.allows("http://other.test/docs/guide/a.html")
    assert _scope({"allowBackwardLinks": True}).allows("http://site.test/blog/x.html")
    assert _scope({"crawlEntireDomain": True}).allows("http://site.test/")


def test_paths_are_matched_against_the_path_as_firecrawl_does() -> None:
    scope = _scope({"allowBackwardLinks": True, "includePaths": ["^/docs/"], "excludePaths": ["private"]})
    assert scope.allows("http://site.test/docs/a.html")
    assert not scope.allows("http://site.test/blog/docs/a.html")  # anchored at the path's start
    assert not scope.allows("http://site.test/docs/private/a.html")
    assert not scope.allows("http://site.test/")
    full = _scope({"allowBackwardLinks": True, "includePaths": [r"^https?://site\.test/docs"],
                   "regexOnFullURL": True})
    assert full.allows("http://site.test/docs/x") and not full.allows("http://site.test/blog")


def test_max_depth_counts_path_segments_beyond_the_start() -> None:
    scope = _scope({"maxDepth": 1})
    assert scope.allows("http://site.test/docs/guide/a.html")  # 3 segments: start's 2 + 1
    assert not scope.allows("http://site.test/docs/guide/deep/b.html")


def test_limits_scope_and_politeness_settings() -> None:
    asked = crawl_request(
        {"url": START, "limit": 7, "maxDiscoveryDepth": 2, "allowExternalLinks": True, "delay": 1.5,
         "maxConcurrency": 4, "ignoreSitemap": True,
         "scrapeOptions": {"formats": ["links", {"type": "html"}], "onlyMainContent": False,
                           "headers": {"X-A": "1"}, "timeout": 5000, "skipTlsVerification": True}},
    )
    settings, options = asked.settings, asked.options
    config_from_mapping(settings)
    assert settings["max_pages"] == 7 and settings["max_depth"] == 2 and settings["scope"] == "any"
    assert settings["delay"] == 1.5 and settings["concurrency"] == 4 and settings["sitemaps"] == "off"
    assert settings["extra_headers"] == {"X-A": "1"}
    assert settings["timeout"] == 5.0 and settings["verify_tls"] is False  # honoured, not ignored
    assert options.formats == ("links", "html") and not options.only_main_content
    assert crawl_request({"url": START, "sitemap": "skip"}).settings["sitemaps"] == "off"  # v2's name


def test_depth_zero_is_the_start_page_alone() -> None:
    for name in ("maxDiscoveryDepth", "maxDepth"):  # 0 was refused once
        assert crawl_request({"url": START, name: 0}).settings["max_depth"] == 0


def test_the_request_never_says_what_the_server_may_reach() -> None:
    with pytest.raises(ShapeError, match="allow_net"):
        crawl_request({"url": START, "allow_net": ["0.0.0.0/0"]})
    settings = crawl_request({"url": START}).settings  # the server adds its own (serve/ceiling.py)
    assert not {"allow_net", "only_net", "resolve", "proxy"} & set(settings)


@pytest.mark.parametrize(("body", "said"), [
    ({"url": START, "webhook": "http://hook/"}, "webhook"),
    ({"url": START, "limit": 0}, "limit"),
    ({"url": START, "limit": "ten"}, "limit"),
    ({"url": START, "includePaths": ["("]}, "regex"),
    ({"url": START, "delay": -1}, "delay"),
    ({"url": START, "scrapeOptions": {"formats": [{"type": "json"}]}}, "json"),
    ({"url": START, "scrapeOptions": {"formats": "markdown"}}, "formats"),
    ({"url": START, "actions": []}, "actions"),
    ({"url": START, "ignoreRobotsTxt": True}, "robots.txt"),
    ({"url": START, "zeroDataRetention": True}, "zeroDataRetention"),
    ({"url": START, "prompt": "the docs"}, "prompt"),
    ({"url": START, "scrapeOptions": {"mobile": True}}, "mobile"),
    ({"url": START, "scrapeOptions": {"proxy": "stealth"}}, "proxy"),
    ({"url": "javascript:alert(1)"}, "url"),
    ([], "object"),
])
def test_bad_requests_are_refused_with_their_reason(body: object, said: str) -> None:
    with pytest.raises(ShapeError, match=re.escape(said)):
        crawl_request(body)


def test_scrape_and_map_options() -> None:
    assert scrape_options({"url": START}).formats == ("markdown",)
    with pytest.raises(ShapeError, match="screenshot"):
        scrape_options({"url": START, "formats": ["screenshot"]})
    with pytest.raises(ShapeError, match="includeTags"):
        scrape_options({"url": START, "includeTags": ["p"]})
    # What firecrawl-py sends by default is taken; what a fetch cannot do is said, not ignored.
    taken = scrape_options({"url": START, "origin": "python-sdk", "maxAge": 14400000, "fastMode": False,
                            "blockAds": True, "storeInCache": True, "mobile": False,
                            "removeBase64Images": True, "onlyMainContent": True})
    assert taken.warnings == ()
    waited = scrape_options({"url": START, "waitFor": 1000, "parsePDF": False})
    assert [w.split(":")[0] for w in waited.warnings] == ["waitFor", "parsePDF/parsers"]
    asked = map_request({"url": START, "search": " guide ", "limit": 3, "includeSubdomains": True})
    assert (asked.search, asked.limit, asked.subdomains, asked.use_sitemap) == ("guide", 3, True, True)
    with pytest.raises(ShapeError, match="at most"):
        map_request({"url": START, "limit": 10**6})


def test_states_and_expiry() -> None:
    assert [crawl_status(s) for s in ("running", "stopping", "finished", "failed", "stopped")] == [
        "scraping", "scraping", "completed", "failed", "cancelled"]
    assert expires_at(0) == "1970-01-02T00:00:00Z"


def test_v2_batch_and_search_requests() -> None:
    batch = batch_request({"urls": [START, "ftp://x/", START], "formats": [{"type": "links"}],
                           "maxConcurrency": 2})
    assert batch.urls == (START,) and batch.invalid == ("ftp://x/",)
    assert batch.settings["follow_links"] is False and batch.settings["concurrency"] == 2
    config_from_mapping(batch.settings)
    with pytest.raises(ShapeError, match="ftp"):
        batch_request({"urls": ["ftp://x/", START], "ignoreInvalidURLs": False})
    asked = search_request({"query": " orchard ", "limit": 3, "scrapeOptions": {"formats": ["markdown"]}})
    assert (asked.query, asked.limit) == ("orchard", 3) and asked.options is not None
    assert "own full-text index" in asked.warnings[0]
    assert search_request({"query": "x"}).options is None
    for body, said in [({"query": "x", "sources": ["news"]}, "news"), ({"query": "x", "tbs": "qdr:d"}, "tbs"),
                       ({"query": "x", "country": "de"}, "country"), ({"query": ""}, "query"),
                       ({"query": "x", "limit": 101}, "limit"), ({"query": "x", "sources": 5}, "sources")]:
        with pytest.raises(ShapeError, match=said):
            search_request(body)
    v2map = map_request({"url": START, "sitemap": "only", "timeout": 2000}, subdomains=True,
                        ignore_query=True)
    assert v2map.sitemap_only and v2map.timeout == 2.0 and v2map.subdomains and v2map.ignore_query

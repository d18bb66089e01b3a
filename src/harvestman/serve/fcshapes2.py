"""Firecrawl's v2 request shapes that v1 lacks (no I/O): batch scrapes and search; the rest of v2
(scrape, crawl, map, documents, errors) is v1's shape with v2's names, in serve/fcshapes.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harvestman.serve.fcshapes import (
    _PAGE,
    ScrapeOptions,
    ShapeError,
    _check_keys,
    _count,
    _flag,
    _format_name,
    _milliseconds,
    _object,
    _refused,
    _url,
    scrape_options,
)

BATCH_MAX = 10_000  # URLs in one batch scrape (the server's seed limit)
SEARCH_LIMIT, SEARCH_LIMIT_MAX = 5, 100  # Firecrawl's default and largest `limit` of /v2/search
SEARCH_WARNING = ("harvestman searches its own full-text index of the pages this server has crawled, "
                  "not the web")
EXTRACT_REFUSED = ("/v2/extract asks a language model to fill a schema: harvestman runs none "
                   "(scrape the pages and extract them yourself)")
_BATCH = _PAGE | {"urls", "webhook", "appendToId", "ignoreInvalidURLs", "maxConcurrency"}
_SEARCH = frozenset({"query", "limit", "sources", "categories", "tbs", "filter", "lang", "country",
                     "location", "timeout", "ignoreInvalidURLs", "scrapeOptions"})


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """A checked /v2/batch/scrape request: the URLs to fetch (as a crawl that follows no links), those
    refused as not http(s), harvestman's settings and the options of each document."""

    urls: tuple[str, ...]
    invalid: tuple[str, ...]
    settings: dict[str, Any]
    options: ScrapeOptions


def batch_request(body: Any) -> BatchRequest:
    """A /v2/batch/scrape request as a harvestman crawl of its URLs alone."""
    body = _object(body)
    _check_keys(body, _BATCH)
    if body.get("webhook"):
        raise ShapeError("webhook: not supported by harvestman (poll the batch's status)")
    if body.get("appendToId"):
        raise _refused("appendToId", "start a new batch scrape")
    urls = body.get("urls")
    if not isinstance(urls, list) or not urls or len(urls) > BATCH_MAX:
        raise ShapeError(f"urls: a list of 1 to {BATCH_MAX} URLs")
    valid: list[str] = []
    invalid: list[str] = []
    for item in urls:
        try:
            valid.append(_url({"url": item}))
        except ShapeError:
            invalid.append(str(item))
    if invalid and not _flag(body, "ignoreInvalidURLs", True):
        raise ShapeError(f"urls: not http(s) URLs: {', '.join(invalid[:5])}")
    if not valid:
        raise ShapeError("urls: no valid http(s) URL")
    options = scrape_options({k: v for k, v in body.items() if k in _PAGE}, keys=_PAGE)
    settings: dict[str, Any] = {"follow_links": False, "sitemaps": "off", "scope": "any",
                                **options.fetch_settings()}
    if "maxConcurrency" in body:
        settings["concurrency"] = _count(body, "maxConcurrency", 1)
    return BatchRequest(tuple(dict.fromkeys(valid)), tuple(invalid), settings, options)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A checked /v2/search request; `options` when each hit is to come with its document."""

    query: str
    limit: int
    timeout: float | None  # seconds
    options: ScrapeOptions | None
    warnings: tuple[str, ...]


def search_request(body: Any) -> SearchRequest:
    """A /v2/search request over the server's own index (web results only)."""
    body = _object(body)
    _check_keys(body, _SEARCH)
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ShapeError("query: a non-empty string")
    for item in body.get("sources", ["web"]):
        name = _format_name(item)
        if name != "web":
            raise _refused(f"sources: {name}", "only the web pages of its own index are searched")
    for name in ("tbs", "country", "location", "categories", "filter"):
        if body.get(name):
            raise _refused(name, "its own index has no such filter")
    warnings = [SEARCH_WARNING]
    if body.get("lang"):
        warnings.append("lang: pages of every language are searched")
    options = None
    page_options = body.get("scrapeOptions", {})
    if isinstance(page_options, Mapping) and page_options.get("formats"):
        options = scrape_options(page_options, keys=_PAGE)
        warnings += options.warnings
    elif page_options:
        scrape_options({**_object(page_options), "formats": ["markdown"]}, keys=_PAGE)  # checked all the same
    return SearchRequest(query.strip(), _count(body, "limit", SEARCH_LIMIT, most=SEARCH_LIMIT_MAX),
                         _milliseconds(body, "timeout"), options, tuple(warnings))


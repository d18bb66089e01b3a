"""Firecrawl's request and response shapes, v1's and v2's, translated to and from harvestman's own
(no I/O): v2's scrape, crawl, map, documents and errors are v1's with v2's names, read by the same
functions; v2's batch scrapes and search are its own (at the end).

`serve/firecrawl.py` serves them at /v1/... and /v2/... so that clients written for Firecrawl (its
Python client's `Firecrawl` and `V1FirecrawlApp`, LangChain's and LlamaIndex's loaders) work against
`harvestman serve` by changing a URL. Only the shapes are Firecrawl's: a crawl is a harvestman crawl,
a page a harvestman fetch, polite as ever (robots.txt obeyed). Every option is honoured, refused by
name (actions, screenshots, LLM extraction, webhooks, stealth proxies, ...) or answered with a
`warning` saying what harvestman does instead; only client bookkeeping is taken without a word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from harvestman.crawl.parse import parse_html
from harvestman.model.errors import ConfigError

FORMATS = frozenset({"markdown", "html", "rawHtml", "links"})
DEFAULT_FORMATS = ("markdown",)
CRAWL_LIMIT = 10_000  # Firecrawl's default `limit`
MAP_LIMIT = 5_000  # Firecrawl's default `limit` for /v1/map
MAP_LIMIT_MAX = 30_000
RESULTS_KEPT = 24 * 3600  # seconds: what `expiresAt` says (the pages stay until the crawl is deleted)

# Taken whatever their value and without effect: client bookkeeping, and what only Firecrawl's own
# cache and browser farm mean (a harvestman fetch is always fresh, and runs no ads or scripts).
_BOOKKEEPING = frozenset({"origin", "integration", "maxAge", "storeInCache", "fastMode", "blockAds"})
# What a page's fetch and document take (v1 and v2 alike; v2 names the PDF parser `parsers`).
_PAGE = frozenset({"formats", "onlyMainContent", "headers", "includeTags", "excludeTags", "timeout",
                   "waitFor", "mobile", "skipTlsVerification", "removeBase64Images", "parsePDF",
                   "parsers", "proxy", "location", "actions", "zeroDataRetention"})
_SCRAPE = _PAGE | {"url"}
_CRAWL = frozenset({"url", "limit", "maxDepth", "maxDiscoveryDepth", "includePaths", "excludePaths",
                    "allowBackwardLinks", "crawlEntireDomain", "allowExternalLinks", "allowSubdomains",
                    "ignoreSitemap", "sitemap", "scrapeOptions", "delay", "maxConcurrency",
                    "regexOnFullURL", "webhook", "ignoreRobotsTxt", "deduplicateSimilarURLs",
                    "ignoreQueryParameters", "zeroDataRetention"})
_MAP = frozenset({"url", "search", "ignoreSitemap", "sitemapOnly", "sitemap", "includeSubdomains",
                  "limit", "timeout", "ignoreQueryParameters"})
MAP_TIMEOUT = 30.0  # seconds a map takes at most when the request names no `timeout`


FIRECRAWL_PREFIXES = ("/v1/", "/v2/")  # the paths answered in Firecrawl's shapes, errors included
_ANY_AUTHORITY = r"^[a-z][a-z0-9+.-]*://[^/?#]*"  # a URL's scheme and authority, in a URL regex


class ShapeError(ConfigError):
    """A Firecrawl-shaped request harvestman cannot take: said as Firecrawl says it (400)."""


@dataclass(frozen=True, slots=True)
class ScrapeOptions:
    """What a scrape (or each page of a crawl) returns."""

    formats: tuple[str, ...] = DEFAULT_FORMATS
    only_main_content: bool = True
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float | None = None  # seconds a fetch may take (Firecrawl's `timeout`, in ms)
    verify_tls: bool = True
    remove_base64_images: bool = True
    warnings: tuple[str, ...] = ()  # options taken with a difference, said in the answer's `warning`

    def as_json(self) -> dict[str, Any]:
        """What a crawl's documents are made with, as kept with the crawl (read back by
        `stored_scrape_options`)."""
        return {"formats": list(self.formats), "onlyMainContent": self.only_main_content,
                "removeBase64Images": self.remove_base64_images}

    def fetch_settings(self) -> dict[str, Any]:
        """The harvestman fetch settings these options ask for (a scrape's, or each page's of a crawl)."""
        settings: dict[str, Any] = {}
        if self.headers:
            settings["extra_headers"] = dict(self.headers)
        if self.timeout is not None:
            settings["timeout"] = self.timeout
        if not self.verify_tls:
            settings["verify_tls"] = False
        return settings


@dataclass(frozen=True, slots=True)
class MapRequest:
    """A checked /v1/map request."""

    url: str
    search: str = ""
    use_sitemap: bool = True
    sitemap_only: bool = False
    subdomains: bool = False
    limit: int = MAP_LIMIT
    timeout: float = MAP_TIMEOUT  # seconds
    ignore_query: bool = False  # URLs that differ in their query only are one


def _object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise ShapeError("the body must be a JSON object")
    return body


def _check_keys(body: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(body) - known - _BOOKKEEPING)
    if unknown:
        raise ShapeError(f"not supported by harvestman: {', '.join(unknown)}")


def _refused(name: str, why: str) -> ShapeError:
    return ShapeError(f"{name}: not supported by harvestman ({why})")


def _shared_options(body: Mapping[str, Any]) -> list[str]:
    """The options of every kind of request that harvestman honours in its own way: refused by
    name where it cannot, warnings where it does something close."""
    warnings = []
    if body.get("zeroDataRetention", False) is not False:
        raise _refused("zeroDataRetention", "every page fetched is kept in the crawl's WARC files")
    if body.get("ignoreRobotsTxt", False) is not False:
        raise _refused("ignoreRobotsTxt", "harvestman always obeys robots.txt")
    if body.get("deduplicateSimilarURLs", True) is not True:
        warnings.append("deduplicateSimilarURLs: harvestman always normalizes URLs before fetching")
    return warnings


def _url(body: Mapping[str, Any]) -> str:
    url = body.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ShapeError("url: a URL is required")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ShapeError(f"url: not an http(s) URL: {url!r}")
    return url.strip()


def _flag(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise ShapeError(f"{name}: must be true or false")
    return value


def _count(body: Mapping[str, Any], name: str, default: int, *, most: int | None = None) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ShapeError(f"{name}: must be a whole number of at least 1")
    if most is not None and value > most:
        raise ShapeError(f"{name}: at most {most}")
    return value


def _strings(body: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ShapeError(f"{name}: must be a list of strings")
    return tuple(value)


def _format_name(item: Any) -> Any:
    """A format as v1 (a name) or v2 (a name, or an object with its `type`) gives it."""
    return item.get("type") if isinstance(item, Mapping) else item


def _milliseconds(body: Mapping[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ShapeError(f"{name}: a number of milliseconds, more than 0")
    return value / 1000


def scrape_options(body: Any, *, keys: frozenset[str] = _SCRAPE) -> ScrapeOptions:
    """The options of a scrape request (or of a crawl's `scrapeOptions`)."""
    body = _object(body)
    _check_keys(body, keys)
    warnings = _shared_options(body)
    formats = body.get("formats", list(DEFAULT_FORMATS))
    if not isinstance(formats, list) or not formats:
        raise ShapeError("formats: a non-empty list of formats")
    formats = [_format_name(f) for f in formats]
    for name in formats:
        if not isinstance(name, str) or name not in FORMATS:
            raise ShapeError(f"formats: {name!r} is not supported by harvestman "
                             f"(it serves {', '.join(sorted(FORMATS))})")
    if body.get("includeTags") or body.get("excludeTags"):
        raise ShapeError("includeTags, excludeTags: not supported by harvestman")
    if body.get("actions"):
        raise _refused("actions", "pages are read as served; no browser is driven")
    if body.get("location"):
        raise _refused("location", "pages are fetched from the server's own network; "
                       "send an Accept-Language header instead")
    if body.get("proxy", "auto") not in ("auto", "basic"):
        raise _refused("proxy", "only the server's own network, no stealth proxies")
    if body.get("mobile", False) is not False:
        raise _refused("mobile", "harvestman fetches with its own User-Agent, never as a phone")
    if body.get("waitFor", 0):
        warnings.append("waitFor: pages are read as served, without running their scripts, so "
                        "there is nothing to wait for")
    if body.get("parsePDF", True) is False or body.get("parsers", ["pdf"]) == []:
        warnings.append("parsePDF/parsers: harvestman reads PDFs' text and links as it always does")
    headers = body.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ShapeError("headers: an object of header names and values")
    return ScrapeOptions(tuple(dict.fromkeys(formats)), _flag(body, "onlyMainContent", True),
                         tuple(headers.items()), timeout=_milliseconds(body, "timeout"),
                         verify_tls=not _flag(body, "skipTlsVerification", False),
                         remove_base64_images=_flag(body, "removeBase64Images", True),
                         warnings=tuple(warnings))


_STORED = frozenset({"formats", "onlyMainContent", "removeBase64Images"})


def stored_scrape_options(kept: Mapping[str, Any]) -> ScrapeOptions:
    """The options a crawl's documents are made with, from `ScrapeOptions.as_json` (what else an
    older server kept there is passed over)."""
    return scrape_options({k: v for k, v in kept.items() if k in _STORED}, keys=_STORED)


def scrape_url(body: Any) -> str:
    """The URL of a /v1/scrape request (its options: `scrape_options`)."""
    return _url(_object(body))


def _path_rule(pattern: str, on_full_url: bool) -> str:
    """A Firecrawl path pattern as a harvestman include/exclude regex (searched in the whole URL).

    Firecrawl tests its patterns against the URL's path (or the whole URL with `regexOnFullURL`):
    a pattern anchored with ^ is anchored at the path's start here too."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ShapeError(f"includePaths/excludePaths: {pattern!r} is not a regex: {exc}") from None
    if on_full_url:
        return pattern
    if pattern.startswith("^"):
        return _ANY_AUTHORITY + f"(?:{pattern[1:]})"
    return _ANY_AUTHORITY + f"[^?#]*?(?:{pattern})"


@dataclass(frozen=True, slots=True)
class CrawlRequest:
    """A checked crawl request: its seed, harvestman's crawl settings (the server adds its network
    rules), the options of its pages and what was taken with a difference."""

    url: str
    settings: dict[str, Any]
    options: ScrapeOptions
    warnings: tuple[str, ...]


def _depth(body: Mapping[str, Any], name: str) -> int:
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ShapeError(f"{name}: must be a whole number, 0 or more")
    return value


def crawl_request(body: Any) -> CrawlRequest:
    """A /v1/crawl or /v2/crawl request as harvestman's crawl (v2's `sitemap` is v1's `ignoreSitemap`)."""
    body = _object(body)
    _check_keys(body, _CRAWL)
    url = _url(body)
    warnings = _shared_options(body)
    if body.get("webhook"):
        raise ShapeError("webhook: not supported by harvestman (poll the crawl's status)")
    sitemap = body.get("sitemap", "include")
    if sitemap not in ("include", "skip"):
        raise ShapeError("sitemap: include or skip")
    settings: dict[str, Any] = {
        "max_pages": _count(body, "limit", CRAWL_LIMIT),
        "sitemaps": "off" if _flag(body, "ignoreSitemap", False) or sitemap == "skip" else "robots",
    }
    if "maxDiscoveryDepth" in body:
        settings["max_depth"] = _depth(body, "maxDiscoveryDepth")
    full = _flag(body, "regexOnFullURL", False)
    include = [_path_rule(p, full) for p in _strings(body, "includePaths")]
    exclude = [_path_rule(p, full) for p in _strings(body, "excludePaths")]
    if "maxDepth" in body and _depth(body, "maxDepth") == 0:  # the start page alone
        settings["max_depth"] = 0
    elif "maxDepth" in body:  # path segments below the start URL's folder (a page in it is at 1)
        base = len([s for s in _folder(urlsplit(url).path).split("/") if s])
        deeper = base + _depth(body, "maxDepth") + 1
        exclude.append(_ANY_AUTHORITY + "(?:/[^/?#]+)" + f"{{{deeper},}}")
    if _flag(body, "ignoreQueryParameters", False):  # the first page of a path is its only one
        exclude.append(_ANY_AUTHORITY + r"[^?#]*\?")
        warnings.append("ignoreQueryParameters: links with a query are not followed")
    if not (_flag(body, "allowBackwardLinks", False) or _flag(body, "crawlEntireDomain", False)):
        start = urlsplit(url)
        folder = _folder(start.path)
        if folder:  # only the pages under the start URL's path, as Firecrawl does by default
            include.append("^" + re.escape(f"{start.scheme}://{start.netloc}{folder}") + "(?:[/?#]|$)")
    if include:
        settings["include"] = include
    if exclude:
        settings["exclude"] = exclude
    external, subdomains = _flag(body, "allowExternalLinks", False), _flag(body, "allowSubdomains", False)
    settings["scope"] = "any" if external else "domain" if subdomains else "host"
    if "delay" in body:
        delay = body["delay"]
        if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
            raise ShapeError("delay: a number of seconds, 0 or more")
        settings["delay"] = float(delay)
    if "maxConcurrency" in body:
        settings["concurrency"] = _count(body, "maxConcurrency", 1)
    options = scrape_options(body.get("scrapeOptions", {}), keys=_PAGE)
    settings.update(options.fetch_settings())
    return CrawlRequest(url, settings, options, (*warnings, *options.warnings))


def _folder(path: str) -> str:
    """The folder of a URL path, without its final slash: /a/b.html and /a/ -> /a."""
    return path.rstrip("/") if path.endswith("/") else path.rsplit("/", 1)[0]


def map_request(body: Any, *, subdomains: bool = False, ignore_query: bool = False) -> MapRequest:
    """A checked /v1/map or /v2/map request (the defaults of `includeSubdomains` and
    `ignoreQueryParameters` are the version's; v2's `sitemap` is v1's `ignoreSitemap`/`sitemapOnly`)."""
    body = _object(body)
    _check_keys(body, _MAP)
    search = body.get("search", "")
    if not isinstance(search, str):
        raise ShapeError("search: must be a string")
    sitemap = body.get("sitemap", "include")
    if sitemap not in ("include", "skip", "only"):
        raise ShapeError("sitemap: include, skip or only")
    return MapRequest(
        url=_url(body),
        search=search.strip(),
        use_sitemap=not _flag(body, "ignoreSitemap", False) and sitemap != "skip",
        sitemap_only=_flag(body, "sitemapOnly", False) or sitemap == "only",
        subdomains=_flag(body, "includeSubdomains", subdomains),
        limit=_count(body, "limit", MAP_LIMIT, most=MAP_LIMIT_MAX),
        timeout=_milliseconds(body, "timeout") or MAP_TIMEOUT,
        ignore_query=_flag(body, "ignoreQueryParameters", ignore_query),
    )


def crawl_status(state: str) -> str:
    """A harvestman crawl state as Firecrawl's job status."""
    return {"running": "scraping", "stopping": "scraping", "finished": "completed",
            "failed": "failed"}.get(state, "cancelled")


def expires_at(created: float) -> str:
    """When Firecrawl would drop a crawl's results (harvestman keeps them until the crawl is deleted)."""
    return datetime.fromtimestamp(created + RESULTS_KEPT, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class PageSource:
    """One fetched page and where it is kept: what a Firecrawl document is made from."""

    url: str  # where the fetch ended (after redirects)
    source_url: str  # what was asked for
    status: int
    content_type: str
    text: str  # the decoded HTML
    fetched: str = ""  # when (ISO 8601)
    record_id: str = ""  # the WARC response record, when stored
    warc_file: str = ""
    offset: int = -1


def document(page: PageSource, options: ScrapeOptions) -> dict[str, Any]:
    """The Firecrawl document of a page: the formats asked for and its metadata, with harvestman's
    provenance (the WARC record it came from) in the metadata."""
    parsed = parse_html(page.text, page.url, with_text=False)
    metadata: dict[str, Any] = {
        "title": parsed.title,
        "description": parsed.description,
        "language": parsed.language,
        "sourceURL": page.source_url,
        "url": page.url,
        "statusCode": page.status,
        "contentType": page.content_type,
    }
    if page.fetched:
        metadata["fetchTime"] = page.fetched
    if page.record_id:
        metadata.update(warcRecordId=page.record_id, warcFile=page.warc_file, warcOffset=page.offset)
    doc: dict[str, Any] = {"metadata": metadata}
    if "markdown" in options.formats:
        from harvestman.index.markdown import page_markdown

        markdown = page_markdown(page.text, page.url, main_only=options.only_main_content)
        if options.remove_base64_images:
            markdown = _BASE64_IMAGE.sub(BASE64_PLACEHOLDER, markdown)
        doc["markdown"] = markdown
    if "html" in options.formats:
        doc["html"] = _clean_html(page.text)
    if "rawHtml" in options.formats:
        doc["rawHtml"] = page.text
    if "links" in options.formats:
        doc["links"] = list(dict.fromkeys(link.url for link in parsed.links))
    return doc


BASE64_PLACEHOLDER = "<Base64-Image-Removed>"  # Firecrawl's words for an image inlined as data
_BASE64_IMAGE = re.compile(r"data:image/[\w.+-]+;base64,[A-Za-z0-9+/=\s]+")
_NOT_CONTENT = re.compile(r"<(script|style|noscript|template)\b[^>]*>.*?</\1\s*>|<!--.*?-->", re.I | re.S)


def _clean_html(html: str) -> str:
    """The page's HTML without scripts, styles and comments (Firecrawl's `html` format)."""
    return _NOT_CONTENT.sub("", html)


# A failed fetch's error class -> Firecrawl's error code (harvestman's own where Firecrawl has none).
_FETCH_CODES = {"timeout": "SCRAPE_TIMEOUT", "dns": "SCRAPE_DNS_RESOLUTION_ERROR", "tls": "SCRAPE_SSL_ERROR",
                "robots": "ROBOTS_DISALLOWED", "blocked_address": "NETWORK_NOT_ALLOWED",
                "outside_net": "NETWORK_NOT_ALLOWED"}
# Refusals by the server's network rules or the site's robots.txt: a 403, not a failed fetch.
REFUSALS = frozenset({"blocked_address", "outside_net", "robots"})


def fetch_failure(url: str, error_class: str, message: str) -> tuple[int, dict[str, Any]]:
    """The status and body of a scrape whose fetch failed (500 as Firecrawl says it, not a 502 its
    clients would send again)."""
    status = 403 if error_class in REFUSALS else 408 if error_class == "timeout" else 500
    return status, failure(f"could not fetch {url}: {error_class}: {message}",
                           _FETCH_CODES.get(error_class, "SCRAPE_SITE_ERROR"))


def failure(message: str, code: str = "BAD_REQUEST") -> dict[str, Any]:
    """Firecrawl's error body (`code` one of Firecrawl's error codes, or harvestman's own where
    Firecrawl has none)."""
    return {"success": False, "error": message, "code": code}


def warning(warnings: tuple[str, ...] | list[str]) -> dict[str, str]:
    """The `warning` of an answer, when there is something to say."""
    return {"warning": "; ".join(warnings)} if warnings else {}


# ---- v2's own: batch scrapes and search

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
    sources = body.get("sources", ["web"])
    if not isinstance(sources, list):
        raise ShapeError("sources: a list of sources")
    for item in sources:
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


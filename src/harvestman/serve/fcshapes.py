"""Firecrawl's v1 request and response shapes, translated to and from harvestman's own (no I/O).

`serve/firecrawl.py` serves them at /v1/scrape, /v1/crawl and /v1/map so that clients written for a
self-hosted Firecrawl (its Python client, LangChain's and LlamaIndex's loaders) work against
`harvestman serve` by changing a URL. Only the shapes are Firecrawl's: a crawl is a harvestman crawl,
a page a harvestman fetch, polite as ever (robots.txt obeyed). Options whose meaning harvestman cannot
honour (actions, screenshots, LLM extraction, webhooks, stealth proxies) are refused, not ignored.
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

# Accepted and without effect here: client bookkeeping, or what a polite fetch does anyway.
_IGNORED = frozenset({"origin", "integration", "blockAds", "removeBase64Images", "storeInCache",
                      "maxAge", "fastMode", "zeroDataRetention", "parsePDF", "skipTlsVerification",
                      "deduplicateSimilarURLs", "ignoreQueryParameters", "timeout", "waitFor"})
_SCRAPE = frozenset({"url", "formats", "onlyMainContent", "headers", "includeTags", "excludeTags"})
_CRAWL = frozenset({"url", "limit", "maxDepth", "maxDiscoveryDepth", "includePaths", "excludePaths",
                    "allowBackwardLinks", "crawlEntireDomain", "allowExternalLinks", "allowSubdomains",
                    "ignoreSitemap", "scrapeOptions", "delay", "maxConcurrency", "regexOnFullURL",
                    "webhook"})
_MAP = frozenset({"url", "search", "ignoreSitemap", "sitemapOnly", "includeSubdomains", "limit"})


class ShapeError(ConfigError):
    """A Firecrawl-shaped request harvestman cannot take: said as Firecrawl says it (400)."""


@dataclass(frozen=True, slots=True)
class ScrapeOptions:
    """What a scrape (or each page of a crawl) returns."""

    formats: tuple[str, ...] = DEFAULT_FORMATS
    only_main_content: bool = True
    headers: tuple[tuple[str, str], ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The options as kept with a crawl (read back by `scrape_options`)."""
        return {"formats": list(self.formats), "onlyMainContent": self.only_main_content,
                "headers": dict(self.headers)}


@dataclass(frozen=True, slots=True)
class MapRequest:
    """A checked /v1/map request."""

    url: str
    search: str = ""
    use_sitemap: bool = True
    sitemap_only: bool = False
    subdomains: bool = False
    limit: int = MAP_LIMIT


def _object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise ShapeError("the body must be a JSON object")
    return body


def _check_keys(body: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(body) - known - _IGNORED)
    if unknown:
        raise ShapeError(f"not supported by harvestman: {', '.join(unknown)}")


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


def scrape_options(body: Any, *, keys: frozenset[str] = _SCRAPE) -> ScrapeOptions:
    """The options of a scrape request (or of a crawl's `scrapeOptions`)."""
    body = _object(body)
    _check_keys(body, keys)
    formats = body.get("formats", list(DEFAULT_FORMATS))
    if not isinstance(formats, list) or not formats:
        raise ShapeError("formats: a non-empty list of formats")
    for name in formats:
        if not isinstance(name, str) or name not in FORMATS:
            shown = name if isinstance(name, str) else (name.get("type") if isinstance(name, dict) else name)
            raise ShapeError(f"formats: {shown!r} is not supported by harvestman "
                             f"(it serves {', '.join(sorted(FORMATS))})")
    if body.get("includeTags") or body.get("excludeTags"):
        raise ShapeError("includeTags, excludeTags: not supported by harvestman")
    headers = body.get("headers", {})
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ShapeError("headers: an object of header names and values")
    return ScrapeOptions(tuple(dict.fromkeys(formats)), _flag(body, "onlyMainContent", True),
                         tuple(headers.items()))


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
    authority = r"^[a-z][a-z0-9+.-]*://[^/?#]*"
    if pattern.startswith("^"):
        return authority + f"(?:{pattern[1:]})"
    return authority + f"[^?#]*?(?:{pattern})"


def crawl_request(body: Any) -> tuple[str, dict[str, Any], ScrapeOptions]:
    """A /v1/crawl request as the seed, harvestman's crawl settings and the options of its pages.

    What the crawl may reach is the server's to say (its network ceiling, serve/ceiling.py), never
    the request's: no network setting is taken from it."""
    body = _object(body)
    _check_keys(body, _CRAWL)
    url = _url(body)
    if body.get("webhook"):
        raise ShapeError("webhook: not supported by harvestman (poll GET /v1/crawl/ID)")
    settings: dict[str, Any] = {
        "max_pages": _count(body, "limit", CRAWL_LIMIT),
        "sitemaps": "off" if _flag(body, "ignoreSitemap", False) else "robots",
    }
    if "maxDiscoveryDepth" in body:
        settings["max_depth"] = _count(body, "maxDiscoveryDepth", 1)
    full = _flag(body, "regexOnFullURL", False)
    include = [_path_rule(p, full) for p in _strings(body, "includePaths")]
    exclude = [_path_rule(p, full) for p in _strings(body, "excludePaths")]
    if "maxDepth" in body:  # path segments below the start URL's folder (a page in it is at 1)
        base = len([s for s in _folder(urlsplit(url).path).split("/") if s])
        deeper = base + _count(body, "maxDepth", 1) + 1
        exclude.append(r"^[a-z][a-z0-9+.-]*://[^/?#]*" + "(?:/[^/?#]+)" + f"{{{deeper},}}")
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
    options = scrape_options(body.get("scrapeOptions", {}), keys=_SCRAPE - {"url"})
    if options.headers:
        settings["extra_headers"] = dict(options.headers)
    return url, settings, options


def _folder(path: str) -> str:
    """The folder of a URL path, without its final slash: /a/b.html and /a/ -> /a."""
    return path.rstrip("/") if path.endswith("/") else path.rsplit("/", 1)[0]


def map_request(body: Any) -> MapRequest:
    """A checked /v1/map request."""
    body = _object(body)
    _check_keys(body, _MAP)
    search = body.get("search", "")
    if not isinstance(search, str):
        raise ShapeError("search: must be a string")
    return MapRequest(
        url=_url(body),
        search=search.strip(),
        use_sitemap=not _flag(body, "ignoreSitemap", False),
        sitemap_only=_flag(body, "sitemapOnly", False),
        subdomains=_flag(body, "includeSubdomains", False),
        limit=_count(body, "limit", MAP_LIMIT, most=MAP_LIMIT_MAX),
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

        doc["markdown"] = page_markdown(page.text, page.url, main_only=options.only_main_content)
    if "html" in options.formats:
        doc["html"] = _clean_html(page.text)
    if "rawHtml" in options.formats:
        doc["rawHtml"] = page.text
    if "links" in options.formats:
        doc["links"] = list(dict.fromkeys(link.url for link in parsed.links))
    return doc


_NOT_CONTENT = re.compile(r"<(script|style|noscript|template)\b[^>]*>.*?</\1\s*>|<!--.*?-->", re.I | re.S)


def _clean_html(html: str) -> str:
    """The page's HTML without scripts, styles and comments (Firecrawl's `html` format)."""
    return _NOT_CONTENT.sub("", html)


def failure(message: str) -> dict[str, Any]:
    """Firecrawl's error body."""
    return {"success": False, "error": message}

"""Sitemaps (sitemaps.org): read one document into the page URLs and child sitemaps it lists.

Pure: bytes in, a frozen record out. The XML is read by defusedxml over the stdlib's expat, with
any DTD refused (a sitemap never has one), so entity bombs (billion laughs) and external entities
(file:///etc/passwd, SSRF) are refused before anything is expanded or fetched; reading is streamed
and stops at the protocol's limits. The crawl's side (what to queue, at which depth) is at the end.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from harvestman.model.config import LinkSettings
from harvestman.model.errors import InvalidUrlError
from harvestman.model.records import FetchResult, Link, LinkKind, NewUrl, ParsedPage
from harvestman.net.urls import normalize, resolve
from harvestman.policy.scope import Scope, followed_links

MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # the protocol's cap on a sitemap, uncompressed
MAX_SITEMAP_URLS = 50_000  # the protocol's cap on the URLs (or child sitemaps) of one file
GZIP_MAGIC = b"\x1f\x8b"
SNIFF_BYTES = 4096  # how much of a body is looked at to tell a sitemap
SITEMAP_ERROR = "sitemap"  # the error class recorded on a sitemap that could not be read whole

_ROOTS = frozenset({"urlset", "sitemapindex"})
# The root element of an XML sitemap, after an optional BOM, XML declaration, comments and DOCTYPE.
_SNIFF = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?[^>]*\?>\s*|<!--.*?-->\s*|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>\s*)*"
    rb"<(?:[A-Za-z_][\w.-]*:)?(?:urlset|sitemapindex)[\s>/]",
    re.DOTALL,
)
# W3C datetime (a profile of ISO 8601): YYYY, YYYY-MM, YYYY-MM-DD, then Thh:mm[:ss[.s]] and a zone.
# A space for the T, a zone left out (read as UTC) and +hhmm are taken too: sitemaps in the wild.
_W3C = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?)?)?)?",
    re.IGNORECASE,
)


class SitemapEntry(NamedTuple):
    """One `<loc>` of a sitemap, normalized, with its `<lastmod>` as epoch seconds (None if absent)."""

    url: str
    lastmod: float | None = None


@dataclass(frozen=True, slots=True)
class Sitemap:
    """What one sitemap document lists: pages (a `<urlset>` or a text sitemap) or child sitemaps (a
    `<sitemapindex>`), and why it was not read whole ('' when it was)."""

    pages: tuple[SitemapEntry, ...] = ()
    sitemaps: tuple[SitemapEntry, ...] = ()
    problem: str = ""
    invalid: int = 0  # <loc> values that are not http(s) URLs, left out


def parse_lastmod(text: str) -> float | None:
    """A W3C datetime (`2024-05-01`, `2024-05-01T10:20:30+02:00`, ...) as epoch seconds, or None."""
    match = _W3C.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    tz = dt.UTC
    if zone and zone.upper() != "Z":
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        if offset >= dt.timedelta(hours=24):
            return None
        tz = dt.timezone(offset if zone[0] == "+" else -offset)
    try:
        when = dt.datetime(int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
                           int(second or 0), int((fraction or "0")[:6].ljust(6, "0")), tzinfo=tz)
    except ValueError:  # month 13, February 30th, hour 25 ...
        return None
    return when.timestamp()


def gunzip(data: bytes, limit: int = MAX_SITEMAP_BYTES) -> tuple[bytes, str]:
    """`data` decompressed when it starts with the gzip magic, up to `limit` bytes; and a problem."""
    if not data.startswith(GZIP_MAGIC):
        return data, ""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        return b"", f"bad gzip data: {exc}"
    if len(out) > limit:
        return out[:limit], f"over {limit} bytes decompressed: read the first {limit}"
    if not inflater.eof:
        return out, "gzip data ends early"
    return out, ""


def looks_like_sitemap(body: bytes) -> bool:
    """Whether `body` (gzipped or not) is XML whose root element is `<urlset>` or `<sitemapindex>`."""
    head = body[:SNIFF_BYTES]
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(wbits=31).decompress(body[: 16 * SNIFF_BYTES], SNIFF_BYTES)
        except zlib.error:
            return False
    return _SNIFF.match(head) is not None


def parse_sitemap(body: bytes, base_url: str, *, max_urls: int = MAX_SITEMAP_URLS,
                  max_length: int = 2048) -> Sitemap:
    """Read a sitemap (XML or text, gzipped or not) found at `base_url`; never raises.

    `<loc>` values are resolved against `base_url` and normalized as the crawl keys URLs; those that
    are not http(s) URLs are counted and left out. Past `max_urls` entries the rest is left out and
    `problem` says so; bad XML keeps what came before the fault.
    """
    data, problem = gunzip(body)
    if problem and not data:
        return Sitemap(problem=problem)
    start = data.lstrip()[:1]
    if data.startswith(b"\xef\xbb\xbf"):
        start = data[3:].lstrip()[:1]
    if start in (b"<", b"\xff", b"\xfe", b"\x00"):  # XML (the last three: UTF-16 or UTF-32)
        found = _parse_xml(data, base_url, max_urls, max_length)
    else:
        found = _parse_text(data, base_url, max_urls, max_length)
    if problem:
        found = Sitemap(found.pages, found.sitemaps, "; ".join(p for p in (problem, found.problem) if p),
                        found.invalid)
    return found


class _Collector:
    """Entries as they are read, normalized, up to the cap."""

    def __init__(self, base_url: str, max_urls: int, max_length: int) -> None:
        self.base_url = base_url
        self.max_urls = max_urls
        self.max_length = max_length
        self.pages: list[SitemapEntry] = []
        self.sitemaps: list[SitemapEntry] = []
        self.invalid = 0

    @property
    def full(self) -> bool:
        return len(self.pages) + len(self.sitemaps) >= self.max_urls

    def add(self, loc: str, lastmod: str | None, *, index: bool) -> None:
        loc = loc.strip()
        joined = resolve(loc, self.base_url) if loc else None
        try:
            if joined is None:
                raise InvalidUrlError(loc)
            url = normalize(joined, max_length=self.max_length)
        except InvalidUrlError:
            self.invalid += 1
            return
        entry = SitemapEntry(url, parse_lastmod(lastmod) if lastmod else None)
        (self.sitemaps if index else self.pages).append(entry)

    def result(self, problem: str = "") -> Sitemap:
        return Sitemap(tuple(self.pages), tuple(self.sitemaps), problem, self.invalid)


def _local(tag: str) -> tuple[str, str]:
    """(namespace, local name) of an ElementTree tag such as `{ns}url`."""
    if tag[:1] == "{":
        namespace, _, name = tag[1:].partition("}")
        return namespace, name
    return "", tag


def _child_text(elem: Element, namespace: str, name: str) -> str | None:
    # Only the sitemap's own namespace: <image:loc> inside a <url> is not the page's <loc>.
    child = elem.find(f"{{{namespace}}}{name}" if namespace else name)
    return None if child is None else "".join(child.itertext())


def _parse_xml(data: bytes, base_url: str, max_urls: int, max_length: int) -> Sitemap:
    found = _Collector(base_url, max_urls, max_length)
    root: Element | None = None
    namespace = ""
    index = False
    depth = 0
    try:
        # forbid_dtd: a DOCTYPE is refused as soon as it is read, entities with it.
        for event, elem in iterparse(io.BytesIO(data), events=("start", "end"), forbid_dtd=True):
            if event == "start":
                depth += 1
                if root is None:
                    root = elem
                    namespace, name = _local(elem.tag)
                    if name not in _ROOTS:
                        return found.result(f"not a sitemap: the root element is <{name[:50]}>")
                    index = name == "sitemapindex"
                continue
            depth -= 1
            if depth != 1:
                continue
            elem_ns, name = _local(elem.tag)
            if elem_ns == namespace and name == ("sitemap" if index else "url"):
                loc = _child_text(elem, namespace, "loc")
                if loc is not None:
                    if found.full:
                        return found.result(f"more than {max_urls} URLs: kept the first {max_urls}")
                    found.add(loc, _child_text(elem, namespace, "lastmod"), index=index)
            if root is not None:
                root.clear()  # read as a stream: what has been taken is dropped
    except DefusedXmlException as exc:
        return found.result(f"refused: {type(exc).__name__} ({exc})"[:300])
    except (ParseError, LookupError, ValueError) as exc:  # LookupError: an unknown encoding declared
        return found.result(f"bad XML: {exc}"[:300])
    if root is None:
        return found.result("bad XML: no root element")
    return found.result()


def _parse_text(data: bytes, base_url: str, max_urls: int, max_length: int) -> Sitemap:
    """A text sitemap: one URL a line, UTF-8 (the protocol's other form)."""
    found = _Collector(base_url, max_urls, max_length)
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line:
            continue
        if found.full:
            return found.result(f"more than {max_urls} URLs: kept the first {max_urls}")
        # Absolute URLs only: a text sitemap has no markup to tell a URL from other text.
        if "://" in line[:12]:
            found.add(line, None, index=False)
        else:
            found.invalid += 1
    return found.result()


# ----- the crawl's side ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SitemapPage(ParsedPage):
    """A sitemap as the crawl's parse gives it: its entries as links of kind `sitemap`, the record
    itself, and the followed child sitemaps (queued at the sitemap's own depth)."""

    sitemap: Sitemap = field(default_factory=Sitemap)
    children: frozenset[str] = frozenset()


def is_sitemap(result: FetchResult, as_sitemap: bool) -> bool:
    """Whether a fetched 2xx response is read as a sitemap: its XML root says so, or it was queued as
    one (a sitemap named in robots.txt, probed, or listed in an index) and is not an HTML page."""
    if not 200 <= result.status < 300:
        return False
    if looks_like_sitemap(result.body):
        return True
    return as_sitemap and result.content_type not in ("text/html", "application/xhtml+xml")


def sitemap_outlinks(result: FetchResult, depth: int, settings: LinkSettings,
                     scope: Scope) -> tuple[SitemapPage, dict[str, str]]:
    """A fetched sitemap at `depth`: its parse, and the URLs worth queueing with their hosts (pages
    in scope and not too deep, child sitemaps in scope)."""
    # Not the crawl's cache of answers on links: a sitemap's URLs are each listed once, and 50,000
    # of them would only push out the navigation links that cache is for.
    follow: dict[str, tuple[str, str] | None] = {}
    sitemap = parse_sitemap(result.body, result.final_url, max_length=settings.max_url_length)
    if result.truncated:
        cut = f"body cut at max_size ({len(result.body)} bytes)"
        sitemap = Sitemap(sitemap.pages, sitemap.sitemaps, "; ".join(p for p in (cut, sitemap.problem) if p),
                          sitemap.invalid)
    links = tuple(Link(entry.url, LinkKind.SITEMAP) for entry in (*sitemap.sitemaps, *sitemap.pages))
    children = followed_links((e.url for e in sitemap.sitemaps), scope, follow,
                              max_length=settings.max_url_length)
    hosts = dict(children)
    if depth + 1 <= settings.max_depth:
        pages = followed_links((e.url for e in sitemap.pages), scope, follow,
                               max_length=settings.max_url_length)
        hosts.update(pages)
    page = SitemapPage(title="", links=links, base_url=result.final_url, sitemap=sitemap,
                       children=frozenset(children))
    return page, hosts


def sitemap_depths(new_urls: Iterable[NewUrl], page: SitemapPage, depth: int) -> list[NewUrl]:
    """`new_urls` found on a sitemap at `depth`, its child sitemaps put back at `depth`: an index of
    indexes is followed however deep it goes, while its pages keep the depth of links."""
    children = page.children
    if not children:
        return list(new_urls)
    return [NewUrl(u.url, u.host, depth, u.score, u.parent, min(u.priority, float(depth)))
            if u.url in children else u for u in new_urls]


def lastmod_text(epoch: float) -> str:
    """Epoch seconds as the ISO 8601 UTC text kept in the crawl database (`2024-05-01T10:20:30Z`)."""
    when = dt.datetime.fromtimestamp(epoch, dt.UTC)
    text = when.isoformat(timespec="microseconds" if when.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def lastmod_metadata(sitemap: Sitemap, followed: Iterable[str]) -> list[tuple[str, dict[str, str]]]:
    """`{"lastmod": ...}` for each `followed` URL (those queued) whose entry has a `<lastmod>`, for
    CrawlDb.set_metadata."""
    wanted = set(followed)
    return [(e.url, {"lastmod": lastmod_text(e.lastmod)})
            for e in (*sitemap.pages, *sitemap.sitemaps) if e.lastmod is not None and e.url in wanted]

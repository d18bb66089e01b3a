"""Parsers for documents other than HTML, chosen by content type: RSS and Atom feeds, PDF, plugins'.

Each gives the ParsedPage an HTML page gives (title, text, links with their LinkKind), so that its
links reach the frontier and the link graph as an HTML page's do. `crawl/pagelinks.outlinks` comes
here only for a response that is not HTML: the HTML path pays no lookup for it.

A document that cannot be parsed is no crash: its ParsedPage carries `error`, which the crawl
records on the URL (error class "parse"), with what was parsed before the failure.
"""

from __future__ import annotations

import io
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol

from harvestman.model.config import DocumentSettings
from harvestman.model.records import FetchResult, Link, LinkKind, ParsedPage

FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/rdf+xml"})
# Served as plain XML, a feed is told by its root element; other XML (a sitemap) is left alone.
XML_TYPES = frozenset({"text/xml", "application/xml"})
FEED_ROOTS = frozenset({b"rss", b"feed", b"rdf"})
PDF_TYPES = frozenset({"application/pdf"})
MAX_TEXT = 1 << 20  # characters of text kept from a document (a page's text is for scorers and sinks)
# The prolog before a root element: the XML declaration, comments, processing instructions and a
# DOCTYPE (with an internal subset); then the root's name, namespace prefix dropped.
_ROOT = re.compile(
    rb"\A(?:\xef\xbb\xbf)?(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>)*<(?:[\w.-]+:)?([\w.-]+)",
    re.DOTALL | re.IGNORECASE,
)
_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.IGNORECASE)
_SNIFF = 4096  # bytes read to find a document's root element


class DocumentParser(Protocol):
    """Parses one kind of document into a ParsedPage (the built-in feeds and PDF, and plugins').

    `content_types`: the media types it takes (lower case, no parameters). `parse` is given a 2xx
    response of one of them; it returns None when the document is not its kind after all (an XML
    document that is no feed), else a ParsedPage whose links are absolute URLs (at most
    `max_links`), with text only when `with_text` asks for it. It may raise: the crawl records the
    exception on the URL as a parse error.
    """

    content_types: Collection[str]

    def parse(self, result: FetchResult, *, max_links: int, with_text: bool) -> ParsedPage | None:
        """The document's title, links and (with `with_text`) text, or None when it is not its kind."""
        ...


def _unique(links: Iterable[Link], limit: int) -> tuple[Link, ...]:
    """`links` without repeated URLs (the first kept), at most `limit`."""
    seen: dict[str, Link] = {}
    for link in links:
        if link.url and link.url not in seen:
            seen[link.url] = link
            if len(seen) >= limit:
                break
    return tuple(seen.values())


def _http(url: str) -> bool:
    return url.startswith(("http://", "https://"))


class FeedParser:
    """RSS 0.9x/1.0/2.0 and Atom feeds, with feedparser: each entry's link (or its permalink guid).

    feedparser rather than a bare XML parser: it knows every feed dialect, resolves relative links
    against xml:base and the feed's URL, and recovers what it can from a broken feed. It expands a
    DTD's internal entities (expat's amplification limit aside), so a feed that declares any is
    refused before it is parsed; external entities are never loaded. Feeds are few, so its cost
    (pure Python, ~1 ms for a 20-entry feed) does not weigh on a crawl.
    """

    content_types: Collection[str] = FEED_TYPES | XML_TYPES

    def parse(self, result: FetchResult, *, max_links: int, with_text: bool) -> ParsedPage | None:
        """The feed's title, its entries' links (and with `with_text` their titles and summaries)."""
        body = result.body
        head = body[:_SNIFF]
        root = _ROOT.match(head)
        if result.content_type in XML_TYPES and (root is None or root.group(1).lower() not in FEED_ROOTS):
            return None
        # Entities are declared in the DOCTYPE, before the root: one that hides its root past the
        # first bytes behind a long DOCTYPE is refused as well.
        prolog = head[:root.start(1)] if root is not None else head
        if _ENTITY_DECLARATION.search(prolog):
            return ParsedPage(error="the feed declares XML entities, which are not expanded")
        if root is None and b"<!DOCTYPE" in head.upper():
            return ParsedPage(error=f"the feed's DOCTYPE hides its root element past {_SNIFF} bytes")
        import feedparser  # here, not at the top: only a crawl that meets a feed pays for the import

        # Bytes in a BytesIO: a str or bytes argument may be taken for a URL or a file name.
        feed: Any = feedparser.parse(
            io.BytesIO(body),
            response_headers={"content-location": result.final_url, "content-type": result.content_type},
            sanitize_html=False,
        )
        error = ""
        if feed.get("bozo") and not isinstance(feed.get("bozo_exception"),
                                               feedparser.ThingsNobodyCaresAboutButMe):
            error = f"the feed is not well-formed: {feed.get('bozo_exception')}"
        if not feed.get("version") and not feed.entries:
            return ParsedPage(error=error or "not a feed: no RSS or Atom element found")
        links = []
        texts = []
        for entry in feed.entries:
            url = entry.get("link") or ""
            if not url and entry.get("guidislink"):
                url = entry.get("id") or ""
            if _http(url):
                links.append(Link(url, LinkKind.FEED_ENTRY, entry.get("title", "") if with_text else ""))
            if with_text:
                texts.append(" ".join(filter(None, (entry.get("title"), entry.get("summary")))))
        home = feed.feed.get("link") or ""
        if _http(home):
            links.append(Link(home, LinkKind.ANCHOR))
        return ParsedPage(
            title=feed.feed.get("title", ""),
            description=feed.feed.get("subtitle", "") if with_text else "",
            language=feed.feed.get("language", ""),
            text="\n".join(texts)[:MAX_TEXT],
            links=_unique(links, max_links),
            base_url=result.final_url,
            error=error,
        )


class PdfParser:
    """PDF documents, with pypdf: the title (document information), URI links, and text.

    pypdf rather than pdfminer.six: on bench/pdf_parsers.py's generated PDFs (2 cores, shared)
    the title and links took about as long with either (1.2 vs 1.5 ms for 1 page, 13 vs 16 ms for
    50 pages), and text 5-10 times less long with pypdf (4 vs 43 ms for 1 page, 220 vs 1,770 ms for
    50 pages). Bounded against a hostile PDF: a document over `pdf_max_bytes` is not parsed, only
    its first `pdf_max_pages` pages are read, text stops at MAX_TEXT characters, and pypdf's own
    decompression limits stay on. Text is extracted only when asked for (`with_text`): the crawl
    itself needs the links and the title alone.
    """

    content_types: Collection[str] = PDF_TYPES

    def __init__(self, max_pages: int = 100, max_bytes: int = 10 * 1024 * 1024) -> None:
        self.max_pages = max_pages
        self.max_bytes = max_bytes

    def parse(self, result: FetchResult, *, max_links: int, with_text: bool) -> ParsedPage | None:
        """The PDF's title, its first pages' URI links and (with `with_text`) their text."""
        body = result.body
        if len(body) > self.max_bytes:
            return ParsedPage(error=f"the PDF is larger than pdf_max_bytes ({self.max_bytes}): not parsed")
        if result.truncated:
            return ParsedPage(error="the PDF was cut at the size cap: not parsed")
        import pypdf  # here, not at the top: only a crawl that meets a PDF pays for the import

        reader = pypdf.PdfReader(io.BytesIO(body))
        title = ""
        try:
            info = reader.metadata
            title = str(info.title or "") if info is not None else ""
        except Exception:  # a broken information dictionary costs the title only
            title = ""
        links: list[Link] = []
        texts: list[str] = []
        size = 0
        error = ""
        try:
            for number, page in enumerate(reader.pages):
                if number >= self.max_pages:
                    break
                for annot in page.get("/Annots") or ():
                    url = _uri_of(annot)
                    if _http(url):
                        links.append(Link(url, LinkKind.DOCUMENT))
                if with_text and size < MAX_TEXT:
                    text = page.extract_text()
                    size += len(text)
                    texts.append(text)
        except Exception as exc:  # a page that breaks ends the parse; what came before is kept
            error = f"the PDF is broken: {type(exc).__name__}: {exc}"
        return ParsedPage(title=title.strip(), text="\n".join(texts)[:MAX_TEXT],
                          links=_unique(links, max_links), base_url=result.final_url, error=error)


def _uri_of(annot: Any) -> str:
    """The URI a link annotation's action goes to, or '' (objects resolved; anything odd is '')."""
    target = annot.get_object()
    action = target.get("/A") if isinstance(target, dict) else None
    action = action.get_object() if action is not None else None
    uri = action.get("/URI") if isinstance(action, dict) else None
    if uri is None:
        return ""
    return str(uri.get_object()).strip()


def document_parsers(settings: DocumentSettings,
                     extra: Iterable[DocumentParser] = ()) -> dict[str, DocumentParser]:
    """Content type -> its parser: the built-in feeds and PDF, then `extra` (plugins'), which win."""
    table: dict[str, DocumentParser] = {}
    pdf = PdfParser(settings.pdf_max_pages, settings.pdf_max_bytes)
    builtin: tuple[DocumentParser, ...] = (FeedParser(), pdf)
    for parser in (*builtin, *extra):
        for content_type in parser.content_types:
            table[content_type.lower()] = parser
    return table


DEFAULT_PARSERS: Mapping[str, DocumentParser] = document_parsers(DocumentSettings(100, 10 * 1024 * 1024))


def parse_document(result: FetchResult, parsers: Mapping[str, DocumentParser], *, max_links: int,
                   with_text: bool) -> ParsedPage | None:
    """The parse of a 2xx response that is not HTML, by the parser of its content type; None when
    none takes it. A parser's exception becomes the page's parse error."""
    parser = parsers.get(result.content_type)
    if parser is None or not 200 <= result.status < 300 or not result.body:
        return None
    try:
        return parser.parse(result, max_links=max_links, with_text=with_text)
    except Exception as exc:  # a hostile document must not end the crawl: record it on its URL
        return ParsedPage(error=f"{type(exc).__name__}: {exc}"[:500], base_url=result.final_url)

"""HTML parsing with selectolax (Lexbor): outlinks, title, meta robots, language and visible text;
the compiled core (native/src/parse.rs) answers the pages a crawl parses without text, the same way."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from harvestman.model.config import MAX_OUTLINKS
from harvestman.model.core import core
from harvestman.model.pagetree import MAX_HTML, PageTree, parse_tree
from harvestman.model.records import Link, LinkKind, ParsedPage
from harvestman.net.urls import resolve

MAX_TEXT = 1_000_000  # characters of visible text kept per page
# Characters of a document parsed at once. Lexbor's tree costs ~7x the text (72 MiB for a 10 MiB
# page of links) and the Python objects for its nodes more, so a longer document is parsed in
# pieces of about this size, cut where the tokenizer is between tags (see _segments): every link is
# seen, and memory follows this size, not the page's.
SEGMENT_CHARS = 2 * 1024 * 1024
MAX_ANCHOR = 300  # characters of anchor text kept per link
MAX_TITLE = 1_000
MAX_DESCRIPTION = 2_000
RESOLVE_CACHE = 1 << 16  # (href, base) pairs: nav links repeat on every page of a site

# Lexbor's tree builder walks the whole stack of open elements for every block-level start tag
# (the "p element in button scope" check), so 10^5 nested <div>s cost ~30 s. Documents with few
# tags cannot nest deeply; larger ones get a depth estimate, and past DEPTH_LIMIT every element
# this parser does not need is dropped before parsing (links and text survive).
TAG_COUNT_CHECK = 10_000
DEPTH_LIMIT = 1_000

# Every element the parser reads, in document order: one walk of the tree, where separate
# css_first() calls for <base> and <title> each walked it again.
_LINK_SELECTOR = "a[href], area[href], frame[src], iframe[src], link[href], meta, base[href], title"
_TEXT_FREE_TAGS = ["script", "style", "noscript", "template"]
_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:")
_REFRESH = re.compile(r"^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)")
# Elements that never deepen the tree: void elements, and those an equal sibling closes implicitly.
_FLAT = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
    "wbr", "keygen", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "tbody", "thead",
    "tfoot", "colgroup", "rt", "rp",
})
_NEEDED = "a|area|frame|iframe|link|meta|base|title|html|head|body|script|style|noscript|template"
_UNNEEDED_TAG = re.compile(rf"</?(?!(?:{_NEEDED})[\s/>])[A-Za-z][^>]*>", re.IGNORECASE)


def _collapse(text: str, limit: int) -> str:
    # Cut before collapsing: a 50 MB text node must not be copied around in full.
    # str.split() is C and ~5x faster than a regex substitution on page-sized text.
    return " ".join(text[: limit * 4].split())[:limit]


def _too_deep(html: str) -> bool:
    depth = 0
    for match in _TAG.finditer(html):
        if match.group(1):
            if depth:
                depth -= 1
        elif match.group(2).lower() not in _FLAT:
            depth += 1
            if depth > DEPTH_LIMIT:
                return True
    return False


def _parseable(html: str) -> str:
    """`html`, or for a document nested too deep for Lexbor, what this parser reads of it."""
    # A document this short cannot hold that many tags; the count costs ~6 us per 20 KB.
    if len(html) > TAG_COUNT_CHECK and html.count("<") > TAG_COUNT_CHECK and _too_deep(html):
        return _UNNEEDED_TAG.sub(" ", html)
    return html


# Where a long document may be cut: before an <a> start tag, so that no link's anchor text is split.
_CUT = re.compile(r"<a[\s/>]", re.IGNORECASE)
# What the tokenizer reads as text up to an end: comments, and elements whose content is text
# (<noscript> too: a browser with scripting reads it as text, and a cut inside it is never safe).
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript")
_OPENING = re.compile(rf"<(?:!--|({'|'.join(_RAW_TEXT)}|plaintext)(?=[\s/>]))", re.IGNORECASE)
_CLOSING = {name: re.compile(rf"</{name}(?=[\s/>])", re.IGNORECASE) for name in _RAW_TEXT}
_COMMENT_END = re.compile(r"--!?>")


def _end_of(html: str, opening: re.Match[str]) -> int:
    """Where the comment or text element that `opening` starts ends; len(html) if never."""
    start = opening.end()
    name = opening.group(1)
    if name is None:  # a comment; "<!-->" and "<!--->" are whole ones
        if html.startswith(">", start) or html.startswith("->", start):
            return html.find(">", start) + 1
        close = _COMMENT_END.search(html, start)
    elif name.lower() == "plaintext":  # nothing ends it
        return len(html)
    else:
        close = _CLOSING[name.lower()].search(html, start)
    return close.end() if close else len(html)


def _segments(html: str, size: int) -> Iterator[str]:
    """`html` in consecutive pieces of about `size` characters, each cut where the tokenizer is
    between tags (not inside a comment, a script or a tag's attributes): before an <a> tag when
    there is one within a piece's length (64 KiB at least), so that no anchor text is cut in two;
    else before any "<"; else (that much bare text) in the text.

    A cut that cannot be shown safe is passed over (the piece grows): a piece may end up longer,
    but no link is cut in two or read out of a comment.
    """
    start = scanned = 0  # the tokenizer is between tags at `scanned`
    reach = max(size, 1 << 16)  # how far past a piece's length a cut is looked for
    while len(html) - start > size:
        pos = start + size
        while True:
            candidate = _CUT.search(html, pos, pos + reach)
            cut = candidate.start() if candidate else html.find("<", pos, pos + reach)
            if cut < 0:
                cut = min(pos, len(html))
            # Skip the comments and text elements that open before the cut.
            opening = _OPENING.search(html, scanned, cut)
            while opening is not None:
                scanned = _end_of(html, opening)
                if scanned > cut:
                    break
                opening = _OPENING.search(html, scanned, cut)
            if scanned > cut:  # the cut lies inside one: look again past its end
                pos = scanned
                continue
            scanned = cut
            # The last "<" before the cut must have been closed: "a < b" text is passed over too.
            if html.rfind(">", start, cut) >= html.rfind("<", start, cut):
                break
            end = html.find(">", cut)
            pos = end + 1 if end >= 0 else len(html)
        if cut >= len(html):
            break
        yield html[start:cut]
        start = cut
    yield html[start:]


@functools.lru_cache(maxsize=RESOLVE_CACHE)
def _resolve_http(href: str, base: str) -> str | None:
    if href[:11].lower().startswith(_SKIP_SCHEMES):
        return None
    # A page URL that does not parse (it should not happen) still leaves absolute links usable.
    resolved = (resolve(href, base) if base else None) or resolve(href)
    if resolved is None or not resolved.startswith(("http://", "https://")):
        return None  # other schemes (ftp:, file:, ...) are never fetched either
    return resolved


# What the URL Standard strips from both ends of an input (str.strip() would also take U+00A0 and
# other Unicode spaces, which the Standard percent-encodes, as ada does for redirect Locations).
_C0_CONTROL_OR_SPACE = "".join(map(chr, range(0x21)))


def _http_url(href: str | None, base: str, origin: str, *, empty_is_base: bool = False) -> str | None:
    """`href` joined to `base` when the result is http(s); `origin`: `base` up to its path.

    An empty `href` is no URL, except with `empty_is_base`: a browser resolves <a href=""> to the
    page itself (its base URL without the fragment), and document.links holds it.
    """
    if href is None:
        return None
    href = href.strip(_C0_CONTROL_OR_SPACE)
    if not href and not empty_is_base:
        return None
    # Site-wide links ("/about", "http://x/") resolve the same from every page: passing a base
    # that depends only on what the result depends on lets the cache answer most links.
    if href[:1] == "/" and href[1:2] != "/":
        base = origin
    elif href[:7] == "http://" or href[:8] == "https://":
        base = ""
    return _resolve_http(href, base)


def _origin(url: str) -> str:
    # An http(s) URL as ada serialises it has no "/" in its authority.
    slash = url.find("/", url.find("://") + 3)
    return url + "/" if slash < 0 else url[: slash + 1]


def _refresh_target(content: str | None) -> str | None:
    if not content:
        return None
    match = _REFRESH.match(content)
    target = match.group(1).strip() if match else ""
    if len(target) >= 2 and target[0] in "'\"":
        end = target.find(target[0], 1)
        target = target[1:end] if end > 0 else target[1:]
    return target or None


def _link_kind(rel: list[str]) -> LinkKind | None:
    if "canonical" in rel:
        return LinkKind.CANONICAL
    if "next" in rel:
        return LinkKind.NEXT
    if "alternate" in rel and "stylesheet" not in rel:  # "alternate stylesheet" is a style sheet
        return LinkKind.ALTERNATE
    return None


_BROWSER_KINDS = (LinkKind.ANCHOR, LinkKind.AREA)
_ANCHOR = LinkKind.ANCHOR


class _Links:
    """Collects links in document order, deduplicated, up to a cap.

    A URL is kept once as an anchor (<a> or <area>: what a browser's document.links holds) and
    once for each other kind: <link rel=next href=x> in the head must not hide <a href=x>.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.links: dict[str | tuple[str, LinkKind], Link] = {}
        self.full = cap <= 0  # an attribute, not a property: it is read once per element

    def add(self, url: str, kind: LinkKind, anchor: str = "", nofollow: bool = False) -> None:
        # A Link is built only when kept (~0.5 us each): links repeat on a page. Anchors, nearly
        # all links, are keyed by the URL alone, which costs no tuple.
        key: str | tuple[str, LinkKind] = url if kind in _BROWSER_KINDS else (url, kind)
        seen = self.links.get(key)
        if seen is None:
            if not self.full:
                self.links[key] = Link(url, kind, anchor, nofollow)
                self.full = len(self.links) >= self.cap
        elif seen.nofollow and not nofollow:
            # Followed anywhere on the page means followed: keep the first position, drop the flag.
            self.links[key] = Link(url, kind, anchor, nofollow)


class _Page:
    """What the parse of a page gathers from its pieces (see _segments)."""

    def __init__(self, url: str, max_links: int, with_text: bool, anchors: bool, max_text: int) -> None:
        self.base = url
        self.origin = _origin(url)
        self.links = _Links(max(0, max_links))
        self.with_text = with_text
        self.anchors = anchors
        self.texts: list[str] = []  # each piece's visible text
        self.room = max_text  # characters of text still wanted
        self.title = self.language = ""
        self.noindex = self.nofollow = False
        self.description = self.content_language = ""

    def read(self, nodes: list[Any], tags: list[str]) -> None:
        """Take the links and meta data of one piece's link elements (`nodes`, their `tags`)."""
        base, origin, links, anchors = self.base, self.origin, self.links, self.anchors
        kept, cap = links.links, links.cap
        for node, tag in zip(nodes, tags, strict=True):
            attrs = node.attributes
            if tag == "meta":
                self._read_meta(attrs)
                continue
            if links.full:
                continue
            if tag == "a" and not anchors:
                # Nearly every element: _http_url and _Links.add written out (two calls a link,
                # parse_html 106 -> 95 µs a synthetic page of ~27 links; tests/test_parse.py holds
                # both ways to one answer).
                href = (attrs.get("href") or "").strip(_C0_CONTROL_OR_SPACE)
                if href[:1] == "/" and href[1:2] != "/":
                    target = _resolve_http(href, origin)
                elif href[:7] == "http://" or href[:8] == "https://":
                    target = _resolve_http(href, "")
                else:
                    target = _resolve_http(href, base)
                if target is None:
                    continue
                rel = attrs.get("rel")
                nofollow = rel is not None and "nofollow" in rel.lower().split()
                seen = kept.get(target)
                if seen is None:
                    if not links.full:
                        kept[target] = Link(target, _ANCHOR, "", nofollow)
                        links.full = len(kept) >= cap
                elif seen.nofollow and not nofollow:
                    kept[target] = Link(target, _ANCHOR, "", False)
            elif tag == "a" or tag == "area":
                target = _http_url(attrs.get("href") or "", base, origin, empty_is_base=True)
                if target is None:
                    continue
                anchor = ""
                if tag == "a":
                    if anchors:
                        anchor = _collapse(node.text(deep=True, separator=" "), MAX_ANCHOR)
                    kind = LinkKind.ANCHOR
                else:
                    if anchors:
                        anchor = _collapse(attrs.get("alt") or "", MAX_ANCHOR)
                    kind = LinkKind.AREA
                rel = attrs.get("rel")
                links.add(target, kind, anchor, rel is not None and "nofollow" in rel.lower().split())
            elif tag == "frame" or tag == "iframe":
                target = _http_url(attrs.get("src"), base, origin)
                if target is not None:
                    links.add(target, LinkKind.FRAME if tag == "frame" else LinkKind.IFRAME)
            elif tag == "link":
                rel_tokens = (attrs.get("rel") or "").lower().split()
                link_kind = _link_kind(rel_tokens)
                target = _http_url(attrs.get("href"), base, origin) if link_kind is not None else None
                if link_kind is not None and target is not None:
                    links.add(target, link_kind, "", "nofollow" in rel_tokens)


    def _read_meta(self, attrs: Any) -> None:
        """Take a <meta> element: robots directives, description, language, a refresh's target."""
        links = self.links
        name = (attrs.get("name") or "").strip().lower()
        equiv = (attrs.get("http-equiv") or "").strip().lower()
        content = attrs.get("content") or ""
        if name == "robots":
            tokens = set(re.split(r"[\s,]+", content.lower()))
            self.noindex = self.noindex or bool(tokens & {"noindex", "none"})
            self.nofollow = self.nofollow or bool(tokens & {"nofollow", "none"})
        elif name == "description" and not self.description:
            self.description = _collapse(content, MAX_DESCRIPTION)
        elif equiv == "content-language" and not self.content_language:
            self.content_language = content.split(",")[0].strip()
        elif equiv == "refresh" and not links.full:
            target = _http_url(_refresh_target(content), self.base, self.origin)
            if target is not None:
                links.add(target, LinkKind.META_REFRESH)


def _read_piece(page: _Page, piece: str, *, first: bool, shared: PageTree | None = None) -> None:
    """Parse one piece of a page into `page`; the first also gives the title, language and base.
    `shared`: the whole page's tree, read here and left as it was for the steps after the parse."""
    # A function of its own so that the tree and every node of it are freed on return: the next
    # piece's tree replaces this one rather than joining it.
    tree: Any = shared.tree if shared is not None else parse_tree(_parseable(piece))
    nodes = tree.css(_LINK_SELECTOR)
    tags = [node.tag for node in nodes]
    if first:
        # <base>, <title> and <html lang> come first; a later piece starts a document of its own.
        if "base" in tags:
            # Only the first <base href> counts; one with a non-http(s) target is ignored.
            candidate = _http_url(nodes[tags.index("base")].attributes.get("href"), page.base, page.origin)
            if candidate is not None:
                page.base, page.origin = candidate, _origin(candidate)
        if "title" in tags:
            page.title = _collapse(nodes[tags.index("title")].text(deep=True), MAX_TITLE)
        root = tree.root
        page.language = ((root.attributes.get("lang") if root is not None else None) or "").strip()
    page.read(nodes, tags)
    if page.with_text and page.room > 0:
        if shared is not None:
            tree = shared.copy()  # the text is read without the script and style the tree keeps
        tree.strip_tags(_TEXT_FREE_TAGS, recursive=True)
        body = tree.body
        text = _collapse(body.text(deep=True, separator=" "), page.room) if body is not None else ""
        if text:
            page.texts.append(text)
            page.room -= len(text) + 1


# The compiled core's parse (harvestman.model.core): a page without text or anchor texts, in one
# piece, in one call; it returns None for the pages it leaves to _parse_python (tests/test_core_parse.py
# holds both to one answer).
CORE_KINDS = (LinkKind.ANCHOR, LinkKind.AREA, LinkKind.IFRAME, LinkKind.CANONICAL, LinkKind.ALTERNATE,
              LinkKind.NEXT, LinkKind.META_REFRESH)  # in native/src/parse.rs's Kind order
_core_parser = None if core is None else core.PageParser(Link, CORE_KINDS)


def parse_html(text: str, url: str, *, max_links: int = MAX_OUTLINKS, max_text: int = MAX_TEXT,
               segment_chars: int = SEGMENT_CHARS, with_text: bool = True,
               anchors: bool | None = None, share_tree: bool = False) -> ParsedPage:
    """Extract outlinks (resolved, not normalized), title, meta robots, language and text from HTML.

    Every link of the document is seen, up to `max_links` kept: a document longer than
    `segment_chars` is parsed in pieces of about that size, which bounds memory on huge pages.
    Without `with_text`, the visible text is left empty: extracting it costs more than the rest of
    the parse, and a crawl that only follows links does not need it. `anchors` (default: as
    `with_text`) says whether the links' anchor texts are taken. `share_tree`: the page's tree is
    kept in the answer (`ParsedPage.tree`) for later steps that read it, when it is parsed whole.
    """
    anchors = with_text if anchors is None else anchors
    if _core_parser is not None and not with_text and not anchors and len(text) <= max(1, segment_chars):
        fields = _core_parser.parse(text, url, max(0, max_links))
        if fields is not None:
            title, description, language, links, noindex, nofollow, base_url = fields
            return ParsedPage(title=title, description=description, language=language, links=links,
                              noindex=noindex, nofollow=nofollow, base_url=base_url)
    return _parse_python(text, url, max_links, max_text, segment_chars, with_text, anchors, share_tree)


def _parse_python(text: str, url: str, max_links: int, max_text: int, segment_chars: int,
                  with_text: bool, anchors: bool, share_tree: bool = False) -> ParsedPage:
    """parse_html in Python: every page, the reference the compiled core is held to."""
    page = _Page(url, max_links, with_text, anchors, max_text)
    # Shared only when this parse reads the whole page as the later steps would (no pieces, no tags
    # dropped for depth): else they build their own.
    shared = PageTree(text) if share_tree and len(text) <= min(segment_chars, MAX_HTML) \
        and _parseable(text) is text else None
    for index, piece in enumerate(_segments(text, max(1, segment_chars))):
        if index and page.links.full:
            break  # what later pieces hold would not be kept
        _read_piece(page, piece, first=index == 0, shared=shared)
    return ParsedPage(
        title=page.title,
        description=page.description,
        language=page.language or page.content_language,
        text=" ".join(page.texts) if page.texts else "",
        links=tuple(page.links.links.values()),
        noindex=page.noindex,
        nofollow=page.nofollow,
        base_url=page.base,
        tree=shared,
    )

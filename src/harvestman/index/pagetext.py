"""The searchable parts of an HTML page: title, headings, main text, and whether it may be indexed.

Small on purpose: the page features of index/features.py (boilerplate-free text) may replace it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

_INVISIBLE = ["script", "style", "noscript", "template", "svg"]
# Furniture that says nothing about the page, left out even inside its marked content: navigation
# (HTML5, ARIA, DocBook's header and footer bars, Sphinx's related bar and sidebar) and comment threads.
# Measured by bench/main_text.py against the content element of each generator.
FURNITURE = ("nav, aside, [role=navigation], [role=search], [role=complementary], div.navheader,"
             " div.navfooter, div.related, div.sphinxsidebar, #comments, .comments-area")
# Chrome around a page that marks no content element: the site's header, footer and sidebar (a page
# that marks its content may hold its own <header> with its title in it).
_CHROME = ("header, footer, [role=banner], [role=contentinfo], div#footer, div.footer, div.sidebar,"
           " .related-posts")
# Where a page says where its own content is (HTML5 main, ARIA main, article; Sphinx's div.body).
_MAIN = ("main", "[role=main]", "article")
_HEADINGS = "h1, h2, h3, h4, h5, h6"
_SPACE = re.compile(r"\s+")
MAX_TEXT = 200_000  # characters of main text kept a page: a huge page's tail adds little and costs much


@dataclass(frozen=True, slots=True)
class PageText:
    """What the index reads from one page."""

    title: str
    headings: str  # the h1..h6 texts, one a line
    text: str  # the visible main text, whitespace collapsed
    noindex: bool  # meta robots noindex / none: the page asks to stay out of indexes


def _collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _noindex(tree: LexborHTMLParser) -> bool:
    for meta in tree.css("meta[name]"):
        if (meta.attributes.get("name") or "").strip().lower() in ("robots", "harvestman"):
            tokens = {t.strip() for t in (meta.attributes.get("content") or "").lower().split(",")}
            if tokens & {"noindex", "none"}:
                return True
    return False


def marked_content(tree: LexborHTMLParser) -> LexborNode | None:
    """The element a page marks as its content (main, role=main, article), None when it marks none."""
    for selector in _MAIN:
        main = tree.css_first(selector)
        if main is not None:
            return main
    return None


def page_text(html: str | bytes) -> PageText:
    """Title, headings and main text of an HTML page (the main element when the page marks one, else
    the body without navigation, header, footer and asides)."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _collapse(title_node.text(deep=True)) if title_node is not None else ""
    noindex = _noindex(tree)
    tree.strip_tags(_INVISIBLE)
    main = marked_content(tree)
    chrome = FURNITURE
    if main is None:
        main = tree.body if tree.body is not None else tree.root
        chrome = f"{FURNITURE}, {_CHROME}"
    if main is None:
        return PageText(title, "", "", noindex)
    for node in main.css(chrome):
        node.decompose()
    headings = "\n".join(filter(None, (_collapse(h.text(deep=True)) for h in main.css(_HEADINGS))))
    text = _collapse(main.text(separator=" "))[:MAX_TEXT]
    if not title:
        first = headings.split("\n", 1)[0]
        title = first
    return PageText(title, headings, text, noindex)

"""The searchable parts of an HTML page: title, headings, main text, and whether it may be indexed.

Small on purpose: the page features of index/features.py (boilerplate-free text) may replace it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser

_INVISIBLE = ["script", "style", "noscript", "template", "svg"]
# Chrome that repeats on every page of a site says nothing about one page: navigation and page furniture.
_CHROME = "nav, header, footer, aside, [role=navigation], [role=banner], [role=contentinfo], [role=search]"
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


def page_text(html: str | bytes) -> PageText:
    """Title, headings and main text of an HTML page (the main element when the page marks one, else
    the body without navigation, header, footer and asides)."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _collapse(title_node.text(deep=True)) if title_node is not None else ""
    noindex = _noindex(tree)
    tree.strip_tags(_INVISIBLE)
    main = None
    for selector in _MAIN:
        main = tree.css_first(selector)
        if main is not None:
            break
    if main is None:
        main = tree.body if tree.body is not None else tree.root
        if main is not None:
            for node in main.css(_CHROME):
                node.decompose()
    if main is None:
        return PageText(title, "", "", noindex)
    headings = "\n".join(filter(None, (_collapse(h.text(deep=True)) for h in main.css(_HEADINGS))))
    text = _collapse(main.text(separator=" "))[:MAX_TEXT]
    if not title:
        first = headings.split("\n", 1)[0]
        title = first
    return PageText(title, headings, text, noindex)

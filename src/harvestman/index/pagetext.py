"""The searchable parts of an HTML page: title, headings, defined terms, main text, and whether it may
be indexed.

Small on purpose: the page features of index/features.py (boilerplate-free text) may replace it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from harvestman.model.pagetree import parse_tree

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
# Elements that start and end a run of words: a space before and after each. Text is joined without
# one elsewhere, so that a code block's highlighted tokens read as written (`sorted([5, 2])`, not
# `sorted ([ 5 , 2 ])`).
_BREAKS = ("address, article, aside, blockquote, br, caption, dd, details, div, dl, dt, figcaption, figure,"
           " footer, form, h1, h2, h3, h4, h5, h6, header, hr, li, main, nav, ol, option, p, pre, section,"
           " summary, table, td, th, tr, ul")
MAX_DEFINED = 2_000  # defined terms kept a page
MAX_TERM_WORDS = 5  # a <dt> of more words is a sentence, not a term
MAX_TERM_CHARS = 400  # longer <dt>s are not read (an API's signature with its parameters fits)
_PARENS = re.compile(r"\([^()]*\)")
_ACRONYM = re.compile(r"\(([A-Z][A-Z0-9]+)\)")  # "Write-ahead log (WAL)": WAL names it too
# An API's entry: "class int(x=0)", "time.sleep(secs)", "shared_buffers (integer)": its last name.
_NAME = re.compile(r"(?:(?:class|exception|async|await|abstractmethod|classmethod|staticmethod|property|"
                   r"method|function|attribute|data)\s+)*([A-Za-z_][\w.]*)\s*$")
_KEY_WORD = re.compile(r"[a-z0-9]+")
# An API entry's last name is kept apart from the terms a page defines in words (a glossary's
# "generator" is what "what is a generator" asks for; collections.abc.Generator less so): its key
# starts with this mark.
API_MARK = "."
_SPACE = re.compile(r"\s+")
MAX_TEXT = 200_000  # characters of main text kept a page: a huge page's tail adds little and costs much


@dataclass(frozen=True, slots=True)
class PageText:
    """What the index reads from one page."""

    title: str
    headings: str  # the h1..h6 texts, one a line
    defines: tuple[str, ...]  # the terms the page defines (its <dt>s: a glossary's, an API's names), as keys
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


def term_key(text: str) -> str:
    """The form a term is matched in: lower-case words of letters and digits, one space between."""
    return " ".join(_KEY_WORD.findall(text.lower()))


def _contents_entries(main: LexborNode) -> set[int]:
    """The <dt>s (their mem_id) that are a link to another page and nothing else: a table of
    contents' entries. One query for the links in <dt>s, not one a <dt>: most have none, or only a
    link to themselves (#)."""
    found: set[int] = set()
    for link in main.css("dt a[href]"):
        if (link.attributes.get("href") or "#").startswith("#"):
            continue
        dt = link.parent
        while dt is not None and dt.tag != "dt":
            dt = dt.parent
        if dt is not None and " ".join(dt.text(deep=True).split()) == " ".join(link.text(deep=True).split()):
            found.add(dt.mem_id)
    return found


def _defined_terms(main: LexborNode) -> tuple[str, ...]:
    """The keys of the terms a page's definition lists define: each <dt> of at most a few words (its
    parenthesized asides left out, an acronym in parentheses as a second name), and an API entry's
    last name marked with API_MARK (time.sleep(secs): .sleep). A <dt> that is only a link (a table of
    contents) defines nothing here."""
    keys: dict[str, None] = {}
    contents = _contents_entries(main)
    for dt in main.css("dt"):
        if len(keys) >= MAX_DEFINED:
            break
        text = " ".join(dt.text(deep=True).split())
        if not text or len(text) > MAX_TERM_CHARS or dt.mem_id in contents:
            continue
        bare = text.split("→", 1)[0]  # "→ int": what a function returns
        while "(" in bare and (shorter := _PARENS.sub(" ", bare)) != bare:  # f(x=g()): inner ones first
            bare = shorter
        bare = " ".join(bare.split()).strip(" ¶#")
        found = _NAME.match(bare)
        names = [bare, *_ACRONYM.findall(text)]
        if found and (last := found.group(1).rsplit(".", 1)[-1]) != bare:
            names.append(API_MARK + last)
        for name in names:
            key = term_key(name)
            if key and len(key.split()) <= MAX_TERM_WORDS:
                keys.setdefault(API_MARK + key if name.startswith(API_MARK) else key, None)
    return tuple(keys)


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
    tree = parse_tree(html)
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
        return PageText(title, "", (), "", noindex)
    for node in main.css(chrome):
        node.decompose()
    headings = "\n".join(filter(None, (_collapse(h.text(deep=True)) for h in main.css(_HEADINGS))))
    defines = _defined_terms(main)
    for node in main.css(_BREAKS):
        node.insert_before(" ")
        node.insert_after(" ")
    text = _collapse(main.text(separator=""))[:MAX_TEXT]
    if not title:
        first = headings.split("\n", 1)[0]
        title = first
    return PageText(title, headings, defines, text, noindex)

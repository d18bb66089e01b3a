"""The features of one HTML page (seed 000): visible text, sentences, DOM tag counts, word n-grams,
language, title, description, headings.

The libraries were chosen by measuring (bench/feature_libraries.py; one core, CPU a page):

- Boilerplate: on 120 pages of Python's Sphinx documentation (navigation bar, sidebar, footer; truth:
  the main `div.body`), word precision / recall / CPU were: Resiliparse main-content 0.991 / 0.750 /
  2.7 ms; trafilatura 0.985 / 0.890 / 90 ms (55 ms with fast=True); jusText 0.726 / 0.365 / 20 ms;
  selectolax body minus nav/header/footer/aside 0.819 / 0.998 / 1.0 ms. Resiliparse (ChatNoir's C++
  extractor on Lexbor, the engine of our parser) keeps almost nothing but content at a thirtieth of
  trafilatura's cost; it drops more (code blocks, long lists), so when it keeps nothing of a page
  the selectolax text is taken instead.
- Sentences: Bling Fire (a finite-state machine in C++, model in the wheel) 339 µs a page text, 5/6
  hard cases (it splits inside a quotation: `"Stop!" and`; it takes French "est." for an
  abbreviation and joins the next sentence on); syntok 6/6 but 7.3 ms; pysbd 6/6 but
  96 ms; a regex on full stops 1/6.
- Language: py3langid (langid.py's model in the wheel, 97 languages) 8/8 sentences, 7/8 short titles,
  0.2 ms a 2 KB text; lingua 8/8 and 8/8 but 1.3 ms and a model of hundreds of MB in memory.

Nothing here reaches the network: every model ships inside its wheel.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from typing import Any

from harvestman.index.pagetext import FURNITURE, marked_content
from harvestman.model.pagetree import PageTree
from harvestman.model.records import PageFeatures

TOP_K = 20  # n-grams kept of each order (1, 2, 3)
MAX_TEXT = 1_000_000  # characters of visible text kept
MAX_SENTENCES = 5_000
MAX_HEADINGS = 200
MAX_HEADING = 300  # characters of one heading
MAX_TITLE = 1_000
MAX_DESCRIPTION = 2_000
# Characters the language is told from: enough, and it bounds the cost. py3langid on 2,000 gave the
# language 4,000 gave on all 526 pages of Python's docs, in a quarter of the time (0.39 against 1.41 ms
# a page: bench/markdown_export.py's crawl).
LANGUAGE_SAMPLE = 2_000
MIN_LANGUAGE_LETTERS = 20  # fewer letters than this tell no language: the page's lang attribute then
_BOILERPLATE_TAGS = ["script", "style", "noscript", "template", "nav", "header", "footer", "aside"]
_HEADINGS = "h1, h2, h3, h4, h5, h6"
# Headings inside these are the site's, not the page's (a sidebar's "Next topic"); <header> is not
# among them: an article's <header> holds its own <h1>.
_NAV_TAGS = frozenset({"nav", "aside", "footer"})
_NAV_ROLES = frozenset({"navigation", "complementary", "contentinfo"})
# Words: runs of letters (digits and underscores split them), apostrophes inside kept ("don't").
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_LETTER = re.compile(r"[^\W\d_]")


def _collapse(text: str, limit: int) -> str:
    return " ".join(text[: limit * 4].split())[:limit]


def main_text(html: str, tree: PageTree | None = None) -> str:
    """The page's visible main text, blocks on lines of their own, navigation boilerplate left out;
    `tree`: the page's shared tree, if it has one."""
    from resiliparse.extract.html2text import extract_plain_text  # imported here: features are opt-in

    page = tree or PageTree(html)
    html = page.html
    # A page that marks its content (Sphinx's role=main, HTML5 main) is taken at its word: resiliparse's
    # main-content guess drops definition lists, tables and code there (recall 0.74 on Python's docs,
    # bench/main_text.py); elsewhere its guess is better than the whole body.
    # Found on the shared tree, taken from a copy of it: its furniture is removed.
    marked = marked_content(page.copy()) if marked_content(page.tree) is not None else None
    if marked is not None:
        for node in marked.css(FURNITURE):
            node.decompose()
    try:
        if marked is not None:
            text = str(extract_plain_text(marked.html or "", main_content=False, alt_texts=False, links=False,
                                          list_bullets=False))
        else:
            text = str(extract_plain_text(html, main_content=True, alt_texts=False, links=False,
                                          list_bullets=False))
    except UnicodeEncodeError:
        text = ""
    lines = [" ".join(line.split()) for line in text[: MAX_TEXT * 2].splitlines()]
    return "\n".join(line for line in lines if line)[:MAX_TEXT]


def _fallback_text(tree: Any) -> str:
    tree.strip_tags(_BOILERPLATE_TAGS, recursive=True)
    body = tree.body
    return _collapse(body.text(deep=True, separator=" "), MAX_TEXT) if body is not None else ""


def _in_navigation(node: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in _NAV_TAGS or parent.attributes.get("role") in _NAV_ROLES:
            return True
        parent = parent.parent
    return False


def split_sentences(text: str) -> tuple[str, ...]:
    """The sentences of `text`, a block (line) at a time: a heading or a list item never runs on
    into the next block."""
    import blingfire  # imported here: features are opt-in

    found: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        found.extend(s for s in blingfire.text_to_sentences(line).split("\n") if s.strip())
        if len(found) >= MAX_SENTENCES:
            break
    return tuple(found[:MAX_SENTENCES])


def detect_language(text: str, declared: str = "") -> str:
    """The ISO 639-1 code of the language `text` is in; `declared` (an `<html lang>`, primary subtag)
    when the text has too few letters to tell."""
    sample = text[:LANGUAGE_SAMPLE]
    if len(_LETTER.findall(sample)) < MIN_LANGUAGE_LETTERS:
        return declared.split("-", 1)[0].strip().lower()[:8]
    import py3langid  # imported here: its model loads on first use

    return str(py3langid.classify(sample)[0])


def top_ngrams(text: str, top_k: int = TOP_K) -> tuple[tuple[str, int], ...]:
    """The `top_k` most frequent word 1-, 2- and 3-grams of `text` (lower case, within a line), each
    order's most frequent first, ties in order of first appearance."""
    counts: tuple[Counter[str], ...] = (Counter(), Counter(), Counter())
    for line in text.lower().splitlines():
        words = _WORD.findall(line)
        counts[0].update(words)
        counts[1].update(" ".join(pair) for pair in itertools.pairwise(words))
        counts[2].update(" ".join(triple) for triple in zip(words, words[1:], words[2:], strict=False))
    return tuple(pair for counter in counts for pair in counter.most_common(top_k))


def tag_counts(tree: Any) -> tuple[tuple[str, int], ...]:
    """How many elements of each name the DOM holds, most frequent first (then by name)."""
    root = tree.root
    if root is None:
        return ()
    counts = Counter(node.tag for node in root.traverse(include_text=False))
    counts.pop("-comment", None)
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def extract_features(html: str, url: str, *, top_k: int = TOP_K,
                     tree: PageTree | None = None) -> PageFeatures:
    """Every feature of one HTML page (category left empty: see index/categories.py); `tree`: the
    page's shared tree, if it has one (read, never changed)."""
    page = tree or PageTree(html)
    dom = page.tree
    title_node = dom.css_first("title")
    title = _collapse(title_node.text(deep=True), MAX_TITLE) if title_node is not None else ""
    description = ""
    for meta in dom.css("meta[name]"):
        if (meta.attributes.get("name") or "").strip().lower() == "description":
            description = _collapse(meta.attributes.get("content") or "", MAX_DESCRIPTION)
            break
    headings = tuple((int(str(node.tag)[1]), _collapse(node.text(deep=True, separator=" "), MAX_HEADING))
                     for node in dom.css(_HEADINGS)[: MAX_HEADINGS * 2] if not _in_navigation(node))
    headings = headings[:MAX_HEADINGS]
    root = dom.root
    declared = (root.attributes.get("lang") or "") if root is not None else ""
    tags = tag_counts(dom)
    text = main_text(page.html, page) or _fallback_text(page.copy())  # the fallback strips its tree
    return PageFeatures(
        url=url,
        title=title,
        description=description,
        headings=tuple(h for h in headings if h[1]),
        text=text,
        sentences=split_sentences(text),
        language=detect_language(text, declared),
        tag_counts=tags,
        ngrams=top_ngrams(text, top_k),
    )

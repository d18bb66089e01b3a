"""A page split into contextually coherent parts, as seed 004's sub-document classification does.

Its parts: every list (`ul`, `ol`, `dir`, `dl`, `menu`: the items of a list are related), every
paragraph of more than `paragraph_words` words (shorter `p`s are mostly layout), every table taken
as a page of its own (its lists and long paragraphs are parts, the rest of the table one more part:
a table used for layout keeps its unrelated cells apart), and the rest of the page. Each part keeps
its text and the links (`a`, `area`) inside it, so that a focused crawl can give every link the
score of the part it is in rather than the page's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin

from harvestman.model.pagetree import PageTree, parse_tree

LISTS = frozenset({"ul", "ol", "dir", "dl", "menu"})
SKIPPED = frozenset({"script", "style", "noscript", "template", "head", "svg"})
LINKS = frozenset({"a", "area"})
PARAGRAPH_WORDS = 30  # the seed's threshold was 500 characters; ~30 words is the same order
MAX_NESTING = 400  # deeper than this, a subtree's text joins its part whole (no recursion overflow)


@dataclass(slots=True)
class Block:
    """One part of a page: its text and the links found in it (resolved, without fragment)."""

    kind: str  # "list", "paragraph", "table" (the rest of a table), "page" (the rest of the page)
    texts: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The part's visible text, words separated by single spaces."""
        return " ".join(" ".join(self.texts).split())


def link_key(url: str) -> str:
    """A resolved link as blocks and the parser's links are matched on: without its fragment."""
    return urldefrag(url)[0]


def split_blocks(html: str, base_url: str, *, paragraph_words: int = PARAGRAPH_WORDS,
                 tree: PageTree | None = None) -> list[Block]:
    """The parts of an HTML page (the rest of the page last; parts without text or links left out);
    `tree`: the page's shared tree, read without a change, if it has one."""
    dom = tree.tree if tree is not None else parse_tree(html)
    base = base_url
    for node in dom.css("base[href]"):
        base = urljoin(base_url, node.attributes.get("href") or "")
        break
    blocks: list[Block] = []
    rest = Block("page")
    root = dom.body if dom.body is not None else dom.root
    if root is not None:
        _walk(root, rest, blocks, base, paragraph_words, 0)
    blocks.append(rest)
    return [block for block in blocks if block.links or block.texts]


def _whole(node: object, block: Block, base: str) -> None:
    """Put a subtree's text and links in `block`, all of it."""
    text = node.text(deep=True, separator=" ")  # type: ignore[attr-defined]
    if text and text.strip():
        block.texts.append(text)
    for tag in ("a[href]", "area[href]"):
        for link in node.css(tag):  # type: ignore[attr-defined]
            block.links.append(link_key(urljoin(base, link.attributes.get("href") or "")))
    if node.tag in LINKS and node.attributes.get("href"):  # type: ignore[attr-defined]
        block.links.append(link_key(urljoin(base, node.attributes["href"] or "")))  # type: ignore[attr-defined]


def _walk(node: object, into: Block, blocks: list[Block], base: str, words: int, nesting: int) -> None:
    """Share the children of `node` out: lists, long paragraphs and tables as parts, the rest `into`."""
    child = node.child  # type: ignore[attr-defined]
    while child is not None:
        tag = child.tag
        if tag == "-text":
            text = child.text_content
            if text and not text.isspace():
                into.texts.append(text)
        elif tag in SKIPPED or tag == "-comment" or not isinstance(tag, str):
            pass
        elif tag in LISTS:
            part = Block("list")
            _whole(child, part, base)
            blocks.append(part)
        elif tag == "p" and len(child.text(deep=True, separator=" ").split()) > words:
            part = Block("paragraph")
            _whole(child, part, base)
            blocks.append(part)
        elif nesting >= MAX_NESTING:
            _whole(child, into, base)
        elif tag == "table":
            table_rest = Block("table")  # a table is split as a page of its own
            _walk(child, table_rest, blocks, base, words, nesting + 1)
            blocks.append(table_rest)
        else:
            if tag in LINKS:
                href = child.attributes.get("href")
                if href:
                    into.links.append(link_key(urljoin(base, href)))
            _walk(child, into, blocks, base, words, nesting + 1)
        child = child.next

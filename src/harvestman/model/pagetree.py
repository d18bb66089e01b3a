"""A page's HTML as a Lexbor tree (selectolax): the one place that parses it, and the tree the steps
reading one crawled page share (its parse, features, Markdown, focus blocks), built once.

A reader that changes the tree (strip_tags, decompose, insert) works on a clone, the others on the
shared tree, which is read-only by contract (tests/test_pagetree.py holds every reader to it). A clone
is not free: on bench/feature_costs.py's ~21 KB pages Lexbor parses in ~23 µs and clones in ~15.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

MAX_HTML = 4 * 1024 * 1024  # characters of a page its tree is built from: a bigger page's start


def parse_tree(html: str | bytes) -> LexborHTMLParser:
    """The Lexbor tree of `html`."""
    from selectolax.lexbor import LexborHTMLParser  # loaded where a tree is built, not with the records

    try:
        return LexborHTMLParser(html)
    except UnicodeEncodeError:  # lone surrogates cannot reach Lexbor as UTF-8
        assert isinstance(html, str)  # bytes are never encoded
        return LexborHTMLParser(html.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))


class PageTree:
    """One page's tree (of its first MAX_HTML characters), parsed on first use, then shared."""

    __slots__ = ("_tree", "html")

    def __init__(self, html: str) -> None:
        self.html = html[:MAX_HTML]
        self._tree: LexborHTMLParser | None = None

    @property
    def tree(self) -> LexborHTMLParser:
        """The shared tree: read it, never change it (take `copy()` for that)."""
        if self._tree is None:
            self._tree = parse_tree(self.html)
        return self._tree

    def copy(self) -> LexborHTMLParser:
        """A tree of the page of the caller's own, to change at will (a clone of the shared one)."""
        return self.tree.clone()

    def release(self) -> None:
        """Free the tree once the steps that read it are done (it is parsed again if asked for)."""
        self._tree = None

    def __reduce__(self) -> tuple[type[PageTree], tuple[str]]:
        # A tree does not pickle: a page sent to another process takes its HTML and parses there.
        return PageTree, (self.html,)

"""How a page's links are kept in a store's links table: one text a page, one line a link.

A plain link (an <a href>, no anchor text kept, followed) is its URL alone, the common case and the
default crawl's only one: writing a page's links costs one join, about half of what JSON took.
Any other is `URL<TAB>kind<TAB>nofollow (0 or 1)<TAB>anchor text`. URLs are serialized by the URL
Standard, which takes tabs and newlines out of them; anchors have theirs turned into spaces.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from harvestman.model.records import Link, LinkKind

_ANCHOR = LinkKind.ANCHOR
_KINDS = {kind.value: kind for kind in LinkKind}
_SPACES = str.maketrans("\t\n\r", "   ")


def encode_links(links: Sequence[Link]) -> str:
    """A page's links as one text."""
    return "\n".join(
        link.url if link.kind is _ANCHOR and not link.anchor and not link.nofollow
        else f"{link.url}\t{link.kind.value}\t{int(link.nofollow)}\t{link.anchor.translate(_SPACES)}"
        for link in links
    )


def decode_links(text: str) -> Iterator[tuple[str, str, LinkKind, bool]]:
    """The (url, anchor, kind, nofollow) of each link in a text `encode_links` made."""
    if not text:
        return
    for line in text.split("\n"):
        if "\t" not in line:
            yield line, "", _ANCHOR, False
        else:
            url, kind, nofollow, anchor = line.split("\t", 3)
            yield url, anchor, _KINDS[kind], nofollow == "1"

"""64-bit SimHash (Charikar) of a page's visible text, over word shingles, for near-duplicate detection.

Two pages that differ by a few words get hashes a few bits apart; `dedup` finds pairs within a
Hamming distance without comparing every pair (see batch/duplicates.py).
"""

from __future__ import annotations

import hashlib
import re

from harvestman.model.pagetree import parse_tree

SHINGLE_WORDS = 2  # words a shingle: keeps some word order, while one changed word touches only 2
BITS = 64
_INVISIBLE = ["script", "style", "noscript", "template"]
_WORD = re.compile(r"\w+", re.UNICODE)
_MASK = (1 << BITS) - 1


def visible_text(html: str | bytes) -> str:
    """The text a reader sees in an HTML page: body text without script, style, noscript, template."""
    tree = parse_tree(html)
    tree.strip_tags(_INVISIBLE)
    node = tree.body if tree.body is not None else tree.root
    return "" if node is None else node.text(separator=" ")


def _hash64(shingle: str) -> int:
    return int.from_bytes(hashlib.blake2b(shingle.encode("utf-8"), digest_size=8).digest(), "big")


def simhash(text: str, shingle_words: int = SHINGLE_WORDS) -> int:
    """The unsigned 64-bit SimHash of `text`: each bit is the majority vote of that bit over the
    hashes of its distinct lower-cased word shingles; 0 for a text without words."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return 0
    size = min(shingle_words, len(words))
    shingles = {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}
    # Bit columns counted in C: one 64-character binary string a shingle, then zip(*) makes the columns.
    rows = [format(_hash64(s), "064b") for s in shingles]
    half = len(rows) / 2
    value = 0
    for column in zip(*rows, strict=True):
        value = (value << 1) | (column.count("1") > half)
    return value & _MASK


def html_simhash(html: str | bytes) -> int:
    """The SimHash of an HTML page's visible text."""
    return simhash(visible_text(html))


def hamming(a: int, b: int) -> int:
    """Bits that differ between two 64-bit hashes (signed or unsigned)."""
    return ((a ^ b) & _MASK).bit_count()


def signed(value: int) -> int:
    """An unsigned 64-bit hash as a signed 64-bit integer (how Parquet and the databases hold it)."""
    value &= _MASK
    return value - (1 << 64) if value >= 1 << 63 else value


def unsigned(value: int) -> int:
    """A signed 64-bit integer back as the unsigned hash."""
    return value & _MASK

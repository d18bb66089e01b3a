"""A SimHash kept up to date as a page's text streams in, so that a re-crawl can tell early whether a
page is "unchanged so far" against the hash of the same prefix last time.

It agrees with batch/simhash.py's `simhash` (64 bits, 2-word lower-cased shingles, each distinct
shingle one vote) on the text fed so far: `RollingSimHash` keeps the 64 vote counts and the set of
shingles seen, so each new word costs one hash, and reading the value costs 64 comparisons. (The
hash function is repeated here rather than imported: fetch/ sits below batch/.)
"""

from __future__ import annotations

import hashlib
import re

SHINGLE_WORDS = 2
BITS = 64
_WORD = re.compile(r"\w+", re.UNICODE)


def _hash64(shingle: str) -> int:
    return int.from_bytes(hashlib.blake2b(shingle.encode("utf-8"), digest_size=8).digest(), "big")


class RollingSimHash:
    """SimHash over text fed in pieces; a word split across two pieces is joined before hashing."""

    __slots__ = ("_counts", "_first", "_last", "_pending", "_shingles", "words")

    def __init__(self) -> None:
        self._counts = [0] * BITS  # votes for 1, per bit (most significant first)
        self._shingles: set[str] = set()
        self._last = ""  # the previous complete word (the first half of the next shingle)
        self._first = ""  # the only word, while there is one (simhash of one word hashes it alone)
        self._pending = ""  # a word that may go on in the next piece
        self.words = 0

    def update(self, text: str) -> None:
        """Add the next piece of text."""
        text = self._pending + text
        words = _WORD.findall(text)
        # The last word may be cut by the piece's end: hold it back unless a non-word follows it.
        if words and text and re.match(r"\w", text[-1]):
            self._pending = words.pop()
        else:
            self._pending = ""
        for word in words:
            self._add(word.lower())

    def _add(self, word: str) -> None:
        self.words += 1
        if self.words == 1:
            self._first = word
        else:
            self._vote(f"{self._last} {word}")
        self._last = word

    def _vote(self, shingle: str) -> None:
        if shingle in self._shingles:
            return
        self._shingles.add(shingle)
        h = _hash64(shingle)
        counts = self._counts
        for bit in range(BITS):
            if h >> (BITS - 1 - bit) & 1:
                counts[bit] += 1

    @property
    def value(self) -> int:
        """The SimHash of all text fed so far (a held-back last word counted as complete)."""
        counts = list(self._counts)
        shingles = len(self._shingles)
        words = self.words
        last = self._last
        if self._pending:
            word = self._pending.lower()
            if words == 0:
                return _single(word)
            shingle = f"{last} {word}"
            if shingle not in self._shingles:
                h = _hash64(shingle)
                for bit in range(BITS):
                    if h >> (BITS - 1 - bit) & 1:
                        counts[bit] += 1
                shingles += 1
        elif words == 0:
            return 0
        elif words == 1:
            return _single(self._first)
        half = shingles / 2
        value = 0
        for count in counts:
            value = (value << 1) | (count > half)
        return value


def _single(word: str) -> int:
    """The SimHash of a one-word text: its one shingle's hash, each bit a vote of one (1 > 0.5)."""
    return _hash64(word)

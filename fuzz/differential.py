"""The compare step of the differential harnesses (fuzz_parse.py, fuzz_warc.py) and of tests/test_fuzz.py:
one input through the compiled core and through the pure-Python reference, the two answers held equal.

The core is the one a crawl uses (harvestman.model.core: built, fresh, not turned off with
HARVESTMAN_CORE=python), read at each call, so a test can stand a wrong one in. Where none is in use,
the Python path runs alone and the harness says why once.
"""

from __future__ import annotations

import hashlib
import os
import sys
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

from harvestman.crawl import parse
from harvestman.model.core import core_name
from harvestman.model.records import FetchResult, Headers, ParsedPage
from harvestman.store import warc

SHOWN = 3000  # characters of each output in a mismatch's message
# A folder to collect differences in and go on (a long hunt past the known ones), instead of stopping.
KEEP_GOING_ENV = "FUZZ_DIFFERENCES"
KEEP_AT_MOST = 1000  # inputs written there


class CoreMismatch(AssertionError):
    """The core and the Python reference answered the same input differently."""


class Tally:
    """How many inputs the core answered and how many it left to Python, printed to stderr at each
    power of two (libFuzzer ends the process without running Python's exit handlers)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.answered = self.declined = 0

    def note(self, answered: bool | None) -> None:
        """Count one input: answered by the core (True), left to Python (False), no core (None)."""
        if answered is None:
            return
        self.answered += answered
        self.declined += not answered
        total = self.answered + self.declined
        if total & (total - 1) == 0:
            print(f"differential {self.name}: {total} inputs, {self.answered} answered by the core, "
                  f"{self.declined} left to Python", file=sys.stderr, flush=True)


def announce(name: str) -> None:
    """Say on stderr whether the harness compares the two cores or runs the Python path alone."""
    if core_in_use():
        print(f"differential {name}: comparing the compiled core ({core_name()}) with Python",
              file=sys.stderr, flush=True)
    else:
        print(f"differential {name}: no compiled core in use, Python only: {core_name()}",
              file=sys.stderr, flush=True)


def keep_going(test: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """`test` as it is, or where FUZZ_DIFFERENCES names a folder, `test` writing each input it finds a
    difference on there (with its message beside it, NAME.txt) and going on."""
    folder = os.environ.get(KEEP_GOING_ENV)
    if not folder:
        return test
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)

    def test_and_keep(data: bytes) -> None:
        try:
            test(data)
        except CoreMismatch as exc:
            if sum(1 for _ in out.glob("*.txt")) < KEEP_AT_MOST:
                name = hashlib.sha1(data).hexdigest()
                (out / name).write_bytes(data)
                (out / f"{name}.txt").write_text(str(exc))

    return test_and_keep


def core_in_use() -> bool:
    """Whether a crawl here runs the compiled core (both its parser and its WARC writer)."""
    return parse._core_parser is not None and warc._core_records is not None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + f"... ({len(text)} characters)"


def compare_parse(text: str, url: str, max_links: int) -> bool | None:
    """Parse the page with Python and with the core (parse_html's crawl call: no text, no anchor
    texts); whether the core answered, None when no core is in use. CoreMismatch when they differ."""
    expected = parse._parse_python(text, url, max_links, 0, parse.SEGMENT_CHARS, False, False)
    native = parse._core_parser
    if native is None:
        return None
    fields = native.parse(text, url, max_links)
    if fields is None:
        return False
    title, description, language, links, noindex, nofollow, base_url = fields
    got = ParsedPage(title=title, description=description, language=language, links=links,
                     noindex=noindex, nofollow=nofollow, base_url=base_url)
    if got != expected:
        raise CoreMismatch(f"parse of {_show(text)} at {url!r}, max_links={max_links}:\n"
                           f"  core:   {_show(got)}\n  python: {_show(expected)}")
    return True


def _members(data: bytes) -> list[bytes] | bytes:
    """The gzip members' contents, or the bytes as they are when they are not gzip."""
    out = []
    try:
        while data:
            member = zlib.decompressobj(zlib.MAX_WBITS | 16)
            out.append(member.decompress(data))
            data = member.unused_data
    except zlib.error:
        return data
    return out


def compare_warc(result: FetchResult, request_headers: Headers, outlinks: Sequence[str], digest: str,
                 level: int, ids: tuple[str, str, str], date: str) -> bool | None:
    """Write the fetch's records with Python and with the core (WarcWriter._build's two paths);
    whether the core answered, None when no core is in use. CoreMismatch when the bytes differ."""
    writer = warc.WarcWriter.__new__(warc.WarcWriter)  # _build_python reads no file of the instance
    writer.compress_level = level
    expected = writer._build_python(result, request_headers, outlinks, digest, ids, date)
    native = warc._core_records
    if native is None:
        return None
    got = native.fetch(result, request_headers, outlinks, digest, level, ids, date)
    if got is None:
        return False
    if got != expected:
        raise CoreMismatch(f"WARC records of {_show(result)}, request headers {_show(request_headers)}, "
                           f"outlinks {_show(outlinks)}, digest {digest!r}, level {level}: bytes differ "
                           f"({len(got)} and {len(expected)} bytes); gunzipped:\n"
                           f"  core:   {_show(_members(got))}\n  python: {_show(_members(expected))}")
    return True

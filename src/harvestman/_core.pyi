"""harvestman's compiled core (native/, Rust through PyO3), built by `pip install` where cargo is.
Loaded through harvestman.model.core, never imported directly."""

from collections.abc import Callable, Iterable

from harvestman.model.records import FetchResult, Headers, Link, LinkKind

VERSION: str
SOURCE_DIGEST: str  # SHA-1 (hex) of the sources it was built from: see harvestman.model.core

class WarcRecords:
    """The gzipped WARC records of one fetch: store/warc.py's WarcWriter._build_python's bytes."""

    def __new__(cls, compress: Callable[[bytes, int, int], bytes], reasons: dict[int, str],
                /) -> WarcRecords: ...
    def fetch(self, result: FetchResult, request_headers: Headers, outlinks: Iterable[str],
              payload_digest: str, level: int, ids: tuple[str, str, str], date: str, /) -> bytes | None: ...

class PageParser:
    """A page's parse: crawl/parse.py's _parse_python(text, url, max_links, with_text=False,
    anchors=False) fields, or None for a page it leaves to Python."""

    def __new__(cls, link: type[Link], kinds: tuple[LinkKind, ...], /) -> PageParser: ...
    def parse(self, text: str, url: str, max_links: int, /) -> tuple[
        str, str, str, tuple[Link, ...], bool, bool, str] | None: ...

class PagePath:
    """The next boundary's measured prototype, not on the crawl's path (bench/core_page.py): a
    fetched HTML page's signature, parse and WARC records (its followed links as outlinks) in one
    call, or None where WarcRecords.fetch or PageParser.parse would leave it to Python."""

    def __new__(cls, warc: WarcRecords, parser: PageParser, /) -> PagePath: ...
    def page(self, result: FetchResult, request_headers: Headers, max_links: int, level: int,
             ids: tuple[str, str, str], date: str, /) -> tuple[
        str, tuple[str, str, str, tuple[Link, ...], bool, bool, str], bytes] | None: ...

"""atheris harness for HTML link extraction: bytes -> charset -> text -> parse_html, output bounded; and
the compiled core's parse of the text against the Python reference's (fuzz/differential.py).

Run: python fuzz/fuzz_parse.py [libFuzzer options] [CORPUS_DIR ...], e.g. -max_total_time=60.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # fuzz.differential, from any directory

with atheris.instrument_imports(include=["harvestman"]):
    from fuzz.differential import Tally, announce, compare_parse, keep_going
    from harvestman.crawl.parse import MAX_ANCHOR, MAX_DESCRIPTION, MAX_TITLE, parse_html
    from harvestman.fetch.content import decode_text, detect_charset, sniff_binary
    from harvestman.model.records import LinkKind
    from harvestman.net.urls import resolve

CONTENT_TYPES = ("text/html", "text/html; charset=utf-8", "text/html; charset=windows-1251",
                 "text/html; charset=utf-16", "application/xhtml+xml", "text/html; charset=bogus", "",
                 "image/png")
PAGES = ("http://example.com/dir/page.html", "https://[::1]:8443/", "not a url")
MAX_TEXT = 500
ANCHORS = (LinkKind.ANCHOR, LinkKind.AREA)
TALLY = Tally("parse")


def TestOneInput(data: bytes) -> None:
    """One input: a flags byte (content type, page URL, link cap), then the body as served."""
    if not data:
        return
    flags, body = data[0], data[1:]
    content_type = CONTENT_TYPES[flags % len(CONTENT_TYPES)]
    page_url = PAGES[(flags >> 3) % len(PAGES)]
    max_links = (flags >> 5) * 3  # 0 to 21
    sniff_binary(body, content_type)
    charset, _source = detect_charset(body, content_type)
    text = decode_text(body, charset)
    page = parse_html(text, page_url, max_links=max_links, max_text=MAX_TEXT)
    assert len(page.links) <= max_links, (len(page.links), max_links)
    # A URL once as an anchor (<a>, <area>) and once for each other kind (crawl/parse.py _Links).
    keys = [(link.url, "" if link.kind in ANCHORS else link.kind) for link in page.links]
    assert len(set(keys)) == len(keys), keys
    assert len(page.text) <= MAX_TEXT
    assert len(page.title) <= MAX_TITLE and len(page.description) <= MAX_DESCRIPTION
    for link in page.links:
        assert link.url.startswith(("http://", "https://")), link.url
        assert resolve(link.url) is not None, link.url
        assert len(link.anchor) <= MAX_ANCHOR
    TALLY.note(compare_parse(text, page_url, max_links))
    if "\0" in text:  # the core leaves a page with NULs to Python: compare the rest of it too
        TALLY.note(compare_parse(text.replace("\0", ""), page_url, max_links))
    # A raw decode with lone surrogates reaches the parser too when a caller skips decode_text.
    parse_html(body.decode("utf-8", "surrogateescape"), page_url, max_links=max_links, max_text=MAX_TEXT)


def main() -> None:
    """Run libFuzzer with the command line's options."""
    announce("parse")
    atheris.Setup(sys.argv, keep_going(TestOneInput))
    atheris.Fuzz()


if __name__ == "__main__":
    main()

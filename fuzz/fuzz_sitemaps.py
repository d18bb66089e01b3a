"""atheris harness for harvestman.crawl.sitemaps: read arbitrary bytes as a sitemap, plain and gzipped.

Run: python fuzz/fuzz_sitemaps.py [libFuzzer options] [CORPUS_DIR ...], e.g. -max_total_time=60.
"""

from __future__ import annotations

import gzip
import sys

import atheris

with atheris.instrument_imports(include=["harvestman"]):
    from harvestman.crawl.sitemaps import looks_like_sitemap, parse_lastmod, parse_sitemap
    from harvestman.net.urls import normalize

BASE = "http://h.test/maps/sitemap.xml"
MAX_URLS = 20  # a small cap, so that the fuzzer reaches it


def TestOneInput(data: bytes) -> None:
    """One input: a sitemap body; read as it is and gzipped, and its text as a lastmod."""
    found = parse_sitemap(data, BASE, max_urls=MAX_URLS)
    entries = (*found.pages, *found.sitemaps)
    assert len(entries) <= MAX_URLS, len(entries)
    assert not (found.pages and found.sitemaps), found  # one document is one kind
    for entry in entries:
        assert entry.url.startswith(("http://", "https://")) and normalize(entry.url) == entry.url, entry
        assert entry.lastmod is None or isinstance(entry.lastmod, float)
    assert len(found.problem) <= 400, found.problem
    assert parse_sitemap(gzip.compress(data), BASE, max_urls=MAX_URLS) == found  # gzip changes nothing
    assert isinstance(looks_like_sitemap(data), bool)
    when = parse_lastmod(data[:64].decode("utf-8", "replace"))
    assert when is None or isinstance(when, float)


def main() -> None:
    """Run libFuzzer with the command line's options."""
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

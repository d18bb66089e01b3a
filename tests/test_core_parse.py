"""The compiled core's parse of a page (native/src/parse.rs, harvestman._core.PageParser) against
crawl/parse.py's Python path, the reference: the same ParsedPage for the same page, on the
Chromium-checked corpus (Python's HTML docs: tests/data/docpages, and all of them where Debian's
python3.11-doc is installed, as bench/link_recall.py reads them), the benchmark web's pages, the WHATWG
URL tests as links, and generated HTML; what the core leaves to Python, Python parses."""

from __future__ import annotations

import gzip
import html
import html.entities
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench.synthweb import generate_web, host_addresses
from harvestman.crawl import parse
from harvestman.crawl.parse import parse_html
from harvestman.model.core import core
from harvestman.model.records import Link, ParsedPage
from tests.support.conformance import url_cases

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")  # the corpus bench/link_recall.py checks with Chromium


@pytest.fixture(scope="module")
def native() -> Any:
    """The core's parser, whatever HARVESTMAN_CORE says: these tests compare the two paths."""
    from harvestman.model import core as chosen

    try:
        from harvestman import _core
    except ImportError:
        pytest.skip("harvestman._core is not built (no Rust toolchain at pip install)")
    assert chosen.source_digest(ROOT / "native") == _core.SOURCE_DIGEST, "stale core: pip install -e ."
    return _core.PageParser(Link, parse.CORE_KINDS)


def both(native: Any, text: str, url: str, max_links: int = 1000) -> tuple[ParsedPage | None, ParsedPage]:
    """The core's page (None when it leaves it to Python) and the Python path's."""
    reference = parse._parse_python(text, url, max_links, 0, parse.SEGMENT_CHARS, False, False)
    fields = native.parse(text, url, max_links)
    if fields is None:
        return None, reference
    title, description, language, links, noindex, nofollow, base_url = fields
    return ParsedPage(title=title, description=description, language=language, links=links,
                      noindex=noindex, nofollow=nofollow, base_url=base_url), reference


def corpus() -> list[tuple[str, str]]:
    """(URL, HTML) of the Chromium-checked pages: the repository's six, and the installed docs."""
    pages = []
    for path in sorted((ROOT / "tests" / "data" / "docpages").glob("*.html.gz")):
        url = f"https://docs.python.org/3/{path.name.removesuffix('.gz').replace('_', '/', 1)}"
        pages.append((url, gzip.decompress(path.read_bytes()).decode("utf-8")))
    for path in sorted(DOCS.rglob("*.html")) if DOCS.is_dir() else ():
        pages.append((f"http://127.77.0.1/{path.relative_to(DOCS)}", path.read_text("utf-8", "replace")))
    return pages


def test_the_chromium_checked_corpus_parses_the_same(native: Any) -> None:
    answered = 0
    for url, text in corpus():
        got, reference = both(native, text, url)
        if got is not None:
            assert got == reference, url
            answered += 1
    assert answered >= 6  # all six of the repository's pages; 535 of 536 with the docs installed


def test_the_benchmark_web_parses_the_same(native: Any, tmp_path: Path) -> None:
    spec = generate_web(tmp_path / "web", host_addresses(3), 20, port=8080)
    for url in sorted(spec.links):
        host, path = url.removeprefix("http://").split("/", 1)
        text = (spec.root / host.split(":")[0] / (path or "index.html")).read_text()
        got, reference = both(native, text, url)
        assert got == reference, url


def test_whatwg_urls_as_links_resolve_the_same(native: Any) -> None:
    """Each URL test's input as an <a href>, <link rel=canonical> and meta refresh on a page at its
    base (http(s) bases), escaped as a page would write it, and as an <a href> raw."""
    answered = 0
    for case in url_cases():
        base = case.get("base") or "http://example.test/dir/page"
        if not base.startswith(("http://", "https://")):
            continue
        href, raw = html.escape(case["input"], quote=True), case["input"].replace('"', "%22")
        text = (f'<link rel=canonical href="{href}"><meta http-equiv=refresh content="0; url={href}">'
                f'<a href="{href}">x</a><a href="{href}" rel=nofollow>y</a><a href="{raw}">z</a>')
        got, reference = both(native, text, base)
        if got is not None:
            assert got == reference, case
            answered += 1
    assert answered > 500


def test_every_named_reference_decodes_the_same(native: Any) -> None:
    """Each of the 2,231 named character references (native/src/entities.rs) in a title and in an
    attribute, where one without ";" before "=" or an alphanumeric stays as written."""
    for name in html.entities.html5:
        ref = "&" + name
        text = f'<title>[{ref}]{ref}x</title><a href="/p?{ref}=1&q={ref}a&r={ref}">x</a>'
        got, reference = both(native, text, "http://h.test/")
        assert got == reference, name


# Pieces of HTML from which pages are drawn: the elements parse_html reads, with the attribute
# values, references and tree-construction cases where a tokenizer and a tree could part ways.
_URLS = st.sampled_from([
    "", " ", "/a", "b/c", "../d", "//other.test/e", "http://x.test/f", "HTTPS://Y.test/g?h=1&amp;i=2",
    "?q=1&copy=2", "&notit;", "#frag", "javascript:x()", "mailto:a@b", "&#x68;ttp://z.test/",
    "\t/tab\n", "/p&#13;q", "http://[::1]/v6", "/\u00fc", "http://xn--nxasmq6b.test/", "&amp", "&#128;",
    "data:text/html,x", "ftp://f.test/", "http://a.test:80/", "%2e%2E/x", "/a?b#c",
])
_REL = st.sampled_from(["", "nofollow", "NOFOLLOW noopener", "canonical", "next", "alternate",
                        "alternate stylesheet", "canonical nofollow", "\u00a0nofollow"])
_META = st.sampled_from([
    '<meta name=robots content="noindex, nofollow">', '<meta name="ROBOTS " content=none>',
    "<meta name=robots content=index,follow>", '<meta name=description content=" d  &amp; e ">',
    "<meta name=description content=''>", '<meta http-equiv=content-language content="de, en">',
    '<meta http-equiv=refresh content="5; URL=\'/r\'">', '<meta http-equiv=Refresh content="0;url=/s">',
    "<meta http-equiv=refresh content=3>", '<meta http-equiv=refresh content=" 1 , url = /t ">',
    "<meta http-equiv=refresh content='\u0663; url=/u'>",
])


def _element(draw: Any) -> str:
    kind = draw(st.integers(0, 33)) % 22  # the first twelve (links, meta, title) twice as often
    url, rel = draw(_URLS), draw(_REL)
    # Escaped as a careful page writes it, or raw, references and all ("&copy=2" stays as it is).
    url = html.escape(url, quote=True) if draw(st.booleans()) else url
    return [
        f'<a href="{url}">t</a>', f"<a href='{url}' rel='{rel}'>u", f'<area href="{url}" rel="{rel}">',
        f'<link rel="{rel}" href="{url}">', f'<iframe src="{url}"></iframe>', f'<frame src="{url}">',
        f'<base href="{url}">', draw(_META), "<title> T &amp;\r\n t &notit; </title>", "<html lang=' fr '>",
        "<html lang=en-GB>", "<select><option>o</select>", "<select>", "<svg><title>s</title>",
        "<svg><a href=sv>v</a></svg>", "<math><a xlink:href=m>m</a></math>", "<noscript>n</noscript>",
        "<noscript><a href=/ns>n</a></noscript>", "<template><a href=/tp></a></template>",
        "<script>var a = '<a href=/js>';</script>", "<textarea><a href=/ta></textarea>",
        "<table><a href=/tb><tr><td><a href=/td>",
    ][kind]


@st.composite
def _pages(draw: Any) -> str:
    return "".join(_element(draw) for _ in range(draw(st.integers(0, 12))))


# HARVESTMAN_PARSE_EXAMPLES=20000 for a longer hunt (no difference in 20,000 when this was written).
@settings(max_examples=int(os.environ.get("HARVESTMAN_PARSE_EXAMPLES", "400")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_pages(), max_links=st.integers(0, 6), url=st.sampled_from(["http://h.test/a/b", "https://h.test"]))
def test_generated_pages_parse_the_same(native: Any, text: str, max_links: int, url: str) -> None:
    got, reference = both(native, text, url, max_links)
    event("left to Python" if got is None else "answered by the core")
    if got is not None:
        assert got == reference


def test_parse_html_answers_from_the_core_when_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The crawl's parse (no text, no anchor texts) goes to the core when it is in use; a page with
    text, or one the core leaves, goes to Python."""
    calls: list[str] = []
    python = parse._parse_python

    def counted(text: str, *args: Any) -> ParsedPage:
        calls.append(text)
        return python(text, *args)

    monkeypatch.setattr(parse, "_parse_python", counted)
    page = "<title>t</title><a href=/x>x</a>"
    assert parse_html(page, "http://h.test/", with_text=False).links == (Link("http://h.test/x"),)
    assert calls == ([] if core is not None else [page])
    parse_html(page, "http://h.test/", with_text=True)
    parse_html("<noscript><a href=/y>y</a></noscript>", "http://h.test/", with_text=False)
    assert len(calls) == (2 if core is not None else 3)

"""HTML parsing: links of every kind, base href, meta robots, text, and hostile documents."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.crawl.parse import _segments, parse_html
from harvestman.model.records import Link, LinkKind

PAGE = "http://example.com/dir/page.html"

SAMPLE = """<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <title>  The   Sample
     Page </title>
  <meta name="Description" content="A page  for tests.">
  <meta name="viewport" content="width=device-width">
  <link rel="stylesheet" href="/style.css">
  <link rel="alternate stylesheet" href="/alt.css">
  <link rel="canonical" href="https://example.com/dir/page.html">
  <link rel="alternate" type="application/rss+xml" href="/feed.xml">
  <link rel="next" href="page2.html">
  <meta http-equiv="refresh" content="30; URL='/refreshed'">
  <style>body { color: red }</style>
  <script>var hidden = "<a href='/not-a-link'>";</script>
</head>
<body>
  <h1>Heading</h1>
  <p>First <a href="a.html">relative link</a> and <a href="/b.html#frag" rel="nofollow ugc">no follow</a>.</p>
  <a href="https://other.org/x">  other
     host </a>
  <a href="javascript:void(0)">js</a> <a href="mailto:a@b.c">mail</a> <a href="tel:123">tel</a>
  <a href="data:text/html,hi">data</a> <a href="ftp://files.example.com/">ftp</a> <a>no href</a>
  <map><area href="/area" alt="An area"></map>
  <iframe src="frame.html"></iframe>
  <noscript>enable scripts</noscript>
  <template><p>template text</p></template>
  <a href="a.html">relative link again</a>
</body>
</html>"""


def test_links_of_every_kind() -> None:
    page = parse_html(SAMPLE, PAGE)
    got = [(link.url, link.kind) for link in page.links]
    assert got == [
        ("https://example.com/dir/page.html", LinkKind.CANONICAL),
        ("http://example.com/feed.xml", LinkKind.ALTERNATE),
        ("http://example.com/dir/page2.html", LinkKind.NEXT),
        ("http://example.com/refreshed", LinkKind.META_REFRESH),
        ("http://example.com/dir/a.html", LinkKind.ANCHOR),
        ("http://example.com/b.html#frag", LinkKind.ANCHOR),  # resolved, not normalized
        ("https://other.org/x", LinkKind.ANCHOR),
        ("http://example.com/area", LinkKind.AREA),
        ("http://example.com/dir/frame.html", LinkKind.IFRAME),
    ]
    by_url = {link.url: link for link in page.links}
    assert by_url["http://example.com/b.html#frag"].nofollow
    assert not by_url["http://example.com/dir/a.html"].nofollow
    assert by_url["http://example.com/dir/a.html"].anchor == "relative link"  # first occurrence kept
    assert by_url["https://other.org/x"].anchor == "other host"
    assert by_url["http://example.com/area"].anchor == "An area"


def test_metadata_and_text() -> None:
    page = parse_html(SAMPLE, PAGE)
    assert page.title == "The Sample Page"
    assert page.description == "A page for tests."
    assert page.language == "en-GB"
    assert not page.noindex and not page.nofollow
    assert page.base_url == PAGE
    assert page.text.startswith("Heading First relative link and no follow .")
    for hidden in ("color: red", "hidden", "enable scripts", "template text"):
        assert hidden not in page.text


def test_base_href() -> None:
    html = '<base href="http://cdn.example.net/root/"><base href="/ignored/"><a href="x">x</a>'
    page = parse_html(html, PAGE)
    assert page.base_url == "http://cdn.example.net/root/"
    assert [link.url for link in page.links] == ["http://cdn.example.net/root/x"]
    html = '<base href="javascript:alert(1)//"><a href="x">x</a>'
    assert [link.url for link in parse_html(html, PAGE).links] == ["http://example.com/dir/x"]


def test_base_and_title_found_anywhere_in_one_pass() -> None:
    # <base> and <title> come from the same query as the links: a late <base> still applies to
    # the links before it, and the first <title> (even one inside <svg>) is the title.
    html = ('<a href="x">x</a><svg><title>Drawing</title></svg><title>Page</title>'
            '<base href="http://cdn.example.net/root/"><a href="y" rel="NoFollow">y</a>')
    page = parse_html(html, PAGE, with_text=False)
    assert page.base_url == "http://cdn.example.net/root/"
    assert [(link.url, link.nofollow) for link in page.links] == [
        ("http://cdn.example.net/root/x", False), ("http://cdn.example.net/root/y", True)]
    assert page.title == "Drawing"
    with_text = parse_html(html, PAGE)
    assert [(link.url, link.nofollow) for link in with_text.links] == [
        (link.url, link.nofollow) for link in page.links]
    assert (with_text.title, with_text.base_url) == (page.title, page.base_url)
    assert parse_html("<title> A \n b </title>", PAGE).title == "A b"


def test_rel_tokens_per_element() -> None:
    html = ('<link rel="Canonical NoFollow" href="/c"><link rel href="/none"><link href="/bare">'
            '<a href="/r" rel>r</a><area href="/ar" rel="nofollow"><iframe src="/i" rel="nofollow">')
    got = [(link.url, link.kind, link.nofollow) for link in parse_html(html, PAGE).links]
    assert got == [
        ("http://example.com/c", LinkKind.CANONICAL, True),
        ("http://example.com/r", LinkKind.ANCHOR, False),
        ("http://example.com/ar", LinkKind.AREA, True),
        ("http://example.com/i", LinkKind.IFRAME, False),
    ]


def test_meta_robots_and_content_language() -> None:
    page = parse_html('<meta name="ROBOTS" content="noindex, NoFollow">', PAGE)
    assert page.noindex and page.nofollow
    page = parse_html('<meta name="robots" content="none">', PAGE)
    assert page.noindex and page.nofollow
    page = parse_html('<meta name="robots" content="noindex">', PAGE)
    assert page.noindex and not page.nofollow
    page = parse_html('<meta name="googlebot" content="noindex">', PAGE)
    assert not page.noindex
    page = parse_html('<meta http-equiv="Content-Language" content="de, en">', PAGE)
    assert page.language == "de"


def test_meta_refresh_forms() -> None:
    for content, target in [
        ("0;url=/a", "http://example.com/a"),
        ("5; URL = 'b.html'", "http://example.com/dir/b.html"),
        ("3,url= /c", "http://example.com/c"),
        ("1; http://other.org/d", "http://other.org/d"),
    ]:
        page = parse_html(f'<meta http-equiv="refresh" content="{content}">', PAGE)
        assert [link.url for link in page.links] == [target], content
    assert parse_html('<meta http-equiv="refresh" content="10">', PAGE).links == ()


def test_followed_occurrence_clears_nofollow() -> None:
    page = parse_html('<a href="/x" rel="nofollow">a</a><a href="/x">b</a>', PAGE)
    assert len(page.links) == 1
    assert not page.links[0].nofollow
    assert page.links[0].anchor == "b"


def test_links_capped_and_deduplicated() -> None:
    html = "".join(f'<a href="/p{i % 3000}">x</a>' for i in range(100_000))
    page = parse_html(html, PAGE, max_links=1000)
    assert len(page.links) == 1000
    assert page.links[0].url == "http://example.com/p0"
    assert len({link.url for link in page.links}) == 1000
    assert parse_html(html, PAGE, max_links=0).links == ()


@pytest.mark.serial  # a wall-clock bound
def test_deeply_nested_elements_parse_quickly() -> None:
    for html in (
        "<div>" * 100_000 + '<a href="/deep">deep</a>' + "</div>" * 100_000,
        "<section><ul><pre>" * 40_000 + '<a href="/deep">deep</a>',
        "<span>" * 50_000 + "<div>" * 50_000 + '<a href="/deep">deep</a>',
    ):
        started = time.perf_counter()
        page = parse_html(html, PAGE)
        assert time.perf_counter() - started < 3.0
        assert [link.url for link in page.links] == ["http://example.com/deep"]
        assert "deep" in page.text


@pytest.mark.serial  # a wall-clock bound
def test_huge_text_nul_bytes_and_surrogates() -> None:
    started = time.perf_counter()
    page = parse_html("<title>t</title><p>" + "word " * 2_000_000, PAGE)
    assert len(page.text) <= 1_000_000
    assert page.text.startswith("word word")
    page = parse_html('<a href="/a\x00b">x\x00y</a>\x00', PAGE)
    assert len(page.links) == 1
    page = parse_html('<a href="/ok">\udcff</a><p>\ud800</p>', PAGE)
    assert [link.url for link in page.links] == ["http://example.com/ok"]
    assert time.perf_counter() - started < 5.0


def test_malformed_html() -> None:
    for html in ["", "<", "<a href=", "<a href='/x", "</p></div></html>", "<html><frameset><frame src=f>",
                 "<svg><a href='/svg'>s</a></svg>", "<!-- <a href='/c'> -->", "\ufeff<a href=/bom>"]:
        page = parse_html(html, PAGE)
        assert all(link.url.startswith("http") for link in page.links)
    page = parse_html("<frameset><frame src='f1'><frame src='f2'></frameset>", PAGE)
    assert [(link.url, link.kind) for link in page.links] == [
        ("http://example.com/dir/f1", LinkKind.FRAME), ("http://example.com/dir/f2", LinkKind.FRAME)]
    assert page.text == ""


def test_href_is_trimmed_as_the_url_standard_trims() -> None:
    # C0 controls and spaces go; a no-break space is part of the URL and is percent-encoded.
    page = parse_html('<a href="\t /a \n">x</a><a href="/b\u00a0">y</a>', PAGE)
    assert [link.url for link in page.links] == ["http://example.com/a", "http://example.com/b%C2%A0"]


def test_bad_page_url_keeps_absolute_links() -> None:
    page = parse_html('<a href="/rel">r</a><a href="http://abs.example/">a</a>', "not a url")
    assert [link.url for link in page.links] == ["http://abs.example/"]


_html = st.lists(
    st.one_of(
        st.sampled_from([
            "<a href='", "'>", "<div>", "</div>", "<base href=", "<meta http-equiv=refresh content='0;url=",
            "<link rel=canonical href=", "<iframe src=", "<script>", "</script>", "<title>", "&amp;",
            "\x00", "javascript:", "//h/", "../", "#", "<!--", "-->", "<template>", ">",
        ]),
        st.text(max_size=10),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_html, st.integers(min_value=0, max_value=5))
def test_never_raises_and_output_is_bounded(html: str, max_links: int) -> None:
    page = parse_html(html, PAGE, max_links=max_links, max_text=50)
    assert len(page.links) <= max_links
    assert len(page.text) <= 50
    assert all(link.url.startswith(("http://", "https://")) for link in page.links)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(text: str) -> None:
    parse_html(text, PAGE)


def test_links_past_the_first_pieces_are_found_and_memory_stays_bounded() -> None:
    import tracemalloc

    page = "<html><body>" + "<a href='/x'>x</a> filler text\n" * 600_000 + "<a href='/late'>late</a>"
    assert len(page) > 16 * 1024 * 1024
    tracemalloc.start()
    parsed = parse_html(page, "http://a.test/", segment_chars=2 * 1024 * 1024)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [link.url for link in parsed.links] == ["http://a.test/x", "http://a.test/late"]
    # Memory follows the piece, not the page: ~64 MiB for 2 MiB this dense in links (65k anchors),
    # where the whole 17 MiB page parsed at once takes about eight times as much.
    assert peak < 100 * 1024 * 1024, peak


def test_a_link_beyond_2_mib_is_found_with_its_anchor_text() -> None:
    html = "<title>t</title><p>" + "filler " * 400_000 + "<a href='/far' rel=nofollow>far <b>away</b></a>"
    assert len(html) > 2 * 1024 * 1024
    far = Link("http://example.com/far", LinkKind.ANCHOR, "far away", True)
    assert parse_html(html, PAGE).links == (far,)


def test_a_20000_link_page_is_kept_whole_and_the_cap_applies_beyond() -> None:
    html = "<ul>" + "".join(f'<li><a href="/p{i}">page {i}</a>' for i in range(20_001)) + "</ul>"
    page = parse_html(html, PAGE, with_text=False)
    assert len(page.links) == 20_000
    assert page.links[-1].url == "http://example.com/p19999"
    assert parse_html(html, PAGE, max_links=20_001, with_text=False).links[-1].url == "http://example.com/p20000"
    assert len(parse_html(html, PAGE, max_links=500).links) == 500


def test_pieces_are_cut_only_between_tags() -> None:
    # Cuts would fall inside each of these if they were made at any "<a": none may yield a link the
    # whole document does not have, lose one, or split one's anchor text.
    tricky = [
        "<!-- <a href='/comment'>c</a> -->", "<script>var s = '<a href=\"/script\">';</script>",
        "<textarea><a href='/textarea'></textarea>", "<img alt='x <a href=/attr>'>", "a < b ",
        "<style>a{}<a href=/style></style>", "<noscript><a href='/noscript'>n</a></noscript>",
        "<!--><a href='/after-short-comment'>s</a>", "<p><a href='/nested'>one <i>two <b>three</b></i></a>",
    ]
    html = "<title>t</title>" + "".join(f"{t}<a href='/l{i}'>link {i}</a>" for i, t in enumerate(tricky * 30))
    whole = parse_html(html, PAGE, segment_chars=len(html))
    for size in (1, 7, 50, 333):
        assert parse_html(html, PAGE, segment_chars=size).links == whole.links, size
    assert "http://example.com/comment" not in {link.url for link in whole.links}




def test_links_as_a_browser_lists_them_beside_other_kinds() -> None:
    # <a href=""> is the page itself (document.links has it), the fragment dropped; a <link rel=next>
    # to the same URL as an <a> must not hide the anchor; an empty <iframe src> is about:blank.
    html = ('<link rel="next" href="next.html"><a href="">self</a><a href=" ">blank</a>'
            '<a href="next.html">next</a><iframe src=""></iframe>')
    page = parse_html(html, PAGE + "#top")
    assert [(link.url, link.kind) for link in page.links] == [
        ("http://example.com/dir/next.html", LinkKind.NEXT),
        (PAGE, LinkKind.ANCHOR),
        ("http://example.com/dir/next.html", LinkKind.ANCHOR),
    ]


def test_a_long_page_without_anchors_is_parsed_in_pieces_too() -> None:
    # No <a> to cut before: pieces are cut before another tag, or in bare text; links of other
    # kinds past 2 MiB are seen, and the visible text of every piece is read.
    tags = "<p>" + "word " * 500_000 + "<p>" + '<iframe src="/frame"></iframe>'
    text = "<p>" + "word " * 1_000_000 + '<area href="/area" alt="x">'
    for html in (tags, text):
        pieces = list(_segments(html, 2 * 1024 * 1024))
        assert len(pieces) > 1 and "".join(pieces) == html
        assert len(parse_html(html, PAGE).links) == 1
    assert parse_html(text, PAGE, max_text=5_100_000).text.count("word") == 1_000_000


_FRAGMENTS = ['<a href="/x">x</a>', '<a href="">e</a>', '<a href=" http://h/y ">y</a>',
              '<a rel="NoFollow" href="/n">', '<a href="/n">n</a>', '<a href="//h2/z">',
              '<a href="mailto:a@b">', '<base href="http://other/">',
              '<a href="https://s/q?a#f">', "<a href=?q>", '<a href="#top">', "<a>", '<A HREF="/U">',
              '<a href="\tjavascript:x">', '<area href="/ar">', "<link rel=next href=/nx>",
              '<a href="/x" rel="nofollow">', '<a href="page2.html">']


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30), st.integers(min_value=1, max_value=40))
def test_links_are_the_same_with_and_without_anchor_texts(fragments: list[str], cap: int) -> None:
    # Without anchor texts, <a> elements take a path of their own (parse.py, _Page.read): the
    # links it keeps must be those the general path keeps, anchor texts aside.
    html = "".join(fragments)
    bare = parse_html(html, "http://a.test/dir/page.html", with_text=False, max_links=cap)
    full = parse_html(html, "http://a.test/dir/page.html", with_text=False, anchors=True, max_links=cap)
    assert bare.links == tuple(link._replace(anchor="") for link in full.links)

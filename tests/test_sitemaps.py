"""Sitemaps read by crawl/sitemaps.py: forms, limits, lastmod, namespaces, bad and hostile XML."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.crawl.robots_gate import RobotsGate
from harvestman.crawl.sitemaps import (
    MAX_SITEMAP_BYTES,
    MAX_SITEMAP_URLS,
    SitemapPage,
    gunzip,
    lastmod_metadata,
    lastmod_text,
    looks_like_sitemap,
    parse_lastmod,
    parse_sitemap,
    sitemap_depths,
    sitemap_outlinks,
)
from harvestman.fetch.transport import MemoryTransport, make_response
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import FetchResult, Link, LinkKind, NewUrl
from harvestman.policy.scope import Scope
from harvestman.store.linkcodec import decode_links, encode_links

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
BASE = "http://a.test/sitemap.xml"


def urlset(*entries: str, ns: str = NS) -> bytes:
    body = "".join(f"<url><loc>{loc}</loc></url>" for loc in entries)
    xmlns = f' xmlns="{ns}"' if ns else ""
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset{xmlns}>{body}</urlset>'.encode()


def utc(*args: int) -> float:
    return dt.datetime(*args, tzinfo=dt.UTC).timestamp()


# ----- forms ---------------------------------------------------------------------------------------


def test_urlset_pages_with_lastmod_normalized_and_resolved() -> None:
    doc = f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url><loc>http://A.test:80/x?b=1&amp;jsessionid=9</loc><lastmod>2024-05-01</lastmod>
       <changefreq>daily</changefreq><priority>0.5</priority>
       <image:image><image:loc>http://a.test/picture.png</image:loc></image:image></url>
  <url><loc>  /relative#frag  </loc></url>
  <url><loc>mailto:someone@a.test</loc></url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>""".encode()
    found = parse_sitemap(doc, BASE)
    assert [e.url for e in found.pages] == ["http://a.test/x?b=1", "http://a.test/relative"]
    assert found.pages[0].lastmod == utc(2024, 5, 1)
    assert found.pages[1].lastmod is None
    assert found.sitemaps == () and found.problem == "" and found.invalid == 1


def test_sitemap_index_lists_child_sitemaps() -> None:
    doc = f"""<sitemapindex xmlns="{NS}">
  <sitemap><loc>http://a.test/s1.xml.gz</loc><lastmod>2024-02-03T04:05:06Z</lastmod></sitemap>
  <sitemap><loc>http://b.test/s2.xml</loc></sitemap>
</sitemapindex>""".encode()
    found = parse_sitemap(doc, BASE)
    assert found.pages == ()
    assert [(e.url, e.lastmod) for e in found.sitemaps] == [
        ("http://a.test/s1.xml.gz", utc(2024, 2, 3, 4, 5, 6)), ("http://b.test/s2.xml", None)]


@pytest.mark.parametrize("doc", [
    urlset("http://a.test/1", ns=""),  # no namespace
    urlset("http://a.test/1", ns="http://www.google.com/schemas/sitemap/0.84"),  # the old one
    f'<sm:urlset xmlns:sm="{NS}"><sm:url><sm:loc>http://a.test/1</sm:loc></sm:url></sm:urlset>'.encode(),
    b"\xef\xbb\xbf" + urlset("http://a.test/1"),  # a BOM
    urlset("http://a.test/1").decode().replace("UTF-8", "UTF-16").encode("utf-16"),
    f'<urlset xmlns="{NS}"><url><loc><![CDATA[http://a.test/1]]></loc></url></urlset>'.encode(),
])
def test_namespaces_and_encodings(doc: bytes) -> None:
    assert [e.url for e in parse_sitemap(doc, BASE).pages] == ["http://a.test/1"]


def test_a_loc_of_another_namespace_is_not_the_page() -> None:
    doc = (f'<urlset xmlns="{NS}" xmlns:x="urn:x"><url><x:loc>http://a.test/no</x:loc>'
           f'<loc>http://a.test/yes</loc></url><x:url><loc>http://a.test/no2</loc></x:url></urlset>').encode()
    assert [e.url for e in parse_sitemap(doc, BASE).pages] == ["http://a.test/yes"]


def test_gzip_is_sniffed_not_named() -> None:
    doc = gzip.compress(urlset("http://a.test/1", "http://a.test/2"))
    found = parse_sitemap(doc, "http://a.test/whatever")
    assert [e.url for e in found.pages] == ["http://a.test/1", "http://a.test/2"] and not found.problem


def test_text_sitemap_one_url_a_line() -> None:
    text = b"http://a.test/1\r\n\n  https://a.test/2  \nnot a url\nftp://a.test/3\n"
    found = parse_sitemap(text, "http://a.test/sitemap.txt")
    assert [e.url for e in found.pages] == ["http://a.test/1", "https://a.test/2"]
    assert found.invalid == 2 and not found.problem
    assert [e.url for e in parse_sitemap(gzip.compress(text), BASE).pages] == [
        "http://a.test/1", "https://a.test/2"]


# ----- lastmod -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("2024", utc(2024, 1, 1)),
    ("2024-05", utc(2024, 5, 1)),
    ("2024-05-01", utc(2024, 5, 1)),
    (" 2024-05-01 ", utc(2024, 5, 1)),
    ("2024-05-01T10:20Z", utc(2024, 5, 1, 10, 20)),
    ("2024-05-01T10:20:30Z", utc(2024, 5, 1, 10, 20, 30)),
    ("2024-05-01T10:20:30.25Z", utc(2024, 5, 1, 10, 20, 30) + 0.25),
    ("2024-05-01T10:20:30+02:00", utc(2024, 5, 1, 8, 20, 30)),
    ("2024-05-01T10:20:30-0130", utc(2024, 5, 1, 11, 50, 30)),
    ("2024-05-01t10:20:30z", utc(2024, 5, 1, 10, 20, 30)),
    ("2024-05-01 10:20:30", utc(2024, 5, 1, 10, 20, 30)),  # no zone: UTC
    ("2024-02-30", None),
    ("2024-13-01", None),
    ("2024-05-01T25:00Z", None),
    ("2024-05-01T10:20:30+24:00", None),
    ("yesterday", None),
    ("", None),
    ("05/01/2024", None),
])
def test_lastmod_forms(text: str, expected: float | None) -> None:
    assert parse_lastmod(text) == expected


@given(st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(9998, 1, 1),
                    timezones=st.just(dt.UTC)))
def test_lastmod_text_reads_back(when: dt.datetime) -> None:
    epoch = when.timestamp()
    assert parse_lastmod(lastmod_text(epoch)) == pytest.approx(epoch, abs=1e-6)


def test_lastmod_metadata_for_followed_urls_only() -> None:
    doc = (f'<urlset xmlns="{NS}"><url><loc>http://a.test/1</loc><lastmod>2024-05-01</lastmod></url>'
           f'<url><loc>http://a.test/2</loc></url>'
           f'<url><loc>http://b.test/3</loc><lastmod>2024-05-01</lastmod></url></urlset>').encode()
    found = parse_sitemap(doc, BASE)
    assert lastmod_metadata(found, ["http://a.test/1", "http://a.test/2"]) == [
        ("http://a.test/1", {"lastmod": "2024-05-01T00:00:00Z"})]


# ----- limits and faults ---------------------------------------------------------------------------


def test_more_than_50000_urls_keeps_the_first_50000() -> None:
    doc = urlset(*(f"http://a.test/{i}" for i in range(MAX_SITEMAP_URLS + 2)))
    found = parse_sitemap(doc, BASE)
    assert len(found.pages) == MAX_SITEMAP_URLS
    assert found.pages[-1].url == f"http://a.test/{MAX_SITEMAP_URLS - 1}"
    assert f"more than {MAX_SITEMAP_URLS} URLs" in found.problem


def test_exactly_the_limit_is_no_problem() -> None:
    found = parse_sitemap(urlset(*(f"http://a.test/{i}" for i in range(10))), BASE, max_urls=10)
    assert len(found.pages) == 10 and not found.problem


def test_text_sitemap_limit() -> None:
    text = "\n".join(f"http://a.test/{i}" for i in range(12)).encode()
    found = parse_sitemap(text, BASE, max_urls=10)
    assert len(found.pages) == 10 and "kept the first 10" in found.problem


def test_gzip_bomb_stops_at_50_mb_decompressed() -> None:
    head = urlset("http://a.test/1")[:-len(b"</urlset>")]
    # 60 MB of spaces inside the root: compresses to ~60 KB.
    bomb = gzip.compress(head + b" " * (60 * 1024 * 1024) + b"<url><loc>http://a.test/2</loc></url></urlset>")
    assert len(bomb) < 200_000
    data, problem = gunzip(bomb)
    assert len(data) == MAX_SITEMAP_BYTES and "over" in problem
    found = parse_sitemap(bomb, BASE)
    assert [e.url for e in found.pages] == ["http://a.test/1"]  # what came before the cut
    assert f"over {MAX_SITEMAP_BYTES} bytes decompressed" in found.problem


def test_gunzip_limit_and_bad_data() -> None:
    assert gunzip(gzip.compress(b"x" * 100), limit=10) == (
        b"x" * 10, "over 10 bytes decompressed: read the first 10")
    assert gunzip(b"plain") == (b"plain", "")
    data, problem = gunzip(b"\x1f\x8bnot gzip at all")
    assert data == b"" and problem.startswith("bad gzip data")
    found = parse_sitemap(b"\x1f\x8bnot gzip at all", BASE)
    assert found.pages == () and found.problem.startswith("bad gzip data")
    cut = gzip.compress(urlset("http://a.test/1", "http://a.test/2"))[:-12]
    assert "ends early" in parse_sitemap(cut, BASE).problem


def test_bad_xml_keeps_what_came_before_the_fault() -> None:
    doc = urlset("http://a.test/1", "http://a.test/2")[:-20] + b"<url><loc>http://a.test/3</lo"
    found = parse_sitemap(doc, BASE)
    assert [e.url for e in found.pages] == ["http://a.test/1"]
    assert found.problem.startswith("bad XML:")


@pytest.mark.parametrize(("doc", "problem"), [
    (b"<urlset><url><loc>http://a.test/1</loc></url>", "bad XML"),  # the root never ends
    (b"<urlset><url><loc>http://a.test/&nbsp;</loc></url></urlset>", "bad XML"),  # undefined entity
    (b"<html><body><a href='http://a.test/1'>x</a></body></html>",
     "not a sitemap: the root element is <html>"),
    (b"<?xml version='1.0'?>", "bad XML"),
    (b"<", "bad XML"),
    (b'<?xml version="1.0" encoding="UTF-4"?><urlset/>', "bad XML: unknown encoding"),  # found by fuzz
])
def test_faults_are_problems_never_exceptions(doc: bytes, problem: str) -> None:
    found = parse_sitemap(doc, BASE)
    assert found.problem.startswith(problem), found.problem
    assert found.pages == () or found.problem.startswith("bad XML")


def test_billion_laughs_is_refused_before_any_expansion() -> None:
    entities = "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    doc = (f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY lol0 "lol">{entities}]>'
           f'<urlset xmlns="{NS}"><url><loc>http://a.test/&lol9;</loc></url></urlset>').encode()
    started = time.process_time()
    found = parse_sitemap(doc, BASE)
    assert found.pages == () and found.problem.startswith("refused: DTDForbidden")
    assert time.process_time() - started < 5  # a guard against a hang, not a timing figure
    assert looks_like_sitemap(doc)  # read as a sitemap, so the refusal is recorded on its URL


@pytest.mark.parametrize("doctype", [
    '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
    '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "http://127.0.0.1:9/leak">]>',
    '<!DOCTYPE urlset [<!ENTITY % p SYSTEM "http://127.0.0.1:9/evil.dtd"> %p;]>',
    '<!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/sitemap.dtd">',
])
def test_external_entities_and_dtds_are_refused(doctype: str) -> None:
    doc = f'<?xml version="1.0"?>{doctype}<urlset xmlns="{NS}"><url><loc>http://a.test/&xxe;</loc></url></urlset>'
    found = parse_sitemap(doc.encode(), BASE)
    assert found.pages == () and found.problem.startswith("refused: DTDForbidden")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_give_a_record(body: bytes) -> None:
    found = parse_sitemap(body, BASE)
    assert all(e.url.startswith(("http://", "https://")) for e in (*found.pages, *found.sitemaps))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.from_regex(r"/[a-z0-9]{1,8}", fullmatch=True), max_size=30), st.integers(1, 40))
def test_urlset_gives_its_urls_in_order_up_to_the_cap(paths: list[str], cap: int) -> None:
    urls = [f"http://a.test{p}" for p in paths]
    found = parse_sitemap(urlset(*urls), BASE, max_urls=cap)
    assert [e.url for e in found.pages] == urls[:cap]
    assert bool(found.problem) == (len(urls) > cap)


# ----- sniffing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "expected"), [
    (urlset("http://a.test/1"), True),
    (gzip.compress(urlset("http://a.test/1"), mtime=0), True),
    (f'<!-- made by hand --><sitemapindex xmlns="{NS}"></sitemapindex>'.encode(), True),
    (b'<?xml version="1.0"?>\n<sm:urlset xmlns:sm="x">', True),
    (b"<html><p>&lt;urlset&gt;</p></html>", False),
    (b"<rss><channel><urlset>", False),
    (b"http://a.test/1\n", False),
    (b"\x89PNG\r\n", False),
    (b"\x1f\x8bnot gzip", False),
    (b"<urlsetx>", False),
])
def test_looks_like_sitemap(body: bytes, expected: bool) -> None:
    assert looks_like_sitemap(body) is expected


# ----- the crawl's side ----------------------------------------------------------------------------


def _result(body: bytes, url: str = BASE, content_type: str = "application/xml") -> FetchResult:
    return FetchResult(url, url, status=200, content_type=content_type, body=body)


def test_sitemap_outlinks_scope_depth_and_children() -> None:
    doc = (f'<sitemapindex xmlns="{NS}"><sitemap><loc>http://a.test/child.xml</loc></sitemap>'
           f'<sitemap><loc>http://other.test/child.xml</loc></sitemap></sitemapindex>').encode()
    links = CrawlConfig(max_depth=2).links
    scope = Scope(["http://a.test/"])
    page, hosts = sitemap_outlinks(_result(doc), 2, links, scope)
    assert isinstance(page, SitemapPage)
    assert hosts == {"http://a.test/child.xml": "a.test"}  # children followed at the deepest depth too
    assert page.children == frozenset(hosts)
    assert page.links == (Link("http://a.test/child.xml", LinkKind.SITEMAP),
                          Link("http://other.test/child.xml", LinkKind.SITEMAP))
    pages = urlset("http://a.test/p1", "http://other.test/p2")
    assert sitemap_outlinks(_result(pages), 1, links, scope)[1] == {"http://a.test/p1": "a.test"}
    assert sitemap_outlinks(_result(pages), 2, links, scope)[1] == {}  # pages would be too deep
    excluding = Scope(["http://a.test/"], exclude=["p1"])
    assert sitemap_outlinks(_result(pages), 0, links, excluding)[1] == {}


def test_sitemap_outlinks_records_a_truncated_body() -> None:
    result = FetchResult(BASE, BASE, status=200, content_type="application/xml",
                         body=urlset("http://a.test/1")[:40], truncated=True)
    page, _ = sitemap_outlinks(result, 0, CrawlConfig().links, Scope([BASE]))
    assert page.sitemap.problem.startswith("body cut at max_size")


def test_child_sitemaps_keep_their_depth() -> None:
    page = SitemapPage(children=frozenset({"http://a.test/child.xml"}))
    found = [NewUrl("http://a.test/child.xml", "a.test", 4, 0.0, BASE, 4.0),
             NewUrl("http://a.test/page", "a.test", 4, 0.0, BASE, 4.0)]
    assert [(u.url, u.depth, u.priority) for u in sitemap_depths(found, page, 3)] == [
        ("http://a.test/child.xml", 3, 3.0), ("http://a.test/page", 4, 4.0)]


def test_link_graph_keeps_the_sitemap_kind() -> None:
    links = [Link("http://a.test/1", LinkKind.SITEMAP), Link("http://a.test/2")]
    assert list(decode_links(encode_links(links))) == [
        ("http://a.test/1", "", LinkKind.SITEMAP, False), ("http://a.test/2", "", LinkKind.ANCHOR, False)]


def test_sitemaps_setting_is_checked() -> None:
    assert CrawlConfig().sitemaps == "robots"
    assert CrawlConfig(sitemaps="probe").links.sitemaps == "probe"
    with pytest.raises(ConfigError, match="sitemaps must be one of robots, probe, off"):
        CrawlConfig(sitemaps="always")


# ----- robots.txt's Sitemap lines, and the probe -----------------------------------------------------


@pytest.mark.parametrize(("mode", "obey", "expected"), [
    ("robots", True, [("http://a.test/s.xml", "http://a.test/robots.txt"),
                      ("https://cdn.test/s2.xml.gz", "http://a.test/robots.txt")]),
    ("probe", True, [("http://a.test/s.xml", "http://a.test/robots.txt"),
                     ("https://cdn.test/s2.xml.gz", "http://a.test/robots.txt"),
                     ("http://a.test/sitemap.xml", "http://a.test/robots.txt")]),
    ("off", True, []),
    ("robots", False, []),  # robots.txt is not read: nothing names a sitemap
    ("probe", False, [("http://a.test/sitemap.xml", "http://a.test/robots.txt")]),
])
def test_robots_gate_gives_each_origins_sitemaps_once(mode: str, obey: bool,
                                                      expected: list[tuple[str, str]]) -> None:
    robots = b"User-agent: *\nDisallow: /private/\nSitemap: http://a.test/s.xml\nSitemap: https://cdn.test/s2.xml.gz\n"
    transport = MemoryTransport({"http://a.test/robots.txt": make_response("http://a.test/robots.txt", 200,
                                                                            body=robots)})
    cfg = CrawlConfig(obey_robots=obey, sitemaps=mode)
    gate = RobotsGate(transport, cfg.robots, cfg.fetch, cfg.politeness, sitemaps=mode)

    async def check_twice() -> list[tuple[str, str]]:
        await gate.check("http://a.test/1")
        first = gate.take_sitemaps()
        await gate.check("http://a.test/2")
        assert gate.take_sitemaps() == [] and gate.found_sitemaps == []
        return first

    assert asyncio.run(check_twice()) == expected

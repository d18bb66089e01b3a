"""Feeds and PDF as documents with links: parsed by content type (crawl/documents.py), unit by unit
and in a real crawl of an nginx-served site whose feeds and PDF link pages nothing else links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvestman.crawl.documents import DEFAULT_PARSERS, FeedParser, PdfParser, parse_document
from harvestman.crawl.pagelinks import outlinks
from harvestman.model.config import CrawlConfig
from harvestman.model.records import FetchResult, LeasedUrl, LinkKind, UrlState
from harvestman.policy.outcome import decide
from harvestman.policy.scope import Scope
from tests.support.crawlcheck import consistent_records, run_cli
from tests.support.docsite import write_doc_site
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.pdfgen import make_pdf

HOST = "127.1.40.1"
BASE = "http://docs.test"


def _result(body: bytes, content_type: str, url: str = f"{BASE}/doc", status: int = 200) -> FetchResult:
    text = None if content_type == "application/pdf" else body.decode("utf-8", "replace")
    return FetchResult(url, url, status=status, content_type=content_type, body=body, text=text,
                       is_binary=text is None)


def test_an_rss_feed_gives_its_entries_links_and_its_title() -> None:
    body = (b'<?xml version="1.0"?><rss version="2.0"><channel><title>News</title><link>/</link>'
            b"<item><link>a.html</link></item><item><guid>http://docs.test/b.html</guid></item>"
            b'<item><guid isPermaLink="false">opaque-id</guid></item></channel></rss>')
    parsed = FeedParser().parse(_result(body, "application/rss+xml", f"{BASE}/feeds/rss"), max_links=100,
                                with_text=False)
    assert parsed is not None and not parsed.error
    assert parsed.title == "News"
    entries = [link.url for link in parsed.links if link.kind is LinkKind.FEED_ENTRY]
    assert entries == [f"{BASE}/feeds/a.html", f"{BASE}/b.html"]  # relative resolved; opaque guid skipped
    assert f"{BASE}/" in [link.url for link in parsed.links]


def test_xml_that_is_no_feed_is_left_alone_and_a_feed_served_as_xml_is_read() -> None:
    urlset = b'<?xml version="1.0"?><urlset xmlns="x"><url><loc>http://docs.test/a</loc></url></urlset>'
    assert parse_document(_result(urlset, "application/xml"), DEFAULT_PARSERS, max_links=10,
                          with_text=False) is None
    atom = (b'<?xml version="1.0"?>\n<!-- a comment --><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>'
            b'<entry><link href="http://docs.test/e"/></entry></feed>')
    parsed = parse_document(_result(atom, "text/xml"), DEFAULT_PARSERS, max_links=10, with_text=False)
    assert parsed is not None and [link.url for link in parsed.links] == ["http://docs.test/e"]


def test_a_feed_declaring_entities_is_refused_not_expanded() -> None:
    bomb = (b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            b"<rss version='2.0'><channel><title>&b;</title></channel></rss>")
    parsed = parse_document(_result(bomb, "application/rss+xml"), DEFAULT_PARSERS, max_links=10,
                            with_text=False)
    assert parsed is not None and "entities" in parsed.error and not parsed.title


def test_a_pdf_gives_its_title_links_and_text_within_its_page_cap() -> None:
    pdf = make_pdf([["first page words"], ["second page words"]], title="Doc title",
                   links=["http://docs.test/linked", "mailto:x@y.z"])
    parsed = PdfParser().parse(_result(pdf, "application/pdf"), max_links=10, with_text=True)
    assert parsed is not None and not parsed.error
    assert parsed.title == "Doc title"
    found = [(link.url, link.kind) for link in parsed.links]
    assert found == [("http://docs.test/linked", LinkKind.DOCUMENT)]
    assert "first page words" in parsed.text and "second page words" in parsed.text
    capped = PdfParser(max_pages=1).parse(_result(pdf, "application/pdf"), max_links=10, with_text=True)
    assert capped is not None and "second page" not in capped.text
    no_text = PdfParser().parse(_result(pdf, "application/pdf"), max_links=10, with_text=False)
    assert no_text is not None and no_text.text == "" and no_text.links == parsed.links


def test_a_pdf_over_its_size_cap_or_broken_is_a_parse_error() -> None:
    pdf = make_pdf([["x"]], title="t")
    big = PdfParser(max_bytes=len(pdf) - 1).parse(_result(pdf, "application/pdf"), max_links=10,
                                                   with_text=False)
    assert big is not None and "pdf_max_bytes" in big.error
    for junk in (b"%PDF-1.4\ngarbage", b"", b"\x00" * 100, pdf[: len(pdf) // 2]):
        parsed = parse_document(_result(junk or b"x", "application/pdf"), DEFAULT_PARSERS, max_links=10,
                                with_text=True)
        assert parsed is not None  # no exception escapes
        if not parsed.links:
            assert parsed.error or parsed.title == ""


@pytest.mark.parametrize("content_type", ["application/pdf", "application/rss+xml"])
def test_a_parse_error_is_recorded_on_the_fetched_url(content_type: str) -> None:
    result = _result(b"not a document <<<", content_type)
    cfg = CrawlConfig(seeds=(BASE,))
    parsed, hosts = outlinks(result, 0, cfg.links, Scope([BASE]), {}, with_text=False)
    assert parsed is not None and parsed.error and hosts == {}
    decision = decide(result, LeasedUrl(result.url, "docs.test", 0, 0, 0.0), 0.0, cfg.politeness,
                      parse_error=parsed.error)
    assert decision.outcome.state == UrlState.FETCHED
    assert decision.outcome.error_class == "parse" and decision.outcome.error_message


def test_html_and_unknown_types_take_their_old_paths() -> None:
    cfg = CrawlConfig(seeds=(BASE,))
    html = _result(b'<a href="/x">x</a>', "text/html")
    parsed, hosts = outlinks(html, 0, cfg.links, Scope([BASE]), {}, with_text=False)
    assert parsed is not None and list(hosts) == [f"{BASE}/x"]
    for ctype in ("image/png", "text/plain", "application/json"):
        assert outlinks(_result(b"http://docs.test/y", ctype), 0, cfg.links, Scope([BASE]), {},
                        with_text=False) == (None, {})


@pytest.mark.parametrize("workers", [1, 2])
def test_a_crawl_follows_feed_entries_and_pdf_links_and_records_broken_documents(
        tmp_path: Path, workers: int) -> None:
    require_nginx()
    port = free_port(HOST)
    base = f"http://{HOST}:{port}"
    roles = write_doc_site(tmp_path / "www" / HOST, base)
    out = tmp_path / "out"
    with NginxServer(tmp_path / "www", [HOST], port):
        done = run_cli("crawl", f"{base}/", "--out", str(out), "--allow-net", "127.1.0.0/16", "--quiet",
                       "--workers", str(workers))
        links = run_cli("export", str(out), "--what", "links", "--format", "jsonl",
                        "--output", str(tmp_path / "links.jsonl"))
    assert done.returncode == 0, done.stderr
    assert links.returncode == 0, links.stderr
    records = consistent_records(out)
    for path in (*roles["feed_entries"].split(), roles["pdf_link"]):
        assert records[base + path].state == UrlState.FETCHED, path  # reached only through a feed or the PDF
    assert base + roles["not_a_feed"] not in records  # other XML is not read as a feed
    assert records[f"{base}/feed.rss"].title == "The RSS feed"
    assert records[f"{base}/feed.atom"].title == "The Atom feed"
    assert records[f"{base}/doc.pdf"].title == "The PDF title"
    for broken in ("/broken.pdf", "/broken.rss"):
        record = records[base + broken]
        assert record.state == UrlState.FETCHED and record.error_class == "parse", record
        assert record.error_message
    assert not records[f"{base}/feed.rss"].error_class and not records[f"{base}/doc.pdf"].error_class
    rows = [json.loads(line) for line in (tmp_path / "links.jsonl").read_text().splitlines()]
    kinds = {(row["from_url"], row["to_url"]): row["kind"] for row in rows}
    assert kinds[(f"{base}/feed.rss", f"{base}/from-rss-1.html")] == "feed_entry"
    assert kinds[(f"{base}/doc.pdf", f"{base}/from-pdf.html")] == "document"

"""A page parsed once (model/pagetree.py): a crawl with features and Markdown on builds one Lexbor tree a
HTML page, shared by its parse, features and Markdown; the default crawl keeps none; every reader
leaves the shared tree as it found it and answers as it does from a tree of its own."""

from __future__ import annotations

import pickle
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import selectolax.lexbor
from selectolax.lexbor import LexborHTMLParser

from harvestman import CrawlConfig, Crawler
from harvestman.crawl.assembly import assemble
from harvestman.crawl.parse import parse_html
from harvestman.index.features import extract_features
from harvestman.index.markdown import Provenance, markdown_page
from harvestman.index.stages import page_stages
from harvestman.model.pagetree import PageTree
from harvestman.policy.blocks import split_blocks
from tests.support.featuresite import write_language_site
from tests.support.markdownsite import write_markdown_site
from tests.support.nginx import NginxServer, free_port

HOST = "127.141.0.1"
NET = "127.141.0.0/16"
PLACE = Provenance("<urn:uuid:x>", "warc/a.warc.gz", 0, "2026-01-01T00:00:00Z")


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The documents Lexbor trees are built from, in this process, while the test runs: every name the
    package (or selectolax) holds the parser's class by is replaced by a subclass that counts."""
    built: list[str] = []

    class Counting(LexborHTMLParser):
        def __init__(self, html: str | bytes) -> None:
            built.append(html if isinstance(html, str) else html.decode("utf-8", "replace"))
            super().__init__(html)

    monkeypatch.setattr(selectolax.lexbor, "LexborHTMLParser", Counting)
    for name, module in list(sys.modules.items()):
        if name.startswith("harvestman") and getattr(module, "LexborHTMLParser", None) is LexborHTMLParser:
            monkeypatch.setattr(module, "LexborHTMLParser", Counting)
    yield built


def test_a_crawl_with_features_and_markdown_parses_each_html_page_once(tmp_path: Path,
                                                                         parses: list[str]) -> None:
    root = tmp_path / "www"
    site = write_markdown_site(root / HOST)
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        cfg = CrawlConfig(seeds=(server.url(HOST, "/"),), out_dir=tmp_path / "out", allow_net=(NET,),
                          features=True, markdown=True, quiet=True)
        pages = [page for page in Crawler(cfg) if page.result.status == 200]
        assert len(list((tmp_path / "out" / "markdown").glob("pages-*.jsonl"))) == 1
        html = [page.result.text or "" for page in pages if page.result.content_type == "text/html"]
        assert sorted(html) == sorted(site.values())  # the three pages (robots.txt is a 404)
        assert all(page.features is not None and page.features.text for page in pages)
        # Each page's HTML went into a tree once: for its links and text, features and Markdown.
        assert Counter(parses) == Counter(html)

    # The default crawl keeps no tree: its links come from the compiled core, which builds none.
    assert not assemble(CrawlConfig(seeds=("http://example.test/",), out_dir=tmp_path / "plain")).shares_tree
    assert assemble(cfg, stages=page_stages(cfg)).shares_tree


def test_readers_leave_the_shared_tree_as_they_found_it_and_answer_as_alone(tmp_path: Path) -> None:
    pages = {**write_markdown_site(tmp_path / "md"), **write_language_site(tmp_path / "lang"),
             "bare.html": "<body><nav>menu</nav><p>Only <b>bare</b> text.<script>x()</script></p>",
             "nav.html": '<main><h1>Hi</h1><nav><a href="/a">A</a></nav><p>Some words here.</p></main>'}
    for name, html in pages.items():
        url = f"http://example.test/{name}"
        shared = PageTree(html)
        before = shared.tree.html
        parsed = parse_html(html, url, share_tree=True)
        assert parsed.tree is not None and parsed == parse_html(html, url)
        assert extract_features(html, url, tree=shared) == extract_features(html, url)
        assert markdown_page(html, url, PLACE, shared) == markdown_page(html, url, PLACE)
        assert split_blocks(html, url, tree=shared) == split_blocks(html, url)
        parsed_tree = parsed.tree.tree
        assert shared.tree.html == before == parsed_tree.html, name  # read-only by contract
        # A page sent to another process takes its HTML, not its tree, and parses it there.
        assert pickle.loads(pickle.dumps(shared)).tree.html == before

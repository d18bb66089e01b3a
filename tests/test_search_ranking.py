"""Search ranking on a small corpus of real documentation pages (tests/data/docpages: Python's glossary
and pages that mention its terms more often than it does), indexed as `harvestman index` indexes a
page once its body is read; and the main-text extractor on the markup of several site generators."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from harvestman.index.indexer import WRITER_HEAP, page_document, to_tantivy
from harvestman.index.pagetext import API_MARK, page_text
from harvestman.index.schema import open_index
from harvestman.index.search import SearchIndex
from harvestman.model.errors import ConfigError

DOCPAGES = Path(__file__).parent / "data" / "docpages"
BASE = "http://docs.example/"


def build(folder: Path, pages: dict[str, str]) -> SearchIndex:
    """An index of these pages (url path -> HTML) in `folder`, opened for queries."""
    index = open_index(folder, create=True)
    writer = index.writer(heap_size=WRITER_HEAP)
    for path, html in pages.items():
        doc = page_document(BASE + path, html)
        assert doc is not None
        writer.add_document(to_tantivy(doc))
    writer.commit()
    writer.wait_merging_threads()
    return SearchIndex(folder)


def ranked(index: SearchIndex, query: str) -> list[str]:
    return [h.url.removeprefix(BASE) for h in index.search(query).hits]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    pages = {p.name.removesuffix(".gz").replace("_", "/", 1): gzip.decompress(p.read_bytes()).decode()
             for p in sorted(DOCPAGES.glob("*.html.gz"))}
    assert len(pages) == 6
    return build(tmp_path_factory.mktemp("docpages"), pages)


@pytest.mark.parametrize("question", ["what is the GIL", "duck typing", "what does hashable mean",
                                      "what is a generator"])
def test_a_glossary_question_finds_the_page_defining_the_term(docs: SearchIndex, question: str) -> None:
    # c-api/init.html says "GIL" 57 times, the glossary 3: the glossary defines it.
    assert ranked(docs, question)[0] == "glossary.html", ranked(docs, question)


def test_a_how_to_question_finds_the_module(docs: SearchIndex) -> None:
    assert ranked(docs, "run shell command capture output")[0] == "library/subprocess.html"


def test_stop_words_alone_do_not_change_the_ranking(docs: SearchIndex) -> None:
    plain = ranked(docs, "GIL")
    assert len(plain) >= 3
    for question in ("what is the GIL", "the GIL", "GIL what is", "what is a GIL?"):
        assert ranked(docs, question) == plain, question
    # Only stop words: they are what the user asks for, and still found.
    assert docs.search("what is the").total >= 5
    # Inside a phrase they stay: "the GIL" as words in that order, which fewer pages hold.
    assert 0 < docs.search('"the GIL"').total <= docs.search("GIL").total
    assert docs.search('"the is GIL"').total == 0


def test_words_near_each_other_rank_above_the_same_words_apart(tmp_path: Path) -> None:
    filler = " ".join(f"filler{n}" for n in range(60))
    # The near page is the longer one, so by the words alone (BM25) it ranks second, always: only the
    # proximity credit can lift it above the page whose words lie apart (with equal lengths the two
    # tied, and the order was a coin toss without the credit).
    more = " ".join(f"more{n}" for n in range(40))
    near = f"<html><head><title>One</title></head><body><main><p>{filler} capture the output of a shell " \
           f"command here {filler} {more}</p></main></body></html>"
    apart = f"<html><head><title>Two</title></head><body><main><p>capture {filler} the output of a " \
            f"{filler} shell command here</p></main></body></html>"
    index = build(tmp_path, {"near.html": near, "apart.html": apart})
    assert ranked(index, "capture output shell command") == ["near.html", "apart.html"]
    # In another order the words are still found on both pages.
    assert set(ranked(index, "command shell")) == {"near.html", "apart.html"}


def test_the_extractor_keeps_definition_lists_tables_and_code() -> None:
    content = ("<h1>Config</h1><dl><dt>work_mem (integer)</dt><dd>Sets the base maximum memory.</dd></dl>"
               "<table><tr><th>Operator</th><td>concatenation</td></tr></table>"
               "<pre>SELECT pg_cancel_backend(pid);</pre><div class='highlight'><pre>x = 1</pre></div>")
    sphinx = (f"<html><head><title>T</title></head><body><div class='related' role='navigation'>index "
              f"modules next</div><div class='body' role='main'>{content}</div><div class='sphinxsidebar'>"
              "Previous topic</div><div class='footer'>Copyright</div></body></html>")
    docbook = (f"<html><head><title>T</title></head><body><div class='navheader'><table><tr><th>Prev "
               f"Up Next</th></tr></table></div><div class='sect1'>{content}</div><div class='navfooter'>"
               "<table><tr><td>Home</td></tr></table></div></body></html>")
    blog = (f"<html><body><header class='site-header'>My Blog</header><main><article><div class="
            f"'entry-content'>{content}</div></article><nav class='post-navigation'>Previous post</nav>"
            f"<div id='comments'>Great post!</div></main><aside>Recent Posts</aside></body></html>")
    for html in (sphinx, docbook, blog):
        text = page_text(html).text
        for kept in ("work_mem", "base maximum memory", "concatenation", "pg_cancel_backend", "x = 1"):
            assert kept in text, (kept, text)
        for left in ("modules next", "Previous topic", "Copyright", "Prev Up Next", "Home", "My Blog",
                     "Previous post", "Great post", "Recent Posts"):
            assert left not in text, (left, text)
        assert "work mem" in page_text(html).defines


def test_defined_terms_of_a_glossary_and_an_api() -> None:
    found = page_text("<main><dl><dt>Write-Ahead Log (WAL)</dt><dd>...</dd><dt>duck-typing<a href='#t'>¶</a>"
                      "</dt><dt><a href='other.html'>13.1. Introduction</a></dt>"
                      "<dt id='time.sleep'>time.sleep(<em>secs</em>)</dt>"
                      "<dt>class frozenset(iterable=set())</dt><dt>a sentence that is far too long to be "
                      "a term at all</dt></dl></main>").defines
    assert found == ("write ahead log", "wal", "duck typing", "time sleep", API_MARK + "sleep",
                     "class frozenset", API_MARK + "frozenset")


def test_an_index_of_an_older_layout_is_rebuilt_not_misread(tmp_path: Path) -> None:
    import tantivy

    old = tantivy.SchemaBuilder()
    old.add_text_field("id", stored=True, tokenizer_name="raw")
    path = tmp_path / "searchindex"
    path.mkdir()
    tantivy.Index(old.build(), path=str(path))
    with pytest.raises(ConfigError, match="older harvestman: build it again with `harvestman index"):
        SearchIndex(tmp_path)
    index = build(tmp_path, {"a.html": "<main><p>walrus</p></main>"})
    assert ranked(index, "walrus") == ["a.html"]

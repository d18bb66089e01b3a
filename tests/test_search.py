"""Full-text search over a real crawl: nginx serves a small two-host site, harvestman crawls it (with
anchor texts), `harvestman index` builds the index and `harvestman search` queries it as a user would."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import harvestman
from harvestman.index import querylang
from harvestman.index.querylang import AllOf, AnyOf, Boost, Clauses, Must, Not, Phrase, Word, parse_query
from harvestman.index.search import SearchHit, SearchResults
from harvestman.model.errors import QueryError
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx

HOSTS = ["127.1.16.1", "127.1.16.2"]
NET = ("--allow-net", "127.1.16.0/24", "-q", "--scope", "any", "--link-anchors", "--workers", "1")


def page(title: str, body: str, head: str = "") -> str:
    """A page with navigation chrome around its main text."""
    return (f"<!doctype html><html><head><title>{title}</title>{head}</head><body>"
            f"<nav><a href='/'>home menu</a></nav><main><h1>{title}</h1>{body}</main>"
            "<footer>footer words</footer></body></html>")


def write_site(root: Path, port: int) -> dict[str, str]:
    """Write the two hosts' pages; their URLs by name."""
    a, b = (root / h for h in HOSTS)
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    other = f"http://{HOSTS[1]}:{port}"
    (a / "index.html").write_text(page("Front page", (
        "<p>Welcome.</p><a href='/python.html'>python tutorial</a> <a href='/rust.html'>rust book</a>"
        " <a href='/secret.html'>zebra crossing</a> <a href='/gone.html'>old page</a>"
        " <a href='/hidden.html'>hidden</a> <a href='/copy.html'>a copy</a>"
        f" <a href='{other}/'>the other host</a>")))
    (a / "python.html").write_text(page("Python tutorial", (
        "<h2>Sorting lists</h2><p>Python lists are sorted in place with list.sort and copied sorted with"
        " the sorted builtin. The sort is stable.</p><h2>Dictionaries</h2><p>A dictionary maps keys"
        " to values.</p>")))
    (a / "rust.html").write_text(page("Rust book", (
        "<p>Rust ownership and the borrow checker keep memory safe without a garbage collector.</p>"
        "<a href='/python.html'>python tutorial</a>")))
    (a / "secret.html").write_text(page("Stripes", "<p>Black and white animals of the savanna.</p>"))
    (a / "gone.html").write_text(page("Old page", "<p>An obsolete page about fax machines.</p>"))
    (a / "hidden.html").write_text(page("Hidden", "<p>Nothing about walruses here.</p>",
                                        head="<meta name='robots' content='noindex'>"))
    (a / "copy.html").write_text((a / "rust.html").read_text())
    (b / "index.html").write_text(page("Other host", (
        "<p>Python snakes and lists of reptiles live here.</p>"
        f"<a href='http://{HOSTS[0]}:{port}/python.html'>python guide</a>")))
    base = f"http://{HOSTS[0]}:{port}"
    names = ("python", "rust", "secret", "gone", "hidden", "copy")
    return {"front": f"{base}/", "other": f"{other}/", **{n: f"{base}/{n}.html" for n in names}}


def search_json(out: Path, *args: str) -> dict[str, object]:
    done = run_cli("search", str(out), *args, "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def urls(found: dict[str, object]) -> list[str]:
    hits = found["hits"]
    assert isinstance(hits, list)
    return [h["url"] for h in hits]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    require_nginx()
    tmp = tmp_path_factory.mktemp("search")
    port = free_port(HOSTS[0])
    site = write_site(tmp / "site", port)
    # The front page at its file's address too (its twin), and a code block of highlighted tokens.
    python = tmp / "site" / HOSTS[0] / "python.html"
    python.write_text(python.read_text().replace("</main>", (
        "<a href='/index.html'>the welcome page</a><pre><span>sorted</span><span>([</span><span>5</span>"
        "<span>,</span> 2])</pre></main>")))
    out = tmp / "out"
    with NginxServer(tmp / "site", HOSTS, port):
        done = run_cli("crawl", site["front"], "--out", str(out), *NET)
    assert done.returncode == 0, done.stderr
    done = run_cli("index", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("8 pages in the index (8 added, 0 replaced"), done.stdout  # hidden left out
    return out, site


def test_words_phrases_boolean_and_fields(crawled: tuple[Path, dict[str, str]]) -> None:
    out, site = crawled
    found = search_json(out, "sorting")  # stemmed: "sorted" and "sort" match as well
    assert urls(found)[0] == site["python"] and found["query"] == "sorting"
    hit = found["hits"][0]  # type: ignore[index]
    assert hit["title"] == "Python tutorial" and "<b>Sorting</b>" in hit["snippet"] and hit["score"] > 0
    assert set(hit) == {"url", "title", "score", "snippet"}

    assert set(urls(search_json(out, '"borrow checker"'))) == {site["rust"], site["copy"]}
    assert urls(search_json(out, '"checker borrow"')) == []
    assert set(urls(search_json(out, "python AND lists"))) == {site["python"], site["other"]}
    assert set(urls(search_json(out, "savanna OR ownership"))) == {site["secret"], site["rust"], site["copy"]}
    assert urls(search_json(out, "title:dictionaries")) == []  # only in the text
    assert urls(search_json(out, "headings:dictionaries")) == [site["python"]]
    assert set(urls(search_json(out, "python -lists"))) == {site["front"], site["rust"], site["copy"]}
    # Navigation and footers are left out of the text: every page has them.
    assert search_json(out, "footer")["total"] == 0
    assert search_json(out, "walruses")["total"] == 0  # the noindex page


def test_anchor_text_finds_a_page_its_own_words_do_not(crawled: tuple[Path, dict[str, str]]) -> None:
    out, site = crawled
    # "zebra" is in the link to the page, and so in the linking page's text, never in the page itself.
    assert set(urls(search_json(out, "zebra"))) == {site["secret"], site["front"]}
    assert urls(search_json(out, "anchor:zebra")) == [site["secret"]]
    assert urls(search_json(out, "text:zebra")) == [site["front"]]


def test_site_limit_and_the_library_call(crawled: tuple[Path, dict[str, str]]) -> None:
    out, site = crawled
    assert set(urls(search_json(out, "python"))) >= {site["python"], site["other"]}
    assert urls(search_json(out, "python", "--site", HOSTS[1])) == [site["other"]]
    assert site["other"] not in urls(search_json(out, "python", "--site", HOSTS[0]))
    assert len(urls(search_json(out, "python", "--limit", "1"))) == 1

    found = harvestman.search(out, "ownership", limit=5)
    assert isinstance(found, SearchResults) and found.total == 2 and found.query == "ownership"
    assert all(isinstance(h, SearchHit) for h in found.hits)
    assert {h.url for h in found.hits} == {site["rust"], site["copy"]}
    assert "searched as the plain words 'title:(unclosed'" in harvestman.search(out, "title:(unclosed").note
    with pytest.raises(QueryError):
        harvestman.search(out, "==")

    done = run_cli("search", str(out), "sorting")  # the text form: title, URL, marked snippet
    assert done.returncode == 0 and "Python tutorial" in done.stdout and "Sorting" in done.stdout
    assert "**" not in done.stdout and "<b>" not in done.stdout  # piped: plain text (tests/test_cli_trial.py)


def test_category_filter_from_the_page_features(tmp_path: Path, crawled: tuple[Path, dict[str, str]]) -> None:
    out, site = crawled
    bad = run_cli("search", str(out), "python", "--category", "tutorial")
    assert bad.returncode == 2 and "no categories" in bad.stderr and bad.stderr.count("\n") == 1
    features = out / "features"
    features.mkdir()
    rows = [{"url": site["python"], "words": 30, "category": "tutorial", "category_probability": 0.9},
            {"url": site["other"], "words": 12, "category": "zoo", "category_probability": 0.7}]
    pq.write_table(pa.Table.from_pylist(rows), features / "pages.parquet")
    try:
        done = run_cli("index", str(out))
        assert done.returncode == 0, done.stderr
        assert "(0 added, 2 replaced, 0 removed, 6 unchanged)" in done.stdout, done.stdout
        assert urls(search_json(out, "python", "--category", "tutorial")) == [site["python"]]
        assert urls(search_json(out, "python", "--category", "zoo")) == [site["other"]]
        assert urls(search_json(out, "category:zoo")) == [site["other"]]
    finally:
        (features / "pages.parquet").unlink()
        features.rmdir()
        assert run_cli("index", str(out)).returncode == 0


@pytest.mark.parametrize("query", ["==", "*", '""', "  "])
def test_a_query_with_no_word_is_one_line_and_exit_2(crawled: tuple[Path, dict[str, str]],
                                                     query: str) -> None:
    out, _ = crawled
    bad = run_cli("search", str(out), query)
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.startswith("harvestman: error: ") and bad.stderr.count("\n") == 1, bad.stderr


def test_missing_index_and_crawl_are_clear_errors(tmp_path: Path) -> None:
    bad = run_cli("search", str(tmp_path), "python")
    assert bad.returncode == 2 and "no search index" in bad.stderr and "harvestman index" in bad.stderr
    bad = run_cli("index", str(tmp_path))
    assert bad.returncode == 2 and "holds no crawl" in bad.stderr
    bad = run_cli("export", str(tmp_path), "--what", "index", "--format", "opensearch")
    assert bad.returncode == 2 and "no search index" in bad.stderr


# The query language (index/querylang.py): parsed without an index.

@pytest.mark.parametrize(("query", "tree"), [
    ("socket AND NOT asyncio", AllOf((Word("socket"), Not(Word("asyncio"))))),
    ("socket NOT asyncio", Clauses((Word("socket"), Not(Word("asyncio"))))),
    ("socket -asyncio", Clauses((Word("socket"), Not(Word("asyncio"))))),
    ("sock*", Word("sock", prefix=True)),
    ("title:sock* +web", Clauses((Word("sock", "title", prefix=True), Must(Word("web"))))),
    ("a b AND c OR d", Clauses((Word("a"), AnyOf((AllOf((Word("b"), Word("c"))), Word("d")))))),
    ('(a OR "b c")^2 NOT d', Clauses((Boost(AnyOf((Word("a"), Phrase("b c"))), 2.0), Not(Word("d"))))),
    ("title:(a OR b)", AnyOf((Word("a", "title"), Word("b", "title")))),
    ("url:http://x/a-b and", Clauses((Word("http://x/a-b", "url"), Word("and")))),
    ("sort~1 title:list~", Clauses((Word("sort", fuzzy=1), Word("list", "title", fuzzy=2)))),
    ('"a b"~3^2', Boost(Phrase("a b", slop=3), 2.0)),
])
def test_the_query_language_parses_as_a_user_reads_it(query: str, tree: object) -> None:
    assert parse_query(query) == tree


@pytest.mark.parametrize(("query", "reason"), [
    ("*", "* alone"), ("*sock", "only a trailing *"), ("so*ck", "only a trailing *"),
    ("sock**", "only a trailing *"), ('"sock*"', "inside quotes"), ("list.so*", "one word"),
    ("(socket", "'(' is not closed"), ("socket)", "')' without"), ("a (b))", "')' without"),
    ("()", "empty parentheses"), ('"open phrase', "quotes"), ('a "b" "c', "quotes"),
    ("socket AND", "both sides"), ("AND socket", "both sides"), ("a OR OR b", "both sides"),
    ("a AND NOT", "NOT needs"), ("a - b", "right before"), ("NOT asyncio", "only leaves pages out"),
    ("-a -b", "only leaves pages out"), ("socket OR NOT asyncio", "OR cannot join"),
    ("socket && !asyncio", "operators are"), ("!asyncio a", "operators are"), ("a ...", "no letter"),
    ("nosuchfield:word", "unknown field"), ("title: word", "followed directly"), ("x^y", "a number"),
    ("a ^2", "boost"), ("   ", "empty query"), ("so~rt", "~ follows a word"), ("sort~3", "~ follows a word"),
    ("sock*~1", "not both"), ('"a b"~x', "a number of words apart"),
])
def test_syntax_the_language_cannot_take_is_a_query_error(query: str, reason: str) -> None:
    with pytest.raises(QueryError, match=re.escape(reason)) as caught:
        parse_query(query)
    assert "\n" not in str(caught.value)


def test_and_not_prefixes_and_the_sql_search_over_a_real_index(crawled: tuple[Path, dict[str, str]]) -> None:
    out, site = crawled
    without_lists = {site["front"], site["rust"], site["copy"]}
    for query in ("python AND NOT lists", "python NOT lists", "python -lists", "python AND -lists",
                  "(python OR tutorial) AND NOT (lists OR sorted)"):
        assert set(urls(search_json(out, query))) == without_lists, query
    assert urls(search_json(out, "sav*")) == [site["secret"]]  # savanna
    assert urls(search_json(out, "sort* -snakes")) == [site["python"]]  # sort, sorted, sorting
    assert set(urls(search_json(out, "pyth*"))) == set(urls(search_json(out, "python")))
    assert urls(search_json(out, "zzz*")) == []
    assert urls(search_json(out, "anchor:zeb*")) == [site["secret"]]
    # The SQL search() runs the same search.
    done = run_cli("query", str(out), "SELECT url FROM search('python AND NOT lists') ORDER BY url",
                   "--format", "json")
    assert done.returncode == 0, done.stderr
    assert {row["url"] for row in json.loads(done.stdout)} == without_lists


@pytest.mark.parametrize(("query", "words"), [
    ("*thon", "*thon"), ("py*on", "py*on"), ("python && !lists", "python !lists"),
    ("python OR NOT lists", "python OR NOT lists"), ('"sav*"', "sav*"), ("title: python", "title: python"),
    ("title:(unclosed", "title:(unclosed"), ("nosuchfield:word", "nosuchfield:word"),
    ('"open phrase', "open phrase"), ("FATAL: no python entry", "FATAL: no python entry"),
    ("0.1 + 0.2", "0.1 0.2"), ('== "__main__"', "__main__"), ("-sort", "-sort"), ("sort~9", "sort~9"),
])
def test_what_the_language_cannot_read_is_searched_as_plain_words_with_a_note(
        crawled: tuple[Path, dict[str, str]], query: str, words: str) -> None:
    out, site = crawled
    done = run_cli("search", str(out), query)  # -sort too: the query, not an unknown option
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stderr.startswith("harvestman: note: bad query ") and done.stderr.count("\n") == 1
    assert f"searched as the plain words {words!r}" in done.stderr
    found = search_json(out, query)
    assert str(found["note"]).endswith(f"searched as the plain words {words!r}")
    if query in ("FATAL: no python entry", "-sort"):
        assert site["python"] in urls(found)


def test_fuzzy_words_and_sloppy_phrases(crawled: tuple[Path, dict[str, str]]) -> None:
    out, site = crawled
    assert urls(search_json(out, "builtn")) == []
    assert urls(search_json(out, "builtn~1")) == [site["python"]]  # one edit from "builtin"
    assert urls(search_json(out, '"keys values"')) == []
    assert urls(search_json(out, '"keys values"~1')) == [site["python"]]  # "keys to values"
    assert "note" not in search_json(out, "builtn~1")
    assert len(urls(search_json(out, "-sort", "--limit", "1"))) == 1  # an option after it is still read


def test_a_page_and_its_twin_are_one_hit_and_snippets_read_as_the_page(
        crawled: tuple[Path, dict[str, str]]) -> None:
    out, site = crawled
    welcome = search_json(out, "welcome")
    assert urls(welcome).count(site["front"]) == 1 and site["front"] + "index.html" not in urls(welcome)
    assert welcome["total"] == 3  # /, /index.html and the page linking to it
    snippet = search_json(out, '"5 2"')["hits"][0]["snippet"]  # type: ignore[index]
    assert "sorted([<b>5</b>, <b>2</b>" in snippet, snippet  # the fragment ends at the last word


def test_a_prefix_of_too_many_words_is_refused_not_cut(crawled: tuple[Path, dict[str, str]],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    out, site = crawled
    monkeypatch.setattr(querylang, "MAX_PREFIX_TERMS", 2)
    with pytest.raises(QueryError, match="s\\* matches more than 2 different words"):
        harvestman.search(out, "s*")
    assert urls(harvestman.search(out, "sav*").as_dict()) == [site["secret"]]

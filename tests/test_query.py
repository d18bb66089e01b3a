"""harvestman query over a crawled, extracted site: SQL joining the type tables, the field tables and
the pages, full-text search() inside SQL (with a stand-in search engine given to the session), the
output formats, and bad SQL or unknown tables as one-line errors."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harvestman.index.query import QuerySession, SearchCall, run_query, search_calls
from harvestman.model.errors import ConfigError
from tests.support.crawlcheck import run_cli
from tests.support.structsite import crawl_site, write_features

HOST = "127.1.16.2"
RULES = """
[[rule]]
category = "personal"
field = "email"
css = "a[href^='mailto:']"
attr = "href"
pattern = "mailto:([^?]+)"
"""


@dataclass(frozen=True)
class Hit:
    url: str
    title: str
    score: float
    snippet: str


@dataclass(frozen=True)
class Results:
    query: str
    total: int
    hits: tuple[Hit, ...]


class StandInSearch:
    """A search engine with harvestman.index.search.search's signature: pages whose features text
    holds every word, scored by how often they occur; it records the calls it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str | None, str | None]] = []

    def __call__(self, folder: Path, query: str, *, limit: int = 10, site: str | None = None,
                 category: str | None = None, db: str = "") -> Results:
        self.calls.append((query, limit, site, category))
        pages = pq.read_table(Path(folder) / "features" / "pages.parquet").to_pylist()
        words = query.lower().split()
        hits = [Hit(p["url"], p["title"], float(sum(p["text"].lower().count(w) for w in words)),
                    p["text"][:40]) for p in pages if all(w in p["text"].lower() for w in words)
                and (category is None or p["category"] == category) and (site is None or site in p["url"])]
        hits.sort(key=lambda h: (-h.score, h.url))
        return Results(query, len(hits), tuple(hits[:limit]))


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("query")
    out, base = crawl_site(tmp, HOST)
    done = run_cli("extract", str(out))
    assert done.returncode == 0, done.stderr
    return out, base


def test_query_joins_tables_and_pages_from_the_crawl_database(crawl: tuple[Path, str]) -> None:
    out, base = crawl
    sql = ("SELECT pe.name, p.title, p.state, pe.syntax FROM person pe JOIN pages p USING (url) "
           "ORDER BY pe.name")
    done = run_cli("query", str(out), sql)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["name", "title", "state", "syntax"]
    assert lines[2].split() == ["Ada", "Lovelace", "Ada", "Lovelace", "fetched", "json-ld"]
    assert lines[-1] == "(2 rows)"

    done = run_cli("query", str(out), sql, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"name": "Ada Lovelace", "title": "Ada Lovelace", "state": "fetched", "syntax": "json-ld"},
        {"name": "Bob Builder", "title": "Bob", "state": "fetched", "syntax": "microdata"}]

    done = run_cli("query", str(out), "SELECT url, price FROM product, "
                   "LATERAL (SELECT json_extract_string(offers, '$.price') AS price) ORDER BY url",
                   "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert list(csv.reader(io.StringIO(done.stdout))) == [
        ["url", "price"], [base + "/broken.html", "5"], [base + "/widget.html", "9.99"]]


def test_personal_pages_matching_words_that_state_an_email(crawl: tuple[Path, str], tmp_path: Path) -> None:
    out, base = crawl
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    write_features(out, base, {"/ada.html": "personal", "/bob.html": "personal"})
    try:
        assert run_cli("extract", str(out), "--rules", str(rules)).returncode == 0
        engine = StandInSearch()
        with QuerySession(out, search=engine) as session:
            assert {"pages", "person", "fields_personal"} <= set(session.tables)
            # Both personal pages mention compilers; only Ada's states an e-mail address.
            result = session.run(
                "SELECT p.url, p.title, f.email, s.rank FROM search('compilers', category := 'personal') s "
                "JOIN pages p USING (url) JOIN fields_personal f USING (url) "
                "WHERE f.email IS NOT NULL ORDER BY s.rank")
            assert result.columns == ("url", "title", "email", "rank")
            assert result.rows == ((base + "/ada.html", "Ada Lovelace", "ada@example.org", 1),)
            assert engine.calls == [("compilers", 10, None, "personal")]
            # Two calls in one statement, each its own hits; max_hits bounds them.
            result = session.run("SELECT (SELECT count(*) FROM search('compilers')), "
                                 "(SELECT count(*) FROM search('compilers', max_hits := 1)), "
                                 "(SELECT count(*) FROM search('nothing here'))")
            assert result.rows == ((3, 1, 0),)
            hits = session.run("SELECT url, title, score, rank, snippet FROM search('compilers') "
                               "ORDER BY rank")
            assert [h[3] for h in hits.rows] == [1, 2, 3]
            assert {h[0] for h in hits.rows} == {base + p for p in ("/ada.html", "/bob.html", "/news.html")}
        # The pages view is the features table when there is one.
        text = run_query(out, "SELECT text FROM pages WHERE url LIKE '%bob.html'", search=engine).rows
        assert "gives no address" in text[0][0]
    finally:
        (out / "features" / "pages.parquet").unlink()


def test_search_in_sql_through_the_real_index(crawl: tuple[Path, str]) -> None:
    """The CLI's search() is harvestman.index.search over `harvestman index`'s index, joined with a
    type table: the people whose pages mention compilers."""
    out, base = crawl
    assert run_cli("index", str(out)).returncode == 0
    done = run_cli("query", str(out), "SELECT pe.name, s.url FROM search('compilers') s JOIN person pe "
                   "USING (url) ORDER BY pe.name", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"name": "Ada Lovelace", "url": base + "/ada.html"},
                                       {"name": "Bob Builder", "url": base + "/bob.html"}]


def test_search_calls_are_found_by_tokens() -> None:
    assert search_calls("SELECT 'search(''x'')' AS s -- search('y')\nFROM t") == []
    assert search_calls("select * from SEARCH ( 'it''s', 5, 'h' ) join search('b', category => 'c') on 1") \
        == [SearchCall("it's", 5, "h"), SearchCall("b", category="c")]
    assert search_calls("select search from t") == []
    for bad in ("select * from search(q)", "select * from search('a', max_hits := 0)",
                "select * from search('a', colour := 'red')", "select * from search()",
                "select * from search('a' || 'b')"):
        with pytest.raises(ConfigError, match="search"):
            search_calls(bad)


def test_bad_sql_and_unknown_tables_are_one_line_errors(crawl: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = crawl
    for sql, message in (("SELEKT 1", "Parser Error"), ("SELECT * FROM nosuch", "nosuch"),
                         ("SELECT nosuch FROM person", "nosuch"), ("", "no SQL given"),
                         ("SELECT * FROM search(url)", "search()")):
        done = run_cli("query", str(out), sql)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
        if "search()" not in message:
            assert "tables: article, event," in done.stderr
            assert "og_website, organization, pages, person" in done.stderr
    done = run_cli("query", str(tmp_path / "nowhere"), "SELECT 1")
    assert done.returncode == 2 and "holds no crawl and no tables" in done.stderr

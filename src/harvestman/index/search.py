"""Search a crawl's full-text index: ranked hits (BM25 over boosted fields) with highlighted snippets.

The query language (index/querylang.py, docs/search.md): words (any of them by default), "phrases",
AND / OR / NOT and parentheses, +must and -mustnot, field:term (title, headings, text, anchor, url,
host, category), prefix* queries, word~1 fuzzy words, "a phrase"~3, term^2 boosts; a query the language
cannot read is searched as its plain words, with a note.

A page and its twin, the same content at its directory's address (`/docs/` and `/docs/index.html`), are
one hit, the best-ranked; copies elsewhere are the dedup job's to find.
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.index.querylang import Node, QueryBuilder, read_query
from harvestman.index.schema import FIELD_BOOSTS, open_index
from harvestman.model.errors import ConfigError, QueryError

SNIPPET_CHARS = 200
MAX_LIMIT = 10_000
TWIN_ROOM = 10  # hits looked at beyond the limit, so that twins left out do not shorten the list
# A directory's index file: the page a server answers for the directory's own address too.
_INDEX_FILE = re.compile(r"/(?:index|default)\.(?:html?|php|aspx?)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One page found: its score and a snippet of its text, the query's words in <b>...</b>
    (the text HTML-escaped)."""

    url: str
    title: str
    score: float
    snippet: str


@dataclass(frozen=True, slots=True)
class SearchResults:
    """The best hits of a query, best first, and how many pages match it in all."""

    query: str
    total: int  # pages matching, twins (the same content) each counted
    hits: tuple[SearchHit, ...]
    note: str = ""  # how the query was read when not as written: its plain words (querylang.read_query)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form `harvestman search --json` prints (`note` only when there is one)."""
        return {"query": self.query, "total": self.total,
                "hits": [{"url": h.url, "title": h.title, "score": h.score, "snippet": h.snippet}
                         for h in self.hits], **({"note": self.note} if self.note else {})}


class SearchIndex:
    """A crawl's search index opened for queries (open once, search many times)."""

    def __init__(self, folder: Path) -> None:
        self._index = open_index(Path(folder))
        self._searcher = self._index.searcher()
        self._schema = self._index.schema

    def has_categories(self) -> bool:
        """Whether any indexed page has a category (from the page features)."""
        import tantivy

        query = tantivy.Query.regex_query(self._schema, "category", ".+")
        return bool(self._searcher.search(query, 1, count=True).count)

    def build(self, tree: Node, fields: Sequence[str] = tuple(FIELD_BOOSTS)) -> Any:
        """The tantivy query of a query's tree (querylang.read_query)."""
        return QueryBuilder(self._index, self._searcher, fields).build(tree)

    def search(self, query: str, *, limit: int = 10, site: str | None = None, category: str | None = None,
               fields: Sequence[str] = tuple(FIELD_BOOSTS)) -> SearchResults:
        """The best `limit` pages for `query`, on `site` (a host, host:port or parent domain) and of
        `category` when given; `fields` are the fields searched when the query names none."""
        import tantivy

        if not 1 <= limit <= MAX_LIMIT:
            raise ConfigError(f"the limit must be between 1 and {MAX_LIMIT}, not {limit}")
        tree, note = read_query(query)
        parsed = self.build(tree, fields)
        must = [(tantivy.Occur.Must, parsed)]
        if site:
            must.append((tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "host", site.lower())))
        if category:
            if not self.has_categories():
                raise ConfigError("the index holds no categories: classify the pages (DIR/features/"
                                  "pages.parquet), then run `harvestman index` again")
            must.append((tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "category", category)))
        full = parsed if len(must) == 1 else tantivy.Query.boolean_query(must)
        try:
            found = self._searcher.search(full, limit + TWIN_ROOM, count=True)
        except ValueError as exc:
            raise QueryError(f"bad query {query!r}: {exc}") from None
        # The words are marked where the text holds them: the ranking's query scores them in `all`.
        marked = self.build(tree, ("text",))
        snippets = tantivy.SnippetGenerator.create(self._searcher, marked, self._schema, "text")
        snippets.set_max_num_chars(SNIPPET_CHARS)
        hits: list[SearchHit] = []
        listed: dict[tuple[str, str], int] = {}  # a page (its content, its directory form): its hit
        for score, address in found.hits:
            doc = self._searcher.doc(address)
            url = doc.get_first("url") or ""
            page = (doc.get_first("signature") or url, _INDEX_FILE.sub("/", url))
            if page in listed:  # its twin is listed: under the directory's address, the shorter
                if url == page[1]:
                    hits[listed[page]] = dataclasses.replace(hits[listed[page]], url=url)
                continue
            if len(hits) == limit:
                continue  # the rest only for a listed page's directory address
            listed[page] = len(hits)
            hits.append(SearchHit(url=url, title=doc.get_first("title") or "",
                                  score=round(float(score), 4), snippet=_snippet(snippets, doc)))
        return SearchResults(query, int(found.count or 0), tuple(hits), note)


def _snippet(snippets: Any, doc: Any) -> str:
    """The best fragment of the page's text with the query's words marked; the text's start when
    the words are only in other fields (title, anchors)."""
    snippet = snippets.snippet_from_doc(doc)
    if snippet.highlighted():
        return str(snippet.to_html())
    text = doc.get_first("text") or ""
    if len(text) > SNIPPET_CHARS:
        text = text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"
    return html.escape(text, quote=False)


def search(folder: Path, query: str, *, limit: int = 10, site: str | None = None,
           category: str | None = None, db: str = "") -> SearchResults:
    """Search the full-text index of the crawl in `folder` (built by `harvestman index`).

    `db` names the crawl's database as elsewhere; the index itself lives in the folder.
    """
    del db  # the index is a folder of the crawl: the database is not read to answer a query
    return SearchIndex(Path(folder)).search(query, limit=limit, site=site, category=category)

"""`harvestman query`: DuckDB SQL over a crawl's tables, its pages, and its full-text search.

Every DIR/tables/<name>.parquet is a view `<name>`; `pages` is DIR/features/pages.parquet when the
page features were computed, else a view of the crawl database (url, host, title, state, ...).

Full-text search inside SQL: `search('words', max_hits := 10, site := NULL, category := NULL)` is a
table of (url, title, score, rank, snippet). DuckDB's Python client offers scalar UDFs only, no table
functions, so the search runs *before* the statement: its tokens (DuckDB's own tokenizer, so strings
and comments are never mistaken for calls) are scanned for `search(` calls, each call's literal
arguments are run through the search engine, the hits are registered as one Arrow table, and
`search` is a table macro that picks a call's hits out of it. The user's SQL is never rewritten;
a call whose arguments are not literals is refused rather than answered wrongly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlState
from harvestman.store.crawldir import CrawlDir

DEFAULT_MAX_HITS = 10
_HITS_TABLE = "__harvestman_search_hits"
_ARGS = ("q", "max_hits", "site", "category")  # search()'s parameters, in order
_TABLES_DIR = "tables"
_FEATURES = Path("features") / "pages.parquet"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class SearchHitLike(Protocol):
    """What query needs of one search hit (harvestman.index.search.SearchHit)."""

    @property
    def url(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def snippet(self) -> str: ...


class SearchResultsLike(Protocol):
    """What query needs of a search's results (harvestman.index.search.SearchResults)."""

    @property
    def hits(self) -> Sequence[SearchHitLike]: ...


class SearchFunction(Protocol):
    """The full-text search query runs: harvestman.index.search.search's signature."""

    def __call__(self, folder: Path, query: str, *, limit: int = 10, site: str | None = None,
                 category: str | None = None, db: str = "") -> SearchResultsLike: ...


def index_search(folder: Path, query: str, *, limit: int = 10, site: str | None = None,
                 category: str | None = None, db: str = "") -> SearchResultsLike:
    """The crawl's own full-text search (harvestman index / search), imported when a query uses it."""
    import importlib

    engine = importlib.import_module("harvestman.index.search")
    results: SearchResultsLike = engine.search(folder, query, limit=limit, site=site, category=category,
                                               db=db)
    return results


@dataclass(frozen=True, slots=True)
class SearchCall:
    """One search(...) call found in a statement, with its literal arguments."""

    q: str
    max_hits: int = DEFAULT_MAX_HITS
    site: str | None = None
    category: str | None = None


@dataclass(frozen=True, slots=True)
class QueryResult:
    """A statement's result: column names and rows."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


_USAGE = "search('words', max_hits := 10, site := 'host', category := 'name') with literal arguments"


def _literal(text: str, kind: str) -> str | int | None:
    """A SQL literal's value: '...' strings (with '' for '), integers, NULL."""
    if kind == "string_const" and len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if kind == "numeric_const" and text.isdigit():
        return int(text)
    if text.upper() == "NULL":
        return None
    raise ConfigError(f"search() takes {_USAGE}; got {text!r}")


def _call(values: list[tuple[str | None, str | int | None]]) -> SearchCall:
    """A search call from its (name or None, value) arguments."""
    given: dict[str, str | int | None] = {}
    for position, (name, value) in enumerate(values):
        key = name.lower() if name else (_ARGS[position] if position < len(_ARGS) else "")
        if key not in _ARGS or key in given:
            raise ConfigError(f"search() takes {_USAGE}")
        given[key] = value
    q, max_hits = given.get("q"), given.get("max_hits", DEFAULT_MAX_HITS)
    site, category = given.get("site"), given.get("category")
    if not isinstance(q, str) or not isinstance(max_hits, int) or max_hits < 1 \
            or not all(v is None or isinstance(v, str) for v in (site, category)):
        raise ConfigError(f"search() takes {_USAGE}")
    return SearchCall(q, max_hits, site if isinstance(site, str) else None,
                      category if isinstance(category, str) else None)


def search_calls(sql: str) -> list[SearchCall]:
    """The search(...) calls in a statement, found with DuckDB's tokenizer."""
    import duckdb

    tokens = duckdb.tokenize(sql)
    texts = [sql[start:(tokens[i + 1][0] if i + 1 < len(tokens) else len(sql))].strip()
             for i, (start, _) in enumerate(tokens)]
    kinds = [kind.name for _, kind in tokens]
    calls: list[SearchCall] = []
    i = 0
    while i < len(tokens):
        if texts[i].lower() != "search" or i + 1 >= len(tokens) or texts[i + 1] != "(" \
                or (i > 0 and texts[i - 1] == "."):  # schema.search( is some other function
            i += 1
            continue
        i += 2
        values: list[tuple[str | None, str | int | None]] = []
        while i < len(tokens) and texts[i] != ")":
            name = None
            if i + 1 < len(tokens) and texts[i + 1] in (":=", "=>"):
                name, i = texts[i], i + 2
            if i >= len(tokens):
                break
            values.append((name, _literal(texts[i], kinds[i])))
            i += 1
            if i < len(tokens) and texts[i] == ",":
                i += 1
            elif i < len(tokens) and texts[i] != ")":
                raise ConfigError(f"search() takes {_USAGE}; got {texts[i]!r}")
        calls.append(_call(values))
        i += 1
    return calls


def _arrow(names: Sequence[str], types: Sequence[Any], rows: Sequence[tuple[Any, ...]]) -> Any:
    """An Arrow table of `rows` with these column names and types (typed even when empty)."""
    import pyarrow as pa

    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    return pa.table({n: pa.array(list(c), type=t) for n, c, t in zip(names, columns, types, strict=True)})


class QuerySession:
    """A DuckDB connection with a crawl's tables, pages and search() ready to query."""

    def __init__(self, folder: Path, *, db: str = "", search: SearchFunction = index_search) -> None:
        import duckdb

        self.folder = Path(folder)
        self.db = db
        self._search = search
        self._con = duckdb.connect()
        self.tables: list[str] = []
        tables_dir = self.folder / _TABLES_DIR
        for path in sorted(tables_dir.glob("*.parquet")):
            if _NAME.match(path.stem):
                self._view(path.stem, path)
        features = self.folder / _FEATURES
        if features.is_file():
            self._view("pages", features)
        else:
            self._pages_from_crawl()
        if not self.tables:
            raise ConfigError(f"{self.folder} holds no crawl and no tables: crawl, then run "
                              f"`harvestman extract {self.folder}`")

    def _view(self, name: str, path: Path) -> None:
        quoted = str(path).replace("'", "''")
        self._con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM read_parquet(\'{quoted}\')')
        self.tables.append(name)

    def _pages_from_crawl(self) -> None:
        """`pages` from the crawl database when no page features were computed: what it knows of each URL."""
        import pyarrow as pa

        crawl = CrawlDir(self.folder, self.db)
        if not crawl.holds_crawl():
            return
        with crawl.read() as store:
            rows = [(r.url, r.host, r.title, UrlState(r.state).name.lower(), r.http_status, r.content_type,
                     r.depth, r.fetch_time, r.score, r.inlinks, r.duplicate_of) for r in store.records()]
        names = ("url", "host", "title", "state", "http_status", "content_type", "depth", "fetch_time",
                 "score", "inlinks", "duplicate_of")
        types = (pa.string(), pa.string(), pa.string(), pa.string(), pa.int32(), pa.string(), pa.int32(),
                 pa.float64(), pa.float64(), pa.int64(), pa.string())
        self._con.register("__harvestman_pages", _arrow(names, types, rows))
        self._con.execute('CREATE VIEW "pages" AS SELECT * FROM __harvestman_pages')
        self.tables.append("pages")

    def _prepare_search(self, calls: Sequence[SearchCall]) -> None:
        """Run each search call once and make `search(...)` a table macro over their hits."""
        import pyarrow as pa

        rows: list[tuple[Any, ...]] = []
        for call in dict.fromkeys(calls):
            results = self._search(self.folder, call.q, limit=call.max_hits, site=call.site,
                                   category=call.category, db=self.db)
            for rank, hit in enumerate(results.hits[:call.max_hits], 1):
                rows.append((call.q, call.max_hits, call.site, call.category, hit.url, hit.title,
                             float(hit.score), rank, hit.snippet))
        names = ("hit_q", "hit_max", "hit_site", "hit_category", "url", "title", "score", "rank", "snippet")
        types = (pa.string(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string(), pa.float64(),
                 pa.int64(), pa.string())
        self._con.register(_HITS_TABLE, _arrow(names, types, rows))
        self._con.execute(
            f"CREATE OR REPLACE MACRO search(q, max_hits := {DEFAULT_MAX_HITS}, site := NULL, "
            "category := NULL) AS TABLE SELECT url, title, score, rank, snippet "
            f"FROM {_HITS_TABLE} WHERE hit_q = q AND hit_max = max_hits "
            "AND hit_site IS NOT DISTINCT FROM site AND hit_category IS NOT DISTINCT FROM category "
            "ORDER BY rank")

    def run(self, sql: str) -> QueryResult:
        """Run one SQL statement (or several: the last one's rows); a bad one is a one-line ConfigError."""
        import duckdb

        if not sql.strip():
            raise ConfigError(f"no SQL given; tables: {', '.join(sorted(self.tables))}")
        try:
            calls = search_calls(sql)
            if calls:
                self._prepare_search(calls)
            cursor = self._con.execute(sql)
            if cursor.description is None:
                return QueryResult((), ())
            columns = tuple(d[0] for d in cursor.description)
            return QueryResult(columns, tuple(cursor.fetchall()))
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"{first} (tables: {', '.join(sorted(self.tables))}; "
                              f"search('words') for full-text hits)") from None

    def close(self) -> None:
        """Close the DuckDB connection."""
        self._con.close()

    def __enter__(self) -> QuerySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_query(folder: Path, sql: str, *, db: str = "", search: SearchFunction = index_search) -> QueryResult:
    """Run one SQL statement over the crawl in `folder` (see the module docstring)."""
    with QuerySession(folder, db=db, search=search) as session:
        return session.run(sql)

"""Relevance of harvestman's search on real documentation: MRR@10 and nDCG@10 over written queries.

    apt-get install python3.11-doc postgresql-doc-15
    python bench/search_relevance.py [--docs /usr/share/doc/python3.11/html] [--queries FILE ...] [-v]
    python bench/search_relevance.py --docs /usr/share/doc/postgresql-doc-15/html \
        --queries bench/data/postgresql_doc_queries.tsv
    python bench/search_relevance.py ... --keep /tmp/pgcrawl   # crawl once, re-index on later runs

Serves the docs folder with a private nginx on loopback, crawls it with `harvestman crawl
--link-anchors`, builds the index with `harvestman index --rebuild`, and runs each query of the query
files (query, then the pages that answer it). For each system and query file:

- MRR@10: the mean over the queries of 1/rank of the first answering page in the top 10 (0 if none);
- nDCG@10: each answering page found at rank r counts 1/log2(r + 1) (a page once, fragments
  ignored), divided by the best possible (every answering page at the top);

- harvestman: the index as `harvestman search` queries it (docs/search.md, Ranking);
- harvestman, fields apart, no anchors: the same index told to search title, headings, URL and text
  (not anchors): each field scored apart and summed with FIELD_BOOSTS, as harvestman ranked before
  issue 27 (stop words left out, no proximity or definition credits);
- SQLite FTS5 bm25: the same page texts (title, headings, text, URL), Porter-stemmed, the query's
  words OR-ed as in harvestman's default, with fixed field weights (title 4, headings 2, url 1.5,
  text 1: harvestman's before issue 27), so that it stays the same yardstick when ours change.
"""

from __future__ import annotations

import argparse
import math
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvestman.index.export import _documents
from harvestman.index.schema import FIELD_BOOSTS
from harvestman.index.search import SearchIndex
from harvestman.model.errors import QueryError
from tests.support.nginx import NginxServer, free_port

ADDRESS = "127.77.16.1"
HERE = Path(__file__).resolve().parent
_WORD = re.compile(r"\w+")
FTS5_WEIGHTS = {"title": 4.0, "headings": 2.0, "url": 1.5, "text": 1.0}  # fixed: see the docstring


def load_queries(path: Path) -> list[tuple[str, set[str]]]:
    """(query, answering paths) from the TSV file, comments left out."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            query, answers = line.split("\t")
            rows.append((query, set(answers.split())))
    return rows


def reciprocal_rank(urls: list[str], answers: set[str], base: str) -> tuple[float, int]:
    """1/rank of the first answering URL in `urls` (0 when none), and the rank (0 when none)."""
    for rank, url in enumerate(urls[:10], 1):
        if url.split("#", 1)[0].removeprefix(base) in answers:
            return 1.0 / rank, rank
    return 0.0, 0


def ndcg(urls: list[str], answers: set[str], base: str) -> float:
    """nDCG@10 with binary gains: each answering page once, at the rank it first appears."""
    seen: set[str] = set()
    gain = 0.0
    for rank, url in enumerate(urls[:10], 1):
        path = url.split("#", 1)[0].removeprefix(base)
        if path in answers and path not in seen:
            seen.add(path)
            gain += 1.0 / math.log2(rank + 1)
    best = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(answers), 10) + 1))
    return gain / best


def fts5_searcher(out: Path) -> Callable[[str], list[str]]:
    """SQLite FTS5 over the index's stored page texts, bm25 with harvestman's field weights."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE pages USING fts5(url, title, headings, content,"
               " tokenize='porter unicode61')")
    db.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)",
                   ((d["url"], d["title"], d["headings"], d["content"]) for d in _documents(out)))
    weights = ", ".join(str(FTS5_WEIGHTS[f]) for f in ("url", "title", "headings", "text"))
    sql = f"SELECT url FROM pages WHERE pages MATCH ? ORDER BY bm25(pages, {weights}) LIMIT 10"

    def search(query: str) -> list[str]:
        match = " OR ".join(f'"{w}"' for w in _WORD.findall(query))
        rows = db.execute(sql, (match,))
        return [r[0] for r in rows]

    return search


def evaluate(name: str, run: Callable[[str], list[str]], queries: list[tuple[str, set[str]]], base: str,
             verbose: bool) -> None:
    """Print one system's figures on one query set."""
    total, gains, first, found, ranks, refused = 0.0, 0.0, 0, 0, [], 0
    for query, answers in queries:
        try:
            urls = run(query)
        except QueryError:  # the user sees an error message: no answer found
            urls, refused = [], refused + 1
        rr, rank = reciprocal_rank(urls, answers, base)
        total += rr
        gains += ndcg(urls, answers, base)
        first += rank == 1
        found += rank > 0
        ranks.append(rank)
    n = len(queries)
    print(f"  {name:<24} MRR@10 {total / n:.3f}  nDCG@10 {gains / n:.3f}  top1 {first}/{n}  "
          f"top10 {found}/{n}" + (f"  ({refused} refused as bad queries)" if refused else ""))
    if verbose:
        for (query, _), rank in zip(queries, ranks, strict=True):
            if rank != 1:
                print(f"      {rank or '-':>2}  {query}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    parser.add_argument("--queries", type=Path, action="append",
                        help="a query file (repeatable; default bench/data/python_doc_queries.tsv)")
    parser.add_argument("--keep", type=Path, help="crawl into this folder once and reuse it on later runs")
    parser.add_argument("--verbose", "-v", action="store_true", help="each query's ranks")
    args = parser.parse_args()
    if not (args.docs / "index.html").is_file():
        sys.exit(f"no {args.docs}/index.html: apt-get install python3.11-doc postgresql-doc-15")
    sets = [(path, load_queries(path)) for path in args.queries or [HERE / "data" / "python_doc_queries.tsv"]]
    with tempfile.TemporaryDirectory(prefix="search-relevance-") as tmp:
        work = args.keep or Path(tmp)
        root = work / "web"
        out = work / "out"
        base_file = work / "base"
        cli = [sys.executable, "-m", "harvestman.app.cli"]
        if not base_file.is_file():
            root.mkdir(parents=True, exist_ok=True)
            (root / ADDRESS).symlink_to(args.docs.resolve())
            port = free_port(ADDRESS)
            base = f"http://{ADDRESS}:{port}/"
            with NginxServer(root, [ADDRESS], port):
                started = time.perf_counter()
                subprocess.run([*cli, "crawl", base, "--out", str(out), "--allow-net", f"{ADDRESS}/32", "-q",
                                "--link-anchors"], check=True)
                print(f"crawl {time.perf_counter() - started:.1f} s")
            base_file.write_text(base)
        base = base_file.read_text()
        started = time.perf_counter()
        done = subprocess.run([*cli, "index", str(out), "--rebuild"], check=True, capture_output=True,
                              text=True)
        index_seconds = time.perf_counter() - started
        print(f"{args.docs}: {done.stdout.strip()} ({index_seconds:.1f} s with the process)")

        index = SearchIndex(out)
        without = tuple(f for f in FIELD_BOOSTS if f != "anchor")
        systems: dict[str, Callable[[str], list[str]]] = {
            "harvestman": lambda q: [h.url for h in index.search(q).hits],
            "fields apart, no anchors": lambda q: [h.url for h in index.search(q, fields=without).hits],
            "SQLite FTS5 bm25": fts5_searcher(out),
        }
        for path, queries in sets:
            print(f"{len(queries)} queries from {path.name}:")
            for name, run in systems.items():
                evaluate(name, run, queries, base, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())

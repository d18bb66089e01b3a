"""Relevance of harvestman's search on real documentation: MRR@10 over written queries.

    apt-get install python3.11-doc
    python bench/search_relevance.py [--docs /usr/share/doc/python3.11/html] [--queries FILE] [-v]

Serves the docs folder with a private nginx on loopback, crawls it with `harvestman crawl
--link-anchors`, builds the index with `harvestman index`, and runs each query of
bench/data/python_doc_queries.tsv (query, then the pages that answer it). For each system, the mean
over the queries of 1/rank of the first answering page in the top 10 (0 when none is there):

- harvestman: the index as `harvestman search` queries it (title, headings, text, URL, anchors);
- harvestman without anchors: the same index, the anchor field left out of the query;
- SQLite FTS5 bm25: the same page texts (title, headings, text, URL; the same field weights),
  Porter-stemmed, the query's words OR-ed as in harvestman's default.
"""

from __future__ import annotations

import argparse
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
from tests.support.nginx import NginxServer, free_port

ADDRESS = "127.77.16.1"
HERE = Path(__file__).resolve().parent
_WORD = re.compile(r"\w+")


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


def fts5_searcher(out: Path) -> Callable[[str], list[str]]:
    """SQLite FTS5 over the index's stored page texts, bm25 with harvestman's field weights."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE pages USING fts5(url, title, headings, content,"
               " tokenize='porter unicode61')")
    db.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)",
                   ((d["url"], d["title"], d["headings"], d["content"]) for d in _documents(out)))
    weights = ", ".join(str(FIELD_BOOSTS[f]) for f in ("url", "title", "headings", "text"))
    sql = f"SELECT url FROM pages WHERE pages MATCH ? ORDER BY bm25(pages, {weights}) LIMIT 10"

    def search(query: str) -> list[str]:
        match = " OR ".join(f'"{w}"' for w in _WORD.findall(query))
        rows = db.execute(sql, (match,))
        return [r[0] for r in rows]

    return search


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    parser.add_argument("--queries", type=Path, default=HERE / "data" / "python_doc_queries.tsv")
    parser.add_argument("--verbose", "-v", action="store_true", help="each query's ranks")
    args = parser.parse_args()
    if not (args.docs / "index.html").is_file():
        sys.exit(f"no {args.docs}/index.html: apt-get install python3.11-doc")
    queries = load_queries(args.queries)
    with tempfile.TemporaryDirectory(prefix="search-relevance-") as tmp:
        root = Path(tmp) / "web"
        root.mkdir()
        (root / ADDRESS).symlink_to(args.docs.resolve())
        out = Path(tmp) / "out"
        port = free_port(ADDRESS)
        base = f"http://{ADDRESS}:{port}/"
        cli = [sys.executable, "-m", "harvestman.app.cli"]
        with NginxServer(root, [ADDRESS], port):
            started = time.perf_counter()
            subprocess.run([*cli, "crawl", base, "--out", str(out), "--allow-net", f"{ADDRESS}/32", "-q",
                            "--link-anchors"], check=True)
            crawl_seconds = time.perf_counter() - started
        started = time.perf_counter()
        done = subprocess.run([*cli, "index", str(out)], check=True, capture_output=True, text=True)
        index_seconds = time.perf_counter() - started
        print(f"crawl {crawl_seconds:.1f} s; {done.stdout.strip()} ({index_seconds:.1f} s with the process)")

        index = SearchIndex(out)
        without = tuple(f for f in FIELD_BOOSTS if f != "anchor")
        systems: dict[str, Callable[[str], list[str]]] = {
            "harvestman (anchors)": lambda q: [h.url for h in index.search(q).hits],
            "harvestman (no anchors)": lambda q: [h.url for h in index.search(q, fields=without).hits],
            "SQLite FTS5 bm25": fts5_searcher(out),
        }
        print(f"{len(queries)} queries from {args.queries.name}; MRR@10 (and answers in the top 1 / top 10):")
        for name, run in systems.items():
            total, first, found, ranks = 0.0, 0, 0, []
            for query, answers in queries:
                rr, rank = reciprocal_rank(run(query), answers, base)
                total += rr
                first += rank == 1
                found += rank > 0
                ranks.append(rank)
            print(f"  {name:<24} MRR@10 {total / len(queries):.3f}  top1 {first}/{len(queries)}  "
                  f"top10 {found}/{len(queries)}")
            if args.verbose:
                for (query, _), rank in zip(queries, ranks, strict=True):
                    if rank != 1:
                        print(f"      {rank or '-':>2}  {query}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

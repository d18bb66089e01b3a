"""The search index at scale: build pages/s and size, query latency p50/p99, over synthetic pages.

    python bench/search_scale.py [--pages 100000] [--queries 2000]

Pages are generated HTML (~2.5 KB of text over a Zipf-distributed 20,000-word vocabulary, a title,
headings, a nav bar, and 0-5 inlink anchor texts each). The build is what `harvestman index` does
to each page once its body is read from the WARC files: extraction (selectolax), the document, tantivy
indexing, one commit. Queries are 1-3 words (a quarter of them phrases) drawn from the vocabulary,
through `SearchIndex.search` with snippets, as `harvestman search` runs them on an open index.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvestman.index.indexer import WRITER_HEAP, page_document, to_tantivy
from harvestman.index.schema import index_path, open_index
from harvestman.index.search import SearchIndex

VOCABULARY = 20_000


def make_words(rng: random.Random) -> list[str]:
    """A vocabulary of pronounceable made-up words."""
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < VOCABULARY:
        syllables = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables)))
    return sorted(words)


def zipf_cumulative() -> list[float]:
    """Cumulative Zipf weights of the vocabulary's ranks (random.choices' cum_weights)."""
    return list(itertools.accumulate(1.0 / (rank + 1) for rank in range(VOCABULARY)))


def make_page(rng: random.Random, words: list[str], cum: list[float], n: int) -> tuple[str, tuple[str, ...]]:
    """One page's HTML and its inlinks' anchor texts."""
    draw = rng.choices(words, cum_weights=cum, k=420)
    title = " ".join(draw[:4])
    paragraphs = "".join(f"<h2>{' '.join(draw[i:i + 3])}</h2><p>{' '.join(draw[i + 3:i + 60])}</p>"
                         for i in range(4, 420, 60))
    html = (f"<!doctype html><html><head><title>{title} {n}</title></head><body><nav><a href='/'>home</a>"
            f"<a href='/about'>about us</a></nav><main><h1>{title}</h1>{paragraphs}</main>"
            "<footer>copyright</footer></body></html>")
    anchors = tuple(" ".join(rng.choices(words, cum_weights=cum, k=2)) for _ in range(rng.randint(0, 5)))
    return html, anchors


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    words = make_words(rng)
    cum = zipf_cumulative()
    print(f"generating {args.pages} pages ...", flush=True)
    pages = [make_page(rng, words, cum, n) for n in range(args.pages)]
    html_bytes = sum(len(h) for h, _ in pages)
    with tempfile.TemporaryDirectory(prefix="search-scale-") as tmp:
        folder = Path(tmp)
        index = open_index(folder, create=True)
        writer = index.writer(heap_size=WRITER_HEAP)
        extract = 0.0
        started = time.perf_counter()
        for n, (html, anchors) in enumerate(pages):
            t0 = time.perf_counter()
            doc = page_document(f"http://host{n % 1000}.example/p{n}.html", html, anchors=anchors,
                                signature=f"{n:040x}")
            extract += time.perf_counter() - t0
            assert doc is not None
            writer.add_document(to_tantivy(doc))
        writer.commit()
        writer.wait_merging_threads()
        build = time.perf_counter() - started
        size = folder_bytes(index_path(folder))
        print(f"build: {args.pages} pages ({html_bytes / 1e6:.0f} MB of HTML) in {build:.1f} s = "
              f"{args.pages / build:,.0f} pages/s (extraction {extract:.1f} s of it); index "
              f"{size / 1e6:.0f} MB ({size / args.pages / 1e3:.1f} KB a page)")

        search = SearchIndex(folder)
        queries = []
        for _ in range(args.queries):
            terms = rng.choices(words[:5_000], k=rng.randint(1, 3))
            query = " ".join(terms)
            queries.append(f'"{query}"' if len(terms) > 1 and rng.random() < 0.25 else query)
        for query in queries[:50]:  # warm the caches
            search.search(query)
        latencies = []
        hits = 0
        for query in queries:
            t0 = time.perf_counter()
            found = search.search(query)
            latencies.append(time.perf_counter() - t0)
            hits += found.total
        latencies.sort()
        p50 = statistics.median(latencies) * 1e3
        p99 = latencies[int(len(latencies) * 0.99) - 1] * 1e3
        print(f"queries: {len(queries)} (top 10 with snippets, {hits / len(queries):,.0f} matching pages "
              f"on average): p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {latencies[-1] * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU a page of each page feature (index/features.py) on bench/synthweb.py's pages (~20 KB each).

    .venv/bin/python bench/feature_costs.py [--pages 300]

Each feature is timed alone on every page (process CPU time, one core), then the whole
`extract_features`, also given the page's tree already parsed (as a crawl's parse shares it,
model/pagetree.py); the crawl's own parse (crawl/parse.py, links and text), a Lexbor parse and a
clone of a tree are timed beside them for scale. `--features` costs a crawl about the whole; the
default crawl none of it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.synthweb import _page
from harvestman.crawl.parse import parse_html
from harvestman.index import features as f
from harvestman.model.pagetree import PageTree, parse_tree


def synth_pages(count: int) -> list[tuple[str, str]]:
    """(url, html) of `count` pages shaped as synthweb's: log-normal sizes around 20 KB, 20-40 links."""
    import math

    rng = random.Random(3)
    origin = "http://127.20.0.1:8080"
    pages = []
    for i in range(count):
        links = [f"{origin}/p{rng.randrange(count)}.html" for _ in range(rng.randint(20, 40))]
        size = int(min(200_000, max(2_000, rng.lognormvariate(math.log(20_000), 0.5))))
        url = f"{origin}/p{i}.html"
        pages.append((url, _page(url, "127.20.0.1", origin, links, rng, size)))
    return pages


def _time(name: str, work: Callable[[str, str], object], pages: list[tuple[str, str]]) -> float:
    work(*pages[0])  # imports and models loaded out of the timing
    start = time.process_time()
    for url, html in pages:
        work(url, html)
    per_page = (time.process_time() - start) / len(pages) * 1e6
    print(f"  {name:44} {per_page:9.0f} µs/page")
    return per_page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    args = parser.parse_args()
    pages = synth_pages(args.pages)
    texts = {url: f.main_text(html) for url, html in pages}
    kb = sum(len(html) for _, html in pages) / len(pages) / 1024
    print(f"{len(pages)} synthweb pages, {kb:.1f} KB of HTML each on average; CPU a page, one core")
    _time("crawl parse (links + text, for scale)", lambda u, h: parse_html(h, u), pages)
    _time("Lexbor tree (model/pagetree.py's parse)", lambda u, h: parse_tree(h), pages)
    trees = {url: PageTree(html) for url, html in pages}
    for tree in trees.values():
        tree.tree  # noqa: B018 - parsed before the timing, as the crawl's parse leaves it
    _time("a clone of it (PageTree.copy)", lambda u, h: trees[u].copy(), pages)
    _time("DOM parse + tag counts (selectolax)", lambda u, h: f.tag_counts(parse_tree(h)), pages)
    _time("title, description, headings (selectolax)",
          lambda u, h: parse_tree(h).css(f._HEADINGS), pages)
    _time("visible main text (Resiliparse)", lambda u, h: f.main_text(h), pages)
    _time("sentences (Bling Fire), given the text", lambda u, h: f.split_sentences(texts[u]), pages)
    _time("language (py3langid), given the text", lambda u, h: f.detect_language(texts[u]), pages)
    _time("word n-grams 1-3, top 20, given the text", lambda u, h: f.top_ngrams(texts[u]), pages)
    _time("extract_features: all of them", lambda u, h: f.extract_features(h, u), pages)
    _time("extract_features on the crawl's shared tree", lambda u, h: f.extract_features(h, u, tree=trees[u]),
          pages)


if __name__ == "__main__":
    main()

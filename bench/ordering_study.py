"""Ordering study: how soon each crawl order fetches the pages that matter (Cho, Garcia-Molina and
Page, 1998; Abiteboul et al., 2003), on the benchmark web's link graph.

The crawl is replayed over the known graph as the crawl cycle runs it: rounds of `generate --top-n`
(1% of the pages a round, best first by the order's current scores, computed from what the crawl
has fetched so far), then fetch, then updatedb. Printed: the share of the top 1% of pages by
PageRank over the whole graph (damping 0.85) that the crawl holds after fetching 10% of the pages,
for bfs, dfs, indegree (links seen so far), opic (online cash), pagerank (over the graph seen so
far, recomputed every round) and a random order; the median over `--repeats` webs.

    python bench/ordering_study.py [--hosts 100 --pages 201 --repeats 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses

Graph = dict[str, tuple[str, ...]]
ORDERS = ("bfs", "dfs", "indegree", "opic", "pagerank", "random")


def pagerank(nodes: Iterable[str], links: Graph, damping: float = 0.85,
             tol: float = 1e-9) -> dict[str, float]:
    """Classic PageRank over `nodes` and the links among them (distinct, no self links), the mass of
    pages without outlinks spread uniformly, until the L1 change is below `tol`."""
    index = {node: i for i, node in enumerate(nodes)}
    n = len(index)
    out = [sorted({index[t] for t in links.get(node, ()) if t in index and t != node}) for node in index]
    rank = [1.0 / n] * n
    for _ in range(1000):
        dangling = sum(rank[i] for i in range(n) if not out[i])
        new = [(1 - damping) / n + damping * dangling / n] * n
        for i, targets in enumerate(out):
            if targets:
                share = damping * rank[i] / len(targets)
                for t in targets:
                    new[t] += share
        change = sum(abs(a - b) for a, b in zip(new, rank, strict=True))
        rank = new
        if change < tol:
            break
    return {node: rank[i] for node, i in index.items()}


def replay(order: str, links: Graph, seeds: tuple[str, ...], allowed: frozenset[str], budget: int,
           round_size: int, rng: random.Random) -> list[str]:
    """The pages an `order` fetches, in order, until `budget` pages (rounds of `round_size`)."""
    depth: dict[str, int] = dict.fromkeys(seeds, 0)
    found: dict[str, int] = {seed: i for i, seed in enumerate(seeds)}  # insertion order
    inlinks: dict[str, int] = defaultdict(int)
    cash: dict[str, float] = dict.fromkeys(seeds, 1.0 / len(seeds))
    tie = {url: rng.random() for url in links}
    fetched: list[str] = []
    done: set[str] = set()
    while len(fetched) < budget:
        queue = [u for u in found if u not in done]
        if not queue:
            break
        known = pagerank(list(found), links) if order == "pagerank" else {}
        keys: dict[str, tuple[float, ...]] = {
            u: (depth[u], found[u]) if order == "bfs"
            else (-depth[u], found[u]) if order == "dfs"
            else (-inlinks[u], found[u]) if order == "indegree"
            else (-cash.get(u, 0.0), found[u]) if order == "opic"
            else (-known[u], found[u]) if order == "pagerank"
            else (tie[u],)
            for u in queue
        }
        batch = sorted(queue, key=keys.__getitem__)[:min(round_size, budget - len(fetched))]
        for page in batch:
            done.add(page)
            fetched.append(page)
            targets = [t for t in dict.fromkeys(links.get(page, ())) if t in allowed]
            share = cash.pop(page, 0.0) / len(targets) if targets else 0.0
            for target in targets:
                inlinks[target] += 1
                cash[target] = cash.get(target, 0.0) + share
                if target not in found:
                    found[target] = len(found)
                    depth[target] = depth[page] + 1
    return fetched


def study(hosts: int, pages: int, seed: int, fetch_share: float, top_share: float) -> dict[str, float]:
    """The share of the top pages each order holds after fetching `fetch_share` of the web."""
    with tempfile.TemporaryDirectory() as root:
        spec = generate_web(Path(root), host_addresses(hosts), pages, port=8000, seed=seed,
                            median_bytes=2_000)
    allowed = spec.reachable
    graph = {url: targets for url, targets in spec.links.items() if url in allowed}
    truth = pagerank(sorted(allowed), graph)
    top = set(sorted(truth, key=lambda u: -truth[u])[:max(1, int(len(truth) * top_share))])
    budget = int(len(allowed) * fetch_share)
    round_size = max(1, len(allowed) // 100)
    shares = {}
    for order in ORDERS:
        got = replay(order, graph, spec.seeds, allowed, budget, round_size, random.Random(seed))
        shares[order] = len(top.intersection(got)) / len(top)
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=201, help="pages a host")
    parser.add_argument("--repeats", type=int, default=3, help="webs (seeds) to median over")
    parser.add_argument("--fetched", type=float, default=0.10, help="share of the web fetched")
    parser.add_argument("--top", type=float, default=0.01, help="share of pages that matter (by PageRank)")
    args = parser.parse_args()
    seeds = range(1, args.repeats + 1)
    runs = [study(args.hosts, args.pages, seed, args.fetched, args.top) for seed in seeds]
    print(f"web: {args.hosts} hosts x {args.pages} pages (bench/synthweb.py), rounds of 1% of the pages;"
          f" top {args.top:.0%} by PageRank, share held after {args.fetched:.0%} fetched"
          f" (median of {args.repeats} webs)")
    for order in ORDERS:
        values = [run[order] for run in runs]
        print(f"  {order:9s} {statistics.median(values):6.1%}   ({', '.join(f'{v:.1%}' for v in values)})")


if __name__ == "__main__":
    main()

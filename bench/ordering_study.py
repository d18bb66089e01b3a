"""Ordering study: how soon each crawl order fetches the pages that matter (Cho, Garcia-Molina and
Page, 1998; Abiteboul et al., 2003), on the benchmark web's link graph.

The crawl is replayed over the known graph as the crawl cycle runs it: rounds of `generate --top-n`
(1% of the pages a round, best first by the order's current scores, computed from what the crawl
has fetched so far), then fetch, then updatedb. Printed: the share of the top 1% of pages by
PageRank over the whole graph (damping 0.85) that the crawl holds after fetching 10% of the pages,
for bfs, dfs, indegree (links seen so far), opic (online cash), pagerank (over the graph seen so
far, recomputed every round) and a random order; the median over `--repeats` webs.

    python bench/ordering_study.py [--hosts 100 --pages 201 --repeats 3]

With --live, the web is served (nginx, one loopback address a host, as bench/crawl_vs_peers.py
serves it) and crawled for real by harvestman, once an order a run, from the first host's front
page (every host in scope, as the replay) with `--max-pages` 10% of the reachable pages,
`--concurrency` fetches at once and `--per-host`
a host (fewer slots than hosts, as on the web, so that the order across hosts matters): bfs; opic
(online OPIC); pagerank (the ranks of a previous, whole crawl of the same web, `harvestman rank
--algorithm pagerank`, then its pages fetched again from its database with --order pagerank); and
score (a link scorer that prefers a site's front page and first pages, /pN.html with a low N, which
the web's heavy-tailed in-links favour). Printed per order: the share of the top 1% of pages by
PageRank among the first 10% of pages nginx served the crawl (median of `--runs`). With
--baseline CHECKOUT, that checkout's harvestman crawls too, taking turns (before and after a
change). --host-skew makes links to other hosts favour the first hosts (a few sites matter more).

    python bench/ordering_study.py --live [--hosts 40 --pages 101 --runs 3 --concurrency 16
                                          --per-host 2 --host-skew --baseline CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from tests.support.nginx import NginxServer, free_port

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


# The crawls of --live, run by each checkout's harvestman in a process of its own (its src/ on
# PYTHONPATH): one job, given as JSON.
DRIVER = r'''
import asyncio, json, sqlite3, sys
from pathlib import Path


class FrontPagesFirst:
    """A link scorer: a site's front page, then its pages by their number (/p1.html before /p90.html)."""

    def __call__(self, page, link):
        if "/private/" in link.url:
            return 0.0
        name = link.url.rsplit("/", 1)[-1]
        number = int(name[1:-5]) if name.startswith("p") and name.endswith(".html") else 0
        return 1.0 / (1 + number)


def main():
    job = json.loads(sys.argv[1])
    out = Path(job["out"])
    if job["do"] == "rank":
        from harvestman.batch.jobs import rank
        rank(out, algorithm="pagerank")
        return
    from harvestman.model.records import UrlState
    if job["do"] == "reset":  # a previous crawl's database: its fetched pages to fetch again
        db = sqlite3.connect(out / "crawl.db")
        db.execute("UPDATE urls SET state = ?, queued = 1, next_fetch_time = 0, lease_until = 0,"
                   " http_status = 0, etag = '', last_modified = '', signature = '' WHERE state = ?",
                   (int(UrlState.UNFETCHED), int(UrlState.FETCHED)))
        db.execute("UPDATE hosts SET in_flight = 0, ready_at = 0, wake_at = 0, paused_until = 0")
        db.execute("DELETE FROM links")
        db.commit()
        db.close()
        return
    from harvestman.crawl.engine import Crawler
    from harvestman.model.config import CrawlConfig
    budget = job["max_pages"]
    if job["resume"]:  # a resumed crawl counts its URLs done before (robots.txt refusals) in max_pages
        db = sqlite3.connect(out / "crawl.db")
        done = db.execute("SELECT COUNT(*) FROM urls WHERE state <> ?", (int(UrlState.UNFETCHED),))
        budget += done.fetchone()[0]
        db.close()
    cfg = CrawlConfig(seeds=tuple(job["seeds"]), out_dir=out, allow_net=("127.0.0.0/8",), scope="any",
                      ordering=job["order"], max_pages=budget, concurrency=job["concurrency"],
                      per_host=job["per_host"], quiet=True, resume=job["resume"])
    scorer = FrontPagesFirst() if job["order"] == "score" else None
    asyncio.run(Crawler(cfg, scorer=scorer).run())


main()
'''
LIVE_ORDERS = ("bfs", "opic", "pagerank", "score")


def live(args: argparse.Namespace) -> None:
    """Serve the web and crawl it for real, an order at a time (see the top)."""
    hosts = host_addresses(args.hosts, prefix="127.22")
    here = Path(__file__).resolve().parent.parent
    checkouts = {"harvestman": here}
    if args.baseline:
        checkouts["harvestman@base"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory(prefix="harvestman-order-") as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        spec = generate_web(root / "web", hosts, args.pages, port=port, seed=args.seed, median_bytes=2_000,
                            host_skew=args.host_skew)
        allowed = spec.reachable
        graph = {url: targets for url, targets in spec.links.items() if url in allowed}
        truth = pagerank(sorted(allowed), graph)
        top = set(sorted(truth, key=lambda u: -truth[u])[:max(1, int(len(truth) * args.top))])
        budget = int(len(allowed) * args.fetched)
        top_hosts = len({u.split("/")[2] for u in top})
        print(f"web: {args.hosts} hosts x {args.pages} pages, {len(allowed)} reachable"
              f"{', links to other hosts skewed' if args.host_skew else ''}; top {len(top)} pages by"
              f" PageRank on {top_hosts} hosts; {budget} pages a crawl, concurrency {args.concurrency},"
              f" per host {args.per_host}", flush=True)
        (root / "drive.py").write_text(DRIVER)
        python = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        python["PYTHONPYCACHEPREFIX"] = str(root / "pycache")

        def drive(checkout: Path, **job: object) -> None:
            env = {**python, "PYTHONPATH": str(checkout / "src")}
            done = subprocess.run([sys.executable, str(root / "drive.py"), json.dumps(job)], env=env,
                                  cwd=root, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{checkout}: {job['do']} failed: {done.stderr[-1500:]}")

        crawl = {"concurrency": args.concurrency, "per_host": args.per_host}
        shares: dict[tuple[str, str], list[float]] = defaultdict(list)
        with NginxServer(root / "web", hosts, port, by_address=True) as server:
            for name, checkout in checkouts.items():  # the previous, whole crawl that pagerank ranks
                drive(checkout, do="crawl", out=str(root / f"prior-{name}"), seeds=list(spec.seeds),
                      order="bfs", max_pages=0, resume=False, **crawl)
                drive(checkout, do="rank", out=str(root / f"prior-{name}"))
            for n in range(args.runs):
                for order in LIVE_ORDERS:
                    for name, checkout in checkouts.items():
                        out = root / f"{name}-{order}-{n}"
                        if order == "pagerank":
                            shutil.copytree(root / f"prior-{name}", out)
                            drive(checkout, do="reset", out=str(out))
                        before = len(server.requests())
                        drive(checkout, do="crawl", out=str(out), seeds=list(spec.seeds), order=order,
                              max_pages=budget, resume=order == "pagerank", **crawl)
                        served = [f"http://{e.server_addr}:{e.server_port}{e.uri}"
                                  for e in server.requests()[before:]
                                  if e.status == 200 and e.uri != "/robots.txt"]
                        first = served[:budget]
                        share = len(top.intersection(first)) / len(top)
                        shares[order, name].append(share)
                        print(f"run {n + 1} {name:16s} {order:9s} {share:6.1%} of the top pages in the first"
                              f" {len(first)} pages served", flush=True)
        print(f"share of the top {args.top:.0%} by PageRank among the first {args.fetched:.0%} fetched"
              f" (median of {args.runs} runs):")
        for order in LIVE_ORDERS:
            print(f"  {order:9s} " + "   ".join(
                f"{name} {statistics.median(shares[order, name]):6.1%}" for name in checkouts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=201, help="pages a host")
    parser.add_argument("--repeats", type=int, default=3, help="webs (seeds) to median over")
    parser.add_argument("--fetched", type=float, default=0.10, help="share of the web fetched")
    parser.add_argument("--top", type=float, default=0.01, help="share of pages that matter (by PageRank)")
    parser.add_argument("--live", action="store_true", help="crawl the web for real (see the top)")
    parser.add_argument("--runs", type=int, default=3, help="--live: crawls an order (median)")
    parser.add_argument("--seed", type=int, default=1, help="--live: the web's seed")
    parser.add_argument("--concurrency", type=int, default=16, help="--live: fetches at once")
    parser.add_argument("--per-host", type=int, default=2, help="--live: fetches at once a host")
    parser.add_argument("--host-skew", action="store_true", help="links to other hosts favour the first")
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="--live: also crawl with the harvestman of this checkout, taking turns")
    args = parser.parse_args()
    if args.live:
        live(args)
        return
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

"""Crawl a synthetic web with harvestman and, in the same run, with wget2 and Scrapy where installed.

    python bench/crawl_vs_peers.py [--hosts 100] [--pages 201] [--runs 1] [--peers wget2,scrapy]
                                   [--baseline CHECKOUT] [-- extra harvestman crawl options]

The web (bench/synthweb.py) is served by nginx by destination address, one loopback address a host.
Each tool crawls it from every host's front page, robots.txt obeyed, every link followed, 2
concurrent fetches a host. For each it prints pages (requests nginx answered with 200, robots.txt
aside), wall seconds, pages/s, CPU ms per page (user + system of the whole process tree), peak RSS
(of the whole process tree, sampled every 20 ms), and harvestman's ratio to each peer. With --runs
above 1 the tools take turns and medians are printed. Run from the repository root with nginx
installed; Scrapy is looked for as `scrapy` on PATH or given with --scrapy.

With --baseline CHECKOUT (another checkout of harvestman, e.g. a `git worktree` of the commit a change
started from), that checkout's harvestman crawls the same web as one more peer, `harvestman@base`,
taking turns with this one: the before-and-after figures of a change, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from tests.support.nginx import LogEntry, NginxServer, free_port
from tests.support.proctree import TreePeak

HERE = Path(__file__).resolve().parent.parent  # this checkout

SCRAPY_SPIDER = '''
import scrapy
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

class Web(CrawlSpider):
    name = "web"
    start_urls = {seeds!r}
    rules = (Rule(LinkExtractor(), follow=True),)
    custom_settings = {{
        "ROBOTSTXT_OBEY": True, "CONCURRENT_REQUESTS": 64, "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "LOG_LEVEL": "ERROR", "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False,
    }}
'''


@dataclass(frozen=True, slots=True)
class Run:
    """One tool's crawl: what nginx served it and what it cost."""

    tool: str
    pages: int
    wall: float
    cpu: float
    peak_rss_mb: float
    urls: frozenset[str]
    max_per_host: int  # the most connections one host had open at once, from nginx's log

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu / max(1, self.pages)


def wget2_command(folder: Path, *inputs: str) -> list[str]:
    """wget2 crawling from `inputs` (URLs, or -i FILE) into `folder`: every link, robots.txt obeyed."""
    return ["wget2", "--recursive", "--level=0", "--robots=on", "--quiet", "--max-threads=16",
            "-P", str(folder), *inputs]


def measure(tool: str, cmd: list[str], server: NginxServer, cwd: Path,
            env: dict[str, str] | None = None) -> Run:
    """Run `cmd` (with `env`, if given) to its end and return what it fetched and cost."""
    before_log = len(server.requests())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    with TreePeak(proc.pid) as peak:
        _, stderr = proc.communicate()
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    entries = server.requests()[before_log:]
    served = [e for e in entries if e.status == 200 and e.uri != "/robots.txt"]
    if proc.returncode != 0 or not served:
        print(f"{tool} exited with {proc.returncode} after {len(served)} pages: "
              f"{stderr.decode(errors='replace')[-800:]}")
    urls = frozenset(f"http://{e.server_addr}:{e.server_port}{e.uri}" for e in served)
    return Run(tool, len(served), wall, cpu, peak.kib / 1024, urls, _max_overlap(entries))


def _max_overlap(entries: list[LogEntry]) -> int:
    """The most connections one host had open at once, from nginx's log: a connection lives from
    its first request's start to its last request's end (loopback requests take under the log's
    millisecond, so requests themselves cannot show overlap; kept-alive connections can)."""
    spans: dict[tuple[str, int], list[float]] = {}
    for e in entries:
        span = spans.setdefault((e.server_addr, e.connection), [e.start, e.msec])
        span[0], span[1] = min(span[0], e.start), max(span[1], e.msec)
    edges: dict[str, list[tuple[float, int]]] = {}
    for (host, _), (start, end) in spans.items():
        edges.setdefault(host, []).extend([(start, 1), (end, -1)])
    most = 0
    for host_edges in edges.values():
        now = 0
        for _, step in sorted(host_edges, key=lambda edge: (edge[0], -edge[1])):  # starts first
            now += step
            most = max(most, now)
    return most


def main() -> None:
    """Build the web, crawl it with each tool, print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=201, help="pages per host")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--peers", default="wget2,scrapy", help="comma-separated; '' for none")
    parser.add_argument("--scrapy", default=shutil.which("scrapy"), help="the scrapy command")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="also crawl with the harvestman of this checkout (its src/ first on the path)")
    parser.add_argument("extra", nargs="*", help="extra options for `harvestman crawl` (after --)")
    args = parser.parse_args()
    hosts = host_addresses(args.hosts)
    with tempfile.TemporaryDirectory(prefix="harvestman-bench-") as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        spec = generate_web(root / "web", hosts, args.pages, port=port, seed=args.seed)
        # Every host's front page is a seed, as a user would list the sites to crawl.
        seeds = [f"http://{host}:{port}/" for host in hosts]
        (root / "seeds.txt").write_text("\n".join(seeds) + "\n")
        (root / "spider.py").write_text(SCRAPY_SPIDER.format(seeds=seeds))
        def harvestman(out: str, checkout: Path = HERE) -> list[str]:
            # The command's module: harvestman.app.cli since the layer packages, harvestman.cli before.
            layered = (checkout / "src/harvestman/app/cli.py").is_file()
            cli = "harvestman.app.cli" if layered else "harvestman.cli"
            return [sys.executable, "-m", cli, "crawl", "-i", str(root / "seeds.txt"),
                    "--out", str(root / out), "--quiet", "--allow-net", "127.0.0.0/8", *args.extra]

        here = str(Path(__file__).resolve().parent.parent / "src")
        # Compiled modules cached as an installed package has them, in a folder of this run (not in
        # the checkouts): with PYTHONDONTWRITEBYTECODE set, every crawl compiled all of harvestman
        # again, ~0.1 s of CPU a run (5 µs a page of the default web), a cost no installed copy pays.
        python = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        python["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        envs: dict[str, dict[str, str]] = {"harvestman": {**python, "PYTHONPATH": here}}
        tools: dict[str, Callable[[int], list[str]]] = {"harvestman": lambda n: harvestman(f"h{n}")}
        if args.baseline:
            tools["harvestman@base"] = lambda n: harvestman(f"b{n}", args.baseline.resolve())
            envs["harvestman@base"] = {**python, "PYTHONPATH": str(args.baseline.resolve() / "src")}
        peers = [p for p in args.peers.split(",") if p]
        if "wget2" in peers and shutil.which("wget2"):
            tools["wget2"] = lambda n: wget2_command(root / f"w{n}", "-i", str(root / "seeds.txt"))
        if "scrapy" in peers and args.scrapy:
            tools["scrapy"] = lambda n: [args.scrapy, "runspider", str(root / "spider.py")]
        runs: dict[str, list[Run]] = {tool: [] for tool in tools}
        with NginxServer(root / "web", hosts, port, by_address=True) as server:
            for n in range(args.runs):
                for tool, cmd in tools.items():
                    run = measure(tool, cmd(n), server, root, envs.get(tool))
                    runs[tool].append(run)
                    print(f"run {n + 1} {tool}: {run.pages} pages in {run.wall:.2f} s, "
                          f"{run.pages_per_s:,.0f} pages/s, {run.cpu_ms_per_page:.2f} ms CPU a page",
                          flush=True)
        print(f"web: {args.hosts} hosts x {args.pages} pages, {len(spec.reachable)} reachable, "
              f"{len(spec.disallowed)} disallowed; {args.runs} run(s); cores: {os.cpu_count()}")
        print(f"{'tool':<16}{'pages':>8}{'wall s':>9}{'pages/s':>10}{'CPU ms/page':>13}{'peak RSS MB':>13}")
        medians: dict[str, float] = {}
        for tool, results in runs.items():
            pages = statistics.median(r.pages for r in results)
            wall = statistics.median(r.wall for r in results)
            rate = medians[tool] = statistics.median(r.pages_per_s for r in results)
            cpu = statistics.median(r.cpu_ms_per_page for r in results)
            rss = max(r.peak_rss_mb for r in results)
            print(f"{tool:<16}{pages:>8.0f}{wall:>9.2f}{rate:>10,.0f}{cpu:>13.2f}{rss:>13.0f}")
        mine = runs["harvestman"][-1]
        for tool in runs:
            if tool != "harvestman":
                theirs = runs[tool][-1]
                covered = len(mine.urls & theirs.urls) / max(1, len(theirs.urls))
                print(f"harvestman / {tool}: {medians['harvestman'] / medians[tool]:.2f}x pages/s; "
                      f"fetched {covered:.1%} of the pages {tool} fetched")
        fetched_disallowed = mine.urls & spec.disallowed
        print(f"harvestman fetched {len(mine.urls & spec.reachable)}/{len(spec.reachable)} reachable "
              f"pages, {len(fetched_disallowed)} disallowed; at most {mine.max_per_host} connections "
              f"at once to one host")


if __name__ == "__main__":
    main()

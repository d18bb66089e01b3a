"""Crawl a synthetic multi-host web served by nginx on loopback addresses; print speed and cost.

    python bench/crawl_loopback.py [--hosts 20] [--pages 200] [--page-bytes 20000] [--runs 3]

Each run is a fresh `harvestman crawl` (default options, robots.txt obeyed, WARC and crawl database
written) in a child process; the figures are the median over the runs: pages, wall seconds,
pages/s, CPU ms per page (user + system of the crawler), and peak RSS. Run from the repository root
with nginx installed (`bash .ci/run` installs it).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.nginx import NginxServer, free_port
from tests.sitegen import generate_site


def crawl_once(seeds: list[str], out: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one crawl in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "harvestman.cli", "crawl", *seeds, "--out", str(out), "--quiet",
         "--allow-net", "127.0.0.0/8"],
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024  # ru_maxrss of children: the largest one, in KiB


def main() -> None:
    """Parse options, build the web, crawl it `--runs` times, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=200, help="pages per host")
    parser.add_argument("--links", type=int, default=25, help="links per page")
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    hosts = [f"127.3.{i // 250}.{i % 250 + 1}" for i in range(args.hosts)]
    with tempfile.TemporaryDirectory(prefix="harvestman-bench-") as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        spec = generate_site(root / "site", hosts, args.pages, args.links, seed=1, port=port,
                             page_bytes=args.page_bytes)
        seeds = [f"http://{host}:{port}/" for host in hosts]
        with NginxServer(root / "site", hosts, port) as server:
            walls, cpus, rss = [], [], []
            for run in range(args.runs):
                before = len(server.requests())
                wall, cpu, peak = crawl_once(seeds, root / f"out{run}")
                pages = len(server.requests()) - before
                walls.append(wall)
                cpus.append(cpu / pages)
                rss.append(peak)
        wall = statistics.median(walls)
        print(f"web: {args.hosts} hosts x {args.pages} pages (~{args.page_bytes // 1000} KB, "
              f"{args.links} links), {len(spec.reachable)} reachable; {args.runs} runs, "
              f"cores: {os.cpu_count()}")
        print(f"harvestman: {pages} requests, {wall:.2f} s, {pages / wall:,.0f} pages/s, "
              f"{statistics.median(cpus) * 1000:.2f} ms CPU/page, peak RSS {max(rss):.0f} MB")


if __name__ == "__main__":
    main()

"""What `harvestman export DIR --what markdown` costs a page: CPU and wall time, on a crawl of
bench/synthweb.py's web (made here, served by nginx on loopback) or on a crawl folder given.

    python bench/markdown_export.py [--hosts 10 --pages 200] [--dir CRAWL] [--runs 3] [--profile]
                                    [--baseline CHECKOUT]

Each run is the command as a user types it, in a process of its own (its CPU: user + system, read
from the children's rusage); the figures are the medians of the runs, a page being a row of the pages
table. `--baseline` runs another checkout's harvestman (its src/ first on the path) in turns with
this one, so both meet the same machine. `--profile` runs it once more under cProfile (CPU time) and
prints the functions that cost most.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from tests.support.nginx import NginxServer, free_port


def make_crawl(folder: Path, hosts: int, pages: int) -> Path:
    """A crawl of a synthetic web of `hosts` x `pages` in `folder`/crawl."""
    addresses = host_addresses(hosts, prefix="127.36")
    port = free_port(addresses[0])
    spec = generate_web(folder / "web", addresses, pages, port=port)
    out = folder / "crawl"
    with NginxServer(folder / "web", addresses, port, by_address=True):
        subprocess.run([sys.executable, "-m", "harvestman.app.cli", "crawl", *spec.seeds, "--out", str(out),
                        "--allow-net", "127.36.0.0/16", "--scope", "any", "-q"], check=True)
    return out


def export(crawl: Path, out: Path, fmt: str, src: Path | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, pages) of one export in a process of its own (`src`: the
    harvestman package of another checkout)."""
    env = {**os.environ, "PYTHONPATH": str(src)} if src else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harvestman.app.cli", "export", str(crawl), "--what",
                           "markdown", "--format", fmt, "--out", str(out)],
                          check=True, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int(done.stdout.split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, help="a crawl folder to export (default: crawl a synthetic web)")
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=200, help="pages a host")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--format", default="jsonl", choices=("jsonl", "parquet"))
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one more run")
    parser.add_argument("--baseline", type=Path, help="another checkout, run in turns with this one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="harvestman-mdbench-") as tmp:
        crawl = args.dir or make_crawl(Path(tmp), args.hosts, args.pages)
        out = Path(tmp) / f"markdown.{args.format}"
        checkouts = {"this checkout": None}
        if args.baseline:
            checkouts[f"baseline {args.baseline}"] = args.baseline.resolve() / "src"
        runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in checkouts}
        for _ in range(args.runs):
            for name, src in checkouts.items():
                runs[name].append(export(crawl, out, args.format, src))
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        for name, done in runs.items():
            pages = done[0][2]
            wall = statistics.median(r[0] for r in done)
            cpu = statistics.median(r[1] for r in done)
            print(f"{name}: {pages} pages, median of {args.runs} runs: {1000 * cpu / pages:.2f} ms CPU a "
                  f"page, {1000 * wall / pages:.2f} ms wall a page ({wall:.1f} s)")
        if args.profile:
            from harvestman.app.cli import main as cli

            profile = cProfile.Profile(time.process_time)  # CPU: the machine may be busy
            profile.runcall(cli, ["export", str(crawl), "--what", "markdown", "--format", args.format,
                                  "--out", str(out)])
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()

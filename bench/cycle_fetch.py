"""A segment fetch of the crawl cycle against the continuous crawl, on the same nginx-served site.

    python bench/cycle_fetch.py [--hosts 4] [--pages 500] [--workers 2]

The site (tests/support/sitegen.py) has HOSTS hosts of PAGES pages each, served by nginx on loopback.
The continuous crawl fetches it from the first host's front page (scope any, robots.txt obeyed).
The cycle injects every page of the site as a seed, generates one segment of them all and fetches
it: the same pages, the same engine, the segment's own store. Printed: pages fetched, wall seconds
of the fetch (`harvestman crawl` / `harvestman fetch`), pages/s; and, for the cycle, the seconds of
inject, generate and updatedb. One run each.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.nginx import NginxServer, free_port
from tests.support.sitegen import generate_site


def _run(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harvestman.app.cli", *args], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    hosts = [f"127.11.0.{i + 1}" for i in range(args.hosts)]
    net = ("--allow-net", "127.11.0.0/16", "--workers", str(args.workers), "-q", "--scope", "any")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        port = free_port(hosts[0])
        spec = generate_site(tmp / "site", hosts, args.pages, 8, seed=1, port=port, page_bytes=4000)
        pages = sorted(spec.reachable)
        (tmp / "seeds.txt").write_text("\n".join(pages) + "\n")
        with NginxServer(tmp / "site", hosts, port) as server:
            crawl = _run("crawl", *spec.seeds, "--out", str(tmp / "continuous"), *net)
            continuous = sum(1 for e in server.requests() if e.status == 200 and not e.uri.endswith(".txt"))
            before = len(server.requests())
            inject = _run("inject", str(tmp / "cycle"), "-i", str(tmp / "seeds.txt"), *net)
            generate = _run("generate", str(tmp / "cycle"), "--top-n", str(len(pages)))
            fetch = _run("fetch", str(tmp / "cycle"), "-q")
            cycle = sum(1 for e in server.requests()[before:]
                        if e.status == 200 and not e.uri.endswith(".txt"))
            updatedb = _run("updatedb", str(tmp / "cycle"))
    print(f"site: {args.hosts} hosts x {args.pages} pages (~4 KB), {len(pages)} reachable; "
          f"--workers {args.workers}")
    print(f"continuous crawl : {continuous:6d} pages {crawl:7.2f} s {continuous / crawl:8.1f} pages/s")
    print(f"segment fetch    : {cycle:6d} pages {fetch:7.2f} s {cycle / fetch:8.1f} pages/s "
          f"(inject {inject:.2f} s, generate {generate:.2f} s, updatedb {updatedb:.2f} s)")


if __name__ == "__main__":
    main()

"""What collecting and serving metrics costs a crawl: CPU a page with --metrics-port off (the
default) and on, crawls alternating, on bench/synthweb.py's web served by nginx on loopback.

    python bench/metrics_cost.py [--hosts 4] [--pages 400] [--repeats 5] [--workers 1] [--base SRC]

Printed: for each setting, the median over `--repeats` of the CPU (user + system) of the crawl's
processes per page, in µs, and the wall time. With the port on, a scraper reads /metrics every
`--scrape` seconds during the crawl, as Prometheus would (its own CPU is not counted). Timings on a
shared machine are noisy: compare medians of alternating runs. With `--base SRC` (another
checkout's src/ folder, main's say), a third setting alternates with them: that code's default crawl,
what "off" is to cost nothing against. Run from the repository root.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from tests.support.crawlcheck import harvestman_cmd
from tests.support.nginx import NginxServer, free_port


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _scraper(port: int, stop: threading.Event, every: float, scrapes: list[int]) -> None:
    while not stop.wait(every):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
                reply.read()
                scrapes[0] += 1
        except OSError:
            pass


def crawl(seed: str, out: Path, workers: int, metrics_port: int, scrape: float,
          src: str = "") -> tuple[float, float, int]:
    """One crawl (of the code in `src`, else this checkout's): (CPU seconds, wall seconds, scrapes)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    args = [seed, "--out", str(out), "--allow-net", "127.0.0.0/8", "--quiet", "--scope", "any",
            "--workers", str(workers)]
    if metrics_port:
        args += ["--metrics-port", str(metrics_port)]
    stop, scrapes = threading.Event(), [0]
    scraper = threading.Thread(target=_scraper, args=(metrics_port, stop, scrape, scrapes), daemon=True)
    before, started = _children_cpu(), time.monotonic()
    if metrics_port:
        scraper.start()
    done = subprocess.run(harvestman_cmd("crawl", *args), capture_output=True, text=True, timeout=600,
                          env=env)
    wall = time.monotonic() - started
    stop.set()
    if done.returncode != 0:
        raise SystemExit(f"crawl failed: {done.stderr}")
    return _children_cpu() - before, wall, scrapes[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--scrape", type=float, default=1.0, help="seconds between scrapes")
    parser.add_argument("--base", default="", metavar="SRC", help="another checkout's src/ to compare with")
    opts = parser.parse_args()
    hosts = host_addresses(opts.hosts, prefix="127.28")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        spec = generate_web(root / "web", hosts, opts.pages, port=port)
        pages = len(spec.reachable)
        names = ("base", "off", "on") if opts.base else ("off", "on")
        cpu: dict[str, list[float]] = {name: [] for name in names}
        wall: dict[str, list[float]] = {name: [] for name in names}
        with NginxServer(root / "web", hosts, port, by_address=True):
            for i in range(opts.repeats):
                for name in names:
                    metrics_port = free_port("127.0.0.1") if name == "on" else 0
                    src = opts.base if name == "base" else ""
                    used, took, scrapes = crawl(spec.seeds[0], root / f"out-{name}-{i}", opts.workers,
                                                metrics_port, opts.scrape, src)
                    cpu[name].append(used)
                    wall[name].append(took)
                    extra = f", {scrapes} scrapes" if name == "on" else ""
                    print(f"run {i + 1} {name:>3}: {used / pages * 1e6:7.1f} µs CPU a page, "
                          f"{took:5.2f} s{extra}", flush=True)
        print(f"\n{pages} pages, {opts.hosts} hosts, --workers {opts.workers}, medians of {opts.repeats}:")
        for name in names:
            per_page = statistics.median(cpu[name]) / pages * 1e6
            what = f"{opts.base}, default" if name == "base" else f"--metrics-port {name}"
            print(f"  {what:>24}: {per_page:7.1f} µs CPU a page, "
                  f"{statistics.median(wall[name]):5.2f} s wall")


if __name__ == "__main__":
    main()

"""Rendered crawling: harvestman --render always beside Crawlee's PlaywrightCrawler (Python), driving
the same system Chromium over the same nginx-served site, in the same run.

    python bench/render_crawl.py [--pages 200] [--concurrency 2] [--runs 1] [--peer-python PATH]
                                 [--settle idle|selector] [--recycle 50]

The site: PAGES pages, each an application shell whose inline script fetches /data/N.json from the
same host and builds the page's text (~2 KB) and its links (6 a page) from it, so a crawler that
does not run scripts finds nothing past the first page. Each tool crawls it from page 0 with
CONCURRENCY pages at once in one browser, waiting for each page the same way: `idle` (harvestman's
idle rule; the peer waits for Playwright's "networkidle", 500 ms without a request) or `selector`
(until `#root a` exists). Printed: pages nginx served (HTML pages only), wall seconds, pages/s, CPU
ms per page (user + system of the whole process tree: crawler, driver, browser), peak RSS of the
tree, and for harvestman the tree's RSS sampled over the run (first, middle and last tenth: flat when
contexts are recycled). The peer runs from its own virtualenv (--peer-python; make one with
`python -m venv /tmp/crawlee && /tmp/crawlee/bin/pip install 'crawlee[playwright]'`; never
`playwright install`: both drive /usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.nginx import NginxServer, free_port
from tests.support.proctree import _stats, tree_rss_kb

HOST = "127.88.21.1"
CHROMIUM = "/usr/bin/chromium"
WORDS = ["render", "browser", "crawler", "page", "script", "link", "text", "archive", "politeness",
         "frontier"]

PEER = '''
import asyncio, sys
from datetime import timedelta
from crawlee import ConcurrencySettings
from crawlee.crawlers import PlaywrightCrawler, PlaywrightCrawlingContext

START, CONCURRENCY, LIMIT, SETTLE = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

async def main() -> None:
    crawler = PlaywrightCrawler(
        headless=True, browser_type="chromium",
        browser_launch_options={"executable_path": "/usr/bin/chromium", "chromium_sandbox": False},
        concurrency_settings=ConcurrencySettings(min_concurrency=CONCURRENCY, desired_concurrency=CONCURRENCY,
                                                 max_concurrency=CONCURRENCY),
        max_requests_per_crawl=LIMIT, navigation_timeout=timedelta(seconds=30),
    )

    @crawler.router.default_handler
    async def handler(context: PlaywrightCrawlingContext) -> None:
        if SETTLE == "idle":
            await context.page.wait_for_load_state("networkidle")
        else:
            await context.page.wait_for_selector("#root a")
        await context.enqueue_links(strategy="same-hostname")

    await crawler.run([START])

asyncio.run(main())
'''


def write_site(root: Path, pages: int) -> None:
    """PAGES shells and their JSON data: text and links exist only after the script runs."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    for i in range(pages):
        links = sorted({(i + 1) % pages, *((i * 7 + k * 13) % pages for k in range(5))})
        text = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(300))
        data = {"text": text, "links": [f"/p{n}.html" for n in links]}
        (root / "data" / f"{i}.json").write_text(json.dumps(data))
        (root / f"p{i}.html").write_text(
            "<!doctype html><html><head><meta charset='utf-8'><title>p</title></head><body>"
            '<div id="root"></div><script>'
            f"fetch('/data/{i}.json').then(function(r){{return r.json()}}).then(function(d){{"
            "document.getElementById('root').innerHTML='<p>'+d.text+'</p>'+"
            "d.links.map(function(l){return '<a href=\"'+l+'\">'+l+'</a>'}).join(' ');});"
            "</script></body></html>")


def tree_pss_kib(pid: int) -> int:
    """The summed PSS of `pid` and its descendants: shared pages (Chromium's many processes map the
    same 200 MB binary) counted once, split among their users, unlike RSS."""
    stats = _stats()
    tree = [pid]
    for p in tree:  # bounded: each pid is added once, as the child of one already listed
        tree.extend(child for child, fields in stats.items() if int(fields[1]) == p)
    total = 0
    for p in tree:
        try:
            with open(f"/proc/{p}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


@dataclass
class Result:
    tool: str
    pages: int
    seconds: float
    cpu: float
    peak_rss_kib: int
    rss_series: list[int]  # the tree's PSS, sampled


def measure(tool: str, command: list[str], server: NginxServer, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> Result:
    before = len(server.requests())
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a chatty tool must not block on it
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        series: list[int] = []
        peak = 0
        while proc.poll() is None:  # bounded by the tool's own end (each has a page limit)
            peak = max(peak, tree_rss_kb(proc.pid))
            series.append(tree_pss_kib(proc.pid))
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        print(f"{tool} failed ({proc.returncode}): {stderr[-1500:]}", file=sys.stderr)
    if os.environ.get("BENCH_DEBUG"):
        print(stderr[-3000:], file=sys.stderr)
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    pages = sum(1 for e in server.requests()[before:] if e.status == 200 and e.uri.endswith(".html"))
    return Result(tool, pages, elapsed, cpu, peak, series)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--settle", choices=("idle", "selector"), default="idle")
    parser.add_argument("--recycle", type=int, default=50)
    parser.add_argument("--peer-python", default="", help="python of a virtualenv with crawlee[playwright]")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="render-bench-"))
    try:
        write_site(work / "www" / HOST, args.pages)
        port = free_port(HOST)
        server = NginxServer(work / "www", [HOST], port)
        start = f"http://{HOST}:{port}/p0.html"
        settle = "idle" if args.settle == "idle" else "selector:#root a"
        results: dict[str, list[Result]] = {}
        with server:
            for run in range(args.runs):
                out = work / f"out-{run}"
                hm = [sys.executable, "-m", "harvestman.app.cli", "crawl", start, "--out", str(out),
                      "--quiet",
                      "--workers", "1", "--allow-net", f"{HOST}/32", "--render", "always",
                      "--render-concurrency", str(args.concurrency), "--per-host", str(args.concurrency),
                      "--render-settle", settle, "--max-wait", "1", "--max-pages", str(args.pages)]
                config = work / "recycle.toml"
                config.write_text(f"[rendering]\nrender_recycle = {args.recycle}\n")
                hm += ["--config", str(config)]
                results.setdefault("harvestman", []).append(measure("harvestman", hm, server))
                if args.peer_python:
                    storage = work / f"crawlee-{run}"
                    script = work / "peer.py"
                    script.write_text(textwrap.dedent(PEER))
                    env = {**os.environ, "CRAWLEE_STORAGE_DIR": str(storage), "CRAWLEE_PURGE_ON_START": "1",
                           "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}
                    peer = [str(Path(args.peer_python).absolute()), str(script), start,
                            str(args.concurrency), str(args.pages), args.settle]
                    results.setdefault("crawlee-playwright", []).append(
                        measure("crawlee-playwright", peer, server, env=env, cwd=work))
        print(f"{args.pages} script-built pages, concurrency {args.concurrency}, settle {args.settle}, "
              f"{os.cpu_count()} cores, medians of {args.runs} run(s)")
        print(f"{'tool':<20} {'pages':>6} {'seconds':>8} {'pages/s':>8} {'CPU ms/page':>12} "
              f"{'peak RSS MiB':>13} {'peak PSS MiB':>13}")
        for tool, runs in results.items():
            pages = statistics.median(r.pages for r in runs)
            seconds = statistics.median(r.seconds for r in runs)
            cpu = statistics.median(r.cpu / max(1, r.pages) for r in runs)
            rss = statistics.median(r.peak_rss_kib for r in runs)
            pss = statistics.median(max(r.rss_series or [0]) for r in runs)
            print(f"{tool:<20} {pages:>6.0f} {seconds:>8.1f} {pages / seconds:>8.2f} {cpu * 1000:>12.0f} "
                  f"{rss / 1024:>13.0f} {pss / 1024:>13.0f}")
        series = results["harvestman"][-1].rss_series
        if len(series) >= 10:
            tenth = len(series) // 10
            parts = [series[:tenth], series[len(series) // 2 - tenth // 2:len(series) // 2 + tenth // 2 + 1],
                     series[-tenth:]]
            print("harvestman tree PSS over the run (MiB, mean of the first, middle, last tenth): "
                  + " / ".join(f"{statistics.mean(p) / 1024:.0f}" for p in parts))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

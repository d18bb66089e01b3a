"""How fast would a crawl be if parsing and WARC writing cost nothing? A bound on native code's gain.

    python bench/stage_bound.py [--hosts 100] [--pages 201] [--runs 3]

Crawls a synthetic web (bench/synthweb.py, served by nginx) with harvestman's defaults four ways,
and with wget2 in the same run where installed:

  as is          `harvestman crawl`, unchanged
  no warc        WarcWriter.write does nothing (no records, no gzip, no digests)
  no parse       parse_html answers from a table of every page's parse, filled before the crawl
  neither        both of the above

Everything else (fetching, robots.txt, normalization, the seen check, the crawl database, events)
runs as in a real crawl. The table is filled in the crawl's own process before it starts (the workers
inherit it when forked); its CPU and wall time are taken off that run's figures. What "neither" costs
a page is what a crawl would cost if parsing and WARC writing moved to native code and became free:
compare it with wget2's whole page. Printed: medians of pages/s and of CPU ms a page.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.crawl_vs_peers import Run, measure, wget2_command
from bench.synthweb import generate_web, host_addresses
from tests.support.nginx import NginxServer, free_port

_STARTED = time.perf_counter()  # a child's preparation is taken off its figures from here

VARIANTS = {"as is": "", "no warc": "warc", "no parse": "parse", "neither": "warc,parse"}


def crawl_with_stubs(stubs: str, web: Path, port: int, argv: list[str]) -> None:
    """The child: `harvestman crawl argv` with the named stages stubbed out."""
    import harvestman.crawl.engine
    import harvestman.store.warc
    from harvestman.app.cli import main
    from harvestman.crawl.parse import parse_html

    if "warc" in stubs:
        harvestman.store.warc.WarcWriter.write = lambda *args, **kwargs: None
    if "parse" in stubs:
        # The URL each page is fetched under: a host's front page as "/", the others by name.
        table = {}
        for page in web.glob("*/*.html"):
            path = "" if page.name == "index.html" else page.name
            url = f"http://{page.parent.name}:{port}/{path}"
            table[url] = parse_html(page.read_text(encoding="utf-8"), url, with_text=False)
        harvestman.crawl.engine.parse_html = lambda text, url, **kwargs: table[url]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, wall = usage.ru_utime + usage.ru_stime, time.perf_counter() - _STARTED
    (web.parent / "prepared.txt").write_text(f"{cpu} {wall}")
    sys.argv = ["harvestman", *argv]
    sys.exit(main())


def main() -> None:
    """Build the web, crawl it each way, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=201, help="pages per host")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    hosts = host_addresses(args.hosts)
    with tempfile.TemporaryDirectory(prefix="harvestman-bound-") as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        generate_web(root / "web", hosts, args.pages, port=port, seed=args.seed)
        seeds = root / "seeds.txt"
        seeds.write_text("".join(f"http://{host}:{port}/\n" for host in hosts))
        runs: dict[str, list[Run]] = {name: [] for name in VARIANTS}
        if shutil.which("wget2"):
            runs["wget2"] = []
        with NginxServer(root / "web", hosts, port, by_address=True) as server:
            for n in range(args.runs):
                for name in runs:
                    if name == "wget2":
                        run = measure(name, wget2_command(root / f"w{n}", "-i", str(seeds)), server, root)
                    else:
                        out = root / f"h{n}-{name.replace(' ', '-')}"
                        cmd = [sys.executable, __file__, "--child", VARIANTS[name], str(root / "web"),
                               str(port), "crawl", "-i", str(seeds), "--out", str(out), "--quiet",
                               "--allow-net", "127.0.0.0/8"]
                        prepared = root / "prepared.txt"
                        prepared.unlink(missing_ok=True)  # never the figures of an earlier run
                        run = measure(name, cmd, server, root)
                        if not prepared.exists():
                            sys.exit(f"{name}: the crawl ended before it started")
                        cpu, wall = map(float, prepared.read_text().split())
                        run = replace(run, cpu=run.cpu - cpu, wall=run.wall - wall)
                    runs[name].append(run)
                    print(f"run {n + 1} {name}: {run.pages} pages, {run.pages_per_s:,.0f} pages/s, "
                          f"{run.cpu_ms_per_page:.2f} ms CPU a page", flush=True)
    print(f"web: {args.hosts} hosts x {args.pages} pages; {args.runs} run(s); cores: {os.cpu_count()}")
    print(f"{'crawl':<11}{'pages':>8}{'pages/s':>10}{'CPU ms/page':>13}")
    for name, results in runs.items():
        pages = statistics.median(r.pages for r in results)
        rate = statistics.median(r.pages_per_s for r in results)
        cpu = statistics.median(r.cpu_ms_per_page for r in results)
        print(f"{name:<11}{pages:>8.0f}{rate:>10,.0f}{cpu:>13.2f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        crawl_with_stubs(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    else:
        main()

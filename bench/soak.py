"""Soak: crawl a steady web of tiny pages; print pages/s and memory over time, and the memory slope.

    python bench/soak.py [--hosts 100] [--pages 1000] [--window 10] [--warmup 0.2]
                         [-- extra harvestman crawl options]

The web and the crawl are tests/test_load.py's soak (tests/support/loadweb.py): --hosts loopback hosts of
--pages tiny pages each, served by nginx by destination address, crawled by one `harvestman crawl`
of every front page in a child process while the resident memory of its whole process tree is
sampled every 0.5 s. Printed: pages/s (from nginx's log), RSS and processes for each --window
seconds, then the least-squares slope of RSS over pages served after the first --warmup share of
them, and the peak. `--pages 10000` soaks 10^6 pages. Run from the repository root with nginx
installed (`bash .ci/run` installs it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.loadweb import MiB, memory_trend, pages_at, rate_windows, run_soak


def main() -> None:
    """Write the web, crawl it once, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=1000, help="pages per host")
    parser.add_argument("--window", type=float, default=10.0, help="seconds a line (default 10)")
    parser.add_argument("--warmup", type=float, default=0.2, help="share of pages left out of the fit")
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds the crawl may take")
    parser.add_argument("extra", nargs="*", help="extra options for `harvestman crawl` (after --)")
    args = parser.parse_args()
    if args.hosts < 1 or args.pages < 2 or args.window <= 0 or not 0 <= args.warmup < 1:
        parser.error("--hosts >= 1, --pages >= 2, --window > 0 and --warmup in [0, 1) please")
    with tempfile.TemporaryDirectory(prefix="harvestman-soak-") as tmp:
        soak = run_soak(Path(tmp), args.hosts, args.pages, timeout=args.timeout, extra=args.extra)
    run, page_times = soak.run, soak.page_times
    if run.returncode != 0:
        print(f"harvestman exited with {run.returncode}: {run.stderr[-2000:]}")
    print(f"{args.hosts} hosts x {args.pages} pages; cores: {os.cpu_count()}")
    print(f"{'t s':>7}{'pages':>9}{'pages/s':>9}{'RSS MB':>8}{'procs':>7}")
    for start, rate in rate_windows(page_times, run.started, args.window):
        end = run.started + start + args.window
        now = [s for s in run.samples if s.time <= end][-1:]
        rss, procs = (now[0].rss / MiB, now[0].processes) if now else (0.0, 0)
        print(f"{start:>7.0f}{pages_at(page_times, end):>9}{rate:>9.0f}{rss:>8.0f}{procs:>7}")
    trend = memory_trend(run.samples, page_times, args.warmup)
    print(f"{len(page_times)} of {soak.expected_pages} pages in {run.elapsed:.1f} s "
          f"({len(page_times) / run.elapsed:.0f} pages/s); RSS after warm-up {trend.warm_mb:.0f} -> "
          f"{trend.end_mb:.0f} MB, slope {trend.slope_mb_per_100k:+.2f} MB per 10^5 pages over "
          f"{trend.points} samples; peak {trend.peak_mb:.0f} MB")


if __name__ == "__main__":
    main()

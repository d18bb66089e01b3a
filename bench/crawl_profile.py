"""Where a crawl's CPU goes: `harvestman crawl` of bench/synthweb.py's web under cProfile or py-spy.

    python bench/crawl_profile.py [--hosts 30] [--pages 101] [--tool cprofile|py-spy|none]
                                  [--top 40] [--sort tottime] [-- extra harvestman crawl options]

The web is served by nginx as bench/crawl_vs_peers.py serves it. With cprofile the crawl runs in this
process, every thread profiled (`--workers 1`, the default here: cProfile sees one process only), and
the top functions are printed with their µs a page (own time, and with callees; cProfile's clock is
the wall clock and its overhead doubles a crawl's CPU, so read shares, not absolute figures). With
py-spy the command runs as a child, sampled with its workers (--subprocesses, 500 Hz, --nonblocking):
the top functions by own and by inclusive samples (forked workers that live briefly may be missed).
With none, the command runs as crawl_vs_peers.py runs it and its CPU a page (user + system of its
process tree) is printed: the figure to compare a profile with.

The crawl's fixed costs (start-up, imports, the end) are in every figure: use a web large enough.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import pstats
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from tests.support.nginx import NginxServer, free_port


def _cpu() -> float:
    """CPU seconds of this process and its children (the crawl runs in one or the other)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _pages(server: NginxServer, before: int) -> int:
    return sum(1 for e in server.requests()[before:] if e.status == 200 and e.uri != "/robots.txt")


def _collapsed_top(folded: Path, top: int, lines: bool) -> None:
    """Own samples of each function (the leaf frame) and inclusive samples, from py-spy's raw output;
    by function, or (`lines`) by line."""
    own: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in folded.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        total += n
        frames = stack.split(";")
        if not lines:
            frames = [re.sub(r":\d+\)$", ")", frame) for frame in frames]
        own[frames[-1]] += n
        for frame in set(frames):
            incl[frame] += n
    print(f"{total} samples")
    print("own %   function")
    for frame, n in own.most_common(top):
        print(f"{100 * n / total:5.1f}   {frame}")
    print("incl %  function")
    for frame, n in incl.most_common(top):
        print(f"{100 * n / total:5.1f}   {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=30)
    parser.add_argument("--pages", type=int, default=101)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tool", choices=("cprofile", "py-spy", "none"), default="cprofile")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--lines", action="store_true", help="py-spy: by line, not by function")
    parser.add_argument("--raw", type=Path, help="py-spy: keep its raw (collapsed stacks) output here")
    parser.add_argument("extra", nargs="*", help="extra options for `harvestman crawl` (after --)")
    args = parser.parse_args()
    extra = args.extra or ["--workers", "1"]
    hosts = host_addresses(args.hosts)
    with tempfile.TemporaryDirectory(prefix="harvestman-profile-") as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        generate_web(root / "web", hosts, args.pages, port=port, seed=args.seed)
        seeds = root / "seeds.txt"
        seeds.write_text("".join(f"http://{host}:{port}/\n" for host in hosts))
        argv = ["crawl", "-i", str(seeds), "--out", str(root / "out"), "--quiet",
                "--allow-net", "127.0.0.0/8", *extra]
        with NginxServer(root / "web", hosts, port, by_address=True) as server:
            before = len(server.requests())
            cpu, started = _cpu(), time.perf_counter()
            if args.tool == "py-spy":
                folded = root / "folded.txt"
                cmd = [sys.executable, "-m", "harvestman.app.cli", *argv]
                spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
                subprocess.run([spy, "record", "--subprocesses", "--rate", "500", "--nonblocking",
                                "--format", "raw", "-o", str(folded), "--", *cmd],
                               check=True, stdout=subprocess.DEVNULL)
                _collapsed_top(folded, args.top, args.lines)
                if args.raw:
                    shutil.copy(folded, args.raw)
            elif args.tool == "cprofile":
                from harvestman.app.cli import main as cli_main

                # The crawl runs on a thread of its own (crawl/job.py): each thread is profiled.
                profiles: list[cProfile.Profile] = []
                thread_run = threading.Thread.run

                def profiled_run(thread: threading.Thread) -> None:
                    profile = cProfile.Profile()
                    profiles.append(profile)
                    profile.runcall(thread_run, thread)

                threading.Thread.run = profiled_run  # type: ignore[method-assign]
                main_profile = cProfile.Profile()
                profiles.append(main_profile)
                main_profile.runcall(cli_main, argv)
                threading.Thread.run = thread_run  # type: ignore[method-assign]
            else:  # as crawl_vs_peers.py runs it: a command of its own, its process tree's CPU
                subprocess.run([sys.executable, "-m", "harvestman.app.cli", *argv], check=True)
            cpu, wall = _cpu() - cpu, time.perf_counter() - started
            pages = _pages(server, before)
        print(f"{pages} pages in {wall:.2f} s, {1000 * cpu / max(1, pages):.3f} ms CPU a page "
              f"({args.tool}; {' '.join(extra)})")
        if args.tool == "cprofile":
            out = io.StringIO()
            stats = pstats.Stats(*profiles, stream=out)
            stats.sort_stats(args.sort).print_stats(args.top)
            text = out.getvalue()
            print(text[text.find("   ncalls"):] if "   ncalls" in text else text)
            scale = 1e6 / max(1, pages)
            print("µs a page   own    with callees   function")
            rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
            for (file, line, name), (_, calls, own, cum, _) in rows[: args.top]:
                print(f"{own * scale:14.1f} {cum * scale:14.1f}   {calls / max(1, pages):6.1f}/page "
                      f"{Path(file).name}:{line}({name})")


if __name__ == "__main__":
    main()

"""Two processes crawling one synthetic web, their crawl kept in SQLite or in PostgreSQL.

    python bench/shared_crawl.py [--hosts 100] [--pages 201] [--runs 1] [--seed 1]

The web is crawl_vs_peers's (bench/synthweb.py, served by nginx). Taking turns in each run:

  sqlite  `harvestman crawl SEEDS --out A --workers 2`: two processes on one SQLite file, the default
  pg      `harvestman crawl SEEDS --db PG --out A --workers 2`: the same on PostgreSQL
  pg 1+1  `harvestman crawl SEEDS --db PG --out A --workers 1` and, as soon as the crawl has stored its
          settings, `harvestman worker --db PG --out B --workers 1`: two "machines", each its own
          folder; timed from the crawl's start to the last one's end

Every PostgreSQL run gets a new database on one private server started here (tests/support/postgres.py)
with durable settings: fsync and full_page_writes on, shared_buffers=128MB; the store's own sessions
set synchronous_commit=off. Note that the worker takes the crawl's settings, --concurrency (100)
included, so `pg 1+1` has 100 fetches at once in each process where the others share 100 between two.

For each it prints pages (nginx answered with 200, robots.txt aside), wall seconds, pages/s, CPU ms a
page of harvestman's processes (user + system of the process trees, from rusage), of the PostgreSQL
server (user + system of the postmaster and its processes, live ones and those it has reaped, from
/proc/<pid>/stat before and after) and both together; whether every reachable page was requested
exactly once and nothing else (from nginx's log), and for `pg 1+1` how the pages divided between the
two folders (WARC responses). With --runs above 1, medians. Run from the repository root with nginx
and PostgreSQL installed.
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
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # this checkout's harvestman

from bench.synthweb import generate_web, host_addresses
from tests.support.crawlcheck import warc_responses
from tests.support.nginx import NginxServer, free_port
from tests.support.postgres import PostgresServer
from tests.support.proctree import process_tree
from tests.support.sharedcrawl import wait_for_settings

ROOT = Path(__file__).resolve().parent.parent
SETTLE = 0.5  # seconds after a crawl before reading the server's CPU: its sessions' processes exit


@dataclass(frozen=True, slots=True)
class Run:
    """One crawl: what nginx served it and what it cost."""

    pages: int
    wall: float
    cpu: float  # harvestman's processes
    server_cpu: float  # PostgreSQL's processes
    once: str  # "yes", or what went wrong
    split: tuple[int, ...]  # pages in each output folder

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall

    def ms(self, seconds: float) -> float:
        """`seconds` of CPU as milliseconds a page."""
        return 1000 * seconds / max(1, self.pages)


def server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the server whose postmaster is `pid` has spent: its live processes'
    own, and what they have reaped (a session's process, once gone, is in the postmaster's cutime)."""
    ticks = 0
    for proc in process_tree(pid):
        try:
            fields = Path(f"/proc/{proc}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile: its time is in its parent's
        ticks += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(cmds: list[list[str]], outs: list[Path], server: NginxServer, reachable: frozenset[str],
            env: dict[str, str], db: str = "", postgres: PostgresServer | None = None) -> Run:
    """Start `cmds[0]` and, once it has stored its settings in `db`, the others; wait for all to end."""
    before_log = len(server.requests())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = server_cpu_s(postgres.proc.pid) if postgres and postgres.proc else 0.0
    started = time.perf_counter()
    procs = [subprocess.Popen(cmds[0], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)]
    if len(cmds) > 1:
        wait_for_settings(db, procs[0])
        procs += [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
                  for cmd in cmds[1:]]
    errors = [proc.communicate()[1] for proc in procs]
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    time.sleep(SETTLE)
    server_after = server_cpu_s(postgres.proc.pid) if postgres and postgres.proc else 0.0
    for proc, err in zip(procs, errors, strict=True):
        if proc.returncode != 0:
            print(f"{proc.args[3]} exited with {proc.returncode}: {err.decode(errors='replace')[-800:]}")
    entries = server.requests()[before_log:]
    asked = Counter(f"http://{e.server_addr}:{e.server_port}{e.uri}"
                    for e in entries if e.uri != "/robots.txt")
    served = sum(1 for e in entries if e.status == 200 and e.uri != "/robots.txt")
    twice = sum(1 for n in asked.values() if n > 1)
    missed, extra = len(reachable - asked.keys()), len(asked.keys() - reachable)
    once = "yes" if not (twice or missed or extra) else f"no: {twice} twice, {missed} missed, {extra} extra"
    split = tuple(sum(n for url, n in warc_responses(out).items() if not url.endswith("/robots.txt"))
                  for out in outs)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(served, wall, cpu, server_after - server_before, once, split)


def main() -> None:
    """Build the web, start nginx and PostgreSQL, crawl each way in turn, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=201, help="pages per host")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    hosts = host_addresses(args.hosts)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with tempfile.TemporaryDirectory(prefix="harvestman-bench-") as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        spec = generate_web(root / "web", hosts, args.pages, port=port, seed=args.seed)
        (root / "seeds.txt").write_text("".join(f"http://{host}:{port}/\n" for host in hosts))

        def harvestman(command: str, out: Path, *options: str) -> list[str]:
            seeds = ["-i", str(root / "seeds.txt")] if command == "crawl" else []
            return [sys.executable, "-m", "harvestman.app.cli", command, *seeds, "--out", str(out),
                    "--quiet", "--allow-net", "127.0.0.0/8", *options]

        ways = ("sqlite", "pg", "pg 1+1")
        runs: dict[str, list[Run]] = {way: [] for way in ways}
        with NginxServer(root / "web", hosts, port, by_address=True) as server, \
                PostgresServer(durable=True) as postgres:
            for n in range(args.runs):
                for way in ways:
                    a, b = root / f"{n}-{way}-a", root / f"{n}-{way}-b"
                    if way == "sqlite":
                        run = measure([harvestman("crawl", a, "--workers", "2")], [a], server,
                                      spec.reachable, env)
                    elif way == "pg":
                        db = postgres.create_database()
                        run = measure([harvestman("crawl", a, "--db", db, "--workers", "2")], [a], server,
                                      spec.reachable, env, db, postgres)
                    else:
                        db = postgres.create_database()
                        run = measure([harvestman("crawl", a, "--db", db, "--workers", "1"),
                                       harvestman("worker", b, "--db", db, "--workers", "1")], [a, b],
                                      server, spec.reachable, env, db, postgres)
                    runs[way].append(run)
                    print(f"run {n + 1} {way}: {run.pages} pages in {run.wall:.2f} s, "
                          f"{run.pages_per_s:,.0f} pages/s, CPU a page {run.ms(run.cpu):.2f} ms harvestman "
                          f"+ {run.ms(run.server_cpu):.2f} ms PostgreSQL; every page once: {run.once}; "
                          f"split {' / '.join(map(str, run.split))}", flush=True)
        print(f"web: {args.hosts} hosts x {args.pages} pages, {len(spec.reachable)} reachable; "
              f"{args.runs} run(s); cores: {os.cpu_count()}")
        print(f"{'way':<8}{'pages':>7}{'wall s':>8}{'pages/s':>9}   CPU ms/page: {'harvestman':>10}"
              f"{'server':>8}{'total':>7}   {'every page once':<16}split")
        for way, results in runs.items():
            med = statistics.median
            once = "yes" if all(r.once == "yes" for r in results) else "NO"
            split = " / ".join(f"{med(r.split[i] for r in results):.0f}"
                               for i in range(len(results[0].split)))
            mine, server_ms = med(r.ms(r.cpu) for r in results), med(r.ms(r.server_cpu) for r in results)
            print(f"{way:<8}{med(r.pages for r in results):>7.0f}{med(r.wall for r in results):>8.2f}"
                  f"{med(r.pages_per_s for r in results):>9,.0f}{'':>16}{mine:>10.2f}{server_ms:>8.2f}"
                  f"{med(r.ms(r.cpu + r.server_cpu) for r in results):>7.2f}   {once:<16}{split}")


if __name__ == "__main__":
    main()

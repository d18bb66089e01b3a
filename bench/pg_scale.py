"""1, 2, 4, 8... crawling processes on one PostgreSQL, each process bound by its hosts' pace, not by CPU.

    python bench/pg_scale.py [--processes 1,2,4,8] [--runs 3] [--hosts 400] [--pages 40]
                             [--latency 0.4] [--concurrency 16] [--warmup 15] [--window 20] [--seed 1]

The web is bench/synthweb.py's (`--hosts` loopback addresses x `--pages` pages of ~8 KB), served by
one nginx that holds every page `--latency` seconds (auth_request to a sleeping asyncio server in
this process; robots.txt is not held): slow, distant sites as a crawler sees them. Each process
fetches `--concurrency` URLs at once, one a host (`--per-host 1`: politeness holds across
processes), so it spends its time waiting on its hosts and gets at most ~concurrency / latency
pages/s, whatever its CPU; the web has room for hosts / latency.

For each count N, in turn within each run: a new database on one private durable PostgreSQL (fsync
and full_page_writes on, as bench/shared_crawl.py; the store's sessions set synchronous_commit=off)
with pg_stat_statements loaded; `harvestman crawl --workers 1` seeded with every host's front page,
then, once it has stored its settings, N-1 `harvestman worker --workers 1` processes, each its own
folder. After `--warmup` seconds a window of `--window` seconds is measured, then every process is
stopped (SIGTERM: the run is resumable) - so the bench ends by itself and measures the steady state,
not start-up or the tail. In the window:

  pages/s       responses nginx served with 200 (robots.txt aside)
  hm ms/page    CPU (user + system) of the harvestman process trees, from /proc, per page; busy is
                that CPU over the window, per process (well under 1: waiting on hosts)
  pg ms/page    CPU of the PostgreSQL server (postmaster and every process of it, reaped ones too)
  stmts/page    statements the crawl's database ran (pg_stat_statements calls, BEGIN and COMMIT
                included; reset at the window's start)
  trips/page    client round trips, estimated from those calls: psycopg sends an executemany()
                as one pipeline, so the statements complete() runs that way (WRITE_OUTCOME,
                FREE_HOST, the tallies and links inserts) count once per complete(), not per row
  xacts/page    transactions committed (pg_stat_database.xact_commit)
  WAL KB/page   write-ahead log written (pg_current_wal_lsn), what the server's disk must take
  active        the crawl's sessions running a statement, on average (pg_stat_activity every
                0.25 s), and in brackets those of them waiting for a lock
  load          the 1-minute load average at the window's end (the machine is shared)

With --runs above 1, medians. Then the statements by calls and execution time a page at the
smallest and the largest N, those the sessions were seen waiting for a lock in, and a line fitted
through the server's CPU a second against pages/s over every window (the slope is the CPU one more
page costs it), extrapolated to the pages/s that keep 1, 2, 4, 8 and 16 server cores busy. Ctrl-C
stops the crawls and prints what was measured. Run from the repository root with nginx and
PostgreSQL (and its pg_stat_statements, in Debian's postgresql package) installed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # this checkout's harvestman

from bench.shared_crawl import server_cpu_s
from bench.synthweb import generate_web, host_addresses
from harvestman.store.postgres_sql import FREE_HOST, WRITE_OUTCOME
from tests.support.nginx import NginxServer, free_port
from tests.support.postgres import PostgresServer
from tests.support.proctree import process_tree
from tests.support.sharedcrawl import wait_for_settings

ROOT = Path(__file__).resolve().parent.parent
STATEMENT_KEY = 100  # characters of a statement's text that name it
STOP_WAIT = 30.0  # seconds a stopped process may take to finish its fetches and commit
SAMPLE_EVERY = 0.25  # seconds between two looks at pg_stat_activity
# Set by Ctrl-C or SIGTERM: the bench stops its crawls and prints what it has. A flag, not
# KeyboardInterrupt, which psycopg turns into a cancelled query that a caller may take in stride.
STOP = threading.Event()
# Statements complete() sends with executemany (one pipeline each): calls are rows, not round trips.
PIPELINED = (*(" ".join(sql.split()).split("%")[0] for sql in (WRITE_OUTCOME, FREE_HOST)),
             "INSERT INTO tallies(what, n)", "INSERT INTO links(url_id, links)")
OUTCOMES_READ = "SELECT url, id, host_id, state, lease_until"  # once per complete() with outcomes


class StatsPostgres(PostgresServer):
    """The private durable server of tests/support/postgres.py with pg_stat_statements loaded."""

    def _run(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        done = super()._run(*args)
        if args[0] == "initdb" and done.returncode == 0:
            with open(self.data / "postgresql.conf", "a") as conf:
                conf.write("shared_preload_libraries = 'pg_stat_statements'\n"
                           "pg_stat_statements.max = 1000\n")
        return done


class Holder:
    """A loopback HTTP server answering every request with 204 after `seconds`, in a thread of its
    own: nginx's auth_request waits for it before each answer (`directives`), so every page of
    every host takes that long, as from a slow, distant site, for little CPU. robots.txt is not
    held: a crawl asks for it once a host, and here it would only lengthen the start."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = int(self.server.sockets[0].getsockname()[1])
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:  # nginx keeps its connections to us alive: one request after another
                await reader.readuntil(b"\r\n\r\n")
                await asyncio.sleep(self.seconds)
                writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        writer.close()

    def directives(self) -> tuple[str, str]:
        """nginx's http-block and server-block directives that hold every answer for `seconds`."""
        return (f"upstream holder {{ server 127.0.0.1:{self.port}; keepalive 256; }}",
                """auth_request /hold;
        location = /robots.txt {
            auth_request off;
        }
        location = /hold {
            internal;
            auth_request off;
            proxy_pass http://holder;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }""")

    def __enter__(self) -> Holder:
        self.thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Counters read at one end of the window."""

    at: float  # epoch seconds, as nginx's log times its answers
    hm_cpu: float
    pg_cpu: float
    xacts: int
    wal: int  # the server's WAL position, bytes


@dataclass(frozen=True, slots=True)
class Window:
    """What one count of processes did in the measured window."""

    processes: int
    pages: int
    seconds: float
    hm_cpu: float
    pg_cpu: float
    xacts: int
    wal: int  # WAL bytes written
    statements: dict[str, tuple[int, float]]  # normalized query -> (calls, execution ms)
    active: float  # the crawl's sessions running a statement, on average (sampled)
    locked: float  # ... of them waiting for a lock
    waits: dict[str, int]  # the statement of a session seen waiting for a lock -> times seen
    load: float
    exits: tuple[int | None, ...]

    def per_page(self, amount: float) -> float:
        return amount / max(1, self.pages)

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds

    @property
    def calls(self) -> int:
        return sum(calls for calls, _ in self.statements.values())

    @property
    def trips(self) -> int:
        """Round trips: every call, but a pipelined statement once per complete() it is sent in."""
        completes = sum(c for q, (c, _) in self.statements.items() if q.startswith(OUTCOMES_READ))
        return sum(min(c, completes) if q.startswith(PIPELINED) else c
                   for q, (c, _) in self.statements.items())


def served_pages(server: NginxServer, start: float, end: float) -> int:
    """Pages nginx answered with 200 between `start` and `end` (epoch seconds), robots.txt aside."""
    return sum(1 for e in server.requests()
               if start < e.msec <= end and e.status == 200 and e.uri != "/robots.txt")


def snapshot(procs: list[subprocess.Popen[bytes]], pg_pid: int, admin: Any, db: str) -> Snapshot:
    row = admin.execute("SELECT xact_commit, pg_current_wal_lsn() - '0/0' FROM pg_stat_database"
                        " WHERE datname = %s", (db,)).fetchone()
    return Snapshot(time.time(), sum(server_cpu_s(p.pid) for p in procs), server_cpu_s(pg_pid),
                    int(row[0]), int(row[1]))


def measure(count: int, cmds: list[list[str]], server: NginxServer, postgres: PostgresServer, admin: Any,
            url: str, env: dict[str, str], warmup: float, window: float) -> Window:
    """Start the crawl, then its workers; measure `window` seconds after `warmup`; stop them all."""
    assert postgres.proc is not None
    db = url.split("?")[0].rsplit("/", 1)[1]
    procs = [subprocess.Popen(cmds[0], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)]
    try:
        wait_for_settings(url, procs[0])
        procs += [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
                  for cmd in cmds[1:]]
        STOP.wait(warmup)
        admin.execute("SELECT pg_stat_statements_reset()")
        before = snapshot(procs, postgres.proc.pid, admin, db)
        samples: list[list[str | None]] = []  # one look: the wait of each active session
        waits: Counter[str] = Counter()
        while time.time() < before.at + window and not STOP.is_set():
            time.sleep(SAMPLE_EVERY)
            looked = admin.execute(
                "SELECT wait_event_type, wait_event || ': ' || query FROM pg_stat_activity"
                " WHERE datname = %s AND state = 'active'", (db,)).fetchall()
            samples.append([kind for kind, _ in looked])
            waits.update(" ".join(what.split())[:STATEMENT_KEY] for kind, what in looked if kind == "Lock")
        after = snapshot(procs, postgres.proc.pid, admin, db)
        load = os.getloadavg()[0]
        rows = admin.execute(
            "SELECT s.query, SUM(s.calls), SUM(s.total_exec_time) FROM pg_stat_statements s"
            " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s GROUP BY s.query", (db,)).fetchall()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        exits: list[int | None] = []
        for proc, cmd in zip(procs, cmds, strict=False):
            try:
                _, err = proc.communicate(timeout=STOP_WAIT)
            except subprocess.TimeoutExpired:
                for pid in process_tree(proc.pid):  # its worker processes too
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                _, err = proc.communicate()
            exits.append(proc.returncode)
            if proc.returncode not in (0, -signal.SIGTERM, 130, 143):
                print(f"{cmd[3]} exited with {proc.returncode}: "
                      f"{err.decode(errors='replace')[-600:]}", flush=True)
    statements: dict[str, tuple[int, float]] = {}
    for query, calls, ms in rows:  # one statement may be kept as several (by parameter types)
        key = " ".join(str(query).split())[:STATEMENT_KEY]
        old = statements.get(key, (0, 0.0))
        statements[key] = (old[0] + int(calls), old[1] + float(ms))
    return Window(count, served_pages(server, before.at, after.at), after.at - before.at,
                  after.hm_cpu - before.hm_cpu, after.pg_cpu - before.pg_cpu, after.xacts - before.xacts,
                  after.wal - before.wal, statements, statistics.mean(map(len, samples or [[]])),
                  statistics.mean(look.count("Lock") for look in samples or [[]]), dict(waits), load,
                  tuple(exits))


def statement_table(count: int, runs: list[Window]) -> None:
    """The statements of `count` processes by execution time a page; those seen waiting for a lock."""
    totals: Counter[str] = Counter()
    exec_ms: dict[str, float] = {}
    pages = sum(r.pages for r in runs)
    for r in runs:
        for query, (calls, ms) in r.statements.items():
            totals[query] += calls
            exec_ms[query] = exec_ms.get(query, 0.0) + ms
    print(f"\nstatements at {count} processes ({len(runs)} run(s), {pages} pages): calls a page, "
          "execution ms a page and a call, by execution time")
    for query, ms in sorted(exec_ms.items(), key=lambda item: -item[1])[:12]:
        print(f"{totals[query] / pages:>8.3f}{ms / pages:>8.3f}{ms / max(1, totals[query]):>8.3f}  {query}")
    print(f"{'':>8}{sum(exec_ms.values()) / pages:>8.3f}{'':>8}  all statements")
    waits = Counter[str]()
    for r in runs:
        waits.update(r.waits)
    looks = sum(r.seconds for r in runs) / SAMPLE_EVERY
    for what, seen in waits.most_common(5):
        print(f"waiting for a lock, sessions on average: {seen / looks:.3f}  {what}")


def report(results: dict[int, list[Window]], args: argparse.Namespace) -> None:
    """The table of medians, the statements at the smallest and largest count, and the saturation
    model."""
    if not results:
        return
    med = statistics.median
    print(f"\nweb: {args.hosts} hosts x {args.pages} pages, each answer held {args.latency:g} s; "
          f"--concurrency {args.concurrency} --per-host 1 a process; window {args.window:g} s after "
          f"{args.warmup:g} s; {args.runs} run(s), medians; cores: {os.cpu_count()}")
    print(f"{'procs':>5}{'pages/s':>9}{'/proc':>7}{'hm ms/page':>12}{'busy':>6}{'pg ms/page':>12}"
          f"{'stmts/page':>12}{'trips/page':>12}{'xacts/page':>12}{'WAL KB/page':>13}{'active':>13}"
          f"{'load':>6}")
    for count, runs in results.items():
        rate = med(r.pages_per_s for r in runs)
        print(f"{count:>5}{rate:>9.1f}{rate / count:>7.1f}"
              f"{med(1000 * r.per_page(r.hm_cpu) for r in runs):>12.2f}"
              f"{med(r.hm_cpu / r.seconds / count for r in runs):>6.2f}"
              f"{med(1000 * r.per_page(r.pg_cpu) for r in runs):>12.3f}"
              f"{med(r.per_page(r.calls) for r in runs):>12.2f}"
              f"{med(r.per_page(r.trips) for r in runs):>12.2f}"
              f"{med(r.per_page(r.xacts) for r in runs):>12.3f}"
              f"{med(r.per_page(r.wal) / 1024 for r in runs):>13.2f}"
              f"{med(r.active for r in runs):>7.2f} ({med(r.locked for r in runs):.2f})"
              f"{med(r.load for r in runs):>6.1f}")
    for count in sorted({min(results), max(results)}):
        statement_table(count, results[count])
    top = max(results)
    runs = results[top]
    pg_ms = med(1000 * r.per_page(r.pg_cpu) for r in runs)
    every = [r for runs in results.values() for r in runs]
    print(f"\nPostgreSQL CPU a page at {top} processes: {pg_ms:.3f} ms on average")
    if len({round(r.pages_per_s) for r in every}) > 1:
        # The server's CPU a second against pages/s over every run: the slope is what one more page
        # costs it, the intercept what it spends anyway (WAL writer, checkpoints, statistics).
        fit = statistics.linear_regression([r.pages_per_s for r in every],
                                           [1000 * r.pg_cpu / r.seconds for r in every])
        print(f"fitted over all {len(every)} windows: {fit.slope:.3f} ms a page + {fit.intercept:.1f} ms a "
              "second; pages/s that keep the server's CPU busy: " + ", ".join(
                  f"{cores} core{'s' if cores > 1 else ''} {(cores * 1000 - fit.intercept) / fit.slope:,.0f}"
                  for cores in (1, 2, 4, 8, 16)))


def main() -> None:
    """Build the web, start nginx and PostgreSQL, measure each count of processes in turn, print."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", default="1,2,4,8", help="counts of processes, comma-separated")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--pages", type=int, default=40, help="pages per host")
    parser.add_argument("--latency", type=float, default=0.4, help="seconds every answer is held")
    parser.add_argument("--concurrency", type=int, default=16, help="fetches at once in each process")
    # 6 s was too short at 8 processes on a loaded machine: workers were still opening the crawl,
    # and all of them were finding the same new URLs at once (lock waits in INSERT_URLS).
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds before the window")
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: STOP.set())
    counts = [int(n) for n in args.processes.split(",")]
    hosts = host_addresses(args.hosts)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    import psycopg  # the bench needs harvestman[postgres]

    with tempfile.TemporaryDirectory(prefix="harvestman-bench-") as tmp:
        root = Path(tmp)
        port = free_port(hosts[0])
        generate_web(root / "web", hosts, args.pages, port=port, seed=args.seed, median_bytes=8_000)
        (root / "seeds.txt").write_text("".join(f"http://{host}:{port}/\n" for host in hosts))

        def harvestman(command: str, out: Path, db: str) -> list[str]:
            extra = ["-i", str(root / "seeds.txt"), "--concurrency", str(args.concurrency),
                     "--per-host", "1"] if command == "crawl" else []
            return [sys.executable, "-m", "harvestman.app.cli", command, *extra, "--db", db,
                    "--out", str(out), "--workers", "1", "--quiet", "--allow-net", "127.0.0.0/8"]

        results: dict[int, list[Window]] = {n: [] for n in counts}
        with Holder(args.latency) as holder, \
                NginxServer(root / "web", hosts, port, by_address=True, extra_http=holder.directives()[0],
                            extra_server=holder.directives()[1]) as server, \
                StatsPostgres(durable=True) as postgres, \
                psycopg.connect(postgres.url(), autocommit=True) as admin:
            admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            for n in range(args.runs):
                # Each run in another order, so a busy spell of the shared machine falls on each count.
                for count in counts[n % len(counts):] + counts[:n % len(counts)]:
                    if STOP.is_set():
                        break
                    db = postgres.create_database()
                    outs = [root / f"{n}-{count}-{k}" for k in range(count)]
                    cmds = [harvestman("worker" if k else "crawl", out, db) for k, out in enumerate(outs)]
                    run = measure(count, cmds, server, postgres, admin, db, env, args.warmup, args.window)
                    if STOP.is_set():
                        break  # a window cut short is no measurement
                    results[count].append(run)
                    print(f"run {n + 1}, {count} processes: {run.pages} pages in {run.seconds:.1f} s, "
                          f"{run.pages_per_s:.1f} pages/s; CPU a page "
                          f"{1000 * run.per_page(run.hm_cpu):.2f} ms harvestman, "
                          f"{1000 * run.per_page(run.pg_cpu):.3f} ms PostgreSQL; "
                          f"{run.per_page(run.calls):.2f} statements, "
                          f"{run.per_page(run.trips):.2f} round trips, "
                          f"{run.per_page(run.xacts):.3f} transactions, "
                          f"{run.per_page(run.wal) / 1024:.1f} KB of WAL a page; sessions active "
                          f"{run.active:.2f}, waiting for a lock {run.locked:.2f}; load {run.load:.1f}; "
                          f"exits {' '.join(map(str, run.exits))}", flush=True)
                    for out in outs:
                        shutil.rmtree(out, ignore_errors=True)
        report({n: runs for n, runs in results.items() if runs}, args)


if __name__ == "__main__":
    main()

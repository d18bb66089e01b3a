"""Crash safety (docs/reliability.md): SIGKILL the crawler at random and chosen moments, resume, lose nothing.

After every kill the crawl folder is read as the kill left it: the database passes its integrity check,
every URL known before stays known in one state, every committed response is in a WARC file that reads
cleanly up to its last complete record, and the fetches the kill cost (fetched, not committed) are at most
the leases the crawler may hold. The last `--resume` must then finish the crawl with nothing missing.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestman.model import faults
from harvestman.model.config import CrawlConfig
from harvestman.model.faults import ENV_VAR, parse
from harvestman.model.records import FetchOutcome, NewUrl, UrlState
from harvestman.store.sqlite_store import SqliteStore
from harvestman.store.warc import OPEN_SUFFIX, complete_length
from tests.support.crawlcheck import harvestman_cmd, read_all_warcs, run_cli
from tests.support.nginx import LogEntry, NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

HOSTS = ["127.1.4.1", "127.1.4.2", "127.1.4.3", "127.1.4.4"]
PER_HOST = 2
# The crawler holds at most this many leases, so a kill can cost at most this many fetches.
IN_FLIGHT_BOUND = PER_HOST * len(HOSTS)
UNFETCHED = int(UrlState.UNFETCHED)
FETCHED = int(UrlState.FETCHED)
RUN_TIMEOUT = 30.0  # seconds one crawler process may take to reach its kill, or to finish
RANDOM_KILLS = 21
WARC_MAX_BYTES = 40_000  # about 20 fetches a file
CHOSEN_POINTS = ("fetched-before-commit", "warc-mid-record", "db-mid-commit")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The committed state of a crawl database, as a kill left it."""

    states: dict[str, int]  # url -> state
    statuses: dict[str, int]  # url -> HTTP status of its committed fetch (0: none)
    leased: frozenset[str]


EMPTY = Snapshot({}, {}, frozenset())


def snapshot(db_path: Path) -> Snapshot:
    """Read `db_path` and check its integrity and its counters against its rows.

    Read-only, so that closing the connection does not checkpoint the WAL: the resume must find the
    files exactly as the kill left them.
    """
    if not db_path.exists():  # killed before the database was created
        return EMPTY
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "urls" not in tables:  # killed before the schema was committed: the file must be empty
            assert not tables, tables
            return EMPTY
        rows = db.execute("SELECT url, state, http_status, lease_until, host_id FROM urls").fetchall()
        states = {r[0]: r[1] for r in rows}
        assert len(states) == len(rows), "a URL stored twice"
        assert all(r[1] == UNFETCHED for r in rows if r[3] > 0), "a leased URL that is not unfetched"
        # Every URL is counted in one state only: the counters kept by triggers agree with the rows.
        by_state = Counter(r[1] for r in rows)
        stored = {s: n for s, n in db.execute("SELECT state, n FROM state_counts") if n}
        assert stored == dict(by_state)
        pending = Counter(r[4] for r in rows if r[1] == UNFETCHED)
        leased = Counter(r[4] for r in rows if r[3] > 0)
        for host_id, name, host_pending, in_flight in db.execute(
            "SELECT id, name, pending, in_flight FROM hosts"
        ):
            assert host_pending == pending[host_id], f"pending count of {name}"
            assert in_flight == leased[host_id], f"in-flight count of {name}"
    finally:
        db.close()
    return Snapshot(states, {r[0]: r[2] for r in rows}, frozenset(r[0] for r in rows if r[3] > 0))


def warc_records(data: bytes) -> list[tuple[str, str]]:
    """(type, target URI) of every record in `data`, each read to its end with its digests checked."""
    out = []
    for record in ArchiveIterator(io.BytesIO(data), check_digests="raise"):
        record.content_stream().read()
        out.append((str(record.rec_type), str(record.rec_headers.get_header("WARC-Target-URI") or "")))
    return out


def page_url(entry: LogEntry) -> str:
    """The URL of the page a logged request asked for."""
    return f"http://{entry.server_addr}:{entry.server_port}{entry.uri}"


def page_requests(entries: list[LogEntry]) -> list[str]:
    """The pages requested, robots.txt left out (each run reads it again, by design)."""
    return [page_url(e) for e in entries if not e.uri.endswith("/robots.txt")]


class CrashRig:
    """One site served by nginx and one crawl folder: starts the crawler, kills it, checks what is left."""

    def __init__(self, tmp_path: Path, pages_per_host: int, *, delay: float, seed: int) -> None:
        require_nginx()
        port = free_port(HOSTS[0])
        self.spec: SiteSpec = generate_site(
            tmp_path / "site", HOSTS, pages_per_host, 6, seed=seed, port=port, page_bytes=2000
        )
        self.server = NginxServer(tmp_path / "site", HOSTS, port)
        self.out = tmp_path / "out"
        self.delay = delay
        self.stderr = tmp_path / "crawler-stderr.txt"
        # Small WARC files: kills land around rotations too (finishing a file, starting the next).
        self.config = tmp_path / "crawl.toml"
        self.config.write_text(f"warc_max_bytes = {WARC_MAX_BYTES}\n", encoding="utf-8")
        self.runs = 0
        self.log_start = 0  # the first access-log entry of the current run
        self.log_bytes = 0  # ... and its offset in the log file
        self.in_flight: list[set[str]] = []  # per kill: URLs fetched by the killed run, not committed
        self.last = EMPTY
        self.ever_leased: set[str] = set()
        self.warc_keep: dict[str, int] = {}  # WARC file name -> bytes its recovery must keep
        self._finished: dict[Path, list[tuple[str, str]]] = {}  # finished WARC files never change

    def start(self, crash_at: str = "", *, delay: float | None = None) -> subprocess.Popen[bytes]:
        """Start the crawler (with `--resume` after the first run), perhaps armed to kill itself."""
        args = ["crawl", *self.spec.seeds, "--out", str(self.out), "--config", str(self.config),
                "--allow-net", "127.1.0.0/16", "--quiet", "--scope", "any", "--per-host", str(PER_HOST),
                "--delay", str(self.delay if delay is None else delay)]
        if self.runs:
            args.append("--resume")
        env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
        if crash_at:
            # One process, so that the process killed at the point is the crawl itself; the random
            # kills above run the default worker processes, which die with their parent.
            args += ["--workers", "1"]
            parse(crash_at)  # a typo must fail here, not silently never crash
            env[ENV_VAR] = crash_at
        self.log_start = len(self.server.requests())
        self.log_bytes = self.server.access_log.stat().st_size
        self.runs += 1
        with open(self.stderr, "ab") as stderr:
            return subprocess.Popen(harvestman_cmd(*args), stdout=subprocess.DEVNULL, stderr=stderr, env=env)

    def wait_for_pages(self, proc: subprocess.Popen[bytes], count: int) -> None:
        """Return as soon as this run has `count` page requests logged, or has ended (bounded in time)."""
        deadline = time.monotonic() + RUN_TIMEOUT
        seen = 0
        # Read only what nginx appended since the run started: a millisecond poll stays cheap.
        with open(self.server.access_log, "rb") as log:
            log.seek(self.log_bytes)
            while seen < count and time.monotonic() < deadline and proc.poll() is None:
                new = log.read()
                seen += sum(1 for line in new.splitlines() if b"/robots.txt" not in line)
                if seen < count:
                    time.sleep(0.001)

    def _settled_log(self) -> list[LogEntry]:
        """The access log once nginx has logged what the dead crawler had already asked for."""
        entries = self.server.requests()
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            time.sleep(0.1)
            again = self.server.requests()
            if len(again) == len(entries):
                break
            entries = again
        return entries

    def after_kill(self) -> set[str]:
        """Check the folder a kill left; return the URLs the killed run fetched and did not commit."""
        entries = self._settled_log()
        snap = snapshot(self.out / "crawl.db")
        self._check_nothing_lost(snap)
        fetched_now = set(page_requests(entries[self.log_start :]))
        assert fetched_now <= snap.states.keys(), "a URL fetched but not known to the database"
        in_flight = {u for u in fetched_now if snap.states[u] == UNFETCHED}
        assert len(in_flight) <= IN_FLIGHT_BOUND, in_flight
        assert len(snap.leased) <= IN_FLIGHT_BOUND, snap.leased
        self.in_flight.append(in_flight)
        self.ever_leased |= snap.leased
        responses = self._check_warcs()
        # A fetch is committed only after its records are written: none may be missing from the WARCs.
        committed = {u for u, status in snap.statuses.items() if status > 0}
        assert committed <= responses, sorted(committed - responses)[:10]
        self.last = snap
        return in_flight

    def _check_nothing_lost(self, snap: Snapshot) -> None:
        prev = self.last
        lost = prev.states.keys() - snap.states.keys()
        assert not lost, f"URLs lost: {sorted(lost)[:10]}"
        # A URL that ended is never fetched again, so its state never changes.
        changed = {u for u, s in prev.states.items() if s != UNFETCHED and snap.states[u] != s}
        assert not changed, f"URLs whose final state changed: {sorted(changed)[:10]}"
        # The links of a stored page are committed with it: none may be missing.
        for url, state in snap.states.items():
            if state == FETCHED and url in self.spec.links:
                missing = set(self.spec.links[url]) - snap.states.keys()
                assert not missing, f"links of {url} lost: {sorted(missing)}"

    def _check_warcs(self) -> set[str]:
        """Read every WARC file (an `.open` one to its last complete record); the response URIs."""
        responses: set[str] = set()
        for path in sorted((self.out / "warc").glob("*")):
            if path.name.endswith(OPEN_SUFFIX):
                data = path.read_bytes()
                good = complete_length(path)
                tail = data[good:]
                if tail:  # a torn record, which recovery cuts off: not a whole one it would lose
                    member = zlib.decompressobj(zlib.MAX_WBITS | 16)
                    member.decompress(tail)
                    assert not member.eof, f"{path.name}: a complete record past the recovery point"
                records = warc_records(data[:good])
                self.warc_keep[path.name.removesuffix(OPEN_SUFFIX)] = good
            else:
                assert path.name.endswith(".warc.gz"), path.name
                if path not in self._finished:
                    self._finished[path] = warc_records(path.read_bytes())
                records = self._finished[path]
            responses |= {uri for kind, uri in records if kind == "response"}
        return responses

    def finish(self) -> None:
        """Resume once more, unharmed and without a delay, and check the crawl ended with nothing lost."""
        proc = self.start(delay=0)
        try:
            rc = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert rc == 0, self.stderr.read_text(errors="replace")[-3000:]
        spec = self.spec
        requested = Counter(page_requests(self.server.requests()))
        assert set(requested) == set(spec.reachable) | set(spec.missing)
        assert not set(requested) & spec.disallowed
        # Only fetches in flight at a kill are fetched again.
        twice = sum(n - 1 for n in requested.values() if n > 1)
        lost_fetches = sum(len(s) for s in self.in_flight)
        assert twice <= lost_fetches <= IN_FLIGHT_BOUND * len(self.in_flight)
        final = snapshot(self.out / "crawl.db")
        self._check_nothing_lost(final)
        assert not final.leased
        assert {u for u, s in final.states.items() if s == UNFETCHED} == set()
        assert {u for u, s in final.states.items() if s == FETCHED} == set(spec.reachable)
        assert all(final.states[u] != UNFETCHED for u in self.ever_leased)  # the leases came back
        warc_dir = self.out / "warc"
        assert not list(warc_dir.glob(f"*{OPEN_SUFFIX}"))
        for name, good in self.warc_keep.items():  # recovery kept every complete record, and no more
            if good == 0:
                assert not (warc_dir / name).exists()
            else:
                assert (warc_dir / name).stat().st_size == good, name
        responses: Counter[str] = Counter()
        for path in sorted(warc_dir.glob("*.warc.gz")):
            responses.update(uri for kind, uri in warc_records(path.read_bytes()) if kind == "response")
        assert set(spec.reachable) <= set(responses)
        stored_twice = {u for u, n in responses.items() if n > requested[u]}
        assert not stored_twice, f"responses stored more often than fetched: {sorted(stored_twice)[:10]}"
        assert read_all_warcs(self.out) > 0


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL `proc` and reap it."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_sigkill_at_random_moments_then_resume_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(4)
    rig = CrashRig(tmp_path, pages_per_host=150, delay=0.01, seed=4)
    with rig.server:
        for _ in range(RANDOM_KILLS):
            proc = rig.start()
            try:
                if rng.random() < 0.75:  # some fetches in: at any moment of the work on the next ones
                    rig.wait_for_pages(proc, rng.randint(1, 12))
                    time.sleep(rng.uniform(0, 0.01))
                else:  # at start-up: opening the database, releasing leases, recovering WARC files
                    time.sleep(rng.uniform(0.02, 0.4))
                assert proc.poll() is None, "the crawl ended before its kill: make the site larger"
            finally:
                kill(proc)
            rig.after_kill()
        assert sum(map(len, rig.in_flight)) > 0, "no kill caught a fetch in flight"
        rig.finish()


@pytest.mark.parametrize("point", CHOSEN_POINTS)
def test_sigkill_at_a_chosen_moment_then_resume_loses_nothing(tmp_path: Path, point: str) -> None:
    rig = CrashRig(tmp_path, pages_per_host=30, delay=0, seed=5)
    with rig.server:
        for n in (1, 3, 8):  # the first time the point is reached, and later ones
            proc = rig.start(f"{point}:{n}")
            try:
                rc = proc.wait(timeout=RUN_TIMEOUT)
            finally:
                if proc.poll() is None:
                    kill(proc)
            assert rc == -signal.SIGKILL, f"{point}:{n} was never reached (exit status {rc})"
            open_files = list((rig.out / "warc").glob(f"*{OPEN_SUFFIX}"))
            if point == "warc-mid-record":  # the file ends in a torn record
                [torn] = open_files
                assert torn.stat().st_size > complete_length(torn)
            in_flight = rig.after_kill()
            assert in_flight, "the fetch that reached the crash point was committed"
            if point == "fetched-before-commit":  # stored in the WARC file, yet fetched again
                [current] = open_files
                stored = {uri for kind, uri in warc_records(current.read_bytes()) if kind == "response"}
                assert in_flight & stored
        rig.finish()
    if point == "warc-mid-record":  # the --resume after a kill closed the torn file, and said so
        # (the first kill tears the file's first record, its warcinfo: nothing to keep, so removed)
        assert rig.stderr.read_text().count("closed 1 WARC files a stopped run left open") == 2


# ----- leases of a dead process --------------------------------------------------------------------


def _host_of(url: str) -> str:
    return url.split("/")[2]


def _lease_then_die(db_path: str, report: str, lease_seconds: float) -> None:
    """Lease one URL of each host, write them down, and die without reporting back."""
    frontier = SqliteStore(Path(db_path), per_host=1, lease_seconds=lease_seconds, host_of=_host_of)
    leased = frontier.lease(100, time.time())
    Path(report).write_text("\n".join(x.url for x in leased), encoding="utf-8")
    os.kill(os.getpid(), signal.SIGKILL)


def _dead_worker_leases(tmp_path: Path, lease_seconds: float) -> tuple[Path, set[str], float]:
    """A crawl database of three hosts with two URLs each, one per host leased by a process killed since."""
    db_path = tmp_path / "crawl.db"
    with SqliteStore(db_path, host_of=_host_of) as frontier:
        frontier.add([NewUrl(f"http://h{h}.test/{i}", f"h{h}.test", 0, 0.0)
                      for h in range(3) for i in range(2)])
    report = tmp_path / "leased.txt"
    ctx = multiprocessing.get_context("fork")
    leased_at = time.time()
    child = ctx.Process(target=_lease_then_die, args=(str(db_path), str(report), lease_seconds))
    child.start()
    child.join(timeout=20)
    assert child.exitcode == -signal.SIGKILL
    dead = set(report.read_text(encoding="utf-8").split("\n"))
    assert dead == {f"http://h{h}.test/0" for h in range(3)}
    return db_path, dead, leased_at


def test_leases_of_a_dead_process_expire_and_are_handed_out_again(tmp_path: Path) -> None:
    lease_seconds = 1.0
    db_path, dead, leased_at = _dead_worker_leases(tmp_path, lease_seconds)
    # The dead holder's lock went with it; its leases stay in the database until they expire.
    with SqliteStore(db_path, per_host=1, lease_seconds=lease_seconds, host_of=_host_of) as frontier:
        assert frontier.in_flight() == len(dead)
        assert frontier.lease(100, time.time()) == []  # every host is busy with a dead lease
        ready = frontier.next_ready_time()
        assert ready is not None and ready <= leased_at + lease_seconds + 1.0  # a waiting crawler wakes
        back: set[str] = set()
        deadline = time.monotonic() + lease_seconds + 5.0
        while back != dead and time.monotonic() < deadline:
            time.sleep(0.05)
            back |= {x.url for x in frontier.lease(100, time.time())}
        assert back == dead
        assert time.time() - leased_at <= lease_seconds + 3.0
        frontier.complete([FetchOutcome(u, UrlState.FETCHED, time.time()) for u in back], time.time())
        assert {x.url for x in frontier.lease(100, time.time())} == {f"http://h{h}.test/1" for h in range(3)}


def test_leases_of_a_dead_crawler_come_back_within_minutes_by_default(tmp_path: Path) -> None:
    default = CrawlConfig.__dataclass_fields__["lease_seconds"].default
    assert isinstance(default, float) and default <= 600
    db_path, dead, leased_at = _dead_worker_leases(tmp_path, default)
    with SqliteStore(db_path, per_host=1, lease_seconds=default, host_of=_host_of) as frontier:
        assert frontier.lease(100, leased_at + default - 5) == []
        assert {x.url for x in frontier.lease(100, leased_at + default + 5)} == dead


def test_resume_hands_back_the_leases_of_the_dead_crawler_at_once(tmp_path: Path) -> None:
    db_path, dead, _ = _dead_worker_leases(tmp_path, 300.0)
    with SqliteStore(db_path, per_host=1, host_of=_host_of) as frontier:
        assert frontier.release_leases() == len(dead)  # what `--resume` does first
        assert {x.url for x in frontier.lease(100, time.time())} == dead


# ----- the crash points themselves, and a crash window they do not cover ---------------------------


def test_a_crash_point_is_named_with_a_count_and_costs_nothing_unarmed() -> None:
    assert parse("warc-mid-record:5") == ("warc-mid-record", 5)
    for bad in ("warc-mid-record", "x:0", ":3", "x:-1", "x:y"):
        with pytest.raises(ValueError, match=ENV_VAR):
            parse(bad)
    assert not faults.ARMED  # the tests run unarmed: only the crawlers they start are
    faults.crash_point("db-mid-commit")  # a no-op


@pytest.mark.parametrize("spec, killed", [("a:2", True), ("b:1", True), ("a:3", False), ("c:1", False)])
def test_a_crash_point_kills_its_process_the_nth_time_it_is_reached(spec: str, killed: bool) -> None:
    code = "from harvestman.model.faults import crash_point\nfor p in 'abab': crash_point(p)\nprint('alive')"
    env = {**os.environ, ENV_VAR: spec}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30,
                          check=False)
    assert (done.returncode, done.stdout) == ((-signal.SIGKILL, "") if killed else (0, "alive\n"))


def test_resume_after_a_kill_between_storing_the_seeds_and_adding_them(tmp_path: Path) -> None:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS[:1], 5, 3, seed=1, port=port)
    out = tmp_path / "out"
    out.mkdir()
    # What a kill between those two commits leaves: the seeds stored, none of them in the frontier.
    with SqliteStore(out / "crawl.db", host_of=_host_of) as frontier:
        frontier.set_meta("seeds", spec.seeds[0])
    with NginxServer(tmp_path / "site", HOSTS[:1], port):
        done = run_cli("crawl", "--out", str(out), "--resume", "--allow-net", "127.1.0.0/16", "--quiet")
    assert done.returncode == 0, done.stderr
    with SqliteStore.open_read_only(out / "crawl.db") as frontier:
        assert frontier.counts()[UrlState.FETCHED] == len(spec.reachable)

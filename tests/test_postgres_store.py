"""PostgreSQL store specifics: many processes sharing one crawl, dead processes, schema, errors.

The contract every backend keeps is tests/test_frontier.py; this file is what only a database
shared by many processes has to show. A real server (tests/support/postgres.py) serves every test.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest

from harvestman.model.errors import FrontierError
from harvestman.model.records import LeasedUrl, UrlState
from harvestman.store.factory import open_store
from harvestman.store.frontier import Store
from tests.support.crawlcheck import run_cli
from tests.support.httpserver import RouteServer
from tests.support.stores import T0, done, host_of, nu

psycopg = pytest.importorskip("psycopg")

from harvestman.store.postgres import PostgresStore  # noqa: E402
from harvestman.store.postgres_sql import SCHEMA_VERSION  # noqa: E402

HTML = {"Content-Type": "text/html"}


def open_pg(url: str, **kw: Any) -> PostgresStore:
    return PostgresStore(url, host_of=host_of, **kw)


def test_concurrent_leases_never_share_a_url_nor_pass_per_host(postgres_url: str) -> None:
    """Four connections lease and report back at once: each URL is leased once, and the leases out
    for a host never number more than per_host (a lease that read in_flight without locking the
    host row would let two connections fill the same free slots)."""
    per_host, hosts, per = 2, 2, 100
    with open_pg(postgres_url) as setup:
        setup.add([nu(f"http://h{h}.test/{i}") for i in range(per) for h in range(hosts)])
    lock = threading.Lock()
    out: Counter[str] = Counter()  # leases held now, per host, as the threads see them
    most: Counter[str] = Counter()
    leased: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker() -> None:
        try:
            with open_pg(postgres_url, per_host=per_host, lease_seconds=600) as f:
                start.wait()
                for _ in range(500):
                    got = f.lease(4, T0)
                    with lock:
                        for x in got:
                            out[x.host] += 1
                            most[x.host] = max(most[x.host], out[x.host])
                        leased.extend(x.url for x in got)
                    if not got and f.due_count(T0) == 0:
                        return
                    time.sleep(0.002)  # the fetches: leases are held a while, as a crawl holds them
                    with lock:  # let go here before the database does: the count never undercounts
                        for x in got:
                            out[x.host] -= 1
                    f.complete([done(x.url) for x in got], T0)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(leased) == hosts * per and len(set(leased)) == len(leased)
    assert max(most.values()) <= per_host and len(most) == hosts
    with open_pg(postgres_url) as f:
        assert f.counts()[UrlState.FETCHED] == hosts * per and f.in_flight() == 0


def test_delay_holds_across_connections(postgres_url: str) -> None:
    """Two connections leasing from one host with a delay: their lease times are `delay` apart."""
    delay = 0.02
    with open_pg(postgres_url) as setup:
        setup.add([nu(f"http://a.test/{i}") for i in range(30)])
    times: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        with open_pg(postgres_url, per_host=4, delay=delay) as f:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                now = time.time()
                got = f.lease(5, now)
                with lock:
                    times.extend(now for _ in got)
                f.complete([done(x.url) for x in got], now)
                if f.counts()[UrlState.FETCHED] == 30:
                    return

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    times.sort()
    assert len(times) == 30
    assert min(b - a for a, b in itertools.pairwise(times)) >= delay - 1e-6


def _lease_and_hang(url: str, report: str) -> None:
    """A crawl process that leases URLs, says which, then hangs until killed."""
    f = open_pg(url, per_host=2, lease_seconds=30)
    got = f.lease(10, T0)
    with open(report, "w") as out:
        out.write("\n".join(x.url for x in got))
    time.sleep(600)


def test_a_killed_process_leases_are_leased_again_after_expiry(postgres_url: str, tmp_path: Any) -> None:
    with open_pg(postgres_url) as setup:
        setup.add([nu(f"http://a.test/{i}") for i in range(3)] + [nu("http://b.test/0")])
    report = tmp_path / "leased.txt"
    child = multiprocessing.get_context("spawn").Process(target=_lease_and_hang,
                                                         args=(postgres_url, str(report)))
    child.start()
    try:
        deadline = time.monotonic() + 30
        while not report.exists() or not report.read_text():
            assert time.monotonic() < deadline and child.is_alive()
            time.sleep(0.05)
        dead = sorted(report.read_text().splitlines())
    finally:
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join()
    assert dead == ["http://a.test/0", "http://a.test/1", "http://b.test/0"]
    with open_pg(postgres_url, per_host=2, lease_seconds=30) as f:
        assert f.in_flight() == 3
        assert f.lease(10, T0 + 29) == []  # a.test is full, b.test has nothing else: all wait
        assert f.next_ready_time() == T0 + 30
        again: list[LeasedUrl] = f.lease(10, T0 + 30)
        # The dead process's leases, before a.test's third URL: they come first in the lease order.
        assert sorted(x.url for x in again) == dead
        assert f.in_flight() == 3
        f.complete([done(x.url) for x in again], T0 + 31)
        assert sorted(x.url for x in f.lease(10, T0 + 31)) == ["http://a.test/2"]


def test_reopen_keeps_everything_and_records_the_schema(postgres_url: str) -> None:
    with open_pg(postgres_url) as f:
        f.add([nu("http://a.test/1")])
        f.set_meta("config", '{"per_host": 3}')
    with open_pg(postgres_url) as f:
        assert f.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert f.get_meta("config") == '{"per_host": 3}'
        assert f.counts()[UrlState.UNFETCHED] == 1
        assert f.add([nu("http://a.test/1"), nu("http://a.test/2")]) == 1
    with PostgresStore.open_read_only(postgres_url) as reader:
        assert [r.url for r in reader.records()] == ["http://a.test/1", "http://a.test/2"]
        with pytest.raises(FrontierError, match="read-only"):
            reader.set_meta("k", "v")


def test_a_schema_1_database_is_refused_read_only_and_migrated_by_a_writer(postgres_url: str) -> None:
    with open_pg(postgres_url) as f:
        f.add([nu("http://a.test/1")])
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE urls DROP COLUMN simhash, DROP COLUMN duplicate_of,"
                     " DROP COLUMN fetch_interval, DROP COLUMN inlinks, DROP COLUMN metadata")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(FrontierError, match="schema 1: run a harvestman command that writes"):
        PostgresStore.open_read_only(postgres_url)
    with open_pg(postgres_url) as f:
        assert f.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert f.set_inlinks([("http://a.test/1", 4)]) == 1
        assert f.get("http://a.test/1").inlinks == 4  # type: ignore[union-attr]


def test_a_schema_4_database_gets_each_host_s_best_priority(postgres_url: str) -> None:
    with open_pg(postgres_url, per_host=1) as f:
        f.add([nu("http://a.test/3", priority=3), nu("http://a.test/2", priority=2)])
        f.add([nu("http://b.test/1", priority=1), nu("http://b.test/4", priority=4)])
        f.add([nu("http://c.test/9", priority=9)])
        assert [u.url for u in f.lease(1, T0)] == ["http://a.test/2"]  # unordered: a is first
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # what a schema 4 database holds
        conn.execute("DROP INDEX hosts_best")
        conn.execute("ALTER TABLE hosts DROP COLUMN best")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with open_pg(postgres_url, per_host=1, ordered=True) as f:
        assert f.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert [f.host_best(h) for h in ("a.test", "b.test", "c.test")] == [3, 1, 9]
        assert [u.url for u in f.lease(5, T0)] == ["http://b.test/1", "http://c.test/9"]  # a is full
        f.complete([done("http://a.test/2")], T0)
        assert [u.url for u in f.lease(5, T0)] == ["http://a.test/3"]


def test_two_processes_opening_a_new_database_at_once_make_one_schema(postgres_url: str) -> None:
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            opened.append(open_pg(postgres_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(opened) == 4
    assert opened[0].add([nu("http://a.test/")]) == 1 and opened[3].add([nu("http://a.test/")]) == 0
    for f in opened:
        f.close()


def test_foreign_newer_and_unreachable_databases_are_refused(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t(x int)")
    with pytest.raises(FrontierError, match="not a harvestman crawl database"):
        open_pg(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE t")
    with pytest.raises(FrontierError, match="no crawl in database"):
        PostgresStore.open_read_only(postgres_url)
    open_pg(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(FrontierError, match="newer than this harvestman"):
        open_pg(postgres_url)
    missing = postgres_url.replace("/hm_", "/nosuchdb_", 1)
    with pytest.raises(FrontierError, match="cannot open crawl database"):
        open_pg(missing)


def test_a_lost_connection_is_opened_again_and_a_closed_store_says_so(postgres_url: str) -> None:
    f = open_pg(postgres_url)
    f._conn.close()  # stands in for a connection the server dropped
    assert f.add([nu("http://a.test/")]) == 1
    assert f.counts()[UrlState.UNFETCHED] == 1
    f.close()
    f.close()
    with pytest.raises(FrontierError, match="closed"):
        f.lease(1, T0)


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "rolled-back"])
def test_a_commit_whose_answer_is_lost_is_written_once(postgres_url: str, committed: bool) -> None:
    """The connection is lost at COMMIT, after the server committed or before: the completion (an
    outcome, a new URL, a lease) is in the database once either way, its tallies and the host's
    leases counted once, and what the call returns is what was committed."""
    with open_pg(postgres_url, lease_seconds=600) as f:
        f.add([nu("http://a.test/1"), nu("http://a.test/2")])
        assert len(f.lease(2, T0)) == 2
        commit = f._commit
        lost = []

        def lose(conn: Any) -> None:
            if lost:
                return commit(conn)
            lost.append(conn.info.backend_pid)
            if committed:
                commit(conn)
            conn.close()  # the server's answer never arrives
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        f._commit = lose  # type: ignore[method-assign]
        leased = f.complete([done("http://a.test/1")], T0, [nu("http://a.test/3")], lease=1)
        assert lost and [x.url for x in leased] == ["http://a.test/3"]
        rows = Counter(r.state for r in f.records())
        assert rows == {UrlState.FETCHED: 1, UrlState.UNFETCHED: 2}
        assert {s: n for s, n in f.counts().items() if n} == dict(rows)  # the tallies agree
        assert f.in_flight() == 2 and f.pending() == 2  # /2 and /3 leased, each once
        assert f._read("SELECT in_flight FROM hosts WHERE name = 'a.test'") == [(2,)]


def test_nul_characters_in_reported_text_are_dropped(postgres_url: str) -> None:
    with open_pg(postgres_url) as f:
        f.add([nu("http://a.test/")])
        f.lease(1, T0)
        f.complete([done("http://a.test/", http_status=200, title="A\x00B", error_message="x\x00")], T0)
        rec = f.get("http://a.test/")
        assert rec is not None and rec.title == "AB"


def test_counts_stay_right_when_their_changes_are_folded(postgres_url: str) -> None:
    with open_pg(postgres_url, per_host=1000) as f:
        for i in range(2100):  # one tallies row a call: past the fold threshold
            f.add([nu(f"http://a.test/{i}")])
        f.lease(10, T0)
        f.complete([done(f"http://a.test/{i}") for i in range(4)], T0)
        assert f.counts()[UrlState.UNFETCHED] == 2096  # this call folds
        assert f.counts()[UrlState.UNFETCHED] == 2096 and f.counts()[UrlState.FETCHED] == 4
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("SELECT COUNT(*) FROM tallies").fetchone()[0] <= 4


def test_without_psycopg_the_error_says_what_to_install() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from harvestman.model.errors import ConfigError\n"
            "try:\n    import harvestman.store.postgres\nexcept ConfigError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'harvestman[postgres]'" in out.stdout


def test_open_store_opens_postgresql_locations(postgres_url: str) -> None:
    store = open_store(postgres_url, host_of=host_of, per_host=3, worker=(1, 2))
    try:
        assert isinstance(store, PostgresStore) and isinstance(store, Store) and store.per_host == 3
        store.add([nu("http://a.test/")])
    finally:
        store.close()
    reader = open_store(postgres_url, read_only=True)
    try:
        assert reader.pending() == 1 and [r.url for r in reader.records()] == ["http://a.test/"]
    finally:
        reader.close()


def test_next_ready_time_may_be_early_until_a_lease_parks_an_emptied_host(postgres_url: str) -> None:
    """next_ready_time does not ask each host whether it has work: a host emptied since the last
    lease may give an early time (allowed: never later than the truth), and that lease parks it."""
    with open_pg(postgres_url) as f:
        f.add([nu("http://a.test/1"), nu("http://b.test/1")])
        f.pause_host("b.test", T0 + 100, "retry-after")
        [leased] = f.lease(5, T0)
        f.complete([done(leased.url)], T0 + 1)  # a.test is empty now, its slot freed
        early = f.next_ready_time()
        assert early is not None and early <= T0 + 100
        assert f.lease(5, T0 + 2) == []
        assert f.next_ready_time() == T0 + 100
        assert [x.url for x in f.lease(5, T0 + 100)] == ["http://b.test/1"]


def test_a_crawl_status_and_export_on_postgresql(postgres_url: str, tmp_path: Any) -> None:
    """The CLI's --db takes a postgresql:// location: a loopback crawl, its status and export."""
    out = tmp_path / "out"
    routes = {"/": (200, HTML, b'<a href="/a">a</a><a href="/b">b</a>'), "/a": (200, HTML, b"<p>a"),
              "/b": (404, HTML, b"gone")}
    with RouteServer(routes, host="127.5.3.2") as srv:
        crawled = run_cli("crawl", srv.url("/"), "--out", str(out), "--db", postgres_url,
                          "--allow-net", "127.5.0.0/16", "--workers", "1", "-q")
        assert crawled.returncode == 0, crawled.stderr
    assert not (out / "crawl.db").exists()
    status = run_cli("status", str(out), "--db", postgres_url, "--json")
    assert status.returncode == 0, status.stderr
    states = json.loads(status.stdout)["states"]
    assert (states["fetched"], states["gone"]) == (2, 1)
    exported = run_cli("export", str(out), "--db", postgres_url)
    assert exported.returncode == 0 and "3 records" in exported.stdout, exported.stderr


def test_two_worker_processes_share_a_postgresql_crawl(postgres_url: str, tmp_path: Any) -> None:
    """--workers 2 on PostgreSQL: both processes lease from one database, every page once."""
    routes: dict[str, Any] = {
        "/": (200, HTML, "".join(f'<a href="/p{i}">p</a>' for i in range(60)).encode())}
    routes.update({f"/p{i}": (200, HTML, b"<p>x") for i in range(60)})
    with RouteServer(routes, host="127.5.3.3") as srv:
        crawled = run_cli("crawl", srv.url("/"), "--out", str(tmp_path / "out"), "--db", postgres_url,
                          "--allow-net", "127.5.0.0/16", "--workers", "2", "-q")
        assert crawled.returncode == 0, crawled.stderr
        pages = Counter(p for p in srv.paths if p != "/robots.txt")
    assert set(pages) == set(routes) and set(pages.values()) == {1}
    with PostgresStore.open_read_only(postgres_url) as f:
        assert f.counts()[UrlState.FETCHED] == 61 and f.pending() == 0 and f.in_flight() == 0

"""What only the SQLite store does: its file, lock, schema migrations, worker shares, kill -9."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from harvestman.model.errors import FrontierError
from harvestman.model.records import UrlState
from harvestman.store.sqlite_file import SCHEMA_VERSION
from harvestman.store.sqlite_store import SqliteStore
from tests.support.stores import T0, done, host_of, nu

DATA = Path(__file__).parent / "data"


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "c.db", host_of=host_of) as f:
        f.add([nu("http://a.test/1")])
        f.set_meta("k", "v")
    with SqliteStore(tmp_path / "c.db", host_of=host_of) as f:
        assert f.get_meta("k") == "v" and f.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert f.counts()[UrlState.UNFETCHED] == 1 and f.integrity_check() == "ok"


def test_lock_keeps_a_second_crawl_out(tmp_path: Path) -> None:
    f = SqliteStore(tmp_path / "c.db", host_of=host_of)
    with pytest.raises(FrontierError, match="in use by another process"):
        SqliteStore(tmp_path / "c.db", host_of=host_of)
    f.close()
    f.close()
    SqliteStore(tmp_path / "c.db", host_of=host_of).close()
    with pytest.raises(FrontierError, match="closed"):
        f.add([nu("http://a.test/")])


def test_garbage_and_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(os.urandom(8192))
    with pytest.raises(FrontierError, match=r"junk\.db"):
        SqliteStore(tmp_path / "junk.db", host_of=host_of)
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE t(x)")
    other.commit()
    other.close()
    with pytest.raises(FrontierError, match="not a harvestman crawl database"):
        SqliteStore(tmp_path / "other.db", host_of=host_of)
    SqliteStore(tmp_path / "new.db", host_of=host_of).close()
    db = sqlite3.connect(tmp_path / "new.db")
    db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(FrontierError, match="newer than this harvestman"):
        SqliteStore(tmp_path / "new.db", host_of=host_of)
    # The lock is released after each failed open.
    (tmp_path / "junk.db").unlink()
    SqliteStore(tmp_path / "junk.db", host_of=host_of).close()


def _crash_child(path: str, report: str, seed: int) -> None:
    """Add and complete in a loop, reporting what each committed transaction contained."""
    rng = random.Random(seed)
    f = SqliteStore(Path(path), per_host=3, host_of=host_of)
    f.release_leases()
    out = open(report, "a", buffering=1)  # noqa: SIM115 - line-buffered: every report is written at once
    i = 0
    while True:
        i += 1
        batch = [
            nu(f"http://h{rng.randrange(40)}.test/{seed}-{i}-{j}", 1) for j in range(rng.randrange(1, 60))
        ]
        leases = f.lease(20, time.time())
        outcomes = [done(x.url) for x in leases]
        f.complete(outcomes, time.time(), batch)
        out.write("".join(f"added {u.url}\n" for u in batch) + "".join(f"done {o.url}\n" for o in outcomes))


def test_sigkill_never_loses_committed_urls(tmp_path: Path) -> None:
    db_path = tmp_path / "crash.db"
    report = tmp_path / "report.txt"
    with SqliteStore(db_path, host_of=host_of) as f:
        f.add([nu(f"http://h{i}.test/") for i in range(40)])
    ctx = multiprocessing.get_context("fork")  # inherits the imported modules; no re-import needed
    for round_ in range(3):
        child = ctx.Process(target=_crash_child, args=(str(db_path), str(report), round_))
        child.start()
        time.sleep(random.uniform(0.3, 0.9))
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        with SqliteStore(db_path, host_of=host_of) as f:
            assert f.integrity_check() == "ok"
            states = {r.url: r.state for r in f.records()}
            lines = report.read_text().splitlines()
            assert len(lines) > 10
            for line in lines:
                kind, url = line.split(" ", 1)
                assert url in states, f"committed URL lost: {url}"
                if kind == "done":
                    assert states[url] == UrlState.FETCHED
            counts = f.counts()
            assert sum(counts.values()) == len(states)
            assert counts[UrlState.UNFETCHED] == sum(1 for s in states.values() if s == UrlState.UNFETCHED)
            assert sum(p for _, p, _, _ in f.host_stats()) == counts[UrlState.UNFETCHED]


def test_sqlite_errors_come_out_as_frontier_errors(tmp_path: Path) -> None:
    frontier = SqliteStore(tmp_path / "crawl.db", host_of=host_of)
    frontier._db.close()  # stands in for a failing disk: every statement now raises sqlite3.Error
    with pytest.raises(FrontierError, match="crawl database"):
        frontier.add([nu("http://a.test/")])
    with pytest.raises(FrontierError, match="crawl database"):
        frontier.counts()
    frontier.close()


def _old_file(tmp_path: Path) -> Path:
    """A copy of a crawl.db written by harvestman's schema 2 (before queued URLs had priorities):
    a.test/ fetched, a.test/x (depth 1), a.test/y (depth 2) and b.test/ (depth 1) unfetched."""
    path = tmp_path / "crawl.db"
    shutil.copyfile(DATA / "crawl-schema2.db", path)
    return path


def test_schema_1_file_is_read_and_migrated(tmp_path: Path) -> None:
    path = _old_file(tmp_path)
    db = sqlite3.connect(path)  # what a crawl.db written before titles looks like
    db.execute("ALTER TABLE urls DROP COLUMN title")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with SqliteStore.open_read_only(path) as old:  # status and export leave the file as it is
        rec = old.get("http://a.test/")
        assert rec is not None and (rec.title, old.get_meta("schema_version")) == ("", "1")
    with SqliteStore(path, host_of=host_of) as f:
        assert f.get_meta("schema_version") == str(SCHEMA_VERSION)
        f.add([nu("http://a.test/2")])
        f.lease(5, T0)
        f.complete([done("http://a.test/2", http_status=200, title="Two")], T0)
        got = f.get("http://a.test/2")
        assert got is not None and got.title == "Two"


def test_schema_2_file_is_migrated_with_its_queue(tmp_path: Path) -> None:
    path = _old_file(tmp_path)
    with SqliteStore(path, host_of=host_of, per_host=10) as f:
        assert f.get_meta("schema_version") == str(SCHEMA_VERSION) and f.integrity_check() == "ok"
        assert f.pending() == 3 and f.counts()[UrlState.FETCHED] == 1
        f.add([nu("http://a.test/z", 0)])  # breadth-first: depth 0 goes before the migrated depths
        leased = [u.url for u in f.lease(10, T0)]
        assert [u for u in leased if "a.test" in u] == ["http://a.test/z", "http://a.test/x", "http://a.test/y"]
        assert "http://b.test/" in leased
        rec = f.get("http://a.test/")
        assert rec is not None and rec.title == "A" and rec.state == UrlState.FETCHED


def test_schema_2_file_gets_each_host_s_best_priority_for_the_global_order(tmp_path: Path) -> None:
    path = _old_file(tmp_path)
    with SqliteStore(path, host_of=host_of, per_host=10, ordered=True) as f:
        assert f.integrity_check() == "ok"
        assert f.host_best("a.test") == 1  # a.test/x at depth 1 (migrated: priority = depth)
        assert f.host_best("b.test") == float("inf")  # its one queued URL is leased
        plan = f._db.execute("EXPLAIN QUERY PLAN " + f._ready_hosts, (0, T0, T0, T0, 10, 16)).fetchall()
        assert "hosts_order" in str(plan)  # the ordered lease's index, made as it opened
        f.add([nu("http://c.test/", priority=0.5)])
        # b.test/'s lease expired long ago: the lease takes it back (best 1, as a.test's; b's id
        # is lower), and orders the hosts by their best.
        leased = [u.url for u in f.lease(10, T0)]
        assert leased == ["http://c.test/", "http://b.test/", "http://a.test/x", "http://a.test/y"]


def test_the_ordered_lease_s_index_is_there_only_while_the_crawl_is_ordered(tmp_path: Path) -> None:
    def indexes() -> set[str]:
        db = sqlite3.connect(tmp_path / "crawl.db")
        try:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        finally:
            db.close()

    with SqliteStore(tmp_path / "crawl.db", host_of=host_of) as f:
        f.add([nu("http://a.test/1", priority=2)])
    assert "hosts_order" not in indexes()  # bfs: no index to keep up at every lease
    with SqliteStore(tmp_path / "crawl.db", host_of=host_of, ordered=True) as f:
        assert "hosts_order" in indexes() and f.host_best("a.test") == 2
        f.add([nu("http://b.test/1", priority=1)])
        assert [u.url for u in f.lease(5, T0)] == ["http://b.test/1", "http://a.test/1"]
    with SqliteStore(tmp_path / "crawl.db", host_of=host_of) as f:  # resumed as bfs
        assert "hosts_order" not in indexes()


def test_a_worker_asks_when_its_share_or_the_whole_crawl_is_ready(tmp_path: Path) -> None:
    """--max-wait in a worker: its own share's next time, and the whole crawl's (`everywhere`)."""
    with SqliteStore(tmp_path / "crawl.db", host_of=host_of) as owner:
        owner.add([nu("http://a.test/1")])  # host id 1
        owner.add([nu("http://b.test/1")])  # host id 2: worker 0 of 2's share
        owner.pause_host("a.test", T0 + 50, "retry-after")
        owner.pause_host("b.test", T0 + 100, "retry-after")
        with SqliteStore(tmp_path / "crawl.db", host_of=host_of, shard=(0, 2)) as worker:
            assert worker.next_ready_time() == T0 + 100  # b.test only
            assert worker.next_ready_time(everywhere=True) == T0 + 50
        assert owner.next_ready_time() == owner.next_ready_time(everywhere=True) == T0 + 50

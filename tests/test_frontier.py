"""The Frontier protocol's shared test suite; every backend runs it through the `make` fixture."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from harvestman.model.errors import FrontierError
from harvestman.model.records import FetchOutcome, NewUrl, UrlState
from harvestman.store.frontier import Frontier
from harvestman.store.sqlite_frontier import SCHEMA_VERSION, SqliteFrontier

T0 = 1_000_000.0  # a fixed "now": policy under test takes time as an argument


def host_of(url: str) -> str:
    return urlsplit(url).hostname or ""


def nu(url: str, depth: int = 0, score: float = 0.0, parent: str = "") -> NewUrl:
    return NewUrl(url, host_of(url), depth, score, parent)


def done(url: str, state: UrlState = UrlState.FETCHED, **kw: Any) -> FetchOutcome:
    return FetchOutcome(url, state, fetch_time=kw.pop("fetch_time", T0), **kw)


Maker = Callable[..., Frontier]


def _sqlite(path: Path, **kw: Any) -> Frontier:
    return SqliteFrontier(path / "crawl.db", host_of=host_of, **kw)


def _postgres(request: pytest.FixtureRequest, **kw: Any) -> Frontier:
    from harvestman.store.postgres import PostgresFrontier

    return PostgresFrontier(request.getfixturevalue("postgres_url"), host_of=host_of, **kw)


# Every test below that takes `make` runs against each backend.
BACKENDS: dict[str, Callable[..., Frontier]] = {
    "sqlite": lambda request, **kw: _sqlite(request.getfixturevalue("tmp_path"), **kw),
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(BACKENDS))
def make(request: pytest.FixtureRequest) -> Iterator[Maker]:
    opened: list[Frontier] = []

    def factory(**kw: Any) -> Frontier:
        frontier = BACKENDS[request.param](request, **kw)
        opened.append(frontier)
        return frontier

    yield factory
    for frontier in opened:
        frontier.close()


def leased_urls(frontier: Frontier, limit: int, now: float = T0) -> list[str]:
    return [leased.url for leased in frontier.lease(limit, now)]


def test_add_counts_only_new_urls(make: Maker) -> None:
    f = make()
    assert isinstance(f, Frontier)
    assert f.add([nu("http://a.test/1"), nu("http://a.test/2"), nu("http://a.test/1")]) == 2
    assert f.add([nu("http://a.test/2", depth=5), nu("http://b.test/")]) == 1
    rec = f.get("http://a.test/2")
    assert rec is not None and rec.depth == 0 and rec.state == UrlState.UNFETCHED  # known: left alone
    assert f.get("http://nowhere.test/") is None
    assert f.counts()[UrlState.UNFETCHED] == 3
    assert f.add([]) == 0


def test_lease_order_is_depth_then_score_then_insertion(make: Maker) -> None:
    f = make(per_host=10)
    f.add([nu("http://a.test/d2", 2), nu("http://a.test/d1-low", 1, 0.1), nu("http://a.test/d1-a", 1, 0.5)])
    f.add([nu("http://a.test/d1-b", 1, 0.5), nu("http://a.test/d0", 0)])
    assert leased_urls(f, 10) == [
        "http://a.test/d0",
        "http://a.test/d1-a",
        "http://a.test/d1-b",
        "http://a.test/d1-low",
        "http://a.test/d2",
    ]


def test_per_host_concurrency_and_lease_fields(make: Maker) -> None:
    f = make(per_host=2, lease_seconds=60)
    f.add([nu(f"http://a.test/{i}") for i in range(5)] + [nu(f"http://b.test/{i}") for i in range(5)])
    leases = f.lease(100, T0)
    hosts = [x.host for x in leases]
    assert sorted(hosts) == ["a.test", "a.test", "b.test", "b.test"]
    assert all(x.lease_until == T0 + 60 for x in leases)
    assert f.in_flight() == 4
    assert f.lease(100, T0 + 1) == []  # both hosts full
    f.complete([done(leases[0].url)], T0 + 1)
    again = f.lease(100, T0 + 1)
    assert [x.host for x in again] == [leases[0].host]
    assert f.in_flight() == 4
    # Reporting back and leasing again in one transaction: the freed slot's next URL.
    assert f.complete([done(leases[1].url)], T0 + 2, lease=0) == []
    more = f.complete([], T0 + 2, [nu("http://c.test/0")], lease=100)
    assert sorted(x.host for x in more) == [leases[1].host, "c.test"]
    assert f.in_flight() == 5


def test_limit_is_respected(make: Maker) -> None:
    f = make(per_host=5)
    f.add([nu(f"http://h{i}.test/{j}") for i in range(10) for j in range(5)])
    assert len(f.lease(7, T0)) == 7
    assert len(f.lease(1000, T0)) == 43


def test_delay_gives_one_url_per_interval(make: Maker) -> None:
    f = make(per_host=4, delay=2.0)
    f.add([nu(f"http://a.test/{i}") for i in range(4)])
    assert len(f.lease(10, T0)) == 1
    assert f.lease(10, T0 + 1) == []
    assert len(f.lease(10, T0 + 2)) == 1
    assert f.next_ready_time() == T0 + 4
    f.set_host_delay("a.test", 0.0)
    assert len(f.lease(10, T0 + 4)) == 2


def test_complete_pushes_ready_at_by_delay(make: Maker) -> None:
    f = make(per_host=1)
    f.add([nu("http://a.test/1"), nu("http://a.test/2")])
    f.set_host_delay("a.test", 5.0)
    [first] = f.lease(10, T0)
    f.complete([done(first.url)], T0 + 3)
    assert f.lease(10, T0 + 7) == []
    assert len(f.lease(10, T0 + 8)) == 1


def test_pause_host(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1"), nu("http://b.test/1")])
    f.pause_host("a.test", T0 + 100, "retry-after")
    f.pause_host("a.test", T0 + 50, "shorter")  # never shortens a pause
    assert leased_urls(f, 10) == ["http://b.test/1"]
    assert f.lease(10, T0 + 99) == []
    assert f.next_ready_time() == T0 + 100
    assert leased_urls(f, 10, T0 + 100) == ["http://a.test/1"]


def test_host_failure_counter(make: Maker) -> None:
    f = make()
    assert f.host_failure("a.test", T0) == 1
    assert f.host_failure("a.test", T0 + 1) == 2
    f.host_success("a.test")
    assert f.host_failure("a.test", T0 + 2) == 1


def test_expired_lease_is_handed_out_again(make: Maker) -> None:
    f = make(per_host=1, lease_seconds=10)
    f.add([nu("http://a.test/1")])
    assert leased_urls(f, 5) == ["http://a.test/1"]
    assert f.lease(5, T0 + 9) == []
    assert f.next_ready_time() == T0 + 10
    assert leased_urls(f, 5, T0 + 10) == ["http://a.test/1"]
    assert f.in_flight() == 1
    f.complete([done("http://a.test/1")], T0 + 11)
    assert f.in_flight() == 0 and f.next_ready_time() is None


def test_release_leases(make: Maker) -> None:
    f = make(per_host=2)
    f.add([nu(f"http://a.test/{i}") for i in range(3)])
    assert len(f.lease(10, T0)) == 2
    assert f.release_leases() == 2
    assert f.in_flight() == 0
    assert f.due_count(T0) == 3
    assert leased_urls(f, 10) == ["http://a.test/0", "http://a.test/1"]


def test_complete_with_new_urls_is_one_transaction(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/")])
    [leased] = f.lease(1, T0)
    bad = FetchOutcome(leased.url, UrlState.FETCHED, fetch_time=T0, http_status=200)
    # A failure half-way (an outcome the database refuses) must leave neither the outlinks nor the state.
    broken = FetchOutcome("http://a.test/", UrlState.FETCHED, fetch_time=T0, body_size=2**70)
    with pytest.raises((OverflowError, FrontierError, sqlite3.Error)):
        f.complete([bad, broken], T0, [nu("http://a.test/new", 1)])
    assert f.get("http://a.test/new") is None
    rec = f.get(leased.url)
    assert rec is not None and rec.state == UrlState.UNFETCHED
    f.complete([bad], T0, [nu("http://a.test/new", 1, parent=leased.url)])
    new = f.get("http://a.test/new")
    assert new is not None and new.parent == leased.url and new.depth == 1
    rec = f.get(leased.url)
    assert rec is not None and rec.state == UrlState.FETCHED and rec.http_status == 200


def test_outcome_fields_and_retries(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/x")])
    f.lease(1, T0)
    f.complete(
        [
            done(
                "http://a.test/x",
                UrlState.UNFETCHED,
                next_fetch_time=T0 + 30,
                retried=True,
                error_class="timeout",
                error_message="slow",
            )
        ],
        T0,
    )
    rec = f.get("http://a.test/x")
    assert rec is not None and rec.retries == 1 and rec.error_class == "timeout"
    assert f.due_count(T0 + 29) == 0 and f.due_count(T0 + 30) == 1
    assert f.lease(1, T0 + 29) == []
    assert f.next_ready_time() == T0 + 30
    [again] = f.lease(1, T0 + 30)
    assert again.retries == 1
    f.complete(
        [
            done(
                "http://a.test/x",
                http_status=200,
                etag='"e1"',
                last_modified="lm",
                signature="s1",
                content_type="text/html",
                body_size=10,
                wire_bytes=20,
            )
        ],
        T0 + 31,
    )
    f.complete([done("http://a.test/x", UrlState.NOT_MODIFIED, http_status=304)], T0 + 40)
    rec = f.get("http://a.test/x")
    assert rec is not None and rec.state == UrlState.NOT_MODIFIED and rec.retries == 1
    assert (rec.etag, rec.last_modified, rec.signature, rec.content_type) == ('"e1"', "lm", "s1", "text/html")
    assert f.error_counts() == {}


def test_final_url_upserted_as_fetched(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/old", 3)])
    f.lease(1, T0)
    f.complete(
        [done("http://a.test/old", UrlState.REDIRECT_PERM, http_status=200, final_url="http://b.test/new")],
        T0,
    )
    final = f.get("http://b.test/new")
    assert final is not None and final.state == UrlState.FETCHED and final.host == "b.test"
    assert final.depth == 3 and final.parent == "http://a.test/old"
    assert f.add([nu("http://b.test/new")]) == 0
    assert f.lease(10, T0 + 1) == []
    old = f.get("http://a.test/old")
    assert old is not None and old.final_url == "http://b.test/new"


def test_counts_records_stats_errors(make: Maker) -> None:
    f = make(per_host=5)
    f.add([nu(f"http://a.test/{i}") for i in range(4)] + [nu("http://b.test/")])
    f.lease(10, T0)
    f.complete(
        [
            done("http://a.test/0"),
            done("http://a.test/1", UrlState.GONE, http_status=404, error_class="http_404"),
        ],
        T0,
    )
    counts = f.counts()
    assert counts[UrlState.FETCHED] == 1 and counts[UrlState.GONE] == 1 and counts[UrlState.UNFETCHED] == 3
    assert set(counts) == set(UrlState)
    assert [r.url for r in f.records()] == [f"http://a.test/{i}" for i in range(4)] + ["http://b.test/"]
    assert f.host_stats() == [("a.test", 2, 1, 1), ("b.test", 1, 0, 0)]
    assert f.error_counts() == {"http_404": 1}


def test_records_stream_many(make: Maker) -> None:
    f = make()
    f.add([nu(f"http://h{i % 7}.test/{i}") for i in range(2500)])
    assert sum(1 for _ in f.records()) == 2500


def test_next_ready_time(make: Maker) -> None:
    f = make(per_host=1)
    assert f.next_ready_time() is None
    f.add([nu("http://a.test/1"), nu("http://a.test/2")])
    assert f.next_ready_time() is not None and f.next_ready_time() <= T0  # type: ignore[operator]
    f.set_host_delay("a.test", 3.0)
    f.lease(5, T0)
    f.complete([done("http://a.test/1")], T0 + 1)
    assert f.next_ready_time() == T0 + 4


def test_meta(make: Maker) -> None:
    f = make()
    assert f.get_meta("seeds") is None
    f.set_meta("seeds", '["http://a.test/"]')
    f.set_meta("seeds", '["http://b.test/"]')
    assert f.get_meta("seeds") == '["http://b.test/"]'


# -- SQLite specifics ------------------------------------------------------------------------------


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    with SqliteFrontier(tmp_path / "c.db", host_of=host_of) as f:
        f.add([nu("http://a.test/1")])
        f.set_meta("k", "v")
    with SqliteFrontier(tmp_path / "c.db", host_of=host_of) as f:
        assert f.get_meta("k") == "v" and f.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert f.counts()[UrlState.UNFETCHED] == 1 and f.integrity_check() == "ok"


def test_lock_keeps_a_second_crawl_out(tmp_path: Path) -> None:
    f = SqliteFrontier(tmp_path / "c.db", host_of=host_of)
    with pytest.raises(FrontierError, match="in use by another process"):
        SqliteFrontier(tmp_path / "c.db", host_of=host_of)
    f.close()
    f.close()
    SqliteFrontier(tmp_path / "c.db", host_of=host_of).close()
    with pytest.raises(FrontierError, match="closed"):
        f.add([nu("http://a.test/")])


def test_garbage_and_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(os.urandom(8192))
    with pytest.raises(FrontierError, match=r"junk\.db"):
        SqliteFrontier(tmp_path / "junk.db", host_of=host_of)
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE t(x)")
    other.commit()
    other.close()
    with pytest.raises(FrontierError, match="not a harvestman crawl database"):
        SqliteFrontier(tmp_path / "other.db", host_of=host_of)
    SqliteFrontier(tmp_path / "new.db", host_of=host_of).close()
    db = sqlite3.connect(tmp_path / "new.db")
    db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(FrontierError, match="newer than this harvestman"):
        SqliteFrontier(tmp_path / "new.db", host_of=host_of)
    # The lock is released after each failed open.
    (tmp_path / "junk.db").unlink()
    SqliteFrontier(tmp_path / "junk.db", host_of=host_of).close()


def _crash_child(path: str, report: str, seed: int) -> None:
    """Add and complete in a loop, reporting what each committed transaction contained."""
    rng = random.Random(seed)
    f = SqliteFrontier(Path(path), per_host=3, host_of=host_of)
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
    with SqliteFrontier(db_path, host_of=host_of) as f:
        f.add([nu(f"http://h{i}.test/") for i in range(40)])
    ctx = multiprocessing.get_context("fork")  # inherits the imported modules; no re-import needed
    for round_ in range(3):
        child = ctx.Process(target=_crash_child, args=(str(db_path), str(report), round_))
        child.start()
        time.sleep(random.uniform(0.3, 0.9))
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        with SqliteFrontier(db_path, host_of=host_of) as f:
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
    frontier = SqliteFrontier(tmp_path / "crawl.db", host_of=host_of)
    frontier._db.close()  # stands in for a failing disk: every statement now raises sqlite3.Error
    with pytest.raises(FrontierError, match="crawl database"):
        frontier.add([nu("http://a.test/")])
    with pytest.raises(FrontierError, match="crawl database"):
        frontier.counts()
    frontier.close()


def test_totals_count_responses_bytes_and_time_span(make: Maker) -> None:
    f = make(per_host=10)
    urls = [f"http://a.test/{i}" for i in range(4)]
    f.add([nu(u) for u in urls])
    f.lease(10, T0)
    f.complete([done(urls[0], http_status=200, wire_bytes=100, fetch_time=T0 + 1),
                done(urls[1], http_status=404, wire_bytes=50, fetch_time=T0 + 5),
                done(urls[2], UrlState.GONE, error_class="robots", fetch_time=T0 + 9)], T0)
    totals = f.totals()
    assert (totals.responses, totals.wire_bytes) == (2, 150)
    assert (totals.first_fetch, totals.last_fetch) == (T0 + 1, T0 + 5)  # robots-refused URLs got no response


def test_host_totals_count_states_errors_and_bytes(make: Maker) -> None:
    f = make(per_host=10)
    f.add([nu(f"http://a.test/{i}") for i in range(4)] + [nu("http://b.test/")])
    f.lease(10, T0)
    f.complete([done("http://a.test/0", http_status=200, wire_bytes=100),
                done("http://a.test/1", UrlState.GONE, http_status=404, error_class="http_404",
                     wire_bytes=30),
                done("http://a.test/2", UrlState.REDIRECT_PERM, http_status=301, wire_bytes=7)], T0)
    [a, b] = f.host_totals()
    assert (a.host, a.errors, a.wire_bytes) == ("a.test", 1, 137)
    assert a.states == {**{s: 0 for s in UrlState}, UrlState.FETCHED: 1, UrlState.GONE: 1,
                        UrlState.REDIRECT_PERM: 1, UrlState.UNFETCHED: 1}
    assert (b.host, b.errors, b.wire_bytes, b.states[UrlState.UNFETCHED]) == ("b.test", 0, 0, 1)


def test_records_final_url_and_title(make: Maker) -> None:
    f = make(per_host=10)
    f.add([nu("http://a.test/"), nu("http://a.test/old"), nu("http://a.test/new"), nu("http://a.test/x")])
    f.lease(10, T0)
    f.complete([done("http://a.test/", http_status=200, title="Home"),
                # A 301 not followed (its target is known): final_url says where it points, and the
                # target keeps its own turn.
                done("http://a.test/old", UrlState.REDIRECT_PERM, http_status=301,
                     final_url="http://a.test/new")], T0)
    rec = {r.url: r for r in f.records()}
    assert (rec["http://a.test/"].final_url, rec["http://a.test/"].title) == ("http://a.test/", "Home")
    assert rec["http://a.test/old"].final_url == "http://a.test/new"
    assert rec["http://a.test/new"].state == UrlState.UNFETCHED and rec["http://a.test/new"].final_url == ""
    assert rec["http://a.test/x"].final_url == ""  # no response yet
    # A 304 parses nothing: the title of the last full fetch stays.
    f.complete([done("http://a.test/", UrlState.NOT_MODIFIED, http_status=304)], T0 + 2)
    got = f.get("http://a.test/")
    assert got is not None and got.title == "Home"


def test_schema_1_file_is_read_and_migrated(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    with SqliteFrontier(path, host_of=host_of) as f:
        f.add([nu("http://a.test/")])
        f.lease(1, T0)
        f.complete([done("http://a.test/", http_status=200)], T0)
    # What a crawl.db written before titles looks like.
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE urls DROP COLUMN title")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with SqliteFrontier.open_read_only(path) as old:  # status and export leave the file as it is
        [rec] = old.records()
        assert (rec.url, rec.title, old.get_meta("schema_version")) == ("http://a.test/", "", "1")
    with SqliteFrontier(path, host_of=host_of) as f:
        assert f.get_meta("schema_version") == str(SCHEMA_VERSION)
        f.add([nu("http://a.test/2")])
        f.lease(1, T0)
        f.complete([done("http://a.test/2", http_status=200, title="Two")], T0)
        got = f.get("http://a.test/2")
        assert got is not None and got.title == "Two"


def test_a_worker_asks_when_its_share_or_the_whole_crawl_is_ready(tmp_path: Path) -> None:
    """--max-wait in a worker: its own share's next time, and the whole crawl's (`everywhere`)."""
    with SqliteFrontier(tmp_path / "crawl.db", host_of=host_of) as owner:
        owner.add([nu("http://a.test/1")])  # host id 1
        owner.add([nu("http://b.test/1")])  # host id 2: worker 0 of 2's share
        owner.pause_host("a.test", T0 + 50, "retry-after")
        owner.pause_host("b.test", T0 + 100, "retry-after")
        with SqliteFrontier(tmp_path / "crawl.db", host_of=host_of, shard=(0, 2)) as worker:
            assert worker.next_ready_time() == T0 + 100  # b.test only
            assert worker.next_ready_time(everywhere=True) == T0 + 50
        assert owner.next_ready_time() == owner.next_ready_time(everywhere=True) == T0 + 50

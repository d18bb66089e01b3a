"""The store contract: every backend runs these tests unchanged, through the `make` fixture."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harvestman.model.errors import FrontierError
from harvestman.model.records import FetchOutcome, Link, LinkEdge, LinkKind, PageLinks, UrlState
from harvestman.store.factory import open_store
from harvestman.store.frontier import CrawlDb, Frontier, Store
from harvestman.store.sqlite_store import SqliteStore
from tests.support.stores import T0, done, host_of, leased_urls, nu

Maker = Callable[..., Store]


def _sqlite(request: pytest.FixtureRequest, **kw: Any) -> Store:
    path: Path = request.getfixturevalue("tmp_path")
    return SqliteStore(path / "crawl.db", host_of=host_of, **kw)


def _postgres(request: pytest.FixtureRequest, **kw: Any) -> Store:
    # A new database on the session's server (tests/conftest.py), or a skip saying what is missing.
    return open_store(request.getfixturevalue("postgres_url"), host_of=host_of, **kw)


# A backend adds itself here; every test below then runs against it too.
BACKENDS: dict[str, Callable[..., Store]] = {"sqlite": _sqlite, "postgres": _postgres}


@pytest.fixture(params=sorted(BACKENDS))
def make(request: pytest.FixtureRequest) -> Iterator[Maker]:
    opened: list[Store] = []

    def factory(**kw: Any) -> Store:
        store = BACKENDS[request.param](request, **kw)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


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


def test_lease_order_is_priority_then_insertion(make: Maker) -> None:
    f = make(per_host=10)
    f.add([nu("http://a.test/p2", priority=2), nu("http://a.test/p1-a", priority=1),
           nu("http://a.test/p-neg", priority=-0.5)])
    f.add([nu("http://a.test/p1-b", priority=1), nu("http://a.test/p0", priority=0)])
    assert leased_urls(f, 10) == [
        "http://a.test/p-neg",
        "http://a.test/p0",
        "http://a.test/p1-a",
        "http://a.test/p1-b",
        "http://a.test/p2",
    ]


def test_pending_counts_queued_urls_leased_or_not(make: Maker) -> None:
    f = make(per_host=10)
    assert f.pending() == 0
    f.add([nu("http://a.test/1"), nu("http://a.test/2"), nu("http://b.test/1")])
    [first, *_] = f.lease(1, T0)
    assert f.pending() == 3 and f.in_flight() == 1 and f.due_count(T0) == 2
    f.complete([done(first.url, http_status=200)], T0)
    assert f.pending() == 2 and f.in_flight() == 0


def test_a_scheduled_revisit_is_leased_again_when_due(make: Maker) -> None:
    """`fetched` is not terminal: an outcome with a next fetch time queues its URL again."""
    f = make(per_host=10)
    f.add([nu("http://a.test/page"), nu("http://a.test/once")])
    assert sorted(leased_urls(f, 10)) == ["http://a.test/once", "http://a.test/page"]
    f.complete([done("http://a.test/page", http_status=200, etag='"v1"', next_fetch_time=T0 + 100),
                done("http://a.test/once", http_status=200)], T0)
    assert f.pending() == 1 and f.due_count(T0) == 0
    assert leased_urls(f, 10, T0 + 99) == []
    assert f.next_ready_time() == T0 + 100  # known once a lease found nothing due
    [again] = f.lease(10, T0 + 100)
    assert (again.url, again.etag) == ("http://a.test/page", '"v1"')  # a conditional request can follow
    rec = f.get("http://a.test/page")
    assert rec is not None and rec.state == UrlState.FETCHED  # the last fetch stays on record meanwhile
    f.complete([done(again.url, UrlState.NOT_MODIFIED, http_status=304, fetch_time=T0 + 100)], T0 + 100)
    rec = f.get("http://a.test/page")
    assert rec is not None and rec.state == UrlState.NOT_MODIFIED and rec.etag == '"v1"'
    assert f.pending() == 0 and f.next_ready_time() is None and f.counts()[UrlState.UNFETCHED] == 0


def test_links_are_stored_with_their_page_and_replaced_on_refetch(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/"), nu("http://a.test/2")])
    f.lease(2, T0)
    page = PageLinks("http://a.test/", (
        Link("http://a.test/2", LinkKind.ANCHOR, "Two ünïcode", False),
        Link("http://elsewhere.test/x?y=1", LinkKind.ANCHOR, "", True),
        Link("http://a.test/2", LinkKind.CANONICAL),
    ))
    f.complete([done("http://a.test/", http_status=200), done("http://a.test/2", http_status=200)], T0,
               links=[page, PageLinks("http://a.test/2", ())])
    assert list(f.links()) == [
        LinkEdge("http://a.test/", "http://a.test/2", "Two ünïcode", LinkKind.ANCHOR, False),
        LinkEdge("http://a.test/", "http://elsewhere.test/x?y=1", "", LinkKind.ANCHOR, True),
        LinkEdge("http://a.test/", "http://a.test/2", "", LinkKind.CANONICAL, False),
    ]
    f.complete([], T0, links=[PageLinks("http://a.test/", (Link("http://b.test/"),))])
    assert list(f.links()) == [LinkEdge("http://a.test/", "http://b.test/", "", LinkKind.ANCHOR, False)]


def test_many_pages_of_links_stream_in_order(make: Maker) -> None:
    f = make()
    pages = [f"http://a.test/{i}" for i in range(450)]
    f.add([nu(url) for url in pages])
    f.complete([], T0, links=[PageLinks(url, (Link(url + "/out"),)) for url in pages])
    assert [edge.from_url for edge in f.links()] == pages


def test_set_scores_reorders_the_queue(make: Maker) -> None:
    f = make(per_host=10)
    f.add([nu("http://a.test/1"), nu("http://a.test/2"), nu("http://a.test/3")])
    assert f.set_scores([("http://a.test/3", 0.9, -0.9), ("http://a.test/2", 0.5, -0.5),
                         ("http://nowhere.test/", 1.0, -1.0)]) == 2
    assert leased_urls(f, 10) == ["http://a.test/3", "http://a.test/2", "http://a.test/1"]
    rec = f.get("http://a.test/3")
    assert rec is not None and rec.score == 0.9


def test_both_faces(make: Maker) -> None:
    f = make()
    assert isinstance(f, Frontier) and isinstance(f, CrawlDb)


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
    with pytest.raises((OverflowError, FrontierError)):
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


# -- schema 4: what batch jobs, crawl steps and fetch schedules keep ---------------------------------


def test_generate_selects_due_urls_best_first_capped_per_host_and_holds_them(make: Maker) -> None:
    f = make(per_host=10)
    f.add([nu(f"http://a.test/{i}", depth=i % 3, score=float(i)) for i in range(6)]
          + [nu(f"http://b.test/{i}", depth=1, score=10.0 + i) for i in range(3)])
    picked = f.generate(4, 2, "score", T0, T0 + 3600)
    assert [r.url for r in picked] == ["http://b.test/2", "http://b.test/1", "http://a.test/5", "http://a.test/4"]
    assert all(r.state == UrlState.UNFETCHED for r in picked)
    # Held: neither generated again nor leased before the segment expires, unless reported.
    again = f.generate(100, 0, "bfs", T0, T0 + 3600)
    assert {r.url for r in again} == {"http://a.test/0", "http://a.test/1", "http://a.test/2",
                                      "http://a.test/3", "http://b.test/0"}
    assert [r.depth for r in again] == sorted(r.depth for r in again)  # bfs: shallowest first
    assert f.generate(100, 0, "bfs", T0, T0 + 3600) == [] and f.lease(100, T0) == []
    f.complete([done("http://b.test/2", http_status=200)], T0)
    assert f.get("http://b.test/2").state == UrlState.FETCHED  # type: ignore[union-attr]
    # An expired segment's URLs come back.
    assert len(f.generate(100, 0, "dfs", T0 + 3601, T0 + 7200)) == 8


def test_generate_takes_fetched_urls_again_when_their_next_fetch_time_has_come(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1"), nu("http://a.test/2")])
    f.generate(10, 0, "bfs", T0, T0 + 10)
    f.complete([done("http://a.test/1", http_status=200, next_fetch_time=T0 + 100, fetch_interval=100.0,
                     signature="s1"),
                done("http://a.test/2", http_status=200)], T0)
    assert f.generate(10, 0, "bfs", T0 + 99, T0 + 200) == []
    [due] = f.generate(10, 0, "bfs", T0 + 100, T0 + 200)
    assert (due.url, due.fetch_interval, due.signature) == ("http://a.test/1", 100.0, "s1")


def test_lease_carries_the_signature_and_interval_for_schedules(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1")])
    f.lease(1, T0)
    f.complete([done("http://a.test/1", http_status=200, next_fetch_time=T0 + 5, fetch_interval=5.0,
                     signature="abc", simhash=(1 << 64) - 1)], T0)
    [again] = f.lease(1, T0 + 5)
    assert (again.signature, again.fetch_interval) == ("abc", 5.0)
    assert f.get("http://a.test/1").simhash == (1 << 64) - 1  # type: ignore[union-attr]
    # Same content, SimHash not computed this time: kept; changed content: dropped (stale).
    f.complete([done("http://a.test/1", http_status=200, signature="abc", next_fetch_time=T0 + 10)], T0 + 5)
    assert f.get("http://a.test/1").simhash == (1 << 64) - 1  # type: ignore[union-attr]
    f.lease(1, T0 + 10)
    f.complete([done("http://a.test/1", http_status=200, signature="new")], T0 + 10)
    rec = f.get("http://a.test/1")
    assert rec is not None and rec.simhash == 0 and rec.fetch_interval == 5.0


def test_simhashes_inlinks_and_metadata(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1"), nu("http://a.test/2")])
    big = 0xF0F0_0000_0000_0001
    assert f.set_simhashes([("http://a.test/1", big), ("http://a.test/2", 7), ("http://x.test/", 1)]) == 2
    assert f.set_inlinks([("http://a.test/1", 3), ("http://a.test/2", 1)]) == 2
    assert f.set_inlinks([("http://a.test/2", 2)]) == 1  # a new count replaces every old one
    assert f.set_metadata([("http://a.test/1", {"source": "seed", "lang": "en"})]) == 1
    assert f.set_metadata([("http://a.test/1", {"lang": "fr"}), ("http://x.test/", {"a": "b"})]) == 1
    one, two = f.get("http://a.test/1"), f.get("http://a.test/2")
    assert one is not None and two is not None
    assert (one.simhash, one.inlinks, two.simhash, two.inlinks) == (big, 0, 7, 2)
    assert json.loads(one.metadata) == {"source": "seed", "lang": "fr"} and two.metadata == ""
    assert [r.simhash for r in f.records()] == [big, 7]


def test_set_duplicates_replaces_the_previous_marks(make: Maker) -> None:
    f = make()
    urls = [f"http://a.test/{i}" for i in range(4)]
    f.add([nu(u) for u in urls])
    f.lease(10, T0)
    f.complete([done(u, http_status=200) for u in urls], T0)
    assert f.set_duplicates([(urls[1], urls[0]), (urls[2], urls[0]), (urls[3], urls[3])]) == 2
    assert f.counts()[UrlState.DUPLICATE] == 2 and f.counts()[UrlState.FETCHED] == 2
    assert f.get(urls[1]).duplicate_of == urls[0]  # type: ignore[union-attr]
    assert f.set_duplicates([(urls[3], urls[2])]) == 1
    states = {r.url: (r.state, r.duplicate_of) for r in f.records()}
    assert states == {urls[0]: (UrlState.FETCHED, ""), urls[1]: (UrlState.FETCHED, ""),
                      urls[2]: (UrlState.FETCHED, ""), urls[3]: (UrlState.DUPLICATE, urls[2])}
    assert f.counts()[UrlState.DUPLICATE] == 1 and f.counts()[UrlState.FETCHED] == 3


def test_add_scores_adds_to_known_urls_only(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1", score=1.0), nu("http://a.test/2")])
    assert f.add_scores([("http://a.test/1", 0.5), ("http://a.test/2", 0.25),
                         ("http://nowhere.test/", 9.0)]) == 2
    # The same URL twice in one call gets both amounts (a page linked from two pages).
    f.add_scores([("http://a.test/2", 0.25), ("http://a.test/2", 0.5)])
    assert f.get("http://a.test/1").score == 1.5  # type: ignore[union-attr]
    assert f.get("http://a.test/2").score == 1.0  # type: ignore[union-attr]
    assert f.get("http://nowhere.test/") is None


def test_a_lease_carries_the_url_s_score(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1", score=2.5)])
    [leased] = f.lease(1, T0)
    assert leased.score == 2.5


def test_what_a_fetch_cost_and_found_is_kept(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1")])
    f.lease(1, T0)
    f.complete([done("http://a.test/1", http_status=200, wire_bytes=900, body_wire_bytes=700, body_size=2000,
                     saved_bytes=5000, partial="head", change="major", checked_by="conditional")], T0)
    rec = f.get("http://a.test/1")
    assert rec is not None
    assert (rec.wire_bytes, rec.body_wire_bytes, rec.body_size, rec.saved_bytes) == (900, 700, 2000, 5000)
    assert (rec.partial, rec.change, rec.checked_by) == ("head", "major", "conditional")


def test_a_not_modified_fetch_keeps_the_page_s_full_size(make: Maker) -> None:
    # Issue 25: a 304 (or a HEAD) costs a few hundred bytes and has no body; the row keeps the
    # page's size, and wire + saved bytes stay the page's full response, 304 after 304, for the
    # next re-crawl to compare with (and status to add up).
    f = make()
    f.add([nu("http://a.test/1")])
    f.lease(1, T0)
    f.complete([done("http://a.test/1", http_status=200, wire_bytes=9000, body_wire_bytes=8700,
                     body_size=20000, next_fetch_time=T0 + 1)], T0)
    for n, wire in enumerate((300, 250, 0)):  # two 304s, then one that sent nothing (a sitemap's lastmod)
        f.lease(1, T0 + 1 + n)
        f.complete([done("http://a.test/1", UrlState.NOT_MODIFIED, http_status=304, wire_bytes=wire,
                         next_fetch_time=T0 + 2 + n)], T0 + 1 + n)
        rec = f.get("http://a.test/1")
        assert rec is not None
        assert (rec.wire_bytes, rec.saved_bytes, rec.body_size) == (wire, 9000 - wire, 20000), n
    # What the fetch says it saved is its own; a changed page is its new response, whole.
    f.lease(1, T0 + 9)
    f.complete([done("http://a.test/1", UrlState.NOT_MODIFIED, http_status=304, wire_bytes=200,
                     saved_bytes=123, next_fetch_time=T0 + 10)], T0 + 9)
    assert f.get("http://a.test/1").saved_bytes == 123  # type: ignore[union-attr]
    f.lease(1, T0 + 10)
    f.complete([done("http://a.test/1", http_status=200, wire_bytes=5000, body_size=11000)], T0 + 10)
    rec = f.get("http://a.test/1")
    assert rec is not None and (rec.wire_bytes, rec.saved_bytes, rec.body_size) == (5000, 0, 11000)


# -- schema 6 (PostgreSQL 4): focused crawling's judgement of a page ---------------------------------


def test_a_page_s_topic_and_relevance_are_kept(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1"), nu("http://a.test/2")])
    f.lease(2, T0)
    f.complete([done("http://a.test/1", http_status=200, topic="databases", relevance=0.875),
                done("http://a.test/2", http_status=200)], T0)
    rec = f.get("http://a.test/1")
    assert rec is not None and (rec.topic, rec.relevance) == ("databases", 0.875)
    other = f.get("http://a.test/2")
    assert other is not None and (other.topic, other.relevance) == ("", 0.0)  # not scored
    assert {r.url: r.topic for r in f.records()}["http://a.test/1"] == "databases"


def test_requeue_revives_gone_urls_only(make: Maker) -> None:
    f = make()
    f.add([nu("http://a.test/1"), nu("http://a.test/2"), nu("http://b.test/3")])
    f.lease(3, T0)
    f.complete([done("http://a.test/1", UrlState.GONE, error_class="blocked_address",
                     error_message="refused to connect to 127.0.0.2: a private or reserved address"),
                done("http://a.test/2", http_status=200),
                done("http://b.test/3", UrlState.GONE, error_class="dns", error_message="no such host")], T0)
    assert f.pending() == 0 and f.lease(3, T0 + 1) == []
    gone = {r.url: r.error_class for r in f.failures()}
    assert gone == {"http://a.test/1": "blocked_address", "http://b.test/3": "dns"}
    # A FETCHED URL and an unknown one are left alone; a GONE one is queued as new.
    assert f.requeue(["http://a.test/1", "http://a.test/2", "http://nowhere.test/"]) == 1
    rec = f.get("http://a.test/1")
    assert rec is not None and rec.state == UrlState.UNFETCHED and rec.error_class == "" and rec.retries == 0
    assert f.counts()[UrlState.GONE] == 1 and f.counts()[UrlState.UNFETCHED] == 1
    assert f.pending() == 1
    assert [u.url for u in f.lease(3, T0 + 2)] == ["http://a.test/1"]
    assert [r.url for r in f.failures()] == ["http://b.test/3"]


# -- the global lease order (ordered=True: a crawl not bfs) ----------------------------------------

INF = float("inf")


def _best(f: Store, host: str) -> float | None:
    return f.host_best(host)  # type: ignore[attr-defined,no-any-return]


def test_an_ordered_lease_takes_the_hosts_with_the_best_urls_first(make: Maker) -> None:
    f = make(per_host=1, ordered=True)
    f.add([nu("http://a.test/5", priority=5), nu("http://a.test/6", priority=6)])
    f.add([nu("http://b.test/1", priority=1), nu("http://b.test/7", priority=7)])
    f.add([nu("http://c.test/3", priority=3), nu("http://c.test/2", priority=2)])
    assert leased_urls(f, 2) == ["http://b.test/1", "http://c.test/2"]
    # One a host at a time: b and c are full, so a comes next though b and c hold better URLs.
    assert leased_urls(f, 5) == ["http://a.test/5"]
    f.complete([done("http://b.test/1"), done("http://c.test/2")], T0)
    assert leased_urls(f, 1) == ["http://c.test/3"]
    assert leased_urls(f, 1) == ["http://b.test/7"]
    assert f.lease(5, T0) == []


def test_an_unordered_lease_takes_ready_hosts_by_their_clocks(make: Maker) -> None:
    f = make(per_host=1)  # bfs, the default: a priority orders its own host's queue only
    f.add([nu("http://a.test/5", priority=5)])
    f.add([nu("http://b.test/1", priority=1)])
    assert leased_urls(f, 1) == ["http://a.test/5"]


def test_an_ordered_lease_keeps_per_host_concurrency(make: Maker) -> None:
    f = make(per_host=2, ordered=True)
    f.add([nu(f"http://a.test/{p}", priority=p) for p in (0, 1, 2, 3)])
    f.add([nu("http://b.test/5", priority=5)])
    assert leased_urls(f, 10) == ["http://a.test/0", "http://a.test/1", "http://b.test/5"]
    assert f.lease(10, T0) == []  # a is full
    f.complete([done("http://a.test/0")], T0)
    assert leased_urls(f, 10) == ["http://a.test/2"]


def test_an_ordered_lease_keeps_delays_and_pauses(make: Maker) -> None:
    f = make(per_host=2, delay=10.0, ordered=True)
    f.add([nu(f"http://a.test/{p}", priority=p) for p in (1, 2, 3)])
    f.add([nu("http://b.test/5", priority=5), nu("http://b.test/6", priority=6)])
    f.add([nu("http://c.test/0", priority=0)])
    f.pause_host("c.test", T0 + 100, "retry-after")
    assert leased_urls(f, 10) == ["http://a.test/1", "http://b.test/5"]  # one a host: the delay
    assert f.lease(10, T0 + 5) == []
    f.complete([done("http://a.test/1")], T0 + 5)  # a's next request 10 s after this one
    assert leased_urls(f, 10, T0 + 10) == ["http://b.test/6"]
    assert leased_urls(f, 10, T0 + 15) == ["http://a.test/2"]
    f.set_host_delay("a.test", 50.0)  # a Crawl-delay: from a's next request on
    f.complete([done("http://a.test/2")], T0 + 20)
    assert f.lease(10, T0 + 69) == []
    assert leased_urls(f, 10, T0 + 100) == ["http://c.test/0", "http://a.test/3"]


def test_a_host_s_best_priority_follows_adds_leases_and_completes(make: Maker) -> None:
    f = make(per_host=2, ordered=True)
    assert _best(f, "a.test") is None
    f.add([nu(f"http://a.test/{p}", priority=p) for p in (3, 4, 9)])
    assert _best(f, "a.test") == 3
    f.add([nu("http://a.test/2", priority=2)])
    assert _best(f, "a.test") == 2
    assert leased_urls(f, 5) == ["http://a.test/2", "http://a.test/3"]
    assert _best(f, "a.test") == 4  # the best URL not leased
    # A failure queued again for later: the host's best is its priority again (due or not).
    f.complete([done("http://a.test/2", UrlState.UNFETCHED, next_fetch_time=T0 + 60, retried=True,
                     error_class="timeout")], T0)
    assert _best(f, "a.test") == 2
    f.complete([done("http://a.test/3", http_status=200)], T0)  # fetched: it was not counted
    assert _best(f, "a.test") == 2
    assert leased_urls(f, 5) == ["http://a.test/4", "http://a.test/9"]  # the retry is not due
    assert _best(f, "a.test") == 2
    f.complete([done("http://a.test/4", http_status=200), done("http://a.test/9", http_status=200)], T0)
    assert leased_urls(f, 5, T0 + 60) == ["http://a.test/2"]
    assert _best(f, "a.test") == INF  # nothing queued but what is leased
    # A re-visit scheduled: queued again at its time.
    f.complete([done("http://a.test/2", http_status=200, next_fetch_time=T0 + 900)], T0 + 61)
    assert _best(f, "a.test") == 2


def test_a_host_s_best_priority_after_reclaims_and_released_leases(make: Maker) -> None:
    f = make(per_host=2, ordered=True, lease_seconds=30)
    f.add([nu("http://a.test/1", priority=1), nu("http://a.test/2", priority=2)])
    f.add([nu("http://b.test/5", priority=5)])
    assert len(f.lease(5, T0)) == 3
    assert (_best(f, "a.test"), _best(f, "b.test")) == (INF, INF)
    f.pause_host("a.test", T0 + 1000, "retry-after")
    f.pause_host("b.test", T0 + 1000, "retry-after")
    assert f.lease(5, T0 + 31) == []  # the expired leases come back, their hosts paused
    assert f.in_flight() == 0 and (_best(f, "a.test"), _best(f, "b.test")) == (1, 5)
    assert leased_urls(f, 5, T0 + 1000) == ["http://a.test/1", "http://a.test/2", "http://b.test/5"]
    assert f.release_leases() == 3
    assert (_best(f, "a.test"), _best(f, "b.test")) == (1, 5)
    assert leased_urls(f, 5, T0 + 1000) == ["http://a.test/1", "http://a.test/2", "http://b.test/5"]


def test_a_host_s_best_priority_after_requeues_and_rankings(make: Maker) -> None:
    f = make(per_host=1, ordered=True)
    f.add([nu("http://a.test/1", priority=1), nu("http://a.test/8", priority=8)])
    f.add([nu("http://b.test/4", priority=4)])
    assert leased_urls(f, 1) == ["http://a.test/1"]
    f.complete([done("http://a.test/1", UrlState.GONE, error_class="dns")], T0)
    assert _best(f, "a.test") == 8
    assert f.requeue(["http://a.test/1"]) == 1  # queued again as new: the host's best again
    assert _best(f, "a.test") == 1
    # A batch job's ranking sets priorities: every host's best follows.
    assert f.set_scores([("http://a.test/1", 0.0, 9.0), ("http://b.test/4", 0.0, -2.0)]) == 2
    assert (_best(f, "a.test"), _best(f, "b.test")) == (8, -2)
    assert leased_urls(f, 5) == ["http://b.test/4", "http://a.test/8"]

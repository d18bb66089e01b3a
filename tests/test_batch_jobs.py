"""The batch jobs on DuckDB over small crawl databases with known answers, and their write-back."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import harvestman.batch as hb
from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlState
from harvestman.store.factory import open_store
from tests.support.batchgraph import Page, make_crawl

A, B, C, D = "http://a.test/", "http://a.test/b", "http://c.test/", "http://c.test/d"
X = "http://x.test/"  # known, never fetched


def _rows(path: Path) -> list[dict[str, object]]:
    return pq.read_table(path).to_pylist()


def _records(folder: Path) -> dict[str, object]:
    store = open_store(str(folder / "crawl.db"), read_only=True)
    try:
        return {r.url: r for r in store.records()}
    finally:
        store.close()


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """a.test/ -> b, c (twice, one anchored), a (self), c.test/d#frag; b -> a; c -> a, b (nofollow), x."""
    make_crawl(tmp_path, {
        A: Page((B, C, (C, False, "see c"), A, "http://c.test/d#frag"), signature="s1"),
        B: Page((A,), signature="s2"),
        C: Page((A, (B, True, "nf"), X), signature="s3"),
    }, unfetched=[D, X])
    return tmp_path


def test_snapshot_normalizes_link_targets_and_marks_internal_links(small: Path) -> None:
    snap = hb.take_snapshot(small)
    assert snap.urls == 5 and snap.dropped_links == 0
    links = {(r["from_url"], r["to_url"], r["anchor"]): r for r in _rows(snap.links_path)}
    assert (A, D, "") in links  # the fragment is gone: the target matches urls.url
    assert links[(A, B, "")]["internal"] and not links[(A, C, "see c")]["internal"]
    assert links[(C, B, "nf")]["nofollow"]
    urls = {r["url"]: r for r in _rows(snap.urls_path)}
    assert urls[A]["state"] == "fetched" and urls[D]["state"] == "unfetched"  # as every export names states


def test_invertlinks_lists_inlinks_with_anchors_and_counts_linking_pages(small: Path) -> None:
    result = hb.invertlinks(small)
    inlinks = {(r["url"], r["from_url"], r["anchor"]) for r in _rows(result.inlinks_path)}
    assert inlinks == {(A, B, ""), (A, C, ""), (B, A, ""), (B, C, "nf"), (C, A, ""), (C, A, "see c"),
                       (D, A, ""), (X, C, "")}  # a's link to itself is no inlink
    counts = {r["url"]: r["inlinks"] for r in _rows(result.counts_path)}
    assert counts == {A: 2, B: 2, C: 1, D: 1, X: 1}
    assert {url: r.inlinks for url, r in _records(small).items()} == counts  # written back


def test_invertlinks_can_ignore_links_within_a_host(small: Path) -> None:
    result = hb.invertlinks(small, ignore_internal=True)
    counts = {r["url"]: r["inlinks"] for r in _rows(result.counts_path)}
    assert counts == {A: 1, B: 1, C: 1, D: 1, X: 1}
    assert _records(small)[B].inlinks == 1  # the earlier counts are replaced


def test_indegree_counts_distinct_followed_linking_pages(small: Path) -> None:
    result = hb.rank(small, algorithm="indegree")
    scores = {r["url"]: r["score"] for r in _rows(result.path)}
    assert scores == {A: 2.0, B: 1.0, C: 1.0, D: 1.0, X: 1.0}  # c's nofollow link to b is no vote
    records = _records(small)
    assert records[A].score == 2.0
    store = open_store(str(small / "crawl.db"), read_only=True)
    try:
        assert store.get_meta("score_source") == "indegree"
    finally:
        store.close()


def test_opic_scores_sum_to_one_and_follow_the_cash(small: Path) -> None:
    result = hb.rank(small, algorithm="opic", iterations=30)
    scores = {r["url"]: r["score"] for r in _rows(result.path)}
    assert sum(scores.values()) == pytest.approx(1.0)
    assert set(scores) == {A, B, C, D, X}
    assert scores[A] == max(scores.values())  # every fetched page links to a
    assert scores[D] > 0 and scores[X] > 0  # unfetched URLs keep the cash they get


def test_opic_one_round_by_hand(tmp_path: Path) -> None:
    # Round 1: a, b, c hold 1/3 each. a -> b, c; b -> (nothing: the virtual page); c -> a, d.
    make_crawl(tmp_path, {A: Page((B, C)), B: Page(()), C: Page((A, D))}, unfetched=[D])
    result = hb.rank(tmp_path, algorithm="opic", iterations=1)
    scores = {r["url"]: r["score"] for r in _rows(result.path)}
    third = 1 / 3
    # history 1/3 each (total 1); cash: a = 1/6 + 1/9, b = 1/6 + 1/9, c = 1/6 + 1/9, d = 1/6.
    expected = {A: third + third / 2 + third / 3, B: third + third / 2 + third / 3,
                C: third + third / 2 + third / 3, D: third / 2}
    assert scores == pytest.approx({url: value / 2 for url, value in expected.items()})


def _random_crawl(folder: Path, pages: int, seed: int) -> dict[str, Page]:
    rng = random.Random(seed)
    urls = [f"http://h{i % 7}.test/p{i}" for i in range(pages)]
    graph: dict[str, Page] = {}
    for i, url in enumerate(urls):
        if i % 9 == 4:
            graph[url] = Page(())  # a dangling page
            continue
        links: list[str | tuple[str, bool, str]] = [rng.choice(urls) for _ in range(rng.randint(1, 8))]
        links.append(url)  # a self link, left out
        links.append((rng.choice(urls), True, ""))  # a nofollow link, left out
        links.append(f"http://unknown.test/{i}")  # a target never fetched, outside the graph
        graph[url] = Page(tuple(links))
    make_crawl(folder, graph)
    return graph


def test_pagerank_equals_networkx_on_the_fetched_graph(tmp_path: Path) -> None:
    nx = pytest.importorskip("networkx")
    graph = _random_crawl(tmp_path, 120, seed=5)
    result = hb.rank(tmp_path, algorithm="pagerank", damping=0.85)
    ours = {r["url"]: r["score"] for r in _rows(result.path)}
    reference = nx.DiGraph()
    reference.add_nodes_from(graph)
    for url, page in graph.items():
        for link in page.links:
            if isinstance(link, str) and link in graph and link != url:
                reference.add_edge(url, link)
    expected = nx.pagerank(reference, alpha=0.85, tol=1e-13, max_iter=10_000)
    assert set(ours) == set(expected)
    assert max(abs(ours[u] - expected[u]) for u in ours) < 1e-6
    assert result.change < 1e-9 and sum(ours.values()) == pytest.approx(1.0)
    records = _records(tmp_path)
    best = max(ours, key=lambda u: ours[u])
    assert records[best].score == pytest.approx(ours[best])


def test_pagerank_stops_after_the_iterations_asked_for(tmp_path: Path) -> None:
    _random_crawl(tmp_path, 30, seed=1)
    result = hb.rank(tmp_path, algorithm="pagerank", iterations=3, damping=0.5)
    assert result.iterations == 3 and result.change > 0


def test_dedup_keeps_the_best_page_of_each_group(tmp_path: Path) -> None:
    near = 0x0123_4567_89AB_CDEF
    make_crawl(tmp_path, {
        "http://a.test/long-name": Page(signature="same", simhash=near, score=1.0),
        "http://a.test/x": Page(signature="same", simhash=near, score=1.0),  # shortest URL of the best
        "http://a.test/low": Page(signature="same", simhash=near, score=0.5),
        "http://b.test/1": Page(signature="n1", simhash=near ^ 0b101, score=0.1),  # 2 bits from `near`
        "http://b.test/far": Page(signature="n2", simhash=near ^ 0xFF00, score=9.0),  # 8 bits: distinct
        "http://c.test/1": Page(signature="", simhash=0, score=0.0),  # nothing to compare
        "http://c.test/2": Page(signature="", simhash=0, score=0.0),
    })
    result = hb.dedup(tmp_path, distance=3)
    found = {r["url"]: (r["duplicate_of"], r["exact"], r["distance"]) for r in _rows(result.path)}
    assert found == {"http://a.test/long-name": ("http://a.test/x", True, 0),
                     "http://a.test/low": ("http://a.test/x", True, 0),
                     "http://b.test/1": ("http://a.test/x", False, 2)}
    assert result.groups == 1 and result.pages == 7
    records = _records(tmp_path)
    assert records["http://a.test/low"].state == UrlState.DUPLICATE
    assert records["http://a.test/low"].duplicate_of == "http://a.test/x"
    assert records["http://a.test/x"].state == UrlState.FETCHED
    # A wider distance joins the far page, now the best of the group (highest score); pages marked
    # before keep their mark only where this run says so.
    hb.dedup(tmp_path, distance=8)
    records = _records(tmp_path)
    assert records["http://a.test/x"].duplicate_of == "http://b.test/far"
    hb.dedup(tmp_path, distance=0)
    records = _records(tmp_path)
    assert records["http://b.test/1"].state == UrlState.FETCHED  # no longer a duplicate
    assert records["http://a.test/x"].state == UrlState.FETCHED


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds no crawl"):
        hb.rank(tmp_path)
    make_crawl(tmp_path, {A: Page()})
    with pytest.raises(ConfigError, match="ranking algorithm"):
        hb.rank(tmp_path, algorithm="hits")
    for damping in (0.0, 1.0, -0.5):
        with pytest.raises(ConfigError, match="damping"):
            hb.rank(tmp_path, damping=damping)
    with pytest.raises(ConfigError, match="distance"):
        hb.dedup(tmp_path, distance=40)
    with pytest.raises(ConfigError, match="engine"):
        hb.stats(tmp_path, engine="hadoop")


def test_stats_count_states_hosts_and_links(small: Path) -> None:
    figures = hb.stats(small)
    assert figures["urls"] == 5 and figures["states"]["fetched"] == 3 and figures["states"]["unfetched"] == 2
    assert figures["statuses"] == {"200": 3}
    hosts = {h["host"]: h for h in figures["hosts"]}
    assert hosts["a.test"]["fetched"] == 2 and hosts["x.test"]["fetched"] == 0
    assert figures["links"]["total"] == 9 and figures["links"]["nofollow"] == 1


def test_the_jobs_read_and_write_a_crawl_kept_in_postgresql(tmp_path: Path, postgres_url: str) -> None:
    make_crawl(tmp_path, {A: Page((B, C), signature="same", score=1.0), B: Page((A,), signature="same"),
                          C: Page((A,), signature="c")}, db=postgres_url)
    assert not (tmp_path / "crawl.db").exists()
    hb.invertlinks(tmp_path, db=postgres_url)
    ranked = hb.rank(tmp_path, db=postgres_url, algorithm="pagerank")
    found = hb.dedup(tmp_path, db=postgres_url)
    assert found.duplicates == 1
    store = open_store(postgres_url, read_only=True)
    try:
        records = {r.url: r for r in store.records()}
        assert store.get_meta("score_source") == "pagerank"
    finally:
        store.close()
    scores = {r["url"]: r["score"] for r in _rows(ranked.path)}
    assert records[A].score == pytest.approx(scores[A]) and records[A].inlinks == 2
    assert records[B].state == UrlState.DUPLICATE and records[B].duplicate_of == A  # a outranks b


def test_a_crawl_with_nothing_fetched_yet_gives_empty_results(tmp_path: Path) -> None:
    make_crawl(tmp_path, {}, unfetched=[A])
    assert hb.invertlinks(tmp_path).inlinks == 0
    assert hb.rank(tmp_path).urls == 0
    assert {r["url"]: r["score"] for r in _rows(hb.rank(tmp_path, algorithm="opic").path)} == {A: 0.0}
    assert hb.dedup(tmp_path).duplicates == 0


def test_the_library_names_stay_functions_once_every_module_is_loaded() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(hb.__path__):
        if module.name != "spark_engine":
            importlib.import_module(f"harvestman.batch.{module.name}")
    assert all(callable(getattr(hb, name)) for name in hb.__all__)

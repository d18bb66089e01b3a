"""Crawl order (issue 12, item 5): the bfs, dfs and score orderings, and a link scorer plugged in,
over real loopback crawls (one fetch at a time, so the server's log is the lease order)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from harvestman.app.cli import main as cli_main
from harvestman.app.cli import run_crawl
from harvestman.crawl.engine import Crawler
from harvestman.crawl.workers import Policies
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import CrawledPage, FetchResult, Link, ParsedPage, UrlState
from harvestman.model.settings import ORDERINGS
from harvestman.policy.ordering import (
    RANKS,
    best_score_first,
    by_depth,
    deeper_first,
    link_scores,
    ranked_urls,
)
from tests.support.crawlcheck import consistent_records, run_cli
from tests.support.httpserver import RouteHandler, RouteServer, RouteValue

ALLOW = ("127.5.0.0/16",)
KEYWORD = "apple"


class KeywordScorer:
    """Favours links about apples: 2 for the word in the anchor text, 1 for it in the URL.

    Module-level, so that a spawned worker process can unpickle it.
    """

    def __call__(self, page: CrawledPage, link: Link) -> float:
        """The link's score."""
        return 2.0 * (KEYWORD in link.anchor.lower()) + 1.0 * (KEYWORD in link.url.lower())


def _html(*links: tuple[str, str]) -> tuple[int, dict[str, str], bytes]:
    body = "<html><body>" + "".join(f'<a href="{href}">{text}</a>' for href, text in links) + "</body></html>"
    return 200, {"Content-Type": "text/html"}, body.encode()


def _fetched(server: RouteServer) -> list[str]:
    return [path for path in server.paths if path != "/robots.txt"]


# ----- the ordering functions ------------------------------------------------------------------


def test_each_ordering_has_its_rank() -> None:
    assert set(RANKS) == set(ORDERINGS)


def test_ranks_put_what_should_come_first_lowest() -> None:
    # bfs: shallower first, whatever the score; dfs: deeper first; score: higher score first.
    assert by_depth(1, 0.0) < by_depth(2, 9.0)
    assert deeper_first(3, 0.0) < deeper_first(2, 9.0) < deeper_first(0, 0.0)
    assert best_score_first(5, 2.5) < best_score_first(1, 1.0) < best_score_first(0, -1.0)


def _page(links: tuple[Link, ...], depth: int = 2) -> CrawledPage:
    result = FetchResult("http://a.test/from", "http://a.test/from", status=200)
    return CrawledPage(result, ParsedPage(links=links), depth)


def test_a_url_takes_the_best_score_of_its_links_and_only_wanted_urls_are_scored() -> None:
    links = (
        Link("http://a.test/x", anchor="plain"),
        Link("http://a.test/x#top", anchor="Apple"),  # the same URL once normalized: the better score
        Link("http://a.test/y", anchor="apple", nofollow=True),  # not followed: not scored
        Link("http://a.test/known", anchor="apple"),  # not new to the crawl: not scored
    )
    follow = {"http://a.test/x": ("http://a.test/x", "a.test"),
              "http://a.test/x#top": ("http://a.test/x", "a.test"),
              "http://a.test/y": ("http://a.test/y", "a.test"),
              "http://a.test/known": ("http://a.test/known", "a.test")}
    calls: list[str] = []

    def scorer(page: CrawledPage, link: Link) -> float:
        calls.append(link.url)
        return KeywordScorer()(page, link)

    scores = link_scores(scorer, _page(links), {"http://a.test/x", "http://a.test/y"}, follow)
    assert scores == {"http://a.test/x": 2.0}
    assert calls == ["http://a.test/x", "http://a.test/x#top"]


def test_ranked_urls_carry_score_depth_parent_and_the_orderings_priority() -> None:
    fresh = ["http://a.test/apple", "http://a.test/pear"]
    hosts = dict.fromkeys(fresh, "a.test")
    new = ranked_urls(best_score_first, {"http://a.test/apple": 1.0}, fresh, hosts, lambda url, host: host,
                      3, "http://a.test/from")
    assert [(u.url, u.host, u.depth, u.score, u.priority, u.parent) for u in new] == [
        ("http://a.test/apple", "a.test", 3, 1.0, -1.0, "http://a.test/from"),
        ("http://a.test/pear", "a.test", 3, 0.0, -0.0, "http://a.test/from"),
    ]
    unscored = ranked_urls(deeper_first, {}, fresh, hosts, lambda url, host: host, 3, "http://a.test/from")
    assert [(u.score, u.priority) for u in unscored] == [(0.0, -3), (0.0, -3)]


def test_a_nan_score_is_refused() -> None:
    links = (Link("http://a.test/x"),)
    with pytest.raises(ValueError, match="NaN"):
        link_scores(lambda page, link: float("nan"), _page(links), {"http://a.test/x"},
                    {"http://a.test/x": ("http://a.test/x", "a.test")})


def test_ordering_by_score_needs_a_scorer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="ordering"):
        CrawlConfig(ordering="random")
    with pytest.raises(ConfigError, match="scorer"):
        Crawler(CrawlConfig(seeds=("http://a.test/",), ordering="score"))
    out = tmp_path / "out"
    assert cli_main(["crawl", "http://a.test/", "--out", str(out), "--ordering", "score"]) == 2
    assert "needs a link scorer" in capsys.readouterr().err
    assert not out.exists()  # refused before anything was created


# ----- over a real crawl -----------------------------------------------------------------------

# Score order differs from bfs order and from the order found: after "/" come its links by score,
# except that /apple's child /deep-apple (3) goes before its uncles /p3 (2) and /apple-tart (1).
SCORED_SITE = {
    "/": _html(("/p1", "one"), ("/p2", "two"), ("/apple-tart", "tart"), ("/p3", "Apple pie"),
               ("/apple", "apple")),
    "/apple": _html(("/deep-plain", "more"), ("/deep-apple", "APPLE deep")),
    **{path: _html() for path in ("/p1", "/p2", "/p3", "/apple-tart", "/deep-plain", "/deep-apple")},
}
SCORE_ORDER = ["/", "/apple", "/deep-apple", "/p3", "/apple-tart", "/p1", "/p2", "/deep-plain"]


def _one_at_a_time(seed: str, out: Path, **settings: object) -> CrawlConfig:
    return CrawlConfig(seeds=(seed,), out_dir=out, allow_net=ALLOW, concurrency=1, per_host=1,
                       quiet=True, **settings)  # type: ignore[arg-type]


def test_a_keyword_scorer_orders_the_crawl_by_score(tmp_path: Path) -> None:
    with RouteServer(SCORED_SITE, host="127.5.0.1") as server:
        cfg = _one_at_a_time(server.url("/"), tmp_path / "out", ordering="score")
        asyncio.run(Crawler(cfg, scorer=KeywordScorer()).run())
    assert _fetched(server) == SCORE_ORDER
    records = consistent_records(tmp_path / "out")
    assert records[server.url("/p3")].score == 2.0 and records[server.url("/deep-apple")].score == 3.0
    assert records[server.url("/")].score == 1.0  # the seed's


def test_the_scorer_runs_in_worker_processes(tmp_path: Path) -> None:
    # The test process runs the server's thread, so the workers are spawned: the scorer reaches
    # them pickled. Scores in the database can only come from the workers (the parent fetches
    # nothing), and one host is fetched by one worker, in score order.
    with RouteServer(SCORED_SITE, host="127.5.0.2") as server:
        cfg = _one_at_a_time(server.url("/"), tmp_path / "out", ordering="score", workers=2)
        assert run_crawl(cfg, Policies(scorer=KeywordScorer())) == 0
    assert _fetched(server) == SCORE_ORDER
    records = consistent_records(tmp_path / "out")
    assert {url.rsplit("/", 1)[1]: r.score for url, r in records.items() if r.depth == 1} == {
        "p1": 0.0, "p2": 0.0, "apple-tart": 1.0, "p3": 2.0, "apple": 3.0}
    assert all(r.state == UrlState.FETCHED for r in records.values())


DEEP_SITE = {
    "/": _html(("/a", "a"), ("/b", "b")),
    "/a": _html(("/a/1", "a1"), ("/a/2", "a2")),
    "/a/1": _html(("/a/1/x", "x")),
    "/b": _html(("/b/1", "b1")),
    **{path: _html() for path in ("/a/2", "/a/1/x", "/b/1")},
}


@pytest.mark.parametrize(("ordering", "order"), [
    ("dfs", ["/", "/a", "/a/1", "/a/1/x", "/a/2", "/b", "/b/1"]),
    ("bfs", ["/", "/a", "/b", "/a/1", "/a/2", "/b/1", "/a/1/x"]),
])
def test_dfs_goes_down_first_and_bfs_across(tmp_path: Path, ordering: str, order: list[str]) -> None:
    with RouteServer(DEEP_SITE, host="127.5.0.3") as server:
        done = run_cli("crawl", server.url("/"), "--out", str(tmp_path / "out"), "-q", "--ordering", ordering,
                       "--concurrency", "1", "--per-host", "1", "--workers", "1", "--allow-net", ALLOW[0])
    assert done.returncode == 0, done.stderr
    assert _fetched(server) == order


# ----- the order across hosts (issue 27) --------------------------------------------------------


class GoodHostFirst:
    """Links to the good host score 2, the others 0."""

    def __init__(self, good: str) -> None:
        self.good = good

    def __call__(self, page: CrawledPage, link: Link) -> float:
        return 2.0 if link.url.startswith(self.good) else 0.0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_crawl_by_score_fetches_the_better_host_s_pages_before_the_worse_one_s(
        tmp_path: Path, request: pytest.FixtureRequest, backend: str) -> None:
    """Three loopback hosts: a hub linking to a poor host (first) and a good one, each with five
    pages of its own. By score, every good page comes before any poor one, though the poor host is
    as ready as the good one; by bfs, the hosts take turns."""
    fetched: list[str] = []  # "host path", in the order the servers answered, over all three
    lock = threading.Lock()

    def page(name: str, html: tuple[int, dict[str, str], bytes]) -> RouteValue:
        def serve(handler: RouteHandler) -> None:
            with lock:
                fetched.append(f"{name} {handler.path}")
            handler.send_simple(*html)
        return serve

    def site(name: str, letter: str) -> dict[str, RouteValue]:
        children = [f"/{letter}{i}" for i in range(1, 6)]
        return {"/": page(name, _html(*((c, c) for c in children))),
                **{c: page(name, _html()) for c in children}}

    db = request.getfixturevalue("postgres_url") if backend == "postgres" else ""
    with RouteServer(site("poor", "p"), host="127.5.27.3") as poor, \
            RouteServer(site("good", "g"), host="127.5.27.2") as good:
        hub = {"/": page("hub", _html((poor.url("/"), "poor"), (good.url("/"), "good")))}
        with RouteServer(hub, host="127.5.27.1") as server:
            for ordering in ("score", "bfs"):
                fetched.clear()
                cfg = _one_at_a_time(server.url("/"), tmp_path / ordering, ordering=ordering, scope="any",
                                     db=db if ordering == "score" else "")
                scorer = GoodHostFirst(good.url("/")) if ordering == "score" else None
                asyncio.run(Crawler(cfg, scorer=scorer).run())
                order = [f for f in fetched if not f.endswith("/robots.txt")]
                assert len(order) == 13 and order[0] == "hub /"
                hosts = [f.split()[0] for f in order[1:]]
                if ordering == "score":
                    assert hosts == ["good"] * 6 + ["poor"] * 6, order
                else:  # bfs: the hosts take turns by their clocks
                    assert sorted(hosts[:4]) == ["good", "good", "poor", "poor"], order

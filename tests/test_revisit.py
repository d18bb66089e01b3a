"""Re-visits (issue 12, item 5): a fetch schedule makes `fetched` not terminal. Over real loopback
crawls: a page is fetched again, conditionally, and a 304 is recorded as not_modified; a run whose
re-visits all wait beyond --max-wait ends saying so, and --resume makes them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harvestman.crawl.engine import Crawler
from harvestman.crawl.stats import deferred_note
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import FetchOutcome, FetchResult, LeasedUrl, UrlState
from harvestman.policy.outcome import Decision, decide
from harvestman.policy.schedule import AdaptiveInterval, FixedInterval, schedule_for, scheduled
from harvestman.store.sqlite_store import SqliteStore
from tests.support.crawlcheck import consistent_records, run_cli
from tests.support.httpserver import RouteHandler, RouteServer

ALLOW = ["--allow-net", "127.5.0.0/16"]
ETAG = '"v1"'
PAGE = b"<html><title>the page</title><a href='/other'>other</a></html>"


def _validating(handler: RouteHandler) -> None:
    """A page with an ETag that answers a request carrying it with 304."""
    if handler.headers.get("If-None-Match") == ETAG:
        handler.send_simple(304, {"ETag": ETAG}, b"")
    else:
        handler.send_simple(200, {"Content-Type": "text/html", "ETag": ETAG}, PAGE)


ROUTES = {"/": _validating, "/other": _validating}


def _conditional(server: RouteServer, path: str) -> list[bool]:
    """For each request of `path`, in order: whether it carried the ETag."""
    return [dict(headers).get("If-None-Match") == ETAG for p, headers, _ in server.requests if p == path]


# ----- the schedule functions ------------------------------------------------------------------

LEASED = LeasedUrl("http://a.test/", "a.test", 0, 0, 0.0)


def test_a_fixed_interval_schedules_final_outcomes_only() -> None:
    fetched = Decision(FetchOutcome("http://a.test/", UrlState.FETCHED, 1000.0))
    assert scheduled(fetched, FixedInterval(60), LEASED).outcome.next_fetch_time == 1060.0
    retry = Decision(FetchOutcome("http://a.test/", UrlState.UNFETCHED, 1000.0, next_fetch_time=1004.0),
                     final=False)
    assert scheduled(retry, FixedInterval(60), LEASED) is retry  # a retry keeps decide's time


def test_a_schedule_answering_never_leaves_the_outcome_alone() -> None:
    fetched = Decision(FetchOutcome("http://a.test/", UrlState.FETCHED, 1000.0))
    for never in (0.0, -5.0, float("nan")):
        assert scheduled(fetched, lambda outcome, leased, t=never: t, LEASED) is fetched


def test_the_schedule_comes_from_the_setting_or_python_not_both() -> None:
    assert schedule_for(CrawlConfig().links, None) is None  # the default: never
    assert schedule_for(CrawlConfig(revisit_after=30).links, None) == FixedInterval(30.0)
    adaptive = CrawlConfig(revisit_after=30, schedule="adaptive", min_interval=10, max_interval=100)
    assert schedule_for(adaptive.links, None) == AdaptiveInterval(30.0, 10.0, 100.0)
    cycle = schedule_for(CrawlConfig().links, None, CrawlConfig().fetch_interval)
    assert cycle == FixedInterval(30 * 86400.0)
    for bad, match in (({"schedule": "weekly"}, "schedule must be one of fixed, adaptive"),
                       ({"min_interval": 10, "max_interval": 5}, "min_interval"),
                       ({"fetch_interval": 0}, "fetch_interval must be > 0")):
        with pytest.raises(ConfigError, match=match):
            CrawlConfig(**bad)
    with pytest.raises(ConfigError, match="revisit_after"):
        CrawlConfig(revisit_after=-1)
    with pytest.raises(ConfigError, match="not both"):
        Crawler(CrawlConfig(revisit_after=30), schedule=FixedInterval(5))


def test_an_adaptive_interval_shrinks_when_a_page_changed_and_grows_when_not() -> None:
    schedule = AdaptiveInterval(100.0, 50.0, 1000.0)

    def next_interval(state: UrlState, previous: float) -> float:
        leased = LeasedUrl("http://a.test/", "a.test", 0, 0, 0.0, fetch_interval=previous)
        decision = scheduled(Decision(FetchOutcome("http://a.test/", state, 1000.0)), schedule, leased)
        assert decision.outcome.next_fetch_time == 1000.0 + decision.outcome.fetch_interval
        return decision.outcome.fetch_interval

    assert next_interval(UrlState.FETCHED, 0.0) == 100.0  # a first fetch: the initial interval
    assert next_interval(UrlState.FETCHED, 100.0) == pytest.approx(80.0)  # changed: shorter
    assert next_interval(UrlState.NOT_MODIFIED, 100.0) == pytest.approx(140.0)  # unchanged: longer
    assert next_interval(UrlState.FETCHED, 55.0) == 50.0  # never below the least
    assert next_interval(UrlState.NOT_MODIFIED, 900.0) == 1000.0  # nor above the most
    assert next_interval(UrlState.GONE, 300.0) == 300.0


def test_the_same_content_fetched_again_is_not_modified() -> None:
    body = b"<html><title>t</title>same</html>"
    result = FetchResult("http://a.test/", "http://a.test/", status=200, body=body, content_type="text/html")
    first = decide(result, LEASED, 1000.0, CrawlConfig().politeness).outcome
    assert first.state == UrlState.FETCHED and first.signature
    again = LeasedUrl("http://a.test/", "a.test", 0, 0, 0.0, signature=first.signature)
    assert decide(result, again, 2000.0, CrawlConfig().politeness).outcome.state == UrlState.NOT_MODIFIED
    changed = LeasedUrl("http://a.test/", "a.test", 0, 0, 0.0, signature="other")
    assert decide(result, changed, 2000.0, CrawlConfig().politeness).outcome.state == UrlState.FETCHED


def test_the_deferred_note_says_which_urls_wait_for_a_re_visit() -> None:
    assert deferred_note(3, 0.0, 60).startswith("3 URLs wait (the first until ")
    assert deferred_note(3, 0.0, 60, 3).startswith("3 URLs wait for a re-visit (the first until ")
    assert deferred_note(3, 0.0, 60, 2).startswith("3 URLs wait, 2 of them for a re-visit (the first ")


# ----- over a real crawl -----------------------------------------------------------------------


def test_a_page_is_fetched_again_conditionally_and_recorded_not_modified(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with RouteServer(ROUTES, host="127.5.1.1") as server:
        # Bounded by --max-pages: with re-visits due within --max-wait, a run goes on for ever.
        done = run_cli("crawl", server.url("/"), "--out", str(out), "-q", "--revisit-after", "1",
                       "--max-wait", "5", "--max-pages", "4", *ALLOW, timeout=60)
    assert done.returncode == 0, done.stderr
    # Two pages, each fetched, then re-visited with the validator of its first fetch.
    assert _conditional(server, "/") == [False, True]
    assert _conditional(server, "/other") == [False, True]
    records = consistent_records(out)
    for path in ("/", "/other"):
        record = records[server.url(path)]
        assert record.state == UrlState.NOT_MODIFIED and record.http_status == 304, record
        assert record.etag == ETAG and record.title == "the page"  # kept from the full fetch
        assert record.next_fetch_time > record.fetch_time  # and the next re-visit is scheduled


def test_a_python_schedule_plugs_in(tmp_path: Path) -> None:
    # Re-visit only what changed: a 304 ends the re-visits (a schedule sees the outcome).
    def until_unchanged(outcome: FetchOutcome, leased: LeasedUrl) -> float:
        return 0.0 if outcome.state == UrlState.NOT_MODIFIED else outcome.fetch_time + 0.5

    with RouteServer(ROUTES, host="127.5.1.2") as server:
        cfg = CrawlConfig(seeds=(server.url("/"),), out_dir=tmp_path / "out", allow_net=(ALLOW[1],),
                          quiet=True, max_wait=5)
        stats = asyncio.run(Crawler(cfg, schedule=until_unchanged).run())
    # Each page twice, and the run ended: nothing was left to re-visit.
    assert _conditional(server, "/") == _conditional(server, "/other") == [False, True]
    assert stats.deferred == 0
    for record in consistent_records(tmp_path / "out").values():
        assert record.state == UrlState.NOT_MODIFIED and record.next_fetch_time == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_run_ends_with_its_revisits_waiting_and_resume_makes_them(tmp_path: Path, workers: str) -> None:
    out = tmp_path / "out"
    with RouteServer(ROUTES, host="127.5.1.3") as server:
        seed = server.url("/")
        first = run_cli("crawl", seed, "--out", str(out), "-q", "--workers", workers, "--revisit-after", "1",
                        "--max-wait", "0.5", *ALLOW, timeout=60)
        assert first.returncode == 0, first.stderr
        notes = [line for line in first.stderr.splitlines() if "--max-wait" in line]
        assert len(notes) == 1, first.stderr
        assert notes[0].startswith("harvestman: 2 URLs wait for a re-visit (the first until "), notes
        assert notes[0].endswith("longer than --max-wait 0.5s: --resume continues them"), notes
        with SqliteStore.open_read_only(out / "crawl.db") as store:
            record = store.get(seed)
        assert record is not None and record.state == UrlState.FETCHED and record.next_fetch_time > 0
        assert _conditional(server, "/") == [False]

        # --revisit-after 0 replaces the stored 1: this re-visit is the last. --max-wait belongs to one
        # run: the default waits out the second.
        second = run_cli("crawl", "--resume", "--out", str(out), "-q", "--workers", workers,
                         "--revisit-after", "0", timeout=60)
    assert second.returncode == 0, second.stderr
    assert "--max-wait" not in second.stderr
    assert _conditional(server, "/") == _conditional(server, "/other") == [False, True]
    for record in consistent_records(out).values():
        assert record.state == UrlState.NOT_MODIFIED and record.next_fetch_time == 0


def test_the_adaptive_schedule_over_a_real_crawl_follows_how_often_pages_change(tmp_path: Path) -> None:
    """No validators here: a re-fetch with the same content is recorded not_modified by its signature
    and its interval grows; a page that changes at every fetch has its interval shrink."""
    fetches = {"/changing": 0}

    def same(handler: RouteHandler) -> None:
        handler.send_simple(200, {"Content-Type": "text/html"},
                            b"<html><title>same</title><a href='/changing'>c</a></html>")

    def changing(handler: RouteHandler) -> None:
        fetches["/changing"] += 1
        handler.send_simple(200, {"Content-Type": "text/html"},
                            b"<html><title>news</title>edition %d</html>" % fetches["/changing"])

    out, config = tmp_path / "out", tmp_path / "adaptive.toml"
    config.write_text('[links]\nmin_interval = 0.2\nmax_interval = 100.0\n')
    with RouteServer({"/": same, "/changing": changing}, host="127.5.1.4") as server:
        done = run_cli("crawl", server.url("/"), "--out", str(out), "-q", "--revisit-after", "1",
                       "--schedule", "adaptive", "--config", str(config), "--max-wait", "5",
                       "--max-pages", "6", *ALLOW, timeout=60)
    assert done.returncode == 0, done.stderr
    records = consistent_records(out)
    same_page, news = records[server.url("/")], records[server.url("/changing")]
    assert same_page.state == UrlState.NOT_MODIFIED and same_page.http_status == 200
    assert same_page.fetch_interval > 1.0  # grown from the first 1 s
    assert news.state == UrlState.FETCHED and news.fetch_interval < 1.0  # shrunk
    assert fetches["/changing"] >= 2

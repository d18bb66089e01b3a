"""A crawl never stalls on a few bad URLs (issue 12, item 8), over real loopback sockets.

A host with ~100 good pages and three bad ones (a slow body, a head that never ends, a body shorter
than its Content-Length): the retries of the bad ones used to count as consecutive host failures, so
the circuit breaker paused the whole host for 30, 60, 120 s ... and the crawl ran for minutes. And
a crawl whose only URLs wait far in the future (a Retry-After of an hour) ends at once, saying so,
and `--resume` takes them up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvestman.model.records import UrlState
from harvestman.store.sqlite_store import SqliteStore
from tests.support import hostile
from tests.support.crawlcheck import consistent_records, run_cli
from tests.support.hostile import HostileServer

ALLOW = ["--allow-net", "127.4.0.0/16"]
GOOD_PAGES = 100
BAD = {"/slow-body": "timeout", "/endless-head": "timeout", "/short-body": "protocol"}


def _site() -> dict[str, hostile.Behaviour]:
    links = [f"/p{i}" for i in range(GOOD_PAGES)] + list(BAD)
    index = "<html><body>" + "".join(f'<a href="{p}">{p}</a>' for p in links) + "</body></html>"
    routes: dict[str, hostile.Behaviour] = {"/": hostile.html(index)}
    for i in range(GOOD_PAGES):
        routes[f"/p{i}"] = hostile.html(f"<html><title>page {i}</title></html>")
    routes["/slow-body"] = hostile.trickle_body(interval=0.5, max_seconds=20)
    routes["/endless-head"] = hostile.trickle_headers(interval=0.5, max_seconds=20)
    routes["/short-body"] = hostile.short_body()
    return routes


@pytest.mark.parametrize("workers", ["1", "2"])
def test_three_bad_urls_do_not_stall_a_host_of_good_pages(tmp_path: Path, workers: str) -> None:
    out = tmp_path / "out"
    with HostileServer(_site(), host="127.4.0.1") as srv:
        # Bounded by the subprocess timeout, not a speed assertion: before the fix the breaker
        # paused the host for 30 + 60 + 120 s and the crawl ran for minutes.
        done = run_cli("crawl", srv.url("/"), "--out", str(out), "-q", "--timeout", "2",
                       "--workers", workers, "--log-json", *ALLOW, timeout=60)
        hits = {path: len(srv.hits_for(path)) for path in BAD}
    assert done.returncode == 0, done.stderr
    records = consistent_records(out)
    for i in range(GOOD_PAGES):
        record = records[srv.url(f"/p{i}")]
        assert record.state == UrlState.FETCHED and record.title == f"page {i}", record
    for path, error_class in BAD.items():
        record = records[srv.url(path)]
        assert record.state == UrlState.GONE and record.error_class == error_class, record
        assert record.retries == 4 and hits[path] == 4  # the default 3 retries were all made
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    paused = [e for e in events if e.get("kind") == "host_paused"]
    assert not paused, paused  # the bad URLs' failures never paused their (good) host


def _resting_site(retry_after: int) -> dict[str, hostile.Behaviour]:
    """A front page that answers its first request with a 503 and a Retry-After, then the page."""
    asked = {"n": 0}

    def rest_then_serve(_hit: hostile.Hit) -> hostile.Behaviour:
        asked["n"] += 1
        if asked["n"] == 1:
            return hostile.respond(503, [("Retry-After", str(retry_after)), ("Content-Type", "text/plain")],
                                   b"busy")
        return hostile.html("<html><title>rested</title></html>")

    return {"/": hostile.dynamic(rest_then_serve)}


def _deferred_note(stderr: str) -> str:
    notes = [line for line in stderr.splitlines() if "--max-wait" in line]
    assert len(notes) == 1, stderr
    return notes[0]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_max_wait_ends_a_crawl_whose_urls_all_wait_and_resume_takes_them_up(
    tmp_path: Path, workers: str
) -> None:
    out = tmp_path / "out"
    with HostileServer(_resting_site(retry_after=4), host="127.4.0.2") as srv:
        seed = srv.url("/")
        first = run_cli("crawl", seed, "--out", str(out), "-q", "--workers", workers, "--log-json",
                        "--max-wait", "2", *ALLOW, timeout=60)
        assert first.returncode == 0, first.stderr
        note = _deferred_note(first.stderr)
        assert note.startswith("harvestman: 1 URL waits (the first until ")
        assert note.endswith("longer than --max-wait 2s: --resume continues them")
        events = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
        finished = [e for e in events if e.get("kind") == "crawl_finished"]
        assert finished and all("1 URL waits" in e["message"] for e in finished), finished
        with SqliteStore.open_read_only(out / "crawl.db") as frontier:
            record = frontier.get(seed)
        assert record is not None and record.state == UrlState.UNFETCHED and record.http_status == 503

        # The default --max-wait (600 s) waits out the rest of the 4 s.
        second = run_cli("crawl", "--resume", "--out", str(out), "-q", "--workers", workers, *ALLOW,
                         timeout=60)
    assert second.returncode == 0, second.stderr
    assert "--max-wait" not in second.stderr
    record = consistent_records(out)[seed]
    assert record.state == UrlState.FETCHED and record.title == "rested"


def test_an_hour_of_retry_after_ends_the_run_at_once_by_default(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with HostileServer(_resting_site(retry_after=3600), host="127.4.0.3") as srv:
        done = run_cli("crawl", srv.url("/"), "--out", str(out), "-q", "--workers", "1", *ALLOW,
                       timeout=60)
    assert done.returncode == 0, done.stderr
    assert _deferred_note(done.stderr).endswith("longer than --max-wait 600s: --resume continues them")


def test_max_wait_is_not_reached_by_a_short_wait(tmp_path: Path) -> None:
    """A Retry-After shorter than --max-wait is waited out in the same run."""
    asked = {"n": 0}

    def rest_briefly(_hit: hostile.Hit) -> hostile.Behaviour:
        asked["n"] += 1
        if asked["n"] == 1:
            return hostile.respond(503, [("Retry-After", "1")], b"busy")
        return hostile.html("<html><title>ok</title></html>")

    out = tmp_path / "out"
    with HostileServer({"/": hostile.dynamic(rest_briefly)}, host="127.4.0.4") as srv:
        done = run_cli("crawl", srv.url("/"), "--out", str(out), "-q", "--workers", "1",
                       "--max-wait", "30", *ALLOW, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--max-wait" not in done.stderr
    assert consistent_records(out)[srv.url("/")].state == UrlState.FETCHED

"""The crawl job (start, stop, status, events), events and pages from worker processes, page sinks."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from harvestman.crawl.job import CrawlJob, EventStream, JobState
from harvestman.model.config import CrawlConfig, config_from_mapping
from harvestman.model.errors import ConfigError, StorageError
from harvestman.model.events import Event, EventKind
from harvestman.model.records import CrawledPage, RunVerdict
from tests.support.pagesinks import WordCountSink, sink_lines
from tests.support.sites import served_site

HOSTS = [f"127.1.12.{i}" for i in range(1, 5)]


def _config(seeds: tuple[str, ...], out: Path, workers: int, **more: object) -> CrawlConfig:
    return config_from_mapping({"seeds": list(seeds), "out_dir": out, "allow_net": ["127.1.0.0/16"],
                                "scope": "any", "workers": workers, "quiet": True, **more})


def _stored(out: Path) -> set[str]:
    """The URLs the crawl database holds a response for."""
    with sqlite3.connect(f"file:{out / 'crawl.db'}?mode=ro", uri=True) as db:
        return {url for (url,) in db.execute("SELECT url FROM urls WHERE http_status > 0")}


@pytest.mark.parametrize("workers", [1, 2])
def test_every_page_reaches_on_page_on_event_the_stream_and_the_sinks_once(
    tmp_path: Path, workers: int
) -> None:
    events: list[Event] = []
    pages: list[CrawledPage] = []
    with served_site(tmp_path / "site", HOSTS, 25) as spec:
        out = tmp_path / "out"
        job = CrawlJob(_config(spec.seeds, out, workers), on_event=events.append, on_page=pages.append,
                       sinks=(WordCountSink,), verdict=lambda _folder: RunVerdict(0))
        stream = job.events(maxsize=100_000)
        assert job.processes == workers
        job.start()
        streamed = list(stream)
        status = job.result()
    assert status.state is JobState.FINISHED and status.verdict == RunVerdict(0)
    expected = set(spec.reachable | spec.missing)  # a 404 is a stored page too
    assert _stored(out) == expected
    # Counted as the crawl database counts (crawl/stats.py PageCounts): a 404 is a failure, no page.
    assert (status.counts.fetched, status.counts.failed) == (len(spec.reachable), len(spec.missing))
    # on_page: each page once, with the text a library consumer gets in one process.
    by_url = Counter(page.result.url for page in pages)
    assert set(by_url) == expected and max(by_url.values()) == 1
    assert all(page.parsed and page.parsed.text for page in pages if page.result.status == 200)
    # on_event and the stream: the same events, each page's FETCHED once, one start and one end.
    assert streamed == events and stream.dropped == 0
    fetched = Counter(e.url for e in events if e.kind is EventKind.FETCHED)
    assert set(fetched) == expected and max(fetched.values()) == 1
    assert [e.kind for e in events].count(EventKind.CRAWL_STARTED) == 1
    assert events[0].kind is EventKind.CRAWL_STARTED and events[0].message == " ".join(spec.seeds)
    assert events[-1].kind is EventKind.CRAWL_FINISHED
    assert events[-1].message == f"{len(spec.reachable)} pages, {len(spec.missing)} failed"
    # The sink: built in every crawling process, each page written once, by the process fetching it.
    lines = sink_lines(out)
    assert Counter(url for url, *_ in lines) == Counter(expected)
    assert {name for *_, name in lines} == {f"sink-w{i}.tsv" for i in range(workers)}
    assert len({pid for _, _, pid, _ in lines}) == workers
    words = {page.result.url: len(page.parsed.text.split()) for page in pages if page.parsed}
    assert all(words[url] == count for url, count, _, _ in lines if url in words)
    assert any(count > 0 for _, count, _, _ in lines)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_stopped_job_finishes_the_fetches_in_flight_and_resumes(tmp_path: Path, workers: int) -> None:
    with served_site(tmp_path / "site", HOSTS[:2], 40) as spec:
        out = tmp_path / "out"
        job = CrawlJob(_config(spec.seeds, out, workers, delay=0.1, per_host=1))
        stream = job.events()
        job.start()
        for event in stream:  # stop at the first page
            if event.kind is EventKind.FETCHED:
                job.stop()
                assert job.status().state is JobState.STOPPING
                break
        status = job.result()
        assert status.state is JobState.FINISHED
        assert 0 < status.counts.fetched < len(spec.reachable)
        assert status.verdict is None  # no verdict asked for
        again = CrawlJob(_config(spec.seeds, out, workers, resume=True))
        again.start()
        assert again.result().counts.fetched + status.counts.fetched == len(spec.reachable)
    assert _stored(out) == set(spec.reachable | spec.missing)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_job_that_cannot_run_fails_and_says_why(tmp_path: Path, workers: int) -> None:
    out = tmp_path / "out"
    out.write_text("a file, not a folder")
    job = CrawlJob(_config(("http://127.1.12.1:9/",), out, workers))
    stream = job.events()
    job.start()
    assert job.wait(timeout=60)
    assert job.status().state is JobState.FAILED and job.status().error
    with pytest.raises(StorageError, match=str(out)):
        job.result()
    assert list(stream) == []  # the stream ends: nothing hangs on a failed job
    with pytest.raises(ConfigError):
        job.start()
    with pytest.raises(ConfigError):
        job.events()


def test_a_full_stream_drops_its_oldest_events_and_keeps_the_last() -> None:
    stream = EventStream(maxsize=3)
    for i in range(5):
        stream.put(Event(EventKind.FETCHED, float(i)))
    stream.put(Event(EventKind.CRAWL_FINISHED, 9.0))
    stream.close()
    assert [e.time for e in stream] == [3.0, 4.0, 9.0]
    assert stream.dropped == 3
    with pytest.raises(ConfigError):
        EventStream(maxsize=0)


def test_a_stream_is_read_by_an_event_loop_while_another_thread_writes() -> None:
    stream = EventStream(maxsize=1000)

    def produce() -> None:
        for i in range(200):
            stream.put(Event(EventKind.FETCHED, float(i)))
            if i % 50 == 0:
                time.sleep(0.01)  # the reader catches up and waits for more
        stream.close()

    async def consume() -> list[float]:
        return [event.time async for event in stream]

    writer = threading.Thread(target=produce)
    writer.start()
    times = asyncio.run(asyncio.wait_for(consume(), timeout=60))
    writer.join()
    assert times == [float(i) for i in range(200)]
    with pytest.raises(TimeoutError):
        EventStream().get(timeout=0.01)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_page_callback_fails_the_job_and_leaves_no_worker(tmp_path: Path, workers: int) -> None:
    def refuse(_page: CrawledPage) -> None:
        raise ValueError("this consumer is broken")

    with served_site(tmp_path / "site", HOSTS, 10) as spec:
        job = CrawlJob(_config(spec.seeds, tmp_path / "out", workers), on_page=refuse)
        job.start()
        with pytest.raises(ValueError, match="broken"):
            job.result()
    assert job.status().state is JobState.FAILED
    assert multiprocessing.active_children() == []


def test_forked_workers_forward_every_page_and_event_once(tmp_path: Path) -> None:
    with served_site(tmp_path / "site", HOSTS, 25) as spec:
        out = tmp_path / "out"
        ran = subprocess.run([sys.executable, "-m", "tests.support.jobrun", str(out), "2", *spec.seeds],
                             capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen["threads"] == 1  # so the workers were forked
    expected = Counter(spec.reachable | spec.missing)
    assert Counter(seen["pages"]) == expected and seen["fetched"] == len(spec.reachable)  # 404s: no page
    assert seen["texts"] >= len(spec.reachable)
    kinds = [kind for kind, _ in seen["events"]]
    assert Counter(url for kind, url in seen["events"] if kind == "fetched") == expected
    assert kinds[0] == "crawl_started" and kinds[-1] == "crawl_finished"
    assert kinds.count("crawl_started") == kinds.count("crawl_finished") == 1
    lines = sink_lines(out)
    assert Counter(url for url, *_ in lines) == expected
    assert {name for *_, name in lines} == {"sink-w0.tsv", "sink-w1.tsv"}

"""Metrics: the Prometheus text of a crawl (--metrics-port, worker processes included) and of
`serve`'s /metrics, scraped over real sockets and read by prometheus_client's own parser."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harvestman.crawl.engine import Crawler
from harvestman.crawl.exposition import MetricsSource, exposition
from harvestman.crawl.metrics import LATENCY_BUCKETS, CrawlMetrics, MetricsSnapshot
from harvestman.crawl.stats import CrawlCounts
from harvestman.model.config import CrawlConfig
from tests.support.crawlcheck import harvestman_cmd, run_cli, warc_responses
from tests.support.nginx import free_port
from tests.support.serveproc import ServeProcess, wait_for
from tests.support.sharedcrawl import wait_for_settings
from tests.support.sites import served_site

HOSTS = [f"127.3.28.{i}" for i in (1, 2, 3)]


def _families(text: str) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def _value(families: dict[str, Any], name: str, sample: str = "", **labels: str) -> float:
    """The value of the sample `sample` (default: the family's own, `_total` for a counter) with
    `labels` among its own."""
    names = (sample,) if sample else (name, name + "_total")
    for s in families[name].samples:
        if s.name in names and labels.items() <= s.labels.items():
            return float(s.value)
    raise KeyError(f"{sample or name} {labels}")


def test_the_exposition_parses_and_sums_worker_metrics() -> None:
    one, two = CrawlMetrics(), CrawlMetrics()
    one.fetched(0.003, 200, "")
    one.fetched(0.2, 404, "http_404")
    two.fetched(70.0, 0, "timeout")  # beyond every bucket: +Inf only
    two.error("robots")
    one.starting("a", 10.0)
    one.starting("a", 10.5)
    two.paused("b\"x", 30.0)  # a label value to escape
    counts = CrawlCounts.total(
        [CrawlCounts(fetched=1, failed=1, bytes=500, metrics=one.snapshot()),
         CrawlCounts(failed=1, skipped=1, in_flight=2, busy_hosts=frozenset({"b"}), metrics=two.snapshot())],
        queued=7)
    families = _families(exposition([MetricsSource(counts, processes=2)]))
    assert _value(families, "harvestman_pages") == 1
    assert _value(families, "harvestman_failed") == 2
    assert _value(families, "harvestman_bytes") == 500
    assert _value(families, "harvestman_queue_urls") == 7
    assert _value(families, "harvestman_in_flight") == 2
    assert _value(families, "harvestman_busy_hosts") == 1
    assert _value(families, "harvestman_processes") == 2
    latency = "harvestman_fetch_duration_seconds"
    assert families[latency].type == "histogram"
    assert _value(families, latency, latency + "_bucket", le="0.005") == 1
    assert _value(families, latency, latency + "_bucket", le="0.25") == 2
    assert _value(families, latency, latency + "_bucket", le="60.0") == 2
    assert _value(families, latency, latency + "_bucket", le="+Inf") == 3
    assert _value(families, latency, latency + "_count") == 3
    assert _value(families, latency, latency + "_sum") == pytest.approx(70.203)
    gap = "harvestman_host_gap_seconds"
    assert _value(families, gap, gap + "_bucket", le="0.5") == 1
    errors = "harvestman_fetch_errors"
    assert {s.labels["class"]: s.value for s in families[errors].samples} == {
        "http_404": 1, "robots": 1, "timeout": 1}
    responses = families["harvestman_responses"].samples
    assert {s.labels["code"]: s.value for s in responses} == {"2xx": 1, "4xx": 1}
    assert _value(families, "harvestman_host_waited_seconds", host='b"x') == 30.0
    assert _value(families, "harvestman_host_pauses") == 1


def test_a_snapshot_survives_its_json_and_names_the_hosts_held_back_longest() -> None:
    metrics = CrawlMetrics()
    for i in range(50):
        metrics.waited(f"h{i}", float(i))
    metrics.fetched(1.5, 503, "http_503")
    snap = metrics.snapshot()
    assert [host for host, _ in snap.host_waits][:3] == ["h49", "h48", "h47"] and len(snap.host_waits) == 20
    assert MetricsSnapshot.from_json(snap.to_json()) == snap
    assert len(snap.latency.counts) == len(LATENCY_BUCKETS) + 1


def test_a_default_crawl_collects_no_metrics(tmp_path: Path) -> None:
    assert Crawler(CrawlConfig(out_dir=tmp_path)).stats.metrics is None
    assert Crawler(CrawlConfig(out_dir=tmp_path), metrics=True).stats.metrics is not None
    assert CrawlConfig(out_dir=tmp_path).metrics_port == 0


def _scrape(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            return str(reply.read().decode())
    except (urllib.error.URLError, ConnectionError):
        return None


def test_a_crawl_in_worker_processes_serves_its_metrics(tmp_path: Path) -> None:
    with served_site(tmp_path / "site", HOSTS, 20, seed=5) as spec:
        port = free_port("127.0.0.1")
        out = tmp_path / "out"
        cmd = harvestman_cmd("crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.0.0.0/8",
                             "--quiet", "--scope", "any", "--workers", "2", "--delay", "0.1",
                             "--metrics-port", str(port))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        scrapes: list[str] = []
        deadline = time.monotonic() + 90
        while proc.poll() is None and time.monotonic() < deadline:
            text = _scrape(port)
            if text is not None:
                scrapes.append(text)
            time.sleep(0.2)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert len(scrapes) >= 2, "the crawl ended before it could be scraped"
    last = _families(scrapes[-1])
    assert _value(last, "harvestman_processes") == 2
    pages = _value(last, "harvestman_pages")
    assert 0 < pages <= len(spec.reachable)
    # The latency histogram counts every attempt the workers made: a page each, and the broken links.
    latency = "harvestman_fetch_duration_seconds"
    attempts = _value(last, latency, latency + "_count")
    assert attempts >= pages
    assert _value(last, latency, latency + "_bucket", le="+Inf") == attempts
    assert _value(last, "harvestman_responses", code="2xx") == pages
    assert _value(last, "harvestman_bytes") > 0
    # Each of the three hosts is spaced by --delay: gaps between its fetches are observed.
    gap = "harvestman_host_gap_seconds"
    assert _value(last, gap, gap + "_count") > 0
    assert _value(last, gap, gap + "_sum") >= 0.1 * _value(last, gap, gap + "_count") * 0.9
    # Counters never go down from one scrape to the next.
    seen = [_value(_families(s), "harvestman_pages") for s in scrapes]
    assert seen == sorted(seen)
    assert _scrape(port) is None, "the port is freed when the run ends"


def test_a_taken_metrics_port_is_refused_before_the_crawl(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = tmp_path / "out"
        done = run_cli("crawl", "http://127.3.28.9:9/", "--out", str(out), "--allow-net", "127.0.0.0/8",
                       "--quiet", "--metrics-port", str(port))
    assert done.returncode == 2, done.stderr
    assert f"--metrics-port {port}: cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (out / "crawl.db").exists()
    bad = run_cli("crawl", "http://127.3.28.9:9/", "--out", str(out), "--metrics-port", "70000")
    assert bad.returncode == 2 and "metrics_port must be a TCP port" in bad.stderr, bad.stderr
    # The crawl cycle has no metrics (yet): said, not silently ignored.
    rounds = run_cli("crawl", "http://127.3.28.9:9/", "--out", str(out), "--rounds", "1", "--top-n", "5",
                     "--metrics-port", "9464")
    assert rounds.returncode == 2 and "the crawl cycle's rounds (--rounds) have none" in rounds.stderr


def test_serve_answers_metrics_for_its_crawls(tmp_path: Path) -> None:
    with served_site(tmp_path / "site", HOSTS, 10, seed=6) as spec, ServeProcess(
        tmp_path / "root", extra=("--allow-net", "127.3.28.0/24")
    ) as server:
        assert server.call("GET", "/metrics", auth=False).status == 401
        settings = {"scope": "any", "workers": 2}
        reply = server.call("POST", "/api/crawls", {"seeds": list(spec.seeds), "settings": settings})
        assert reply.status == 201, reply.body
        crawl_id = reply.json()["id"]

        def finished() -> dict[str, Any] | None:
            summary = server.call("GET", f"/api/crawls/{crawl_id}").json()
            assert summary["state"] != "failed", summary
            return summary if summary["state"] == "finished" else None

        summary = wait_for(finished, 90, "the crawl to finish")
        metrics = server.call("GET", "/metrics")
    assert metrics.status == 200 and metrics.headers["content-type"].startswith("text/plain")
    families = _families(metrics.body.decode())
    assert _value(families, "harvestman_pages", crawl=crawl_id) == summary["pages"]
    assert _value(families, "harvestman_processes", crawl=crawl_id) == 2
    latency = "harvestman_fetch_duration_seconds"
    assert _value(families, latency, latency + "_count", crawl=crawl_id) >= summary["pages"] > 0


def test_a_worker_joining_a_postgres_crawl_serves_its_own_metrics(tmp_path: Path, postgres_url: str) -> None:
    hosts = [f"127.3.31.{i}" for i in range(1, 7)]
    # Each host's pages 0.5 s apart: the crawl lasts ~10 s, and the worker, joining once it has
    # started, takes its share of the hosts' turns (both machines lease whatever host is ready).
    with served_site(tmp_path / "site", hosts, 20, seed=8) as spec:
        local = ["--allow-net", "127.0.0.0/8", "--workers", "1", "-q"]
        crawl = subprocess.Popen(
            harvestman_cmd("crawl", *spec.seeds, "--db", postgres_url, "--out", str(tmp_path / "a"),
                           "--scope", "any", "--delay", "0.5", *local),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_settings(postgres_url, crawl)
            port = free_port("127.0.0.1")
            worker = subprocess.Popen(
                harvestman_cmd("worker", "--db", postgres_url, "--out", str(tmp_path / "b"),
                               "--metrics-port", str(port), *local),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            scrapes = []
            deadline = time.monotonic() + 120
            while worker.poll() is None and time.monotonic() < deadline:
                text = _scrape(port)
                if text is not None:
                    scrapes.append(_families(text))
                time.sleep(0.1)
            _, worker_err = worker.communicate(timeout=60)
            _, crawl_err = crawl.communicate(timeout=120)
        finally:
            for proc in (crawl, worker):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert crawl.returncode == 0, crawl_err
    assert worker.returncode == 0, worker_err
    assert scrapes, "the worker was never scraped"
    pages = [_value(f, "harvestman_pages") for f in scrapes]
    assert pages == sorted(pages) and pages[-1] > 0  # the worker's own pages, not the crawl's
    stored = [url for url in warc_responses(tmp_path / "b") if not url.endswith("/robots.txt")]
    assert pages[-1] <= len(stored) < len(spec.reachable)
    latency = "harvestman_fetch_duration_seconds"
    assert _value(scrapes[-1], latency, latency + "_count") >= pages[-1]

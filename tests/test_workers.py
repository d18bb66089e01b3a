"""Worker processes: the same result as one process, politeness kept, no process outliving the crawl."""

from __future__ import annotations

import itertools
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from harvestman.crawl.workers import worker_count
from harvestman.model.config import CrawlConfig
from tests.support.crawlcheck import harvestman_cmd, interrupt_cli, read_all_warcs, run_cli, warc_responses
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

HOSTS = [f"127.1.9.{i}" for i in range(1, 7)]


@pytest.fixture()
def site(tmp_path: Path) -> tuple[NginxServer, SiteSpec]:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, 60, 8, seed=3, port=port)
    return NginxServer(tmp_path / "site", HOSTS, port), spec


def _states(out: Path) -> dict[str, tuple[int, int, str]]:
    with sqlite3.connect(f"file:{out / 'crawl.db'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT url, state, http_status, error_class FROM urls").fetchall()
    return {url: (state, status, error) for url, state, status, error in rows}


def _crawl(spec: SiteSpec, out: Path, workers: int) -> subprocess.CompletedProcess[str]:
    return run_cli("crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.1.0.0/16", "--quiet",
                   "--scope", "any", "--workers", str(workers))


def test_workers_reach_the_result_of_one_process(tmp_path: Path, site: tuple[NginxServer, SiteSpec]) -> None:
    server, spec = site
    with server:
        one = _crawl(spec, tmp_path / "one", 1)
        after_one = len(server.requests())
        three = _crawl(spec, tmp_path / "three", 3)
        requests = server.requests()[after_one:]
    assert one.returncode == 0 and three.returncode == 0, one.stderr + three.stderr
    assert _states(tmp_path / "three") == _states(tmp_path / "one")
    pages = [e for e in requests if not e.uri.endswith("/robots.txt")]
    assert len(pages) == len({(e.server_addr, e.uri) for e in pages}), "a page was fetched twice"
    assert sorted(e.server_addr for e in requests if e.uri == "/robots.txt") == sorted(HOSTS)
    assert set(warc_responses(tmp_path / "three")) >= set(spec.reachable)
    assert read_all_warcs(tmp_path / "three") > 0
    names = {p.name.split("-")[1] for p in (tmp_path / "three" / "warc").glob("*.warc.gz")}
    assert names <= {"w0", "w1", "w2"} and len(names) > 1, names  # each worker writes its own files


def test_per_host_limit_holds_across_workers(tmp_path: Path, site: tuple[NginxServer, SiteSpec]) -> None:
    server, spec = site
    with server:
        done = run_cli("crawl", *spec.seeds, "--out", str(tmp_path / "out"), "--allow-net", "127.1.0.0/16",
                       "--quiet", "--scope", "any", "--workers", "2", "--per-host", "1", "--delay", "0.01")
        entries = server.requests()
    assert done.returncode == 0, done.stderr
    by_host: dict[str, list[tuple[float, float]]] = {}
    for e in entries:
        by_host.setdefault(e.server_addr, []).append((e.start, e.msec))
    for host, spans in by_host.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end - 0.001, f"{host}: two requests at once"


def test_a_killed_crawl_leaves_no_worker_behind(tmp_path: Path, site: tuple[NginxServer, SiteSpec]) -> None:
    server, spec = site
    out = tmp_path / "out"
    args = ["crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.1.0.0/16", "--quiet", "--scope",
            "any", "--workers", "2", "--delay", "0.05", "--per-host", "1"]
    with server:
        proc = subprocess.Popen(harvestman_cmd(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 2:
            workers = _children(proc.pid)
            time.sleep(0.05)
        assert len(workers) == 2, "the workers did not start"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in workers), "a worker outlived its crawl"
        resumed = run_cli(*args, "--resume", timeout=180)
        assert resumed.returncode == 0, resumed.stderr
    assert set(warc_responses(out)) >= set(spec.reachable)


def test_a_dead_worker_stops_the_crawl_resumably(tmp_path: Path, site: tuple[NginxServer, SiteSpec]) -> None:
    server, spec = site
    out = tmp_path / "out"
    args = ["crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.1.0.0/16", "--quiet", "--scope",
            "any", "--workers", "2", "--delay", "0.05", "--per-host", "1"]
    with server:
        proc = subprocess.Popen(harvestman_cmd(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(server.requests()) < 10:
            time.sleep(0.05)
        victims = _children(proc.pid)
        assert victims, "no worker to kill"
        os.kill(victims[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 1
        assert stderr.count("ended with signal SIGKILL") == 1 and "--resume" in stderr, stderr
        resumed = run_cli(*args, "--resume", timeout=180)
        assert resumed.returncode == 0, resumed.stderr
    assert set(warc_responses(out)) >= set(spec.reachable)


def test_worker_count_defaults_to_the_cores_and_max_pages_runs_one() -> None:
    assert worker_count(CrawlConfig()) == len(os.sched_getaffinity(0))
    assert worker_count(CrawlConfig(workers=3)) == 3
    assert worker_count(CrawlConfig(workers=3, max_pages=10)) == 1


def _children(pid: int) -> list[int]:
    """Worker processes of `pid` (forked; a resource tracker aside)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"resource_tracker" not in cmdline:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


SEEDS = 100_000


def test_a_stop_while_the_run_is_prepared_ends_the_crawl(tmp_path: Path) -> None:
    # 10^5 seeds keep the parent preparing for about a second, the workers forked and waiting.
    # A Ctrl-C then stopped them while they waited, and the parent hung releasing them (an Event
    # waits for its waiters to wake). Now the crawl ends once the run is prepared, everything queued.
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://127.9.{i % 250}.{i // 250 % 250 + 1}:9/p{i}\n" for i in range(SEEDS)))
    out = tmp_path / "out"
    workers: list[int] = []

    def workers_started(pid: int) -> bool:
        workers[:] = _children(pid)
        return len(workers) == 2

    stopped = interrupt_cli("crawl", "-i", str(seeds), "--out", str(out), "--allow-net", "127.0.0.0/8",
                            "--quiet", "--workers", "2", ready=workers_started, wait=30, timeout=120)
    assert len(workers) == 2, "the workers did not start"
    assert stopped.returncode == 0, stopped.stderr
    assert "Traceback" not in stopped.stderr
    with sqlite3.connect(f"file:{out / 'crawl.db'}?mode=ro", uri=True) as db:
        [(unfetched,)] = db.execute("SELECT COUNT(*) FROM urls WHERE state = 0").fetchall()
    assert unfetched > 0.99 * SEEDS  # queued for --resume; the few fetched at most were in flight

"""Two machines' processes share one crawl kept in PostgreSQL: `crawl` in one, `worker` in the other.

Each has its own output folder; nginx's log is the referee: every allowed page requested once, no
host served more than --per-host requests at once across both, both did part of the work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from harvestman.model.records import UrlState
from harvestman.store.factory import open_store
from tests.support.crawlcheck import harvestman_cmd, read_all_warcs, warc_responses
from tests.support.httpserver import RouteServer
from tests.support.loadweb import PRIVATE, by_host, held, holder, max_in_flight, write_host
from tests.support.nginx import NginxServer, free_port
from tests.support.sharedcrawl import wait_for_settings

HOSTS = [f"127.3.0.{i}" for i in range(1, 9)]
PAGES = 40  # a host's pages: with each answer held HOLD seconds, the crawl lasts a few seconds
HOLD = 0.05
PER_HOST = 2
# A process's fetches at once (the crawl's setting, each process's): half the hosts' slots, so that a
# second process finds work; one that could take every slot would leave none to the other.
CONCURRENCY = len(HOSTS) * PER_HOST // 2
RUN_TIMEOUT = 180.0
LEASE_SECONDS = 2.0  # how soon a dead worker's URLs are leased again (the default is 300 s)


def test_crawl_and_worker_share_one_postgres_crawl(tmp_path: Path, postgres_url: str) -> None:
    root = tmp_path / "www"
    port = free_port(HOSTS[0])
    paths = {host: write_host(root / host, host, PAGES) for host in HOSTS}
    machine_a, machine_b = tmp_path / "a", tmp_path / "b"
    local = ["--allow-net", "127.3.0.0/16", "--workers", "1", "-q"]
    with RouteServer({"/hold": holder(HOLD)}) as sleeper, \
            NginxServer(root, HOSTS, port, extra_server=held(sleeper)) as nginx:
        seeds = [nginx.url(host, "/") for host in HOSTS]
        crawl = subprocess.Popen(
            harvestman_cmd("crawl", *seeds, "--db", postgres_url, "--out", str(machine_a),
                           "--per-host", str(PER_HOST), "--concurrency", str(CONCURRENCY), *local),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_settings(postgres_url, crawl)
            worker = subprocess.run(
                harvestman_cmd("worker", "--db", postgres_url, "--out", str(machine_b), *local),
                capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
            _, crawl_err = crawl.communicate(timeout=RUN_TIMEOUT)
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait()
        assert crawl.returncode == 0, crawl_err
        assert worker.returncode == 0, worker.stderr
        entries = nginx.requests()

    pages = Counter((e.server_addr, e.uri) for e in entries if e.uri != "/robots.txt")
    expected = {(host, "/" if path == "/" else path) for host in HOSTS for path in paths[host]}
    assert set(pages) == expected, "pages missed or not allowed were asked for"
    assert not any(uri.startswith(PRIVATE) for _, uri in pages)
    assert max(pages.values()) == 1, [key for key, n in pages.items() if n > 1]
    busiest = {host: max_in_flight(hits) for host, hits in by_host(entries).items()}
    assert max(busiest.values()) <= PER_HOST, busiest
    assert max(busiest.values()) == PER_HOST  # the log does see requests overlap

    done_a, done_b = warc_responses(machine_a), warc_responses(machine_b)
    fetched = {url for url in (*done_a, *done_b) if not url.endswith("/robots.txt")}
    assert len(fetched) == len(expected) and not (set(done_a) & set(done_b)) - {
        url for url in done_a if url.endswith("/robots.txt")}
    assert len(done_a) > 10 and len(done_b) > 10, (len(done_a), len(done_b))  # both did part of it
    assert read_all_warcs(machine_a) and read_all_warcs(machine_b)  # every WARC file reads to its end


def test_a_killed_worker_loses_nothing(tmp_path: Path, postgres_url: str) -> None:
    """kill -9 of one machine's worker while the other crawls: its leased URLs are leased again
    once their leases expire, and every page ends fetched."""
    root = tmp_path / "www"
    port = free_port(HOSTS[0])
    paths = {host: write_host(root / host, host, PAGES) for host in HOSTS}
    machine_a, machine_b = tmp_path / "a", tmp_path / "b"
    config = tmp_path / "crawl.toml"
    config.write_text(f"[storage]\nlease_seconds = {LEASE_SECONDS}\n")
    local = ["--allow-net", "127.3.0.0/16", "--workers", "1", "-q"]
    with RouteServer({"/hold": holder(HOLD)}) as sleeper, \
            NginxServer(root, HOSTS, port, extra_server=held(sleeper)) as nginx:
        seeds = [nginx.url(host, "/") for host in HOSTS]
        crawl = subprocess.Popen(
            harvestman_cmd("crawl", *seeds, "--db", postgres_url, "--out", str(machine_a),
                           "--config", str(config), "--per-host", str(PER_HOST),
                           "--concurrency", str(CONCURRENCY), *local),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        worker = None
        try:
            wait_for_settings(postgres_url, crawl)
            worker = subprocess.Popen(
                harvestman_cmd("worker", "--db", postgres_url, "--out", str(machine_b), *local),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 60
            while not any(p.stat().st_size for p in (machine_b / "warc").glob("*.open")):  # it is at work
                assert time.monotonic() < deadline and worker.poll() is None, "the worker never fetched"
                time.sleep(0.02)
            os.kill(worker.pid, signal.SIGKILL)  # its worker process dies with it (PR_SET_PDEATHSIG)
            worker.wait(timeout=10)
            _, crawl_err = crawl.communicate(timeout=RUN_TIMEOUT)
        finally:
            for proc in (crawl, worker):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert crawl.returncode == 0, crawl_err
        entries = nginx.requests()

    pages = Counter((e.server_addr, e.uri) for e in entries if e.uri != "/robots.txt")
    expected = {(host, path) for host in HOSTS for path in paths[host]}
    assert set(pages) == expected  # every page asked for, none lost
    again = [key for key, n in pages.items() if n > 1]
    assert len(again) <= CONCURRENCY  # at most what the killed worker had in flight was fetched twice
    store = open_store(postgres_url, read_only=True)
    try:
        assert store.pending() == 0 and store.in_flight() == 0
        assert store.counts()[UrlState.FETCHED] == len(expected)
    finally:
        store.close()

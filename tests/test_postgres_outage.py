"""A shared crawl rides out its PostgreSQL going away: a lost connection costs time, never work.

A crawl and two workers (real processes, three output folders) on a private PostgreSQL server of
this module's own (it is stopped and restarted here, so no other test shares it); nginx's access
log is the referee of what was fetched, the crawl database of what was recorded.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Generator
from pathlib import Path

import pytest

from harvestman.model.errors import EXIT_DATABASE
from harvestman.model.records import UrlState
from harvestman.store.factory import open_store
from tests.support.crawlcheck import harvestman_cmd
from tests.support.httpserver import RouteServer
from tests.support.loadweb import held, holder, write_host
from tests.support.nginx import LogEntry, NginxServer, free_port
from tests.support.postgres import PostgresServer, PostgresUnavailable
from tests.support.sharedcrawl import wait_for_settings

HOSTS = [f"127.3.2.{i}" for i in range(1, 7)]
PAGES = 30  # a host's pages; each answer held HOLD seconds: the crawl lasts a few seconds
HOLD = 0.15
PER_HOST = 2
CONCURRENCY = 4  # each process's: three processes share the hosts' 12 slots
RUN_TIMEOUT = 120.0
LOCAL = ["--allow-net", "127.3.2.0/24", "--workers", "1", "-q"]  # each machine's options


@pytest.fixture(scope="module")
def own_postgres() -> Generator[PostgresServer]:
    """A PostgreSQL server for this module alone: its tests stop and restart it."""
    pytest.importorskip("psycopg")
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


def _pages(entries: list[LogEntry]) -> Counter[tuple[str, str]]:
    return Counter((e.server_addr, e.uri) for e in entries if e.uri != "/robots.txt")


def _wait_for_pages(nginx: NginxServer, count: int, procs: list[subprocess.Popen[str]]) -> int:
    """Wait until nginx has served `count` pages (the crawl is under way); how many it has."""
    deadline = time.monotonic() + 60
    while (served := sum(_pages(nginx.requests()).values())) < count:
        assert time.monotonic() < deadline, "the crawl never got going"
        assert all(p.poll() is None for p in procs), "a process ended before the crawl got going"
        time.sleep(0.05)
    return served


def _finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    """Each process's exit status and stderr, once all have ended (killed after RUN_TIMEOUT)."""
    ended = []
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=RUN_TIMEOUT)
            ended.append((proc.returncode, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return ended


def _start(url: str, seeds: list[str], folders: list[Path], *extra: str,
           crawl: tuple[str, ...] | list[str] = ()) -> list[subprocess.Popen[str]]:
    """A crawl in folders[0] (with `crawl`'s options too), then a worker in each other folder; each
    with the machine's options and `extra`."""
    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(harvestman_cmd(*args, "--db", url, *LOCAL, *extra), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)

    first = start("crawl", *seeds, "--out", str(folders[0]), "--per-host", str(PER_HOST),
                  "--concurrency", str(CONCURRENCY), *crawl)
    procs = [first]
    try:
        wait_for_settings(url, first)
        for folder in folders[1:]:
            procs.append(start("worker", "--out", str(folder)))
    except BaseException:
        _finish(procs)
        raise
    return procs


def _check_all_recorded(url: str, pages: int) -> None:
    """Every URL of the crawl in a final state, the web's pages fetched, and the tallies the rows'
    own (nothing counted twice)."""
    store = open_store(url, read_only=True)
    try:
        rows = Counter(record.state for record in store.records())
        assert store.pending() == 0 and store.in_flight() == 0
        assert rows[UrlState.UNFETCHED] == 0 and rows[UrlState.FETCHED] == pages, rows
        assert {state: n for state, n in store.counts().items() if n} == dict(rows)
    finally:
        store.close()


def test_a_postgres_restart_mid_crawl_loses_nothing(tmp_path: Path, own_postgres: PostgresServer) -> None:
    url = own_postgres.create_database()
    root = tmp_path / "www"
    paths = {host: write_host(root / host, host, PAGES) for host in HOSTS}
    expected = {(host, path) for host in HOSTS for path in paths[host]}
    folders = [tmp_path / name for name in ("a", "b", "c")]
    with RouteServer({"/hold": holder(HOLD)}) as sleeper, \
            NginxServer(root, HOSTS, free_port(HOSTS[0]), extra_server=held(sleeper)) as nginx:
        procs = _start(url, [nginx.url(host, "/") for host in HOSTS], folders)
        served = _wait_for_pages(nginx, len(expected) // 4, procs)
        own_postgres.restart()  # pg_ctl stop -m fast, then the server again
        ended = _finish(procs)
        pages = _pages(nginx.requests())

    assert served < len(expected) // 2  # the restart came mid-crawl
    for status, err in ended:
        assert status == 0, err
        assert "connection lost" in err, err  # each process met the restart, and rode it out
    assert set(pages) == expected
    assert max(pages.values()) == 1, [key for key, n in pages.items() if n > 1]  # every page once
    _check_all_recorded(url, len(expected))


def test_postgres_away_too_long_ends_the_run_and_resume_completes(tmp_path: Path,
                                                                   own_postgres: PostgresServer) -> None:
    url = own_postgres.create_database()
    root = tmp_path / "www"
    paths = {host: write_host(root / host, host, PAGES) for host in HOSTS}
    expected = {(host, path) for host in HOSTS for path in paths[host]}
    folders = [tmp_path / "a", tmp_path / "b"]
    # The leases of the processes that gave up come back after lease_seconds (by default as long
    # as db_outage_limit: expired by the time a process gives up).
    config = tmp_path / "crawl.toml"
    config.write_text("[storage]\nlease_seconds = 1.5\n")
    with RouteServer({"/hold": holder(HOLD)}) as sleeper, \
            NginxServer(root, HOSTS, free_port(HOSTS[0]), extra_server=held(sleeper)) as nginx:
        procs = _start(url, [nginx.url(host, "/") for host in HOSTS], folders, "--db-outage-limit", "1",
                       crawl=["--config", str(config)])
        _wait_for_pages(nginx, len(expected) // 4, procs)
        own_postgres.halt()
        try:
            ended = _finish(procs)
        finally:
            own_postgres.launch()
        before = len(_pages(nginx.requests()))
        resumed = subprocess.run(harvestman_cmd("crawl", "--db", url, "--out", str(folders[0]), "--resume",
                                                "-q", "--concurrency", str(PER_HOST * len(HOSTS))),
                                 capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
        pages = _pages(nginx.requests())

    for status, err in ended:
        assert status == EXIT_DATABASE, err
        lines = [line for line in err.splitlines() if line.startswith("harvestman: error:")]
        assert len(lines) == 1 and "unreachable for" in lines[0] and "--resume" in lines[0], err
    assert before < len(expected)  # the run ended before the crawl did
    assert resumed.returncode == 0, resumed.stderr
    assert set(pages) == expected  # nothing lost
    # Only what was in flight when the database went away is fetched again.
    assert sum(pages.values()) - len(expected) <= len(folders) * CONCURRENCY
    _check_all_recorded(url, len(expected))

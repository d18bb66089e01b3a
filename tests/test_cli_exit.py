"""What a new user meets: a run that fetched nothing says why and exits non-zero (wget-like
statuses), bad input is refused before anything is created, a finished crawl leaves no lock files,
and the live line fits the terminal and says when the crawl is only waiting for a retry."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from harvestman.crawl.engine import Crawler
from harvestman.crawl.stats import CrawlStats
from harvestman.launch.progress import ProgressDisplay
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import exit_status_of, failure_help
from tests.support.crawlcheck import run_cli, run_cli_measured
from tests.support.fakedns import NXDOMAIN, FakeDns, require_private_resolver
from tests.support.httpserver import RawServer, RouteServer
from tests.support.nginx import free_port

HOST = "127.1.3.1"
ALLOW = ["--allow-net", "127.1.0.0/16"]
LEFTOVERS = ("crawl.db.lock", "crawl.db.writer", "crawl.db-wal", "crawl.db-shm")


def _site(robots: bytes = b"User-agent: *\nDisallow:\n") -> RouteServer:
    return RouteServer({
        "/robots.txt": (200, {"Content-Type": "text/plain"}, robots),
        "/": (200, {"Content-Type": "text/html"}, b"<html><title>home</title><p>hi</p></html>"),
    }, host=HOST)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_loopback_seed_without_allow_net_says_which_range_to_allow(tmp_path: Path, workers: str) -> None:
    out = tmp_path / "out"
    with RawServer(lambda conn: None, host="127.0.0.1") as canary:
        seed = canary.url("/")
        done = run_cli("crawl", seed, "--out", str(out), "-q", "--workers", workers)
        assert canary.connections == 0
    assert done.returncode == 4, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "harvestman: nothing was fetched: the seed failed"
    assert lines[1].startswith(f"harvestman: {seed}: ") and "(blocked_address)" in lines[1]
    assert "--allow-net 127.0.0.1/32" in lines[1]
    assert "Traceback" not in done.stderr


def test_robots_disallow_and_a_404_each_say_why_and_the_lowest_status_wins(tmp_path: Path) -> None:
    with _site(b"User-agent: *\nDisallow: /private/\n") as site:
        private, missing = site.url("/private/x"), site.url("/missing")
        done = run_cli("download", private, missing, "--out", str(tmp_path / "out"), "-q", *ALLOW)
    assert done.returncode == 8, done.stderr  # server error (8) over a rule of the crawl (1)
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "harvestman: nothing was fetched: every seed failed"
    [robots] = [line for line in lines if private in line]
    assert "(robots)" in robots and "--ignore-robots" in robots
    [gone] = [line for line in lines if missing in line]
    assert "HTTP 404 (http_404)" in gone


def test_only_robots_refused_seeds_exit_1(tmp_path: Path) -> None:
    with _site(b"User-agent: *\nDisallow: /\n") as site:
        done = run_cli("crawl", site.url("/"), "--out", str(tmp_path / "out"), "-q", *ALLOW)
    assert done.returncode == 1, done.stderr
    assert "disallowed by robots.txt (robots); disallowed by robots.txt: --ignore-robots" in done.stderr


def test_a_refused_connection_exits_4_without_waiting_for_retries(tmp_path: Path) -> None:
    port = free_port(HOST)  # nothing listens there
    done = run_cli("crawl", f"http://{HOST}:{port}/", "--out", str(tmp_path / "out"), "-q", *ALLOW,
                   "--retries", "0")
    assert done.returncode == 4, done.stderr
    assert "(connect); no connection" in done.stderr


def test_a_seed_that_does_not_resolve_gets_a_hint_and_the_assumed_scheme(tmp_path: Path) -> None:
    # Its own address (not FakeDns's default): test modules may run at once (pytest -n).
    with FakeDns({"nx.test": NXDOMAIN}, address="127.53.1.1") as dns:
        prefix = require_private_resolver(dns, tmp_path)
        done = run_cli_measured("crawl", "nx.test", "--out", str(tmp_path / "out"), "-q", "--retries", "0",
                                timeout=60, prefix=prefix)
    assert done.returncode == 4, done.stderr
    assert "harvestman: seed 'nx.test' has no scheme: http:// assumed (http://nx.test/)" in done.stderr
    assert "http://nx.test/: " in done.stderr and "(dns); check the host name" in done.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_one_page_fetched_is_success_and_leaves_no_lock_files(tmp_path: Path, workers: str) -> None:
    out = tmp_path / "out"
    with _site() as site:
        done = run_cli("download", site.url("/"), site.url("/missing"), "--out", str(out), *ALLOW,
                       "--workers", workers)  # not quiet: the summary reads the database too
    assert done.returncode == 0, done.stderr
    assert "nothing was fetched" not in done.stderr
    assert not [name for name in LEFTOVERS if (out / name).exists()]
    status = run_cli("status", str(out))
    assert status.returncode == 0 and not [name for name in LEFTOVERS if (out / name).exists()]


def test_a_new_crawl_takes_the_lock_again_after_a_finished_one(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with _site() as site:
        first = run_cli("crawl", site.url("/"), "--out", str(out), "-q", *ALLOW)
        again = run_cli("crawl", "--out", str(out), "-q", *ALLOW, "--resume")
    assert (first.returncode, again.returncode) == (0, 0), again.stderr
    assert not (out / "crawl.db.lock").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["crawl", "--out", "{out}", "--resume"], "nothing to resume: {out} holds no crawl"),
        (["crawl", "ftp://x/", "--out", "{out}"], "no valid seed URL"),
        (["download", "http://[::1", "--out", "{out}"], "no valid seed URL"),
    ],
)
def test_a_run_that_cannot_start_creates_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "out"
    done = run_cli(*[a.replace("{out}", str(out)) for a in args])
    assert done.returncode == 2, done.stderr
    assert message.replace("{out}", str(out)) in done.stderr
    assert not out.exists()
    assert "Traceback" not in done.stderr


def test_out_naming_a_file_is_a_usage_error(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    done = run_cli("crawl", "http://x.invalid/", "--out", str(a_file))
    assert done.returncode == 2
    assert f"--out {a_file} is a file, not a folder" in done.stderr
    assert a_file.read_text() == "not a folder"
    assert "Traceback" not in done.stderr


def test_exit_statuses_follow_wget() -> None:
    assert failure_help("tls").exit_status == 5
    assert failure_help("http_503").exit_status == 8
    assert failure_help("no_such_class").exit_status == 1
    assert exit_status_of([1, 8, 4]) == 4 and exit_status_of([1, 1]) == 1


def _line(stats: CrawlStats, width: int, now: float) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None)
    console.print(ProgressDisplay(stats, console).render(now, width))
    return buf.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_progress_line_fits_the_terminal(width: int) -> None:
    now = time.time()
    stats = CrawlStats(started_at=now - 10, fetched=123_456, queued=1_234_567, failed=12_345, skipped=1_234,
                       in_flight=100, bytes=123_456_789_012, busy_hosts={str(i) for i in range(50)})
    text = _line(stats, width, now)
    assert text.count("\n") == 1 and len(text.rstrip("\n")) < width, text
    assert "pages/s" in text and "pages 123,456" in text
    if width >= 120:
        assert "in flight 100" in text and "123.5 GB" in text


def test_the_progress_line_says_when_a_retry_is_due() -> None:
    now = time.time()
    stats = CrawlStats(started_at=now - 10, queued=1, retrying=1, next_attempt_at=now + 12.2)
    assert "retrying 1, next attempt in 12 s" in _line(stats, 80, now)
    stats.retrying = 0
    assert "waiting, next attempt in 12 s" in _line(stats, 80, now)


def test_the_engine_counts_a_seed_waiting_for_its_retry(tmp_path: Path) -> None:
    port = free_port(HOST)  # nothing listens: robots.txt cannot be read, and the host waits 5 s
    cfg = CrawlConfig(seeds=(f"http://{HOST}:{port}/",), out_dir=tmp_path / "out",
                      allow_net=("127.1.0.0/16",))
    crawler = Crawler(cfg)
    seen: list[tuple[int, float]] = []

    async def main() -> None:
        run = asyncio.create_task(crawler.run())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not run.done():
            await asyncio.sleep(0.05)
            stats = crawler.stats
            if stats.retrying and stats.in_flight == 0 and stats.next_attempt_at > time.time():
                seen.append((stats.retrying, stats.next_attempt_at - time.time()))
                break
        crawler.stop()
        await run

    asyncio.run(main())
    assert seen and seen[0][0] == 1 and seen[0][1] > 1, seen

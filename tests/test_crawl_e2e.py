"""A real crawl of a multi-host site served by nginx on loopback addresses, through the CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.crawlcheck import harvestman_cmd, read_all_warcs, run_cli, warc_responses
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

HOSTS = ["127.1.0.1", "127.1.0.2", "127.1.0.3"]


def _serve(tmp_path: Path, pages: int, page_bytes: int = 0) -> tuple[NginxServer, SiteSpec]:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, pages, 6, seed=7, port=port, page_bytes=page_bytes)
    return NginxServer(tmp_path / "site", HOSTS, port), spec


def _page_requests(server: NginxServer) -> Counter[str]:
    return Counter(
        f"http://{e.server_addr}:{e.server_port}{e.uri}"
        for e in server.requests()
        if not e.uri.endswith("/robots.txt")
    )


def test_crawl_fetches_every_allowed_page_once_and_no_disallowed_one(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=30)
    out = tmp_path / "out"
    with server:
        done = run_cli("crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.1.0.0/16", "--quiet",
                       "--scope", "any")
        requested = _page_requests(server)
        robots = [e for e in server.requests() if e.uri == "/robots.txt"]
    assert done.returncode == 0, done.stderr
    assert set(requested) == set(spec.reachable) | set(spec.missing)
    assert max(requested.values()) == 1, [u for u, n in requested.items() if n > 1]
    assert not set(requested) & spec.disallowed
    assert len(robots) == len(HOSTS)
    responses = warc_responses(out)
    assert set(spec.reachable) <= set(responses)
    assert (out / "crawl.db").is_file() and (out / "events.jsonl").is_file()
    log = (out / "download.log").read_text().splitlines()
    assert sum(line.endswith("|Success") for line in log) == len(spec.reachable)
    assert all("|FAILED|" in line for line in log if not line.endswith("|Success"))
    status = run_cli("status", str(out), "--json")
    report = json.loads(status.stdout)
    assert report["states"]["fetched"] == len(spec.reachable)


def test_sigkill_then_resume_loses_nothing(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=400, page_bytes=4000)
    out = tmp_path / "out"
    # A delay keeps the first run going long enough to be killed in the middle.
    args = ["crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.1.0.0/16", "--quiet",
            "--scope", "any", "--delay", "0.02", "--per-host", "1"]
    with server:
        proc = subprocess.Popen(harvestman_cmd(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while time.time() < deadline and len(server.requests()) < 40:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        before = _page_requests(server)
        assert 0 < sum(before.values()) < len(spec.reachable), "the kill came too late to test anything"
        done = run_cli(*[a for a in args if a not in ("--delay", "0.02")], "--resume", timeout=180)
        assert done.returncode == 0, done.stderr
        requested = _page_requests(server)
    assert set(requested) == set(spec.reachable) | set(spec.missing)
    assert not set(requested) & spec.disallowed
    twice = sum(n - 1 for n in requested.values() if n > 1)
    assert twice <= len(HOSTS)  # at most the fetches in flight at the kill (1 per host)
    with sqlite3.connect(out / "crawl.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert read_all_warcs(out) > 0
    assert set(spec.reachable) <= set(warc_responses(out))


def test_second_run_into_the_same_folder_needs_resume(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=5)
    out = tmp_path / "out"
    with server:
        assert (
            run_cli("crawl", spec.seeds[0], "--out", str(out), "--allow-net", "127.1.0.0/16", "-q").returncode
            == 0
        )
        again = run_cli("crawl", spec.seeds[0], "--out", str(out), "--allow-net", "127.1.0.0/16", "-q")
    assert again.returncode == 2
    assert "--resume" in again.stderr
    assert "Traceback" not in again.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["crawl", "--out", "{out}"], "no URL given"),
        (["crawl", "http://x.invalid/", "--out", "{out}", "--scope", "planet"], "invalid choice"),
        (["crawl", "http://x.invalid/", "--out", "{out}", "--allow-net", "banana"], "CIDR"),
        (["crawl", "http://x.invalid/", "--out", "{out}", "--include", "("], "regular expression"),
        (["crawl", "http://x.invalid/", "--out", "{out}", "--resolve", "nonsense"], "HOST:PORT:ADDR"),
        (["crawl", "ftp://x/", "not a url", "--out", "{out}"], "no valid seed"),
        (["crawl", "-i", "/nonexistent/seeds.txt", "--out", "{out}"], "cannot read URL file"),
        (["status", "/nonexistent/dir"], "holds no crawl"),
    ],
)
def test_bad_input_gets_a_clear_message_and_exit_status(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = run_cli(*[a.replace("{out}", str(tmp_path / "out")) for a in args])
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr




def test_a_seed_without_a_scheme_is_taken_as_http() -> None:
    from harvestman.crawl.seeding import with_scheme

    assert with_scheme("example.com/a") == "http://example.com/a"
    assert with_scheme("https://example.com/") == "https://example.com/"
    assert with_scheme("") == ""

"""What a new user met in a first trial of the command line: `export --out -` to standard output,
a pipe closed early (`| head -1`) ending quietly, search snippets highlighted on a terminal only."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.crawlcheck import harvestman_cmd, run_cli
from tests.support.sites import served_site

HOSTS = ["127.3.29.1", "127.3.29.2"]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("trial")
    out = tmp / "out"
    with served_site(tmp / "site", HOSTS, 80, seed=11) as spec:
        done = run_cli("crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.0.0.0/8",
                       "--scope", "any", "--quiet")
        assert done.returncode == 0, done.stderr
    done = run_cli("index", str(out))
    assert done.returncode == 0, done.stderr
    yield out


def test_export_out_dash_writes_the_records_to_standard_output(crawled: Path) -> None:
    done = run_cli("export", str(crawled), "--out", "-")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) > 100 and all("url" in row and "state" in row for row in rows)
    assert done.stderr.strip() == f"harvestman: {len(rows)} records written to standard output"
    assert not (crawled / "export.jsonl").exists() and not Path("-").exists()
    # The old spelling, the links, and a CDXJ index go there too.
    links = run_cli("export", str(crawled), "--output", "-", "--what", "links")
    assert links.returncode == 0 and all(json.loads(line)["from_url"] for line in links.stdout.splitlines())
    cdxj = run_cli("export", str(crawled), "-o", "-", "--format", "cdxj")
    assert cdxj.returncode == 0, cdxj.stderr
    first = cdxj.stdout.splitlines()[0]
    assert json.loads(first.split(" ", 2)[2])["filename"].startswith("warc/"), first
    assert "index lines written to standard output" in cdxj.stderr
    assert not (crawled / "index.cdxj").exists()


def test_a_binary_export_to_standard_output_is_refused(crawled: Path) -> None:
    done = run_cli("export", str(crawled), "--out", "-", "--format", "parquet")
    assert done.returncode == 2 and done.stdout == ""
    assert "--format parquet is written to files: name one with --out" in done.stderr


def _closed_pipe_run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with a standard output whose reader has gone: its first write meets EPIPE."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(harvestman_cmd(*args), stdout=writer, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(writer)


# status prints through rich, whose console ends a closed output itself (quietly, status 1); argparse
# drops its help quietly.
@pytest.mark.parametrize(("args", "status"), [(("export", "{dir}", "--out", "-"), 141),
                                              (("search", "{dir}", "orchard"), 141),
                                              (("status", "{dir}"), 1), (("--help",), 0)])
def test_a_closed_standard_output_ends_the_command_quietly(crawled: Path, args: tuple[str, ...],
                                                           status: int) -> None:
    done = _closed_pipe_run(*(a.format(dir=crawled) for a in args))
    assert done.returncode == status, done.stderr
    assert done.stderr == "", done.stderr


def test_head_of_an_export_in_a_shell_pipeline(crawled: Path) -> None:
    command = " ".join(harvestman_cmd("export", str(crawled), "--out", "-")) + " | head -1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr, done.stderr


def _on_terminal(args: list[str], env: dict[str, str]) -> str:
    """What the CLI prints to a pseudo-terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    chunks = []
    while True:  # bounded: the process ends, and the terminal reports EIO (or EOF)
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(30) == 0
    return b"".join(chunks).decode()


def test_search_snippets_are_highlighted_on_a_terminal_only(crawled: Path) -> None:
    args = harvestman_cmd("search", str(crawled), "orchard")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    shown = _on_terminal(args, env)
    assert "\033[1;33m" in shown and "\033[0m" in shown and "**" not in shown
    plain = _on_terminal(args, {**env, "NO_COLOR": "1"})
    assert "\033[" not in plain and "**" not in plain and "pages match" in plain
    piped = run_cli("search", str(crawled), "orchard")
    assert piped.returncode == 0 and "\033[" not in piped.stdout and "**" not in piped.stdout
    assert "<b>" not in piped.stdout and "pages match" in piped.stdout


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_crawl_whose_log_json_reader_goes_away_stops_quietly_and_resumes(tmp_path: Path,
                                                                           workers: str) -> None:
    hosts = ["127.3.29.11", "127.3.29.12"]
    out = tmp_path / "out"
    with served_site(tmp_path / "site", hosts, 40, seed=12) as spec:
        crawl = harvestman_cmd("crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.0.0.0/8",
                               "--scope", "any", "--delay", "0.05", "--log-json", "--workers", workers)
        done = subprocess.run(["bash", "-o", "pipefail", "-c", " ".join(crawl) + " | head -1"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 141 and done.stderr == "", done.stderr
        assert json.loads(done.stdout)["kind"] == "crawl_started"
        resumed = run_cli("crawl", "--out", str(out), "--resume", "--quiet")
        assert resumed.returncode == 0, resumed.stderr
    status = json.loads(run_cli("status", str(out), "--json").stdout)
    assert status["states"].get("unfetched", 0) == 0  # the resumed run fetched the rest
    assert status["states"]["fetched"] >= len(spec.reachable) - 2 * len(hosts)  # the broken links aside

"""Helpers for end-to-end crawl tests: run the CLI, read WARC files, compare with the server's log.

`run_cli_measured` runs the CLI as a child process and reports the peak resident memory of the crawl
as a whole (the sum over its process tree: the parent and its workers); `consistent_records` reads a
crawl database back after checking that the crawl left it sound and every URL decided.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvestman.model.records import UrlRecord, UrlState
from harvestman.store.sqlite_store import SqliteStore
from tests.support.proctree import TreePeak

MiB = 1024 * 1024
RSS_LIMIT = 600 * MiB  # docs/reliability.md: a crawl of hostile servers, all its processes, peaks below this
_POLL = 0.02  # seconds between checks on a running child


def harvestman_cmd(*args: str) -> list[str]:
    """The command line that runs the installed CLI with this interpreter."""
    return [sys.executable, "-m", "harvestman.app.cli", *args]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `harvestman ARGS` to completion and return what it printed."""
    return subprocess.run(harvestman_cmd(*args), capture_output=True, text=True, timeout=timeout, check=False)


def interrupt_cli(*args: str, ready: Callable[[int], bool], wait: float,
                  timeout: float) -> subprocess.CompletedProcess[str]:
    """Run `harvestman ARGS`, press Ctrl-C (SIGINT) once `ready(pid)` holds or `wait` seconds have
    passed, and return how it ended (stderr only; stdout is discarded)."""
    proc = subprocess.Popen(harvestman_cmd(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not ready(proc.pid):
            time.sleep(_POLL / 2)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)


def warc_responses(folder: Path) -> Counter[str]:
    """How many response records each target URI has in the WARC files of `folder`."""
    counts: Counter[str] = Counter()
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    counts[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return counts


def read_all_warcs(folder: Path) -> int:
    """Read every record of every WARC file to its end; return how many records there were."""
    total = 0
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                record.content_stream().read()
                total += 1
    return total


@dataclass(frozen=True, slots=True)
class MeasuredRun:
    """A finished CLI run: exit code, what it printed, wall time, and its process tree's peak RSS in bytes."""

    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    peak_rss: int


def run_cli_measured(*args: str, timeout: float = 120, prefix: Sequence[str] = ()) -> MeasuredRun:
    """Run `harvestman ARGS` (behind `prefix`, a wrapper that execs it) and measure its peak RSS.

    The peak is that of the summed RSS of the crawler and all its descendants, sampled from /proc
    every few tens of ms. The crawler's own VmHWM (its address space's peak, read at each sample) is
    a floor: it catches a spike of that one process between two samples. Not its ru_maxrss, which
    Linux makes at least this test process's RSS at fork (see proctree.peak_rss_kb). A wrapper must
    exec the CLI (not fork it), so that this floor is the crawler's own.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen([*prefix, *harvestman_cmd(*args)], stdout=out, stderr=err)
        deadline = started + timeout
        status = 0
        with TreePeak(proc.pid) as tree:
            while True:  # bounded by the deadline
                pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    proc.kill()
                    _pid, status, _usage = os.wait4(proc.pid, 0)
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    raise subprocess.TimeoutExpired(proc.args, timeout)
                time.sleep(_POLL)
        elapsed = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        return MeasuredRun(proc.returncode, out.read().decode(errors="replace"),
                           err.read().decode(errors="replace"), elapsed,
                           max(tree.kib, tree.root_kib) * 1024)


def consistent_records(out: Path) -> dict[str, UrlRecord]:
    """The crawl database's records by URL, after checking it is sound and that every URL was decided."""
    with SqliteStore.open_read_only(out / "crawl.db") as frontier:
        assert frontier.integrity_check() == "ok"
        assert frontier.in_flight() == 0  # no lease left behind
        records = {r.url: r for r in frontier.records()}
    for record in records.values():
        assert record.state != UrlState.UNFETCHED, record  # the crawl ran to its end: all decided
        if record.error_class and record.error_class != "truncated":
            assert record.error_message, record  # the reason is recorded with the class
        if record.state == UrlState.FETCHED:
            assert record.http_status, record
    return records

"""Helpers for end-to-end crawl tests: run the CLI, read WARC files, compare with the server's log."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator


def harvestman_cmd(*args: str) -> list[str]:
    """The command line that runs the installed CLI with this interpreter."""
    return [sys.executable, "-m", "harvestman.cli", *args]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `harvestman ARGS` to completion and return what it printed."""
    return subprocess.run(harvestman_cmd(*args), capture_output=True, text=True, timeout=timeout, check=False)


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

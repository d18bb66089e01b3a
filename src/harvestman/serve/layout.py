"""Where a served crawl keeps its files under ROOT/<id>/, and small atomic JSON files."""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

CRAWL_ID = re.compile(r"^[0-9a-f]{12}$")
JOB_ID = re.compile(r"^[0-9a-f]{12}$")


def new_id() -> str:
    """A new crawl or job id: 12 lowercase hex characters."""
    return secrets.token_hex(6)


class CrawlPaths:
    """The files of one served crawl."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.meta = self.folder / "serve.json"  # seeds, settings, created, pid, stop requests
        self.exit = self.folder / "exit.json"  # written by the runner when the crawl's process ends
        self.events = self.folder / "events.jsonl"  # the crawl's --log-json stream
        self.stderr = self.folder / "stderr.log"
        self.metrics = self.folder / "metrics.json"  # the run's figures each second (launch/metrics.py)
        self.crawl_dir = self.folder / "crawl"  # the crawl's own folder (crawl.db, warc/, ...)
        self.jobs = self.folder / "jobs"


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file."""
    value = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return value


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Replace `path` with `value` atomically (a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)

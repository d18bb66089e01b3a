"""Helpers for crawls shared through PostgreSQL: waiting for a crawl before a worker joins it."""

from __future__ import annotations

import subprocess
import time

from harvestman.model.errors import FrontierError
from harvestman.store.factory import open_store


def wait_for_settings(url: str, proc: subprocess.Popen[str] | subprocess.Popen[bytes],
                      timeout: float = 60.0) -> None:
    """Wait until the crawl `proc` has stored its settings in `url` (what a worker joins with)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            store = open_store(url, read_only=True)
        except FrontierError:  # not created yet
            time.sleep(0.05)
            continue
        try:
            if store.get_meta("settings") is not None:
                return
        finally:
            store.close()
        time.sleep(0.05)
    raise AssertionError("the crawl never stored its settings")

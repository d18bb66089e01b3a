"""The run's append-only logs: `events.jsonl` (every event) and `download.log` (one line per URL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from harvestman.events import Event


class RunJournal:
    """Appends events and per-URL outcomes to the output folder; both files survive resumes."""

    def __init__(self, out_dir: Path, json_stream: TextIO | None = None, *, events: bool = True) -> None:
        # A list download keeps only download.log; a crawl keeps both. Line-buffered appends: each
        # line is one write to a file opened O_APPEND, so worker processes never split a line.
        self._events = (
            open(out_dir / "events.jsonl", "a", encoding="utf-8", buffering=1) if events else None  # noqa: SIM115
        )
        self._downloads = open(out_dir / "download.log", "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._json_stream = json_stream

    def event(self, event: Event) -> None:
        """Record one event (and echo it as a JSON line when --log-json asked for it)."""
        line = json.dumps(event.to_json(), ensure_ascii=False)
        if self._events is not None:
            self._events.write(line + "\n")
        if self._json_stream is not None:
            # Flushed line by line: worker processes share the stream, and a line must reach it whole.
            self._json_stream.write(line + "\n")
            self._json_stream.flush()

    def download(self, url: str, ok: bool, reason: str = "") -> None:
        """One line in the seed's format: `URL|Success` or `URL|FAILED|reason`."""
        if ok:
            self._downloads.write(f"{url}|Success\n")
        else:
            # A reason must stay on one line, or the log stops being one line per URL.
            clean = " ".join(reason.split()) or "unknown error"
            self._downloads.write(f"{url}|FAILED|{clean}\n")

    def close(self) -> None:
        """Flush and close both files."""
        if self._events is not None:
            self._events.close()
        self._downloads.close()

"""Reading a crawl's events.jsonl from a byte offset: the SSE stream's source, and the figures only
the events carry (status codes, pages per second)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_READ = 1 << 20  # bytes read at once: a long log is sent in pieces
RATE_WINDOW = 5.0  # seconds of fetched events a running crawl's pages/s is measured over


@dataclass(frozen=True, slots=True)
class LogLine:
    """One event: its JSON (parsed, and as written), and the offset just after it (the SSE id a client
    resumes from)."""

    event: dict[str, Any]
    end: int
    text: str


def read_events(path: Path, offset: int, max_bytes: int = MAX_READ) -> tuple[list[LogLine], int]:
    """The whole lines after `offset` (a line still being written waits for its newline), and the
    offset after the last of them."""
    try:
        with path.open("rb") as log:
            log.seek(offset)
            data = log.read(max_bytes)
    except FileNotFoundError:
        return [], offset
    lines: list[LogLine] = []
    start = 0
    while True:
        end = data.find(b"\n", start)
        if end < 0:
            break
        raw = data[start:end]
        start = end + 1
        try:
            event = json.loads(raw)
        except ValueError:  # not an event (a stray print): skipped
            continue
        if isinstance(event, dict) and "kind" in event:
            lines.append(LogLine(event, offset + start, raw.decode("utf-8", errors="replace")))
    return lines, offset + start


@dataclass(slots=True)
class _Tally:
    offset: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    fetched: int = 0
    first: float = 0.0
    last: float = 0.0
    recent: deque[float] = field(default_factory=deque)


class EventFigures:
    """Status codes and pages/s of each crawl, tallied from its log incrementally (each call reads
    only what was appended since the last)."""

    def __init__(self) -> None:
        self._tallies: dict[Path, _Tally] = {}
        self._lock = threading.Lock()

    def figures(self, path: Path, running: bool) -> tuple[dict[str, int], float]:
        """(responses by HTTP status, pages per second: over the last seconds while running, over the
        whole run after)."""
        with self._lock:
            tally = self._tallies.setdefault(path, _Tally())
            try:
                if path.stat().st_size < tally.offset:  # a new log (the crawl was deleted and made again)
                    tally = self._tallies[path] = _Tally()
            except FileNotFoundError:
                return {}, 0.0
            while True:
                lines, tally.offset = read_events(path, tally.offset)
                for line in lines:
                    self._count(tally, line.event)
                if not lines:
                    break
            statuses = dict(tally.statuses)
            if running:
                now = time.time()
                while tally.recent and tally.recent[0] < now - RATE_WINDOW:
                    tally.recent.popleft()
                rate = len(tally.recent) / RATE_WINDOW
            else:
                span = tally.last - tally.first
                rate = tally.fetched / span if span > 0 else float(tally.fetched)
        return statuses, round(rate, 2)

    @staticmethod
    def _count(tally: _Tally, event: dict[str, Any]) -> None:
        if event.get("kind") != "fetched":
            return
        when = float(event.get("time", 0.0))
        tally.statuses[str(event.get("status", 0))] += 1
        tally.fetched += 1
        tally.first = tally.first or when
        tally.last = max(tally.last, when)
        tally.recent.append(when)
        if len(tally.recent) > 100_000:
            tally.recent.popleft()

    def forget(self, path: Path) -> None:
        """Drop a deleted crawl's tally."""
        with self._lock:
            self._tallies.pop(path, None)

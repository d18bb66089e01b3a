"""A crawl's runs, read back from its events logs (store/journal.py writes them): when each ran and
what it fetched, so that a crawl resumed or re-crawled days later is measured over the time it ran,
not across the idle days between.

A run begins at a `crawl_started` line and ends at its `crawl_finished` (worker processes write one
each: the run ends when the last of them has finished). A run killed before its end ends at its last
line; a `crawl_started` that comes more than RESUME_GAP seconds after the open run's last line is
the next run's (a `--resume` after a kill), not one more worker of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

RESUME_GAP = 5.0  # seconds: worker processes start within this of each other and of their run's lines
_TIME = re.compile(rb'"time": ([0-9.e+-]+)')
_BYTES = re.compile(rb'"bytes": (\d+)')
_STARTED = b'{"kind": "crawl_started"'
_FINISHED = b'{"kind": "crawl_finished"'
_FETCHED = b'{"kind": "fetched"'


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a crawl: its span and its responses (304s among them) and their bytes."""

    started: float
    ended: float
    responses: int = 0
    not_modified: int = 0
    bytes: int = 0

    @property
    def seconds(self) -> float:
        """How long it ran."""
        return max(0.0, self.ended - self.started)


@dataclass(slots=True)
class _Open:
    started: float
    last: float  # the latest end line's time
    workers: int = 1
    responses: int = 0
    not_modified: int = 0
    bytes: int = 0

    def closed(self, ended: float) -> Run:
        return Run(self.started, ended, self.responses, self.not_modified, self.bytes)


def read_runs(logs: Iterable[Path]) -> list[Run]:
    """The runs the events logs tell of (each log a run or more: a crawl's, a segment's), by start;
    lines are read as written, a JSON parser for none of them (a log holds two lines a page)."""
    runs: list[Run] = []
    for path in logs:
        try:
            with path.open("rb") as log:
                runs.extend(_runs_in(log))
        except FileNotFoundError:
            continue
    return sorted(runs, key=lambda r: r.started)


def _time(line: bytes) -> float | None:
    found = _TIME.search(line, 0, 64)
    return float(found.group(1)) if found else None


def _runs_in(lines: Iterable[bytes]) -> list[Run]:
    """The runs of one log. Only the start and end lines' times are read (and the line before a
    start or the end, where a killed run ended): a page's line is only counted."""
    runs: list[Run] = []
    run: _Open | None = None
    previous = b""  # the last event line: a killed run ended at its time
    for line in lines:
        if line.startswith(_FETCHED):
            if run is None:  # lines before any start (a log older than its runs' start lines)
                run = _Open(_time(line) or 0.0, 0.0, workers=0)
            run.responses += 1
            run.not_modified += b'"status": 304' in line
            size = _BYTES.search(line)
            run.bytes += int(size.group(1)) if size else 0
        elif line.startswith(_STARTED) and (when := _time(line)) is not None:
            last = _time(previous) or when
            if run is not None and when - last > RESUME_GAP:  # the open run was killed
                runs.append(run.closed(last))
                run = None
            if run is None:
                run = _Open(when, 0.0, workers=0)
            run.workers += 1
            run.started = min(run.started, when)
        elif line.startswith(_FINISHED) and run is not None and (when := _time(line)) is not None:
            run.last = max(run.last, when)
            run.workers -= 1
            if run.workers <= 0:
                runs.append(run.closed(run.last))
                run = None
        if line.endswith(b"}\n"):  # a whole event (not a line cut by a kill)
            previous = line
    if run is not None:
        runs.append(run.closed(max(run.last, _time(previous) or run.started)))
    return runs

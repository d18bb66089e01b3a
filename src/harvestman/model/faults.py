"""Crash points for the crash-safety tests: SIGKILL this process at a chosen moment of its work.

`HARVESTMAN_CRASH_AT=point:N` (read once, at import) kills the process the N-th time it reaches
`crash_point("point")`. Unset, `crash_point` is a function that does nothing and `ARMED` is False.
The points in use: `fetched-before-commit` (engine.py), `warc-mid-record` (warc.py) and
`db-mid-commit` (sqlite_frontier.py). Worker processes inherit the variable and count on their own.
"""

from __future__ import annotations

import os
import signal

ENV_VAR = "HARVESTMAN_CRASH_AT"


def parse(spec: str) -> tuple[str, int]:
    """`point:N` as (point, N); a ValueError when it is not of that form or N < 1."""
    point, sep, count = spec.rpartition(":")
    if not point or not sep or not count.isdigit() or int(count) < 1:
        raise ValueError(f"{ENV_VAR} wants POINT:N with N >= 1, got {spec!r}")
    return point, int(count)


_SPEC = os.environ.get(ENV_VAR, "")
_POINT, _AT = parse(_SPEC) if _SPEC else ("", 0)
ARMED = bool(_POINT)  # lets a caller skip work done only to set up a crash (see warc.py)
_reached = 0


def _crash_point(name: str) -> None:
    """Kill this process, as `kill -9` would, on the N-th time the armed point is reached."""
    global _reached
    if name != _POINT:
        return
    _reached += 1
    if _reached == _AT:
        os.kill(os.getpid(), signal.SIGKILL)


def _no_crash_point(name: str) -> None:
    """Nothing armed: a call that costs one function call."""


crash_point = _crash_point if ARMED else _no_crash_point

"""Whether a process recorded in a file is still the one that was started (pids are reused)."""

from __future__ import annotations

import os


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); None when gone
    or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def alive(pid: int, started: int | None) -> bool:
    """Whether process `pid` runs and is the one that started at `started`."""
    if pid <= 0:
        return False
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def signal_if_alive(pid: int, started: int | None, sig: int) -> bool:
    """Send `sig` to the process if it is still the one recorded; whether it was sent."""
    if not alive(pid, started):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True

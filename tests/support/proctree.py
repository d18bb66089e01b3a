"""Memory of a process tree, read from /proc: for tests and benchmarks that run the crawler as a child.

The crawler runs a parent and worker processes, so its memory is the sum over the tree, which no
rusage gives (ru_maxrss is one process's peak). `TreePeak` samples that sum in a thread:

    with TreePeak(proc.pid) as peak:
        proc.wait()
    print(peak.kib)
"""

from __future__ import annotations

import os
import threading
from types import TracebackType

SAMPLE_INTERVAL = 0.02  # seconds; a sample reads every /proc/<pid>/stat, about 1 ms of CPU


def _stats() -> dict[int, list[bytes]]:
    """Each process's /proc/<pid>/stat fields after the command name, by pid."""
    stats: dict[int, list[bytes]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                # The command name may hold spaces and ')': the fields start after its last ')'.
                stats[int(entry)] = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited between listdir and open
    return stats


def _tree(root_pid: int, stats: dict[int, list[bytes]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)  # fields[1]: the parent pid
    tree, stack = [], [root_pid]
    while stack:  # bounded: a pid has one parent, so each is visited once
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, []))
    return tree


def process_tree(root_pid: int) -> list[int]:
    """`root_pid` and every process descended from it, from one pass over /proc."""
    return _tree(root_pid, _stats())


def tree_rss_kb(root_pid: int) -> int:
    """Resident memory of `root_pid` and all its descendants, in KiB (from /proc)."""
    stats = _stats()
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    # fields[21]: rss in pages
    return sum(int(stats[pid][21]) * page_kib for pid in _tree(root_pid, stats) if pid in stats)


def peak_rss_kb(pid: int) -> int:
    """The peak resident memory of `pid`'s own address space (VmHWM), in KiB; 0 once it is gone.

    Not ru_maxrss: Linux carries the high-water mark of the process image an exec replaced (for a
    child of this test process, this test process's own RSS at fork) into ru_maxrss, so a test
    process grown large makes every child look as large. VmHWM belongs to the new image alone.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreePeak:
    """The largest `tree_rss_kb(pid)` seen while the context is open, sampled every `interval` seconds,
    and the root process's own peak (`root_kib`, its VmHWM), which catches a spike between samples.

    The thread never waits for the process, so the caller stays free to reap it however it likes.
    """

    def __init__(self, pid: int, interval: float = SAMPLE_INTERVAL) -> None:
        self.pid = pid
        self.interval = interval
        self.kib = 0
        self.root_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tree-rss-{pid}", daemon=True)

    def _run(self) -> None:
        while True:  # bounded by the owner, who sets _stop on exit
            self.kib = max(self.kib, tree_rss_kb(self.pid))
            self.root_kib = max(self.root_kib, peak_rss_kb(self.pid))
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

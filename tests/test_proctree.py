"""The memory measurement of tests/support/proctree.py: a child is measured as itself, however large
this test process has grown (Linux's ru_maxrss would report this process's size at fork)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.proctree import TreePeak


def test_a_child_of_a_large_process_is_measured_as_itself() -> None:
    ballast = bytearray(300 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):  # touched, so resident
        ballast[i] = 1
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    with TreePeak(child.pid) as peak:
        child.wait()
    assert 0 < peak.root_kib < 100 * 1024 and 0 < peak.kib < 100 * 1024, (peak.root_kib, peak.kib)
    del ballast

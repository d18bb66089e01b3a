"""The atheris harnesses in fuzz/ run briefly from their seed corpora: a harness that no longer runs,
or a crash on the seeds (which include every crash found so far) and their first mutations, fails here.
Long runs are by hand: see fuzz/README.md.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ_DIR = Path(__file__).resolve().parent.parent / "fuzz"
# Runs per harness, about 2-5 s each on one core; a fixed -seed makes the runs the same every time.
RUNS = {"urls": 20_000, "robots": 1_500, "parse": 5_000, "sitemaps": 3_000}
MAX_TOTAL_TIME = 15  # seconds: the cap on a slow machine, whichever of the two comes first

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None,
    reason="atheris is not installed (wheels for Linux x86_64, CPython 3.11-3.13: pip install atheris)",
)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fuzz_harness_runs_without_a_crash(name: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(FUZZ_DIR / "seeds" / name, corpus)  # libFuzzer adds to it: never the checked-in copy
    command = [
        sys.executable, str(FUZZ_DIR / f"fuzz_{name}.py"),
        f"-runs={RUNS[name]}", f"-max_total_time={MAX_TOTAL_TIME}", "-seed=1", "-timeout=10",
        "-rss_limit_mb=2048", f"-artifact_prefix={tmp_path}/", str(corpus),
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Done " in done.stderr, done.stderr[-4000:]
    assert not list(tmp_path.glob("crash-*"))

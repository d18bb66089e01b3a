"""The atheris harnesses in fuzz/ run briefly from their seed corpora: a harness that no longer runs,
or a crash on the seeds (which include every crash found so far) and their first mutations, fails here.
The differential ones (fuzz_parse.py, fuzz_warc.py) must have driven the compiled core, and their
compare step (fuzz/differential.py) must catch a core that answers differently from Python.
Long runs are by hand: see fuzz/README.md.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fuzz.differential import CoreMismatch, compare_parse, core_in_use
from harvestman.crawl import parse
from harvestman.model.core import core_name
from harvestman.store import warc

FUZZ_DIR = Path(__file__).resolve().parent.parent / "fuzz"
# Runs per harness, about 2-5 s each on one core; a fixed -seed makes the runs the same every time.
RUNS = {"urls": 20_000, "robots": 1_500, "parse": 3_000, "sitemaps": 3_000, "warc": 1_000}
DIFFERENTIAL = ("parse", "warc")
MAX_TOTAL_TIME = 15  # seconds: the cap on a slow machine, whichever of the two comes first

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None,
    reason="atheris is not installed (wheels for Linux x86_64, CPython 3.11-3.13: pip install atheris)",
)


def _needs_the_core() -> None:
    # The differential part is the point of these harnesses: in CI (core built) this skip is a failure.
    if not core_in_use():
        pytest.skip(f"the compiled core is not in use ({core_name()}): pip install -e . with Rust")


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
    if name in DIFFERENTIAL:
        if not core_in_use():
            assert "no compiled core in use, Python only" in done.stderr, done.stderr[-4000:]
            _needs_the_core()
        # The tally's last line: the core answered inputs, each compared with Python.
        tallies = re.findall(rf"differential {name}: (\d+) inputs, (\d+) answered by the core", done.stderr)
        assert tallies and int(tallies[-1][1]) >= 100, done.stderr[-4000:]


# -- the compare step: a core that answers differently once is caught, by the helper and the harnesses --

def _harness(name: str) -> Any:
    return importlib.import_module(f"fuzz.fuzz_{name}")


class _LyingParser:
    """The core's parser, with the title of its answers changed."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def parse(self, text: str, url: str, max_links: int) -> Any:
        fields = self.real.parse(text, url, max_links)
        return None if fields is None else ("not the title", *fields[1:])


class _LyingWriter:
    """The core's WARC writer, with one byte of its answers changed."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def fetch(self, *args: Any) -> bytes | None:
        data: bytes | None = self.real.fetch(*args)
        return None if data is None else data[:-1] + bytes([data[-1] ^ 1])


def test_a_parse_that_differs_is_a_crash_with_both_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_the_core()
    page = "<title>the title</title><a href=/x>x</a>"
    assert compare_parse(page, "http://h.test/", 10) is True
    monkeypatch.setattr(parse, "_core_parser", _LyingParser(parse._core_parser))
    with pytest.raises(CoreMismatch) as caught:
        compare_parse(page, "http://h.test/", 10)
    assert "title='not the title'" in str(caught.value) and "title='the title'" in str(caught.value)
    seed = (FUZZ_DIR / "seeds" / "parse" / "page").read_bytes()
    with pytest.raises(CoreMismatch):
        _harness("parse").TestOneInput(seed)


def test_warc_records_that_differ_are_a_crash_with_both_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_the_core()
    seeds = sorted((FUZZ_DIR / "seeds" / "warc").iterdir())
    harness = _harness("warc")
    for seed in seeds:
        harness.TestOneInput(seed.read_bytes())
    assert harness.TALLY.answered >= 1  # a seed the core writes
    monkeypatch.setattr(warc, "_core_records", _LyingWriter(warc._core_records))
    with pytest.raises(CoreMismatch) as caught:
        for seed in seeds:
            harness.TestOneInput(seed.read_bytes())
    assert "bytes differ" in str(caught.value) and str(caught.value).count("WARC/1.1") >= 2

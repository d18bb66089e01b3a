"""The README's Python examples run as written, against the bundled demo web, so they cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def test_the_readme_has_python_examples() -> None:
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_a_readme_example_runs_as_written(code: str, tmp_path: Path) -> None:
    # Against the demo web only: a README example that needs the internet cannot be checked here.
    assert "demo_web()" in code
    assert not re.search(r"https?://(?!site-[abc]\.demo)", code)
    # A child process: the example runs as a user's script would, in a folder of its own, with a bound.
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines, "the example printed nothing"
    # What the library example shows: pages fetched, a robots.txt refusal, a 404 that is not ok, and a
    # crawl that reached all three demo sites.
    if "harvestman.download(" in code:
        assert any(re.match(r"http://site-a\.demo:\d+/ 200 \d+$", line) for line in lines), lines
        assert any(line.endswith("/private/ledger.html failed: robots") for line in lines), lines
        assert any(line.endswith("/missing.html failed: HTTP 404") for line in lines), lines
    if "harvestman.Crawler(" in code:
        pattern = re.compile(r"http://(site-[abc])\.demo:\d+/\S* ")
        crawled = {m.group(1) for line in lines if (m := pattern.match(line))}
        assert crawled == {"site-a", "site-b", "site-c"}, lines
        assert (tmp_path / "crawl-dir" / "crawl.db").is_file()

"""The README's Python examples run as written (and again), against the bundled demo web, so they cannot
rot; a crawl folder that holds a crawl is refused in the library's words, as the README says."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import harvestman
from harvestman.app.demo import demo_web

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
        stored = Path(lines[-1].removeprefix("crawl stored in "))
        assert [path.parent.name for path in tmp_path.glob("crawl-*/crawl.db")] == [stored.name]


def _library_blocks() -> list[str]:
    return [code for code in BLOCKS if "harvestman.Crawler(" in code]


def test_the_library_example_runs_again_in_the_same_folder(tmp_path: Path) -> None:
    # A user runs the example, then runs it again where they stand: the second run crawls as the first did.
    (code,) = _library_blocks()
    for run in (1, 2):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, (run, done.stderr)
        assert "Traceback" not in done.stderr
        assert re.search(r"^http://site-c\.demo:\d+/\S* ", done.stdout, re.MULTILINE), (run, done.stdout)
    assert len(list(tmp_path.glob("crawl-*/crawl.db"))) == 2


def test_a_new_crawl_where_one_is_stored_is_refused_in_the_librarys_words(tmp_path: Path) -> None:
    with demo_web() as web:
        config = harvestman.CrawlConfig(seeds=web.seeds, out_dir=tmp_path / "crawl", max_pages=3, workers=1,
                                        quiet=True, **web.options)
        assert list(harvestman.Crawler(config))
        with pytest.raises(harvestman.HarvestmanError) as refused:
            list(harvestman.Crawler(config))
        # What the library is given is a setting, not a flag of the command line.
        message = str(refused.value)
        assert message.startswith(f"{tmp_path / 'crawl'} already holds a crawl")
        assert "CrawlConfig(resume=True)" in message and "out_dir" in message, message
        assert "--" not in message, message
        # And the setting it names does what it says.
        list(harvestman.Crawler(dataclasses.replace(config, resume=True)))


def test_the_set_up_makes_a_virtual_environment_and_names_the_python_it_needs() -> None:
    """Debian's Python refuses `pip install .` outside a virtual environment (PEP 668), and harvestman
    is not on PyPI: the set-up makes one first, says the version pyproject.toml requires, and every
    extra is installed from the checkout."""
    pyproject = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))
    version = pyproject["project"]["requires-python"].removeprefix(">=")
    text = README.read_text(encoding="utf-8")
    set_up = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^```sh\n(.*?)^```", set_up, re.MULTILINE | re.DOTALL)[0]
    assert commands.index("-m venv") < commands.index("pip install .")
    assert f"Python {version} or newer" in set_up
    docs = README.parent / "docs"
    for doc in (README, *sorted(docs.glob("*.md")), docs / "harvestman.example.toml"):
        assert not re.search(r"pip install '?harvestman\[", doc.read_text(encoding="utf-8")), doc

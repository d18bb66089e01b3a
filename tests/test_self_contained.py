"""The repository stands on its own: a clone anywhere runs its tests and reads its docs.

Nothing in it may name a file outside it (an absolute path such as /work/..., a sibling folder
such as ../shared, or a catalogue like SOMETHING.md that is not in the repository), every test that
docs/reliability.md names exists, and the vendored conformance data is byte for byte what its
README says it is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from tests.support.conformance import DATA_DIR

ROOT = Path(__file__).resolve().parent.parent
TEXT_SUFFIXES = frozenset({".py", ".md", ".toml", ".cfg", ".txt", ".sh", ".yml", ".yaml", ".ini"})
# Folders that are not the project's own text: caches, virtual environments, third-party data and
# fuzzing corpora (arbitrary bytes by design).
SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".mypy_cache",
                          ".ruff_cache", ".hypothesis", "build", "dist", "seeds", "demo_site"})
OUTSIDE = re.compile(r"(?<![\w.-])/(?:work|home|mnt|srv)/[\w.-]+|\.\./shared\b|(?<![\w/.-])shared/[\w.-]+")
CAPS_DOC = re.compile(r"\b([A-Z][A-Z_]+\.md)\b")


def _project_text_files() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if DATA_DIR in path.parents or path == Path(__file__).resolve() or not path.is_file():
            continue
        if path.suffix in TEXT_SUFFIXES or rel.parts[0] == ".ci":
            yield path


def test_no_file_names_a_path_outside_the_repository() -> None:
    files = list(_project_text_files())
    assert any(p.name == "test_urls.py" for p in files) and any(p.parent.name == ".ci" for p in files)
    present = {p.name for p in ROOT.rglob("*.md") if not (set(p.relative_to(ROOT).parts) & SKIPPED_DIRS)}
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            found += [f"{where}: {m.group(0)}" for m in OUTSIDE.finditer(line)]
            found += [f"{where}: {m.group(1)} is not in the repository" for m in CAPS_DOC.finditer(line)
                      if m.group(1) not in present]
    assert not found, "\n".join(found)


def test_vendored_conformance_data_matches_its_readme() -> None:
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([\w.]+\.json)` \|.*\| `([0-9a-f]{64})` \|$", readme, re.MULTILINE))
    assert set(rows) == {p.name for p in DATA_DIR.glob("*.json")} and rows
    for name, digest in rows.items():
        assert hashlib.sha256((DATA_DIR / name).read_bytes()).hexdigest() == digest, name
    for name in ("LICENSE.Apache-2.0", "LICENSE.BSD-3-Clause"):
        assert name in readme and (DATA_DIR / name).is_file()


def test_every_test_docs_reliability_names_exists() -> None:
    doc = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?", doc))
    assert len(named) > 50
    missing = []
    for path, test in sorted(named):
        source = ROOT / path
        if not source.is_file():
            missing.append(path)
            continue
        defined = re.search(rf"^(?:async )?def {test}\(", source.read_text(encoding="utf-8"), re.MULTILINE)
        if test and not defined:
            missing.append(f"{path}::{test}")
    assert not missing, missing

"""No SQL statement is written in both backends' modules in the same words (issue 35): a statement
both run is written once (store/sql_shared.py) and rendered for each dialect."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harvestman.model.records import NewUrl
from harvestman.store.sqlite_store import SqliteStore

STORE = Path(__file__).resolve().parents[1] / "src" / "harvestman" / "store"
SQLITE = ("sqlite_store.py", "sqlite_file.py", "sqlite_bulk.py")
POSTGRES = ("postgres.py", "postgres_db.py", "postgres_sql.py")
_VERBS = ("select ", "insert ", "update ", "delete ", "with ", "create ", "alter ")

# Statements still written on both sides (normalized, as _normalize makes them): to shrink to nothing.
ALLOWED: frozenset[str] = frozenset()

# Dialect spellings made alike: (pattern, what both sides' spelling becomes).
_ALIKE = (
    (r"%\(\w+\)s|%s|\?\d*|:[a-z_]\w*", "?"),  # placeholders
    (r"::[a-z0-9_]+(\[\])?", ""),  # PostgreSQL casts
    (r"\binsert or (ignore|replace) into\b", "insert into"),
    (r"\bon conflict\b.*$", ""),  # upserts: what follows is the dialect's way of saying the same
    (r"\bgreatest\(", "max("),
    (r"\bleast\(", "min("),
    (r"\btrue\b", "1"),
    (r"\bfalse\b", "0"),
    (r"\b(\w+) = 1\b", r"\1"),  # SQLite's booleans, and PostgreSQL's `= TRUE`
    (r"'infinity'|9e999", "inf"),
    (r"\s+", " "),
    (r"\s*([(),=<>])\s*", r"\1"),
)


def _normalize(sql: str) -> str:
    text = sql.strip().lower()
    for pattern, repl in _ALIKE:
        text = re.sub(pattern, repl, text)
    return text.strip()


def _literals(node: ast.AST) -> list[str]:
    """The string literals under `node` but docstrings; an f-string's text with each {...} as {}."""
    docs = {id(s.value) for s in ast.walk(node)
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)}
    out: list[str] = []
    for sub in ast.walk(node):
        if id(sub) in docs:
            continue
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            out.append(sub.value)
        elif isinstance(sub, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in sub.values))
    return out


def statements(modules: tuple[str, ...]) -> dict[str, str]:
    """normalized statement -> where it is written, over the SQL string literals of `modules`."""
    found: dict[str, str] = {}
    for name in modules:
        tree = ast.parse((STORE / name).read_text(encoding="utf-8"))
        for text in _literals(tree):
            for part in text.split(";"):
                norm = _normalize(part)
                if norm.startswith(_VERBS):
                    found.setdefault(norm, name)
    return found


def duplicated() -> dict[str, tuple[str, str]]:
    sqlite, postgres = statements(SQLITE), statements(POSTGRES)
    return {s: (sqlite[s], postgres[s]) for s in sqlite.keys() & postgres.keys()}


def test_the_extraction_sees_both_backends() -> None:
    # Guards the check below against passing because it read nothing.
    assert len(statements(SQLITE)) > 30 and len(statements(POSTGRES)) > 30


def test_no_statement_is_written_in_both_backends() -> None:
    both = duplicated()
    new = {s: where for s, where in both.items() if s not in ALLOWED}
    assert not new, "\n".join(f"{a} and {b}: {s}" for s, (a, b) in sorted(new.items()))
    stale = ALLOWED - both.keys()
    assert not stale, f"no longer duplicated, drop from ALLOWED: {sorted(stale)}"


def test_a_new_column_is_one_migration_a_backend(tmp_path: Path, postgres_url: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema version past the one the schema creates is its migration alone: a new database
    runs it too (a new column needs no second edit in the CREATE TABLE)."""
    pytest.importorskip("psycopg")
    from harvestman.store import postgres_db, postgres_sql, sqlite_file
    from harvestman.store.postgres import PostgresStore

    sqlite_next, pg_next = sqlite_file.SCHEMA_VERSION + 1, postgres_sql.SCHEMA_VERSION + 1
    monkeypatch.setitem(sqlite_file._MIGRATIONS, sqlite_next,
                        ("ALTER TABLE urls ADD COLUMN probe TEXT NOT NULL DEFAULT 'x'",))
    monkeypatch.setattr(sqlite_file, "SCHEMA_VERSION", sqlite_next)
    monkeypatch.setitem(postgres_sql.MIGRATIONS, pg_next,
                        "ALTER TABLE urls ADD COLUMN IF NOT EXISTS probe TEXT NOT NULL DEFAULT 'x'")
    monkeypatch.setattr(postgres_db, "SCHEMA_VERSION", pg_next)

    with SqliteStore(tmp_path / "crawl.db", host_of=lambda u: u.split("/")[2]) as lite:
        lite.add([NewUrl("http://a.test/", "a.test")])
        assert lite.get_meta("schema_version") == str(sqlite_next)
        assert lite._rows("SELECT probe FROM urls") == [("x",)]
    with PostgresStore(postgres_url, host_of=lambda u: u.split("/")[2]) as pg:
        pg.add([NewUrl("http://a.test/", "a.test")])
        assert pg.get_meta("schema_version") == str(pg_next)
        assert pg._rows("SELECT probe FROM urls") == [("x",)]

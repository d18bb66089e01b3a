"""open_store picks the backend from a location; `--db` puts a crawl's state where the user says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvestman.model.errors import ConfigError, FrontierError
from harvestman.net.urls import without_password
from harvestman.store.factory import is_postgres, open_store, sqlite_path, store_location
from harvestman.store.frontier import Store
from harvestman.store.sqlite_store import SqliteStore
from tests.support.crawlcheck import run_cli
from tests.support.httpserver import RouteServer
from tests.support.stores import host_of, nu

HTML = {"Content-Type": "text/html"}


def test_locations() -> None:
    assert store_location("", Path("out")) == "out/crawl.db"
    assert store_location("/data/x.db", Path("out")) == "/data/x.db"
    assert sqlite_path("sqlite:///data/x.db") == Path("/data/x.db")
    assert sqlite_path("relative/x.db") == Path("relative/x.db")
    assert is_postgres("postgresql://u@h:5432/db") and is_postgres("postgres://h/db")
    assert not is_postgres("postgresql.db") and not is_postgres("/tmp/postgresql://x")
    secret = "postgresql://crawler:s3cret@db.test:5432/crawl"
    assert without_password(secret) == "postgresql://crawler:***@db.test:5432/crawl"
    assert without_password("postgresql://crawler@db.test/crawl") == "postgresql://crawler@db.test/crawl"


@pytest.mark.parametrize("location", ["mysql://h/db", "sqlite://relative.db", "http://example.test/"])
def test_unknown_locations_are_refused_clearly(location: str) -> None:
    with pytest.raises(ConfigError, match="unknown crawl database"):
        open_store(location)


def test_sqlite_by_path_and_by_url(tmp_path: Path) -> None:
    for location in (str(tmp_path / "a.db"), f"sqlite://{tmp_path / 'b.db'}"):
        store = open_store(location, host_of=host_of)
        try:
            assert isinstance(store, SqliteStore) and isinstance(store, Store)
            store.add([nu("http://a.test/")])
        finally:
            store.close()
        reader = open_store(location, read_only=True)
        try:
            assert reader.pending() == 1
        finally:
            reader.close()
    with pytest.raises(FrontierError, match="no crawl database"):
        open_store(str(tmp_path / "missing.db"), read_only=True)


def test_crawl_status_and_export_with_db_outside_the_folder(tmp_path: Path) -> None:
    db = tmp_path / "state" / "my.db"
    db.parent.mkdir()
    out = tmp_path / "out"
    routes = {"/": (200, HTML, b'<a href="/a">a</a>'), "/a": (200, HTML, b"<p>a")}
    with RouteServer(routes, host="127.5.3.1") as srv:
        done = run_cli("crawl", srv.url("/"), "--out", str(out), "--db", str(db),
                       "--allow-net", "127.5.0.0/16", "--workers", "1", "-q")
        assert done.returncode == 0, done.stderr
    assert db.is_file() and not (out / "crawl.db").exists()
    status = run_cli("status", str(out), "--db", f"sqlite://{db}", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["states"]["fetched"] == 2
    exported = run_cli("export", str(out), "--db", str(db))
    assert exported.returncode == 0 and "2 records" in exported.stdout
    refused = run_cli("status", str(out))  # the folder alone holds no crawl: said, no traceback
    assert refused.returncode == 2 and "holds no crawl" in refused.stderr

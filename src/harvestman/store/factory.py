"""Open a crawl's store from a location: a path or sqlite:///PATH (the default), or postgresql://..."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harvestman.model.config import DB_OUTAGE_LIMIT
from harvestman.model.errors import ConfigError, FrontierError
from harvestman.net.urls import without_password
from harvestman.store.frontier import Store
from harvestman.store.sqlite_store import SqliteStore

DEFAULT_DB_NAME = "crawl.db"  # the default store: this file in the crawl's output folder
POSTGRES_SCHEMES = ("postgresql", "postgres")


def store_location(db: str, out_dir: Path) -> str:
    """The location a crawl's store is at: `db` as given, or DIR/crawl.db when it is empty."""
    return db or str(Path(out_dir) / DEFAULT_DB_NAME)


def is_postgres(location: str) -> bool:
    """Whether `location` names a PostgreSQL database."""
    return location.split(":", 1)[0].lower() in POSTGRES_SCHEMES and "://" in location


def sqlite_path(location: str) -> Path:
    """The file a SQLite location names (a plain path, or sqlite:///PATH)."""
    if "://" not in location:
        return Path(location)
    scheme, rest = location.split("://", 1)
    if scheme.lower() != "sqlite" or not rest.startswith("/"):
        raise ConfigError(
            f"unknown crawl database {without_password(location)!r}: give a path, sqlite:///PATH or "
            "postgresql://USER@HOST:PORT/DATABASE"
        )
    return Path(rest)


def check_location(location: str) -> None:
    """A ConfigError, before anything is created, when `location` names no database harvestman can
    open here (an unknown scheme; PostgreSQL without psycopg installed)."""
    if is_postgres(location):
        import harvestman.store.postgres  # noqa: F401  # raises the ConfigError naming the install

    else:
        sqlite_path(location)


def open_store(
    location: str,
    *,
    host_of: Callable[[str], str] = str,
    per_host: int = 2,
    delay: float = 0.0,
    lease_seconds: float = 300.0,
    read_only: bool = False,
    worker: tuple[int, int] = (0, 1),
    ordered: bool = False,
    outage_limit: float = DB_OUTAGE_LIMIT,
) -> Store:
    """Open (creating it when new and not `read_only`) the store at `location`.

    `worker` is (index, count) of the process among those that share the crawl on this machine;
    how they divide the work is the backend's business. Readers (status, export) pass `read_only`.
    `ordered`: leases take the ready hosts by their best URL's priority (a crawl not bfs).
    `outage_limit`: seconds a lost PostgreSQL connection is tried again before DatabaseUnavailable.
    """
    if is_postgres(location):
        # Imported here only: psycopg is an optional dependency (a ConfigError says how to get it).
        from harvestman.store.postgres import PostgresStore

        # Every process leases from every host there (SKIP LOCKED), so `worker` is not needed.
        return PostgresStore(location, per_host=per_host, delay=delay, lease_seconds=lease_seconds,
                             host_of=host_of, read_only=read_only, ordered=ordered,
                             outage_limit=outage_limit)
    path = sqlite_path(location)
    if read_only and not path.is_file():
        raise FrontierError(f"no crawl database at {path}")
    return SqliteStore(path, per_host=per_host, delay=delay, lease_seconds=lease_seconds,
                       host_of=host_of, read_only=read_only, shard=worker, ordered=ordered)

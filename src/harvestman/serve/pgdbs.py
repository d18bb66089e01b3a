"""`harvestman serve --db postgresql://...`: each crawl gets a database of its own on that server."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from harvestman.model.errors import ConfigError, StorageError
from harvestman.store.factory import is_postgres


class PostgresCrawls:
    """Makes and drops the per-crawl databases `harvestman_<id>` beside the database `url` names."""

    def __init__(self, url: str) -> None:
        if not is_postgres(url):
            raise ConfigError("--db wants a PostgreSQL URL: postgresql://USER@HOST/DB")
        self.admin_url = url

    def url(self, name: str) -> str:
        """The URL of database `name` on the same server, with the same user and options."""
        parts = urlsplit(self.admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))

    def create(self, crawl_id: str) -> str:
        """A new empty database for crawl `crawl_id`; its name."""
        name = f"harvestman_{crawl_id}"  # crawl ids are 12 hex characters: a safe identifier
        self._execute(f'CREATE DATABASE "{name}"')
        return name

    def drop(self, name: str) -> None:
        """Drop a crawl's database (its connections closed first)."""
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _execute(self, sql: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "--db postgresql://... needs psycopg: pip install '.[postgres]' (in harvestman's folder)"
            ) from None
        try:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(sql.encode())
        except psycopg.Error as exc:
            raise StorageError(f"PostgreSQL: {exc}".strip()) from None

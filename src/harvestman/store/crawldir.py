"""A crawl folder: where each part of a crawl lives, its database opened one way, its settings.

Every command that works on a crawl after its first run (`--resume`, `recrawl`, the cycle's steps,
`worker`, `replay`, `index`, `export`, `status`, `serve`) names the crawl by its folder (and `--db`
where the database is elsewhere) and reaches the parts through a `CrawlDir`, so a part (a WARC file
of a segment, a setting of the first run) cannot be found by one command and missed by the next.

The settings are stored in the crawl database, in two entries: `settings` (crawl-wide: what every
machine of a shared crawl takes, `harvestman worker` included) and `local_settings` (the address
rules and processes of the machine that owns the folder: taken by its own later commands, never by
another machine). Run-only settings (seeds, `--max-pages`, the display) are never stored.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.model.config import CrawlConfig, crawl_settings, local_settings
from harvestman.model.errors import ConfigError
from harvestman.net.hostkeys import HostKeys
from harvestman.net.urls import without_password
from harvestman.policy.revive import Revival, revival
from harvestman.store.factory import is_postgres, open_store, sqlite_path, store_location
from harvestman.store.frontier import Store
from harvestman.store.warc_read import crawl_warc_files

SETTINGS_KEY = "settings"
LOCAL_KEY = "local_settings"
_OLD_LOCAL_KEY = "cycle_local"  # where `inject` kept the machine's settings before `local_settings`
SEEDS_KEY = "seeds"


@dataclass(frozen=True, slots=True)
class CrawlDir:
    """One crawl: its folder (WARC files, segments, logs, index, tables) and its database (`db`, or
    the folder's crawl.db when empty)."""

    path: Path
    db: str = ""

    @classmethod
    def of(cls, cfg: CrawlConfig) -> CrawlDir:
        """The crawl a config names."""
        return cls(Path(cfg.out_dir), cfg.db)

    @property
    def location(self) -> str:
        """The database's location: `db`, or DIR/crawl.db."""
        return store_location(self.db, self.path)

    @property
    def shared(self) -> bool:
        """Whether the database is PostgreSQL (other machines may work on the crawl)."""
        return is_postgres(self.location)

    @property
    def name(self) -> str:
        """How messages name the crawl: its database location, password hidden."""
        return without_password(self.location)

    @property
    def segments_dir(self) -> Path:
        """The crawl cycle's segments, one folder each."""
        return self.path / "segments"

    def warc_files(self, *, open_files: bool = True) -> list[Path]:
        """Every WARC file of the crawl: its segments' and other machines' (DIR/machines/NAME/)
        included, and those still being written or left open unless not `open_files`
        (store/warc_read.py)."""
        return crawl_warc_files(self.path, open_files=open_files)

    def holds_crawl(self) -> bool:
        """Whether there is a crawl database to open (PostgreSQL: assumed, it is asked on opening)."""
        return self.shared or sqlite_path(self.location).is_file()

    def check_exists(self, start_hint: str = "") -> None:
        """A ConfigError naming the folder when it holds no crawl (`start_hint`: how to start one)."""
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"{self.path} is a file, not a crawl folder")
        if not self.holds_crawl():
            hint = f": {start_hint}" if start_hint else ""
            db_file = sqlite_path(self.location).name
            raise ConfigError(f"{self.path} holds no crawl (no {db_file} there){hint}")

    def open(self, cfg: CrawlConfig | None = None, *, read_only: bool = False, create: bool = False,
             keys: HostKeys | None = None) -> Store:
        """The crawl's database, with `cfg`'s politeness and host keys for fetching from it; a
        ConfigError when it holds no crawl (unless `create`)."""
        if not create:
            self.check_exists()
        elif not self.shared:
            sqlite_path(self.location).parent.mkdir(parents=True, exist_ok=True)
        cfg = cfg or CrawlConfig()
        keys = keys or HostKeys(cfg.host_key, cfg.resolve)
        return open_store(self.location, host_of=keys.key, per_host=cfg.per_host, delay=cfg.delay,
                          lease_seconds=cfg.lease_seconds, read_only=read_only,
                          outage_limit=cfg.db_outage_limit)

    def stored_settings(self) -> dict[str, Any]:
        """The settings stored with the crawl, crawl-wide and this folder's machine's (empty when
        the crawl has none yet)."""
        store = self.open(read_only=not self.shared)
        try:
            return read_settings(store)
        finally:
            store.close()


def read_settings(store: Store, *, machine: bool = True) -> dict[str, Any]:
    """The settings stored in `store`: the crawl-wide ones, and (`machine`) those of the machine that
    owns the crawl folder."""
    values: dict[str, Any] = {}
    keys = (SETTINGS_KEY, _OLD_LOCAL_KEY, LOCAL_KEY) if machine else (SETTINGS_KEY,)
    for key in keys:
        raw = store.get_meta(key)
        if raw:
            values.update(json.loads(raw))
    return values


def save_settings(store: Store, cfg: CrawlConfig, *, machine: bool = True) -> None:
    """Store `cfg`'s crawl-wide settings, and (`machine`) this machine's, with the crawl."""
    store.set_meta(SETTINGS_KEY, json.dumps(crawl_settings(cfg)))
    if machine:
        store.set_meta(LOCAL_KEY, json.dumps(local_settings(cfg)))


def revive(store: Store, cfg: CrawlConfig, retry: Collection[str] = ()) -> Revival:
    """Queue again the failed URLs whose cause `cfg` removed, or of the `retry` error classes."""
    revived = revival(store.failures(), cfg, retry)
    store.requeue(revived.urls)
    return revived


def stored_seeds(store: Store) -> list[str]:
    """The crawl's seeds (what its scope is drawn from)."""
    raw = store.get_meta(SEEDS_KEY)
    return raw.split("\n") if raw else []

"""A crawl of the step-by-step cycle: its folder, its database, and the settings stored with it.

The settings given to `inject` are stored in the crawl database (meta "settings", as every crawl
stores them, plus "cycle_local" for the address rules and processes, which a shared continuous crawl
leaves to each machine); each later step reads them back and applies its own overrides for that
step only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harvestman.model.config import CrawlConfig, config_from_mapping, crawl_settings
from harvestman.model.errors import ConfigError
from harvestman.net.hostkeys import HostKeys
from harvestman.net.urls import without_password
from harvestman.store.factory import is_postgres, open_store, sqlite_path, store_location
from harvestman.store.frontier import Store

SETTINGS_KEY = "settings"
LOCAL_KEY = "cycle_local"
SEEDS_KEY = "seeds"
# Settings a crawl does not share between machines (model.config.MACHINE_LOCAL) that the cycle's
# steps, run on one machine, keep with the crawl all the same: given once to inject, used by fetch.
CYCLE_LOCAL = ("allow_net", "resolve", "workers")


def crawl_name(folder: Path, db: str) -> str:
    """How messages name the crawl: its database location (password hidden)."""
    return without_password(store_location(db, folder))


def open_crawl_store(folder: Path, db: str, cfg: CrawlConfig | None = None, *, create: bool = False,
                     read_only: bool = False, keys: HostKeys | None = None) -> Store:
    """The crawl's database; a ConfigError when it holds no crawl (unless `create`)."""
    location = store_location(db, Path(folder))
    if not create and not is_postgres(location) and not sqlite_path(location).is_file():
        raise ConfigError(f"{folder} holds no crawl (no {sqlite_path(location).name} there): start one "
                          f"with `harvestman inject {folder} -i SEEDS`")
    if create and not is_postgres(location):
        sqlite_path(location).parent.mkdir(parents=True, exist_ok=True)
    cfg = cfg or CrawlConfig()
    keys = keys or HostKeys(cfg.host_key, cfg.resolve)
    store = open_store(location, host_of=keys.key, per_host=cfg.per_host, delay=cfg.delay,
                       lease_seconds=cfg.lease_seconds, read_only=read_only)
    if not create and store.get_meta(SETTINGS_KEY) is None:
        store.close()
        raise ConfigError(f"{crawl_name(folder, db)} holds no crawl yet: start one with "
                          f"`harvestman inject {folder} -i SEEDS`")
    return store


def stored_values(store: Store) -> dict[str, Any]:
    """The settings stored with the crawl (empty when none are)."""
    values: dict[str, Any] = {}
    for key in (SETTINGS_KEY, LOCAL_KEY):
        raw = store.get_meta(key)
        if raw:
            values.update(json.loads(raw))
    return values


def load_config(folder: Path, db: str = "", overrides: Mapping[str, Any] | None = None) -> CrawlConfig:
    """The crawl's settings as stored by inject, with `overrides` (this step's options) on top."""
    store = open_crawl_store(folder, db, read_only=not is_postgres(store_location(db, Path(folder))))
    try:
        values = stored_values(store)
    finally:
        store.close()
    return config_from_mapping({**values, **dict(overrides or {}), "out_dir": Path(folder), "db": db,
                                "seeds": ()})


def save_config(store: Store, cfg: CrawlConfig) -> None:
    """Store `cfg`'s crawl-wide settings with the crawl (what the later steps read back)."""
    store.set_meta(SETTINGS_KEY, json.dumps(crawl_settings(cfg)))
    local = {name: [e.curl_form() if name == "resolve" else e for e in getattr(cfg, name)]
             if isinstance(getattr(cfg, name), tuple) else getattr(cfg, name) for name in CYCLE_LOCAL}
    store.set_meta(LOCAL_KEY, json.dumps(local))


def stored_seeds(store: Store) -> list[str]:
    """The crawl's seeds (what its scope is drawn from)."""
    raw = store.get_meta(SEEDS_KEY)
    return raw.split("\n") if raw else []

"""The crawl cycle's steps on a crawl folder (store/crawldir.py): the crawl must have been started
(by `inject`, or by a continuous crawl), and each step takes the crawl's stored settings with its
own options on top, for that step only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harvestman.model.config import CrawlConfig, merge_settings
from harvestman.model.errors import ConfigError
from harvestman.net.hostkeys import HostKeys
from harvestman.store.crawldir import SETTINGS_KEY, CrawlDir, read_settings
from harvestman.store.frontier import Store


def open_crawl_store(folder: Path, db: str, cfg: CrawlConfig | None = None, *, create: bool = False,
                     read_only: bool = False, keys: HostKeys | None = None) -> Store:
    """The crawl's database; a ConfigError when it holds no crawl (unless `create`)."""
    crawl = CrawlDir(Path(folder), db)
    start = f"start one with `harvestman inject {folder} -i SEEDS`"
    if not create:
        crawl.check_exists(start)
    store = crawl.open(cfg, create=create, read_only=read_only, keys=keys)
    if not create and store.get_meta(SETTINGS_KEY) is None:
        store.close()
        raise ConfigError(f"{crawl.name} holds no crawl yet: {start}")
    return store


def load_config(folder: Path, db: str = "", overrides: Mapping[str, Any] | None = None) -> CrawlConfig:
    """The crawl's stored settings with `overrides` (this step's options) on top."""
    store = open_crawl_store(folder, db, read_only=not CrawlDir(Path(folder), db).shared)
    try:
        stored = read_settings(store)
    finally:
        store.close()
    cfg, _ = merge_settings(stored, overrides or {}, {"out_dir": Path(folder), "db": db, "seeds": ()})
    return cfg

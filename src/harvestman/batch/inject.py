"""inject: add seeds to a crawl database (made when new), with their scores and metadata, and store
the crawl's settings with it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harvestman.batch.crawldir import open_crawl_store
from harvestman.batch.seeds import SeedLine
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import NewUrl
from harvestman.net.hostkeys import HostKeys
from harvestman.policy.ordering import RANKS
from harvestman.store.crawldir import SEEDS_KEY, save_settings, stored_seeds


@dataclass(frozen=True, slots=True)
class Injected:
    """What an inject did: URLs new to the crawl, URLs it already knew."""

    added: int
    known: int


def inject(folder: Path, seeds: Sequence[SeedLine], cfg: CrawlConfig) -> Injected:
    """Add `seeds` to the crawl in `folder` (or `cfg.db`) and store `cfg`'s settings with it.

    A new URL starts with its line's score (1.0 by default); a known one keeps its state and score
    (Nutch's injector without overwrite); both get the line's metadata merged into theirs.
    """
    if not seeds:
        raise ConfigError("no seed URL to inject: give URLs or -i SEEDS")
    keys = HostKeys(cfg.host_key, cfg.resolve)
    asyncio.run(keys.prepare(s.url for s in seeds))
    store = open_crawl_store(folder, cfg.db, cfg, create=True, keys=keys)
    try:
        save_settings(store, cfg)
        known = stored_seeds(store)
        have = set(known)
        for seed in seeds:
            if seed.url not in have:
                have.add(seed.url)
                known.append(seed.url)
        store.set_meta(SEEDS_KEY, "\n".join(known))
        rank = RANKS.get(cfg.ordering, RANKS["bfs"])
        added = store.add([NewUrl(s.url, keys.key(s.url), 0, s.score, priority=rank(0, s.score))
                           for s in seeds])
        with_meta = [(s.url, dict(s.metadata)) for s in seeds if s.metadata]
        if with_meta:
            store.set_metadata(with_meta)
    finally:
        store.close()
    return Injected(added, len({s.url for s in seeds}) - added)

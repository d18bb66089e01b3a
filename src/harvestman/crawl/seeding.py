"""The start of a run: its seeds checked and stored (or taken back on resume), its settings stored,
the seeds queued."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError, CrawlExistsError, InvalidUrlError
from harvestman.model.events import Event, EventKind
from harvestman.model.records import NewUrl
from harvestman.net.hostkeys import HostKeys
from harvestman.net.urls import normalize
from harvestman.policy.ordering import RANKS, SEED_SCORE
from harvestman.store.crawldir import save_settings
from harvestman.store.factory import is_postgres, store_location
from harvestman.store.frontier import Store
from harvestman.store.journal import RunJournal


def with_scheme(seed: str) -> str:
    """`example.com/x` as `http://example.com/x`: a seed typed without a scheme, as curl takes it."""
    return seed if "://" in seed or not seed else f"http://{seed}"


def seed_url(raw: str, *, max_length: int) -> str:
    """The URL a seed as typed stands for (http:// assumed without a scheme), normalized; an
    InvalidUrlError for one harvestman cannot fetch. The one seed check of the command line, the API
    and the engine: a lone word typed without a scheme (`notaurl`) is refused, not looked up as a
    host name, since it is a slip far more often than an intranet host (`http://intranet/` says so)."""
    text = raw.strip()
    assumed = with_scheme(text)
    if assumed != text:
        authority = re.split(r"[/?#]", text, maxsplit=1)[0]
        if "." not in authority and ":" not in authority and authority.lower() != "localhost":
            raise InvalidUrlError(f"no scheme, and {authority!r} is no host name (write "
                                  f"http://{authority}/ to mean a host of that name)")
    return normalize(assumed, max_length=max_length)


async def store_seeds(frontier: Store, cfg: CrawlConfig, keys: HostKeys, journal: RunJournal, *,
                      emit: Callable[[Event], None], skipped: Callable[[Event], None]) -> list[str]:
    """Record the run's seeds (or, resuming, add the new ones to those stored) and queue them; the
    crawl's seeds. An invalid seed is logged and handed to `skipped`; other events go to `emit`."""
    stored = frontier.get_meta("seeds")
    if stored is not None and not cfg.resume:
        raise CrawlExistsError(str(cfg.db or cfg.out_dir), in_db=bool(cfg.db))
    # A crawl shared by several machines (PostgreSQL) may have workers running elsewhere that
    # hold leases: those of the run being resumed come back when they expire (lease_seconds).
    if cfg.resume and not is_postgres(store_location(cfg.db, cfg.out_dir)):
        released = frontier.release_leases()
        if released:
            emit(Event(EventKind.CRAWL_STARTED, time.time(), message=f"resumed; {released} leases released"))
    seeds: list[str] = stored.split("\n") if stored else []
    known = set(seeds)  # a list's `in` made storing 2*10^5 seeds quadratic (24 s)
    new: list[str] = []
    for raw in cfg.seeds:
        try:
            url = seed_url(raw, max_length=cfg.max_url_length)
        except InvalidUrlError as exc:
            journal.download(raw, False, f"invalid URL: {exc}")
            skipped(Event(EventKind.GAVE_UP, time.time(), url=raw, error_class="invalid_url",
                          message=str(exc)))
            continue
        new.append(url)
        if url not in known:
            known.add(url)
            seeds.append(url)
    if not seeds:
        raise ConfigError("no valid seed URL to start from")
    frontier.set_meta("seeds", "\n".join(seeds))
    save_settings(frontier, cfg)  # what `harvestman worker`, `--resume` and `recrawl` take
    # On resume every seed is queued again (known ones are ignored): a run killed between storing
    # its seeds and queuing them must not resume into an empty crawl.
    queue = seeds if cfg.resume else new
    await keys.prepare(queue)
    priority = RANKS[cfg.ordering](0, SEED_SCORE)
    frontier.add([NewUrl(url, keys.key(url), 0, SEED_SCORE, priority=priority) for url in queue])
    return seeds

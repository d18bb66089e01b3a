"""A crawl's summary (the API's CrawlSummary): its state from the manager, figures from its database
and its event log."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from harvestman.launch.status import crawl_figures, run_figures
from harvestman.model.config import shown_setting
from harvestman.model.errors import HarvestmanError
from harvestman.model.records import UrlState
from harvestman.serve.crawls import RUNNING_STATES, CrawlInfo
from harvestman.serve.eventlog import EventFigures
from harvestman.store.crawldir import CrawlDir
from harvestman.store.frontier import CrawlDb

TOP_HOSTS = 10


def open_db(info: CrawlInfo) -> CrawlDb | None:
    """The crawl's database opened for reading; None before the crawl has made it."""
    crawl = CrawlDir(info.paths.crawl_dir, info.db)
    return crawl.open(read_only=True) if crawl.holds_crawl() else None


def _log_sizes(folder: Path) -> tuple[int, ...]:
    return tuple(p.stat().st_size if p.is_file() else -1 for p in CrawlDir(folder).event_logs())


@functools.lru_cache(maxsize=1024)
def _finished_rate(folder: Path, sizes: tuple[int, ...]) -> float:
    """A finished crawl's pages/s (launch/status.py's), read again only when its logs have grown."""
    del sizes  # the cache's key: the logs as they were read
    return round(float(run_figures(folder).get("pages_per_second", 0.0)), 2)


def summary(info: CrawlInfo, events: EventFigures) -> dict[str, Any]:
    """A crawl's summary as the API serves it (docs/serve.md): `pages` and `failed` as PageCounts
    defines them, the figures of the CRAWL_FINISHED event's message; `errors` is every remark by
    class (refusals by robots.txt and truncated pages too), not a count of failures."""
    running = info.state in RUNNING_STATES
    statuses, rate = events.figures(info.paths.events, running)
    if not running:  # as `harvestman status` says it: over the time its runs ran, not the gaps between
        rate = _finished_rate(info.paths.crawl_dir, _log_sizes(info.paths.crawl_dir)) or rate
    out: dict[str, Any] = {
        "id": info.id,
        "state": info.state,
        "seeds": list(info.seeds),
        "created": info.created,
        # The server's --proxy is among them (its ceiling): its password is not the client's to see.
        "settings": {name: shown_setting(name, value) for name, value in info.settings.items()},
        "counts": {s.name.lower(): 0 for s in UrlState},
        "pages": 0,
        "failed": 0,
        "pages_per_second": rate,
        "bytes": 0,
        "errors": {},
        "statuses": statuses,
        "top_hosts": [],
        "message": info.message,
    }
    try:
        db = open_db(info)
    except HarvestmanError as exc:  # a database being made, or one gone: the state still shows
        out["message"] = out["message"] or str(exc)
        return out
    if db is None:
        return out
    try:
        figures = crawl_figures(db)  # `harvestman status`'s figures, named as the API names them
    finally:
        db.close()
    ranked = sorted(figures["hosts"].items(), key=lambda kv: (-kv[1]["pages"], kv[0]))
    out.update(counts=figures["states"], pages=figures["pages"], failed=figures["failed"],
               bytes=figures["wire_bytes"], errors=figures["errors"],
               top_hosts=[{"host": host, "pages": h["pages"]} for host, h in ranked[:TOP_HOSTS]])
    return out

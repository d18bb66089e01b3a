"""Search over a served crawl: its full-text index (index/), built or brought up to date on demand."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from harvestman.serve.crawls import CrawlInfo
from harvestman.serve.layout import read_json, write_json
from harvestman.serve.status import open_db
from harvestman.store.crawldir import CrawlDir

STAMP = "index.json"  # what the crawl database and WARC files held when the index was last brought up to date


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # finished (renamed) since it was listed: the next look sees the new name
        return -1


class Searcher:
    """Answers queries; indexes first when the crawl has fetched something since the last time."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def search(self, info: CrawlInfo, query: str, limit: int) -> dict[str, Any]:
        """`{"hits": [{"url", "title", "snippet_html", "score"}...], "total": n}`."""
        from harvestman.index.search import search

        self._fresh(info)
        found = search(info.paths.crawl_dir, query, limit=limit)
        return {
            "total": found.total,
            "hits": [
                {"url": h.url, "title": h.title, "snippet_html": h.snippet, "score": h.score}
                for h in found.hits
            ],
        }

    def _fresh(self, info: CrawlInfo) -> None:
        from harvestman.index.indexer import build_index

        with self._guard:
            lock = self._locks.setdefault(info.id, threading.Lock())
        with lock:
            db = open_db(info)
            if db is None:
                now: dict[str, Any] = {"responses": 0, "last_fetch": 0.0}
            else:
                try:
                    totals = db.totals()
                finally:
                    db.close()
                now = {"responses": totals.responses, "last_fetch": totals.last_fetch}
            # The WARC files too: a page fetched is indexed once its record is stored, which may come
            # after the database's last change (the file being written grows, or is finished).
            now["warc"] = [[str(p.relative_to(info.paths.crawl_dir)), _size(p)]
                           for p in CrawlDir(info.paths.crawl_dir).warc_files(open_files=True)]
            stamp = info.paths.folder / STAMP
            try:
                before = read_json(stamp)
            except (OSError, ValueError):
                before = {}
            if before == now and (info.paths.crawl_dir / "searchindex").is_dir():
                return
            build_index(info.paths.crawl_dir, info.db)
            write_json(stamp, now)

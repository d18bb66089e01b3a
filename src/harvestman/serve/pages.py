"""A stored response looked up in a crawl's WARC files by its URL (never by a path from a request)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.model.errors import HarvestmanError, StorageError
from harvestman.store.crawldir import CrawlDir
from harvestman.store.warc_read import file_responses, read_response

MAX_TEXT_BYTES = 2 * 1024 * 1024  # the JSON view's body; ?raw=1 sends it whole


class PageNotFound(HarvestmanError):
    """No response for this URL in the crawl's WARC files."""


@dataclass(frozen=True, slots=True)
class StoredPage:
    """A response as the WARC holds it: status, headers and decoded body."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    content_type: str
    body: bytes
    truncated: bool  # the crawl stored only part of the body (WARC-Truncated, a stop condition)

    def as_json(self) -> dict[str, Any]:
        """The page view of the API: the body as text (cut at MAX_TEXT_BYTES)."""
        charset = "utf-8"
        for part in self.content_type.split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip("\"' ")
        body = self.body[:MAX_TEXT_BYTES]
        try:
            text = body.decode(charset, errors="replace")
        except LookupError:
            text = body.decode("utf-8", errors="replace")
        return {
            "url": self.url,
            "status": self.status,
            "headers": [list(h) for h in self.headers],
            "content_type": self.content_type,
            "body": text,
            "truncated": self.truncated or len(self.body) > MAX_TEXT_BYTES,
        }


class WarcLookup:
    """Where each URL's last response is in a crawl's WARC files, indexed as the files grow."""

    def __init__(self) -> None:
        # file -> (bytes indexed, {url: (WARC-Date, record offset)})
        self._files: dict[Path, tuple[int, dict[str, tuple[str, int]]]] = {}
        self._lock = threading.Lock()

    def find(self, crawl_dir: Path, url: str) -> StoredPage:
        """The last response stored for `url`; PageNotFound when there is none."""
        best: tuple[str, Path, int] | None = None
        with self._lock:
            # Finished files and the ones being written (complete records only are read from them).
            files = CrawlDir(crawl_dir).warc_files(open_files=True)
            for gone in [p for p in self._files if crawl_dir in p.parents and p not in files]:
                del self._files[gone]  # renamed from .open when finished, or deleted with the crawl
            for path in files:
                found = self._index(path).get(url)
                if found is not None and (best is None or found[0] >= best[0]):
                    best = (found[0], path, found[1])
        if best is None:
            raise PageNotFound(f"no stored response for {url[:200]!r}")
        return _read(best[1], best[2], url)

    def _index(self, path: Path) -> dict[str, tuple[str, int]]:
        try:
            size = path.stat().st_size
        except FileNotFoundError:  # renamed from .open since the glob
            return {}
        known = self._files.get(path)
        if known is not None and known[0] == size:
            return known[1]
        urls: dict[str, tuple[str, int]] = {}
        try:
            for found in file_responses(path, html_only=False, ok_only=False, bodies=False):
                urls[found.url] = (found.date, found.offset)
        except StorageError:  # a damaged file: the responses before the damage stand
            pass
        self._files[path] = (size, urls)
        return urls


def _read(path: Path, offset: int, url: str) -> StoredPage:
    try:
        found = read_response(path, offset)
    except StorageError as exc:
        raise PageNotFound(f"the stored response for {url[:200]!r} cannot be read: {exc}") from None
    return StoredPage(url, found.status, list(found.headers), found.content_type, found.body or b"",
                      bool(found.truncated))

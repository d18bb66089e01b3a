"""An index writer: one JSON line per stored page (URL, status, type, title, text's length, links)."""

from __future__ import annotations

import json
from typing import IO

from harvestman.crawl.sinks import SinkContext
from harvestman.model.records import CrawledPage


class JsonLinesIndex:
    """A PageSink writing OUT_DIR/index-wN.jsonl, one file per crawling process (N: its index)."""

    def __init__(self) -> None:
        self._file: IO[str] | None = None

    def open(self, context: SinkContext) -> None:
        """Open this process's file (appending: a resumed crawl adds to it)."""
        self._file = open(context.out_dir / f"index-w{context.worker}.jsonl", "a", encoding="utf-8")  # noqa: SIM115

    def write(self, page: CrawledPage) -> None:
        """One line for `page`."""
        assert self._file is not None
        parsed = page.parsed
        record = {
            "url": page.result.url,
            "status": page.result.status,
            "content_type": page.result.content_type,
            "title": parsed.title if parsed else "",
            "text_chars": len(parsed.text) if parsed else 0,
            "links": [link.url for link in parsed.links] if parsed else [],
            "depth": page.depth,
        }
        self._file.write(json.dumps(record) + "\n")

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None

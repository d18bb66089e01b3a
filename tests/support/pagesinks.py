"""A page sink for tests: each process writes `URL<TAB>words<TAB>pid` lines to a file of its own."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from harvestman.crawl.sinks import SinkContext
from harvestman.model.records import CrawledPage


class WordCountSink:
    """Writes each page's URL and word count to `OUT/sink-w<worker>.tsv` (a file per process)."""

    def __init__(self) -> None:
        self._file: TextIO | None = None

    def open(self, context: SinkContext) -> None:
        """Open this process's file (appending: a resumed run adds to it)."""
        path = Path(context.out_dir) / f"sink-w{context.worker}.tsv"
        self._file = path.open("a", encoding="utf-8")

    def write(self, page: CrawledPage) -> None:
        """One line for the page."""
        assert self._file is not None, "open() first"
        words = len(page.parsed.text.split()) if page.parsed else 0
        self._file.write(f"{page.result.url}\t{words}\t{os.getpid()}\n")

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


def sink_lines(out: Path) -> list[tuple[str, int, int, str]]:
    """Every line the sinks wrote under `out`: (url, words, pid, file name)."""
    lines = []
    for file in sorted(out.glob("sink-w*.tsv")):
        for line in file.read_text(encoding="utf-8").splitlines():
            url, words, pid = line.split("\t")
            lines.append((url, int(words), int(pid), file.name))
    return lines

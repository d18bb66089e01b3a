"""The crawl's side of Markdown export (`--markdown`): the sink that writes each stored HTML page's
Markdown and chunks, with the WARC record it came from, to DIR/markdown/.

Each crawling process writes its own `pages-w<worker>-<time>.jsonl` and `chunks-w<worker>-<time>.jsonl`
(under `.open` names until its run ends), with the rows `harvestman export DIR --what markdown` writes
from the WARC files. Handed to the crawl in its page stages (index/stages.py) when `markdown` is on.
"""

from __future__ import annotations

import time
from pathlib import Path

from harvestman.batch.segments import FETCHLIST
from harvestman.crawl.sinks import SinkContext
from harvestman.index.markdown import DEFAULT_CHUNK_SIZE, Provenance, markdown_page
from harvestman.index.markdown_files import MarkdownWriter, relative_file
from harvestman.model.records import CrawledPage

MARKDOWN_DIR = "markdown"
_HTML_TYPES = ("text/html", "application/xhtml+xml")


def crawl_folder(out_dir: Path) -> Path:
    """The crawl folder a run writes into: `out_dir`, or the crawl a segment (DIR/segments/NAME,
    fetched by the cycle's fetch step) belongs to, so provenance names files as the export does."""
    out_dir = Path(out_dir)
    if out_dir.parent.name == "segments" and (out_dir / FETCHLIST).is_file():
        return out_dir.parent.parent
    return out_dir


class MarkdownSink:
    """Writes the Markdown (and chunks) of each stored HTML 200 page to this process's JSONL files."""

    def __init__(self, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        self._chunk_size = chunk_size
        self._writer: MarkdownWriter | None = None
        self._folder = Path()

    def open(self, context: SinkContext) -> None:
        """Start this process's files."""
        self._folder = crawl_folder(context.out_dir)
        name = f"w{context.worker}-{time.time_ns()}.jsonl"
        folder = self._folder / MARKDOWN_DIR
        self._writer = MarkdownWriter(folder / f"pages-{name}", "jsonl", self._chunk_size,
                                      chunks_file=folder / f"chunks-{name}")

    def write(self, page: CrawledPage) -> None:
        """Add the page's rows, if it is an HTML page stored with a 200."""
        result, place = page.result, page.warc
        if (self._writer is None or place is None or result.status != 200 or result.text is None
                or result.content_type not in _HTML_TYPES):
            return
        provenance = Provenance(place.record_id, relative_file(Path(place.file), self._folder),
                                place.offset, place.date)
        self._writer.add(markdown_page(result.text, result.final_url or result.url, provenance, page.tree))

    def close(self) -> None:
        """Put the files in place."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()

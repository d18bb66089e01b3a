"""The crawl's side of page features (`--features`): the featurer the engine calls on each stored
page, and the sink that writes the features to DIR/features/pages-w<worker>-<time>.parquet.

Handed to the crawl in its page stages (index/stages.py) when `features` is on.
"""

from __future__ import annotations

from harvestman.crawl.sinks import SinkContext
from harvestman.index.features import extract_features
from harvestman.index.pages import PagesWriter, part_path
from harvestman.model.records import CrawledPage, PageFeatures

_HTML_TYPES = ("text/html", "application/xhtml+xml")


def page_features(page: CrawledPage) -> PageFeatures | None:
    """The features of a crawled HTML page that answered 200 (the pages `harvestman features` reads
    from the WARC files); None for any other."""
    result = page.result
    if result.status != 200 or result.content_type not in _HTML_TYPES or result.text is None:
        return None
    return extract_features(result.text, result.final_url or result.url, tree=page.tree)


class FeatureSink:
    """Writes each page's features (computed by the engine) to a Parquet part of this process."""

    def __init__(self) -> None:
        self._writer: PagesWriter | None = None

    def open(self, context: SinkContext) -> None:
        """Start this process's part."""
        self._writer = PagesWriter(part_path(context.out_dir, context.worker))

    def write(self, page: CrawledPage) -> None:
        """Add the page's row, if it has features."""
        if page.features is not None and self._writer is not None:
            self._writer.add(page.features)

    def close(self) -> None:
        """Put the part in place."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()

"""SimHashes of pages read back from a crawl's WARC files, for pages whose row holds none."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from harvestman.batch.simhash import html_simhash
from harvestman.store.crawldir import CrawlDir
from harvestman.store.warc_read import responses_in


def simhashes_from_warc(folder: Path, wanted: Collection[str]) -> dict[str, int]:
    """The SimHash of each `wanted` URL's visible text, from its last HTML response (by WARC-Date,
    then by file order) in the crawl's WARC files; URLs without one are left out."""
    return simhashes_in(CrawlDir(Path(folder)).warc_files(), wanted)


def simhashes_in(files: Collection[Path], wanted: Collection[str]) -> dict[str, int]:
    """The SimHash of each `wanted` URL's last HTML response in the WARC `files` (as above)."""
    if not wanted:
        return {}
    return {found.url: html_simhash(found.body or b"")
            for found in responses_in(files, latest=True, urls=wanted)}

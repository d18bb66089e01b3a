"""parse: derive a fetched segment's links again from its WARC files (after a parser change), into
the segment's store, where updatedb reads them."""

from __future__ import annotations

from pathlib import Path

from harvestman.batch import segments
from harvestman.crawl.pagelinks import page_links
from harvestman.crawl.parse import parse_html
from harvestman.fetch.content import decode_text, detect_charset
from harvestman.model.config import LinkSettings
from harvestman.model.errors import ConfigError
from harvestman.model.records import PageLinks
from harvestman.store.sqlite_store import SqliteStore
from harvestman.store.warc_read import responses_in, warc_files_in

LINKS_BATCH = 500  # pages whose links are written in one transaction


def parse_segment(folder: Path, links: LinkSettings, segment: str | Path | None = None) -> int:
    """Parse a fetched segment's HTML responses again and replace the links stored for them (before
    its updatedb); how many pages had links."""
    path = segments.find_segment(folder, str(segment) if segment else None)
    segments.require(path, "fetched", "parse")
    if segments.done(path, "merged"):
        raise ConfigError(f"segment {path.name} was merged already: its links are in the crawl database")
    store = SqliteStore(path / segments.STORE, host_of=lambda url: url)
    count = 0
    try:
        batch: list[PageLinks] = []
        # Files left open by a killed fetch too, up to their last whole record.
        for response in responses_in(warc_files_in(path / "warc", open_files=True), ok_only=False):
            if not 200 <= response.status < 300:
                continue
            body = response.body or b""
            charset, _ = detect_charset(body, response.content_type or None)
            parsed = parse_html(decode_text(body, charset), response.url,
                                max_links=links.max_outlinks, with_text=False, anchors=links.link_anchors)
            if not parsed.links:
                continue
            batch.append(page_links(response.requested_url, parsed))
            count += 1
            if len(batch) >= LINKS_BATCH:
                store.complete([], 0.0, links=batch)
                batch = []
        if batch:
            store.complete([], 0.0, links=batch)
    finally:
        store.close()
    segments.mark(path, "parsed")
    return count

"""parse: derive a fetched segment's links again from its WARC files (after a parser change), into
the segment's store, where updatedb reads them."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harvestman.batch import segments
from harvestman.crawl.pagelinks import HTML_TYPES, page_links
from harvestman.crawl.parse import parse_html
from harvestman.fetch.content import decode_text, detect_charset, media_type
from harvestman.model.config import LinkSettings
from harvestman.model.errors import ConfigError, StorageError
from harvestman.model.records import PageLinks
from harvestman.store.sqlite_store import SqliteStore

LINKS_BATCH = 500  # pages whose links are written in one transaction


@dataclass(frozen=True, slots=True)
class WarcResponse:
    """A response as a WARC file keeps it, with the URL that was asked for."""

    requested_url: str
    url: str  # where it was answered (after redirects)
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


def _read_record(stream: BinaryIO | gzip.GzipFile) -> tuple[dict[str, str], bytes] | None:
    line = stream.readline()
    while line in (b"\r\n", b"\n"):
        line = stream.readline()
    if not line:
        return None
    if not line.startswith(b"WARC/"):
        raise StorageError(f"not a WARC record: {line[:40]!r}")
    fields: dict[str, str] = {}
    while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("utf-8", "replace").partition(":")
        fields[name.strip().lower()] = value.strip()
    block = stream.read(int(fields.get("content-length", "0")))
    return fields, block


def _http_response(block: bytes) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
    head, _, body = block.partition(b"\r\n\r\n")
    lines = head.decode("iso-8859-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    headers = tuple((n.strip(), v.strip()) for n, _, v in (x.partition(":") for x in lines[1:]))
    return status, headers, body


def warc_responses(warc_dir: Path) -> Iterator[WarcResponse]:
    """The responses in a folder of harvestman WARC files (each paired with its metadata record's
    requestedURL), file by file in name order."""
    files = sorted([*Path(warc_dir).glob("*.warc.gz"), *Path(warc_dir).glob("*.warc.gz.open")])
    for path in files:
        pending: dict[str, tuple[str, bytes]] = {}  # response record id -> (target URI, block)
        try:
            with gzip.open(path, "rb") as stream:
                while (record := _read_record(stream)) is not None:
                    fields, block = record
                    kind = fields.get("warc-type")
                    if kind == "response":
                        pending[fields.get("warc-record-id", "")] = (fields.get("warc-target-uri", ""), block)
                    elif kind == "metadata":
                        found = pending.pop(fields.get("warc-concurrent-to", ""), None)
                        if found is None:
                            continue
                        requested = found[0]
                        for line in block.decode("utf-8", "replace").split("\r\n"):
                            if line.startswith("requestedURL: "):
                                requested = line[len("requestedURL: "):]
                        status, headers, body = _http_response(found[1])
                        yield WarcResponse(requested, found[0], status, headers, body)
        except (OSError, EOFError, ValueError) as exc:
            raise StorageError(f"cannot read the WARC file {path}: {exc}") from None


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
        for response in warc_responses(path / "warc"):
            ctype = dict((n.lower(), v) for n, v in response.headers).get("content-type")
            if media_type(ctype) not in HTML_TYPES or not 200 <= response.status < 300:
                continue
            charset, _ = detect_charset(response.body, ctype)
            parsed = parse_html(decode_text(response.body, charset), response.url,
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

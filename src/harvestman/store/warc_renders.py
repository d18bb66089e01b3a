"""The pages a crawl rendered in a browser, read back from its WARC files (`export --what renders`).

A rendered page is stored as its response (as served), a conversion record (the rendered DOM), a
resource record `urn:screenshot:URL` (the PNG, when asked for) and the metadata record (why it was
rendered, its requests, what was refused), all tied to the response's record id. One row per page
says where each is (file and offset: `warcio extract` or any WARC reader gets it back).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvestman.store.warc_read import crawl_warc_files, warc_records


def _fields(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(": ")
        if sep:
            out.setdefault(name, []).append(value)
    return out


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}  # by the response's record id
    for record, content, offset, length in warc_records(path, ("conversion", "resource", "metadata")):
        kind = record.rec_type
        head = record.rec_headers
        refers = head.get_header("WARC-Refers-To") or head.get_header("WARC-Concurrent-To") or ""
        if not refers:
            continue
        if kind == "metadata":
            meta = _fields(content.decode("utf-8", "replace"))
            if "rendered" not in meta or refers not in rows:
                continue
            rows[refers].update(
                reason=meta["rendered"][0], settle=(meta.get("renderSettle") or [""])[0],
                render_ms=int((meta.get("renderTimeMs") or ["0"])[0]),
                requests=int((meta.get("renderRequests") or ["0"])[0]),
                resource_bytes=int((meta.get("renderBytes") or ["0"])[0]),
                refused=meta.get("renderRefused", []))
            continue
        row = rows.setdefault(refers, {
            "url": "", "date": head.get_header("WARC-Date"), "warc_file": path.name,
            "response_id": refers, "dom_offset": None, "dom_bytes": 0, "screenshot_offset": None,
            "screenshot_length": None, "screenshot_bytes": 0, "screenshot_mode": ""})
        if kind == "conversion":
            row.update(url=head.get_header("WARC-Target-URI"), dom_offset=offset, dom_bytes=len(content))
        elif (head.get_header("WARC-Target-URI") or "").startswith("urn:screenshot:"):
            row.update(screenshot_offset=offset, screenshot_length=length, screenshot_bytes=len(content),
                       screenshot_mode=head.get_header("X-Harvestman-Screenshot") or "")
    yield from (row for row in rows.values() if row["url"])


def rendered_pages(folder: Path) -> Iterator[dict[str, Any]]:
    """One row per rendered page in the crawl's finished WARC files."""
    for path in crawl_warc_files(folder):
        yield from _rows(path)

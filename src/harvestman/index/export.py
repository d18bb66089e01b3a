"""Export the search index's documents as files search servers load, as Nutch's index writers send them:
OpenSearch / Elasticsearch `_bulk` NDJSON with an index mapping, Solr JSON update documents with the
Schema API commands that add the fields.

Field names follow Nutch's (id, url, host, title, content, anchor, digest), plus headings and category.
Files are written in parts of at most PART_DOCS documents, under the servers' request size limits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harvestman.index.schema import FIELD_BOOSTS, open_index
from harvestman.model.errors import ConfigError, StorageError

EXPORT_INDEX_FORMATS = ("opensearch", "solr")
INDEX_NAME = "harvestman"  # the OpenSearch index the bulk lines name (change it with sed, or in the URL)
PART_DOCS = 5_000  # documents a bulk file: ~100 MB is both servers' default request size limit
MAX_ID_BYTES = 512  # OpenSearch refuses longer _id values
# Our field → Nutch's name for it in the exported documents.
_NUTCH_NAMES = {"url": "url", "title": "title", "headings": "headings", "text": "content", "anchor": "anchor",
                "category": "category", "signature": "digest"}


@dataclass(frozen=True, slots=True)
class IndexExport:
    """Where an index export went: the folder, the files in it, and how many documents."""

    folder: Path
    files: tuple[Path, ...]
    documents: int


def document_id(url: str) -> str:
    """A document's id: its URL, or a digest of it when the URL is too long for an OpenSearch _id."""
    if len(url.encode("utf-8")) <= MAX_ID_BYTES:
        return url
    return "sha256:" + hashlib.sha256(url.encode("utf-8")).hexdigest()


def _documents(folder: Path) -> Iterator[dict[str, Any]]:
    """Every indexed page as an exported document (Nutch's field names); opens the index at once."""
    return _stored_documents(open_index(folder))


def _stored_documents(index: Any) -> Iterator[dict[str, Any]]:
    import tantivy

    searcher = index.searcher()
    if not searcher.num_docs:
        return
    found = searcher.search(tantivy.Query.all_query(), searcher.num_docs, count=False)
    for _, address in found.hits:
        stored = searcher.doc(address).to_dict()
        doc: dict[str, Any] = {"id": document_id(stored["id"][0]), "host": stored.get("host", [])}
        for ours, theirs in _NUTCH_NAMES.items():
            values = stored.get(ours, [])
            doc[theirs] = values if ours == "anchor" else (values[0] if values else "")
        yield doc


def opensearch_mapping() -> dict[str, Any]:
    """The index body (settings and mappings) to PUT before loading the bulk files."""
    text = {"type": "text", "analyzer": "english"}
    keyword = {"type": "keyword"}
    return {
        "settings": {"index": {"number_of_shards": 1}},
        "mappings": {
            "_meta": {"source": "harvestman", "query_boosts": _boosts()},
            "properties": {
                "id": keyword, "url": {"type": "keyword", "fields": {"text": {"type": "text"}}},
                "host": keyword, "category": keyword, "title": text, "headings": text, "content": text,
                "anchor": text, "digest": {"type": "keyword", "index": False},
            },
        },
    }


def solr_schema() -> dict[str, Any]:
    """Schema API commands (POST to /solr/CORE/schema) adding the fields to a core made from Solr's
    _default configset (it has the `id` unique key and the text_en type)."""
    text = {"type": "text_en", "stored": True, "indexed": True}
    string = {"type": "string", "stored": True, "indexed": True}
    return {"add-field": [
        {"name": "url", **string}, {"name": "host", **string, "multiValued": True},
        {"name": "category", **string}, {"name": "title", **text}, {"name": "headings", **text},
        {"name": "content", **text}, {"name": "anchor", **text, "multiValued": True},
        {"name": "digest", "type": "string", "stored": True, "indexed": False},
    ]}


def _boosts() -> dict[str, float]:
    """The query-time field weights harvestman's own search uses, under the exported names."""
    return {("url.text" if f == "url" else _NUTCH_NAMES[f]): b for f, b in FIELD_BOOSTS.items()}


def _write_parts(docs: Iterator[dict[str, Any]], folder: Path, stem: str, suffix: str,
                 write: Any) -> tuple[list[Path], int]:
    """Write `docs` in parts of PART_DOCS with `write(out, docs_of_part)`; the files and the count."""
    files: list[Path] = []
    count = 0
    part: list[dict[str, Any]] = []

    def flush() -> None:
        path = folder / f"{stem}-{len(files):05d}{suffix}"
        with open(path, "w", encoding="utf-8") as out:
            write(out, part)
        files.append(path)
        part.clear()

    for doc in docs:
        part.append(doc)
        count += 1
        if len(part) >= PART_DOCS:
            flush()
    if part or not files:
        flush()
    return files, count


def _bulk_lines(out: TextIO, docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        out.write(json.dumps({"index": {"_index": INDEX_NAME, "_id": doc["id"]}}) + "\n")
        out.write(json.dumps({k: v for k, v in doc.items() if k != "id"}, ensure_ascii=False) + "\n")


def _solr_docs(out: TextIO, docs: list[dict[str, Any]]) -> None:
    out.write("[\n")
    out.write(",\n".join(json.dumps(doc, ensure_ascii=False) for doc in docs))
    out.write("\n]\n")


def export_index(folder: Path, fmt: str, output: Path | None = None) -> IndexExport:
    """Write the index's documents for `fmt` (opensearch or solr) into `output` (default
    DIR/export/FORMAT): mapping.json + bulk-NNNNN.ndjson, or schema.json + docs-NNNNN.json."""
    if fmt not in EXPORT_INDEX_FORMATS:
        raise ConfigError(f"the index is exported as {' or '.join(EXPORT_INDEX_FORMATS)}, not {fmt!r}")
    folder = Path(folder)
    target = output or folder / "export" / fmt
    docs = _documents(folder)  # opens the index first: no index, a clear error before any file
    try:
        target.mkdir(parents=True, exist_ok=True)
        for old in (*target.glob("bulk-*.ndjson"), *target.glob("docs-*.json")):
            old.unlink()  # a smaller index than last time leaves no stale parts behind
        if fmt == "opensearch":
            head = target / "mapping.json"
            head.write_text(json.dumps(opensearch_mapping(), indent=2) + "\n", encoding="utf-8")
            files, count = _write_parts(docs, target, "bulk", ".ndjson", _bulk_lines)
        else:
            head = target / "schema.json"
            head.write_text(json.dumps(solr_schema(), indent=2) + "\n", encoding="utf-8")
            files, count = _write_parts(docs, target, "docs", ".json", _solr_docs)
    except OSError as exc:
        raise StorageError(f"cannot write the export in {target}: {exc}") from None
    return IndexExport(target, (head, *files), count)

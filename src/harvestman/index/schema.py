"""The search index's layout on disk: its folder in a crawl, its fields and their boosts (tantivy)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError, StorageError

INDEX_FOLDER = "searchindex"  # DIR/searchindex: the tantivy index and the indexer's bookkeeping
STATE_FILE = "indexed.sqlite"  # per URL what was indexed (a digest of its inputs), for incremental runs
# Bumped when what a document holds changes (extraction, fields): every page is then indexed again.
SCHEMA_VERSION = 2
# The fields a query searches when it names none, with their weights in the BM25 sum. A title or an
# anchor text says what a page is about in a few words, so a word there counts more than in the text.
FIELD_BOOSTS: dict[str, float] = {"title": 4.0, "headings": 2.0, "anchor": 2.0, "url": 1.5, "text": 1.0}
# The untokenized fields (the whole value is one term): filters, matched as written.
RAW_FIELDS = ("host", "category")
# Words are lower-cased and stemmed (Porter, English) in the prose fields: "sorting" finds "sorted".
_STEMMED = ("title", "headings", "text", "anchor")


def index_path(folder: Path) -> Path:
    """Where a crawl folder's search index lives."""
    return Path(folder) / INDEX_FOLDER


def build_schema() -> Any:
    """The tantivy schema: `id` (the URL, untokenized: replace and delete by it), `url` (tokenized),
    `host` and `category` (untokenized filters), the prose fields, and `signature` (stored only)."""
    import tantivy  # imported here: `import harvestman` must stay cheap

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("url", stored=True)
    builder.add_text_field("host", stored=True, tokenizer_name="raw")
    builder.add_text_field("category", stored=True, tokenizer_name="raw")
    for name in _STEMMED:
        builder.add_text_field(name, stored=True, tokenizer_name="en_stem")
    builder.add_text_field("signature", stored=True, tokenizer_name="raw", index_option="basic")
    return builder.build()


def open_index(folder: Path, *, create: bool = False) -> Any:
    """The crawl's tantivy index (created when `create` and missing); a ConfigError when there is none."""
    import tantivy

    path = index_path(folder)
    if not create and not (path / "meta.json").is_file():
        raise ConfigError(f"{folder} has no search index: build it with `harvestman index {folder}`")
    try:
        path.mkdir(parents=True, exist_ok=True)
        return tantivy.Index(build_schema(), path=str(path), reuse=True)
    except ValueError as exc:  # tantivy reports a damaged or foreign index as ValueError
        raise StorageError(f"cannot open the search index in {path}: {exc}") from None


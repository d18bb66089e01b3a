"""The search index's layout on disk: its folder in a crawl, its fields and their boosts (tantivy)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError, StorageError

INDEX_FOLDER = "searchindex"  # DIR/searchindex: the tantivy index and the indexer's bookkeeping
STATE_FILE = "indexed.sqlite"  # per URL what was indexed (a digest of its inputs), for incremental runs
# Bumped when what a document holds changes (extraction, fields): every page is then indexed again.
SCHEMA_VERSION = 3  # 3: the text as the page reads (no space around inline elements)
# The fields a query searches when it names none, with their weights where each field is scored on its
# own (a prefix, or a search told which of them to use). A title or an anchor text says what a page is
# about in a few words, so a word there counts more than in the text.
FIELD_BOOSTS: dict[str, float] = {"title": 4.0, "headings": 2.0, "anchor": 2.0, "url": 1.5, "text": 1.0}
# A word or phrase naming no field is scored in one field holding all of them (BM25F, nearly): summing
# each field's BM25 gave a word its IDF in each field, and a common word ("what", "is") rare in titles
# outweighed the subject in the text. `all` holds the title and headings repeated (their weight), the
# URL, the anchors and the text: one IDF a word, one length a page. The title is scored on its own as
# well, lightly. Weights chosen on bench/data/python_doc_queries.tsv (search_relevance.py), checked on
# the other two query sets; issue 27.
ALL_FIELD = "all"
ALL_REPEATS: dict[str, int] = {"title": 4, "headings": 2}
DEFAULT_BOOSTS: dict[str, float] = {ALL_FIELD: 1.0, "title": 0.5}
# The untokenized fields (the whole value is one term): filters, matched as written.
RAW_FIELDS = ("host", "category")
# Words are lower-cased and stemmed (Porter, English) in the prose fields: "sorting" finds "sorted".
_STEMMED = ("title", "headings", "text", "anchor")
# The terms a page defines (index/pagetext.term_key's keys of its <dt>s), one term each: a ranking
# signal (a question about a term finds the page defining it: "what is the GIL"), not a field a query
# names. DEFINES_BOOST weighs a page defining the whole question's subject.
DEFINES_FIELD = "defines"
DEFINES_BOOST = 2.0
API_NAME_BOOST = 1.0  # a page whose API has a function or class of the subject's name (time.sleep)


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
    builder.add_text_field(ALL_FIELD, stored=False, tokenizer_name="en_stem")
    builder.add_text_field(DEFINES_FIELD, stored=False, tokenizer_name="raw", index_option="freq")
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
        if "schema does not match" not in str(exc):
            raise StorageError(f"cannot open the search index in {path}: {exc}") from None
    # An index of an older layout (fields added since): built again from scratch by `index`; its
    # bookkeeping goes with it (it describes the documents that are gone), so every page is indexed.
    if not create:
        raise ConfigError(f"the search index in {path} was built by an older harvestman: build it again "
                          f"with `harvestman index {folder}`")
    for old in path.iterdir():
        if old.is_file():
            old.unlink()
    try:
        return tantivy.Index(build_schema(), path=str(path), reuse=True)
    except ValueError as exc:
        raise StorageError(f"cannot open the search index in {path}: {exc}") from None


"""`harvestman extract`: the structured data and user field rules of a crawl's fetched pages, as Parquet.

Pages come from the crawl's WARC files (the last HTML 200 response of each URL the crawl database
holds as fetched or not-modified; duplicates are left out). Each page is parsed once; extruct reads
its JSON-LD, microdata, RDFa and OpenGraph (structured.py) and the field rules run on the same tree
(fieldrules.py). The output replaces DIR/tables/ as a whole, written aside and renamed, so a table
there is always what the last extract wrote:

- `<type>.parquet` per schema.org type (`person`, `product`, ...) and `og_<type>.parquet` per
  OpenGraph type: url, syntax, item (its position among the page's items), item_id, then one text
  column per property (nested values as JSON text);
- `fields.parquet` (rules without a category) and `fields_<category>.parquet`: url, one column per
  field, a row for every page of that category.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvestman.fetch.content import decode_text, detect_charset
from harvestman.index.fieldrules import ALL_PAGES, FieldRule, apply_rule, categories_needed, table_for
from harvestman.index.structured import page_items
from harvestman.model.errors import ConfigError, StorageError
from harvestman.model.records import UrlState
from harvestman.store.crawldir import CrawlDir
from harvestman.store.warc_read import HTML_TYPES, stored_responses

TABLES_DIR = "tables"
FEATURES_FILE = Path("features") / "pages.parquet"
_WITH_CONTENT = (UrlState.FETCHED, UrlState.NOT_MODIFIED)


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """One fetched HTML page as stored: its URL, its body and the Content-Type it was served with."""

    url: str
    body: bytes
    content_type: str


@dataclass(frozen=True, slots=True)
class ExtractSummary:
    """What an extract run read and wrote."""

    pages: int  # HTML pages read from the WARC files
    items: int  # typed items found (JSON-LD, microdata, RDFa, OpenGraph)
    broken: int  # blocks that could not be read (a broken JSON-LD script, ...)
    tables: dict[str, int]  # table name -> rows written
    folder: Path  # DIR/tables


def tables_folder(folder: Path) -> Path:
    """Where extract writes its tables: DIR/tables."""
    return Path(folder) / TABLES_DIR


def pages_to_read(folder: Path, db: str = "") -> set[str]:
    """The URLs whose content the crawl holds: fetched or not modified, HTML, not duplicates."""
    with CrawlDir(Path(folder), db).read() as store:
        return {r.url for r in store.records() if r.state in _WITH_CONTENT
                and (r.content_type.split(";", 1)[0].strip().lower() in HTML_TYPES or not r.content_type)}


def fetched_pages(folder: Path, wanted: set[str]) -> Iterator[FetchedPage]:
    """The latest stored HTML response of each wanted URL, file by file (found first, then read one
    at a time, so only one body is in memory at once)."""
    for found in stored_responses(folder, latest=True, urls=wanted):
        yield FetchedPage(found.url, found.body or b"", found.content_type)


def page_categories(folder: Path) -> dict[str, str] | None:
    """Each page's category from DIR/features/pages.parquet (None when that file is missing)."""
    import pyarrow.parquet as pq

    path = Path(folder) / FEATURES_FILE
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path, columns=["url", "category"])
    except Exception as exc:  # pyarrow's errors: a missing column, a damaged file
        raise StorageError(f"cannot read page categories from {path}: {exc}") from None
    return {u: c or "" for u, c in zip(table.column("url").to_pylist(), table.column("category").to_pylist(),
                                       strict=True) if u}


def parse_page(page: FetchedPage) -> Any:
    """The page as a tree extruct and the field rules both read (its charset found as the crawl does);
    None when there is no document to parse."""
    from extruct.utils import parse_xmldom_html

    charset, _ = detect_charset(page.body, page.content_type)
    text = decode_text(page.body, charset)
    # Given as UTF-8 bytes with the encoding named: lxml would decode bytes without one as Latin-1,
    # and refuses str input that carries an XML encoding declaration.
    try:
        return parse_xmldom_html(text.encode("utf-8", "surrogatepass"), encoding="utf-8")
    except Exception:  # lxml's ParserError on an empty or wholly unreadable document: no tree
        return None


@dataclass
class _Table:
    """Rows of one output table, its columns in the order first seen."""

    columns: dict[str, str] = field(default_factory=dict)  # lowercased name -> name as first seen
    rows: list[dict[str, Any]] = field(default_factory=list)

    def column(self, name: str) -> str:
        """The table's column for `name`: DuckDB compares names without case, so `Name` is `name`."""
        return self.columns.setdefault(name.lower(), name)

    def add(self, pairs: Sequence[tuple[str, Any]]) -> None:
        row: dict[str, Any] = {}
        for name, value in pairs:
            key = self.column(name)
            if key not in row:  # a property given twice in one item (name and Name): the first wins
                row[key] = value
        self.rows.append(row)


def _write(tables: dict[str, _Table], folder: Path) -> dict[str, int]:
    """Write each table as DIR/tables/<name>.parquet (all columns text but `item`), aside then renamed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = tables_folder(folder)
    partial = target.with_name(TABLES_DIR + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    written: dict[str, int] = {}
    for name, table in sorted(tables.items()):
        names = list(table.columns.values())
        schema = pa.schema([pa.field(c, pa.int32() if c == "item" else pa.string()) for c in names])
        data = {c: [r.get(c) for r in table.rows] for c in names}
        pq.write_table(pa.Table.from_pydict(data, schema=schema), partial / f"{name}.parquet")
        written[name] = len(table.rows)
    old = target.with_name(TABLES_DIR + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(partial, target)
    shutil.rmtree(old, ignore_errors=True)
    return written


def extract(folder: Path, *, db: str = "", rules: Sequence[FieldRule] = ()) -> ExtractSummary:
    """Read every fetched HTML page of the crawl in `folder` and write DIR/tables/ (module docstring)."""
    folder = Path(folder)
    categories = page_categories(folder) if rules else None
    needed = categories_needed(rules)
    if needed and categories is None:
        raise ConfigError(f"rules name categories ({', '.join(sorted(needed))}) but {folder / FEATURES_FILE} "
                          "is missing: classify the pages first")
    tables: dict[str, _Table] = defaultdict(_Table)
    for rule in rules:  # a rules table has every field as a column, even where no page matched
        for name in ("url", rule.field):
            tables[table_for(rule.category)].column(name)
    pages = items = broken = 0
    for page in fetched_pages(folder, pages_to_read(folder, db)):
        pages += 1
        tree = parse_page(page)
        if tree is None:
            broken += 1
            continue
        found = page_items(tree, page.url)
        broken += len(found.errors)
        for position, item in enumerate(found.items):
            items += 1
            head = (("url", page.url), ("syntax", item.syntax), ("item", position), ("item_id", item.item_id))
            tables[item.table].add((*head, *item.properties))
        if not rules:
            continue
        category = (categories or {}).get(page.url, "")
        by_table: dict[str, list[tuple[str, Any]]] = {}
        for rule in rules:
            if rule.category in (ALL_PAGES, category):
                row = by_table.setdefault(table_for(rule.category), [("url", page.url)])
                row.append((rule.field, apply_rule(rule, tree)))
        for name, row in by_table.items():
            tables[name].add(row)
    written = _write(tables, folder)
    return ExtractSummary(pages, items, broken, written, tables_folder(folder))

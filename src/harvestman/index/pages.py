"""The table of page features on disk: DIR/features/pages.parquet, and the parts a crawl writes.

`harvestman features DIR` writes `pages.parquet` from the WARC files; a crawl with `--features`
writes `pages-w<worker>-<time>.parquet` parts as it goes (one per crawling process and run). Readers
take `pages.parquet` and the parts closed after it; a URL met more than once keeps its last row
(and an earlier row's category when the last has none).
One row a page, with a `url` column: `search --category` and the `pages` table of `harvestman query`
read this file.

`harvestman classify DIR` fills the `category` and `category_probability` columns of the same rows
(one table, so every reader finds a page's features and its category together). Computing the
features again keeps them: a page keeps its category until classify runs again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from harvestman.index.features import TOP_K, extract_features
from harvestman.model.errors import ConfigError, StorageError
from harvestman.model.records import PageFeatures
from harvestman.store.crawldir import CrawlDir
from harvestman.store.warc_read import stored_responses

FEATURES_DIR = "features"
PAGES_FILE = "pages.parquet"
PART_GLOB = "pages-*.parquet"
BATCH_ROWS = 256  # rows buffered before a row group is written
_CATEGORY_COLUMNS = ("url", "category", "category_probability")  # what stored_categories reads


def schema() -> Any:
    """The Arrow schema of a pages table (one row a page)."""
    import pyarrow as pa

    return pa.schema([
        ("url", pa.string()),
        ("title", pa.string()),
        ("description", pa.string()),
        ("headings", pa.list_(pa.struct([("level", pa.int8()), ("text", pa.string())]))),
        ("text", pa.string()),
        ("sentences", pa.list_(pa.string())),
        ("language", pa.string()),
        ("tag_counts", pa.list_(pa.struct([("tag", pa.string()), ("count", pa.int32())]))),
        ("ngrams", pa.list_(pa.struct([("ngram", pa.string()), ("count", pa.int32())]))),
        ("category", pa.string()),  # null until a classifier ran
        ("category_probability", pa.float64()),
    ])


def to_row(page: PageFeatures) -> dict[str, Any]:
    """One row of the table; category and its probability null when not classified."""
    return {
        "url": page.url, "title": page.title, "description": page.description,
        "headings": [{"level": level, "text": text} for level, text in page.headings],
        "text": page.text, "sentences": list(page.sentences), "language": page.language,
        "tag_counts": [{"tag": tag, "count": count} for tag, count in page.tag_counts],
        "ngrams": [{"ngram": gram, "count": count} for gram, count in page.ngrams],
        "category": page.category or None,
        "category_probability": page.category_probability if page.category else None,
    }


def from_row(row: dict[str, Any]) -> PageFeatures:
    """The record of one row."""
    return PageFeatures(
        url=row["url"], title=row["title"] or "", description=row["description"] or "",
        headings=tuple((h["level"], h["text"]) for h in row["headings"] or ()),
        text=row["text"] or "", sentences=tuple(row["sentences"] or ()), language=row["language"] or "",
        tag_counts=tuple((t["tag"], t["count"]) for t in row["tag_counts"] or ()),
        ngrams=tuple((g["ngram"], g["count"]) for g in row["ngrams"] or ()),
        category=row["category"] or "", category_probability=row["category_probability"] or 0.0,
    )


class PagesWriter:
    """Writes rows to a Parquet file under a temporary name, renamed into place by `close`: a file
    with the final name is always whole (a killed crawl leaves only `*.open`)."""

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        self.path = Path(path)
        self.count = 0
        self._open = self.path.with_name(self.path.name + ".open")
        self._schema = schema()
        self._rows: list[dict[str, Any]] = []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer: Any = pq.ParquetWriter(str(self._open), self._schema)
        except OSError as exc:
            raise StorageError(f"cannot write {self._open}: {exc.strerror or exc}") from None

    def add(self, page: PageFeatures) -> None:
        """Add one page's row."""
        self._rows.append(to_row(page))
        self.count += 1
        if len(self._rows) >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows.clear()

    def close(self) -> None:
        """Write what is buffered and put the file in place."""
        try:
            self._flush()
            self._writer.close()
            os.replace(self._open, self.path)
        except OSError as exc:
            raise StorageError(f"cannot write {self.path}: {exc.strerror or exc}") from None


def write_pages(pages: Iterable[PageFeatures], path: Path) -> int:
    """Write a whole pages table to `path` (atomically); how many rows."""
    writer = PagesWriter(path)
    for page in pages:
        writer.add(page)
    writer.close()
    return writer.count


def part_path(folder: Path, worker: int) -> Path:
    """A new part's path for one crawling process of this run."""
    return Path(folder) / FEATURES_DIR / f"pages-w{worker}-{time.time_ns()}.parquet"


def pages_path(folder: Path) -> Path:
    """Where the crawl's pages table is: DIR/features/pages.parquet."""
    return Path(folder) / FEATURES_DIR / PAGES_FILE


def stored_files(folder: Path) -> list[Path]:
    """The files that hold the crawl's features, oldest first: pages.parquet if any, and the crawl's
    parts closed after it (a crawl with --features after `features` or `classify` wrote it)."""
    whole = pages_path(folder)
    parts = sorted((Path(folder) / FEATURES_DIR).glob(PART_GLOB),
                   key=lambda p: (p.stat().st_mtime_ns, p.name))
    if not whole.is_file():
        return parts
    since = whole.stat().st_mtime_ns
    return [whole, *(part for part in parts if part.stat().st_mtime_ns > since)]


def read_pages(folder: Path) -> list[PageFeatures]:
    """Every page's features stored in the crawl folder, one a URL (its last row); ConfigError when
    there are none."""
    import pyarrow.parquet as pq

    files = stored_files(folder)
    if not files:
        raise ConfigError(f"{folder} holds no page features: run `harvestman features {folder}` "
                          "(or crawl with --features)")
    pages: dict[str, PageFeatures] = {}
    for path in files:
        try:
            rows = pq.read_table(str(path)).to_pylist()
        except Exception as exc:  # pyarrow raises its own errors for a damaged file
            raise StorageError(f"cannot read {path}: {exc}") from None
        for row in rows:
            page = from_row(row)
            earlier = pages.pop(page.url, None)  # the last row of a URL, in the order they were written
            if earlier is not None:  # a crawl's later part has no category: the earlier one stands
                page = _labelled(page, (earlier.category, earlier.category_probability))
            pages[page.url] = page
    return list(pages.values())


def stored_categories(folder: Path) -> dict[str, tuple[str, float]]:
    """url -> (category, probability) of each page a classifier labelled, as stored in the crawl
    folder: what `harvestman features` carries into the table it rewrites."""
    import pyarrow.parquet as pq

    found: dict[str, tuple[str, float]] = {}
    for path in stored_files(folder):
        try:
            table = pq.read_table(str(path), columns=list(_CATEGORY_COLUMNS)).to_pydict()
        except Exception as exc:  # pyarrow raises its own errors for a damaged file
            raise StorageError(f"cannot read the categories in {path} (remove the file to compute the "
                               f"features afresh): {exc}") from None
        for url, category, probability in zip(*table.values(), strict=True):
            if category:
                found[url] = (category, probability or 0.0)
    return found


def _labelled(page: PageFeatures, known: tuple[str, float] | None) -> PageFeatures:
    """`page` with the category (and probability) a classifier gave it before, unless it has one."""
    if known is None or not known[0] or page.category:
        return page
    return replace(page, category=known[0], category_probability=known[1])


def html_responses(folder: Path) -> Iterator[tuple[str, str, bytes]]:
    """(url, Content-Type header, body) of the last HTML 200 response of each URL in the crawl's WARC
    files (by WARC-Date, then file order), as `harvestman features` reads them."""
    for found in stored_responses(folder, latest=True):
        yield found.url, found.content_type, found.body or b""


def html_text(body: bytes, content_type: str) -> str:
    """A stored HTML body as text, decoded as the crawl's fetcher decodes it (so that features
    computed from the WARC files equal those the crawl computed)."""
    from harvestman.fetch.content import decode_text, detect_charset

    charset, _source = detect_charset(body, content_type or None)
    return decode_text(body, charset)


def features_from_warc(folder: Path, *, top_k: int = TOP_K) -> tuple[Path, int]:
    """Compute every HTML page's features from the crawl's WARC files into DIR/features/pages.parquet;
    (its path, how many pages)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a crawl folder")
    if not CrawlDir(folder).warc_files():
        raise ConfigError(f"{folder} holds no WARC files (DIR/warc/*.warc.gz, DIR/segments/*/warc/)")
    kept = stored_categories(folder)  # read whole before the table is replaced
    pages = (_labelled(extract_features(html_text(body, ctype), url, top_k=top_k), kept.get(url))
             for url, ctype, body in html_responses(folder))
    path = pages_path(folder)
    return path, write_pages(pages, path)

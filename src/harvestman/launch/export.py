"""`export`: a crawl's URLs or links (JSONL, Parquet; the rows of batch/rows.py), its pages, renders,
Markdown or search documents, or a CDXJ index of its WARC files."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harvestman.batch.rows import (
    LINK_COLUMNS,
    URL_COLUMNS,
    WRITERS,
    Column,
    link_row,
    url_row,
    write_jsonl,
    write_rows,
)
from harvestman.model.errors import ConfigError, StorageError
from harvestman.store.crawldir import CrawlDir
from harvestman.store.warc_read import is_open, whole_records

EXPORT_FORMATS: tuple[str, ...] = (*WRITERS, "cdxj")
EXPORT_WHAT: tuple[str, ...] = ("urls", "links")  # one record per URL, or one row per edge of the link graph
EXPORT_WHAT += ("pages",)  # one row per HTML page with its features (index/pages.py)
EXPORT_FORMATS += ("opensearch", "solr")  # --what index: bulk files for search servers (index/export.py)
EXPORT_WHAT += ("index",)  # the search index's documents
EXPORT_WHAT += ("renders",)  # one row per page rendered in a browser (store/warc_renders.py)
EXPORT_WHAT += ("markdown",)  # one row per HTML page as Markdown, one per chunk (index/markdown_files.py)
STDOUT = Path("-")  # `--out -`: the export's lines go to standard output


@dataclass(frozen=True, slots=True)
class Exported:
    """Where an export went and how many records (or index lines) it holds."""

    path: Path
    count: int
    note: str = ""  # why the export may not be what was expected (a crawl with no WARC file, say)


@contextmanager
def _lines_to(path: Path) -> Iterator[TextIO]:
    """A text file to write an export's lines to: `path`, or standard output for STDOUT."""
    if path == STDOUT:
        yield sys.stdout
        sys.stdout.flush()
        return
    with open(path, "w", encoding="utf-8") as out:
        yield out


def export_records(folder: Path, fmt: str, output: Path | None = None, db: str = "", *,
                   what: str = "urls", chunk_size: int | None = None) -> Exported:
    """Write one record per URL (`what="urls"`) or one row per link of each fetched HTML page
    (`"links"`) as JSON lines or Parquet, or a CDXJ index of the WARC files; JSON lines and CDXJ
    to standard output when `output` is STDOUT; `chunk_size`: the markdown export's (characters a
    chunk; 0 no chunks)."""
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}: use {', '.join(EXPORT_FORMATS)}")
    if what not in EXPORT_WHAT:
        raise ConfigError(f"unknown export {what!r}: use {', '.join(EXPORT_WHAT)}")
    if chunk_size is not None and what != "markdown":
        raise ConfigError("--chunk-size is the Markdown export's: give it with --what markdown")
    if output == STDOUT and what == "markdown":
        raise ConfigError("--what markdown is written to files (pages and chunks beside them): name "
                          "one with --out")
    if output == STDOUT and (fmt not in ("jsonl", "cdxj") or what == "index"):
        raise ConfigError(f"--format {fmt}{' --what index' if what == 'index' else ''} is written to "
                          "files: name one with --out (only jsonl and cdxj go to standard output)")
    if what == "markdown":
        return _export_markdown(folder, fmt, output, chunk_size)
    if what == "index" or fmt in ("opensearch", "solr"):
        return _export_index(folder, fmt, output, what)
    if what == "pages":
        if fmt == "cdxj":
            raise ConfigError("--what pages is written as jsonl or parquet, not cdxj")
        return _export_pages(folder, fmt, output or Path(folder) / f"pages.{fmt}")
    if what == "renders":
        if fmt != "jsonl":
            raise ConfigError("--what renders is written as jsonl")
        return _export_renders(folder, output or Path(folder) / "renders.jsonl")
    if what == "links":
        if fmt == "cdxj":
            raise ConfigError("--what links is written as jsonl or parquet, not cdxj")
        return _export_links(folder, fmt, output or Path(folder) / f"links.{fmt}", db)
    if fmt == "cdxj":
        CrawlDir(Path(folder), db).read().close()  # the same clear error for a folder that holds no crawl
        path = output or Path(folder) / "index.cdxj"
        lines = _cdxj_to_stdout(Path(folder)) if path == STDOUT else write_cdxj(Path(folder), path)
        return Exported(path, lines, _cdxj_note(Path(folder), lines))
    path = output or Path(folder) / f"export.{fmt}"
    with CrawlDir(Path(folder), db).read() as frontier:
        return Exported(path, _write(fmt, map(url_row, frontier.records()), URL_COLUMNS, path))


def _write(fmt: str, rows: Iterable[dict[str, Any]], cols: Sequence[Column], path: Path) -> int:
    """Write rows with batch/rows.py's writer for `fmt`; JSON lines to standard output for STDOUT."""
    if path == STDOUT:
        with _lines_to(path) as out:
            return write_jsonl(rows, out)
    return write_rows(fmt, rows, cols, path)


def _export_index(folder: Path, fmt: str, output: Path | None, what: str) -> Exported:
    """The search index's documents as bulk files for OpenSearch or Solr (a folder of them)."""
    if what != "index":
        raise ConfigError(f"--format {fmt} writes the search index: use it with --what index")
    from harvestman.index.export import export_index  # imported here: tantivy loads only for this

    written = export_index(folder, fmt, output)
    return Exported(written.folder, written.documents)


def _export_links(folder: Path, fmt: str, path: Path, db: str) -> Exported:
    with CrawlDir(Path(folder), db).read() as crawl:
        return Exported(path, _write(fmt, map(link_row, crawl.links()), LINK_COLUMNS, path))


def _export_renders(folder: Path, path: Path) -> Exported:
    """One row per rendered page: where its DOM and screenshot are in the WARC files, and why."""
    from harvestman.store.warc_renders import rendered_pages

    if not Path(folder).is_dir():
        raise ConfigError(f"{folder} is not a crawl folder")
    with _lines_to(path) as out:
        return Exported(path, write_jsonl(rendered_pages(folder), out))


def _export_markdown(folder: Path, fmt: str, output: Path | None, chunk_size: int | None) -> Exported:
    """One row per HTML page as Markdown and one per chunk, with provenance (index/markdown_files.py)."""
    from harvestman.index.markdown import DEFAULT_CHUNK_SIZE
    from harvestman.index.markdown_files import MARKDOWN_FORMATS, chunks_path, crawl_pages, write_markdown

    if fmt not in MARKDOWN_FORMATS:
        raise ConfigError(f"--what markdown is written as {' or '.join(MARKDOWN_FORMATS)}, not {fmt}")
    size = DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size
    if size < 0:
        raise ConfigError(f"--chunk-size must be 0 (no chunks) or more characters, not {size}")
    path = output or Path(folder) / f"markdown.{fmt}"
    pages, chunks = write_markdown(crawl_pages(Path(folder)), path, fmt, size)
    note = f"{chunks} chunks of at most {size} characters written to {chunks_path(path)}" if size else ""
    return Exported(path, pages, note)


def _export_pages(folder: Path, fmt: str, path: Path) -> Exported:
    """One row per HTML page with its features, as stored in DIR/features (index/pages.py)."""
    from harvestman.index.pages import read_pages, to_row, write_pages

    pages = read_pages(folder)
    if fmt == "parquet":
        return Exported(path, write_pages(pages, path))
    with _lines_to(path) as out:
        return Exported(path, write_jsonl(map(to_row, pages), out))


def _cdxj_note(folder: Path, lines: int) -> str:
    """What a crawl's CDXJ index leaves to say: why it is empty, and the files left open in it."""
    files = CrawlDir(Path(folder)).warc_files()
    left_open = [p for p in files if is_open(p)]
    note = (f"{len(left_open)} WARC files still being written or left open by a stopped machine "
            "are indexed up to their last whole record, under their .open names (a `worker` or "
            "`crawl --resume` on their folder closes them)") if left_open else ""
    if lines:
        return note
    where = f"the {len(files)} WARC files of {folder}" if files else \
        f"{folder}, which holds no WARC file (DIR/warc/, DIR/segments/*/warc/, DIR/machines/*/warc/)"
    return f"no response record in {where}" + (f"; {note}" if note else "")


def _cdxj_to_stdout(folder: Path) -> int:
    """Index the crawl's WARC files (write_cdxj) to standard output, through a file: the index is
    sorted, so nothing can be written before every file is read."""
    with tempfile.TemporaryDirectory(prefix="harvestman-cdxj-") as tmp:
        path = Path(tmp) / "index.cdxj"
        lines = write_cdxj(folder, path)
        sys.stdout.flush()
        with open(path, "rb") as index:
            shutil.copyfileobj(index, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    return lines


def write_cdxj(folder: Path, path: Path) -> int:
    """Index the WARC files of the crawl in `folder` (continuous, segments, other machines') as sorted
    CDXJ (pywb's format); returns the lines. Each line's filename is relative to `folder`. A file
    still being written, or left open by a killed machine (`.warc.gz.open`), is indexed up to its
    last whole record.
    """
    # webrecorder's cdxj-indexer, the indexer pywb's own tools use: the SURT keys, the sort order and
    # the fields (offset, length, filename relative to dir_root) are the ones replay expects.
    from cdxj_indexer.main import CDXJIndexer
    from warcio.exceptions import ArchiveLoadFailed

    class WholeRecords(CDXJIndexer):  # type: ignore[misc]  # untyped library
        """An open file read only up to its last whole record (a torn one would fail the index)."""

        def process_one(self, input_: Any, output: Any, filename: str) -> None:
            if is_open(Path(filename)):
                input_ = whole_records(Path(filename))
            super().process_one(input_, output, filename)

    files = [str(p) for p in CrawlDir(Path(folder)).warc_files()]
    partial = path.with_name(path.name + ".partial")
    try:
        # Written aside and renamed: a failed run never leaves a half index where a good one was.
        WholeRecords(str(partial), files, sort=True, dir_root=str(folder)).process_all()
    except ArchiveLoadFailed as exc:
        partial.unlink(missing_ok=True)
        raise StorageError(f"cannot index the WARC files of {folder}: {exc}") from None
    os.replace(partial, path)
    with open(path, "rb") as index:
        return sum(1 for _ in index)

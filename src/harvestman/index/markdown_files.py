"""The Markdown of a crawl's pages on disk: computed from its WARC files (`harvestman export DIR --what
markdown`), written as JSON lines or Parquet, a table of pages and one of chunks.

Both tables carry each page's provenance (the response's WARC-Record-ID, WARC file relative to the
crawl folder, offset and WARC-Date), so a row leads back to the bytes it was made from. The crawl's
own sink (`--markdown`, index/markdown_sink.py) writes the same rows as it goes.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
from collections import deque
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from harvestman.index.markdown import (
    DEFAULT_CHUNK_SIZE,
    MarkdownPage,
    Provenance,
    chunk_row,
    chunk_schema,
    markdown_page,
    page_chunks,
    page_row,
    page_schema,
)
from harvestman.index.pages import html_text
from harvestman.model.errors import ConfigError, StorageError
from harvestman.store.crawldir import CrawlDir
from harvestman.store.warc import OPEN_SUFFIX
from harvestman.store.warc_read import StoredResponse, stored_responses

MARKDOWN_FORMATS = ("jsonl", "parquet")
BATCH_ROWS = 256  # rows buffered before a Parquet row group is written
CONVERT_BATCH = 8  # pages sent to a worker process at once: fewer round trips, little held back
BATCHES_AHEAD = 3  # batches a worker process may have waiting, so that it never idles


def relative_file(path: Path, folder: Path) -> str:
    """A WARC file's name as provenance gives it: relative to the crawl folder, as named once
    finished (a running crawl's `.warc.gz.open` is read under that name, then renamed)."""
    name = str(path)[: -len(OPEN_SUFFIX)] if str(path).endswith(OPEN_SUFFIX) else str(path)
    try:
        return str(Path(name).relative_to(folder))
    except ValueError:
        return name


def stored_page(found: StoredResponse, folder: Path) -> MarkdownPage:
    """The Markdown record of one stored HTML response."""
    # WARC-Date is ISO 8601 in UTC already ('2026-12-06T23:10:00.123456Z').
    provenance = Provenance(found.record_id, relative_file(found.file, folder), found.offset, found.date)
    return markdown_page(html_text(found.body or b"", found.content_type), found.url, provenance)


def crawl_pages(folder: Path) -> Iterator[MarkdownPage]:
    """The Markdown of every HTML 200 response in the crawl's WARC files (segments' and files still
    being written included), in the order stored: each file read once, bodies and all (write_markdown
    keeps each URL's last). The pages are converted in one process a core."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a crawl folder")
    if not CrawlDir(folder).warc_files():
        raise ConfigError(f"{folder} holds no WARC files (DIR/warc/*.warc.gz, DIR/segments/*/warc/)")
    responses = stored_responses(folder, open_files=True)
    processes = os.cpu_count() or 1
    if processes == 1:
        return (stored_page(found, folder) for found in responses)
    return _converted_apart(responses, folder, processes)


def _stored_pages(batch: list[StoredResponse], folder: Path) -> list[MarkdownPage]:
    return [stored_page(found, folder) for found in batch]


def _quiet_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle, once


def _converted_apart(responses: Iterable[StoredResponse], folder: Path,
                     processes: int) -> Iterator[MarkdownPage]:
    """The pages of `responses` converted in worker processes, in order; the reading (here) and the
    converting overlap, with at most a few batches a process read ahead (their bodies in memory)."""
    from concurrent.futures import Future, ProcessPoolExecutor

    from harvestman.index.features import detect_language

    # The language model loaded here, once: forked workers share it (each loading its own cost as
    # much CPU as converting a hundred pages).
    detect_language("the language model is loaded before the workers start")
    ahead: deque[Future[list[MarkdownPage]]] = deque()
    with ProcessPoolExecutor(processes, initializer=_quiet_worker) as pool:
        found = iter(responses)
        while batch := list(itertools.islice(found, CONVERT_BATCH)):
            ahead.append(pool.submit(_stored_pages, batch, folder))
            if len(ahead) >= BATCHES_AHEAD * processes:
                yield from ahead.popleft().result()
        while ahead:
            yield from ahead.popleft().result()


class RowsWriter:
    """Rows to a JSONL or Parquet file, under a temporary name until `close` puts it in place."""

    def __init__(self, path: Path, fmt: str, schema: Any) -> None:
        self.path = Path(path)
        self.count = 0
        self._open = self.path.with_name(self.path.name + ".open")
        self._schema = schema
        self._rows: list[dict[str, Any]] = []
        self._text: TextIO | None = None
        self._parquet: Any = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if fmt == "parquet":
                import pyarrow.parquet as pq

                self._parquet = pq.ParquetWriter(str(self._open), schema)
            else:
                self._text = open(self._open, "w", encoding="utf-8")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            raise StorageError(f"cannot write {self._open}: {exc.strerror or exc}") from None

    def add(self, row: dict[str, Any]) -> None:
        """Write one row (Parquet: buffered in groups)."""
        self.count += 1
        try:
            if self._text is not None:
                self._text.write(json.dumps(row, ensure_ascii=False) + "\n")
                return
        except OSError as exc:
            raise StorageError(f"cannot write {self._open}: {exc.strerror or exc}") from None
        self._rows.append(row)
        if len(self._rows) >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._rows and self._parquet is not None:
            self._parquet.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows.clear()

    def abort(self) -> None:
        """Leave no file behind (a failed export)."""
        try:
            if self._text is not None:
                self._text.close()
            elif self._parquet is not None:
                self._parquet.close()
        except (OSError, ValueError):
            pass
        self._open.unlink(missing_ok=True)

    def close(self, leave_out: Collection[str] = ()) -> None:
        """Write what is buffered and put the file in place, without the rows of the WARC records
        `leave_out` names (rows written before a newer response of their page came)."""
        try:
            if self._text is not None:
                self._text.close()
            else:
                self._flush()
                self._parquet.close()
            if leave_out:
                self._drop(leave_out)
            os.replace(self._open, self.path)
        except OSError as exc:
            raise StorageError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def _drop(self, leave_out: Collection[str]) -> None:
        """Copy the file without the rows of `leave_out`'s records (rare: a page fetched again)."""
        kept = self._open.with_name(self._open.name + ".kept")
        if self._parquet is not None:
            import pyarrow as pa
            import pyarrow.compute as pc
            import pyarrow.parquet as pq

            dropped = pa.array(sorted(leave_out), pa.string())
            with pq.ParquetWriter(str(kept), self._schema) as writer:
                for batch in pq.ParquetFile(str(self._open)).iter_batches():
                    gone = pc.is_in(batch.column("warc_record_id"), value_set=dropped)
                    rows = batch.filter(pc.invert(gone))
                    writer.write_batch(rows)
                    self.count -= len(batch) - len(rows)
        else:
            with open(self._open, encoding="utf-8") as rows, open(kept, "w", encoding="utf-8") as out:
                for line in rows:
                    if json.loads(line)["warc_record_id"] in leave_out:
                        self.count -= 1
                    else:
                        out.write(line)
        os.replace(kept, self._open)


class MarkdownWriter:
    """A pages table and, when chunks are asked for (`chunk_size` > 0), a chunks table beside it."""

    def __init__(self, pages_path: Path, fmt: str, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 chunks_file: Path | None = None) -> None:
        if fmt not in MARKDOWN_FORMATS:
            raise ConfigError(f"--what markdown is written as {' or '.join(MARKDOWN_FORMATS)}, not {fmt!r}")
        if chunk_size < 0:
            raise ConfigError(f"--chunk-size must be 0 (no chunks) or more characters, not {chunk_size}")
        self.chunk_size = chunk_size
        self.pages = RowsWriter(pages_path, fmt, page_schema())
        chunks_file = chunks_file or chunks_path(pages_path)
        self.chunks = RowsWriter(chunks_file, fmt, chunk_schema()) if chunk_size else None

    def add(self, page: MarkdownPage) -> None:
        """Write a page's row and its chunks' rows."""
        self.pages.add(page_row(page))
        if self.chunks is not None:
            for chunk in page_chunks(page, self.chunk_size):
                self.chunks.add(chunk_row(chunk))

    def abort(self) -> None:
        """Leave neither file behind."""
        self.pages.abort()
        if self.chunks is not None:
            self.chunks.abort()

    def close(self, leave_out: Collection[str] = ()) -> None:
        """Put both files in place, without the rows of the records `leave_out` names."""
        self.pages.close(leave_out)
        if self.chunks is not None:
            self.chunks.close(leave_out)


def chunks_path(pages_path: Path) -> Path:
    """Where the chunks of a pages file go: beside it, `-chunks` added to its name."""
    stem, dot, suffix = pages_path.name.partition(".")
    return pages_path.with_name(f"{stem}-chunks{dot}{suffix}")


def write_markdown(pages: Iterable[MarkdownPage], path: Path, fmt: str,
                   chunk_size: int = DEFAULT_CHUNK_SIZE) -> tuple[int, int]:
    """Write the pages (and their chunks) to `path` (and its chunks path), each URL's last response
    only (by WARC-Date, then WARC file, then offset); (pages, chunks)."""
    writer = MarkdownWriter(path, fmt, chunk_size)
    last: dict[str, tuple[tuple[str, str, int], str]] = {}  # URL: its response written, and its record
    superseded: set[str] = set()
    try:
        for page in pages:
            made = page.provenance
            when = (made.fetch_time, made.warc_file, made.offset)
            seen = last.get(page.url)
            if seen is not None:
                if when < seen[0]:
                    continue  # an older response of a page written already
                superseded.add(seen[1])
            last[page.url] = (when, made.record_id)
            writer.add(page)
    except BaseException:
        writer.abort()
        raise
    writer.close(superseded)
    return writer.pages.count, writer.chunks.count if writer.chunks is not None else 0

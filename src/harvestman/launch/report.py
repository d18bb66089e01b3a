"""Reports over a crawl folder: `status` figures, `export` of URLs or links, a CDXJ index."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from harvestman.model.errors import ConfigError, StorageError
from harvestman.model.records import LinkEdge, UrlRecord, UrlState
from harvestman.store.crawldir import CrawlDir
from harvestman.store.frontier import CrawlDb
from harvestman.store.runlog import Run, read_runs
from harvestman.store.warc_read import is_open, whole_records

EXPORT_BATCH = 10_000
EXPORT_FORMATS: tuple[str, ...] = ("jsonl", "parquet", "cdxj")
EXPORT_WHAT: tuple[str, ...] = ("urls", "links")  # one record per URL, or one row per edge of the link graph
EXPORT_WHAT += ("pages",)  # one row per HTML page with its features (index/pages.py)
EXPORT_FORMATS += ("opensearch", "solr")  # --what index: bulk files for search servers (index/export.py)
EXPORT_WHAT += ("index",)  # the search index's documents
EXPORT_WHAT += ("renders",)  # one row per page rendered in a browser (store/warc_renders.py)
EXPORT_WHAT += ("markdown",)  # one row per HTML page as Markdown, one per chunk (index/markdown_files.py)
STDOUT = Path("-")  # `--out -`: the export's lines go to standard output
_TIME_FIELDS = ("fetch_time", "next_fetch_time")  # epoch seconds in the database; 0 means never


@dataclass(frozen=True, slots=True)
class Exported:
    """Where an export went and how many records (or index lines) it holds."""

    path: Path
    count: int
    note: str = ""  # why the export may not be what was expected (a crawl with no WARC file, say)


def utc_time(ts: float) -> datetime | None:
    """Epoch seconds as an aware UTC datetime; 0 (never) as None."""
    return datetime.fromtimestamp(ts, UTC) if ts else None


def iso_time(ts: float) -> str | None:
    """Epoch seconds as ISO 8601 in UTC ('2026-05-01T12:00:00.123456Z'); 0 (never) as None."""
    when = utc_time(ts)
    return None if when is None else _iso(when)


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _state_names(counts: dict[UrlState, int]) -> dict[str, int]:
    return {state.name.lower(): counts.get(state, 0) for state in UrlState}


def crawl_report(folder: Path, db: str = "") -> dict[str, Any]:
    """URLs by state, responses, errors by class, bytes, time span, and the same per host."""
    frontier = CrawlDir(Path(folder), db).read()
    try:
        counts = frontier.counts()
        totals = frontier.totals()
        hosts = frontier.host_totals()
        errors = frontier.error_counts()
        focus = _focus_summary(folder, frontier)
    finally:
        frontier.close()
    span = totals.last_fetch - totals.first_fetch
    runs = run_figures(folder)
    return {
        **focus,
        "dir": str(folder),
        "urls": sum(counts.values()),
        "states": _state_names(counts),  # URLs in each state
        "responses": totals.responses,  # URLs that got an HTTP response, of any status
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])),  # URLs per error class
        "wire_bytes": totals.wire_bytes,
        "bandwidth": {  # headers and bodies on the wire; bodies as transferred and decoded; saved by stops
            "wire_bytes": totals.wire_bytes,
            "body_wire_bytes": totals.body_wire_bytes,
            "decoded_bytes": totals.body_bytes,
            "saved_bytes": totals.saved_bytes,
            "partial_pages": totals.partial_pages,
        },
        "host_count": len(hosts),
        "hosts": {
            h.host: {
                "urls": sum(h.states.values()),
                "states": _state_names(h.states),
                "errors": h.errors,
                "wire_bytes": h.wire_bytes,
            }
            for h in hosts
        },
        "first_fetch": iso_time(totals.first_fetch),
        "last_fetch": iso_time(totals.last_fetch),
        "elapsed_seconds": span,
        # Over the time the runs ran (a crawl resumed a day later did not crawl for a day); a crawl
        # without an events log (`download`): over its span of fetch times.
        "pages_per_second": runs["pages_per_second"] if runs else _rate(totals.responses, span),
        "runs": runs,
    }


def run_figures(folder: Path) -> dict[str, Any]:
    """The crawl's runs as its events logs tell them (store/runlog.py): how many, the time they ran
    (the idle time between runs left out), their responses (a re-crawl's 304s included) and bytes,
    pages/s over that time, and the last run's own figures; {} for a crawl with no events log."""
    runs = read_runs(CrawlDir(Path(folder)).event_logs())
    if not runs:
        return {}
    active = _busy_seconds(runs)
    responses = sum(r.responses for r in runs)
    last = runs[-1]
    return {
        "count": len(runs),
        "seconds": active,
        "responses": responses,
        "bytes": sum(r.bytes for r in runs),
        "pages_per_second": _rate(responses, active),
        "last": {
            "started": iso_time(last.started),
            "ended": iso_time(last.ended),
            "seconds": last.seconds,
            "responses": last.responses,
            "not_modified": last.not_modified,
            "bytes": last.bytes,
            "pages_per_second": _rate(last.responses, last.seconds),
        },
    }


def _busy_seconds(runs: list[Run]) -> float:
    """The time covered by runs sorted by start (runs that overlap counted once)."""
    total, end = 0.0, float("-inf")
    for run in runs:
        total += max(0.0, run.ended - max(run.started, end))
        end = max(end, run.ended)
    return total


def _rate(responses: int, seconds: float) -> float:
    return responses / seconds if seconds > 0 else float(responses)


def _focus_summary(folder: Path, frontier: CrawlDb) -> dict[str, Any]:
    """A focused crawl's pages by topic ({"focus": ...}); {} for a crawl without a saved focus."""
    path = Path(folder) / "focus" / "focus.json"  # crawl/focusfile.py
    if not path.is_file():
        return {}
    from harvestman.batch.harvest import focus_summary

    try:
        threshold = float(json.loads(path.read_text(encoding="utf-8"))["spec"]["threshold"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {"focus": focus_summary(frontier.records(), threshold)}


def _as_row(record: UrlRecord) -> dict[str, Any]:
    """One export row: the state by name, times as UTC datetimes, and None for what never happened."""
    row = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    row["state"] = record.state.name.lower()
    for name in _TIME_FIELDS:
        row[name] = utc_time(row[name])
    row["final_url"] = record.final_url or None  # '' only before any response
    return row


def _json_default(value: object) -> str:
    if isinstance(value, datetime):
        return _iso(value)
    raise TypeError(f"cannot export {type(value).__name__}")


def _link_row(edge: LinkEdge) -> dict[str, Any]:
    """One row of the links export: an edge of the link graph, its kind by name."""
    return {"from_url": edge.from_url, "to_url": edge.to_url, "anchor": edge.anchor,
            "kind": edge.kind.value, "nofollow": edge.nofollow}


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
    frontier = CrawlDir(Path(folder), db).read()
    try:
        if fmt == "parquet":
            return Exported(path, _write_parquet(frontier, path))
        count = 0
        with _lines_to(path) as out:
            for record in frontier.records():
                row = _as_row(record)
                row["metadata"] = json.loads(record.metadata) if record.metadata else None  # an object
                out.write(json.dumps(row, ensure_ascii=False, default=_json_default) + "\n")
                count += 1
        return Exported(path, count)
    finally:
        frontier.close()


def _export_index(folder: Path, fmt: str, output: Path | None, what: str) -> Exported:
    """The search index's documents as bulk files for OpenSearch or Solr (a folder of them)."""
    if what != "index":
        raise ConfigError(f"--format {fmt} writes the search index: use it with --what index")
    from harvestman.index.export import export_index  # imported here: tantivy loads only for this

    written = export_index(folder, fmt, output)
    return Exported(written.folder, written.documents)


def _export_links(folder: Path, fmt: str, path: Path, db: str) -> Exported:
    crawl = CrawlDir(Path(folder), db).read()
    try:
        rows = map(_link_row, crawl.links())
        if fmt == "parquet":
            import pyarrow as pa  # imported here: it is heavy, and only this export needs it

            schema = pa.schema([("from_url", pa.string()), ("to_url", pa.string()), ("anchor", pa.string()),
                                ("kind", pa.string()), ("nofollow", pa.bool_())])
            return Exported(path, _write_parquet_rows(rows, schema, path))
        count = 0
        with _lines_to(path) as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        return Exported(path, count)
    finally:
        crawl.close()


def _export_renders(folder: Path, path: Path) -> Exported:
    """One row per rendered page: where its DOM and screenshot are in the WARC files, and why."""
    from harvestman.store.warc_renders import rendered_pages

    if not Path(folder).is_dir():
        raise ConfigError(f"{folder} is not a crawl folder")
    count = 0
    with _lines_to(path) as out:
        for row in rendered_pages(folder):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return Exported(path, count)


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
        for page in pages:
            out.write(json.dumps(to_row(page), ensure_ascii=False) + "\n")
    return Exported(path, len(pages))


def _write_parquet_rows(rows: Iterable[dict[str, Any]], schema: Any, path: Path) -> int:
    """Write `rows` to a Parquet file with `schema`, in batches; how many."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    count = 0
    batch: list[dict[str, Any]] = []
    with pq.ParquetWriter(str(path), schema) as writer:
        for row in rows:
            batch.append(row)
            count += 1
            if len(batch) >= EXPORT_BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch.clear()
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return count


def _write_parquet(frontier: CrawlDb, path: Path) -> int:
    import pyarrow as pa  # imported here: it is heavy, and only this export needs it

    # The schema follows UrlRecord's fields, so an empty crawl still exports a valid file.
    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "UrlState": pa.string()}
    schema = pa.schema([
        (f.name, pa.timestamp("us", tz="UTC") if f.name in _TIME_FIELDS
         else pa.uint64() if f.name == "simhash" else types[str(f.type)])
        for f in dataclasses.fields(UrlRecord)
    ])
    return _write_parquet_rows(map(_as_row, frontier.records()), schema, path)


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

"""readdb: what a crawl holds, as Nutch's readdb (the crawl database), readlinkdb (the link graph)
and readseg (the segments) show it: statistics, one URL, or everything dumped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvestman.batch import segments
from harvestman.batch.generate import score_source
from harvestman.batch.rows import (
    LINK_COLUMNS,
    URL_COLUMNS,
    WRITERS,
    Column,
    columns,
    link_row,
    state_name,
    url_row,
    write_rows,
)
from harvestman.model.errors import ConfigError, InvalidUrlError
from harvestman.model.records import UrlRecord
from harvestman.net.urls import normalize
from harvestman.store.crawldir import CrawlDir
from harvestman.store.sqlite_store import SqliteStore

DUMP_FORMATS = tuple(WRITERS)
# A segment's URLs: generated in which state, and where their fetch left them (batch/rows.py's columns).
_FETCHED = ("state", "http_status", "fetch_time", "signature")
_SEGMENT_COLUMNS = (Column("segment", "str"), Column("url", "str"), Column("generated_state", "state"),
                    *columns(_FETCHED))


def segment_info(segment: Path) -> dict[str, Any]:
    """A segment's steps done and sizes."""
    info: dict[str, Any] = {"segment": segment.name,
                            "steps": [s for s in segments.STEPS if segments.done(segment, s)]}
    with open(segment / segments.FETCHLIST, encoding="utf-8") as lines:
        info["generated_urls"] = sum(1 for _ in lines)
    warc = segment / "warc"
    info["warc_bytes"] = sum(p.stat().st_size for p in warc.iterdir()) if warc.is_dir() else 0
    return info


def stats(folder: Path, db: str = "") -> dict[str, Any]:
    """The crawl's figures: URLs by state, scores, hosts, links, segments."""
    with CrawlDir(Path(folder), db).read() as store:
        counts = store.counts()
        total = sum(counts.values())
        scores = [r.score for r in store.records()]
        links = sum(1 for _ in store.links())
        hosts = len(store.host_stats())
        source = score_source(store)
    return {
        "urls": total,
        "states": {state.name.lower(): n for state, n in counts.items()},
        "hosts": hosts,
        "score_source": source,
        "score_min": min(scores) if scores else 0.0,
        "score_max": max(scores) if scores else 0.0,
        "score_avg": sum(scores) / len(scores) if scores else 0.0,
        "links": links,
        "segments": [segment_info(segments.segments_dir(folder) / s) for s in segments.segment_ids(folder)],
    }


def url_info(folder: Path, url: str, db: str = "") -> dict[str, Any]:
    """One URL's row, with its outlinks and the pages linking to it (the link graph's view)."""
    try:
        key = normalize(url)
    except InvalidUrlError as exc:
        raise ConfigError(f"bad URL {url[:200]!r}: {exc}") from None
    with CrawlDir(Path(folder), db).read() as store:
        record = store.get(key)
        if record is None:
            raise ConfigError(f"{key} is not in the crawl database")
        out, into = [], []
        for edge in store.links():
            if edge.from_url == key:
                out.append(edge.to_url)
            if edge.to_url == key:
                into.append(edge.from_url)
    return {**url_row(record), "outlinks": out, "inlinks_from": into}


def _segment_rows(folder: Path) -> Iterator[dict[str, Any]]:
    for name in segments.segment_ids(folder):
        path = segments.segments_dir(folder) / name
        fetched: dict[str, UrlRecord] = {}
        if (path / segments.STORE).is_file():
            seg = SqliteStore.open_read_only(path / segments.STORE)
            try:
                fetched = {r.url: r for r in seg.records()}
            finally:
                seg.close()
        for generated in segments.read_fetchlist(path):
            now = fetched.get(generated.url, generated)
            row = url_row(now)
            yield {"segment": name, "url": generated.url, "generated_state": state_name(generated.state),
                   **{column: row[column] for column in _FETCHED}}


def dump(folder: Path, db: str = "", *, fmt: str = "jsonl", output: Path | None = None) -> dict[str, int]:
    """Write the crawl database, the link graph and the segments' URLs to `output` (a folder,
    DIR/readdb by default) as crawldb.FMT, linkdb.FMT and segments.FMT; rows written per file."""
    if fmt not in DUMP_FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(DUMP_FORMATS)}, got {fmt!r}")
    out = output or Path(folder) / "readdb"
    out.mkdir(parents=True, exist_ok=True)
    store = CrawlDir(Path(folder), db).read()
    written: dict[str, int] = {}
    try:
        urls, links = map(url_row, store.records()), map(link_row, store.links())
        written["crawldb"] = write_rows(fmt, urls, URL_COLUMNS, out / f"crawldb.{fmt}")
        written["linkdb"] = write_rows(fmt, links, LINK_COLUMNS, out / f"linkdb.{fmt}")
    finally:
        store.close()
    written["segments"] = write_rows(fmt, _segment_rows(folder), _SEGMENT_COLUMNS, out / f"segments.{fmt}")
    return written


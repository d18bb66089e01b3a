"""Segments: one round of the cycle's fetching, a folder `DIR/segments/<id>/` (id: the UTC time it
was generated, so that names sort in time order).

A segment holds `fetchlist.jsonl` (the generated UrlRecords), its own small SQLite crawl store
`crawl.db` (what the engine fetches from, seeded with the fetch list's rows), `warc/` and the
engine's logs, and one empty marker file per finished step (`generated`, `fetched`, `parsed`,
`merged`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlRecord, UrlState
from harvestman.store.crawldir import CrawlDir

FETCHLIST = "fetchlist.jsonl"
STORE = "crawl.db"  # the engine's default store name in its output folder: the segment's store
STEPS = ("generated", "fetched", "parsed", "merged")


def segments_dir(folder: Path) -> Path:
    """Where a crawl's segments are."""
    return CrawlDir(Path(folder)).segments_dir


def segment_ids(folder: Path) -> list[str]:
    """The crawl's segments, oldest first."""
    base = segments_dir(folder)
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if p.is_dir() and (p / "generated").exists())


def new_segment(folder: Path, now: float | None = None) -> Path:
    """Make the folder of a new segment, named by the UTC time (a second later if that is taken)."""
    base = segments_dir(folder)
    base.mkdir(parents=True, exist_ok=True)
    when = int(time.time() if now is None else now)
    while True:
        path = base / datetime.fromtimestamp(when, UTC).strftime("%Y%m%d%H%M%S")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            when += 1


def find_segment(folder: Path, name: str | None = None) -> Path:
    """The segment `name` (an id, or a path to it), or the latest; a ConfigError when there is none."""
    if name:
        given = Path(name)
        path = given if (given / "generated").exists() else segments_dir(folder) / given.name
        if not (path / "generated").exists():
            known = segment_ids(folder)
            hint = f" (known: {', '.join(known[-5:])})" if known else " (none yet: run harvestman generate)"
            raise ConfigError(f"no segment {name!r} in {folder}{hint}")
        return path
    ids = segment_ids(folder)
    if not ids:
        raise ConfigError(f"{folder} has no segment yet: run `harvestman generate {folder} --top-n N` first")
    return segments_dir(folder) / ids[-1]


def done(segment: Path, step: str) -> bool:
    """Whether `step` finished on the segment."""
    return (Path(segment) / step).exists()


def mark(segment: Path, step: str) -> None:
    """Record that `step` finished on the segment."""
    (Path(segment) / step).write_text(f"{time.time():.3f}\n")


def marked_at(segment: Path, step: str) -> float:
    """When `step` finished on the segment (time.time() seconds)."""
    return float((Path(segment) / step).read_text().strip())


def require(segment: Path, step: str, needed_by: str) -> None:
    """Refuse to run `needed_by` on a segment where `step` has not finished."""
    if not done(segment, step):
        raise ConfigError(f"segment {Path(segment).name} is not {step} yet: run harvestman "
                          f"{'fetch' if step == 'fetched' else step} on it before {needed_by}")


def write_fetchlist(segment: Path, records: Iterable[UrlRecord]) -> int:
    """Write the generated records (JSON lines, one a URL); how many."""
    count = 0
    path = Path(segment) / FETCHLIST
    with open(path, "w", encoding="utf-8") as out:
        for record in records:
            row = dataclasses.asdict(record)
            row["state"] = int(record.state)
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_fetchlist(segment: Path) -> Iterator[UrlRecord]:
    """The generated records of a segment, in their order."""
    with open(Path(segment) / FETCHLIST, encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            row["state"] = UrlState(row["state"])
            yield UrlRecord(**row)

"""The crawl cycle as Nutch runs it: inject, then (generate, fetch, updatedb) for each round, then
the jobs over what was fetched (invertlinks, rank, dedup)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harvestman.batch.crawldir import open_crawl_store
from harvestman.batch.fetch_segment import FetchedSegment, fetch_segment
from harvestman.batch.generate import generate
from harvestman.batch.inject import inject
from harvestman.batch.seeds import SeedLine
from harvestman.batch.updatedb import Merged, updatedb
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError, FrontierError
from harvestman.store.factory import is_postgres, sqlite_path, store_location

# What runs a segment's fetch: the library's own by default; the CLI passes one with a progress
# display and Ctrl-C handling. It returns whether the segment was fetched to the end.
SegmentFetcher = Callable[[Path, CrawlConfig, Path], FetchedSegment]
# A job run after the rounds, called with the crawl's folder and its database location ('' for
# DIR/crawl.db).
PostRoundStep = Callable[[Path, str], object]


def post_round_steps(ordering: str) -> list[tuple[str, PostRoundStep]]:
    """The jobs after the rounds, in Nutch's crawl script's order: invertlinks (the link database,
    inlink counts), rank (scores: the crawl's ordering's algorithm when it orders by one, else
    PageRank), dedup (duplicates by signature and SimHash)."""
    from harvestman.batch import jobs  # pyarrow and DuckDB: loaded when a cycle gets this far

    algorithm = ordering if ordering in ("indegree", "opic") else "pagerank"
    return [("invertlinks", lambda folder, db: jobs.invertlinks(folder, db=db)),
            ("rank", lambda folder, db: jobs.rank(folder, algorithm=algorithm, db=db)),
            ("dedup", lambda folder, db: jobs.dedup(folder, db=db))]


@dataclass(frozen=True, slots=True)
class Round:
    """One round: its segment, what the fetch did, what updatedb merged."""

    segment: Path
    fetched: FetchedSegment
    merged: Merged


@dataclass(slots=True)
class CycleReport:
    """What a cycle did, round by round, and the jobs run after."""

    rounds: list[Round] = field(default_factory=list)
    post_steps: list[str] = field(default_factory=list)
    stopped: bool = False  # a fetch was stopped: the cycle ended there (resumable)


def crawl_exists(folder: Path, db: str) -> bool:
    """Whether `folder` (or `db`) holds a crawl already."""
    location = store_location(db, Path(folder))
    if not is_postgres(location) and not sqlite_path(location).is_file():
        return False
    try:
        open_crawl_store(folder, db, read_only=True).close()
    except (ConfigError, FrontierError):  # a PostgreSQL database with no crawl schema yet
        return False
    return True


def _default_fetch(folder: Path, cfg: CrawlConfig, segment: Path) -> FetchedSegment:
    return fetch_segment(folder, cfg, segment)


def run_cycle(folder: Path, cfg: CrawlConfig, *, seeds: Sequence[SeedLine] = (), rounds: int, top_n: int,
              max_per_host: int = 0, order: str | None = None, fetch: SegmentFetcher = _default_fetch,
              on_round: Callable[[int, Path | None], None] | None = None) -> CycleReport:
    """inject (the `seeds` given, if any) → (generate → fetch → updatedb) × `rounds` → the post-round
    jobs. A round that generates nothing ends the rounds (nothing is due); a fetch that was stopped
    ends the cycle, its segment left to `harvestman fetch` and `updatedb`."""
    if rounds < 1:
        raise ConfigError(f"--rounds must be at least 1, got {rounds}")
    if top_n < 1:
        raise ConfigError(f"--top-n must be at least 1, got {top_n}")
    if seeds:
        inject(folder, seeds, cfg)
    elif not crawl_exists(folder, cfg.db):
        raise ConfigError(f"{folder} holds no crawl: give seed URLs (or -i SEEDS) to start one")
    report = CycleReport()
    for number in range(1, rounds + 1):
        segment = generate(folder, cfg, top_n=top_n, max_per_host=max_per_host, order=order)
        if on_round is not None:
            on_round(number, segment)
        if segment is None:
            break
        fetched = fetch(folder, cfg, segment)
        if not fetched.done:
            report.stopped = True
            return report
        report.rounds.append(Round(segment, fetched, updatedb(folder, cfg, segment)))
    for name, step in post_round_steps(cfg.ordering):
        step(Path(folder), cfg.db)
        report.post_steps.append(name)
    return report

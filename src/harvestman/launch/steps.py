"""The crawl cycle's steps and the jobs over a crawl, as the command line (`harvestman generate`,
`fetch`, `updatedb`, `index`, `invertlinks`, `rank`, `dedup`) and the server's jobs
(serve/jobrunner.py) run them: each step once, with one exit status and one line saying what it did.

A face loads the crawl's settings its own way (the command line's options, the server's network
ceiling) and shows the outcome its own way (the terminal, the job's message).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from harvestman.batch import segments
from harvestman.batch.generate import generate
from harvestman.batch.updatedb import updatedb
from harvestman.launch.run import fetch_segment_run
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import EXIT_FAILED, EXIT_OK


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What a step did: its exit status, the line that says so, and a note for the user ('' for none)."""

    status: int
    message: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class BatchWhere:
    """Where a batch job (invertlinks, rank, dedup) runs: the crawl, its engine, the snapshot it reads."""

    folder: Path
    db: str = ""
    engine: str = "duckdb"  # batch/jobs.py ENGINES
    reuse_snapshot: bool = False


def show(outcome: StepOutcome) -> int:
    """Print what a step did, as every face shows it (the server keeps the output as the job's
    message): its line, on stderr after `harvestman: ` when the step did not finish, and its note on
    stderr; its exit status."""
    if outcome.status == EXIT_OK:
        print(outcome.message, flush=True)
    else:
        print(f"harvestman: {outcome.message}", file=sys.stderr, flush=True)
    if outcome.note:
        print(f"note: {outcome.note}", file=sys.stderr, flush=True)
    return outcome.status


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def generate_step(folder: Path, cfg: CrawlConfig, *, top_n: int, max_per_host: int = 0,
                  order: str | None = None) -> StepOutcome:
    """Select the due URLs into a new segment."""
    segment = generate(folder, cfg, top_n=top_n, max_per_host=max_per_host, order=order)
    return StepOutcome(EXIT_OK, f"generated segment {segment.name}" if segment
                       else "nothing to generate: no URL is due")


def fetch_step(folder: Path, cfg: CrawlConfig, segment: str | None) -> StepOutcome:
    """Fetch a segment (None: the latest), or go on fetching it; Ctrl-C or SIGTERM stops it, resumable."""
    path = segments.find_segment(folder, segment)
    if segments.done(path, "fetched"):
        return StepOutcome(EXIT_OK, f"segment {path.name} is fetched already")
    fetched = fetch_segment_run(folder, cfg, path)
    if not fetched.done:
        return StepOutcome(EXIT_FAILED, f"fetch of segment {path.name} stopped; fetching it again goes on "
                                        "from there")
    # Counted as updatedb counts the segment's URLs (PageCounts): the two lines agree.
    counts = fetched.status.counts if fetched.status else None
    pages, failed = (counts.fetched, counts.failed) if counts else (0, 0)
    return StepOutcome(EXIT_OK, f"fetched segment {path.name}: {_count(pages, 'page')}, {failed} failed")


def updatedb_step(folder: Path, cfg: CrawlConfig, segment: str | None) -> StepOutcome:
    """Merge a fetched segment (None: the latest) into the crawl database."""
    merged = updatedb(folder, cfg, segment)
    refused = f", {merged.refused} skipped (robots.txt, host budget)" if merged.refused else ""
    return StepOutcome(EXIT_OK, f"merged segment {merged.segment.name}: {_count(merged.pages, 'page')}, "
                                f"{merged.failed} failed{refused}, {merged.new_urls} new URLs, "
                                f"{merged.released} not fetched (due again)")


def index_step(folder: Path, db: str, *, rebuild: bool = False) -> StepOutcome:
    """Bring the crawl's full-text index up to date (`rebuild`: index every page again)."""
    from harvestman.index.indexer import build_index  # tantivy loads only to index

    done = build_index(folder, db, rebuild=rebuild)
    return StepOutcome(EXIT_OK, f"{done.documents} pages in the index ({done.added} added, {done.replaced} "
                                f"replaced, {done.removed} removed, {done.unchanged} unchanged) in "
                                f"{done.seconds:.1f} s: {done.path}", done.missing_note(folder))


def invertlinks_step(where: BatchWhere, *, ignore_internal: bool = False) -> StepOutcome:
    """Each URL's inlinks, into DIR/linkdb/."""
    from harvestman import batch  # pyarrow loads only for the batch jobs

    inverted = batch.invertlinks(where.folder, db=where.db, engine=where.engine,
                                 ignore_internal=ignore_internal, reuse_snapshot=where.reuse_snapshot)
    return StepOutcome(EXIT_OK, f"{inverted.inlinks} inlinks of {inverted.linked_urls} URLs written to "
                                f"{inverted.inlinks_path}")


def rank_step(where: BatchWhere, *, algorithm: str = "pagerank", damping: float = 0.85,
              iterations: int | None = None) -> StepOutcome:
    """Score the crawl's URLs by the link graph."""
    from harvestman import batch

    ranked = batch.rank(where.folder, db=where.db, engine=where.engine, algorithm=algorithm, damping=damping,
                        iterations=iterations, reuse_snapshot=where.reuse_snapshot)
    return StepOutcome(EXIT_OK, f"{ranked.algorithm}: {ranked.urls} URLs scored in {ranked.iterations} "
                                f"iterations, written to {ranked.path}")


def dedup_step(where: BatchWhere, *, distance: int = 3) -> StepOutcome:
    """Mark exact and near-duplicate pages."""
    from harvestman import batch

    found = batch.dedup(where.folder, db=where.db, engine=where.engine, distance=distance,
                        reuse_snapshot=where.reuse_snapshot)
    return StepOutcome(EXIT_OK, f"{found.duplicates} duplicates in {found.groups} groups among {found.pages} "
                                f"pages, written to {found.path}")

"""One served job's process: `python -m harvestman.serve.jobrunner ROOT/<id> JOB_ID`.

It runs the step that the job's state file (ROOT/<id>/jobs/<job>.json) holds, on the crawl of
ROOT/<id> with its stored settings, by the batch functions the `harvestman` steps call. Its network
settings are the ones the server put in the state file (its ceiling over the crawl's), never those
stored with the crawl folder, which may be wider. It prints the step's message, or a one-line error,
for the server to keep as the job's message; its exit status is the `harvestman` step's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harvestman.model.errors import (
    EXIT_FAILED,
    EXIT_OK,
    CommandFailure,
    command_failure,
)
from harvestman.serve.ceiling import NetCeiling
from harvestman.serve.jobspecs import (
    DedupJob,
    FetchJob,
    GenerateJob,
    IndexJob,
    InvertlinksJob,
    JobSpec,
    RankJob,
    UpdatedbJob,
    spec_from_json,
)
from harvestman.serve.layout import CrawlPaths, read_json


def _fetch(folder: Path, db: str, spec: FetchJob, network: dict[str, Any]) -> tuple[int, str]:
    from harvestman.batch import segments
    from harvestman.batch.crawldir import load_config
    from harvestman.launch.run import fetch_segment_run

    cfg = load_config(folder, db, {**network, "quiet": True})
    path = segments.find_segment(folder, spec.segment)
    if segments.done(path, "fetched"):
        return EXIT_OK, f"segment {path.name} is fetched already"
    fetched = fetch_segment_run(folder, cfg, path)  # quiet: no display; SIGTERM stops it
    if not fetched.done:
        return EXIT_FAILED, f"fetch of segment {path.name} stopped; a fetch job goes on from there"
    pages = fetched.status.counts.fetched if fetched.status else 0
    return EXIT_OK, f"fetched segment {path.name}: {pages} pages"


def run_step(folder: Path, db: str, spec: JobSpec, network: dict[str, Any]) -> tuple[int, str]:
    """Run one step on the crawl in `folder` (database `db`, '' for its crawl.db) with the `network`
    settings; its exit status and message (errors raised as HarvestmanError)."""
    if isinstance(spec, FetchJob):
        return _fetch(folder, db, spec, network)
    if isinstance(spec, GenerateJob | UpdatedbJob):
        from harvestman.batch.crawldir import load_config

        cfg = load_config(folder, db, network)
        if isinstance(spec, GenerateJob):
            from harvestman.batch.generate import generate

            segment = generate(
                folder, cfg, top_n=spec.top_n, max_per_host=spec.max_per_host, order=spec.order
            )
            return (
                EXIT_OK,
                f"generated segment {segment.name}" if segment else "nothing to generate: no URL is due",
            )
        from harvestman.batch.updatedb import updatedb

        merged = updatedb(folder, cfg, spec.segment)
        return EXIT_OK, (
            f"merged segment {merged.segment.name}: {merged.fetched} fetched, {merged.new_urls} "
            f"new URLs, {merged.released} not fetched (due again)"
        )
    if isinstance(spec, IndexJob):
        from harvestman.index.indexer import build_index  # tantivy loads only to index

        done = build_index(folder, db, rebuild=spec.rebuild)
        return EXIT_OK, (
            f"{done.documents} pages in the index ({done.added} added, {done.replaced} replaced, "
            f"{done.removed} removed, {done.unchanged} unchanged) in {done.seconds:.1f} s: {done.path}"
        )
    from harvestman import batch  # pyarrow loads only for the batch jobs

    if isinstance(spec, InvertlinksJob):
        inverted = batch.invertlinks(folder, db=db, ignore_internal=spec.ignore_internal)
        return EXIT_OK, (
            f"{inverted.inlinks} inlinks of {inverted.linked_urls} URLs written to {inverted.inlinks_path}"
        )
    if isinstance(spec, RankJob):
        ranked = batch.rank(
            folder, db=db, algorithm=spec.algorithm, damping=spec.damping, iterations=spec.iterations
        )
        return EXIT_OK, (
            f"{ranked.algorithm}: {ranked.urls} URLs scored in {ranked.iterations} iterations, "
            f"written to {ranked.path}"
        )
    assert isinstance(spec, DedupJob)
    found = batch.dedup(folder, db=db, distance=spec.distance)
    return EXIT_OK, (
        f"{found.duplicates} duplicates in {found.groups} groups among {found.pages} pages, "
        f"written to {found.path}"
    )


def run(folder: Path, job_id: str) -> int:
    """Run job `job_id` of the served crawl in `folder`; its exit status."""
    paths = CrawlPaths(folder)
    try:
        state = read_json(paths.jobs / f"{job_id}.json")
        spec = spec_from_json(state["spec"])
        db = str(read_json(paths.meta).get("db_url", ""))
        # A state file without them (written by hand) gets the narrowest: public addresses only.
        network = state.get("network") or NetCeiling().network({})
        status, message = run_step(paths.crawl_dir, db, spec, network)
    except (Exception, KeyboardInterrupt) as exc:
        # The job's message is one line, whatever went wrong (an unexpected error by its type's name).
        failure = command_failure(exc) or CommandFailure(
            EXIT_FAILED, f"harvestman: error: {type(exc).__name__}: {exc}")
        print(failure.line, file=sys.stderr)
        return failure.exit_status
    print(message)
    return status


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]), sys.argv[2]))

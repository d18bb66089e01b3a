"""One served job's process: `python -m harvestman.serve.jobrunner ROOT/<id> JOB_ID`.

It runs the step that the job's state file (ROOT/<id>/jobs/<job>.json) holds, on the crawl of
ROOT/<id> with its stored settings, as the `harvestman` step runs it (launch/steps.py). Its network
settings are the ones the server put in the state file (its ceiling over the crawl's), never those
stored with the crawl folder, which may be wider. It prints what the `harvestman` step prints, or a
one-line error, for the server to keep as the job's message; its exit status is the step's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harvestman.batch.crawldir import load_config
from harvestman.launch import steps
from harvestman.model.errors import EXIT_FAILED, CommandFailure, command_failure
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


def run_step(folder: Path, db: str, spec: JobSpec, network: dict[str, Any]) -> steps.StepOutcome:
    """Run one step on the crawl in `folder` (database `db`, '' for its crawl.db) with the `network`
    settings, as the `harvestman` command of that step runs it (launch/steps.py); what it did
    (errors raised as HarvestmanError)."""
    if isinstance(spec, FetchJob):  # quiet: no display; SIGTERM stops it
        return steps.fetch_step(folder, load_config(folder, db, {**network, "quiet": True}), spec.segment)
    if isinstance(spec, GenerateJob):
        return steps.generate_step(folder, load_config(folder, db, network), top_n=spec.top_n,
                                   max_per_host=spec.max_per_host, order=spec.order)
    if isinstance(spec, UpdatedbJob):
        return steps.updatedb_step(folder, load_config(folder, db, network), spec.segment)
    if isinstance(spec, IndexJob):
        return steps.index_step(folder, db, rebuild=spec.rebuild)
    where = steps.BatchWhere(folder, db)
    if isinstance(spec, InvertlinksJob):
        return steps.invertlinks_step(where, ignore_internal=spec.ignore_internal)
    if isinstance(spec, RankJob):
        return steps.rank_step(where, algorithm=spec.algorithm, damping=spec.damping,
                               iterations=spec.iterations)
    assert isinstance(spec, DedupJob)
    return steps.dedup_step(where, distance=spec.distance)


def run(folder: Path, job_id: str) -> int:
    """Run job `job_id` of the served crawl in `folder`; its exit status."""
    paths = CrawlPaths(folder)
    try:
        state = read_json(paths.jobs / f"{job_id}.json")
        spec = spec_from_json(state["spec"])
        db = str(read_json(paths.meta).get("db_url", ""))
        # A state file without them (written by hand) gets the narrowest: public addresses only.
        network = state.get("network") or NetCeiling().network({})
        outcome = run_step(paths.crawl_dir, db, spec, network)
    except (Exception, KeyboardInterrupt) as exc:
        # The job's message is one line, whatever went wrong (an unexpected error by its type's name).
        failure = command_failure(exc) or CommandFailure(
            EXIT_FAILED, f"harvestman: error: {type(exc).__name__}: {exc}")
        print(failure.line, file=sys.stderr)
        return failure.exit_status
    return steps.show(outcome)


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]), sys.argv[2]))

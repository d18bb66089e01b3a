"""One served crawl's process: `python -m harvestman.serve.runner ROOT/<id>`.

It runs the crawl as `harvestman crawl` would (its signals included: SIGTERM finishes the fetches in
flight) with the settings in serve.json, prints events as JSON lines (the server points stdout at
ROOT/<id>/events.jsonl), and writes the exit status to exit.json, so that a server started again
later still knows how the crawl ended.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from harvestman.model.errors import (
    EXIT_FAILED,
    HarvestmanError,
    command_failure,
)
from harvestman.serve.layout import CrawlPaths, read_json, write_json


def run(folder: Path) -> int:
    """Run the crawl of `folder`; its exit status (also written to exit.json)."""
    from harvestman.launch.run import check_crawl_order, run_crawl
    from harvestman.serve.settings import crawl_config

    paths = CrawlPaths(folder)
    meta = read_json(paths.meta)
    status = EXIT_FAILED
    try:
        cfg = crawl_config(
            paths.crawl_dir,
            list(meta["seeds"]),
            meta["settings"],
            db=str(meta.get("db_url", "")),
            resume=bool(meta.get("runs", 1) > 1),
        )
        check_crawl_order(cfg)
        status = run_crawl(cfg, metrics_file=paths.metrics)  # read by the server's /metrics
    except (HarvestmanError, OSError, KeyboardInterrupt) as exc:
        failure = command_failure(exc)
        assert failure is not None  # every one of these has its status
        print(failure.line, file=sys.stderr)
        status = failure.exit_status
    finally:
        sys.stdout.flush()
        write_json(paths.exit, {"status": status, "ended": time.time(), "pid": os.getpid()})
    return status


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))

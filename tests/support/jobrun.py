"""Run a CrawlJob in a fresh process and print, as JSON, what its listeners saw.

In a process with no other thread, worker processes are forked (WorkerPool), as the CLI's are; a
test process runs servers on threads, so its own jobs spawn them. Usage:
`python -m tests.support.jobrun OUT WORKERS SEED...`.
"""

from __future__ import annotations

import json
import sys
import threading

from harvestman.crawl.job import CrawlJob
from harvestman.model.config import config_from_mapping
from harvestman.model.events import Event
from harvestman.model.records import CrawledPage
from tests.support.pagesinks import WordCountSink


def main(argv: list[str]) -> int:
    """Crawl, then print the pages and events seen, and the threads running when the job started."""
    out, workers, seeds = argv[0], int(argv[1]), argv[2:]
    cfg = config_from_mapping({"seeds": seeds, "out_dir": out, "allow_net": ["127.1.0.0/16"],
                               "scope": "any", "workers": workers, "quiet": True})
    events: list[Event] = []
    pages: list[CrawledPage] = []
    job = CrawlJob(cfg, on_event=events.append, on_page=pages.append, sinks=(WordCountSink,))
    threads = threading.active_count()
    job.start()
    status = job.result()
    print(json.dumps({
        "threads": threads,
        "fetched": status.counts.fetched,
        "pages": [page.result.url for page in pages],
        "texts": sum(1 for page in pages if page.parsed and page.parsed.text),
        "events": [[event.kind.value, event.url] for event in events],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

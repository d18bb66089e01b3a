"""`status`: a crawl's summary (URLs by state, responses, errors, bytes, hosts, runs), the one both
faces show: `harvestman status` and the server's crawl summary (serve/status.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harvestman.batch.rows import iso, state_name, utc_time
from harvestman.crawl.stats import PAGE_STATES, PageCounts
from harvestman.model.records import UrlState
from harvestman.store.crawldir import CrawlDir
from harvestman.store.frontier import CrawlDb
from harvestman.store.runlog import Run, read_runs


def iso_time(ts: float) -> str | None:
    """Epoch seconds as ISO 8601 in UTC, as every export writes a time; 0 (never) as None."""
    when = utc_time(ts)
    return None if when is None else iso(when)


def _state_names(counts: dict[UrlState, int]) -> dict[str, int]:
    return {state_name(state): counts.get(state, 0) for state in UrlState}


def crawl_report(folder: Path, db: str = "") -> dict[str, Any]:
    """`harvestman status`: the crawl's figures (crawl_figures), its focus, its runs and pages/s."""
    with CrawlDir(Path(folder), db).read() as frontier:
        figures = crawl_figures(frontier)
        focus = _focus_summary(folder, frontier)
    runs = run_figures(folder)
    return {
        **figures,
        **focus,
        "dir": str(folder),
        # Over the time the runs ran (a crawl resumed a day later did not crawl for a day); a crawl
        # without an events log (`download`): over its span of fetch times.
        "pages_per_second": runs["pages_per_second"] if runs else _rate(figures["responses"],
                                                                         figures["elapsed_seconds"]),
        "runs": runs,
    }


def crawl_figures(frontier: CrawlDb) -> dict[str, Any]:
    """A crawl database's figures, the ones `status` and the server's crawl summary both show: URLs by
    state, pages and failures (as PageCounts counts them), responses, errors by class, bytes, time
    span, and the same per host."""
    counts = frontier.counts()
    totals = frontier.totals()
    hosts = frontier.host_totals()
    errors = frontier.error_counts()
    counted = PageCounts.of_database(counts, errors)
    return {
        "urls": sum(counts.values()),
        "states": _state_names(counts),  # URLs in each state
        "pages": counted.pages,  # URLs that ended holding a page
        "failed": counted.failed,  # URLs that ended in an error (robots.txt's and budget refusals aside)
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
                "pages": sum(h.states.get(s, 0) for s in PAGE_STATES),
                "states": _state_names(h.states),
                "errors": h.errors,
                "wire_bytes": h.wire_bytes,
            }
            for h in hosts
        },
        "first_fetch": iso_time(totals.first_fetch),
        "last_fetch": iso_time(totals.last_fetch),
        "elapsed_seconds": totals.last_fetch - totals.first_fetch,
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


"""stats: what a crawl database holds, counted over its snapshot (for `readdb --stats`)."""

from __future__ import annotations

from typing import Any

from harvestman.batch.engine import BatchEngine
from harvestman.batch.ranks import FETCHED_STATES
from harvestman.batch.rows import state_name
from harvestman.model.records import UrlState


def crawl_stats(engine: BatchEngine) -> dict[str, Any]:
    """Counts of URLs by state, by HTTP status and by host (with fetched pages), and of links."""
    states = {str(r["state"]): int(r["n"]) for r in engine.arrow(
        "SELECT state, count(*) AS n FROM urls GROUP BY state ORDER BY state").to_pylist()}
    statuses = {str(r["http_status"]): int(r["n"]) for r in engine.arrow(
        "SELECT http_status, count(*) AS n FROM urls WHERE http_status <> 0 GROUP BY http_status"
        " ORDER BY http_status").to_pylist()}
    hosts = engine.arrow(
        "SELECT host, count(*) AS urls,"
        f" sum(CASE WHEN state IN {FETCHED_STATES} THEN 1 ELSE 0 END) AS fetched,"
        " sum(CASE WHEN state = 'duplicate' THEN 1 ELSE 0 END) AS duplicates FROM urls GROUP BY host"
        " ORDER BY urls DESC, host").to_pylist()
    links = engine.arrow(
        "SELECT count(*) AS total, coalesce(sum(CASE WHEN internal THEN 1 ELSE 0 END), 0) AS internal,"
        " coalesce(sum(CASE WHEN nofollow THEN 1 ELSE 0 END), 0) AS nofollow,"
        " count(DISTINCT to_url) AS targets FROM links").to_pylist()[0]
    return {
        "urls": sum(states.values()),
        "states": {state_name(state): states.get(state_name(state), 0) for state in UrlState},
        "statuses": statuses,
        "hosts": [{k: (int(v) if k != "host" else v) for k, v in row.items()} for row in hosts],
        "links": {k: int(v) for k, v in links.items()},
    }

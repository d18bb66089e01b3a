"""dedup: exact duplicates (one content signature) and near-duplicates (SimHashes a few bits apart).

Near pairs are found without comparing every pair: each 64-bit SimHash is cut into k+1 bands; two
hashes within Hamming distance k agree on at least one band (pigeonhole), so only pairs sharing a
band value are candidates, and each candidate is verified by the popcount of the XOR. Pages with one
identical SimHash are joined to one representative first, so a page copied a thousand times is a
thousand edges, not half a million candidate pairs. Groups are the connected components of the
exact and near edges; in each, the page kept has the highest score, then the shortest URL, then the
smallest URL (Nutch's rule), and every other page is a duplicate of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harvestman.batch.engine import BatchEngine
from harvestman.batch.ranks import FETCHED_STATES
from harvestman.model.errors import ConfigError

MAX_DISTANCE = 16  # beyond this, bands of 4 bits make every page a candidate of every other
MAX_COMPONENT_ROUNDS = 10_000


@dataclass(frozen=True, slots=True)
class DedupResult:
    """What dedup wrote: url, duplicate_of, exact, distance (bits apart; -1: no hash) in `path`."""

    path: Path
    pages: int  # pages considered
    duplicates: int
    groups: int
    rounds: int  # label-propagation rounds the components took


def check_distance(distance: int) -> None:
    """Refuse a Hamming distance outside 0..MAX_DISTANCE."""
    if not 0 <= distance <= MAX_DISTANCE:
        raise ConfigError(f"--distance must be between 0 and {MAX_DISTANCE} bits, got {distance}")


def bands(distance: int) -> list[tuple[int, int]]:
    """(shift, width) of the k+1 bands that together cover the 64 bits."""
    count = distance + 1
    widths = [64 // count + (1 if i < 64 % count else 0) for i in range(count)]
    out, shift = [], 0
    for width in widths:
        out.append((shift, width))
        shift += width
    return out


def _edges(engine: BatchEngine, distance: int) -> None:
    """Materialize d_edges(a, b), a < b, both keep-ranks of pages that are (near) duplicates."""
    exact = ("SELECT min(k) OVER (PARTITION BY signature) AS a, k AS b FROM d_pages WHERE signature <> ''")
    same_hash = "SELECT min(k) OVER (PARTITION BY simhash) AS a, k AS b FROM d_pages WHERE simhash <> 0"
    engine.materialize("d_reps",
                       "SELECT min(k) AS k, simhash FROM d_pages WHERE simhash <> 0 GROUP BY simhash")
    parts = []
    for number, (shift, width) in enumerate(bands(distance)):
        key = f"({engine.shift_right('simhash', shift)} & {(1 << width) - 1})"
        parts.append(f"SELECT k, simhash, {number} AS band, {key} AS bucket FROM d_reps")
    engine.materialize("d_bands", " UNION ALL ".join(parts))
    near = ("SELECT DISTINCT x.k AS a, y.k AS b FROM d_bands x JOIN d_bands y"
            " ON x.band = y.band AND x.bucket = y.bucket AND x.k < y.k"
            f" WHERE {engine.popcount_xor('x.simhash', 'y.simhash')} <= {int(distance)}")
    engine.materialize(
        "d_edges",
        f"SELECT DISTINCT a, b FROM ({exact} UNION ALL {same_hash} UNION ALL {near}) e WHERE a < b")
    engine.drop("d_bands")
    engine.drop("d_reps")


def _components(engine: BatchEngine) -> int:
    """Label every node of d_edges with the smallest keep-rank in its component (d_label_N);
    returns N, the rounds taken."""
    engine.materialize(
        "d_label_0",
        "SELECT n, min(c) AS c FROM (SELECT a AS n, a AS c FROM d_edges UNION ALL"
        " SELECT b AS n, a AS c FROM d_edges) x GROUP BY n")
    done = 0
    while done < MAX_COMPONENT_ROUNDS:
        nxt = done + 1
        engine.materialize(
            f"d_label_{nxt}",
            f"SELECT n, min(c) AS c FROM (SELECT n, c FROM d_label_{done}"
            f" UNION ALL SELECT e.b AS n, l.c FROM d_edges e JOIN d_label_{done} l ON l.n = e.a"
            f" UNION ALL SELECT e.a AS n, l.c FROM d_edges e JOIN d_label_{done} l ON l.n = e.b) x"
            " GROUP BY n")
        changed = int(engine.scalar(
            f"SELECT count(*) FROM d_label_{done} p JOIN d_label_{nxt} q ON p.n = q.n WHERE p.c <> q.c") or 0)
        engine.drop(f"d_label_{done}")
        done = nxt
        if not changed:
            break
    return done


def find_duplicates(engine: BatchEngine, out: Path, *, distance: int = 3,
                    simhash_table: str = "") -> DedupResult:
    """Find exact and near-duplicate fetched pages into `out` (url, duplicate_of, exact, distance).

    `simhash_table` (url, simhash) names SimHashes computed since the snapshot, for pages it holds 0 for.
    """
    check_distance(distance)
    simhash = "u.simhash"
    join = ""
    if simhash_table:
        simhash = "CASE WHEN u.simhash = 0 THEN coalesce(f.simhash, 0) ELSE u.simhash END"
        join = f" LEFT JOIN {simhash_table} f ON f.url = u.url"
    # k: the keep-rank, 1 for the page every group would keep first.
    engine.materialize(
        "d_pages",
        f"SELECT u.url, u.signature, {simhash} AS simhash,"
        " CAST(row_number() OVER (ORDER BY u.score DESC, length(u.url), u.url) AS BIGINT) AS k"
        f" FROM urls u{join} WHERE u.state IN {FETCHED_STATES}")
    pages = int(engine.scalar("SELECT count(*) FROM d_pages") or 0)
    _edges(engine, distance)
    rounds = _components(engine)
    rows = engine.write_parquet(
        "SELECT p.url, kept.url AS duplicate_of,"
        " (p.signature <> '' AND p.signature = kept.signature) AS exact,"
        " CAST(CASE WHEN p.simhash = 0 OR kept.simhash = 0 THEN -1"
        f" ELSE {engine.popcount_xor('p.simhash', 'kept.simhash')} END AS INT) AS distance"
        f" FROM d_label_{rounds} l JOIN d_pages p ON p.k = l.n JOIN d_pages kept ON kept.k = l.c"
        " WHERE l.c <> l.n ORDER BY duplicate_of, p.url", out)
    groups = int(engine.scalar(f"SELECT count(DISTINCT c) FROM d_label_{rounds}") or 0)
    for table in (f"d_label_{rounds}", "d_edges", "d_pages"):
        engine.drop(table)
    return DedupResult(out, pages, rows, groups, rounds)

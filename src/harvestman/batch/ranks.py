"""rank: a score per URL from the link graph — PageRank, in-degree, or OPIC computed offline.

The graph: distinct (from page, to URL) edges of the snapshot's links, nofollow links and self links
left out (a page does not vote for itself, and nofollow withholds the vote). "Fetched pages" are
those in state FETCHED, NOT_MODIFIED or DUPLICATE (pages whose content the crawl holds).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harvestman.batch.engine import BatchEngine
from harvestman.model.errors import ConfigError

ALGORITHMS = ("pagerank", "indegree", "opic")
FETCHED_STATES = "('fetched', 'not_modified', 'duplicate')"  # the snapshot names states (batch/rows.py)
TOLERANCE = 1e-9  # PageRank stops once the L1 change of an iteration is below this
MAX_PAGERANK_ITERATIONS = 1000
OPIC_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class RankResult:
    """What a ranking wrote: url, score (best first) in `path`."""

    path: Path
    algorithm: str
    urls: int
    iterations: int
    change: float  # the last iteration's L1 change (0 for indegree)


def check_rank_options(algorithm: str, damping: float, iterations: int | None) -> None:
    """Refuse an unknown algorithm, a damping factor outside (0, 1), or fewer than 1 iteration."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown ranking algorithm {algorithm!r}: choose one of {', '.join(ALGORITHMS)}")
    if not 0.0 < damping < 1.0:
        raise ConfigError(f"--damping must be between 0 and 1 (exclusive), got {damping}")
    if iterations is not None and iterations < 1:
        raise ConfigError(f"--iterations must be at least 1, got {iterations}")


def _double(value: float) -> str:
    # A string cast is exact in both dialects (a bare 0.15 would be a DECIMAL in both).
    return f"CAST('{value!r}' AS DOUBLE)"


def _fetched_graph(engine: BatchEngine) -> int:
    """Materialize g_nodes(id, url, outdeg) over fetched pages and g_edges(src, dst) between them."""
    engine.materialize("g_pages", "SELECT CAST(row_number() OVER (ORDER BY seq) AS BIGINT) AS id, url"
                                  f" FROM urls WHERE state IN {FETCHED_STATES}")
    engine.materialize(
        "g_edges",
        "SELECT DISTINCT s.id AS src, d.id AS dst FROM links l"
        " JOIN g_pages s ON s.url = l.from_url JOIN g_pages d ON d.url = l.to_url"
        " WHERE NOT l.nofollow AND s.id <> d.id")
    engine.materialize(
        "g_nodes",
        "SELECT p.id, p.url, coalesce(o.n, 0) AS outdeg FROM g_pages p"
        " LEFT JOIN (SELECT src, count(*) AS n FROM g_edges GROUP BY src) o ON o.src = p.id")
    engine.drop("g_pages")
    return int(engine.scalar("SELECT count(*) FROM g_nodes") or 0)


def pagerank(engine: BatchEngine, out: Path, *, damping: float = 0.85,
             iterations: int | None = None) -> RankResult:
    """PageRank over the fetched pages and the links between them.

    r'(v) = (1 - d)/N + d * (sum over u->v of r(u)/outdeg(u) + D/N), where D is the rank held by
    pages without outlinks (spread uniformly, as networkx.pagerank does); starting from 1/N, until
    the L1 change of an iteration is below 1e-9, or after `iterations` iterations.
    """
    n = _fetched_graph(engine)
    engine.materialize("pr_0", f"SELECT id, outdeg, {_double(1.0 / n if n else 0.0)} AS r FROM g_nodes")
    limit = iterations or MAX_PAGERANK_ITERATIONS
    done, change = 0, 0.0
    while n and done < limit:
        dangling = float(engine.scalar(f"SELECT coalesce(sum(r), 0) FROM pr_{done} WHERE outdeg = 0") or 0.0)
        base = (1.0 - damping) / n + damping * dangling / n
        nxt = done + 1
        engine.materialize(
            f"pr_{nxt}",
            f"SELECT p.id, p.outdeg, {_double(base)} + {_double(damping)} * coalesce(s.inflow, 0) AS r"
            f" FROM pr_{done} p LEFT JOIN (SELECT e.dst, sum(q.r / q.outdeg) AS inflow FROM g_edges e"
            f" JOIN pr_{done} q ON q.id = e.src GROUP BY e.dst) s ON s.dst = p.id")
        change = float(engine.scalar(
            f"SELECT sum(abs(a.r - b.r)) FROM pr_{done} a JOIN pr_{nxt} b ON a.id = b.id") or 0.0)
        engine.drop(f"pr_{done}")
        done = nxt
        if change < TOLERANCE:
            break
    rows = engine.write_parquet(
        f"SELECT g.url, p.r AS score FROM pr_{done} p JOIN g_nodes g ON g.id = p.id"
        " ORDER BY score DESC, url", out)
    for table in (f"pr_{done}", "g_nodes", "g_edges"):
        engine.drop(table)
    return RankResult(out, "pagerank", rows, done, change)


def indegree(engine: BatchEngine, out: Path) -> RankResult:
    """In-degree of every known URL: the number of distinct pages linking to it."""
    rows = engine.write_parquet(
        "SELECT u.url, CAST(coalesce(c.n, 0) AS DOUBLE) AS score FROM urls u LEFT JOIN"
        " (SELECT to_url, count(DISTINCT from_url) AS n FROM links"
        "  WHERE NOT nofollow AND from_url <> to_url GROUP BY to_url) c ON c.to_url = u.url"
        " ORDER BY score DESC, url", out)
    return RankResult(out, "indegree", rows, 1, 0.0)


def opic(engine: BatchEngine, out: Path, *, rounds: int | None = None) -> RankResult:
    """OPIC (Abiteboul, Preda, Cobena 2003) computed offline over every known URL.

    Each fetched page starts with cash 1/F (F fetched pages), every other URL with 0. In each round
    every fetched page is visited once, all at the same time: its cash is added to its history and
    handed out in equal parts along its outlinks (to fetched and unfetched URLs alike); a page
    without outlinks gives its cash to all fetched pages equally (the paper's virtual page). URLs not
    fetched are never visited: they keep the cash they receive, an estimate of what they are worth.
    The score after `rounds` rounds (default 10) is (history + cash) / (total history + 1), so the
    scores sum to 1.
    """
    total_rounds = rounds or OPIC_ROUNDS
    engine.materialize(
        "o_nodes",
        "SELECT CAST(row_number() OVER (ORDER BY seq) AS BIGINT) AS id, url,"
        f" state IN {FETCHED_STATES} AS fetched FROM urls")
    engine.materialize(
        "o_edges",
        "SELECT DISTINCT s.id AS src, d.id AS dst FROM links l"
        " JOIN o_nodes s ON s.url = l.from_url JOIN o_nodes d ON d.url = l.to_url"
        " WHERE s.fetched AND NOT l.nofollow AND s.id <> d.id")
    fetched = int(engine.scalar("SELECT count(*) FROM o_nodes WHERE fetched") or 0)
    start = _double(1.0 / fetched) if fetched else "CAST(0 AS DOUBLE)"
    engine.materialize(
        "op_0",
        f"SELECT n.id, n.fetched, coalesce(o.k, 0) AS outdeg, CASE WHEN n.fetched THEN {start}"
        " ELSE CAST(0 AS DOUBLE) END AS cash, CAST(0 AS DOUBLE) AS hist FROM o_nodes n"
        " LEFT JOIN (SELECT src, count(*) AS k FROM o_edges GROUP BY src) o ON o.src = n.id")
    done = 0
    while fetched and done < total_rounds:
        dangling = float(engine.scalar(
            f"SELECT coalesce(sum(cash), 0) FROM op_{done} WHERE fetched AND outdeg = 0") or 0.0)
        share = _double(dangling / fetched)
        nxt = done + 1
        engine.materialize(
            f"op_{nxt}",
            f"SELECT p.id, p.fetched, p.outdeg,"
            f" CASE WHEN p.fetched THEN {share} ELSE p.cash END + coalesce(s.inflow, 0) AS cash,"
            f" p.hist + CASE WHEN p.fetched THEN p.cash ELSE CAST(0 AS DOUBLE) END AS hist"
            f" FROM op_{done} p LEFT JOIN (SELECT e.dst, sum(q.cash / q.outdeg) AS inflow FROM o_edges e"
            f" JOIN op_{done} q ON q.id = e.src GROUP BY e.dst) s ON s.dst = p.id")
        engine.drop(f"op_{done}")
        done = nxt
    total_history = float(engine.scalar(f"SELECT coalesce(sum(hist), 0) FROM op_{done}") or 0.0)
    rows = engine.write_parquet(
        f"SELECT n.url, (p.hist + p.cash) / {_double(total_history + 1.0)} AS score"
        f" FROM op_{done} p JOIN o_nodes n ON n.id = p.id ORDER BY score DESC, url", out)
    for table in (f"op_{done}", "o_nodes", "o_edges"):
        engine.drop(table)
    return RankResult(out, "opic", rows, done, 0.0)


def rank_urls(engine: BatchEngine, out_folder: Path, algorithm: str, *, damping: float = 0.85,
              iterations: int | None = None) -> RankResult:
    """Run one ranking `algorithm` into out_folder/<algorithm>.parquet."""
    check_rank_options(algorithm, damping, iterations)
    out = Path(out_folder) / f"{algorithm}.parquet"
    if algorithm == "pagerank":
        return pagerank(engine, out, damping=damping, iterations=iterations)
    if algorithm == "indegree":
        return indegree(engine, out)
    return opic(engine, out, rounds=iterations)

"""The batch commands of `harvestman`: invertlinks, rank, dedup (on DuckDB, or Spark with --engine spark)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harvestman.app.options import DB_HELP, DIR_HELP
from harvestman.batch.engine import ENGINES
from harvestman.batch.ranks import ALGORITHMS
from harvestman.launch.steps import BatchWhere, dedup_step, invertlinks_step, rank_step, show
from harvestman.model.errors import ConfigError

COMMANDS = ("invertlinks", "rank", "dedup")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    parser.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    parser.add_argument("--engine", choices=ENGINES, default="duckdb",
                        help="run the job on embedded DuckDB (default) or on Apache Spark (pyspark)")
    parser.add_argument("--reuse-snapshot", action="store_true",
                        help="run on DIR/snapshot as written before, not a fresh snapshot of the database")


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the batch commands to the `harvestman` parser."""
    invert = subparsers.add_parser(
        "invertlinks", help="each URL's inlinks with anchor texts (DIR/linkdb), and inlink counts")
    _common(invert)
    invert.add_argument("--ignore-internal", action="store_true",
                        help="leave out links between pages of one host")
    rank = subparsers.add_parser("rank", help="score URLs by the link graph (DIR/ranks); the frontier "
                                              "then leases the best first")
    _common(rank)
    rank.add_argument("--algorithm", default="pagerank", metavar="NAME",
                      help=f"one of {', '.join(ALGORITHMS)} (default pagerank)")
    rank.add_argument("--damping", type=float, default=0.85, help="PageRank's damping factor (default 0.85)")
    rank.add_argument("--iterations", type=int, metavar="N",
                      help="at most N iterations (PageRank: default until the L1 change is below 1e-9; "
                           "OPIC: rounds, default 10)")
    dedup = subparsers.add_parser(
        "dedup", help="mark exact and near-duplicate pages (DIR/dedup), keeping the best of each group")
    _common(dedup)
    dedup.add_argument("--distance", type=int, default=3, metavar="K",
                       help="SimHashes at most K bits apart are near-duplicates (default 3)")


def run(args: argparse.Namespace) -> int:
    """Run one batch command; errors are HarvestmanErrors, reported by the caller."""
    where = BatchWhere(args.dir, args.db, args.engine, args.reuse_snapshot)
    if args.command == "invertlinks":
        return show(invertlinks_step(where, ignore_internal=args.ignore_internal))
    if args.command == "rank":
        return show(rank_step(where, algorithm=args.algorithm, damping=args.damping,
                              iterations=args.iterations))
    if args.command == "dedup":
        return show(dedup_step(where, distance=args.distance))
    raise ConfigError(f"not a batch command: {args.command!r}")

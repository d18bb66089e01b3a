"""The crawl cycle's commands (inject, generate, fetch, parse, updatedb, readdb) and `crawl --rounds`.

Each step takes the crawl's folder DIR (or `--db URL`) and reads the settings stored with the crawl
by `inject`; the setting options given to a step override them for that step only (to `inject`,
they are stored).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from harvestman.app.options import CONFIG_HELP, DB_HELP, DIR_HELP, add_setting_options, given_settings
from harvestman.batch.crawldir import load_config
from harvestman.batch.cycle import crawl_exists, run_cycle
from harvestman.batch.generate import ORDERS
from harvestman.batch.inject import inject
from harvestman.batch.parse_segment import parse_segment
from harvestman.batch.readdb import DUMP_FORMATS, dump, stats, url_info
from harvestman.batch.rows import json_default
from harvestman.batch.seeds import SeedLine, parse_seed_lines, read_seed_file
from harvestman.launch.run import fetch_segment_run
from harvestman.launch.steps import fetch_step, generate_step, show, updatedb_step
from harvestman.model.config import CrawlConfig, merge_settings
from harvestman.model.errors import EXIT_FAILED, EXIT_OK, ConfigError

COMMANDS = ("inject", "generate", "fetch", "parse", "updatedb", "readdb")
# The crawl a step works on is its DIR and --db; seeds are inject's; resuming and a page budget are
# the continuous crawl's.
_NOT_SETTINGS = frozenset({"db", "seeds", "out_dir", "resume", "max_pages"})


def _settings_options(parser: argparse.ArgumentParser) -> None:
    """The crawl's settings a step may be given (stored by inject, overriding for the others)."""
    parser.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    parser.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    parser.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    add_setting_options(parser, "step")


def add_commands(commands: Any) -> None:
    """Add the cycle's commands to the `harvestman` command's subparsers."""
    p = commands.add_parser("inject", help="add seed URLs (Nutch's seed lines: URL<TAB>score=N<TAB>k=v)")
    _settings_options(p)
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs (or lines of a seed file)")
    p.add_argument("-i", "--input", action="append", default=[], metavar="SEEDS",
                   help="read seeds from a file")
    # Narrower than the setting's choices: a cycle has no Python link scorer to order by.
    p.add_argument("--order", choices=ORDERS, dest="ordering", help="the crawl's default generate order")
    p = commands.add_parser("generate", help="select the URLs that are due into a new segment")
    _settings_options(p)
    p.add_argument("--top-n", type=int, required=True, metavar="N", help="at most N URLs")
    p.add_argument("--max-per-host", type=int, default=0, metavar="N", help="at most N URLs a host")
    p.add_argument("--order", choices=ORDERS, help="best first by (default: the crawl's ordering, bfs)")
    for name, what in (("fetch", "fetch a segment (the latest by default), or continue fetching it"),
                       ("parse", "parse a fetched segment's pages again from its WARC files"),
                       ("updatedb", "merge a fetched segment into the crawl database")):
        p = commands.add_parser(name, help=what)
        _settings_options(p)
        p.add_argument("segment", nargs="?", metavar="SEGMENT", help="a segment id (default: the latest)")
    p = commands.add_parser("readdb", help="the crawl database, link database and segments")
    p.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    p.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--stats", action="store_true", help="figures: URLs by state, scores, links, segments")
    what.add_argument("--url", metavar="URL", help="one URL's row, its outlinks and inlinks")
    what.add_argument("--dump", action="store_true", help="write crawldb, linkdb and segments files")
    p.add_argument("--format", choices=DUMP_FORMATS, default="jsonl", help="--dump's format")
    p.add_argument("--out", "-o", type=Path, metavar="FOLDER", dest="output",
                   help="--dump's folder (default DIR/readdb)")
    p.add_argument("--output", type=Path, dest="output", help=argparse.SUPPRESS)  # the old spelling


def add_crawl_options(parser: argparse.ArgumentParser) -> None:
    """`crawl`'s options that run the cycle instead of the continuous crawl."""
    parser.add_argument("--rounds", type=int, metavar="N",
                        help="run the crawl cycle: inject, (generate, fetch, updatedb) x N, then the jobs")
    parser.add_argument("--top-n", type=int, metavar="N", help="with --rounds: URLs a round (required)")
    parser.add_argument("--max-per-host", type=int, default=0, metavar="N",
                        help="with --rounds: at most N URLs of a host a round")


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as options (and in --config), by their CrawlConfig names, less those that
    are no step's to set."""
    return {name: value for name, value in given_settings(args).items() if name not in _NOT_SETTINGS}


def step_config(args: argparse.Namespace) -> CrawlConfig:
    """The stored settings of the crawl in args.dir, with this step's options on top."""
    return load_config(args.dir, args.db, overrides(args))


def _seeds(urls: list[str], files: list[str], cfg: CrawlConfig) -> list[SeedLine]:
    seeds = parse_seed_lines(urls, max_length=cfg.max_url_length)
    for path in files:
        seeds.extend(read_seed_file(Path(path), max_length=cfg.max_url_length))
    return seeds


def _new_or_stored(folder: Path, db: str, values: dict[str, Any]) -> CrawlConfig:
    if crawl_exists(folder, db):
        return load_config(folder, db, values)
    cfg, _ = merge_settings({}, values, {"out_dir": folder, "db": db})
    return cfg


def run(args: argparse.Namespace) -> int:
    """Run one of the cycle's commands; the exit status (errors raised as HarvestmanError)."""
    command = args.command
    if command == "inject":
        cfg = _new_or_stored(args.dir, args.db, overrides(args))
        seeds = _seeds(args.urls, args.input, cfg)
        done = inject(args.dir, seeds, cfg)
        print(f"injected {done.added} new URLs ({done.known} known already) into {args.dir}")
        return EXIT_OK
    if command == "readdb":
        return _readdb(args)
    cfg = step_config(args)
    if command == "generate":
        return show(generate_step(args.dir, cfg, top_n=args.top_n, max_per_host=args.max_per_host,
                                  order=args.order))
    if command == "fetch":
        return show(fetch_step(args.dir, cfg, args.segment))
    if command == "parse":
        pages = parse_segment(args.dir, cfg.links, args.segment)
        print(f"parsed {pages} pages with links")
        return EXIT_OK
    if command == "updatedb":
        return show(updatedb_step(args.dir, cfg, args.segment))
    raise ConfigError(f"unknown command {command!r}")


def _readdb(args: argparse.Namespace) -> int:
    if args.stats:
        print(json.dumps(stats(args.dir, args.db), indent=2))
    elif args.url:
        shown = url_info(args.dir, args.url, args.db)  # times as every export writes them
        print(json.dumps(shown, indent=2, ensure_ascii=False, default=json_default))
    else:
        written = dump(args.dir, args.db, fmt=args.format, output=args.output)
        out = args.output or Path(args.dir) / "readdb"
        print(", ".join(f"{n} {name} rows" for name, n in written.items()) + f" written to {out}")
    return EXIT_OK


def run_rounds(args: argparse.Namespace) -> int:
    """`harvestman crawl [SEED...] --out DIR --rounds R --top-n N`: the crawl cycle."""
    if args.top_n is None:
        raise ConfigError("--rounds needs --top-n N: how many URLs a round fetches")
    if getattr(args, "metrics_port", None):
        raise ConfigError("--metrics-port serves a continuous crawl's metrics (and `harvestman worker`'s); "
                          "the crawl cycle's rounds (--rounds) have none")
    folder = Path(args.out_dir)
    values = overrides(args)
    cfg = _new_or_stored(folder, args.db or "", values)
    seeds = _seeds(args.urls, args.input, cfg)
    started = time.time()

    def on_round(number: int, segment: Path | None) -> None:
        if not cfg.quiet:
            what = f"segment {segment.name}" if segment else "nothing due: the rounds end"
            print(f"round {number}/{args.rounds}: {what}", file=sys.stderr)

    report = run_cycle(folder, cfg, seeds=seeds, rounds=args.rounds, top_n=args.top_n,
                       max_per_host=args.max_per_host, order=None,
                       fetch=fetch_segment_run, on_round=on_round)
    fetched = sum(r.fetched.status.counts.fetched for r in report.rounds if r.fetched.status)
    new = sum(r.merged.new_urls for r in report.rounds)
    then = f"; then {', '.join(report.post_steps)}" if report.post_steps else ""
    print(f"{len(report.rounds)} rounds: {fetched} pages fetched, {new} new URLs, "
          f"{time.time() - started:.1f} s{then}")
    if report.stopped:
        print("harvestman: a fetch was stopped; harvestman fetch and updatedb go on from there",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK

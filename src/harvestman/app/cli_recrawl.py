"""`harvestman recrawl DIR`: fetch again what a crawl fetched, downloading only what changed."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from harvestman.app import cli_cycle
from harvestman.launch.run import fetch_segment_run
from harvestman.model.errors import EXIT_FAILED, EXIT_OK, ConfigError, exit_status_of, failure_help
from harvestman.policy.revive import check_retry_classes

COMMANDS = ("recrawl",)
STRATEGY_HELP = ("how a page is checked: conditional (If-None-Match / If-Modified-Since; default), size "
                 "(a HEAD's Content-Length first), sitemap (skip by the sitemaps' lastmod), full (GET all)")


def add_commands(commands: Any) -> None:
    """Add `recrawl` to the `harvestman` command's subparsers."""
    p = commands.add_parser("recrawl", help="fetch the due URLs again, downloading only what changed")
    cli_cycle._settings_options(p)  # the cycle's setting options: a re-crawl is one of its rounds
    p.add_argument("--all", action="store_true", dest="all_urls",
                   help="every fetched URL, not only the due ones")
    p.add_argument("--strategy", default="conditional", metavar="NAME", help=STRATEGY_HELP)
    p.add_argument("--retry-failed", nargs="+", metavar="CLASS",
                   help="also fetch again the URLs that failed with these error classes, as status shows "
                        "them (timeout, http_503, http_5xx, ...)")
    p.add_argument("--json", action="store_true", help="the report as JSON")


def run(args: argparse.Namespace) -> int:
    """Run `recrawl`; the exit status (errors raised as HarvestmanError)."""
    from harvestman.batch.recrawl import STRATEGIES, recrawl

    if args.command not in COMMANDS:
        raise ConfigError(f"not a recrawl command: {args.command!r}")
    if args.strategy not in STRATEGIES:  # before the crawl is opened: a typo is the first thing to say
        raise ConfigError(f"--strategy must be one of {', '.join(STRATEGIES)}, got {args.strategy!r}")
    cfg = cli_cycle.step_config(args)
    retry = check_retry_classes(args.retry_failed or ())
    report = recrawl(args.dir, cfg, strategy=args.strategy, all_urls=args.all_urls,
                     fetch=fetch_segment_run, retry=retry)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    elif not cfg.quiet:
        full = report.full_bytes
        share = f" ({100 * report.wire_bytes / full:.1f}%)" if full else ""
        by = ", ".join(f"{name} {n}" for name, n in report.checked_by.items()) or "-"
        rows = [
            ("strategy", report.strategy),
            ("segment", report.segment or "-"),
            ("checked", str(report.checked)),
            ("unchanged", str(report.unchanged)),
            ("changed", f"{report.changed} (minor {report.minor}, major {report.major})"),
            ("new", str(report.new)),
            ("gone", f"{report.gone}" + (f" ({_classes(report.gone_by)})" if report.gone else "")),
            ("not fetched", str(report.not_fetched)),
            ("new URLs", str(report.new_urls)),
            ("failed, retried", str(report.revived)),
            ("checked by", by),
            ("bytes on the wire", f"{report.wire_bytes}{share}"),
            ("full re-download", str(full)),
        ]
        for name, value in rows:
            print(f"{name:<18} {value}")
    if not report.segment and not report.stopped and not args.all_urls and not cfg.quiet:
        when = (f"the first is due {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(report.next_due))}"
                if report.next_due else "none is scheduled")
        print(f"harvestman: no fetched URL is due for a re-crawl ({when}); "
              f"`harvestman recrawl DIR --all` checks every one now", file=sys.stderr)
    if report.stopped:
        print("harvestman: the re-crawl's fetch was stopped; harvestman fetch and updatedb go on from there",
              file=sys.stderr)
        return EXIT_FAILED
    if report.checked and report.gone == report.checked:
        return _all_failed(report.gone_by)
    return EXIT_OK


def _classes(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def _all_failed(gone_by: dict[str, int]) -> int:
    """Every page checked failed (a site down, a name that no longer resolves): said, with how to
    fetch them again once mended; the exit status of the failures, as `crawl` gives it."""
    first = next(iter(gone_by))
    print(f"harvestman: every page checked failed ({_classes(gone_by)}); once mended, "
          f"`harvestman recrawl DIR --retry-failed {' '.join(gone_by)}` fetches them again", file=sys.stderr)
    hint = failure_help(first).hint
    if hint and "{" not in hint:
        print(f"harvestman: {first}: {hint}", file=sys.stderr)
    return exit_status_of(failure_help(name).exit_status for name in gone_by)

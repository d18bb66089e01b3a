"""The search commands of `harvestman`: index (build or update the full-text index), search (query it)."""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
from pathlib import Path

from harvestman.app.options import DB_HELP, DIR_HELP
from harvestman.launch.steps import index_step, show
from harvestman.model.errors import EXIT_OK, ConfigError

COMMANDS = ("index", "search")
_MARK = re.compile(r"</?b>")


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the search commands to the `harvestman` parser."""
    index = subparsers.add_parser(
        "index", help="build or update the full-text index of the fetched pages (DIR/searchindex)")
    index.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    index.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    index.add_argument("--rebuild", action="store_true", help="index every page again, not only changes")
    search = subparsers.add_parser("search", help="search the crawl's full-text index: ranked pages")
    search.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    search.add_argument("query", metavar="QUERY",
                        help='words, "phrases", AND/OR/NOT, (groups), -word, prefix*, word~1, field:term '
                             "(title, headings, text, anchor, url, host, category); what the language cannot "
                             "read is searched as plain words, with a note; see docs/search.md")
    search.add_argument("--limit", type=int, default=10, metavar="N", help="at most N hits (default 10)")
    search.add_argument("--site", metavar="HOST", help="only pages of this host (or host:port, or domain)")
    search.add_argument("--category", metavar="C", help="only pages of this category (from the features)")
    search.add_argument("--json", action="store_true", help="print one JSON object: query, total, hits")
    search.add_argument("--db", metavar="URL", default="", help=DB_HELP)


def dashed_query(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`harvestman search DIR -sort`: a query starting with '-' is the query, not an unknown option
    (argparse refuses one): it is handed to argparse after '--'."""
    if not argv or argv[0] != "search" or "--" in argv:
        return argv
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = commands.choices["search"]._option_string_actions
    at, positionals = 1, []
    while at < len(argv):
        action = options.get(argv[at].split("=", 1)[0])
        if action is None:
            positionals.append(at)
        at += 1 if action is None or "=" in argv[at] or action.nargs == 0 else 2
    if len(positionals) == 2 and argv[positionals[1]].startswith("-"):
        return [w for n, w in enumerate(argv) if n != positionals[1]] + ["--", argv[positionals[1]]]
    return argv


_BOLD_YELLOW, _RESET = "\033[1;33m", "\033[0m"


def use_colour() -> bool:
    """Whether standard output takes ANSI colours: a terminal, and no NO_COLOR (no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _highlight(snippet: str, colour: bool) -> str:
    """A snippet for the terminal: the matched words bold and coloured where `colour`, else plain text
    (piped output is read by programs and people alike: no markup in it)."""
    if not colour:
        return html.unescape(_MARK.sub("", snippet))
    return html.unescape(_MARK.sub(lambda m: _RESET if m.group().startswith("</") else _BOLD_YELLOW, snippet))


def run(args: argparse.Namespace) -> int:
    """Run one search command; errors are HarvestmanErrors, reported by the caller."""
    if args.command == "index":
        return show(index_step(args.dir, args.db, rebuild=args.rebuild))
    if args.command == "search":
        from harvestman.index.search import search

        found = search(args.dir, args.query, limit=args.limit, site=args.site, category=args.category,
                       db=args.db)
        if args.json:
            print(json.dumps(found.as_dict(), ensure_ascii=False))
            return EXIT_OK
        if found.note:
            print(f"harvestman: note: {found.note}", file=sys.stderr)
        colour = use_colour()
        print(f"{found.total} pages match {found.query!r}" + (f"; the best {len(found.hits)}:" if found.hits
                                                                else ""))
        for rank, hit in enumerate(found.hits, 1):
            print(f"\n{rank}. {hit.title or '(no title)'}  [{hit.score:.2f}]\n   {hit.url}")
            if hit.snippet:
                print(f"   {_highlight(hit.snippet, colour)}")
        return EXIT_OK
    raise ConfigError(f"not a search command: {args.command!r}")

"""The structured-data commands of `harvestman`: extract (tables from the fetched pages) and query (SQL)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from harvestman.app.options import DB_HELP, DIR_HELP
from harvestman.model.errors import EXIT_OK, ConfigError

COMMANDS = ("extract", "query")
FORMATS = ("table", "json", "csv")
_CELL = 60  # widest cell the table format prints; --format json or csv gives whole values


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add extract and query to the `harvestman` parser."""
    extract = subparsers.add_parser(
        "extract", help="JSON-LD, microdata, RDFa, OpenGraph and field rules of the fetched pages, "
                        "as one Parquet table per type in DIR/tables")
    extract.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    extract.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    extract.add_argument("--rules", type=Path, metavar="FILE.toml",
                         help="field rules: CSS or XPath selectors to named fields, per page category")
    query = subparsers.add_parser(
        "query", help="run DuckDB SQL over DIR/tables, the pages, and search('words')")
    query.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    query.add_argument("sql", metavar="SQL", help="one SQL statement, e.g. \"SELECT * FROM person\"")
    query.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    query.add_argument("--format", choices=FORMATS, default="table", help="how to print rows (default table)")
    query.add_argument("--json", dest="format", action="store_const", const="json",
                       help="print rows as a JSON list of objects (--format json)")


def _cell(value: Any) -> str:
    """A value as the table format shows it: NULL for None, cut to _CELL characters, one line."""
    if value is None:
        return "NULL"
    text = " ".join(str(value).split())
    return text if len(text) <= _CELL else text[:_CELL - 1] + "…"


def print_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, out: TextIO) -> None:
    """Print a result as an aligned table, a JSON list of objects, or CSV with a header."""
    if fmt == "json":
        out.write(json.dumps([dict(zip(columns, row, strict=True)) for row in rows], ensure_ascii=False,
                             indent=1, default=str) + "\n")
        return
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
        return
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for row_cells in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row_cells, widths, strict=True)).rstrip() + "\n")
    out.write(f"({len(rows)} row{'' if len(rows) == 1 else 's'})\n")


def run(args: argparse.Namespace) -> int:
    """Run extract or query; errors are HarvestmanErrors, reported by the caller."""
    # Imported here: extruct, lxml and DuckDB are only needed to run one of these.
    if args.command == "extract":
        from harvestman.index.extract import extract
        from harvestman.index.fieldrules import load_rules

        rules = load_rules(args.rules) if args.rules else ()
        done = extract(args.dir, db=args.db, rules=rules)
        tables = ", ".join(f"{name} {rows}" for name, rows in done.tables.items()) or "none"
        print(f"{done.items} items from {done.pages} pages ({done.broken} unreadable blocks); "
              f"tables written to {done.folder}: {tables}")
        return EXIT_OK
    if args.command == "query":
        from harvestman.index.query import run_query

        result = run_query(args.dir, args.sql, db=args.db)
        print_rows(result.columns, result.rows, args.format, sys.stdout)
        return EXIT_OK
    raise ConfigError(f"not an extract command: {args.command!r}")

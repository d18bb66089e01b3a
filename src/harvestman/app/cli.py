"""The `harvestman` command: crawl, download, status, export, demo."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harvestman import __version__, core_name
from harvestman.app import cli_batch, cli_cycle, cli_extract, cli_features, cli_focus, cli_recrawl, cli_search
from harvestman.app.options import CONFIG_HELP, DB_HELP, DIR_HELP, add_setting_options, given_settings
from harvestman.launch.export import EXPORT_FORMATS, EXPORT_WHAT, STDOUT, export_records
from harvestman.launch.progress import print_summary
from harvestman.launch.run import check_crawl_order, resumed_config, run_crawl, worker_config
from harvestman.launch.status import crawl_report
from harvestman.model.config import CrawlConfig, config_from_mapping, merge_settings
from harvestman.model.errors import (
    EXIT_CLOSED_OUTPUT,
    EXIT_OK,
    EXIT_USAGE,
    ConfigError,
    CrawlExistsError,
    HarvestmanError,
    OutputClosed,
    command_failure,
)
from harvestman.policy.revive import check_retry_classes
from harvestman.store.crawldir import CrawlDir


def _crawl_options(parser: argparse.ArgumentParser, *, follow: bool) -> None:
    parser.add_argument("urls", nargs="*", metavar="URL", help="seed URLs" if follow else "URLs to fetch")
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="FILE",
        help="read URLs from FILE, one per line ('#' starts a comment)",
    )
    parser.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    add_setting_options(parser, "crawl" if follow else "download", required=("out_dir",))
    parser.add_argument(
        "--retry-failed", nargs="+", metavar="CLASS",
        help="with --resume: fetch again the URLs that failed with these error classes, as status "
             "shows them (timeout, http_503, http_5xx, ...)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `harvestman` command."""
    parser = argparse.ArgumentParser(prog="harvestman", description="A polite, resumable, fast web crawler.")
    parser.add_argument("--version", action="version",
                        version=f"harvestman {__version__} (core: {core_name()})")
    commands = parser.add_subparsers(dest="command", required=True)
    crawl = commands.add_parser("crawl", help="crawl from seed URLs, following links")
    _crawl_options(crawl, follow=True)
    cli_cycle.add_crawl_options(crawl)
    _crawl_options(
        commands.add_parser("download", help="fetch a list of URLs without following links"), follow=False
    )
    status = commands.add_parser("status", help="summarise a crawl folder: URLs by state, hosts, errors")
    status.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    status.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    status.add_argument("--json", action="store_true", help="print JSON, every host included")
    export = commands.add_parser(
        "export", help="write a crawl out: its URLs, link graph, pages, renders or Markdown (jsonl, "
                       "parquet), its search documents (opensearch, solr) or a CDXJ index of the WARC files"
    )
    export.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    export.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    export.add_argument(
        "--what", choices=EXPORT_WHAT, default="urls",
        help="urls: one record per URL; links: one row per link of each fetched HTML page "
             "(from_url, to_url, anchor, kind, nofollow); pages: one row per HTML page with its "
             "features (`harvestman features DIR`, or `crawl --features`); renders: one row per "
             "page rendered in a browser (its DOM and screenshot records in the WARC files, jsonl); "
             "markdown: one row per HTML page as Markdown and one per chunk (FILE-chunks), with the "
             "WARC record each came from; index: the search index's documents as bulk files "
             "(--format opensearch or solr)",
    )
    export.add_argument(
        "--format", choices=EXPORT_FORMATS, default="jsonl",
        help="jsonl or parquet: the rows of --what; cdxj: an index of the WARC files for replay tools "
             "(pywb); opensearch or solr: bulk files and a mapping for those search servers (--what index)",
    )
    export.add_argument(
        "--chunk-size", type=int, metavar="N",
        help="--what markdown: characters a chunk holds at most (default 2000; chunks break at "
             "headings, then paragraphs; 0: no chunks file)",
    )
    export.add_argument(
        "--out", "-o", type=Path, metavar="FILE", dest="output",
        help="write here, '-' for standard output (jsonl, cdxj) (default: DIR/export.FORMAT, "
             "DIR/index.cdxj for cdxj, DIR/markdown.FORMAT for markdown)",
    )
    export.add_argument("--output", type=Path, dest="output", help=argparse.SUPPRESS)  # the old spelling
    worker = commands.add_parser(
        "worker", help="join a crawl kept in PostgreSQL from this machine, with the crawl's own settings"
    )
    worker.add_argument("--db", required=True, metavar="URL", help="the crawl's database: postgresql://...")
    worker.add_argument("--out", "-o", required=True, type=Path, metavar="DIR", dest="out_dir",
                        help="this machine's part of the crawl's folder: its WARC files, logs")
    add_setting_options(worker, "worker")
    cli_cycle.add_commands(commands)
    demo = commands.add_parser("demo", help="serve the bundled demo site on loopback and crawl it")
    demo.add_argument(
        "--out", "-o", type=Path, metavar="DIR", help="output folder (default: a new temporary one)"
    )
    demo.add_argument("--quiet", "-q", action="store_true", default=None, help="no progress display")
    demo.add_argument("--serve", action="store_true",
                      help="after the crawl, keep the demo web up (until Ctrl-C) for the other commands")
    cli_batch.add_commands(commands)
    cli_features.add_commands(commands)
    cli_extract.add_commands(commands)
    cli_recrawl.add_commands(commands)
    cli_search.add_commands(commands)
    cli_focus.add_commands(commands)
    serve = commands.add_parser("serve", help="a REST API and web page to start, watch and search crawls")
    serve.add_argument("--data", type=Path, default=Path("harvestman-data"), metavar="ROOT",
                       help="the folder holding the served crawls (default ./harvestman-data)")
    serve.add_argument("--db", metavar="URL", default="",
                       help="keep the crawls in PostgreSQL (postgresql://USER@HOST/DB: a database each)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8844, help="port to listen on (default 8844)")
    serve.add_argument("--token", help="the access token (default: $HARVESTMAN_TOKEN, else ROOT/token)")
    # The server's network ceiling (serve/ceiling.py): every fetch it makes for a client keeps to it.
    serve.add_argument("--allow-net", action="append", default=[], metavar="CIDR",
                       help="what the server may fetch for its clients in this private or loopback range "
                            "(repeatable; default: public addresses only); a request may only narrow it")
    serve.add_argument("--only-net", action="append", default=[], metavar="CIDR",
                       help="fetch for clients only from addresses in this range (repeatable)")
    serve.add_argument("--resolve", action="append", default=[], metavar="HOST:PORT:ADDR",
                       help="pin a host name to an address for every fetch the server makes (repeatable)")
    serve.add_argument("--proxy", default="", metavar="URL",
                       help="send every fetch the server makes through this proxy (as crawl --proxy)")
    return parser


def config_from_args(args: argparse.Namespace, *, follow: bool) -> CrawlConfig:
    """Merge the TOML file (if any) and the command-line options into one validated config; with
    `--resume`, on top of the settings stored with the crawl (launch/run.py's resumed_config)."""
    values = given_settings(args)
    seeds = [*config_from_mapping({"seeds": values.get("seeds", ())}).seeds, *getattr(args, "urls", [])]
    for path in getattr(args, "input", []):
        seeds.extend(read_url_file(Path(path)))
    own: dict[str, Any] = {"seeds": seeds}
    if not follow:
        own.update(follow_links=False, max_depth=0, scope="any")
    cfg = resumed_config(values, own) if values.get("resume") else merge_settings({}, values, own)[0]
    if not cfg.seeds and not cfg.resume:
        raise ConfigError("no URL given: name some on the command line or with -i FILE")
    return cfg


def read_url_file(path: Path) -> list[str]:
    """URLs from a file, one per line; blank lines and '#' comments are skipped."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read URL file {path}: {exc.strerror}") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def run_demo(out: Path | None, quiet: bool, serve: bool = False) -> int:
    """Serve the bundled demo web on loopback addresses, crawl it, and say what to look at; with
    `serve`, keep the web up until Ctrl-C or SIGTERM for the other commands to try."""
    from harvestman.app.demo import (
        DEMO_SIGHTS,
        DemoServer,
        check_demo_folder,
        demo_config_values,
        demo_guide,
        serve_until_stopped,
        serving_guide,
    )

    if out is not None:
        check_demo_folder(out)
    folder = out or Path(tempfile.mkdtemp(prefix="harvestman-demo-"))
    with DemoServer() as server:
        values = demo_config_values(server)
        cfg, _ = merge_settings({}, values, {"out_dir": folder, "quiet": bool(quiet)})
        code = run_crawl(cfg)
        with CrawlDir(folder).read() as frontier:
            records = {url: frontier.get(url) for url in (server.url(s.host, s.path) for s in DEMO_SIGHTS)}
        print()
        print(demo_guide(server, folder, records))
        if serve:
            print()
            serve_until_stopped(serving_guide(server, folder))
    print(f"\ndemo crawl stored in {folder}")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `harvestman` console script."""
    try:
        return _main(argv)
    except (BrokenPipeError, OutputClosed):
        # The reader of standard output went away (`| head -1`): nothing more to say to it. Standard
        # output points at /dev/null from here on, so that Python's own flush at exit does not fail
        # again (the recipe of Python's documentation, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLOSED_OUTPUT


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(cli_search.dashed_query(parser, list(sys.argv[1:] if argv is None else argv)))
    try:
        if args.command == "crawl" and args.rounds is not None:
            return cli_cycle.run_rounds(args)
        if args.command in cli_cycle.COMMANDS:
            return cli_cycle.run(args)
        if args.command in ("crawl", "download"):
            cfg = config_from_args(args, follow=args.command == "crawl")
            check_crawl_order(cfg)
            if cfg.focus_file:  # focused crawling: the focus trained first, the harvest curve after
                return cli_focus.run_focused(cfg, run_crawl)
            return run_crawl(cfg, retry_failed=check_retry_classes(args.retry_failed or ()))
        if args.command == "worker":
            local = {name: value for name, value in given_settings(args).items()
                     if name not in ("db", "out_dir")}
            return run_crawl(worker_config(args.db, args.out_dir, local), join=True)
        if args.command == "status":
            report = crawl_report(args.dir, args.db)
            if args.json:
                print(json.dumps(report, indent=2, sort_keys=True))
            else:
                print_summary(report)
            return EXIT_OK
        if args.command == "export":
            written = export_records(args.dir, args.format, args.output, args.db, what=args.what,
                                     chunk_size=args.chunk_size)
            what = "index lines" if args.format == "cdxj" else "links" if args.what == "links" else "records"
            what = "pages" if args.what in ("pages", "markdown") else what
            what = "documents" if args.what == "index" else what
            if written.path == STDOUT:  # standard output holds the export alone
                print(f"harvestman: {written.count} {what} written to standard output", file=sys.stderr)
            else:
                print(f"{written.count} {what} written to {written.path}")
            if written.note and args.what == "markdown":
                print(written.note)  # where the chunks went: part of the result, not a warning
            elif written.note:
                print(f"note: {written.note}", file=sys.stderr)
            return EXIT_OK
        if args.command == "demo":
            return run_demo(args.out, args.quiet, args.serve)
        if args.command in cli_batch.COMMANDS:
            return cli_batch.run(args)
        if args.command in cli_features.COMMANDS:
            return cli_features.run(args)
        if args.command in cli_extract.COMMANDS:
            return cli_extract.run(args)
        if args.command in cli_recrawl.COMMANDS:
            return cli_recrawl.run(args)
        if args.command in cli_search.COMMANDS:
            return cli_search.run(args)
        if args.command in cli_focus.COMMANDS:
            return cli_focus.run(args)
        if args.command == "serve":
            from harvestman.serve.server import serve  # FastAPI loads only for the server

            return serve(args.data, args.host, args.port, args.token, args.db,
                         net={"allow_net": args.allow_net, "only_net": args.only_net,
                              "resolve": args.resolve, "proxy": args.proxy})
    except (BrokenPipeError, OutputClosed):  # standard output closed: main() ends quietly
        raise
    except CrawlExistsError as exc:  # the library's message names settings; the command line's, flags
        print(f"harvestman: error: {exc.where} already holds a crawl; pass --resume to continue it, or "
              f"choose another --out{' or --db' if exc.in_db else ''}", file=sys.stderr)
        return EXIT_USAGE
    except (HarvestmanError, OSError, KeyboardInterrupt) as exc:
        failure = command_failure(exc)
        assert failure is not None  # every one of these has its status
        print(failure.line, file=sys.stderr)
        return failure.exit_status
    parser.error(f"unknown command {args.command!r}")
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

"""The `harvestman` command: crawl, download, status, export, demo."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harvestman import __version__
from harvestman.app import cli_batch, cli_cycle, cli_extract, cli_features, cli_focus, cli_recrawl, cli_search
from harvestman.app.progress import print_summary
from harvestman.app.report import EXPORT_FORMATS, EXPORT_WHAT, crawl_report, export_records
from harvestman.app.run import check_crawl_order, resumed_config, run_crawl, worker_config
from harvestman.model.config import CrawlConfig, config_from_mapping, load_toml
from harvestman.model.errors import (
    EXIT_FAILED,
    EXIT_IO,
    EXIT_OK,
    EXIT_USAGE,
    ConfigError,
    CrawlExistsError,
    HarvestmanError,
    StorageError,
)
from harvestman.policy.revive import check_retry_classes

DB_HELP = "the crawl database (default DIR/crawl.db): a path, sqlite:///PATH or postgresql://USER@HOST/DB"


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
    parser.add_argument("--out", "-o", required=True, type=Path, metavar="DIR", help="output folder")
    parser.add_argument("--config", type=Path, metavar="TOML", help="read settings from a TOML file")
    parser.add_argument("--db", metavar="URL", help=DB_HELP)
    if follow:
        parser.add_argument("--max-pages", type=int, help="stop after N pages (default: no limit)")
        parser.add_argument(
            "--link-anchors", action="store_true", default=None,
            help="keep each link's anchor text in the link graph (costs ~1 µs CPU a link)",
        )
        parser.add_argument(
            "--max-pages-per-host", type=int, metavar="N",
            help="fetch at most N pages of one host in a run (default 100000; 0: no budget)",
        )
        parser.add_argument(
            "--max-depth", type=int, help="follow links at most D hops from a seed (default 25)"
        )
        parser.add_argument(
            "--scope",
            choices=["host", "domain", "any"],
            help="which links to follow: the seeds' hosts (default), their domains, or any",
        )
        parser.add_argument(
            "--include", action="append", metavar="REGEX", help="only follow URLs matching REGEX"
        )
        parser.add_argument(
            "--ordering", "--order", choices=["bfs", "dfs", "score", "indegree", "opic", "pagerank"],
            help="order of each host's queue: shallower first (bfs, default), deeper first (dfs), "
                 "by a link scorer's score (score: Python API only), by the scores harvestman rank "
                 "stored (indegree, pagerank), or by online OPIC (opic)",
        )
        parser.add_argument(
            "--exclude", action="append", metavar="REGEX", help="never follow URLs matching REGEX"
        )
        parser.add_argument(
            "--sitemaps", choices=["robots", "probe", "off"],
            help="read the sitemaps robots.txt names (robots, default), also /sitemap.xml on each "
                 "host (probe), or none (off)",
        )
    parser.add_argument("--concurrency", type=int, help="concurrent fetches in total (default 100)")
    parser.add_argument("--per-host", type=int, help="concurrent fetches per host (default 2)")
    parser.add_argument(
        "--workers", type=int, metavar="N",
        help="worker processes sharing the crawl (default 0: one per core; --max-pages runs one)",
    )
    parser.add_argument(
        "--delay", type=float, metavar="SECONDS", help="minimum delay between fetches of a host"
    )
    parser.add_argument("--retries", type=int, help="retries of a failed fetch (default 3)")
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="total time allowed per fetch (default 60)"
    )
    parser.add_argument(
        "--max-wait", type=float, metavar="SECONDS",
        help="end the run when every URL left waits longer than this (default 600; --resume goes on)",
    )
    parser.add_argument(
        "--revisit-after", type=float, metavar="SECONDS",
        help="fetch each URL again SECONDS after each fetch, conditionally (default 0: never)",
    )
    parser.add_argument(
        "--schedule", choices=("fixed", "adaptive"),
        help="re-visits at a fixed interval, or adapted to how often each page changes (default fixed)",
    )
    parser.add_argument(
        "--fetch-interval", type=float, metavar="SECONDS",
        help="the crawl cycle's re-fetch interval (default 2592000: 30 days)",
    )
    parser.add_argument(
        "--max-size", type=int, metavar="BYTES", help="truncate bodies beyond BYTES (default 10 MiB)"
    )
    parser.add_argument(
        "--stop-at", metavar="CONDITION",
        help="read each page only until: head, selector:CSS or bytes:N (the page is recorded partial)",
    )
    parser.add_argument(
        "--http2", choices=("auto", "always", "never"),
        help="partial fetches over HTTP/2 where ALPN offers it (auto, default), for every request "
             "(always), or HTTP/1.1 only (never)",
    )
    parser.add_argument("--user-agent", help="User-Agent header and robots.txt product token")
    parser.add_argument(
        "--resolve", action="append", metavar="HOST:PORT:ADDR", help="pin a host name to an address"
    )
    parser.add_argument(
        "--allow-net",
        action="append",
        metavar="CIDR",
        help="allow connections to this private/loopback range (repeatable)",
    )
    parser.add_argument(
        "--host-key", choices=["host", "domain", "ip"], help="what a politeness queue is keyed by"
    )
    parser.add_argument("--ignore-robots", action="store_true", default=None, help="do not obey robots.txt")
    parser.add_argument(
        "--insecure", action="store_true", default=None, help="do not verify TLS certificates"
    )
    parser.add_argument(
        "--resume", action="store_true", default=None,
        help="continue the crawl in DIR with the settings stored with it (options given now replace "
             "them); URLs that failed for a cause the settings now remove are fetched again",
    )
    parser.add_argument(
        "--retry-failed", nargs="+", metavar="CLASS",
        help="with --resume: fetch again the URLs that failed with these error classes, as status "
             "shows them (timeout, http_503, http_5xx, ...)",
    )
    parser.add_argument(
        "--plugin", action="append", dest="plugins", metavar="NAME",
        help="run the installed plugin NAME (an entry point; repeatable; see docs/plugins.md)",
    )
    parser.add_argument(
        "--features", action="store_true", default=None,
        help="compute each HTML page's features (text, sentences, n-grams, language...) into "
             "DIR/features/ (costs CPU a page; `harvestman features DIR` does it afterwards)",
    )
    _render_options(parser)
    parser.add_argument(
        "--focus", metavar="FILE.toml", default=None,
        help="a focused crawl: the focus file's mode (hard, soft, rules) and topics (docs/focus.md)",
    )
    parser.add_argument(
        "--keep-off-topic", action="store_true", default=None,
        help="hard focus: store off-topic pages too (their links are not followed either way)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", default=None, help="no progress display")
    parser.add_argument(
        "--log-json", action="store_true", default=None, help="print every event as a JSON line"
    )


def _kinds(value: str) -> list[str]:
    """A comma-separated list of resource kinds; 'none' for none."""
    return [] if value.strip() == "none" else [k.strip() for k in value.split(",") if k.strip()]


def _render_options(parser: argparse.ArgumentParser) -> None:
    """Rendering pages in a browser (fetch/browser.py, docs/config.md [render])."""
    parser.add_argument(
        "--render", choices=("never", "auto", "always"),
        help="render pages in Chromium: never (default), auto (pages whose HTML looks like an "
             "application shell), always (every HTML page)",
    )
    parser.add_argument("--render-concurrency", type=int, metavar="N",
                        help="pages rendered at once, one browser context each (default 2)")
    parser.add_argument("--render-timeout", type=float, metavar="SECONDS",
                        help="time a page has to load and settle in the browser (default 30)")
    parser.add_argument("--render-settle", metavar="RULE",
                        help="when a page is done: idle (no request in flight for 0.5 s; default) "
                             "or selector:CSS (once it matches)")
    parser.add_argument("--render-block", type=_kinds, metavar="KINDS",
                        help="resource kinds a rendered page may not fetch, comma-separated "
                             "(default image,media,font; 'none' for none)")
    parser.add_argument("--render-third-party", action="store_true", default=None,
                        help="let a rendered page fetch from other hosts than its own")
    parser.add_argument("--render-max-bytes", type=int, metavar="BYTES",
                        help="bytes a rendered page's requests may total (default 20 MiB)")
    parser.add_argument("--screenshot", nargs="?", const="viewport", choices=("viewport", "full"),
                        help="a PNG of each rendered page (of the viewport, or the full page) in the WARC")
    parser.add_argument("--browser", dest="browser_path", metavar="PATH",
                        help="the Chromium binary to drive (default /usr/bin/chromium)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `harvestman` command."""
    parser = argparse.ArgumentParser(prog="harvestman", description="A polite, resumable, fast web crawler.")
    parser.add_argument("--version", action="version", version=f"harvestman {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    crawl = commands.add_parser("crawl", help="crawl from seed URLs, following links")
    _crawl_options(crawl, follow=True)
    cli_cycle.add_crawl_options(crawl)
    _crawl_options(
        commands.add_parser("download", help="fetch a list of URLs without following links"), follow=False
    )
    status = commands.add_parser("status", help="summarise a crawl folder: URLs by state, hosts, errors")
    status.add_argument("dir", type=Path, metavar="DIR")
    status.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    status.add_argument("--json", action="store_true", help="print JSON, every host included")
    export = commands.add_parser(
        "export", help="one record per URL with its state and metadata, or a CDXJ index of the WARC files"
    )
    export.add_argument("dir", type=Path, metavar="DIR")
    export.add_argument("--db", metavar="URL", default="", help=DB_HELP)
    export.add_argument(
        "--what", choices=EXPORT_WHAT, default="urls",
        help="urls: one record per URL; links: one row per link of each fetched HTML page "
             "(from_url, to_url, anchor, kind, nofollow); pages: one row per HTML page with its "
             "features (harvestman features DIR, or a crawl with --features); renders: one row per "
             "page rendered in a browser (its DOM and screenshot records in the WARC files, jsonl)",
    )
    export.add_argument(
        "--format", choices=EXPORT_FORMATS, default="jsonl",
        help="jsonl or parquet: one record per URL; cdxj: an index of the WARC files for replay tools (pywb)",
    )
    export.add_argument(
        "--output", type=Path, metavar="FILE",
        help="write here (default: DIR/export.FORMAT, or DIR/index.cdxj for cdxj)",
    )
    worker = commands.add_parser(
        "worker", help="join a crawl kept in PostgreSQL from this machine, with the crawl's own settings"
    )
    worker.add_argument("--db", required=True, metavar="URL", help="the crawl's database: postgresql://...")
    worker.add_argument("--out", "-o", required=True, type=Path, metavar="DIR",
                        help="this machine's output folder (its WARC files and logs)")
    worker.add_argument("--workers", type=int, metavar="N", help="worker processes (default: one per core)")
    worker.add_argument("--resolve", action="append", metavar="HOST:PORT:ADDR",
                        help="pin a host name to an address")
    worker.add_argument("--allow-net", action="append", metavar="CIDR",
                        help="allow connections to this private/loopback range (repeatable)")
    worker.add_argument("--quiet", "-q", action="store_true", default=None, help="no progress display")
    worker.add_argument("--log-json", action="store_true", default=None,
                        help="print every event as a JSON line")
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
    return parser


_RENAMES = {
    "urls": None,
    "input": None,
    "config": None,
    "command": None,
    "out": "out_dir",
    "focus": "focus_file",
    "ignore_robots": "obey_robots",
    "insecure": "verify_tls",
}


def config_from_args(args: argparse.Namespace, *, follow: bool) -> CrawlConfig:
    """Merge the TOML file (if any) and the command-line options into one validated config; with
    `--resume`, on top of the settings stored with the crawl (app/run.py's resumed_config)."""
    values: dict[str, Any] = load_toml(args.config) if getattr(args, "config", None) else {}
    for key, value in vars(args).items():
        if value is None or (key not in _RENAMES and key not in CrawlConfig.__dataclass_fields__):
            continue
        target = _RENAMES.get(key, key)
        if target is None:
            continue
        if key in ("ignore_robots", "insecure"):
            value = not value
        values[target] = value
    seeds = [*config_from_mapping({"seeds": values.get("seeds", ())}).seeds, *getattr(args, "urls", [])]
    for path in getattr(args, "input", []):
        seeds.extend(read_url_file(Path(path)))
    values["seeds"] = seeds
    if not follow:
        values.update(follow_links=False, max_depth=0, scope="any")
    cfg = resumed_config(values) if values.get("resume") else config_from_mapping(values)
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
    from harvestman.app.report import open_crawl

    if out is not None:
        check_demo_folder(out)
    folder = out or Path(tempfile.mkdtemp(prefix="harvestman-demo-"))
    with DemoServer() as server:
        values = demo_config_values(server)
        cfg = config_from_mapping({**values, "out_dir": folder, "quiet": bool(quiet)})
        code = run_crawl(cfg)
        frontier = open_crawl(folder)
        try:
            records = {url: frontier.get(url) for url in (server.url(s.host, s.path) for s in DEMO_SIGHTS)}
        finally:
            frontier.close()
        print()
        print(demo_guide(server, folder, records))
        if serve:
            print()
            serve_until_stopped(serving_guide(server, folder))
    print(f"\ndemo crawl stored in {folder}")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `harvestman` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
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
            local = {name: value for name in ("workers", "resolve", "allow_net", "quiet", "log_json")
                     if (value := getattr(args, name)) is not None}
            return run_crawl(worker_config(args.db, args.out, local), join=True)
        if args.command == "status":
            report = crawl_report(args.dir, args.db)
            if args.json:
                print(json.dumps(report, indent=2, sort_keys=True))
            else:
                print_summary(report)
            return EXIT_OK
        if args.command == "export":
            written = export_records(args.dir, args.format, args.output, args.db, what=args.what)
            what = "index lines" if args.format == "cdxj" else "links" if args.what == "links" else "records"
            what = "pages" if args.what == "pages" else what
            what = "documents" if args.what == "index" else what
            print(f"{written.count} {what} written to {written.path}")
            if written.note:
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

            return serve(args.data, args.host, args.port, args.token, args.db)
    except CrawlExistsError as exc:  # the library's message names settings; the command line's, flags
        print(f"harvestman: error: {exc.where} already holds a crawl; pass --resume to continue it, or "
              f"choose another --out{' or --db' if exc.in_db else ''}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"harvestman: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StorageError as exc:
        print(f"harvestman: error: {exc}", file=sys.stderr)
        return EXIT_IO
    except HarvestmanError as exc:
        print(f"harvestman: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:  # a file or folder named on the command line cannot be read or written
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"harvestman: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt:
        print("harvestman: interrupted", file=sys.stderr)
        return 130
    parser.error(f"unknown command {args.command!r}")
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

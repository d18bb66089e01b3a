"""Focused crawling's faces in the CLI: `crawl --focus FILE.toml` (the focus prepared before the crawl,
the harvest curve written after) and `harvestman replay DIR --focus FILE.toml` (offline crawling)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harvestman.app.options import DB_HELP, DIR_HELP
from harvestman.batch.harvest import harvest_curve, write_curve
from harvestman.crawl.focusfile import (
    FOCUS_DIR,
    read_focus_file,
    save_focus,
    saved_focus,
    train_focus,
)
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import EXIT_OK, ConfigError, InvalidUrlError
from harvestman.model.records import UrlState
from harvestman.net.urls import normalize
from harvestman.policy.focus import Focus
from harvestman.store.crawldir import CrawlDir

if TYPE_CHECKING:
    from harvestman.batch.focusreplay import StoredCrawl

REDIRECTS = (UrlState.REDIRECT_PERM, UrlState.REDIRECT_TEMP)

COMMANDS = ("replay",)


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `replay` to the `harvestman` parser."""
    replay = subparsers.add_parser(
        "replay", help="run a focus strategy over a previous crawl's pages and link graph, offline")
    replay.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    replay.add_argument("--focus", type=Path, metavar="FILE",
                        help="the focus file (mode, topics, examples); without it, the crawl's bfs judged "
                             "by the focus the crawl was made with")
    replay.add_argument("--bfs", action="store_true",
                        help="with --focus: replay the bfs order, every link followed, judged by that focus "
                             "(the baseline its curve is compared with)")
    replay.add_argument("--budget", type=int, default=0, metavar="N",
                        help="fetch at most N pages (default all)")
    replay.add_argument("--out", type=Path, metavar="FOLDER",
                        help="where the curve goes (default DIR/replay-MODE)")
    replay.add_argument("--db", metavar="URL", default="", help=DB_HELP)


def _fetch_examples(cfg: CrawlConfig) -> Callable[[list[str]], dict[str, str]]:
    """Fetch example URLs as the crawl would (robots.txt obeyed, its address rules and resolve map)."""
    def fetch(urls: list[str]) -> dict[str, str]:
        from harvestman.crawl.download import download

        texts = {}
        for result in download(urls, retries=1, timeout=cfg.timeout, allow_net=cfg.allow_net,
                                only_net=cfg.only_net, proxy=cfg.proxy, extra_headers=cfg.extra_headers,
                                resolve=cfg.resolve, user_agent=cfg.user_agent, verify_tls=cfg.verify_tls):
            if result.status == 200 and result.text:
                texts[result.url] = result.text
            else:
                why = result.error_message or f"HTTP status {result.status}"
                raise ConfigError(f"focus example {result.url} could not be fetched: {why}")
        return texts
    return fetch


def _examples_of(crawl: StoredCrawl) -> Callable[[list[str]], dict[str, str]]:
    """Example URLs for a replay: those the replayed crawl stored are read from it (no request);
    the others fetched with the crawl's own address rules and resolve map."""
    fetch = _fetch_examples(crawl.config)

    def lookup(urls: list[str]) -> dict[str, str]:
        texts: dict[str, str] = {}
        for url in urls:
            try:
                stored = crawl.pages.get(normalize(url))
            except InvalidUrlError:
                stored = None
            if stored is not None:
                texts[url] = stored[1]
        rest = [url for url in urls if url not in texts]
        return {**texts, **(fetch(rest) if rest else {})}
    return lookup


def prepare_focus(cfg: CrawlConfig) -> Focus:
    """Train the crawl's focus (examples fetched, rules learnt from a training crawl) and save it in
    DIR/focus, where every crawling process loads it; on --resume, the saved focus is kept."""
    saved = saved_focus(Path(cfg.out_dir))
    if saved is not None and cfg.resume:
        return saved[0]
    file = read_focus_file(Path(cfg.focus_file), _fetch_examples(cfg), known_digest=saved[1] if saved else "")
    if saved is not None and saved[1] == file.digest:
        return saved[0]
    focus = train_focus(file, keep_off_topic=cfg.keep_off_topic)
    if file.training and file.spec.mode == "rules":
        from harvestman.batch.focusreplay import learn_rules, read_crawl

        focus = replace(focus, rules=learn_rules(read_crawl(Path(file.training)), focus))
    save_focus(focus, Path(cfg.out_dir), file.digest)
    return focus


def live_curve(cfg: CrawlConfig, focus: Focus) -> Path:
    """Write a focused crawl's harvest curve (pages in fetch order, relevant as the focus judged them)
    into DIR/focus/; the CSV's path."""
    with CrawlDir.of(cfg).read() as store:
        fetched = sorted((r.fetch_time, r.relevance >= focus.spec.threshold and bool(r.topic))
                         for r in store.records()
                         if r.http_status > 0 and r.state not in REDIRECTS)
    csv_path, _ = write_curve(harvest_curve([hit for _, hit in fetched]), Path(cfg.out_dir) / FOCUS_DIR,
                              title=f"harvest curve of the crawl, {focus.spec.mode} focus")
    return csv_path


def run_focused(cfg: CrawlConfig, run_crawl: Callable[[CrawlConfig], int]) -> int:
    """A focused crawl from the command line: the focus first, the crawl, then its harvest curve."""
    focus = prepare_focus(cfg)
    code = run_crawl(cfg)
    path = live_curve(cfg, focus)
    if not cfg.quiet and not cfg.log_json:
        print(f"harvest curve written to {path} (and {path.with_suffix('.png').name})")
    return code


def run(args: argparse.Namespace) -> int:
    """Run `replay`; errors are HarvestmanErrors, reported by the caller."""
    from harvestman.batch.focusreplay import read_crawl, replay

    if args.command != "replay":
        raise ConfigError(f"not a focus command: {args.command!r}")
    if args.budget < 0:
        raise ConfigError(f"--budget must be >= 0, got {args.budget}")
    if args.bfs and args.focus is None:
        raise ConfigError("--bfs replays the bfs order judged by a focus: name its file with --focus FILE")
    crawl = read_crawl(args.dir, args.db)
    focus = None
    if args.focus is not None:
        file = read_focus_file(args.focus, _examples_of(crawl))
        focus = train_focus(file)
        if file.training and file.spec.mode == "rules":
            from harvestman.batch.focusreplay import learn_rules

            focus = replace(focus, rules=learn_rules(read_crawl(Path(file.training)), focus))
    judge = focus
    if focus is None:  # the bfs baseline, judged as the crawl's own focus judged its pages
        saved = saved_focus(Path(args.dir))
        if saved is None:
            raise ConfigError(f"{args.dir} was not crawled with --focus, so nothing judges its pages: name a "
                              "focus file (--focus FILE, and --bfs for the bfs order judged by it)")
        judge = saved[0]
    elif args.bfs:
        focus = None
    assert judge is not None
    result = replay(crawl, focus, budget=args.budget, judge=judge)
    strategy = f"{focus.spec.mode} focus" if focus else f"bfs, judged by the {judge.spec.mode} focus"
    out = args.out or Path(args.dir) / f"replay-{focus.spec.mode if focus else 'bfs'}"
    csv_path, png_path = write_curve(result.curve, out, total_relevant=result.relevant_total,
                                     title=f"harvest curve, replay: {strategy}")
    with open(out / "order.jsonl", "w", encoding="utf-8") as order:
        for visit in result.visits:
            row = {"url": visit.url, "depth": visit.depth, "topic": visit.topic,
                   "relevance": round(visit.relevance, 4), "relevant": visit.on_topic}
            order.write(json.dumps(row) + "\n")
    found = result.curve[-1].relevant if result.curve else 0
    summary = {"fetched": len(result.visits), "relevant_found": found,
               "relevant_stored": result.relevant_total, "stored_pages": result.stored_pages,
               "recall": round(result.recall, 4)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"{summary['fetched']} pages replayed, {summary['relevant_found']} relevant "
          f"(recall {result.recall:.1%} of {result.relevant_total}); curve in {csv_path} and {png_path.name}")
    return EXIT_OK

"""The page commands of `harvestman`: features (seed 000) and classify (seed 004)."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from harvestman.app.options import DIR_HELP
from harvestman.model.errors import EXIT_OK, ConfigError

COMMANDS = ("features", "classify")


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the page commands to the `harvestman` parser."""
    features = subparsers.add_parser(
        "features", help="each HTML page's features (text, sentences, tag counts, n-grams, language, "
                         "headings) from the crawl's WARC files, into DIR/features/pages.parquet (keeping "
                         "the categories classify gave)")
    features.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    features.add_argument("--top-k", type=int, default=20, metavar="K",
                          help="word n-grams kept of each order 1-3, most frequent first (default 20)")
    classify = subparsers.add_parser(
        "classify", help="give each page a category learnt from examples (DIR/features/pages.parquet's "
                         "category and category_probability)")
    classify.add_argument("dir", type=Path, metavar="DIR", help=DIR_HELP)
    given = classify.add_mutually_exclusive_group(required=True)
    given.add_argument("--categories", type=Path, metavar="FILE.toml",
                       help="[[category]] tables: name, examples (globs of HTML files, URLs of the "
                            "crawl), optionally negative; the model is saved in DIR/classifier")
    given.add_argument("--model", type=Path, metavar="FOLDER",
                       help="apply a model saved before (a DIR/classifier folder) instead of training")


def run(args: argparse.Namespace) -> int:
    """Run one page command; errors are HarvestmanErrors, reported by the caller."""
    if args.command == "features":
        from harvestman.index.pages import features_from_warc  # imported here: heavy, and opt-in

        if args.top_k < 1:
            raise ConfigError(f"--top-k must be at least 1, got {args.top_k}")
        path, count = features_from_warc(args.dir, top_k=args.top_k)
        print(f"features of {count} pages written to {path}")
        return EXIT_OK
    if args.command == "classify":
        from harvestman.index.categories import classify_crawl

        done = classify_crawl(args.dir, categories=args.categories, model=args.model)
        counts = Counter(page.category for page in done.pages)
        summary = ", ".join(f"{name} {counts.get(name, 0)}" for name in done.model.classes)
        if done.cv_accuracy is not None:
            print(f"cross-validated accuracy on the {done.examples} examples: {done.cv_accuracy:.3f}")
        print(f"{len(done.pages)} pages classified ({summary}), written to {done.path}; "
              f"model in {done.model_dir}")
        return EXIT_OK
    raise ConfigError(f"not a page command: {args.command!r}")

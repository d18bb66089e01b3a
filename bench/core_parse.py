"""The compiled core's parse of a page (native/src/parse.rs: lol_html's tokenizer, ada-url) against
crawl/parse.py's Python path (Lexbor through selectolax, ada-url's Python binding), as the crawl calls
parse_html (no text, no anchor texts), on the benchmark web's pages and on the Chromium-checked corpus
(Debian's python3.11-doc, as bench/link_recall.py reads it, where installed).

    python bench/core_parse.py [--hosts 10] [--pages 50] [--runs 5] [--docs /usr/share/doc/python3.11/html]

Prints, for each set: pages, how many the core answers (the rest it leaves to Python) and on how many
of those both give the same ParsedPage, then the CPU µs a page of each (the median of --runs, the two
alternating; the core's figure includes the pages it leaves to Python, parsed there).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from harvestman.crawl import parse
from harvestman.model.config import MAX_OUTLINKS
from harvestman.model.core import core_name


def python(text: str, url: str) -> parse.ParsedPage:
    """parse_html's Python path, as the crawl calls parse_html."""
    return parse._parse_python(text, url, MAX_OUTLINKS, parse.MAX_TEXT, parse.SEGMENT_CHARS, False, False)


def compare(name: str, pages: list[tuple[str, str]], runs: int) -> None:
    """Check and time one set of (URL, HTML) pages."""
    answered = same = 0
    for url, text in pages:
        got = parse._core_parser.parse(text, url, MAX_OUTLINKS) if parse._core_parser else None
        if got is not None:
            answered += 1
            title, description, language, links, noindex, nofollow, base_url = got
            page = parse.ParsedPage(title=title, description=description, language=language, links=links,
                                    noindex=noindex, nofollow=nofollow, base_url=base_url)
            same += page == python(text, url)
    times: dict[str, list[float]] = {"python": [], "core": []}
    for _ in range(runs):
        for label in times:
            started = time.thread_time()
            if label == "python":
                for url, text in pages:
                    python(text, url)
            else:
                for url, text in pages:
                    parse.parse_html(text, url, with_text=False, anchors=False)
            times[label].append((time.thread_time() - started) * 1e6 / len(pages))
    py, native = statistics.median(times["python"]), statistics.median(times["core"])
    print(f"{name}: {len(pages)} pages, the core answers {answered}, the same ParsedPage on {same}; "
          f"Python {py:.1f} µs a page, parse_html with the core {native:.1f} µs ({py / native:.1f}x)")


def main() -> None:
    """Generate the benchmark web's pages, read the docs, compare both sets."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=50, help="pages per host")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    args = parser.parse_args()
    print(f"core: {core_name()}")
    with tempfile.TemporaryDirectory(prefix="harvestman-parse-") as tmp:
        spec = generate_web(Path(tmp) / "web", host_addresses(args.hosts), args.pages, port=8080)
        web = []
        for url in sorted(spec.links):
            host, path = url.removeprefix("http://").split("/", 1)
            web.append((url, (spec.root / host.split(":")[0] / (path or "index.html")).read_text()))
    compare("benchmark web", web, args.runs)
    if args.docs.is_dir():
        docs = [(f"http://127.77.0.1/{path.relative_to(args.docs)}", path.read_text("utf-8", "replace"))
                for path in sorted(args.docs.rglob("*.html"))]
        compare(f"Chromium-checked corpus ({args.docs})", docs, max(1, args.runs // 2))


if __name__ == "__main__":
    main()

"""A measured prototype of the next boundary: a page's links in Rust (native/examples/links_prototype.rs:
lol_html's tokenizer and ada-url) against crawl/parse.py's parse_html (Lexbor's tree through selectolax,
ada-url through its Python binding), on the benchmark web's pages.

    python bench/links_prototype.py [--hosts 10] [--pages 50] [--runs 7]

Prints the CPU µs a page of each (best of --runs; the crawl's default: no text, no anchors) and how
many pages give the same http(s) links in the same order, fragments dropped. Not wired into the crawl:
it reads fewer things than parse_html (no title, meta robots, canonical or refresh), so its figure is a
floor for the boundary, and equality on the Chromium-checked corpus is still to be shown.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from harvestman.crawl.parse import parse_html

NATIVE = Path(__file__).resolve().parent.parent / "native"


def main() -> None:
    """Write the pages and a manifest, time Python's parse, run the Rust prototype, compare."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=50, help="pages per host")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="harvestman-links-") as tmp:
        spec = generate_web(Path(tmp) / "web", host_addresses(args.hosts), args.pages, port=8080)
        pages = []
        for url in sorted(spec.links):
            host, path = url.removeprefix("http://").split("/", 1)
            pages.append((url, spec.root / host.split(":")[0] / (path or "index.html")))
        manifest = Path(tmp) / "manifest.tsv"
        manifest.write_text("".join(f"{url}\t{file}\n" for url, file in pages))
        texts = [(url, file.read_text()) for url, file in pages]
        best, python = float("inf"), []
        for _ in range(args.runs):
            started = time.thread_time()
            python = [parse_html(text, url, with_text=False, anchors=False) for url, text in texts]
            best = min(best, time.thread_time() - started)
        print(f"{len(pages)} pages; parse_html (Lexbor + ada-url, Python): "
              f"{best * 1e6 / len(pages):.1f} µs a page")
        sys.stdout.flush()
        out = Path(tmp) / "links.tsv"
        subprocess.run(["cargo", "run", "-q", "--release", "--example", "links_prototype", "--features",
                        "links-prototype", "--", str(manifest), str(out), str(args.runs)],
                       cwd=NATIVE, check=True)
        # parse_html keeps each URL once, where it first appears; the prototype lists every one.
        rust = [list(dict.fromkeys(line.split("\t")[1:])) for line in out.read_text().splitlines()]
        same = sum(list(dict.fromkeys(link.url.partition("#")[0] for link in parsed.links)) == found
                   for parsed, found in zip(python, rust, strict=True))
        print(f"same links in the same order on {same} of {len(pages)} pages")


if __name__ == "__main__":
    main()

"""Peak memory and CPU of parse_html on one huge page of links, as the crawl parses it.

    python bench/parse_memory.py [--links 100000] [--mib 10]

Builds a page of `--links` distinct links (a documentation index: list items with anchors, filler
text between them up to `--mib` MiB), then parses it in a fresh process for each setting, so that
the peak resident size (ru_maxrss) belongs to that parse alone. Printed per setting: the page's
size, links kept, CPU seconds, and the peak resident memory the parse added over the process
with the page already built (MiB). Settings: the crawl's defaults (pieces of SEGMENT_CHARS, links
capped at max_outlinks, no text); the same uncapped; anchor and page text on; and the whole page
parsed at once (no pieces), which is what the pieces save. Run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from harvestman.crawl.parse import SEGMENT_CHARS, parse_html
from harvestman.model.config import MAX_OUTLINKS

SETTINGS = {
    "default (pieces, capped, no text)": {"max_links": MAX_OUTLINKS, "with_text": False},
    "pieces, uncapped, no text": {"max_links": 10**7, "with_text": False},
    "pieces, uncapped, anchor and page text": {"max_links": 10**7, "with_text": True},
    "whole page at once, uncapped, no text": {"max_links": 10**7, "with_text": False,
                                              "segment_chars": 10**10},
}


def build_page(links: int, mib: float) -> str:
    """A page of `links` distinct links, padded with text to about `mib` MiB."""
    item = '<li><a class="reference internal" href="library/module-{0}.html#func-{0}">entry {0}</a>{1}</li>\n'
    bare = sum(len(item.format(i, "")) for i in range(links))
    pad = " filler" * max(0, round((mib * 1024 * 1024 - bare) / links / 7))
    body = "".join(item.format(i, pad) for i in range(links))
    head = "<!DOCTYPE html><html lang=en><head><title>Index</title></head>"
    return f"{head}<body><ul>\n{body}</ul></body></html>"


def measure(links: int, mib: float, setting: str) -> dict[str, float]:
    """Parse the page once with `setting`, in this process; the figures."""
    page = build_page(links, mib)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    parsed = parse_html(page, "http://docs.test/genindex-all.html", **SETTINGS[setting])  # type: ignore[arg-type]
    cpu = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"mib": len(page) / 2**20, "kept": len(parsed.links), "cpu": cpu,
            "added": (peak - before) / 1024, "base": before / 1024}


def main() -> None:
    """Run each setting in a child process and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--mib", type=float, default=10.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.links, args.mib, args.child)))
        return
    print(f"parse_html, SEGMENT_CHARS={SEGMENT_CHARS}, max_outlinks={MAX_OUTLINKS}")
    print(f"{'setting':42} {'page MiB':>8} {'links kept':>10} {'CPU s':>6} {'peak added MiB':>14}")
    for setting in SETTINGS:
        out = subprocess.run([sys.executable, __file__, "--links", str(args.links), "--mib", str(args.mib),
                              "--child", setting], check=True, capture_output=True, text=True).stdout
        row = json.loads(out)
        print(f"{setting:42} {row['mib']:8.2f} {row['kept']:10d} {row['cpu']:6.2f} {row['added']:14.1f}")


if __name__ == "__main__":
    main()

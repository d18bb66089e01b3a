"""Time `WarcWriter.write()` on synthetic 20 KB HTML pages with 25 outlinks each; print µs per page.

    python bench/warc_write.py [--pages 2000] [--page-bytes 20000] [--links 25] [--runs 5]

Each run writes `--pages` fetches (response, request and metadata records, gzip through ISA-L) to a
fresh temporary directory; the figure is the median µs per page over the runs, with the share spent in
gzip alone (the same records' bytes compressed once more, member by member) for comparison.
Run with harvestman installed (the project's venv active); to time another version of
`harvestman.store.warc`, put its package first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import zlib
from pathlib import Path

from harvestman.model.records import FetchResult, Timings
from harvestman.store.warc import COMPRESS_LEVEL, WarcWriter, _deflate

WORDS = ("crawl", "frontier", "politeness", "lease", "fetch", "parse", "archive", "record", "digest",
         "header", "body", "link", "host", "queue", "robots", "sitemap", "signature", "revisit", "focus",
         "score", "anchor", "text", "page", "site", "index")


def page(rng: random.Random, size: int, links: list[str]) -> bytes:
    """One synthetic HTML page of about `size` bytes linking to `links`."""
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>page</title></head><body>"]
    anchors = [f"<a href='{link}'>{' '.join(rng.choices(WORDS, k=3))}</a>" for link in links]
    while sum(map(len, parts)) < size:
        parts.append("<p>" + " ".join(rng.choices(WORDS, k=40)) + "</p>\n")
        if anchors:
            parts.append(anchors.pop())
    parts.extend(anchors)
    parts.append("</body></html>")
    return "".join(parts).encode()


def fetches(n: int, size: int, nlinks: int) -> list[tuple[FetchResult, list[str]]]:
    """`n` fetch results with their outlinks, as the engine hands them to the writer."""
    rng = random.Random(1)
    out = []
    for i in range(n):
        host = f"host{i % 50}.example"
        links = [f"http://host{rng.randrange(50)}.example/p/{rng.randrange(10**6)}" for _ in range(nlinks)]
        body = page(rng, size, links)
        result = FetchResult(
            url=f"http://{host}/p/{i}",
            final_url=f"http://{host}/p/{i}",
            status=200,
            headers=(
                ("Server", "nginx/1.22.1"),
                ("Date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                ("Content-Type", "text/html; charset=utf-8"),
                ("Content-Length", str(len(body) // 4)),
                ("Last-Modified", "Mon, 13 Nov 2023 10:00:00 GMT"),
                ("Connection", "keep-alive"),
                ("ETag", f'"{i:x}-5000"'),
                ("Content-Encoding", "gzip"),
            ),
            content_type="text/html",
            body=body,
            started_at=1_700_000_000.0 + i,
            timings=Timings(0.0001, 0.0002, 0.0, 0.002, 0.003),
            wire_bytes=len(body) // 4,
            remote_addr="127.0.0.1",
        )
        out.append((result, links))
    return out


def run_once(items: list[tuple[FetchResult, list[str]]]) -> float:
    """Seconds to write every item to a fresh WARC directory."""
    headers = (("User-Agent", "harvestman/0.1 (+https://example.org/bot)"), ("Accept-Encoding", "gzip"))
    with tempfile.TemporaryDirectory(prefix="harvestman-warc-bench-") as tmp, WarcWriter(Path(tmp)) as writer:
        started = time.perf_counter()
        for result, links in items:
            writer.write(result, headers, links)
        return time.perf_counter() - started


def gzip_only(items: list[tuple[FetchResult, list[str]]]) -> float:
    """Seconds to gzip each page's body alone as one member (the floor of any WARC writer)."""
    started = time.perf_counter()
    for result, _ in items:
        c = _deflate.compressobj(COMPRESS_LEVEL, _deflate.DEFLATED, zlib.MAX_WBITS + 16)
        c.compress(result.body)
        c.flush()
    return time.perf_counter() - started


def main() -> None:
    """Parse options, write the pages `--runs` times, print the median µs per page."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=25)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    items = fetches(args.pages, args.page_bytes, args.links)
    run_once(items[: min(200, len(items))])  # warm up
    per_page = [run_once(items) / len(items) * 1e6 for _ in range(args.runs)]
    gz = [gzip_only(items) / len(items) * 1e6 for _ in range(args.runs)]
    print(f"{args.pages} pages of ~{args.page_bytes // 1000} KB, {args.links} links, {args.runs} runs")
    print(f"WarcWriter.write: {statistics.median(per_page):.1f} µs/page median "
          f"(min {min(per_page):.1f}, max {max(per_page):.1f}); gzip of the body alone "
          f"{statistics.median(gz):.1f} µs/page")


if __name__ == "__main__":
    main()

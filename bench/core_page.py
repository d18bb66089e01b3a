"""The next boundary's prototype (issue 33): a fetched HTML page crossing into the compiled core once
(harvestman._core.PagePath: its signature, its parse and its WARC records in one call) against the
crawl's path of today (the signature in Python, parse_html's core call, the followed links in
Python, the WARC writer's core call), on the benchmark web's pages.

    python bench/core_page.py [--hosts 10] [--pages 50] [--runs 5]

Prints how many pages the one call answers and on how many its answer is the Python path's (the
signature, parse_html's ParsedPage without the core, the Python writer's gzipped records), then
the CPU µs a page (median of --runs, alternating) of: the three calls with the followed links
unscoped (what the one call does), the same with the crawl's scope check (pagelinks.queueable,
which the one call leaves to Python), and the one call. Record ids and dates are made in Python for
both, as the writer makes them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from harvestman.crawl import parse
from harvestman.crawl.pagelinks import queueable
from harvestman.model.config import MAX_OUTLINKS, CrawlConfig
from harvestman.model.core import core, core_name
from harvestman.model.records import FetchResult, Timings
from harvestman.policy.outcome import content_signature
from harvestman.policy.scope import Scope
from harvestman.store import warc

SENT = (("User-Agent", "harvestman/0.1"), ("Accept", "*/*"), ("Accept-Encoding", "gzip, br"))


def fetched(url: str, body: bytes) -> FetchResult:
    """A 200 HTML fetch of `body` at `url`, as nginx serves the benchmark web."""
    return FetchResult(
        url=url, final_url=url, status=200, content_type="text/html", charset="utf-8",
        text=body.decode(), body=body, remote_addr="127.20.0.1", wire_bytes=len(body) + 200,
        headers=(("Server", "nginx/1.22.1"), ("Date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                 ("Content-Type", "text/html"), ("Content-Length", str(len(body)))),
        started_at=1_700_000_000.123456, timings=Timings(0.0001, 0.0002, 0.0, 0.0021, 0.0035))


def followed(page: parse.ParsedPage) -> list[str]:
    """The page's followed links, unscoped: what PagePath lists as the records' outlinks."""
    return [] if page.nofollow else [link.url for link in page.links if not link.nofollow]


def three_calls(writer: warc.WarcWriter, result: FetchResult, links: Any) -> tuple[Any, ...]:
    """The crawl's path: signature, parse, followed links (`links` of the parse), records."""
    signature = content_signature(result.body)
    page = parse.parse_html(result.text or "", result.final_url, max_links=MAX_OUTLINKS,
                            with_text=False, anchors=False)
    return signature, page, writer._build(result, SENT, links(page), signature)[0]


def main() -> None:
    """Generate the benchmark web's pages, check the one call against the three, time both."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=50, help="pages per host")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"core: {core_name()}")
    if core is None or warc._core_records is None or parse._core_parser is None:
        sys.exit("the compiled core is not in use: nothing to compare")
    one = core.PagePath(warc._core_records, parse._core_parser)
    with tempfile.TemporaryDirectory(prefix="harvestman-page-") as tmp:
        spec = generate_web(Path(tmp) / "web", host_addresses(args.hosts), args.pages, port=8080)
        results = []
        for url in sorted(spec.links):
            host, path = url.removeprefix("http://").split("/", 1)
            page = spec.root / host.split(":")[0] / (path or "index.html")
            results.append(fetched(url, page.read_bytes()))
        writer = warc.WarcWriter(Path(tmp) / "warc")
    level = writer.compress_level
    scope = Scope(sorted({"http://" + r.url.split("/", 3)[2] + "/" for r in results}))  # every host a seed
    settings = CrawlConfig().links
    follow: dict[str, tuple[str, str] | None] = {}  # verdicts remembered across pages, as the crawl does

    answered = same = 0
    ids = tuple(f"<urn:uuid:00000000-0000-4000-8000-00000000000{i}>" for i in (1, 2, 3))
    date = warc._warc_date(results[0].started_at)
    for result in results:
        got = one.page(result, SENT, MAX_OUTLINKS, level, ids, date)
        if got is None:
            continue
        answered += 1
        signature, fields, data = got
        title, description, language, links, noindex, nofollow, base_url = fields
        page = parse.ParsedPage(title=title, description=description, language=language, links=links,
                                noindex=noindex, nofollow=nofollow, base_url=base_url)
        want = parse._parse_python(result.text or "", result.final_url, MAX_OUTLINKS, 0,
                                   parse.SEGMENT_CHARS, False, False)
        same += (signature == content_signature(result.body) and page == want
                 and data == writer._build_python(result, SENT, followed(want), signature, ids, date))

    def scoped(page: parse.ParsedPage) -> list[str]:
        return list(queueable(page.links, 0, settings, scope, follow)) if not page.nofollow else []

    def fused() -> None:
        for result in results:
            one.page(result, SENT, MAX_OUTLINKS, level, tuple(warc._record_ids(3)),
                     warc._warc_date(result.started_at))

    paths = {
        "three calls": lambda: [three_calls(writer, r, followed) for r in results],
        "three calls + scope": lambda: [three_calls(writer, r, scoped) for r in results],
        "one call": fused,
    }
    times: dict[str, list[float]] = {label: [] for label in paths}
    for _ in range(args.runs):
        for label, run in paths.items():
            started = time.thread_time()
            run()
            times[label].append((time.thread_time() - started) * 1e6 / len(results))
    print(f"benchmark web: {len(results)} pages, the one call answers {answered}, "
          f"the Python path's answer on {same}")
    base = statistics.median(times["three calls"])
    for label, values in times.items():
        median = statistics.median(values)
        print(f"  {label}: {median:.1f} µs a page ({median / base:.2f}x the three calls)")


if __name__ == "__main__":
    main()

"""The CPU cost per page of each stage of a crawl's work, on pages of bench/synthweb.py's web.

    python bench/page_costs.py [--hosts 3] [--pages 201] [--repeats 5] [--concurrency 32]

Each stage runs harvestman's own code on every page of the web (`--hosts` x `--pages`, written to
a temporary directory), timed with the process's CPU clock, in the engine's order:

  fetch      CurlTransport.fetch of every page from nginx on loopback, `--concurrency` at once
             (CPU of this process over the batch, event loop included; nginx's own CPU is not)
  decode     what the Fetcher adds to a response (Fetcher._result): media type, binary sniff,
             charset, text
  parse      parse_html(with_text=False), as the crawl calls it (the row "parse, --link-anchors":
             the same with each link's anchor text, as that option parses; not in the sum)
  normalize  followed_links over each page's links, as the engine calls it: normalization and the
             scope check, each link's answer remembered
  decide     the URL's outcome, with the content signature (a blake2b of the body)
  add        SqliteStore.add() of all the page's outlinks: the seen check, most already known
  complete   SqliteStore.complete() of the page's outcome and its new URLs, one transaction
  warc       WarcWriter.write: request, response and metadata records, gzip, appended to a file

parse and normalize remember answers (resolved links, followed links), so they get three figures:
cold (both forgotten before each page), in order (cleared once, then the pages in crawl order)
and warm (every answer cached). The frontier stages start from a database of `--known` URLs of
other hosts; then the pages come in crawl order, so each URL of the web is inserted once and most
outlinks are already known. Printed: the median over `--repeats` of µs of CPU per page, and the sum.
The engine commits several pages in one complete() (the "a call" row shows the saving) and skips
outlinks it has already sent before the database sees them, so add and complete overlap: both rows
are upper bounds. nginx is needed for the fetch row only. Run from the repository root.

Then the same pages through the C libraries alone, with none of harvestman's Python around them:
libcurl fetching with no callbacks, Lexbor building the tree and selecting the link elements, ISA-L
compressing the body, SHA-1 over it twice; with wget2 installed, wget2's CPU a page crawling the same
web in the same run. The libraries' sum is the least a page can cost while its work stays in them.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import hashlib
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pycurl
from isal import isal_zlib
from selectolax.lexbor import LexborHTMLParser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.crawl_vs_peers import wget2_command
from bench.synthweb import generate_web, host_addresses
from harvestman.crawl import parse as parse_module
from harvestman.crawl.parse import _LINK_SELECTOR, parse_html
from harvestman.crawl.workers import tune_for_crawling
from harvestman.fetch.fetcher import Fetcher
from harvestman.fetch.transport import ACCEPT_ENCODING, CurlTransport, TransportSettings
from harvestman.model.config import CrawlConfig
from harvestman.model.records import (
    FetchOutcome,
    FetchResult,
    HttpRequest,
    HttpResponse,
    LeasedUrl,
    NewUrl,
    ParsedPage,
    Timings,
)
from harvestman.net.addrguard import AddressGuard
from harvestman.net.urls import host_of
from harvestman.policy.outcome import decide
from harvestman.policy.scope import Scope, followed_links
from harvestman.store.sqlite_store import SqliteStore
from harvestman.store.warc import _GZIP_WBITS, COMPRESS_LEVEL, WarcWriter
from tests.support.nginx import NginxServer, find_nginx, free_port

T = TypeVar("T")
CFG = CrawlConfig()
REQUEST_HEADERS = (("User-Agent", CFG.user_agent), ("Accept", "*/*"), ("Accept-Encoding", ACCEPT_ENCODING))
CACHED = ("parse", "normalize")
ANCHORS_ROW = "parse, --link-anchors"
FOLLOWED: dict[str, tuple[str, str] | None] = {}  # the engine's answers for the run (followed_links)
COLUMNS = ("cold", "in order", "warm")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of the web: its URL, its outlinks as the engine queues them, its lease."""

    url: str
    outlinks: tuple[tuple[str, str], ...]  # normalized followed links with their hosts, in order
    leased: LeasedUrl

    @property
    def links(self) -> list[str]:
        """The outlinks as the engine hands them to the WARC writer."""
        return [url for url, _ in self.outlinks]


def _clock_overhead() -> int:
    """ns that one pair of CPU-clock reads adds to a measure (subtracted from every page)."""
    clock = time.process_time_ns
    pairs = []
    for _ in range(10_000):
        start = clock()
        pairs.append(clock() - start)
    return int(statistics.median(pairs))


OVERHEAD_NS = _clock_overhead()


def per_page(items: Iterable[T], work: Callable[[T], object],
             before: Callable[[T], object] | None = None) -> float:
    """µs of CPU per item that `work(item)` took; `before(item)` runs first, untimed."""
    clock = time.process_time_ns
    total = count = 0
    for item in items:
        if before is not None:
            before(item)
        start = clock()
        work(item)
        total += clock() - start - OVERHEAD_NS
        count += 1
    return total / count / 1000


def clear_caches(_item: object = None) -> None:
    """Forget every resolved and followed link, as a process that never saw them."""
    FOLLOWED.clear()
    parse_module._resolve_http.cache_clear()


def load_pages(root: Path, urls: Sequence[str]) -> list[HttpResponse]:
    """The responses nginx gives for `urls` (its headers, the files' bytes), built without a fetch."""
    out = []
    for url in urls:
        parts = urlsplit(url)
        name = "index.html" if parts.path == "/" else parts.path.lstrip("/")
        path = root / (parts.hostname or "") / name
        body = path.read_bytes()
        mtime = path.stat().st_mtime
        headers = (
            ("Server", "nginx/1.22.1"),
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Content-Type", "text/html"),
            ("Content-Length", str(len(body))),
            ("Last-Modified", email.utils.formatdate(mtime, usegmt=True)),
            ("Connection", "keep-alive"),
            ("ETag", f'"{int(mtime):x}-{len(body):x}"'),
            ("Accept-Ranges", "bytes"),
        )
        out.append(HttpResponse(url=url, status=200, headers=headers, body=body, wire_bytes=len(body) + 250,
                                truncated=False, timings=Timings(), remote_addr=parts.hostname or "",
                                http_version="1.1"))
    return out


def to_result(response: HttpResponse) -> FetchResult:
    """The Fetcher's FetchResult for a response that needed no redirect."""
    return Fetcher._result(response.url, response.url, [], response, response.wire_bytes, time.time(),
                           time.monotonic(), 1, None)


def parse(result: FetchResult, anchors: bool = False) -> ParsedPage:
    """The engine's parse of a fetched HTML page (`anchors`: with --link-anchors)."""
    return parse_html(result.text or "", result.final_url, max_links=CFG.max_outlinks, with_text=False,
                      anchors=anchors)


def parse_anchors(result: FetchResult) -> ParsedPage:
    """The engine's parse of a fetched HTML page with --link-anchors."""
    return parse(result, anchors=True)


def leased(url: str) -> LeasedUrl:
    """`url` as the frontier hands it out."""
    return LeasedUrl(url, host_of(url), 1, 0, time.time() + 300)


def outcome(page: Page, result: FetchResult) -> FetchOutcome:
    """The engine's decision on a fetched page: its state, validators and content signature."""
    return decide(result, page.leased, time.time(), CFG.politeness).outcome


def filler_database(path: Path, count: int, hosts: int = 1000) -> None:
    """A crawl database holding `count` URLs of other hosts, so that the B-trees have a crawl's depth."""

    def filler(i: int) -> NewUrl:
        host = f"filler-{i % hosts}.example"
        return NewUrl(f"http://{host}/news/{i}/story", host)

    with SqliteStore(path, host_of=host_of) as frontier:
        for start in range(0, count, 1000):
            frontier.add([filler(i) for i in range(start, min(count, start + 1000))])


def frontier_costs(base: Path, folder: Path, pages: Sequence[Page], results: dict[str, FetchResult],
                   batch: int) -> tuple[float, float, float, float, float]:
    """µs per page of add(), of complete() a page at a time and `batch` at a time; share known; new/page.

    Each runs on its own copy of `base`, every page in crawl order, so every URL is inserted once.
    """

    def frontier(name: str) -> SqliteStore:
        shutil.copyfile(base, folder / f"{name}.db")
        return SqliteStore(folder / f"{name}.db", host_of=host_of)

    def new_urls(page: Page) -> list[NewUrl]:
        return [NewUrl(url, host, 1, 0.0, page.url) for url, host in page.outlinks]

    def found(db: SqliteStore, batch: Sequence[Page]) -> None:
        # A page was found (and so stored) before it was fetched.
        db.add([NewUrl(p.url, p.leased.host, 1, 0.0) for p in batch])

    offered = sum(len(p.outlinks) for p in pages)
    inserted = 0

    def add(page: Page) -> None:
        nonlocal inserted
        inserted += add_db.add(new_urls(page))

    with frontier("add") as add_db:
        add_us = per_page(pages, add, lambda p: found(add_db, [p]))
    # The engine's known-outlink filter: complete() gets only the outlinks this process never sent.
    sent: set[str] = set()
    work = []
    for page in pages:
        fresh = [u for u in new_urls(page) if u.url not in sent]
        sent.update(u.url for u in fresh)
        work.append((page, outcome(page, results[page.url]), fresh))
    with frontier("complete") as db:
        complete_us = per_page(work, lambda w: db.complete([w[1]], time.time(), w[2]),
                               lambda w: found(db, [w[0]]))
    batches = [work[i:i + batch] for i in range(0, len(work), batch)]
    with frontier("batched") as db:
        batched_us = per_page(
            batches, lambda b: db.complete([w[1] for w in b], time.time(), [u for w in b for u in w[2]]),
            lambda b: found(db, [w[0] for w in b])) * len(batches) / len(work)
    new_per_page = sum(len(w[2]) for w in work) / len(work)
    return add_us, complete_us, batched_us, 1 - inserted / max(1, offered), new_per_page


async def fetch_all(urls: Sequence[str], concurrency: int) -> tuple[float, float, int]:
    """Fetch `urls` through one CurlTransport; CPU and wall seconds of the batch, bytes received."""
    settings = TransportSettings(user_agent=CFG.user_agent, guard=AddressGuard(["127.0.0.0/8"]))
    transport = CurlTransport(settings)
    gate = asyncio.Semaphore(concurrency)
    received = 0

    async def one(url: str) -> None:
        nonlocal received
        async with gate:
            response = await transport.fetch(HttpRequest(url, timeout=30.0, max_size=CFG.max_size))
        if response.status != 200:
            raise RuntimeError(f"{url}: HTTP {response.status}")
        received += len(response.body)

    try:
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(url) for url in urls))
        return time.process_time() - cpu, time.perf_counter() - wall, received
    finally:
        await transport.aclose()


def curl_alone(urls: Sequence[str], concurrency: int) -> float:
    """CPU seconds libcurl's multi interface takes to fetch `urls`, bodies into memory, no callbacks."""
    multi = pycurl.CurlMulti()
    idle = [pycurl.Curl() for _ in range(concurrency)]
    for curl in idle:
        curl.setopt(pycurl.HTTPHEADER, [f"Accept-Encoding: {ACCEPT_ENCODING}"])
    pending = list(reversed(urls))
    running = 0
    cpu = time.process_time()
    while pending or running:
        while pending and idle:
            curl = idle.pop()
            curl.setopt(pycurl.URL, pending.pop())
            curl.setopt(pycurl.WRITEDATA, io.BytesIO())  # BytesIO.write is C: no Python per chunk
            multi.add_handle(curl)
            running += 1
        multi.select(1.0)
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        _, done, failed = multi.info_read()
        if failed:
            raise RuntimeError(f"libcurl: {failed[0][2]}")
        for curl in done:
            multi.remove_handle(curl)
            idle.append(curl)
            running -= 1
    used = time.process_time() - cpu
    for curl in idle:
        curl.close()
    multi.close()
    return used


def wget2_cpu(seeds: Sequence[str], folder: Path) -> tuple[float, int]:
    """CPU seconds (user + system) of a polite recursive wget2 crawl from `seeds`, and pages saved."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(wget2_command(folder, *seeds), check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    pages = sum(1 for path in folder.rglob("*") if path.is_file() and path.name != "robots.txt")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), pages


def main() -> None:
    """Write the web, time every stage on its pages, print the table."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--pages", type=int, default=201, help="pages per host")
    parser.add_argument("--repeats", type=int, default=5)
    tune_for_crawling()  # as a crawling process is: garbage collection and heap as in a crawl
    parser.add_argument("--concurrency", type=int, default=32, help="fetches in flight at once")
    parser.add_argument("--batch", type=int, default=10, help="pages per complete() in the batched row")
    parser.add_argument("--known", type=int, default=100_000,
                        help="URLs of other hosts the crawl database holds before the pages' own")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    hosts = host_addresses(args.hosts, prefix="127.21")
    scope = Scope([f"http://{host}/" for host in hosts])

    def normalize_links(links: Sequence[str]) -> dict[str, str]:
        """The engine's treatment of a page's links: normalized, in scope, with hosts, each once."""
        return followed_links(links, scope, FOLLOWED, max_length=CFG.max_url_length)

    runs: dict[str, list[tuple[float, ...]]] = {}

    def note(stage: str, *figures: float) -> None:
        runs.setdefault(stage, []).append(figures)

    with tempfile.TemporaryDirectory(prefix="harvestman-page-costs-") as tmp:
        root = Path(tmp)
        port = free_port("0.0.0.0")
        spec = generate_web(root / "web", hosts, args.pages, port=port, seed=args.seed)
        # Crawl-like order: the hosts take turns.
        by_host = {h: sorted((u for u in spec.pages if urlsplit(u).hostname == h),
                             key=lambda u: (len(u), u)) for h in hosts}
        urls = [u for group in zip(*by_host.values(), strict=True) for u in group]
        responses = load_pages(root / "web", urls)
        results = {r.url: to_result(r) for r in responses}
        parsed = {url: parse(result) for url, result in results.items()}
        links = {url: [link.url for link in p.links if not link.nofollow] for url, p in parsed.items()}
        pages = [Page(r.url, tuple(normalize_links(links[r.url]).items()), leased(r.url))
                 for r in responses]
        warc_items = [(results[p.url], p.links) for p in pages]
        bodies = [r.body for r in responses]
        texts = [results[u].text or "" for u in urls]
        known_share = new_per_page = 0.0
        walls: list[float] = []
        alone: dict[str, list[float]] = {"libcurl fetch": [], "Lexbor tree, link elements": [],
                                         "ISA-L gzip of the body": [], "SHA-1 of the body, twice": []}
        wget2_us: list[float] = []
        filler_database(root / "filler.db", args.known)
        server = NginxServer(root / "web", hosts, port, by_address=True) if find_nginx() else None
        if server is not None:
            server.start()
        try:
            for n in range(args.repeats):
                if server is not None:
                    cpu, wall, received = asyncio.run(fetch_all(urls, args.concurrency))
                    assert received == sum(len(r.body) for r in responses)
                    note("fetch", *(3 * [1e6 * cpu / len(urls)]))
                    walls.append(wall)
                decode_us = per_page(responses, to_result)
                note("decode", *(3 * [decode_us]))
                result_list = [results[u] for u in urls]
                link_lists = [links[u] for u in urls]
                cold = (per_page(result_list, parse, clear_caches),
                        per_page(link_lists, normalize_links, clear_caches))
                clear_caches()
                in_order = (per_page(result_list, parse), per_page(link_lists, normalize_links))
                warm = (per_page(result_list, parse), per_page(link_lists, normalize_links))
                for i, stage in enumerate(CACHED):
                    note(stage, cold[i], in_order[i], warm[i])
                # Not in the sum: what --link-anchors would make the parse row.
                cold_anchors = per_page(result_list, parse_anchors, clear_caches)
                clear_caches()
                note(ANCHORS_ROW, cold_anchors, per_page(result_list, parse_anchors),
                     per_page(result_list, parse_anchors))
                decide_us = per_page(pages, lambda p: outcome(p, results[p.url]))
                note("decide", *(3 * [decide_us]))
                with tempfile.TemporaryDirectory(dir=root) as db_dir:
                    add_us, complete_us, batched_us, known_share, new_per_page = frontier_costs(
                        root / "filler.db", Path(db_dir), pages, results, args.batch)
                note("add", *(3 * [add_us]))
                note("complete", *(3 * [complete_us]))
                note(f"complete, {args.batch} a call", *(3 * [batched_us]))
                with tempfile.TemporaryDirectory(dir=root) as warc_dir, WarcWriter(Path(warc_dir)) as writer:
                    warc_us = per_page(warc_items, lambda w: writer.write(w[0], REQUEST_HEADERS, w[1]))
                note("warc", *(3 * [warc_us]))
                if server is not None:
                    alone["libcurl fetch"].append(1e6 * curl_alone(urls, args.concurrency) / len(urls))
                    if shutil.which("wget2"):
                        cpu, saved = wget2_cpu([f"http://{h}:{port}/" for h in hosts], root / f"wget2-{n}")
                        wget2_us.append(1e6 * cpu / max(1, saved))
                alone["Lexbor tree, link elements"].append(
                    per_page(texts, lambda t: LexborHTMLParser(t).css(_LINK_SELECTOR)))
                alone["ISA-L gzip of the body"].append(
                    per_page(bodies, lambda b: isal_zlib.compress(b, COMPRESS_LEVEL, _GZIP_WBITS)))
                alone["SHA-1 of the body, twice"].append(
                    per_page(bodies, lambda b: (hashlib.sha1(b).digest(), hashlib.sha1(b).digest())))
                print(f"run {n + 1}/{args.repeats} done", file=sys.stderr)
        finally:
            if server is not None:
                server.stop()
    sizes = [len(r.body) for r in responses]
    print(f"web: {args.hosts} hosts x {args.pages} pages, {statistics.mean(sizes) / 1000:.1f} KB a page "
          f"(median {statistics.median(sizes) / 1000:.1f}), "
          f"{statistics.mean(len(v) for v in links.values()):.1f} links a page, "
          f"{statistics.mean(len(p.outlinks) for p in pages):.1f} distinct after normalization")
    print(f"frontier: {args.known} other URLs, then the pages in crawl order: {100 * known_share:.0f}% of "
          f"outlinks already known at add(), {new_per_page:.1f} new URLs a page; {args.repeats} repeats; "
          f"cores: {os.cpu_count()}")
    if walls:
        print(f"fetch batch: {len(urls) / statistics.median(walls):.0f} pages/s (wall clock)")
    else:
        print("nginx not found: no fetch row")
    medians = {stage: [statistics.median(run[i] for run in rows) for i in range(3)]
               for stage, rows in runs.items()}
    extra = (f"complete, {args.batch} a call", ANCHORS_ROW)
    labels = {"fetch": f"fetch ({args.concurrency} at once)"}
    width = max(len(labels.get(s, s)) for s in medians) + 2
    print(f"\n{'µs CPU per page':<{width}}" + "".join(f"{c:>10}" for c in COLUMNS))
    for stage, figures in medians.items():
        mark = "  (not in the sum)" if stage in extra else ""
        print(f"{labels.get(stage, stage):<{width}}" + "".join(f"{f:10.1f}" for f in figures) + mark)
    sums = [sum(f[i] for s, f in medians.items() if s not in extra) for i in range(3)]
    print(f"{'sum':<{width}}" + "".join(f"{f:10.1f}" for f in sums))
    print("\nthe libraries alone      µs CPU per page")
    floor = {stage: statistics.median(figures) for stage, figures in alone.items() if figures}
    for stage, figure in floor.items():
        print(f"{stage:<27}{figure:10.1f}")
    print(f"{'sum (SQLite not counted)':<27}{sum(floor.values()):10.1f}")
    if wget2_us:
        print(f"{'wget2, whole crawl':<27}{statistics.median(wget2_us):10.1f}")


if __name__ == "__main__":
    main()

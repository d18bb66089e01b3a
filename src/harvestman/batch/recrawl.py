"""recrawl: fetch again what a crawl fetched (what is due, or everything), downloading only what
changed (seed 003: re-crawl only the modified pages), then say what changed and what it cost.

One segment of the due URLs (`all_urls`: every fetched URL too) is fetched by the crawl engine with
the strategy's checks (crawl/recrawl.py: conditional, size, sitemap, full), every politeness rule
kept; WARC records are written for changed pages only. updatedb merges it with change classes:

- new: never fetched before;
- unchanged: a 304, a HEAD or a sitemap that said so, or the same content signature again;
- minor / major: a new signature, and the SimHashes of the visible text before and after at most
  MINOR_BITS apart (minor) or further (major, also when the text before is not to be had). The text
  before is the stored SimHash, else the page's last response in the crawl's WARC files.

The schedule (fixed or adaptive, policy/schedule.py) then sets each URL's next fetch time; the
adaptive one shrinks a changed page's interval by a fifth (major) or a tenth (minor) and grows an
unchanged one's by two fifths.

`sitemap` first fetches the crawl's sitemaps again (conditionally, in a segment of their own), so
that the lastmods it compares are the sitemaps' current ones.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvestman.batch import segments
from harvestman.batch.crawldir import open_crawl_store
from harvestman.batch.fetch_segment import FetchedSegment, fetch_segment
from harvestman.batch.simhash import hamming
from harvestman.batch.updatedb import updatedb
from harvestman.batch.warcpages import simhashes_in
from harvestman.crawl.sitemaps import lastmod_text, parse_sitemap
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import FetchOutcome, LinkKind, UrlRecord, UrlState
from harvestman.model.settings import RECRAWL_STRATEGIES
from harvestman.store.crawldir import CrawlDir, revive, stored_seeds
from harvestman.store.frontier import Store
from harvestman.store.sqlite_store import SqliteStore
from harvestman.store.warc_read import responses_in, warc_files_in

STRATEGIES = RECRAWL_STRATEGIES[1:]
MINOR_BITS = 3  # SimHashes this close: a small change (dedup's near-duplicate distance, too)
REFETCHED = (UrlState.FETCHED, UrlState.NOT_MODIFIED)  # "every fetched URL" of --all
SegmentFetcher = Callable[[Path, CrawlConfig, Path], FetchedSegment]


@dataclass(slots=True)
class RecrawlReport:
    """What a re-crawl checked and found, and what it cost on the wire against a full re-download."""

    strategy: str
    segment: str = ""
    checked: int = 0  # URLs with an outcome (their fetch ended)
    unchanged: int = 0
    changed: int = 0  # minor + major
    minor: int = 0
    major: int = 0
    new: int = 0  # fetched for the first time
    gone: int = 0  # now gone (404, 410, a failure given up on)
    gone_by: dict[str, int] = field(default_factory=dict)  # of those, how many by error class
    not_fetched: int = 0  # left for another time (a host paused, the run stopped)
    wire_bytes: int = 0  # what this re-crawl transferred (its sitemaps' fetch included)
    saved_bytes: int = 0  # what the checks saved against full GETs of the same pages
    full_bytes: int = 0  # a full re-download of the same pages: wire_bytes + saved_bytes
    sitemap_bytes: int = 0  # of wire_bytes: the sitemaps fetched first (strategy sitemap)
    new_urls: int = 0  # links to URLs new to the crawl, found in the changed pages
    revived: int = 0  # failed URLs queued again: their cause mended by the settings, or --retry-failed
    checked_by: dict[str, int] = field(default_factory=dict)  # how each URL was checked
    stopped: bool = False  # the fetch was stopped: the segment is left to fetch and updatedb
    next_due: float = 0.0  # when nothing was due: when the first fetched URL is (0: none scheduled)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return dataclasses.asdict(self)


def _ready(record: UrlRecord) -> UrlRecord:
    """A row as the segment's engine leases it: due now (a --all row may be due only later)."""
    return dataclasses.replace(record, next_fetch_time=0.0)


def _write_segment(folder: Path, records: list[UrlRecord], known: list[UrlRecord], seeds: list[str],
                   now: float) -> Path:
    """A segment whose fetch list is `records` (as the crawl knew them), their rows due in its store;
    `known` rows are in its store unqueued (a sitemap's lastmods reach only known URLs)."""
    segment = segments.new_segment(folder, now)
    segments.write_fetchlist(segment, records)
    store = SqliteStore(segment / segments.STORE, host_of=lambda url: url)
    try:
        store.put_records([_ready(r) for r in records])
        store.put_records(known, queued=False)
        store.set_meta("seeds", "\n".join(seeds))
    finally:
        store.close()
    segments.mark(segment, "generated")
    return segment


def _select(store: Store, cfg: CrawlConfig, *, all_urls: bool, now: float,
            leave_out: set[str]) -> list[UrlRecord]:
    """The URLs to fetch again: those due (held for the segment), and with `all_urls` every fetched one."""
    due = store.generate(1 << 62, 0, "bfs", now, now + cfg.segment_expiry)
    chosen = {r.url: r for r in due if r.url not in leave_out}
    if all_urls:
        for record in store.records():
            if record.state in REFETCHED and record.url not in chosen and record.url not in leave_out:
                chosen[record.url] = record
    return list(chosen.values())


def _sitemaps(store: Store) -> list[UrlRecord]:
    """The crawl's sitemaps that list pages (their rows), fetched before."""
    urls = {edge.from_url for edge in store.links() if edge.kind == LinkKind.SITEMAP}
    return [r for url in sorted(urls) if (r := store.get(url)) is not None and r.fetch_time > 0]


def classifier(folder: Path, segment: Path, found: list[tuple[FetchOutcome, UrlRecord]]) -> Callable[
        [list[tuple[FetchOutcome, UrlRecord]]], list[tuple[FetchOutcome, UrlRecord]]]:
    """updatedb's classifier for a re-crawl's segment: each outcome's change class (and the new
    SimHash of a changed page, stored for the next re-crawl); what it classified is added to `found`."""

    def classify(pairs: list[tuple[FetchOutcome, UrlRecord]]) -> list[tuple[FetchOutcome, UrlRecord]]:
        changed = {o.url for o, g in pairs if _fetched_before(g) and o.state == UrlState.FETCHED
                   and o.signature != g.signature}
        files = CrawlDir(folder).warc_files()
        after = simhashes_in([f for f in files if segment in f.parents], changed)
        unknown = {o.url for o, g in pairs if o.url in changed and not g.simhash}
        before = simhashes_in([f for f in files if segment not in f.parents], unknown)
        out: list[tuple[FetchOutcome, UrlRecord]] = []
        for outcome, gen in pairs:
            change = outcome.change
            simhash = outcome.simhash
            if not _fetched_before(gen):
                change = "new" if outcome.http_status else ""
            elif outcome.state == UrlState.NOT_MODIFIED:
                change = "unchanged"
            elif outcome.url in changed:
                simhash = after.get(outcome.url, 0)
                old = gen.simhash or before.get(outcome.url, 0)
                near = bool(simhash and old) and hamming(simhash, old) <= MINOR_BITS
                change = "minor" if near else "major"
            classified = dataclasses.replace(outcome, change=change, simhash=simhash)
            out.append((classified, gen))
        found.extend(out)
        return out

    return classify


def _fetched_before(gen: UrlRecord) -> bool:
    return gen.fetch_time > 0 and gen.state != UrlState.UNFETCHED


def _default_fetch(folder: Path, cfg: CrawlConfig, segment: Path) -> FetchedSegment:
    return fetch_segment(folder, cfg, segment)


def _refresh_lastmods(folder: Path, cfg: CrawlConfig, segment: Path) -> None:
    """Give the crawl's pages the lastmods of the sitemaps just fetched (read from the segment's WARC
    files: the segment's engine, fetching no deeper than its list, keeps no lastmod)."""
    found: list[tuple[str, dict[str, str]]] = []
    for response in responses_in(warc_files_in(segment / "warc"), html_only=False):
        sitemap = parse_sitemap(response.body or b"", response.url, max_length=cfg.max_url_length)
        found.extend((e.url, {"lastmod": lastmod_text(e.lastmod)})
                     for e in sitemap.pages if e.lastmod is not None)
    if not found:
        return
    store = open_crawl_store(folder, cfg.db, cfg)
    try:
        store.set_metadata(found)
    finally:
        store.close()


def recrawl(folder: Path, cfg: CrawlConfig, *, strategy: str = "conditional", all_urls: bool = False,
            now: float | None = None, fetch: SegmentFetcher = _default_fetch,
            retry: Collection[str] = ()) -> RecrawlReport:
    """Fetch again the crawl's due URLs (`all_urls`: every fetched URL too) checked by `strategy`,
    merge them with change classes and the schedule; what was found and what it cost. Failed URLs
    whose cause `cfg` mends, or of the `retry` error classes, are fetched again too."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"--strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    folder = Path(folder)
    now = time.time() if now is None else now
    report = RecrawlReport(strategy)
    store = open_crawl_store(folder, cfg.db, cfg)
    try:
        seeds = stored_seeds(store)
        # Known to every segment, so that the engine does not fetch them again where robots.txt
        # names them: fetched when due (or --all), or first of all by `sitemap`.
        sitemaps = _sitemaps(store)
        seed_rows = [r for url in seeds if (r := store.get(url)) is not None]
    finally:
        store.close()
    leave_out = {r.url for r in sitemaps} if strategy == "sitemap" else set()
    if leave_out:
        first = [r for r in seed_rows if r.url not in leave_out]
        segment = _write_segment(folder, sitemaps, first, seeds, now)
        fetched = fetch(folder, cfg.replace(recrawl_strategy="conditional"), segment)
        if not fetched.done:
            report.stopped = True
            return report
        _refresh_lastmods(folder, cfg, segment)
        sitemap_rows: list[tuple[FetchOutcome, UrlRecord]] = []

        def keep(pairs: list[tuple[FetchOutcome, UrlRecord]]) -> list[tuple[FetchOutcome, UrlRecord]]:
            sitemap_rows.extend(pairs)
            return pairs

        updatedb(folder, cfg, segment, classify=keep)
        report.sitemap_bytes = sum(o.wire_bytes for o, _ in sitemap_rows)
    store = open_crawl_store(folder, cfg.db, cfg)
    try:
        report.revived = len(revive(store, cfg, retry).urls)
        chosen = _select(store, cfg, all_urls=all_urls, now=now, leave_out=leave_out)
        taken = {c.url for c in chosen}
        known = [r for url in seeds if url not in taken and (r := store.get(url))]
        known += [r for r in sitemaps if r.url not in taken and r.url not in seeds]
        if not chosen:
            report.next_due = min((r.next_fetch_time for r in store.records()
                                   if r.state in REFETCHED and r.next_fetch_time > 0), default=0.0)
    finally:
        store.close()
    report.wire_bytes = report.sitemap_bytes
    if not chosen:
        return report
    segment = _write_segment(folder, chosen, known, seeds, now + 1 if leave_out else now)
    report.segment = segment.name
    fetched = fetch(folder, cfg.replace(recrawl_strategy=strategy), segment)
    if not fetched.done:
        report.stopped = True
        return report
    found: list[tuple[FetchOutcome, UrlRecord]] = []
    merged = updatedb(folder, cfg, segment, classify=classifier(folder, segment, found))
    _count(report, found)
    report.not_fetched = merged.released
    report.new_urls = merged.new_urls
    return report


def _count(report: RecrawlReport, found: list[tuple[FetchOutcome, UrlRecord]]) -> None:
    changes = Counter(o.change for o, _ in found)
    report.checked = len(found)
    report.unchanged = changes["unchanged"]
    report.minor = changes["minor"]
    report.major = changes["major"]
    report.changed = report.minor + report.major
    report.new = changes["new"]
    report.gone = sum(1 for o, _ in found if o.state == UrlState.GONE)
    report.gone_by = dict(Counter(o.error_class or "gone" for o, _ in found if o.state == UrlState.GONE)
                          .most_common())
    report.wire_bytes += sum(o.wire_bytes for o, _ in found)
    report.saved_bytes = sum(o.saved_bytes for o, _ in found)
    report.full_bytes = report.wire_bytes - report.sitemap_bytes + report.saved_bytes
    report.checked_by = dict(sorted(Counter(o.checked_by or "full" for o, _ in found).items()))

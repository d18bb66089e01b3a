"""updatedb: merge a fetched segment into the crawl database: states, signatures, next fetch times
(as the engine's schedule set them), final URLs, the pages' links, and their outlinks as new URLs
(normalized, in scope, one hop deeper) scored by OPIC.

OPIC (Abiteboul, Preda, Cobena 2003, "Adaptive on-line page importance computation"): a fetched
page's cash, its score, is split equally among the distinct URLs it links to (followed links: in
scope, not nofollow), and each share added to their score, known URLs too; a new URL starts with
its shares. As in Nutch's OPICScoringFilter the page keeps its own score (the paper moves cash
into a history instead): scores grow with the rounds and only their order matters.

Merging a segment twice is refused (ConfigError): the crawl database lists the segments merged
into it (meta "merged_segments"), so the second merge of the shares cannot double them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harvestman.batch import segments
from harvestman.batch.crawldir import open_crawl_store
from harvestman.batch.fetch_segment import cycle_schedule
from harvestman.crawl.pagelinks import queueable
from harvestman.crawl.stats import REFUSED_CLASSES, PageCounts
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import (
    FetchOutcome,
    LeasedUrl,
    Link,
    LinkEdge,
    NewUrl,
    PageLinks,
    UrlRecord,
    UrlState,
)
from harvestman.net.hostkeys import HostKeys
from harvestman.policy.ordering import RANKS, opic_shares
from harvestman.policy.schedule import FetchSchedule
from harvestman.policy.scope import Scope
from harvestman.store.crawldir import stored_seeds
from harvestman.store.sqlite_store import SqliteStore

MERGED_KEY = "merged_segments"
# Sets what updatedb cannot see by itself on a segment's fetched outcomes (each with its fetch
# list row: what the crawl knew before), before they are scheduled: harvestman recrawl's change
# classes (batch/recrawl.py).
Classifier = Callable[[list[tuple[FetchOutcome, UrlRecord]]], list[tuple[FetchOutcome, UrlRecord]]]
NOT_REVISITED = REFUSED_CLASSES  # refused before a fetch (crawl/ledger.py RunLedger.refused)


@dataclass(frozen=True, slots=True)
class Merged:
    """What an updatedb did."""

    segment: Path
    fetched: int  # URLs the segment fetched (any final state)
    released: int  # URLs it did not get to, due again
    new_urls: int  # outlinks new to the crawl
    pages_with_links: int
    found: int = 0  # URLs the fetch found on its own and fetched (sitemaps robots.txt names)
    # Of the URLs merged, as PageCounts counts them (as `fetch` counted them when it fetched the
    # segment in one run): pages, failures, and those refused before a fetch (robots.txt).
    pages: int = 0
    failed: int = 0
    refused: int = 0


def outcome_of(rec: UrlRecord, generated: UrlRecord) -> FetchOutcome:
    """The fetch outcome a segment's row reports for its URL."""
    return FetchOutcome(
        rec.url, rec.state, rec.fetch_time, rec.next_fetch_time, rec.http_status, rec.error_class,
        rec.error_message, rec.signature, rec.etag, rec.last_modified, rec.content_type, rec.body_size,
        rec.wire_bytes, retried=rec.retries > generated.retries,
        final_url="" if rec.final_url in ("", rec.url) else rec.final_url, title=rec.title,
        fetch_interval=rec.fetch_interval, simhash=rec.simhash, body_wire_bytes=rec.body_wire_bytes,
        saved_bytes=rec.saved_bytes, partial=rec.partial, change=rec.change, checked_by=rec.checked_by)


def scheduled_outcome(outcome: FetchOutcome, generated: UrlRecord, schedule: FetchSchedule) -> FetchOutcome:
    """`outcome` with its next fetch time and interval from `schedule`, when its fetch ended (a retry
    keeps its time; a URL refused by robots.txt or a host's budget is not re-visited, as in the
    continuous crawl). The schedule sees what the crawl knew before: signature, validators, interval."""
    if outcome.state == UrlState.UNFETCHED or outcome.error_class in NOT_REVISITED:
        return outcome
    g = generated
    before = LeasedUrl(g.url, g.host, g.depth, g.retries, 0.0, g.etag, g.last_modified, g.signature,
                       g.fetch_interval, g.score)
    due = schedule(outcome, before)
    if not due > 0:
        return outcome
    interval = max(due - outcome.fetch_time, 0.0)
    return dataclasses.replace(outcome, next_fetch_time=due, fetch_interval=interval)


def _untouched(rec: UrlRecord | None, generated: UrlRecord) -> bool:
    return rec is None or (rec.fetch_time == generated.fetch_time and rec.state == generated.state
                           and rec.http_status == generated.http_status)


def _merged(raw: str | None) -> list[str]:
    return list(json.loads(raw)) if raw else []


def _pages(edges: Iterable[LinkEdge]) -> dict[str, list[Link]]:
    pages: dict[str, list[Link]] = defaultdict(list)
    for edge in edges:
        pages[edge.from_url].append(Link(edge.to_url, edge.kind, edge.anchor, edge.nofollow))
    return pages


def updatedb(folder: Path, cfg: CrawlConfig, segment: str | Path | None = None, *,
             now: float | None = None, schedule: FetchSchedule | None = None,
             classify: Classifier | None = None) -> Merged:
    """Merge a fetched segment of the crawl in `folder` (the latest by default) into its database;
    `schedule` sets when fetched URLs are due again (default: the settings', see `cycle_schedule`)."""
    path = segments.find_segment(folder, str(segment) if segment else None)
    segments.require(path, "fetched", "updatedb")
    now = time.time() if now is None else now
    generated = {r.url: r for r in segments.read_fetchlist(path)}
    listed = len(generated)
    since = segments.marked_at(path, "generated")
    seg = SqliteStore.open_read_only(path / segments.STORE)
    try:
        rows: dict[str, UrlRecord | None] = dict.fromkeys(generated)
        # The fetch list's rows, and what the fetch found on its own and fetched (the sitemaps that
        # robots.txt names): merged as fetched URLs of the crawl, their links too.
        for row in seg.records():
            if row.url in generated or (row.fetch_time >= since and row.state != UrlState.UNFETCHED):
                rows[row.url] = row
                generated.setdefault(row.url, row)
        pages = _pages(seg.links())
    finally:
        seg.close()
    keys = HostKeys(cfg.host_key, cfg.resolve)
    store = open_crawl_store(folder, cfg.db, cfg, keys=keys)
    try:
        merged = _merged(store.get_meta(MERGED_KEY))
        if path.name in merged:
            raise ConfigError(f"segment {path.name} was merged into the crawl database already")
        outcomes: list[FetchOutcome] = []
        released = 0
        when = cycle_schedule(cfg, schedule)
        fetched: list[tuple[FetchOutcome, UrlRecord]] = []
        counted = PageCounts()
        refused = 0
        for url, gen in generated.items():
            rec = rows[url]
            if rec is None or (rec is not gen and _untouched(rec, gen)):
                # Never fetched (the run ended with its host paused, say): due again, as it was.
                released += 1
                outcomes.append(outcome_of(gen, gen))
            else:
                fetched.append((outcome_of(rec, gen), gen))
                # Row by row, as the segment's store holds them (a redirect's page is a row of its own).
                counted += PageCounts.of_row(rec.state, rec.error_class)
                refused += rec.error_class in REFUSED_CLASSES
        if classify is not None:
            fetched = classify(fetched)
        outcomes.extend(scheduled_outcome(outcome, gen, when) for outcome, gen in fetched)
        scope = Scope(stored_seeds(store), cfg.scope, cfg.include, cfg.exclude)
        settings = cfg.links
        answers: dict[str, tuple[str, str] | None] = {}
        shares: dict[str, float] = defaultdict(float)
        found: dict[str, tuple[str, str, int]] = {}  # new URL -> (host, parent, depth)
        links: list[PageLinks] = []
        for url, page_links in pages.items():
            gen_row = generated.get(url)
            rec = rows.get(url)
            if gen_row is None or rec is None or rec.state != UrlState.FETCHED:
                continue
            links.append(PageLinks(url, tuple(page_links)))
            # Queued as the crawl queues a page's links (crawl/pagelinks.py), its cash split by OPIC
            # as the crawl splits it, over every target here (known URLs take their shares too).
            targets = queueable(page_links, gen_row.depth, settings, scope, answers)
            targets.pop(url, None)  # a page's link to itself carries no cash
            depth = gen_row.depth + 1
            for target, share in opic_shares(gen_row.score, list(targets), targets).items():
                shares[target] += share
                if target not in found or found[target][2] > depth:
                    found[target] = (targets[target], url, depth)
        asyncio.run(keys.prepare(found))
        rank = RANKS.get(cfg.ordering, RANKS["bfs"])
        new_urls = [NewUrl(u, keys.key(u, host), depth, shares[u], parent, rank(depth, shares[u]))
                    for u, (host, parent, depth) in found.items()]
        # Known URLs take their shares by addition; the new ones are inserted with them below.
        store.add_scores((u, s) for u, s in shares.items() if s)
        before = store.counts()
        store.complete(outcomes, now, new_urls, links=links)
        after = store.counts()
        store.set_meta(MERGED_KEY, json.dumps([*merged, path.name]))
    finally:
        store.close()
    segments.mark(path, "merged")
    added = sum(after.values()) - sum(before.values())
    return Merged(path, len(generated) - released, released, added, len(links), len(generated) - listed,
                  pages=counted.pages, failed=counted.failed, refused=refused)

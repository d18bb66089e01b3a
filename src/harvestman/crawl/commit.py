"""What a crawling process has decided and not yet committed: URL outcomes with their new URLs, the
pages' link edges, the sitemaps robots.txt named, and the links it has sent to the frontier; one
transaction commits them all (a transaction a page costs more than the work in it)."""

from __future__ import annotations

import time

from harvestman.crawl.ledger import RunLedger
from harvestman.crawl.page_step import PagePlan
from harvestman.crawl.sitemap_queue import SitemapQueue
from harvestman.crawl.steps import Refusal
from harvestman.model.events import Event, EventKind
from harvestman.model.records import FetchOutcome, LeasedUrl, NewUrl, PageLinks, UrlState
from harvestman.store.frontier import Store
from harvestman.store.journal import RunJournal

KNOWN_URLS = 1 << 17  # URLs this process has sent to the frontier, remembered to skip resending


class PendingCommit:
    """A process's decided outcomes, new URLs and link edges until the next commit."""

    def __init__(self) -> None:
        self.outcomes: list[tuple[FetchOutcome, list[NewUrl]]] = []
        self.links: list[PageLinks] = []  # the link graph of those fetched pages
        # Outlinks already sent to the frontier (committed, or pending here). Most outlinks are
        # known; skipping them saves their insert attempt. The database stays the seen check:
        # forgetting (the set is cleared when full) costs only time.
        self.known: set[str] = set()
        self.sitemaps = SitemapQueue(KNOWN_URLS)  # crawl/sitemaps.py

    def add(self, outcome: FetchOutcome) -> None:
        """An outcome with no new URLs (a refusal, a failure, a URL handed back)."""
        self.outcomes.append((outcome, []))

    def add_plan(self, plan: PagePlan) -> None:
        """A fetched page's outcome, its new URLs (known from now on) and its link edges."""
        known, fresh = self.known, plan.fresh
        if len(known) + len(fresh) > KNOWN_URLS:
            known.clear()
        known.update(fresh)
        self.outcomes.append((plan.decision.outcome, plan.new_urls))
        if plan.links is not None:
            self.links.append(plan.links)

    def flush(self, frontier: Store, journal: RunJournal, now: float, *, lease: int = 0) -> list[LeasedUrl]:
        """Commit what waits and lease up to `lease` URLs, in one transaction; then the log lines."""
        if not self.outcomes and not self.sitemaps.waiting:
            return frontier.lease(lease, now) if lease > 0 else []
        batch, self.outcomes = self.outcomes, []
        links, self.links = self.links, []
        outcomes = [outcome for outcome, _ in batch]
        new_urls = [url for _, urls in batch for url in urls]
        new_urls.extend(self.sitemaps.take_urls())
        leased = frontier.complete(outcomes, now, new_urls, links=links, lease=max(lease, 0))
        if lastmods := self.sitemaps.take_lastmods():
            frontier.set_metadata(lastmods)
        journal.flush()
        return leased


def refusal_outcome(ledger: RunLedger, leased: LeasedUrl, refusal: Refusal,
                    journal: RunJournal) -> FetchOutcome:
    """The outcome of a URL a gate stopped before its fetch (see `Refusal`), counted and reported."""
    if refusal.kind == "later":  # the URL goes back untouched; its host rests
        ledger.retry_later(leased.url)
        return FetchOutcome(leased.url, UrlState.UNFETCHED, time.time(), next_fetch_time=refusal.until)
    # Disallowed (skipped), or its robots.txt unreachable (failed).
    failed = refusal.kind == "failed"
    return ledger.refused(leased, refusal.error_class, refusal.reason, journal, failed=failed)


def internal_error_outcome(ledger: RunLedger, leased: LeasedUrl, exc: Exception,
                           journal: RunJournal) -> FetchOutcome:
    """A bug met on one page, recorded on its URL (gone, error class "internal"): the crawl goes on."""
    message = f"{type(exc).__name__}: {exc}"
    ledger.stats.failed += 1
    journal.download(leased.url, False, f"internal error: {message}")
    ledger.emit(Event(EventKind.GAVE_UP, time.time(), url=leased.url, host=leased.host,
                      error_class="internal", message=message))
    return FetchOutcome(leased.url, UrlState.GONE, time.time(), error_class="internal",
                        error_message=message[:500])

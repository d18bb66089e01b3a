"""How `harvestman recrawl` checks a page it fetched before, by strategy, before (or instead of) a GET.

- conditional: a GET with If-None-Match / If-Modified-Since from the stored validators (a 304 is
  not_modified, no body). Where the last fetch had neither validator, a plain GET (`checked_by`
  "full"; the same body again is still not_modified, by its signature): the size check would
  save more bytes there, and miss the changes that keep the size.
- size: the seed's comparator (003): a HEAD first, asking for no compression so that its
  Content-Length is the decoded size the crawl stored; when it (and the validators the server
  gives, if the crawl had them) equals the stored one, no GET. Blind spot: a change that keeps the
  size (a typo fixed, a date rewritten) is taken for no change.
- sitemap: no request at all where the sitemap's lastmod (the URL's metadata) is not after the last
  fetch; the others as `conditional`.
- full: a GET without validators; a body equal to the stored one (its signature) is not_modified.

Only the segment's engine runs these (the `recrawl_strategy` setting); the default crawl never
builds a RecrawlCheck. The check (crawl/steps.py RecrawlGate) leaves its `Checked` in the page's
context for `RecrawlRule`, the page step's rule that records it; a page found unchanged with no GET
is answered by the gate, and recorded as a fetched page is. Change classes (minor / major) are
updatedb's (batch/recrawl.py): it has the texts before and after.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from harvestman.crawl.page_step import Draft, Fetched
from harvestman.fetch.fetcher import Fetcher
from harvestman.model.records import FetchOutcome, FetchResult, Headers, LeasedUrl, UrlRecord, UrlState
from harvestman.policy.outcome import Decision

NO_COMPRESSION = ("Accept-Encoding", "identity")  # a HEAD's Content-Length then is the decoded size


@dataclass(frozen=True, slots=True)
class Checked:
    """What a strategy decided before the GET: the GET's headers, or no GET (`unchanged` set); the
    slot of a re-checked page's context, with the URL's stored record."""

    checked_by: str
    headers: Headers = ()
    head: FetchResult | None = None  # the HEAD's result, when one was sent
    unchanged: FetchOutcome | None = None  # set when no GET is needed: the outcome to record
    prior: UrlRecord | None = None  # the crawl's record of the URL's last fetch


def lastmod_time(value: str) -> float | None:
    """A sitemap lastmod (W3C datetime: a date, or a date and time with a zone) as epoch seconds."""
    text = value.strip()
    if not text:
        return None
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def sitemap_lastmod(prior: UrlRecord) -> float | None:
    """The lastmod a sitemap gave the URL (its metadata), or None."""
    if not prior.metadata:
        return None
    try:
        meta = json.loads(prior.metadata)
    except ValueError:
        return None
    value = meta.get("lastmod") if isinstance(meta, dict) else None
    return lastmod_time(value) if isinstance(value, str) else None


class RecrawlCheck:
    """One strategy's checks for the pages of a re-crawl (see the module's docstring)."""

    def __init__(self, strategy: str, extra_headers: Headers, *, timeout: float, max_size: int) -> None:
        self.strategy = strategy
        self.extra_headers = extra_headers
        self.timeout = timeout
        self.max_size = max_size

    async def check(self, leased: LeasedUrl, prior: UrlRecord | None, fetcher: Fetcher) -> Checked:
        """What to do for `leased`, given the crawl's record of its last fetch (`prior`, kept in the
        answer for `recorded`)."""
        return dataclasses.replace(await self._check(leased, prior, fetcher), prior=prior)

    async def _check(self, leased: LeasedUrl, prior: UrlRecord | None, fetcher: Fetcher) -> Checked:
        extra = self.extra_headers
        if prior is None or prior.fetch_time <= 0 or prior.state == UrlState.UNFETCHED:
            return Checked("full", extra)  # never fetched: nothing to compare with
        strategy = self.strategy
        if strategy == "full":
            return Checked("full", extra)
        if strategy == "sitemap":
            lastmod = sitemap_lastmod(prior)
            if lastmod is not None and lastmod <= prior.fetch_time:
                return Checked("sitemap", unchanged=self._unchanged(leased, prior, "sitemap", None))
            strategy = "conditional"
        if strategy == "conditional":
            validators = _validators(leased)
            # No validator: a full GET, not the size check, which would miss a change that keeps
            # the size (tests/test_recrawl.py measures it): conditional finds every change.
            return Checked("conditional", extra + validators) if validators else Checked("full", extra)
        return await self._size_check(leased, prior, fetcher)

    async def _size_check(self, leased: LeasedUrl, prior: UrlRecord, fetcher: Fetcher) -> Checked:
        """A HEAD without compression: no GET when its Content-Length and validators match."""
        head = await fetcher.fetch(leased.url, headers=(*self.extra_headers, NO_COMPRESSION),
                                   timeout=self.timeout, max_size=self.max_size, method="HEAD",
                                   attempt=leased.retries + 1)
        length = head.header("content-length")
        if not head.ok or length is None or not length.strip().isdigit() or head.redirects:
            return Checked("full", self.extra_headers, head)  # the size could not be had: a full GET
        same = int(length) == prior.body_size
        etag = head.header("etag") or ""
        modified = head.header("last-modified") or ""
        if prior.etag and etag and _strong(etag) != _strong(prior.etag):
            same = False
        if prior.last_modified and modified and modified != prior.last_modified:
            same = False
        if same:
            return Checked("size", head=head, unchanged=self._unchanged(leased, prior, "size", head))
        return Checked("size", self.extra_headers, head)

    @staticmethod
    def _unchanged(leased: LeasedUrl, prior: UrlRecord, by: str, head: FetchResult | None) -> FetchOutcome:
        """The record of a page found unchanged without a GET: not_modified, what it was otherwise.
        What it saved is the store's to count (it holds the page's full size: see `recorded`)."""
        return FetchOutcome(
            leased.url, UrlState.NOT_MODIFIED, time.time(),
            http_status=head.status if head is not None else prior.http_status,
            etag=prior.etag, last_modified=prior.last_modified, content_type=prior.content_type,
            body_size=prior.body_size, wire_bytes=head.wire_bytes if head is not None else 0,
            change="unchanged", checked_by=by)

    @staticmethod
    def recorded(decision: Decision, checked: Checked) -> Decision:
        """`decision` after a GET, with how it was checked (and the HEAD's bytes)."""
        outcome = decision.outcome
        head = checked.head.wire_bytes if checked.head is not None else 0
        changes: dict[str, object] = {"checked_by": checked.checked_by}
        if head:
            changes["wire_bytes"] = outcome.wire_bytes + head
        if outcome.state == UrlState.NOT_MODIFIED and checked.prior is not None:
            # A 304 (or the same body again) is the page as stored. Its size and what it saved
            # against a full GET are the store's to keep: only its row knows the page's last full
            # response (wire + saved bytes), also after 304s the engine got without a check.
            changes["change"] = "unchanged"
        return dataclasses.replace(decision, outcome=dataclasses.replace(outcome, **changes))  # type: ignore[arg-type]


class RecrawlRule:
    """The page step's rule for a re-checked page (its context's `Checked`): how it was checked
    recorded, and a page found unchanged not stored again."""

    def __call__(self, page: Fetched, draft: Draft) -> Draft:
        checked = draft.context.get(Checked)
        if checked is None:
            return draft
        decision = RecrawlCheck.recorded(draft.decision, checked)
        return dataclasses.replace(draft, decision=decision, wire_bytes=decision.outcome.wire_bytes,
                                   store=draft.store and decision.outcome.state != UrlState.NOT_MODIFIED)


def _validators(leased: LeasedUrl) -> Headers:
    found: list[tuple[str, str]] = []
    if leased.etag:
        found.append(("If-None-Match", leased.etag))
    if leased.last_modified:
        found.append(("If-Modified-Since", leased.last_modified))
    return tuple(found)


def _strong(etag: str) -> str:
    """An ETag compared weakly (RFC 9110 §8.8.3.2): nginx weakens a compressed response's ETag."""
    return etag[2:] if etag.startswith("W/") else etag

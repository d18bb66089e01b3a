"""Pure decision of what a fetch result means for the URL's state, its retries and its host."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from harvestman.fetch.content import sha1_base32
from harvestman.fetch.fetcher import location_target
from harvestman.model.config import PolitenessSettings
from harvestman.model.errors import RedirectRefusedError
from harvestman.model.records import FetchOutcome, FetchResult, LeasedUrl, UrlState
from harvestman.policy.politeness import RetryVerdict, is_host_failure, retry_verdict

PERMANENT_REDIRECTS = frozenset({301, 308})


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome to record, plus whether and until when the URL's host should rest."""

    outcome: FetchOutcome
    pause_host_until: float = 0.0
    host_failed: bool = False  # a host-level failure: counts towards the host's circuit breaker
    final: bool = True  # False: the URL goes back to the queue for another attempt
    reason: str = ""  # why it failed, for the download log


def content_signature(body: bytes) -> str:
    """A digest of the body, to notice unchanged and duplicate content (Nutch's signature).

    The WARC payload digest: the engine hands it to the WARC writer, so a body is hashed once.
    """
    return sha1_base32(body)


def redirect_target(result: FetchResult) -> str:
    """Where a redirect that was not followed points, resolved as the fetcher resolves it, or ''."""
    location = result.header("location")
    if location:
        with contextlib.suppress(RedirectRefusedError):  # no valid http(s) target: it points nowhere
            return location_target(location, result.final_url)
    return ""


def decide(result: FetchResult, leased: LeasedUrl, now: float, politeness: PolitenessSettings, *,
           title: str = "", parse_error: str = "") -> Decision:
    """Map one fetch result to the URL's next state, following Nutch's status rules.

    `politeness`: the crawl's retry rules (retries, retry_after_cap); `title`: the page's <title>,
    when the crawl parsed it; `parse_error`: why the document could not be parsed (a broken feed
    or PDF), recorded on a fetched URL as error class "parse".
    """
    status = result.status
    # Keyword arguments, not a FetchOutcome to replace(): each outcome is built once (a replace()
    # of this many-field record costs more than building it).
    base: dict[str, Any] = {
        "url": leased.url,
        "state": UrlState.GONE,
        "fetch_time": now,
        "http_status": status,
        "etag": result.header("etag") or "",
        "last_modified": result.header("last-modified") or "",
        "content_type": result.content_type,
        "body_size": result.body_size,
        "wire_bytes": result.wire_bytes,
        "body_wire_bytes": result.body_wire_bytes,
        "final_url": result.final_url if result.final_url != leased.url else "",
        "title": title,
    }

    def outcome(**changes: Any) -> FetchOutcome:
        return FetchOutcome(**(base | changes))

    def retry_or_give_up(error_class: str, message: str, verdict: RetryVerdict) -> Decision:
        # The retry waits on its own URL (next_fetch_time): the host rests only when it asked to
        # (`host_wait`: 429/503), or when its circuit breaker trips (the engine's call).
        failed = {"error_class": error_class, "error_message": message, "retried": True}
        pause_until = 0.0 if verdict.host_wait is None else now + verdict.host_wait
        host_failed = is_host_failure(result.error_class, status)
        if verdict.retry:
            again = outcome(**failed, state=UrlState.UNFETCHED, next_fetch_time=now + verdict.wait)
            return Decision(again, pause_until, host_failed=host_failed, final=False, reason=message)
        reason = f"{message} (after {leased.retries + 1} attempts)"
        return Decision(outcome(**failed), pause_until, host_failed=host_failed, reason=reason)

    if result.error_class == RedirectRefusedError.error_class and 300 <= status < 400:
        # The URL is a redirect whose target we may not follow (scope, robots.txt, scheme).
        state = UrlState.REDIRECT_PERM if status in PERMANENT_REDIRECTS else UrlState.REDIRECT_TEMP
        refused = outcome(state=state, error_class=result.error_class, error_message=result.error_message,
                          final_url=redirect_target(result))
        return Decision(refused, reason=result.error_message)
    # The retry rule download() follows too (politeness.retry_verdict), with the crawl's back-off.
    verdict = retry_verdict(result, leased.retries + 1, retries=politeness.retries, now=now,
                            retry_after_cap=politeness.retry_after_cap)
    if result.error:
        message = result.error_message or result.error_class
        if verdict.transient:
            return retry_or_give_up(result.error_class, message, verdict)
        failure = outcome(error_class=result.error_class, error_message=message)
        return Decision(failure, reason=f"{result.error_class}: {message}")
    if verdict.transient:  # 429 and 5xx
        return retry_or_give_up(f"http_{status}", f"HTTP {status}", verdict)

    signature = content_signature(result.body) if result.body else ""
    if 200 <= status < 300:
        state = UrlState.FETCHED
        if result.redirects:
            first = result.redirects[0].status
            state = UrlState.REDIRECT_PERM if first in PERMANENT_REDIRECTS else UrlState.REDIRECT_TEMP
        if result.truncated:  # usable, but never to be taken for the whole page
            cut = f"body cut at the size cap ({result.body_size} bytes kept)"
            return Decision(outcome(state=state, signature=signature, error_class="truncated",
                                    error_message=cut))
        if state == UrlState.FETCHED and signature and signature == leased.signature:
            state = UrlState.NOT_MODIFIED  # fetched again, and the same content (Nutch's rule)
        if parse_error:  # fetched all the same: the body is stored, its links may be missing
            return Decision(outcome(state=state, signature=signature, error_class="parse",
                                    error_message=parse_error[:500]))
        return Decision(outcome(state=state, signature=signature))
    if status == 304:
        return Decision(outcome(state=UrlState.NOT_MODIFIED))
    if 300 <= status < 400:
        # A redirect not followed here: its target is already known to the crawl (and fetched in
        # its own turn), or it has no Location. The URL is a redirect, which is no failure.
        # Its final URL is where it points, so that the record says where the redirect leads.
        state = UrlState.REDIRECT_PERM if status in PERMANENT_REDIRECTS else UrlState.REDIRECT_TEMP
        return Decision(outcome(state=state, final_url=redirect_target(result)))
    gone = outcome(signature=signature, error_class=f"http_{status}", error_message=f"HTTP {status}")
    return Decision(gone, reason=f"HTTP {status}")

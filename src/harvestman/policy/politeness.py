"""Pure politeness rules: Retry-After, back-off after errors, the retry rule, the per-host circuit breaker."""

from __future__ import annotations

import email.utils
import math
from dataclasses import dataclass

from harvestman.model.errors import is_transient
from harvestman.model.records import FetchResult

DEFAULT_RETRY_AFTER = 60.0
BREAKER_THRESHOLD = 5  # distinct URLs failing in a row at host level before a host is paused

# The failures that say something about the HOST, not the URL: it could not be found or reached, it
# did not answer in time, or it answered that it is failing (5xx) or overloaded (429). The circuit
# breaker counts these, to stop hammering a host that is down or overloaded.
# Not counted, being about one URL of a host that answers: framing (a body cut short, conflicting
# lengths, a bad chunk: "protocol" and "framing", curl's partial file among them), over-long
# headers, undecodable bodies, redirects, 4xx. TLS failures are permanent (no retry) and the same
# for every URL of the host, so a streak would only repeat what the first one said. Unclassified
# transport errors ("fetch_error") are no evidence that the host is down either. A timeout, and a
# reset ("connect"), are counted even when the head had arrived (a slow or cut body can be the URL's
# fault): a failed fetch's record does not say whether it had, and counting each URL once (see
# FailureStreaks) keeps a few such pages under the threshold.
HOST_LEVEL_ERRORS = frozenset({"dns", "connect", "timeout"})


def parse_retry_after(
    value: str | None, now: float, *, cap: float, default: float = DEFAULT_RETRY_AFTER
) -> float:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP date), bounded by `cap`.

    A missing, negative or unparsable value gets `default`, so a garbage header cannot make the
    crawler hammer a host that asked it to slow down, nor park the host forever.
    """
    if value is None:
        return min(default, cap)
    text = value.strip()
    if text.isascii() and text.isdigit():  # not "²", which isdigit() accepts
        return min(float(text), cap)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return min(default, cap)
    if when is None:
        return min(default, cap)
    try:
        delta = when.timestamp() - now
    except (OverflowError, OSError, ValueError):
        return min(default, cap)
    if math.isnan(delta):
        return min(default, cap)
    return min(max(delta, 0.0), cap)


def retry_backoff(retries: int, *, base: float = 2.0, cap: float = 600.0) -> float:
    """Delay before the next attempt of one URL after `retries` failed ones (exponential)."""
    return min(cap, base * 2.0 ** max(0, min(retries, 30)))


@dataclass(frozen=True, slots=True)
class RetryVerdict:
    """Whether a fetch result is worth another attempt, and when: one rule for the crawl and download()."""

    transient: bool  # a retry may help (a transient error, a 429 or a 5xx), whether or not one is left
    retry: bool  # transient, and an attempt is left: try again after `wait`
    wait: float = 0.0  # seconds before the next attempt: the back-off, or longer if the server asked
    host_wait: float | None = None  # 429/503: how long the server asked to be left alone (Retry-After)


FINAL = RetryVerdict(False, False)


def retry_verdict(result: FetchResult, attempt: int, *, retries: int, now: float, retry_after_cap: float,
                  backoff_base: float = 2.0, backoff_cap: float = 600.0) -> RetryVerdict:
    """Whether `result`, of the `attempt`-th try (from 1) of at most `retries` + 1, is retried, and when.

    Transient errors (timeouts, resets, DNS), 429 and every 5xx are retried after an exponential
    back-off; 429 and 503 wait at least what Retry-After asks (capped by `retry_after_cap`; a
    missing or garbled one counts as DEFAULT_RETRY_AFTER). Everything else is final.
    """
    status = result.status
    host_wait: float | None = None
    if result.error_class:
        # An error ends the fetch whatever the status (a refused redirect has a 3xx): the class decides.
        if not is_transient(result.error_class):
            return FINAL
    elif status in (429, 503):
        host_wait = parse_retry_after(result.header("retry-after"), now, cap=retry_after_cap)
    elif status < 500:
        return FINAL
    if attempt > retries:
        return RetryVerdict(True, False, host_wait=host_wait)
    wait = retry_backoff(attempt - 1, base=backoff_base, cap=backoff_cap)
    return RetryVerdict(True, True, wait if host_wait is None else max(wait, host_wait), host_wait)


def breaker_pause(consecutive_failures: int, *, threshold: int = BREAKER_THRESHOLD,
                  base: float = 30.0, cap: float = 3600.0) -> float:
    """How long to pause a host after `consecutive_failures` failed fetches in a row (0: don't)."""
    if consecutive_failures < threshold:
        return 0.0
    return min(cap, base * 2.0 ** min(consecutive_failures - threshold, 20))


def is_host_failure(error_class: str, status: int = 0) -> bool:
    """Whether a failed fetch counts towards its host's circuit breaker (see HOST_LEVEL_ERRORS)."""
    if error_class:
        return error_class in HOST_LEVEL_ERRORS
    return status >= 500 or status == 429


class FailureStreaks(dict[str, set[str]]):
    """Per failing host, the distinct URLs that failed at host level since its last success.

    The breaker counts URLs, not attempts: the retries of three bad pages are three failures, not
    twelve, so a few bad URLs of a good host never pause it. A dict (of hosts with a streak only),
    so the engine's per-page check `host in streaks` is a plain dict lookup.
    """

    def failed(self, host: str, url: str) -> bool:
        """Record a host-level failure of `url`; True when it lengthens the streak (a new URL)."""
        urls = self.get(host)
        if urls is None:
            self[host] = {url}
            return True
        if url in urls:
            return False
        urls.add(url)
        return True

    def succeeded(self, host: str) -> bool:
        """End the streak of `host` (it answered); True when there was one."""
        return self.pop(host, None) is not None

"""Pure politeness rules: Retry-After, back-off after errors, the per-host circuit breaker."""

from __future__ import annotations

import email.utils
import math

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

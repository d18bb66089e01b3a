"""Pure politeness rules: Retry-After, back-off after errors, the per-host circuit breaker."""

from __future__ import annotations

import email.utils
import math

DEFAULT_RETRY_AFTER = 60.0
BREAKER_THRESHOLD = 5  # consecutive failures before a host is paused


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

"""Retry-After parsing, back-off and the circuit breaker."""

from __future__ import annotations

import email.utils

from hypothesis import given
from hypothesis import strategies as st

from harvestman.policy.politeness import (
    BREAKER_THRESHOLD,
    FailureStreaks,
    breaker_pause,
    is_host_failure,
    parse_retry_after,
    retry_backoff,
)

NOW = 1_800_000_000.0


def test_retry_after_seconds_date_garbage_and_huge() -> None:
    assert parse_retry_after("120", NOW, cap=3600) == 120
    date = email.utils.formatdate(NOW + 300, usegmt=True)
    assert abs(parse_retry_after(date, NOW, cap=3600) - 300) < 1.5
    assert parse_retry_after("soon please", NOW, cap=3600, default=60) == 60
    assert parse_retry_after("1000000000", NOW, cap=3600) == 3600
    assert parse_retry_after(None, NOW, cap=3600, default=60) == 60
    assert parse_retry_after("-5", NOW, cap=3600, default=60) == 60
    past = email.utils.formatdate(NOW - 300, usegmt=True)
    assert parse_retry_after(past, NOW, cap=3600) == 0


@given(st.text(max_size=80))
def test_retry_after_never_raises_and_stays_in_bounds(value: str) -> None:
    wait = parse_retry_after(value, NOW, cap=600, default=60)
    assert 0 <= wait <= 600


def test_backoff_grows_and_is_capped() -> None:
    waits = [retry_backoff(n) for n in range(12)]
    assert waits == sorted(waits)
    assert waits[0] > 0 and waits[-1] == 600


def test_breaker_opens_after_threshold_and_escalates() -> None:
    assert breaker_pause(4) == 0
    assert 0 < breaker_pause(5) < breaker_pause(6) <= 3600
    assert breaker_pause(100) == 3600


def test_host_level_failures_are_the_hosts_not_the_urls() -> None:
    assert all(is_host_failure(c) for c in ("dns", "connect", "timeout"))
    assert all(is_host_failure("", s) for s in (500, 502, 503, 429))
    assert not any(is_host_failure(c) for c in ("protocol", "framing", "content", "tls", "fetch_error"))
    assert not any(is_host_failure("", s) for s in (200, 304, 404, 410))


def test_a_retried_url_counts_once_in_a_streak_and_a_success_ends_it() -> None:
    streaks = FailureStreaks()
    assert streaks.failed("h", "/slow")
    assert not streaks.failed("h", "/slow")  # its retry
    assert streaks.failed("h", "/other") and "h" in streaks
    assert not streaks.succeeded("elsewhere")
    assert streaks.succeeded("h") and "h" not in streaks
    assert streaks.failed("h", "/slow")  # a new streak counts it again


# One event on a host: a host-level failure of a URL (its index), or a success (None).
_EVENTS = st.lists(st.tuples(st.sampled_from("ab"), st.one_of(st.none(), st.integers(0, 6))), max_size=60)


@given(_EVENTS)
def test_the_breaker_counts_distinct_failing_urls_since_the_last_success(
    events: list[tuple[str, int | None]],
) -> None:
    """FailureStreaks, driven as the engine drives it, against the rule written out plainly."""
    streaks = FailureStreaks()
    counted = {"a": 0, "b": 0}  # what the frontier's counter would hold
    for i, (host, url) in enumerate(events):
        if url is None:
            if host in streaks:
                streaks.succeeded(host)
                counted[host] = 0
        elif streaks.failed(host, f"/{url}"):
            counted[host] += 1
        since = [u for h, u in events[: i + 1] if h == host]
        last_ok = max((j for j, u in enumerate(since) if u is None), default=-1)
        assert counted[host] == len({u for u in since[last_ok + 1:]})
    # Retries alone never trip the breaker: one URL failing again and again stays at one.
    for _ in range(BREAKER_THRESHOLD * 3):
        streaks.failed("c", "/one")
    assert breaker_pause(len(streaks["c"])) == 0

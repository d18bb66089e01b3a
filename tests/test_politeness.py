"""Retry-After parsing, back-off and the circuit breaker."""

from __future__ import annotations

import email.utils

from hypothesis import given
from hypothesis import strategies as st

from harvestman.politeness import breaker_pause, parse_retry_after, retry_backoff

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

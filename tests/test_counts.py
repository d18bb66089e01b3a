"""A run's counters as one frozen record: a worker's report, a job's status and the parent's sum."""

from __future__ import annotations

import dataclasses

import pytest

from harvestman.crawl.stats import CrawlCounts, CrawlStats


def test_a_snapshot_is_frozen_and_holds_every_counter() -> None:
    stats = CrawlStats(started_at=5.0, fetched=3, failed=1, bytes=900, queued=7, busy_hosts={"a.test"})
    counts = stats.snapshot()
    assert (counts.started_at, counts.fetched, counts.failed) == (5.0, 3, 1)
    assert (counts.bytes, counts.queued) == (900, 7)
    assert counts.busy_hosts == frozenset({"a.test"})
    stats.fetched += 1
    stats.busy_hosts.add("b.test")
    assert counts.fetched == 3 and counts.busy_hosts == frozenset({"a.test"})  # a copy, not a view
    with pytest.raises(dataclasses.FrozenInstanceError):
        counts.fetched = 0  # type: ignore[misc]


def test_the_next_attempt_is_reported_only_when_nothing_is_in_flight() -> None:
    assert CrawlStats(next_attempt_at=9.0).snapshot().next_attempt_at == 9.0
    assert CrawlStats(next_attempt_at=9.0, in_flight=2).snapshot().next_attempt_at == 0.0


def test_workers_counts_add_up_in_the_parent() -> None:
    one = CrawlCounts(fetched=2, failed=1, bytes=10, in_flight=1, busy_hosts=frozenset({"a"}))
    two = CrawlCounts(fetched=3, skipped=4, bytes=5, next_attempt_at=8.0, deferred=6, deferred_until=20.0,
                      busy_hosts=frozenset({"b"}))
    parent = CrawlStats(started_at=1.0)
    parent.show(CrawlCounts.total([one, two], queued=11))
    assert (parent.fetched, parent.failed, parent.skipped, parent.bytes, parent.in_flight) == (5, 1, 4, 15, 1)
    assert parent.queued == 11 and parent.next_attempt_at == 8.0 and set(parent.busy_hosts) == {"a", "b"}
    assert (parent.deferred, parent.deferred_until) == (6, 20.0)  # each worker counted the whole crawl's
    assert parent.started_at == 1.0  # the parent's own start

"""A run's metrics beyond its counters (crawl/stats.py): fetch latency and the spacing of a host's
fetches as histograms of fixed buckets, the hosts held back longest, attempts by error class and by
status class, host pauses (crawl/exposition.py writes them as Prometheus text).

Collected only when asked for (`CrawlStats.metrics` is None otherwise: a default crawl pays one
`is None` test a page). A worker process sends its snapshot with its counters; the parent sums them.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Fixed buckets (seconds): a scrape's histograms add up across processes, runs and machines.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
# The hosts whose waits are shown by name: the crawl may know 100,000 hosts, a scrape names a few.
TOP_HOSTS = 20
MAX_STARTS = 10_000  # hosts whose last fetch start is kept before those beyond every bucket are dropped


@dataclass(frozen=True, slots=True)
class Histogram:
    """Observations counted by bucket (`counts[i]`: those <= `buckets[i]`, not cumulative; the last
    count is those above every bucket), with their sum."""

    buckets: tuple[float, ...]
    counts: tuple[int, ...]
    sum: float = 0.0

    @classmethod
    def empty(cls, buckets: tuple[float, ...]) -> Histogram:
        """A histogram with nothing observed."""
        return cls(buckets, (0,) * (len(buckets) + 1))

    def __add__(self, other: Histogram) -> Histogram:
        return Histogram(self.buckets, tuple(a + b for a, b in zip(self.counts, other.counts, strict=True)),
                         self.sum + other.sum)

    @property
    def count(self) -> int:
        """How many observations."""
        return sum(self.counts)


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """A run's metrics now, frozen: what a worker sends its parent, summed by `total`."""

    latency: Histogram = field(default_factory=lambda: Histogram.empty(LATENCY_BUCKETS))
    host_gap: Histogram = field(default_factory=lambda: Histogram.empty(WAIT_BUCKETS))
    errors: tuple[tuple[str, int], ...] = ()  # attempts by error class (retried ones too)
    statuses: tuple[tuple[str, int], ...] = ()  # answered attempts by status class: 2xx, 3xx ...
    host_waits: tuple[tuple[str, float], ...] = ()  # seconds hosts were held back (turns, pauses): top
    host_pauses: int = 0  # hosts paused (Retry-After, back-off, circuit breaker)

    @classmethod
    def total(cls, parts: Iterable[MetricsSnapshot]) -> MetricsSnapshot:
        """The metrics of a crawl run by several processes (each works on hosts of its own)."""
        parts = list(parts)
        if not parts:
            return cls()
        latency, gap = parts[0].latency, parts[0].host_gap
        for part in parts[1:]:
            latency, gap = latency + part.latency, gap + part.host_gap
        hosts: dict[str, float] = {}
        for part in parts:
            for host, seconds in part.host_waits:
                hosts[host] = hosts.get(host, 0.0) + seconds
        return cls(latency, gap, _summed(p.errors for p in parts), _summed(p.statuses for p in parts),
                   _top(hosts), sum(p.host_pauses for p in parts))

    def to_json(self) -> dict[str, Any]:
        """A plain dict (what `serve`'s crawl process writes for the server to read)."""
        return {"latency": [list(self.latency.counts), self.latency.sum],
                "host_gap": [list(self.host_gap.counts), self.host_gap.sum],
                "errors": dict(self.errors), "statuses": dict(self.statuses),
                "host_waits": dict(self.host_waits), "host_pauses": self.host_pauses}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricsSnapshot:
        """The snapshot `to_json` wrote; ValueError (or KeyError, TypeError) when it is not one."""

        def histogram(buckets: tuple[float, ...], value: Any) -> Histogram:
            counts, total = value
            if len(counts) != len(buckets) + 1:
                raise ValueError("histogram of other buckets")
            return Histogram(buckets, tuple(int(c) for c in counts), float(total))

        return cls(histogram(LATENCY_BUCKETS, data["latency"]), histogram(WAIT_BUCKETS, data["host_gap"]),
                   tuple((str(k), int(v)) for k, v in data["errors"].items()),
                   tuple((str(k), int(v)) for k, v in data["statuses"].items()),
                   tuple((str(k), float(v)) for k, v in data["host_waits"].items()),
                   int(data["host_pauses"]))


def _summed(parts: Iterable[Sequence[tuple[str, int]]]) -> tuple[tuple[str, int], ...]:
    total: dict[str, int] = {}
    for part in parts:
        for name, count in part:
            total[name] = total.get(name, 0) + count
    return tuple(sorted(total.items()))


def _top(hosts: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(heapq.nlargest(TOP_HOSTS, hosts.items(), key=lambda item: (item[1], item[0])))


class CrawlMetrics:
    """A process's metrics as its run goes: updated by the ledger (crawl/ledger.py) and the host
    turns, read by `snapshot`."""

    __slots__ = ("_errors", "_gap", "_gap_sum", "_host_waits", "_last_start", "_latency", "_latency_sum",
                 "_pauses", "_statuses")

    def __init__(self) -> None:
        self._latency = [0] * (len(LATENCY_BUCKETS) + 1)
        self._latency_sum = 0.0
        self._gap = [0] * (len(WAIT_BUCKETS) + 1)
        self._gap_sum = 0.0
        self._last_start: dict[str, float] = {}  # host -> when its last fetch started (monotonic)
        self._errors: dict[str, int] = {}
        self._statuses: dict[str, int] = {}
        self._host_waits: dict[str, float] = {}
        self._pauses = 0

    def fetched(self, seconds: float, status: int, error_class: str) -> None:
        """One attempt ended: its time (the transport's, redirects included), status and error."""
        self._latency[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self._latency_sum += seconds
        if status:
            key = f"{status // 100}xx"
            self._statuses[key] = self._statuses.get(key, 0) + 1
        if error_class:
            self.error(error_class)

    def error(self, error_class: str) -> None:
        """One URL attempt counted under `error_class` (a refusal before fetching too)."""
        self._errors[error_class] = self._errors.get(error_class, 0) + 1

    def starting(self, host: str, now: float) -> None:
        """A fetch of `host` starts at `now` (monotonic): the gap since its last start is observed,
        the spacing politeness (delay, Crawl-delay, fetches per host) gives the host."""
        last = self._last_start.get(host)
        self._last_start[host] = now
        if last is None and len(self._last_start) > MAX_STARTS:
            # Memory bounded on a crawl of many hosts: only the gap of a host idle beyond every bucket
            # (a +Inf observation) goes uncounted.
            self._last_start = {h: t for h, t in self._last_start.items() if now - t <= WAIT_BUCKETS[-1]}
        if last is not None:
            gap = now - last
            self._gap[bisect.bisect_left(WAIT_BUCKETS, gap)] += 1
            self._gap_sum += gap

    def waited(self, host: str, seconds: float) -> None:
        """`host` was held back `seconds`: a fetch waited for its turn, or the host was paused."""
        self._host_waits[host] = self._host_waits.get(host, 0.0) + seconds

    def paused(self, host: str, seconds: float) -> None:
        """`host` was paused for `seconds` (Retry-After, back-off, circuit breaker)."""
        self._pauses += 1
        self.waited(host, seconds)

    def snapshot(self) -> MetricsSnapshot:
        """The metrics now, frozen."""
        return MetricsSnapshot(
            Histogram(LATENCY_BUCKETS, tuple(self._latency), self._latency_sum),
            Histogram(WAIT_BUCKETS, tuple(self._gap), self._gap_sum),
            tuple(sorted(self._errors.items())), tuple(sorted(self._statuses.items())),
            _top(dict(self._host_waits)), self._pauses,  # copied at once: another thread may read
        )

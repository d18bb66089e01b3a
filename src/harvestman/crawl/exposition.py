"""The Prometheus text exposition (format 0.0.4) of crawls' counters and metrics: what
`--metrics-port` (launch/metrics.py) and `serve`'s /metrics answer."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harvestman.crawl.metrics import TOP_HOSTS, Histogram
from harvestman.crawl.stats import CrawlCounts

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class MetricsSource:
    """One crawl's figures for an exposition: its counters (with its metrics, where collected), the
    processes crawling, and the labels that tell it from others (`crawl` under `serve`)."""

    counts: CrawlCounts
    processes: int = 1
    labels: Labels = ()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Labels) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}" if pairs else ""


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class _Exposition:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, text: str, samples: Iterable[tuple[str, Labels, float]]) -> None:
        rows = list(samples)
        self.lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        self.lines += [f"{name}{suffix}{_labels(labels)} {_number(value)}" for suffix, labels, value in rows]

    def histogram(self, name: str, text: str, items: Iterable[tuple[Labels, Histogram]]) -> None:
        rows: list[tuple[str, Labels, float]] = []
        for labels, hist in items:
            running = 0
            for bound, count in zip((*hist.buckets, math.inf), hist.counts, strict=True):
                running += count
                le = "+Inf" if math.isinf(bound) else repr(bound)
                rows.append(("_bucket", (*labels, ("le", le)), running))
            rows += [("_sum", labels, hist.sum), ("_count", labels, running)]
        self.family(name, "histogram", text, rows)


_COUNTERS = (  # CrawlCounts field, metric, help
    ("fetched", "harvestman_pages_total", "URLs that ended holding a page (fetched or not modified)"),
    ("failed", "harvestman_failed_total", "URLs that ended in an error"),
    ("retried", "harvestman_retried_total", "attempts that failed and will be retried"),
    ("skipped", "harvestman_skipped_total", "URLs refused before fetching (robots.txt, host budget)"),
    ("bytes", "harvestman_bytes_total", "bytes received on the wire"),
)
_GAUGES = (
    ("in_flight", "harvestman_in_flight", "fetches in flight"),
    ("queued", "harvestman_queue_urls", "URLs waiting in the frontier"),
    ("retrying", "harvestman_retry_queue_urls", "URLs waiting for another attempt"),
)


def exposition(sources: Sequence[MetricsSource]) -> str:
    """The Prometheus text of one or more crawls' figures (one family per metric, a sample each)."""
    out = _Exposition()
    for attr, name, text in _COUNTERS:
        out.family(name, "counter", text, (("", s.labels, getattr(s.counts, attr)) for s in sources))
    for attr, name, text in _GAUGES:
        out.family(name, "gauge", text, (("", s.labels, getattr(s.counts, attr)) for s in sources))
    out.family("harvestman_busy_hosts", "gauge", "hosts with a fetch in flight",
               (("", s.labels, len(s.counts.busy_hosts)) for s in sources))
    out.family("harvestman_processes", "gauge", "processes crawling",
               (("", s.labels, s.processes) for s in sources))
    out.family("harvestman_started_seconds", "gauge", "when the run started (Unix time)",
               (("", s.labels, s.counts.started_at) for s in sources if s.counts.started_at))
    snaps = [(s.labels, s.counts.metrics) for s in sources if s.counts.metrics is not None]
    out.histogram("harvestman_fetch_duration_seconds", "time of one fetch attempt, redirects included",
                  ((labels, m.latency) for labels, m in snaps))
    out.histogram("harvestman_host_gap_seconds", "time between the starts of two fetches of one host "
                  "(the spacing politeness gives it)", ((labels, m.host_gap) for labels, m in snaps))
    out.family("harvestman_fetch_errors_total", "counter", "attempts by error class (retried ones too)",
               (("", (*labels, ("class", name)), n) for labels, m in snaps for name, n in m.errors))
    out.family("harvestman_responses_total", "counter", "answered attempts by status class",
               (("", (*labels, ("code", name)), n) for labels, m in snaps for name, n in m.statuses))
    out.family("harvestman_host_waited_seconds", "gauge",
               f"seconds a host was held back (fetches waiting for its turn, pauses), the {TOP_HOSTS} "
               "hosts held back longest",
               (("", (*labels, ("host", host)), sec) for labels, m in snaps for host, sec in m.host_waits))
    out.family("harvestman_host_pauses_total", "counter", "hosts paused (Retry-After, back-off, breaker)",
               (("", labels, m.host_pauses) for labels, m in snaps))
    return "\n".join(out.lines) + "\n"

"""Typed events the engine reports; progress display, logs and APIs all read the same stream."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class EventKind(enum.Enum):
    """What happened."""

    CRAWL_STARTED = "crawl_started"
    FETCHED = "fetched"  # a page was fetched and stored (any HTTP status)
    FAILED = "failed"  # a fetch ended in an error (may be retried)
    GAVE_UP = "gave_up"  # a URL ran out of retries or was refused for good
    SKIPPED = "skipped"  # refused before fetching (robots.txt, scope)
    HOST_PAUSED = "host_paused"  # a host was deferred (Retry-After, back-off, circuit breaker)
    CRAWL_FINISHED = "crawl_finished"


@dataclass(frozen=True, slots=True)
class Event:
    """One thing the engine reports, with the URL or host it concerns."""

    kind: EventKind
    time: float
    url: str = ""
    host: str = ""
    status: int = 0
    bytes: int = 0
    error_class: str = ""
    message: str = ""
    extra: tuple[tuple[str, str], ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        """A plain dict for `events.jsonl`."""
        out: dict[str, object] = {"kind": self.kind.value, "time": round(self.time, 6)}
        for name in ("url", "host", "status", "bytes", "error_class", "message"):
            value = getattr(self, name)
            if value:
                out[name] = value
        if self.extra:
            out.update(dict(self.extra))
        return out

"""Records and helpers shared by the store tests (contract suite and backend-specific ones)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from harvestman.model.records import FetchOutcome, NewUrl, UrlState
from harvestman.store.frontier import Frontier

T0 = 1_000_000.0  # a fixed "now": policy under test takes time as an argument


def host_of(url: str) -> str:
    return urlsplit(url).hostname or ""


def nu(
    url: str, depth: int = 0, score: float = 0.0, parent: str = "", priority: float | None = None
) -> NewUrl:
    """A new URL; its priority is its depth (breadth-first) unless given."""
    return NewUrl(url, host_of(url), depth, score, parent, float(depth) if priority is None else priority)


def done(url: str, state: UrlState = UrlState.FETCHED, **kw: Any) -> FetchOutcome:
    return FetchOutcome(url, state, fetch_time=kw.pop("fetch_time", T0), **kw)


def leased_urls(frontier: Frontier, limit: int, now: float = T0) -> list[str]:
    return [leased.url for leased in frontier.lease(limit, now)]

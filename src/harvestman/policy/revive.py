"""Which failed URLs a new run fetches again: those whose cause the run's settings removed.

A URL that ended gone because of a setting the user has since mended (`--allow-net` now covers the
address it was refused, `--only-net` now takes that address in or is no longer given, `--ignore-robots`,
a `--resolve` pin for a host that did not resolve), or of an error class named with `--retry-failed`,
is queued again when the crawl is resumed or re-crawled; every other failure stays as it was. Pure:
the caller reads the failures and requeues the URLs.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlRecord
from harvestman.net.addrguard import AddressGuard, parse_ip

# The transport's words for a connection the address guard refused (fetch/transport.py).
_REFUSED_ADDRESS = re.compile(r"refused to connect to (.+?): (?:a private|outside)")
_CLASS_NAME = re.compile(r"[a-z0-9_]+|http_[1-5]xx")
# Why a failure is taken as mended, by error class (for the run's note).
MENDED_BY = {"blocked_address": "--allow-net", "outside_net": "--only-net", "robots": "--ignore-robots",
             "dns": "--resolve"}


def refused_address(record: UrlRecord) -> str:
    """The address a refused connection went to ('' when the record does not say)."""
    found = _REFUSED_ADDRESS.search(record.error_message)
    for text in (found.group(1).strip("[]") if found else "", urlsplit(record.url).hostname or ""):
        addr = parse_ip(text)
        if addr is not None:
            return str(addr)
    return ""


def check_retry_classes(names: Iterable[str]) -> frozenset[str]:
    """The `--retry-failed` error classes, checked: names as status and export show them
    (`timeout`, `http_503`, `http_5xx` for every 5xx)."""
    classes = frozenset(name.strip().lower() for name in names if name.strip())
    for name in sorted(classes):
        if not _CLASS_NAME.fullmatch(name):
            raise ConfigError(f"--retry-failed takes error classes as `harvestman status` shows them "
                              f"(timeout, http_503, http_5xx, ...), not {name!r}")
    return classes


@dataclass(frozen=True, slots=True)
class Revival:
    """The URLs a run queues again, counted by the reason."""

    urls: tuple[str, ...]
    by_reason: tuple[tuple[str, int], ...]  # (reason, count), in a stable order

    def note(self) -> str:
        """One line for the run's output ('' when nothing is revived)."""
        if not self.urls:
            return ""
        why = ", ".join(f"{n} {reason}" for reason, n in self.by_reason)
        return f"{len(self.urls)} failed URLs queued again ({why})"


def revival(failures: Iterable[UrlRecord], cfg: CrawlConfig, retry: Collection[str] = ()) -> Revival:
    """The failed URLs that `cfg` (and the `retry` error classes) let the run fetch again."""
    guard = AddressGuard(cfg.allow_net, cfg.only_net)
    pinned = {entry.host.lower() for entry in cfg.resolve}
    urls: list[str] = []
    counts: dict[str, int] = {}
    for record in failures:
        reason = _reason(record, cfg, guard, pinned, retry)
        if reason:
            urls.append(record.url)
            counts[reason] = counts.get(reason, 0) + 1
    return Revival(tuple(urls), tuple(sorted(counts.items())))


def _reason(record: UrlRecord, cfg: CrawlConfig, guard: AddressGuard, pinned: set[str],
            retry: Collection[str]) -> str:
    error = record.error_class
    if error in retry or (error.startswith("http_") and f"{error[:6]}xx" in retry):
        return f"--retry-failed {error}"
    if error in ("blocked_address", "outside_net"):
        address = refused_address(record)
        return f"{MENDED_BY[error]} allows them" if address and guard.is_allowed(address) else ""
    if error == "robots":
        return f"{MENDED_BY[error]}" if not cfg.obey_robots else ""
    if error == "dns":
        host = (urlsplit(record.url).hostname or "").lower()
        return f"{MENDED_BY[error]} pins their host" if host in pinned else ""
    return ""

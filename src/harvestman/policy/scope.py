"""Crawl scope: which URLs a crawl may follow, decided from its seeds and include/exclude patterns."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from harvestman.model.errors import InvalidUrlError
from harvestman.net.urls import host_of, is_robots_txt, normalize_with_host, registered_domain

SCOPE_MODES = ("host", "domain", "any")
_UNSEEN: tuple[str, str] = ("", "")  # a link not yet in the answers (compared by identity)


class Scope:
    """A pure URL filter: same host / same registered domain / anything, then include and exclude regexes."""

    __slots__ = ("_domains", "_exclude", "_hosts", "_include", "mode")

    def __init__(self, seeds: Sequence[str], mode: str = "host", include: Sequence[str] = (),
                 exclude: Sequence[str] = ()) -> None:
        if mode not in SCOPE_MODES:
            raise ValueError(f"scope mode must be one of {', '.join(SCOPE_MODES)}, got {mode!r}")
        self.mode = mode
        hosts: set[str] = set()
        for seed in seeds:
            try:
                hosts.add(host_of(seed))
            except InvalidUrlError:
                # A seed that does not parse is reported where seeds are read; it widens nothing here.
                continue
        self._hosts = frozenset(h for h in hosts if h)
        self._domains = frozenset(registered_domain(h) for h in self._hosts)
        self._include = tuple(re.compile(p) for p in include)
        self._exclude = tuple(re.compile(p) for p in exclude)

    def allows(self, url: str, host: str | None = None) -> bool:
        """Whether `url` is inside the crawl's scope (`host`: its host, when already known)."""
        return self.reason(url, host) is None

    def reason(self, url: str, host: str | None = None) -> str | None:
        """Why `url` is out of scope, or None when it is in scope (`host`: its host, when known)."""
        if is_robots_txt(url):  # read by the robots gate, not crawled: no row, no page, no count
            return "robots.txt is read by the crawl for itself"
        if self.mode != "any":
            try:
                host = host if host is not None else host_of(url)
            except InvalidUrlError:
                return "invalid URL"
            if self.mode == "host":
                if host not in self._hosts:
                    return f"host {host!r} is not a seed host"
            elif registered_domain(host) not in self._domains:
                return f"domain {registered_domain(host)!r} is not a seed domain"
        if self._include and not any(p.search(url) for p in self._include):
            return "matches no include pattern"
        for pattern in self._exclude:
            if pattern.search(url):
                return f"matches exclude pattern {pattern.pattern}"
        return None


# A normalized URL -> the URL to follow instead (normalized again after it), or None to drop it:
# the plugins' URL normalizers and filters (crawl/plugins.py).
UrlRefiner = Callable[[str], str | None]


def followed_links(links: Iterable[str], scope: Scope, answers: dict[str, tuple[str, str] | None], *,
                   max_length: int, refine: UrlRefiner | None = None) -> dict[str, str]:
    """The resolved `links` worth following, normalized, with their hosts, in document order.

    `answers` remembers each link's (normalized URL, host), or None when it is invalid or out of
    scope: navigation and popular pages appear on page after page, and one dict lookup a link is
    cheaper than a normalization and a scope check. Keep it for as long as `scope` holds (and
    `refine`, which is asked once for each link not yet in the answers).
    """
    hosts: dict[str, str] = {}
    for link in links:
        target = answers.get(link, _UNSEEN)
        if target is _UNSEEN:
            try:
                target = normalize_with_host(link, max_length=max_length)
                if refine is not None and target is not None:
                    refined = refine(target[0])
                    if refined is None:
                        target = None
                    elif refined != target[0]:
                        target = normalize_with_host(refined, max_length=max_length)
            except InvalidUrlError:
                target = None
            if target is not None and not scope.allows(*target):
                target = None
            answers[link] = target
        if target is not None and target[0] not in hosts:
            hosts[target[0]] = target[1]
    return hosts

"""A crawling process's sitemaps between robots.txt and the frontier: the URLs it queued as sitemaps,
and the sitemap URLs and lastmods that wait for the next commit."""

from __future__ import annotations

from collections.abc import Mapping

from harvestman.crawl.sitemaps import SitemapPage, lastmod_metadata
from harvestman.model.records import NewUrl


class SitemapQueue:
    """The sitemaps one crawling process knows: a text sitemap (not XML) is read as one only when its
    URL was queued here as a sitemap; an XML one is told by its root anyway."""

    def __init__(self, max_known: int) -> None:
        self._known: set[str] = set()
        self._max_known = max_known
        self._urls: list[NewUrl] = []  # sitemaps to add at the next commit
        self._lastmods: list[tuple[str, dict[str, str]]] = []  # {"lastmod": ...} of URLs sitemaps list

    def __contains__(self, url: object) -> bool:
        return url in self._known

    @property
    def waiting(self) -> bool:
        """Whether sitemap URLs wait for a commit."""
        return bool(self._urls)

    def remember(self, url: str) -> None:
        """Know `url` as a sitemap (forgotten past `max_known`: an XML sitemap is still told by its root)."""
        if len(self._known) >= self._max_known:
            self._known.clear()
        self._known.add(url)

    def queue(self, url: NewUrl) -> None:
        """Queue a sitemap robots.txt named (or a probed one) for the next commit."""
        self.remember(url.url)
        self._urls.append(url)

    def take(self, page: SitemapPage, hosts: Mapping[str, str]) -> None:
        """Take a fetched sitemap in: its child sitemaps known, its URLs' lastmods kept for the commit
        after their URLs'. (A sitemap not read whole is recorded on its URL by the page step.)"""
        for child in page.children:
            self.remember(child)
        self._lastmods.extend(lastmod_metadata(page.sitemap, hosts))

    def take_urls(self) -> list[NewUrl]:
        """The sitemap URLs to add now."""
        urls, self._urls = self._urls, []
        return urls

    def take_lastmods(self) -> list[tuple[str, dict[str, str]]]:
        """The lastmods to record now (after the commit that added their URLs: only known URLs take them)."""
        lastmods, self._lastmods = self._lastmods, []
        return lastmods

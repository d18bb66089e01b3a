"""The URLs of a site for Firecrawl's /v1/map and /v2/map: what its sitemaps list, the pages this
server's crawls have fetched on it, and a small discovery crawl from the start URL, all bounded by
the request's `limit` and `timeout`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from harvestman.crawl.parse import parse_html
from harvestman.crawl.sitemaps import parse_sitemap
from harvestman.model.errors import ConfigError, HarvestmanError
from harvestman.model.records import FetchResult, UrlState
from harvestman.net.urls import registered_domain
from harvestman.policy.robots import RobotsRules
from harvestman.serve.crawls import CrawlManager
from harvestman.serve.fcshapes import MapRequest
from harvestman.serve.status import open_db

MAX_SITEMAPS = 10  # sitemaps read by one map (robots.txt's, /sitemap.xml, and their children)
DISCOVERY_PAGES = 100  # pages one map fetches at most to find links
_CRAWLED = (UrlState.FETCHED, UrlState.NOT_MODIFIED)

# The fetches of a map: URLs and a time limit per fetch -> results as they complete (stopping the
# iteration stops the fetches). The server's network rules are the caller's to apply.
Fetching = Callable[[list[str], float], Iterator[FetchResult]]


@dataclass(frozen=True, slots=True)
class MapEntry:
    """One URL of a map, with its page's title and description where they are known."""

    url: str
    title: str = ""
    description: str = ""

    def as_json(self) -> dict[str, str]:
        """Firecrawl v2's link object."""
        out = {"url": self.url}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        return out


class _Found:
    """The URLs found so far, first finding first, each once (without fragment, and without query
    when the request says so), on the start URL's site only. With a `search`, the map is full once
    `limit` URLs match it (the others are listed after them)."""

    def __init__(self, asked: MapRequest) -> None:
        self.asked = asked
        self.host = urlsplit(asked.url).hostname or ""
        self.words = asked.search.lower().split()
        self.entries: dict[str, MapEntry] = {}
        self.matching = 0

    def key(self, url: str) -> str:
        """The URL as the map lists it; '' when it is not the site's."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.scheme not in ("http", "https") or not host:
            return ""
        if host != self.host and not (self.asked.subdomains
                                      and registered_domain(host) == registered_domain(self.host)):
            return ""
        return urlunsplit((parts.scheme, parts.netloc, parts.path or "/",
                           "" if self.asked.ignore_query else parts.query, ""))

    def hits(self, entry: MapEntry | None) -> int:
        """How many of the search's words the entry holds."""
        if entry is None:
            return 0
        text = f"{entry.url} {entry.title} {entry.description}".lower()
        return sum(word in text for word in self.words)

    def add(self, url: str, title: str = "", description: str = "") -> str:
        key = self.key(url)
        if key:
            old = self.entries.get(key)
            if old is None or (title and not old.title) or (description and not old.description):
                new = MapEntry(key, title or (old.title if old else ""),
                               description or (old.description if old else ""))
                self.entries[key] = new
                self.matching += (self.hits(new) > 0) - (self.hits(old) > 0)
        return key

    def full(self) -> bool:
        return (self.matching if self.words else len(self.entries)) >= self.asked.limit

    def listed(self) -> list[MapEntry]:
        """The map: those holding most of the search's words first, `limit` at most."""
        entries = list(self.entries.values())
        if self.words:
            entries.sort(key=lambda e: -self.hits(e))  # stable: the others keep their order, after
        return entries[: self.asked.limit]


class SiteMapper:
    """Maps sites with `fetching` (under the server's network rules) and the crawls of `manager`."""

    def __init__(self, fetching: Fetching, manager: CrawlManager) -> None:
        self.fetching = fetching
        self.manager = manager

    def map(self, asked: MapRequest) -> list[MapEntry]:
        """The site's URLs, those holding the words of `search` first, `limit` at most."""
        deadline = time.monotonic() + asked.timeout
        found = _Found(asked)
        if not asked.sitemap_only:
            found.add(asked.url)
        if asked.use_sitemap or asked.sitemap_only:
            for url in self._sitemap_urls(asked.url, deadline):
                found.add(url)
        if not asked.sitemap_only:
            for url, title in self._crawled(found, deadline):
                found.add(url, title)
            self._discover(found, deadline)
        return found.listed()

    def _fetch(self, urls: list[str], deadline: float) -> Iterator[FetchResult]:
        left = deadline - time.monotonic()
        if left <= 0.5:
            return
        for result in self.fetching(urls, left):
            yield result
            if time.monotonic() >= deadline:
                return

    def _sitemap_urls(self, start: str, deadline: float) -> list[str]:
        """The page URLs the site's sitemaps list: those robots.txt names, else /sitemap.xml, and
        the children of sitemap indexes, MAX_SITEMAPS read at most."""
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(start))
        named: list[str] = []
        for robots in self._fetch([f"{origin}/robots.txt"], deadline):
            named = list(RobotsRules.parse(robots.body).sitemaps) if robots.ok else []
        todo, done, pages = named or [f"{origin}/sitemap.xml"], 0, []
        while todo and done < MAX_SITEMAPS and time.monotonic() < deadline:
            batch, todo = todo[: MAX_SITEMAPS - done], todo[MAX_SITEMAPS - done:]
            for result in self._fetch(batch, deadline):
                done += 1
                if not result.ok:
                    continue
                sitemap = parse_sitemap(result.body, result.final_url)
                todo += [entry.url for entry in sitemap.sitemaps]
                pages += [entry.url for entry in sitemap.pages]
        return pages

    def _crawled(self, found: _Found, deadline: float) -> Iterable[tuple[str, str]]:
        """(URL, title) of the pages this server's crawls fetched on the site."""
        for crawl_id in self.manager.ids():
            try:
                db = open_db(self.manager.info(crawl_id))
            except HarvestmanError:  # deleted, or making its database: nothing to read
                continue
            if db is None:
                continue
            try:
                for record in db.records():
                    if found.full() or time.monotonic() >= deadline:
                        return
                    if record.state in _CRAWLED and found.key(record.url):
                        yield record.url, record.title
            finally:
                db.close()

    def _discover(self, found: _Found, deadline: float) -> None:
        """Follow the site's links from the start URL, breadth first, DISCOVERY_PAGES at most."""
        level, seen, fetched = [found.asked.url], {found.asked.url}, 0
        while level and not found.full() and fetched < DISCOVERY_PAGES:
            following: list[str] = []
            for result in self._fetch(level[: DISCOVERY_PAGES - fetched], deadline):
                fetched += 1
                if result.error:
                    if result.url == found.asked.url and len(found.entries) <= 1:
                        raise ConfigError(f"could not fetch {result.url}: {result.error_class}: "
                                          f"{result.error_message}")
                    continue
                if result.text is None:
                    continue
                page = parse_html(result.text, result.final_url, with_text=False)
                found.add(result.final_url, page.title, page.description)
                for link in page.links:
                    key = found.add(link.url)
                    if key and key not in seen:
                        seen.add(key)
                        following.append(key)
            level = following

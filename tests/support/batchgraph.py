"""Crawl databases with a known link graph, written through the store's own API, for batch-job tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harvestman.model.records import Link, PageLinks, UrlState
from harvestman.store.factory import open_store
from tests.support.stores import T0, done, host_of, nu


@dataclass(frozen=True)
class Page:
    """A fetched page: its outlinks (URL, or (URL, nofollow, anchor)), signature, SimHash, score."""

    links: tuple[str | tuple[str, bool, str], ...] = ()
    signature: str = ""
    simhash: int = 0
    score: float = 0.0
    content_type: str = "text/html"
    extra: dict[str, object] = field(default_factory=dict)


def make_crawl(folder: Path, pages: Mapping[str, Page], unfetched: Iterable[str] = (), *,
               db: str = "") -> str:
    """Write a crawl database (DIR/crawl.db unless `db`) where `pages` are fetched with their links,
    and `unfetched` (plus every link target not in `pages`) is known but not fetched; returns its location."""
    folder.mkdir(parents=True, exist_ok=True)
    location = db or str(folder / "crawl.db")
    store = open_store(location, host_of=host_of, per_host=1 << 20)
    try:
        store.add([nu(url) for url in pages])
        store.add([nu(url) for url in unfetched])
        leased = store.lease(1 << 20, T0)
        wanted = {lease.url for lease in leased} & set(pages)
        outcomes, links = [], []
        for url in wanted:
            page = pages[url]
            outcomes.append(done(url, UrlState.FETCHED, signature=page.signature, simhash=page.simhash,
                                 content_type=page.content_type, http_status=200))
            items = []
            for link in page.links:
                target, nofollow, anchor = (link, False, "") if isinstance(link, str) else link
                items.append(Link(target, anchor=anchor, nofollow=nofollow))
            links.append(PageLinks(url, tuple(items)))
        store.complete(outcomes, T0, links=links)
        store.release_leases()
        store.set_scores((url, page.score, -page.score) for url, page in pages.items())
    finally:
        store.close()
    return location

"""A link scorer: shorter URLs first (a crude stand-in for "closer to the site's top")."""

from __future__ import annotations

from harvestman.model.records import CrawledPage, Link


def shorter_first(page: CrawledPage, link: Link) -> float:
    """Higher for shorter URLs."""
    return 1.0 / (1 + len(link.url))

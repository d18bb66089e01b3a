"""What a fetched page gives the crawl: its parse, the links to queue, and its links for the graph."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harvestman.crawl.documents import DEFAULT_PARSERS, DocumentParser, parse_document
from harvestman.crawl.parse import parse_html
from harvestman.crawl.sitemaps import is_sitemap, sitemap_outlinks
from harvestman.model.config import LinkSettings
from harvestman.model.records import FetchResult, Link, PageLinks, ParsedPage
from harvestman.policy.scope import Scope, UrlRefiner, followed_links

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
FOLLOW_CACHE = 1 << 16  # resolved links whose normalized form and scope verdict are remembered


def outlinks(
    result: FetchResult,
    depth: int,
    settings: LinkSettings,
    scope: Scope,
    follow: dict[str, tuple[str, str] | None],
    *,
    with_text: bool,
    as_sitemap: bool = False,
    parsers: Mapping[str, DocumentParser] = DEFAULT_PARSERS,
    refine: UrlRefiner | None = None,
    share_tree: bool = False,
) -> tuple[ParsedPage | None, dict[str, str]]:
    """Parse an HTML page found at `depth`; the links worth queueing (normalized, in scope, not too
    deep), with their hosts. `follow` remembers verdicts on resolved links across pages;
    `with_text`: the page's text and anchor texts too, for a library consumer, a sink or a scorer
    (the crawl itself stores raw bytes); `as_sitemap`: queued as a sitemap (crawl/sitemaps.py).
    Other documents go to their type's parser in `parsers`; `refine`: the plugins' URL normalizers
    and filters (crawl/plugins.py), None when none runs; `share_tree`: an HTML page's tree is kept in
    the parse for the later steps that read it (crawl/parse.py)."""
    # Sitemaps: a membership test on an HTML page; a look at the root of any other (a SitemapPage).
    if settings.sitemaps != "off" and (as_sitemap or result.content_type not in HTML_TYPES) \
            and is_sitemap(result, as_sitemap):
        return sitemap_outlinks(result, depth, settings, scope)
    if result.text is None or result.is_binary or result.content_type not in HTML_TYPES:
        # Feeds, PDF, plugins' types (crawl/documents.py): the HTML path never comes here.
        document = parse_document(result, parsers, max_links=settings.max_outlinks, with_text=with_text)
        if document is None:
            return None, {}
        parsed = document
    elif not 200 <= result.status < 300:
        return None, {}
    else:
        # Anchor texts cost ~1 µs a link, a fifth of the parse (docs/config.md, link_anchors).
        parsed = parse_html(result.text, result.final_url, max_links=settings.max_outlinks,
                            with_text=with_text, anchors=with_text or settings.link_anchors,
                            share_tree=share_tree)
    if parsed.nofollow:
        return parsed, {}
    return parsed, queueable(parsed.links, depth, settings, scope, follow, refine)


def queueable(links: Iterable[Link], depth: int, settings: LinkSettings, scope: Scope,
              follow: dict[str, tuple[str, str] | None], refine: UrlRefiner | None = None) -> dict[str, str]:
    """The links of a page found at `depth` worth queueing, with their hosts: followed (not
    nofollow), not too deep, normalized and in scope. The crawl and the cycle's updatedb both queue
    by it; `follow` remembers verdicts on resolved links across pages."""
    if depth + 1 > settings.max_depth:
        return {}
    if len(follow) > FOLLOW_CACHE:
        follow.clear()
    followed = (link.url for link in links if not link.nofollow)
    return followed_links(followed, scope, follow, max_length=settings.max_url_length, refine=refine)


def page_links(url: str, parsed: ParsedPage) -> PageLinks:
    """A page's links for the link graph: all of them (any host, in scope or not, nofollow too), as
    parsed and capped; a page whose meta robots says nofollow marks every one."""
    links = parsed.links
    if parsed.nofollow:
        links = tuple(link._replace(nofollow=True) for link in links)
    return PageLinks(url, links)

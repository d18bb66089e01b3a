"""The order a crawl leases its URLs in: link scorers and the `bfs`, `dfs` and `score` orderings.

The frontier leases a host's queued URLs lowest `NewUrl.priority` first, then in insertion order;
an ordering turns a new URL's depth and score into that priority. Under bfs the hosts take turns by
their politeness clocks; any other ordering holds across hosts too (the store leases the ready hosts
by their best queued URL's priority, `ordered`). The default crawl (`bfs`, no scorer) never comes here:
the engine builds its NewUrls inline, priority = depth, so that this costs nothing per link.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol

from harvestman.model.errors import ConfigError
from harvestman.model.records import CrawledPage, Link, NewUrl

SEED_SCORE = 1.0  # a seed's score: above the 0 of an unscored link


class LinkScorer(Protocol):
    """Scores a link found on a page: higher is better (fetched sooner under `ordering="score"`).

    `page` is the page the link was found on (its fetch result, its parse with anchor texts, its
    depth); `link` is the link as found (resolved, not yet normalized). It is called once for each
    link to a URL that the crawl did not know yet; a URL linked several times from the page takes
    its best score. With worker processes it runs in every worker: forked workers inherit it, and
    where workers are spawned it must pickle (a module-level function or class).
    """

    def __call__(self, page: CrawledPage, link: Link) -> float:
        """The link's score."""
        ...


def by_depth(depth: int, score: float) -> float:
    """`bfs`: shallower first (the default; a host's queue is then breadth-first)."""
    return depth


def deeper_first(depth: int, score: float) -> float:
    """`dfs`: deeper first, so that a host's crawl follows a path down before its siblings."""
    return -depth


def best_score_first(depth: int, score: float) -> float:
    """`score`: higher score first."""
    return -score


# One for each of model.config.ORDERINGS.
RANKS: dict[str, Callable[[int, float], float]] = {
    "bfs": by_depth,
    "dfs": deeper_first,
    "score": best_score_first,
    # Scores from a batch job (harvestman rank stores indegree or PageRank) or from online OPIC:
    # higher first, as "score".
    "indegree": best_score_first,
    "opic": best_score_first,
    "pagerank": best_score_first,
}
# Orderings by a score a rank job stores in the crawl database (its meta "score_source").
RANKED_ORDERINGS = ("indegree", "pagerank")


def check_ordering(ordering: str, scorer: LinkScorer | None) -> None:
    """Refuse an ordering by score without a scorer (every link would score 0: no order at all)."""
    if ordering == "score" and scorer is None:
        raise ConfigError('ordering "score" needs a link scorer: pass one as Crawler(config, scorer=...)')


def link_scores(scorer: LinkScorer, page: CrawledPage, wanted: Collection[str],
                follow: Mapping[str, tuple[str, str] | None]) -> dict[str, float]:
    """The best score `page` gives each URL in `wanted`, over its followed links to that URL.

    `follow` maps a link as found to its (normalized URL, host), as `scope.followed_links` left it.
    """
    scores: dict[str, float] = {}
    if page.parsed is None:
        return scores
    for link in page.parsed.links:
        target = None if link.nofollow else follow.get(link.url)
        if target is None or target[0] not in wanted:
            continue
        score = float(scorer(page, link))
        if score != score:  # NaN: the store cannot order by it
            raise ValueError(f"the link scorer gave NaN for {link.url[:200]}")
        if target[0] not in scores or score > scores[target[0]]:
            scores[target[0]] = score
    return scores


def opic_shares(cash: float, links: Sequence[str], fresh: Collection[str],
                scores: Mapping[str, float] | None = None) -> dict[str, float]:
    """Online OPIC in the continuous crawl: a page's `cash` (its score) split equally over its
    distinct followed `links`, given to those new to the crawl (`fresh`) as their score, added to a
    link scorer's `scores` if any. (The crawl cycle's updatedb adds the shares to known URLs too.)"""
    share = cash / len(links) if links else 0.0
    out = dict(scores or {})
    for url in fresh:
        out[url] = out.get(url, 0.0) + share
    return out


def ranked_urls(rank: Callable[[int, float], float], scores: Mapping[str, float], fresh: Sequence[str],
                hosts: Mapping[str, str], key: Callable[[str, str], str], depth: int,
                parent: str) -> list[NewUrl]:
    """The NewUrls of a page's `fresh` links (found on `parent`, at `depth`) with their scores
    (`link_scores`; 0 when not scored) and their priorities by `rank`: a crawl not plain bfs."""
    new = []
    for url in fresh:
        score = scores.get(url, 0.0)
        new.append(NewUrl(url, key(url, hosts[url]), depth, score, parent, rank(depth, score)))
    return new

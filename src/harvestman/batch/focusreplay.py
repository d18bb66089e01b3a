"""Offline crawling (seed 004): a focus strategy run over a previous crawl's stored pages and link
graph, with no network, so that strategies are compared in seconds; and rules learnt from a crawl.

The replay follows the live crawl's path for each page: the same parse and link filter
(crawl/pagelinks.py with the crawl's stored settings and seeds), the same focus judgement
(policy/focus.py), and the frontier's order (lowest priority first, then first queued). It leaves
out what only time decides live: politeness turns between hosts, leases taken in batches,
concurrency. A URL the stored crawl never fetched cannot be replayed: it is skipped, not counted.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from pathlib import Path

from harvestman.batch.harvest import CurvePoint, harvest_curve
from harvestman.crawl.pagelinks import outlinks
from harvestman.model.config import CrawlConfig, merge_settings
from harvestman.model.errors import ConfigError
from harvestman.model.records import CrawledPage, FetchResult, UrlState
from harvestman.policy.focus import Focus, Rules
from harvestman.policy.scope import Scope
from harvestman.store.crawldir import CrawlDir, read_settings
from harvestman.store.warc_read import stored_responses

REDIRECTS = frozenset({UrlState.REDIRECT_PERM, UrlState.REDIRECT_TEMP})


@dataclass(frozen=True, slots=True)
class Visit:
    """One page the replay fetched, in order, with the focus's judgement ('' and 0 unfocused)."""

    url: str
    depth: int
    topic: str
    relevance: float
    on_topic: bool


@dataclass(frozen=True, slots=True)
class Replay:
    """What a replay did: the pages in fetch order, the curve, and recall against the stored crawl."""

    visits: list[Visit]
    curve: list[CurvePoint]
    relevant_total: int  # pages of the stored crawl the focus judges relevant
    stored_pages: int  # HTML pages the stored crawl holds

    @property
    def recall(self) -> float:
        """Relevant pages found, of all the relevant pages stored."""
        return self.curve[-1].relevant / self.relevant_total if self.curve and self.relevant_total else 0.0


@dataclass(frozen=True, slots=True)
class StoredCrawl:
    """A previous crawl as the replay reads it: settings, seeds, URL states, HTML bodies."""

    config: CrawlConfig
    seeds: list[str]
    states: dict[str, tuple[UrlState, str]]  # url -> (state, final URL)
    pages: dict[str, tuple[str, str]]  # url -> (content type, decoded text) of its HTML 200 response
    edges: dict[str, list[str]]  # the link graph: page -> linked URLs


def read_crawl(folder: Path, db: str = "") -> StoredCrawl:
    """Read a previous crawl for replay; ConfigError when the folder holds none."""
    from harvestman.fetch.content import decode_text, detect_charset, media_type

    folder = Path(folder)
    with CrawlDir(folder, db).read() as store:
        values = read_settings(store)  # the crawl's address rules too: its examples may be on loopback
        seeds = [s for s in (store.get_meta("seeds") or "").split("\n") if s]
        states = {r.url: (r.state, r.final_url) for r in store.records()}
        edges: dict[str, list[str]] = {}
        for edge in store.links():
            edges.setdefault(edge.from_url, []).append(edge.to_url)
    config, _ = merge_settings(values)
    pages: dict[str, tuple[str, str]] = {}
    for found in stored_responses(folder, latest=True):
        body, ctype = found.body or b"", found.content_type
        charset, _ = detect_charset(body, ctype or None)
        pages[found.url] = (media_type(ctype), decode_text(body, charset))
    return StoredCrawl(config, seeds or list(config.seeds), states, pages, edges)


def _result(url: str, page: tuple[str, str]) -> FetchResult:
    ctype, text = page
    return FetchResult(url, url, status=200, content_type=ctype, text=text, body=text.encode())


def replay(crawl: StoredCrawl, focus: Focus | None, *, budget: int = 0, judge: Focus | None = None) -> Replay:
    """Run `focus` (None: the crawl's own bfs, every link followed) over a stored crawl, fetching at
    most `budget` pages (0: until nothing is left). The pages are judged relevant by `focus`, or by
    `judge` (a bfs baseline judged as a focus would judge it: its curve and recall compare)."""
    assessor = focus or judge
    cfg = crawl.config
    settings = cfg.links
    scope = Scope(crawl.seeds, cfg.scope, cfg.include, cfg.exclude)
    follow: dict[str, tuple[str, str] | None] = {}
    seen: set[str] = set()
    queue: list[tuple[float, int, str, int, float]] = []  # (priority, order, url, depth, score)
    order = 0
    ordered = focus is not None and focus.ordered
    for seed in crawl.seeds:
        for url in (seed, seed.rstrip("/") + "/"):
            if url in crawl.states and url not in seen:
                seen.add(url)
                heapq.heappush(queue, (0.0 if not ordered else -1.0, order, url, 0, 1.0))
                order += 1
                break
    visits: list[Visit] = []
    while queue and (not budget or len(visits) < budget):
        _, _, url, depth, score = heapq.heappop(queue)
        state, final = crawl.states.get(url, (UrlState.UNFETCHED, ""))
        if state == UrlState.UNFETCHED or (state == UrlState.GONE and not final):
            continue  # never fetched by the stored crawl (or refused before fetching): unknown here
        if state in REDIRECTS and final and final != url:
            if final not in seen:  # the redirect's target takes the URL's place in the queue
                seen.add(final)
                heapq.heappush(queue, (score if ordered else depth, order, final, depth, score))
                order += 1
            continue
        page = crawl.pages.get(url)
        if page is None:  # fetched, not an HTML page (or an error): counts as a fetch
            visits.append(Visit(url, depth, "", 0.0, False))
            continue
        result = _result(url, page)
        parsed, hosts = outlinks(result, depth, settings, scope, follow, with_text=True)
        scores: dict[str, float] = {}
        if assessor is None or parsed is None:
            visits.append(Visit(url, depth, "", 0.0, False))
            fresh = [u for u in hosts if u not in seen]
        else:
            verdict, judged_scores = assessor.assess(CrawledPage(result, parsed, depth), score, hosts, follow)
            visits.append(Visit(url, depth, verdict.topic, verdict.relevance, verdict.on_topic))
            if focus is None:  # bfs: every link followed in depth order, whatever the judge says
                fresh = [u for u in hosts if u not in seen]
            else:
                scores = judged_scores
                fresh = [u for u in hosts if u not in seen] if verdict.follow else []
        for link in fresh:
            seen.add(link)
            link_score = scores.get(link, 0.0)
            heapq.heappush(queue, (-link_score if ordered else depth + 1, order, link, depth + 1, link_score))
            order += 1
    relevant_total = 0
    if assessor is not None:
        texts = [_text(page) for page in crawl.pages.values()]
        judged = assessor.model.predict_many(texts) if texts else []
        relevant_total = sum(assessor.judge(probs)[1] >= assessor.spec.threshold for probs in judged)
    return Replay(visits, harvest_curve([v.on_topic for v in visits]), relevant_total, len(crawl.pages))


def _text(page: tuple[str, str]) -> str:
    parsed, _ = outlinks(_result("http://replay.invalid/", page), 0, CrawlConfig().links,
                         Scope(["http://replay.invalid/"]), {}, with_text=True)
    return parsed.text if parsed else ""


def learn_rules(crawl: StoredCrawl, focus: Focus) -> Rules:
    """Rules from a training crawl: each stored page's class (the focus model's most likely), and
    the paths from each stored page to the target pages within the focus's tunnel (Rules.learn_paths)."""
    urls = list(crawl.pages)
    if not urls:
        raise ConfigError("the training crawl holds no HTML page to learn rules from")
    classes = {url: max(probs, key=probs.__getitem__)
               for url, probs in zip(urls, focus.model.predict_many([_text(crawl.pages[u]) for u in urls]),
                                     strict=True)}
    finals = {url: final for url, (state, final) in crawl.states.items() if state in REDIRECTS and final}
    graph = {source: [finals.get(t, t) for t in targets] for source, targets in crawl.edges.items()
             if source in classes}
    return Rules.learn_paths(graph, classes, focus.model.classes, focus.spec.targets, focus.spec.tunnel)

"""A topical web of many hosts for focused crawling tests and benchmarks, written to disk for nginx.

From documents by topic (tests/support/doccorpus.py: real documentation text), one folder per
loopback address (nginx serves `root/<address>/`):
- a portal (the seed, the first address): its front page lists some of the topic sites and the
  first hub sites;
- topic sites: a contents page and `pages` pages, most of the site's topic, a few strays of other
  topics (a site is rarely all one thing); pages link along the site (a nav list), back to the
  contents, and now and then to a page of another site, mostly of the same topic (topical locality);
- hub sites of an off-topic kind (release notes): pages of notes that list topic sites, an entry a
  paragraph with a blurb of the site, and link the next hub sites (a tree: hub k -> 2k+1, 2k+2);
- hidden target sites: listed only on the deeper hubs, linked from no other site: on-topic pages
  reachable only through off-topic ones (what tunneling is for).
Every site's robots.txt forbids /private/, and its contents page links there.
The labels (each page's topic, by URL) go back to the caller alone: the crawler never sees them.
"""

from __future__ import annotations

import html
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.doccorpus import HUB, Doc

HOME = "home"


@dataclass
class TopicHosts:
    """What was written: each page's URL and topic, each site's topic, the hidden sites."""

    labels: dict[str, str] = field(default_factory=dict)  # URL -> topic ("hub", "home")
    sites: dict[str, str] = field(default_factory=dict)  # address -> the site's topic ("hub", "home")
    hidden: list[str] = field(default_factory=list)  # target sites listed only on deep hubs
    seed: str = ""  # the portal's front page
    texts: set[str] = field(default_factory=set)  # every document's text the web's pages show

    def relevant(self, target: str) -> set[str]:
        """The URLs of the target topic's pages."""
        return {url for url, topic in self.labels.items() if topic == target}


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"</head><body>{body}</body></html>")


def _paragraphs(text: str, words: int = 50) -> str:
    tokens = text.split()
    return "".join(f"<p>{html.escape(' '.join(tokens[i:i + words]))}</p>"
                   for i in range(0, len(tokens), words))


def _blurb(text: str, words: int = 35) -> str:
    return html.escape(" ".join(text.split()[:words]))


def _li(url: str, title: str) -> str:
    return f'<li><a href="{url}">{html.escape(title)}</a></li>'


def build_topic_hosts(root: Path, docs: Mapping[str, Sequence[Doc]], addresses: Sequence[str], port: int, *,
                      target: str, pages: int = 20, hub_sites: int = 6, hub_pages: int = 3,
                      target_share: float = 0.27, hidden: int = 3, stray_share: float = 0.1,
                      cross_share: float = 0.25, seed: int = 7) -> TopicHosts:
    """Write the web under `root` (one folder per address; links name `port`) and say what is where.
    `docs` holds the topics' documents and the hubs' ("hub"); each is used once."""
    rng = random.Random(seed)
    pools = {topic: list(texts) for topic, texts in docs.items()}
    for pool in pools.values():
        rng.shuffle(pool)

    def take(topic: str) -> Doc:
        if not pools[topic]:
            raise ValueError(f"not enough documents of {topic!r} for this web")
        doc = pools[topic].pop()
        web.texts.add(doc[1])
        return doc

    web = TopicHosts()
    base = {address: f"http://{address}:{port}" for address in addresses}
    portal, hubs, sites = addresses[0], list(addresses[1:1 + hub_sites]), list(addresses[1 + hub_sites:])
    others = sorted(t for t in docs if t not in (target, HUB))
    n_target = max(hidden + 1, round(len(sites) * target_share))
    topics = [target] * n_target + [others[i % len(others)] for i in range(len(sites) - n_target)]
    rng.shuffle(topics)
    web.sites = {portal: HOME, **dict.fromkeys(hubs, HUB), **dict(zip(sites, topics, strict=True))}
    web.hidden = sorted(rng.sample([s for s in sites if web.sites[s] == target], hidden))
    web.seed = base[portal] + "/"
    visible = [s for s in sites if s not in web.hidden]

    def write(address: str, path: str, text: str, topic: str) -> None:
        file = root / address / path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
        web.labels[base[address] + ("/" if path == "/index.html" else path)] = topic

    # Each topic site's pages first (their titles are what other pages' links show).
    site_docs: dict[str, list[tuple[str, Doc]]] = {}
    for site in sites:
        own = web.sites[site]
        site_docs[site] = []
        for _ in range(pages):
            strays = [t for t in docs if t not in (own, HUB)]
            topic = own if rng.random() >= stray_share else rng.choice(strays)
            site_docs[site].append((topic, take(topic)))
    by_topic = {t: [s for s in visible if web.sites[s] == t] for t in set(topics)}

    def see_also(site: str) -> str:
        own = web.sites[site]
        same = [s for s in by_topic.get(own, []) if s != site]
        pool = same if same and rng.random() < 0.7 else [s for s in visible if s != site]
        other = rng.choice(pool)
        j = rng.randrange(pages)
        return (f"<h2>See also</h2><ul>{_li(f'{base[other]}/p{j}.html', site_docs[other][j][1][0])}</ul>")

    for site in sites:
        own, entries = web.sites[site], site_docs[site]
        urls = [f"/p{i}.html" for i in range(pages)]
        items = "".join(_li(u, doc[0]) for u, (_, doc) in zip(urls, entries, strict=True))
        intro = entries[0][1]
        write(site, "/index.html", _page(f"{intro[0]}: contents",
                                         f"<h1>{html.escape(intro[0])}</h1>{_paragraphs(intro[1][:500])}"
                                         f"<ul>{items}{_li('/private/notes.html', intro[0])}</ul>"), own)
        for i, (topic, (title, text)) in enumerate(entries):
            near = [(i + k) % pages for k in (1, 2, 3) if pages > k]
            nav = "".join(_li(urls[j], entries[j][1][0]) for j in near)
            related = see_also(site) if rng.random() < cross_share else ""
            body = (f'<div><a href="/">Contents</a></div><h1>{html.escape(title)}</h1>{_paragraphs(text)}'
                    f"<ul>{nav}</ul>{related}")
            write(site, urls[i], _page(title, body), topic)
        private = root / site / "private" / "notes.html"
        private.parent.mkdir(parents=True, exist_ok=True)
        private.write_text(_page(intro[0], _paragraphs(intro[1])), encoding="utf-8")

    # Hubs: each lists visible sites at random; the hidden sites only on the deeper hubs.
    listed: dict[str, list[str]] = {hub: [] for hub in hubs}
    deep = hubs[3:] or hubs[-1:]
    for n, site in enumerate(web.hidden):
        listed[deep[n % len(deep)]].append(site)
    for site in visible:
        listed[rng.choice(hubs)].append(site)
    for k, hub in enumerate(hubs):
        children = [hubs[c] for c in (2 * k + 1, 2 * k + 2) if c < len(hubs)]
        entries = listed[hub]
        rng.shuffle(entries)
        per_page = max(1, -(-len(entries) // hub_pages))
        for n in range(hub_pages):
            title, text = take(HUB)
            mine = entries[n * per_page:(n + 1) * per_page]
            listing = "".join(
                f'<p><a href="{base[s]}/">{html.escape(site_docs[s][0][1][0])}</a> '
                f"{_blurb(site_docs[s][0][1][1])}</p>" for s in mine)
            archive = "".join(_li(f"/notes{m}.html" if m else "/", f"Release notes, part {m + 1}")
                              for m in range(hub_pages) if m != n)
            more = "".join(f'<p><a href="{base[c]}/">More release notes</a></p>' for c in children)
            body = (f"<h1>{html.escape(title)}</h1>{_paragraphs(text)}{listing}<ul>{archive}</ul>{more}")
            write(hub, f"/notes{n}.html" if n else "/index.html", _page(title, body), HUB)

    # The portal: a third of each topic's visible sites (one at least), and the first hubs.
    shown = []
    for topic in sorted(by_topic):
        if by_topic[topic]:
            shown.extend(rng.sample(by_topic[topic], k=max(1, len(by_topic[topic]) // 3)))
    rng.shuffle(shown)
    links = "".join(_li(f"{base[s]}/", site_docs[s][0][1][0]) for s in shown)
    front = "".join(f'<p><a href="{base[h]}/">Release notes</a></p>' for h in hubs[:1])
    write(portal, "/index.html", _page("Documentation", f"<h1>Documentation</h1><ul>{links}</ul>{front}"),
          HOME)
    for address in addresses:
        (root / address).mkdir(parents=True, exist_ok=True)
        (root / address / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n", encoding="utf-8")
    return web


def split_docs(docs: Mapping[str, Sequence[Doc]], parts: int) -> list[dict[str, list[Doc]]]:
    """The documents dealt into `parts` disjoint sets (each topic's, in turn): the text of two webs,
    or of a web and the focus file's examples."""
    out: list[dict[str, list[Doc]]] = [{} for _ in range(parts)]
    for topic, texts in docs.items():
        for n in range(parts):
            out[n][topic] = list(texts[n::parts])
    return out

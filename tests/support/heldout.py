"""A held-out web for the crawl cycle's acceptance test: several hosts, pages reachable only through a
sitemap (named in robots.txt), exact duplicates (byte-identical copies at other URLs) and near
duplicates (the same text with a few words changed), and what a crawl of it must find.

Pages carry WORDS words drawn from a large vocabulary, so distinct pages are far apart in SimHash; a
near duplicate differs from its original in one word, which keeps their SimHashes within a Hamming
distance of 3 for ~98% of such pairs (batch/simhash.py's 2-word shingles; two words changed: ~93%).
Serve it with `NginxServer(root, hosts, port)`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

WORDS = 1000  # words a page; a near duplicate differs in one (a date, a counter: the usual case)
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po", "qua", "dre", "fi", "gu", "ha")


@dataclass(frozen=True, slots=True)
class HeldOutWeb:
    """What was written, and what a crawl of it must find."""

    hosts: tuple[str, ...]
    port: int
    seeds: tuple[str, ...]
    linked: frozenset[str]  # pages reachable by links from the seeds
    sitemap_only: frozenset[str]  # pages no page links to, listed in their host's sitemap
    duplicates: tuple[frozenset[str], ...]  # groups of exact or near duplicate pages (each >= 2 pages)
    links: dict[str, tuple[str, ...]]  # page URL -> absolute outlinks

    @property
    def pages(self) -> frozenset[str]:
        """Every page a complete crawl fetches."""
        return self.linked | self.sitemap_only


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _html(title: str, words: list[str], links: list[str]) -> str:
    anchors = "".join(f'<li><a href="{link}">{link.rsplit("/", 1)[-1]}</a></li>' for link in links)
    paragraphs = "".join(f"<p>{' '.join(words[i:i + 50])}</p>" for i in range(0, len(words), 50))
    return (f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"{paragraphs}<ul>{anchors}</ul></body></html>\n")


def write_heldout_web(root: Path, hosts: list[str], port: int, *, pages_per_host: int = 24,
                      sitemap_only_per_host: int = 3, exact_copies: int = 10, near_copies: int = 10,
                      seed: int = 13) -> HeldOutWeb:
    """Write the web under `root/<host>/` and return what a crawl from the first host must find."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng, 5000)
    base = {h: f"http://{h}:{port}" for h in hosts}
    texts: dict[str, list[str]] = {}
    links: dict[str, tuple[str, ...]] = {}
    files: dict[str, str] = {}
    linked: set[str] = set()
    sitemap_only: set[str] = set()
    for h_index, host in enumerate(hosts):
        names = ["/"] + [f"/p{i}.html" for i in range(1, pages_per_host)]
        urls = [base[host] + name for name in names]
        nxt = base[hosts[(h_index + 1) % len(hosts)]] + "/"
        for i, url in enumerate(urls):
            out = [urls[(i + 1) % len(urls)], *rng.sample(urls, 3)]
            if i == 0:
                out.append(nxt)
            if rng.random() < 0.3:
                other = hosts[rng.randrange(len(hosts))]
                out.append(base[other] + f"/p{rng.randrange(1, pages_per_host)}.html")
            links[url] = tuple(dict.fromkeys(out))
            texts[url] = rng.choices(vocabulary, k=WORDS)
            linked.add(url)
        for j in range(sitemap_only_per_host):
            url = f"{base[host]}/hidden/s{j}.html"
            links[url] = (urls[0],)
            texts[url] = rng.choices(vocabulary, k=WORDS)
            sitemap_only.add(url)
    for url in links:
        files[url] = _html(url.rsplit("/", 1)[-1] or "home", texts[url], list(links[url]))

    # Duplicates: copies of linked pages at new URLs, linked from their host's front page.
    groups: list[frozenset[str]] = []
    inner = sorted(u for u in linked if not u.endswith(f":{port}/"))  # front pages get rewritten below
    originals = rng.sample(inner, exact_copies + near_copies)
    front_extra: dict[str, list[str]] = {}
    for n, original in enumerate(originals):
        host_base = original.rsplit("/", 1)[0]
        copy = f"{host_base}/copy/c{n}.html"
        if n < exact_copies:
            files[copy] = files[original]  # byte for byte: the same content signature
        else:
            words = list(texts[original])
            words[rng.randrange(len(words))] = rng.choice(vocabulary)  # one word of WORDS changed
            files[copy] = _html(original.rsplit("/", 1)[-1], words, list(links[original]))
        links[copy] = links[original]
        linked.add(copy)
        front_extra.setdefault(host_base + "/", []).append(copy)
        groups.append(frozenset({original, copy}))
    for front, copies in front_extra.items():
        links[front] = links[front] + tuple(copies)
        files[front] = _html("home", texts[front], list(links[front]))

    for url, html in files.items():
        host, path = url.split("/", 3)[2].split(":")[0], "/" + url.split("/", 3)[3]
        target = root / host / ("index.html" if path == "/" else path.lstrip("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    for host in hosts:
        hidden = sorted(u for u in sitemap_only if u.startswith(base[host] + "/"))
        entries = "".join(f"<url><loc>{u}</loc><lastmod>2026-11-0{i + 1}</lastmod></url>"
                          for i, u in enumerate(hidden))
        (root / host / "sitemap.xml").write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>\n')
        robots = f"User-agent: *\nAllow: /\nSitemap: {base[host]}/sitemap.xml\n"
        (root / host / "robots.txt").write_text(robots)
    return HeldOutWeb(tuple(hosts), port, (base[hosts[0]] + "/",), frozenset(linked),
                      frozenset(sitemap_only), tuple(groups), links)

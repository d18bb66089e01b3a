"""Generate a static multi-host test web and know, by BFS over its link graph, what a crawler should find.

Layout: `root/<host>/index.html`, `root/<host>/pN.html`, `root/<host><disallow>pN.html` (disallowed by
that host's robots.txt), `root/<host>/robots.txt`. Same-host links are root-relative (`/p3.html`),
cross-host links absolute (`http://<ip>:<port>/p3.html`), so the files suit NginxServer's layout.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """What was generated, and what a polite crawler starting from `seeds` must and must not fetch."""

    root: Path
    hosts: tuple[str, ...]
    port: int
    seeds: tuple[str, ...]
    pages: frozenset[str]  # every generated HTML page, reachable or not
    links: dict[str, tuple[str, ...]]  # page URL -> absolute outlinks, in document order
    reachable: frozenset[str]  # allowed pages reachable from the seeds (seeds included)
    disallowed: frozenset[str]  # disallowed URLs linked from reachable pages (never to be fetched)
    missing: frozenset[str]  # broken links (404) found on reachable pages
    robots: frozenset[str]  # each host's robots.txt URL

    def urls_on(self, host: str, urls: frozenset[str]) -> frozenset[str]:
        """The subset of `urls` on `host`."""
        prefix = f"http://{host}:{self.port}/"
        return frozenset(u for u in urls if u.startswith(prefix))


def _path_of(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def generate_site(
    root: Path,
    hosts: list[str],
    pages_per_host: int,
    links_per_page: int,
    seed: int,
    disallow: str = "/private/",
    *,
    port: int,
    private_fraction: float = 0.1,
    cross_host_fraction: float = 0.2,
    broken_per_host: int = 1,
    page_bytes: int = 0,
) -> SiteSpec:
    """Write the pages of `hosts` under `root` and return the spec a crawl result is checked against.

    `pages_per_host` counts every HTML page of a host (index included); about `private_fraction` of them
    live under `disallow`. `page_bytes` pads each page with text to roughly that size (0: small pages).
    """
    if pages_per_host < 1 or links_per_page < 0:
        raise ValueError("pages_per_host must be >= 1 and links_per_page >= 0")
    if not (disallow.startswith("/") and disallow.endswith("/") and len(disallow) > 2):
        raise ValueError("disallow must look like /name/")
    rng = random.Random(seed)
    n_private = min(pages_per_host - 1, round((pages_per_host - 1) * private_fraction))

    def base(host: str) -> str:
        return f"http://{host}:{port}"

    host_pages: dict[str, list[str]] = {}
    for host in hosts:
        paths = ["/"] + [f"/p{i}.html" for i in range(1, pages_per_host - n_private)]
        paths += [f"{disallow}p{i}.html" for i in range(pages_per_host - n_private, pages_per_host)]
        host_pages[host] = [base(host) + p for p in paths]
    broken = {host: [f"{base(host)}/missing-{i}.html" for i in range(broken_per_host)] for host in hosts}

    links: dict[str, tuple[str, ...]] = {}
    for host in hosts:
        others = [h for h in hosts if h != host]
        for n, url in enumerate(host_pages[host]):
            out: list[str] = []
            # A chain through the allowed pages keeps most of each host reachable; the random
            # links on top make the graph interesting (cycles, fan-in, cross-host hops).
            allowed = [u for u in host_pages[host] if disallow not in u]
            if disallow not in url and n + 1 < len(allowed):
                out.append(allowed[n + 1])
            for _ in range(links_per_page - len(out)):
                if others and rng.random() < cross_host_fraction:
                    out.append(rng.choice(host_pages[rng.choice(others)]))
                else:
                    out.append(rng.choice(host_pages[host]))
            links[url] = tuple(out)
        # Make sure the disallowed area and the broken links are linked from somewhere reachable.
        front = host_pages[host][0]
        extra = [u for u in host_pages[host] if disallow in u][:1] + broken[host]
        links[front] = links[front] + tuple(extra)
    # The first host's front page links every other host's front page, so all hosts are in play.
    first = host_pages[hosts[0]][0]
    links[first] = links[first] + tuple(host_pages[h][0] for h in hosts[1:])

    for host in hosts:
        directory = root / host
        (directory / disallow.strip("/")).mkdir(parents=True, exist_ok=True)
        (directory / "robots.txt").write_text(f"User-agent: *\nDisallow: {disallow}\n", encoding="utf-8")
        for url in host_pages[host]:
            path = _path_of(url)
            file = directory / ("index.html" if path == "/" else path.lstrip("/"))
            file.write_text(_page_html(url, host, port, links[url], rng, page_bytes), encoding="utf-8")

    seeds = (host_pages[hosts[0]][0],)
    reachable, disallowed, missing = reachable_from(seeds, links, disallow, frozenset(links))
    return SiteSpec(
        root=root,
        hosts=tuple(hosts),
        port=port,
        seeds=seeds,
        pages=frozenset(links),
        links=links,
        reachable=reachable,
        disallowed=disallowed,
        missing=missing,
        robots=frozenset(f"{base(h)}/robots.txt" for h in hosts),
    )


_WORDS = ("orchard", "spider", "silk", "web", "crawler", "frontier", "harvest", "apple", "pear", "plum")


def _page_html(
    url: str, host: str, port: int, outlinks: tuple[str, ...], rng: random.Random, page_bytes: int
) -> str:
    items = []
    for target in outlinks:
        same_host = target.startswith(f"http://{host}:{port}/")
        href = _path_of(target) if same_host else target
        items.append(f'<li><a href="{href}">{" ".join(rng.choices(_WORDS, k=3))}</a></li>')
    text = " ".join(rng.choices(_WORDS, k=40))
    filler = ""
    if page_bytes > 0:
        need = max(0, page_bytes - 400 - sum(len(i) for i in items))
        words: list[str] = []
        size = 0
        while size < need:
            word = rng.choice(_WORDS)
            words.append(word)
            size += len(word) + 1
        filler = f"<p>{' '.join(words)}</p>\n"
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{url}</title>\n'
        f"</head>\n<body>\n<h1>{_path_of(url)} on {host}</h1>\n<p>{text}</p>\n{filler}"
        f"<ul>\n{chr(10).join(items)}\n</ul>\n</body>\n</html>\n"
    )


def reachable_from(
    seeds: tuple[str, ...], links: dict[str, tuple[str, ...]], disallow: str, pages: frozenset[str]
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Allowed reachable pages, disallowed linked URLs and missing linked URLs, from the seeds."""
    seen: set[str] = set(seeds)
    queue = deque(seeds)
    reachable: set[str] = set()
    disallowed: set[str] = set()
    missing: set[str] = set()
    while queue:
        url = queue.popleft()
        if _path_of(url).startswith(disallow):
            disallowed.add(url)
            continue
        if url not in pages:
            missing.add(url)
            continue
        reachable.add(url)
        for target in links[url]:
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return frozenset(reachable), frozenset(disallowed), frozenset(missing)

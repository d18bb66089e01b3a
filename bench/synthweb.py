"""A synthetic web for benchmarks: N hosts x M pages on loopback addresses, written to disk for nginx.

Shape, as issue 3 asks: page sizes log-normal around 20 KB; 20-40 links a page, ~80% to the same
host with a heavy-tailed in-degree (a few pages are linked from everywhere, most from few places),
~20% to other hosts; each host's robots.txt disallows /private/, which some pages link to. Every
host's pages form a chain as well, so the whole web is reachable from the first host's front page.
Serve it with `NginxServer(root, hosts, port, by_address=True)`.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from tests.support.sitegen import SiteSpec, reachable_from

DISALLOW = "/private/"
_WORDS = ("orchard", "spider", "silk", "web", "crawler", "frontier", "harvest", "apple", "pear",
          "plum", "lantern", "meadow", "copper", "river", "thistle", "quarry")


def host_addresses(count: int, prefix: str = "127.20") -> list[str]:
    """`count` distinct loopback addresses, `prefix`.y.z with z in 1..250."""
    return [f"{prefix}.{i // 250}.{i % 250 + 1}" for i in range(count)]


def _heavy_tailed_index(rng: random.Random, n: int) -> int:
    # Pareto-like rank: page 0 gets the most links, the tail gets few.
    return min(n - 1, int(n * rng.random() ** 3))


def generate_web(root: Path, hosts: list[str], pages_per_host: int, *, port: int, seed: int = 1,
                 median_bytes: int = 20_000, private_pages: int = 5, host_skew: bool = False) -> SiteSpec:
    """Write the web under `root/<host>/` and return what a polite crawl from the seed must find.

    With `host_skew`, a link to another host picks it heavy-tailed as it picks pages (the first
    hosts get most of them: a few sites matter more), instead of uniformly."""
    if pages_per_host < 2:
        raise ValueError("pages_per_host must be at least 2")
    rng = random.Random(seed)
    base = {h: f"http://{h}:{port}" for h in hosts}
    paths = ["/"] + [f"/p{i}.html" for i in range(1, pages_per_host)]
    private = [f"{DISALLOW}q{i}.html" for i in range(private_pages)]
    links: dict[str, tuple[str, ...]] = {}
    bodies: dict[str, str] = {}
    for h_index, host in enumerate(hosts):
        for n, path in enumerate(paths):
            out = [base[host] + paths[(n + 1) % len(paths)]]  # the chain keeps every page reachable
            for _ in range(rng.randint(20, 40) - 1):
                if len(hosts) > 1 and rng.random() < 0.2:
                    other = (hosts[_heavy_tailed_index(rng, len(hosts))] if host_skew
                             else hosts[(h_index + 1 + rng.randrange(len(hosts) - 1)) % len(hosts)])
                    out.append(base[other] + paths[_heavy_tailed_index(rng, len(paths))])
                elif rng.random() < 0.02:
                    out.append(base[host] + rng.choice(private))
                else:
                    out.append(base[host] + paths[_heavy_tailed_index(rng, len(paths))])
            url = base[host] + path
            links[url] = tuple(out)
            size = int(min(200_000, max(2_000, rng.lognormvariate(math.log(median_bytes), 0.5))))
            bodies[url] = _page(url, host, base[host], out, rng, size)
        if h_index + 1 < len(hosts):  # the front pages chain the hosts together
            front = base[host] + "/"
            links[front] = links[front] + (base[hosts[h_index + 1]] + "/",)
            bodies[front] = _page(front, host, base[host], list(links[front]), rng, 20_000)
    for host in hosts:
        directory = root / host
        (directory / DISALLOW.strip("/")).mkdir(parents=True, exist_ok=True)
        (directory / "robots.txt").write_text(f"User-agent: *\nDisallow: {DISALLOW}\n")
        for path in paths:
            name = "index.html" if path == "/" else path.lstrip("/")
            (directory / name).write_text(bodies[base[host] + path])
        for path in private:
            (directory / path.lstrip("/")).write_text("<html><body>private</body></html>\n")
    seeds = (base[hosts[0]] + "/",)
    reachable, disallowed, missing = reachable_from(seeds, links, DISALLOW, frozenset(links))
    return SiteSpec(root=root, hosts=tuple(hosts), port=port, seeds=seeds, pages=frozenset(links),
                    links=links, reachable=reachable, disallowed=disallowed, missing=missing,
                    robots=frozenset(f"{base[h]}/robots.txt" for h in hosts))


def _page(url: str, host: str, origin: str, outlinks: list[str], rng: random.Random, size: int) -> str:
    items = []
    for target in outlinks:
        href = target[len(origin):] if target.startswith(origin + "/") else target
        items.append(f'<li><a href="{href}">{" ".join(rng.choices(_WORDS, k=3))}</a></li>')
    head = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{url}</title>\n'
            f"</head>\n<body>\n<h1>{url[len(origin):]} on {host}</h1>\n")
    tail = "<ul>\n" + "\n".join(items) + "\n</ul>\n</body>\n</html>\n"
    words: list[str] = []
    need = size - len(head) - len(tail)
    while need > 0:
        paragraph = " ".join(rng.choices(_WORDS, k=60))
        words.append(f"<p>{paragraph}</p>")
        need -= len(paragraph) + 8
    return head + "\n".join(words) + "\n" + tail

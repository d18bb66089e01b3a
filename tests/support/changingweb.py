"""A web that changes between crawls, for the re-crawl tests and bench/changing_web.py.

A site per host folder: index.html linking to `pages` pages of ~`words` words each (the seed 003's
pages averaged 7 KB), robots.txt naming sitemap.xml, whose lastmods are the pages' mtimes. `change`
edits a share of the pages in three ways, as real pages change:

- "same_size": one word swapped for another of the same length (a typo fixed, a date rewritten):
  the size is kept, the blind spot of a size comparison;
- "minor": a short sentence added (the SimHash moves a few bits);
- "major": the text rewritten.

Every change sets the file's mtime `later` seconds ahead, so nginx's ETag and Last-Modified change
with it, and rewrites the sitemap's lastmods.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

WORDS = ("harvest", "spider", "silk", "orchard", "ladder", "pears", "plums", "apples", "cherries", "field",
         "notes", "weaver", "molting", "jumping", "season", "branch", "leaf", "root", "stone", "river",
         "morning", "evening", "basket", "crate", "market", "farmer", "ripe", "green", "golden", "quiet")
KINDS = ("same_size", "minor", "major")


def _text(rng: random.Random, words: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(words)]


def _page(title: str, words: list[str]) -> bytes:
    paragraphs = [" ".join(words[i : i + 60]) for i in range(0, len(words), 60)]
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>\n"
            f"{body}\n<p><a href=\"/\">home</a></p></body></html>\n").encode()


@dataclass
class ChangingSite:
    """One host's site under `root` (served as http://HOST:PORT/), and how to change it."""

    root: Path
    base: str  # http://HOST:PORT
    pages: int
    words: int = 1100
    seed: int = 3
    texts: dict[str, list[str]] = field(default_factory=dict)  # path -> its words

    def paths(self) -> list[str]:
        """The pages' paths (index.html aside)."""
        return [f"/p{i:04d}.html" for i in range(self.pages)]

    def write(self) -> None:
        """Write the site as it first is."""
        rng = random.Random(self.seed)
        self.root.mkdir(parents=True, exist_ok=True)
        for path in self.paths():
            self.texts[path] = _text(rng, self.words)
            (self.root / path.lstrip("/")).write_bytes(_page(path, self.texts[path]))
        links = "\n".join(f'<li><a href="{p}">{p}</a></li>' for p in self.paths())
        (self.root / "index.html").write_text(f"<!doctype html><title>index</title><ul>{links}</ul>\n")
        (self.root / "robots.txt").write_text(f"User-agent: *\nAllow: /\nSitemap: {self.base}/sitemap.xml\n")
        self.write_sitemap()

    def write_sitemap(self) -> None:
        """sitemap.xml with each page's mtime as its lastmod."""
        rows = []
        for path in self.paths():
            mtime = (self.root / path.lstrip("/")).stat().st_mtime
            stamp = datetime.fromtimestamp(int(mtime), UTC).isoformat()
            rows.append(f"<url><loc>{self.base}{path}</loc><lastmod>{stamp}</lastmod></url>")
        xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/'
               'sitemap/0.9">\n' + "\n".join(rows) + "\n</urlset>\n")
        (self.root / "sitemap.xml").write_text(xml)

    def change(self, share: float, *, at: float, seed: int = 5) -> dict[str, str]:
        """Change `share` of the pages (kinds in turn: same_size, minor, major), their mtimes set to
        `at`; the changed pages' URLs and how each changed."""
        rng = random.Random(seed)
        chosen = sorted(rng.sample(self.paths(), round(share * self.pages)))
        changed: dict[str, str] = {}
        for n, path in enumerate(chosen):
            kind = KINDS[n % len(KINDS)]
            words = list(self.texts[path])
            if kind == "same_size":
                i = rng.randrange(len(words))
                while not (twins := [w for w in WORDS if len(w) == len(words[i]) and w != words[i]]):
                    i = rng.randrange(len(words))
                words[i] = twins[0]
            elif kind == "minor":
                words[len(words) // 2 : len(words) // 2] = ["fresh", "river", "stone"]
            else:
                words = _text(rng, self.words)
            before = (self.root / path.lstrip("/")).stat().st_size
            self.texts[path] = words
            target = self.root / path.lstrip("/")
            target.write_bytes(_page(path, words))
            os.utime(target, (at, at))
            if kind == "same_size":
                assert target.stat().st_size == before
            changed[self.base + path] = kind
        self.write_sitemap()
        # Changed when its pages did: in the same second as the first crawl, with the same size, it
        # would keep nginx's ETag and Last-Modified (a 304 for a changed file; HTTP's own blind spot).
        os.utime(self.root / "sitemap.xml", (at, at))
        return changed

"""A topical web for focused crawling tests and benchmarks, written to disk for nginx.

From texts by topic (real documentation in bench/focus_study.py, made-up words in tests), one host:
- regions: each a folder of pages of one topic (topical locality), an index page listing them; a
  region's pages link to each other (a nav list) and now and then to another region's page;
- hub pages of an off-topic kind (release notes, say) that list regions with a blurb each (a list
  whose text is the region's topic: block scoring can see it on an off-topic page);
- the front page (the seed) links to some regions and to the first hubs; the other hubs are linked
  only from hubs, and some target regions only from those: reachable only through off-topic pages.
The labels (a page's topic) are returned to the caller alone: the crawler never sees them.
"""

from __future__ import annotations

import html
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Doc = tuple[str, str]  # (title, text)


@dataclass
class TopicWeb:
    """What was written: every page's path and topic, the regions, the hidden regions."""

    labels: dict[str, str] = field(default_factory=dict)  # path -> topic ("hub" for hubs, "home")
    regions: dict[str, str] = field(default_factory=dict)  # region folder -> topic
    hidden: list[str] = field(default_factory=list)  # regions reachable only through hub chains
    frames: list[str] = field(default_factory=list)  # framesets: path -> its frame page

    def relevant(self, target: str) -> set[str]:
        """The paths of the target topic's pages."""
        return {path for path, topic in self.labels.items() if topic == target}


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"</head><body>{body}</body></html>")


def _paragraphs(text: str, words: int = 60) -> str:
    tokens = text.split()
    return "".join(f"<p>{html.escape(' '.join(tokens[i:i + words]))}</p>"
                   for i in range(0, len(tokens), words))


def _blurb(text: str, words: int = 40) -> str:
    return html.escape(" ".join(text.split()[:words]))


def build_topic_web(root: Path, docs: Mapping[str, Sequence[Doc]], *, target: str, hub_docs: Sequence[Doc],
                    pages_per_region: int = 20, hidden_regions: int = 2, hubs: int = 8,
                    cross_link_share: float = 0.15, seed: int = 7, frames: bool = True) -> TopicWeb:
    """Write the web under `root` (nginx's document root of its one host) and say what is where."""
    rng = random.Random(seed)
    web = TopicWeb()
    regions: list[tuple[str, str, list[Doc]]] = []  # (folder, topic, docs)
    for topic in sorted(docs):
        pool = list(docs[topic])
        rng.shuffle(pool)
        for index in range(0, len(pool) - pages_per_region + 1, pages_per_region):
            folder = f"{topic}-{index // pages_per_region}"
            regions.append((folder, topic, pool[index:index + pages_per_region]))
    rng.shuffle(regions)
    target_regions = [r for r in regions if r[1] == target]
    hidden = {r[0] for r in target_regions[:hidden_regions]}
    web.hidden = sorted(hidden)
    root.mkdir(parents=True, exist_ok=True)

    def write(path: str, text: str, topic: str) -> None:
        file = root / path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
        web.labels[path] = topic

    first_page = {}
    for folder, topic, pages in regions:
        web.regions[folder] = topic
        paths = [f"/{folder}/p{i}.html" for i in range(len(pages))]
        first_page[folder] = (paths[0], pages[0])
        items = "".join(f'<li><a href="{p}">{html.escape(title)}</a></li>'
                        for p, (title, _) in zip(paths, pages, strict=True))
        # Each region's index also links to a page robots.txt forbids, of the region's topic: a
        # focused crawl must leave it alone however relevant it looks.
        private = f"/private/{folder}.html"
        head = html.escape(pages[0][0])
        index = (f"<h1>{head}</h1>{_paragraphs(pages[0][1][:600])}"
                 f'<ul>{items}<li><a href="{private}">{head}</a></li></ul>')
        write(f"/{folder}/index.html", _page(f"{pages[0][0]}: contents", index), topic)
        forbidden = root / private.lstrip("/")
        forbidden.parent.mkdir(parents=True, exist_ok=True)
        forbidden.write_text(_page(pages[0][0], _paragraphs(pages[0][1])), encoding="utf-8")
        for i, (title, text) in enumerate(pages):
            near = [paths[(i + k) % len(paths)] for k in (1, 2, 3) if len(paths) > k]
            nav = "".join(f'<li><a href="{p}">{html.escape(pages[paths.index(p)][0])}</a></li>' for p in near)
            related = ""
            if rng.random() < cross_link_share:
                other = rng.choice([r for r in regions if r[0] != folder and r[0] not in hidden])
                j = rng.randrange(len(other[2]))
                related = (f'<h2>See also</h2><ul><li><a href="/{other[0]}/p{j}.html">'
                           f"{html.escape(other[2][j][0])}</a></li></ul>")
            body = (f'<div><a href="/">Home</a> | <a href="/{folder}/index.html">Contents</a></div>'
                    f"<h1>{html.escape(title)}</h1>{_paragraphs(text)}<ul>{nav}</ul>{related}")
            write(paths[i], _page(title, body), topic)

    # Hubs: off-topic pages listing regions with blurbs; hub k links hubs 2k+1, 2k+2 (a tree).
    visible = [r for r in regions if r[0] not in hidden]
    hub_paths = [f"/hubs/h{k}.html" for k in range(hubs)]
    listed: dict[int, list[str]] = {k: [] for k in range(hubs)}
    deep_hubs = [k for k in range(hubs) if k >= 3] or [hubs - 1]
    for n, folder in enumerate(sorted(hidden)):  # hidden regions: only under deep hubs
        listed[deep_hubs[n % len(deep_hubs)]].append(folder)
    for folder, _, _ in visible:
        listed[rng.randrange(hubs)].append(folder)
    for k in range(hubs):
        title, text = hub_docs[k % len(hub_docs)]
        children = [hub_paths[c] for c in (2 * k + 1, 2 * k + 2) if c < hubs]
        entries = "".join(
            f'<li><a href="/{folder}/index.html">{html.escape(first_page[folder][1][0])}</a> '
            f"{_blurb(first_page[folder][1][1])}</li>" for folder in listed[k])
        more = "".join(f'<p><a href="{c}">More release notes</a></p>' for c in children)
        write(hub_paths[k], _page(title, f"<h1>{html.escape(title)}</h1>{_paragraphs(text)}"
                                         f"<ul>{entries}</ul>{more}"), "hub")

    # The front page: a few regions (not hidden ones) and the first hub; a frameset of a region.
    shown = []  # a third of each topic's visible regions (one at least), as a portal would list
    for topic in sorted({r[1] for r in visible}):
        folders = [r[0] for r in visible if r[1] == topic]
        shown.extend(rng.sample(folders, k=max(1, len(folders) // 3)))
    rng.shuffle(shown)
    links = "".join(f'<li><a href="/{folder}/index.html">{html.escape(first_page[folder][1][0])}</a></li>'
                    for folder in shown)
    frame_link = ""
    if frames and target_regions:
        framed = next((r[0] for r in target_regions if r[0] not in hidden), None)
        if framed is not None:
            write("/framed.html", f"<html><head><title>Frames</title></head><frameset cols=\"100%\">"
                                  f"<frame src=\"/{framed}/p1.html\"></frameset></html>", "home")
            web.frames.append("/framed.html")
            frame_link = '<p><a href="/framed.html">A framed section</a></p>'
    write("/index.html", _page("Documentation", f"<h1>Documentation</h1><ul>{links}</ul>"
                                               f'<p><a href="{hub_paths[0]}">Release notes</a></p>'
                                               f"{frame_link}"), "home")
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n", encoding="utf-8")
    return web


def made_up_docs(topics: Sequence[str], per_topic: int, *, seed: int = 3,
                 words: int = 120) -> dict[str, list[Doc]]:
    """Texts of made-up words, each topic its own vocabulary (plus words all topics share)."""
    rng = random.Random(seed)
    def word(prefix: str, i: int) -> str:  # letters only: the classifier's words have no digits
        return prefix + "".join("abcdefghijklmnopqrstuvwxyz"[int(d)] for d in str(i))

    shared = [word("common", i) for i in range(40)]
    out: dict[str, list[Doc]] = {}
    for topic in topics:
        vocab = [word(topic, i) for i in range(60)]
        docs = []
        for n in range(per_topic):
            text = " ".join(rng.choice(vocab) if rng.random() < 0.6 else rng.choice(shared)
                            for _ in range(words))
            docs.append((f"{topic} page {n}", text))
        out[topic] = docs
    return out

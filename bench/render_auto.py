"""How well `--render auto` decides which pages need a browser, on labelled static and script-built pages.

    python bench/render_auto.py [--per-kind 10]

The pages (tests/support/renderpages.py `auto_cases`): static documents (plain, with analytics
scripts, short, server-rendered into a mount node, a tracking-pixel `<noscript>`, a full article with
an empty comment-widget mount node) and script-built ones (an empty #root / #app / <app-root>, a
`<nav>` a script fills, a `<noscript>` asking for JavaScript, content from a script into #content,
links a script inserts under a long static text). Served by nginx and each rendered in Chromium
(harvestman's own browser transport), the truth is what the browser shows: a page needs rendering
when the rendered DOM holds links the HTML does not, or at least 20% more visible text. Printed: the
confusion matrix of `auto`'s decisions (fetch/shell.py on the HTML alone) against that truth,
accuracy, precision, recall, the cases it gets wrong by kind, and its CPU cost per page.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from selectolax.lexbor import LexborHTMLParser

from harvestman.fetch.browser import BrowserRenderer
from harvestman.fetch.shell import shell_reason
from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.config import CrawlConfig
from harvestman.model.records import HttpRequest
from harvestman.net.addrguard import AddressGuard
from tests.support.nginx import NginxServer, free_port
from tests.support.renderpages import auto_cases

HOST = "127.88.22.1"
_SPACE = re.compile(r"\s+")


def seen(html: str) -> tuple[set[str], int]:
    """The links and the visible text length a reader gets from `html`."""
    tree = LexborHTMLParser(html)
    links = {a.attributes.get("href") or "" for a in tree.css("a[href]")}
    body = tree.body
    if body is None:
        return links, 0
    for node in body.css("script, style, noscript, template"):
        node.decompose()
    return links, len(_SPACE.sub(" ", body.text(separator=" ")).strip())


async def truths(urls: list[str]) -> list[str]:
    """The rendered DOM of each URL, in order."""
    settings = CrawlConfig(render="always", render_concurrency=2, render_timeout=20.0).rendering
    guard = AddressGuard([f"{HOST}/32"])
    inner = CurlTransport(TransportSettings(user_agent="harvestman-bench", guard=guard))
    renderer = BrowserRenderer(settings, inner, user_agent="harvestman-bench")
    try:
        async def one(url: str) -> str:
            original = await inner.fetch(HttpRequest(url))
            return (await renderer.render(HttpRequest(url), original, "bench")).dom

        return list(await asyncio.gather(*(one(u) for u in urls)))
    finally:
        await renderer.aclose()
        await inner.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-kind", type=int, default=10)
    args = parser.parse_args()
    cases = auto_cases(args.per_kind)
    work = Path(tempfile.mkdtemp(prefix="render-auto-"))
    try:
        root = work / "www" / HOST
        root.mkdir(parents=True)
        for case in cases:
            (root / case.name).write_text(case.html)
        port = free_port(HOST)
        with NginxServer(work / "www", [HOST], port):
            doms = asyncio.run(truths([f"http://{HOST}:{port}/{c.name}" for c in cases]))
        started = time.process_time()
        decisions = [bool(shell_reason(c.html)) for c in cases]
        cpu = (time.process_time() - started) / len(cases)
        matrix: Counter[str] = Counter()
        wrong: Counter[str] = Counter()
        label_agrees = 0
        for case, dom, rendered in zip(cases, doms, decisions, strict=True):
            raw_links, raw_text = seen(case.html)
            links, text = seen(dom)
            needed = bool(links - raw_links) or text >= 1.2 * raw_text + 20
            label_agrees += needed == case.script_built
            matrix[("T" if rendered == needed else "F") + ("P" if rendered else "N")] += 1
            if rendered != needed:
                wrong[f"{case.kind} ({'rendered, not needed' if rendered else 'needed, not rendered'})"] += 1
        n = len(cases)
        tp, fp, fn, tn = matrix["TP"], matrix["FP"], matrix["FN"], matrix["TN"]
        print(f"{n} pages ({args.per_kind} of each of {n // args.per_kind} kinds); "
              "truth from the rendered DOM "
              f"(agrees with the kinds' labels on {label_agrees}/{n})")
        print(f"auto rendered & needed {tp}, rendered & not needed {fp}, needed & not rendered {fn}, "
              f"neither {tn}")
        print(f"accuracy {(tp + tn) / n:.3f}  precision {tp / max(1, tp + fp):.3f}  "
              f"recall {tp / max(1, tp + fn):.3f}")
        for what, count in sorted(wrong.items()):
            print(f"  wrong: {what}: {count}")
        size = sum(len(c.html) for c in cases) / n / 1024
        print(f"auto's judgement: {cpu * 1e6:.0f} µs CPU a page "
              f"(selectolax parse + signals; {size:.1f} KB pages)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

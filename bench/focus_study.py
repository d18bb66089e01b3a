"""Focused crawling study (seed 004, issue 15): harvest rates of bfs, hard, soft, soft+blocks and
rules+tunneling, live (nginx) and offline (`harvestman replay`), on a topical web of real text.

The web (tests/support/topicweb.py) is built from the Python 3.11 library documentation of Debian's
python3.11-doc (PSF licence; /usr/share/doc/python3.11/html): each reference page is cut into its
sections, the sections grouped into topics by module (networking, concurrency, text, numbers,
files, developer tools), pages of one topic kept together in regions; hub pages carry sections of the
"What's new" release notes and list regions with a blurb; some networking regions are linked only
from hubs that only hubs link to. The target topic is networking. The focus file's examples are
sections left out of the web; the labels (each page's topic) stay here, unseen by the crawler.

Printed: for each strategy, live and offline, the harvest rate (networking pages / pages fetched)
after 10%, 25% and 50% of the web's pages, and the recall of networking pages at 50%; the focus's CPU
a page (classifier; with blocks, the block split too); and an unfocused crawl's pages/s with this
tree and, given --main SRC, with another tree's code (the same run before and after).

    apt-get install python3.11-doc
    python bench/focus_study.py [--main OTHER_CHECKOUT/src]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.doccorpus import GROUPS
from tests.support.nginx import NginxServer, free_port
from tests.support.topicweb import Doc, TopicWeb, build_topic_web

DOCS = Path("/usr/share/doc/python3.11/html")
HOST = "127.62.0.1"
TRAINING_HOST = "127.62.0.2"  # another web of the same kind, for the rules' training crawl
TARGET = "net"
EXAMPLES_PER_TOPIC = 20
STRATEGIES = ("bfs", "hard", "soft", "soft+blocks", "rules+tunnel")


def _sections(path: Path, min_words: int = 60, max_words: int = 350) -> list[Doc]:
    """A documentation page's sections as (title, text): prose only (code blocks left out)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(path.read_text(encoding="utf-8", errors="replace"))
    docs = []
    for section in tree.css("section"):
        heading = section.css_first("h1, h2, h3, h4")
        title = heading.text(deep=True).replace("¶", "").strip() if heading else path.stem
        parts = []
        child = section.child
        while child is not None:
            if child.tag in ("p", "dl", "ul", "ol", "table", "blockquote"):
                parts.append(child.text(deep=True, separator=" "))
            child = child.next
        words = " ".join(parts).split()
        if len(words) >= min_words:
            docs.append((title, " ".join(words[:max_words])))
    return docs


def corpus() -> tuple[dict[str, list[Doc]], list[Doc]]:
    """Sections by topic, and release-note sections for hubs."""
    if not DOCS.is_dir():
        sys.exit(f"{DOCS} is missing: apt-get install python3.11-doc")
    by_topic: dict[str, list[Doc]] = {topic: [] for topic in GROUPS}
    for page in sorted((DOCS / "library").glob("*.html")):
        for topic, pattern in GROUPS.items():
            if re.match(pattern, page.stem):
                by_topic[topic].extend(_sections(page))
                break
    hubs = [doc for page in sorted((DOCS / "whatsnew").glob("3.*.html")) for doc in _sections(page)]
    return by_topic, hubs


def focus_file(folder: Path, examples: Path, mode: str, *, blocks: bool = False, tunnel: int = 3,
               training: str = "") -> Path:
    """A focus file: networking the target; the other topics and the release notes as classes of
    their own (a multi-topic classifier, as the seed's soft focus), not targets."""
    lines = [f'mode = "{mode}"', f"blocks = {str(blocks).lower()}", f"tunnel = {tunnel}", "threshold = 0.5"]
    if training:
        lines.append(f'training = "{training}"')
    for topic in [*GROUPS, "hub"]:
        lines += ["[[topic]]", f'name = "{topic}"', f'positive = ["{examples}/{topic}/*.txt"]']
        if topic != TARGET:
            lines.append("target = false")
    path = folder / f"focus-{mode}{'-blocks' if blocks else ''}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cli(*args: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, "-m", "harvestman.app.cli", *args], capture_output=True, text=True,
                          env=env, check=False, timeout=1800)
    if done.returncode != 0:
        sys.exit(f"harvestman {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done


def crawl(server: NginxServer, out: Path, *args: str, pythonpath: str = "", seed: str = "") -> float:
    """Crawl the web from its front page, one fetch at a time (so that the live crawl's order is the
    frontier's, as the replay's is; later options override); the elapsed wall time."""
    started = time.monotonic()
    cli("crawl", seed or server.url(HOST, "/"), "--out", str(out), "--allow-net", "127.62.0.0/16", "-q",
        "--workers", "1", "--concurrency", "1", "--per-host", "1", *args, pythonpath=pythonpath)
    return time.monotonic() - started


def live_order(out: Path) -> list[str]:
    """The paths a crawl fetched, in fetch order (redirects left out)."""
    target = out / "urls.jsonl"
    cli("export", str(out), "--output", str(target))
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    rows = [r for r in rows if r["http_status"] and not r["state"].startswith("redirect")]
    rows.sort(key=lambda r: r["fetch_time"])
    return ["/" + r["url"].split("/", 3)[3] for r in rows]


def replay_order(full: Path, out: Path, focus: Path | None, budget: int) -> list[str]:
    args = ["replay", str(full), "--budget", str(budget), "--out", str(out)]
    if focus is not None:
        args += ["--focus", str(focus)]
    cli(*args)
    lines = (out / "order.jsonl").read_text().splitlines()
    return ["/" + json.loads(line)["url"].split("/", 3)[3] for line in lines]


def rates(order: Sequence[str], web: TopicWeb, total_pages: int) -> list[float]:
    """Harvest rate at 10, 25 and 50% of the web's pages, then recall at 50%."""
    labels = {("/" if p == "/index.html" else p): t for p, t in web.labels.items()}
    relevant = web.relevant(TARGET)
    out = []
    for share in (0.10, 0.25, 0.50):
        n = int(total_pages * share)
        head = order[:n]
        out.append(sum(labels.get(p) == TARGET for p in head) / max(1, len(head)))
    n = int(total_pages * 0.5)
    out.append(len({p for p in order[:n] if p in relevant}) / len(relevant))
    return out


def cpu_per_page(full: Path, focus_path: Path) -> float:
    """Milliseconds of CPU a page for the focus's judgement (parse with text included), over the
    stored pages of the full crawl."""
    from harvestman.batch.focusreplay import read_crawl
    from harvestman.crawl.focusfile import read_focus_file, train_focus
    from harvestman.crawl.pagelinks import outlinks
    from harvestman.model.records import CrawledPage, FetchResult
    from harvestman.policy.scope import Scope

    stored = read_crawl(full)
    focus = train_focus(read_focus_file(focus_path))
    scope = Scope(stored.seeds)
    pages = list(stored.pages.items())[:400]
    follow: dict[str, tuple[str, str] | None] = {}
    parsed_pages = []
    for url, (ctype, text) in pages:
        result = FetchResult(url, url, status=200, content_type=ctype, text=text, body=text.encode())
        parsed, hosts = outlinks(result, 1, stored.config.links, scope, follow, with_text=True)
        parsed_pages.append((CrawledPage(result, parsed, 1), hosts))
    started = time.process_time()
    for page, hosts in parsed_pages:
        focus.assess(page, 0.5, hosts, follow)
    return (time.process_time() - started) / len(parsed_pages) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages-per-region", type=int, default=20)
    parser.add_argument("--main", default="", help="another tree's src/ for the unfocused pages/s")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    by_topic, hub_docs = corpus()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="focus-study-"))
    examples = work / "examples"
    web_docs: dict[str, list[Doc]] = {}
    for topic, docs in [*by_topic.items(), ("hub", hub_docs)]:
        docs = list(docs)
        rng.shuffle(docs)
        (examples / topic).mkdir(parents=True)
        for n, (_, text) in enumerate(docs[:EXAMPLES_PER_TOPIC]):
            (examples / topic / f"{n}.txt").write_text(text, encoding="utf-8")
        web_docs[topic] = docs[EXAMPLES_PER_TOPIC:]
    hubs = web_docs.pop("hub")
    port = free_port(HOST)
    web = build_topic_web(work / "site" / HOST, web_docs, target=TARGET, hub_docs=hubs,
                          pages_per_region=args.pages_per_region, hidden_regions=3, hubs=15, seed=args.seed)
    # The rules are learnt from a crawl of another web: the same kinds of pages, arranged anew.
    build_topic_web(work / "site" / TRAINING_HOST, web_docs, target=TARGET, hub_docs=hubs,
                    pages_per_region=args.pages_per_region, hidden_regions=3, hubs=15, seed=args.seed + 100)
    total = len(web.labels)
    relevant = len(web.relevant(TARGET))
    print(f"web: {total} pages, {len(web.regions)} regions, {relevant} networking pages "
          f"({relevant / total:.0%}), hidden networking regions {len(web.hidden)}: {', '.join(web.hidden)}")
    budget = total // 2
    results: dict[str, dict[str, list[float]]] = {}
    with NginxServer(work / "site", [HOST, TRAINING_HOST], port) as server:
        full = work / "full"
        crawl(server, full)  # unfocused, the whole web: the pages replays run over
        training = work / "training"
        crawl(server, training, seed=server.url(TRAINING_HOST, "/"))  # the other web, whole, for rules
        files = {
            "bfs": None,
            "hard": focus_file(work, examples, "hard"),
            "soft": focus_file(work, examples, "soft"),
            "soft+blocks": focus_file(work, examples, "soft", blocks=True),
            "rules+tunnel": focus_file(work, examples, "rules", tunnel=4, training=str(training)),
        }
        for name, path in files.items():
            out = work / f"live-{name}"
            extra = ("--focus", str(path)) if path else ()
            crawl(server, out, "--max-pages", str(budget), *extra)
            live = rates(live_order(out), web, total)
            offline = rates(replay_order(full, work / f"replay-{name}", path, budget), web, total)
            results[name] = {"live": live, "offline": offline}
        print(f"\nharvest rate (networking pages / pages fetched) at 10/25/50% of the {total} pages; "
              "recall at 50%")
        print(f"{'strategy':<14}{'run':<9}{'10%':>7}{'25%':>7}{'50%':>7}{'recall':>8}")
        for name, runs in results.items():
            for run, values in runs.items():
                shares = "".join(f"{v:>7.2f}" for v in values[:3])
                print(f"{name:<14}{run:<9}{shares}{values[3]:>8.2f}")
        bfs25 = results["bfs"]["live"][1]
        best_soft = max(results[n]["live"][1] for n in ("soft", "soft+blocks", "rules+tunnel"))
        print(f"\ngoal 1: soft or better at 25% >= 2x bfs: {best_soft:.2f} vs 2 x {bfs25:.2f} -> "
              f"{'met' if best_soft >= 2 * bfs25 else 'NOT met'}")
        recall = results["rules+tunnel"]["live"][3]
        print(f"goal 2: rules+tunnel recall within 50% of the pages >= 0.90: {recall:.2f} -> "
              f"{'met' if recall >= 0.9 else 'NOT met'}")
        for name in ("soft", "soft+blocks", "rules+tunnel"):
            path = files[name]
            assert path is not None
            print(f"focus CPU a page, {name}: {cpu_per_page(full, path):.2f} ms")
        speeds = []
        for label, tree in (("this tree", ""), ("--main", args.main)) if args.main else ():
            runs = []
            for attempt in range(3):
                out = work / f"speed-{label.strip('-').replace(' ', '')}-{attempt}"
                runs.append(total / crawl(server, out, "--concurrency", "16", "--per-host", "8",
                                          pythonpath=tree))
            speeds.append(f"{label}: {sorted(runs)[1]:.0f} pages/s (median of 3, wall time of the command)")
        if speeds:
            print("unfocused crawl of the whole web: " + "; ".join(speeds))
    print(f"\nwork folder: {work}")


if __name__ == "__main__":
    main()

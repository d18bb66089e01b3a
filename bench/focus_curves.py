"""Harvest curves of bfs, soft focus and rules with tunneling, live and replayed, on a topical web of
40 hosts built from real documentation text (issue 27).

Two webs (tests/support/topichosts.py) from Debian's documentation (tests/support/doccorpus.py:
the Python 3.11 library reference in topics, PostgreSQL 15's manual, git's manual pages; Python's
"What's new" notes for the hub sites), from disjoint texts and seeds: web A, on which the rules are
learnt (an unfocused crawl of it is the rules' training crawl), and web B, on which everything is
measured. The target topic is networking (Python's socket, ssl, http, urllib, email... modules);
some networking sites of each web are listed only on deep hub sites (tunneling's work). The focus
file's examples are a third set of texts, in neither web.

For each strategy, on web B: a live crawl (nginx, the crawl's own frontier) and `harvestman replay`
of the same focus file over an unfocused crawl of web B. The harvest rate (networking pages /
pages fetched, by the web's own labels, not the classifier's) and the recall of networking pages
against pages fetched. Written: focus_curves.csv and focus_curves.png in --out, and a table.

    apt-get install python3.11-doc postgresql-doc-15 git-doc
    pip install matplotlib
    python bench/focus_curves.py [--out docs] [--concurrency 1] [--per-host 1]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.doccorpus import doc_corpus
from tests.support.nginx import NginxServer, free_port
from tests.support.topichosts import TopicHosts, build_topic_hosts

TARGET = "net"
EXAMPLES = 20
HOSTS = 40
NET_A = "127.63.0"
NET_B = "127.63.1"
STRATEGIES = ("bfs", "soft", "rules")
SHARES = (0.10, 0.25, 0.50)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "harvestman.app.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), check=False, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"harvestman {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done


def focus_file(folder: Path, examples: Path, mode: str, *, tunnel: int, training: str = "") -> Path:
    """Networking the target; the other topics and the hubs' notes classes of their own."""
    lines = [f'mode = "{mode}"', f"tunnel = {tunnel}", "threshold = 0.5"]
    if training:
        lines.append(f'training = "{training}"')
    for topic in sorted(p.name for p in examples.iterdir()):
        lines += ["[[topic]]", f'name = "{topic}"', f'positive = ["{examples}/{topic}/*.txt"]']
        if topic != TARGET:
            lines.append("target = false")
    path = folder / f"focus-{mode}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def crawl(web: TopicHosts, out: Path, args: argparse.Namespace, *extra: str) -> float:
    started = time.monotonic()
    cli("crawl", web.seed, "--out", str(out), "--allow-net", "127.63.0.0/16", "--scope", "any", "-q",
        "--workers", "1",
        "--concurrency", str(args.concurrency), "--per-host", str(args.per_host), *extra)
    return time.monotonic() - started


def live_order(out: Path) -> list[str]:
    """The URLs a crawl fetched, in fetch order (redirects and robots.txt refusals left out)."""
    target = out / "urls.jsonl"
    cli("export", str(out), "--output", str(target))
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    rows = [r for r in rows if r["http_status"] and not r["state"].startswith("redirect")]
    rows.sort(key=lambda r: r["fetch_time"])
    return [r["url"] for r in rows]


def replay_order(full: Path, out: Path, focus: Path, budget: int, *, bfs: bool = False) -> list[str]:
    """The order `harvestman replay` fetches web B in; with `bfs`, every link followed (the focus only
    judges: replay refuses a bfs replay of an unfocused crawl with no focus to judge it)."""
    cli("replay", str(full), "--budget", str(budget), "--out", str(out), "--focus", str(focus),
        *(["--bfs"] if bfs else []))
    return [json.loads(line)["url"] for line in (out / "order.jsonl").read_text().splitlines()]


def curves(order: Sequence[str], web: TopicHosts, length: int) -> tuple[list[float], list[float]]:
    """Harvest rate and recall after each of the first `length` pages (the last value held on)."""
    relevant = web.relevant(TARGET)
    rate, recall, hits = [], [], 0
    for n in range(length):
        if n < len(order):
            hits += web.labels.get(order[n]) == TARGET
        fetched = min(n + 1, len(order)) or 1
        rate.append(hits / fetched)
        recall.append(hits / len(relevant))
    return rate, recall


def plot(path: Path, xs: list[int], series: dict[str, tuple[list[float], list[float]]], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"bfs": "tab:gray", "soft": "tab:blue", "rules": "tab:red"}
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, (rate, recall) in series.items():
        strategy, run = name.split(" ")
        style = "-" if run == "live" else "--"
        left.plot(xs, rate, style, color=colours[strategy], label=name)
        right.plot(xs, recall, style, color=colours[strategy], label=name)
    left.set(xlabel="pages fetched", ylabel="harvest rate (networking pages / pages fetched)",
             title="harvest rate", ylim=(0, 1))
    right.set(xlabel="pages fetched", ylabel="recall of networking pages", title="recall", ylim=(0, 1.02))
    for axis in (left, right):
        axis.axvline(len(xs) * 0.25, color="black", linewidth=0.5, linestyle=":")
        axis.axvline(len(xs) * 0.5, color="black", linewidth=0.5, linestyle=":")
        axis.grid(alpha=0.3)
    right.legend(loc="lower right", fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("."), help="where focus_curves.csv and .png go")
    parser.add_argument("--pages", type=int, default=18, help="pages a topic site")
    parser.add_argument("--tunnel", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=1, help="the live crawls' --concurrency")
    parser.add_argument("--per-host", type=int, default=1, help="the live crawls' --per-host")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    corpus = doc_corpus()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="focus-curves-"))
    examples = work / "examples"
    webs_docs: list[dict[str, list[tuple[str, str]]]] = [{}, {}]
    for topic, docs in corpus.items():
        docs = list(docs)
        rng.shuffle(docs)
        (examples / topic).mkdir(parents=True)
        for n, (_, text) in enumerate(docs[:EXAMPLES]):
            (examples / topic / f"{n}.txt").write_text(text, encoding="utf-8")
        rest = docs[EXAMPLES:]
        webs_docs[0][topic], webs_docs[1][topic] = rest[0::2], rest[1::2]
    addresses = [[f"{net}.{i}" for i in range(1, HOSTS + 1)] for net in (NET_A, NET_B)]
    port = free_port(addresses[0][0])
    web_a, web_b = (build_topic_hosts(work / "site", docs, hosts, port, target=TARGET, pages=args.pages,
                                      seed=args.seed + n)
                    for n, (docs, hosts) in enumerate(zip(webs_docs, addresses, strict=True)))
    (work / "labels-b.json").write_text(json.dumps(web_b.labels, indent=0), encoding="utf-8")
    total = len(web_b.labels)
    relevant = len(web_b.relevant(TARGET))
    print(f"web B (measured): {total} pages on {HOSTS} hosts, {relevant} networking pages "
          f"({relevant / total:.0%}),"
          f" hidden networking sites {len(web_b.hidden)}; web A (rules learnt): {len(web_a.labels)} pages")
    rows: dict[str, tuple[list[float], list[float]]] = {}
    with NginxServer(work / "site", addresses[0] + addresses[1], port):
        full_a, full_b = work / "full-a", work / "full-b"
        crawl(web_a, full_a, args)
        crawl(web_b, full_b, args)
        files = {"bfs": None,
                 "soft": focus_file(work, examples, "soft", tunnel=args.tunnel),
                 "rules": focus_file(work, examples, "rules", tunnel=args.tunnel, training=str(full_a))}
        for name, path in files.items():
            out = work / f"live-{name}"  # bfs: the unfocused crawl of web B is the live bfs
            seconds = crawl(web_b, out, args, "--focus", str(path)) if path else 0.0
            live = live_order(out if path else full_b)
            replayed = replay_order(full_b, work / f"replay-{name}", path or files["soft"], total,
                                    bfs=path is None)
            rows[f"{name} live"] = curves(live, web_b, total)
            rows[f"{name} replay"] = curves(replayed, web_b, total)
            print(f"  {name}: live crawl {len(live)} pages in {seconds:.1f} s; replay {len(replayed)} pages")
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = args.out / "focus_curves.csv", args.out / "focus_curves.png"
    with csv_path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["fetched", *(f"{n} {kind}" for n in rows for kind in ("harvest", "recall"))])
        for i in range(total):
            writer.writerow([i + 1, *(f"{rows[n][k][i]:.4f}" for n in rows for k in (0, 1))])
    plot(png_path, list(range(1, total + 1)), rows,
         f"Focused crawls of a {HOSTS}-host web of documentation text (target: networking, "
         f"{relevant} of {total} pages; rules learnt on another web)")
    print(f"\nharvest rate at 10/25/50% of the {total} pages, recall at 25/50%  (live --concurrency "
          f"{args.concurrency} --per-host {args.per_host})")
    print(f"{'strategy':<16}{'10%':>7}{'25%':>7}{'50%':>7}{'rec25':>8}{'rec50':>8}")
    for name, (rate, recall) in rows.items():
        at = [max(1, int(total * s)) - 1 for s in SHARES]
        shares = "".join(f"{rate[i]:>7.2f}" for i in at)
        print(f"{name:<16}{shares}{recall[at[1]]:>8.2f}{recall[at[2]]:>8.2f}")
    for name in ("soft", "rules"):
        for i, share in ((1, "25%"), (2, "50%")):
            at = max(1, int(total * SHARES[i])) - 1
            gap = rows[f"{name} live"][0][at] - rows[f"{name} replay"][0][at]
            print(f"{name} live - replay at {share}: {gap:+.2f}")
    print(f"\n{csv_path}, {png_path}; work folder: {work}")


if __name__ == "__main__":
    main()

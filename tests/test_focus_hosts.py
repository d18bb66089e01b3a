"""Focused crawls of a topical web of many hosts built from real documentation text
(tests/support/topichosts.py, texts from tests/data/focus_docs.json), served by nginx on loopback:
rules learnt on one web and measured on another, and a live crawl against its offline replay."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.crawlcheck import run_cli
from tests.support.doccorpus import read_corpus
from tests.support.nginx import NginxServer, free_port
from tests.support.topichosts import TopicHosts, build_topic_hosts, split_docs

DATA = Path(__file__).parent / "data" / "focus_docs.json"
TARGET = "db"
HOSTS = 12
EXAMPLES = 12  # texts of each topic for the focus file; the rest split between the two webs
NETS = ("127.64.0", "127.64.1")


@pytest.fixture(scope="module")
def webs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TopicHosts, TopicHosts, Path]]:
    """Web A (rules are learnt there), web B (measured there), and the focus file's examples: three
    disjoint sets of texts."""
    base = tmp_path_factory.mktemp("topichosts")
    corpus = read_corpus(DATA)
    examples = {topic: docs[:EXAMPLES] for topic, docs in corpus.items()}
    text_a, text_b = split_docs({topic: docs[EXAMPLES:] for topic, docs in corpus.items()}, 2)
    for topic, docs in examples.items():
        (base / "examples" / topic).mkdir(parents=True)
        for n, (_, text) in enumerate(docs):
            (base / "examples" / topic / f"{n}.txt").write_text(text, encoding="utf-8")
    addresses = [[f"{net}.{i}" for i in range(1, HOSTS + 1)] for net in NETS]
    port = free_port(addresses[0][0])
    web_a, web_b = (build_topic_hosts(base / "site", docs, hosts, port, target=TARGET, pages=8, hub_sites=3,
                                      hub_pages=2, target_share=0.25, hidden=1, seed=seed)
                    for docs, hosts, seed in ((text_a, addresses[0], 1), (text_b, addresses[1], 2)))
    with NginxServer(base / "site", addresses[0] + addresses[1], port):
        yield web_a, web_b, base / "examples"


@pytest.fixture(scope="module")
def full_b(webs: tuple[TopicHosts, TopicHosts, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unfocused crawl of the whole of web B, crawled once and only read and exported by the tests:
    the pages the replays run over and the breadth-first order focus is compared with."""
    out = tmp_path_factory.mktemp("web-b") / "full"
    _crawl(webs[1], out)
    return out


def _focus_file(folder: Path, examples: Path, mode: str, **extra: object) -> Path:
    lines = [f'mode = "{mode}"'] + [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    for topic in sorted(p.name for p in examples.iterdir()):
        lines += ["[[topic]]", f'name = "{topic}"', f'positive = ["{examples}/{topic}/*.txt"]']
        if topic != TARGET:
            lines.append("target = false")
    path = folder / f"focus-{mode}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _crawl(web: TopicHosts, out: Path, *args: str) -> None:
    done = run_cli("crawl", web.seed, "--out", str(out), "--allow-net", "127.64.0.0/16", "--scope", "any",
                   "-q", "--workers", "1", "--concurrency", "1", "--per-host", "1", *args)
    assert done.returncode == 0, done.stderr


def _fetched_in_order(out: Path) -> list[str]:
    target = out / "urls.jsonl"
    done = run_cli("export", str(out), "--output", str(target))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert all(r["http_status"] == 0 for r in rows if "/private/" in r["url"])  # robots.txt holds
    rows = [r for r in rows if r["http_status"] and not r["state"].startswith("redirect")]
    rows.sort(key=lambda r: r["fetch_time"])
    return [r["url"] for r in rows]


def _replayed(full: Path, focus: Path, budget: int, out: Path) -> list[str]:
    done = run_cli("replay", str(full), "--focus", str(focus), "--budget", str(budget), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return [json.loads(line)["url"] for line in (out / "order.jsonl").read_text().splitlines()]


def _rate(order: list[str], web: TopicHosts, n: int) -> float:
    return sum(web.labels.get(url) == TARGET for url in order[:n]) / n


@pytest.mark.timeout(900)
def test_rules_learnt_on_another_web_find_the_topic_through_hubs_and_replay_agrees(
        webs: tuple[TopicHosts, TopicHosts, Path], full_b: Path, tmp_path: Path) -> None:
    web_a, web_b, examples = webs
    total = len(web_b.labels)
    _crawl(web_a, tmp_path / "train")  # unfocused, the whole of web A: the rules' training crawl
    assert set(_fetched_in_order(full_b)) == set(web_b.labels)  # the pages the replays run over
    trained = _fetched_in_order(tmp_path / "train")
    # The rules never saw web B: the training crawl is web A and nothing else (the two webs' URLs differ
    # by address range, so this alone proves little), and no text of web B is on web A.
    assert set(trained) == set(web_a.labels)
    assert not web_a.texts & web_b.texts
    rules = _focus_file(tmp_path, examples, "rules", tunnel=3, training=str(tmp_path / "train"))
    _crawl(web_b, tmp_path / "rules", "--focus", str(rules))
    order = _fetched_in_order(tmp_path / "rules")
    relevant = web_b.relevant(TARGET)
    half = order[:total // 2]
    # The goal of 90% within half of the pages (79 pages, 13 of the target): all 13 here, the hidden
    # site's 7 among the first 21 fetched. (04988a4 lowered this to 80% and "all but one hidden page"
    # while changing the test web; on the web as it is now the rules reach every page, so the goal is back.)
    assert len(relevant & set(half)) >= 0.9 * len(relevant), (len(relevant & set(half)), len(relevant))
    hidden = {url for url in relevant if url.split("/")[2].split(":")[0] in web_b.hidden}
    assert hidden and hidden <= set(half)  # reached through hub sites only
    saved = json.loads((tmp_path / "rules" / "focus" / "focus.json").read_text())
    assert saved["rules"]["links"] > 0  # learnt from web A's link graph
    # The same strategy replayed over web B's stored pages, offline: the same harvest.
    offline = _replayed(full_b, rules, total, tmp_path / "replay-rules")
    for share in (0.25, 0.5):
        n = int(total * share)
        assert abs(_rate(order, web_b, n) - _rate(offline, web_b, n)) <= 0.1, share
    # Without tunneling a path stops at its first off-topic page: the hidden site stays unseen.
    blind = tmp_path / "blind"
    blind.mkdir()
    _crawl(web_b, tmp_path / "rules0", "--max-pages", str(total // 2),
           "--focus", str(_focus_file(blind, examples, "rules", tunnel=0, training=str(tmp_path / "train"))))
    assert not hidden & set(_fetched_in_order(tmp_path / "rules0"))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("concurrency", ["1", "100"])
def test_a_live_soft_crawl_harvests_what_its_replay_does(
        webs: tuple[TopicHosts, TopicHosts, Path], full_b: Path, tmp_path: Path, concurrency: str) -> None:
    # 100 fetches at once (2 a host) over a web of 79 pages: a focused crawl leases at most a tenth
    # of what it has queued, or it would lease nearly all it knows and crawl breadth-first.
    _, web_b, examples = webs
    total = len(web_b.labels)
    soft = _focus_file(tmp_path, examples, "soft")
    _crawl(web_b, tmp_path / "soft", "--max-pages", str(total // 2), "--focus", str(soft),
           "--concurrency", concurrency, "--per-host", "2")
    live = _fetched_in_order(tmp_path / "soft")
    offline = _replayed(full_b, soft, total // 2, tmp_path / "replay-soft")
    bfs = _fetched_in_order(full_b)
    for share in (0.25, 0.5):
        n = int(total * share)
        assert abs(_rate(live, web_b, n) - _rate(offline, web_b, n)) <= 0.1, share
    n = total // 4
    assert _rate(live, web_b, n) > 1.5 * _rate(bfs, web_b, n)  # and focus does better than bfs

"""Focused crawls over an nginx-served topical web (tests/support/topicweb.py): each mode, blocks,
tunneling, resume, the store and export columns, status, the harvest curve, offline replay, and
clear errors for bad focus files."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port
from tests.support.topicweb import TopicWeb, build_topic_web, made_up_docs

HOST = "127.61.0.1"
TOPICS = ("alpha", "beta", "gamma", "delta")
TARGET = "alpha"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NginxServer, TopicWeb, Path]]:
    base = tmp_path_factory.mktemp("topicweb")
    docs = made_up_docs((*TOPICS, "notes"), 48)
    # The web from the first 40 texts of each topic; the other 8 are the focus file's examples.
    web = build_topic_web(base / "site" / HOST, {t: docs[t][:40] for t in TOPICS}, target=TARGET,
                          hub_docs=docs["notes"][:6], pages_per_region=10, hidden_regions=2, hubs=6)
    examples = base / "examples"
    for topic in (*TOPICS, "notes"):
        (examples / topic).mkdir(parents=True)
        for n, (_, text) in enumerate(docs[topic][40:]):
            (examples / topic / f"{n}.txt").write_text(text, encoding="utf-8")
    with NginxServer(base / "site", [HOST], free_port(HOST)) as server:
        yield server, web, examples


@pytest.fixture(scope="module")
def unfocused(site: tuple[NginxServer, TopicWeb, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unfocused crawl of the whole web, read (never written) by the tests that need one: the
    breadth-first order the soft focus is compared with, the rules' training crawl, the replay's pages."""
    out = tmp_path_factory.mktemp("unfocused") / "full"
    _crawl(site[0], out)
    return out


def _focus_file(folder: Path, examples: Path, mode: str, **extra: object) -> Path:
    lines = [f'mode = "{mode}"'] + [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    lines += ["[[topic]]", f'name = "{TARGET}"', f'positive = ["{examples}/{TARGET}/*.txt"]',
              f'negative = ["{examples}/beta/*.txt", "{examples}/gamma/*.txt", "{examples}/delta/*.txt"]']
    if mode == "rules":  # the hub pages' kind as a class of its own, for the rules to use
        lines += ["[[topic]]", 'name = "notes"', f'positive = ["{examples}/notes/*.txt"]', "target = false"]
    path = folder / f"focus-{mode}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _crawl(server: NginxServer, out: Path, *args: str) -> None:
    done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", "127.61.0.0/16", "-q",
                   "--workers", "1", "--concurrency", "2", "--per-host", "1", *args)
    assert done.returncode == 0, done.stderr


def _records(out: Path) -> list[dict[str, object]]:
    target = out / "urls.jsonl"
    done = run_cli("export", str(out), "--output", str(target))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in target.read_text().splitlines()]


def _path(url: object) -> str:
    return "/" + str(url).split("/", 3)[3] if str(url).count("/") >= 3 else "/"


def _fetched_in_order(out: Path) -> list[str]:
    records = _records(out)
    # robots.txt holds in every mode: the forbidden pages are known, never fetched.
    assert all(r["http_status"] == 0 for r in records if "/private/" in str(r["url"]))
    rows = [r for r in records if r["state"] == "fetched" and r["content_type"] == "text/html"]
    rows.sort(key=lambda r: str(r["fetch_time"]))
    return [_path(r["url"]) for r in rows]


@pytest.mark.timeout(400)
def test_hard_focus_follows_only_on_topic_pages(site: tuple[NginxServer, TopicWeb, Path],
                                                tmp_path: Path) -> None:
    server, web, examples = site
    region = next(f for f, t in web.regions.items() if t == TARGET and f not in web.hidden)
    out = tmp_path / "hard"
    done = run_cli("crawl", server.url(HOST, f"/{region}/index.html"), "--out", str(out), "--allow-net",
                   "127.61.0.0/16", "-q", "--workers", "1", "--focus",
                   str(_focus_file(tmp_path, examples, "hard", threshold=0.4)))
    assert done.returncode == 0, done.stderr
    rows = {_path(r["url"]): r for r in _records(out)}
    pages = {p: r for p, r in rows.items() if r["state"] == "fetched" and r["content_type"] == "text/html"}
    # The whole region is found; every page was reached from an on-topic page.
    assert {p for p in pages if p.startswith(f"/{region}/")} == \
        {p for p in web.labels if p.startswith(f"/{region}/")}
    for path, row in rows.items():
        if row["parent"]:
            parent = rows[_path(row["parent"])]
            assert parent["topic"] == TARGET and float(parent["relevance"]) >= 0.4, (path, row["parent"])
    off_topic = [p for p, r in pages.items() if float(r["relevance"]) < 0.4]
    assert off_topic  # found (linked from on-topic pages), scored, and their links left alone
    # Off-topic pages are not stored without --keep-off-topic: the WARC holds on-topic pages alone.
    stored = _warc_urls(out)
    assert all(_path(u) not in off_topic for u in stored) and any(_path(u) in pages for u in stored)
    again = tmp_path / "hard-keep"
    done = run_cli("crawl", server.url(HOST, f"/{region}/index.html"), "--out", str(again), "--allow-net",
                   "127.61.0.0/16", "-q", "--workers", "1", "--keep-off-topic", "--focus",
                   str(_focus_file(tmp_path, examples, "hard", threshold=0.4)))
    assert done.returncode == 0, done.stderr
    assert {_path(u) for u in _warc_urls(again)} >= set(off_topic)


def _warc_urls(out: Path) -> set[str]:
    from warcio.archiveiterator import ArchiveIterator

    urls = set()
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    urls.add(record.rec_headers.get_header("WARC-Target-URI"))
    return urls


def _share(order: list[str], web: TopicWeb, n: int) -> float:
    head = order[:n]
    return sum(web.labels.get(p) == TARGET for p in head) / max(1, len(head))


@pytest.mark.timeout(400)
def test_soft_focus_fetches_the_topic_first_and_shows_it(site: tuple[NginxServer, TopicWeb, Path],
                                                          unfocused: Path, tmp_path: Path) -> None:
    server, web, examples = site
    budget = len(web.labels) // 2
    _crawl(server, tmp_path / "soft", "--max-pages", str(budget),
           "--focus", str(_focus_file(tmp_path, examples, "soft", blocks=True)))
    n = len(web.labels) // 4
    # The unfocused crawl's first n fetches are what a breadth-first crawl with this budget fetches
    # first (the budget only stops a crawl; n is below it), so the whole crawl serves as that one.
    bfs = _share(_fetched_in_order(unfocused), web, n)
    soft = _share(_fetched_in_order(tmp_path / "soft"), web, n)
    assert soft > 1.5 * bfs, (soft, bfs)
    # Scores in the store and the export; the harvest curve; status shows the topic.
    rows = [r for r in _records(tmp_path / "soft") if r["content_type"] == "text/html"]
    assert rows and all(r["topic"] == TARGET and 0.0 <= float(r["relevance"]) <= 1.0 for r in rows)
    curve = list(csv.DictReader((tmp_path / "soft" / "focus" / "harvest.csv").open()))
    assert len(curve) == len([r for r in _records(tmp_path / "soft") if r["http_status"]])
    assert (tmp_path / "soft" / "focus" / "harvest.png").read_bytes().startswith(b"\x89PNG")
    status = run_cli("status", str(tmp_path / "soft"), "--json")
    assert status.returncode == 0, status.stderr
    focus = json.loads(status.stdout)["focus"]
    assert focus["topics"][TARGET]["pages"] == len(rows) and focus["topics"][TARGET]["relevant"] > 0
    assert "pages scored by the focus" in run_cli("status", str(tmp_path / "soft")).stdout
    # An unfocused crawl's records have no score.
    assert all(r["topic"] == "" and r["relevance"] == 0 for r in _records(unfocused))


@pytest.mark.timeout(600)
def test_rules_tunnel_through_hubs_to_hidden_regions_and_replay_agrees(
        site: tuple[NginxServer, TopicWeb, Path], unfocused: Path, tmp_path: Path) -> None:
    server, web, examples = site
    full = unfocused  # unfocused, whole: the training crawl and the replay's pages
    hidden = {p for p in web.labels if p.split("/")[1] in web.hidden}
    assert hidden and hidden <= set(_fetched_in_order(full))
    budget = len(web.labels) // 2
    tunnel = _focus_file(tmp_path, examples, "rules", tunnel=3, training=str(full))
    _crawl(server, tmp_path / "rules", "--max-pages", str(budget), "--focus", str(tunnel))
    order = _fetched_in_order(tmp_path / "rules")
    relevant = web.relevant(TARGET)
    assert len(relevant & set(order)) >= 0.9 * len(relevant)
    assert hidden & set(order)  # reached through hub pages only
    saved = json.loads((tmp_path / "rules" / "focus" / "focus.json").read_text())
    assert saved["rules"]["links"] > 0  # learnt from the training crawl's link graph
    # Without tunneling, a path stops at its first off-topic page: the hubs' regions stay unseen.
    blind = tmp_path / "blind"
    blind.mkdir()
    _crawl(server, tmp_path / "rules0", "--max-pages", str(budget),
           "--focus", str(_focus_file(blind, examples, "rules", tunnel=0)))
    assert not hidden & set(_fetched_in_order(tmp_path / "rules0"))
    # Offline: the same strategy over the stored crawl, no network; its curve, order and recall.
    report = tmp_path / "replay"
    done = run_cli("replay", str(full), "--focus", str(tunnel), "--budget", str(budget),
                   "--out", str(report))
    assert done.returncode == 0, done.stderr
    offline = ["/" + json.loads(line)["url"].split("/", 3)[3] for line in (report / "order.jsonl").open()]
    assert len(offline) == budget
    assert len(relevant & set(offline)) >= 0.9 * len(relevant)
    summary = json.loads((report / "summary.json").read_text())
    assert summary["recall"] >= 0.8 and (report / "harvest.png").is_file()
    n = len(web.labels) // 4
    assert abs(_share(order, web, n) - _share(offline, web, n)) < 0.2  # live and offline agree


@pytest.mark.timeout(400)
def test_resume_keeps_the_saved_focus(site: tuple[NginxServer, TopicWeb, Path], tmp_path: Path) -> None:
    server, _, examples = site
    path = _focus_file(tmp_path, examples, "soft")
    _crawl(server, tmp_path / "out", "--max-pages", "5", "--focus", str(path))
    saved = (tmp_path / "out" / "focus" / "focus.json").read_text()
    weights = (tmp_path / "out" / "focus" / "weights.npz").read_bytes()
    path.write_text(path.read_text().replace('mode = "soft"', 'mode = "hard"'))  # changed meanwhile
    done = run_cli("crawl", "--out", str(tmp_path / "out"), "--resume", "--max-pages", "12", "-q",
                   "--allow-net", "127.61.0.0/16", "--workers", "1", "--focus", str(path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "focus" / "focus.json").read_text() == saved
    assert (tmp_path / "out" / "focus" / "weights.npz").read_bytes() == weights
    assert sum(1 for r in _records(tmp_path / "out") if r["topic"]) >= 8


@pytest.mark.parametrize(("content", "message"), [
    ("mode = 'soft'\n", "no [[topic]]"),
    ("mode = 'fuzzy'\n[[topic]]\nname='a'\npositive=['x']\n", "mode must be one of"),
    ("mode = [\n", "not valid TOML"),
    ("colour = 1\n[[topic]]\nname='a'\npositive=['x']\n", "unknown key"),
    ("[[topic]]\nname='a'\npositive=['nothing-here/*.txt']\n", "matches no file"),
    ("[[topic]]\nname='a'\npositive=['missing.txt']\n", "no such file"),
    ("[[topic]]\nname='a'\n", "no positive examples"),
    ("[[topic]]\nname='a'\npositive=['EX/alpha/*.txt']\n", "two classes"),
    ("threshold = 3\n[[topic]]\nname='a'\npositive=['EX/alpha/*.txt']\nnegative=['EX/beta/*.txt']\n",
     "threshold"),
])
def test_a_bad_focus_file_is_a_clear_error(site: tuple[NginxServer, TopicWeb, Path], tmp_path: Path,
                                           content: str, message: str) -> None:
    server, _, examples = site
    path = tmp_path / "focus.toml"
    path.write_text(content.replace("EX", str(examples)))
    done = run_cli("crawl", server.url(HOST, "/"), "--out", str(tmp_path / "out"), "-q",
                   "--allow-net", "127.61.0.0/16", "--focus", str(path))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    missing = run_cli("crawl", server.url(HOST, "/"), "--out", str(tmp_path / "o2"), "--focus",
                      str(tmp_path / "none.toml"))
    assert missing.returncode == 2 and "cannot read focus file" in missing.stderr

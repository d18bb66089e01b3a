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
    rows = [r for r in _records(out) if r["state"] == "fetched" and r["content_type"] == "text/html"]
    rows.sort(key=lambda r: str(r["fetch_time"]))
    return [_path(r["url"]) for r in rows]


def test_hard_focus_follows_only_on_topic_pages(site: tuple[NginxServer, TopicWeb, Path], tmp_path: Path) -> None:
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

"""The crawl cycle's acceptance test (issue 13), on a held-out web served by nginx: several hosts,
pages reachable only through a sitemap, exact and near duplicates.

`harvestman crawl --rounds` must fetch every reachable page within its rounds, keep to `--top-n` and
`--max-per-host` in every round, find the sitemap-only pages, mark the duplicates (precision and
recall >= 0.95), and store a PageRank equal, within 1e-6, to networkx's on the exported link graph.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import networkx as nx

from harvestman.batch import segments
from harvestman.model.records import UrlState
from tests.support.crawlcheck import consistent_records, run_cli
from tests.support.heldout import write_heldout_web
from tests.support.nginx import NginxServer, free_port

HOSTS = ["127.31.0.1", "127.31.0.2", "127.31.0.3", "127.31.0.4"]
TOP_N, PER_HOST, ROUNDS = 30, 10, 14
HELD = (UrlState.FETCHED, UrlState.DUPLICATE)  # a duplicate was fetched, then marked


def test_the_cycle_on_a_held_out_web(tmp_path: Path) -> None:
    port = free_port(HOSTS[0])
    web = write_heldout_web(tmp_path / "www", HOSTS, port)
    out = tmp_path / "crawl"
    with NginxServer(tmp_path / "www", HOSTS, port):
        done = run_cli("crawl", *web.seeds, "--out", str(out), "--rounds", str(ROUNDS), "--top-n", str(TOP_N),
                       "--max-per-host", str(PER_HOST), "--scope", "any", "--allow-net", "127.31.0.0/16",
                       "-q", timeout=300)
        links = run_cli("export", str(out), "--what", "links", "--output", str(tmp_path / "links.jsonl"))
    assert done.returncode == 0, done.stderr
    assert links.returncode == 0, links.stderr
    records = consistent_records(out)

    # Every reachable page, those only a sitemap lists included, within the rounds.
    missed = sorted(url for url in web.pages if url not in records or records[url].state not in HELD)
    assert not missed, missed
    assert web.sitemap_only <= {url for url, r in records.items() if r.state in HELD}

    # Each round's fetch list kept to --top-n and --max-per-host.
    ids = segments.segment_ids(out)
    assert 1 < len(ids) <= ROUNDS
    for name in ids:
        listed = list(segments.read_fetchlist(segments.find_segment(out, name)))
        assert 0 < len(listed) <= TOP_N, name
        assert max(Counter(r.host for r in listed).values()) <= PER_HOST, name

    # Duplicates: each group keeps one page, the others point at it.
    marked = {url: r.duplicate_of for url, r in records.items() if r.state == UrlState.DUPLICATE}
    group_of = {url: group for group in web.duplicates for url in group}
    right = sum(1 for url, kept in marked.items() if url in group_of and kept in group_of[url])
    wanted = sum(len(group) - 1 for group in web.duplicates)
    precision = right / len(marked) if marked else 0.0
    recall = right / wanted
    assert precision >= 0.95 and recall >= 0.95, (precision, recall, marked)

    # PageRank over the fetched pages and the links between them (distinct, followable, no self
    # links), from the exported graph, equals the stored scores.
    fetched = {url for url, r in records.items() if r.state in (*HELD, UrlState.NOT_MODIFIED)}
    graph = nx.DiGraph()
    graph.add_nodes_from(fetched)
    for line in (tmp_path / "links.jsonl").read_text().splitlines():
        edge = json.loads(line)
        if (edge["from_url"] in fetched and edge["to_url"] in fetched and not edge["nofollow"]
                and edge["from_url"] != edge["to_url"]):
            graph.add_edge(edge["from_url"], edge["to_url"])
    expected = nx.pagerank(graph, alpha=0.85, tol=1e-12, max_iter=1000)
    worst = max(abs(records[url].score - value) for url, value in expected.items())
    assert worst < 1e-6, worst

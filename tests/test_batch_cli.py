"""The batch commands on a real crawl: nginx serves a generated web with duplicate pages, harvestman
crawls it, then invertlinks, rank and dedup run on the crawl folder as a user would run them."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harvestman.model.records import UrlState
from harvestman.store.factory import open_store
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import generate_site

HOSTS = ["127.1.4.1", "127.1.4.2"]


def _add_duplicates(root: Path, host: str) -> list[str]:
    """Write an exact copy of the front page and two long pages one word apart, linked from the front
    page; returns their paths."""
    directory = root / host
    front = (directory / "index.html").read_text(encoding="utf-8")
    rng = random.Random(4)
    words = [f"word{rng.randrange(5000)}" for _ in range(1500)]
    near = list(words)
    near[800] = "different"
    for name, text in (("long.html", words), ("long2.html", near)):
        (directory / name).write_text(f"<html><head><title>{name}</title></head><body><p>{' '.join(text)}</p>"
                                      "<script>var x = 1;</script></body></html>", encoding="utf-8")
    links = '<a href="/copy.html">copy</a><a href="/long.html">long</a><a href="/long2.html">long 2</a>'
    front = front.replace("</body>", links + "</body>")
    (directory / "index.html").write_text(front, encoding="utf-8")
    (directory / "copy.html").write_text(front, encoding="utf-8")
    return ["/copy.html", "/long.html", "/long2.html"]


def test_invertlinks_rank_and_dedup_commands_on_a_crawled_site(tmp_path: Path) -> None:
    nx = pytest.importorskip("networkx")
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, 25, 5, seed=3, port=port)
    extra = [f"http://{HOSTS[0]}:{port}{p}" for p in _add_duplicates(tmp_path / "site", HOSTS[0])]
    front = spec.seeds[0]
    out = tmp_path / "out"
    with NginxServer(tmp_path / "site", HOSTS, port):
        done = run_cli("crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.1.0.0/16", "-q",
                       "--scope", "any", "--link-anchors", "--workers", "1")
    assert done.returncode == 0, done.stderr

    done = run_cli("invertlinks", str(out))
    assert done.returncode == 0, done.stderr
    assert "inlinks of" in done.stdout and (out / "linkdb" / "inlinks.parquet").is_file()
    inlinks = pq.read_table(out / "linkdb" / "inlinks.parquet").to_pylist()
    # The generated anchors are three words each; the copy's anchor is "copy".
    assert {"url": extra[0], "from_url": front, "anchor": "copy"} in [
        {k: r[k] for k in ("url", "from_url", "anchor")} for r in inlinks]

    done = run_cli("rank", str(out), "--algorithm", "pagerank")
    assert done.returncode == 0, done.stderr
    ranks = {r["url"]: r["score"] for r in pq.read_table(out / "ranks" / "pagerank.parquet").to_pylist()}
    fetched = set(spec.reachable) | set(extra)
    graph = nx.DiGraph()
    graph.add_nodes_from(fetched)
    links = dict(spec.links)
    links[front] = (*links[front], *extra)
    links[extra[0]] = links[front]  # the copy has the front page's links
    graph.add_edges_from((a, b) for a in fetched for b in links.get(a, ()) if b in fetched and a != b)
    expected = nx.pagerank(graph, tol=1e-13, max_iter=10_000)
    assert set(ranks) == fetched
    assert max(abs(ranks[u] - expected[u]) for u in fetched) < 1e-6

    done = run_cli("dedup", str(out), "--distance", "3")
    assert done.returncode == 0, done.stderr
    store = open_store(str(out / "crawl.db"), read_only=True)
    try:
        records = {r.url: r for r in store.records()}
        assert store.get_meta("score_source") == "pagerank"
    finally:
        store.close()
    # The front page outranks its copy, so the copy is the duplicate; the long pages are one word apart.
    assert records[extra[0]].state == UrlState.DUPLICATE and records[extra[0]].duplicate_of == front
    assert {records[extra[1]].state, records[extra[2]].state} == {UrlState.DUPLICATE, UrlState.FETCHED}
    assert sum(r.state == UrlState.DUPLICATE for r in records.values()) == 2
    assert records[front].score == pytest.approx(ranks[front]) and records[front].inlinks > 0

    bad = run_cli("rank", str(out), "--algorithm", "hits")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "hits" in bad.stderr
    bad = run_cli("dedup", str(tmp_path / "nothing"))
    assert bad.returncode == 2 and "holds no crawl" in bad.stderr

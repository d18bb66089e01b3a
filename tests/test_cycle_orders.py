"""Orders by score: generate --order opic|indegree|pagerank over the stored scores (and their
source), and the continuous crawl's opt-in online OPIC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvestman.batch.crawldir import load_config
from harvestman.batch.generate import SCORE_SOURCE_KEY, generate
from harvestman.batch.inject import inject
from harvestman.batch.seeds import parse_seed_lines
from harvestman.batch.segments import read_fetchlist
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.store.sqlite_store import SqliteStore
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import generate_site


def _crawl(tmp_path: Path) -> Path:
    """A crawl of nine injected URLs on three hosts, URL i with score i."""
    out = tmp_path / "out"
    lines = [f"http://h{i % 3}.test/p{i}\tscore={i}" for i in range(9)]
    inject(out, parse_seed_lines(lines), CrawlConfig(out_dir=out, scope="any"))
    return out


def test_generate_orders_by_opic_scores_and_by_a_rank_s_only_once_it_ran(tmp_path: Path) -> None:
    out = _crawl(tmp_path)
    cfg = load_config(out)
    seg = generate(out, cfg, top_n=4, order="opic")
    assert seg is not None
    assert [r.score for r in read_fetchlist(seg)] == [8.0, 7.0, 6.0, 5.0]
    with pytest.raises(ConfigError, match=r"run harvestman rank .* --algorithm pagerank first"):
        generate(out, cfg, top_n=4, order="pagerank")
    store = SqliteStore(out / "crawl.db", host_of=lambda u: u.split("/")[2])
    store.set_scores([(f"http://h{i % 3}.test/p{i}", 10.0 - i, i - 10.0) for i in range(9)])
    store.set_meta(SCORE_SOURCE_KEY, "pagerank")
    store.close()
    seg = generate(out, cfg, top_n=2, order="pagerank", max_per_host=1)
    assert seg is not None
    assert [r.url for r in read_fetchlist(seg)] == ["http://h0.test/p0", "http://h1.test/p1"]
    with pytest.raises(ConfigError, match="use --order pagerank"):
        generate(out, cfg, top_n=4, order="opic")
    with pytest.raises(ConfigError, match="--algorithm indegree first"):
        generate(out, cfg, top_n=4, order="indegree")


def test_the_continuous_crawl_s_opic_splits_a_page_s_score_over_its_new_links(tmp_path: Path) -> None:
    require_nginx()
    hosts = ["127.10.0.1"]
    port = free_port(hosts[0])
    spec = generate_site(tmp_path / "site", hosts, 8, 4, seed=2, port=port)
    out = tmp_path / "out"
    with NginxServer(tmp_path / "site", hosts, port):
        done = run_cli("crawl", *spec.seeds, "--out", str(out), "--allow-net", "127.10.0.0/16", "-q",
                       "--workers", "1", "--order", "opic", "--per-host", "1", "--concurrency", "1")
        assert done.returncode == 0, done.stderr
    done = run_cli("export", str(out), "--output", str(tmp_path / "urls.jsonl"))
    assert done.returncode == 0, done.stderr
    rows = {r["url"]: r for r in map(json.loads, (tmp_path / "urls.jsonl").read_text().splitlines())}
    seed = spec.seeds[0]
    assert rows[seed]["score"] == 1.0
    first = [u for u, r in rows.items() if r["parent"] == seed]
    followed = set(spec.links[seed])  # one host, scope host: every link of the page is followed
    assert first and all(rows[u]["score"] == pytest.approx(1.0 / len(followed)) for u in first)

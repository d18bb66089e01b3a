"""The crawl cycle step by step through the CLI, over an nginx-served site of two hosts: inject,
generate, fetch, parse, updatedb, readdb, and their refusals of bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harvestman.batch.segments import segment_ids, segments_dir
from tests.support.crawlcheck import run_cli, warc_responses
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

HOSTS = ["127.8.0.1", "127.8.0.2"]
NET = ("--allow-net", "127.8.0.0/16")


def _serve(tmp_path: Path, pages: int = 12) -> tuple[NginxServer, SiteSpec]:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, pages, 4, seed=11, port=port)
    return NginxServer(tmp_path / "site", HOSTS, port), spec


def ok(*args: str) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def refused(*args: str) -> str:
    """Run a command that must fail on bad input: exit status 2, one line, no traceback."""
    done = run_cli(*args)
    assert done.returncode == 2, (args, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harvestman: error: "), done.stderr
    return lines[0]


def _records(out: Path) -> dict[str, dict[str, object]]:
    ok("readdb", str(out), "--dump")
    rows = [json.loads(x) for x in (out / "readdb" / "crawldb.jsonl").read_text().splitlines()]
    return {str(r["url"]): r for r in rows}


def _generated(segment: Path) -> list[str]:
    return [json.loads(x)["url"] for x in (segment / "fetchlist.jsonl").read_text().splitlines()]


def test_inject_takes_scores_and_metadata_and_refuses_a_bad_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# the seeds\nhttp://a.test/\tscore=2.5\tlang=en\tsource=list\n\nb.test/x\n")
    assert "injected 2 new URLs" in ok("inject", str(out), "-i", str(seeds), "--scope", "any")
    rows = _records(out)
    assert rows["http://a.test/"]["score"] == 2.5
    assert rows["http://a.test/"]["metadata"] == {"lang": "en", "source": "list"}
    assert rows["http://b.test/x"]["score"] == 1.0 and rows["http://b.test/x"]["metadata"] is None
    # Injecting again: known URLs keep their score, metadata merges.
    assert "0 new URLs (1 known" in ok("inject", str(out), "http://a.test/\tscore=9\tlang=de")
    rows = _records(out)
    assert rows["http://a.test/"]["score"] == 2.5 and rows["http://a.test/"]["metadata"] == {
        "lang": "de", "source": "list"}
    bad = tmp_path / "bad.txt"
    bad.write_text("http://a.test/ok\nhttp://a.test/\tscore=high\n")
    assert f"{bad}:2" in refused("inject", str(out), "-i", str(bad))
    bad.write_text("http://a.test/\tnovalue\n")
    assert "key=value" in refused("inject", str(out), "-i", str(bad))
    assert "bad seed URL" in refused("inject", str(out), "ftp://x.test/")


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    assert "holds no crawl" in refused("generate", str(empty), "--top-n", "5")
    assert "holds no crawl" in refused("fetch", str(empty))
    assert "holds no crawl" in refused("readdb", str(empty), "--stats")
    out = tmp_path / "out"
    ok("inject", str(out), "http://a.test/")
    assert "--top-n must be at least 1" in refused("generate", str(out), "--top-n", "0")
    assert "no segment yet" in refused("fetch", str(out))
    assert "no segment 'nope'" in refused("updatedb", str(out), "nope")
    ok("generate", str(out), "--top-n", "5")
    assert "is not fetched yet" in refused("updatedb", str(out))
    assert "is not fetched yet" in refused("parse", str(out))
    assert "rank" in refused("generate", str(out), "--top-n", "5", "--order", "pagerank")
    assert "--rounds needs --top-n" in refused("crawl", "http://a.test/", "--out", str(out), "--rounds", "2")
    assert "run harvestman rank" in refused("crawl", "http://a.test/", "--out", str(tmp_path / "new"),
                                            "--order", "pagerank")


def test_steps_generate_capped_fetch_politely_parse_again_and_merge_with_opic(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path)
    out = tmp_path / "out"
    seed = spec.seeds[0]
    with server:
        ok("inject", str(out), *spec.seeds, *NET, "--scope", "any", "--workers", "1", "-q")
        ok("generate", str(out), "--top-n", "10")
        [first] = segment_ids(out)
        first_dir = segments_dir(out) / first
        assert _generated(first_dir) == [seed]
        assert "fetched segment" in ok("fetch", str(out), "-q")
        assert set(warc_responses(first_dir)) == {seed}  # WARC into the segment's folder
        merged = ok("updatedb", str(out), first)
        assert "1 page, 0 failed" in merged
        rows = _records(out)
        outlinks = set(spec.links[seed])
        assert rows[seed]["state"] == "fetched" and rows[seed]["signature"]
        assert rows[seed]["next_fetch_time"] > rows[seed]["fetch_time"]  # scheduled again (30 days)
        # OPIC: the seed's score 1.0 split over its distinct outlinks (all in scope here).
        for url in outlinks:
            assert rows[url]["state"] == "unfetched" and rows[url]["depth"] == 1
            assert rows[url]["score"] == pytest.approx(1.0 / len(outlinks))
        assert "merged into the crawl database already" in refused("updatedb", str(out), first)
        # Round 2: at most 2 a host, 3 in all; held URLs are not generated again.
        ok("generate", str(out), "--top-n", "3", "--max-per-host", "2")
        second = segments_dir(out) / segment_ids(out)[-1]
        picked = _generated(second)
        assert len(picked) == 3 and max(sum(u.startswith(f"http://{h}:") for u in picked) for h in HOSTS) <= 2
        ok("generate", str(out), "--top-n", "100")
        third = segments_dir(out) / segment_ids(out)[-1]
        assert not set(_generated(third)) & set(picked)
        assert set(_generated(third)) | set(picked) == outlinks
        ok("fetch", str(out), second.name, "-q")
        ok("fetch", str(out), third.name, "-q")
        requested = [e for e in server.requests() if not e.uri.endswith("/robots.txt")]
        robots = [e for e in server.requests() if e.uri.endswith("/robots.txt")]
        # parse: the links derived again from the WARC files equal those the fetch stored.
        store = sqlite3.connect(third / "crawl.db")
        before = store.execute("SELECT url_id, links FROM links ORDER BY url_id").fetchall()
        store.execute("DELETE FROM links")
        store.commit()
        assert store.execute("SELECT COUNT(*) FROM links").fetchone()[0] == 0
        ok("parse", str(out), third.name)
        assert store.execute("SELECT url_id, links FROM links ORDER BY url_id").fetchall() == before
        store.close()
        ok("updatedb", str(out), second.name)
        ok("updatedb", str(out), third.name)
    # Politeness: each host's robots.txt read once a segment fetch, no disallowed page requested.
    paths = {f"http://{e.server_addr}:{e.server_port}{e.uri}" for e in requested}
    assert not paths & spec.disallowed
    assert len(robots) <= 3 * len(HOSTS)
    rows = _records(out)
    for url in spec.disallowed & outlinks:
        assert rows[url]["error_class"] == "robots"
    assert all(rows[u]["state"] in ("fetched", "gone") for u in outlinks)
    # OPIC, known URLs too: each page fetched in rounds 2 and 3 gave its score at generate time (its
    # share of the seed's) equally to its distinct links but itself; the seed got shares back.
    expected = {u: 0.0 for u in rows}
    expected[seed] = 1.0
    first_share = 1.0 / len(outlinks)
    for url in outlinks:
        expected[url] += first_share
    for page in outlinks:
        if rows[page]["state"] != "fetched":
            continue
        targets = set(spec.links[page]) - {page}
        for url in targets:
            expected[url] += first_share / len(targets)
    assert {u: pytest.approx(x) for u, x in expected.items()} == {u: r["score"] for u, r in rows.items()}


def test_readdb_stats_url_and_dump(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=6)
    out = tmp_path / "out"
    seed = spec.seeds[0]
    with server:
        ok("crawl", seed, "--out", str(out), *NET, "--scope", "any", "--workers", "1", "-q",
           "--rounds", "2", "--top-n", "50")
    stats = json.loads(ok("readdb", str(out), "--stats"))
    assert stats["states"]["fetched"] >= 2 and stats["score_source"] == "pagerank"  # the cycle ranks last
    assert [s["steps"] for s in stats["segments"]] == [["generated", "fetched", "merged"]] * 2
    assert stats["links"] > 0
    one = json.loads(ok("readdb", str(out), "--url", seed))
    assert one["url"] == seed and one["state"] == "fetched"
    assert one["outlinks"] == list(dict.fromkeys(spec.links[seed]))  # each distinct link once
    assert "is not in the crawl database" in refused("readdb", str(out), "--url", "http://nowhere.test/")
    written = ok("readdb", str(out), "--dump", "--format", "parquet", "--output", str(tmp_path / "dump"))
    assert "crawldb rows" in written
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(tmp_path / "dump" / "crawldb.parquet").to_pylist()
    assert {r["url"] for r in table} >= {seed}
    segs = pq.read_table(tmp_path / "dump" / "segments.parquet").to_pylist()
    assert {r["segment"] for r in segs} == set(segment_ids(out))

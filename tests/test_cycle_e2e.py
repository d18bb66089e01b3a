"""The whole crawl cycle (`crawl --rounds`) over an nginx-served web of several hosts, a segment
fetch killed midway and continued, the steps on PostgreSQL, and the export's new columns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter, deque
from pathlib import Path

from harvestman.batch.segments import segment_ids, segments_dir
from tests.support.crawlcheck import harvestman_cmd, run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

HOSTS = ["127.9.0.1", "127.9.0.2", "127.9.0.3"]
NET = ("--allow-net", "127.9.0.0/16")


def _serve(tmp_path: Path, pages: int, page_bytes: int = 0) -> tuple[NginxServer, SiteSpec]:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, pages, 5, seed=5, port=port, page_bytes=page_bytes)
    return NginxServer(tmp_path / "site", HOSTS, port), spec


def _depths(spec: SiteSpec) -> dict[str, int]:
    """Hops from the seeds to each reachable page, by BFS over the site's links."""
    depth = {s: 0 for s in spec.seeds}
    todo = deque(spec.seeds)
    while todo:
        url = todo.popleft()
        for link in spec.links.get(url, ()):
            if link not in depth and link in spec.reachable:
                depth[link] = depth[url] + 1
                todo.append(link)
    return depth


def _page_requests(server: NginxServer) -> Counter[str]:
    return Counter(f"http://{e.server_addr}:{e.server_port}{e.uri}" for e in server.requests()
                   if not e.uri.endswith("/robots.txt"))


def ok(*args: str, timeout: float = 120) -> str:
    done = run_cli(*args, timeout=timeout)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_crawl_rounds_fetch_every_reachable_page_once_within_the_rounds(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=20)
    out = tmp_path / "out"
    rounds = max(_depths(spec).values()) + 1  # a round a level of the BFS
    with server:
        said = ok("crawl", *spec.seeds, "--out", str(out), *NET, "--scope", "any", "-q", "--workers", "2",
                  "--rounds", str(rounds), "--top-n", "1000")
        requested = _page_requests(server)
    assert "rounds:" in said
    assert set(spec.reachable) <= set(requested)
    assert set(requested) == set(spec.reachable) | set(spec.missing)
    assert max(requested.values()) == 1
    assert not set(requested) & spec.disallowed
    assert len(segment_ids(out)) <= rounds
    status = json.loads(ok("status", str(out), "--json"))
    assert status["states"]["fetched"] == len(spec.reachable)
    # A further round finds nothing due: every URL is fetched and its next fetch is 30 days away.
    with server:
        again = ok("crawl", "--out", str(out), "-q", "--rounds", "1", "--top-n", "10")
    assert again.startswith("0 rounds")


def test_a_killed_segment_fetch_goes_on_with_fetch_again(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=150, page_bytes=2000)
    out = tmp_path / "out"
    with server:
        # Two rounds first, so that the next segment holds many URLs.
        ok("crawl", *spec.seeds, "--out", str(out), *NET, "--scope", "any", "-q", "--workers", "1",
           "--rounds", "3", "--top-n", "1000")
        ok("generate", str(out), "--top-n", "1000")
        segment = segments_dir(out) / segment_ids(out)[-1]
        generated = {json.loads(x)["url"] for x in (segment / "fetchlist.jsonl").read_text().splitlines()}
        assert len(generated) > 60, "too small a segment to kill its fetch midway"
        before = sum(_page_requests(server).values())
        proc = subprocess.Popen(harvestman_cmd("fetch", str(out), "-q", "--delay", "0.05", "--per-host", "1"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while time.time() < deadline and sum(_page_requests(server).values()) < before + 15:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        midway = sum(_page_requests(server).values()) - before
        assert 0 < midway < len(generated - spec.disallowed), "the kill came too late to test anything"
        assert not (segment / "fetched").exists()
        ok("fetch", str(out), "-q")
        assert (segment / "fetched").exists()
        ok("updatedb", str(out))
        requested = _page_requests(server)
    wanted = generated - spec.disallowed
    assert wanted <= set(requested)
    # Fetched once, but for the few in flight when the process was killed.
    assert sum(n - 1 for u, n in requested.items() if u in wanted) <= 4
    ok("export", str(out), "--output", str(tmp_path / "urls.jsonl"))
    lines = (tmp_path / "urls.jsonl").read_text().splitlines()
    states = {r["url"]: r["state"] for r in map(json.loads, lines)}
    assert all(states[u] in ("fetched", "gone") for u in generated)  # merged: none left held


def test_inject_generate_updatedb_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    server, spec = _serve(tmp_path, pages=8)
    out = tmp_path / "out"
    db = ("--db", postgres_url)
    with server:
        ok("inject", str(out), *spec.seeds, *db, *NET, "--scope", "any", "--workers", "1")
        assert not (out / "crawl.db").exists()
        for _ in range(3):
            ok("generate", str(out), *db, "--top-n", "100")
            ok("fetch", str(out), *db, "-q")
            ok("updatedb", str(out), *db)
    stats = json.loads(ok("readdb", str(out), *db, "--stats"))
    assert stats["states"]["fetched"] >= 1 + len(set(spec.links[spec.seeds[0]]) - spec.disallowed
                                                 - spec.missing)
    one = json.loads(ok("readdb", str(out), *db, "--url", spec.seeds[0]))
    assert one["state"] == "fetched" and one["outlinks"]


def test_export_urls_shows_the_cycle_columns(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=5)
    out = tmp_path / "out"
    with server:
        ok("crawl", *spec.seeds, "--out", str(out), *NET, "--scope", "any", "-q", "--workers", "1",
           "--rounds", "2", "--top-n", "100")
    ok("export", str(out), "--what", "urls", "--output", str(tmp_path / "urls.jsonl"))
    rows = [json.loads(x) for x in (tmp_path / "urls.jsonl").read_text().splitlines()]
    for column in ("score", "signature", "simhash", "duplicate_of", "next_fetch_time", "fetch_interval",
                   "inlinks", "metadata"):
        assert all(column in row for row in rows), column
    seed = next(r for r in rows if r["url"] == spec.seeds[0])
    assert seed["signature"] and seed["next_fetch_time"] and seed["fetch_interval"] == 30 * 86400.0
    assert 0 < seed["score"] < 1.0  # the cycle ends with a PageRank over the fetched pages (sum 1)
    assert seed["inlinks"] >= 1 and seed["simhash"]  # invertlinks and dedup ran too
    assert any(r["score"] > 0 and r["depth"] == 1 for r in rows)


def test_a_due_url_is_fetched_again_conditionally_with_what_the_last_fetch_recorded(tmp_path: Path) -> None:
    server, spec = _serve(tmp_path, pages=3)
    out = tmp_path / "out"
    seed = spec.seeds[0]
    with server:
        # Stored with the crawl: every fetched URL is due again a second after its fetch.
        ok("inject", str(out), seed, *NET, "--workers", "1", "--revisit-after", "1")
        ok("generate", str(out), "--top-n", "1")
        ok("fetch", str(out), "-q")
        ok("updatedb", str(out))
        time.sleep(1.2)
        ok("generate", str(out), "--top-n", "100")
        segment = segments_dir(out) / segment_ids(out)[-1]
        rows = {r["url"]: r for r in map(json.loads, (segment / "fetchlist.jsonl").read_text().splitlines())}
        assert rows[seed]["etag"] and rows[seed]["signature"]  # the segment knows the last fetch
        ok("fetch", str(out), "-q")
        ok("updatedb", str(out))
        answers = [e.status for e in server.requests() if e.uri == "/"]
    assert answers == [200, 304]
    one = json.loads(ok("readdb", str(out), "--url", seed))
    assert one["state"] == "not_modified" and one["signature"] and one["fetch_interval"] == 1.0

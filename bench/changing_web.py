"""A changing web re-crawled by each strategy of `harvestman recrawl`: what it costs on the wire
(nginx's log) and which changed pages it finds.

    python bench/changing_web.py [--pages 500] [--share 0.5]

Two hosts of PAGES pages (~7 KB of text each, as the seed 003 measured), both served by nginx with
gzip: A from files (ETag and Last-Modified), B through an nginx proxy that drops both validators
(Content-Length kept). The whole web is crawled once (`harvestman crawl`); then SHARE of each
host's pages change (tests/support/changingweb.py: a third keep their size, a third get a sentence,
a third are rewritten) and a copy of the crawl is re-crawled with `recrawl --all --strategy S`
for each strategy. Bytes on the wire are nginx's $bytes_sent (headers and body) of the crawler's
requests to A and to B during the re-crawl. The goal for `conditional` on A: bytes at most the
changed pages' bytes (as a full GET transfers them) + 3% of a full crawl of A.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvestman.store.sqlite_store import SqliteStore
from tests.support.changingweb import ChangingSite
from tests.support.nginx import NginxServer, free_port

A, B, UPSTREAM = "127.64.0.1", "127.64.0.2", "127.64.0.3"
NET = ["--allow-net", "127.64.0.0/16"]
STRATEGIES = ("conditional", "size", "sitemap", "full")
WIRE_FORMAT = '$server_addr $status $bytes_sent "$request_method" "$request_uri"'


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "harvestman.app.cli", *args], check=True,
                          capture_output=True, text=True)
    return done.stdout


def _wire(log: Path, start: int) -> tuple[dict[str, int], dict[tuple[str, str], int], int]:
    """Bytes a host sent from line `start` of the wire log; bytes per (host, GET 200 URI); lines."""
    lines = log.read_text().splitlines()
    per_host: dict[str, int] = defaultdict(int)
    per_page: dict[tuple[str, str], int] = {}
    for line in lines[start:]:
        addr, status, sent, method, uri = line.split(" ", 4)
        per_host[addr] += int(sent)
        if status == "200" and method == '"GET"':
            per_page[(addr, uri.strip('"'))] = int(sent)
    return per_host, per_page, len(lines)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--share", type=float, default=0.5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="harvestman-changing-"))
    port = free_port(A)
    log = tmp / "wire.log"
    plain = tmp / "plain"
    extra_http = f"""gzip on; gzip_min_length 100; gzip_types application/xml text/plain;
    log_format wire '{WIRE_FORMAT}';
    server {{
        listen {B}:{port};
        access_log {log} wire;
        location / {{
            proxy_pass http://{UPSTREAM}:{port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Accept-Encoding "";
            proxy_hide_header ETag;
            proxy_hide_header Last-Modified;
        }}
    }}
    server {{
        listen {UPSTREAM}:{port};
        access_log off;
        etag off;
        root {plain};
    }}"""
    server = NginxServer(tmp / "www", [A], port, extra_http=extra_http,
                         extra_server=f"access_log {log} wire;")
    site_a = ChangingSite(tmp / "www" / A, f"http://{A}:{port}", args.pages)
    site_b = ChangingSite(plain, f"http://{B}:{port}", args.pages, seed=4)
    site_a.write()
    site_b.write()
    base = tmp / "crawl"
    with server:
        started = time.perf_counter()
        _cli("crawl", f"{site_a.base}/", f"{site_b.base}/", "--out", str(base), *NET, "-q")
        crawl_seconds = time.perf_counter() - started
        at = time.time() + 5
        changed = site_a.change(args.share, at=at) | site_b.change(args.share, at=at, seed=6)
        kinds = {url: kind for url, kind in changed.items()}
        truth = {h: {u for u in changed if u.startswith(s.base)} for h, s in ((A, site_a), (B, site_b))}
        same_size = {h: {u for u in truth[h] if kinds[u] == "same_size"} for h in (A, B)}
        start = len(log.read_text().splitlines())
        rows = []
        full_pages: dict[tuple[str, str], int] = {}
        for strategy in STRATEGIES:
            out = tmp / f"recrawl-{strategy}"
            shutil.copytree(base, out)
            began = time.perf_counter()
            report = json.loads(_cli("recrawl", str(out), *NET, "-q", "--json", "--all",
                                     "--strategy", strategy))
            seconds = time.perf_counter() - began
            per_host, per_page, start = _wire(log, start)
            if strategy == "full":
                full_pages = per_page
            with SqliteStore.open_read_only(out / "crawl.db") as store:
                records = {r.url: r for r in store.records()}
            found = {h: {u for u in truth[h] if records[u].change in ("minor", "major")} for h in (A, B)}
            wrong = sum(1 for u, r in records.items() if r.change in ("minor", "major") and u not in changed
                        and not u.endswith("sitemap.xml"))
            decoded = sum(r.body_size for r in records.values() if r.state == 1)
            wire_bodies = sum(r.body_wire_bytes for r in records.values() if r.state == 1)
            rows.append((strategy, per_host, found, wrong, report, seconds, decoded, wire_bodies))
    full_a = rows[-1][1][A]
    changed_bytes_a = sum(full_pages.get((A, u.removeprefix(site_a.base)), 0) for u in truth[A])
    sitemap_a = full_pages.get((A, "/sitemap.xml"), 0)  # it changed with its pages' lastmods
    print(f"{args.pages} pages a host, {len(truth[A])} + {len(truth[B])} changed "
          f"({len(same_size[A])} + {len(same_size[B])} of them keeping their size); "
          f"first crawl {crawl_seconds:.1f} s")
    print("| strategy | A: bytes on the wire | A: changed found | B (no validators): bytes | "
          "B: changed found | recrawl s |")
    print("|---|---:|---:|---:|---:|---:|")
    for strategy, per_host, found, wrong, _report, seconds, _d, _w in rows:
        extra = f" (+{wrong} false)" if wrong else ""
        print(f"| {strategy} | {per_host[A]:,} ({100 * per_host[A] / full_a:.1f}%) | "
              f"{len(found[A])}/{len(truth[A])}{extra} | {per_host[B]:,} | {len(found[B])}/{len(truth[B])} | "
              f"{seconds:.1f} |")
    goal = changed_bytes_a + 0.03 * full_a
    print(f"\nA: the changed pages' bytes (full GETs) {changed_bytes_a:,} (+ {sitemap_a:,} the sitemap's); "
          f"3% of a full crawl {0.03 * full_a:,.0f}")
    for strategy, per_host, *_ in rows[:3]:
        over = per_host[A] - changed_bytes_a
        print(f"  {strategy}: {per_host[A]:,}, {over:,} over the changed pages = "
              f"{100 * over / full_a:.1f}% of a full crawl "
              f"({100 * (over - sitemap_a) / full_a:.1f}% with the sitemap counted as changed) -> "
              f"goal {'met' if per_host[A] <= goal else 'missed'}")
    decoded, wire_bodies = rows[-1][6], rows[-1][7]
    if decoded:
        print(f"compression (full, changed pages stored): {wire_bodies:,} body bytes on the wire for "
              f"{decoded:,} decoded ({100 * wire_bodies / decoded:.0f}%)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Counts that must agree (issue 25, finding 12), over an nginx-served site with what makes them
differ: a page robots.txt disallows, 404s, a redirect to a page and one to a 404, a sitemap named
in robots.txt, and a page that links to /robots.txt. `fetch` and `updatedb` print the same counts;
the final event of a crawl run by `harvestman serve` and the summary count alike (PageCounts);
robots.txt is read for the crawl's own use and is none of its URLs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx

HOST = "127.66.12.1"
NET = ("--allow-net", "127.66.12.0/24")
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
# What the crawl of the site comes to: each a row of the crawl database.
PAGES = {"/", "/p1.html", "/p2.html", "/dir/", "/hidden.html", "/sitemap.xml"}
FAILED = {"/missing.html", "/gone.html", "/moved", "/nowhere.html"}  # 404s (/moved: a redirect to one)
SKIPPED = {"/private/x.html"}  # robots.txt disallows it
REDIRECTS = {"/dir"}  # to /dir/, a page


def _page(title: str, *links: str) -> str:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    return f"<html><head><title>{title}</title></head><body>{anchors}</body></html>"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[NginxServer]:
    require_nginx()
    port = free_port(HOST)
    base = f"http://{HOST}:{port}"
    files = {
        "robots.txt": f"User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap.xml\n",
        "index.html": _page("home", "/p1.html", "/p2.html", "/missing.html", "/private/x.html", "/dir",
                            "/moved", "/robots.txt"),
        "p1.html": _page("p1", "/"),
        "p2.html": _page("p2", "/gone.html", "/robots.txt?x=1"),
        "dir/index.html": _page("dir"),
        "private/x.html": _page("x"),
        "hidden.html": _page("hidden"),
        "sitemap.xml": f'<?xml version="1.0"?><urlset xmlns="{NS}"><url><loc>{base}/hidden.html</loc></url>'
                       f"<url><loc>{base}/robots.txt</loc></url></urlset>",
    }
    for name, text in files.items():
        path = tmp_path / "www" / HOST / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    with NginxServer(tmp_path / "www", [HOST], port,
                     extra_server="location = /moved { return 301 /nowhere.html; }") as server:
        yield server


def ok(*args: str) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def _paths(urls: Iterable[str], port: int) -> set[str]:
    prefix = f"http://{HOST}:{port}"
    return {url.removeprefix(prefix) for url in urls}


def test_fetch_and_updatedb_print_the_same_counts(site: NginxServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    ok("inject", str(out), site.url(HOST, "/"), *NET, "--workers", "1", "-q")
    lines = []
    for _ in range(3):
        ok("generate", str(out), "--top-n", "50")
        fetched = ok("fetch", str(out), "-q")
        merged = ok("updatedb", str(out))
        fetch_line = re.search(r"fetched segment \S+: (\d+) pages?(?:, (\d+) failed)?", fetched)
        merge_line = re.search(r"merged segment \S+: (\d+) (?:pages?|fetched)(?:, (\d+) failed)?", merged)
        assert fetch_line and merge_line, (fetched, merged)
        assert fetch_line.groups() == merge_line.groups(), (fetched, merged)
        lines.append(merged)
    assert any("1 skipped" in line for line in lines), lines  # what differs is named


def test_robots_txt_is_no_url_of_the_crawl(site: NginxServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    ok("crawl", site.url(HOST, "/"), "--out", str(out), *NET, "--workers", "1", "-q")
    status = json.loads(ok("status", str(out), "--json"))
    ok("export", str(out), "--what", "urls", "--output", str(tmp_path / "urls.jsonl"))
    rows = [json.loads(line) for line in (tmp_path / "urls.jsonl").read_text().splitlines()]
    listed = _paths((r["url"] for r in rows), site.port)
    assert not any("robots.txt" in path for path in listed), listed
    assert listed == PAGES | FAILED | SKIPPED | REDIRECTS
    [host] = status["hosts"].values()
    assert host["states"]["fetched"] == len(PAGES)
    assert "/robots.txt" in {e.uri for e in site.requests()}  # read all the same, for the crawl itself


def _same_summary(shown: dict[str, Any], status: dict[str, Any]) -> None:
    """The server's summary and `harvestman status --json` of one crawl: one set of figures
    (launch/status.py), each face naming them its way."""
    assert (shown["counts"], shown["errors"]) == (status["states"], status["errors"])
    assert (shown["pages"], shown["failed"], shown["bytes"]) == (status["pages"], status["failed"],
                                                                  status["wire_bytes"])
    assert shown["pages_per_second"] == round(status["pages_per_second"], 2)
    assert {h["host"]: h["pages"] for h in shown["top_hosts"]} == {
        host: h["pages"] for host, h in status["hosts"].items()}


def test_the_last_event_and_the_summary_count_alike(site: NginxServer, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from tests.support.serveproc import ServeProcess, wait_for

    settings = {"workers": 1}  # the server's --allow-net is the crawl's
    with ServeProcess(tmp_path / "root", extra=NET) as server:
        reply = server.call("POST", "/api/crawls", {"seeds": [site.url(HOST, "/")], "settings": settings})
        assert reply.status == 201, reply.body
        path = f"/api/crawls/{reply.json()['id']}"

        def finished() -> dict[str, object] | None:
            summary: dict[str, object] = server.call("GET", path).json()
            assert summary["state"] != "failed", summary
            return summary if summary["state"] == "finished" else None

        summary = wait_for(finished, 90, "the crawl to finish")
        stream = server.call("GET", f"{path}/events").body.decode()
        urls = server.call("GET", f"{path}/urls?limit=1000").json()["urls"]
        crawl_dir = next(server.root.rglob(f"{reply.json()['id']}/crawl"))
        _same_summary(summary, json.loads(ok("status", str(crawl_dir), "--json")))
    [last] = [json.loads(line[6:]) for line in stream.splitlines()
              if line.startswith("data: ") and '"crawl_finished"' in line]
    counted = re.fullmatch(r"(\d+) (?:pages|fetched), (\d+) failed", last["message"])
    assert counted, last
    assert (int(counted[1]), int(counted[2])) == (summary["pages"], summary.get("failed")), (last, summary)
    assert (summary["pages"], summary["failed"]) == (len(PAGES), len(FAILED))
    listed = _paths((u["url"] for u in urls), site.port)
    assert listed == PAGES | FAILED | SKIPPED | REDIRECTS  # robots.txt is no URL of the crawl
    assert sum(u["state"] in ("fetched", "not_modified") for u in urls) == summary["pages"]

"""What re-crawls cost (issue 25, finding 5): over an nginx site with ETags, a crawl (continuous, or
the cycle's steps) then `recrawl --all` again and again, one page changed before the last: each
report's full re-download is the sum of the pages' full responses (nginx's bytes sent), what the
304s saved stays counted, and `status`'s bytes keep the pages' full sizes instead of drifting to
the 304s'."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvestman.model.records import UrlRecord, UrlState
from harvestman.store.sqlite_store import SqliteStore
from tests.support.changingweb import ChangingSite
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx

HOST = "127.63.2.1"
NET = ("--allow-net", "127.63.0.0/16")
PAGES = 4


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[NginxServer, ChangingSite]]:
    require_nginx()
    port = free_port(HOST)
    nginx = NginxServer(tmp_path / "www", [HOST], port)
    pages = ChangingSite(tmp_path / "www" / HOST, f"http://{HOST}:{port}", PAGES, words=400)
    pages.write()
    with nginx:
        yield nginx, pages


def _ok(*args: str) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def _records(out: Path) -> dict[str, UrlRecord]:
    with SqliteStore.open_read_only(out / "crawl.db") as store:
        return {r.url: r for r in store.records()}


def _full_sizes(nginx: NginxServer, base: str) -> dict[str, int]:
    """Each URL's last full response as nginx sent it (headers included)."""
    return {base + e.uri: e.total_sent for e in nginx.requests() if e.method == "GET" and e.status == 200}


def _sent(nginx: NginxServer, since: int) -> int:
    """What nginx sent for the URLs' requests since the `since`-th (robots.txt is no URL of the crawl)."""
    return sum(e.total_sent for e in nginx.requests()[since:] if e.uri != "/robots.txt")


def _status(out: Path) -> dict[str, Any]:
    bandwidth: dict[str, Any] = json.loads(_ok("status", str(out), "--json"))["bandwidth"]
    return bandwidth


def _recrawls_keep_the_full_sizes(nginx: NginxServer, pages: ChangingSite, out: Path) -> None:
    """`recrawl --all` three times, one page changed before the third: the reports and status."""
    urls = [u for u, r in _records(out).items() if r.state in (UrlState.FETCHED, UrlState.NOT_MODIFIED)]
    assert len(urls) == PAGES + 2  # the pages, the index, the sitemap
    decoded = _status(out)["decoded_bytes"]
    for round_ in range(3):
        if round_ == 2:  # one page grows, and its ETag changes with its mtime
            page = pages.root / "p0001.html"
            page.write_bytes(page.read_bytes() + b"<p>a new paragraph at the end</p>\n")
            os.utime(page, (time.time() + 5, time.time() + 5))
            decoded += len(b"<p>a new paragraph at the end</p>\n")
        start = len(nginx.requests())
        report = json.loads(_ok("recrawl", str(out), "--all", *NET, "-q", "--json"))
        full = _full_sizes(nginx, pages.base)
        assert report["checked"] == len(urls) and report["changed"] == (1 if round_ == 2 else 0), report
        assert report["wire_bytes"] == _sent(nginx, start), report
        # A full re-download: every page's whole response, the changed one's new one included.
        assert report["full_bytes"] == sum(full[u] for u in urls), (round_, report)
        assert report["saved_bytes"] > 0 and report["wire_bytes"] < report["full_bytes"] / 2, report
        # status: what the last fetches cost, and what they saved against the pages' full
        # responses; the pages' decoded sizes kept through the 304s.
        bandwidth = _status(out)
        assert bandwidth["wire_bytes"] + bandwidth["saved_bytes"] == sum(full[u] for u in urls), bandwidth
        assert bandwidth["decoded_bytes"] == decoded, bandwidth


def test_recrawls_of_a_crawl_report_full_sizes_and_savings(site: tuple[NginxServer, ChangingSite],
                                                          tmp_path: Path) -> None:
    nginx, pages = site
    out = tmp_path / "crawl"
    _ok("crawl", f"{pages.base}/", "--out", str(out), *NET, "-q")
    _recrawls_keep_the_full_sizes(nginx, pages, out)


def test_recrawls_of_a_cycle_crawl_whose_rounds_had_304s(site: tuple[NginxServer, ChangingSite],
                                                        tmp_path: Path) -> None:
    nginx, pages = site
    out = tmp_path / "cycle"
    # Every URL due again at once: the later rounds fetch the known pages again, conditionally,
    # and merge their 304s (the engine's own, no re-crawl check).
    _ok("inject", str(out), f"{pages.base}/", *NET, "-q", "--fetch-interval", "0.001")
    for _ in range(3):
        _ok("generate", str(out), "--top-n", "100")
        _ok("fetch", str(out), "-q")
        _ok("updatedb", str(out))
    rows = _records(out)
    assert rows[f"{pages.base}/"].state == UrlState.NOT_MODIFIED and rows[f"{pages.base}/"].http_status == 304
    _recrawls_keep_the_full_sizes(nginx, pages, out)

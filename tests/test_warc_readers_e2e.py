"""What reads a crawl's WARC files, over real crawls: the CDXJ export of a cycle crawl (its WARC files
are the segments'), and the search index built while the crawl runs, then after (`harvestman index`,
the served search)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvestman.index.schema import open_index
from harvestman.model.records import UrlState
from harvestman.serve.crawls import CrawlInfo
from harvestman.serve.layout import CrawlPaths
from harvestman.serve.search import Searcher
from harvestman.store.sqlite_store import SqliteStore
from tests.support.crawlcheck import harvestman_cmd, run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import generate_site

HOSTS = ["127.9.4.1", "127.9.4.2"]
NET = ("--allow-net", "127.9.0.0/16")


def _responses(out: Path) -> int:
    """The response records in every WARC file of the crawl in `out`."""
    count = 0
    for path in out.glob("**/*.warc.gz"):
        with path.open("rb") as stream:
            count += sum(1 for r in ArchiveIterator(stream) if r.rec_type == "response")
    return count


# -- the CDXJ export of a cycle crawl ----------------------------------------------------------------


def test_cdxj_export_of_a_cycle_crawl_indexes_the_segments_warc_files(tmp_path: Path) -> None:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, 6, 3, seed=3, port=port)
    out = tmp_path / "out"
    with NginxServer(tmp_path / "site", HOSTS, port):
        done = run_cli("crawl", *spec.seeds, "--out", str(out), *NET, "--scope", "any", "-q",
                       "--rounds", "2", "--top-n", "1000", timeout=120)
        assert done.returncode == 0, done.stderr
    assert not (out / "warc").exists() and list(out.glob("segments/*/warc/*.warc.gz"))  # segments only
    done = run_cli("export", str(out), "--format", "cdxj")
    assert done.returncode == 0, done.stderr
    lines = (out / "index.cdxj").read_text().splitlines()
    assert len(lines) == _responses(out) > 0
    assert f"{len(lines)} index lines written" in done.stdout
    for line in lines:
        entry = json.loads(line.split(" ", 2)[2])
        with open(out / entry["filename"], "rb") as warc:  # relative to DIR
            warc.seek(int(entry["offset"]))
            record = next(iter(ArchiveIterator(warc)))
            assert record.rec_headers.get_header("WARC-Target-URI") == entry["url"]


def test_cdxj_export_of_a_crawl_without_warc_records_says_so(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "crawl.db", host_of=lambda u: "a.test").close()
    done = run_cli("export", str(tmp_path), "--format", "cdxj")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("0 index lines written")
    assert "holds no WARC file" in done.stderr


# -- the search index of a running crawl --------------------------------------------------------------


def _fetched_html(out: Path) -> int:
    store = SqliteStore(out / "crawl.db", host_of=lambda u: u, read_only=True)
    try:
        return sum(1 for r in store.records() if r.state == UrlState.FETCHED
                   and r.content_type.startswith("text/html"))
    finally:
        store.close()


def _indexed(out: Path) -> int:
    index = open_index(out)
    index.reload()
    return int(index.searcher().num_docs)


def _slow_crawl(tmp_path: Path, out: Path, while_running: Callable[[], None]) -> None:
    """Crawl ~200 pages slowly (a tenth of a second between a host's fetches); call `while_running()`
    once 30 pages were fetched, and again at 60 if the crawl still runs."""
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, 100, 3, seed=7, port=port)
    with NginxServer(tmp_path / "site", HOSTS, port) as server:
        proc = subprocess.Popen(harvestman_cmd("crawl", *spec.seeds, "--out", str(out), *NET, "--scope",
                                               "any", "-q", "--workers", "1", "--delay", "0.1"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            for wanted in (30, 60):
                deadline = time.monotonic() + 60
                while len(server.requests()) < wanted and time.monotonic() < deadline \
                        and proc.poll() is None:
                    time.sleep(0.05)
                if wanted > 30 and proc.poll() is not None:
                    break  # a slow machine: once during the crawl is what counts
                assert proc.poll() is None, "the crawl ended before the index could run during it"
                while_running()
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    assert len(spec.reachable) > 150


def test_index_run_during_a_crawl_then_after_holds_every_page(tmp_path: Path) -> None:
    out = tmp_path / "out"

    def index_now() -> None:
        done = run_cli("index", str(out))
        assert done.returncode == 0, done.stderr

    _slow_crawl(tmp_path, out, index_now)
    done = run_cli("index", str(out))
    assert done.returncode == 0, done.stderr
    pages = _fetched_html(out)
    assert done.stdout.startswith(f"{pages} pages in the index"), done.stdout
    rebuilt = run_cli("index", str(out), "--rebuild")
    assert rebuilt.stdout.startswith(f"{pages} pages in the index"), rebuilt.stdout


def test_served_search_of_a_running_then_finished_crawl_finds_every_page(tmp_path: Path) -> None:
    folder = tmp_path / "served"
    info = CrawlInfo("c1", CrawlPaths(folder), (), {}, 0.0, "running", "", "")
    searcher = Searcher()
    found: list[int] = []

    def search_now() -> None:
        found.append(searcher.search(info, "orchard OR spider OR silk OR web OR crawler", 5)["total"])

    _slow_crawl(tmp_path, info.paths.crawl_dir, search_now)
    assert found[-1] > 0  # pages were found while it ran
    searcher.search(info, "orchard", 5)
    assert _indexed(info.paths.crawl_dir) == _fetched_html(info.paths.crawl_dir)

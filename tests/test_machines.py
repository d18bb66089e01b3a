"""One crawl on three machines through PostgreSQL, as an operator meets it (issue 32).

Machine A starts the crawl with the `--allow-net` its loopback web needs; machine B joins with
`harvestman worker` and none of it; machine C joins with it and is killed with SIGKILL mid-crawl,
leaving its WARC file open and perhaps torn. One crawl (module-scoped) serves the first three tests:

- B loses no URL: it takes the crawl's network rules (and says so), and every page is fetched;
- C's pages are read where it left them (CDXJ and Markdown export, index, search), and a `worker`
  on its folder closes and repairs the file, saying so;
- the three folders brought together (B's and C's copied into A's as machines/NAME/) give one
  set of answers: every page in the index, the search, the CDXJ index and the Markdown.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harvestman.index.indexer import build_index
from harvestman.index.search import search
from harvestman.launch.export import export_records
from harvestman.launch.run import check_renderer, with_crawl_net
from harvestman.model.config import config_from_mapping
from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlState
from harvestman.store.factory import open_store
from harvestman.store.warc_read import responses_in
from tests.support.crawlcheck import harvestman_cmd, run_cli, warc_responses
from tests.support.httpserver import RouteServer
from tests.support.loadweb import held, holder, write_host
from tests.support.nginx import NginxServer, free_port
from tests.support.postgres import PostgresServer
from tests.support.sharedcrawl import wait_for_settings

HOSTS = [f"127.32.1.{i}" for i in range(1, 7)]
PAGES = 50
HOLD = 0.1  # each answer held: the crawl lasts long enough for two workers to join
PER_HOST = 2
CONCURRENCY = 4  # each process's: a third of the hosts' slots, so that every machine finds work
RUN_TIMEOUT = 180.0
NET = "127.32.0.0/16"
WORD = "page"  # in every page's title


@dataclass(frozen=True, slots=True)
class SharedCrawl:
    """The finished crawl: its database, the three machines' folders, what they printed."""

    db: str
    a: Path
    b: Path
    c: Path  # killed: its WARC file left open
    worker_b: subprocess.CompletedProcess[str]
    pages: frozenset[str]  # every page URL of the web
    requested: frozenset[str]  # what nginx was asked for


def _responses(folder: Path, *, open_files: bool) -> int:
    files = sorted((folder / "warc").glob("*.warc.gz.open" if open_files else "*.warc.gz"))
    return sum(1 for _ in responses_in(files))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory,
           postgres_server: PostgresServer) -> Iterator[SharedCrawl]:
    tmp = tmp_path_factory.mktemp("machines")
    db = postgres_server.create_database()
    root = tmp / "www"
    port = free_port(HOSTS[0])
    paths = {host: write_host(root / host, host, PAGES) for host in HOSTS}
    a, b, c = tmp / "a", tmp / "b", tmp / "c"
    config = tmp / "crawl.toml"
    config.write_text("[storage]\nlease_seconds = 2\n")  # C's leases come back soon after its death
    one = ["--workers", "1", "-q"]
    with RouteServer({"/hold": holder(HOLD)}) as sleeper, \
            NginxServer(root, HOSTS, port, extra_server=held(sleeper)) as nginx:
        seeds = [nginx.url(host, "/") for host in HOSTS]
        crawl = subprocess.Popen(
            harvestman_cmd("crawl", *seeds, "--db", db, "--out", str(a), "--allow-net", NET,
                           "--config", str(config), "--per-host", str(PER_HOST),
                           "--concurrency", str(CONCURRENCY), *one),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs: list[subprocess.Popen[str]] = [crawl]
        try:
            wait_for_settings(db, crawl)
            worker_c = subprocess.Popen(
                harvestman_cmd("worker", "--db", db, "--out", str(c), "--allow-net", NET, *one),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            procs.append(worker_c)
            worker_b = subprocess.Popen(  # without the crawl's --allow-net
                harvestman_cmd("worker", "--db", db, "--out", str(b), *one),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            procs.append(worker_b)
            deadline = time.monotonic() + 60
            while _responses(c, open_files=True) < 3:  # C has stored a few pages
                assert time.monotonic() < deadline and worker_c.poll() is None, "C never fetched"
                time.sleep(0.05)
            os.kill(worker_c.pid, signal.SIGKILL)  # its worker process dies with it (PR_SET_PDEATHSIG)
            worker_c.wait(timeout=10)
            b_out, b_err = worker_b.communicate(timeout=RUN_TIMEOUT)
            _, crawl_err = crawl.communicate(timeout=RUN_TIMEOUT)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert crawl.returncode == 0, crawl_err
        requested = frozenset(nginx.url(e.server_addr, e.uri) for e in nginx.requests())
        pages = frozenset(nginx.url(host, path) for host in HOSTS for path in paths[host])
    done_b = subprocess.CompletedProcess(worker_b.args, worker_b.returncode, b_out, b_err)
    yield SharedCrawl(db, a, b, c, done_b, pages, requested)


def test_a_worker_without_the_crawls_network_rules_loses_no_url(shared: SharedCrawl) -> None:
    assert shared.worker_b.returncode == 0, shared.worker_b.stderr
    assert "taking the crawl's network rules" in shared.worker_b.stderr
    assert f"--allow-net {NET}" in shared.worker_b.stderr
    assert shared.pages <= shared.requested  # every page asked for
    store = open_store(shared.db, read_only=True)
    try:
        records = {r.url: r for r in store.records()}
    finally:
        store.close()
    refused = [url for url, r in records.items() if r.error_class in ("blocked_address", "outside_net")]
    assert not refused, refused[:5]
    assert all(records[url].state == UrlState.FETCHED for url in shared.pages)
    assert len(warc_responses(shared.b)) > 0  # B did part of the work
    # A machine whose own --allow-net leaves out part of the crawl's does not join it.
    narrower = run_cli("worker", "--db", shared.db, "--out", str(shared.b.parent / "d"),
                       "--allow-net", "127.32.1.1/32", "-q")
    assert narrower.returncode == 2, narrower.stderr
    assert f"leaves out the crawl's {NET}" in narrower.stderr
    assert not (shared.b.parent / "d").exists()


def test_a_killed_machines_pages_are_read_and_its_file_repaired(shared: SharedCrawl, tmp_path: Path) -> None:
    c = tmp_path / "c"
    shutil.copytree(shared.c, c)
    [left_open] = list((c / "warc").glob("*.warc.gz.open"))
    stored = _responses(c, open_files=True)  # HTML pages and robots.txt files
    assert stored >= 3
    with open(left_open, "ab") as tail:  # torn in its last record, whatever the kill left
        tail.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + os.urandom(4000))[:1000])

    cdxj = run_cli("export", str(c), "--db", shared.db, "--format", "cdxj", "--out", "-")
    assert cdxj.returncode == 0, cdxj.stderr
    cdxj_urls = {json.loads(line.split(" ", 2)[2])["url"] for line in cdxj.stdout.splitlines()}
    assert len(cdxj_urls) == stored
    assert "left open" in cdxj.stderr and "crawl has ended" not in cdxj.stderr

    markdown = run_cli("export", str(c), "--db", shared.db, "--what", "markdown", "--format", "jsonl",
                       "--out", str(tmp_path / "md.jsonl"))
    assert markdown.returncode == 0, markdown.stderr
    md_urls = {json.loads(line)["url"] for line in (tmp_path / "md.jsonl").read_text().splitlines()}
    html = {url for url in cdxj_urls if not url.endswith("/robots.txt")}
    assert md_urls == html and html

    index = run_cli("index", str(c), "--db", shared.db)
    assert index.returncode == 0, index.stderr
    assert index.stdout.startswith(f"{len(html)} pages in the index")
    assert "in no WARC file under" in index.stderr  # the other machines' pages: said, not skipped silently
    found = run_cli("search", str(c), WORD, "--db", shared.db, "--json", "--limit", "1")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["total"] == len(html)

    # A worker on the folder (the crawl has ended: nothing left to fetch) closes and repairs the file.
    joined = run_cli("worker", "--db", shared.db, "--out", str(c), "--workers", "1", "-q")
    assert joined.returncode == 0, joined.stderr
    assert "closed 1 WARC files" in joined.stderr, joined.stderr
    assert left_open.name.removesuffix(".open") in joined.stderr
    assert not list((c / "warc").glob("*.open"))
    assert set(warc_responses(c)) == cdxj_urls  # read plainly to its end, by warcio alone


def test_three_machines_folders_give_one_set_of_answers(shared: SharedCrawl, tmp_path: Path) -> None:
    """The readers called in this process (the command line's messages are test_a_killed_...'s)."""
    crawl = tmp_path / "crawl"
    shutil.copytree(shared.a, crawl)
    for name, folder in (("b", shared.b), ("c", shared.c)):
        shutil.copytree(folder, crawl / "machines" / name)
    for folder in (shared.a, shared.b):  # each machine has some of the pages, none all (C: killed)
        assert 0 < len(set(warc_responses(folder)) & shared.pages) < len(shared.pages)

    index = build_index(crawl, shared.db)
    assert (index.documents, index.missing) == (len(shared.pages), ())
    assert search(crawl, WORD, limit=1).total == len(shared.pages)

    exported = export_records(crawl, "cdxj", tmp_path / "index.cdxj", shared.db)
    lines = [json.loads(line.split(" ", 2)[2]) for line in (tmp_path / "index.cdxj").read_text().splitlines()]
    assert shared.pages <= {line["url"] for line in lines} and exported.count == len(lines)
    assert {line["filename"].split("/")[0] for line in lines} == {"warc", "machines"}

    export_records(crawl, "jsonl", tmp_path / "md.jsonl", shared.db, what="markdown")
    rows = [json.loads(line) for line in (tmp_path / "md.jsonl").read_text().splitlines()]
    assert {row["url"] for row in rows} == shared.pages and len(rows) == len(shared.pages)


def test_a_worker_takes_the_crawls_address_rules_and_never_fewer() -> None:
    crawl = config_from_mapping({"allow_net": ["10.8.0.0/16"], "resolve": ["a.test:80:10.8.0.1",
                                                                           "b.test:80:10.8.0.2"]})
    given_none, taken = with_crawl_net(config_from_mapping({}), crawl)
    assert given_none.allow_net == ("10.8.0.0/16",) and len(given_none.resolve) == 2
    assert taken == "--allow-net 10.8.0.0/16, --resolve a.test:80:10.8.0.1, --resolve b.test:80:10.8.0.2"
    wider = config_from_mapping({"allow_net": ["10.0.0.0/8"], "resolve": ["b.test:80:10.9.0.2"]})
    cfg, taken = with_crawl_net(wider, crawl)
    assert cfg.allow_net == ("10.0.0.0/8",)
    pins = {(pin.host, pin.address) for pin in cfg.resolve}
    assert pins == {("a.test", "10.8.0.1"), ("b.test", "10.9.0.2")}  # this machine's pin wins for b
    assert taken == "--resolve a.test:80:10.8.0.1"
    narrower = config_from_mapping({"allow_net": ["10.8.1.0/24", "192.168.0.0/16"]})
    with pytest.raises(ConfigError, match=r"this machine's --allow-net 10\.8\.1\.0/24 192\.168\.0\.0/16 "
                                          r"leaves out the crawl's 10\.8\.0\.0/16: the URLs there"):
        with_crawl_net(narrower, crawl)


def test_a_worker_that_cannot_render_what_the_crawl_renders_refuses_to_start(tmp_path: Path) -> None:
    cfg = config_from_mapping({"render": "auto", "browser_path": str(tmp_path / "no-chromium")})
    with pytest.raises(ConfigError, match=r"this machine cannot render pages, and the crawl does "
                                          r"\(--render auto\): browser .* not found"):
        check_renderer(cfg, joining=True)

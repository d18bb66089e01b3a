"""The bundled demo web: pages, robots.txt, port substitution, redirect, 404, conditional GET, ranges;
the `demo_web()` helper for programs, the guide `harvestman demo` prints after its crawl, its refusal of
a folder that holds a crawl, and `demo --serve` keeping the web up for the other commands."""

from __future__ import annotations

import http.client
import ipaddress
import queue
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import harvestman
from harvestman.app.demo import (
    DEMO_ROOT,
    DEMO_SIGHTS,
    DEMO_SITES,
    DemoServer,
    demo_config_values,
    demo_guide,
    demo_web,
)
from harvestman.model.config import config_from_mapping
from harvestman.model.records import UrlRecord, UrlState
from tests.support.crawlcheck import harvestman_cmd, run_cli


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server


def _get(
    demo: DemoServer, address: str, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(address, demo.port, timeout=5)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


A, B, C = (site.address for site in DEMO_SITES)


def test_bundled_files_are_there() -> None:
    for site in DEMO_SITES:
        directory = DEMO_ROOT / site.directory
        assert (directory / "robots.txt").is_file()
        assert 10 <= len(list(directory.rglob("*.html"))) <= 20
    assert (DEMO_ROOT / "site-a/images/logo.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_pages_and_port_substitution(demo: DemoServer) -> None:
    status, headers, body = _get(demo, A, "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert b"<title>Orchard Almanac</title>" in body
    assert f"http://site-b.demo:{demo.port}/".encode() in body
    assert b"{{PORT}}" not in body
    status, _, body = _get(demo, C, "/guides/start.html")
    assert status == 200 and b"Start here" in body


def test_robots_per_site(demo: DemoServer) -> None:
    assert b"Disallow: /private/" in _get(demo, A, "/robots.txt")[2]
    robots_b = _get(demo, B, "/robots.txt")[2].decode()
    assert "Crawl-delay: 0.1" in robots_b
    assert f"Sitemap: http://site-b.demo:{demo.port}/sitemap.xml" in robots_b
    assert "Disallow:\n" in _get(demo, C, "/robots.txt")[2].decode()
    status, headers, body = _get(demo, B, "/sitemap.xml")
    assert status == 200 and headers["content-type"].startswith("application/xml")
    assert f"http://site-b.demo:{demo.port}/only-in-sitemap.html".encode() in body


def test_redirects_and_404(demo: DemoServer) -> None:
    status, headers, _ = _get(demo, A, "/old-news.html")
    assert status == 301 and headers["location"] == f"http://site-a.demo:{demo.port}/news.html"
    status, headers, _ = _get(demo, A, "/crops")
    assert status == 301 and headers["location"] == f"http://site-a.demo:{demo.port}/crops/"
    assert _get(demo, A, "/crops/")[0] == 200
    assert _get(demo, A, "/missing.html")[0] == 404
    assert _get(demo, A, "/../site-b/index.html")[0] == 404
    assert _get(demo, A, "/%2e%2e/site-b/index.html")[0] == 404
    assert _get(demo, B, "/posts/2023-12-lost.html")[0] == 404


def test_binary_head_conditional_and_range(demo: DemoServer) -> None:
    status, headers, body = _get(demo, A, "/images/logo.png")
    assert status == 200 and headers["content-type"] == "image/png" and body.startswith(b"\x89PNG")
    status, head_headers, head_body = _get(demo, A, "/images/logo.png", method="HEAD")
    assert status == 200 and head_body == b"" and head_headers["content-length"] == str(len(body))
    etag, last_modified = headers["etag"], headers["last-modified"]
    assert _get(demo, A, "/images/logo.png", {"If-None-Match": etag})[0] == 304
    assert _get(demo, A, "/images/logo.png", {"If-Modified-Since": last_modified})[0] == 304
    assert _get(demo, A, "/images/logo.png", {"If-None-Match": '"other"'})[0] == 200
    status, headers, part = _get(demo, A, "/images/logo.png", {"Range": "bytes=0-9"})
    assert status == 206 and part == body[:10] and headers["content-range"] == f"bytes 0-9/{len(body)}"
    assert _get(demo, A, "/images/logo.png", {"Range": "bytes=-4"})[2] == body[-4:]
    assert _get(demo, A, "/images/logo.png", {"Range": f"bytes={len(body)}-"})[0] == 416


def test_requests_are_recorded(demo: DemoServer) -> None:
    _get(demo, C, "/faq.html", {"User-Agent": "demo-test"})
    last = demo.requests()[-1]
    assert (last.host, last.method, last.path, last.status, last.user_agent) == (
        "site-c.demo", "GET", "/faq.html", 200, "demo-test"
    )


def test_config_values_build_a_crawl_config(demo: DemoServer) -> None:
    values = demo_config_values(demo)
    assert values["seeds"] == [f"http://site-a.demo:{demo.port}/"]
    assert values["resolve"] == [f"{s.host}:{demo.port}:{s.address}" for s in DEMO_SITES]
    assert isinstance(values["allow_net"], list)
    net = ipaddress.ip_network(values["allow_net"][0])
    assert all(ipaddress.ip_address(s.address) in net for s in DEMO_SITES)
    assert values == demo.config_values() and values["scope"] == "any"
    cfg = config_from_mapping(values)
    assert [r.curl_form() for r in cfg.resolve] == values["resolve"]
    assert cfg.seeds == tuple(values["seeds"]) and cfg.scope == "any"


def test_start_stop_and_fixed_port(tmp_path: Path) -> None:
    (tmp_path / "site-a").mkdir()
    (tmp_path / "site-a" / "index.html").write_text("port {{PORT}}")
    first = DemoServer(root=tmp_path, sites=DEMO_SITES[:1]).start()
    port = first.port
    first.stop()
    first.stop()  # twice is fine
    with DemoServer(root=tmp_path, port=port, sites=DEMO_SITES[:1]) as again:
        assert again.port == port
        assert _get(again, A, "/")[2] == f"port {port}".encode()


def test_demo_web_hands_a_program_what_it_needs_to_reach_the_demo() -> None:
    with demo_web() as web:
        port = web.server.port
        assert web.seeds == (f"http://site-a.demo:{port}/",)
        assert web.urls == tuple(f"http://{s.host}:{port}{s.path}" for s in DEMO_SIGHTS)
        results = {r.url: r for r in harvestman.download(web.urls, **web.options)}
        requests = web.server.requests()
    assert not _answers(web.server)  # stopped when the block ends

    def result(host: str, path: str) -> harvestman.FetchResult:
        return results[f"http://{host}:{port}{path}"]

    assert result("site-a.demo", "/").ok
    assert result("site-a.demo", "/private/ledger.html").error_class == "robots"
    assert result("site-a.demo", "/private/index.html").error_class == "robots"
    missing = result("site-a.demo", "/missing.html")
    assert missing.status == 404 and not missing.error and not missing.ok
    moved = result("site-a.demo", "/old-news.html")
    assert moved.ok and moved.final_url == f"http://site-a.demo:{port}/news.html"
    assert result("site-a.demo", "/images/logo.png").is_binary
    assert result("site-b.demo", "/only-in-sitemap.html").ok  # named directly, so fetched
    assert not [r for r in requests if r.path.startswith("/private/")]
    robots = sorted(r.host for r in requests if r.path == "/robots.txt")
    assert robots == ["site-a.demo", "site-b.demo"]  # once per host the URLs are on


def _answers(server: DemoServer) -> bool:
    """Whether anything still answers on the demo's first address."""
    try:
        _get(server, A, "/")
    except OSError:
        return False
    return True


def test_a_crawl_configured_from_demo_web_crosses_the_three_sites(tmp_path: Path) -> None:
    with demo_web() as web:
        config = harvestman.CrawlConfig(seeds=web.seeds, out_dir=tmp_path / "out", max_pages=60, scope="any",
                                        workers=1, quiet=True, **web.options)
        hosts = {urlsplit(page.result.final_url).hostname for page in harvestman.Crawler(config)}
    assert hosts == {"site-a.demo", "site-b.demo", "site-c.demo"}


def _record(state: UrlState, status: int, error_class: str = "") -> UrlRecord:
    return UrlRecord("", "", state, 0, 0, 0.0, "", 0.0, 0.0, status, error_class,
                     "", "", "", "", "", 0, 0, "", "")


def test_demo_guide_reports_each_sight_and_the_commands(demo: DemoServer, tmp_path: Path) -> None:
    records = {demo.url(s.host, s.path): _record(UrlState.FETCHED, 200) for s in DEMO_SIGHTS}
    ledger = demo.url("site-a.demo", "/private/ledger.html")
    records[ledger] = _record(UrlState.GONE, 0, "robots")
    records[demo.url("site-b.demo", "/only-in-sitemap.html")] = None
    guide = demo_guide(demo, tmp_path, records)
    for sight in DEMO_SIGHTS:
        assert demo.url(sight.host, sight.path) in guide and sight.shows in guide
    assert f"{ledger}   gone (robots), 0 requests" in guide
    assert f"{demo.url('site-b.demo', '/only-in-sitemap.html')}   not in the crawl" in guide
    assert f"harvestman status {tmp_path}" in guide and f"harvestman export {tmp_path}" in guide
    assert f"{tmp_path / 'warc'}/" in guide


def test_the_demo_command_says_what_to_look_at(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = run_cli("demo", "--out", str(out), "-q", timeout=60)
    assert done.returncode == 0, done.stderr
    port = re.search(r"http://site-a\.demo:(\d+)/", done.stdout)
    assert port, done.stdout
    base = f"http://site-a.demo:{port.group(1)}"
    # The states printed are the crawl's own: robots.txt kept the ledger out, the 404 and the 301 recorded.
    assert f"{base}/private/ledger.html   gone (robots), 0 requests" in done.stdout
    assert f"{base}/missing.html   gone (http_404), 1 request" in done.stdout
    assert f"{base}/old-news.html   redirect_perm (HTTP 301), 1 request" in done.stdout
    # Only site-b's sitemap lists it; site-b's robots.txt names that sitemap.
    site_b = f"http://site-b.demo:{port.group(1)}"
    assert f"{site_b}/only-in-sitemap.html   fetched (HTTP 200), 1 request" in done.stdout
    assert f"{site_b}/sitemap.xml|Success" in (out / "download.log").read_text()
    assert f"harvestman status {out}" in done.stdout and f"harvestman export {out}" in done.stdout
    assert f"{out / 'warc'}/" in done.stdout and list((out / "warc").glob("*.warc.gz"))


def test_the_demo_refuses_a_folder_that_holds_a_crawl_in_its_own_words(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert run_cli("demo", "--out", str(out), "-q", timeout=60).returncode == 0
    log = (out / "download.log").read_text()
    again = run_cli("demo", "--out", str(out), "-q", timeout=60)
    assert again.returncode == 2
    # demo has no --resume: the message names what demo takes, and a command that shows the crawl.
    assert again.stderr == (f"harvestman: error: {out} already holds a crawl: choose a new --out, or look at "
                            f"it with `harvestman status {out}`\n")
    assert (out / "download.log").read_text() == log  # refused before anything was crawled


SERVING = "the demo web is up until Ctrl-C (or SIGTERM)"  # the last line demo --serve prints before it waits


def _lines_of(proc: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """The process's stdout, a line at a time (None at its end), for reads with a deadline."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _until_serving(lines: queue.Queue[str | None], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while (line := lines.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
        seen.append(line)
        if line == SERVING:
            return seen
    raise AssertionError(f"harvestman demo --serve ended before serving: {seen}")


def test_demo_serve_keeps_the_web_up_for_the_commands_it_prints_until_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:  # a file, not a pipe: nothing can block on a full one
        proc = subprocess.Popen(harvestman_cmd("demo", "--serve", "--out", str(out), "-q"),
                                stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        printed = _until_serving(_lines_of(proc), timeout=90)
        port = re.search(r"http://site-a\.demo:(\d+)/", "\n".join(printed))
        assert port, printed
        start = next(i for i, line in enumerate(printed) if line.startswith("Try the other commands"))
        tries = printed[start:]  # the demo's guide, above, names commands too
        commands = [shlex.split(line) for line in tries if line.startswith("  harvestman ")]
        names = [command[1] for command in commands]
        assert names == ["status", "crawl", "recrawl", "index", "search", "export"], printed
        # Each command as printed, pasted while the demo web serves.
        for command in commands:
            done = subprocess.run(harvestman_cmd(*command[1:]), capture_output=True, text=True, timeout=120,
                                  check=False)
            assert done.returncode == 0, (command, done.stderr)
            assert "Traceback" not in done.stderr
            if command[1] == "recrawl":  # every page reached again through the printed --resolve flags
                checked = re.search(r"^checked +(\d+)$", done.stdout, re.MULTILINE)
                assert checked and int(checked.group(1)) > 0, done.stdout
                assert re.search(r"^not fetched +0$", done.stdout, re.MULTILINE), done.stdout
                assert re.search(r"^unchanged +[1-9]", done.stdout, re.MULTILINE), done.stdout
            if command[1] == "search":
                assert "site-a.demo" in done.stdout, done.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in errors.read_text()
    with socket.socket() as probe:  # the demo web went with the process
        assert probe.connect_ex((DEMO_SITES[0].address, int(port.group(1)))) != 0

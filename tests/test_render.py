"""Rendering pages in a browser (fetch/browser.py) over nginx-served pages whose links and text exist
only after their scripts run: what is found, what is stored, and every request under the crawl's rules.

The crawls run through the CLI (each starts its browser once); the renderer's own behaviours (crash,
recycling, budgets) use one browser for the whole session (`session_browser`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

import harvestman
from harvestman.fetch.browser import BrowserRenderer, RenderingTransport
from harvestman.fetch.shell import shell_reason
from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import RenderFetchError
from harvestman.model.records import HttpRequest
from harvestman.net.addrguard import AddressGuard
from tests.support.browserloop import BrowserLoop, Canary
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.renderpages import API_MARKER, INLINE_MARKER, auto_cases, redirects, write_render_site

HOST = "127.88.19.1"
CANARY = "127.88.19.9"
CHROMIUM = "/usr/bin/chromium"
RENDER_TIMEOUT = "4"


def _require_browser() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("Chromium is not installed (apt-get install chromium; `bash .ci/run` does it)")
    pytest.importorskip("playwright.async_api", reason="pip install playwright (the test extra has it)")


@dataclasses.dataclass
class Site:
    server: NginxServer
    canary: Canary
    root: str

    def url(self, path: str) -> str:
        return self.root + path

    def paths(self) -> list[str]:
        return [e.uri for e in self.server.requests()]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_nginx()
    _require_browser()
    www = tmp_path_factory.mktemp("render-site")
    canary = Canary(CANARY)
    port = free_port(HOST)
    write_render_site(www / HOST, canary.url)
    server = NginxServer(www, [HOST], port, extra_server=redirects(canary.url))
    with server:
        try:
            yield Site(server, canary, f"http://{HOST}:{port}")
        finally:
            canary.close()


def _crawl(site: Site, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    done = run_cli("crawl", site.url("/"), "--out", str(out), "--allow-net", f"{HOST}/32", "--quiet",
                   "--workers", "1", "--max-wait", "1", "--render-timeout", RENDER_TIMEOUT, *extra,
                   timeout=240)
    assert done.returncode == 0, done.stderr
    return done


def _download_log(out: Path) -> dict[str, str]:
    lines = (out / "download.log").read_text().splitlines()
    return {line.split("|", 1)[0]: line.split("|", 1)[1] for line in lines}


def _records(out: Path) -> list[tuple[str, dict[str, str], bytes]]:
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                head = {k: v for k, v in record.rec_headers.headers}
                body = record.content_stream().read()
                found.append((record.rec_type, head, body))
    return found


@pytest.fixture(scope="module")
def always(site: Site, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One crawl with --render always --screenshot, third parties let through (so that the canary's
    requests meet the address guard itself); what nginx served during it."""
    before = len(site.paths())
    out = tmp_path_factory.mktemp("always") / "out"
    _crawl(site, out, "--render", "always", "--render-third-party", "--screenshot")
    return out, site.paths()[before:]


# ----- links and text made by scripts ----------------------------------------------------------


def test_always_follows_links_inserted_by_inline_scripts_and_from_a_json_api(
        site: Site, always: tuple[Path, list[str]]) -> None:
    out, served = always
    log = _download_log(out)
    for path in ("/from-inline-1.html", "/from-inline-2.html", "/from-api-1.html", "/from-api-2.html",
                 "/after-canary.html", "/after-kinds.html", "/static-target.html"):
        assert log.get(site.url(path)) == "Success", (path, log)
    assert "/data/items.json" in served  # the API call went out through harvestman, to the page's host


def test_never_renders_nothing_and_sees_no_script_links(site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _crawl(site, out)
    log = _download_log(out)
    assert site.url("/inline.html") in log
    assert not any("from-inline" in url or "from-api" in url for url in log)
    assert not [kind for kind, _, _ in _records(out) if kind in ("conversion", "resource")]


def test_the_default_crawl_does_not_import_playwright(site: Site, tmp_path: Path) -> None:
    code = ("import sys\nfrom harvestman.app.cli import main\n"
            f"main(['crawl', {site.url('/static.html')!r}, '--out', {str(tmp_path / 'o')!r}, '--quiet', "
            f"'--allow-net', '{HOST}/32', '--workers', '1', '--max-pages', '1'])\n"
            "print('playwright' in ' '.join(sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr


# ----- what is stored --------------------------------------------------------------------------


def test_warc_holds_the_original_response_the_rendered_dom_and_a_screenshot(
        site: Site, always: tuple[Path, list[str]]) -> None:
    out, _ = always
    records = _records(out)
    url = site.url("/inline.html")
    [response] = [(h, b) for kind, h, b in records if kind == "response" and h["WARC-Target-URI"] == url]
    assert INLINE_MARKER.encode() not in response[1]  # as served: the script only
    assert b"innerHTML" in response[1]
    response_id = response[0]["WARC-Record-ID"]
    [dom] = [(h, b) for kind, h, b in records if kind == "conversion" and h["WARC-Target-URI"] == url]
    assert dom[0]["WARC-Refers-To"] == response_id
    assert f"<p>{INLINE_MARKER}</p>".encode() in dom[1] and b"/from-inline-1.html" in dom[1]
    [shot] = [(h, b) for kind, h, b in records if kind == "resource"
              and h["WARC-Target-URI"] == f"urn:screenshot:{url}"]
    assert shot[0]["WARC-Refers-To"] == response_id and shot[0]["Content-Type"] == "image/png"
    assert shot[1].startswith(b"\x89PNG\r\n\x1a\n") and len(shot[1]) > 1000
    [api] = [b for kind, h, b in records
             if kind == "conversion" and h["WARC-Target-URI"] == site.url("/api.html")]
    assert API_MARKER.encode() in api


def test_export_lists_rendered_pages_with_their_dom_and_screenshot(
        site: Site, always: tuple[Path, list[str]]) -> None:
    out, _ = always
    done = run_cli("export", str(out), "--what", "renders")
    assert done.returncode == 0, done.stderr
    rows = {row["url"]: row for row in map(json.loads, (out / "renders.jsonl").read_text().splitlines())}
    wanted = ("/", "/inline.html", "/api.html", "/canary.html", "/kinds.html")
    assert {site.url(p) for p in wanted} <= set(rows)
    assert site.url("/endless.html") not in rows and site.url("/unsettled.html") not in rows
    row = rows[site.url("/api.html")]
    assert row["reason"] == "always" and row["requests"] >= 1 and row["screenshot_bytes"] > 1000
    assert row["dom_offset"] is not None and row["screenshot_mode"] == "viewport"
    bad = run_cli("export", str(out), "--what", "renders", "--format", "parquet")
    assert bad.returncode == 2 and "jsonl" in bad.stderr


# ----- every request under the crawl's rules -------------------------------------------------------


def test_a_scripts_calls_to_a_loopback_canary_never_reach_it(
        site: Site, always: tuple[Path, list[str]]) -> None:
    out, _ = always
    assert site.canary.hits == 0
    log = _download_log(out)
    assert log[site.url("/canary.html")] == "Success"
    meta = [b.decode() for kind, h, b in _records(out)
            if kind == "metadata" and h["WARC-Target-URI"] == site.url("/canary.html")]
    refused = [line for line in meta[0].splitlines() if line.startswith("renderRefused:")]
    assert any("blocked_address" in line and "/fetch" in line for line in refused), refused
    assert any("kind image blocked" in line for line in refused), refused


def test_robots_txt_and_blocked_kinds_hold_for_the_pages_requests(
        site: Site, always: tuple[Path, list[str]]) -> None:
    out, served = always
    assert "/private/secret.json" not in served  # robots.txt disallows it; api.html's script asks for it
    assert "/img.png" not in served  # images are blocked by default
    meta = [b.decode() for kind, h, b in _records(out)
            if kind == "metadata" and h["WARC-Target-URI"] == site.url("/api.html")]
    assert "renderRefused: disallowed by robots.txt " + site.url("/private/secret.json") in meta[0]


def test_third_party_hosts_are_refused_by_default(site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _crawl(site, out, "--render", "always", "--max-pages", "5", "--include", "canary|/$")
    meta = [b.decode() for kind, h, b in _records(out)
            if kind == "metadata" and h["WARC-Target-URI"] == site.url("/canary.html")]
    assert "renderRefused: third-party host " + site.canary.url + "/fetch" in meta[0]
    assert site.canary.hits == 0


def test_the_browsers_requests_take_turns_on_the_hosts_clock(site: Site, tmp_path: Path) -> None:
    before = len(site.server.requests())
    _crawl(site, tmp_path / "out", "--render", "always", "--delay", "0.4", "--include", "api\\.html|/$",
           "--max-depth", "1")
    entries = [e for e in site.server.requests()[before:] if e.uri != "/robots.txt"]
    uris = [e.uri for e in entries]
    assert "/data/items.json" in uris and "/api.html" in uris
    starts = sorted(e.start for e in entries)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.35, (uris, gaps)  # ms resolution in nginx's log: a little slack


# ----- errors in the page --------------------------------------------------------------------------


def test_an_endless_script_and_a_page_that_never_settles_end_with_an_error(
        site: Site, always: tuple[Path, list[str]]) -> None:
    out, _ = always
    log = _download_log(out)
    assert log[site.url("/endless.html")].startswith("FAILED|render: the page did not load within")
    assert log[site.url("/unsettled.html")].startswith("FAILED|render: the page did not settle")
    # The crawl went on: pages after them were fetched and rendered.
    assert log[site.url("/static-target.html")] == "Success"
    status = json.loads(run_cli("status", str(out), "--json").stdout)
    assert status["states"]["fetched"] >= 12


# ----- auto ---------------------------------------------------------------------------------------


def test_auto_renders_the_shells_and_not_the_documents(site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _crawl(site, out, "--render", "auto")
    log = _download_log(out)
    assert log[site.url("/from-api-1.html")] == "Success"
    assert log[site.url("/from-inline-2.html")] == "Success"
    rendered = {h["WARC-Target-URI"] for kind, h, _ in _records(out) if kind == "conversion"}
    assert site.url("/inline.html") in rendered and site.url("/api.html") in rendered
    assert site.url("/") not in rendered and site.url("/static.html") not in rendered


def test_render_rules_choose_the_mode_per_url_pattern(site: Site, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[rendering.render_rules]\n"inline" = "always"\n')
    out = tmp_path / "out"
    _crawl(site, out, "--config", str(config), "--include", "inline|/$", "--max-depth", "1")
    rendered = {h["WARC-Target-URI"] for kind, h, _ in _records(out) if kind == "conversion"}
    assert rendered == {site.url("/inline.html")}


def test_download_renders_pages_when_its_render_settings_say_so(site: Site) -> None:
    url = site.url("/inline.html")
    [plain] = list(harvestman.download([url], allow_net=[f"{HOST}/32"]))
    [rendered] = list(harvestman.download([url], allow_net=[f"{HOST}/32"], render="always",
                                          render_timeout=float(RENDER_TIMEOUT)))
    assert plain.ok and plain.rendering is None and INLINE_MARKER not in (plain.text or "")
    assert rendered.ok and rendered.rendering is not None and INLINE_MARKER in (rendered.text or "")


def test_shell_heuristic_on_labelled_pages() -> None:
    cases = auto_cases(4)
    right = sum(bool(shell_reason(case.html)) == case.script_built for case in cases)
    assert right / len(cases) >= 0.9
    assert shell_reason("<html><body><p>hello</p></body></html>") == ""  # no script: never a shell
    assert shell_reason("<html><body><div id=root></div><script src=a.js></script></body></html>")


# ----- the renderer itself, on one browser for the session -----------------------------------------


@pytest.fixture(scope="session")
def session_browser() -> Iterator[tuple[BrowserLoop, RenderingTransport]]:
    _require_browser()
    loop = BrowserLoop()
    settings = CrawlConfig(render="always", render_recycle=3, render_concurrency=1,
                           render_timeout=4.0).rendering

    async def make() -> tuple[CurlTransport, RenderingTransport]:
        inner = CurlTransport(TransportSettings(user_agent="harvestman-test",
                                                guard=AddressGuard([f"{HOST}/32"])))
        renderer = BrowserRenderer(settings, inner, user_agent="harvestman-test")
        return inner, RenderingTransport(inner, renderer,
                                         settings)

    inner, transport = loop.run(make())
    try:
        yield loop, transport
    finally:
        loop.run(transport.aclose())
        loop.run(inner.aclose())
        loop.close()


def _fetch(loop: BrowserLoop, transport: RenderingTransport, url: str) -> Any:
    return loop.run(transport.fetch(HttpRequest(url, timeout=30)))


def test_contexts_are_recycled_after_n_pages(site: Site, session_browser: Any) -> None:
    loop, transport = session_browser
    renderer = transport.renderer
    made = renderer.contexts_made
    for _ in range(7):
        response = _fetch(loop, transport, site.url("/inline.html"))
        assert INLINE_MARKER in response.rendering.dom
    assert renderer.contexts_made - made >= 2  # 7 pages, 3 a context


def test_a_crashed_browser_ends_the_page_with_an_error_and_the_next_page_renders(
        site: Site, session_browser: Any) -> None:
    loop, transport = session_browser
    renderer = transport.renderer
    _fetch(loop, transport, site.url("/inline.html"))
    pids = renderer.browser_pids()
    assert pids
    restarts = renderer.restarts

    async def crash_during_render() -> str:
        task = asyncio.ensure_future(transport.fetch(HttpRequest(site.url("/endless.html"), timeout=30)))
        await asyncio.sleep(1.0)
        for pid in pids:
            with_suppress_kill(pid)
        try:
            await task
        except RenderFetchError as exc:
            return exc.message
        return ""

    message = loop.run(crash_during_render())
    assert message  # the page failed, with a recorded message
    response = _fetch(loop, transport, site.url("/api.html"))
    assert API_MARKER in response.rendering.dom
    assert renderer.restarts == restarts + 1


def with_suppress_kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_the_byte_budget_caps_a_pages_requests(site: Site, session_browser: Any) -> None:
    loop, transport = session_browser
    renderer = transport.renderer
    settings = renderer.settings
    renderer.settings = dataclasses.replace(settings, render_max_bytes=10)
    try:
        response = _fetch(loop, transport, site.url("/api.html"))
    finally:
        renderer.settings = settings
    assert API_MARKER not in response.rendering.dom
    assert any(why == "byte budget spent" for _, why in response.rendering.refused)


def test_nothing_escapes_the_routing_to_the_canary(site: Site, session_browser: Any) -> None:
    loop, transport = session_browser
    renderer = transport.renderer
    renderer.settings = dataclasses.replace(renderer.settings, render_third_party=True)
    try:
        response = _fetch(loop, transport, site.url("/canary.html"))
        time.sleep(0.5)
    finally:
        renderer.settings = dataclasses.replace(renderer.settings, render_third_party=False)
    assert site.canary.hits == 0
    # The WebSocket never reached the route: it went to the dead proxy, which closed it.
    assert any(f"{CANARY}:{site.canary.port}" in line for line in renderer._hole.attempts)
    assert "/after-canary.html" in response.rendering.dom


def test_a_selector_settles_a_page_that_never_goes_idle(site: Site, session_browser: Any) -> None:
    loop, transport = session_browser
    renderer = transport.renderer
    settings = renderer.settings
    renderer.settings = dataclasses.replace(settings, render_settle="selector:#root")
    try:
        response = _fetch(loop, transport, site.url("/unsettled.html"))
        with pytest.raises(RenderFetchError, match="did not show #nowhere"):
            renderer.settings = dataclasses.replace(settings, render_settle="selector:#nowhere",
                                                    render_timeout=2)
            _fetch(loop, transport, site.url("/inline.html"))
    finally:
        renderer.settings = settings
    assert response.rendering.settle == "selector:#root"
    assert '<div id="root">' in response.rendering.dom


def test_a_pages_requests_follow_redirects_each_hop_judged(site: Site, session_browser: Any) -> None:
    loop, transport = session_browser
    renderer = transport.renderer
    settings = renderer.settings
    renderer.settings = dataclasses.replace(settings, render_third_party=True)
    try:
        response = _fetch(loop, transport, site.url("/redirects.html"))
    finally:
        renderer.settings = settings
    assert API_MARKER in response.rendering.dom  # /data/moved.json -> /data/items.json
    refused = dict((url, why) for url, why in response.rendering.refused)
    assert refused[site.canary.url + "/redirected"].startswith("blocked_address")
    assert site.canary.hits == 0


def test_a_full_page_screenshot_covers_the_whole_page(site: Site, session_browser: Any) -> None:
    loop, transport = session_browser
    renderer = transport.renderer
    settings = renderer.settings
    shots = {}
    try:
        for mode in ("viewport", "full"):
            renderer.settings = dataclasses.replace(settings, screenshot=mode)
            shots[mode] = _fetch(loop, transport, site.url("/tall.html")).rendering.screenshot
    finally:
        renderer.settings = settings

    def height(png: bytes) -> int:  # from the IHDR chunk
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        return int.from_bytes(png[20:24], "big")

    assert height(shots["viewport"]) == 800
    assert height(shots["full"]) >= 3000


# ----- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    (["--render", "sometimes"], "invalid choice"),
    (["--render", "always", "--render-settle", "quiet"], "render_settle"),
    (["--render", "always", "--render-block", "document"], "render_block"),
    (["--render", "always", "--render-concurrency", "0"], "render_concurrency"),
    (["--render", "always", "--browser", "/nonexistent/chromium"], "apt-get install chromium"),
])
def test_bad_render_options_are_refused_in_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    done = run_cli("crawl", "http://127.88.19.1:1/", "--out", str(tmp_path / "o"), *args)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def test_only_net_holds_for_every_request_a_page_makes(site: Site, tmp_path: Path) -> None:
    """--allow-net lets the canary's whole range through; --only-net confines the crawl to the site's
    address, so the page's script calls to the canary are refused, each with its error class."""
    out = tmp_path / "out"
    done = run_cli("crawl", site.url("/canary.html"), "--out", str(out), "--allow-net", "127.88.19.0/24",
                   "--only-net", f"{HOST}/32", "--quiet", "--workers", "1", "--max-wait", "1",
                   "--render-timeout", RENDER_TIMEOUT, "--render", "always", "--render-third-party",
                   "--max-pages", "1", timeout=240)
    assert done.returncode == 0, done.stderr
    assert site.canary.hits == 0
    meta = [b.decode() for kind, h, b in _records(out)
            if kind == "metadata" and h["WARC-Target-URI"] == site.url("/canary.html")]
    refused = [line for line in meta[0].splitlines() if line.startswith("renderRefused:")]
    assert any("outside_net" in line and "/fetch" in line for line in refused), refused

"""The web page of `harvestman serve` in a real browser: Playwright drives Debian's Chromium (never a
downloaded one) against the real server (a subprocess on loopback) and an nginx-served site.

One server, one site and one browser for the module; the tests run in order and share a signed-in
browser context (sign in, start a crawl from the form, watch it finish, the URL table, a stored page,
search, phone width, stop / resume / delete). Screenshots of each step go to tests/artifacts/serve_ui/.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.crawlcheck import harvestman_cmd
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

CHROMIUM = "/usr/bin/chromium"
SITE_HOST = "127.88.77.1"
SERVE_HOST = "127.0.0.1"
TOKEN = "ui-test-token-4f1c9a"
UNIQUE_WORD = "zanzibarquokka"  # written into exactly one page of the site
ARTIFACTS = Path(__file__).parent / "artifacts" / "serve_ui"
START_TIMEOUT = 30.0
WAIT_MS = 20_000  # every browser wait is bounded by this unless it says otherwise
CRAWL_MS = 90_000  # the crawl of the small site, start to finish
STATE_JS = "document.querySelector('.title-row [data-testid=state]')?.textContent"
PAGES_JS = "Number(document.querySelector('[data-testid=pages]').textContent.replace(/,/g, ''))"
OVERFLOW_JS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


def _require_browser() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("Chromium is not installed (apt-get install chromium; `bash .ci/run` does it)")
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra has it)")
    pytest.importorskip("fastapi", reason="pip install 'harvestman[serve]' (the test extra has it)")


@dataclass
class Site:
    spec: SiteSpec
    unique_page: str  # the one page holding UNIQUE_WORD

    @property
    def seed(self) -> str:
        return self.spec.seeds[0]


@dataclass
class Served:
    base: str
    root: Path
    log: Path


@dataclass
class Shared:
    """What one test leaves for the next (the tests of this module run in order)."""

    crawl_id: str = ""
    notes: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_nginx()
    _require_browser()
    www = tmp_path_factory.mktemp("serve-ui-site")
    port = free_port(SITE_HOST)
    spec = generate_site(www, [SITE_HOST], pages_per_host=12, links_per_page=3, seed=17, port=port)
    # One reachable page gets a word no other page has, for the search step.
    unique = sorted(u for u in spec.reachable if u.endswith(".html"))[0]
    path = www / SITE_HOST / unique.split("/", 3)[3]
    html = path.read_text(encoding="utf-8")
    html = html.replace("</body>", f"<p>The {UNIQUE_WORD} lives here.</p>\n</body>")
    path.write_text(html, encoding="utf-8")
    with NginxServer(www, [SITE_HOST], port):
        yield Site(spec, unique)


def _get(url: str, token: str = "") -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def served(site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("serve-ui-root")
    port = free_port(SERVE_HOST)
    log = root.parent / "serve-ui-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            harvestman_cmd("serve", "--data", str(root), "--host", SERVE_HOST, "--port", str(port),
                           "--token", TOKEN, "--allow-net", "127.88.77.0/24"),
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    base = f"http://{SERVE_HOST}:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"harvestman serve exited ({proc.returncode}): {log.read_text(errors='replace')}")
            try:
                if _get(base + "/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"harvestman serve did not answer /health in {START_TIMEOUT}s: "
                            f"{log.read_text(errors='replace')}")
            time.sleep(0.2)
        yield Served(base, root, log)
    finally:
        # Crawls the server started run in their own sessions: stop them through the API first.
        try:
            status, body = _get(base + "/api/crawls", TOKEN)
            for crawl in json.loads(body).get("crawls", []) if status == 200 else []:
                if crawl.get("state") in ("running", "stopping"):
                    req = urllib.request.Request(f"{base}/api/crawls/{crawl['id']}/stop", method="POST",
                                                 headers={"Authorization": f"Bearer {TOKEN}"})
                    with urllib.request.urlopen(req, timeout=5):
                        pass
        except (OSError, ValueError):
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def shared() -> Shared:
    return Shared()


@pytest.fixture(scope="module")
def page(browser: Any, served: Served) -> Iterator[Any]:
    """The signed-in tab the tests share (desktop size)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=served.base)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield tab
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def shot(tab: Any, name: str) -> None:
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _sign_in(tab: Any, token: str) -> None:
    tab.goto("/login")
    tab.fill("#token", token)
    tab.click("button[type=submit]")


def test_a_wrong_token_is_refused(browser: Any, served: Served) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=served.base)
    try:
        tab = context.new_page()
        tab.set_default_timeout(WAIT_MS)
        tab.goto("/")
        tab.wait_for_url(re.compile(r"/login"))  # not signed in: the page sends you to sign in
        _sign_in(tab, "not-the-token")
        error = tab.locator("#login-error")
        error.wait_for(state="visible")
        assert "wrong token" in error.inner_text().lower()
        shot(tab, "00-wrong-token")
        # Still not signed in: the API refuses this browser.
        assert context.request.get("/api/crawls").status == 401
    finally:
        context.close()


def test_sign_in(page: Any, served: Served) -> None:
    page.goto("/")
    page.wait_for_url(re.compile(r"/login"))
    shot(page, "01-login")
    _sign_in(page, TOKEN)
    page.wait_for_url(re.compile(r"/(#.*)?$"))
    page.locator("form.start-form").wait_for()
    page.locator("[data-testid=crawls]").wait_for()
    shot(page, "02-signed-in")


def test_docs_render_with_no_network_but_the_servers(page: Any, served: Served) -> None:
    """/docs (Swagger UI) in the signed-in browser, every request to anywhere but loopback refused:
    the operations list shows, and the page asked for nothing off this machine."""
    tab = page.context.new_page()
    tab.set_default_timeout(WAIT_MS)
    outside: list[str] = []

    def loopback_only(route: Any) -> None:
        host = urllib.parse.urlsplit(route.request.url).hostname or ""
        if host == "localhost" or host.startswith("127."):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort("internetdisconnected")

    tab.route("**/*", loopback_only)
    try:
        tab.goto("/docs")
        tab.locator(".opblock-summary-path[data-path='/api/crawls']").first.wait_for()
        assert tab.locator(".opblock").count() >= 10  # the API's operations, listed
        shot(tab, "02b-docs-offline")
    finally:
        tab.close()
    assert not outside, f"/docs asked for something off this machine: {outside}"


def _fill_start_form(page: Any, site: Site, *, max_pages: str = "100", resolve: str = "",
                     delay: str = "") -> None:
    page.goto("/#/")
    page.locator("form.start-form").wait_for()
    page.fill("#f-seeds", site.seed)
    page.fill("#f-max_pages", max_pages)
    page.select_option("#f-scope", "host")
    page.locator("details.more").evaluate("d => { d.open = true; }")
    # No network settings: the crawl takes the server's --allow-net (its network ceiling).
    page.fill("#f-resolve", resolve)
    page.fill("#f-delay", delay)


def test_invalid_settings_are_shown_next_to_the_form(page: Any, site: Site) -> None:
    _fill_start_form(page, site, resolve="this is not HOST:PORT:ADDR")
    page.click("form.start-form button[type=submit]")
    error = page.locator(".field[data-field=resolve] .field-error")
    error.wait_for(state="visible")
    assert error.inner_text().strip()
    assert page.locator("[data-testid=form-error]").is_visible()
    assert page.url.endswith("#/")  # no crawl was started: still on the list
    shot(page, "03-invalid-settings")


def test_start_a_crawl_and_watch_it_finish(page: Any, site: Site, shared: Shared) -> None:
    _fill_start_form(page, site)
    shot(page, "04-start-form")
    page.click("form.start-form button[type=submit]")
    page.wait_for_url(re.compile(r"#/crawls/[0-9a-f]{12}$"))
    shared.crawl_id = page.url.rsplit("/", 1)[1]
    page.locator("[data-testid=state]").first.wait_for()
    shot(page, "05-crawl-started")
    page.wait_for_function(
        f"() => {STATE_JS} === 'finished'",
        timeout=CRAWL_MS,
    )
    expected = len(site.spec.reachable)
    page.wait_for_function(
        f"() => {PAGES_JS} >= {expected}"
    )
    pages = int(page.locator("[data-testid=pages]").inner_text().replace(",", ""))
    assert pages == expected, (pages, expected)
    # The chart drew the crawl's pages per second from its events.
    page.wait_for_function("() => Number(document.querySelector('[data-testid=chart]').dataset.points) > 0")
    assert page.locator("[data-testid=chart] canvas").count() == 1
    assert "200" in page.locator("[data-testid=statuses]").inner_text()
    assert SITE_HOST in page.locator("[data-testid=hosts]").inner_text()
    assert "fetched" in page.locator("[data-testid=events]").inner_text()
    assert page.locator("[data-testid=live]").inner_text() == "ended"
    shot(page, "06-crawl-finished")
    # The crawl is listed with its state.
    page.goto("/#/")
    row = page.locator(f"[data-testid=crawls] tr[data-id='{shared.crawl_id}']")
    row.wait_for()
    assert "finished" in row.inner_text()
    shot(page, "07-list")


def test_url_table_and_a_stored_page(page: Any, site: Site, shared: Shared, served: Served) -> None:
    assert shared.crawl_id, "the crawl test did not run"
    page.goto(f"/#/crawls/{shared.crawl_id}")
    page.click("text=Browse URLs")
    page.wait_for_url(re.compile(r"/urls$"))
    rows = page.locator("[data-testid=urls] tbody tr")
    rows.first.wait_for()
    assert rows.count() >= len(site.spec.reachable)
    shot(page, "08-urls")
    # Paging by cursor, five rows a page: the next page holds other URLs, and back again.
    page.goto(f"/#/crawls/{shared.crawl_id}/urls?limit=5")
    page.wait_for_function("() => document.querySelectorAll('[data-testid=urls] tbody tr').length === 5")
    first_page = rows.all_inner_texts()
    page.click("text=Next ›")
    page.wait_for_function("() => document.querySelector('.pager span').textContent === 'page 2'")
    second_page = rows.all_inner_texts()
    assert second_page and not set(first_page) & set(second_page)
    page.click("text=‹ Previous")
    page.wait_for_function("() => document.querySelector('.pager span').textContent === 'page 1'")
    assert rows.all_inner_texts() == first_page
    # Filters: fetched URLs whose text holds the unique page's path.
    page.select_option("select[name=state]", "fetched")
    page.fill("input[name=q]", site.unique_page.rsplit("/", 1)[1])
    page.click(".filters button[type=submit]")
    page.wait_for_url(re.compile(r"state=fetched"))
    page.wait_for_function("() => document.querySelectorAll('[data-testid=urls] tbody tr').length === 1")
    link = page.locator("[data-testid=urls] tbody tr a")
    assert link.inner_text() == site.unique_page
    shot(page, "09-urls-filtered")
    link.click()
    page.wait_for_url(re.compile(r"/page\?url="))
    page.locator("[data-testid=page-status]").wait_for()
    assert page.locator("[data-testid=page-status]").inner_text() == "200"
    body = page.locator("[data-testid=page-body]")
    # The body is shown as text: its markup is visible, not rendered.
    assert "<!DOCTYPE html>" in body.inner_text()
    assert UNIQUE_WORD in body.inner_text()
    assert body.locator("*").count() == 0
    assert "content-type" in page.locator("[data-testid=page-headers]").inner_text().lower()
    raw = page.locator("a", has_text="Raw body").get_attribute("href")
    assert raw and "raw=1" in raw
    answer = page.context.request.get(served.base + raw)
    assert answer.status == 200 and UNIQUE_WORD in answer.text()
    assert "sandbox" in answer.headers.get("content-security-policy", "")
    shot(page, "10-page")


def test_search_and_open_a_hit(page: Any, site: Site, shared: Shared) -> None:
    assert shared.crawl_id, "the crawl test did not run"
    page.goto(f"/#/crawls/{shared.crawl_id}")
    page.fill("form[role=search] input[name=q]", UNIQUE_WORD)
    page.press("form[role=search] input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"/search\?q="))
    hits = page.locator("[data-testid=hits] li")
    hits.first.wait_for(timeout=60_000)  # the first search builds the crawl's index
    assert hits.count() == 1
    highlight = hits.first.locator(".snippet b")
    assert highlight.count() >= 1 and UNIQUE_WORD in highlight.first.inner_text().lower()
    # Only <b> came from the snippet's HTML.
    assert hits.first.locator(".snippet *:not(b)").count() == 0
    shot(page, "11-search")
    hits.first.locator("a.hit-title").click()
    page.wait_for_url(re.compile(r"/page\?url="))
    assert page.locator("[data-testid=page-url]").inner_text() == site.unique_page
    page.locator("[data-testid=page-body]").wait_for()
    assert UNIQUE_WORD in page.locator("[data-testid=page-body]").inner_text()
    shot(page, "12-search-hit")


def test_snippets_keep_only_b_tags(page: Any) -> None:
    """The snippet builder copies text and <b> alone, whatever HTML a snippet holds."""
    page.goto("/#/")
    page.locator("[data-testid=crawls]").wait_for()
    out = page.evaluate("""async () => {
        const { snippetNodes } = await import('/static/dom.js');
        const box = document.createElement('p');
        window.__hit = 0;
        box.append(...snippetNodes(
            'a &lt;x&gt; <b>bold</b> <img src=x onerror="window.__hit=1"><script>window.__hit=2</script>' +
            '<a href="javascript:window.__hit=3">link</a> <b> two </b><b onclick="window.__hit=4">x</b>'));
        document.body.append(box);
        box.querySelectorAll('b').forEach((b) => b.click());
        await new Promise((r) => setTimeout(r, 100));
        const tags = [...box.querySelectorAll('*')].map((e) => e.tagName);
        const bold = [...box.querySelectorAll('b')].map((e) => e.textContent);
        const text = box.textContent;
        box.remove();
        return { tags, bold, text, hit: window.__hit };
    }""")
    assert out["hit"] == 0
    assert out["tags"] == ["B", "B"] and out["bold"] == ["bold", " two "]
    assert out["text"].startswith("a <x> bold <img src=x onerror=")


def _overflow(tab: Any) -> int:
    return int(tab.evaluate(OVERFLOW_JS))


def test_phone_width_has_no_horizontal_overflow(browser: Any, page: Any, site: Site, shared: Shared,
                                                served: Served) -> None:
    assert shared.crawl_id, "the crawl test did not run"
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=served.base,
                                  storage_state=page.context.storage_state(), is_mobile=True, has_touch=True)
    try:
        tab = context.new_page()
        tab.set_default_timeout(WAIT_MS)
        for name, route, ready in (
            ("13-phone-list", "/#/", "[data-testid=crawls] tbody tr"),
            ("14-phone-crawl", f"/#/crawls/{shared.crawl_id}", "[data-testid=chart] canvas"),
            ("15-phone-urls", f"/#/crawls/{shared.crawl_id}/urls", "[data-testid=urls] tbody tr"),
            ("15b-phone-page", f"/#/crawls/{shared.crawl_id}/page?url={quote(site.unique_page, safe='')}",
             "[data-testid=page-body]"),
            ("15c-phone-search", f"/#/crawls/{shared.crawl_id}/search?q={UNIQUE_WORD}",
             "[data-testid=hits] li"),
        ):
            tab.goto(route)
            tab.locator(ready).first.wait_for()
            shot(tab, name)
            assert _overflow(tab) <= 0, f"{route} is wider than the phone"
    finally:
        context.close()


def test_stop_resume_and_delete_with_a_confirm(page: Any, site: Site) -> None:
    # A slow crawl (a second between pages) stays running long enough to be stopped.
    _fill_start_form(page, site, max_pages="50", delay="1")
    page.click("form.start-form button[type=submit]")
    page.wait_for_url(re.compile(r"#/crawls/[0-9a-f]{12}$"))
    crawl_id = page.url.rsplit("/", 1)[1]
    state = page.locator(".title-row [data-testid=state]")
    stop = page.locator("button", has_text=re.compile(r"^Stop$"))
    stop.wait_for(state="visible")
    # Under way, and the page follows it live (it was opened before the first page came).
    page.wait_for_function(f"() => {PAGES_JS} >= 2")
    assert page.locator("[data-testid=live]").inner_text() == "live"
    stop.click()
    confirm = page.locator(".confirm")
    confirm.wait_for(state="visible")
    shot(page, "16-stop-confirm")
    confirm.locator("button", has_text="Stop crawl").click()
    page.wait_for_function(
        f"() => ['stopped', 'finished'].includes({STATE_JS})",
        timeout=CRAWL_MS,
    )
    stopped_as = state.inner_text()
    shot(page, "17-stopped")
    if stopped_as == "stopped":
        page.locator("button", has_text="Resume").click()
        page.wait_for_function(
            f"() => {STATE_JS} !== 'stopped'"
        )
        assert state.inner_text() in ("running", "finished")
        shot(page, "18-resumed")
    # Delete asks first; cancelling keeps the crawl.
    page.locator("button", has_text="Delete").first.click()
    confirm.wait_for(state="visible")
    confirm.locator("button", has_text="Cancel").click()
    assert confirm.is_hidden()
    page.locator("button", has_text="Delete").first.click()
    confirm.locator("button", has_text="Delete for good").click()
    page.wait_for_url(re.compile(r"#/$"), timeout=CRAWL_MS)
    page.locator("[data-testid=crawls]").wait_for()
    page.wait_for_function(f"() => !document.querySelector(\"tr[data-id='{crawl_id}']\")")
    shot(page, "19-deleted")


def test_sign_out(page: Any) -> None:
    page.goto("/#/")
    page.locator("[data-testid=crawls]").wait_for()
    page.click("#logout")
    page.wait_for_url(re.compile(r"/login"))
    assert page.context.request.get("/api/crawls").status == 401
    page.goto("/")
    page.wait_for_url(re.compile(r"/login"))  # the session is gone: back to sign in
    shot(page, "20-signed-out")

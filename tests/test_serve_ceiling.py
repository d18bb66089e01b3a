"""The server's network ceiling (serve/ceiling.py): every route that makes `harvestman serve` fetch, tried
against a canary server on 127.0.0.1 while the server may reach 127.9.3.0/24 only. The canary must see
no request, whatever the route, the settings, a redirect, a robots.txt Sitemap line, a rendered page's
sub-request, a cycle step or a resume. And crawls started through the API and the web page's sign-in
take the server's rules: they fetch a site inside the range with no network settings of their own.

One real server process, one site and one canary for the module; each crawl is a few small pages.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvestman.serve.ceiling import CeilingError, NetCeiling
from harvestman.serve.layout import read_json, write_json
from tests.support.crawlcheck import harvestman_cmd
from tests.support.httpserver import RouteServer
from tests.support.proxies import Socks5Proxy
from tests.support.serveproc import ServeProcess, wait_for

pytest.importorskip("fastapi")

RANGE = "127.9.3.0/24"
SITE_HOST = "127.9.3.1"
HTML = {"Content-Type": "text/html; charset=utf-8"}
CHROMIUM = "/usr/bin/chromium"


# ----- the ceiling as a pure function --------------------------------------------------------------


def test_a_request_takes_the_servers_rules_and_may_narrow_them() -> None:
    ceiling = NetCeiling.of({"allow_net": ["127.9.0.0/16"], "resolve": ["site.test:80:127.9.3.1"]})
    assert ceiling.bound({"scope": "any"}) == {
        "scope": "any", "allow_net": ["127.9.0.0/16"], "only_net": [],
        "resolve": ["site.test:80:127.9.3.1"], "proxy": "",
    }
    narrowed = ceiling.bound({"allow_net": ["127.9.3.0/24"], "only_net": ["127.9.3.0/24"],
                              "resolve": ["other.test:80:127.9.3.2", "site.test:80:127.9.3.1"]})
    assert narrowed["allow_net"] == ["127.9.3.0/24"] and narrowed["only_net"] == ["127.9.3.0/24"]
    assert narrowed["resolve"] == ["site.test:80:127.9.3.1", "other.test:80:127.9.3.2"]
    assert ceiling.bound({"allow_net": []})["allow_net"] == []


@pytest.mark.parametrize(("server", "asked", "field"), [
    ({"allow_net": [RANGE]}, {"allow_net": ["0.0.0.0/0"]}, "allow_net"),
    ({"allow_net": [RANGE]}, {"allow_net": ["127.9.0.0/16"]}, "allow_net"),
    ({"allow_net": [RANGE]}, {"allow_net": ["::1/128"]}, "allow_net"),
    ({}, {"allow_net": ["127.0.0.1/32"]}, "allow_net"),
    ({"only_net": [RANGE]}, {"only_net": ["127.0.0.0/8"]}, "only_net"),
    ({"only_net": [RANGE]}, {"only_net": []}, "only_net"),
    ({"allow_net": [RANGE]}, {"resolve": ["site.test:80:127.0.0.1"]}, "resolve"),
    ({"allow_net": [RANGE]}, {"resolve": ["site.test:80:[::ffff:127.0.0.1]"]}, "resolve"),
    ({"allow_net": [RANGE], "only_net": ["127.9.3.0/25"]}, {"resolve": ["site.test:80:127.9.3.200"]},
     "resolve"),
    ({"resolve": ["site.test:80:127.9.3.1"], "allow_net": [RANGE]},
     {"resolve": ["site.test:80:127.9.3.2"]}, "resolve"),
    ({}, {"proxy": "http://127.0.0.1:3128"}, "proxy"),
])
def test_a_request_that_widens_the_rules_is_refused_naming_the_setting(
    server: dict[str, Any], asked: dict[str, Any], field: str
) -> None:
    with pytest.raises(CeilingError) as refused:
        NetCeiling.of(server).bound(asked)
    assert refused.value.field == field and field in str(refused.value)


# ----- the server, its site inside the range, the canary outside it -------------------------------


class Web:
    """A site on 127.9.3.1 whose every page points at the canary (links, a redirect, its robots.txt's
    Sitemap line, a rendered page's image and fetch), and the canary on 127.0.0.1."""

    def __init__(self) -> None:
        self.canary = RouteServer({}, host="127.0.0.1").start()
        bait = self.canary.url
        self.canary.routes.update({
            "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"),
            "/sitemap.xml": (200, {"Content-Type": "application/xml"},
                             f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>'
                             f'{bait("/from-sitemap")}</loc></url></urlset>'.encode()),
            **{path: (200, HTML, b"<title>canary</title><p>the canary answered</p>")
               for path in ("/", "/linked", "/redirected", "/from-sitemap", "/seed", "/injected")},
        })
        self.site = RouteServer({}, host=SITE_HOST).start()
        page = (f'<title>{{title}}</title><p>{{title}}</p><a href="/a">a</a> <a href="/redirect">r</a> '
                f'<a href="{bait("/linked")}">canary</a>')
        self.site.routes.update({
            "/robots.txt": (200, {"Content-Type": "text/plain"},
                            f"User-agent: *\nAllow: /\nSitemap: {bait('/sitemap.xml')}\n".encode()),
            "/": (200, HTML, page.format(title="home").encode()),
            "/a": (200, HTML, page.format(title="page a").encode()),
            "/redirect": (302, {"Location": bait("/redirected")}, b""),
            "/render": (200, HTML, (
                f'<title>rendered</title><p>rendered</p><img src="{bait("/image.png")}">'
                f'<script>fetch("{bait("/fetched")}").catch(() => 0)</script>').encode()),
        })
        self.port = self.site.port
        self.seed = f"http://site.test:{self.port}/"  # pinned by the server's --resolve only

    def stop(self) -> None:
        self.site.stop()
        self.canary.stop()


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    made = Web()
    yield made
    made.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, web: Web) -> Iterator[ServeProcess]:
    extra = ("--allow-net", RANGE, "--resolve", f"site.test:{web.port}:{SITE_HOST}")
    with ServeProcess(tmp_path_factory.mktemp("ceiling") / "root", extra=extra) as proc:
        yield proc


@pytest.fixture(autouse=True)
def canary_sees_nothing(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every test that uses the web: not one request reached the canary during it."""
    web: Web | None = request.getfixturevalue("web") if "web" in request.fixturenames else None
    if web is not None:
        with web.canary.lock:
            web.canary.paths.clear()
    yield
    if web is not None:
        assert web.canary.paths == [], f"the canary was reached: {web.canary.paths}"


def _crawl(server: ServeProcess, seeds: list[str], settings: dict[str, Any],
           headers: dict[str, str] | None = None, auth: bool = True) -> dict[str, Any]:
    reply = server.call("POST", "/api/crawls", {"seeds": seeds, "settings": settings}, headers=headers,
                        auth=auth)
    assert reply.status == 201, reply.body
    return _ended(server, reply.json()["id"])


def _ended(server: ServeProcess, crawl_id: str) -> dict[str, Any]:
    summary: dict[str, Any] = wait_for(
        lambda: (s := server.call("GET", f"/api/crawls/{crawl_id}").json())["state"]
        in ("finished", "failed", "stopped") and s, 60, f"crawl {crawl_id} to end")
    return summary


def _job_ended(server: ServeProcess, path: str) -> dict[str, Any]:
    job: dict[str, Any] = wait_for(
        lambda: (s := server.call("GET", path).json())["state"] in ("finished", "failed") and s, 60, path)
    return job


def _urls(server: ServeProcess, crawl_id: str) -> dict[str, dict[str, Any]]:
    rows = server.call("GET", f"/api/crawls/{crawl_id}/urls?limit=1000").json()["urls"]
    return {row["url"]: row for row in rows}


@pytest.fixture(scope="module")
def api_crawl(server: ServeProcess, web: Web) -> dict[str, Any]:
    """A crawl started through the API with no network settings: the server's rules and pin."""
    return _crawl(server, [web.seed], {"scope": "any", "workers": 1})


def test_an_api_crawl_fetches_inside_the_range_with_no_settings_of_its_own(
    server: ServeProcess, web: Web, api_crawl: dict[str, Any]
) -> None:
    assert api_crawl["state"] == "finished", api_crawl
    rows = _urls(server, api_crawl["id"])
    fetched = {url for url, row in rows.items() if row["state"] == "fetched"}
    assert fetched == {web.seed, f"{web.seed}a"}
    # A link, a redirect's target and the Sitemap robots.txt names, all on the canary: refused.
    refused = {url: row["error_class"] for url, row in rows.items() if row["state"] == "gone"}
    assert refused == dict.fromkeys([web.canary.url("/linked"), f"{web.seed}redirect",
                                     web.canary.url("/sitemap.xml")], "blocked_address"), rows
    stored = server.call("GET", f"/api/crawls/{api_crawl['id']}/page?url={web.seed}a").json()
    assert "page a" in stored["body"]


def test_a_crawl_from_the_web_page_takes_the_servers_rules(server: ServeProcess, web: Web) -> None:
    # The web page's form posts to /api/crawls with the session cookie and the CSRF header.
    page = server.call("GET", "/login", auth=False)
    csrf = re.search(r"harvestman_csrf=([^;]+)", " ".join(page.cookies))
    assert csrf
    signed = server.call("POST", "/login", raw=f"token={server.token}&csrf={csrf[1]}".encode(), auth=False,
                         headers={"Content-Type": "application/x-www-form-urlencoded",
                                  "Cookie": f"harvestman_csrf={csrf[1]}"})
    assert signed.status == 303
    cookies = "; ".join(line.split(";", 1)[0] for line in signed.cookies)
    new_csrf = re.search(r"harvestman_csrf=([^;]+)", cookies)
    assert new_csrf
    done = _crawl(server, [f"{web.seed}a"], {"scope": "any", "workers": 1}, auth=False,
                  headers={"Cookie": cookies, "X-CSRF-Token": new_csrf[1]})
    assert done["state"] == "finished" and done["counts"]["fetched"] == 1, done


@pytest.mark.parametrize(("settings", "field"), [
    ({"allow_net": ["0.0.0.0/0"]}, "allow_net"),
    ({"allow_net": ["127.0.0.1/32"]}, "allow_net"),
    ({"fetch": {"allow_net": ["127.0.0.0/8"]}}, "allow_net"),
    ({"resolve": ["site.test:{port}:127.0.0.1"]}, "resolve"),
    ({"only_net": ["127.0.0.1/32"], "allow_net": ["127.0.0.0/8"]}, "allow_net"),
])
def test_a_request_widening_the_rules_gets_a_403_naming_the_setting(
    server: ServeProcess, web: Web, settings: dict[str, Any], field: str
) -> None:
    if "resolve" in settings:
        settings = {"resolve": [settings["resolve"][0].format(port=web.port)]}
    before = server.call("GET", "/api/crawls").json()["crawls"]
    body = {"seeds": [web.seed], "settings": {"scope": "any", **settings}}
    reply = server.call("POST", "/api/crawls", body)
    assert reply.status == 403, reply.body
    assert reply.json()["field"] == field and field in reply.json()["detail"]
    assert server.call("GET", "/api/crawls").json()["crawls"] == before  # nothing made


def test_a_seed_outside_the_range_fetches_nothing(server: ServeProcess, web: Web) -> None:
    done = _crawl(server, [web.canary.url("/seed")], {"workers": 1})
    assert done["state"] == "failed" and done["counts"].get("fetched", 0) == 0, done


def test_a_resume_of_a_crawl_whose_settings_are_wider_is_refused(
    server: ServeProcess, web: Web, api_crawl: dict[str, Any]
) -> None:
    # serve.json written wider (by hand, or by a server started with wider rules): a resume would
    # queue the new seed on the canary and fetch it with the stored allow_net.
    meta_path = server.root / api_crawl["id"] / "serve.json"
    meta = read_json(meta_path)
    kept = dict(meta)
    meta["seeds"] = [*meta["seeds"], web.canary.url("/seed")]
    meta["settings"] = {**meta["settings"], "allow_net": ["127.0.0.0/8"]}
    write_json(meta_path, meta)
    try:
        reply = server.call("POST", f"/api/crawls/{api_crawl['id']}/resume")
        assert reply.status == 403 and reply.json()["field"] == "allow_net", reply.body
    finally:
        _ended(server, api_crawl["id"])
        write_json(meta_path, kept)


def test_a_cycle_fetch_step_keeps_to_the_server_on_a_folder_with_wider_settings(
    server: ServeProcess, web: Web, api_crawl: dict[str, Any]
) -> None:
    # `harvestman inject` on the served crawl's folder stores a wider --allow-net with the crawl and
    # queues a URL on the canary; the server's generate and fetch steps must not take that rule.
    folder = server.root / api_crawl["id"] / "crawl"
    injected = subprocess.run(
        harvestman_cmd("inject", str(folder), web.canary.url("/injected"), "--allow-net", "127.0.0.0/8"),
        capture_output=True, text=True, timeout=60)
    assert injected.returncode == 0, injected.stderr
    base = f"/api/crawls/{api_crawl['id']}/jobs"
    for body in ({"type": "generate", "top_n": 100}, {"type": "fetch"}):
        reply = server.call("POST", base, body)
        assert reply.status == 202, reply.body
        job = _job_ended(server, f"{base}/{reply.json()['id']}")
        assert job["state"] == "finished", job
    assert "injected" not in str(web.canary.paths)


def test_v1_scrape_map_and_crawl_keep_to_the_range(server: ServeProcess, web: Web) -> None:
    outside = server.call("POST", "/v1/scrape", {"url": web.canary.url("/")})
    assert outside.status == 403 and "blocked" in outside.json()["error"]
    redirected = server.call("POST", "/v1/scrape", {"url": f"{web.seed}redirect"})
    assert redirected.status == 403 and "blocked" in redirected.json()["error"]
    inside = server.call("POST", "/v1/scrape", {"url": f"{web.seed}a", "headers": {"Host": "127.0.0.1"}})
    assert inside.status == 200 and "page a" in inside.json()["data"]["markdown"]
    mapped = server.call("POST", "/v1/map", {"url": web.seed, "includeSubdomains": True})
    assert mapped.status == 200 and f"{web.seed}a" in mapped.json()["links"]
    started = server.call("POST", "/v1/crawl", {"url": web.seed, "allowExternalLinks": True, "limit": 10})
    assert started.status == 200, started.body
    status = wait_for(lambda: (s := server.call("GET", f"/v1/crawl/{started.json()['id']}").json())["status"]
                      in ("completed", "failed") and s, 60, "the /v1 crawl")
    assert {doc["metadata"]["sourceURL"] for doc in status["data"]} == {web.seed, f"{web.seed}a"}


def test_rendered_pages_sub_requests_keep_to_the_range(server: ServeProcess, web: Web) -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    done = _crawl(server, [f"{web.seed}render"],
                  {"render": "always", "render_third_party": True, "render_block": [], "workers": 1,
                   "follow_links": False})
    assert done["state"] == "finished" and done["counts"]["fetched"] == 1, done


def test_the_servers_proxy_carries_its_crawls_and_its_password_stays_hidden(
    tmp_path: Path, web: Web
) -> None:
    with Socks5Proxy() as proxy:
        address = proxy.url.replace("socks5://", "socks5://user:s3cret@")
        extra = ("--allow-net", RANGE, "--resolve", f"site.test:{web.port}:{SITE_HOST}", "--proxy", address)
        with ServeProcess(tmp_path / "root", extra=extra) as server:
            refused = server.call("POST", "/api/crawls", {"seeds": [web.seed], "settings": {"proxy": ""}})
            assert refused.status == 422 and refused.json()["field"] == "proxy"
            done = _crawl(server, [f"{web.seed}a"], {"workers": 1})
            assert done["state"] == "finished" and done["counts"]["fetched"] == 1, done
            assert done["settings"]["proxy"] == address.replace("s3cret", "***")
            assert "s3cret" not in server.call("GET", "/api/crawls").body.decode()
        assert ("ipv4", SITE_HOST, web.port) in proxy.requests


def test_a_seed_the_command_line_refuses_is_refused_by_the_api_in_its_words(
    server: ServeProcess, tmp_path: Path
) -> None:
    reply = server.call("POST", "/api/crawls", {"seeds": ["notaurl"]})
    assert reply.status == 422 and reply.json()["field"] == "seeds", reply.body
    said = reply.json()["detail"]
    assert said.startswith("seed 'notaurl': not a URL harvestman can fetch: ")
    cli = subprocess.run(harvestman_cmd("crawl", "notaurl", "--out", str(tmp_path / "o")),
                         capture_output=True, text=True, timeout=60)
    assert cli.returncode == 2 and f"harvestman: skipped {said}\n" in cli.stderr, cli.stderr
    assert server.call("POST", "/api/crawls", {"seeds": ["http://notaurl/", "notaurl"]}).status == 422

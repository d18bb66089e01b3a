"""`harvestman serve`: every endpoint of the REST API against a real server process (uvicorn on a
loopback port) crawling nginx-served sites; auth, CSRF, bad input, path traversal, a server restart."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvestman.launch.status import run_figures
from tests.support.crawlcheck import harvestman_cmd
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.serveproc import TOKEN, ServeProcess, wait_for
from tests.support.sitegen import SiteSpec, generate_site

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

HOSTS = ["127.3.0.1", "127.3.0.2"]
# The server's network ceiling reaches the sites' addresses; the crawls take it with no settings of theirs.
CEILING = ("--allow-net", "127.3.0.0/16")
NET = {"scope": "any", "workers": 1}
API_GETS = [
    "/api/crawls",
    "/api/crawls/{id}",
    "/api/crawls/{id}/events",
    "/api/crawls/{id}/urls",
    "/api/crawls/{id}/page?url=http://x/",
    "/api/crawls/{id}/search?q=x",
    "/api/crawls/{id}/jobs/{id}",
]
API_POSTS = ["/api/crawls", "/api/crawls/{id}/stop", "/api/crawls/{id}/resume", "/api/crawls/{id}/jobs"]


class Site:
    def __init__(self, nginx: NginxServer, spec: SiteSpec) -> None:
        self.nginx = nginx
        self.spec = spec


def _site(root: Path, pages: int, seed: int) -> Site:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(root, HOSTS, pages, 5, seed=seed, port=port, broken_per_host=0)
    return Site(NginxServer(root, HOSTS, port).start(), spec)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    made = _site(tmp_path_factory.mktemp("site"), 15, seed=3)
    yield made
    made.nginx.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with ServeProcess(tmp_path_factory.mktemp("serve") / "root", extra=CEILING) as proc:
        yield proc


@pytest.fixture(scope="module")
def done_crawl(server: ServeProcess, site: Site) -> dict[str, Any]:
    """A crawl of the site, run to its end through the API."""
    reply = server.call("POST", "/api/crawls", {"seeds": list(site.spec.seeds), "settings": NET})
    assert reply.status == 201, reply.body
    crawl_id = reply.json()["id"]
    assert re.fullmatch(r"[0-9a-f]{12}", crawl_id)
    return _wait_state(server, crawl_id, ("finished",), 90)


def _wait_state(
    server: ServeProcess, crawl_id: str, states: tuple[str, ...], timeout: float
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        summary = server.call("GET", f"/api/crawls/{crawl_id}").json()
        assert summary["state"] != "failed" or "failed" in states, summary
        return summary if summary["state"] in states else None

    return wait_for(check, timeout, f"crawl {crawl_id} to be {states}")


def test_health_needs_no_token_openapi_and_docs_do(server: ServeProcess) -> None:
    assert server.call("GET", "/health", auth=False).json() == {"ok": True}
    paths = server.call("GET", "/openapi.json").json()["paths"]
    assert "/api/crawls/{crawl_id}/events" in paths
    docs = server.call("GET", "/docs")
    assert docs.status == 200
    # Swagger UI's files are the server's own (tests/test_serve_ui.py renders the page offline).
    assets = re.findall(r'(?:src|href)="([^"]+)"', docs.body.decode())
    assert assets and all(a.startswith("/docs/ui/") for a in assets), assets
    for asset in assets:
        assert server.call("GET", asset).status == 200
    assert server.call("GET", "/docs/ui/LICENSE").status == 404  # the files it serves, by name
    # The API's description is behind the token, as the API is.
    for path in ("/docs", "/openapi.json", *assets):
        assert server.call("GET", path, auth=False).status == 401


def test_every_api_endpoint_wants_the_token(server: ServeProcess) -> None:
    some = "0123456789ab"
    for method, paths in (("GET", API_GETS), ("POST", API_POSTS), ("DELETE", ["/api/crawls/{id}"])):
        for path in paths:
            for headers in (
                {},
                {"Authorization": "Bearer wrong-token-wrong-token"},
                {"Authorization": TOKEN},
            ):
                reply = server.call(
                    method,
                    path.format(id=some),
                    {} if method == "POST" else None,
                    auth=False,
                    headers=headers,
                )
                assert reply.status == 401, (method, path, reply.status)
                assert "detail" in reply.json()
    home = server.call("GET", "/", auth=False)
    assert home.status == 303 and home.headers["location"] == "/login"


def test_a_crawl_runs_to_its_end_and_is_summarised(
    server: ServeProcess, site: Site, done_crawl: dict[str, Any]
) -> None:
    reachable = site.spec.reachable
    assert done_crawl["pages"] == len(reachable)
    assert done_crawl["counts"]["fetched"] == len(reachable)
    assert done_crawl["statuses"] == {"200": len(reachable)}
    assert done_crawl["bytes"] > 0 and done_crawl["pages_per_second"] > 0
    # pages/s as `harvestman status` says it (over the time the runs ran): the same function's
    crawl_dir = next(server.root.rglob(f"{done_crawl['id']}/crawl"))
    assert done_crawl["pages_per_second"] == round(run_figures(crawl_dir)["pages_per_second"], 2)
    assert {h["host"] for h in done_crawl["top_hosts"]} <= {f"{h}:{site.spec.port}" for h in HOSTS} | set(
        HOSTS
    )
    assert sum(h["pages"] for h in done_crawl["top_hosts"]) == len(reachable)
    assert done_crawl["seeds"] == list(site.spec.seeds)
    listed = server.call("GET", "/api/crawls").json()["crawls"]
    assert done_crawl["id"] in [c["id"] for c in listed]


def test_urls_are_paged_and_filtered(server: ServeProcess, site: Site, done_crawl: dict[str, Any]) -> None:
    base = f"/api/crawls/{done_crawl['id']}/urls"
    seen: list[str] = []
    cursor = ""
    for _ in range(100):
        page = server.call("GET", f"{base}?limit=4&state=fetched&cursor={cursor}").json()
        assert len(page["urls"]) <= 4
        seen += [row["url"] for row in page["urls"]]
        assert all(row["state"] == "fetched" and row["status"] == 200 for row in page["urls"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(site.spec.reachable)
    host = HOSTS[1]
    on_host = server.call("GET", f"{base}?limit=1000&host={host}").json()["urls"]
    assert on_host and all(row["host"] == host for row in on_host)
    one = sorted(site.spec.reachable)[0]
    found = server.call("GET", f"{base}?q={one.split('/', 3)[3]}&limit=1000").json()["urls"]
    assert one in [row["url"] for row in found]
    assert server.call("GET", f"{base}?state=nonsense").status == 422
    assert server.call("GET", f"{base}?limit=0").status == 422
    assert server.call("GET", f"{base}?cursor=abc").status == 422


def test_a_stored_page_is_shown_from_the_warc(
    server: ServeProcess, site: Site, done_crawl: dict[str, Any]
) -> None:
    from urllib.parse import quote

    url = site.spec.seeds[0]
    page = server.call("GET", f"/api/crawls/{done_crawl['id']}/page?url={quote(url, safe='')}").json()
    assert page["url"] == url and page["status"] == 200 and not page["truncated"]
    assert page["content_type"].startswith("text/html")
    assert "<html" in page["body"] and any(name.lower() == "content-type" for name, _ in page["headers"])
    raw = server.call("GET", f"/api/crawls/{done_crawl['id']}/page?url={quote(url, safe='')}&raw=1")
    assert raw.status == 200 and raw.body.startswith(b"<!DOCTYPE html>")
    assert raw.headers["content-security-policy"] == "sandbox"
    assert raw.headers["x-content-type-options"] == "nosniff"
    missing = server.call("GET", f"/api/crawls/{done_crawl['id']}/page?url={quote(url + 'nope', safe='')}")
    assert missing.status == 404


def test_search_indexes_on_demand(server: ServeProcess, done_crawl: dict[str, Any]) -> None:
    found = server.call("GET", f"/api/crawls/{done_crawl['id']}/search?q=orchard&limit=3").json()
    assert found["total"] > 0 and 0 < len(found["hits"]) <= 3
    hit = found["hits"][0]
    assert set(hit) == {"url", "title", "snippet_html", "score"}
    assert "<b>orchard</b>" in hit["snippet_html"].lower()
    assert "<script" not in hit["snippet_html"]
    assert server.call("GET", f"/api/crawls/{done_crawl['id']}/search?q=").status == 422


def test_events_replay_the_crawl_then_a_final_status(
    server: ServeProcess, site: Site, done_crawl: dict[str, Any]
) -> None:
    events = list(server.stream(f"/api/crawls/{done_crawl['id']}/events?from=0", timeout=30))
    kinds = [kind for kind, _, _ in events]
    assert kinds[0] == "crawl_started" and "crawl_finished" in kinds
    fetched = {data["url"] for kind, data, _ in events if kind == "fetched"}
    assert site.spec.reachable <= fetched
    assert kinds[-1] == "status" and events[-1][1]["state"] == "finished"


def _run_job(server: ServeProcess, base: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = server.call("POST", base, body)
    assert reply.status == 202, reply.body
    job_id = reply.json()["id"]
    job: dict[str, Any] = wait_for(
        lambda: (s := server.call("GET", f"{base}/{job_id}").json())["state"] in ("finished", "failed") and s,
        90,
        f"job {body}",
    )
    assert job["type"] == body["type"] and job["ended"] >= job["started"]
    return job


def test_jobs_run_cycle_steps(server: ServeProcess, done_crawl: dict[str, Any]) -> None:
    base = f"/api/crawls/{done_crawl['id']}/jobs"
    for body in ({"type": "invertlinks"}, {"type": "index"}):
        job = _run_job(server, base, body)
        assert job["state"] == "finished", job
    for body, field in (  # each refused naming the option at fault
        ({"type": "rm -rf"}, "type"),
        ({"type": "generate", "top_n": "x"}, "top_n"),
        ({"type": "fetch", "segment": "../../etc"}, "segment"),
        ({"type": "rank", "damping": 1.5}, "damping"),
        ({"type": "index", "rebuild": "yes"}, "rebuild"),
        ({"type": "dedup", "distance": 3, "allow_net": ["0.0.0.0/0"]}, "allow_net"),
    ):
        refused = server.call("POST", base, body)
        assert refused.status == 422 and refused.json()["field"] == field, (body, refused.body)
        assert field in refused.json()["detail"]
    assert server.call("GET", f"{base}/0123456789ab").status == 404
    assert server.call("GET", f"{base}/..%2F..%2Fserve").status == 404


def test_jobs_run_the_cycle_on_a_loopback_crawl(server: ServeProcess, site: Site) -> None:
    # A crawl cut short leaves URLs due: the cycle's steps fetch them on loopback hosts with the
    # crawl's own address rules (stored with the crawl), never given to the steps again.
    reply = server.call(
        "POST", "/api/crawls", {"seeds": list(site.spec.seeds), "settings": {**NET, "max_pages": 3}}
    )
    assert reply.status == 201, reply.body
    crawl_id = reply.json()["id"]
    before = _wait_state(server, crawl_id, ("finished",), 90)
    base = f"/api/crawls/{crawl_id}/jobs"
    generated = _run_job(server, base, {"type": "generate", "top_n": 1000, "order": "bfs"})
    assert generated["state"] == "finished" and generated["message"].startswith("generated segment "), (
        generated
    )
    segment = generated["message"].split()[-1]
    fetched = _run_job(server, base, {"type": "fetch", "segment": segment})
    assert fetched["state"] == "finished", fetched
    said = re.fullmatch(rf"fetched segment {segment}: (\d+) pages?, \d+ failed", fetched["message"])
    assert said and int(said[1]) > 0, fetched
    pages = int(said[1])
    again = _run_job(server, base, {"type": "fetch"})
    assert again["message"] == f"segment {segment} is fetched already"
    merged = _run_job(server, base, {"type": "updatedb", "segment": segment})
    assert merged["state"] == "finished" and merged["message"].startswith(f"merged segment {segment}: "), (
        merged
    )
    after = server.call("GET", f"/api/crawls/{crawl_id}").json()
    assert after["counts"]["fetched"] == before["counts"]["fetched"] + pages
    assert set(after["statuses"]) == {"200"}
    gone = server.call("GET", f"/api/crawls/{crawl_id}/urls?state=gone&limit=1000").json()["urls"]
    assert all(row["error_class"] == "robots" for row in gone), gone  # no address refused
    for body in ({"type": "rank", "algorithm": "indegree"}, {"type": "dedup", "distance": 2}):
        job = _run_job(server, base, body)
        assert job["state"] == "finished", job
    failed = _run_job(server, base, {"type": "updatedb", "segment": "nosuchsegment"})
    assert failed["state"] == "failed" and "\n" not in failed["message"], failed
    assert failed["message"].startswith("harvestman: error: ") and "Traceback" not in failed["message"]


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"max_pagez": 3}, "max_pagez"),
        ({"max_pages": -1}, "max_pages"),
        ({"max_pages": "ten"}, "max_pages"),
        ({"scope": "galaxy"}, "scope"),
        ({"allow_net": ["not-a-net"]}, "allow_net"),
        ({"resolve": ["nonsense"]}, "resolve"),
        ({"out_dir": "/etc"}, "out_dir"),
        ({"browser_path": "/bin/sh"}, "browser_path"),
        ({"fetch": {"timeout": "slow"}}, "timeout"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(
    server: ServeProcess, settings: dict[str, Any], field: str
) -> None:
    reply = server.call("POST", "/api/crawls", {"seeds": ["http://127.3.0.1:1/"], "settings": settings})
    assert reply.status == 422, reply.body
    assert reply.json()["field"] == field and reply.json()["detail"]


def test_bad_seeds_and_bodies_are_refused(server: ServeProcess) -> None:
    for body in (
        {"seeds": []},
        {"seeds": "http://x/"},
        {"seeds": ["file:///etc/passwd"]},
        {},
        {"seeds": ["http://127.3.0.1:1/"], "settings": []},
    ):
        reply = server.call("POST", "/api/crawls", body)
        assert reply.status == 422, (body, reply.body)
        assert reply.json()["field"] in ("seeds", "settings")
    huge = server.call("POST", "/api/crawls", {"seeds": ["http://127.3.0.1:1/" + "a" * (2 << 20)]})
    assert huge.status == 413 and "detail" in huge.json()


def test_errors_say_what_was_wrong_and_where(server: ServeProcess) -> None:
    """One shape for every /api error: `detail`, and `field` (with `line` and `column` for a body that
    is not JSON) where the request is at fault."""
    raw = b'{"seeds": [\n  "http://x/",\n]}'  # a comma too many: the fault is at line 3, column 1
    bad_json = server.call("POST", "/api/crawls", raw=raw, headers={"Content-Type": "application/json"})
    assert bad_json.status == 422
    assert bad_json.json() == {"detail": "the body is not JSON: Expecting value at line 3, column 1",
                               "field": "body", "line": 3, "column": 1}
    wrong = server.call("POST", "/api/crawls", {"seeds": ["http://127.3.0.1:1/", 7]})
    assert wrong.status == 422
    assert wrong.json() == {"detail": "seeds.1: Input should be a valid string", "field": "seeds.1"}
    not_object = server.call("POST", "/api/crawls/0123456789ab/jobs", [1])
    assert not_object.status == 422 and not_object.json()["field"] == "body"
    query = server.call("GET", "/api/crawls/0123456789ab/urls?limit=many")
    assert query.status == 422 and query.json()["field"] == "limit"
    assert server.call("GET", "/api/nothing").json() == {"detail": "no such route: GET /api/nothing"}
    assert server.call("PUT", "/api/crawls").json() == {"detail": "PUT is not allowed on /api/crawls"}


def test_no_path_in_a_request_reaches_outside_root(server: ServeProcess, done_crawl: dict[str, Any]) -> None:
    crawl_id = done_crawl["id"]
    for path in (
        "/api/crawls/..%2F..%2Fetc/page?url=x",
        "/api/crawls/../../etc/passwd",
        "/api/crawls/%2e%2e/urls",
        "/api/crawls/a.b.c.d.e.f/urls",
        "/api/crawls/..%2F/urls",
        "/api/crawls/0123456789AB",
        "/api/crawls/0123456789abc",
        "/static/../token",
        "/static/..%2Ftoken",
        "/static/%2e%2e/%2e%2e/etc/passwd",
    ):
        reply = server.call("GET", path)
        assert reply.status in (404, 422), (path, reply.status)
        assert TOKEN.encode() not in reply.body and b"root:" not in reply.body
    for url in ("file:///etc/passwd", "/etc/passwd", "../../../../etc/passwd", "../serve.json"):
        from urllib.parse import quote

        reply = server.call("GET", f"/api/crawls/{crawl_id}/page?url={quote(url, safe='')}&raw=1")
        assert reply.status == 404, (url, reply.status)
        assert b"root:" not in reply.body


def test_cookie_sign_in_with_csrf(server: ServeProcess) -> None:
    page = server.call("GET", "/login", auth=False)
    assert page.status == 200
    csrf = _cookie(page.cookies, "harvestman_csrf")
    assert "httponly" not in _cookie_line(page.cookies, "harvestman_csrf").lower()
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"harvestman_csrf={csrf}"}
    wrong = server.call("POST", "/login", raw=f"token=wrong&csrf={csrf}".encode(), auth=False, headers=form)
    assert wrong.status == 401
    forged = server.call("POST", "/login", raw=f"token={TOKEN}&csrf=other".encode(), auth=False, headers=form)
    assert forged.status == 403
    ok = server.call("POST", "/login", raw=f"token={TOKEN}&csrf={csrf}".encode(), auth=False, headers=form)
    assert ok.status == 303 and ok.headers["location"] == "/"
    line = _cookie_line(ok.cookies, "harvestman_session").lower()
    assert "httponly" in line and "samesite=strict" in line and "path=/" in line
    session = _cookie(ok.cookies, "harvestman_session")
    csrf = _cookie(ok.cookies, "harvestman_csrf")
    assert TOKEN not in session
    jar = {"Cookie": f"harvestman_session={session}; harvestman_csrf={csrf}"}
    assert server.call("GET", "/api/crawls", auth=False, headers=jar).status == 200
    assert server.call("GET", "/", auth=False, headers=jar).status == 200
    no_header = server.call("POST", "/api/crawls", {"seeds": []}, auth=False, headers=jar)
    assert no_header.status == 403 and "detail" in no_header.json()
    wrong_header = server.call(
        "POST", "/api/crawls/0123456789ab/stop", auth=False, headers={**jar, "X-CSRF-Token": "nope"}
    )
    assert wrong_header.status == 403
    right = server.call(
        "POST", "/api/crawls/0123456789ab/stop", auth=False, headers={**jar, "X-CSRF-Token": csrf}
    )
    assert right.status == 404  # past auth and CSRF: no such crawl
    assert server.call("DELETE", "/api/crawls/0123456789ab", auth=False, headers=jar).status == 403
    out = server.call("POST", "/logout", auth=False, headers={**jar, "X-CSRF-Token": csrf})
    assert out.status == 303 and 'harvestman_session=""' in _cookie_line(out.cookies, "harvestman_session")


def _cookie_line(lines: list[str], name: str) -> str:
    return next(line for line in lines if line.startswith(name + "="))


def _cookie(lines: list[str], name: str) -> str:
    return _cookie_line(lines, name).split(";", 1)[0].split("=", 1)[1]


@pytest.fixture(scope="module")
def slow_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    made = _site(tmp_path_factory.mktemp("slowsite"), 40, seed=5)
    yield made
    made.nginx.stop()


SLOW = {**NET, "delay": 0.1, "per_host": 1}


def test_stop_resume_and_delete(server: ServeProcess, slow_site: Site) -> None:
    crawl_id = server.call(
        "POST", "/api/crawls", {"seeds": list(slow_site.spec.seeds), "settings": SLOW}
    ).json()["id"]
    wait_for(lambda: server.call("GET", f"/api/crawls/{crawl_id}").json()["pages"] >= 3, 30, "some pages")
    stopped = server.call("POST", f"/api/crawls/{crawl_id}/stop")
    assert stopped.status == 200 and stopped.json()["state"] in ("stopping", "stopped")
    summary = _wait_state(server, crawl_id, ("stopped",), 30)
    assert summary["pages"] < len(slow_site.spec.reachable)
    resumed = server.call("POST", f"/api/crawls/{crawl_id}/resume")
    assert resumed.status == 200 and resumed.json()["state"] == "running"
    assert server.call("POST", f"/api/crawls/{crawl_id}/resume").status == 409
    assert server.call("POST", f"/api/crawls/{crawl_id}/jobs", {"type": "index"}).status == 409
    done = _wait_state(server, crawl_id, ("finished",), 60)
    assert done["pages"] == len(slow_site.spec.reachable)
    refused = server.call("DELETE", f"/api/crawls/{crawl_id}")
    assert refused.status == 409 and "confirm=true" in refused.json()["detail"]
    assert server.call("DELETE", f"/api/crawls/{crawl_id}?confirm=true").status == 204
    assert server.call("GET", f"/api/crawls/{crawl_id}").status == 404
    assert not (server.root / crawl_id).exists()
    assert server.call("DELETE", f"/api/crawls/{crawl_id}?confirm=true").status == 404


def test_a_server_restart_loses_no_crawl(tmp_path: Path, slow_site: Site) -> None:
    root = tmp_path / "root"
    first = ServeProcess(root, extra=CEILING).start()
    try:
        crawl_id = first.call(
            "POST", "/api/crawls", {"seeds": list(slow_site.spec.seeds), "settings": SLOW}
        ).json()["id"]
        wait_for(lambda: first.call("GET", f"/api/crawls/{crawl_id}").json()["pages"] >= 3, 30, "some pages")
    finally:
        first.kill()  # a crash of the server, in the middle of the crawl
    second = ServeProcess(root, extra=CEILING).start()
    try:
        listed = {c["id"]: c for c in second.call("GET", "/api/crawls").json()["crawls"]}
        assert listed[crawl_id]["state"] in ("running", "finished")
        events = list(second.stream(f"/api/crawls/{crawl_id}/events", timeout=90))
        assert events[-1][0] == "status" and events[-1][1]["state"] == "finished"
        fetched = {data["url"] for kind, data, _ in events if kind == "fetched"}
        assert fetched == set(slow_site.spec.reachable)
        done = second.call("GET", f"/api/crawls/{crawl_id}").json()
        assert done["state"] == "finished" and done["pages"] == len(slow_site.spec.reachable)
    finally:
        second.stop()


def test_a_new_token_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HARVESTMAN_TOKEN"}
    root = tmp_path / "root"
    proc = ServeProcess(root, token=None, env=env).start()
    try:
        token = (root / "token").read_text().strip()
        assert stat.S_IMODE((root / "token").stat().st_mode) == 0o600
        assert token in proc.log.read_text()
        proc.token = token
        assert proc.call("GET", "/api/crawls").status == 200
    finally:
        proc.stop()
    again = ServeProcess(root, token=None, env=env).start()
    try:
        assert (root / "token").read_text().strip() == token
        said = again.log.read_text()
        assert token not in said and f"the token is in {root / 'token'}" in said  # where, not what
    finally:
        again.stop()


def test_a_public_address_without_a_given_token_is_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HARVESTMAN_TOKEN"}
    done = subprocess.run(
        harvestman_cmd(
            "serve",
            "--data",
            str(tmp_path / "root"),
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port("127.0.0.1")),
        ),
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert "--token" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "root").exists()  # refused before anything was made: no token file
    short = subprocess.run(
        harvestman_cmd("serve", "--data", str(tmp_path / "root"), "--token", "short"),
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )
    assert short.returncode == 2 and "too short" in short.stderr


def test_a_port_in_use_is_one_line_before_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            harvestman_cmd("serve", "--data", str(tmp_path / "root"), "--port", str(port), "--token", TOKEN),
            capture_output=True, text=True, timeout=30, check=False,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"harvestman: error: cannot listen at http://127.0.0.1:{port}/: another server listens there; "
        "choose another --port"
    ]
    assert not (tmp_path / "root").exists()


def test_stream_of_unknown_crawl_is_404(server: ServeProcess) -> None:
    assert server.call("GET", "/api/crawls/0123456789ab/events").status == 404
    assert server.call("GET", "/api/crawls/0123456789ab/urls").status == 404


def test_crawls_kept_in_postgresql(tmp_path: Path, site: Site, postgres_server: Any) -> None:
    import psycopg

    admin = postgres_server.url()
    with ServeProcess(tmp_path / "root", extra=("--db", admin, *CEILING)) as pg_serve:
        body = {"seeds": list(site.spec.seeds), "settings": NET}
        crawl_id = pg_serve.call("POST", "/api/crawls", body).json()["id"]
        done = _wait_state(pg_serve, crawl_id, ("finished",), 90)
        assert done["pages"] == len(site.spec.reachable)
        assert not (pg_serve.root / crawl_id / "crawl" / "crawl.db").exists()
        with psycopg.connect(admin, autocommit=True) as conn:
            names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
        assert f"harvestman_{crawl_id}" in names
        rows = pg_serve.call("GET", f"/api/crawls/{crawl_id}/urls?limit=1000&state=fetched").json()["urls"]
        assert {row["url"] for row in rows} == set(site.spec.reachable)
        found = pg_serve.call("GET", f"/api/crawls/{crawl_id}/search?q=orchard").json()
        assert found["total"] > 0
        assert pg_serve.call("DELETE", f"/api/crawls/{crawl_id}?confirm=true").status == 204
        with psycopg.connect(admin, autocommit=True) as conn:
            names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
        assert f"harvestman_{crawl_id}" not in names


def test_events_resume_after_last_event_id(server: ServeProcess, done_crawl: dict[str, Any]) -> None:
    path = f"/api/crawls/{done_crawl['id']}/events"
    whole = server.call("GET", path).body.decode()
    assert whole.count("event: fetched") == done_crawl["pages"]
    ids = [int(line[4:]) for line in whole.splitlines() if line.startswith("id: ")]
    assert ids == sorted(ids) and len(ids) > 3
    rest = server.call("GET", path, headers={"Last-Event-ID": str(ids[2])}).body.decode()
    assert [int(line[4:]) for line in rest.splitlines() if line.startswith("id: ")] == ids[3:]
    assert rest.rstrip().rsplit("\n", 1)[0].endswith("event: status")


def test_stopping_an_ended_crawl_changes_nothing(server: ServeProcess, done_crawl: dict[str, Any]) -> None:
    reply = server.call("POST", f"/api/crawls/{done_crawl['id']}/stop")
    assert reply.status == 200 and reply.json()["state"] == "finished"


def test_the_server_never_imports_the_cli() -> None:
    # The server, a served crawl's process and a job's process run crawls through launch/run.py and the
    # batch functions, never through a command-line module.
    code = (
        "import sys, harvestman.serve.runner, harvestman.serve.jobs, harvestman.serve.app, "
        "harvestman.serve.jobrunner, harvestman.launch.run, harvestman.serve.settings; "
        "print(sorted(m for m in sys.modules if m.startswith('harvestman.app.cli')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_crawl_and_the_cli_never_import_fastapi() -> None:
    code = (
        "import sys, harvestman.app.cli, harvestman.serve.runner, harvestman.serve.settings; "
        "print(sorted(m for m in ('fastapi', 'uvicorn', 'starlette') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"

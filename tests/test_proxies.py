"""`--proxy` with the proxies users have: squid with Debian's default rules (CONNECT to port 443 only)
and tinyproxy, for http:// and https:// sites, the network rules judging every target and hop.

One web for every test: an http:// site (A, a name pinned with `--resolve`) whose front page links
to a page, to the https:// site (S, nginx on port 443 of its own loopback address: the one port
squid's default rules tunnel to), to a redirect into a canary server, and to a name pinned to the
canary; another page links to a name in DNS (a private name server, squid's and the crawler's) that
resolves to the canary. The canary is outside `--allow-net`'s range: it must never see a request,
from the crawler or from the proxy. Squid starts once per test run (a session fixture).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.crawlcheck import run_cli, run_cli_measured
from tests.support.fakedns import FakeDns, require_private_resolver
from tests.support.httpserver import RouteServer
from tests.support.nginx import LogEntry, parse_log_line, require_nginx
from tests.support.proxies import Squid, TinyProxy
from tests.support.tlsfixture import TlsNginx, make_pki

A, S, CANARY = "127.61.34.2", "127.61.34.5", "127.61.35.9"
DNS = "127.53.34.1"
NET = "127.61.34.0/24"  # A and S; the canary is a loopback address no range lifts
HTML = {"Content-Type": "text/html"}


@dataclass
class Web:
    a: RouteServer
    canary: RouteServer
    tls: TlsNginx

    def seed(self) -> str:
        return f"http://site-a.test:{self.a.port}/"

    def options(self) -> list[str]:
        """The crawl's flags: names pinned, A and S allowed, the canary not."""
        return ["--resolve", f"site-a.test:{self.a.port}:{A}", "--resolve", f"site-s.test:443:{S}",
                "--resolve", f"canary.test:{self.canary.port}:{CANARY}", "--allow-net", NET, "--insecure",
                "--scope", "any", "--workers", "1", "--max-wait", "2", "-q"]

    def tls_log(self) -> list[LogEntry]:
        lines = self.tls.access_log.read_text(encoding="utf-8").splitlines()
        return [e for e in map(parse_log_line, lines) if e is not None]


@pytest.fixture(scope="session")
def squid() -> Iterator[Squid]:
    with Squid(dns=DNS) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def names(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Names in DNS (a private name server, squid's and the crawler's): the prefix that runs the
    crawler with it as its resolver."""
    with FakeDns({"www.site-a.test": A, "rebound.test": CANARY}, address=DNS) as dns:
        yield require_private_resolver(dns, tmp_path_factory.mktemp("dns"))


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    require_nginx()
    base = tmp_path_factory.mktemp("proxyweb")
    pki = make_pki(base / "pki")
    root = base / "www"
    (root / S).mkdir(parents=True)
    (root / S / "index.html").write_text('<html><body><a href="/s.html">s</a></body></html>')
    (root / S / "s.html").write_text("<html><body>secure</body></html>")
    tls = TlsNginx(root, {S: pki.server_cert("s", names=("site-s.test",), ips=(S,))}, 443)
    with RouteServer({}, host=CANARY) as canary, RouteServer({}, host=A) as a:
        canary.routes["/"] = (200, HTML, b"<p>secret")
        links = ("/a.html", "https://site-s.test/", "/hop", f"http://canary.test:{canary.port}/",
                 canary.url("/"))
        a.routes["/"] = (200, HTML, "".join(f'<a href="{u}">x</a>' for u in links).encode())
        a.routes["/a.html"] = (200, HTML, b"<p>inside")
        named = f'<a href="/a.html">a</a> <a href="http://rebound.test:{canary.port}/">r</a>'
        a.routes["/named"] = (200, HTML, named.encode())
        a.routes["/hop"] = (302, {"Location": canary.url("/")}, b"")
        try:
            tls.start()
        except (OSError, RuntimeError) as exc:  # port 443 wants root (or CAP_NET_BIND_SERVICE)
            pytest.skip(f"cannot serve https on {S}:443: {exc}")
        try:
            yield Web(a, canary, tls)
        finally:
            tls.stop()


def crawl_through(proxy_url: str, web: Web, out: Path, seed: str = "",
                  prefix: list[str] | None = None) -> dict[str, tuple[object, object]]:
    """Crawl the web (from `seed`, the front page by default) through the proxy, run behind `prefix`
    (a private resolver) if given; each URL's (state, error class)."""
    for server in (web.a, web.canary):
        with server.lock:
            server.paths.clear()
            server.requests.clear()
    args = ("crawl", seed or web.seed(), "--out", str(out), "--proxy", proxy_url, *web.options())
    if prefix is None:
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
    else:
        measured = run_cli_measured(*args, prefix=prefix)
        assert measured.returncode == 0, measured.stderr
    exported = run_cli("export", str(out), "--format", "jsonl")
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (out / "export.jsonl").read_text().splitlines()]
    return {str(r["url"]): (r["state"], r["error_class"]) for r in rows}


def check_crawl(found: dict[str, tuple[object, object]], web: Web) -> None:
    """Both sites fetched, the redirect into the canary and the name pinned to it refused."""
    assert found[web.seed()] == ("fetched", "")
    assert found[f"http://site-a.test:{web.a.port}/a.html"] == ("fetched", "")
    assert found["https://site-s.test/"] == ("fetched", "")
    assert found["https://site-s.test/s.html"] == ("fetched", "")
    assert found[f"http://site-a.test:{web.a.port}/hop"] == ("redirect_temp", "")  # its target refused:
    assert found[f"http://canary.test:{web.canary.port}/"] == ("gone", "blocked_address")
    assert found[web.canary.url("/")] == ("gone", "blocked_address")
    assert web.canary.paths == []  # nothing reached it, by the crawler or the proxy


def forwarded_paths(asked: list[tuple[str, str]], web: Web) -> list[str]:
    """The paths of the GETs the proxy forwarded to A, which must name A's address, never the name."""
    hosts = {urllib.parse.urlsplit(target).netloc for method, target in asked if method == "GET"}
    assert hosts == {f"{A}:{web.a.port}"}
    return sorted(urllib.parse.urlsplit(t).path for m, t in asked if m == "GET")


def test_squid_with_debians_default_rules_carries_http_and_https(
        squid: Squid, web: Web, tmp_path: Path) -> None:
    before, before_tls = len(squid.requests()), len(web.tls_log())
    check_crawl(crawl_through(squid.url, web, tmp_path / "out"), web)
    seen = squid.requests()[before:]
    served = web.tls_log()[before_tls:]
    # http:// forwarded (squid refuses CONNECT to any port but 443), every request A served among
    # them; https:// tunnelled to the judged address on port 443. Squid refused nothing.
    assert {status for _, _, status in seen} <= {200, 302, 404}, seen
    assert {method for method, _, _ in seen} == {"GET", "CONNECT"}
    assert forwarded_paths([(m, t) for m, t, _ in seen], web) == sorted(web.a.paths)
    tunnels = [target for method, target, _ in seen if method == "CONNECT"]
    assert set(tunnels) == {f"{S}:443"}
    # Each https:// page came by one of those tunnels: nginx saw as many connections as squid opened.
    assert {"/", "/s.html", "/robots.txt"} <= {e.uri for e in served}
    assert len({e.connection for e in served}) == len(tunnels)


def test_tinyproxy_carries_http_forwarded_and_https_tunnelled(web: Web, tmp_path: Path) -> None:
    with TinyProxy(tmp_path / "tinyproxy") as proxy:
        check_crawl(crawl_through(proxy.url, web, tmp_path / "out"), web)
        seen = proxy.requests()
    assert {method for method, _ in seen} == {"GET", "CONNECT"}
    assert forwarded_paths(seen, web) == sorted(web.a.paths)
    assert set(proxy.connects()) == {f"{S}:443"}


def test_squid_is_asked_for_a_name_from_dns_and_the_site_gets_its_host(
        squid: Squid, web: Web, names: list[str], tmp_path: Path) -> None:
    """A name from DNS goes to the proxy as a name (squid writes the Host header from the URL it is
    asked for, so an address there would lose name-based virtual hosting); every address the name
    has is judged first: one resolving to the canary is refused before the proxy is asked."""
    seed = f"http://www.site-a.test:{web.a.port}/named"
    before = len(squid.requests())
    found = crawl_through(squid.url, web, tmp_path / "out", seed, names)
    seen = squid.requests()[before:]
    assert found[seed] == ("fetched", "")
    assert found[f"http://www.site-a.test:{web.a.port}/a.html"] == ("fetched", "")
    assert found[f"http://rebound.test:{web.canary.port}/"] == ("gone", "blocked_address")
    assert web.canary.paths == []
    assert sorted(target for _, target, _ in seen) == sorted(
        f"http://www.site-a.test:{web.a.port}{path}" for path in web.a.paths)
    with web.a.lock:
        hosts = {dict(headers)["Host"] for _, headers, _ in web.a.requests}
    assert hosts == {f"www.site-a.test:{web.a.port}"}

"""The crawl's network rules over real sockets: `--only-net` (every connection, redirect hop and
resume), `--proxy` (tinyproxy for http, a SOCKS5 server for socks5: the proxy carries every request
and is handed the judged address, never the name; squid in tests/test_proxies.py) and `--header`
(on pages and robots.txt).

The site is three hosts on loopback addresses, each a server of its own: A (the seed's, allowed by
`--only-net`), B and C (outside it). A's front page links to all three and to a redirect into B.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harvestman.fetch.h2_transport import H2Transport
from harvestman.fetch.partial import PartialTransport, open_transport
from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError, OutsideNetError
from harvestman.model.records import HttpRequest
from harvestman.net.addrguard import AddressGuard
from tests.support.crawlcheck import run_cli
from tests.support.httpserver import RouteServer
from tests.support.proxies import Socks5Proxy, TinyProxy

A, B, C = "127.61.28.2", "127.61.28.3", "127.61.28.4"
NET = "127.61.28.0/24"
HTML = {"Content-Type": "text/html"}


@dataclass
class Site:
    a: RouteServer
    b: RouteServer
    c: RouteServer

    def seen(self, server: RouteServer) -> list[str]:
        with server.lock:
            return list(server.paths)

    def headers(self, path: str) -> list[dict[str, str]]:
        """The headers of every request A was sent for `path`."""
        with self.a.lock:
            return [dict(h) for p, h, _ in self.a.requests if p == path]

    def clear(self) -> None:
        for server in (self.a, self.b, self.c):
            with server.lock:
                server.paths.clear()
                server.requests.clear()


@pytest.fixture()
def site() -> Iterator[Site]:
    with RouteServer({}, host=B) as b, RouteServer({}, host=C) as c, RouteServer({}, host=A) as a:
        for server in (b, c):
            server.routes["/"] = (200, HTML, b"<p>outside")
            server.routes["/landing"] = (200, HTML, b"<p>landed")
        links = "".join(f'<a href="{u}">x</a>' for u in (a.url("/a.html"), b.url("/"), c.url("/"),
                                                         a.url("/hop")))
        a.routes["/"] = (200, HTML, links.encode())
        a.routes["/a.html"] = (200, HTML, b"<p>inside")
        a.routes["/hop"] = (302, {"Location": b.url("/landing")}, b"")
        yield Site(a, b, c)


def crawl(out: Path, seed: str, *options: str) -> None:
    done = run_cli("crawl", seed, "--out", str(out), "--scope", "any", "-q", "--workers", "1",
                   "--max-wait", "2", *options)
    assert done.returncode == 0, done.stderr


def export(out: Path) -> dict[str, dict[str, object]]:
    done = run_cli("export", str(out), "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "export.jsonl").read_text().splitlines()]
    return {str(row["url"]): row for row in rows}


def errors(out: Path) -> dict[str, int]:
    done = run_cli("status", str(out), "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, int] = json.loads(done.stdout)["errors"]
    return found


def states(rows: dict[str, dict[str, object]]) -> dict[str, tuple[object, object]]:
    return {url: (row["state"], row["error_class"]) for url, row in rows.items()}


# ----- --only-net --------------------------------------------------------------------------------


def test_only_net_fetches_only_its_hosts_and_refuses_a_redirect_out_at_the_hop(
        site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    crawl(out, site.a.url("/"), "--allow-net", NET, "--only-net", f"{A}/32")
    assert sorted(site.seen(site.a)) == ["/", "/a.html", "/hop", "/robots.txt"]
    assert site.seen(site.b) == [] and site.seen(site.c) == []  # not even robots.txt, nor the hop
    found = states(export(out))
    assert found[site.a.url("/")] == ("fetched", "")
    assert found[site.a.url("/a.html")] == ("fetched", "")
    assert found[site.b.url("/")] == ("gone", "outside_net")
    assert found[site.c.url("/")] == ("gone", "outside_net")
    assert found[site.a.url("/hop")] == ("gone", "outside_net")  # refused at the hop into B
    assert errors(out) == {"outside_net": 3}
    rows = export(out)
    assert f"refused to connect to {B}: outside the crawl's --only-net ranges" in str(
        rows[site.b.url("/")]["error_message"])


def test_without_only_net_the_same_crawl_reaches_every_host(site: Site, tmp_path: Path) -> None:
    crawl(tmp_path / "out", site.a.url("/"), "--allow-net", NET)
    assert "/" in site.seen(site.b) and "/landing" in site.seen(site.b) and "/" in site.seen(site.c)


def test_only_net_narrows_only_a_private_range_named_there_still_needs_allow_net(
        site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_cli("crawl", site.a.url("/"), "--out", str(out), "-q", "--only-net", f"{A}/32")
    assert done.returncode == 4, done.stderr  # a network failure, the guard's
    assert "(blocked_address)" in done.stderr
    assert site.seen(site.a) == []


def test_a_resume_keeps_only_net_and_a_wider_one_fetches_what_it_refused(
        site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    crawl(out, site.a.url("/"), "--allow-net", NET, "--only-net", f"{A}/32")
    site.clear()
    # The second command, without the first's flags: the stored --only-net still holds.
    done = run_cli("crawl", "--resume", "--out", str(out), "-q", "--workers", "1", "--max-wait", "2",
                   "--retry-failed", "outside_net")
    assert done.returncode == 0, done.stderr
    assert site.seen(site.b) == [] and site.seen(site.c) == []
    assert errors(out) == {"outside_net": 3}
    # --only-net widened to the whole range: the URLs it refused are queued again and fetched.
    done = run_cli("crawl", "--resume", "--out", str(out), "--workers", "1", "--max-wait", "2",
                   "--only-net", NET)
    assert done.returncode == 0, done.stderr
    assert "--only-net allows them" in done.stderr + done.stdout
    assert sorted(site.seen(site.b)) == ["/", "/landing", "/robots.txt"]
    assert site.seen(site.c) == ["/robots.txt", "/"]
    assert errors(out) == {}


def test_a_seed_outside_only_net_exits_4_with_a_hint(site: Site, tmp_path: Path) -> None:
    done = run_cli("crawl", site.b.url("/"), "--out", str(tmp_path / "out"), "-q", "--allow-net", NET,
                   "--only-net", f"{A}/32")
    assert done.returncode == 4, done.stderr
    assert (f"(outside_net); outside the crawl's --only-net ranges: --only-net {B}/32 adds it"
            in done.stderr), done.stderr
    assert site.seen(site.b) == []


def test_the_crawl_cycles_steps_keep_the_rules_inject_stored(site: Site, tmp_path: Path) -> None:
    """inject names the rules once; generate, fetch and updatedb (twice round) take them from the crawl."""
    out = tmp_path / "out"

    def ok(*args: str) -> None:
        done = run_cli(*args)
        assert done.returncode == 0, (args, done.stderr)

    with Socks5Proxy() as proxy:
        ok("inject", str(out), site.a.url("/"), "--scope", "any", "--allow-net", NET, "--only-net",
           f"{A}/32", "--proxy", proxy.url, "--header", "X-Team: cyclists", "--workers", "1", "-q")
        for _ in range(2):
            ok("generate", str(out), "--top-n", "50")
            ok("fetch", str(out), "-q")
            ok("updatedb", str(out))
        seen = list(proxy.requests)
    assert {host for _, host, _ in seen} == {A}
    assert sorted(set(site.seen(site.a))) == ["/", "/a.html", "/hop", "/robots.txt"]
    assert site.seen(site.b) == [] and site.seen(site.c) == []
    assert all(h["X-Team"] == "cyclists" for h in site.headers("/a.html")) and site.headers("/a.html")
    assert errors(out) == {"outside_net": 3}


def test_bad_only_net_is_refused_in_one_line(tmp_path: Path) -> None:
    done = run_cli("crawl", "http://127.61.28.2/", "--out", str(tmp_path / "o"), "--only-net", "ten/8")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["harvestman: error: --only-net wants a CIDR such as "
                                                "127.1.0.0/16, got 'ten/8'"]


def test_the_h2_transport_keeps_only_net_and_refuses_a_proxy() -> None:
    settings = TransportSettings(user_agent="t", guard=AddressGuard([NET], [f"{A}/32"]))
    transport = H2Transport(settings)

    async def fetch() -> None:
        try:
            await transport.fetch(HttpRequest(f"https://{B}:1/", timeout=2))
        finally:
            await transport.aclose()

    with pytest.raises(OutsideNetError, match=f"refused to connect to {B}"):
        asyncio.run(fetch())
    with pytest.raises(ConfigError, match="does not go through a proxy"):
        H2Transport(TransportSettings(user_agent="t", proxy="http://127.0.0.1:3128"))
    # A crawl that stops pages early takes libcurl alone through a proxy.
    fetch_settings = CrawlConfig(stop_at="head", http2="always", proxy="http://127.0.0.1:3128").fetch
    partial = open_transport(fetch_settings)
    assert isinstance(partial, PartialTransport) and partial.h2 is None
    assert isinstance(partial.curl, CurlTransport)
    asyncio.run(partial.aclose())


# ----- --proxy -----------------------------------------------------------------------------------


def test_an_http_proxy_carries_every_request_and_is_handed_the_judged_address(
        site: Site, tmp_path: Path) -> None:
    port = site.a.port
    seed = f"http://site-a.test:{port}/"
    with TinyProxy(tmp_path / "tinyproxy") as proxy:
        crawl(tmp_path / "out", seed, "--allow-net", NET, "--only-net", f"{A}/32", "--proxy", proxy.url,
              "--resolve", f"site-a.test:{port}:{A}")
        seen = proxy.requests()
    # Every request went by the proxy, forwarded (no CONNECT: squid's default rules tunnel to port 443
    # only) for the address the guard judged, never the pinned name; B and C were refused before the
    # proxy was asked. Two origins, one address: the seed's name, and the IP the page's links name.
    assert seen and {method for method, _ in seen} == {"GET"}
    assert sorted(seen) == sorted(("GET", f"http://{A}:{port}{p}") for p in site.seen(site.a))
    assert sorted(site.seen(site.a)) == ["/", "/a.html", "/hop", "/robots.txt", "/robots.txt"]
    # The proxy writes Host from the URL it is asked for (RFC 9112 3.2.2): the address.
    assert {h["Host"] for h in site.headers("/")} == {f"{A}:{port}"}
    assert site.seen(site.b) == [] and site.seen(site.c) == []
    found = states(export(tmp_path / "out"))
    assert found[seed] == ("fetched", "")
    assert found[site.b.url("/")] == ("gone", "outside_net")


def test_through_a_proxy_the_guard_still_refuses_a_private_target(site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with TinyProxy(tmp_path / "tinyproxy") as proxy:
        done = run_cli("crawl", site.a.url("/"), "--out", str(out), "-q", "--proxy", proxy.url)
        seen = proxy.requests()
    assert done.returncode == 4 and "(blocked_address)" in done.stderr, done.stderr
    assert seen == []  # the proxy on 127.0.0.1 is the user's; the target is what the guard judges
    assert site.seen(site.a) == []


def test_a_socks5_proxy_from_the_toml_carries_every_request_by_address(site: Site, tmp_path: Path) -> None:
    port = site.a.port
    seed = f"http://site-a.test:{port}/"
    with Socks5Proxy() as proxy:
        config = tmp_path / "crawl.toml"
        config.write_text(f'[fetch]\nproxy = "{proxy.url}"\nonly_net = ["{A}/32"]\n'
                          f'allow_net = ["{NET}"]\nresolve = ["site-a.test:{port}:{A}"]\n', encoding="utf-8")
        crawl(tmp_path / "out", seed, "--config", str(config))
        seen = list(proxy.requests)
    assert seen and set(seen) == {("ipv4", A, port)}  # the address, never the name (no socks5h)
    assert len(seen) >= 2  # two origins (the name, the IP), each its own connection
    assert sorted(site.seen(site.a)) == ["/", "/a.html", "/hop", "/robots.txt", "/robots.txt"]
    assert site.seen(site.b) == [] and site.seen(site.c) == []


def test_a_resume_keeps_the_proxy(site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Socks5Proxy() as proxy:
        done = run_cli("crawl", site.a.url("/"), "--out", str(out), "-q", "--workers", "1",
                       "--allow-net", NET, "--proxy", proxy.url, "--max-pages", "1", "--scope", "any")
        assert done.returncode == 0, done.stderr
        first = len(proxy.requests)
        done = run_cli("crawl", "--resume", "--out", str(out), "-q", "--workers", "1", "--max-wait", "2")
        assert done.returncode == 0, done.stderr
        hosts = {host for _, host, _ in proxy.requests[first:]}
    assert first >= 1
    assert hosts == {A, B, C}  # the second run's fetches went by the stored proxy too
    assert "/landing" in site.seen(site.b)


def test_download_keeps_only_net_the_proxy_and_the_headers(site: Site) -> None:
    import harvestman

    with Socks5Proxy() as proxy:
        results = {r.url: r for r in harvestman.download(
            [site.a.url("/a.html"), site.b.url("/"), site.a.url("/hop")], allow_net=[NET],
            only_net=[f"{A}/32"], proxy=proxy.url, extra_headers={"X-Team": "downloaders"},
            obey_robots=False)}
        seen = list(proxy.requests)
    assert results[site.a.url("/a.html")].status == 200
    assert results[site.b.url("/")].error_class == "outside_net"
    assert results[site.a.url("/hop")].error_class == "outside_net"  # its hop into B
    assert {host for _, host, _ in seen} == {A}
    assert site.seen(site.b) == []
    assert [h["X-Team"] for h in site.headers("/a.html")] == ["downloaders"]


def test_on_postgresql_a_resume_keeps_only_net_the_proxy_and_the_headers(
        site: Site, tmp_path: Path, postgres_url: str) -> None:
    out = tmp_path / "out"
    with Socks5Proxy() as proxy:
        done = run_cli("crawl", site.a.url("/"), "--out", str(out), "--db", postgres_url, "-q",
                       "--workers", "1", "--scope", "any", "--allow-net", NET, "--only-net", f"{A}/32",
                       "--proxy", proxy.url, "--header", "X-Team: pg", "--max-pages", "1")
        assert done.returncode == 0, done.stderr
        done = run_cli("crawl", "--resume", "--out", str(out), "--db", postgres_url, "-q", "--workers", "1",
                       "--max-wait", "2")
        assert done.returncode == 0, done.stderr
        seen = list(proxy.requests)
    assert {host for _, host, _ in seen} == {A}
    assert site.seen(site.b) == [] and site.seen(site.c) == []
    assert [h["X-Team"] for h in site.headers("/a.html")] == ["pg"]
    report = json.loads(run_cli("status", str(out), "--db", postgres_url, "--json").stdout)
    assert report["errors"] == {"outside_net": 3}


@pytest.mark.parametrize("proxy, says", [
    ("socks5h://127.0.0.1:1080", "--proxy socks5h:// is not supported"),
    ("ftp://127.0.0.1:21", "--proxy wants http://, https:// or socks5://HOST:PORT"),
    ("http://127.0.0.1", "--proxy wants SCHEME://HOST:PORT (a port, no path)"),
])
def test_a_bad_proxy_is_refused_in_one_line(tmp_path: Path, proxy: str, says: str) -> None:
    done = run_cli("crawl", "http://127.61.28.2/", "--out", str(tmp_path / "o"), "--proxy", proxy)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert says in line


def test_the_api_may_not_set_a_proxy() -> None:
    from harvestman.serve.settings import SettingsError, check_settings

    with pytest.raises(SettingsError, match="cannot be set through the API"):
        check_settings(["http://example.com/"], {"proxy": "http://127.0.0.1:3128"})
    _, flat = check_settings(["http://example.com/"], {"only_net": ["192.0.2.0/24"]})  # narrows only
    assert flat == {"only_net": ["192.0.2.0/24"]}


# ----- --header ----------------------------------------------------------------------------------


def test_headers_go_with_every_request_and_credentials_not_to_robots_txt(
        site: Site, tmp_path: Path) -> None:
    out = tmp_path / "out"
    crawl(out, site.a.url("/"), "--allow-net", NET, "--only-net", f"{A}/32", "--max-pages", "1",
          "--header", "X-Team: crawlers", "--header", "Authorization: Bearer s3cret")
    assert sorted(site.seen(site.a)) == ["/", "/robots.txt"]
    # The second command, without the headers named: the crawl's stored ones go with its pages.
    done = run_cli("crawl", "--resume", "--out", str(out), "-q", "--workers", "1", "--max-wait", "2")
    assert done.returncode == 0, done.stderr
    for path in ("/", "/a.html", "/hop"):
        [sent] = site.headers(path)
        assert sent["X-Team"] == "crawlers" and sent["Authorization"] == "Bearer s3cret"
    robots = site.headers("/robots.txt")  # once a run
    assert len(robots) == 2
    assert all(sent["X-Team"] == "crawlers" and "Authorization" not in sent for sent in robots)


@pytest.mark.parametrize("header, says", [
    ("X-Team", "--header wants 'NAME: VALUE'"),
    ("X Team: a", "is not a header name"),
    ("X-Team: a\r\nX-Evil: 1", "may not hold a line break"),
])
def test_a_bad_header_is_refused_in_one_line(tmp_path: Path, header: str, says: str) -> None:
    done = run_cli("crawl", "http://127.61.28.2/", "--out", str(tmp_path / "o"), "--header", header)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert says in line


def test_a_note_on_a_changed_proxy_hides_its_password() -> None:
    from harvestman.model.config import merge_settings

    _, notes = merge_settings({"proxy": "http://u:old-pw@127.0.0.1:3128"},
                              {"proxy": "socks5://u:new-pw@127.0.0.1:1080"})
    assert notes == ["--proxy: 'socks5://u:***@127.0.0.1:1080' replaces the crawl's stored "
                     "'http://u:***@127.0.0.1:3128'"]

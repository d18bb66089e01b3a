"""TLS end to end: CurlTransport and a crawl against nginx serving HTTPS (and h2) with test certificates."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.errors import TlsFetchError
from harvestman.model.records import HttpRequest, HttpResponse, UrlState
from harvestman.net.addrguard import AddressGuard
from tests.support.crawlcheck import RSS_LIMIT, consistent_records, run_cli, run_cli_measured
from tests.support.httpserver import RouteServer
from tests.support.nginx import free_port, require_nginx
from tests.support.proxies import Socks5Proxy, TinyProxy, TlsFront
from tests.support.tlsfixture import Pki, TlsNginx, make_pki

GOOD, WRONG_NAME, EXPIRED = "127.1.6.1", "127.1.6.2", "127.1.6.3"
NAME = "harvestman.test"


@dataclass(frozen=True, slots=True)
class TlsSite:
    """The running HTTPS server and the CA that signed its certificates."""

    server: TlsNginx
    pki: Pki

    @property
    def port(self) -> int:
        return self.server.port


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsSite]:
    require_nginx()
    base = tmp_path_factory.mktemp("tls")
    pki = make_pki(base / "pki")
    certs = {
        GOOD: pki.server_cert("good", names=(NAME,), ips=(GOOD,)),
        WRONG_NAME: pki.server_cert("wrong", names=("someone-else.test",)),
        EXPIRED: pki.server_cert("expired", names=("old.test",), ips=(EXPIRED,), expired=True),
    }
    root = base / "www"
    for host in certs:
        (root / host).mkdir(parents=True)
        (root / host / "index.html").write_text(
            '<html><head><title>tls</title></head><body><a href="/a.html">a</a> <a href="/b.html">b</a>'
        )
        (root / host / "a.html").write_text('<html><body><a href="/b.html">b</a></body></html>')
        (root / host / "b.html").write_text("<html><body>b</body></html>")
    server = TlsNginx(root, certs, free_port(GOOD))
    with server:
        yield TlsSite(server, pki)


def fetch(url: str, **settings: object) -> HttpResponse:
    async def main() -> HttpResponse:
        base: dict[str, object] = {"user_agent": "harvestman-test", "connect_timeout": 5.0,
                                   "guard": AddressGuard(["127.0.0.0/8"])}
        base.update(settings)
        transport = CurlTransport(TransportSettings(**base))  # type: ignore[arg-type]
        try:
            return await transport.fetch(HttpRequest(url, timeout=10.0))
        finally:
            await transport.aclose()

    return asyncio.run(main())


def test_self_signed_is_refused_by_default(site: TlsSite) -> None:
    with pytest.raises(TlsFetchError) as caught:
        fetch(site.server.url(GOOD, "/"))
    assert caught.value.error_class == "tls"


def test_insecure_fetches_over_http2(site: TlsSite) -> None:
    resp = fetch(site.server.url(GOOD, "/"), verify_tls=False)
    assert resp.status == 200
    assert b"<title>tls</title>" in resp.body
    assert resp.http_version == "2"  # nginx offers h2 through ALPN; libcurl takes it
    assert resp.timings.tls > 0


def test_trusted_ca_file_verifies_name_and_address(site: TlsSite) -> None:
    ca = str(site.pki.ca.cert)
    by_ip = fetch(site.server.url(GOOD, "/"), ca_file=ca)
    assert by_ip.status == 200 and by_ip.http_version == "2"
    by_name = fetch(f"https://{NAME}:{site.port}/a.html", ca_file=ca, resolve=(f"{NAME}:{site.port}:{GOOD}",))
    assert by_name.status == 200


@pytest.mark.parametrize("kind", ["http", "socks5"])
def test_https_through_a_proxy_verifies_the_name_not_the_address_connected_to(
        site: TlsSite, tmp_path: Path, kind: str) -> None:
    """The proxy is handed the judged address; TLS still checks the certificate against the URL's name."""
    ca = str(site.pki.ca.cert)
    pin = (f"{NAME}:{site.port}:{GOOD}",)
    with TinyProxy(tmp_path / "tinyproxy") if kind == "http" else Socks5Proxy() as proxy:
        response = fetch(f"https://{NAME}:{site.port}/a.html", ca_file=ca, resolve=pin, proxy=proxy.url)
        # The certificate of WRONG_NAME's server does not name harvestman.test: refused, proxy or not.
        with pytest.raises(TlsFetchError):
            fetch(f"https://{NAME}:{site.port}/a.html", ca_file=ca, proxy=proxy.url,
                  resolve=(f"{NAME}:{site.port}:{WRONG_NAME}",))
        asked = (proxy.connects() if isinstance(proxy, TinyProxy)
                 else [f"{host}:{port}" for _, host, port in proxy.requests])
    assert response.status == 200 and b'href="/b.html"' in response.body
    assert response.remote_addr == GOOD
    assert asked == [f"{GOOD}:{site.port}", f"{WRONG_NAME}:{site.port}"]


def test_an_https_proxy_is_verified_and_carries_the_tunnel(site: TlsSite, tmp_path: Path) -> None:
    """An https:// proxy: TLS to the proxy (its certificate checked with the same CA file), inside it
    the CONNECT tunnel to the pinned address, inside that TLS to the page's server."""
    ca = str(site.pki.ca.cert)
    proxy_cert = site.pki.server_cert("proxy", names=("proxy.test",), ips=("127.0.0.1",))
    pin = (f"{NAME}:{site.port}:{GOOD}",)
    with TinyProxy(tmp_path / "tinyproxy") as tiny, \
            TlsFront(proxy_cert.cert, proxy_cert.key, (tiny.address, tiny.port)) as front:
        response = fetch(f"https://{NAME}:{site.port}/a.html", ca_file=ca, resolve=pin, proxy=front.url)
        with pytest.raises(TlsFetchError):  # the proxy's certificate is not trusted by default
            fetch(f"https://{NAME}:{site.port}/a.html", resolve=pin, proxy=front.url)
        connects = tiny.connects()
    assert response.status == 200 and response.remote_addr == GOOD
    assert front.handshakes >= 1
    assert connects == [f"{GOOD}:{site.port}"]  # the untrusted one failed at the proxy, before CONNECT


@pytest.mark.parametrize("trust_ca", [False, True], ids=["default-trust", "test-ca-trusted"])
@pytest.mark.parametrize("host", [WRONG_NAME, EXPIRED], ids=["wrong-name", "expired"])
def test_wrong_name_and_expired_are_tls_errors(site: TlsSite, host: str, trust_ca: bool) -> None:
    # With the signing CA trusted, the name or the dates are the only fault left.
    settings = {"ca_file": str(site.pki.ca.cert)} if trust_ca else {}
    with pytest.raises(TlsFetchError) as caught:
        fetch(site.server.url(host, "/"), **settings)
    assert caught.value.error_class == "tls"
    assert not caught.value.transient
    # ... and --insecure reaches them all the same.
    assert fetch(site.server.url(host, "/"), verify_tls=False).status == 200


def _crawl(site: TlsSite, out: Path, *extra: str) -> dict[str, object]:
    done = run_cli("crawl", site.server.url(GOOD, "/"), "--out", str(out), "--allow-net", "127.1.0.0/16",
                   "--quiet", "--timeout", "10", "--retries", "0", *extra, timeout=60)
    if "--insecure" in extra:
        assert done.returncode == 0, done.stderr
    else:  # the only seed failed its handshake: exit status 5, and the way round it on stderr
        assert done.returncode == 5, done.stderr
        assert "(tls); the certificate could not be verified: --insecure skips the check" in done.stderr
    report: dict[str, object] = json.loads(run_cli("status", str(out), "--json").stdout)
    return report


def test_https_crawl_with_insecure(site: TlsSite, tmp_path: Path) -> None:
    report = _crawl(site, tmp_path / "out", "--insecure")
    states = report["states"]
    assert isinstance(states, dict)
    assert states["fetched"] == 3, report
    log = (tmp_path / "out" / "download.log").read_text().splitlines()
    assert sorted(log) == sorted(f"{site.server.url(GOOD, p)}|Success" for p in ("/", "/a.html", "/b.html"))


def test_https_crawl_without_insecure_records_tls_error(site: TlsSite, tmp_path: Path) -> None:
    report = _crawl(site, tmp_path / "out")
    states = report["states"]
    assert isinstance(states, dict)
    assert states["fetched"] == 0, report
    # The seed's robots.txt fails on the same handshake, and so does the seed itself.
    assert report["errors"], report
    log = (tmp_path / "out" / "download.log").read_text()
    assert "|FAILED|" in log


def test_https_crawl_records_the_tls_error_class(site: TlsSite, tmp_path: Path) -> None:
    report = _crawl(site, tmp_path / "out")
    assert report["errors"] == {"tls": 1}, report


def test_bad_certificates_fail_their_hosts_only(site: TlsSite, tmp_path: Path,
                                                route_server: Callable[..., RouteServer]) -> None:
    # Untrusted issuer (a CA nobody installed, as good as self-signed), wrong name, expired: each host
    # ends with the TLS error recorded, while a plain-HTTP host beside them is crawled in full.
    pages = ["/", "/a.html", "/b.html"]
    body = "".join(f'<a href="{p}">{p}</a>' for p in pages).encode()
    good = route_server({p: (200, {"Content-Type": "text/html"}, body) for p in pages}, host="127.1.6.9")
    bad = [site.server.url(host, "/") for host in (GOOD, WRONG_NAME, EXPIRED)]
    out = tmp_path / "out"
    run = run_cli_measured("crawl", *bad, good.url("/"), "--out", str(out), "--allow-net", "127.1.0.0/16",
                           "--quiet", "--timeout", "10", timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.peak_rss < RSS_LIMIT, run.peak_rss
    records = consistent_records(out)
    for url in bad:
        record = records[url]
        assert record.state == UrlState.GONE and record.error_class == "tls", record
        assert "robots.txt unreachable" in record.error_message and "curl error" in record.error_message
    assert all(records[good.url(p)].state == UrlState.FETCHED for p in pages)
    assert len(records) == len(bad) + len(pages)

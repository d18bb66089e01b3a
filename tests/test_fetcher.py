"""Fetcher: redirects (chains, loops, schemes, hop checks, credentials) and complete FetchResults."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
from pathlib import Path

import pytest

from harvestman.crawl.engine import Crawler
from harvestman.crawl.parse import parse_html
from harvestman.fetch.fetcher import FOLLOW, Fetcher, HopVerdict, redirect_target
from harvestman.fetch.transport import CurlTransport, MemoryTransport, TransportSettings, make_response
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConnectFetchError, RedirectRefusedError, TimeoutFetchError, is_transient
from harvestman.model.records import FetchResult, HttpRequest, HttpResponse, LeasedUrl, RedirectHop, UrlState
from harvestman.net.addrguard import AddressGuard
from harvestman.policy.outcome import decide
from tests.support.conformance import url_cases
from tests.support.crawlcheck import consistent_records
from tests.support.httpserver import Handler, RouteServer, RouteValue

A = "http://a.test"


def redirect(url: str, location: str, status: int = 302) -> HttpResponse:
    return make_response(url, status, (("Location", location),))


def fetch(transport: MemoryTransport, url: str, **kw: object) -> FetchResult:
    fetcher = Fetcher(transport, **kw)  # type: ignore[arg-type]
    return asyncio.run(fetcher.fetch(url, timeout=5, max_size=1 << 20))


def test_plain_html_result() -> None:
    headers = (("Content-Type", "text/html; charset=koi8-r"),)
    t = MemoryTransport({f"{A}/": make_response(f"{A}/", 200, headers, "привет".encode("koi8-r"))})
    r = fetch(t, f"{A}/")
    assert not r.error and r.server_success
    assert r.content_type == "text/html"
    assert r.charset == "koi8-r"
    assert r.text == "привет"
    assert not r.is_binary
    assert r.final_url == f"{A}/" and r.redirects == ()
    assert r.started_at > 0 and r.attempt == 1


def test_binary_labelled_html_has_no_text() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(100)
    t = MemoryTransport({f"{A}/": make_response(f"{A}/", 200, (("Content-Type", "text/html"),), png)})
    r = fetch(t, f"{A}/")
    assert r.is_binary and r.text is None and r.body == png


def test_redirect_chain_relative_and_absolute() -> None:
    t = MemoryTransport({
        f"{A}/1": redirect(f"{A}/1", "/2", 301),
        f"{A}/2": redirect(f"{A}/2", "3", 307),
        f"{A}/3": redirect(f"{A}/3", "http://b.test/end", 308),
        "http://b.test/end": make_response("http://b.test/end", 200, body=b"done"),
    })
    r = fetch(t, f"{A}/1")
    assert r.status == 200 and r.final_url == "http://b.test/end" and r.body == b"done"
    assert [(h.url, h.status, h.location) for h in r.redirects] == [
        (f"{A}/1", 301, f"{A}/2"), (f"{A}/2", 307, f"{A}/3"), (f"{A}/3", 308, "http://b.test/end")]
    assert r.wire_bytes == 4


CHAIN = {
    f"{A}/1": redirect(f"{A}/1", "/2", 301),
    f"{A}/2": redirect(f"{A}/2", "3", 307),
    f"{A}/3": redirect(f"{A}/3", "http://b.test/end", 308),
    "http://b.test/end": make_response("http://b.test/end", 200, body=b"done"),
}


def test_a_chain_the_transport_followed_itself_gives_the_same_result() -> None:
    by_hop = fetch(MemoryTransport(CHAIN), f"{A}/1")
    following = MemoryTransport(CHAIN, follow_redirects=10)
    reported = fetch(following, f"{A}/1")
    assert reported.redirects == by_hop.redirects and len(reported.redirects) == 3
    for name in ("status", "final_url", "body", "wire_bytes", "error_class"):
        assert getattr(reported, name) == getattr(by_hop, name), name


def test_the_hops_a_transport_took_are_judged_as_if_taken_here() -> None:
    async def refuse_b(url: str) -> HopVerdict:
        return HopVerdict(False, "out of scope") if "b.test" in url else FOLLOW

    refused = fetch(MemoryTransport(CHAIN, follow_redirects=10), f"{A}/1", hop_check=refuse_b)
    # The result is the refused redirect, as a hop-by-hop fetch would have ended: its status, its URL.
    assert refused.error_class == "redirect_refused" and "out of scope" in refused.error_message
    assert refused.status == 308 and refused.final_url == f"{A}/3" and len(refused.redirects) == 2
    assert refused.body == b""  # the body of a page outside the crawl is not kept

    async def known_2(url: str) -> HopVerdict:
        return HopVerdict(False) if url.endswith("/2") else FOLLOW

    ended = fetch(MemoryTransport(CHAIN, follow_redirects=10), f"{A}/1", hop_check=known_2)
    assert not ended.error and ended.status == 301 and ended.final_url == f"{A}/1"
    assert ended.redirects == () and ended.header("location") == f"{A}/2"
    leased = LeasedUrl(f"{A}/1", "a.test", 0, 0, 0.0)
    outcome = decide(ended, leased, 0.0, CrawlConfig().politeness).outcome
    assert outcome.state == UrlState.REDIRECT_PERM and outcome.final_url == f"{A}/2"


def test_the_hops_a_transport_took_count_towards_max_redirects() -> None:
    r = fetch(MemoryTransport(CHAIN, follow_redirects=10), f"{A}/1", max_redirects=2)
    assert r.error_class == "too_many_redirects" and len(r.redirects) == 2


def test_a_transport_that_stops_at_a_redirect_is_followed_on_from_there() -> None:
    class FollowsTheFirst(MemoryTransport):
        """Follows the first redirect itself (reporting it), then returns each redirect as it is."""

        async def fetch(self, request: HttpRequest) -> HttpResponse:
            if request.url != f"{A}/1":
                return await super().fetch(request)
            hop = RedirectHop(f"{A}/1", 301, f"{A}/2")
            return dataclasses.replace(await super().fetch(HttpRequest(f"{A}/2")), redirects=(hop,))

    t = FollowsTheFirst(CHAIN)
    r = fetch(t, f"{A}/1")
    assert r.status == 200 and r.body == b"done"
    assert r.redirects == fetch(MemoryTransport(CHAIN), f"{A}/1").redirects
    assert [q.url for q in t.requests] == [f"{A}/2", f"{A}/3", "http://b.test/end"]


def test_redirect_loop_stops() -> None:
    t = MemoryTransport({f"{A}/a": redirect(f"{A}/a", "/b"), f"{A}/b": redirect(f"{A}/b", "/a")})
    r = fetch(t, f"{A}/a", max_redirects=10)
    assert r.error_class == "too_many_redirects"
    assert len(r.redirects) == 10
    assert len(t.requests) == 11
    assert not is_transient(r.error_class)


def test_endless_counter_redirects_stop() -> None:
    def next_page(req: HttpRequest) -> HttpResponse:
        n = int(req.url.rsplit("=", 1)[1])
        return redirect(req.url, f"/?n={n + 1}")

    routes = {f"{A}/?n={i}": next_page for i in range(100)}
    r = fetch(MemoryTransport(routes), f"{A}/?n=0", max_redirects=3)
    assert r.error_class == "too_many_redirects" and len(r.redirects) == 3


def test_redirect_to_other_schemes_refused() -> None:
    for target in ("file:///etc/passwd", "ftp://a.test/x", "data:text/html,hi", "javascript:alert(1)"):
        t = MemoryTransport({f"{A}/": redirect(f"{A}/", target)})
        r = fetch(t, f"{A}/")
        assert r.error_class == "redirect_refused", target
        assert r.status == 302
        assert len(t.requests) == 1


def test_non_http_url_refused() -> None:
    t = MemoryTransport({})
    r = fetch(t, "file:///etc/passwd")
    assert r.error and r.error_class == "unsupported_url" and t.requests == []


def test_hop_check_refuses() -> None:
    t = MemoryTransport({f"{A}/": redirect(f"{A}/", "http://out.test/")})
    async def check(url: str) -> HopVerdict:
        return HopVerdict(False, "out of scope") if "out.test" in url else FOLLOW

    r = fetch(t, f"{A}/", hop_check=check)
    assert r.error_class == "redirect_refused" and "out of scope" in r.error_message
    assert [q.url for q in t.requests] == [f"{A}/"]


def test_credentials_dropped_cross_origin_and_on_downgrade() -> None:
    t = MemoryTransport({
        "https://a.test/": redirect("https://a.test/", "https://a.test/same"),
        "https://a.test/same": redirect("https://a.test/same", "http://a.test:8080/down"),
        "http://a.test:8080/down": redirect("http://a.test:8080/down", "http://b.test/"),
        "http://b.test/": make_response("http://b.test/", 200),
    })
    secrets = (("Authorization", "Bearer x"), ("Cookie", "s=1"), ("Proxy-Authorization", "y"),
               ("X-Keep", "1"))
    asyncio.run(Fetcher(t).fetch("https://a.test/", headers=secrets, timeout=5, max_size=1000))
    sent = [{k.lower() for k, _ in q.headers} for q in t.requests]
    assert sent[0] == sent[1] == {"authorization", "cookie", "proxy-authorization", "x-keep"}
    assert sent[2] == sent[3] == {"x-keep"}


def test_transport_errors_become_records() -> None:
    t = MemoryTransport({f"{A}/": redirect(f"{A}/", "/x"), f"{A}/x": ConnectFetchError("reset")})
    r = fetch(t, f"{A}/")
    assert r.error_class == "connect" and r.error_message == "reset"
    assert r.status == 0 and r.final_url == f"{A}/x" and len(r.redirects) == 1
    assert is_transient("connect") and is_transient("timeout")
    assert not is_transient("tls") and not is_transient("blocked_address") and not is_transient("nonsense")
    r = fetch(MemoryTransport({f"{A}/": TimeoutFetchError("slow")}), f"{A}/")
    assert r.error_class == "timeout"


def test_over_real_sockets_redirect_then_gzip() -> None:
    def to_file(h: Handler) -> None:
        h.send_simple(302, {"Location": "file:///etc/passwd"}, b"")

    routes: dict[str, RouteValue] = {
        "/start": (301, {"Location": "/page"}, b""),
        "/page": (200, {"Content-Type": "text/html", "Content-Encoding": "gzip"},
                  gzip.compress(b"<meta charset=windows-1251>" + "мир".encode("cp1251"))),
        "/file": to_file,
        "/loop": (302, {"Location": "/loop"}, b""),
    }
    with RouteServer(routes, host="127.1.0.7") as srv:
        async def main() -> list[FetchResult]:
            transport = CurlTransport(TransportSettings(user_agent="t", guard=AddressGuard(["127.0.0.0/8"])))
            fetcher = Fetcher(transport, max_redirects=5)
            try:
                return [await fetcher.fetch(srv.url(p), timeout=5, max_size=1 << 20)
                        for p in ("/start", "/file", "/loop")]
            finally:
                await transport.aclose()

        ok, to_file_result, loop = asyncio.run(main())
    assert ok.status == 200 and ok.final_url == srv.url("/page")
    assert ok.charset == "cp1251" and ok.text is not None and ok.text.endswith("мир")
    assert ok.remote_addr == "127.1.0.7" and ok.wire_bytes > 0
    assert to_file_result.error_class == "redirect_refused"
    assert loop.error_class == "too_many_redirects"
    assert srv.paths.count("/loop") == 6


def test_over_real_sockets_libcurl_follows_and_the_fetcher_judges_its_hops() -> None:
    routes: dict[str, RouteValue] = {
        "/start": (301, {"Location": "/page"}, b""),
        "/page": (302, {"Location": "/end"}, b"moved"),
        "/end": (200, {"Content-Type": "text/plain"}, b"end"),
    }

    async def refuse_end(url: str) -> HopVerdict:
        return HopVerdict(False, "out of scope") if url.endswith("/end") else FOLLOW

    with RouteServer(routes, host="127.1.0.8") as srv:
        async def main() -> list[FetchResult]:
            transport = CurlTransport(TransportSettings(user_agent="t", guard=AddressGuard(["127.0.0.0/8"]),
                                                        follow_redirects=5))
            try:
                return [await fetcher.fetch(srv.url("/start"), timeout=5, max_size=1000)
                        for fetcher in (Fetcher(transport), Fetcher(transport, hop_check=refuse_end),
                                        Fetcher(transport, max_redirects=1))]
            finally:
                await transport.aclose()

        plain, refused, short = asyncio.run(main())
    assert plain.status == 200 and plain.body == b"end" and plain.final_url == srv.url("/end")
    assert [(h.url, h.status, h.location) for h in plain.redirects] == [
        (srv.url("/start"), 301, srv.url("/page")), (srv.url("/page"), 302, srv.url("/end"))]
    assert plain.wire_bytes > 0 and plain.remote_addr == "127.1.0.8"
    assert refused.error_class == "redirect_refused" and refused.status == 302
    assert refused.final_url == srv.url("/page") and refused.body == b""
    assert short.error_class == "too_many_redirects"
    assert srv.paths == ["/start", "/page", "/end"] * 3  # libcurl took every hop itself


def test_head_follows_redirects_with_a_head_at_every_hop_over_real_sockets() -> None:
    methods: list[str] = []

    def page(h: Handler) -> None:
        methods.append(h.command)
        h.send_simple(200, {"Content-Type": "text/html", "X-Page": "yes"}, b"<p>the body</p>")

    def start(h: Handler) -> None:
        methods.append(h.command)
        h.send_simple(302, {"Location": "/page"}, b"")

    with RouteServer({"/start": start, "/page": page}, host="127.1.0.41") as srv:
        async def main() -> FetchResult:
            transport = CurlTransport(TransportSettings(user_agent="t", guard=AddressGuard(["127.0.0.0/8"])))
            try:
                return await Fetcher(transport).fetch(srv.url("/start"), timeout=5, max_size=1 << 20,
                                                      method="HEAD")
            finally:
                await transport.aclose()

        result = asyncio.run(main())
    assert methods == ["HEAD", "HEAD"]
    assert result.status == 200 and result.final_url == srv.url("/page") and not result.error
    assert result.header("x-page") == "yes" and result.content_type == "text/html"
    assert result.body == b"" and result.redirects[0].status == 302


# ----- redirect targets are resolved as links are: the URL Standard, as a browser does ----------------------


def test_redirect_targets_resolve_as_the_whatwg_url_tests_say() -> None:
    """Every urltestdata case with a base, as a Location relative to that base: the fetcher's own
    resolution must give the href the URL Standard gives (http(s) only; anything else is refused)."""
    cases = [c for c in url_cases() if c["base"] is not None]
    assert len(cases) > 300
    misses = []
    for case in cases:
        href = case.get("href", "")
        expected = None if case.get("failure") or not href.startswith(("http://", "https://")) else href
        try:
            got: str | None = redirect_target(case["input"], case["base"])
        except RedirectRefusedError:
            got = None
        if got != expected:
            misses.append((case["input"], case["base"], expected, got))
    assert not misses
    assert sum(1 for c in cases if c.get("href", "").startswith("http")) > 100  # not all refusals


def test_a_redirect_goes_where_the_same_link_would() -> None:
    base = "http://a.test/dir/page"
    for href in ("/\\evil.test/x", "\\\\evil.test\\y", "//evil.test/z", "../up?q=1#f", " \t/sp ace\n"):
        links = parse_html(f'<a href="{href}">x</a>', base).links
        assert [link.url for link in links] == [redirect_target(href, base)], href
    assert redirect_target("/\\evil.test/x", base) == "http://evil.test/x"


def _backslash_servers() -> tuple[RouteServer, RouteServer]:
    """A server on 127.0.0.2 and one on 127.0.0.1 that redirects /go to `/\\127.0.0.2:PORT/x`."""
    other = RouteServer({"/x": (200, {"Content-Type": "text/plain"}, b"other host")}, host="127.0.0.2")
    main = RouteServer({
        "/go": (302, {"Location": f"/\\127.0.0.2:{other.port}/x"}, b""),
        # The raw UTF-8 bytes of "/é" (the server writes headers as latin-1, one byte a character).
        "/utf8": (302, {"Location": "/\xc3\xa9"}, b""),
        "/%C3%A9": (200, {"Content-Type": "text/plain"}, b"e-acute"),
    }, host="127.0.0.1")
    return main, other


def test_over_real_sockets_a_backslash_location_goes_where_a_browser_goes() -> None:
    main, other = _backslash_servers()
    checked: list[str] = []

    async def record(url: str) -> HopVerdict:
        checked.append(url)
        return FOLLOW

    async def refuse_other_hosts(url: str) -> HopVerdict:
        return FOLLOW if url.startswith(main.url("/")) else HopVerdict(False, "out of scope")

    async def fetch_all() -> list[FetchResult]:
        results = []
        for allow, check, path in (("127.0.0.0/8", record, "/go"), ("127.0.0.0/8", record, "/utf8"),
                                   ("127.0.0.0/8", refuse_other_hosts, "/go"), ("127.0.0.1/32", None, "/go")):
            transport = CurlTransport(TransportSettings(user_agent="t", guard=AddressGuard([allow])))
            try:
                fetcher = Fetcher(transport, hop_check=check)
                results.append(await fetcher.fetch(main.url(path), timeout=5, max_size=1 << 20))
            finally:
                await transport.aclose()
        return results

    with main, other:
        followed, utf8, out_of_scope, blocked = asyncio.run(fetch_all())
    target = other.url("/x")  # http://127.0.0.2:PORT/x; urljoin made it http://127.0.0.1:P/%5C127.0.0.2:PORT/x
    assert followed.status == 200 and followed.body == b"other host" and followed.final_url == target
    assert [(h.url, h.location) for h in followed.redirects] == [(main.url("/go"), target)]
    assert checked == [target, main.url("/%C3%A9")]  # the hop check judged the URL that was fetched
    assert utf8.status == 200 and utf8.body == b"e-acute"
    assert out_of_scope.error_class == "redirect_refused" and "out of scope" in out_of_scope.error_message
    # The address guard also judged the resolved host: 127.0.0.2 is outside the allowed 127.0.0.1/32.
    assert blocked.error_class == "blocked_address" and blocked.final_url == target
    assert main.paths == ["/go", "/utf8", "/%C3%A9", "/go", "/go"]
    assert other.paths == ["/x"]  # only the first fetch reached the other host


@pytest.mark.parametrize("guard", ["scope", "robots"])
def test_a_crawl_judges_a_backslash_redirect_by_the_host_it_goes_to(tmp_path: Path, guard: str) -> None:
    """The engine's hop check (scope, then robots.txt) sees `http://127.0.0.2:PORT/x`, not a path on
    the redirecting host: out of scope for `--scope host`, and disallowed by 127.0.0.2's robots.txt."""
    main, other = _backslash_servers()
    other.routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /x\n")
    with main, other:
        cfg = CrawlConfig(seeds=(main.url("/go"),), out_dir=tmp_path / "out", allow_net=("127.0.0.0/8",),
                          quiet=True, timeout=10.0, connect_timeout=3.0,
                          scope="host" if guard == "scope" else "any")
        asyncio.run(Crawler(cfg).run())
    record = consistent_records(cfg.out_dir)[main.url("/go")]
    assert record.state == UrlState.REDIRECT_TEMP and record.error_class == "redirect_refused"
    assert "127.0.0.2" in record.error_message
    if guard == "robots":
        assert "robots.txt" in record.error_message
    assert other.paths == ([] if guard == "scope" else ["/robots.txt"])
    assert main.paths == ["/robots.txt", "/go"]

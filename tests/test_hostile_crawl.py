"""Hostile or broken servers, crawl by crawl (docs/reliability.md, "Hostile or broken servers").

Each test runs a real `Crawler` (libcurl transport, SQLite frontier, WARC writer) against a hostile
loopback server (tests/support/hostile.py) and, at the same time, a well-behaved host. A case passes when the
crawl finishes in bounded time, the well-behaved host is fetched in full, the hostile URL ends in a
recorded state with its reason, and the crawl database is consistent. The transport- and unit-level
behaviour (decoders, parsers, URL rules) is tested in test_transport, test_content, test_parse and
test_urls; here the question is whether the whole crawl holds.
"""

from __future__ import annotations

import asyncio
import gzip
import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestman.crawl.engine import Crawler
from harvestman.model.config import CrawlConfig
from harvestman.model.events import Event
from harvestman.model.records import CrawledPage, UrlRecord, UrlState
from tests.support import hostile
from tests.support.crawlcheck import RSS_LIMIT, consistent_records
from tests.support.hostile import Behaviour, Hit, HostileServer, MiB
from tests.support.httpserver import RouteServer
from tests.support.tlsfixture import make_pki

# Wall-clock bounds on its crawls: .ci/run runs this file alone, after the rest.
pytestmark = pytest.mark.serial

GOOD_HOST = "127.2.0.1"
GOOD_PAGES = 8
HTML_TYPE = [("Content-Type", "text/html; charset=utf-8")]


# ----- the crawl and what it left behind ---------------------------------------------------------


@dataclass
class Crawl:
    """What one crawl left: records by URL, pages handed to the library, events, wall time."""

    out: Path
    records: dict[str, UrlRecord]
    pages: list[CrawledPage]
    events: list[Event]
    elapsed: float
    cpu: float
    started: float  # wall clock (time.time) at the start
    rss: hostile.PeakRss = field(default_factory=hostile.PeakRss)

    def page(self, url: str) -> CrawledPage:
        found = [p for p in self.pages if p.result.url == url]
        assert found, f"no page handed over for {url}"
        return found[0]


@pytest.fixture
def good(route_server: Callable[..., RouteServer]) -> RouteServer:
    """A well-behaved host crawled beside every hostile one: GOOD_PAGES small linked pages."""
    paths = ["/"] + [f"/p{i}.html" for i in range(1, GOOD_PAGES)]
    links = "".join(f'<a href="{p}">{p}</a>' for p in paths)
    body = f"<!DOCTYPE html><title>good</title><body>{links}</body>".encode()
    return route_server({p: (200, {"Content-Type": "text/html"}, body) for p in paths}, host=GOOD_HOST)


def crawl(tmp_path: Path, good: RouteServer, seeds: list[str], **changes: Any) -> Crawl:
    """Crawl `seeds` and the good host's home page to the end, then check what every crawl must hold."""
    settings: dict[str, Any] = {
        "seeds": (*seeds, good.url("/")),
        "out_dir": tmp_path / "out",
        "allow_net": ("127.0.0.0/8",),
        "quiet": True,
        "timeout": 5.0,
        "connect_timeout": 2.0,
        "retries": 0,
        "per_host": 4,
    }
    settings.update(changes)
    cfg = CrawlConfig(**settings)
    events: list[Event] = []
    pages: list[CrawledPage] = []

    async def keep(page: CrawledPage) -> None:
        pages.append(page)

    started, wall, cpu = time.time(), time.monotonic(), time.process_time()
    with hostile.peak_rss() as rss:
        asyncio.run(Crawler(cfg, on_event=events.append).run(on_page=keep))
    elapsed, cpu = time.monotonic() - wall, time.process_time() - cpu
    records = consistent_records(cfg.out_dir)
    result = Crawl(cfg.out_dir, records, pages, events, elapsed, cpu, started, rss)
    good_records = {u: r for u, r in records.items() if f"//{GOOD_HOST}:" in u}
    assert len(good_records) == GOOD_PAGES, sorted(good_records)
    assert all(r.state == UrlState.FETCHED and not r.error_class for r in good_records.values()), good_records
    assert result.rss.growth < RSS_LIMIT, result.rss  # every case: memory stays bounded
    return result


def warc_response(out: Path, url: str) -> tuple[bytes, dict[str, str]]:
    """The stored payload and WARC headers of the response record for `url` (read back with warcio)."""
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response" and record.rec_headers.get_header("WARC-Target-URI") == url:
                    return record.content_stream().read(), dict(record.rec_headers.headers)
    raise AssertionError(f"no response record for {url}")


def pages_of(srv: HostileServer) -> list[Hit]:
    """Requests the hostile server got, robots.txt left out."""
    return [h for h in srv.hits if h.path != "/robots.txt"]


# ----- trickle / slowloris ------------------------------------------------------------------------


def test_slow_servers_are_cut_at_the_total_deadline(tmp_path: Path, good: RouteServer) -> None:
    timeout = 2.0
    routes: dict[str, Behaviour] = {
        "/trickle-body": hostile.trickle_body(interval=0.5),
        "/trickle-headers": hostile.trickle_headers(interval=0.5),
        "/silent": hostile.silent(),
    }
    with HostileServer(routes, host="127.3.0.1") as srv:
        result = crawl(tmp_path, good, [srv.url(p) for p in routes], timeout=timeout)
    for path in routes:
        record = result.records[srv.url(path)]
        assert record.state == UrlState.GONE and record.error_class == "timeout", record
        (hit,) = srv.hits_for(path)  # retries=0: asked once
        # The client hung up at the deadline (±10 %), as the server saw it.
        assert hit.closed_after is not None and abs(hit.closed_after - timeout) <= 0.1 * timeout, (path, hit)
    # The slot was the hostile host's alone: the good host finished long before the deadline.
    good_done = max(r.fetch_time for u, r in result.records.items() if GOOD_HOST in u)
    assert good_done - result.started < timeout / 2, good_done - result.started
    assert result.elapsed < timeout + 2.0


# ----- endless bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["endless_chunked", "huge_length"])
def test_endless_body_stops_at_the_cap_and_is_flagged(tmp_path: Path, good: RouteServer,
                                                      behaviour: str) -> None:
    cap = 4 * MiB
    routes = {"/endless": getattr(hostile, behaviour)()}
    with HostileServer(routes, host="127.3.0.2") as srv:
        result = crawl(tmp_path, good, [srv.url("/endless")], max_size=cap)
    url = srv.url("/endless")
    record = result.records[url]
    assert record.state == UrlState.FETCHED and record.error_class == "truncated", record
    assert record.body_size == cap
    assert record.wire_bytes < cap + 256 * 1024  # stopped reading soon after the cap
    payload, headers = warc_response(result.out, url)
    assert len(payload) == cap and headers.get("WARC-Truncated") == "length"
    assert result.page(url).result.truncated
    # Memory follows the cap, not the 5 GiB (or endless) body: body, text, parse and WARC copies.
    assert result.rss.growth < 8 * cap + 48 * MiB, result.rss


# ----- framing lies ---------------------------------------------------------------------------------


def test_short_body_is_retried_then_failed_never_complete(tmp_path: Path, good: RouteServer) -> None:
    with HostileServer({"/short": hostile.short_body(1000, b"0123456789")}, host="127.3.0.3") as srv:
        result = crawl(tmp_path, good, [srv.url("/short")], retries=1)
    record = result.records[srv.url("/short")]
    assert record.state == UrlState.GONE and record.error_class == "protocol", record
    assert record.retries >= 1 and len(srv.hits_for("/short")) == 2
    assert not any(p.result.url == srv.url("/short") for p in result.pages)  # never handed over as a page


@pytest.mark.parametrize("behaviour", ["conflicting_lengths", "length_and_chunked", "bad_chunk_terminator"])
def test_ambiguous_framing_is_rejected(tmp_path: Path, good: RouteServer, behaviour: str) -> None:
    with HostileServer({"/lie": getattr(hostile, behaviour)()}, host="127.3.0.4") as srv:
        result = crawl(tmp_path, good, [srv.url("/lie")], retries=3)
    record = result.records[srv.url("/lie")]
    assert record.state == UrlState.GONE and record.error_class == "framing", record
    assert record.retries == 0  # the same server frames the same way again: no retry
    assert not any(p.result.url == srv.url("/lie") for p in result.pages)


# ----- decompression bombs ------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_decompression_bomb_is_capped(tmp_path: Path, good: RouteServer, encoding: str) -> None:
    cap = MiB
    body = hostile.bomb(encoding)  # ~1 GiB of zeros; built (and cached) before the clock starts
    routes = {"/bomb": hostile.respond(200, [*HTML_TYPE, ("Content-Encoding", encoding)], body)}
    with HostileServer(routes, host="127.3.0.5") as srv:
        result = crawl(tmp_path, good, [srv.url("/bomb")], max_size=cap)
    record = result.records[srv.url("/bomb")]
    assert record.state == UrlState.FETCHED and record.error_class == "truncated", record
    assert record.body_size == cap
    assert result.cpu < 3.0, result.cpu  # decoded incrementally: the cap, not the gigabyte
    assert result.rss.growth < 64 * MiB, result.rss


def test_six_encodings_and_many_empty_members(tmp_path: Path, good: RouteServer) -> None:
    six = [("Content-Encoding", "gzip")] * 6
    nested = b"x"
    for _ in range(6):
        nested = gzip.compress(nested)
    routes = {
        "/six": hostile.respond(200, [*HTML_TYPE, *six], nested),
        "/members": hostile.respond(200, [*HTML_TYPE, ("Content-Encoding", "gzip")],
                                    hostile.empty_gzip_members(100_000)),
    }
    with HostileServer(routes, host="127.3.0.6") as srv:
        result = crawl(tmp_path, good, [srv.url(p) for p in routes])
    six_record = result.records[srv.url("/six")]
    assert six_record.state == UrlState.GONE and six_record.error_class == "content", six_record
    assert "encodings" in six_record.error_message
    members = result.records[srv.url("/members")]
    assert members.state == UrlState.FETCHED and not members.error_class, members
    assert members.body_size == 0
    assert result.cpu < 5.0, result.cpu


def test_bomb_as_redirect_body_and_as_robots_txt(tmp_path: Path, good: RouteServer) -> None:
    bomb = hostile.bomb("gzip")
    gz = ("Content-Encoding", "gzip")
    routes = {
        "/robots.txt": hostile.respond(200, [("Content-Type", "text/plain"), gz], bomb),
        "/moved": hostile.redirect("/landing", body=bomb, headers=[gz, *HTML_TYPE]),
        "/landing": hostile.html("<title>landed</title>"),
    }
    with HostileServer(routes, host="127.3.0.7") as srv:
        result = crawl(tmp_path, good, [srv.url("/moved")], max_size=MiB)
    record = result.records[srv.url("/moved")]
    # robots.txt was cut at its own cap (a file of zeros allows everything); the redirect's body
    # was capped and thrown away; the target was fetched.
    assert record.state == UrlState.REDIRECT_TEMP and record.final_url == srv.url("/landing"), record
    assert not record.error_class
    assert result.page(srv.url("/moved")).result.body == b"<title>landed</title>"
    assert len(srv.hits_for("/robots.txt")) == 1
    assert result.cpu < 3.0, result.cpu
    assert result.rss.growth < 64 * MiB, result.rss


# ----- huge headers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["huge_header", "many_headers", "endless_header_line"])
def test_oversized_response_heads_are_protocol_errors(tmp_path: Path, good: RouteServer,
                                                      behaviour: str) -> None:
    with HostileServer({"/head": getattr(hostile, behaviour)()}, host="127.3.0.8") as srv:
        result = crawl(tmp_path, good, [srv.url("/head")])
    record = result.records[srv.url("/head")]
    assert record.state == UrlState.GONE and record.error_class == "protocol", record
    (hit,) = srv.hits_for("/head")
    assert hit.closed_after is not None and hit.closed_after < 2.0, hit  # hung up early, not at the deadline
    assert result.elapsed < 4.0


# ----- redirects --------------------------------------------------------------------------------------


def _next_n(hit: Hit) -> Behaviour:
    n = int(hit.path.rsplit("=", 1)[1])
    return hostile.redirect(f"/count?n={n + 1}")


def test_redirect_loops_chains_and_other_schemes(tmp_path: Path, good: RouteServer) -> None:
    routes: dict[str, Behaviour] = {
        "/loop-a": hostile.redirect("/loop-b"),
        "/loop-b": hostile.redirect("/loop-a"),
        "/count": hostile.dynamic(_next_n),
        "/file": hostile.redirect("file:///etc/passwd"),
        "/ftp": hostile.redirect("ftp://127.3.0.9/pub/"),
        "/data": hostile.redirect("data:text/html,<a href=/x>x</a>"),
    }
    routes.update({f"/hop{i}": hostile.redirect(f"/hop{i + 1}") for i in range(25)})
    routes["/hop25"] = hostile.html("<title>end of the chain</title>")
    seeds = ["/loop-a", "/hop0", "/count?n=0", "/file", "/ftp", "/data"]
    with HostileServer(routes, host="127.3.0.9") as srv:
        result = crawl(tmp_path, good, [srv.url(p) for p in seeds], per_host=6)
    recs = result.records
    # A <-> B: B is followed once; the hop back to A (already known) ends the fetch at the redirect,
    # which points back at A: the chain ends where it began.
    loop = recs[srv.url("/loop-a")]
    assert loop.state == UrlState.REDIRECT_TEMP and loop.final_url == srv.url("/loop-a"), loop
    assert len(srv.hits_for("/loop-a")) == 1 and len(srv.hits_for("/loop-b")) == 1
    for seed, path in (("/hop0", "/hop"), ("/count?n=0", "/count")):
        record = recs[srv.url(seed)]
        assert record.state == UrlState.GONE and record.error_class == "too_many_redirects", record
        asked = [h for h in pages_of(srv) if h.path.startswith(path)]
        assert len(asked) == 11, [h.path for h in asked]  # the URL and its 10 hops, never more
    assert not srv.hits_for("/hop25")
    for seed in ("/file", "/ftp", "/data"):
        record = recs[srv.url(seed)]
        assert record.state == UrlState.REDIRECT_TEMP and record.error_class == "redirect_refused", record
        assert len(srv.hits_for(seed)) == 1
    assert all(u.startswith("http://") for u in recs)


# ----- credentials on redirect ----------------------------------------------------------------------


def test_credentials_do_not_cross_origins_on_redirect(tmp_path: Path, good: RouteServer) -> None:
    secret = [("Authorization", "Bearer s3cret"), ("Cookie", "session=s3cret")]
    landing = hostile.html("<title>landing</title>")
    with HostileServer({"/landing": landing}, host="127.3.0.11") as other_host, \
            HostileServer({"/port": hostile.redirect(other_host.url("/landing"))},
                          host="127.3.0.10") as other_port:
        routes = {
            "/start": hostile.redirect("/same"),
            "/same": hostile.redirect(other_port.url("/port")),
        }
        with HostileServer(routes, host="127.3.0.10") as origin:
            result = crawl(tmp_path, good, [origin.url("/start")], scope="any", extra_headers=tuple(secret))
    record = result.records[origin.url("/start")]
    assert record.state == UrlState.REDIRECT_TEMP and record.final_url == other_host.url("/landing"), record
    # Same origin: the credentials go along (once each).
    for hit in origin.hits_for("/start") + origin.hits_for("/same"):
        assert hit.headers.get("authorization") == "Bearer s3cret", hit
        assert hit.headers.get("cookie") == "session=s3cret", hit
    # Another port of the same host, then another host: none of them, and not on robots.txt either.
    for server in (other_port, other_host):
        assert server.hits, server.paths()
        for hit in server.hits:
            assert "authorization" not in hit.headers and "cookie" not in hit.headers, (server.url(), hit)


def test_credentials_do_not_follow_a_downgrade_from_https(tmp_path: Path, good: RouteServer) -> None:
    # docs/reliability.md's chain: https://a -> http://a:other-port -> http://b, each server echoing headers.
    host_a, host_b = "127.3.0.18", "127.3.0.19"
    pki = make_pki(tmp_path / "pki")
    cert = pki.server_cert("a", names=("a.test",), ips=(host_a,))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert.cert, cert.key)
    secret = (("Authorization", "Bearer s3cret"), ("Cookie", "session=s3cret"),
              ("Proxy-Authorization", "Basic czNjcmV0"))
    with HostileServer({"/landing": hostile.html("<title>b</title>")}, host=host_b) as b, \
            HostileServer({"/plain": hostile.redirect(b.url("/landing"))}, host=host_a) as plain_a:
        routes = {"/start": hostile.redirect("/same"), "/same": hostile.redirect(plain_a.url("/plain"))}
        with HostileServer(routes, host=host_a, tls=tls) as https_a:
            result = crawl(tmp_path, good, [https_a.url("/start")], scope="any", extra_headers=secret,
                           verify_tls=False)
    record = result.records[https_a.url("/start")]
    assert record.state == UrlState.REDIRECT_TEMP and record.final_url == b.url("/landing"), record
    assert https_a.url("/start").startswith("https://")
    for hit in https_a.hits_for("/start") + https_a.hits_for("/same"):  # same origin, over TLS: sent
        assert [hit.headers.get(k.lower()) for k, _ in secret] == [v for _, v in secret], hit
    # The downgraded hop (same host, http, another port) and the other host: none of them, robots.txt too.
    for server in (plain_a, b):
        assert server.hits, server.paths()
        for hit in server.hits:
            assert not {k.lower() for k, _ in secret} & set(hit.headers), (server.url(), hit)


def test_configured_headers_are_sent_once(tmp_path: Path, good: RouteServer) -> None:
    with HostileServer({"/": hostile.html("<title>x</title>")}, host="127.3.0.12") as srv:
        crawl(tmp_path, good, [srv.url("/")], extra_headers=(("X-Token", "t1"),))
        (hit,) = srv.hits_for("/")
    assert [v for k, v in hit.raw_headers if k.lower() == "x-token"] == ["t1"]


# ----- spider traps -------------------------------------------------------------------------------


def _calendar(hit: Hit) -> Behaviour:
    day = int(hit.path.rsplit("=", 1)[1])
    return hostile.html(f'<title>day {day}</title><a href="/cal?d={day + 1}" rel="next">next day</a>')


def _sessions(hit: Hit) -> Behaviour:
    sid = random.getrandbits(64)
    links = (f'<a href="/page?sid={sid}">a</a><a href="/page;jsessionid={sid:X}">b</a>'
             f'<a href="/page?PHPSESSID={sid}&amp;q=1">c</a>')
    return hostile.html(f"<title>{hit.path}</title>{links}")


_grow = hostile.html('<title>grow</title><a href="x/">deeper</a>')
_many = hostile.html("<title>many</title>" + "".join(f'<a href="/l{i}">{i}</a>' for i in range(100_000)))
_leaf = hostile.html("<title>leaf</title>")

TRAPS: dict[str, tuple[dict[str, Behaviour], Behaviour, dict[str, Any], list[str]]] = {
    # name: routes, default behaviour, crawl settings, the trap URLs (paths) the crawl may know
    "calendar": ({"/cal": hostile.dynamic(_calendar)}, hostile.not_found, {"max_depth": 5},
                 [f"/cal?d={d}" for d in range(6)]),
    "session_ids": ({"/": hostile.dynamic(_sessions), "/page": hostile.dynamic(_sessions)},
                    hostile.not_found, {}, ["/", "/page", "/page?q=1"]),
    "growing_path": ({}, _grow, {}, ["/", "/x/", "/x/x/", "/x/x/x/"]),
    "many_links": ({"/": _many}, _leaf, {"max_outlinks": 100}, ["/", *(f"/l{i}" for i in range(100))]),
}


@pytest.mark.parametrize("trap", list(TRAPS))
def test_spider_traps_stop(tmp_path: Path, good: RouteServer, trap: str) -> None:
    routes, default, settings, allowed = TRAPS[trap]
    seed = "/cal?d=0" if trap == "calendar" else "/"
    with HostileServer(routes, host="127.3.0.13", default=default) as srv:
        result = crawl(tmp_path, good, [srv.url(seed)], **settings)
    trap_urls = {u: r for u, r in result.records.items() if "//127.3.0.13:" in u}
    assert sorted(trap_urls) == sorted(srv.url(p) for p in allowed)
    assert all(r.state == UrlState.FETCHED for r in trap_urls.values()), trap_urls
    assert len(pages_of(srv)) == len(allowed)  # the server saw each allowed URL exactly once
    assert result.elapsed < 10.0


# ----- malformed HTML -------------------------------------------------------------------------------


def _nested() -> bytes:
    return b"<title>deep</title>" + b"<div>" * 100_000 + b'<a href="/ok">ok</a>' + b"</div>" * 100_000


def _huge_text() -> bytes:
    return b'<title>huge</title><p><a href="/ok">ok</a>' + b"lorem ipsum " * (50 * MiB // 12) + b"</p>"


def _nul_bytes() -> bytes:
    return b"<title>nul</title><p>" + b"text " * 1000 + b"\0" * 10_000 + b'<a href="/ok">ok</a>\0\0</p>'


def _base_elsewhere() -> bytes:
    return b'<base href="http://127.9.9.9:9/"><title>base</title><a href="/rel">r</a><a href="abs">a</a>'


MALFORMED = {"nested": _nested, "huge_text": _huge_text, "nul_bytes": _nul_bytes, "base": _base_elsewhere}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_html_parses_in_bounded_time(tmp_path: Path, good: RouteServer, case: str) -> None:
    body = MALFORMED[case]()
    routes = {"/page": hostile.respond(200, HTML_TYPE, body), "/ok": hostile.html("<title>ok</title>")}
    with HostileServer(routes, host="127.3.0.14") as srv:
        result = crawl(tmp_path, good, [srv.url("/page")], max_size=64 * MiB, max_outlinks=10)
    record = result.records[srv.url("/page")]
    assert record.state == UrlState.FETCHED and not record.error_class, record
    assert record.body_size == len(body)
    page = result.page(srv.url("/page"))
    assert page.parsed is not None and len(page.outlinks) <= 10
    if case == "base":
        # Links resolve against the other host, which is out of scope: nothing queued, nothing asked.
        assert page.outlinks == ()
        assert not any("127.9.9.9" in u for u in result.records)
        assert not srv.hits_for("/rel") and not srv.hits_for("/abs")
    else:
        assert page.outlinks == (srv.url("/ok"),)
        assert result.records[srv.url("/ok")].state == UrlState.FETCHED
    assert result.elapsed < 15.0
    # Bounded by the body: the 50 MB page peaks near 7.5x its size (bytes, text, tree, WARC copies).
    assert result.rss.growth < 10 * len(body) + 64 * MiB, result.rss


# ----- charsets --------------------------------------------------------------------------------------

_RUSSIAN = "<title>Привет</title><p>Съешь же ещё этих мягких французских булок</p>"
_LINK = '<a href="/ok">ok</a>'

CHARSETS: dict[str, tuple[str, bytes, str]] = {
    # name: Content-Type header, raw body, the charset the precedence BOM > header > meta > detection picks
    "utf8_header_cp1251_body": ("text/html; charset=utf-8", (_RUSSIAN + _LINK).encode("cp1251"), "utf-8"),
    "bom_header_meta_disagree": ("text/html; charset=windows-1251",
                                 b"\xef\xbb\xbf" + f'<meta charset="iso-8859-2">{_RUSSIAN}{_LINK}'.encode(),
                                 "utf-8"),
    "header_beats_meta": ("text/html; charset=koi8-r",
                          ('<meta charset="utf-8">' + _RUSSIAN + _LINK).encode("koi8-r"), "koi8-r"),
    "invalid_bytes": ("text/html; charset=utf-8", b"<title>bad \xc3\x28 \xed\xa0\x80 \xf8\x88</title>"
                      + _LINK.encode(), "utf-8"),
    "unknown_label": ("text/html; charset=x-klingon", (_RUSSIAN + _LINK).encode("cp1251"), "windows-1251"),
}


@pytest.mark.parametrize("case", list(CHARSETS))
def test_charsets_never_raise_and_raw_bytes_are_stored(tmp_path: Path, good: RouteServer, case: str) -> None:
    ctype, body, expected = CHARSETS[case]
    routes = {"/page": hostile.respond(200, [("Content-Type", ctype)], body), "/ok": hostile.html("ok")}
    with HostileServer(routes, host="127.3.0.15") as srv:
        result = crawl(tmp_path, good, [srv.url("/page")])
    url = srv.url("/page")
    record = result.records[url]
    assert record.state == UrlState.FETCHED and not record.error_class, record
    fetched = result.page(url).result
    assert fetched.charset.replace("cp1251", "windows-1251") == expected, fetched.charset
    assert fetched.text is not None and result.page(url).outlinks == (srv.url("/ok"),)
    payload, _headers = warc_response(result.out, url)
    assert payload == body  # byte for byte, whatever the charset said


# ----- binary labelled text/html --------------------------------------------------------------------

_HIDDEN = b'<a href="/hidden">hidden</a>'
BINARY = {
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) + _HIDDEN,
    "gzip": gzip.compress(b"<html>" + _HIDDEN * 50) + _HIDDEN,
    "random": random.Random(7).randbytes(8192) + _HIDDEN,
}


@pytest.mark.parametrize("kind", list(BINARY))
def test_binary_labelled_html_is_stored_without_links(tmp_path: Path, good: RouteServer, kind: str) -> None:
    body = BINARY[kind]
    routes = {"/page": hostile.respond(200, HTML_TYPE, body), "/hidden": hostile.html("x")}
    with HostileServer(routes, host="127.3.0.16") as srv:
        result = crawl(tmp_path, good, [srv.url("/page")])
    url = srv.url("/page")
    record = result.records[url]
    assert record.state == UrlState.FETCHED and record.body_size == len(body), record
    page = result.page(url)
    assert page.result.is_binary and page.result.text is None
    assert page.parsed is None and page.outlinks == ()
    assert srv.url("/hidden") not in result.records and not srv.hits_for("/hidden")
    assert warc_response(result.out, url)[0] == body


def test_warc_reads_back_cleanly(tmp_path: Path, good: RouteServer) -> None:
    """Everything a hostile crawl wrote reads to its end with warcio (truncated records included)."""
    routes = {"/endless": hostile.endless_chunked(), "/short": hostile.short_body(),
              "/bin": hostile.respond(200, HTML_TYPE, BINARY["random"])}
    with HostileServer(routes, host="127.3.0.17") as srv:
        result = crawl(tmp_path, good, [srv.url(p) for p in routes], max_size=MiB)
    total = 0
    for path in sorted((result.out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for rec in ArchiveIterator(stream):
                rec.content_stream().read()
                total += 1
    assert total >= 1 + 3 * (GOOD_PAGES + 2)  # warcinfo, then request/response/metadata per response

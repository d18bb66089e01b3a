"""The compiled core's WARC write (native/src/warc.rs, harvestman._core.WarcRecords) against the Python
writer, the reference: the same bytes for the same fetch, record ids and date, gzip members included
(both call the same compressor), on the benchmark web's pages, the repository's page corpus and every
branch of the writer, warcio reading the result with digests checked; what the core leaves to Python,
Python writes."""

from __future__ import annotations

import dataclasses
import gzip
import http
import io
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from bench.synthweb import generate_web, host_addresses
from harvestman.crawl.parse import parse_html
from harvestman.fetch.content import sha1_base32
from harvestman.model.records import FetchResult, Link, ParsedPage, RedirectHop, Rendering, Timings
from harvestman.store import warc
from harvestman.store.warc import WarcWriter

ROOT = Path(__file__).resolve().parent.parent
UA = (("User-Agent", "harvestman/0.1"), ("Accept", "*/*"), ("Accept-Encoding", "gzip, br"))


DATE = "2023-11-14T22:13:20.123456Z"
IDS = tuple(f"<urn:uuid:00000000-0000-4000-8000-00000000000{i}>" for i in (1, 2, 3))


@pytest.fixture(scope="module")
def native() -> Any:
    """The core's WARC writer, whatever HARVESTMAN_CORE says: these tests compare the two paths. The
    build is `pip install`'s (a fresh one: harvestman.model.core checks its source digest)."""
    from harvestman.model import core

    try:
        from harvestman import _core
    except ImportError:
        pytest.skip("harvestman._core is not built (no Rust toolchain at pip install)")
    assert core.source_digest(ROOT / "native") == _core.SOURCE_DIGEST, "stale core: pip install -e ."
    return _core.WarcRecords(warc._deflate.compress, {s.value: s.phrase for s in http.HTTPStatus})


def fetch(url: str, body: bytes, **kw: object) -> FetchResult:
    fields: dict[str, object] = {
        "url": url, "final_url": url, "status": 200, "content_type": "text/html", "body": body,
        "headers": (("Server", "nginx/1.22.1"), ("Date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                    ("Content-Type", "text/html"), ("Content-Length", str(len(body))),
                    ("Connection", "keep-alive"), ("ETag", '"6553f100-5000"')),
        "started_at": 1_700_000_000.123456, "timings": Timings(0.0001, 0.0002, 0.0, 0.0021, 0.0035),
        "wire_bytes": len(body) + 200, "remote_addr": "127.20.0.1",
    }
    fields.update(kw)
    return FetchResult(**fields)  # type: ignore[arg-type]


def synthweb_fetches(tmp_path: Path) -> list[tuple[FetchResult, list[str]]]:
    """Pages of the benchmark web (bench/synthweb.py), with their links as the crawl stores them."""
    spec = generate_web(tmp_path / "web", host_addresses(2), 8, port=8080)
    out = []
    for url, links in sorted(spec.links.items()):
        host, path = url.removeprefix("http://").split("/", 1)
        name = path or "index.html"
        body = (spec.root / host.split(":")[0] / name).read_bytes()
        out.append((fetch(url, body), list(links)))
    return out


def corpus_fetches() -> list[tuple[FetchResult, list[str]]]:
    """The repository's page corpus (tests/data/docpages: Python's docs), links as parse_html finds them."""
    out = []
    for path in sorted((ROOT / "tests" / "data" / "docpages").glob("*.html.gz")):
        body = gzip.decompress(path.read_bytes())
        url = f"https://docs.python.org/3/{path.name.removesuffix('.gz').replace('_', '/', 1)}"
        links = [link.url for link in parse_html(body.decode("utf-8"), url, with_text=False).links]
        out.append((fetch(url, body), links))
    return out


def edge_fetches() -> list[tuple[FetchResult, list[str], str]]:
    """Fetches along every branch of the writer: (result, outlinks, payload digest given)."""
    u = "http://a.test/p"
    hop = RedirectHop("http://a.test/old", 301, "http://a.test/p")
    return [
        (fetch(u, b"<p>x</p>"), ["http://a.test/x", "http://b.test/y"], ""),
        (fetch(u, b"<p>x</p>"), [], sha1_base32(b"<p>x</p>")),
        (fetch("http://a.test/start", b"y" * 70_000, final_url="https://user:pw@a.test:8443/d/e?q=1&r=%20#frag",
               redirects=(hop, hop), truncated=True), [], ""),
        (fetch(u, b"z", partial="selector:div.main > p", final_url="http://a.test"), [], ""),
        (fetch(u, b"z", partial="head", final_url="http://a.test/dir with space/?"), [], ""),
        (fetch(u, b"z", final_url="http://a.test?only=query#f", remote_addr=""),
         ["http://a.test/a\r\nb"], ""),
        (fetch(u, b"", status=0, headers=(), error_class="timeout", error_message="slow\r\nX: y",
               started_at=1_700_000_000.999999), [], ""),
        (fetch(u, b"", status=599, headers=(("X-Evil", "a\r\nWARC-Type: forged"),
                                            ("content-ENCODING", "gzip"), ("X-Latin", "caf\xe9"))), [], ""),
        (fetch(u, b"q" * 10, timings=Timings(0.0, 0.0, 0.0, 0.0, 0.0025)), ["http://a.test/\xfc"], ""),
        (fetch(u, b"q", timings=Timings(0.0, 0.0, 0.0, 0.0, 0.0035), attempt=3), [], ""),
    ]


def decompress_members(data: bytes) -> list[bytes]:
    out = []
    while data:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        out.append(d.decompress(data))
        data = d.unused_data
    return out


def same_bytes(native: Any, writer: WarcWriter, result: FetchResult, outlinks: list[str],
               digest: str, headers: tuple[tuple[str, str], ...] = UA) -> bytes:
    expected = writer._build_python(result, headers, outlinks, digest, IDS, DATE)
    got = native.fetch(result, headers, outlinks, digest, writer.compress_level, IDS, DATE)
    assert got is not None, result
    assert decompress_members(got) == decompress_members(expected)
    assert got == expected  # the gzip members too: the same compressor, the same input
    return got


def test_benchmark_and_corpus_pages_byte_for_byte(native: Any, tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path / "warc")
    pages = synthweb_fetches(tmp_path) + corpus_fetches()
    assert len(pages) >= 16 + 6
    written = b"".join(same_bytes(native, writer, r, links, "") for r, links in pages)
    records = list(ArchiveIterator(io.BytesIO(written), check_digests="raise"))
    assert [r.rec_type for r in records] == ["response", "request", "metadata"] * len(pages)


def test_every_branch_byte_for_byte(native: Any, tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path / "warc")
    for result, outlinks, digest in edge_fetches():
        same_bytes(native, writer, result, outlinks, digest)
    # A Host header given by the caller replaces the one from the URL; CR and LF in sent headers cleaned.
    same_bytes(native, writer, fetch("http://a.test/", b"x"), [], "",
               (("HOST", "b.test"), ("X-Sent", "v\r\nWARC-Type: forged")))


def test_what_the_core_leaves_to_python(native: Any) -> None:
    def native_of(result: FetchResult, headers: tuple[tuple[str, str], ...] = UA) -> bytes | None:
        out: bytes | None = native.fetch(result, headers, [], "", 1, IDS, DATE)
        return out

    rendering = Rendering(dom="<p>r</p>", original_body=b"x", original_headers=(), reason="auto",
                          settle="load", elapsed=0.1, requests=1, resource_bytes=1)
    assert native_of(fetch("http://a.test/", b"x", rendering=rendering)) is None
    assert native_of(fetch("http://a.test/\xfc", b"x")) is None  # non-ASCII URI
    assert native_of(fetch("http://a.test/\tx", b"x")) is None  # a control character
    assert native_of(fetch("ftp://a.test/", b"x")) is None
    assert native_of(fetch("http://a.test/", b"x", headers=(("X-Wide", "\u65e5"),))) is None
    assert native_of(fetch("http://a.test/", b"x"), (("User-Agent", "\u65e5"),)) is None
    assert native_of(fetch("http://a.test/", b"x" * (1024 * 1024))) is None  # over _ONE_SHOT_MAX
    assert native_of(fetch("http://a.test/", b"x")) is not None


def test_the_writer_uses_it_when_present(native: Any, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """WarcWriter.write through the core: a whole file warcio reads, digests checked."""
    monkeypatch.setattr(warc, "_core_records", native)
    calls = []
    python = WarcWriter._build_python
    monkeypatch.setattr(WarcWriter, "_build_python", lambda *a: calls.append(1) or python(*a))
    with WarcWriter(tmp_path) as writer:
        for result, outlinks, digest in edge_fetches():
            writer.write(result, UA, outlinks, digest)
        writer.write(fetch("http://a.test/\xfc", b"x"), UA, [])  # left to Python
    [path] = list(tmp_path.iterdir())
    with open(path, "rb") as f:
        records = list(ArchiveIterator(f, check_digests="raise"))
    assert len(records) == 1 + 3 * len(edge_fetches()) - 1 + 3
    assert calls == [1]


def test_the_writer_uses_the_core_by_default() -> None:
    """The core writes the records wherever harvestman.model.core chose it (HARVESTMAN_CORE unset)."""
    from harvestman.model import core

    assert (warc._core_records is not None) == (core.core is not None)


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_WIRE = st.text(st.characters(max_codepoint=0xFF), max_size=12)  # header text off the wire: Latin-1
_WIDE = st.text(st.characters(max_codepoint=0x17F), max_size=12)  # and some that never was
_PAIRS = st.lists(st.tuples(_WIRE, _WIRE), max_size=4) | st.lists(st.tuples(_WIDE, _WIDE), max_size=2)
_PLAIN = st.from_regex(r"\Ahttps?://[ -~]{0,30}\Z")
_TIME = st.one_of(st.floats(0, 1e4, allow_nan=False), st.sampled_from([0.0078125, 0.0025, 0.0035, 2.5e-7]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    uri=st.one_of(_PLAIN, _PLAIN, _PLAIN, _TEXT),
    status=st.sampled_from([0, 200, 206, 404, 599, 999]),
    headers=_PAIRS, sent=_PAIRS,
    body=st.binary(max_size=64),
    outlinks=st.lists(_TEXT, max_size=3),
    timings=st.tuples(_TIME, _TIME, _TIME, _TIME, _TIME),
    partial=_TEXT, truncated=st.booleans(), error=st.tuples(_TEXT, _TEXT),
    addr=_TEXT, wire=st.integers(-1, 2**70), digest=st.sampled_from(["", "sha1:GIVEN"]),
)
def test_any_fetch_the_same_or_left_to_python(
        native: Any, uri: str, status: int, headers: list[tuple[str, str]], sent: list[tuple[str, str]],
        body: bytes, outlinks: list[str], timings: tuple[float, ...], partial: str, truncated: bool,
        error: tuple[str, str], addr: str, wire: int, digest: str) -> None:
    """Generated fetches (odd URIs, headers outside Latin-1, CR and LF anywhere, timings on a rounding
    tie): the core writes the Python writer's bytes or leaves the fetch to Python, never other bytes."""
    result = fetch(uri, body, final_url=uri, status=status, headers=tuple(headers), timings=Timings(*timings),
                   partial=partial, truncated=truncated, error_class=error[0], error_message=error[1],
                   remote_addr=addr, wire_bytes=wire, redirects=(RedirectHop(uri, 301, uri + "\r\n"),))
    got = native.fetch(result, tuple(sent), outlinks, digest, 1, IDS, DATE)
    event("written by the core" if got is not None else "left to Python")
    if got is not None:
        writer = WarcWriter.__new__(WarcWriter)  # _build_python reads nothing of the instance's files
        writer.compress_level = 1
        assert got == writer._build_python(result, tuple(sent), outlinks, digest, IDS, DATE)


def test_one_call_page_is_the_three_calls(native: Any, tmp_path: Path) -> None:
    """The next boundary's prototype (PagePath, bench/core_page.py): one call gives the signature,
    parse_html's page and the records the crawl's three calls give, byte for byte, the records'
    outlinks being the page's followed links (none under a nofollow page), the parse compared with
    the Python path's; a page the parse leaves to Python, the one call leaves too."""
    from harvestman import _core
    from harvestman.crawl import parse
    from harvestman.policy.outcome import content_signature

    one = _core.PagePath(native, _core.PageParser(Link, parse.CORE_KINDS))
    writer = WarcWriter(tmp_path / "warc")
    u = "http://a.test/p"
    pages = [r for r, _ in synthweb_fetches(tmp_path) + corpus_fetches()] + [
        fetch(u, b'<a href="/x" rel="nofollow">x</a><a href="/y">y</a><a href="/x">again</a>'),
        fetch(u, b'<meta name="robots" content="nofollow"><a href="/y">y</a>'),
    ]
    for result in pages:
        result = dataclasses.replace(result, text=result.body.decode())
        got = one.page(result, UA, 1000, writer.compress_level, IDS, DATE)
        assert got is not None, result.url
        signature, fields, data = got
        want = parse._parse_python(result.text or "", result.final_url, 1000, 0, parse.SEGMENT_CHARS,
                                   False, False)
        title, description, language, links, noindex, nofollow, base_url = fields
        assert ParsedPage(title=title, description=description, language=language, links=links,
                          noindex=noindex, nofollow=nofollow, base_url=base_url) == want
        assert signature == content_signature(result.body)
        followed = [] if want.nofollow else [link.url for link in want.links if not link.nofollow]
        assert data == writer._build_python(result, UA, followed, signature, IDS, DATE)
    left = fetch(u, b"<template><a href=/t>t</a></template>")
    assert one.page(dataclasses.replace(left, text="<template><a href=/t>t</a></template>"),
                    UA, 1000, 1, IDS, DATE) is None

"""WARC output: readable by warcio, rotated by size, and recoverable after a kill at any moment."""

from __future__ import annotations

import base64
import gzip
import hashlib
import multiprocessing
import os
import re
import signal
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestman.model.records import FetchResult, RedirectHop, Timings
from harvestman.store.warc import OPEN_SUFFIX, WarcWriter, complete_length, recover


def result(i: int = 0, body: bytes = b"<html>hello</html>", **kw: object) -> FetchResult:
    fields: dict[str, object] = {
        "url": f"http://a.test/start/{i}",
        "final_url": f"http://a.test/page/{i}?q=1",
        "redirects": (RedirectHop(f"http://a.test/start/{i}", 301, f"/page/{i}?q=1"),),
        "status": 200,
        "headers": (
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Length", "7"),
            ("X-Evil", "a\r\nWARC-Type: forged"),
        ),
        "content_type": "text/html",
        "body": body,
        "started_at": 1_700_000_000.25,
        "timings": Timings(0.001, 0.002, 0.0, 0.01, 0.02),
        "wire_bytes": 99,
        "remote_addr": "127.0.0.1",
    }
    fields.update(kw)
    return FetchResult(**fields)  # type: ignore[arg-type]


def read_all(path: Path) -> list[tuple[str, str | None, bytes, dict[str, str]]]:
    out = []
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, check_digests="raise"):
            headers = dict(rec.rec_headers.headers)
            http = dict(rec.http_headers.headers) if rec.http_headers else {}
            headers.update({f"http:{k}": v for k, v in http.items()})
            if rec.http_headers and rec.rec_type == "request":
                headers["http:line"] = rec.http_headers.protocol
            out.append(
                (
                    rec.rec_type,
                    rec.rec_headers.get_header("WARC-Target-URI"),
                    rec.content_stream().read(),
                    headers,
                )
            )
    return out


def test_records_are_readable(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as w:
        w.write(result(), (("User-Agent", "harvestman-test"),), ["http://a.test/x", "http://b.test/y"])
        w.write(result(1, body=b"x" * 50, truncated=True), (), [])
        w.write(
            result(2, status=0, headers=(), body=b"", error_class="timeout", error_message="slow"), (), []
        )
    [path] = list(tmp_path.iterdir())
    assert path.name.startswith("harvestman-") and path.name.endswith(".warc.gz")
    records = read_all(path)
    types = [r[0] for r in records]
    assert types == [
        "warcinfo",
        "response",
        "request",
        "metadata",
        "response",
        "request",
        "metadata",
        "request",
        "metadata",
    ]
    _, uri, payload, headers = records[1]
    assert uri == "http://a.test/page/0?q=1" and payload == b"<html>hello</html>"
    assert headers["WARC-Payload-Digest"].startswith("sha1:") and headers["WARC-IP-Address"] == "127.0.0.1"
    assert headers["WARC-Date"].startswith("2023-11-14T22:13:20.25")
    assert "http:Content-Encoding" not in headers and "http:Transfer-Encoding" not in headers
    assert headers["http:Content-Length"] == str(len(payload))
    assert headers["http:X-Harvestman-Original-Content-Encoding"] == "gzip"
    assert "\n" not in headers["http:X-Evil"]
    response_id = headers["WARC-Record-ID"]
    assert records[2][3]["WARC-Concurrent-To"] == response_id
    assert records[2][1] == uri and records[2][3]["http:User-Agent"] == "harvestman-test"
    assert records[3][3]["WARC-Concurrent-To"] == response_id
    meta = records[3][2].decode()
    assert "outlink: http://a.test/x\r\n" in meta and "outlink: http://b.test/y\r\n" in meta
    assert "requestedURL: http://a.test/start/0" in meta and "fetchTimeMs: 20" in meta
    assert records[4][3]["WARC-Truncated"] == "length"
    assert "WARC-Truncated" not in headers
    assert "error: timeout: slow" in records[8][2].decode()
    assert all(r[3].get("WARC-Type") != "forged" for r in records)


def test_each_record_is_its_own_gzip_member(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as w:
        w.write(result(), (), [])
    [path] = list(tmp_path.iterdir())
    data = path.read_bytes()
    assert data.count(b"\x1f\x8b\x08") >= 4
    assert gzip.decompress(data).startswith(b"WARC/1.1\r\n")


def test_rotation_by_size(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, max_bytes=4000, prefix="rot") as w:
        for i in range(20):
            w.write(result(i, body=os.urandom(1000)), (), [])
        assert w.current_path is not None and w.current_path.name.endswith(OPEN_SUFFIX)
    paths = sorted(tmp_path.iterdir())
    assert len(paths) > 3 and all(p.name.startswith("rot-") and p.name.endswith(".warc.gz") for p in paths)
    assert [int(p.name.split("-")[2]) for p in paths] == list(range(1, len(paths) + 1))
    responses = 0
    for p in paths:
        records = read_all(p)
        assert records[0][0] == "warcinfo"
        responses += sum(1 for r in records if r[0] == "response")
        assert p.stat().st_size <= 4000 or len(records) == 4
    assert responses == 20


def test_recover_cuts_a_torn_tail(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write(result(i), (), [])
    path = w.current_path
    assert path is not None
    whole = path.read_bytes()
    assert complete_length(path) == len(whole)
    w.write(result(3, body=os.urandom(5000)), (), [])
    torn = path.read_bytes()
    w.close()  # as a killed writer: its lock let go; its file left open, torn (below)
    w.files[-1].unlink()
    path.write_bytes(torn[: len(whole) + (len(torn) - len(whole)) // 2])  # a kill in mid-write
    (tmp_path / f"x.warc.gz{OPEN_SUFFIX}").write_bytes(b"\x1f\x8b\x08garbage")  # nothing complete
    [fixed] = recover(tmp_path)
    assert fixed.name == path.name.removesuffix(OPEN_SUFFIX)
    assert fixed.read_bytes() == whole
    assert [r[0] for r in read_all(fixed)].count("response") == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [fixed.name]
    assert recover(tmp_path) == []


def test_recover_leaves_a_file_being_written_alone(tmp_path: Path) -> None:
    """Two workers with one --out: the second's start must not cut and rename the first's open file."""
    w = WarcWriter(tmp_path)
    w.write(result(0), (), [])
    path = w.current_path
    assert path is not None
    before = path.read_bytes()
    assert recover(tmp_path) == []
    assert path.read_bytes() == before
    w.write(result(1), (), [])
    w.close()
    [done] = w.files
    assert [r[0] for r in read_all(done)].count("response") == 2


def _writer_child(directory: str) -> None:
    w = WarcWriter(Path(directory), max_bytes=200_000)
    i = 0
    while True:
        i += 1
        w.write(result(i, body=os.urandom(i % 7000)), (("User-Agent", "t"),), [f"http://a.test/{i}"])


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8])
def test_sigkilled_writer_then_recover(tmp_path: Path, delay: float) -> None:
    child = multiprocessing.get_context("fork").Process(target=_writer_child, args=(str(tmp_path),))
    child.start()
    time.sleep(delay)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    recover(tmp_path)
    paths = sorted(tmp_path.iterdir())
    assert paths and all(p.name.endswith(".warc.gz") for p in paths)
    for p in paths:
        records = read_all(p)  # raises on a torn record or a bad digest
        assert records[0][0] == "warcinfo"


# -- the serializer, field by field against what warcio parses back ------------------------------------

UUID_ID = re.compile(r"<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>")


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


class Parsed(NamedTuple):
    type: str
    fields: list[tuple[str, str]]  # the WARC named fields, in order
    start_line: str  # the HTTP status or request line, "" for non-HTTP blocks
    http: list[tuple[str, str]]
    payload: bytes


def parse_back(path: Path) -> list[Parsed]:
    """Every record as warcio reads it, each with its block and payload digests verified."""
    out = []
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, check_digests=True):
            payload = rec.content_stream().read()
            assert rec.digest_checker.passed is True, rec.digest_checker.problems  # present and right
            h = rec.http_headers
            line = f"{h.protocol} {h.statusline}" if h else ""
            out.append(Parsed(rec.rec_type, list(rec.rec_headers.headers), line, list(h.headers) if h else [],
                              payload))
    return out


def expect_fields(got: Parsed, *, block: bytes, **fields: str) -> None:
    """`got` has exactly the named fields given (plus its id and Content-Length), with these values."""
    names = [n for n, _ in got.fields]
    assert len(names) == len(set(names)), names
    values = dict(got.fields)
    assert UUID_ID.fullmatch(values.pop("WARC-Record-ID"))
    assert values.pop("Content-Length") == str(len(block))
    assert values.pop("WARC-Block-Digest") == sha1_b32(block)
    assert values == {k.replace("_", "-"): v for k, v in fields.items()}
    assert all("\r" not in v and "\n" not in v for _, v in got.fields)


def check_fetch(records: list[Parsed], r: FetchResult, *, uri: str, request_block: bytes,
                http_head: bytes | None, http: list[tuple[str, str]], meta: bytes) -> None:
    """One fetch's records: response (when `http_head`), request and metadata, every field checked."""
    common = {"WARC_Date": "2023-11-14T22:13:20.250000Z", "WARC_Target_URI": uri}
    if r.remote_addr:
        common["WARC_IP_Address"] = r.remote_addr.replace("\r", " ").replace("\n", " ")
    concurrent = {}
    if http_head is not None:
        response, *records = records
        assert response.type == "response" and response.payload == r.body
        assert response.http == http
        assert http_head.startswith(response.start_line.encode() + b"\r\n")
        truncated = {"WARC_Truncated": "length"} if r.truncated else {}
        expect_fields(response, block=http_head + r.body, WARC_Type="response", **common, **truncated,
                      Content_Type="application/http; msgtype=response",
                      WARC_Payload_Digest=sha1_b32(r.body))
        concurrent = {"WARC_Concurrent_To": dict(response.fields)["WARC-Record-ID"]}
    request, metadata = records
    assert request.type == "request" and request.payload == b""
    assert request_block.startswith(request.start_line.encode() + b"\r\n")
    expect_fields(request, block=request_block, WARC_Type="request", **common, **concurrent,
                  Content_Type="application/http; msgtype=request", WARC_Payload_Digest=sha1_b32(b""))
    assert metadata.type == "metadata" and metadata.payload == meta
    expect_fields(metadata, block=meta, WARC_Type="metadata", **common, **concurrent,
                  Content_Type="application/warc-fields", WARC_Payload_Digest=sha1_b32(meta))


META_TAIL = (b"fetchTimeMs: 20\r\n"
             b"timings: dns=0.001000 connect=0.002000 tls=0.000000 firstByte=0.010000 total=0.020000\r\n"
             b"wireBytes: 99\r\nattempt: 1\r\n")


def test_serializer_field_by_field(tmp_path: Path) -> None:
    ua = (("User-Agent", "harvestman-test"), ("Accept", "*/*"))
    normal = result()
    truncated = result(1, body=b"y" * 70_000, truncated=True, headers=(("Content-Type", "text/plain"),),
                       redirects=(), remote_addr="")
    failed = result(2, status=0, headers=(), body=b"", error_class="timeout", error_message="slow\r\nX: y",
                    redirects=())
    odd_url = "http://a.test/dir with space/ü?q=é x\r\nWARC-Type: forged"
    odd = result(3, final_url=odd_url, redirects=(), remote_addr="::1\r\nWARC-Type: forged", headers=(
        ("X-Latin", "café"),  # as the transport decodes the wire: Latin-1
        ("X-Wide", "日本\u2028x"),  # never came off a wire; kept as UTF-8 (U+2028 ends no line)
        ("X-Name\r\nWARC-Type", "forged\r\n\r\nWARC/1.1"),
    ))
    with WarcWriter(tmp_path) as w:
        w.write(normal, ua, ["http://a.test/x", "http://b.test/y"])
        w.write(truncated, (), [])
        w.write(failed, (), [])
        w.write(odd, (("User-Agent", "t\r\nWARC-Type: forged"),), ["http://a.test/ü\r\nWARC-Type: forged"])
    [path] = list(tmp_path.iterdir())
    records = parse_back(path)
    assert [r.type for r in records] == ["warcinfo"] + ["response", "request", "metadata"] * 2 + [
        "request", "metadata"] + ["response", "request", "metadata"]
    info_block = records[0].payload
    assert info_block.startswith(b"software: harvestman/0.1\r\nformat: WARC File Format 1.1\r\n")
    info = dict(records[0].fields)
    assert info["WARC-Filename"] == path.name and info["WARC-Date"].endswith("Z")
    expect_fields(records[0], block=info_block, WARC_Type="warcinfo", WARC_Filename=path.name,
                  WARC_Date=info["WARC-Date"], Content_Type="application/warc-fields")

    check_fetch(
        records[1:4], normal, uri="http://a.test/page/0?q=1",
        http_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
        b"X-Harvestman-Original-Content-Encoding: gzip\r\n"
        b"X-Harvestman-Original-Transfer-Encoding: chunked\r\n"
        b"X-Harvestman-Original-Content-Length: 7\r\n"
        b"X-Evil: a  WARC-Type: forged\r\nContent-Length: 18\r\n\r\n",
        http=[("Content-Type", "text/html; charset=utf-8"),
              ("X-Harvestman-Original-Content-Encoding", "gzip"),
              ("X-Harvestman-Original-Transfer-Encoding", "chunked"),
              ("X-Harvestman-Original-Content-Length", "7"),
              ("X-Evil", "a  WARC-Type: forged"), ("Content-Length", "18")],
        request_block=b"GET /page/0?q=1 HTTP/1.1\r\nHost: a.test\r\n"
        b"User-Agent: harvestman-test\r\nAccept: */*\r\n\r\n",
        meta=b"outlink: http://a.test/x\r\noutlink: http://b.test/y\r\nrequestedURL: http://a.test/start/0\r\n"
        + META_TAIL + b"redirect: 301 http://a.test/start/0 -> /page/0?q=1\r\n",
    )
    check_fetch(
        records[4:7], truncated, uri="http://a.test/page/1?q=1",
        http_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 70000\r\n\r\n",
        http=[("Content-Type", "text/plain"), ("Content-Length", "70000")],
        request_block=b"GET /page/1?q=1 HTTP/1.1\r\nHost: a.test\r\n\r\n",
        meta=b"requestedURL: http://a.test/start/1\r\n" + META_TAIL,
    )
    check_fetch(
        records[7:9], failed, uri="http://a.test/page/2?q=1", http_head=None, http=[],
        request_block=b"GET /page/2?q=1 HTTP/1.1\r\nHost: a.test\r\n\r\n",
        meta=b"requestedURL: http://a.test/start/2\r\n" + META_TAIL + b"error: timeout: slow  X: y\r\n",
    )
    # The URL as given: non-ASCII kept (WARC/1.1 fields are UTF-8); a space is written as the %20 warcio
    # would turn it into on reading; CR and LF %-encoded, so they can start no field of their own.
    check_fetch(
        records[9:12], odd, uri="http://a.test/dir%20with%20space/ü?q=é%20x%0D%0AWARC-Type:%20forged",
        http_head=b"HTTP/1.1 200 OK\r\nX-Latin: caf\xe9\r\nX-Wide: \xe6\x97\xa5\xe6\x9c\xac\xe2\x80\xa8x\r\n"
        b"X-Name  WARC-Type: forged    WARC/1.1\r\nContent-Length: 18\r\n\r\n",
        http=[("X-Latin", "café"), ("X-Wide", "日本\u2028x"), ("X-Name  WARC-Type", "forged    WARC/1.1"),
              ("Content-Length", "18")],
        # On the request line, as a client sends it: %-encoded UTF-8 (urlsplit drops the CR LF).
        request_block=b"GET /dir%20with%20space/%C3%BC?q=%C3%A9%20xWARC-Type:%20forged HTTP/1.1\r\n"
        b"Host: a.test\r\nUser-Agent: t  WARC-Type: forged\r\n\r\n",
        meta="outlink: http://a.test/ü  WARC-Type: forged\r\nrequestedURL: http://a.test/start/3\r\n".encode()
        + META_TAIL,
    )
    assert all(dict(r.fields)["WARC-Type"] != "forged" for r in records)


def test_request_host_never_carries_credentials(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as w:
        w.write(result(final_url="http://user:secret@a.test:8080/p", status=0, headers=()), (), [])
    [path] = list(tmp_path.iterdir())
    request = parse_back(path)[1]
    assert request.start_line == "GET /p HTTP/1.1" and request.http == [("Host", "a.test:8080")]
    assert dict(request.fields)["WARC-Target-URI"] == "http://user:secret@a.test:8080/p"  # as given

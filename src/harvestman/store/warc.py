"""WARC/1.1 output: request, response and metadata records per fetch, crash-safe and rotated by size."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import http
import os
import random
import re
import secrets
import threading
import time
import types
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from harvestman.fetch.content import sha1_base32
from harvestman.model import faults
from harvestman.model.core import core
from harvestman.model.errors import StorageError
from harvestman.model.records import FetchResult, Headers, Rendering, WarcPlace
from harvestman.net.urls import authority_span

if TYPE_CHECKING:
    from harvestman._core import WarcRecords

OPEN_SUFFIX = ".open"
GiB = 1024 * 1024 * 1024

# The stored body is content-decoded and complete in itself, so the headers describing the wire
# framing would lie about it; they are kept under this prefix for the record.
_FRAMING_HEADERS = ("content-encoding", "transfer-encoding", "content-length")
_ORIGINAL_PREFIX = "X-Harvestman-Original-"
_GZIP_WBITS = zlib.MAX_WBITS + 16  # a gzip header and trailer around the deflate stream
_END_OF_RECORD = b"\r\n\r\n"
_ONE_SHOT_MAX = 1024 * 1024  # records up to this size are joined and compressed in one call
# In a WARC-Target-URI: a CR or LF would end the field early; a space is invalid in a URI, and warcio
# rewrites it to %20 on every read (with a warning), so it is written as the readers will see it.
_NOT_IN_URI_FIELD = re.compile(r"[\x00-\x20\x7f]")
_NOT_VISIBLE = re.compile(r"[^\x21-\x7e]+")  # not allowed raw in an HTTP request-target
_WARCINFO = (
    b"software: harvestman/0.1\r\n"
    b"format: WARC File Format 1.1\r\n"
    b"conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n"
)


def _clean(value: str) -> str:
    # A CR or LF inside a value would forge headers or records in the archive.
    return value.replace("\r", " ").replace("\n", " ")


def _stopped(partial: str) -> str:
    """The fields of a response read only until a stop condition: WARC-Truncated with the reason as
    a WARC 1.1 future-reason token (stop-head, stop-selector, stop-bytes), and the condition itself
    (which may hold characters a token may not) in WARC-Stop-Condition."""
    if not partial:
        return ""
    kind = partial.split(":", 1)[0]
    return f"WARC-Truncated: stop-{_clean(kind)}\r\nWARC-Stop-Condition: {_clean(partial)}\r\n"


def _uri_field(uri: str) -> str:
    """The URI as given (non-ASCII included: WARC/1.1 fields are UTF-8), controls and spaces %-encoded."""
    return _NOT_IN_URI_FIELD.sub(lambda m: f"%{ord(m.group()):02X}", uri)


def _request_target(path_and_query: str) -> str:
    """An origin-form request-target as a client sends it: spaces, controls and non-ASCII %-encoded."""
    return _NOT_VISIBLE.sub(lambda m: quote(m.group(), safe=""), path_and_query)


@functools.lru_cache(maxsize=4)
def _warc_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def _warc_date(ts: float) -> str:
    # A page a few hundred microseconds: the date and time to the second is formatted once a second.
    second = int(ts)
    return f"{_warc_second(second)}.{int((ts - second) * 1_000_000):06d}Z"


def _header_lines(headers: Headers) -> list[str]:
    """A response's header lines as stored: framing headers renamed (see _FRAMING_HEADERS)."""
    # Values off the wire seldom hold a CR or LF (a line ends at LF, its CR stripped), so one
    # scan of them all stands for a clean-up of each; a CR or LF
    # anywhere sends every header through _clean. With _split_target: WarcWriter.write 138.2 ->
    # 125.8 µs a page (bench/warc_write.py, medians of 5 alternating runs).
    joined = "".join([name + value for name, value in headers])
    if "\r" in joined or "\n" in joined:
        headers = tuple((_clean(name), _clean(value)) for name, value in headers)
    return [
        f"{_ORIGINAL_PREFIX}{name}: {value}\r\n" if name.lower() in _FRAMING_HEADERS
        else f"{name}: {value}\r\n" for name, value in headers
    ]


def _split_target(uri: str) -> tuple[str, str]:
    """The authority and the origin-form path (with its query) of an absolute http(s) URI, as
    urlsplit would give them, fragment dropped; a quarter of urlsplit's cost (~4 µs a page)."""
    span = authority_span(uri)
    if span is None:
        split = urlsplit(uri)
        return split.netloc, (split.path or "/") + (f"?{split.query}" if split.query else "")
    start, end = span
    path, _, query = uri[end:].partition("#")[0].partition("?")
    return uri[start:end], (path or "/") + (f"?{query}" if query else "")


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


_sha1 = sha1_base32
_EMPTY_SHA1 = _sha1()  # the payload digest of a GET's (empty) request body


def _record_ids(n: int) -> list[str]:
    """`n` fresh `<urn:uuid:...>` record ids (random, version 4)."""
    # uuid.uuid4() builds an object per id: ~3 µs each, three times per fetch; this is under 1 µs.
    # Ids must be unique, not secret: random's generator (seeded from the OS, again in a forked
    # child) spares a getrandom() call a page.
    raw = bytearray(random.randbytes(16 * n))
    ids = []
    for i in range(0, 16 * n, 16):
        raw[i + 6] = (raw[i + 6] & 0x0F) | 0x40  # version 4
        raw[i + 8] = (raw[i + 8] & 0x3F) | 0x80  # RFC 4122 variant
        h = raw[i : i + 16].hex()
        ids.append(f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>")
    return ids


def _http_block_head(first_line: str, headers: list[str]) -> bytes:
    """The start line and header lines of an HTTP message, up to and including the empty line."""
    text = first_line + "\r\n" + "".join(headers) + "\r\n"
    try:
        # Values came off the wire as Latin-1 (see transport.py): this gives back the bytes the server sent.
        return text.encode("latin-1")
    except UnicodeEncodeError:  # a value that never came off the wire: keep its characters, as UTF-8
        # Line by line (values hold no CR or LF: see _clean), so one header's bytes never mix the two.
        return b"\r\n".join(
            line.encode("latin-1") if line.isascii() or max(line) <= "\xff" else line.encode("utf-8")
            for line in text.split("\r\n")
        )


_deflate: types.ModuleType
try:  # ISA-L's deflate: the same gzip format, 3-4x faster than zlib at a like ratio
    from isal import isal_zlib

    _deflate, COMPRESS_LEVEL = isal_zlib, 1
except ImportError:  # no wheel for this platform: zlib, at its fastest reasonable level
    _deflate, COMPRESS_LEVEL = zlib, 3
# Measured on 20 KB synthetic HTML pages, one core: zlib level 9 (warcio's
# default) 7 MB/s; zlib 3 104 MB/s at 0.164 of the input; zlib 1 140 MB/s at 0.199; ISA-L 1
# 465 MB/s at 0.205. Compression was the largest cost of a stored page before this choice.

# Records are serialized here directly, not through warcio's record builder, whose header objects,
# header replacement, digest streams and HTTP header re-encoding cost more than the gzip of the page.
# bench/warc_write.py, 20 KB pages, quiet machine: ~185 µs a page through warcio, ~120 µs here, of which
# ~60 µs is gzip, ~30 µs the SHA-1 digests (the body is hashed twice: payload and block) and ~5 µs the
# write. warcio still reads every record written here, digests checked, in tests/test_warc.py.

# The compiled core (harvestman.model.core) builds the same records in one call, gzipped with the
# same compressor: the bytes are the Python writer's (tests/test_core_warc.py compares them).
_core_records: WarcRecords | None = None if core is None else core.WarcRecords(
    _deflate.compress, {s.value: s.phrase for s in http.HTTPStatus})


class WarcWriter:
    """Writes fetches to rotating `.warc.gz` files; every record is one gzip member written at once."""

    def __init__(self, directory: Path, *, max_bytes: int = GiB, prefix: str = "harvestman",
                 compress_level: int = COMPRESS_LEVEL) -> None:
        self.directory = Path(directory)
        self.compress_level = compress_level
        self.max_bytes = max_bytes
        self.prefix = prefix
        self._serial = 0
        self._fd = -1
        self._path: Path | None = None
        self._final_name = ""
        self._size = 0
        self._records_in_file = 0
        self._lock = threading.Lock()  # records of one fetch must not interleave with another's
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create WARC directory {self.directory}: {exc.strerror}") from None
        self.files: list[Path] = []  # finished files, in order

    @property
    def current_path(self) -> Path | None:
        """The `.warc.gz.open` file being written, if any."""
        return self._path

    # -- records -----------------------------------------------------------------------------

    def _record(self, fields: list[str], block: Sequence[bytes]) -> bytes:
        """One WARC record (named fields as `Name: value\\r\\n` lines, then the block) as one gzip member."""
        length = sum(map(len, block))
        head = f"WARC/1.1\r\n{''.join(fields)}Content-Length: {length}\r\n\r\n".encode()
        if length <= _ONE_SHOT_MAX:
            # Most records: one call, a little cheaper than a stream of them, and ISA-L's stream
            # compresses a body twice as badly after a first piece under ~256 bytes.
            record: bytes = _deflate.compress(b"".join((head, *block, _END_OF_RECORD)),
                                              self.compress_level, _GZIP_WBITS)
            return record
        # Fed piece by piece: joining a large block first would copy it, up to --max-size bytes.
        gzip = _deflate.compressobj(self.compress_level, _deflate.DEFLATED, _GZIP_WBITS)
        pieces = [gzip.compress(head), *(gzip.compress(part) for part in block),
                  gzip.compress(_END_OF_RECORD), gzip.flush()]
        return b"".join(pieces)

    def _warcinfo(self, filename: str) -> bytes:
        [record_id] = _record_ids(1)
        fields = [
            "WARC-Type: warcinfo\r\n",
            f"WARC-Record-ID: {record_id}\r\n",
            f"WARC-Filename: {_clean(filename)}\r\n",
            f"WARC-Date: {_warc_date(time.time())}\r\n",
            "Content-Type: application/warc-fields\r\n",
            f"WARC-Block-Digest: {_sha1(_WARCINFO)}\r\n",
        ]
        return self._record(fields, (_WARCINFO,))

    def _build(self, result: FetchResult, request_headers: Headers, outlinks: Sequence[str],
               payload_digest: str) -> tuple[bytes, str, str]:
        """The fetch's records, gzipped; its response record's id and its WARC-Date."""
        response_id, request_id, metadata_id = _record_ids(3)
        ids = (response_id, request_id, metadata_id)
        date = _warc_date(result.started_at or time.time())
        if _core_records is not None:
            # The compiled core returns None for what it leaves to Python (a rendered page, a URI
            # not plain ASCII, a header outside Latin-1, a record over _ONE_SHOT_MAX).
            data = _core_records.fetch(result, request_headers, outlinks, payload_digest,
                                       self.compress_level, ids, date)
            if data is not None:
                return data, response_id, date
        data = self._build_python(result, request_headers, outlinks, payload_digest, ids, date)
        return data, response_id, date

    def _build_python(self, result: FetchResult, request_headers: Headers, outlinks: Sequence[str],
                      payload_digest: str, ids: tuple[str, str, str], date: str) -> bytes:
        """The records of one fetch in Python, `ids` those of its response, request and metadata
        records: the reference the compiled core's output is compared with."""
        uri = result.final_url or result.url
        response_id, request_id, metadata_id = ids
        # Fields every record of this fetch shares, after its type and id.
        common = f"WARC-Date: {date}\r\n"
        common += f"WARC-Target-URI: {_uri_field(uri)}\r\n"
        if result.remote_addr:
            common += f"WARC-IP-Address: {_clean(result.remote_addr)}\r\n"
        parts: list[bytes] = []
        rendering = result.rendering
        if result.status:
            body = result.body
            headers = result.headers
            if rendering is not None:  # the response as served; the rendered DOM follows as a conversion
                body, headers, payload_digest = rendering.original_body, rendering.original_headers, ""
            lines = _header_lines(headers)
            lines.append(f"Content-Length: {len(body)}\r\n")
            status_line = f"HTTP/1.1 {f'{result.status} {_reason(result.status)}'.strip()}"
            http_head = _http_block_head(status_line, lines)
            fields = [
                "WARC-Type: response\r\n",
                f"WARC-Record-ID: {response_id}\r\n",
                common,
                "WARC-Truncated: length\r\n" if result.truncated else _stopped(result.partial),
                "Content-Type: application/http; msgtype=response\r\n",
                f"WARC-Payload-Digest: {payload_digest or _sha1(body)}\r\n",
                f"WARC-Block-Digest: {_sha1(http_head, body)}\r\n",
            ]
            parts.append(self._record(fields, (http_head, body)))
            if rendering is not None:
                parts.extend(self._rendered(rendering, uri, common, response_id))
            common += f"WARC-Concurrent-To: {response_id}\r\n"
        netloc, path_and_query = _split_target(uri)
        target = _request_target(path_and_query)
        lines = [f"{_clean(n)}: {_clean(v)}\r\n" for n, v in request_headers]
        if not any(n.lower() == "host" for n, _ in request_headers):
            # What the client sent: never the URL's user:password part.
            lines.insert(0, f"Host: {_clean(netloc.rpartition('@')[2])}\r\n")
        request_block = _http_block_head(f"GET {target} HTTP/1.1", lines)
        fields = [
            "WARC-Type: request\r\n",
            f"WARC-Record-ID: {request_id}\r\n",
            common,
            "Content-Type: application/http; msgtype=request\r\n",
            f"WARC-Payload-Digest: {_EMPTY_SHA1}\r\n",
            f"WARC-Block-Digest: {_sha1(request_block)}\r\n",
        ]
        parts.append(self._record(fields, (request_block,)))
        # Outlinks are normalized URLs, which hold no CR or LF: one scan of them all instead of a
        # clean-up of each (~10 µs a page of 25 links).
        joined = "\r\noutlink: ".join(outlinks)
        separators = len(outlinks) - 1
        if outlinks and (joined.count("\r") != separators or joined.count("\n") != separators):
            joined = "\r\noutlink: ".join(_clean(link) for link in outlinks)
        meta = [f"outlink: {joined}"] if outlinks else []
        t = result.timings
        meta += [
            f"requestedURL: {_clean(result.url)}",
            f"fetchTimeMs: {round(t.total * 1000)}",
            f"timings: dns={t.dns:.6f} connect={t.connect:.6f} tls={t.tls:.6f}"
            f" firstByte={t.first_byte:.6f} total={t.total:.6f}",
            f"wireBytes: {result.wire_bytes}",
            f"attempt: {result.attempt}",
        ]
        meta += [f"redirect: {h.status} {_clean(h.url)} -> {_clean(h.location)}" for h in result.redirects]
        if result.error_class:
            meta.append(f"error: {_clean(result.error_class)}: {_clean(result.error_message)}")
        if rendering is not None:
            meta += [f"rendered: {_clean(rendering.reason)}", f"renderSettle: {_clean(rendering.settle)}",
                     f"renderTimeMs: {round(rendering.elapsed * 1000)}",
                     f"renderRequests: {rendering.requests}", f"renderBytes: {rendering.resource_bytes}"]
            meta += [f"renderRefused: {_clean(why)} {_clean(url)}" for url, why in rendering.refused[:200]]
        payload = ("\r\n".join(meta) + "\r\n").encode("utf-8")
        digest = _sha1(payload)
        fields = [
            "WARC-Type: metadata\r\n",
            f"WARC-Record-ID: {metadata_id}\r\n",
            common,
            "Content-Type: application/warc-fields\r\n",
            f"WARC-Payload-Digest: {digest}\r\n",  # a warc-fields block is all payload
            f"WARC-Block-Digest: {digest}\r\n",
        ]
        parts.append(self._record(fields, (payload,)))
        return b"".join(parts)

    def _rendered(self, rendering: Rendering, uri: str, common: str, response_id: str) -> list[bytes]:
        """The rendered DOM (a conversion record) and the screenshot (a resource record) of a page a
        browser rendered, each referring to the response it was made from."""
        dom_id, shot_id = _record_ids(2)
        dom = rendering.dom.encode("utf-8")
        digest = _sha1(dom)
        records = [self._record([
            "WARC-Type: conversion\r\n",
            f"WARC-Record-ID: {dom_id}\r\n",
            common,
            f"WARC-Refers-To: {response_id}\r\n",
            "Content-Type: text/html; charset=utf-8\r\n",
            f"WARC-Payload-Digest: {digest}\r\n",
            f"WARC-Block-Digest: {digest}\r\n",
        ], (dom,))]
        if rendering.screenshot:
            # Named as browsers' archivers name them (urn:screenshot:URL), so replay tools find them.
            digest = _sha1(rendering.screenshot)
            shot_common = common.replace(f"WARC-Target-URI: {_uri_field(uri)}\r\n",
                                         f"WARC-Target-URI: urn:screenshot:{_uri_field(uri)}\r\n")
            records.append(self._record([
                "WARC-Type: resource\r\n",
                f"WARC-Record-ID: {shot_id}\r\n",
                shot_common,
                f"WARC-Refers-To: {response_id}\r\n",
                f"WARC-Concurrent-To: {response_id}\r\n",
                "Content-Type: image/png\r\n",
                f"X-Harvestman-Screenshot: {_clean(rendering.screenshot_mode)}\r\n",
                f"WARC-Payload-Digest: {digest}\r\n",
                f"WARC-Block-Digest: {digest}\r\n",
            ], (rendering.screenshot,)))
        return records

    # -- files -----------------------------------------------------------------------------------

    def write(self, result: FetchResult, request_headers: Headers, outlinks: Sequence[str],
              payload_digest: str = "") -> WarcPlace | None:
        """Append one fetch: response (when there was one), request and metadata records; where the
        response record went (None when there was no response).

        `payload_digest`: the body's `sha1_base32`, when the caller has it already.
        """
        data, response_id, date = self._build(result, request_headers, outlinks, payload_digest)
        with self._lock:
            if self._fd >= 0 and self._records_in_file and self._size + len(data) > self.max_bytes:
                self._finish()
            if self._fd < 0:
                self._start()
            offset, name = self._size, self._final_name
            self._append(data)
            self._records_in_file += 1
        # The response is the fetch's first record.
        return WarcPlace(name, offset, response_id, date) if result.status else None

    def _start(self) -> None:
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")
        self._serial += 1
        # Names never come from a URL: nothing a server sends can steer where a file goes.
        name = f"{self.prefix}-{stamp}-{self._serial:05d}-{secrets.token_hex(4)}.warc.gz"
        path = self.directory / (name + OPEN_SUFFIX)
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot create WARC file {path}: {exc.strerror}") from None
        # Held while the file is written (the kernel lets go when the process dies, kill -9 too):
        # recover() on the same folder, by another process, leaves this file alone. A file system
        # without locks (some network ones) only loses that guard.
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._path = path
        self._final_name = str(self.directory / name)  # as named once finished: what WarcPlace says
        self._size = 0
        self._records_in_file = 0
        self._append(self._warcinfo(name))

    def _append(self, data: bytes) -> None:
        # One write() of whole gzip members: a kill leaves at most one partial member at the end,
        # which recover() cuts off. Unbuffered, so nothing waits in user space when the process dies.
        view = memoryview(data)
        try:
            if faults.ARMED:  # a crash test (faults.py): half the bytes in the file, then perhaps the kill
                view = view[os.write(self._fd, view[: len(view) // 2]) :]
                faults.crash_point("warc-mid-record")
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            # Cut a half-written record off (a full disk, say), so the file stays readable to its end.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise StorageError(f"cannot write WARC file {self._path}: {exc.strerror}") from None
        self._size += len(data)

    def _finish(self) -> None:
        if self._fd < 0 or self._path is None:
            return
        try:
            os.fsync(self._fd)
            os.close(self._fd)
            final = self._path.with_name(self._path.name.removesuffix(OPEN_SUFFIX))
            os.replace(self._path, final)
        except OSError as exc:
            raise StorageError(f"cannot finish WARC file {self._path}: {exc.strerror}") from None
        finally:
            self._fd = -1
            self._path = None
        self.files.append(final)

    def close(self) -> None:
        """Finish the current file (renamed from `.warc.gz.open` to `.warc.gz`); idempotent."""
        with self._lock:
            self._finish()

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def complete_length(path: Path) -> int:
    """Bytes from the start of `path` up to the end of its last complete gzip member."""
    good = 0
    offset = 0  # file offset of data[0]
    d = zlib.decompressobj(zlib.MAX_WBITS | 16)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            data = chunk
            while data:
                try:
                    d.decompress(data, 1 << 16)  # bounded output: memory stays flat on any input
                except zlib.error:
                    return good
                if d.eof:
                    used = len(data) - len(d.unused_data)
                    offset += used
                    good = offset
                    data = d.unused_data
                    d = zlib.decompressobj(zlib.MAX_WBITS | 16)
                else:
                    used = len(data) - len(d.unconsumed_tail)
                    offset += used
                    data = d.unconsumed_tail
    return good


def recover(directory: Path) -> list[Path]:
    """Cut every `.warc.gz.open` file in `directory` left by a stopped or killed process to its last
    complete record and finish it; the finished files. A file a live process is writing (it holds
    the file's lock: another worker with the same `--out`) is left alone."""
    done: list[Path] = []
    for path in sorted(Path(directory).glob(f"*.warc.gz{OPEN_SUFFIX}")):
        final = path.with_name(path.name.removesuffix(OPEN_SUFFIX))
        try:
            with open(path, "r+b") as f:
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # being written
                good = complete_length(path)
                if good == 0:
                    path.unlink()  # not even the warcinfo record made it: nothing to keep
                    continue
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
                os.replace(path, final)
        except FileNotFoundError:
            continue  # finished by its writer since it was listed
        except OSError as exc:
            raise StorageError(f"cannot recover WARC file {path}: {exc.strerror}") from None
        done.append(final)
    return done

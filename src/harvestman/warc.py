"""WARC/1.1 output: request, response and metadata records per fetch, crash-safe and rotated by size."""

from __future__ import annotations

import contextlib
import http
import io
import os
import secrets
import threading
import types
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from harvestman.errors import StorageError
from harvestman.records import FetchResult, Headers

OPEN_SUFFIX = ".open"
GiB = 1024 * 1024 * 1024

# The stored body is content-decoded and complete in itself, so the headers describing the wire
# framing would lie about it; they are kept under this prefix for the record.
_FRAMING_HEADERS = ("content-encoding", "transfer-encoding", "content-length")
_ORIGINAL_PREFIX = "X-Harvestman-Original-"


def _clean(value: str) -> str:
    # A CR or LF inside a value would forge headers or records in the archive.
    return value.replace("\r", " ").replace("\n", " ")


def _warc_date(ts: float) -> str:
    when = datetime.fromtimestamp(ts, UTC).replace(tzinfo=None)
    return str(datetime_to_iso_date(when, use_micros=True))


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


_deflate: types.ModuleType
try:  # ISA-L's deflate: the same gzip format, 3-4x faster than zlib at a like ratio
    from isal import isal_zlib

    _deflate, COMPRESS_LEVEL = isal_zlib, 1
except ImportError:  # no wheel for this platform: zlib, at its fastest reasonable level
    _deflate, COMPRESS_LEVEL = zlib, 3
# Measured on 20 KB synthetic HTML pages, one core: zlib level 9 (warcio's
# default) 7 MB/s; zlib 3 104 MB/s at 0.164 of the input; zlib 1 140 MB/s at 0.199; ISA-L 1
# 465 MB/s at 0.205. Compression was the largest cost of a stored page before this choice.


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
        self._size = 0
        self._records_in_file = 0
        self._lock = threading.Lock()  # records of one fetch must not interleave with another's
        # warcio only builds records here; we gzip them ourselves at a level of our choosing.
        self._builder = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
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

    def _serialize(self, record: Any) -> bytes:
        """One record as one complete gzip member."""
        buf = io.BytesIO()
        self._builder.out = buf
        self._builder.write_record(record)
        gzip = _deflate.compressobj(self.compress_level, _deflate.DEFLATED, zlib.MAX_WBITS + 16)
        member: bytes = gzip.compress(buf.getvalue()) + gzip.flush()
        return member

    def _warcinfo(self, filename: str) -> bytes:
        info = {
            "software": "harvestman/0.1",
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        }
        return self._serialize(self._builder.create_warcinfo_record(filename, info))

    def _build(self, result: FetchResult, request_headers: Headers, outlinks: Sequence[str]) -> bytes:
        b = self._builder
        uri = result.final_url or result.url
        date = _warc_date(result.started_at) if result.started_at else b.curr_warc_date()
        common = {"WARC-Date": date}
        if result.remote_addr:
            common["WARC-IP-Address"] = result.remote_addr
        parts: list[bytes] = []
        response_id = ""
        if result.status:
            headers: list[tuple[str, str]] = []
            for name, value in result.headers:
                if name.lower() in _FRAMING_HEADERS:
                    headers.append((_ORIGINAL_PREFIX + name, _clean(value)))
                else:
                    headers.append((name, _clean(value)))
            headers.append(("Content-Length", str(len(result.body))))
            status = StatusAndHeaders(
                f"{result.status} {_reason(result.status)}".strip(), headers, "HTTP/1.1"
            )
            warc_headers = dict(common)
            if result.truncated:
                warc_headers["WARC-Truncated"] = "length"
            response = b.create_warc_record(
                uri,
                "response",
                payload=io.BytesIO(result.body),
                length=len(result.body),
                http_headers=status,
                warc_headers_dict=warc_headers,
            )
            response_id = response.rec_headers.get_header("WARC-Record-ID")
            parts.append(self._serialize(response))
        split = urlsplit(uri)
        target = (split.path or "/") + (f"?{split.query}" if split.query else "")
        req_headers = [(n, _clean(v)) for n, v in request_headers]
        if not any(n.lower() == "host" for n, _ in req_headers):
            req_headers.insert(0, ("Host", split.netloc))
        request = b.create_warc_record(
            uri,
            "request",
            http_headers=StatusAndHeaders(f"GET {_clean(target)} HTTP/1.1", req_headers, ""),
            warc_headers_dict=dict(common, **({"WARC-Concurrent-To": response_id} if response_id else {})),
        )
        parts.append(self._serialize(request))
        fields = [f"outlink: {_clean(link)}" for link in outlinks]
        t = result.timings
        fields += [
            f"requestedURL: {_clean(result.url)}",
            f"fetchTimeMs: {round(t.total * 1000)}",
            f"timings: dns={t.dns:.6f} connect={t.connect:.6f} tls={t.tls:.6f}"
            f" firstByte={t.first_byte:.6f} total={t.total:.6f}",
            f"wireBytes: {result.wire_bytes}",
            f"attempt: {result.attempt}",
        ]
        fields += [f"redirect: {h.status} {_clean(h.url)} -> {_clean(h.location)}" for h in result.redirects]
        if result.error_class:
            fields.append(f"error: {result.error_class}: {_clean(result.error_message)}")
        payload = ("\r\n".join(fields) + "\r\n").encode("utf-8")
        meta_headers = dict(common)
        if response_id:
            meta_headers["WARC-Concurrent-To"] = response_id
        metadata = b.create_warc_record(
            uri,
            "metadata",
            payload=io.BytesIO(payload),
            length=len(payload),
            warc_content_type="application/warc-fields",
            warc_headers_dict=meta_headers,
        )
        parts.append(self._serialize(metadata))
        return b"".join(parts)

    # -- files -----------------------------------------------------------------------------------

    def write(self, result: FetchResult, request_headers: Headers, outlinks: Sequence[str]) -> None:
        """Append one fetch: response (when there was one), request and metadata records."""
        data = self._build(result, request_headers, outlinks)
        with self._lock:
            if self._fd >= 0 and self._records_in_file and self._size + len(data) > self.max_bytes:
                self._finish()
            if self._fd < 0:
                self._start()
            self._append(data)
            self._records_in_file += 1

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
        self._path = path
        self._size = 0
        self._records_in_file = 0
        self._append(self._warcinfo(name))

    def _append(self, data: bytes) -> None:
        # One write() of whole gzip members: a kill leaves at most one partial member at the end,
        # which recover() cuts off. Unbuffered, so nothing waits in user space when the process dies.
        view = memoryview(data)
        try:
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
    """Cut every `.warc.gz.open` file in `directory` to its last complete record and finish it."""
    done: list[Path] = []
    for path in sorted(Path(directory).glob(f"*.warc.gz{OPEN_SUFFIX}")):
        final = path.with_name(path.name.removesuffix(OPEN_SUFFIX))
        try:
            good = complete_length(path)
            if good == 0:
                path.unlink()  # not even the warcinfo record made it: nothing to keep
                continue
            with open(path, "r+b") as f:
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
            os.replace(path, final)
        except OSError as exc:
            raise StorageError(f"cannot recover WARC file {path}: {exc.strerror}") from None
        done.append(final)
    return done

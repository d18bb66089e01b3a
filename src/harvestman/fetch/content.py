"""Response bodies: bounded incremental decompression, charset detection, binary sniffing.

Pure functions and small state machines, no I/O. `BodyDecoder` is fed the wire bytes as they
arrive and never holds more than `max_size` decoded bytes: each decoder is asked for a bounded
amount of output at a time, so a decompression bomb costs at most the cap in output and CPU.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import re
import zlib
from typing import Any

import brotli
import charset_normalizer
import zstandard

from harvestman.model.errors import ContentError

MAX_ENCODINGS = 5
_STEP = 64 * 1024  # decoded bytes asked of a stage at a time
_ZSTD_MAX_WINDOW = 8 * 1024 * 1024  # RFC 9659: HTTP zstd decoders need not accept larger windows


class _Stage:
    """One decoding step; `read(n)` returns decoded bytes (about n at most) or b'' when it needs input."""

    def __init__(self) -> None:
        self.pending = b""
        self.fed = False

    def feed(self, data: bytes) -> None:
        self.fed = True
        self.pending = self.pending + data if self.pending else data

    def read(self, n: int) -> bytes:
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def check_complete(self) -> None:
        """Raise ContentError if the compressed stream stopped in the middle."""


class _ZlibStage(_Stage):
    """gzip (any number of members) or deflate (zlib-wrapped or raw)."""

    def __init__(self, gzip: bool) -> None:
        super().__init__()
        self.gzip = gzip
        self.dec: Any = None
        self.members = 0

    def _new(self, first: bytes) -> Any:
        if self.gzip:
            return zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, as curl accepts
        # "deflate" is zlib-wrapped by the RFC, raw by many servers: look at the zlib header.
        zlib_header = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)

    def read(self, n: int) -> bytes:
        while self.pending:
            if self.dec is None or self.dec.eof:
                if self.dec is not None and not (self.gzip and self.pending.startswith(b"\x1f\x8b")):
                    self.pending = b""  # trailing garbage after the stream: ignored, as browsers do
                    return b""
                if len(self.pending) < 2:
                    return b""  # wait for the header bytes
                self.dec = self._new(self.pending)
                self.members += 1
            data, self.pending = self.pending, b""
            try:
                out: bytes = self.dec.decompress(data, n)
            except zlib.error as exc:
                raise ContentError(f"bad {'gzip' if self.gzip else 'deflate'} data: {exc}") from None
            self.pending = self.dec.unconsumed_tail or self.dec.unused_data
            if out:
                return out
        return b""

    def check_complete(self) -> None:
        if self.fed and (self.dec is None or not self.dec.eof):
            raise ContentError(f"{'gzip' if self.gzip else 'deflate'} stream ends early")


class _BrotliStage(_Stage):
    def __init__(self) -> None:
        super().__init__()
        self.dec = brotli.Decompressor()

    def read(self, n: int) -> bytes:
        # can_accept_more_data() says the input buffer is free, not that all output is out: keep
        # calling process(b"") until it yields nothing, and only then ask for more input.
        try:
            while True:
                if self.dec.is_finished():
                    self.pending = b""  # trailing garbage after the stream: ignored
                    return b""
                data = b""
                if self.pending and self.dec.can_accept_more_data():
                    data, self.pending = self.pending, b""
                out = self.dec.process(data, output_buffer_limit=n)
                if out or not data:
                    return bytes(out)
        except brotli.error as exc:
            raise ContentError(f"bad br data: {exc}") from None

    def check_complete(self) -> None:
        if self.fed and not self.dec.is_finished():
            raise ContentError("br stream ends early")


class _Full(Exception):
    """Raised inside the zstd sink to stop a decompression that produced its budget."""


class _ZstdStage(_Stage):
    """zstd through stream_writer: its output sink raises once the budget is produced, so a bomb
    stops after `budget` bytes (python-zstandard's decompressobj has no max_length)."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget
        self.produced = 0
        self.out: list[bytes] = []
        self.full = False
        dctx = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
        self.writer = dctx.stream_writer(self, write_size=_STEP)  # type: ignore[arg-type]

    def write(self, data: bytes) -> int:
        """Sink for stream_writer."""
        self.out.append(bytes(data))
        self.produced += len(data)
        if self.produced > self.budget:
            self.full = True
            raise _Full
        return len(data)

    def read(self, n: int) -> bytes:
        if not self.out and self.pending and not self.full:
            data, self.pending = self.pending, b""
            try:
                self.writer.write(data)
            except _Full:
                pass
            except zstandard.ZstdError as exc:
                raise ContentError(f"bad zstd data: {exc}") from None
        if not self.out:
            return b""
        return self.out.pop(0)


def _make_stage(name: str, budget: int) -> _Stage:
    if name in ("gzip", "x-gzip"):
        return _ZlibStage(gzip=True)
    if name == "deflate":
        return _ZlibStage(gzip=False)
    if name == "br":
        return _BrotliStage()
    if name == "zstd":
        return _ZstdStage(budget)
    if name == "identity":
        return _Stage()
    raise ContentError(f"unknown content encoding {name!r}")


def parse_content_encoding(values: list[str]) -> list[str]:
    """The codings of Content-Encoding header values, in the order they were applied."""
    names = [p.strip().lower() for v in values for p in v.split(",")]
    return [n for n in names if n]


class BodyDecoder:
    """Incremental Content-Encoding decoder whose output never exceeds `max_size` bytes."""

    def __init__(self, content_encodings: list[str], max_size: int) -> None:
        names = parse_content_encoding(content_encodings)
        if len(names) > MAX_ENCODINGS:
            raise ContentError(f"{len(names)} content encodings (at most {MAX_ENCODINGS} allowed)")
        self.max_size = max_size
        # Decoding undoes the codings in reverse order; identity is a no-op anywhere.
        self._stages = [_make_stage(n, max_size) for n in reversed(names) if n != "identity"]
        self._stage_out = [0] * len(self._stages)
        self._parts: list[bytes] = []
        self._size = 0
        self.truncated = False
        self._done = False

    @property
    def size(self) -> int:
        """Decoded bytes kept so far."""
        return self._size

    def feed(self, chunk: bytes) -> None:
        """Decode one chunk of wire bytes; further input is ignored once the cap is reached."""
        if self._done or not chunk:
            return
        if not self._stages:
            self._keep(chunk)
            return
        self._stages[0].feed(chunk)
        self._drain()

    def _keep(self, data: bytes) -> None:
        room = self.max_size - self._size
        if len(data) > room:
            data = data[:room]
            self.truncated = True
            self._done = True
        if data:
            self._parts.append(data)
            self._size += len(data)

    def _pull(self, i: int, n: int) -> bytes:
        """Up to about n decoded bytes from stage i, feeding it from stage i-1 as needed."""
        stage = self._stages[i]
        # Bounded: every turn either returns or moves input down from a finite upstream.
        while True:
            out = stage.read(n)
            if out:
                self._stage_out[i] += len(out)
                if self._stage_out[i] > self.max_size:
                    # An intermediate stage producing more than the cap is a bomb in a bomb.
                    self.truncated = self._done = True
                return out
            if i == 0 or self._done:
                return b""
            upstream = self._pull(i - 1, _STEP)
            if not upstream:
                return b""
            stage.feed(upstream)

    def _drain(self) -> None:
        last = len(self._stages) - 1
        while not self._done and self._stages:
            out = self._pull(last, min(_STEP, self.max_size - self._size + 1))
            if not out:
                return
            self._keep(out)

    def parts_from(self, start: int) -> list[bytes]:
        """The decoded pieces kept from piece `start` on (a stop checker reads what is new)."""
        return self._parts[start:]

    def cut(self) -> bytes:
        """The body decoded so far, when the transfer was stopped on purpose (a compressed stream is
        then cut short by design, so it is not checked for completeness)."""
        self._done = True
        body = b"".join(self._parts)
        self._parts = []
        return body

    def finish(self) -> bytes:
        """The decoded body; ContentError if a compressed stream was cut short (unless capped)."""
        if not self._done:
            self._drain()
            if not self._done:
                for stage in self._stages:
                    stage.check_complete()
        self._done = True
        body = b"".join(self._parts)
        self._parts = []  # dropped at once: a body near the cap must not be held twice
        return body


# --- charsets -------------------------------------------------------------------------------

# WHATWG Encoding Standard labels whose Python codec differs from the label's plain meaning.
_WHATWG = {
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "l1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "ansi_x3.4-1968": "cp1252",
    "cp819": "cp1252",
    "ibm819": "cp1252",
    "iso-8859-9": "cp1254",
    "latin5": "cp1254",
    "iso-8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gbk",
    "gb_2312-80": "gbk",
    "x-gbk": "gbk",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "shift_jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "big5": "big5hkscs",
    "x-x-big5": "big5hkscs",
    "unicode-1-1-utf-8": "utf-8",
    "utf8": "utf-8",
}
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([^\s"';,]+)""", re.I)
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.()+-]+)""", re.I)
_META_PREFIX = 4096
_DETECT_PREFIX = 16 * 1024


# Labels are few and every page asks (twice: to detect and to decode): remembered, 1.3 -> 0.1 µs.
@functools.lru_cache(maxsize=256)
def charset_from_label(label: str, *, from_meta: bool = False) -> str | None:
    """The Python codec name for a charset label (WHATWG mapping), or None for unknown labels."""
    key = label.strip().strip("\"'").lower()
    if not key:
        return None
    if from_meta and key.startswith("utf-16"):
        return "utf-8"  # WHATWG: a meta tag read as ASCII cannot truly declare UTF-16
    key = _WHATWG.get(key, key)
    try:
        name = codecs.lookup(key).name
    except LookupError:
        return None
    if name in ("rot-13", "base64", "hex", "zlib", "bz2", "quopri", "uu") or "codec" in name:
        return None  # bytes-to-bytes codecs are not text encodings
    return "utf-8" if name == "utf-8" else name


def header_charset(content_type_header: str | None) -> str | None:
    """The charset parameter of a Content-Type header as a codec name, or None."""
    if not content_type_header:
        return None
    match = _CHARSET_PARAM.search(content_type_header)
    return charset_from_label(match.group(1)) if match else None


def _valid_utf8_prefix(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError as exc:
        # The prefix may cut a multi-byte sequence in two: an incomplete tail is still UTF-8.
        return exc.reason == "unexpected end of data" and exc.start >= len(data) - 3


def detect_charset(body: bytes, content_type_header: str | None) -> tuple[str, str]:
    """(codec, source) by precedence BOM > HTTP header > <meta> in 4 KiB > detection > utf-8."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, "bom"
    from_header = header_charset(content_type_header)
    if from_header:
        return from_header, "header"
    for match in _META_CHARSET.finditer(body[:_META_PREFIX]):
        from_meta = charset_from_label(match.group(1).decode("ascii", "replace"), from_meta=True)
        if from_meta:
            return from_meta, "meta"
    prefix = body[:_DETECT_PREFIX]
    if not prefix:
        return "utf-8", "default"
    if _valid_utf8_prefix(prefix):
        return "utf-8", "detected"
    best = charset_normalizer.from_bytes(prefix).best()
    if best is not None:
        detected = charset_from_label(best.encoding)
        if detected:
            return detected, "detected"
    return "utf-8", "default"


def decode_text(body: bytes, charset: str) -> str:
    """The body decoded with `charset` (utf-8 when unknown); never raises, bad bytes become U+FFFD."""
    name = charset_from_label(charset) or "utf-8"
    text = body.decode(name, errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


# --- media types and binary sniffing -----------------------------------------------------------

_MAGIC: tuple[tuple[int, bytes], ...] = (
    (0, b"\x89PNG\r\n\x1a\n"),
    (0, b"\xff\xd8\xff"),  # JPEG
    (0, b"GIF87a"),
    (0, b"GIF89a"),
    (0, b"%PDF-"),
    (0, b"\x1f\x8b"),  # gzip
    (0, b"PK\x03\x04"),  # zip, docx, jar, epub
    (0, b"PK\x05\x06"),
    (0, b"\x28\xb5\x2f\xfd"),  # zstd
    (0, b"BZh"),
    (0, b"\xfd7zXZ\x00"),
    (0, b"7z\xbc\xaf\x27\x1c"),
    (0, b"Rar!\x1a\x07"),
    (0, b"RIFF"),  # webp, wav, avi
    (0, b"OggS"),
    (0, b"fLaC"),
    (0, b"ID3"),  # mp3
    (0, b"\x1aE\xdf\xa3"),  # matroska / webm
    (4, b"ftyp"),  # mp4, mov, heic, avif
    (0, b"\x00\x00\x01\x00"),  # ico
    (0, b"II*\x00"),  # tiff
    (0, b"MM\x00*"),
    (0, b"wOFF"),
    (0, b"wOF2"),
    (0, b"\x7fELF"),
    (0, b"\x00asm"),
    (0, b"\xca\xfe\xba\xbe"),
    (0, b"SQLite format 3\x00"),
    (0, b"%!PS"),
)
# Grouped by offset for str.startswith's tuple form (one C call, where a loop over 30 cost ~3 µs a page).
_MAGIC_AT = {offset: tuple(m for o, m in _MAGIC if o == offset) for offset in {o for o, _ in _MAGIC}}
_BOM_PREFIXES = tuple(bom for bom, _ in _BOMS)
_SNIFF_PREFIX = 2048
# WHATWG "binary data bytes": controls that do not occur in text (TAB, LF, FF, CR, ESC excluded).
_BINARY_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_TEXT_TYPES = ("application/xml", "application/json", "application/javascript", "application/xhtml+xml",
               "application/rss+xml", "application/atom+xml", "application/ld+json", "image/svg+xml")
_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/")
_BINARY_TYPES = ("application/octet-stream", "application/pdf", "application/zip", "application/gzip",
                 "application/x-gzip", "application/zstd", "application/wasm", "application/x-tar")


def media_type(content_type_header: str | None) -> str:
    """The media type of a Content-Type header, lower case, without parameters ('' if absent)."""
    if not content_type_header:
        return ""
    return content_type_header.split(";", 1)[0].strip().lower()


def is_textual_type(mtype: str) -> bool:
    """Whether a media type names text (text/*, XML, JSON, JavaScript, SVG)."""
    return (mtype.startswith("text/") or mtype in _TEXT_TYPES
            or mtype.endswith(("+xml", "+json")))


def sniff_binary(body: bytes, content_type: str) -> bool:
    """Whether a body is binary: a known binary type, a magic number, or control bytes in its prefix."""
    mtype = media_type(content_type)
    if not is_textual_type(mtype) and (mtype.startswith(_BINARY_PREFIXES) or mtype in _BINARY_TYPES):
        return True
    if not body:
        return False
    if body.startswith(_BOM_PREFIXES):
        return False  # UTF-16 text is full of NUL bytes
    if any(body.startswith(magics, offset) for offset, magics in _MAGIC_AT.items()):
        return True
    prefix = body[:_SNIFF_PREFIX]
    if b"\x00" in prefix:
        return True
    controls = len(prefix) - len(prefix.translate(None, _BINARY_BYTES))
    return controls * 50 > len(prefix)  # more than 2% control bytes: not text


# Base32 of a 160-bit digest, ten bits (two letters) at a time: base64.b32encode is a Python loop
# that cost ~8 µs a digest, and a stored page takes four.
_B32_PAIRS = [a + b for a in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" for b in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"]


def sha1_base32(*parts: bytes) -> str:
    """`sha1:` and the Base32 SHA-1 of the concatenated parts: the WARC digest form, also the
    signature that tells an unchanged page (one hash of a body serves both)."""
    h = hashlib.sha1()
    for part in parts:
        h.update(part)
    n = int.from_bytes(h.digest(), "big")
    return "sha1:" + "".join([_B32_PAIRS[(n >> shift) & 1023] for shift in range(150, -1, -10)])

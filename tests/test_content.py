"""content: bounded decompression, charset precedence, binary sniffing."""

from __future__ import annotations

import gzip
import os
import time
import zlib
from collections.abc import Callable

import brotli
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.fetch.content import (
    BodyDecoder,
    decode_text,
    detect_charset,
    media_type,
    sniff_binary,
)
from harvestman.model.errors import ContentError

SOURCE = b"<html><body>" + b"hello harvestman " * 5000 + b"</body></html>"


def _raw_deflate(data: bytes) -> bytes:
    co = zlib.compressobj(wbits=-15)
    return co.compress(data) + co.flush()


ENCODERS = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": lambda d: zstandard.ZstdCompressor().compress(d),
    "identity": lambda d: d,
}


def decode(encodings: list[str], data: bytes, cap: int = 10 << 20, chunk: int = 16384) -> BodyDecoder:
    dec = BodyDecoder(encodings, cap)
    for i in range(0, len(data), chunk):
        dec.feed(data[i:i + chunk])
    return dec


@pytest.mark.parametrize("name", sorted(ENCODERS))
@pytest.mark.parametrize("chunk", [1, 7, 16384])
def test_round_trip(name: str, chunk: int) -> None:
    data = SOURCE[:3000] if chunk == 1 else SOURCE
    dec = decode([name], ENCODERS[name](data), chunk=chunk)
    assert dec.finish() == data
    assert not dec.truncated


def test_raw_deflate_and_stacked_encodings() -> None:
    assert decode(["deflate"], _raw_deflate(SOURCE)).finish() == SOURCE
    stacked = brotli.compress(gzip.compress(SOURCE))
    assert decode(["gzip, br"], stacked).finish() == SOURCE
    assert decode(["gzip", "br"], stacked).finish() == SOURCE


@pytest.mark.parametrize("name", ["gzip", "deflate", "br", "zstd"])
def test_bomb_is_capped_quickly(name: str) -> None:
    zeros = b"\0" * (64 << 20)  # 64 MiB of zeros: 64x the cap
    makers: dict[str, Callable[[], bytes]] = {
        "gzip": lambda: gzip.compress(zeros, 6), "deflate": lambda: zlib.compress(zeros, 6),
        "br": lambda: bytes(brotli.compress(zeros, quality=5)),
        "zstd": lambda: bytes(zstandard.ZstdCompressor(level=3).compress(zeros))}
    bomb = makers[name]()
    cap = 1 << 20
    start = time.process_time()
    dec = decode([name], bomb, cap=cap)
    out = dec.finish()
    assert len(out) == cap
    assert dec.truncated
    assert time.process_time() - start < 1.0


def test_exact_cap_is_not_truncated() -> None:
    dec = decode(["gzip"], gzip.compress(b"a" * 1000), cap=1000)
    assert dec.finish() == b"a" * 1000
    assert not dec.truncated
    dec = decode([], b"a" * 1001, cap=1000)
    assert len(dec.finish()) == 1000
    assert dec.truncated


def test_six_encodings_rejected() -> None:
    with pytest.raises(ContentError):
        BodyDecoder(["gzip"] * 6, 1000)
    with pytest.raises(ContentError):
        BodyDecoder(["gzip, gzip, gzip", "gzip, gzip, gzip"], 1000)
    data = SOURCE
    for _ in range(5):
        data = gzip.compress(data)
    assert decode(["gzip"] * 5, data).finish() == SOURCE


def test_unknown_encoding_rejected() -> None:
    with pytest.raises(ContentError):
        BodyDecoder(["compress"], 1000)


def test_many_empty_gzip_members() -> None:
    start = time.process_time()
    dec = decode(["gzip"], gzip.compress(b"") * 100_000 + gzip.compress(b"end"))
    assert dec.finish() == b"end"
    assert time.process_time() - start < 3.0


@pytest.mark.parametrize("name,data", [
    ("gzip", b"this is not gzip at all"),
    ("gzip", gzip.compress(SOURCE)[:200]),
    ("deflate", b"\xff\xff\xff\xff\xff"),
    ("br", brotli.compress(SOURCE)[:20]),
    ("zstd", b"\x28\xb5\x2f\xfd garbage garbage"),
])
def test_bad_data_is_content_error(name: str, data: bytes) -> None:
    with pytest.raises(ContentError):
        decode([name], data).finish()


def test_empty_body_with_encoding() -> None:
    assert decode(["gzip"], b"").finish() == b""
    assert decode(["br"], b"").finish() == b""


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from(["gzip", "deflate", "br", "zstd"]))
def test_random_bytes_never_crash(data: bytes, name: str) -> None:
    try:
        out = decode([name], data, cap=4096).finish()
    except ContentError:
        return
    assert len(out) <= 4096


# --- charsets ----------------------------------------------------------------------------------

RUSSIAN = ("Съешь же ещё этих мягких французских булок, да выпей чаю. "
           "Широкая электрификация южных губерний даст мощный толчок подъёму сельского хозяйства. ") * 20


def test_bom_beats_header_and_meta() -> None:
    body = b"\xef\xbb\xbf<meta charset=windows-1251>" + "привет".encode()
    assert detect_charset(body, "text/html; charset=iso-8859-2") == ("utf-8", "bom")
    assert detect_charset(b"\xff\xfeh\x00i\x00", None) == ("utf-16-le", "bom")


def test_header_beats_meta() -> None:
    body = b'<meta charset="utf-8">' + RUSSIAN.encode("cp1251")
    assert detect_charset(body, 'text/html; charset="windows-1251"') == ("cp1251", "header")


def test_meta_charset_and_http_equiv() -> None:
    assert detect_charset(b'<head><meta charset="koi8-r">', "text/html") == ("koi8-r", "meta")
    body = b'<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
    assert detect_charset(body, None) == ("cp932", "meta")


def test_meta_after_4k_is_ignored() -> None:
    body = b" " * 5000 + b'<meta charset="koi8-r">'
    assert detect_charset(body, None)[1] != "meta"


def test_unknown_labels_fall_through() -> None:
    body = b'<meta charset="x-bogus">' + RUSSIAN.encode("utf-8")
    assert detect_charset(body, "text/html; charset=bogus-9") == ("utf-8", "detected")
    assert detect_charset(b"abc", "text/html; charset=base64") == ("utf-8", "detected")


def test_whatwg_labels() -> None:
    assert detect_charset(b"x", "text/html; charset=ISO-8859-1")[0] == "cp1252"
    assert detect_charset(b"x", "text/html; charset=us-ascii")[0] == "cp1252"
    assert detect_charset(b'<meta charset="utf-16">', None) == ("utf-8", "meta")


def test_detection_of_cp1251() -> None:
    encoding, source = detect_charset(RUSSIAN.encode("cp1251"), None)
    assert source == "detected"
    assert decode_text(RUSSIAN.encode("cp1251"), encoding) == RUSSIAN


def test_utf8_header_over_cp1251_body_never_raises() -> None:
    body = RUSSIAN.encode("cp1251")
    charset, _ = detect_charset(body, "text/html; charset=utf-8")
    text = decode_text(body, charset)
    assert "\ufffd" in text


def test_decode_text_unknown_charset_and_bom() -> None:
    assert decode_text(b"\xef\xbb\xbfhi", "utf-8") == "hi"
    assert decode_text(b"hi\xff", "no-such-charset") == "hi\ufffd"


# --- binary sniffing and media types ---------------------------------------------------------------

@pytest.mark.parametrize("body", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"\xff\xd8\xff\xe0\x00\x10JFIF", b"GIF89a\x01\x00",
    b"%PDF-1.7\n", gzip.compress(b"<html>", mtime=0), b"PK\x03\x04\x14\x00", zstandard.compress(b"x"),
    b"\x00\x00\x00\x18ftypmp42", os.urandom(2048), b"<html>\x00\x00\x00",
])
def test_binary_labelled_html(body: bytes) -> None:
    assert sniff_binary(body, "text/html")


@pytest.mark.parametrize("body", [
    b"<!doctype html><html><p>hi</p>", RUSSIAN.encode("cp1251"), RUSSIAN.encode("utf-8"),
    "hi".encode("utf-16"), b"", b"line\tone\r\nline two\x0c\n",
])
def test_text_is_not_binary(body: bytes) -> None:
    assert not sniff_binary(body, "text/html")


def test_binary_media_types() -> None:
    assert sniff_binary(b"hello", "image/png")
    assert sniff_binary(b"hello", "application/octet-stream")
    assert not sniff_binary(b"<svg/>", "image/svg+xml")


def test_media_type() -> None:
    assert media_type("Text/HTML; charset=UTF-8") == "text/html"
    assert media_type(None) == ""
    assert media_type("  application/json ") == "application/json"

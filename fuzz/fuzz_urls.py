"""atheris harness for harvestman.net.urls: resolve, normalize and host_of on arbitrary text.

Run: python fuzz/fuzz_urls.py [libFuzzer options] [CORPUS_DIR ...], e.g. -max_total_time=60.
A crash is any exception other than InvalidUrlError from normalize, or a broken invariant.
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports(include=["harvestman"]):
    from harvestman.model.errors import InvalidUrlError
    from harvestman.net.urls import host_of, normalize, normalize_with_host, registered_domain, resolve

BASES = ("http://example.com/a/b?q#f", "https://xn--bcher-kva.de:8443/", "http://[::1]/x/")


def check_normalized(raw: str, max_length: int) -> None:
    """normalize() either refuses with InvalidUrlError or returns a fixed point that parses."""
    try:
        once, host = normalize_with_host(raw, max_length=max_length)
    except InvalidUrlError:
        return
    assert once.startswith(("http://", "https://")), once
    assert "#" not in once, once
    assert len(once) <= max_length, (len(once), max_length)
    assert resolve(once) == once, once
    assert normalize(once, max_length=max_length) == once, (raw, once)
    assert host_of(once) == host, (once, host)
    registered_domain(host)


def TestOneInput(data: bytes) -> None:
    """One input: a flags byte, then UTF-8 text (bad bytes become lone surrogates) split at U+001F."""
    if not data:
        return
    flags = data[0]
    text = data[1:].decode("utf-8", "surrogateescape")
    href, _, base_text = text.partition("\x1f")
    base = base_text if flags & 1 else BASES[flags % len(BASES)]
    joined = resolve(href, base)
    assert joined is None or isinstance(joined, str)
    if joined is not None:
        assert resolve(joined) is not None, (href, base, joined)
        check_normalized(joined, 2048)
    check_normalized(href, 64 if flags & 2 else 2048)
    with contextlib.suppress(InvalidUrlError):
        host_of(href)


def main() -> None:
    """Run libFuzzer with the command line's options."""
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

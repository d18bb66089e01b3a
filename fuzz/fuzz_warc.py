"""atheris harness for the WARC records of one fetch: the compiled core's bytes against the Python writer's.

Run: python fuzz/fuzz_warc.py [libFuzzer options] [CORPUS_DIR ...], e.g. -max_total_time=60.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # fuzz.differential, from any directory

with atheris.instrument_imports(include=["harvestman"]):
    from fuzz.differential import Tally, announce, compare_warc
    from harvestman.model.records import FetchResult, RedirectHop, Rendering, Timings
    from harvestman.store.warc import _ONE_SHOT_MAX, _warc_date

STATUSES = [0, 200, 206, 301, 404, 599, 999]  # lists: PickValueInList takes no tuple
PARTIALS = ["", "", "head", "selector:div.main > p", "bytes:100"]
# Seconds on a rounding tie, in milliseconds (fetchTimeMs) and at six places (timings:).
TIES = [0.0, 0.0005, 0.0015, 0.0025, 0.0035, 0.0078125, 2.5e-7, 1e-6]
IDS = tuple(f"<urn:uuid:00000000-0000-4000-8000-00000000000{i}>" for i in (1, 2, 3))
TALLY = Tally("warc")


def _text(fdp: atheris.FuzzedDataProvider, most: int) -> str:
    """Text as it reaches the writer: printable ASCII, Latin-1 off the wire (CR and LF included), or
    any Unicode (what never came off the wire)."""
    mode = fdp.ConsumeIntInRange(0, 7)  # mostly ASCII: the core leaves the rest to Python
    size = fdp.ConsumeIntInRange(0, most)
    if mode == 7:
        return str(fdp.ConsumeUnicodeNoSurrogates(size))
    raw = fdp.ConsumeBytes(size)
    if mode < 5:
        raw = bytes(0x20 + b % 0x5F for b in raw)
    return raw.decode("latin-1")


def _uri(fdp: atheris.FuzzedDataProvider) -> str:
    uri = fdp.PickValueInList(["http://", "https://", "http://", "https://", ""]) + _text(fdp, 40)
    try:
        urlsplit(uri)
    except ValueError:  # "http://[x": a fetched URL is ada's, which urlsplit reads; the writer gets no other
        return "http://h.test/"
    return uri


def _pairs(fdp: atheris.FuzzedDataProvider) -> tuple[tuple[str, str], ...]:
    return tuple((_text(fdp, 12), _text(fdp, 24)) for _ in range(fdp.ConsumeIntInRange(0, 4)))


def _time(fdp: atheris.FuzzedDataProvider) -> float:
    return float(fdp.PickValueInList(TIES)) if fdp.ConsumeBool() else fdp.ConsumeFloatInRange(0.0, 1e5)


def _body(fdp: atheris.FuzzedDataProvider) -> bytes:
    body = bytes(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 256)))
    if fdp.ConsumeIntInRange(0, 63) == 0:  # about _ONE_SHOT_MAX, where the core leaves it to Python
        size = _ONE_SHOT_MAX + fdp.ConsumeIntInRange(-600, 64)
        body = (body or b"x") * (size // max(1, len(body)) + 1)
        body = body[:size]
    return body


def _rendering(fdp: atheris.FuzzedDataProvider) -> Rendering | None:
    if fdp.ConsumeIntInRange(0, 15):
        return None
    return Rendering(original_headers=_pairs(fdp), original_body=_body(fdp), dom=_text(fdp, 40),
                     screenshot=bytes(fdp.ConsumeBytes(8)), reason=_text(fdp, 8), settle=_text(fdp, 8))


def TestOneInput(data: bytes) -> None:
    """One input: a fetch (URIs, status, headers, body, flags, timings, errors), the request headers,
    outlinks, a given digest, a gzip level and the record ids; the two writers' bytes compared."""
    fdp = atheris.FuzzedDataProvider(data)
    url = _uri(fdp)
    started = fdp.ConsumeIntInRange(0, 2**32) + fdp.ConsumeIntInRange(0, 999_999) / 1e6
    result = FetchResult(
        url=url, final_url=_uri(fdp) if fdp.ConsumeBool() else "",
        status=fdp.PickValueInList(STATUSES) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, 1000),
        headers=_pairs(fdp), body=_body(fdp), truncated=fdp.ConsumeBool(),
        partial=fdp.PickValueInList(PARTIALS) if fdp.ConsumeBool() else _text(fdp, 16),
        redirects=tuple(RedirectHop(_uri(fdp), fdp.ConsumeIntInRange(300, 399), _uri(fdp))
                        for _ in range(fdp.ConsumeIntInRange(0, 2))),
        error_class=_text(fdp, 8) if fdp.ConsumeBool() else "", error_message=_text(fdp, 16),
        started_at=started, timings=Timings(*(_time(fdp) for _ in range(5))),
        wire_bytes=fdp.ConsumeInt(9), attempt=fdp.ConsumeIntInRange(0, 5),
        remote_addr=fdp.PickValueInList(["", "127.0.0.1", "::1"]) if fdp.ConsumeBool() else _text(fdp, 16),
        rendering=_rendering(fdp),
    )
    request_headers = _pairs(fdp)
    outlinks = [_text(fdp, 40) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    digest = fdp.PickValueInList(["", "sha1:GIVEN"]) if fdp.ConsumeBool() else _text(fdp, 12)
    level = fdp.ConsumeIntInRange(0, 3)  # levels both ISA-L (0-3) and zlib take
    ids = IDS if fdp.ConsumeBool() else (_text(fdp, 12), _text(fdp, 12), _text(fdp, 12))
    TALLY.note(compare_warc(result, request_headers, outlinks, digest, level, ids, _warc_date(started)))


def main() -> None:
    """Run libFuzzer with the command line's options."""
    announce("warc")
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

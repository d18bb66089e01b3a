"""atheris harness for the WARC records of one fetch: the compiled core's bytes against the Python writer's.

Run: python fuzz/fuzz_warc.py [libFuzzer options] [CORPUS_DIR ...], e.g. -max_total_time=60.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # fuzz.differential, from any directory

with atheris.instrument_imports(include=["harvestman"]):
    from fuzz.differential import Tally, announce, compare_warc, keep_going
    from harvestman.model.records import FetchResult, RedirectHop, Rendering, Timings
    from harvestman.store.warc import _ONE_SHOT_MAX, _warc_date

STATUSES = [0, 200, 206, 301, 404, 599, 999]  # lists: PickValueInList takes no tuple
PARTIALS = ["", "", "head", "selector:div.main > p", "bytes:100"]
# Seconds on a rounding tie, in milliseconds (fetchTimeMs) and at six places (timings:).
TIES = [0.0, 0.0005, 0.0015, 0.0025, 0.0035, 0.0078125, 2.5e-7, 1e-6]
IDS = tuple(f"<urn:uuid:00000000-0000-4000-8000-00000000000{i}>" for i in (1, 2, 3))
TALLY = Tally("warc")


class _Draw:
    """The parts of a fetch, drawn from one fuzz input."""

    def __init__(self, data: bytes) -> None:
        self.fdp = atheris.FuzzedDataProvider(data)
        # Text outside Latin-1 in one input of four: the core leaves any fetch holding it to Python.
        self.wide = self.fdp.ConsumeIntInRange(0, 3) == 3

    def text(self, most: int, printable: bool = False) -> str:
        """Text as it reaches the writer: mostly printable ASCII, else Latin-1 off the wire (CR and LF
        included), or in a wide input any Unicode, what never came off the wire."""
        mode = 0 if printable else self.fdp.ConsumeIntInRange(0, 7)
        size = self.fdp.ConsumeIntInRange(0, most)
        if mode == 7 and self.wide:
            return str(self.fdp.ConsumeUnicodeNoSurrogates(size))
        raw = self.fdp.ConsumeBytes(size)
        if mode < 5:
            raw = bytes(0x20 + b % 0x5F for b in raw)
        return raw.decode("latin-1")

    def pick(self, values: list[Any]) -> Any:
        return self.fdp.PickValueInList(values)

    def uri(self) -> str:
        # Printable ASCII but in wide inputs: the core leaves other URIs to Python.
        uri = self.pick(["http://", "https://", "http://", "https://", ""]) + self.text(40, not self.wide)
        try:  # "http://[x" is no fetched URL: those are ada's, which urlsplit reads
            urlsplit(uri)
        except ValueError:
            return "http://h.test/"
        return uri

    def pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple((self.text(12), self.text(24)) for _ in range(self.fdp.ConsumeIntInRange(0, 4)))

    def time(self) -> float:
        return float(self.pick(TIES)) if self.fdp.ConsumeBool() else self.fdp.ConsumeFloatInRange(0.0, 1e5)

    def body(self) -> bytes:
        body = bytes(self.fdp.ConsumeBytes(self.fdp.ConsumeIntInRange(0, 256)))
        if self.fdp.ConsumeIntInRange(0, 63) == 63:  # about _ONE_SHOT_MAX, where the core leaves it to Python
            size = _ONE_SHOT_MAX + self.fdp.ConsumeIntInRange(-600, 64)
            body = ((body or b"x") * (size // max(1, len(body)) + 1))[:size]
        return body

    def rendering(self) -> Rendering | None:
        if self.fdp.ConsumeIntInRange(0, 15) < 15:  # (an input used up draws 0s)
            return None
        return Rendering(original_headers=self.pairs(), original_body=self.body(), dom=self.text(40),
                         screenshot=bytes(self.fdp.ConsumeBytes(8)), reason=self.text(8), settle=self.text(8))


def TestOneInput(data: bytes) -> None:
    """One input: a fetch (URIs, status, headers, body, flags, timings, errors), the request headers,
    outlinks, a given digest, a gzip level and the record ids; the two writers' bytes compared."""
    draw = _Draw(data)
    fdp = draw.fdp
    url = draw.uri()
    started = fdp.ConsumeIntInRange(0, 2**32) + fdp.ConsumeIntInRange(0, 999_999) / 1e6
    result = FetchResult(
        url=url, final_url=draw.uri() if fdp.ConsumeBool() else "",
        status=draw.pick(STATUSES) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, 1000),
        headers=draw.pairs(), body=draw.body(), truncated=fdp.ConsumeBool(),
        partial=draw.pick(PARTIALS) if fdp.ConsumeBool() else draw.text(16),
        redirects=tuple(RedirectHop(draw.uri(), fdp.ConsumeIntInRange(300, 399), draw.uri())
                        for _ in range(fdp.ConsumeIntInRange(0, 2))),
        error_class=draw.text(8) if fdp.ConsumeBool() else "", error_message=draw.text(16),
        started_at=started, timings=Timings(*(draw.time() for _ in range(5))),
        wire_bytes=fdp.ConsumeInt(9), attempt=fdp.ConsumeIntInRange(0, 5),
        remote_addr=draw.pick(["", "127.0.0.1", "::1"]) if fdp.ConsumeBool() else draw.text(16),
        rendering=draw.rendering(),
    )
    request_headers = draw.pairs()
    outlinks = [draw.text(40) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    digest = draw.pick(["", "sha1:GIVEN"]) if fdp.ConsumeBool() else draw.text(12)
    level = fdp.ConsumeIntInRange(0, 3)  # levels both ISA-L (0-3) and zlib take
    ids = IDS if fdp.ConsumeBool() else (draw.text(12), draw.text(12), draw.text(12))
    TALLY.note(compare_warc(result, request_headers, outlinks, digest, level, ids, _warc_date(started)))


def main() -> None:
    """Run libFuzzer with the command line's options."""
    announce("warc")
    atheris.Setup(sys.argv, keep_going(TestOneInput))
    atheris.Fuzz()


if __name__ == "__main__":
    main()

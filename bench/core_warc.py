"""The compiled core's WARC write (harvestman._core, native/) against the Python writer it stands in
for, on the benchmark web's pages.

    python bench/core_warc.py [--hosts 10] [--pages 50] [--runs 7]

Checks that the core gives the Python writer's bytes on every page of a bench/synthweb.py web (record
ids and date fixed), then times both, alternating, in CPU time of this process: the WARC write of a
fetch (WarcWriter._build_python against _core.WarcRecords.fetch: response, request and metadata
records, their digests and gzip members), and the gzip of the body alone. The fetch is shaped as the
crawl hands it over: nginx's response headers, the body's digest known already (the page's
signature), the page's links as outlinks. Needs the core built (`pip install -e .` with cargo).
"""

from __future__ import annotations

import argparse
import http
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses
from harvestman.fetch.content import sha1_base32
from harvestman.model.records import FetchResult, Timings
from harvestman.store import warc

ROOT = Path(__file__).resolve().parent.parent

UA = (("User-Agent", "harvestman/0.1 (+https://example.org/bot)"), ("Accept", "*/*"),
      ("Accept-Encoding", "gzip, deflate, br, zstd"))
DATE = "2023-11-14T22:13:20.000000Z"
IDS = ("<urn:uuid:00000000-0000-4000-8000-000000000001>", "<urn:uuid:00000000-0000-4000-8000-000000000002>",
       "<urn:uuid:00000000-0000-4000-8000-000000000003>")


def core_records() -> Any:
    """The core's WARC writer, configured as store/warc.py configures it."""
    try:
        from harvestman import _core
    except ImportError:
        sys.exit("harvestman._core is not built: pip install -e . with a Rust toolchain")
    return _core.WarcRecords(warc._deflate.compress, {s.value: s.phrase for s in http.HTTPStatus})


def pages(root: Path, hosts: int, per_host: int) -> list[tuple[FetchResult, list[str], str]]:
    """The web's pages as fetches: (result, outlinks, payload digest)."""
    spec = generate_web(root, host_addresses(hosts), per_host, port=8080)
    out = []
    for i, (url, links) in enumerate(sorted(spec.links.items())):
        host, path = url.removeprefix("http://").split("/", 1)
        body = (spec.root / host.split(":")[0] / (path or "index.html")).read_bytes()
        result = FetchResult(
            url=url, final_url=url, status=200, content_type="text/html", body=body,
            headers=(("Server", "nginx/1.22.1"), ("Date", "Tue, 14 Nov 2023 22:13:20 GMT"),
                     ("Content-Type", "text/html"), ("Content-Length", str(len(body))),
                     ("Last-Modified", "Mon, 13 Nov 2023 10:00:00 GMT"), ("Connection", "keep-alive"),
                     ("ETag", f'"6553f100-{len(body):x}"'), ("Accept-Ranges", "bytes")),
            started_at=1_700_000_000.0 + i * 0.01, timings=Timings(0.0001, 0.0002, 0.0, 0.0021, 0.0035),
            wire_bytes=len(body) + 240, remote_addr=host.split(":")[0],
        )
        out.append((result, list(links), sha1_base32(body)))
    return out


def cpu_us(work: Callable[[], None], n: int) -> float:
    started = time.process_time()
    work()
    return (time.process_time() - started) / n * 1e6


def main() -> None:
    """Check equivalence, time both paths, print the table and the projection."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=50, help="pages per host")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    fetch = core_records().fetch
    with tempfile.TemporaryDirectory(prefix="harvestman-native-") as tmp:
        items = pages(Path(tmp) / "web", args.hosts, args.pages)
        writer = warc.WarcWriter(Path(tmp) / "warc")
        level = writer.compress_level
        for result, links, digest in items:
            if fetch(result, UA, links, digest, level, IDS, DATE) != writer._build_python(
                    result, UA, links, digest, IDS, DATE):
                sys.exit(f"the core's output differs from Python's for {result.url}")
        print(f"{len(items)} pages of the bench web: the core's WARC records byte-identical to Python's")

        def python_path() -> None:
            for result, links, digest in items:
                writer._build_python(result, UA, links, digest, IDS, DATE)

        def core_path() -> None:
            for result, links, digest in items:
                fetch(result, UA, links, digest, level, IDS, DATE)

        def gzip_floor() -> None:
            for result, _, _ in items:
                warc._deflate.compress(result.body, level, 31)

        python_path()
        core_path()
        py, nat, gz = [], [], []
        for _ in range(args.runs):
            py.append(cpu_us(python_path, len(items)))
            nat.append(cpu_us(core_path, len(items)))
            gz.append(cpu_us(gzip_floor, len(items)))
    p, n = statistics.median(py), statistics.median(nat)
    print(f"\n{'part':<34} {'Python µs/page':>15} {'core µs/page':>15}")
    print(f"{'WARC write (3 records, gzip, SHA-1)':<34} {p:>15.1f} {n:>15.1f}")
    print(f"{'  of which gzip of the body alone':<34} {statistics.median(gz):>15.1f}")
    print(f"(CPU time, medians of {args.runs} alternating runs of {len(items)} pages)")

if __name__ == "__main__":
    main()

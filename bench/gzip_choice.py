"""The compressor of the WARC records' gzip members, chosen for the compiled core: ISA-L and zlib (as
the Python writer calls them) against the Rust crates (flate2 with zlib-rs, miniz_oxide, libdeflate),
on the benchmark web's pages.

    python bench/gzip_choice.py [--hosts 10] [--pages 50] [--runs 7]

Prints, for each, MB/s of input in CPU time of one thread (best of --runs), the output's size over
the input's and µs a page; the Rust side runs native/examples/gzip_choice.rs through cargo (built
with the crate's `gzip-choice` feature; the core itself never links those crates).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from isal import isal_zlib

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthweb import generate_web, host_addresses

NATIVE = Path(__file__).resolve().parent.parent / "native"


def main() -> None:
    """Generate the pages, time the Python side's compressors, then the Rust example's."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=50, help="pages per host")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="harvestman-gzip-") as tmp:
        spec = generate_web(Path(tmp) / "web", host_addresses(args.hosts), args.pages, port=8080)
        bodies = [p.read_bytes() for p in sorted(spec.root.rglob("*.html"))]
        total = sum(map(len, bodies))
        print(f"{len(bodies)} pages, {total / len(bodies) / 1000:.1f} KB a page")
        python_side = [("ISA-L (python-isal)", isal_zlib, 1), ("ISA-L (python-isal)", isal_zlib, 3),
                       ("zlib (Python's)", zlib, 1), ("zlib (Python's)", zlib, 3)]
        for name, module, level in python_side:
            best, size = float("inf"), 0
            for _ in range(args.runs):
                started = time.thread_time()
                size = sum(len(module.compress(b, level, 31)) for b in bodies)
                best = min(best, time.thread_time() - started)
            print(f"{name:<22} level {level}: {total / best / 1e6:6.0f} MB/s, ratio {size / total:.3f}, "
                  f"{best * 1e6 / len(bodies):6.1f} µs a page")
        sys.stdout.flush()
        subprocess.run(["cargo", "run", "-q", "--release", "--example", "gzip_choice", "--features",
                        "gzip-choice", "--", str(spec.root), str(args.runs)], cwd=NATIVE, check=True)


if __name__ == "__main__":
    main()

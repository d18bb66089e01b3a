"""Build harvestman's optional native core (native/harvestman_native.c) with the C compiler.

    python native/build.py [--out DIR]

Writes `_native<EXT_SUFFIX>` (e.g. `_native.cpython-311-x86_64-linux-gnu.so`) into DIR, by default
`src/harvestman/`, where `harvestman.store.warc` imports it as `harvestman._native` when present (the
pure-Python writer runs otherwise, with the same output). Needs a C compiler (`cc`, or $CC), the
running Python's headers and OpenSSL's (libssl-dev: SHA-1). `pip install -e .` never builds it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "harvestman_native.c"
DEFAULT_OUT = HERE.parent / "src" / "harvestman"


def target(out: Path) -> Path:
    """Where the extension for the running Python goes in `out`."""
    return out / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"


def build(out: Path = DEFAULT_OUT) -> Path:
    """Compile the extension into `out` (unless it is newer than its source); its path."""
    so = target(out)
    if so.exists() and so.stat().st_mtime >= SOURCE.stat().st_mtime:
        return so
    out.mkdir(parents=True, exist_ok=True)
    cc = shlex.split(os.environ.get("CC", "cc"))
    tmp = so.with_name(so.name + f".{os.getpid()}.tmp")
    command = [*cc, "-O2", "-fPIC", "-shared", "-Wall", "-Wno-unused-parameter",
               f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(tmp), "-lcrypto", "-lm"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"building {so.name} failed:\n{' '.join(command)}\n{done.stderr}")
    os.replace(tmp, so)  # whole or not at all: a process importing it never sees half a file
    return so


def main() -> None:
    """Build, print the extension's path."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    try:
        print(build(args.out))
    except RuntimeError as exc:
        sys.exit(str(exc))


if __name__ == "__main__":
    main()

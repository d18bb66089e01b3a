"""Which core runs the per-page path: the compiled one (harvestman._core, Rust: native/) when it is
built, fresh and not turned off, else the pure-Python one, which stays the reference."""

from __future__ import annotations

import contextlib
import hashlib
import os
import types
from pathlib import Path

# HARVESTMAN_CORE=python runs the pure-Python path even where the compiled core is built.
CORE_ENV = "HARVESTMAN_CORE"
# native/ beside src/: present in a checkout (an editable install), absent from an installed wheel.
_NATIVE = Path(__file__).resolve().parents[3] / "native"


def source_digest(native: Path) -> str:
    """SHA-1 (hex) of the crate's sources as native/build.rs stamps it into the build."""
    files = [Path(name) for name in ("Cargo.toml", "Cargo.lock", "build.rs")]
    files += [p.relative_to(native) for p in (native / "src").rglob("*.rs")]
    digest = hashlib.sha1(usedforsecurity=False)
    for file in sorted(files, key=lambda p: p.as_posix()):
        digest.update(file.as_posix().encode() + b"\0")
        with contextlib.suppress(FileNotFoundError):  # Cargo.lock before a first build
            digest.update((native / file).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _load() -> tuple[types.ModuleType | None, str]:
    if os.environ.get(CORE_ENV, "").strip().lower() == "python":
        return None, f"python ({CORE_ENV}=python)"
    try:
        from harvestman import _core
    except ImportError:
        return None, "python (no compiled core: built without Rust)"
    if (_NATIVE / "Cargo.toml").is_file() and source_digest(_NATIVE) != _core.SOURCE_DIGEST:
        # Built from other sources than the checkout's: rebuilt by `pip install -e .`, unused till then.
        return None, "python (compiled core stale: pip install -e .)"
    return _core, f"rust {_core.VERSION}"


core, _NAME = _load()


def core_name() -> str:
    """The core in use, as `harvestman --version` says it: `rust X.Y.Z`, or `python (why)`."""
    return _NAME

"""The compiled core's build and choice (pyproject.toml's tool.setuptools-rust, harvestman.model.core):
`pip install` without a Rust toolchain still installs a package that crawls, on the pure-Python path;
`harvestman --version` names the core in use; a core built from other sources than the checkout's,
or turned off with HARVESTMAN_CORE=python, is left unused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestman.model import core

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harvestman.app.cli", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def built() -> bool:
    try:
        from harvestman import _core  # noqa: F401
    except ImportError:
        return False
    return True


def test_version_names_the_core() -> None:
    env = {k: v for k, v in os.environ.items() if k != core.CORE_ENV}
    off = cli("--version", env={**env, core.CORE_ENV: "python"})
    assert " ".join(off.stdout.split()) == "harvestman 0.1.0 (core: python (HARVESTMAN_CORE=python))"
    on = " ".join(cli("--version", env=env).stdout.split())  # argparse wraps a long line
    assert on.startswith("harvestman 0.1.0 (core: rust ") if built() else "(core: python (no compiled" in on


def test_a_stale_core_is_left_unused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not built():
        pytest.skip("harvestman._core is not built (no Rust toolchain at pip install)")
    native = tmp_path / "native"
    shutil.copytree(ROOT / "native", native, ignore=shutil.ignore_patterns("target"))
    monkeypatch.setattr(core, "_NATIVE", native)
    monkeypatch.delenv(core.CORE_ENV, raising=False)
    module, name = core._load()
    assert module is not None and name.startswith("rust ")  # built from these very sources
    lib = native / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "\n// an edit not built yet\n")
    module, name = core._load()
    assert module is None
    assert name == "python (compiled core stale: pip install -e .)"


def test_pip_install_without_rust_installs_and_crawls(tmp_path: Path,
                                                     route_server: Callable[..., Any]) -> None:
    """A wheel built where cargo is missing (CARGO names no file, no cargo on PATH): setuptools-rust's
    optional build leaves the core out; the package it holds says so and crawls."""
    tree = tmp_path / "tree"  # a copy of the sources: the checkout's build/ may hold a built core
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "native", tree / "native", ignore=shutil.ignore_patterns("target"))
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if not (Path(d) / "cargo").exists() and not (Path(d) / "rustc").exists())
    env = {**os.environ, "CARGO": str(tmp_path / "no-cargo"), "PATH": path}
    env.pop(core.CORE_ENV, None)
    wheels = tmp_path / "wheels"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "-w", str(wheels), str(tree)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = wheels.glob("harvestman-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        assert not [n for n in z.namelist() if "_core" in n and not n.endswith(".pyi")]
        z.extractall(site)
    env["PYTHONPATH"] = str(site)  # ahead of the checkout's editable install
    where = subprocess.run([sys.executable, "-c", "import harvestman; print(harvestman.__file__)"],
                           env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(site / "harvestman" / "__init__.py")
    version = " ".join(cli("--version", env=env).stdout.split())
    assert version == "harvestman 0.1.0 (core: python (no compiled core: built without Rust))"
    page = (200, {"Content-Type": "text/html"}, b'<a href="/a">a</a>')
    server = route_server({"/": page, "/a": (200, {"Content-Type": "text/html"}, b"<p>a</p>")})
    out = tmp_path / "out"
    crawl = cli("crawl", server.url("/"), "--out", str(out), "--quiet", "--allow-net", "127.0.0.0/8", env=env)
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    [warc] = out.rglob("*.warc.gz")
    with open(warc, "rb") as f:
        uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(f, check_digests="raise")
                if r.rec_type == "response"]
    assert sorted(uris) == [server.url("/"), server.url("/a")]

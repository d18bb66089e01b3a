"""The package's layers (README, Design): every import of harvestman's own modules, at the top of a
file or inside a function, points down the list or stays in its layer, and no modules import each
other in a loop. A string that is a harvestman module's name counts as an import of it: a module
loaded by name (importlib, `python -m`) is imported all the same."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "harvestman"
LAYERS = ("model", "net", "fetch", "policy", "store", "crawl", "batch", "index", "launch", "serve", "app")
_IMPORT = re.compile(r"^\s*(?:from\s+harvestman\.([\w.]+)\s+import|import\s+harvestman\.([\w.]+))"
                     r"|([\"'])harvestman\.([\w.]+)\3", re.M)


def _module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")


def _imports() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports."""
    modules = {_module(p) for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        found = set()
        for match in _IMPORT.finditer(path.read_text(encoding="utf-8")):
            name = match.group(1) or match.group(2) or match.group(4)
            while name not in modules and "." in name:  # `from harvestman.a.b import c`: c is a name
                name = name.rsplit(".", 1)[0]
            if name in modules:
                found.add(name)
        graph[_module(path)] = found - {_module(path)}
    return graph


def test_every_file_is_in_a_layer() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS)


def test_imports_never_run_back_up_a_layer() -> None:
    rank = {layer: n for n, layer in enumerate(LAYERS)}
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in _imports().items() if module.split(".")[0] in rank
        for target in targets if target.split(".")[0] in rank
        and rank[target.split(".")[0]] > rank[module.split(".")[0]]
    )
    assert upward == []


def test_no_modules_import_each_other_in_a_loop() -> None:
    graph = _imports()
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    loops: list[str] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                loops.append(" -> ".join([*path[path.index(target):], target]))
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert loops == []


# What reads or writes files, sockets or processes; policy/ decides and never does any of it.
_IO_MODULES = {"io", "os", "pathlib", "shutil", "socket", "sqlite3", "subprocess", "tempfile"}
_IO_IMPORT = re.compile(r"^\s*(?:from\s+(\w+)[\w.]*\s+import|import\s+(\w+))", re.M)
_IO_CALL = re.compile(r"(?<![\w.])open\(|\.(?:read_text|write_text|read_bytes|write_bytes|mkdir)\(")


def test_the_policy_layer_does_no_io() -> None:
    found = []
    for path in sorted((PACKAGE / "policy").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        modules = {m.group(1) or m.group(2) for m in _IO_IMPORT.finditer(text)}
        found += [f"{path.name} imports {name}" for name in sorted(modules & _IO_MODULES)]
        found += [f"{path.name} calls {m.group(0)}" for m in _IO_CALL.finditer(text)]
    assert found == []

"""A generated multi-host site (tests/support/sitegen.py) served by loopback RouteServers, one per host."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from tests.support.httpserver import RouteServer
from tests.support.nginx import free_port
from tests.support.sitegen import SiteSpec, generate_site


def _routes(folder: Path) -> dict[str, tuple[int, dict[str, str], bytes]]:
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
    for file in folder.rglob("*"):
        if file.is_file():
            path = "/" + file.relative_to(folder).as_posix()
            kind = "text/plain" if file.suffix == ".txt" else "text/html; charset=utf-8"
            routes["/" if path == "/index.html" else path] = (200, {"Content-Type": kind}, file.read_bytes())
    return routes


@contextlib.contextmanager
def served_site(root: Path, hosts: list[str], pages_per_host: int, *, seed: int = 7) -> Iterator[SiteSpec]:
    """Generate a site of `hosts` under `root` and serve it on one port of each loopback address."""
    port = free_port(hosts[0])
    spec = generate_site(root, hosts, pages_per_host, 6, seed=seed, port=port)
    with contextlib.ExitStack() as stack:
        for host in hosts:
            stack.enter_context(RouteServer(_routes(root / host), host=host, port=port))
        yield spec

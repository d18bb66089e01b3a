"""Politeness keys: which queue a URL waits in (its host, registered domain, or IP address)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable

from harvestman.model.config import ResolveEntry
from harvestman.model.errors import InvalidUrlError
from harvestman.net.urls import host_of, registered_domain

Resolver = Callable[[str], Awaitable[str | None]]
MAX_CACHED = 100_000  # host names whose address is remembered


async def system_resolver(host: str) -> str | None:
    """The first address the system resolver gives for `host`, or None."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    return str(infos[0][4][0]) if infos else None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class HostKeys:
    """Maps URLs to politeness keys; in "ip" mode hosts sharing an address share one queue.

    Names are resolved ahead (`prepare`) so that `key` stays a cheap, synchronous lookup: `--resolve`
    pins first, then the resolver. A name that does not resolve keys by itself; its fetch will
    fail with a DNS error and be recorded as such.
    """

    def __init__(
        self, mode: str, pins: Iterable[ResolveEntry] = (), resolver: Resolver = system_resolver
    ) -> None:
        self.mode = mode
        self._resolver = resolver
        self._addresses: OrderedDict[str, str] = OrderedDict()
        self._pins = {pin.host: pin.address for pin in pins}

    def key(self, url: str, host: str | None = None) -> str:
        """The politeness key of `url` (a normalized http(s) URL; `host`: its host, when known)."""
        host = host if host is not None else host_of(url)
        if self.mode == "host":
            return host
        if self.mode == "domain":
            return registered_domain(host)
        return self._pins.get(host) or self._addresses.get(host) or host

    async def prepare(self, urls: Iterable[str]) -> None:
        """Resolve the hosts of `urls` not seen before (only in "ip" mode)."""
        if self.mode != "ip":
            return
        todo: set[str] = set()
        for url in urls:
            try:
                host = host_of(url)
            except InvalidUrlError:
                continue
            if host not in self._pins and host not in self._addresses and not _is_ip_literal(host):
                todo.add(host)
        if not todo:
            return
        names = sorted(todo)
        found = await asyncio.gather(*(self._resolver(name) for name in names))
        for name, address in zip(names, found, strict=True):
            self._addresses[name] = address or name
            if len(self._addresses) > MAX_CACHED:
                self._addresses.popitem(last=False)

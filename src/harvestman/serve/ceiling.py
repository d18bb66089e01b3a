"""The server's network ceiling: whatever the server fetches for a client (a crawl, a cycle step, a
/v1 scrape or map, a rendered page's requests) goes where the server's own rules let it, never further.

One pure record and one function: `NetCeiling.bound(requested)` takes a request's flat settings and
gives them back with every setting that decides where a request may go set to its effective value:
the server's, or the request's where it narrows them. A request that would widen them is a
CeilingError naming the setting (the API answers 403). Every route that makes the server fetch goes
through it: the crawl manager (start and resume), the job runner, the /v1 fetches.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harvestman.model.config import FetchSettings, config_from_mapping, parse_resolve
from harvestman.model.errors import ConfigError
from harvestman.net.addrguard import AddressGuard, IPNetwork

# The settings that decide where a request may go (model/settings.py): the address guard's two
# lists, the host pins and the proxy. A served crawl, step and fetch always gets all four, explicitly,
# so nothing stored with a crawl folder (wider, from another run) can take their place.
NETWORK_SETTINGS = ("allow_net", "only_net", "resolve", "proxy")


class CeilingError(ConfigError):
    """A request asked for more than the server's network rules allow; `field` names the setting."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _nets(values: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in values)


def _within(net: IPNetwork, bounds: tuple[IPNetwork, ...]) -> bool:
    return any(net.version == b.version and net.subnet_of(b) for b in bounds)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class NetCeiling:
    """The server's network rules (`serve --allow-net --only-net --resolve --proxy`)."""

    allow_net: tuple[str, ...] = ()
    only_net: tuple[str, ...] = ()
    resolve: tuple[str, ...] = ()  # HOST:PORT:ADDR pins, as given
    proxy: str = ""

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> NetCeiling:
        """The ceiling of the server's options, checked as a crawl checks them (a ConfigError else)."""
        cfg = config_from_mapping({name: values[name] for name in NETWORK_SETTINGS if name in values}).fetch
        return cls(cfg.allow_net, cfg.only_net, tuple(p.curl_form() for p in cfg.resolve), cfg.proxy)

    def bound(self, requested: Mapping[str, Any]) -> dict[str, Any]:
        """`requested` (flat settings) with the network settings set to the effective ones; a
        CeilingError naming the first setting that would widen the server's rules."""
        asked = config_from_mapping({k: requested[k] for k in NETWORK_SETTINGS if k in requested}).fetch
        allow = self._allow(asked) if "allow_net" in requested else self.allow_net
        only = self._only(asked) if "only_net" in requested else self.only_net
        return {**requested, "allow_net": list(allow), "only_net": list(only),
                "resolve": self._pins(asked, AddressGuard(self.allow_net, self.only_net)),
                "proxy": self._proxy(asked, "proxy" in requested)}

    def _allow(self, asked: FetchSettings) -> tuple[str, ...]:
        bounds = _nets(self.allow_net)
        for net in asked.allow_net:
            if not _within(_nets((net,))[0], bounds):
                raise CeilingError(f"allow_net {net} is wider than the server's --allow-net "
                                   f"({_listed(self.allow_net)}): a request may only narrow it", "allow_net")
        return asked.allow_net

    def _only(self, asked: FetchSettings) -> tuple[str, ...]:
        if not self.only_net:  # confining only narrows: any range is within "everywhere"
            return asked.only_net
        bounds = _nets(self.only_net)
        wider = [n for n in asked.only_net if not _within(_nets((n,))[0], bounds)]
        if wider or not asked.only_net:
            what = f"only_net {wider[0]}" if wider else "an empty only_net"
            raise CeilingError(f"{what} is wider than the server's --only-net ({_listed(self.only_net)}): "
                               "a request may only narrow it", "only_net")
        return asked.only_net

    def _pins(self, asked: FetchSettings, guard: AddressGuard) -> list[str]:
        """The server's pins, and the request's that point where the server may connect anyway
        (a pin never reaches an address the server's rules refuse, nor moves one of the server's)."""
        mine = {(e.host, e.port): e.curl_form() for e in map(parse_resolve, self.resolve)}
        pins = list(mine.values())
        for entry in asked.resolve:
            pin, key = entry.curl_form(), (entry.host, entry.port)
            if guard.refusal(entry.address):
                raise CeilingError(f"resolve {pin}: the server's network rules do not let it connect to "
                                   f"{entry.address} (--allow-net {_listed(self.allow_net)}"
                                   + (f", --only-net {_listed(self.only_net)}" if self.only_net else "")
                                   + ")", "resolve")
            if key in mine and mine[key] != pin:
                raise CeilingError(f"resolve {pin}: the server pins {mine[key]}", "resolve")
            if pin not in pins:
                pins.append(pin)
        return pins

    def _proxy(self, asked: FetchSettings, given: bool) -> str:
        if given and asked.proxy != self.proxy:
            raise CeilingError("proxy: the server decides the proxy its fetches go through", "proxy")
        return self.proxy

    def network(self, requested: Mapping[str, Any]) -> dict[str, Any]:
        """Only the network settings of `bound(requested)`: what a cycle step takes over the crawl
        folder's stored ones, and (of `{}`) the /v1 fetches' `download()` options."""
        bounded = self.bound(requested)
        return {name: bounded[name] for name in NETWORK_SETTINGS}


def _listed(nets: tuple[str, ...]) -> str:
    return ", ".join(nets) if nets else "none: public addresses only"

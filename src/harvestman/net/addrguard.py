"""The private-address guard: which IP addresses the crawler may connect to (SSRF defence).

Pure and free of I/O. The transport asks `AddressGuard.refusal` for the address a socket is
actually about to connect to (after DNS, on every hop), which also defeats DNS rebinding, and
covers every spelling of an address in a URL (127.1, 2130706433, 0x7f000001, [::ffff:7f00:1]).

Two rules, both must pass: the default ban on private and reserved ranges (lifted range by range with
`allow_nets`, `--allow-net`), and, when `only_nets` is given (`--only-net`), the address must fall in
one of them. `only_nets` only narrows: a private range named there is still refused unless
`--allow-net` lifts it, so a setting an API user may give can never widen what the crawler reaches.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Ranges refused by default, beyond what `ipaddress`'s is_private/is_global flags already cover;
# listed explicitly so the policy does not shift with the Python version's registry tables.
_BLOCKED_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network"; 0.0.0.0 reaches localhost on Linux
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, cloud metadata (169.254.169.254)
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # TEST-NET-1
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # TEST-NET-2
        "203.0.113.0/24",  # TEST-NET-3
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and 255.255.255.255 broadcast
    )
)
_BLOCKED_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/128",
        "::1/128",
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments (Teredo, ORCHID, ...)
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (RFC 9637)
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)
# IPv6 prefixes that carry an IPv4 address in their low 32 bits: the embedded address decides.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_V4_COMPAT = ipaddress.IPv6Network("::/96")


def embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address carried inside an IPv6 one (mapped, compatible, NAT64, 6to4), if any."""
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if any(addr in net for net in _NAT64) or (addr in _V4_COMPAT and int(addr) > 1):
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def parse_ip(text: str) -> IPAddress | None:
    """An IP address from its text (brackets and an IPv6 zone id allowed), or None."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.split("%", 1)[0]  # zone id: fe80::1%eth0 is still link-local
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


# Why the guard refuses an address (`AddressGuard.refusal`): '' for none.
BLOCKED = "blocked"  # private or reserved, and no --allow-net range lifts it
OUTSIDE = "outside"  # not in any --only-net range


def _in_any(addr: IPAddress, nets: Sequence[IPNetwork]) -> bool:
    return any(addr.version == net.version and addr in net for net in nets)


class AddressGuard:
    """Decides whether connecting to an IP address is allowed; `allow_nets` lift the default ban,
    `only_nets` (when given) confine every connection to their ranges."""

    def __init__(self, allow_nets: Sequence[str] = (), only_nets: Sequence[str] = ()) -> None:
        self._allow: tuple[IPNetwork, ...] = tuple(
            ipaddress.ip_network(n, strict=False) for n in allow_nets
        )
        self._only: tuple[IPNetwork, ...] = tuple(
            ipaddress.ip_network(n, strict=False) for n in only_nets
        )

    @property
    def allow_nets(self) -> tuple[str, ...]:
        """The allow-list as CIDR strings."""
        return tuple(str(n) for n in self._allow)

    @property
    def only_nets(self) -> tuple[str, ...]:
        """The ranges every connection is confined to, as CIDR strings (none: no confinement)."""
        return tuple(str(n) for n in self._only)

    def _allowed_by_list(self, addr: IPAddress) -> bool:
        return _in_any(addr, self._allow)

    def refusal(self, ip: str) -> str:
        """Why a connection to `ip` may not be made: BLOCKED, OUTSIDE, or '' when it may."""
        addr = parse_ip(ip)
        if addr is None:
            return BLOCKED
        if self._only and not self._inside(addr):
            return OUTSIDE
        return "" if self._public_or_listed(addr) else BLOCKED

    def _inside(self, addr: IPAddress) -> bool:
        """Whether `addr` (or the IPv4 address an IPv4-mapped one reaches) falls in an --only-net range.
        Only the mapped form counts: a NAT64 or 6to4 address reaches a gateway, not its IPv4 part."""
        if _in_any(addr, self._only):
            return True
        inner = addr.ipv4_mapped if isinstance(addr, ipaddress.IPv6Address) else None
        return inner is not None and _in_any(inner, self._only)

    def is_allowed(self, ip: str) -> bool:
        """Whether a connection to `ip` may be made; unparsable text is refused."""
        return not self.refusal(ip)

    def _public_or_listed(self, addr: IPAddress) -> bool:
        if self._allowed_by_list(addr):
            return True
        if isinstance(addr, ipaddress.IPv6Address):
            inner = embedded_ipv4(addr)
            if inner is not None:
                # ::ffff:127.0.0.1 reaches 127.0.0.1: judge (and allow-list) the IPv4 address.
                return self._allowed_by_list(inner) or _public_v4(inner)
            return _public_v6(addr)
        return _public_v4(addr)


def _public_v4(addr: ipaddress.IPv4Address) -> bool:
    if any(addr in net for net in _BLOCKED_V4):
        return False
    return addr.is_global and not (addr.is_multicast or addr.is_reserved)


def _public_v6(addr: ipaddress.IPv6Address) -> bool:
    if any(addr in net for net in _BLOCKED_V6):
        return False
    return addr.is_global and not (addr.is_multicast or addr.is_reserved or addr.is_site_local)

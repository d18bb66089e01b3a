"""AddressGuard: private, loopback, link-local and reserved addresses refused in every spelling."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvestman.net.addrguard import AddressGuard, embedded_ipv4

BLOCKED = [
    "127.0.0.1", "127.1.0.5", "0.0.0.0", "0.1.2.3", "10.0.0.1", "172.16.5.4", "172.31.255.255",
    "192.168.1.1", "169.254.169.254", "100.64.0.1", "100.127.255.254", "224.0.0.1", "239.255.255.250",
    "240.0.0.1", "255.255.255.255", "192.0.2.1", "198.51.100.7", "203.0.113.9", "198.18.0.1",
    "::1", "::", "[::1]", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::127.0.0.1",
    "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "fe80::1", "fe80::1%eth0", "fc00::1",
    "fd12:3456::1", "ff02::1", "2001:db8::1", "fec0::1", "not-an-ip", "",
]
ALLOWED = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8",
           "64:ff9b::808:808"]


@pytest.mark.parametrize("ip", BLOCKED)
def test_blocked_by_default(ip: str) -> None:
    assert not AddressGuard().is_allowed(ip)


@pytest.mark.parametrize("ip", ALLOWED)
def test_public_allowed(ip: str) -> None:
    assert AddressGuard().is_allowed(ip)


def test_allow_list_lifts_only_its_range() -> None:
    guard = AddressGuard(["127.0.0.0/8"])
    assert guard.is_allowed("127.0.0.1")
    assert guard.is_allowed("127.1.0.5")
    assert guard.is_allowed("::ffff:127.0.0.1")  # the embedded IPv4 address is what is reached
    assert not guard.is_allowed("10.0.0.1")
    assert not guard.is_allowed("::1")
    assert not guard.is_allowed("169.254.169.254")
    assert AddressGuard(["::1/128"]).is_allowed("::1")


def test_embedded_ipv4() -> None:
    assert embedded_ipv4(ipaddress.IPv6Address("::ffff:7f00:1")) == ipaddress.IPv4Address("127.0.0.1")
    assert embedded_ipv4(ipaddress.IPv6Address("64:ff9b::a00:1")) == ipaddress.IPv4Address("10.0.0.1")
    assert embedded_ipv4(ipaddress.IPv6Address("2606:4700::1")) is None


@given(st.ip_addresses(v=4))
def test_ipv4_and_its_mapped_form_agree(addr: ipaddress.IPv4Address) -> None:
    guard = AddressGuard()
    assert guard.is_allowed(str(addr)) == guard.is_allowed(f"::ffff:{addr}")
    if addr.is_private or addr.is_loopback or addr.is_link_local or addr.is_multicast:
        assert not guard.is_allowed(str(addr))


def test_only_net_confines_and_says_why() -> None:
    guard = AddressGuard(["127.0.0.0/8"], ["127.0.0.2/32", "2001:db8::/32"])
    assert guard.refusal("127.0.0.2") == ""
    assert guard.refusal("::ffff:127.0.0.2") == ""  # the IPv4 address a mapped one reaches
    assert guard.refusal("127.0.0.3") == "outside"
    assert guard.refusal("8.8.8.8") == "outside"  # public, yet outside the ranges
    assert guard.refusal("64:ff9b::7f00:2") == "outside"  # NAT64 reaches a gateway, not 127.0.0.2
    assert guard.refusal("not-an-ip") == "blocked"
    # --only-net narrows only: a private range named there is still the guard's to lift.
    assert guard.refusal("2001:db8::1") == "blocked"
    assert AddressGuard([], ["10.0.0.0/8"]).refusal("10.1.2.3") == "blocked"
    assert AddressGuard(["10.0.0.0/8"], ["10.0.0.0/8"]).refusal("10.1.2.3") == ""
    assert guard.only_nets == ("127.0.0.2/32", "2001:db8::/32")


@given(st.ip_addresses())
def test_only_net_never_widens_the_guard(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    wide = AddressGuard([], ["0.0.0.0/0", "::/0"])
    assert wide.is_allowed(str(addr)) == AddressGuard().is_allowed(str(addr))

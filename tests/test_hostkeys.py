"""Politeness keys by host, registered domain and resolved IP address."""

from __future__ import annotations

import asyncio

from harvestman.model.config import parse_resolve
from harvestman.net.hostkeys import HostKeys, system_resolver


def test_host_and_domain_modes() -> None:
    assert HostKeys("host").key("http://www.example.co.uk/a") == "www.example.co.uk"
    assert HostKeys("domain").key("http://www.example.co.uk/a") == "example.co.uk"


def test_ip_mode_groups_names_that_share_an_address() -> None:
    table = {"a.test": "10.0.0.1", "b.test": "10.0.0.1", "c.test": "10.0.0.2"}
    asked: list[str] = []

    async def resolver(host: str) -> str | None:
        asked.append(host)
        return table.get(host)

    keys = HostKeys("ip", [parse_resolve("pinned.test:80:10.9.9.9")], resolver)
    urls = ["http://a.test/", "http://b.test/x", "http://c.test/", "http://nx.test/", "http://10.1.2.3/",
            "http://pinned.test/", "http://a.test/again"]
    asyncio.run(keys.prepare(urls))
    assert [keys.key(u) for u in urls] == ["10.0.0.1", "10.0.0.1", "10.0.0.2", "nx.test", "10.1.2.3",
                                           "10.9.9.9", "10.0.0.1"]
    assert sorted(asked) == ["a.test", "b.test", "c.test", "nx.test"]  # once each; no literal, no pin
    asyncio.run(keys.prepare(urls))
    assert len(asked) == 4


def test_system_resolver_answers_from_the_hosts_file() -> None:
    # Only "localhost": tests send no query to a DNS server.
    assert asyncio.run(system_resolver("localhost")) in ("127.0.0.1", "::1")

"""robots.txt: RFC 9309 conformance (Google's matcher tests), fetch-outcome policy, cache."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.policy.robots import RobotsCache, RobotsRules, agent_token, path_of, rules_for_response
from tests.support.conformance import robots_data

UA = "harvestman/0.1 (+https://pypi.org/project/harvestman/)"


def _cases(google_specific: bool) -> list[dict[str, Any]]:
    return [c for c in robots_data()["cases"] if c["google_specific"] is google_specific]


def _verdict(case: dict[str, Any]) -> bool:
    rules = RobotsRules.parse(case["robots_txt"].encode("utf-8"))
    return rules.allowed(case["url"], case["user_agent"])


@pytest.mark.parametrize("case", _cases(False), ids=lambda c: c["test"])
def test_rfc9309_conformance(case: dict[str, Any]) -> None:
    assert _verdict(case) is case["allowed"]


# Measured: 72 of 73 Google-only cases pass. The miss, GoogleOnly_AcceptUserAgentUpToFirstSpace
# with user agent "Foo Bar": Google compares the whole string "Foo Bar" (never a valid token) and so
# falls back to "*"; we take the product token up to the first space or '/', as asked, so "Foo"
# matches "User-Agent: Foo Bar".
GOOGLE_MIN_PASSES = 72


def test_google_specific_cases_report() -> None:
    cases = _cases(True)
    misses = [c for c in cases if _verdict(c) is not c["allowed"]]
    print(f"\nGoogle-specific robots cases: {len(cases) - len(misses)}/{len(cases)} pass")
    for c in misses:
        print(f"  miss: {c['test']} agent={c['user_agent']!r} url={c['url'][:80]!r} expected={c['allowed']}")
    assert len(cases) - len(misses) >= GOOGLE_MIN_PASSES


def test_agent_token() -> None:
    assert agent_token(UA) == "harvestman"
    assert agent_token("FooBot") == "FooBot"
    assert agent_token("Foo Bar") == "Foo"


def test_our_user_agent_and_fallback_to_star() -> None:
    body = b"User-agent: *\nDisallow: /\n\nUser-agent: HarvestMan/2.0\nDisallow: /private\n"
    rules = RobotsRules.parse(body)
    assert rules.allowed("http://h/public", UA)
    assert not rules.allowed("http://h/private/x", UA)
    assert not rules.allowed("http://h/public", "otherbot/1.0")


def test_groups_for_one_agent_are_merged() -> None:
    body = (b"User-agent: harvestman\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n"
            b"User-agent: harvestman\nDisallow: /b\n")
    rules = RobotsRules.parse(body)
    assert not rules.allowed("/a", UA)
    assert not rules.allowed("/b", UA)
    assert rules.allowed("/c", UA)


def test_robots_txt_itself_is_always_allowed() -> None:
    assert RobotsRules.parse(b"User-agent: *\nDisallow: /\n").allowed("http://h/robots.txt", UA)
    assert RobotsRules.disallow_all().allowed("http://h/robots.txt", UA)
    assert not RobotsRules.disallow_all().allowed("http://h/", UA)
    assert RobotsRules.allow_all().allowed("http://h/anything", UA)


def test_line_endings_bom_and_comments() -> None:
    for sep in (b"\n", b"\r\n", b"\r"):
        body = b"\xef\xbb\xbfUser-agent: *" + sep + b"Disallow: /x # no x" + sep + b"Allow: /x/ok"
        rules = RobotsRules.parse(body)
        assert not rules.allowed("/x/no", UA), sep
        assert rules.allowed("/x/ok", UA), sep
        assert rules.allowed("/y", UA), sep


def test_wildcards_and_percent_encoding() -> None:
    rules = RobotsRules.parse("User-agent: *\nDisallow: /*.pdf$\nDisallow: /s*/t*/u\nDisallow: /é\n".encode())
    assert not rules.allowed("/docs/a.pdf", UA)
    assert rules.allowed("/docs/a.pdf?x=1", UA)
    assert not rules.allowed("/sa/tb/u/x", UA)
    assert rules.allowed("/sa/u", UA)
    assert not rules.allowed("/%C3%A9t%C3%A9", UA)
    assert not rules.allowed("/%c3%a9", UA)  # escapes compare case-insensitively


def test_crawl_delay_and_sitemaps() -> None:
    body = (
        b"Sitemap: https://h/s1.xml\nUser-agent: harvestman\nCrawl-delay: 2.5\nDisallow: /a\n"
        b"User-agent: *\nCrawl-delay: 10\nCrawl-delay: nonsense\n"
        b"Sitemap: https://h/s2.xml\nsitemap: https://h/s1.xml\n"
    )
    rules = RobotsRules.parse(body)
    assert rules.crawl_delay(UA) == 2.5
    assert rules.crawl_delay("other") == 10.0
    assert rules.sitemaps == ("https://h/s1.xml", "https://h/s2.xml")
    assert RobotsRules.parse(b"User-agent: *\nDisallow: /\n").crawl_delay(UA) is None
    assert RobotsRules.parse(b"User-agent: *\nCrawl-delay: -1\nCrawl-delay: inf\n").crawl_delay(UA) is None


def test_typos_are_tolerated() -> None:
    rules = RobotsRules.parse(b"useragent: *\ndissallow: /a\nDisalow: /b\n")
    assert not rules.allowed("/a", UA)
    assert not rules.allowed("/b", UA)


@pytest.mark.serial  # a wall-clock bound
def test_big_file_rule_after_400_kib_is_honoured() -> None:
    filler = b"# " + b"x" * 78 + b"\n"
    head = b"User-agent: *\nDisallow: /early\n" + filler * (400 * 1024 // len(filler))
    body = head + b"Disallow: /late\n"
    body += filler * ((2 * 1024 * 1024 - len(body)) // len(filler))
    assert len(body) >= 2 * 1024 * 1024 - 100
    started = time.perf_counter()
    rules = RobotsRules.parse(body)
    assert time.perf_counter() - started < 2.0
    assert not rules.allowed("/early", UA)
    assert not rules.allowed("/late/x", UA)
    assert rules.allowed("/other", UA)


def test_line_cut_at_the_size_limit_is_dropped() -> None:
    body = b"User-agent: *\nDisallow: /private/deep/path\n"
    rules = RobotsRules.parse(body, max_bytes=len(body) - 10)
    assert rules.allowed("/p", UA)  # not "Disallow: /p" from a half line


@pytest.mark.parametrize(
    ("status", "error_class", "allowed", "ttl", "defer"),
    [
        (200, "", False, 24 * 3600.0, False),
        (404, "", True, 24 * 3600.0, False),
        (403, "", True, 24 * 3600.0, False),
        (410, "", True, 24 * 3600.0, False),
        (429, "", False, 300.0, True),
        (500, "", False, 600.0, False),
        (503, "", False, 600.0, False),
        (0, "timeout", False, 600.0, False),
        (0, "dns", False, 600.0, False),
        (0, "connect", False, 600.0, False),
        (0, "too_many_redirects", True, 24 * 3600.0, False),
    ],
)
def test_fetch_outcome_policy(status: int, error_class: str, allowed: bool, ttl: float, defer: bool) -> None:
    rules, got_ttl, got_defer = rules_for_response(status, b"User-agent: *\nDisallow: /\n", error_class)
    assert rules.allowed("http://h/page", UA) is allowed
    assert got_ttl == ttl
    assert got_defer is defer


def test_policy_ttl_is_configurable() -> None:
    _, ttl, _ = rules_for_response(200, b"", "", ttl=60.0)
    assert ttl == 60.0


def test_cache_expiry_and_lru() -> None:
    cache = RobotsCache(max_entries=2)
    rules = RobotsRules.allow_all()
    cache.put("a", rules, expires_at=100.0)
    cache.put("b", rules, expires_at=100.0)
    assert cache.get("a", now=50.0) is rules  # "a" is now the most recently used
    cache.put("c", rules, expires_at=100.0)
    assert cache.get("b", now=50.0) is None  # evicted
    assert cache.get("a", now=50.0) is rules
    assert cache.get("a", now=100.0) is None  # expired
    assert len(cache) == 1


def test_path_of() -> None:
    assert path_of("http://h") == "/"
    assert path_of("http://h/a/b?c=d#e") == "/a/b?c=d"
    assert path_of("http://h?x") == "/?x"
    assert path_of("/just/a/path") == "/just/a/path"
    assert path_of("") == "/"
    assert path_of("http://h/%e3%83%84") == "/%E3%83%84"


@pytest.mark.serial  # a wall-clock bound
def test_pathological_wildcards_are_fast() -> None:
    rules = RobotsRules.parse(("User-agent: *\nDisallow: /" + "*a" * 200 + "b$\n").encode())
    started = time.perf_counter()
    assert rules.allowed("/" + "a" * 5000, UA)
    assert time.perf_counter() - started < 0.5


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.text(max_size=30), st.text(max_size=30))
def test_parse_never_raises(body: bytes, url: str, agent: str) -> None:
    rules = RobotsRules.parse(body)
    assert isinstance(rules.allowed(url, agent), bool)
    delay = rules.crawl_delay(agent)
    assert delay is None or delay >= 0


_lines = st.lists(
    st.tuples(
        st.sampled_from(["User-agent", "Allow", "Disallow", "Crawl-delay", "Sitemap", "useragent", "foo"]),
        st.text(alphabet="/*$ab%é?#harvestman*", max_size=12),
    ),
    max_size=20,
)


@settings(max_examples=300, deadline=None)
@given(_lines, st.text(alphabet="/ab%é?*$", max_size=20))
def test_structured_robots_never_raise(lines: list[tuple[str, str]], path: str) -> None:
    body = "\n".join(f"{k}: {v}" for k, v in lines).encode()
    rules = RobotsRules.parse(body)
    assert isinstance(rules.allowed("/" + path, UA), bool)

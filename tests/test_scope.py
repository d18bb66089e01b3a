"""Crawl scope: host, domain and any modes with include/exclude patterns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.policy.scope import Scope, followed_links

SEEDS = ["https://www.example.co.uk/start", "http://blog.other.org/"]


def test_host_mode() -> None:
    scope = Scope(SEEDS, "host", (), ())
    assert scope.allows("https://www.example.co.uk/a")
    assert scope.allows("http://www.example.co.uk:8080/b")  # the port does not change the host
    assert scope.allows("https://blog.other.org/x")
    assert not scope.allows("https://shop.example.co.uk/")
    assert scope.reason("https://shop.example.co.uk/") == "host 'shop.example.co.uk' is not a seed host"


def test_followed_links_normalizes_filters_and_remembers() -> None:
    scope = Scope(SEEDS, "host", (), ())
    answers: dict[str, tuple[str, str] | None] = {}
    links = [
        "https://WWW.example.co.uk/b#top",
        "https://shop.example.co.uk/",  # another host: out of scope
        "https://www.example.co.uk/%7Ea",
        "https://www.example.co.uk/b",  # the first one again, once normalized
        "ftp://www.example.co.uk/f",  # a scheme never fetched
    ]
    assert followed_links(links, scope, answers, max_length=2048) == {
        "https://www.example.co.uk/b": "www.example.co.uk",
        "https://www.example.co.uk/~a": "www.example.co.uk",
    }
    assert answers["https://shop.example.co.uk/"] is None
    assert answers["ftp://www.example.co.uk/f"] is None
    # A remembered answer is used as it is, without normalizing the link again.
    answers["https://www.example.co.uk/%7Ea"] = ("https://elsewhere.test/", "elsewhere.test")
    assert followed_links(["https://www.example.co.uk/%7Ea"], scope, answers, max_length=2048) == {
        "https://elsewhere.test/": "elsewhere.test"
    }


def test_domain_mode() -> None:
    scope = Scope(SEEDS, "domain", (), ())
    assert scope.allows("https://shop.example.co.uk/")
    assert scope.allows("http://other.org/")
    assert not scope.allows("https://example.com/")
    assert scope.reason("https://co.uk/") is not None
    gh = Scope(["https://alice.github.io/"], "domain", (), ())
    assert not gh.allows("https://bob.github.io/")  # private suffixes separate sites


def test_any_mode() -> None:
    scope = Scope(SEEDS, "any", (), ())
    assert scope.allows("https://anything.example.net/")
    assert scope.allows("not even a url")



def test_robots_txt_is_never_followed_as_a_page() -> None:
    # The robots gate reads it for the crawl itself: a link to it makes no URL of the crawl.
    scope = Scope(["http://a.test/"], "any")
    assert scope.reason("http://a.test/robots.txt") == "robots.txt is read by the crawl for itself"
    assert not scope.allows("http://b.test/robots.txt?x=1")
    assert scope.allows("http://a.test/robots.txt.html") and scope.allows("http://a.test/x/robots.txt")
    found = followed_links(["http://a.test/robots.txt", "http://a.test/p"], scope, {}, max_length=2048)
    assert list(found) == ["http://a.test/p"]

def test_include_and_exclude() -> None:
    scope = Scope(SEEDS, "host", [r"/docs/", r"/blog/"], [r"\.pdf$", r"[?&]print="])
    assert scope.allows("https://www.example.co.uk/docs/a")
    assert scope.reason("https://www.example.co.uk/shop/") == "matches no include pattern"
    assert scope.reason("https://www.example.co.uk/docs/a.pdf") == r"matches exclude pattern \.pdf$"
    assert not scope.allows("https://www.example.co.uk/blog/x?print=1")
    assert not scope.allows("https://elsewhere.com/docs/")


def test_invalid_urls_and_seeds() -> None:
    scope = Scope(["not a url", "https://h.example/"], "host", (), ())
    assert scope.reason("::::") == "invalid URL"
    assert scope.allows("https://h.example/x")
    with pytest.raises(ValueError):
        Scope(SEEDS, "planet", (), ())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=50), st.sampled_from(["host", "domain", "any"]))
def test_never_raises(url: str, mode: str) -> None:
    scope = Scope(SEEDS, mode, [r"a"], [r"b"])
    assert scope.allows(url) is (scope.reason(url) is None)

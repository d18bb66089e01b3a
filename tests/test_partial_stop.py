"""Stop conditions judged on a stream (fetch/stop.py) and the rolling SimHash (fetch/rolling_simhash.py)."""

from __future__ import annotations

import random

import pytest

from harvestman.batch.simhash import simhash
from harvestman.fetch.rolling_simhash import RollingSimHash
from harvestman.fetch.stop import HeadScanner, StopChecker, parse_stop
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from tests.support.crawlcheck import run_cli

DOCS = [
    (b"<!doctype html><html><head><title>a</head></title><script>'</head>'</script></head><body>x",
     b"</head>"),
    (b"<html><title>t</title><meta name=x content=\"a>b\"><p>hi", b"<p>hi"),
    (b"<head><link rel=x></HEAD>rest", b"</HEAD>"),
    (b"<html><head><!-- </head> --><style>p{}</style><div>x", b"<div>"),
]


@pytest.mark.parametrize(("doc", "end"), DOCS)
@pytest.mark.parametrize("step", [1, 2, 7, 1000])
def test_head_scanner_finds_the_end_of_the_head_in_any_pieces(doc: bytes, end: bytes, step: int) -> None:
    scanner = HeadScanner()
    held = False
    for i in range(0, len(doc), step):
        held = scanner.feed(doc[i:i + step])
        if held:
            break
    assert held
    expected = doc.rindex(end) + (len(end) if end.startswith(b"</") else 0)
    assert scanner.end == expected


def test_head_scanner_waits_on_a_long_tag() -> None:
    scanner = HeadScanner()
    assert not scanner.feed(b"<head><meta content='" + b"a" * 50_000)
    assert scanner.feed(b"'></head>")


def test_bytes_and_selector_checkers() -> None:
    checker = StopChecker(parse_stop("bytes:10"))
    assert not checker.feed(b"12345") and checker.feed(b"67890abc") and checker.cut == 10
    selector = StopChecker(parse_stop("selector:div.x"))
    assert not selector.feed(b"<p>" * 100)
    assert selector.feed(b"<div class=x>" + b" " * 20_000)


@pytest.mark.parametrize("spec", ["", "heady", "bytes:0", "bytes:x", "selector:", "selector:[[", "foo:1"])
def test_bad_stop_conditions_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_stop(spec)


def test_config_checks_stop_settings() -> None:
    with pytest.raises(ConfigError):
        CrawlConfig(stop_at="body")
    with pytest.raises(ConfigError):
        CrawlConfig(stop_rules={"(": "head"})
    with pytest.raises(ConfigError):
        CrawlConfig(http2="sometimes")
    assert CrawlConfig(stop_rules={"/v/": "head"}).fetch.stop_rules == (("/v/", "head"),)


def test_cli_refuses_a_bad_stop_condition() -> None:
    done = run_cli("crawl", "http://127.0.0.1:9/", "--stop-at", "selector:[[", "-o", "/tmp/never-made")
    assert done.returncode == 2 and "stop condition" in done.stderr and "Traceback" not in done.stderr


def test_rolling_simhash_agrees_with_simhash_on_what_arrived() -> None:
    rng = random.Random(3)
    words = ["alpha", "Beta", "gamma", "delta", "épée", "x1", "z"]
    for _ in range(200):
        text = " ".join(rng.choice(words) + rng.choice(["", ",", ".  ", "\n"])
                        for _ in range(rng.randint(0, 40)))
        rolling = RollingSimHash()
        i = 0
        while i < len(text):
            n = rng.randint(1, 7)
            rolling.update(text[i:i + n])
            i += n
            assert rolling.value == simhash(text[:i])

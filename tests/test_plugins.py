"""Plugins as entry points (crawl/plugins.py), with the example package of examples/plugins: each
one acting in a real crawl of an nginx-served site when named, and none acting when not named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harvestman.crawl.plugins import NO_PLUGINS, installed, load_plugins
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlState
from tests.support.crawlcheck import consistent_records, run_cli
from tests.support.docsite import page
from tests.support.nginx import NginxServer, free_port, require_nginx

HOST = "127.1.41.1"
EXAMPLE = ("drop-traps", "strip-utm", "plain-text", "jsonl-index")


def _require_example() -> None:
    if "drop-traps" not in installed().get("url_filters", []):
        pytest.skip("the example plugins are not installed: "
                    "pip install -e examples/plugins/harvestman-example")


def test_no_plugin_named_loads_nothing() -> None:
    assert load_plugins(()) is NO_PLUGINS
    assert NO_PLUGINS.refiner() is None and CrawlConfig().plugins == ()


def test_the_example_plugins_load_by_name() -> None:
    _require_example()
    plugins = load_plugins([*EXAMPLE, "shorter-first"])
    refine = plugins.refiner()
    assert refine is not None
    assert refine("http://h.test/a?utm_source=x&b=1&utm_medium=y") == "http://h.test/a?b=1"
    assert refine("http://h.test/session/a1b2c3d4e5f60718/s.html") is None
    assert refine("http://h.test/calendar/2026/01/") is None
    assert refine("http://h.test/plain") == "http://h.test/plain"
    assert [p.content_types for p in plugins.parsers] == [("text/plain",)]
    assert plugins.scorer is not None and len(plugins.index_writers) == 1


def test_an_unknown_plugin_is_refused_naming_the_installed_ones() -> None:
    _require_example()
    with pytest.raises(ConfigError, match=r"unknown plugin 'nope': installed: .*drop-traps"):
        load_plugins(["nope"])


def test_a_broken_plugin_is_a_one_line_error_of_the_command(tmp_path: Path) -> None:
    # A distribution whose entry point names a module that does not exist.
    info = tmp_path / "site" / "broken_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[harvestman.url_filters]\nbroken = no_such_module_here:keep\n")
    sys.path.insert(0, str(tmp_path / "site"))
    try:
        with pytest.raises(ConfigError, match=r"plugin 'broken' .*failed to load: ModuleNotFoundError"):
            load_plugins(["broken"])
    finally:
        sys.path.remove(str(tmp_path / "site"))
    done = run_cli("crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "out"),
                   "--plugin", "nope-not-here")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unknown plugin 'nope-not-here'" in done.stderr


def _site(root: Path, base: str) -> None:
    root.mkdir(parents=True)
    (root / "index.html").write_text(page(
        "Home", "/a.html?utm_source=news&utm_medium=mail", "/session/a1b2c3d4e5f60718/s.html",
        "/calendar/2026/01/", "/notes.txt", "/b.html"))
    (root / "notes.txt").write_text(f"Release notes\n\nSee {base}/from-txt.html for more.\n")
    for name in ("a", "b", "from-txt"):
        (root / f"{name}.html").write_text(page(name))


def _crawl(tmp_path: Path, name: str, *args: str) -> tuple[set[str], Path]:
    require_nginx()
    port = free_port(HOST)
    base = f"http://{HOST}:{port}"
    _site(tmp_path / name / HOST, base)
    out = tmp_path / f"out-{name}"
    with NginxServer(tmp_path / name, [HOST], port) as server:
        done = run_cli("crawl", f"{base}/", "--out", str(out), "--allow-net", "127.1.0.0/16", "--quiet",
                       *args)
        uris = {entry.uri for entry in server.requests() if entry.uri != "/robots.txt"}
    assert done.returncode in (0, 8), done.stderr  # 8: the calendar and session pages are 404s
    return uris, out


@pytest.mark.parametrize("workers", ["1", "2"])
def test_plugins_act_in_a_crawl_only_when_named(tmp_path: Path, workers: str) -> None:
    _require_example()
    plain, plain_out = _crawl(tmp_path, "plain", "--workers", workers)
    assert {"/a.html?utm_source=news&utm_medium=mail", "/session/a1b2c3d4e5f60718/s.html",
            "/calendar/2026/01/", "/notes.txt"} <= plain
    assert "/from-txt.html" not in plain and "/a.html" not in plain
    assert not list(plain_out.glob("index-w*.jsonl"))

    plugged, out = _crawl(tmp_path, "plugged", "--workers", workers,
                          *(arg for name in EXAMPLE for arg in ("--plugin", name)))
    assert "/a.html" in plugged and not any("utm_" in uri for uri in plugged)  # strip-utm
    assert not any("/session/" in uri or "calendar" in uri for uri in plugged)  # drop-traps
    assert "/from-txt.html" in plugged  # plain-text: a link found in a text/plain document
    records = consistent_records(out)
    notes = next(r for url, r in records.items() if url.endswith("/notes.txt"))
    assert notes.title == "Release notes"
    lines = [json.loads(line) for file in out.glob("index-w*.jsonl")
             for line in file.read_text().splitlines()]
    indexed = {line["url"] for line in lines}  # jsonl-index: one line a stored page, over every worker
    fetched = {url for url, r in records.items() if r.state == UrlState.FETCHED}
    assert fetched <= indexed and len(lines) == len(indexed)
    assert any(line["title"] == "Release notes" for line in lines)


def test_a_scoring_plugin_scores_links_and_allows_ordering_by_score(tmp_path: Path) -> None:
    _require_example()
    require_nginx()
    refused = run_cli("crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "refused"),
                      "--ordering", "score")
    assert refused.returncode == 2 and "needs a link scorer" in refused.stderr
    _, out = _crawl(tmp_path, "scored", "--ordering", "score", "--plugin", "shorter-first", "--workers", "2")
    records = consistent_records(out)
    scored = [r for r in records.values() if r.depth == 1]
    assert scored and all(r.score == pytest.approx(1 / (1 + len(r.url)), rel=0.2) for r in scored)

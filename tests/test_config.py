"""CrawlConfig checks every field at construction: wrong types refused by name, natural forms converted."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harvestman.model.config import (
    SECTIONS,
    CrawlConfig,
    FetchSettings,
    PolitenessSettings,
    ResolveEntry,
    RobotsSettings,
    config_from_mapping,
    load_toml,
)
from harvestman.model.errors import ConfigError

FIELDS = [f.name for f in dataclasses.fields(CrawlConfig)]


class Odd:
    """A value no field takes, with a repr the error message must show."""

    def __repr__(self) -> str:
        return "<odd value>"


def _wrong_item(name: str) -> Any:
    """A container of the right shape holding an item of the wrong type, for the tuple fields."""
    if name == "extra_headers":
        return {"X-Test": 5}
    return [Odd()]


@pytest.mark.parametrize("name", FIELDS)
def test_every_field_refuses_a_wrong_type_by_name(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        CrawlConfig(**{name: Odd()})
    message = str(caught.value)
    assert f"'{name}'" in message and "wants" in message and "<odd value>" in message and "(Odd)" in message


@pytest.mark.parametrize("name", FIELDS)
def test_every_field_refuses_a_wrong_type_through_a_mapping(name: str) -> None:
    with pytest.raises(ConfigError, match=f"'{name}' wants"):
        config_from_mapping({name.replace("_", "-"): Odd()})


TUPLE_FIELDS = [f.name for f in dataclasses.fields(CrawlConfig) if str(f.type).startswith("tuple")]


@pytest.mark.parametrize("name", TUPLE_FIELDS)
def test_tuple_fields_refuse_an_item_of_the_wrong_type(name: str) -> None:
    with pytest.raises(ConfigError, match=f"'{name}' wants"):
        CrawlConfig(**{name: _wrong_item(name)})


@pytest.mark.parametrize(
    "name, value",
    [
        ("max_pages", True),  # a bool is not a count
        ("max_pages", 3.0),
        ("max_pages", "3"),
        ("timeout", "60"),
        ("timeout", float("nan")),
        ("quiet", 1),
        ("quiet", "no"),
        ("user_agent", b"bot"),
        ("out_dir", 5),
        ("seeds", 5),
        ("seeds", {"http://a.test/": 1}),
        ("extra_headers", [("X-Only-A-Name",)]),
        ("extra_headers", "X-A: b"),
    ],
)
def test_near_misses_are_refused(name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"'{name}' wants"):
        CrawlConfig(**{name: value})


def test_natural_forms_are_converted() -> None:
    cfg = CrawlConfig(
        seeds=["http://a.test/", "http://b.test/"],
        include=["/docs/"],
        allow_net=["127.1.0.0/16"],
        resolve=("a.test:80:127.1.0.1", ResolveEntry("b.test", 8080, "::1")),
        out_dir="crawl-dir",
        extra_headers={"X-One": "1", "X-Two": "2"},
        timeout=5,
    )
    assert cfg.seeds == ("http://a.test/", "http://b.test/") and cfg.include == ("/docs/",)
    assert cfg.allow_net == ("127.1.0.0/16",)
    assert cfg.resolve == (ResolveEntry("a.test", 80, "127.1.0.1"), ResolveEntry("b.test", 8080, "::1"))
    assert cfg.out_dir == Path("crawl-dir") and isinstance(cfg.out_dir, Path)
    assert cfg.extra_headers == (("X-One", "1"), ("X-Two", "2"))
    assert cfg.timeout == 5.0 and isinstance(cfg.timeout, float)
    assert hash(cfg)  # every field is immutable again: the record stays frozen and hashable


def test_a_lone_string_is_a_list_of_one() -> None:
    cfg = CrawlConfig(seeds="http://a.test/", resolve="a.test:80:127.1.0.1", allow_net="127.1.0.0/16")
    assert cfg.seeds == ("http://a.test/",)
    assert cfg.resolve == (ResolveEntry("a.test", 80, "127.1.0.1"),)
    assert cfg.allow_net == ("127.1.0.0/16",)


def test_a_malformed_resolve_string_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="HOST:PORT:ADDR"):
        CrawlConfig(resolve=("a.test:80",))
    with pytest.raises(ConfigError, match="not an IP address"):
        CrawlConfig(resolve=("a.test:80:999.1.1.1",))


def test_replace_converts_and_checks_again() -> None:
    cfg = CrawlConfig().replace(out_dir="elsewhere", seeds=["http://a.test/"])
    assert cfg.out_dir == Path("elsewhere") and cfg.seeds == ("http://a.test/",)
    with pytest.raises(ConfigError, match="'per_host' wants"):
        cfg.replace(per_host="2")


def test_the_mapping_and_the_constructor_agree() -> None:
    values: dict[str, Any] = {"seeds": ["http://a.test/"], "out_dir": "d", "resolve": ["a.test:80:127.1.0.1"],
                              "extra_headers": {"X-A": "b"}, "max_pages": 3}
    assert config_from_mapping(values) == CrawlConfig(**values)
    assert config_from_mapping({"max-pages": 3}).max_pages == 3  # dashed names, as on the command line
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        config_from_mapping({"colour": "green"})


# ----- sections: each part of the crawler reads its own ----------------------------------------


def test_every_setting_sits_in_exactly_one_section_with_its_type() -> None:
    types = {f.name: str(f.type) for f in dataclasses.fields(CrawlConfig)}
    seen: list[str] = []
    for kind in SECTIONS.values():
        for f in dataclasses.fields(kind):
            assert str(f.type) == types[f.name], f.name
            seen.append(f.name)
    assert sorted(seen) == sorted(types)  # each field once, none left out
    assert set(SECTIONS).isdisjoint(types)  # a section's name never shadows a setting's


def test_sections_carry_the_checked_values() -> None:
    cfg = CrawlConfig(timeout=5, resolve=["a.test:80:127.1.0.1"], retries=1, robots_ttl=9,
                      max_depth=2, out_dir="d", seeds=["http://a.test/"])
    assert cfg.fetch.timeout == 5.0 and cfg.fetch.resolve == (ResolveEntry("a.test", 80, "127.1.0.1"),)
    assert isinstance(cfg.fetch, FetchSettings) and isinstance(cfg.politeness, PolitenessSettings)
    assert cfg.politeness.retries == 1 and cfg.robots == RobotsSettings(True, 9.0)
    assert cfg.links.max_depth == 2 and cfg.storage.out_dir == Path("d")
    assert cfg.run.seeds == ("http://a.test/",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.fetch.timeout = 1  # type: ignore[misc]


# Where a CrawlConfig may be handed whole: the places that build the crawler's parts from it.
WHOLE_CONFIG_ALLOWED = {"model/config.py", "crawl/engine.py", "crawl/download.py", "crawl/workers.py",
                        "crawl/assembly.py",  # composes the crawl's steps from its settings
                        "crawl/job.py", "crawl/seeding.py", "app/cli.py", "app/demo.py", "__init__.py",
                        # The crawl cycle's steps: each builds a step's parts (store, scope, engine run).
                        "batch/crawldir.py", "batch/inject.py", "batch/generate.py", "batch/fetch_segment.py",
                        "batch/updatedb.py", "batch/cycle.py", "app/cli_cycle.py",
                        "batch/recrawl.py",  # a re-crawl: generate, fetch, updatedb in one
                        # Focused crawling's faces: the focus trained before a crawl; a stored crawl
                        # rebuilt (its settings, scope, link settings) for an offline replay.
                        "app/cli_focus.py", "batch/focusreplay.py",
                        # The REST API's check of a crawl's settings before its process starts.
                        "serve/settings.py",
                        # A crawl folder's stored settings, read back and merged by a later run
                        # (which also decides the failures that run's settings mend).
                        "store/crawldir.py", "launch/run.py", "policy/revive.py",
                        # Names it in a message only: a library user is told to pass resume=True.
                        "model/errors.py",
                        # The command-line options and docs table, showing CrawlConfig's defaults.
                        "app/options.py",
                        # The page stages (features, Markdown) a crawl's settings ask for, built
                        # above index/ and handed down.
                        "index/stages.py", "crawl/sinks.py",
                        # The cycle's steps run once for the command line and the server.
                        "launch/steps.py"}


def test_only_the_builders_see_the_whole_config() -> None:
    src = Path(__file__).parent.parent / "src" / "harvestman"
    seen = {str(p.relative_to(src)) for p in src.rglob("*.py") if "CrawlConfig" in p.read_text()}
    assert seen <= WHOLE_CONFIG_ALLOWED, seen - WHOLE_CONFIG_ALLOWED


FLAT = """
[crawl]
seeds = ["http://a.test/"]
timeout = 5
delay = 1.5
max_depth = 3
[crawl.extra_headers]
X-A = "b"
"""
SECTIONED = """
[run]
seeds = ["http://a.test/"]
[fetch]
timeout = 5
[fetch.extra_headers]
X-A = "b"
[politeness]
delay = 1.5
[links]
max_depth = 3
"""
MIXED = """
max_depth = 3
[fetch]
timeout = 5
[crawl]
seeds = ["http://a.test/"]
[crawl.politeness]
delay = 1.5
[crawl.fetch.extra_headers]
X-A = "b"
"""


@pytest.mark.parametrize("text", [SECTIONED, MIXED])
def test_a_file_with_section_tables_reads_as_the_flat_one(tmp_path: Path, text: str) -> None:
    flat, other = tmp_path / "flat.toml", tmp_path / "other.toml"
    flat.write_text(FLAT)
    other.write_text(text)
    assert load_toml(other) == load_toml(flat)
    cfg = config_from_mapping(load_toml(other))
    assert (cfg.fetch.timeout, cfg.politeness.delay, cfg.links.max_depth) == (5.0, 1.5, 3)
    assert cfg.fetch.extra_headers == (("X-A", "b"),)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[fetch]\ndelay = 1\n", "'delay' belongs in \\[politeness\\], not in \\[fetch\\]"),
        ("timeout = 1\n[fetch]\ntimeout = 2\n", "'timeout' is given twice"),
        ("timeout = 1\n[crawl]\ntimeout = 2\n", "'timeout' is given twice"),
        ("[fetch]\ncolour = 1\n", "unknown setting 'colour' in \\[fetch\\]"),
        ("fetch = 5\n", "\\[fetch\\] must be a table"),
        ("[fetch]\ntimeout = 'soon'\n", "'timeout' wants a number"),
    ],
)
def test_a_misplaced_setting_is_refused_by_name(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        config_from_mapping(load_toml(path))


def test_a_mapping_takes_section_tables_too() -> None:
    cfg = config_from_mapping({"fetch": {"max-size": 10}, "politeness": {"retries": 0}})
    assert cfg == CrawlConfig(max_size=10, retries=0)

"""The settings declaration: every setting once, and every face of a setting derived from it (the
command line's options and their help, the API's allow-list, the worker's set, docs/config.md)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import io
import re
from pathlib import Path
from typing import Any

import pytest

from harvestman.app import cli_cycle
from harvestman.app.cli import build_parser, main
from harvestman.app.options import given_settings, shown_default, with_table
from harvestman.launch.export import EXPORT_FORMATS
from harvestman.model.config import CrawlConfig, config_from_mapping
from harvestman.model.errors import ConfigError
from harvestman.model.settings import (
    MACHINE_KEPT,
    MACHINE_LOCAL,
    NOT_SETTABLE,
    RUN_ONLY,
    SETTING,
    SETTINGS,
    Command,
    Setting,
    flag_name,
    options_of,
)
from harvestman.model.sizes import parse_size
from harvestman.serve import settings as served

DOCS = Path(__file__).resolve().parent.parent / "docs"
DEFAULTS = CrawlConfig()
# A value other than the default, as typed on the command line, for the settings whose type alone
# does not give one.
TYPED = {"resolve": "a.test:80:127.0.0.1", "allow_net": "10.0.0.0/8", "stop_at": "head",
         "render_settle": "selector:main", "render_block": "image,font", "user_agent": "bot/1",
         "db": "sqlite:///elsewhere.db", "browser_path": "/opt/chromium", "focus_file": "focus.toml",
         "out_dir": "elsewhere", "plugins": "a-plugin", "include": "/a/", "exclude": "/b/",
         "extra_headers": "X-Team: crawl", "only_net": "192.0.2.0/24", "proxy": "socks5://127.0.0.1:1080"}
# The commands each kind of option is parsed with: the words before the option, and the settings
# that command reads.
PREFIX: dict[Command, list[str]] = {
    "crawl": ["crawl", "--out", "d"], "download": ["download", "--out", "d"],
    "step": ["fetch", "d"], "worker": ["worker", "--db", "postgresql://h/db", "--out", "d"],
}


def _typed(setting: Setting) -> tuple[list[str], Any]:
    """The words that set `setting` to something else than its default, and the value meant."""
    flag = setting.flags[0]
    if setting.form == "switch":
        return [flag], True
    if setting.form == "negated":
        return [flag], False
    if setting.form == "optional":
        return [flag], setting.const
    if setting.choices:
        word = next(c for c in setting.choices if c and c != getattr(DEFAULTS, setting.name))
        return [flag, word], word
    if setting.name in TYPED:
        text = TYPED[setting.name]
        meant: Any = {"commas": text.split(","), "list": [text]}.get(setting.form, text)
        return [flag, text], Path(text) if setting.name == "out_dir" else meant
    kind = type(getattr(DEFAULTS, setting.name))
    value = kind(getattr(DEFAULTS, setting.name) + 7)
    return [flag, str(value)], value


def _parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def test_every_config_field_is_declared_exactly_once() -> None:
    fields = [f.name for f in dataclasses.fields(CrawlConfig)]
    declared = [s.name for s in SETTINGS]
    assert sorted(declared) == sorted(fields)
    assert len(set(declared)) == len(declared)


def test_every_flag_is_one_settings_alone() -> None:
    spellings = [flag for s in SETTINGS for flag in (*s.flags, *s.aliases)]
    assert len(spellings) == len(set(spellings))
    for setting in SETTINGS:
        assert not setting.aliases or setting.flags, setting.name
        assert setting.scope == "crawl" or setting.name in MACHINE_LOCAL | RUN_ONLY


CASES = [(command, s) for command in PREFIX for s in options_of(command)]


@pytest.mark.parametrize("command, setting", CASES, ids=[f"{c}:{s.name}" for c, s in CASES])
def test_every_declared_option_sets_its_setting(command: Command, setting: Setting) -> None:
    words, meant = _typed(setting)
    args = _parse([*PREFIX[command], *words])
    given = given_settings(args)
    assert given[setting.name] == meant
    cfg = config_from_mapping({name: value for name, value in given.items() if name != "out_dir"}
                              | {setting.name: given[setting.name]})
    assert getattr(cfg, setting.name) == getattr(config_from_mapping({setting.name: meant}), setting.name)
    assert getattr(cfg, setting.name) != getattr(DEFAULTS, setting.name)
    if command == "step":  # the cycle's steps read the same settings
        assert cli_cycle.overrides(args)[setting.name] == meant


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.aliases], ids=lambda s: s.name)
def test_an_old_spelling_still_sets_the_setting_but_is_not_shown(setting: Setting, capsys: Any) -> None:
    words, meant = _typed(setting)
    for alias in setting.aliases:
        args = _parse(["crawl", *(["--out", "d"] if setting.name != "out_dir" else []), alias, *words[1:]])
        assert given_settings(args)[setting.name] == meant
    with pytest.raises(SystemExit):
        _parse(["crawl", "--help"])
    shown = capsys.readouterr().out
    assert all(alias not in shown.replace(setting.flags[0], "") for alias in setting.aliases)


def test_the_old_output_spelling_still_names_an_export_and_a_dump() -> None:
    assert _parse(["export", "d", "--output", "f.jsonl"]).output == Path("f.jsonl")
    assert _parse(["export", "d", "-o", "f.jsonl"]).output == Path("f.jsonl")
    assert _parse(["readdb", "d", "--dump", "--output", "x"]).output == Path("x")


def test_given_settings_put_the_options_over_the_config_file(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[politeness]\ndelay = 2.0\nretries = 5\n")
    args = _parse(["crawl", "--out", "d", "--config", str(toml), "--delay", "0.5", "--ignore-robots"])
    assert given_settings(args) | {"out_dir": None} == {"delay": 0.5, "retries": 5, "obey_robots": False,
                                                       "out_dir": None}


def test_the_api_allow_list_and_the_worker_sets_come_from_the_declaration() -> None:
    assert served.NOT_SETTABLE is NOT_SETTABLE
    assert {s.name for s in SETTINGS if not s.api} == NOT_SETTABLE
    assert {s.name for s in SETTINGS if s.scope in ("machine", "run")} == MACHINE_LOCAL
    assert set(MACHINE_KEPT) == {s.name for s in SETTINGS if s.scope == "machine"} <= MACHINE_LOCAL
    assert {s.name for s in SETTINGS if s.scope in ("run", "run-wide")} == RUN_ONLY
    # Every option the worker command has sets something a worker may set for itself.
    worker = {s.name for s in options_of("worker")}
    assert worker <= MACHINE_LOCAL
    args = _parse([*PREFIX["worker"], "--workers", "3", "--allow-net", "10.0.0.0/8", "-q"])
    assert set(given_settings(args)) == {"db", "out_dir", "workers", "allow_net", "quiet"}
    for name in NOT_SETTABLE:
        with pytest.raises(served.SettingsError, match="cannot be set through the API"):
            served.check_settings(["http://a.test/"], {name: getattr(DEFAULTS, name)})


def test_messages_name_a_setting_by_its_canonical_option() -> None:
    assert flag_name("ordering") == "--order" and flag_name("out_dir") == "--out"
    assert flag_name("obey_robots") == "--ignore-robots" and flag_name("plugins") == "--plugin"
    assert flag_name("max_outlinks") == "--max-outlinks"  # no option: the name it would have


def _from_shown(shown: str, default: Any) -> Any:
    """A default as --help shows it, read back as CrawlConfig holds it."""
    if isinstance(default, tuple):
        return tuple(shown.split(","))
    if isinstance(default, int) and not isinstance(default, bool):
        return parse_size(shown)  # a size is shown as it is written: 10MiB
    if isinstance(default, float):
        return float(shown.partition(" ")[0])  # "2592000 (30 days)"
    return type(default)(shown)


def test_crawl_help_shows_crawlconfigs_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line an option: a default is never wrapped
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["crawl", "--help"])
    lines: dict[str, str] = {}  # an option's first spelling -> its entry, on one line
    for line in out.getvalue().splitlines():
        if line.startswith("  -"):
            entry = line.split()[0].rstrip(",")
            lines[entry] = line.strip()
        elif line.startswith("    ") and lines:
            lines[entry] += " " + line.strip()
    checked = 0
    for setting in options_of("crawl"):
        line = lines[setting.flags[0]]
        default = getattr(DEFAULTS, setting.name)
        found = re.search(r"\(default ([^()]*(?:\([^()]*\)[^()]*)*)\)$", line)
        shows_none = setting.form in ("switch", "negated") or not shown_default(setting.name)
        if shows_none or setting.name == "out_dir":  # a required option has no default to show
            assert found is None, line
            continue
        assert found, line
        shown = re.sub(r" \([\d.]+ days\)$", "", found.group(1))  # "2592000 (30 days)": the number
        assert _from_shown(shown, default) == default, line
        checked += 1
    assert checked >= 20


def test_docs_config_table_is_the_declarations() -> None:
    document = (DOCS / "config.md").read_text(encoding="utf-8")
    assert with_table(document) == document, (
        "docs/config.md's settings table is out of date: python -m harvestman.app.options docs/config.md")
    for setting in SETTINGS:
        assert f"| `{setting.name}` |" in document
    assert SETTING["ordering"].flags[0] in document


def test_the_example_config_names_options_by_their_canonical_spelling() -> None:
    text = (DOCS / "harvestman.example.toml").read_text(encoding="utf-8")
    named = set(re.findall(r"--[a-z][a-z0-9-]*", text))
    canonical = {s.flags[0] for s in SETTINGS if s.flags}
    others = {"--config", "--rounds", "--strategy", "--what"}  # options of commands, not settings
    assert named - others <= canonical, named - others - canonical
    old = {alias for s in SETTINGS for alias in s.aliases}
    assert not named & old


def test_help_names_only_options_the_command_has_and_every_export_format() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        own = {flag for action in command._actions for flag in action.option_strings}
        for action in command._actions:
            # An option in backquotes is another command's: `harvestman export DIR --what markdown`.
            words = re.sub(r"`[^`]*`", "", action.help or "")
            named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", words))
            assert named <= own, (name, action.dest, named - own)
    export = commands.choices["export"]
    formats = next(a.help or "" for a in export._actions if a.dest == "format")
    assert all(f in formats for f in EXPORT_FORMATS), formats
    line = next(c.help or "" for c in commands._choices_actions if c.dest == "export")
    assert all(w in line for w in ("Markdown", "link graph", "opensearch", "solr", "CDXJ")), line


# ----- one declaration: the records, the checks and download()'s set follow from it -------------------


def test_a_setting_is_one_field_of_one_section_and_nothing_else() -> None:
    from harvestman.model.settings import SECTIONS

    # CrawlConfig declares no field of its own: each of its fields is a section's, declared with `_`.
    assert not inspect.get_annotations(CrawlConfig)
    assert sorted(f.name for f in dataclasses.fields(CrawlConfig)) == sorted(SETTING)
    for section, kind in SECTIONS.items():
        for f in dataclasses.fields(kind):
            assert SETTING[f.name].section == section and f.default == SETTING[f.name].default


def test_a_field_declared_without_its_facts_is_refused_at_import() -> None:
    from harvestman.model.settings import _, _declared

    @dataclasses.dataclass(frozen=True)
    class Declared:
        limit: float = _(30.0, "a database-away limit", flags=("--limit",), above=0)

    (limit,) = _declared("storage", Declared)
    assert (limit.name, limit.section, limit.kind, limit.default, limit.flag) == (
        "limit", "storage", float, 30.0, "--limit")

    @dataclasses.dataclass(frozen=True)
    class Bare:
        limit: float = 30.0

    with pytest.raises(TypeError, match=r"Bare.limit is not declared as a setting"):
        list(_declared("storage", Bare))


def _outside(setting: Setting) -> Any:
    """A value of `setting`'s type just outside its declared choices or range."""
    if setting.choices:
        return "no-such-" + setting.name
    if setting.at_most is not None:
        return setting.kind(setting.at_most + 1)
    return setting.kind(setting.above if setting.above is not None else (setting.at_least or 0) - 1)


RANGED = [s for s in SETTINGS if s.choices or {s.at_least, s.above, s.at_most} != {None}]


@pytest.mark.parametrize("setting", RANGED, ids=lambda s: s.name)
def test_each_declared_choice_and_range_is_checked(setting: Setting) -> None:
    with pytest.raises(ConfigError, match=rf"^{setting.name} must be "):
        CrawlConfig(**{setting.name: _outside(setting)})
    CrawlConfig(**{setting.name: setting.default})


def test_download_takes_exactly_the_settings_declared_for_it() -> None:
    from harvestman.crawl.download import DOWNLOAD_SETTINGS, download

    assert {s.name for s in SETTINGS if "list" in s.commands} == DOWNLOAD_SETTINGS
    for setting in SETTINGS:
        if setting.name in ("concurrency", "retries", "timeout"):
            continue  # download()'s own keywords
        if setting.name in DOWNLOAD_SETTINGS:
            download([], **{setting.name: setting.default})
        else:
            with pytest.raises(ConfigError, match=f"'{setting.name}' is not taken"):
                download([], **{setting.name: setting.default})
    # What the command `download` (a crawl of the list) offers and download() cannot do is named.
    with pytest.raises(ConfigError, match="`harvestman download`, a crawl that follows no link, takes "
                                          "--workers"):
        download([], workers=2)


def test_one_merge_layers_defaults_stored_file_flags_and_the_commands_own() -> None:
    from harvestman.model.config import merge_settings

    stored = {"delay": 1.0, "retries": 1, "timeout": 9.0, "max_pages": 5}  # max_pages: the run's
    cfg, notes = merge_settings(stored, {"retries": 2, "timeout": 8.0}, {"fetch": {"timeout": 7.0}},
                                {"out_dir": "d"})
    assert (cfg.delay, cfg.retries, cfg.timeout, cfg.max_pages, cfg.out_dir) == (1.0, 2, 7.0, 0, Path("d"))
    assert notes == ["--retries: 2 replaces the crawl's stored 1",
                     "--timeout: 7.0 replaces the crawl's stored 9.0"]
    joined, notes = merge_settings(stored, {"workers": 2}, same_run=True)  # a worker of the same run
    assert (joined.max_pages, joined.workers, notes) == (5, 2, [])

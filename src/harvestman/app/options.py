"""The command-line options of the settings, and the option table of docs/config.md, derived from the
settings declaration (model/settings.py).

Run as `python -m harvestman.app.options docs/config.md` to write the table into the document.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from harvestman.model.config import load_toml, overlay
from harvestman.model.errors import ConfigError
from harvestman.model.settings import SECTIONS, SETTING, SETTINGS, Command, Setting, options_of
from harvestman.model.sizes import parse_size

# What DIR means wherever a command names a crawl.
DIR_HELP = "the crawl's folder: its database, WARC files, logs"
# What --db means to a command that opens a crawl (the setting's own words).
DB_HELP = SETTING["db"].help
CONFIG_HELP = "read settings from a TOML file (docs/config.md); options given here win over it"
_TYPES: dict[Any, Callable[[str], Any]] = {int: int, float: float, Path: Path}
_METAVARS = {int: "N", float: "SECONDS"}
_MIB = 1024 * 1024
_DAY = 86400


def _commas(value: str) -> list[str]:
    """A comma-separated list; 'none' for none."""
    return [] if value.strip() == "none" else [k.strip() for k in value.split(",") if k.strip()]


def _size(text: str) -> int:
    """A size option's bytes (model/sizes.py); argparse says which option a bad one was given to."""
    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def shown_default(name: str) -> str:
    """A setting's default as help and docs show it ('' when it is empty)."""
    value = SETTING[name].default
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, int) and SETTING[name].size:
        for unit, size in (("GiB", 1024 * _MIB), ("MiB", _MIB)):
            if value >= size and value % size == 0:
                return f"{value // size}{unit}"  # as a size is written (model/sizes.py)
        return str(value)
    if isinstance(value, float):
        days = f" ({value / _DAY:g} days)" if value >= 2 * _DAY and value % _DAY == 0 else ""
        return f"{int(value) if value.is_integer() else value}{days}"
    return str(value)


def option_help(setting: Setting, *, required: bool = False) -> str:
    """A setting's --help line: its help, and its default where an option takes a value
    that may be left out."""
    words = setting.option_help or setting.help
    shown = shown_default(setting.name)
    if setting.form in ("switch", "negated") or not shown or required:
        return words
    return f"{words} (default {shown})"


def _option_kwargs(setting: Setting) -> dict[str, Any]:
    """add_argument's keywords for a setting: the dest is always the setting's name."""
    kwargs: dict[str, Any] = {"dest": setting.name, "default": None}
    if setting.form == "switch":
        return {**kwargs, "action": "store_const", "const": True}
    if setting.form == "negated":
        return {**kwargs, "action": "store_const", "const": False}
    metavar = setting.metavar or _METAVARS.get(setting.kind)
    if setting.form == "commas":
        kwargs["type"] = _commas
    elif setting.size:
        kwargs["type"] = _size
    elif setting.kind in _TYPES:
        kwargs["type"] = _TYPES[setting.kind]
    if setting.form == "list":
        kwargs["action"] = "append"
    if setting.form == "optional":
        kwargs.update(nargs="?", const=setting.const)
    if setting.choices:
        kwargs["choices"] = tuple(c for c in setting.choices if c)
    elif metavar:
        kwargs["metavar"] = metavar
    return kwargs


def add_setting_options(parser: argparse.ArgumentParser, command: Command,
                        *, required: Collection[str] = ()) -> None:
    """Add the options `command` has for settings; `required` names those it cannot do without."""
    # The required ones first: the help starts with what a command cannot do without.
    for setting in sorted(options_of(command), key=lambda s: s.name not in required):
        kwargs = _option_kwargs(setting)
        shown = option_help(setting, required=setting.name in required)
        if setting.name in required:
            # An old spelling may stand for a required option: one of the group is required, and
            # argparse's message names the shown spelling only.
            group = parser.add_mutually_exclusive_group(required=True)
            group.add_argument(*setting.flags, help=shown, **kwargs)
            for alias in setting.aliases:
                group.add_argument(alias, help=argparse.SUPPRESS, **kwargs)
            continue
        parser.add_argument(*setting.flags, help=shown, **kwargs)
        for alias in setting.aliases:
            parser.add_argument(alias, help=argparse.SUPPRESS, **kwargs)


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on this command line, by their CrawlConfig names: a `--config` file's,
    with the options' on top."""
    given = {name: value for name, value in vars(args).items() if name in SETTING and value is not None}
    return overlay(load_toml(args.config) if getattr(args, "config", None) else {}, given)


# ----- docs/config.md's tables ----------------------------------------------------------------------

TABLE_START = "<!-- settings table: written by `python -m harvestman.app.options docs/config.md` -->"
TABLE_END = "<!-- end of the settings table -->"
SECTIONS_START = "<!-- sections table: written by `python -m harvestman.app.options docs/config.md` -->"
SECTIONS_END = "<!-- end of the sections table -->"
_SCOPE_WORDS = {"crawl": "crawl", "machine": "machine", "run": "run", "run-wide": "run (all machines)"}


def sections_table() -> str:
    """The markdown table of the sections: each one's settings and what it holds (its record's docstring)."""
    rows = ["| section | settings | what it holds |", "|---|---|---|"]
    for section, record in SECTIONS.items():
        names = ", ".join(f"`{s.name}`" for s in SETTINGS if s.section == section)
        holds = " ".join((record.__doc__ or "").split())
        rows.append(f"| `[{section}]` | {names} | {holds} |")
    return "\n".join(rows)


def settings_table() -> str:
    """The markdown table of every setting: section, option, default, scope, API, what it does."""
    rows = ["| setting | section | option | default | scope | API | what it does |",
            "|---|---|---|---|---|---|---|"]
    for s in SETTINGS:
        option = ", ".join(f"`{flag}`" for flag in s.flags) if s.flags else ""
        option += " (sets false)" if s.form == "negated" else ""
        default = shown_default(s.name)
        default = f"`{default}`" if default else "none" if isinstance(s.default, tuple) else '`""`'
        choices = "; one of " + ", ".join(f"`{c}`" for c in s.choices if c) if s.choices else ""
        text = (s.help + choices).replace("|", "\\|")
        rows.append(f"| `{s.name}` | `[{s.section}]` | {option} | {default} | "
                    f"{_SCOPE_WORDS[s.scope]} | {'yes' if s.api else 'no'} | {text} |")
    return "\n".join(rows)


def _between(document: str, start: str, end: str, table: str) -> str:
    head, found_start, rest = document.partition(start)
    _, found_end, tail = rest.partition(end)
    if not (found_start and found_end):
        raise ValueError(f"the document has no {start!r} ... {end!r} markers")
    return f"{head}{start}\n{table}\n{end}{tail}"


def with_table(document: str) -> str:
    """`document` with the parts between the tables' markers replaced by the tables of today."""
    document = _between(document, SECTIONS_START, SECTIONS_END, sections_table())
    return _between(document, TABLE_START, TABLE_END, settings_table())


def main(argv: list[str]) -> int:
    """Write the settings table into the markdown files named."""
    for name in argv:
        path = Path(name)
        path.write_text(with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

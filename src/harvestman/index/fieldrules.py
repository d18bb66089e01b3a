"""Field rules the user writes: CSS or XPath selectors that pull named fields out of a category's pages.

A rules file is TOML, one `[[rule]]` table per field:

    [[rule]]
    category = "personal"          # optional: only pages classified so (default: every page)
    field = "email"                # the column it fills
    css = "a[href^='mailto:']"     # or xpath = "//a[starts-with(@href, 'mailto:')]/@href"
    attr = "href"                  # optional: an attribute of the matched element (default: its text)
    pattern = "mailto:([^?]+)"     # optional: a regular expression; its first group (or match) is kept
    all = false                    # optional: every match, as a JSON list (default: the first)

Rules are checked when loaded (selectors compiled, regular expressions too), so a bad one is a
one-line error before any page is read.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError

_KEYS = frozenset({"category", "field", "css", "xpath", "attr", "pattern", "all"})
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SPACE = re.compile(r"\s+")
ALL_PAGES = ""  # the category of rules that apply to every page


@dataclass(frozen=True, slots=True)
class FieldRule:
    """One named field, how to find it, and which pages it applies to."""

    field: str
    category: str  # ALL_PAGES ('') for every page
    selector: str  # as written, for messages
    xpath: Any  # a compiled lxml.etree.XPath (CSS is translated to one by cssselect)
    attr: str
    pattern: re.Pattern[str] | None
    all: bool


def table_for(category: str) -> str:
    """The table a category's fields go to: fields (every page) or fields_<category>."""
    if category == ALL_PAGES:
        return "fields"
    return "fields_" + (re.sub(r"[^0-9A-Za-z_]+", "_", category).strip("_").lower() or "other")


def _compile(where: str, raw: Mapping[str, Any]) -> FieldRule:
    from lxml import etree

    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(_KEYS))})")
    for key in ("category", "field", "css", "xpath", "attr", "pattern"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{where}: {key} must be a string")
    if "all" in raw and not isinstance(raw["all"], bool):
        raise ConfigError(f"{where}: all must be true or false")
    field = raw.get("field", "")
    if not _FIELD.match(field) or field.lower() == "url":
        raise ConfigError(f"{where}: field must be a name of letters, digits and _ (not url), got {field!r}")
    if ("css" in raw) == ("xpath" in raw):
        raise ConfigError(f"{where}: give one of css or xpath")
    if "css" in raw:
        from cssselect import GenericTranslator, SelectorError

        try:
            path = GenericTranslator().css_to_xpath(raw["css"])
        except SelectorError as exc:
            raise ConfigError(f"{where}: bad CSS selector {raw['css']!r}: {exc}") from None
    else:
        path = raw["xpath"]
    try:
        compiled = etree.XPath(path)
    except etree.XPathSyntaxError as exc:
        raise ConfigError(f"{where}: bad XPath {path!r}: {exc}") from None
    pattern = None
    if "pattern" in raw:
        try:
            pattern = re.compile(raw["pattern"])
        except re.error as exc:
            raise ConfigError(f"{where}: bad pattern {raw['pattern']!r}: {exc}") from None
    return FieldRule(field, raw.get("category", ALL_PAGES).strip(), raw.get("css") or raw["xpath"],
                     compiled, raw.get("attr", ""), pattern, raw.get("all", False))


def parse_rules(text: str, source: str = "rules") -> tuple[FieldRule, ...]:
    """The rules in a TOML text; a ConfigError naming `source` and the rule when one is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"rule"})
    if extra:
        raise ConfigError(f"{source}: unknown table {extra[0]!r}: write rules as [[rule]] tables")
    raws = data.get("rule", [])
    if not isinstance(raws, list) or not raws or not all(isinstance(r, dict) for r in raws):
        raise ConfigError(f"{source}: no rules: write each as a [[rule]] table with field and css or xpath")
    rules = [_compile(f"{source}: rule {n}", raw) for n, raw in enumerate(raws, 1)]
    seen: set[tuple[str, str]] = set()
    for n, rule in enumerate(rules, 1):
        key = (table_for(rule.category), rule.field.lower())
        if key in seen:
            raise ConfigError(f"{source}: rule {n}: field {rule.field!r} given twice for "
                              f"{rule.category or 'every page'}")
        seen.add(key)
    return tuple(rules)


def load_rules(path: Path) -> tuple[FieldRule, ...]:
    """The rules in a TOML file (see this module's docstring)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read rules file {path}: {exc}") from None
    return parse_rules(text, str(path))


def _value_text(found: Any, attr: str) -> str:
    """One XPath result as text: an element's attribute or collapsed text, a string, a number."""
    if isinstance(found, str):  # strings and attribute values (lxml's smart strings)
        return found.strip()
    if isinstance(found, bool):
        return "true" if found else "false"
    if isinstance(found, float):
        return str(int(found)) if found.is_integer() else repr(found)
    if attr:
        return str(found.get(attr) or "").strip()
    return _SPACE.sub(" ", found.text_content() if hasattr(found, "text_content") else "").strip()


def apply_rule(rule: FieldRule, tree: Any) -> str | None:
    """The rule's value on a parsed page: the first match as text (every match as a JSON list when
    `all`); None when nothing matches."""
    try:
        result = rule.xpath(tree)
    except Exception:  # an XPath that fails on this page (a function given a bad argument): no value
        return None
    found = result if isinstance(result, list) else [result]
    values: list[str] = []
    for one in found:
        text = _value_text(one, rule.attr)
        if text and rule.pattern is not None:
            match = rule.pattern.search(text)
            text = "" if match is None else (match.group(1) if match.groups() else match.group(0)).strip()
        if text:
            values.append(text)
            if not rule.all:
                break
    if not values:
        return None
    return json.dumps(values, ensure_ascii=False) if rule.all else values[0]


def categories_needed(rules: Iterable[FieldRule]) -> set[str]:
    """The categories the rules name (pages of other categories need no field rules)."""
    return {r.category for r in rules if r.category != ALL_PAGES}

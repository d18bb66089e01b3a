"""Crawl configuration: one frozen record, built from keyword arguments, a TOML file or the CLI, and
the one merge of settings from their layers (defaults < stored < file < flags).

Each setting is declared once, in model/settings.py, as a field of its section; `CrawlConfig` is the
whole a user writes (every section at once); each part of the crawler is handed only its section
(`cfg.fetch`, `cfg.politeness`, ...), a frozen record of the few settings it reads.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from harvestman.model.errors import ConfigError

# Every setting is declared there, once; the records are re-exported as this module's, where the code
# base and the library's users have always imported them from.
from harvestman.model.settings import DB_OUTAGE_LIMIT as DB_OUTAGE_LIMIT
from harvestman.model.settings import DEFAULT_USER_AGENT as DEFAULT_USER_AGENT
from harvestman.model.settings import (
    MACHINE_KEPT,
    MACHINE_LOCAL,
    RENDER_KINDS,
    RENDER_MODES,
    RUN_ONLY,
    SETTINGS,
    Setting,
    flag_name,
)
from harvestman.model.settings import MAX_OUTLINKS as MAX_OUTLINKS
from harvestman.model.settings import SECTIONS as SECTIONS
from harvestman.model.settings import DocumentSettings as DocumentSettings
from harvestman.model.settings import ExtensionSettings as ExtensionSettings
from harvestman.model.settings import FetchSettings as FetchSettings
from harvestman.model.settings import FocusSettings as FocusSettings
from harvestman.model.settings import LinkSettings as LinkSettings
from harvestman.model.settings import PolitenessSettings as PolitenessSettings
from harvestman.model.settings import RenderSettings as RenderSettings
from harvestman.model.settings import ResolveEntry as ResolveEntry
from harvestman.model.settings import RobotsSettings as RobotsSettings
from harvestman.model.settings import RunSettings as RunSettings
from harvestman.model.settings import StorageSettings as StorageSettings
from harvestman.model.sizes import parse_size

_S = TypeVar("_S")


@dataclass(frozen=True)
class CrawlConfig(RunSettings, LinkSettings, PolitenessSettings, RobotsSettings, StorageSettings,
                  FetchSettings, DocumentSettings, ExtensionSettings, RenderSettings, FocusSettings):
    """Every setting of a crawl or a download; defaults are the fast, polite path.

    Its fields are its sections' (model/settings.py declares each once), so `CrawlConfig(timeout=5)`,
    `cfg.timeout` and `cfg.fetch.timeout` are the same setting. Every field is checked at
    construction (a wrong type is a ConfigError naming the field), and the natural forms are taken:
    a str `out_dir`, lists for the tuple fields, "HOST:PORT:ADDR" strings for `resolve`, a dict for
    `extra_headers`.
    """

    def __post_init__(self) -> None:
        _convert(self)
        _validate(self)

    def replace(self, **changes: Any) -> CrawlConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # The sections, made on each access: a part of the crawler takes its own once, when it is built.

    @property
    def fetch(self) -> FetchSettings:
        """The settings of one request and its transport."""
        return _section(self, FetchSettings)

    @property
    def politeness(self) -> PolitenessSettings:
        """The settings of how hard one host is pressed, retries included."""
        return _section(self, PolitenessSettings)

    @property
    def robots(self) -> RobotsSettings:
        """The settings of robots.txt."""
        return _section(self, RobotsSettings)

    @property
    def links(self) -> LinkSettings:
        """The settings of which links are followed."""
        return _section(self, LinkSettings)

    @property
    def storage(self) -> StorageSettings:
        """The settings of the crawl folder and what is written there."""
        return _section(self, StorageSettings)

    @property
    def run(self) -> RunSettings:
        """The settings of one run as a whole."""
        return _section(self, RunSettings)

    @property
    def documents(self) -> DocumentSettings:
        """The settings of parsing documents other than HTML (feeds, PDF)."""
        return _section(self, DocumentSettings)

    @property
    def extensions(self) -> ExtensionSettings:
        """The plugins this crawl runs."""
        return _section(self, ExtensionSettings)

    @property
    def rendering(self) -> RenderSettings:
        """The settings of rendering pages in a browser."""
        return _section(self, RenderSettings)

    @property
    def focus(self) -> FocusSettings:
        """The settings of focused crawling."""
        return _section(self, FocusSettings)


def _section(cfg: CrawlConfig, kind: type[_S]) -> _S:
    return kind(*(getattr(cfg, name) for name in _SECTION_FIELDS[kind]))


def _out_of_range(s: Setting, value: Any) -> ConfigError | None:
    """A ConfigError when `value` is not among the setting's choices or outside its range."""
    if s.choices and value not in s.choices:
        return ConfigError(f"{s.name} must be one of {', '.join(c for c in s.choices if c)}, got {value!r}")
    low_ok = (s.at_least is None or value >= s.at_least) and (s.above is None or value > s.above)
    if low_ok and (s.at_most is None or value <= s.at_most):
        return None
    if s.bounds:
        wanted = s.bounds
    elif s.at_most is not None and s.at_least is not None:
        wanted = f"between {s.at_least:g} and {s.at_most:g}"
    elif s.at_most is not None:
        wanted = f"<= {s.at_most:g}"
    else:
        wanted = f">= {s.at_least:g}" if s.at_least is not None else f"> {s.above:g}"
    return ConfigError(f"{s.name} must be {wanted}, got {value!r}")


# The settings whose declaration has choices or a range, checked by `_out_of_range`.
_RANGED = tuple(s for s in SETTINGS if s.choices or s.at_least is not None or s.above is not None
                or s.at_most is not None)


def _validate(cfg: CrawlConfig) -> None:
    for setting in _RANGED:
        refused = _out_of_range(setting, getattr(cfg, setting.name))
        if refused:
            raise refused
    if cfg.min_interval > cfg.max_interval:
        raise ConfigError(f"min_interval ({cfg.min_interval:g} s) is above max_interval "
                          f"({cfg.max_interval:g} s)")
    for pattern in (*cfg.include, *cfg.exclude):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"invalid regular expression {pattern!r}: {exc}") from None
    for flag, nets in (("--allow-net", cfg.allow_net), ("--only-net", cfg.only_net)):
        for net in nets:
            try:
                ipaddress.ip_network(net.strip(), strict=False)
            except ValueError:
                raise ConfigError(f"{flag} wants a CIDR such as 127.1.0.0/16, got {net!r}") from None
    if cfg.proxy:
        check_proxy(cfg.proxy)
    if not cfg.user_agent.strip():
        raise ConfigError("user_agent must not be empty")
    for name in cfg.plugins:
        if not name.strip():
            raise ConfigError("plugins: a plugin name must not be empty")
    for pattern, spec in (("", cfg.stop_at), *cfg.stop_rules):
        if pattern:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"stop_rules: invalid regular expression {pattern!r}: {exc}") from None
        if spec or pattern:
            check_stop_spec(spec)
    _validate_render(cfg)


def _validate_render(cfg: CrawlConfig) -> None:
    for pattern, mode in cfg.render_rules:  # `render` itself is checked against its choices
        if mode not in RENDER_MODES:
            raise ConfigError(f"render mode must be one of {', '.join(RENDER_MODES)}, got {mode!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"render_rules: invalid regular expression {pattern!r}: {exc}") from None
    kind, sep, css = cfg.render_settle.partition(":")
    if not (cfg.render_settle == "idle" or (kind == "selector" and sep and css.strip())):
        raise ConfigError(f"render_settle must be idle or selector:CSS, got {cfg.render_settle!r}")
    for name in cfg.render_block:
        if name not in RENDER_KINDS:
            raise ConfigError(f"render_block: unknown resource kind {name!r} "
                              f"(one of {', '.join(RENDER_KINDS)})")


def check_stop_spec(spec: str) -> None:
    """Refuse a stop condition not of the forms head, selector:CSS, bytes:N (the CSS itself is
    checked when the crawl starts, by fetch/stop.py)."""
    kind, sep, value = spec.strip().partition(":")
    if kind == "head" and not sep:
        return
    if kind == "bytes" and sep and parse_size(value, f"stop condition {spec!r}") > 0:
        return
    if kind == "selector" and value.strip():
        return
    raise ConfigError(f"stop condition {spec!r}: expected head, selector:CSS or bytes:SIZE")


PROXY_SCHEMES = ("http", "https", "socks5")
# A header's name is an RFC 9110 token; its value may hold no line break (it would start a header of
# its own, or a body: request splitting) nor a NUL.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE_BAD = re.compile(r"[\r\n\x00]")


def check_proxy(url: str) -> None:
    """Refuse a proxy URL that is not SCHEME://[USER:PASSWORD@]HOST:PORT with a scheme we support.

    socks5h (and socks4a) let the proxy resolve the target's name, so the address guard would never
    see the address connected to; they are refused rather than taken unguarded."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme in ("socks5h", "socks4", "socks4a"):
        raise ConfigError(f"--proxy {scheme}:// is not supported: the crawler must resolve each target "
                          "itself for the address guard to judge it (use socks5://)")
    if scheme not in PROXY_SCHEMES:
        raise ConfigError(f"--proxy wants http://, https:// or socks5://HOST:PORT, got {url!r}")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"--proxy {url!r}: the port is not a number from 1 to 65535") from None
    if not parts.hostname or port is None or (parts.path not in ("", "/")) or parts.query:
        raise ConfigError(f"--proxy wants SCHEME://HOST:PORT (a port, no path), got {url!r}")


def parse_header(text: str) -> tuple[str, str]:
    """A `Name: value` header line as (name, value), checked as `check_header` does."""
    name, sep, value = text.partition(":")
    if not sep:
        raise ConfigError(f"--header wants 'NAME: VALUE', got {text[:200]!r}")
    return check_header(name.strip(), value.strip())


def check_header(name: str, value: str) -> tuple[str, str]:
    """(name, value), or a ConfigError when the name is no header name or the value holds a line break."""
    if not _HEADER_NAME.fullmatch(name):
        raise ConfigError(f"--header: {name[:100]!r} is not a header name (letters, digits and "
                          "!#$%&'*+-.^_`|~ only)")
    if _HEADER_VALUE_BAD.search(value):
        raise ConfigError(f"--header {name}: the value may not hold a line break (CR, LF) or NUL")
    return name, value


def parse_resolve(spec: str) -> ResolveEntry:
    """Parse `HOST:PORT:ADDR` (ADDR may be a bracketed IPv6 address)."""
    match = re.fullmatch(r"([^:\s]+):(\d{1,5}):\[?([0-9A-Fa-f:.]+)\]?", spec.strip())
    if not match:
        raise ConfigError(f"--resolve wants HOST:PORT:ADDR, got {spec!r}")
    host, port, addr = match.group(1), int(match.group(2)), match.group(3)
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        raise ConfigError(f"--resolve address {addr!r} is not an IP address") from None
    if not 0 < port < 65536:
        raise ConfigError(f"--resolve port {port} is out of range")
    return ResolveEntry(host.lower(), port, addr)


# One converter per field type: the value as the field holds it, or a ConfigError. A program, a TOML
# file and the command line can all pass anything, so every field is checked once, at construction.


def _refuse(name: str, wanted: str, value: Any) -> ConfigError:
    shown = repr(value)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    return ConfigError(f"setting {name!r} wants {wanted}, got {shown} ({type(value).__name__})")


def _to_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _refuse(name, "true or false", value)


def _to_int(name: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _refuse(name, "an integer", value)


def _to_size(name: str, value: Any) -> int:
    """A size setting: a whole number of bytes, or a size as people write it ("10MiB")."""
    if isinstance(value, str):
        return parse_size(value, f"setting {name!r}")
    return _to_int(name, value)


def _to_float(name: str, value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    raise _refuse(name, "a number", value)


def _to_str(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _refuse(name, "a string", value)


def _to_path(name: str, value: Any) -> Path:
    if isinstance(value, str | os.PathLike):
        return Path(value)
    raise _refuse(name, "a path", value)


def _items(name: str, value: Any, wanted: str, single: tuple[type, ...]) -> list[Any]:
    """A list or tuple as a list; a lone item (a TOML `seeds = "..."`) as a list of one."""
    if isinstance(value, single):
        return [value]
    if isinstance(value, list | tuple):
        return list(value)
    raise _refuse(name, wanted, value)


def _to_strings(name: str, value: Any) -> tuple[str, ...]:
    wanted = "a list of strings"
    items = _items(name, value, wanted, (str,))
    for item in items:
        if not isinstance(item, str):
            raise _refuse(name, wanted, value)
    return tuple(items)


def _to_resolves(name: str, value: Any) -> tuple[ResolveEntry, ...]:
    wanted = "a list of HOST:PORT:ADDR strings"
    entries = []
    for item in _items(name, value, wanted, (str, ResolveEntry)):
        if isinstance(item, str):
            item = parse_resolve(item)
        if not isinstance(item, ResolveEntry):
            raise _refuse(name, wanted, value)
        entries.append(item)
    return tuple(entries)


def _to_headers(name: str, value: Any) -> tuple[tuple[str, str], ...]:
    wanted = "a table of header names and values (strings), or 'NAME: VALUE' lines"
    pairs = list(value.items()) if isinstance(value, Mapping) else _items(name, value, wanted, ())
    checked = []
    for pair in pairs:
        if isinstance(pair, str) and name == "extra_headers":  # --header 'Name: value'
            checked.append(parse_header(pair))
            continue
        if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise _refuse(name, wanted, value)
        checked.append(check_header(pair[0], pair[1]) if name == "extra_headers" else (pair[0], pair[1]))
    return tuple(checked)


# The field types of the settings (model/settings.py) -> their converters.
_CONVERTERS: dict[Any, Callable[[str, Any], Any]] = {
    bool: _to_bool,
    int: _to_int,
    float: _to_float,
    str: _to_str,
    Path: _to_path,
    tuple[str, ...]: _to_strings,
    tuple[ResolveEntry, ...]: _to_resolves,
    tuple[tuple[str, str], ...]: _to_headers,
}
_FIELD_CONVERTERS = tuple((s.name, _to_size if s.size else _CONVERTERS[s.kind]) for s in SETTINGS)
_FIELDS = frozenset(s.name for s in SETTINGS)
# Setting name -> the section it belongs to.
SECTION_OF = {s.name: s.section for s in SETTINGS}
_SECTION_FIELDS = {kind: tuple(f.name for f in dataclasses.fields(kind)) for kind in SECTIONS.values()}


def _convert(cfg: CrawlConfig) -> None:
    """Check every field's type, turning the forms a caller may pass (str, list, dict) into the field's."""
    for name, convert in _FIELD_CONVERTERS:
        object.__setattr__(cfg, name, convert(name, getattr(cfg, name)))


def flat_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a mapping by their CrawlConfig names: dashed names (`max-depth`) and section
    tables (`{"fetch": {"timeout": 5}}`, a TOML `[fetch]`) taken apart; a setting given twice, in the
    wrong section or unknown is a ConfigError naming it."""
    flat: dict[str, Any] = {}

    def put(raw_key: Any, value: Any, section: str = "") -> None:
        key = str(raw_key).replace("-", "_")
        if key not in _FIELDS:
            where = f" in [{section}]" if section else ""
            raise ConfigError(f"unknown setting {raw_key!r}{where}")
        if section and SECTION_OF[key] != section:
            raise ConfigError(f"setting {key!r} belongs in [{SECTION_OF[key]}], not in [{section}]")
        if key in flat:
            raise ConfigError(f"setting {key!r} is given twice")
        flat[key] = value

    for raw_key, value in values.items():
        section = str(raw_key)
        if section in SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(f"[{section}] must be a table of settings, got {value!r}")
            for name, item in value.items():
                put(name, item, section)
        else:
            put(raw_key, value)
    return flat


def config_from_mapping(values: Mapping[str, Any], base: CrawlConfig | None = None) -> CrawlConfig:
    """Build a config from a mapping (a TOML file or CLI options): names as in CrawlConfig (or
    dashed), flat or in section tables (`[fetch]`, `[politeness]`, ...)."""
    return dataclasses.replace(base or CrawlConfig(), **flat_settings(values))


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML config file as flat settings; they may sit at the top, under [crawl], or in section
    tables ([fetch], [politeness], ... at the top or under [crawl])."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8 by its specification
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} "
                          f"at offset {exc.start}): save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    crawl = data.pop("crawl", {})
    if not isinstance(crawl, dict):
        raise ConfigError(f"config file {path}: [crawl] must be a table")
    try:
        top, nested = flat_settings(data), flat_settings(crawl)
    except ConfigError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    twice = sorted(top.keys() & nested.keys())
    if twice:
        raise ConfigError(f"config file {path}: setting {twice[0]!r} is given twice")
    return top | nested


def _json_ready(value: Any) -> Any:
    if isinstance(value, tuple):  # of strings, of (name, value) header pairs, or of --resolve pins
        return [e.curl_form() if isinstance(e, ResolveEntry) else list(e) if isinstance(e, tuple) else e
                for e in value]
    return str(value) if isinstance(value, Path) else value


def crawl_settings(cfg: CrawlConfig) -> dict[str, Any]:
    """The crawl-wide settings of `cfg` as JSON-ready values (what `config_from_mapping` reads back)."""
    return {name: _json_ready(getattr(cfg, name)) for name in sorted(_FIELDS - MACHINE_LOCAL)}


def local_settings(cfg: CrawlConfig) -> dict[str, Any]:
    """The settings of `cfg` the machine owning the crawl folder keeps with the crawl, JSON-ready."""
    return {name: _json_ready(getattr(cfg, name)) for name in MACHINE_KEPT}


def overlay(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of `layers` as one flat mapping (each read as `flat_settings` reads it), a later
    layer's value winning over an earlier's."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(flat_settings(layer))
    return merged


def merge_settings(stored: Mapping[str, Any], *given: Mapping[str, Any],
                   same_run: bool = False) -> tuple[CrawlConfig, list[str]]:
    """The one merge of a run's settings, every path's (a new or resumed crawl, a worker, a cycle
    step, a served crawl, `download()`, a replay): defaults < the settings stored with the crawl ({}
    for a new one) < each of `given` in turn (a config file's, the command line's or a request's,
    then what the command itself sets: its folder, its database). The stored run-only settings are
    left out unless `same_run` (a worker joining the run they belong to). With a note for each
    stored setting that `given` changed."""
    kept = {name: value for name, value in stored.items() if same_run or name not in RUN_ONLY}
    changes = overlay(*given)
    after = config_from_mapping({**kept, **changes})
    changed = sorted(name for name in changes if name in kept and name not in RUN_ONLY)
    if not changed:
        return after, []
    before, notes = config_from_mapping(kept), []
    for name in changed:
        if getattr(before, name) != getattr(after, name):
            old, new = (shown_setting(name, _json_ready(getattr(cfg, name))) for cfg in (before, after))
            notes.append(f"{flag_name(name)}: {new!r} replaces the crawl's stored {old!r}")
    return after, notes


def shown_setting(name: str, value: Any) -> Any:
    """A setting's value as a message may show it: a proxy's password hidden."""
    if name == "proxy" and isinstance(value, str) and "@" in value:
        parts = urlsplit(value)
        if parts.password is not None:
            return value.replace(f":{parts.password}@", ":***@", 1)
    return value

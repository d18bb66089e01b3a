"""Crawl configuration: one frozen record, built from keyword arguments, a TOML file or the CLI."""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError

SCOPES = ("host", "domain", "any")
HOST_KEYS = ("host", "domain", "ip")
ORDERINGS = ("bfs", "dfs", "score")  # policy/ordering.py
DEFAULT_USER_AGENT = "harvestman/0.1 (+https://pypi.org/project/harvestman/)"


@dataclass(frozen=True, slots=True)
class ResolveEntry:
    """A `--resolve HOST:PORT:ADDR` pin, as curl takes it."""

    host: str
    port: int
    address: str

    def curl_form(self) -> str:
        """The string libcurl's CURLOPT_RESOLVE expects."""
        addr = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.host}:{self.port}:{addr}"


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Every setting of a crawl or a download; defaults are the fast, polite path.

    Every field is checked at construction (a wrong type is a ConfigError naming the field), and the
    natural forms are taken: a str `out_dir`, lists for the tuple fields, "HOST:PORT:ADDR" strings
    for `resolve`, a dict for `extra_headers`.
    """

    seeds: tuple[str, ...] = ()
    out_dir: Path = Path("harvestman-out")
    max_pages: int = 0  # 0: no limit
    max_pages_per_host: int = 100_000  # a host's page budget in one run (a spider trap's end); 0: none
    max_depth: int = 25
    scope: str = "host"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    concurrency: int = 100
    per_host: int = 2
    workers: int = 0  # processes sharing the crawl; 0: one per core
    delay: float = 0.0
    retries: int = 3
    timeout: float = 60.0
    connect_timeout: float = 15.0
    low_speed_limit: int = 100  # bytes/s below which ...
    low_speed_time: float = 30.0  # ... for this long, the fetch is aborted
    max_size: int = 10 * 1024 * 1024
    user_agent: str = DEFAULT_USER_AGENT
    resolve: tuple[ResolveEntry, ...] = ()
    allow_net: tuple[str, ...] = ()
    resume: bool = False
    follow_links: bool = True  # False for `download`: fetch the list only
    host_key: str = "host"
    crawl_delay_cap: float = 30.0  # robots.txt Crawl-delay is honoured up to this
    retry_after_cap: float = 3600.0  # Retry-After is honoured up to this
    # When every URL left waits longer than this (Retry-After, circuit breaker, retry back-off), the
    # run ends; --resume continues them.
    max_wait: float = 600.0
    # The order of a host's queue: "bfs" (shallower first), "dfs" (deeper first) or "score" (a
    # link scorer's higher scores first; policy/ordering.py).
    ordering: str = "bfs"
    revisit_after: float = 0.0  # seconds after a fetch to fetch the URL again; 0: never
    robots_ttl: float = 24 * 3600.0
    obey_robots: bool = True
    verify_tls: bool = True
    max_redirects: int = 10
    max_url_length: int = 2048
    max_outlinks: int = 1000  # per page
    warc_max_bytes: int = 1024 * 1024 * 1024
    lease_seconds: float = 300.0
    db: str = ""  # the crawl database: '' for OUT_DIR/crawl.db, a path, sqlite:///PATH or postgresql://...
    quiet: bool = False
    log_json: bool = False
    extra_headers: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        _convert(self)
        _validate(self)

    def replace(self, **changes: Any) -> CrawlConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


def _validate(cfg: CrawlConfig) -> None:
    def positive(name: str, value: float, allow_zero: bool = False) -> None:
        if value < 0 or (value == 0 and not allow_zero):
            raise ConfigError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")

    positive("max_pages", cfg.max_pages, allow_zero=True)
    positive("max_pages_per_host", cfg.max_pages_per_host, allow_zero=True)
    positive("max_depth", cfg.max_depth, allow_zero=True)
    positive("concurrency", cfg.concurrency)
    if cfg.workers < 0 or cfg.workers > 256:
        raise ConfigError(f"workers must be between 0 (one per core) and 256, got {cfg.workers}")
    positive("per_host", cfg.per_host)
    positive("delay", cfg.delay, allow_zero=True)
    positive("retries", cfg.retries, allow_zero=True)
    positive("timeout", cfg.timeout)
    positive("connect_timeout", cfg.connect_timeout)
    positive("max_size", cfg.max_size)
    positive("max_redirects", cfg.max_redirects, allow_zero=True)
    positive("warc_max_bytes", cfg.warc_max_bytes)
    positive("lease_seconds", cfg.lease_seconds)
    positive("max_wait", cfg.max_wait, allow_zero=True)
    positive("revisit_after", cfg.revisit_after, allow_zero=True)
    if cfg.scope not in SCOPES:
        raise ConfigError(f"scope must be one of {', '.join(SCOPES)}, got {cfg.scope!r}")
    if cfg.ordering not in ORDERINGS:
        raise ConfigError(f"ordering must be one of {', '.join(ORDERINGS)}, got {cfg.ordering!r}")
    if cfg.host_key not in HOST_KEYS:
        raise ConfigError(f"host_key must be one of {', '.join(HOST_KEYS)}, got {cfg.host_key!r}")
    for pattern in (*cfg.include, *cfg.exclude):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"invalid regular expression {pattern!r}: {exc}") from None
    for net in cfg.allow_net:
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError:
            raise ConfigError(f"--allow-net wants a CIDR such as 127.1.0.0/16, got {net!r}") from None
    if not cfg.user_agent.strip():
        raise ConfigError("user_agent must not be empty")


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
    wanted = "a table of header names and values (strings)"
    pairs = list(value.items()) if isinstance(value, Mapping) else _items(name, value, wanted, ())
    for pair in pairs:
        if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise _refuse(name, wanted, value)
    return tuple((key, text) for key, text in pairs)


_CONVERTERS: dict[str, Callable[[str, Any], Any]] = {
    "bool": _to_bool,
    "int": _to_int,
    "float": _to_float,
    "str": _to_str,
    "Path": _to_path,
    "tuple[str, ...]": _to_strings,
    "tuple[ResolveEntry, ...]": _to_resolves,
    "tuple[tuple[str, str], ...]": _to_headers,
}
_FIELD_CONVERTERS = tuple((f.name, _CONVERTERS[str(f.type)]) for f in dataclasses.fields(CrawlConfig))
_FIELDS = frozenset(name for name, _ in _FIELD_CONVERTERS)


def _convert(cfg: CrawlConfig) -> None:
    """Check every field's type, turning the forms a caller may pass (str, list, dict) into the field's."""
    for name, convert in _FIELD_CONVERTERS:
        object.__setattr__(cfg, name, convert(name, getattr(cfg, name)))


def config_from_mapping(values: Mapping[str, Any], base: CrawlConfig | None = None) -> CrawlConfig:
    """Build a config from a mapping (a TOML table or CLI options), names as in CrawlConfig (or dashed)."""
    changes: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = str(raw_key).replace("-", "_")
        if key not in _FIELDS:
            raise ConfigError(f"unknown setting {raw_key!r}")
        changes[key] = value
    return dataclasses.replace(base or CrawlConfig(), **changes)


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML config file; its settings may sit at the top or under [crawl]."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    table = data.get("crawl", data)
    if not isinstance(table, dict):
        raise ConfigError(f"config file {path}: [crawl] must be a table")
    return table

"""Crawl configuration: one frozen record, built from keyword arguments, a TOML file or the CLI."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvestman.errors import ConfigError

SCOPES = ("host", "domain", "any")
HOST_KEYS = ("host", "domain", "ip")
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
    """Every setting of a crawl or a download; defaults are the fast, polite path."""

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
    robots_ttl: float = 24 * 3600.0
    obey_robots: bool = True
    verify_tls: bool = True
    max_redirects: int = 10
    max_url_length: int = 2048
    max_outlinks: int = 1000  # per page
    warc_max_bytes: int = 1024 * 1024 * 1024
    lease_seconds: float = 300.0
    quiet: bool = False
    log_json: bool = False
    extra_headers: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
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
    if cfg.scope not in SCOPES:
        raise ConfigError(f"scope must be one of {', '.join(SCOPES)}, got {cfg.scope!r}")
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


_FIELDS = {f.name: f for f in dataclasses.fields(CrawlConfig)}


_SCALAR_KINDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "bool": ("true or false", (bool,)),
    "int": ("an integer", (int,)),
    "float": ("a number", (int, float)),
    "str": ("a string", (str,)),
    "Path": ("a path", (str, Path)),
}
_LISTS = ("seeds", "include", "exclude", "allow_net", "resolve")


def _check_scalar(raw_key: str, key: str, value: Any) -> None:
    """Refuse a value of the wrong type (a TOML file can hold anything), so it fails here, clearly."""
    kind = _SCALAR_KINDS.get(str(_FIELDS[key].type))
    if kind is None:
        return
    name, types = kind
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise ConfigError(f"setting {raw_key!r} wants {name}, got {value!r}")


def config_from_mapping(values: dict[str, Any], base: CrawlConfig | None = None) -> CrawlConfig:
    """Build a config from a mapping (a TOML table or CLI options), names as in CrawlConfig."""
    changes: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = raw_key.replace("-", "_")
        if key not in _FIELDS:
            raise ConfigError(f"unknown setting {raw_key!r}")
        if key in _LISTS:
            if isinstance(value, str | ResolveEntry):
                value = (value,)
            if not isinstance(value, list | tuple):
                raise ConfigError(f"setting {raw_key!r} wants a list of strings, got {value!r}")
        if key == "resolve":
            value = tuple(v if isinstance(v, ResolveEntry) else parse_resolve(str(v)) for v in value)
        elif key == "out_dir":
            _check_scalar(raw_key, key, value)
            value = Path(value)
        elif key in _LISTS:
            value = tuple(str(v) for v in value)
        elif key == "extra_headers":
            try:
                value = tuple((str(k), str(v)) for k, v in dict(value).items())
            except (TypeError, ValueError):
                raise ConfigError(f"setting {raw_key!r} wants a table of header names and values") from None
        else:
            _check_scalar(raw_key, key, value)
        changes[key] = value
    try:
        return dataclasses.replace(base or CrawlConfig(), **changes)
    except TypeError as exc:
        raise ConfigError(f"invalid setting: {exc}") from None


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

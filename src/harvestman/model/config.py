"""Crawl configuration: one frozen record, built from keyword arguments, a TOML file or the CLI.

Each setting's help, option, scope and API rule are declared in model/settings.py.

`CrawlConfig` is the whole a user writes; each part of the crawler is handed only its section
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from harvestman.model.errors import ConfigError
from harvestman.model.settings import (  # the choices and scopes are declared with each setting
    HOST_KEYS,
    HTTP2_MODES,
    MACHINE_KEPT,
    MACHINE_LOCAL,
    ORDERINGS,
    RECRAWL_STRATEGIES,
    RENDER_KINDS,
    RENDER_MODES,
    RUN_ONLY,
    SCHEDULES,
    SCOPES,
    SCREENSHOT_MODES,
    SITEMAP_MODES,
    SIZE_SETTINGS,
    flag_name,
)
from harvestman.model.sizes import parse_size

DEFAULT_USER_AGENT = "harvestman/0.1 (+https://pypi.org/project/harvestman/)"
# Distinct links kept per page. The index pages of documentation sites carry 13,000-17,000 (Python's
# genindex-all.html), so 20,000 keeps them whole with room to spare, while bounding what one page
# adds to the crawl database and to memory (~250 bytes a link) on a page made of nothing but links.
MAX_OUTLINKS = 20_000
# Seconds a lost crawl database (PostgreSQL) is waited for before the run ends (db_outage_limit).
DB_OUTAGE_LIMIT = 300.0
_S = TypeVar("_S")


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


# ----- sections: what each part of the crawler reads ------------------------------------------
# Made by CrawlConfig (which checks every value), never by hand; each CrawlConfig field sits in
# exactly one section (tests/test_config.py checks it).


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """One request and its transport: deadlines, sizes, identity, TLS, addresses, extra headers."""

    timeout: float
    connect_timeout: float
    low_speed_limit: int
    low_speed_time: float
    max_size: int
    max_redirects: int
    user_agent: str
    extra_headers: tuple[tuple[str, str], ...]
    resolve: tuple[ResolveEntry, ...]
    allow_net: tuple[str, ...]
    verify_tls: bool
    http2: str = "auto"
    only_net: tuple[str, ...] = ()
    proxy: str = ""
    stop_at: str = ""
    stop_rules: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class PolitenessSettings:
    """How hard one host is pressed: connections, spacing, its page budget, retries and waits."""

    per_host: int
    delay: float
    crawl_delay_cap: float
    retries: int
    retry_after_cap: float
    max_wait: float
    max_pages_per_host: int
    host_key: str


@dataclass(frozen=True, slots=True)
class RobotsSettings:
    """Whether robots.txt is obeyed, and how long a fetched one is trusted."""

    obey_robots: bool
    robots_ttl: float


@dataclass(frozen=True, slots=True)
class LinkSettings:
    """Which links a page gives the crawl (scope, patterns, depth, caps), in which order they are
    fetched, and when again."""

    follow_links: bool
    scope: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    max_depth: int
    max_url_length: int
    max_outlinks: int
    link_anchors: bool  # the link graph keeps anchor texts
    ordering: str
    revisit_after: float
    schedule: str
    fetch_interval: float
    min_interval: float
    max_interval: float
    sitemaps: str  # "robots", "probe" or "off" (crawl/sitemaps.py)
    recrawl_strategy: str  # how `harvestman recrawl` checks a page again (crawl/recrawl.py); '' off


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """Where a crawl is kept: its folder, the WARC files' size, how long a lease lasts."""

    out_dir: Path
    warc_max_bytes: int
    lease_seconds: float
    db: str  # the crawl database: '' for out_dir/crawl.db
    db_outage_limit: float
    segment_expiry: float


@dataclass(frozen=True, slots=True)
class RunSettings:
    """One run of the command: its seeds, how much it does at once and in all, what it prints."""

    seeds: tuple[str, ...]
    resume: bool
    max_pages: int
    concurrency: int
    workers: int
    quiet: bool
    log_json: bool
    metrics_port: int


@dataclass(frozen=True, slots=True)
class DocumentSettings:
    """How documents other than HTML are parsed for their links (feeds, PDF: crawl/documents.py)."""

    pdf_max_pages: int
    pdf_max_bytes: int


@dataclass(frozen=True, slots=True)
class ExtensionSettings:
    """Which installed plugins (Python entry points, crawl/plugins.py) a crawl runs: none unless named."""

    plugins: tuple[str, ...]
    features: bool  # each HTML page's features (text, sentences, n-grams...: index/features.py)
    markdown: bool  # each HTML page's main content as Markdown, with provenance (index/markdown.py)
    markdown_chunk_size: int  # characters a chunk of that Markdown holds at most; 0: no chunks


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """Which pages a browser renders and how (fetch/browser.py): never by default."""

    render: str  # "never", "auto" (pages that look like an application shell), "always"
    render_rules: tuple[tuple[str, str], ...]  # URL pattern -> mode, the first match wins over `render`
    render_concurrency: int  # browser contexts (pages rendered at once)
    render_timeout: float  # seconds a page has to load and settle
    render_settle: str  # "idle" (no request in flight for a moment) or "selector:CSS"
    render_recycle: int  # pages a browser context renders before a fresh one replaces it
    render_block: tuple[str, ...]  # resource kinds never fetched for a page
    render_third_party: bool  # let a page fetch from hosts other than its own
    render_max_bytes: int  # bytes a page's sub-resources may total
    screenshot: str  # "", "viewport" or "full": a PNG of each rendered page
    browser_path: str  # the Chromium binary Playwright drives (never a downloaded one)


@dataclass(frozen=True, slots=True)
class FocusSettings:
    """Focused crawling (seed 004: policy/focus.py, crawl/focusfile.py): off unless a focus file is named."""

    focus_file: str  # a focus file (TOML: mode, topics and their examples); '' for an unfocused crawl
    keep_off_topic: bool  # hard focus: store off-topic pages too (their links are not followed either way)


# Section name (a CrawlConfig property, and a TOML table) -> its record.
SECTIONS: dict[str, type[Any]] = {
    "fetch": FetchSettings,
    "politeness": PolitenessSettings,
    "robots": RobotsSettings,
    "links": LinkSettings,
    "storage": StorageSettings,
    "run": RunSettings,
    "documents": DocumentSettings,
    "extensions": ExtensionSettings,
    "rendering": RenderSettings,
    "focus": FocusSettings,
}


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
    # Confine every connection (each hop, each rendered page's request) to these ranges; none: no
    # confinement. It narrows only: the private-address guard still applies inside them.
    only_net: tuple[str, ...] = ()
    # Every request through this proxy (http://, https://, socks5://); '' connects directly. The
    # crawler still resolves each target and judges its address (fetch/transport.py).
    proxy: str = ""
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
    # How re-visits are spaced (policy/schedule.py): "fixed" keeps the interval, "adaptive" shrinks
    # it when a page changed and grows it when not (Nutch's AdaptiveFetchSchedule), within
    # [min_interval, max_interval]. The crawl cycle's steps schedule every fetched URL again after
    # fetch_interval (Nutch's db.fetch.interval.default); the continuous crawl only with revisit_after.
    schedule: str = "fixed"
    fetch_interval: float = 30 * 86400.0
    min_interval: float = 60.0
    max_interval: float = 365 * 86400.0
    # Sitemaps read: "robots" (those robots.txt names), "probe" (also /sitemap.xml on each host), "off".
    sitemaps: str = "robots"
    robots_ttl: float = 24 * 3600.0
    obey_robots: bool = True
    verify_tls: bool = True
    max_redirects: int = 10
    max_url_length: int = 2048
    max_outlinks: int = MAX_OUTLINKS  # links kept per page
    link_anchors: bool = False  # the link graph keeps each link's anchor text (costs parse CPU)
    warc_max_bytes: int = 1024 * 1024 * 1024
    lease_seconds: float = 300.0
    db: str = ""  # the crawl database: '' for OUT_DIR/crawl.db, a path, sqlite:///PATH or postgresql://...
    db_outage_limit: float = DB_OUTAGE_LIMIT
    # Seconds the URLs of a generated segment are held (not generated or leased again) unless its
    # updatedb reports them first (Nutch's crawl.gen.delay).
    segment_expiry: float = 7 * 86400.0
    quiet: bool = False
    log_json: bool = False
    # A port on 127.0.0.1 serving the run's metrics as Prometheus text (launch/metrics.py); 0: none, and
    # no metric collected.
    metrics_port: int = 0
    extra_headers: tuple[tuple[str, str], ...] = field(default=())
    # A PDF is parsed for its links (and text) up to this many pages, and only when it is at most
    # this many bytes: a hostile PDF costs the crawl a bounded parse (crawl/documents.py).
    pdf_max_pages: int = 100
    pdf_max_bytes: int = 10 * 1024 * 1024
    # Installed plugins (entry points, crawl/plugins.py) this crawl runs, by name; none by default.
    plugins: tuple[str, ...] = ()
    # Partial fetches (fetch/partial.py): "auto" takes the h2 transport for a stop condition where
    # ALPN says h2, "always" for every request there, "never" not at all (HTTP/1.1 only).
    http2: str = "auto"
    # Read each page only until this holds: "head", "selector:CSS", "bytes:N"; '' reads it whole.
    stop_at: str = ""
    # Per URL pattern (a regular expression searched in the URL), a stop condition; the first
    # pattern that matches wins over stop_at.
    stop_rules: tuple[tuple[str, str], ...] = field(default=())
    # Each HTML page's features (visible text, sentences, tag counts, n-grams, language, headings:
    # index/features.py) into DIR/features/; off by default, as they cost ~3.7 ms of CPU a page
    # (bench/feature_costs.py).
    features: bool = False
    # Each HTML page's main content as Markdown with its provenance, and in chunks of at most
    # markdown_chunk_size characters, into DIR/markdown/; off by default, as it costs ~4-9 ms of CPU a
    # page (bench/markdown_quality.py). `harvestman export DIR --what markdown` does it afterwards.
    markdown: bool = False
    markdown_chunk_size: int = 2_000
    # How a re-fetch is checked ("conditional", "size", "sitemap", "full"; crawl/recrawl.py): set by
    # `harvestman recrawl` for its segment; '' (the default crawl) costs nothing per page.
    recrawl_strategy: str = ""
    # Pages rendered in a browser (fetch/browser.py; the `render` extra installs Playwright, which
    # drives the system's Chromium): "never" (default: no browser is started, nothing imported),
    # "auto" (pages whose HTML looks like an application shell), "always" (every HTML page).
    render: str = "never"
    render_rules: tuple[tuple[str, str], ...] = field(default=())
    render_concurrency: int = 2
    render_timeout: float = 30.0
    render_settle: str = "idle"
    render_recycle: int = 50
    render_block: tuple[str, ...] = ("image", "media", "font")
    render_third_party: bool = False
    render_max_bytes: int = 20 * 1024 * 1024
    screenshot: str = ""
    browser_path: str = "/usr/bin/chromium"
    # Focused crawling (seed 004): a focus file's topics and mode (docs/focus.md); '' crawls unfocused,
    # at no cost a page. Hard focus stores off-topic pages only with keep_off_topic.
    focus_file: str = ""
    keep_off_topic: bool = False

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
    if not 0 <= cfg.metrics_port <= 65535:
        raise ConfigError(f"metrics_port must be a TCP port (1-65535), or 0 for none, got {cfg.metrics_port}")
    positive("delay", cfg.delay, allow_zero=True)
    positive("retries", cfg.retries, allow_zero=True)
    positive("timeout", cfg.timeout)
    positive("connect_timeout", cfg.connect_timeout)
    positive("max_size", cfg.max_size)
    positive("max_redirects", cfg.max_redirects, allow_zero=True)
    positive("warc_max_bytes", cfg.warc_max_bytes)
    positive("lease_seconds", cfg.lease_seconds)
    positive("db_outage_limit", cfg.db_outage_limit)
    positive("segment_expiry", cfg.segment_expiry)
    positive("max_wait", cfg.max_wait, allow_zero=True)
    positive("revisit_after", cfg.revisit_after, allow_zero=True)
    for name in ("fetch_interval", "min_interval", "max_interval"):
        positive(name, getattr(cfg, name))
    if cfg.schedule not in SCHEDULES:
        raise ConfigError(f"schedule must be one of {', '.join(SCHEDULES)}, got {cfg.schedule!r}")
    if cfg.min_interval > cfg.max_interval:
        raise ConfigError(f"min_interval ({cfg.min_interval:g} s) is above max_interval "
                          f"({cfg.max_interval:g} s)")
    if cfg.scope not in SCOPES:
        raise ConfigError(f"scope must be one of {', '.join(SCOPES)}, got {cfg.scope!r}")
    if cfg.ordering not in ORDERINGS:
        raise ConfigError(f"ordering must be one of {', '.join(ORDERINGS)}, got {cfg.ordering!r}")
    if cfg.sitemaps not in SITEMAP_MODES:
        raise ConfigError(f"sitemaps must be one of {', '.join(SITEMAP_MODES)}, got {cfg.sitemaps!r}")
    if cfg.recrawl_strategy not in RECRAWL_STRATEGIES:
        raise ConfigError(f"recrawl strategy must be one of {', '.join(RECRAWL_STRATEGIES[1:])}, "
                          f"got {cfg.recrawl_strategy!r}")
    if cfg.host_key not in HOST_KEYS:
        raise ConfigError(f"host_key must be one of {', '.join(HOST_KEYS)}, got {cfg.host_key!r}")
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
    positive("pdf_max_pages", cfg.pdf_max_pages)
    positive("pdf_max_bytes", cfg.pdf_max_bytes)
    positive("markdown_chunk_size", cfg.markdown_chunk_size, allow_zero=True)
    for name in cfg.plugins:
        if not name.strip():
            raise ConfigError("plugins: a plugin name must not be empty")
    if cfg.http2 not in HTTP2_MODES:
        raise ConfigError(f"http2 must be one of {', '.join(HTTP2_MODES)}, got {cfg.http2!r}")
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
    for pattern, mode in (("", cfg.render), *cfg.render_rules):
        if mode not in RENDER_MODES:
            raise ConfigError(f"render mode must be one of {', '.join(RENDER_MODES)}, got {mode!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"render_rules: invalid regular expression {pattern!r}: {exc}") from None
    if cfg.render_concurrency < 1 or cfg.render_concurrency > 64:
        raise ConfigError(f"render_concurrency must be between 1 and 64, got {cfg.render_concurrency}")
    if cfg.render_timeout <= 0:
        raise ConfigError(f"render_timeout must be > 0, got {cfg.render_timeout!r}")
    kind, sep, css = cfg.render_settle.partition(":")
    if not (cfg.render_settle == "idle" or (kind == "selector" and sep and css.strip())):
        raise ConfigError(f"render_settle must be idle or selector:CSS, got {cfg.render_settle!r}")
    if cfg.render_recycle < 1:
        raise ConfigError(f"render_recycle must be >= 1, got {cfg.render_recycle}")
    for name in cfg.render_block:
        if name not in RENDER_KINDS:
            raise ConfigError(f"render_block: unknown resource kind {name!r} "
                              f"(one of {', '.join(RENDER_KINDS)})")
    if cfg.render_max_bytes <= 0:
        raise ConfigError(f"render_max_bytes must be > 0, got {cfg.render_max_bytes}")
    if cfg.screenshot not in SCREENSHOT_MODES:
        raise ConfigError(f"screenshot must be viewport or full, got {cfg.screenshot!r}")


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
_FIELD_CONVERTERS = tuple((f.name, _to_size if f.name in SIZE_SETTINGS else _CONVERTERS[str(f.type)])
                          for f in dataclasses.fields(CrawlConfig))
_FIELDS = frozenset(name for name, _ in _FIELD_CONVERTERS)
_SECTION_FIELDS = {kind: tuple(f.name for f in dataclasses.fields(kind)) for kind in SECTIONS.values()}
# Setting name -> the section it belongs to.
SECTION_OF = {name: section for section, kind in SECTIONS.items() for name in _SECTION_FIELDS[kind]}


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


def merge_settings(stored: Mapping[str, Any], given: Mapping[str, Any]) -> tuple[CrawlConfig, list[str]]:
    """A later run's config: defaults < the settings stored with the crawl (run-only ones left out)
    < `given` (a config file's, then the command line's). With a note for each stored setting that
    `given` changed."""
    kept = {name: value for name, value in stored.items() if name not in RUN_ONLY}
    before = config_from_mapping(kept)
    after = config_from_mapping({**kept, **given})
    notes = []
    for name in sorted(flat_settings(given)):
        if name in kept and name not in RUN_ONLY and getattr(before, name) != getattr(after, name):
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

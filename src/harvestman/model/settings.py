"""The settings declaration: each crawl setting once, as a field of the section record that holds it,
with its default, its help, its command-line option, its scope, its choices or range and whether the
API may set it.

Everything else follows from these fields: the whole config (model/config.py) is made of the
sections and its checks of choices and ranges read `SETTINGS`, and so do the command-line options
(app/options.py), the API's allow-list (serve/settings.py), `download()`'s accepted set
(crawl/download.py), the worker's and a resumed run's sets (below) and the option table of
docs/config.md. A new setting is one field here (and a line in docs/config.md's table, written by
`python -m harvestman.app.options docs/config.md`).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

# ----- the choices of the settings that are one of a few words -----------------------------------

SCOPES = ("host", "domain", "any")
HOST_KEYS = ("host", "domain", "ip")
RECRAWL_STRATEGIES = ("", "conditional", "size", "sitemap", "full")  # crawl/recrawl.py; '' off
ORDERINGS = ("bfs", "dfs", "score", "indegree", "opic", "pagerank")  # policy/ordering.py
SCHEDULES = ("fixed", "adaptive")  # policy/schedule.py
SITEMAP_MODES = ("robots", "probe", "off")  # crawl/sitemaps.py; docs/config.md
HTTP2_MODES = ("auto", "always", "never")  # fetch/partial.py
RENDER_MODES = ("never", "auto", "always")  # fetch/browser.py
# Playwright's resource types a page's requests may be blocked by (`document` is the page itself).
RENDER_KINDS = ("stylesheet", "image", "media", "font", "script", "texttrack", "xhr", "fetch",
                "eventsource", "websocket", "manifest", "other")
SCREENSHOT_MODES = ("", "viewport", "full")

# Whose a setting is:
#   crawl      the crawl's: stored with it, taken by every machine that joins it and by later runs;
#   machine    each machine's own (a worker sets it for itself); the machine owning the crawl folder
#              keeps it with the crawl for its own later commands (`--resume`, the cycle's steps);
#   run        one command's on one machine, never stored for a later run;
#   run-wide   one run's, shared by the machines it runs on, but not taken back by a later run (a
#              page budget is a run's, yet every worker of that run must keep to it).
Scope = Literal["crawl", "machine", "run", "run-wide"]
# How an option is given: a value; a repeatable value (a list); a switch setting true, or (negated)
# false; a comma-separated list ('none' for none); a value that may be left out (its `const`).
Form = Literal["value", "list", "switch", "negated", "commas", "optional"]
# Where a setting applies: the commands whose options it has (with `flags`), `crawl`, `download`, the
# cycle's steps (inject, generate, fetch, parse, updatedb, recrawl) and `worker`; and `list`, the
# Python API's `download()`.
Command = Literal["crawl", "download", "step", "worker", "list"]
BOTH: tuple[Command, ...] = ("crawl", "download")
# ... and `download()` too, the Python API's list fetch (crawl/download.py): the settings that act on
# one fetch, none of a crawl's folder, links or processes.
LIST: tuple[Command, ...] = (*BOTH, "list")


DEFAULT_USER_AGENT = "harvestman/0.1 (+https://pypi.org/project/harvestman/)"
# Distinct links kept per page. The index pages of documentation sites carry 13,000-17,000 (Python's
# genindex-all.html), so 20,000 keeps them whole with room to spare, while bounding what one page
# adds to the crawl database and to memory (~250 bytes a link) on a page made of nothing but links.
MAX_OUTLINKS = 20_000
DEFAULT_OUT = Path("harvestman-out")
# Seconds a lost crawl database (PostgreSQL) is waited for before the run ends (db_outage_limit).
DB_OUTAGE_LIMIT = 300.0


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
class Setting:
    """One setting of a crawl: what its field declares beyond its type and default, and (filled in
    from the field) its name, section, type and default."""

    help: str  # one line for --help and docs/config.md; "(default X)" is added from its default
    flags: tuple[str, ...] = ()  # its option: the canonical spelling first, then short ones
    option_help: str = ""  # the option's own words, where they are not the setting's (a negated switch)
    aliases: tuple[str, ...] = ()  # older spellings, still read, never shown
    metavar: str = ""  # '' for one derived from the field's type (N, SECONDS) or its choices
    choices: tuple[str, ...] = ()  # the values it may take ('' among them: it may be left empty)
    form: Form = "value"
    const: str = ""  # the value of an "optional" option given bare
    commands: tuple[Command, ...] = BOTH  # where it applies (the options: with `flags` only)
    scope: Scope = "crawl"
    api: bool = True  # the API may set it (no file or program of the server's machine named)
    size: bool = False  # a number of bytes, also taken as people write it: 10MiB, 512k (model/sizes.py)
    at_least: float | None = None  # the range of a number: its lowest value,
    above: float | None = None  # ... or the value it must be above,
    at_most: float | None = None  # ... and its highest
    bounds: str = ""  # the range in a message's words, where the figures alone would not say it
    # From the field the setting is declared as:
    name: str = ""
    section: str = ""
    kind: Any = None  # the field's type (int, tuple[str, ...] ...)
    default: Any = None

    @property
    def flag(self) -> str:
        """The option as messages name it."""
        return self.flags[0] if self.flags else "--" + self.name.replace("_", "-")


_P = ParamSpec("_P")
_T = TypeVar("_T")
_KEY = "harvestman.setting"  # the key of a field's metadata that holds its Setting


def _declaring(facts: Callable[_P, Setting]) -> Callable[Concatenate[_T, _P], _T]:
    def declare(default: _T, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        # A dataclass field, as `dataclasses.field` is one: typed as its default for the checker.
        return field(default=default, metadata={_KEY: facts(*args, **kwargs)})

    return declare


# `name: type = _(default, help, flags=..., ...)`: a setting's one declaration (Setting's keywords).
_ = _declaring(Setting)

# ----- the sections: what each part of the crawler reads, and every setting, once -------------------
# A part of the crawler is handed only its section (`cfg.fetch`, `cfg.politeness`, ...); the whole
# is all of them at once and checks every value; the sections are never made by hand but by it.


@dataclass(frozen=True)
class RunSettings:
    """One run of the command: its seeds, how much it does at once and in all, what it prints."""

    seeds: tuple[str, ...] = _((),
        "where the crawl starts (URLs named on the command line and read with -i add up)",
        scope="run", api=False)
    resume: bool = _(False,
        "continue the crawl in DIR with the settings stored with it (options given now replace them);"
        " URLs that failed for a cause the settings now remove are fetched again",
        flags=("--resume",), form="switch", scope="run", api=False)
    max_pages: int = _(0,
        "stop after N pages in a run; 0: no limit (a crawl with a limit runs one worker process, so "
        "that the limit is exact)",
        flags=("--max-pages",), commands=("crawl",), scope="run-wide", at_least=0)
    concurrency: int = _(100,
        "fetches in flight at once, in total",
        flags=("--concurrency",), commands=(*LIST, "step"), above=0)
    workers: int = _(0,
        "worker processes sharing the crawl; 0: one per core",
        flags=("--workers",), commands=(*BOTH, "step", "worker"), scope="machine",
        at_least=0, at_most=256, bounds="between 0 (one per core) and 256")
    quiet: bool = _(False,
        "no progress display and no summary",
        flags=("--quiet", "-q"), form="switch", commands=(*BOTH, "step", "worker"), scope="run", api=False)
    log_json: bool = _(False,
        "print every event as a JSON line",
        flags=("--log-json",), form="switch", commands=(*BOTH, "worker"), scope="run", api=False)
    # launch/metrics.py; with 0 no metric is even collected.
    metrics_port: int = _(0,
        "serve the run's metrics (worker processes' included) as Prometheus text at "
        "http://127.0.0.1:PORT/metrics while it runs; 0: none",
        flags=("--metrics-port",), metavar="PORT", commands=(*BOTH, "worker"), scope="run", api=False,
        at_least=0, at_most=65535, bounds="a TCP port (1-65535), or 0 for none")


@dataclass(frozen=True)
class LinkSettings:
    """Which links a page gives the crawl (scope, patterns, depth, caps), in which order they are
    fetched, and when again."""

    follow_links: bool = _(True,
        "follow links at all; `harvestman download` fetches its list only")
    scope: str = _("host",
        "which links to follow: the seeds' hosts, their registrable domains, or any",
        flags=("--scope",), choices=SCOPES, commands=("crawl", "step"))
    include: tuple[str, ...] = _((),
        "only follow URLs matching REGEX (searched in the URL; repeatable)",
        flags=("--include",), metavar="REGEX", form="list", commands=("crawl", "step"))
    exclude: tuple[str, ...] = _((),
        "never follow URLs matching REGEX (repeatable)",
        flags=("--exclude",), metavar="REGEX", form="list", commands=("crawl", "step"))
    max_depth: int = _(25,
        "follow links at most N hops from a seed",
        flags=("--max-depth",), commands=("crawl", "step"), at_least=0)
    max_url_length: int = _(2048,
        "links longer than this many characters are not followed")
    max_outlinks: int = _(MAX_OUTLINKS,
        "distinct links kept per page (the link graph and the links followed)")
    link_anchors: bool = _(False,
        "keep each link's anchor text in the link graph (costs ~1 µs CPU a link)",
        flags=("--link-anchors",), form="switch", commands=("crawl", "step"))
    ordering: str = _("bfs",
        "order URLs are leased in (bfs: each host's queue; others across hosts too, politeness kept):"
        " shallower first (bfs), deeper first (dfs), by a link scorer's score (score: Python API "
        "only), by the scores harvestman rank stored (indegree, pagerank), or by online OPIC (opic)",
        flags=("--order",), aliases=("--ordering",), choices=ORDERINGS, commands=("crawl",))
    revisit_after: float = _(0.0,
        "fetch each URL again SECONDS after each fetch, conditionally; 0: never",
        flags=("--revisit-after",), commands=(*BOTH, "step"), at_least=0)
    # policy/schedule.py: "adaptive" shrinks the interval when a page changed and grows it when not
    # (Nutch's AdaptiveFetchSchedule), within [min_interval, max_interval]; the cycle's steps schedule
    # every fetched URL again after fetch_interval (Nutch's db.fetch.interval.default), the continuous
    # crawl only with revisit_after.
    schedule: str = _("fixed",
        "re-visits at a fixed interval, or adapted to how often each page changes",
        flags=("--schedule",), choices=SCHEDULES, commands=(*BOTH, "step"))
    fetch_interval: float = _(30 * 86400.0,
        "the crawl cycle's steps fetch each URL again after SECONDS",
        flags=("--fetch-interval",), commands=(*BOTH, "step"), above=0)
    min_interval: float = _(60.0,
        "the adaptive schedule's shortest interval, in seconds",
        above=0)
    max_interval: float = _(365 * 86400.0,
        "the adaptive schedule's longest interval, in seconds",
        above=0)
    sitemaps: str = _("robots",
        "read the sitemaps robots.txt names (robots), also /sitemap.xml on each host (probe), or none"
        " (off)",
        flags=("--sitemaps",), choices=SITEMAP_MODES, commands=("crawl",))
    # Set by `harvestman recrawl` for its segment (crawl/recrawl.py); '' costs nothing a page.
    recrawl_strategy: str = _("",
        "how `harvestman recrawl` checks a page again (its --strategy); '' in any other crawl",
        choices=RECRAWL_STRATEGIES)


@dataclass(frozen=True)
class PolitenessSettings:
    """How hard one host is pressed: connections, spacing, its page budget, retries and waits."""

    per_host: int = _(2,
        "fetches in flight at once to one host",
        flags=("--per-host",), commands=(*LIST, "step"), above=0)
    delay: float = _(0.0,
        "minimum delay between two fetches of one host",
        flags=("--delay",), commands=(*LIST, "step"), at_least=0)
    crawl_delay_cap: float = _(30.0,
        "a robots.txt Crawl-delay is honoured up to this many seconds",
        commands=LIST)
    retries: int = _(3,
        "retries of a fetch that failed in a way that may pass (timeout, reset, 5xx, 429)",
        flags=("--retries",), commands=(*LIST, "step"), at_least=0)
    retry_after_cap: float = _(3600.0,
        "a Retry-After is honoured up to this many seconds",
        commands=LIST)
    # Waits a run sits out: Retry-After, the circuit breaker, retry back-off.
    max_wait: float = _(600.0,
        "end the run when every URL left waits longer than this (a later run goes on: "
        "`crawl --resume`, the step again)",
        flags=("--max-wait",), commands=(*BOTH, "step"), scope="run-wide", at_least=0)
    # A host's page budget in one run: where a spider trap ends.
    max_pages_per_host: int = _(100_000,
        "fetch at most N pages of one host in a run; 0: no budget",
        flags=("--max-pages-per-host",), commands=("crawl", "step"), at_least=0)
    host_key: str = _("host",
        "what one politeness queue is: a host, a registrable domain, or a server address",
        flags=("--host-key",), choices=HOST_KEYS, commands=(*BOTH, "step"))


@dataclass(frozen=True)
class RobotsSettings:
    """Whether robots.txt is obeyed, and how long a fetched one is trusted."""

    obey_robots: bool = _(True,
        "obey robots.txt",
        flags=("--ignore-robots",), option_help="do not obey robots.txt", form="negated", commands=(*LIST,
        "step"))
    robots_ttl: float = _(24 * 3600.0,
        "seconds a fetched robots.txt is trusted before it is fetched again",
        commands=LIST)


@dataclass(frozen=True)
class StorageSettings:
    """Where a crawl is kept: its folder, the WARC files' size, how long a lease lasts."""

    out_dir: Path = _(DEFAULT_OUT,  # noqa: RUF009 (`_` makes a field, as dataclasses.field does)
        "the crawl's folder: its database, WARC files, logs",
        flags=("--out", "-o"), aliases=("--output",), metavar="DIR", scope="run", api=False)
    warc_max_bytes: int = _(1024 * 1024 * 1024,
        "size at which a WARC file is finished and the next one started",
        size=True, above=0)
    lease_seconds: float = _(300.0,
        "after this long, a URL handed to a worker that never reported is handed out again",
        above=0)
    db: str = _("",
        "the crawl database, DIR/crawl.db unless named: a path, sqlite:///PATH or "
        "postgresql://USER@HOST/DB",
        flags=("--db",), metavar="URL", scope="run", api=False)
    db_outage_limit: float = _(DB_OUTAGE_LIMIT,
        "how long a lost PostgreSQL crawl database (a restart, a failover, a network cut) is reconnected"
        " to, with back-off, before the run ends with exit status 75 (the same"
        " command continues it once the database is back)",
        flags=("--db-outage-limit",), commands=(*BOTH, "step", "worker"), scope="machine", api=False,
        above=0)
    segment_expiry: float = _(7 * 86400.0,
        "how long a generated segment holds its URLs unless updatedb merges it first (Nutch's "
        "crawl.gen.delay)",
        flags=("--segment-expiry",), commands=("step",), above=0)


@dataclass(frozen=True)
class FetchSettings:
    """One request and its transport: deadlines, sizes, identity, TLS, addresses, extra headers."""

    timeout: float = _(60.0,
        "total time allowed per fetch, redirects included",
        flags=("--timeout",), commands=(*LIST, "step"), above=0)
    connect_timeout: float = _(15.0,
        "seconds allowed to connect (name lookup, TCP and TLS)",
        commands=LIST, above=0)
    low_speed_limit: int = _(100,
        "a fetch slower than this many bytes/s for low_speed_time is aborted",
        commands=LIST, size=True)
    low_speed_time: float = _(30.0,
        "seconds a fetch may stay under low_speed_limit",
        commands=LIST)
    max_size: int = _(10 * 1024 * 1024,
        "truncate bodies beyond SIZE bytes (after decompression; 10MiB, 512k ...)",
        flags=("--max-size",), metavar="SIZE", commands=(*LIST, "step"), size=True, above=0)
    max_redirects: int = _(10,
        "redirects followed per fetch, at most",
        commands=LIST, at_least=0)
    user_agent: str = _(DEFAULT_USER_AGENT,
        "User-Agent header and robots.txt product token",
        flags=("--user-agent",), metavar="TEXT", commands=(*LIST, "step"))
    extra_headers: tuple[tuple[str, str], ...] = _((),
        "a header sent with every request of the crawl, robots.txt's too (there without Authorization"
        " and Cookie); repeatable; TOML: a table of names and values",
        flags=("--header",), metavar="'NAME: VALUE'", form="list", commands=(*LIST, "step"))
    resolve: tuple[ResolveEntry, ...] = _((),
        "pin a host name to an address, as curl's --resolve (repeatable)",
        flags=("--resolve",), metavar="HOST:PORT:ADDR", form="list", commands=(*LIST, "step", "worker"),
        scope="machine")
    allow_net: tuple[str, ...] = _((),
        "allow connections to this private/loopback range (repeatable)",
        flags=("--allow-net",), metavar="CIDR", form="list", commands=(*LIST, "step", "worker"),
        scope="machine")
    # None: no confinement. It narrows only: the private-address guard still applies inside them.
    only_net: tuple[str, ...] = _((),
        "fetch only from addresses in this range (repeatable): every connection, redirect hop and "
        "rendered page's request; others end as outside_net (narrows only: a private range needs "
        "--allow-net as well)",
        flags=("--only-net",), metavar="CIDR", form="list", commands=(*LIST, "step"))
    # The crawler still resolves each target and judges its address (fetch/transport.py).
    proxy: str = _("",
        "send every request through this proxy: http://, https:// or socks5:// HOST:PORT (the crawler"
        " resolves each target and the address guard judges it; socks5h is refused; what the proxy is"
        " handed: docs/config.md, Through a proxy)",
        flags=("--proxy",), metavar="URL", commands=(*LIST, "step"), api=False)
    verify_tls: bool = _(True,
        "verify TLS certificates",
        flags=("--insecure",), option_help="do not verify TLS certificates", form="negated",
        commands=(*LIST, "step"))
    http2: str = _("auto",
        "partial fetches over HTTP/2 where ALPN offers it (auto), for every request (always), or "
        "HTTP/1.1 only (never)",
        flags=("--http2",), choices=HTTP2_MODES, commands=LIST)
    stop_at: str = _("",
        "read each page only until: head, selector:CSS or bytes:SIZE (the page is recorded partial); "
        "'' reads it whole",
        flags=("--stop-at",), metavar="CONDITION", commands=LIST)
    stop_rules: tuple[tuple[str, str], ...] = _((),
        "a table of URL pattern (REGEX) -> stop condition; the first match wins over stop_at",
        commands=LIST)


@dataclass(frozen=True)
class DocumentSettings:
    """How documents other than HTML are parsed for their links (feeds, PDF: crawl/documents.py)."""

    # A hostile PDF costs the crawl a bounded parse (crawl/documents.py).
    pdf_max_pages: int = _(100,
        "a PDF's links (and text) are read from its first N pages only",
        above=0)
    pdf_max_bytes: int = _(10 * 1024 * 1024,
        "a larger PDF is not parsed (error class parse)",
        size=True, above=0)


@dataclass(frozen=True)
class ExtensionSettings:
    """Which installed plugins (Python entry points, crawl/plugins.py) a crawl runs, and which of
    harvestman's own per-page outputs (features, Markdown) it writes."""

    plugins: tuple[str, ...] = _((),
        "run the installed plugin NAME (an entry point; repeatable; docs/plugins.md)",
        flags=("--plugin",), metavar="NAME", form="list", api=False)
    # Off by default: ~3.7 ms of CPU a page (bench/feature_costs.py).
    features: bool = _(False,
        "compute each HTML page's features (text, sentences, n-grams, language...) into DIR/features/"
        " (costs CPU a page; `harvestman features DIR` does it afterwards)",
        flags=("--features",), form="switch")
    # Off by default: ~4-9 ms of CPU a page (bench/markdown_quality.py).
    markdown: bool = _(False,
        "write each HTML page's main content as Markdown, whole and in chunks, with the WARC record "
        "it came from, to DIR/markdown/ (costs CPU a page; `harvestman export DIR --what markdown` "
        "does it afterwards)",
        flags=("--markdown",), form="switch", commands=(*BOTH, "step"))
    markdown_chunk_size: int = _(2_000,
        "characters a chunk of a page's Markdown holds at most (--markdown); 0: no chunks",
        flags=("--markdown-chunk-size",), commands=(*BOTH, "step"), at_least=0)


@dataclass(frozen=True)
class RenderSettings:
    """Which pages a browser renders and how (fetch/browser.py): never by default."""

    # The `render` extra installs Playwright, which drives the system's Chromium; "never" starts no
    # browser and imports nothing.
    render: str = _("never",
        "render pages in Chromium: never, auto (pages whose HTML looks like an application shell), "
        "always (every HTML page)",
        flags=("--render",), choices=RENDER_MODES, commands=LIST)
    render_rules: tuple[tuple[str, str], ...] = _((),
        "a table of URL pattern (REGEX) -> render mode; the first match wins over render",
        commands=LIST)
    render_concurrency: int = _(2,
        "pages rendered at once, one browser context each",
        flags=("--render-concurrency",), commands=LIST, at_least=1, at_most=64)
    render_timeout: float = _(30.0,
        "time a page has to load and settle in the browser",
        flags=("--render-timeout",), commands=LIST, above=0)
    render_settle: str = _("idle",
        "when a page is done: idle (no request in flight for 0.5 s) or selector:CSS (once it matches)",
        flags=("--render-settle",), metavar="RULE", commands=LIST)
    render_recycle: int = _(50,
        "pages a browser context renders before a fresh one replaces it",
        commands=LIST, at_least=1)
    render_block: tuple[str, ...] = _(("image", "media", "font"),
        "resource kinds a rendered page may not fetch, comma-separated ('none' for none)",
        flags=("--render-block",), metavar="KINDS", form="commas", commands=LIST)
    render_third_party: bool = _(False,
        "let a rendered page fetch from other hosts than its own",
        flags=("--render-third-party",), form="switch", commands=LIST)
    render_max_bytes: int = _(20 * 1024 * 1024,
        "bytes a rendered page's requests may total (a size: 20MiB ...)",
        flags=("--render-max-bytes",), metavar="SIZE", commands=LIST, size=True, above=0)
    screenshot: str = _("",
        "a PNG of each rendered page (of the viewport, or the full page) in the WARC",
        flags=("--screenshot",), choices=SCREENSHOT_MODES, form="optional", const="viewport", commands=LIST)
    browser_path: str = _("/usr/bin/chromium",
        "the Chromium binary to drive",
        flags=("--browser",), metavar="FILE", scope="machine", api=False, commands=LIST)


@dataclass(frozen=True)
class FocusSettings:
    """Focused crawling (policy/focus.py, crawl/focusfile.py): off unless a focus file is named."""

    # '' crawls unfocused, at no cost a page.
    focus_file: str = _("",
        "a focused crawl: the focus file's mode (hard, soft, rules) and topics (docs/focus.md)",
        flags=("--focus",), metavar="FILE", api=False)
    keep_off_topic: bool = _(False,
        "hard focus: store off-topic pages too (their links are not followed either way)",
        flags=("--keep-off-topic",), form="switch")


# Section name (a property of the whole config, and a TOML table) -> its record; in the order of
# the option table and of --help.
SECTIONS: dict[str, type[Any]] = {
    "run": RunSettings,
    "links": LinkSettings,
    "politeness": PolitenessSettings,
    "robots": RobotsSettings,
    "storage": StorageSettings,
    "fetch": FetchSettings,
    "documents": DocumentSettings,
    "extensions": ExtensionSettings,
    "rendering": RenderSettings,
    "focus": FocusSettings,
}


def _declared(section: str, kind: type[Any]) -> Iterator[Setting]:
    """The settings a section's fields declare; a field declared without `_` is a TypeError."""
    types = typing.get_type_hints(kind)
    for f in dataclasses.fields(kind):
        facts = f.metadata.get(_KEY)
        if not isinstance(facts, Setting):
            raise TypeError(f"{kind.__name__}.{f.name} is not declared as a setting: `{f.name}: T = _(...)`")
        yield dataclasses.replace(facts, name=f.name, section=section, kind=types[f.name], default=f.default)


SETTINGS: tuple[Setting, ...] = tuple(
    s for section, kind in SECTIONS.items() for s in _declared(section, kind))
SETTING = {s.name: s for s in SETTINGS}
# The settings that are a number of bytes (or bytes a second): each takes a size as people write it,
# `10MiB`, `512k`, `1.5GB` (model/sizes.py), on the command line and in a config file alike.
SIZE_SETTINGS = frozenset(s.name for s in SETTINGS if s.size)
# What a machine that joins a shared crawl sets for itself (`harvestman worker`); every other setting
# is the crawl's, stored in its database when it starts and taken from there by the workers.
MACHINE_LOCAL = frozenset(s.name for s in SETTINGS if s.scope in ("machine", "run"))
# Of those, what the machine that owns the crawl folder keeps with the crawl for its own later
# commands (`--resume`, `recrawl`, the cycle's steps): a crawl of loopback hosts needs its
# `--allow-net` and `--resolve` again, and must not lose them to a resume typed without them.
MACHINE_KEPT = tuple(s.name for s in SETTINGS if s.scope == "machine")
# What belongs to one run only: never taken back from the stored settings by a later run.
RUN_ONLY = frozenset(s.name for s in SETTINGS if s.scope in ("run", "run-wide"))
# What a request to the API may not set: the server decides it, or it names a file or program of
# the server's machine.
NOT_SETTABLE = frozenset(s.name for s in SETTINGS if not s.api)


def flag_name(setting: str) -> str:
    """The command-line option of a setting, as messages name it."""
    found = SETTING.get(setting)
    return found.flag if found else "--" + setting.replace("_", "-")


def applies_to(command: Command) -> frozenset[str]:
    """The settings that apply where `command` runs (`list`: what `download()` takes)."""
    return frozenset(s.name for s in SETTINGS if command in s.commands)


def options_of(command: Command) -> tuple[Setting, ...]:
    """The settings `command` has an option for, in declaration order."""
    return tuple(s for s in SETTINGS if s.flags and command in s.commands)

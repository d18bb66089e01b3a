"""The settings declaration: each crawl setting once, with its help, its command-line option,
its scope and whether the API may set it.

Defaults are the config record's own (model/config.py) and never written here; the command-line
options (app/options.py), the API's allow-list (serve/settings.py), the worker's and a resumed run's
sets (below) and the option table of docs/config.md are all derived from this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
# The commands whose options a setting has: `crawl`, `download`, the cycle's steps (inject, generate,
# fetch, parse, updatedb, recrawl) and `worker`.
Command = Literal["crawl", "download", "step", "worker"]
BOTH: tuple[Command, ...] = ("crawl", "download")


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting of a crawl as the user meets it: help, option, scope, API."""

    name: str  # the field of model/config.py's record
    help: str  # one line for --help and docs/config.md; "(default X)" is added from its default
    flags: tuple[str, ...] = ()  # its option: the canonical spelling first, then short ones
    option_help: str = ""  # the option's own words, where they are not the setting's (a negated switch)
    aliases: tuple[str, ...] = ()  # older spellings, still read, never shown
    metavar: str = ""  # '' for one derived from the field's type (N, SECONDS) or its choices
    choices: tuple[str, ...] = ()
    form: Form = "value"
    const: str = ""  # the value of an "optional" option given bare
    commands: tuple[Command, ...] = BOTH  # where the option is (with `flags` only)
    scope: Scope = "crawl"
    api: bool = True  # the API may set it (no file or program of the server's machine named)

    @property
    def flag(self) -> str:
        """The option as messages name it."""
        return self.flags[0] if self.flags else "--" + self.name.replace("_", "-")


_ = Setting
SETTINGS: tuple[Setting, ...] = (
    # ---- run
    _("seeds", "where the crawl starts (URLs named on the command line and read with -i add up)",
      scope="run", api=False),
    _("resume", "continue the crawl in DIR with the settings stored with it (options given now "
      "replace them); URLs that failed for a cause the settings now remove are fetched again",
      ("--resume",), form="switch", scope="run", api=False),
    _("max_pages", "stop after N pages in a run; 0: no limit (a crawl with a limit runs one worker "
      "process, so that the limit is exact)", ("--max-pages",), commands=("crawl",), scope="run-wide"),
    _("concurrency", "fetches in flight at once, in total", ("--concurrency",),
      commands=(*BOTH, "step")),
    _("workers", "worker processes sharing the crawl; 0: one per core",
      ("--workers",), commands=(*BOTH, "step", "worker"), scope="machine"),
    _("quiet", "no progress display and no summary", ("--quiet", "-q"), form="switch",
      commands=(*BOTH, "step", "worker"), scope="run", api=False),
    _("log_json", "print every event as a JSON line", ("--log-json",), form="switch",
      commands=(*BOTH, "worker"), scope="run", api=False),
    _("metrics_port", "serve the run's metrics (worker processes' included) as Prometheus text at "
      "http://127.0.0.1:PORT/metrics while it runs; 0: none", ("--metrics-port",), metavar="PORT",
      commands=(*BOTH, "worker"), scope="run", api=False),
    # ---- links
    _("follow_links", "follow links at all; `harvestman download` fetches its list only"),
    _("scope", "which links to follow: the seeds' hosts, their registrable domains, or any",
      ("--scope",), choices=SCOPES, commands=("crawl", "step")),
    _("include", "only follow URLs matching REGEX (searched in the URL; repeatable)", ("--include",),
      metavar="REGEX", form="list", commands=("crawl", "step")),
    _("exclude", "never follow URLs matching REGEX (repeatable)", ("--exclude",), metavar="REGEX",
      form="list", commands=("crawl", "step")),
    _("max_depth", "follow links at most N hops from a seed", ("--max-depth",),
      commands=("crawl", "step")),
    _("max_url_length", "links longer than this many characters are not followed"),
    _("max_outlinks", "distinct links kept per page (the link graph and the links followed)"),
    _("link_anchors", "keep each link's anchor text in the link graph (costs ~1 µs CPU a link)",
      ("--link-anchors",), form="switch", commands=("crawl", "step")),
    _("ordering", "order URLs are leased in (bfs: each host's queue; others across hosts too, "
      "politeness kept): shallower first (bfs), deeper first (dfs), by a link "
      "scorer's score (score: Python API only), by the scores harvestman rank stored (indegree, "
      "pagerank), or by online OPIC (opic)", ("--order",), aliases=("--ordering",),
      choices=ORDERINGS, commands=("crawl",)),
    _("revisit_after", "fetch each URL again SECONDS after each fetch, conditionally; 0: never",
      ("--revisit-after",), commands=(*BOTH, "step")),
    _("schedule", "re-visits at a fixed interval, or adapted to how often each page changes",
      ("--schedule",), choices=SCHEDULES, commands=(*BOTH, "step")),
    _("fetch_interval", "the crawl cycle's steps fetch each URL again after SECONDS",
      ("--fetch-interval",), commands=(*BOTH, "step")),
    _("min_interval", "the adaptive schedule's shortest interval, in seconds"),
    _("max_interval", "the adaptive schedule's longest interval, in seconds"),
    _("sitemaps", "read the sitemaps robots.txt names (robots), also /sitemap.xml on each host "
      "(probe), or none (off)", ("--sitemaps",), choices=SITEMAP_MODES, commands=("crawl",)),
    _("recrawl_strategy", "how `harvestman recrawl` checks a page again (its --strategy); '' in any "
      "other crawl", choices=RECRAWL_STRATEGIES),
    # ---- politeness
    _("per_host", "fetches in flight at once to one host", ("--per-host",), commands=(*BOTH, "step")),
    _("delay", "minimum delay between two fetches of one host", ("--delay",),
      commands=(*BOTH, "step")),
    _("crawl_delay_cap", "a robots.txt Crawl-delay is honoured up to this many seconds"),
    _("retries", "retries of a fetch that failed in a way that may pass (timeout, reset, 5xx, 429)",
      ("--retries",), commands=(*BOTH, "step")),
    _("retry_after_cap", "a Retry-After is honoured up to this many seconds"),
    _("max_wait", "end the run when every URL left waits longer than this (a later run goes on: "
      "`crawl --resume`, the step again)",
      ("--max-wait",), commands=(*BOTH, "step"), scope="run-wide"),
    _("max_pages_per_host", "fetch at most N pages of one host in a run; 0: no budget",
      ("--max-pages-per-host",), commands=("crawl", "step")),
    _("host_key", "what one politeness queue is: a host, a registrable domain, or a server address",
      ("--host-key",), choices=HOST_KEYS, commands=(*BOTH, "step")),
    # ---- robots
    _("obey_robots", "obey robots.txt", ("--ignore-robots",), "do not obey robots.txt", form="negated",
      commands=(*BOTH, "step")),
    _("robots_ttl", "seconds a fetched robots.txt is trusted before it is fetched again"),
    # ---- storage
    _("out_dir", "the crawl's folder: its database, WARC files, logs", ("--out", "-o"),
      aliases=("--output",), metavar="DIR", scope="run", api=False),
    _("warc_max_bytes", "size at which a WARC file is finished and the next one started"),
    _("lease_seconds", "after this long, a URL handed to a worker that never reported is handed "
      "out again"),
    _("db", "the crawl database, DIR/crawl.db unless named: a path, sqlite:///PATH or "
      "postgresql://USER@HOST/DB", ("--db",), metavar="URL", scope="run", api=False),
    _("db_outage_limit", "how long a lost PostgreSQL crawl database (a restart, a failover, a network "
      "cut) is reconnected to, with back-off, before the run ends with exit status 75 (the "
      "same command continues it once the database is back)", ("--db-outage-limit",),
      commands=(*BOTH, "step", "worker"), scope="machine",
      api=False),
    _("segment_expiry", "how long a generated segment holds its URLs unless updatedb merges it "
      "first (Nutch's crawl.gen.delay)", ("--segment-expiry",), commands=("step",)),
    # ---- fetch
    _("timeout", "total time allowed per fetch, redirects included", ("--timeout",),
      commands=(*BOTH, "step")),
    _("connect_timeout", "seconds allowed to connect (name lookup, TCP and TLS)"),
    _("low_speed_limit", "a fetch slower than this many bytes/s for low_speed_time is aborted"),
    _("low_speed_time", "seconds a fetch may stay under low_speed_limit"),
    _("max_size", "truncate bodies beyond SIZE bytes (after decompression; 10MiB, 512k ...)",
      ("--max-size",), metavar="SIZE", commands=(*BOTH, "step")),
    _("max_redirects", "redirects followed per fetch, at most"),
    _("user_agent", "User-Agent header and robots.txt product token", ("--user-agent",),
      metavar="TEXT", commands=(*BOTH, "step")),
    _("extra_headers", "a header sent with every request of the crawl, robots.txt's too (there "
      "without Authorization and Cookie); repeatable; TOML: a table of names and values",
      ("--header",), metavar="'NAME: VALUE'", form="list", commands=(*BOTH, "step")),
    _("resolve", "pin a host name to an address, as curl's --resolve (repeatable)", ("--resolve",),
      metavar="HOST:PORT:ADDR", form="list", commands=(*BOTH, "step", "worker"), scope="machine"),
    _("allow_net", "allow connections to this private/loopback range (repeatable)", ("--allow-net",),
      metavar="CIDR", form="list", commands=(*BOTH, "step", "worker"), scope="machine"),
    _("only_net", "fetch only from addresses in this range (repeatable): every connection, "
      "redirect hop and rendered page's request; others end as outside_net (narrows only: a "
      "private range needs --allow-net as well)", ("--only-net",), metavar="CIDR", form="list",
      commands=(*BOTH, "step")),
    _("proxy", "send every request through this proxy: http://, https:// or socks5:// HOST:PORT "
      "(the crawler resolves each target and the address guard judges it; socks5h is refused; what "
      "the proxy is handed: docs/config.md, Through a proxy)",
      ("--proxy",), metavar="URL", commands=(*BOTH, "step"), api=False),
    _("verify_tls", "verify TLS certificates", ("--insecure",), "do not verify TLS certificates",
      form="negated", commands=(*BOTH, "step")),
    _("http2", "partial fetches over HTTP/2 where ALPN offers it (auto), for every request "
      "(always), or HTTP/1.1 only (never)", ("--http2",), choices=HTTP2_MODES),
    _("stop_at", "read each page only until: head, selector:CSS or bytes:SIZE (the page is recorded "
      "partial); '' reads it whole", ("--stop-at",), metavar="CONDITION"),
    _("stop_rules", "a table of URL pattern (REGEX) -> stop condition; the first match wins over "
      "stop_at"),
    # ---- documents
    _("pdf_max_pages", "a PDF's links (and text) are read from its first N pages only"),
    _("pdf_max_bytes", "a larger PDF is not parsed (error class parse)"),
    # ---- extensions
    _("plugins", "run the installed plugin NAME (an entry point; repeatable; docs/plugins.md)",
      ("--plugin",), metavar="NAME", form="list", api=False),
    _("features", "compute each HTML page's features (text, sentences, n-grams, language...) into "
      "DIR/features/ (costs CPU a page; `harvestman features DIR` does it afterwards)",
      ("--features",), form="switch"),
    _("markdown", "write each HTML page's main content as Markdown, whole and in chunks, with the "
      "WARC record it came from, to DIR/markdown/ (costs CPU a page; `harvestman export DIR --what "
      "markdown` does it afterwards)", ("--markdown",), form="switch", commands=(*BOTH, "step")),
    _("markdown_chunk_size", "characters a chunk of a page's Markdown holds at most (--markdown); "
      "0: no chunks", ("--markdown-chunk-size",), commands=(*BOTH, "step")),
    # ---- rendering
    _("render", "render pages in Chromium: never, auto (pages whose HTML looks like an application "
      "shell), always (every HTML page)", ("--render",), choices=RENDER_MODES),
    _("render_rules", "a table of URL pattern (REGEX) -> render mode; the first match wins over "
      "render"),
    _("render_concurrency", "pages rendered at once, one browser context each",
      ("--render-concurrency",)),
    _("render_timeout", "time a page has to load and settle in the browser", ("--render-timeout",)),
    _("render_settle", "when a page is done: idle (no request in flight for 0.5 s) or selector:CSS "
      "(once it matches)", ("--render-settle",), metavar="RULE"),
    _("render_recycle", "pages a browser context renders before a fresh one replaces it"),
    _("render_block", "resource kinds a rendered page may not fetch, comma-separated ('none' for "
      "none)", ("--render-block",), metavar="KINDS", form="commas"),
    _("render_third_party", "let a rendered page fetch from other hosts than its own",
      ("--render-third-party",), form="switch"),
    _("render_max_bytes", "bytes a rendered page's requests may total (a size: 20MiB ...)",
      ("--render-max-bytes",), metavar="SIZE"),
    _("screenshot", "a PNG of each rendered page (of the viewport, or the full page) in the WARC",
      ("--screenshot",), choices=SCREENSHOT_MODES, form="optional", const="viewport"),
    _("browser_path", "the Chromium binary to drive", ("--browser",), metavar="FILE",
      scope="machine", api=False),
    # ---- focus
    _("focus_file", "a focused crawl: the focus file's mode (hard, soft, rules) and topics "
      "(docs/focus.md)", ("--focus",), metavar="FILE", api=False),
    _("keep_off_topic", "hard focus: store off-topic pages too (their links are not followed "
      "either way)", ("--keep-off-topic",), form="switch"),
)
del _

SETTING = {s.name: s for s in SETTINGS}
# The settings that are a number of bytes (or bytes a second): each takes a size as people write it,
# `10MiB`, `512k`, `1.5GB` (model/sizes.py), on the command line and in a config file alike.
SIZE_SETTINGS = frozenset({"max_size", "warc_max_bytes", "pdf_max_bytes", "render_max_bytes",
                           "low_speed_limit"})
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


def options_of(command: Command) -> tuple[Setting, ...]:
    """The settings `command` has an option for, in declaration order."""
    return tuple(s for s in SETTINGS if s.flags and command in s.commands)

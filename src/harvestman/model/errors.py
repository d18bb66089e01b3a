"""The one exception tree of harvestman; library errors are translated into it at the boundary."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass


class HarvestmanError(Exception):
    """Base of every error harvestman raises on purpose."""


class ConfigError(HarvestmanError):
    """A configuration value or command-line option is invalid."""


class CrawlExistsError(ConfigError):
    """A new crawl was asked for where a crawl is stored already: continue it, or start it elsewhere.

    The message speaks the library's settings; the command line words it with its flags (`where`,
    `in_db`).
    """

    def __init__(self, where: str, *, in_db: bool) -> None:
        self.where = where  # the output folder, or the database the crawl is kept in
        self.in_db = in_db  # whether the crawl is in a database the `db` setting names
        super().__init__(
            f"{where} already holds a crawl: continue it with CrawlConfig(resume=True), or give the new "
            "crawl another out_dir" + (" or db" if in_db else "")
        )


class QueryError(ConfigError):
    """A search query the index's query language cannot parse (or that names an unknown field)."""


class InvalidUrlError(HarvestmanError):
    """A URL cannot be parsed, has a scheme we do not fetch, or is refused by normalization."""


class FrontierError(HarvestmanError):
    """The crawl database cannot be opened, is locked by another crawl, or is inconsistent."""


class DatabaseUnavailable(FrontierError):
    """The crawl database could not be reached for longer than `db_outage_limit`: the run ended,
    resumable (`--resume`, or `worker` again) once it is back."""


class StorageError(HarvestmanError):
    """Writing WARC files or other output failed."""


class OutputClosed(HarvestmanError):
    """Standard output was closed by its reader (`--log-json | head -1`): the run stopped, resumable;
    the command ends quietly (EXIT_CLOSED_OUTPUT), as one that SIGPIPE ends."""


class FetchError(HarvestmanError):
    """A fetch failed; `error_class` is the short, stable name recorded in the crawl database."""

    error_class = "fetch_error"
    transient = True  # whether a retry may help

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TimeoutFetchError(FetchError):
    """The total deadline, connect timeout or low-speed limit was hit."""

    error_class = "timeout"


class ConnectFetchError(FetchError):
    """The connection was refused, reset, or could not be made."""

    error_class = "connect"


class DnsFetchError(FetchError):
    """The host name did not resolve."""

    error_class = "dns"


class TlsFetchError(FetchError):
    """The TLS handshake or certificate verification failed."""

    error_class = "tls"
    transient = False


class ProtocolFetchError(FetchError):
    """The server broke HTTP framing (bad headers, conflicting lengths, short body)."""

    error_class = "protocol"


class FramingFetchError(ProtocolFetchError):
    """The response's framing is ambiguous or malformed (conflicting lengths, a bad chunk): permanent."""

    error_class = "framing"
    transient = False


class BlockedAddressError(FetchError):
    """The private-address guard refused to connect to this address."""

    error_class = "blocked_address"
    transient = False


class OutsideNetError(FetchError):
    """The address connected to is outside every `--only-net` range (the crawl is confined to them)."""

    error_class = "outside_net"
    transient = False


class TooManyRedirectsError(FetchError):
    """More redirect hops than allowed."""

    error_class = "too_many_redirects"
    transient = False


class RedirectRefusedError(FetchError):
    """A redirect pointed to a scheme we do not follow, out of scope, or to a robots-disallowed URL."""

    error_class = "redirect_refused"
    transient = False


class ContentError(FetchError):
    """The body could not be decoded (bad compression, too many encodings, over the size cap)."""

    error_class = "content"
    transient = False


class UnsupportedUrlError(FetchError):
    """The URL to fetch is not http(s) (or cannot be requested at all)."""

    error_class = "unsupported_url"
    transient = False


class RenderFetchError(FetchError):
    """A page could not be rendered in the browser: a script that never ends, a page that never
    settles, a crashed browser (fetch/browser.py). Retrying the same page would fail the same way."""

    error_class = "render"
    transient = False


# ----- what a failure means for the `harvestman` command -----------------------------------------
# Exit statuses, modelled on wget's; when the seeds failed for different reasons, the lowest status
# above 1 wins, as in wget. README.md "The command line" lists them.
EXIT_OK = 0
EXIT_FAILED = 1  # generic: a seed refused by a rule of the crawl (robots.txt, a budget), a worker died
EXIT_USAGE = 2  # bad options or input: an option, a config file, a seed, the output folder
EXIT_IO = 3  # the output (WARC files, logs) could not be written
EXIT_NETWORK = 4  # DNS, connection, timeout, or an address the guard (or --only-net) refuses
EXIT_TLS = 5  # TLS handshake or certificate verification
EXIT_PROTOCOL = 7  # broken HTTP framing, redirect loops, refused redirects, undecodable bodies
EXIT_SERVER = 8  # the server answered with an error status (4xx, 5xx)
# The crawl database (PostgreSQL) was away longer than db_outage_limit: sysexits.h's EX_TEMPFAIL,
# "a temporary failure: try again later" (--resume).
EXIT_DATABASE = 75
# Standard output closed before all was written (`harvestman export DIR --out - | head -1`): the
# status of a command that SIGPIPE ends (128 + 13), as a shell shows it for `cat | head`.
EXIT_CLOSED_OUTPUT = 141
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as a shell shows it


@dataclass(frozen=True, slots=True)
class FailureHelp:
    """What a recorded error class means for the command: its exit status and a hint ('' for none).

    A hint may name `{address}`: the address a refused connection was to (or CIDR when unknown).
    """

    exit_status: int
    hint: str = ""


FAILURE_HELP: dict[str, FailureHelp] = {
    "dns": FailureHelp(EXIT_NETWORK, "check the host name"),
    "connect": FailureHelp(EXIT_NETWORK, "no connection: check the host and port, and that the server is up"),
    "timeout": FailureHelp(EXIT_NETWORK, "no answer in time: --timeout allows longer"),
    "blocked_address": FailureHelp(EXIT_NETWORK, "--allow-net {address} allows it"),
    "outside_net": FailureHelp(EXIT_NETWORK, "outside the crawl's --only-net ranges: --only-net {address} "
                               "adds it"),
    "robots_unavailable": FailureHelp(EXIT_NETWORK, "robots.txt could not be read: --ignore-robots skips it"),
    "tls": FailureHelp(EXIT_TLS, "the certificate could not be verified: --insecure skips the check"),
    "protocol": FailureHelp(EXIT_PROTOCOL),
    "framing": FailureHelp(EXIT_PROTOCOL),
    "content": FailureHelp(EXIT_PROTOCOL),
    "too_many_redirects": FailureHelp(EXIT_PROTOCOL, "a redirect loop, or a chain longer than allowed"),
    "redirect_refused": FailureHelp(
        EXIT_PROTOCOL, "the redirect leaves the crawl's scope: start from its target, or --scope domain|any"
    ),
    "unsupported_url": FailureHelp(EXIT_USAGE, "only http:// and https:// URLs are fetched"),
    "invalid_url": FailureHelp(EXIT_USAGE, "not a URL harvestman can fetch"),
    "robots": FailureHelp(EXIT_FAILED, "disallowed by robots.txt: --ignore-robots fetches it anyway"),
    "host_budget": FailureHelp(EXIT_FAILED, "--max-pages-per-host raises the budget"),
    "render": FailureHelp(EXIT_FAILED, "the page did not render in time: --render-timeout allows longer"),
}


def failure_help(error_class: str) -> FailureHelp:
    """The exit status and hint for an error class recorded on a URL (`http_404` and the like too)."""
    if error_class.startswith("http_"):
        return FailureHelp(EXIT_SERVER, "the server answered with an error")
    return FAILURE_HELP.get(error_class, FailureHelp(EXIT_FAILED))


@dataclass(frozen=True, slots=True)
class CommandFailure:
    """How an error that ended a command ends it: its exit status and the one line it prints."""

    exit_status: int
    line: str


def command_failure(exc: BaseException) -> CommandFailure | None:
    """The one mapping from an error that ended a command (the command line, a crawl or a job that
    the server runs) to its exit status and line; None for an error harvestman did not raise on purpose."""
    if isinstance(exc, KeyboardInterrupt):
        return CommandFailure(EXIT_INTERRUPTED, "harvestman: interrupted")
    if isinstance(exc, ConfigError):
        status = EXIT_USAGE
    elif isinstance(exc, StorageError):
        status = EXIT_IO
    elif isinstance(exc, DatabaseUnavailable):
        status = EXIT_DATABASE
    elif isinstance(exc, HarvestmanError):
        status = EXIT_FAILED
    elif isinstance(exc, OSError):  # a file or folder named by the user cannot be read or written
        where = f" ({exc.filename})" if exc.filename else ""
        return CommandFailure(EXIT_IO, f"harvestman: error: {exc.strerror or exc}{where}")
    else:
        return None
    return CommandFailure(status, f"harvestman: error: {exc}")


def exit_status_of(statuses: Iterable[int]) -> int:
    """One exit status for several failures, as wget picks it: the lowest above 1, else 1."""
    specific = [s for s in statuses if s > EXIT_FAILED]
    return min(specific) if specific else EXIT_FAILED


# ----- from a recorded error class back to its exception ----------------------------------------
@functools.cache
def _error_types() -> dict[str, type[FetchError]]:
    """Every FetchError subclass by its error_class name."""
    table: dict[str, type[FetchError]] = {}
    todo: list[type[FetchError]] = [FetchError]
    while todo:
        cls = todo.pop()
        table.setdefault(cls.error_class, cls)
        todo.extend(cls.__subclasses__())
    return table


def is_transient(error_class: str) -> bool:
    """Whether a fetch that failed with `error_class` may succeed if retried (False if unknown)."""
    cls = _error_types().get(error_class)
    return cls is not None and cls.transient


def error_for(error_class: str, message: str) -> FetchError:
    """A FetchError of the class named `error_class` (a plain, permanent one if the name is unknown)."""
    cls = _error_types().get(error_class)
    if cls is not None:
        return cls(message)
    error = FetchError(message)
    error.error_class, error.transient = error_class, False
    return error

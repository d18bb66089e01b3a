"""The one exception tree of harvestman; library errors are translated into it at the boundary."""

from __future__ import annotations


class HarvestmanError(Exception):
    """Base of every error harvestman raises on purpose."""


class ConfigError(HarvestmanError):
    """A configuration value or command-line option is invalid."""


class InvalidUrlError(HarvestmanError):
    """A URL cannot be parsed, has a scheme we do not fetch, or is refused by normalization."""


class FrontierError(HarvestmanError):
    """The crawl database cannot be opened, is locked by another crawl, or is inconsistent."""


class StorageError(HarvestmanError):
    """Writing WARC files or other output failed."""


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

"""URL resolution and normalization on the hot path: WHATWG parsing by ada (C++), then crawler rules."""

from __future__ import annotations

import functools
import importlib
import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from harvestman.model.errors import InvalidUrlError

# ada's Python wrapper (ada_url.URL) costs ~10 µs a URL in attribute look-ups; calling its cffi
# library directly and slicing the href by the component offsets costs ~2 µs. The module is a
# compiled cffi extension without type stubs, so it is imported dynamically and typed as Any.
_ada: Any = importlib.import_module("ada_url._ada_wrapper")
_lib: Any = _ada.lib
_ffi: Any = _ada.ffi

_OMITTED = 0xFFFFFFFF
_SCHEME_HTTP = 0
_SCHEME_HTTPS = 2

MAX_SEGMENT_REPEATS = 3  # a path segment may occur at most this often (spider-trap guard)

_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = frozenset("0123456789ABCDEFabcdef")
_SESSION_PARAMS = frozenset({"jsessionid", "phpsessid", "sid", "sessionid", "cfid", "cftoken"})
_PATH_SESSION = re.compile(r";jsessionid=[^;/?#]*", re.IGNORECASE)


def _fix_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    # RFC 3986 §6.2.2.2: escapes of unreserved characters are equivalent to the characters.
    if char in _UNRESERVED and not (char in _HEX and _after_half_escape(match.string, match.start())):
        return char
    return "%" + match.group(1).upper()


def _after_half_escape(text: str, start: int) -> bool:
    """Whether a stray "%" or "%H" comes right before `start`: decoding a hex digit there would make a
    new escape ("%4%42" -> "%4B"), changing the URL and breaking idempotence."""
    # Those characters are never part of an earlier escape (escapes end in a hex digit, and "%H%"
    # is not one), so the input shows what the output will: the decision is the same on every pass,
    # and dropping a whole "&name=value" or ";jsessionid=..." before them cannot change it.
    before = text[start - 1 : start] if start else ""
    return before == "%" or (start >= 2 and text[start - 2] == "%" and before in _HEX)


def _normalize_escapes(part: str) -> str:
    return _PERCENT.sub(_fix_escape, part) if "%" in part else part


class _Parsed:
    """The pieces of one successfully parsed URL that the functions below need."""

    __slots__ = ("hash_start", "host_end", "host_start", "host_type", "href", "path_start", "scheme",
                 "search_start")

    def __init__(self, handle: Any) -> None:
        href = _lib.ada_get_href(handle)
        # ada serialises special-scheme URLs as ASCII (punycode host, percent-encoded rest), so
        # the byte offsets of the components are also character offsets.
        self.href: str = _ffi.unpack(href.data, href.length).decode("utf-8", "replace")
        comp = _lib.ada_get_components(handle)
        self.scheme: int = _lib.ada_get_scheme_type(handle)
        self.host_type: int = _lib.ada_get_host_type(handle)
        self.host_start: int = comp.host_start
        self.host_end: int = comp.host_end
        self.path_start: int = comp.pathname_start
        self.search_start: int = comp.search_start
        self.hash_start: int = comp.hash_start

    @property
    def hostname(self) -> str:
        start = self.host_start
        # With credentials, host_start points at the "@" that ends them.
        if start < len(self.href) and self.href[start] == "@":
            start += 1
        host = self.href[start : self.host_end]
        if host.startswith("//"):
            host = host[2:]
        return host


def _parse(url: str, base: str | None = None) -> _Parsed | None:
    try:
        data = url.encode("utf-8")
        base_data = base.encode("utf-8") if base is not None else None
    except UnicodeEncodeError:  # lone surrogates: not a URL anyone can send
        return None
    if base_data is None:
        handle = _lib.ada_parse(data, len(data))
    else:
        handle = _lib.ada_parse_with_base(data, len(data), base_data, len(base_data))
    try:
        return _Parsed(handle) if _lib.ada_is_valid(handle) else None
    finally:
        _lib.ada_free(handle)


def resolve(href: str, base: str | None = None) -> str | None:
    """Join `href` to `base` as a browser does (WHATWG); None when the result does not parse."""
    parsed = _parse(href, base)
    return parsed.href if parsed is not None else None


def authority_span(url: str) -> tuple[int, int] | None:
    """Where the authority of an http(s) URL starts and ends, found as urlsplit finds it, without
    its cost; None for another scheme, or a URL with characters urlsplit drops (tabs, CR, LF)."""
    if not url.startswith(("http://", "https://")) or not url.isprintable():
        return None
    start = url.index("//") + 2
    end = len(url)
    for delimiter in "/?#":  # the authority ends at the first of these
        found = url.find(delimiter, start, end)
        if found >= 0:
            end = found
    return start, end


def origin_of(url: str) -> str:
    """`scheme://authority` of a URL, as urlsplit gives them (scheme lowercased): a normalized
    http(s) URL is cut at its authority's end instead: 0.6 µs, where urlsplit (cached for 128 URLs)
    costs 2.7 µs on a URL it has not seen, as a crawl's URLs mostly are."""
    span = authority_span(url)
    if span is not None:
        return url[:span[1]]
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def header_text(value: str) -> str:
    """A header value read as latin-1 (one character a byte), decoded as UTF-8 as browsers do for
    Location: raw UTF-8 bytes become the characters they spell, invalid bytes U+FFFD."""
    try:
        return value.encode("latin-1").decode("utf-8", "replace")
    except UnicodeEncodeError:  # not read from the wire (a test's canned response): already text
        return value


def _repeated_segment(path: str, limit: int) -> str | None:
    if path.count("/") <= limit:
        return None
    counts: dict[str, int] = {}
    for segment in path.split("/"):
        if segment:
            seen = counts.get(segment, 0) + 1
            if seen > limit:
                return segment
            counts[segment] = seen
    return None


def _strip_session_params(query: str) -> str:
    kept = []
    for pair in query.split("&"):
        name = pair.split("=", 1)[0].lower()
        if name in _SESSION_PARAMS or name.startswith("aspsessionid"):
            continue
        kept.append(pair)
    return "&".join(kept)


def normalize(url: str, *, max_length: int = 2048, max_segment_repeats: int = MAX_SEGMENT_REPEATS) -> str:
    """The canonical form of an http(s) URL, used as the crawl database key; InvalidUrlError if refused.

    WHATWG parsing (lower-case host, IDN to punycode, default port dropped, dot segments resolved,
    empty path as "/"), then: fragment dropped, escapes of unreserved characters decoded and other
    escapes upper-cased, session ids dropped from query and path, an empty query dropped.
    Userinfo is kept. Refused: non-http(s) schemes, URLs over `max_length` characters, and paths
    with one segment repeated more than `max_segment_repeats` times (/x/x/x/x/, a spider trap).
    Idempotent: normalize(normalize(u)) == normalize(u).
    """
    return _normalize(url, max_length, max_segment_repeats, again=True)[0]


def normalize_with_host(
    url: str, *, max_length: int = 2048, max_segment_repeats: int = MAX_SEGMENT_REPEATS
) -> tuple[str, str]:
    """`normalize(url)` and the host of the result, from one parse (for the per-link hot path;
    `scope.followed_links` remembers the answers for a crawl)."""
    return _normalize(url, max_length, max_segment_repeats, again=True)


def _normalize(url: str, max_length: int, max_repeats: int, *, again: bool) -> tuple[str, str]:
    # Refuse monsters before parsing them; normalization rarely shrinks a URL fourfold.
    if len(url) > 4 * max_length + 64:
        raise InvalidUrlError(f"URL longer than {max_length} characters ({len(url)})")
    parsed = _parse(url)
    if parsed is None:
        raise InvalidUrlError(f"not a valid URL: {url[:200]!r}")
    if parsed.scheme != _SCHEME_HTTP and parsed.scheme != _SCHEME_HTTPS:
        scheme = parsed.href.split(":", 1)[0]
        raise InvalidUrlError(f"scheme {scheme!r} is not fetched (only http and https): {url[:200]!r}")
    href = parsed.href
    host = parsed.hostname
    if not host:
        raise InvalidUrlError(f"URL has no host: {url[:200]!r}")
    end = parsed.hash_start if parsed.hash_start != _OMITTED else len(href)
    search = parsed.search_start
    path_end = search if search != _OMITTED else end
    path = _normalize_escapes(href[parsed.path_start : path_end])
    query = _normalize_escapes(href[search + 1 : end]) if search != _OMITTED else ""
    rerun = False
    if ";" in path:
        stripped = _PATH_SESSION.sub("", path)
        # Removing ";jsessionid=..." can expose a dot segment ("/..;jsessionid=1/"): parse again.
        rerun = stripped != path
        path = stripped or "/"
    if query:
        query = _strip_session_params(query)
    result = href[: parsed.path_start] + path + ("?" + query if query else "")
    if rerun and again:
        return _normalize(result, max_length, max_repeats, again=False)
    if len(result) > max_length:
        raise InvalidUrlError(f"URL longer than {max_length} characters ({len(result)}): {result[:200]!r}")
    repeated = _repeated_segment(path, max_repeats)
    if repeated is not None:
        raise InvalidUrlError(
            f"path segment {repeated[:50]!r} repeated more than {max_repeats} times (spider trap): "
            f"{result[:200]!r}"
        )
    return result, host


def host_of(url: str) -> str:
    """The lower-case host name of `url` (IPv6 in brackets, no port); InvalidUrlError if it does not parse."""
    parsed = _parse(url)
    if parsed is None:
        raise InvalidUrlError(f"not a valid URL: {url[:200]!r}")
    return parsed.hostname


@functools.lru_cache(maxsize=1)
def _extractor() -> Any:
    import tldextract

    # suffix_list_urls=() and cache_dir=None: the snapshot bundled with tldextract, no network and
    # no files written. Private suffixes (github.io, blogspot.com) count, so that alice.github.io
    # and bob.github.io are different sites for scope and politeness.
    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True)


def _is_ip(host: str) -> bool:
    if host.startswith("["):
        return True
    if not host[-1:].isdigit():
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The registrable domain of `host` (example.co.uk for www.example.co.uk); IPs and unknowns as is."""
    host = host.lower().rstrip(".")
    if not host or _is_ip(host):
        return host
    domain: str = _extractor()(host).top_domain_under_public_suffix
    return domain or host



def is_robots_txt(url: str) -> bool:
    """Whether `url` is an origin's robots.txt: a file the crawl fetches for its own use (RFC 9309),
    never one of its pages, however a page or a sitemap links to it."""
    return "/robots.txt" in url and urlsplit(url).path == "/robots.txt"

def without_password(location: str) -> str:
    """`location` fit for a message or a log: a password in it is replaced by ***."""
    parts = urlsplit(location)
    if "://" not in location or parts.password is None:
        return location
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))

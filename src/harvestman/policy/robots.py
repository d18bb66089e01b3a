"""robots.txt (RFC 9309): parsing, matching, the fetch-outcome policy and an in-memory cache.

Where RFC 9309 leaves room, this follows Google's reference matcher (google/robotstxt), whose test
suite is the conformance data in tests/test_robots.py: groups are separated only by Allow/Disallow
lines, the product token on a User-agent line is its [A-Za-z_-] prefix, non-ASCII octets in patterns
are percent-encoded and the URL's path is matched as given (an escaped unreserved character such as
%62 does *not* match "b"), common typos of the directive names are accepted.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from dataclasses import dataclass

MAX_BYTES = 512 * 1024  # RFC 9309 §2.5: parse at least 500 KiB
MAX_LINE = 2083 * 8 - 1  # Google's kMaxLineLen: longer lines are cut there
MAX_SITEMAPS = 10_000
DEFAULT_TTL = 24 * 3600.0  # RFC 9309 §2.4: do not cache for more than 24 hours
ERROR_TTL = 600.0  # 5xx or unreachable: disallow, and ask again soon
DEFER_TTL = 300.0  # 429: leave the host alone for a while

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
_AGENT_TOKEN = re.compile(r"[A-Za-z_-]*")
_USER_AGENT_KEYS = ("user-agent", "useragent", "user agent")
_DISALLOW_KEYS = ("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw")
_SITEMAP_KEYS = ("sitemap", "site-map")
_CRAWL_DELAY_KEYS = ("crawl-delay", "crawldelay", "crawl delay")


def _upper_escape(match: re.Match[str]) -> str:
    return match.group(0).upper()


def _encode_pattern(value: str) -> str:
    """Percent-encode non-ASCII characters and upper-case existing escapes (Google's MaybeEscapePattern)."""
    if not value.isascii():
        value = "".join(
            c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
            for c in value
        )
    return _ESCAPE.sub(_upper_escape, value) if "%" in value else value


def path_of(url_or_path: str) -> str:
    """The path, params and query of a URL (or of a bare path) as robots.txt rules see them."""
    url = url_or_path
    search_start = 2 if url.startswith("//") else 0
    early_path = _find_any(url, "/?;", search_start)
    protocol_end = url.find("://", search_start)
    if protocol_end < 0 or (0 <= early_path < protocol_end):
        protocol_end = search_start  # a "://" after the path starts does not end a scheme
    else:
        protocol_end += 3
    path_start = _find_any(url, "/?;", protocol_end)
    if path_start < 0:
        return "/"
    hash_pos = url.find("#", search_start)
    if 0 <= hash_pos < path_start:
        return "/"
    path = url[path_start : hash_pos if hash_pos >= 0 else len(url)]
    if not path.startswith("/"):
        path = "/" + path
    return _ESCAPE.sub(_upper_escape, path) if "%" in path else path


def _find_any(text: str, chars: str, start: int) -> int:
    positions = [p for p in (text.find(c, start) for c in chars) if p >= 0]
    return min(positions) if positions else -1


def agent_token(user_agent: str) -> str:
    """The product token of a User-Agent header: what comes before the first '/' or space."""
    return re.split(r"[/ ]", user_agent.strip(), maxsplit=1)[0]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One Allow/Disallow pattern, pre-split for matching without regular expressions."""

    allow: bool
    pattern: str
    pieces: tuple[str, ...]  # the pattern split at '*' (a trailing '$' removed)
    anchored: bool  # the pattern ended in '$'

    @classmethod
    def make(cls, allow: bool, pattern: str) -> _Rule:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        return cls(allow, pattern, tuple(body.split("*")), anchored)

    def matches(self, path: str) -> bool:
        """Whether the pattern matches `path` from its start ('*' any run, final '$' the end)."""
        pieces = self.pieces
        first = pieces[0]
        if not path.startswith(first):
            return False
        if len(pieces) == 1:
            return len(path) == len(first) if self.anchored else True
        pos = len(first)
        # Leftmost matching of each literal piece is enough: a later start never helps the rest.
        for piece in pieces[1:-1]:
            found = path.find(piece, pos)
            if found < 0:
                return False
            pos = found + len(piece)
        last = pieces[-1]
        if self.anchored:
            return path.endswith(last) and len(path) - len(last) >= pos
        return path.find(last, pos) >= 0


@dataclass(slots=True)
class _Group:
    agents: list[str]  # lower-case product tokens
    is_global: bool
    rules: list[_Rule]
    crawl_delays: list[float]


class RobotsRules:
    """The rules of one robots.txt file, queried per user agent."""

    __slots__ = ("_cache", "_groups", "_verdict", "sitemaps")

    def __init__(self, groups: list[_Group] | None = None, sitemaps: tuple[str, ...] = (),
                 verdict: bool | None = None) -> None:
        self._groups = groups or []
        self._verdict = verdict  # True / False: allow / disallow everything, whatever the groups
        self._cache: dict[str, tuple[tuple[_Rule, ...], float | None]] = {}
        self.sitemaps = sitemaps

    @classmethod
    def allow_all(cls) -> RobotsRules:
        """Rules that allow every URL (robots.txt missing: 4xx)."""
        return cls(verdict=True)

    @classmethod
    def disallow_all(cls) -> RobotsRules:
        """Rules that disallow every URL but /robots.txt (robots.txt unreachable: 5xx, network errors)."""
        return cls(verdict=False)

    @classmethod
    def parse(cls, body: bytes, *, max_bytes: int = MAX_BYTES) -> RobotsRules:
        """Parse a robots.txt body (its first `max_bytes`); never raises, whatever the bytes."""
        # Full, partial and broken UTF-8 byte order marks are skipped, as Google's parser does.
        for bom in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
            if body.startswith(bom):
                body = body[len(bom) :]
                break
        if len(body) > max_bytes:
            body = body[:max_bytes]
            # A line cut in the middle could turn "Disallow: /private/x" into a broader rule.
            cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
            body = body[: cut + 1] if cut >= 0 else b""
        text = body.decode("utf-8", "replace")
        groups: list[_Group] = []
        sitemaps: dict[str, None] = {}
        current: _Group | None = None
        in_agent_lines = False  # the last directive was a User-agent line: more agents join the group
        for raw_line in _LINE_BREAK.split(text):
            key, value = _key_value(raw_line[:MAX_LINE])
            if not key:
                continue
            if key.startswith(_USER_AGENT_KEYS):
                if current is None or not in_agent_lines:
                    current = _Group([], False, [], [])
                    groups.append(current)
                    in_agent_lines = True
                if value[:1] == "*" and (len(value) == 1 or value[1].isspace()):
                    current.is_global = True
                else:
                    token = _AGENT_TOKEN.match(value)
                    current.agents.append(token.group(0).lower() if token else "")
            elif key.startswith("allow") or key.startswith(_DISALLOW_KEYS):
                if current is None:
                    continue  # rules before any User-agent line belong to no group
                in_agent_lines = False
                if value:  # an empty pattern matches nothing more than the default does
                    allow = key.startswith("allow")
                    pattern = _encode_pattern(value)
                    current.rules.append(_Rule.make(allow, pattern))
                    slash = pattern.rfind("/")
                    if allow and slash >= 0 and pattern[slash:].startswith("/index.htm"):
                        # Google: allowing /d/index.html also allows the directory URL /d/.
                        current.rules.append(_Rule.make(True, pattern[: slash + 1] + "$"))
            elif key.startswith(_SITEMAP_KEYS):
                if value and len(sitemaps) < MAX_SITEMAPS:
                    sitemaps[value] = None
            elif key.startswith(_CRAWL_DELAY_KEYS):
                delay = _parse_delay(value)
                if current is not None and delay is not None:
                    current.crawl_delays.append(delay)
        return cls(groups, tuple(sitemaps))

    def _for_agent(self, user_agent: str) -> tuple[tuple[_Rule, ...], float | None]:
        token = agent_token(user_agent).lower()
        cached = self._cache.get(token)
        if cached is not None:
            return cached
        matched = [g for g in self._groups if token and token in g.agents]
        if not matched:
            matched = [g for g in self._groups if g.is_global]
        rules = [rule for group in matched for rule in group.rules]
        # Longest pattern first, Allow before Disallow at equal length: the first match decides.
        rules.sort(key=lambda r: (-len(r.pattern), not r.allow))
        delays = [d for group in matched for d in group.crawl_delays]
        result = (tuple(rules), max(delays) if delays else None)
        if len(self._cache) < 64:
            self._cache[token] = result
        return result

    def allowed(self, url_or_path: str, user_agent: str) -> bool:
        """Whether `user_agent` may fetch `url_or_path` (a URL or a path starting with '/')."""
        path = path_of(url_or_path)
        if path == "/robots.txt" or self._verdict is not None:
            return path == "/robots.txt" or self._verdict is True
        rules, _ = self._for_agent(user_agent)
        for rule in rules:
            if rule.matches(path):
                return rule.allow
        return True

    def crawl_delay(self, user_agent: str) -> float | None:
        """The Crawl-delay in seconds of the group that applies to `user_agent`, if it sets one."""
        if self._verdict is not None:
            return None
        return self._for_agent(user_agent)[1]


def _key_value(line: str) -> tuple[str, str]:
    hash_pos = line.find("#")
    if hash_pos >= 0:
        line = line[:hash_pos]
    line = line.strip()
    if not line:
        return "", ""
    key, sep, value = line.partition(":")
    if not sep:
        # Google accepts a missing colon when the line is exactly two whitespace-separated words.
        parts = line.split()
        if len(parts) != 2:
            return "", ""
        key, value = parts
    return key.strip().lower(), value.strip()


def _parse_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


def rules_for_response(status: int, body: bytes, error_class: str, *, ttl: float = DEFAULT_TTL,
                       error_ttl: float = ERROR_TTL, defer_ttl: float = DEFER_TTL,
                       max_bytes: int = MAX_BYTES) -> tuple[RobotsRules, float, bool]:
    """The rules, how long to cache them, and whether to defer the host, for one robots.txt fetch.

    RFC 9309 §2.3.1: 2xx is parsed; 4xx ("unavailable") allows all; 5xx and network errors
    ("unreachable") disallow all, cached briefly so the file is asked for again soon. 429 is a
    request to slow down: the host is deferred. More redirects than the fetcher follows count as
    unavailable (§2.3.1.2).
    """
    if error_class in ("too_many_redirects", "redirect_refused"):
        return RobotsRules.allow_all(), ttl, False
    if error_class:
        return RobotsRules.disallow_all(), error_ttl, False
    if 200 <= status < 300:
        return RobotsRules.parse(body, max_bytes=max_bytes), ttl, False
    if status == 429:
        return RobotsRules.disallow_all(), defer_ttl, True
    if 400 <= status < 500:
        return RobotsRules.allow_all(), ttl, False
    return RobotsRules.disallow_all(), error_ttl, False


class RobotsCache:
    """Rules per key (host or origin) until they expire, least recently used evicted past `max_entries`."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._max = max_entries
        self._entries: OrderedDict[str, tuple[RobotsRules, float]] = OrderedDict()

    def get(self, host: str, now: float) -> RobotsRules | None:
        """The cached rules for `host`, or None when absent or expired at `now`."""
        entry = self._entries.get(host)
        if entry is None:
            return None
        if entry[1] <= now:
            del self._entries[host]
            return None
        self._entries.move_to_end(host)
        return entry[0]

    def put(self, host: str, rules: RobotsRules, expires_at: float) -> None:
        """Cache `rules` for `host` until `expires_at`."""
        self._entries[host] = (rules, expires_at)
        self._entries.move_to_end(host)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

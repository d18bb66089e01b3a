"""A URL filter that drops session-id and calendar-trap URLs, and a normalizer that drops utm_* parameters."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# harvestman's normalizer already strips the common session parameters (jsessionid, PHPSESSID, sid,
# ...); this catches session tokens it cannot know: a /session/TOKEN/ path segment, a long hex `s=`.
_SESSION = re.compile(r"/(?:session|sess|sid)/[0-9a-z]{12,}/|[?&]s=[0-9a-f]{16,}(?:&|$)", re.IGNORECASE)
# Calendars: a /calendar/ path, a date query, or a /YYYY/MM/ path (endless "next month" links).
_CALENDAR = re.compile(r"/calendar/|[?&](?:date|month|year)=|/(?:19|20)\d\d/\d\d?/", re.IGNORECASE)


def drop_traps(url: str) -> bool:
    """Keep `url` unless it carries a session id or looks like a calendar page."""
    return not (_SESSION.search(url) or _CALENDAR.search(url))


def strip_utm(url: str) -> str:
    """`url` without its utm_* query parameters (the rest in their order)."""
    parts = urlsplit(url)
    if "utm_" not in parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(key, value) for key, value in pairs if not key.lower().startswith("utm_")]
    return urlunsplit(parts._replace(query=urlencode(kept)))

"""Stop conditions: when a response body has given what is needed, judged on the decoded stream.

`parse_stop("head" | "selector:CSS" | "bytes:N")` makes the `StopCondition` a request carries;
`StopChecker` is fed the decoded body piece by piece (by a transport, as the bytes arrive) and says
when the condition holds, so the transport can stop the transfer (RST_STREAM over HTTP/2, no further
Range over HTTP/1.1, else closing the connection). The checks are cheap per byte: `head` is a
streaming tag scan that never looks at a byte twice; `selector` re-parses what arrived with
selectolax, but only after a step that grows with the page (at most ~9 parses a page plus one every
16 KB of the first 128 KB), so its cost stays linear; `bytes` is a counter.
"""

from __future__ import annotations

import re

from harvestman.model.errors import ConfigError
from harvestman.model.pagetree import parse_tree
from harvestman.model.records import StopCondition
from harvestman.model.sizes import parse_size

SELECTOR_STEP = 16 * 1024  # the selector is tried again after this many new bytes (or 1/8 of the page)
MAX_TAG = 256 * 1024  # a tag still open after this many bytes is taken for text (body content)
_HEAD_ELEMENTS = frozenset({b"html", b"head", b"title", b"base", b"link", b"meta", b"style", b"script",
                            b"noscript", b"template", b"bgsound", b"basefont"})
# Raw-text elements: their content is skipped to the matching end tag (a "<body>" in a script is text).
_RAW_TEXT = frozenset({b"title", b"style", b"script", b"noscript", b"template", b"textarea"})
_TAG = re.compile(rb"<(/?)([a-zA-Z][^\s/>]*)(?:[^>\"']|\"[^\"]*\"|'[^']*')*>")
_TEXT = re.compile(rb"[^<]*")
_SPACE = b" \t\r\n\f\xef\xbb\xbf"  # whitespace, and a UTF-8 byte order mark, are not body content


def parse_stop(spec: str) -> StopCondition:
    """The StopCondition written as `spec`: "head", "selector:CSS" or "bytes:SIZE" (ConfigError else)."""
    text = spec.strip()
    if text == "head":
        return StopCondition("head")
    kind, sep, value = text.partition(":")
    value = value.strip()
    if sep and kind == "bytes":
        size = parse_size(value, f"stop condition {spec!r}")  # bytes:65536, bytes:64KiB
        if size <= 0:
            raise ConfigError(f"stop condition {spec!r}: bytes:SIZE needs a size above 0")
        return StopCondition("bytes", str(size))
    if sep and kind == "selector":
        if not value:
            raise ConfigError(f"stop condition {spec!r}: selector:CSS needs a CSS selector")
        try:
            parse_tree("<p></p>").css_first(value)
        except Exception as exc:  # selectolax raises its own errors for a selector it cannot read
            raise ConfigError(f"stop condition {spec!r}: not a CSS selector ({exc})") from None
        return StopCondition("selector", value)
    raise ConfigError(f"stop condition {spec!r}: expected head, selector:CSS or bytes:N")


class HeadScanner:
    """Finds where an HTML document's head ends in a stream of bytes: after `</head>`, or at the first
    body content (a start tag that cannot be in a head, `<body>`, or text) when the head is implicit.
    Tags are scanned once; an incomplete tag at the end waits for more bytes."""

    __slots__ = ("_buf", "_pos", "_raw_end", "end")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._raw_end = b""  # inside a raw-text element: the lower-cased end tag that closes it
        self.end = -1  # the byte offset where the head ended (-1: not yet)

    def feed(self, chunk: bytes) -> bool:
        """Add decoded bytes; True once the end of the head is found (then `end` says where)."""
        if self.end >= 0:
            return True
        self._buf += chunk
        buf = self._buf
        size = len(buf)
        pos = self._pos
        while pos < size:  # bounded: each turn moves pos forward or returns
            if self._raw_end:
                found = _find_lower(buf, self._raw_end, pos)
                if found < 0:
                    self._pos = max(pos, size - len(self._raw_end))
                    return False
                pos = found
                self._raw_end = b""
                continue
            text = _TEXT.match(buf, pos)
            assert text is not None
            if text.end() > pos:
                if bytes(buf[pos:text.end()]).strip(_SPACE):
                    return self._found(pos)  # text before any body tag: the body has begun
                pos = text.end()
                continue
            # buf[pos] is "<"
            if buf.startswith(b"<!--", pos):
                close = buf.find(b"-->", pos + 4)
                if close < 0:
                    break
                pos = close + 3
                continue
            if buf.startswith(b"<!", pos) or buf.startswith(b"<?", pos):
                close = buf.find(b">", pos)
                if close < 0:
                    break
                pos = close + 1
                continue
            tag = _TAG.match(buf, pos)
            if tag is None:
                if size - pos > MAX_TAG or (pos + 1 < size and not buf[pos + 1:pos + 2].isalpha()
                                            and buf[pos + 1:pos + 2] != b"/"):
                    return self._found(pos)  # a stray "<": text, so body content
                break  # an incomplete tag: wait for the rest
            name = tag.group(2).lower()
            if tag.group(1):  # an end tag
                if name == b"head":
                    return self._found(tag.end())
                if name not in _HEAD_ELEMENTS:
                    return self._found(pos)
            elif name not in _HEAD_ELEMENTS:
                return self._found(pos)  # <body> or any body element: the head ended just before
            elif name in _RAW_TEXT and not tag.group(0).endswith(b"/>"):
                self._raw_end = b"</" + name
            pos = tag.end()
        self._pos = pos
        return False

    def _found(self, offset: int) -> bool:
        self.end = offset
        self._buf = bytearray()
        return True


def _find_lower(buf: bytearray, needle: bytes, start: int) -> int:
    """Case-insensitive find of lower-case `needle` in `buf` from `start`, in 64 KB windows."""
    step = 64 * 1024
    pos = start
    while pos < len(buf):
        window = bytes(buf[pos:pos + step + len(needle)]).lower()
        found = window.find(needle)
        if found >= 0:
            return pos + found
        pos += step
    return -1


class StopChecker:
    """Judges one StopCondition on a body's decoded bytes as they arrive."""

    __slots__ = ("_checked", "_scanner", "_seen", "_selector_parts", "_size", "condition", "cut", "held")

    def __init__(self, condition: StopCondition) -> None:
        self.condition = condition
        self._size = 0
        self._seen = 0
        self._checked = 0
        self._scanner = HeadScanner() if condition.kind == "head" else None
        self._selector_parts: list[bytes] = []
        self.held = False  # the condition holds in what arrived
        self.cut = -1  # how many decoded bytes to keep (-1: all that arrived)

    def feed(self, chunk: bytes) -> bool:
        """Judge the next decoded bytes; True once the condition holds (further calls keep True)."""
        if self.held or not chunk:
            return self.held
        kind = self.condition.kind
        self._size += len(chunk)
        if kind == "bytes":
            limit = int(self.condition.value)
            if self._size >= limit:
                self.held, self.cut = True, limit
        elif kind == "head":
            assert self._scanner is not None
            self.held = self._scanner.feed(chunk)
        else:
            self._selector_parts.append(chunk)
            if self._size - self._checked >= max(SELECTOR_STEP, self._checked // 8):
                self.held = self.matches()
        return self.held

    def matches(self) -> bool:
        """Whether the selector matches in all that arrived (a parse of it; the transport calls it
        once more at the end of a body that never stopped)."""
        if self.condition.kind != "selector":
            return self.held
        self._checked = self._size
        html = b"".join(self._selector_parts)
        self._selector_parts = [html]
        self.held = self.held or parse_tree(html).css_first(self.condition.value) is not None
        return self.held

    def feed_parts(self, parts: list[bytes]) -> bool:
        """Feed several pieces (a decoder's new output) in order; True once the condition holds."""
        for part in parts:
            if self.feed(part):
                return True
        return self.held

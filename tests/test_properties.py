"""Property-based tests (Hypothesis) of the parsers that read what servers send: URLs, robots.txt, HTML.

Examples per test are kept low enough for the module to run in a few seconds; fuzz/ holds the
coverage-guided harnesses that search longer. Other never-raises properties live beside their
unit tests (test_robots.py, test_parse.py).
"""

from __future__ import annotations

import contextlib
import html
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from harvestman.crawl.parse import MAX_ANCHOR, MAX_DESCRIPTION, MAX_TITLE, parse_html
from harvestman.fetch.content import decode_text, detect_charset, sniff_binary
from harvestman.model.errors import InvalidUrlError
from harvestman.model.records import LinkKind
from harvestman.net.urls import host_of, normalize, normalize_with_host, resolve
from harvestman.policy.robots import RobotsRules, path_of, rules_for_response

UA = "harvestman/0.1 (+https://example.com/bot)"
PAGE = "http://example.com/dir/page.html"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = frozenset("0123456789ABCDEFabcdef")
_SESSION_NAMES = frozenset({"jsessionid", "phpsessid", "sid", "sessionid", "cfid", "cftoken"})

# --- URLs ----------------------------------------------------------------------------------------

# Pieces chosen for the rules normalize() applies: host forms (IPv4 spellings, IPv6, IDN, escapes),
# dot segments spelled with escapes and backslashes, session ids, and text Hypothesis makes up.
_hosts = st.one_of(
    st.sampled_from([
        "example.com", "EXAMPLE.com.", "bücher.de", "xn--bcher-kva.de", "127.0.0.1", "0x7f000001",
        "2130706433", "0177.0.0.1", "127.1", "[::1]", "[0:0::FFFF:7f00:1]", "[::ffff:127.0.0.1]",
        "a%2eb.com", "%41.com", "exa mple.com", "", "a..b", "xn--", "1.2.3.4.5", "ß.de", "\u3002.jp",
    ]),
    st.from_regex(r"[a-z0-9-]{1,8}(\.[a-z0-9-]{1,8}){0,2}", fullmatch=True),
    st.text(max_size=8),
)
_segments = st.one_of(
    st.sampled_from([
        ".", "..", "%2e", "%2E%2e", ".%2e", "x", "x;jsessionid=AB", "..;jsessionid=1", "%7e", "%41",
        "%2f", "%00", "%zz", "%", "a b", "\\", "..\\..", "CON", "é", "", "x;JSESSIONID=", "%3b",
    ]),
    # Escape soup: stray "%" and half escapes beside real ones.
    st.lists(st.sampled_from(["%", "%4", "%42", "%61", "%2e", "%2E", "4", "a", "."]), max_size=5)
    .map("".join),
    st.text(max_size=6),
)
_query = st.lists(
    st.tuples(
        st.sampled_from(["a", "sid", "PHPSESSID", "jsessionid", "ASPSESSIONIDQQ", "sidebar", "", "%73id"]),
        st.text(alphabet="ab%7e4=&;#", max_size=6),
    ),
    max_size=4,
).map(lambda pairs: "&".join(f"{name}={value}" for name, value in pairs))
_structured_urls = st.builds(
    lambda scheme, userinfo, host, port, path, query, frag: (
        f"{scheme}://{userinfo}{host}{port}/{path}" + (f"?{query}" if query else "") + frag),
    st.sampled_from(["http", "https", "HTTP", "hTtPs", "ftp", "file", "javascript"]),
    st.sampled_from(["", "user@", "user:pw@", ":@", "a%40b:c@"]),
    _hosts,
    st.sampled_from(["", ":80", ":443", ":8080", ":0", ":65535", ":65536", ":x", ":"]),
    st.lists(_segments, max_size=8).map("/".join),
    _query,
    st.sampled_from(["", "#", "#frag", "#a#b"]),
)
_any_urls = st.one_of(_structured_urls, st.text(max_size=60))


@settings(max_examples=500, deadline=None)
@given(_any_urls, st.integers(min_value=20, max_value=300), st.integers(min_value=1, max_value=4))
@example("http://example.com/a/..;jsessionid=1/b", 2048, 3)
@example("http://example.com/a/=0/x?e0CmO&=%4%42&id=0/x?e0CMO&=%4aag", 2048, 3)  # found by fuzz_urls
@example("http://example.com/a/s&sei&jd=2(x?sid=0%&%61#", 2048, 3)  # found by fuzz_urls
def test_normalize_is_idempotent_and_refuses_only_with_invalid_url_error(
    raw: str, max_length: int, max_repeats: int
) -> None:
    # Any exception other than InvalidUrlError fails the test: that is the documented refusal.
    try:
        once, host = normalize_with_host(raw, max_length=max_length, max_segment_repeats=max_repeats)
    except InvalidUrlError:
        return
    assert normalize(once, max_length=max_length, max_segment_repeats=max_repeats) == once
    assert resolve(once) == once  # the output parses again, as itself
    assert host_of(once) == host
    assert once.startswith(("http://", "https://"))
    assert "#" not in once
    assert len(once) <= max_length
    after_host = once.split("://", 1)[1]
    path, _, query = after_host[after_host.index("/"):].partition("?")
    segments = [s for s in path.split("/") if s]
    assert all(segments.count(s) <= max_repeats for s in segments)
    assert ";jsessionid=" not in path.lower()
    for pair in query.split("&") if query else ():
        name = pair.split("=", 1)[0].lower()
        assert name not in _SESSION_NAMES and not name.startswith("aspsessionid"), once
    for part in (path, query):
        for match in re.finditer(r"%([0-9A-Fa-f]{2})", part):
            escape = match.group(1)
            assert escape == escape.upper(), once
            # Unreserved characters are decoded, but for a hex digit that would complete a stray "%".
            if chr(int(escape, 16)) in _UNRESERVED:
                before = part[max(0, match.start() - 2) : match.start()]
                half_escape = before[-1:] == "%" or (before[:1] == "%" and before[1:] in _HEX)
                assert chr(int(escape, 16)) in _HEX and half_escape, once


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.text(max_size=40), st.lists(_segments, max_size=5).map("/".join), _structured_urls),
    st.one_of(st.sampled_from(["http://a.com/b/c?q#f", "https://[::1]:8443/", "bad base", ""]),
              _structured_urls),
)
def test_resolve_returns_none_or_a_url_that_resolves_to_itself(href: str, base: str) -> None:
    joined = resolve(href, base)
    if joined is not None:
        assert resolve(joined) == joined


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=80))
def test_urls_from_undecodable_bytes_never_raise_unexpectedly(data: bytes) -> None:
    # A crawler meets raw bytes in Location headers and links: lone surrogates must be refused cleanly.
    text = data.decode("utf-8", "surrogateescape")
    for candidate in (text, "http://h/" + text, "http://" + text):
        joined = resolve(candidate, PAGE)
        assert joined is None or resolve(joined) == joined
        with contextlib.suppress(InvalidUrlError):
            normalize(candidate)


# --- robots.txt ----------------------------------------------------------------------------------

# Patterns and paths without '%', '?', '#', ';' or letters beyond a and b, so that a plain regular
# expression is a complete reference for Google's matching: '*' any run, a final '$' the end,
# the longest matching pattern decides, Allow wins a tie, no match allows.
_PATTERN_ALPHABET = "/ab.*$"
_rules = st.lists(
    st.tuples(st.booleans(), st.text(alphabet=_PATTERN_ALPHABET, min_size=1, max_size=8)), max_size=6
)


def _reference_allowed(rules: list[tuple[bool, str]], path: str) -> bool:
    best: tuple[int, bool] | None = None  # (pattern length, allow) of the deciding rule
    for allow, pattern in rules:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        regex = ".*".join(re.escape(piece) for piece in body.split("*")) + (r"\Z" if anchored else "")
        if re.match(regex, path, re.DOTALL) and (best is None or (len(pattern), allow) > best):
            best = (len(pattern), allow)
    return True if best is None else best[1]


@settings(max_examples=400, deadline=None)
@given(_rules, st.text(alphabet=_PATTERN_ALPHABET, max_size=12))
@example([(False, "/a*b$"), (True, "/a*")], "ab")
@example([(True, "/a"), (False, "/a")], "a")
@example([(False, "//")], "/")
def test_robots_matching_agrees_with_a_regex_reference(rules: list[tuple[bool, str]], tail: str) -> None:
    body = "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)
    parsed = RobotsRules.parse(body.encode())
    path = "/" + tail
    expected = _reference_allowed(rules, path)
    assert parsed.allowed("http://h.example" + path, UA) is expected
    if not path.startswith("//"):  # a bare "//x" is a network-path reference: x is a host
        assert parsed.allowed(path, UA) is expected


_robots_lines = st.lists(
    st.one_of(
        st.sampled_from(["User-agent: *", "User-agent: harvestman", "Disallow: /", "Allow: /a",
                         "Disallow: /a/b", "Crawl-delay: 3", "Sitemap: http://h/s.xml", "", "# c"]),
        st.text(alphabet="/ab*$:# é", max_size=12),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(_robots_lines, st.sampled_from(["\n", "\r\n", "\r"]), st.integers(min_value=0, max_value=200))
def test_a_size_limit_drops_the_cut_line_and_nothing_else(lines: list[str], eol: str, limit: int) -> None:
    body = eol.join(lines).encode()
    cut_body = body[:limit]
    if len(body) > limit:
        end = max(cut_body.rfind(b"\n"), cut_body.rfind(b"\r"))
        cut_body = cut_body[: end + 1] if end >= 0 else b""
    limited, reference = RobotsRules.parse(body, max_bytes=limit), RobotsRules.parse(cut_body)
    for path in ("/", "/a", "/a/b", "/b", "/é", "/robots.txt"):
        assert limited.allowed(path, UA) is reference.allowed(path, UA), path
    assert limited.crawl_delay(UA) == reference.crawl_delay(UA)
    assert limited.sitemaps == reference.sitemaps


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.text(max_size=40))
def test_robots_txt_itself_is_always_allowed_and_paths_start_with_a_slash(body: bytes, url: str) -> None:
    rules = RobotsRules.parse(body)
    assert rules.allowed("/robots.txt", UA)
    assert rules.allowed("http://h/robots.txt", url)
    assert path_of(url).startswith("/")
    # The per-agent cache must not change a verdict.
    assert rules.allowed(url, UA) is rules.allowed(url, UA)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=-1, max_value=1000), st.binary(max_size=100),
       st.sampled_from(["", "timeout", "dns", "too_many_redirects", "redirect_refused", "weird"]))
def test_every_robots_fetch_outcome_gives_rules_and_a_positive_ttl(
    status: int, body: bytes, error: str
) -> None:
    rules, ttl, defer = rules_for_response(status, body, error)
    assert ttl > 0
    assert isinstance(rules.allowed("/x", UA), bool) and isinstance(defer, bool)


# --- HTML link extraction ------------------------------------------------------------------------

_CONTENT_TYPES = ["text/html", "text/html; charset=utf-8", "text/html; charset=windows-1251",
                  "text/html; charset=utf-16", "text/html; charset=nonsense", "image/png", ""]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from(_CONTENT_TYPES), st.integers(min_value=0, max_value=8))
def test_arbitrary_bytes_through_the_charset_pipeline_never_raise(body: bytes, ctype: str, cap: int) -> None:
    # The path a response body takes: sniff, detect the charset, decode, parse.
    sniff_binary(body, ctype)
    charset, _ = detect_charset(body, ctype)
    page = parse_html(decode_text(body, charset), PAGE, max_links=cap, max_text=100)
    assert len(page.links) <= cap
    assert len(page.text) <= 100
    # A decode that kept lone surrogates must not break the parser either.
    parse_html(body.decode("utf-8", "surrogateescape"), PAGE, max_links=cap)


_link_html = st.lists(
    st.tuples(
        st.sampled_from(["a", "area", "iframe", "frame", "link rel=canonical", "link rel=next", "meta"]),
        st.sampled_from([
            "/p1", "p2", "../p3", "//other.example/p4", "?q", "#f", "javascript:x", "ftp://f/", "http://[::1",
            " /p5 ", "/p1", "https://example.com/p6#x", "mailto:a@b", "/", "/./p7/../p8", "/%2e%2e/p9",
            "/\\evil.example/x", "/\t/evil.example/y", "\\\\evil.example/z", "http:p10", "HTTP://Up.example/",
            "http://h.example/../p11", "https:p12", "/p13?a#b", "\x01/p14",
        ]),
        st.text(max_size=20),
    ),
    max_size=60,
)


def _element(tag: str, target: str, raw_text: str) -> str:
    name = tag.split()[0]
    text = html.escape(raw_text)  # text never adds elements or attributes of its own
    if name == "meta":
        return f'<meta http-equiv="refresh" content="0; url={target}">'
    attr = "src" if name in ("iframe", "frame") else "href"
    if name == "a":
        return f'<a {attr}="{target}">{text}</a>'
    return f'<{tag} {attr}="{target}" alt="{text}">'


_PAGES = ["http://example.com/dir/page.html", "http://user:pw@example.com:8080/d/p?q=1#f", "https://example.com",
          "http://[::1]:81/a/b/"]


@settings(max_examples=300, deadline=None)
@given(_link_html, st.integers(min_value=0, max_value=30), st.sampled_from(["", '<base href="/b/">']),
       st.sampled_from(_PAGES))
def test_links_are_unique_http_urls_resolved_as_whatwg_says_capped_per_page(
    items: list[tuple[str, str, str]], max_links: int, base_tag: str, page_url: str
) -> None:
    document = base_tag + "".join(_element(tag, target, text) for tag, target, text in items)
    page = parse_html(document, page_url, max_links=max_links)
    urls = [link.url for link in page.links]
    assert len(urls) <= max_links
    # Unique as a browser's document.links (<a> and <area>) and per other kind: <link rel=next
    # href=x> must not hide <a href=x> from the link graph.
    browser = (LinkKind.ANCHOR, LinkKind.AREA)
    keys = [(link.url, "a" if link.kind in browser else link.kind) for link in page.links]
    assert len(set(keys)) == len(keys)
    # Whatever shortcuts the parser takes, each link is the WHATWG join of an href to the base.
    base = resolve("/b/", page_url) if base_tag else page_url
    assert page.base_url == base
    allowed = {resolve(target.strip(), base) for _, target, _ in items}
    for link in page.links:
        assert link.url in allowed, link.url
        assert link.url.startswith(("http://", "https://"))
        assert resolve(link.url) == link.url  # already in resolved, serialised form
        assert len(link.anchor) <= MAX_ANCHOR


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=3000), st.integers(min_value=0, max_value=40),
       st.integers(min_value=1, max_value=5))
def test_the_first_distinct_links_in_document_order_are_kept(count: int, max_links: int, spread: int) -> None:
    # `spread` repeats: /p0 /p0 /p1 /p1 ... so deduplication and the cap interact.
    html = "<title>" + "long title " * 200 + "</title>" + '<meta name="description" content="'
    html += "d " * 2000 + '">' + "".join(f'<a href="/p{i // spread}">{"w " * 300}</a>' for i in range(count))
    page = parse_html(html, PAGE, max_links=max_links)
    distinct = (count + spread - 1) // spread
    assert [link.url for link in page.links] == [
        f"http://example.com/p{i}" for i in range(min(distinct, max_links))]
    assert len(page.title) <= MAX_TITLE and len(page.description) <= MAX_DESCRIPTION
    assert all(len(link.anchor) <= MAX_ANCHOR for link in page.links)

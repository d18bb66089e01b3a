"""Frozen, typed records passed between the stages: fetch, parse, frontier, storage."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from harvestman.model.pagetree import PageTree

Headers = tuple[tuple[str, str], ...]
HttpMethod = Literal["GET", "HEAD"]  # a crawler only reads; transports refuse any other (ConfigError)


def last_header(headers: Headers, name: str) -> str | None:
    """The last value of header `name` in `headers` (case-insensitive), or None."""
    lname = name.lower()
    for key, value in reversed(headers):
        if key.lower() == lname:
            return value
    return None


class UrlState(enum.IntEnum):
    """A URL's state in the crawl database (Nutch's CrawlDatum statuses)."""

    UNFETCHED = 0
    FETCHED = 1
    GONE = 2
    REDIRECT_TEMP = 3
    REDIRECT_PERM = 4
    NOT_MODIFIED = 5
    DUPLICATE = 6


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds from the start of one request to each milestone (libcurl's *_TIME values)."""

    dns: float = 0.0
    connect: float = 0.0
    tls: float = 0.0
    first_byte: float = 0.0
    total: float = 0.0


@dataclass(frozen=True, slots=True)
class StopCondition:
    """When to stop reading a response body early (fetch/stop.py judges it on the decoded stream).

    `kind` "head": after `</head>` (or the first body content when the head is left implicit);
    "selector": as soon as CSS `value` matches in what has arrived; "bytes": after int(value)
    decoded bytes. `label` is the form the record and the WARC name it by: head, selector:CSS, bytes:N.
    """

    kind: Literal["head", "selector", "bytes"]
    value: str = ""

    @property
    def label(self) -> str:
        """The condition as written: "head", "selector:CSS", "bytes:N"."""
        return self.kind if self.kind == "head" else f"{self.kind}:{self.value}"


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One HTTP request as the transport sees it: no redirects are followed below this level."""

    url: str
    headers: Headers = ()
    timeout: float = 60.0  # total deadline for this request, seconds
    max_size: int = 10 * 1024 * 1024  # cap on the (decompressed) body, bytes
    method: HttpMethod = "GET"  # HEAD: the response's head only, no body
    stop: StopCondition | None = None  # read the body only until this holds (None: all of it)


@dataclass(frozen=True, slots=True)
class RedirectHop:
    """One redirect on the way to the final URL: from `url`, with `status`, to `location` (absolute)."""

    url: str
    status: int
    location: str


@dataclass(frozen=True, slots=True)
class Rendering:
    """What a browser made of a page (fetch/browser.py): the response as the server sent it, the
    DOM after its scripts ran, a screenshot when asked for, and what the page's requests did."""

    original_headers: Headers  # the page's response as served (the WARC response record keeps it)
    original_body: bytes
    dom: str  # the rendered document (outerHTML of the page after it settled): links and text come from it
    screenshot: bytes = b""  # PNG, empty unless asked for
    screenshot_mode: str = ""  # "viewport" or "full"
    settle: str = ""  # how the page was judged settled: "idle" or "selector:CSS"
    requests: int = 0  # requests the page's browser made and harvestman fetched for it
    refused: tuple[tuple[str, str], ...] = ()  # (url, why) of requests not let through
    resource_bytes: int = 0  # bytes fetched for the page's sub-resources
    elapsed: float = 0.0  # seconds in the browser
    reason: str = ""  # why this page was rendered: "always", or what made `auto` judge it a shell


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """One HTTP response as the transport returns it; the body is already content-decoded.

    A transport that returns each 3xx as it is (CurlTransport by default) leaves `redirects` empty.
    One that follows redirects itself (libcurl's FOLLOWLOCATION, a browser) reports the hops it took
    there: the first from the requested URL, each `location` the next hop's `url`, the last's
    `location` this response's `url`; the Fetcher judges them as if it had taken them itself.
    """

    url: str
    status: int
    headers: Headers
    body: bytes
    wire_bytes: int  # bytes received on the wire (headers + encoded body)
    truncated: bool  # the body hit the size cap and was cut
    timings: Timings
    remote_addr: str = ""
    http_version: str = ""
    redirects: tuple[RedirectHop, ...] = ()  # hops the transport followed itself, oldest first
    partial: str = ""  # the stop condition's label when the body was cut there ('' when whole)
    body_wire_bytes: int = -1  # the body as transferred (encoded); -1: not counted apart (wire_bytes)
    full_size: int = -1  # the whole body's size on the wire, when known (Content-Length, Content-Range)
    rendering: Rendering | None = None  # the body is a browser's rendered DOM (fetch/browser.py)

    def header(self, name: str) -> str | None:
        """The last value of header `name` (case-insensitive), or None."""
        return last_header(self.headers, name)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The result of fetching one URL, redirects followed: the seed's WebPageItem, and more."""

    url: str  # as requested
    final_url: str  # after redirects (the seed's ResponseUrl)
    redirects: tuple[RedirectHop, ...] = ()
    status: int = 0  # HTTP status of the final response; 0 when no response came
    headers: Headers = ()
    content_type: str = ""  # media type without parameters, lower case
    charset: str = ""  # the charset used to decode `text`
    text: str | None = None  # decoded text, for textual content
    body: bytes = b""  # raw (content-decoded) body bytes, always kept
    is_binary: bool = False
    error_class: str = ""  # empty when there was no error
    error_message: str = ""
    started_at: float = 0.0  # wall-clock time.time() when the first attempt began
    timings: Timings = field(default_factory=Timings)
    wire_bytes: int = 0
    truncated: bool = False
    attempt: int = 1
    remote_addr: str = ""
    partial: str = ""  # why the body stops early ('' when whole): "head", "selector:CSS", "bytes:N"
    body_wire_bytes: int = 0  # the body as transferred (encoded), headers aside
    saved_bytes: int = 0  # what the whole body would have cost more on the wire (known sizes only)
    rendering: Rendering | None = None  # rendered in a browser: `text` is the rendered DOM

    @property
    def error(self) -> bool:
        """Whether the fetch failed (no usable response)."""
        return bool(self.error_class)

    @property
    def server_success(self) -> bool:
        """Whether the server answered with a 2xx status."""
        return 200 <= self.status < 300

    @property
    def ok(self) -> bool:
        """Whether the fetch worked: no error and a 2xx status (a 404 is not ok, though not an error)."""
        return not self.error_class and 200 <= self.status < 300

    @property
    def body_size(self) -> int:
        """Size of the (content-decoded) body in bytes."""
        return len(self.body)

    def header(self, name: str) -> str | None:
        """The last value of response header `name` (case-insensitive), or None."""
        return last_header(self.headers, name)


class LinkKind(enum.Enum):
    """Where in the page a link was found."""

    ANCHOR = "a"
    AREA = "area"
    FRAME = "frame"
    IFRAME = "iframe"
    CANONICAL = "canonical"
    ALTERNATE = "alternate"
    NEXT = "next"
    META_REFRESH = "meta_refresh"
    SITEMAP = "sitemap"  # a <loc> of a sitemap: a page it lists, or a child sitemap of an index
    FEED_ENTRY = "feed_entry"  # an RSS/Atom entry's link (or its permalink guid): crawl/documents.py
    DOCUMENT = "document"  # a link in a non-HTML document, such as a PDF's URI link


class Link(NamedTuple):
    """An outlink, already resolved against the page's base URL (not yet normalized).

    A NamedTuple, not a frozen dataclass like the other records: a page makes dozens, and a tuple
    is built in half the time.
    """

    url: str
    kind: LinkKind = LinkKind.ANCHOR
    anchor: str = ""
    nofollow: bool = False


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the parser extracts from one document: an HTML page, a feed, a PDF (crawl/documents.py)."""

    title: str = ""
    description: str = ""
    language: str = ""
    text: str = ""
    links: tuple[Link, ...] = ()
    noindex: bool = False
    nofollow: bool = False  # meta robots nofollow: follow none of the links
    base_url: str = ""
    # Why a document (a feed, a PDF) could not be parsed, or '' (it is recorded on the URL as a
    # "parse" error; what was parsed before the failure is kept).
    error: str = ""
    # The tree an HTML page was parsed from, when the crawl's later steps read it too (model/pagetree.py).
    tree: PageTree | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PageFeatures:
    """What index/features.py finds in one HTML page (seed 000's "features of a page"), and its class.

    Pairs rather than dicts keep the record frozen and its order fixed (most frequent first).
    """

    url: str  # the page's URL (where redirects ended: the WARC record's target)
    title: str = ""
    description: str = ""  # <meta name="description">
    headings: tuple[tuple[int, str], ...] = ()  # (level 1-6, text), in document order
    text: str = ""  # the visible main text, without script, style and navigation boilerplate
    sentences: tuple[str, ...] = ()
    language: str = ""  # ISO 639-1 code, detected from the text ('' when there is too little)
    tag_counts: tuple[tuple[str, int], ...] = ()  # DOM element name -> count, most frequent first
    ngrams: tuple[tuple[str, int], ...] = ()  # word 1-, 2- and 3-grams with counts, the top k of each
    category: str = ""  # set by a classifier (index/categories.py); '' when not classified
    category_probability: float = 0.0


class WarcPlace(NamedTuple):
    """Where a page's response record went: what a reader needs to find it again (provenance).
    A named tuple: the WARC writer makes one a page, and a tuple costs a fraction of a dataclass."""

    file: str  # the WARC file's path once finished (without `.open`)
    offset: int  # of the response record's gzip member in the file
    record_id: str  # its WARC-Record-ID ('<urn:uuid:...>')
    date: str  # its WARC-Date (the fetch's start, UTC, microseconds)


@dataclass(frozen=True, slots=True)
class CrawledPage:
    """A page as the crawler hands it to library users: the fetch result and what was parsed."""

    result: FetchResult
    parsed: ParsedPage | None
    depth: int
    outlinks: tuple[str, ...] = ()  # normalized, in-scope links queued from this page
    features: PageFeatures | None = None  # an HTML page's features, when the crawl has `features` on
    warc: WarcPlace | None = None  # where its response record is in the crawl's WARC files
    # Its HTML's tree, parsed once for every step that reads it: the parse's, else built on first use.
    tree: PageTree | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.tree is None:
            tree = self.parsed.tree if self.parsed is not None else None
            if tree is None and self.result.text is not None:
                tree = PageTree(self.result.text)
            object.__setattr__(self, "tree", tree)  # frozen: set once, as it is made


@dataclass(frozen=True, slots=True)
class NewUrl:
    """A URL to add to the frontier; `url` is normalized, `host` is its politeness key."""

    url: str
    host: str
    depth: int = 0
    score: float = 0.0
    parent: str = ""  # the URL it was found on
    priority: float = 0.0  # lease order within its host, lowest first (see policy/ordering.py)


@dataclass(frozen=True, slots=True)
class PageLinks:
    """The http(s) links of one fetched page, as stored in the link graph (all hosts, capped)."""

    url: str  # the page, as leased
    links: tuple[Link, ...]


class LinkEdge(NamedTuple):
    """One edge of the link graph, as read back from the crawl database."""

    from_url: str
    to_url: str
    anchor: str
    kind: LinkKind
    nofollow: bool


@dataclass(frozen=True, slots=True)
class LeasedUrl:
    """A URL handed to a worker until `lease_until`."""

    url: str
    host: str
    depth: int
    retries: int
    lease_until: float
    etag: str = ""
    last_modified: str = ""
    signature: str = ""  # the last fetch's content signature ('' before one)
    fetch_interval: float = 0.0  # the fetch schedule's current interval for the URL (0: none yet)
    score: float = 0.0  # the URL's score (online OPIC splits it over the page's new links)


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    """What a worker reports back for a leased URL."""

    url: str
    state: UrlState  # UNFETCHED means: retry later (at `next_fetch_time`)
    fetch_time: float
    # When to fetch the URL again: a retry's time (UNFETCHED), or a fetch schedule's re-visit time
    # for any other state; 0 means never (another state is then final).
    next_fetch_time: float = 0.0
    http_status: int = 0
    error_class: str = ""
    error_message: str = ""
    signature: str = ""
    etag: str = ""
    last_modified: str = ""
    content_type: str = ""
    body_size: int = 0
    wire_bytes: int = 0
    retried: bool = False  # count this attempt against the URL's retries
    final_url: str = ""  # where redirects ended (or, unfollowed, pointed), when it differs from `url`
    title: str = ""  # the HTML page's <title>, as the crawl's parse found it
    fetch_interval: float = 0.0  # the schedule's interval after this fetch (0: leave as stored)
    simhash: int = 0  # 64-bit SimHash of the visible text, when computed (0: not computed)
    body_wire_bytes: int = 0  # the body as transferred (encoded), headers aside
    saved_bytes: int = 0  # what a full fetch would have cost more on the wire (a 304, a HEAD, a stop)
    partial: str = ""  # why the body stops early ('' when whole): "head", "selector:CSS", "bytes:N"
    change: str = ""  # against the fetch before: "new", "unchanged", "minor", "major" ('' unknown)
    checked_by: str = ""  # how a re-fetch was checked: "conditional", "size", "sitemap", "full"
    topic: str = ""  # focused crawling: the page's most likely target topic ('' when not scored)
    relevance: float = 0.0  # ... and its probability (policy/focus.py)



def landing_state(outcome: FetchOutcome) -> UrlState | None:
    """The state a store records on the page a followed redirect ended on (a row of its own), or None
    when the outcome writes no row but its URL's. The page is marked so that it is not fetched again
    when found later: not for a retry (it follows the redirect again), nor for a redirect not followed
    (a 3xx is the last response: its target was not fetched here)."""
    final = outcome.final_url
    if not final or final == outcome.url or outcome.state == UrlState.UNFETCHED \
            or 300 <= outcome.http_status < 400:
        return None
    if outcome.state in (UrlState.REDIRECT_TEMP, UrlState.REDIRECT_PERM):
        return UrlState.FETCHED
    return outcome.state

@dataclass(frozen=True, slots=True)
class UrlRecord:
    """One row of the crawl database, for status and export."""

    url: str
    host: str
    state: UrlState
    depth: int
    retries: int
    score: float
    parent: str
    fetch_time: float
    next_fetch_time: float
    http_status: int
    error_class: str
    error_message: str
    signature: str
    etag: str
    last_modified: str
    content_type: str
    body_size: int  # the page's decoded size (a not-modified re-fetch keeps it)
    wire_bytes: int  # what the last fetch cost on the wire, headers included
    final_url: str  # where the fetch ended: the URL itself, or a redirect's target; '' before a response
    title: str  # the HTML page's <title>; '' when none was parsed
    simhash: int = 0  # 64-bit SimHash of the visible text (unsigned); 0 when not computed
    duplicate_of: str = ""  # the URL kept in this one's place, when the state is DUPLICATE
    fetch_interval: float = 0.0  # seconds between fetches, as the fetch schedule last set it
    inlinks: int = 0  # pages linking here, as the last invertlinks counted them
    metadata: str = ""  # a JSON object: a seed's metadata, a sitemap's lastmod; '' when none
    body_wire_bytes: int = 0  # the last fetch's body as transferred (encoded), headers aside
    # What a full fetch would have cost more on the wire (a 304, a HEAD, a stop): wire_bytes +
    # saved_bytes is the page's full response, kept so through not-modified re-fetches.
    saved_bytes: int = 0
    partial: str = ""  # why the stored body stops early ('' when whole): head, selector:CSS, bytes:N
    change: str = ""  # the last fetch against the one before: new, unchanged, minor, major
    checked_by: str = ""  # how the last re-fetch was checked: conditional, size, sitemap, full
    topic: str = ""  # focused crawling: the page's most likely target topic ('' when not scored)
    relevance: float = 0.0  # ... and its probability


@dataclass(frozen=True, slots=True)
class CrawlTotals:
    """Figures over the whole crawl database, for status reports."""

    responses: int  # URLs that got an HTTP response
    wire_bytes: int
    first_fetch: float  # fetch times of the first and last response (0 when none)
    last_fetch: float
    # Bandwidth: the bodies as transferred, as decoded, what stopped pages saved, and how many stopped.
    body_wire_bytes: int = 0
    body_bytes: int = 0
    saved_bytes: int = 0
    partial_pages: int = 0


@dataclass(frozen=True, slots=True)
class HostTotals:
    """Figures over one host's URLs, for status reports."""

    host: str
    states: dict[UrlState, int]  # URLs in each state (every state present, zero included)
    errors: int  # URLs with an error class recorded
    wire_bytes: int


@dataclass(frozen=True, slots=True)
class RunVerdict:
    """The command's exit status after a run, and the lines (for stderr) that explain it."""

    exit_status: int
    lines: tuple[str, ...] = ()

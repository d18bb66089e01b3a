"""A bundled demo web of three small sites, served on loopback by the standard library.

Each site gets its own loopback address (127.77.0.1, .2, .3 — all of 127/8 reaches `lo` on Linux),
all on one port, so a crawler maps the names `site-a.demo` … to them with `--resolve` and needs no DNS.
Pages link across sites as `http://site-b.demo:{{PORT}}/…`; the placeholder is replaced by the real
port as each text file is served, so the files on disk never name a port.

For a program, `demo_web()` serves it and hands back the seeds, some URLs and the options a crawl or
a download needs to reach it:

    with demo_web() as web:
        for result in harvestman.download(web.urls, **web.options):
            ...
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import mimetypes
import shlex
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from harvestman.batch.cycle import crawl_exists
from harvestman.model.errors import ConfigError
from harvestman.model.records import UrlRecord

DEMO_ROOT = Path(__file__).resolve().parent / "demo_site"
PORT_PLACEHOLDER = b"{{PORT}}"
DEMO_NET = "127.77.0.0/16"
_TEXT_TYPES = ("text/html", "text/plain", "application/xml", "text/xml", "text/css")
# Fixed, so the answers do not depend on the machine's /etc/mime.types.
_CONTENT_TYPES = {".html": "text/html", ".txt": "text/plain", ".xml": "application/xml", ".png": "image/png"}
_BIND_ATTEMPTS = 20  # an ephemeral port free on .1 may be taken on .2 or .3: try another


@dataclass(frozen=True, slots=True)
class DemoSite:
    """One demo host: its directory under demo_site/, its host name and its loopback address."""

    directory: str
    host: str
    address: str


DEMO_SITES: tuple[DemoSite, ...] = (
    DemoSite("site-a", "site-a.demo", "127.77.0.1"),
    DemoSite("site-b", "site-b.demo", "127.77.0.2"),
    DemoSite("site-c", "site-c.demo", "127.77.0.3"),
)

# Server-side redirects (301), per site directory: request path -> target path on the same site.
DEMO_REDIRECTS: dict[str, dict[str, str]] = {
    "site-a": {"/old-news.html": "/news.html"},
}


@dataclass(frozen=True, slots=True)
class DemoSight:
    """One URL of the demo worth looking at after a crawl, and what it shows."""

    host: str
    path: str
    shows: str


# What the demo web is built to show; `harvestman demo` reports each one's state after its crawl.
DEMO_SIGHTS: tuple[DemoSight, ...] = (
    DemoSight("site-a.demo", "/", "the seed: the crawl starts here and follows links across the three sites"),
    DemoSight("site-a.demo", "/private/ledger.html", "site-a's robots.txt disallows /private/"),
    DemoSight("site-a.demo", "/missing.html", "a link to a page that was never written"),
    DemoSight("site-a.demo", "/old-news.html", "a 301 to /news.html, which is fetched in its own turn"),
    DemoSight("site-a.demo", "/images/logo.png", "a binary file (PNG), stored like any page"),
    DemoSight("site-b.demo", "/", "site-b's robots.txt sets Crawl-delay: 0.1, so its fetches are spaced"),
    DemoSight("site-b.demo", "/posts/2023-12-lost.html", "a dead link from another site (site-c's events)"),
    DemoSight("site-b.demo", "/only-in-sitemap.html",
              "listed only in site-b's sitemap.xml, which its robots.txt names: found through the sitemap"),
    DemoSight("site-a.demo", "/private/index.html",
              'linked only with rel="nofollow" (from site-c\'s FAQ), so not followed'),
)


@dataclass(frozen=True, slots=True)
class DemoRequest:
    """One request the demo server answered, for tests and for the demo's summary."""

    host: str
    method: str
    path: str
    status: int
    user_agent: str
    at: float


class _SiteServer(ThreadingHTTPServer):
    """A threading HTTP server bound to one site's address; knows its site and its owner."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], site: DemoSite, owner: DemoServer) -> None:
        self.site = site
        self.owner = owner
        super().__init__(address, _DemoHandler)

    def handle_error(self, request: object, client_address: object) -> None:
        """Stay quiet: crawlers reset connections on purpose (early stop, shutdown)."""


class _DemoHandler(BaseHTTPRequestHandler):
    """Serves one site's files: GET/HEAD, 301 redirects, 404, ETag/Last-Modified, 304, byte ranges."""

    protocol_version = "HTTP/1.1"  # keep-alive, as a crawler expects of a real server
    server_version = "harvestman-demo/0.1"

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: requests are recorded on the DemoServer instead of printed."""

    def do_GET(self) -> None:
        """Answer a GET."""
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        """Answer a HEAD."""
        self._respond(send_body=False)

    @property
    def _site_server(self) -> _SiteServer:
        return cast(_SiteServer, self.server)

    def _respond(self, send_body: bool) -> None:
        server = self._site_server
        site, owner = server.site, server.owner
        path = unquote(urlsplit(self.path).path) or "/"
        self._serve(site, owner, path, send_body)

    def send_response(self, code: int, message: str | None = None) -> None:
        """Record the request, then start the response: recorded before the client can see it."""
        server = self._site_server
        user_agent = self.headers.get("User-Agent", "") if self.headers else ""
        request = DemoRequest(server.site.host, self.command, self.path, int(code), user_agent, time.time())
        server.owner._record(request)
        super().send_response(code, message)

    def _serve(self, site: DemoSite, owner: DemoServer, path: str, send_body: bool) -> int:
        base = f"http://{site.host}:{owner.port}"
        target = DEMO_REDIRECTS.get(site.directory, {}).get(path)
        if target is not None:
            return self._redirect(base + target, send_body)
        site_root = (owner.root / site.directory).resolve()
        file = (site_root / path.lstrip("/")).resolve()
        if not file.is_relative_to(site_root) or any(part.startswith(".") for part in Path(path).parts):
            return self._plain(HTTPStatus.NOT_FOUND, send_body)
        if file.is_dir():
            if not path.endswith("/"):  # as nginx does: a directory's URL ends with a slash
                return self._redirect(base + path + "/", send_body)
            file = file / "index.html"
        if not file.is_file():
            return self._plain(HTTPStatus.NOT_FOUND, send_body)
        return self._file(file, owner.port, send_body)

    def _file(self, file: Path, port: int, send_body: bool) -> int:
        ctype = _CONTENT_TYPES.get(file.suffix) or mimetypes.guess_type(file.name)[0]
        ctype = ctype or "application/octet-stream"
        body = file.read_bytes()
        if ctype in _TEXT_TYPES:
            body = body.replace(PORT_PLACEHOLDER, str(port).encode())
            ctype += "; charset=utf-8"
        mtime = int(file.stat().st_mtime)
        etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
        last_modified = email.utils.formatdate(mtime, usegmt=True)
        if self._not_modified(etag, mtime):
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", last_modified)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return HTTPStatus.NOT_MODIFIED
        status, start, end = HTTPStatus.OK, 0, len(body)
        range_header = self.headers.get("Range")
        if range_header and body:
            span = _parse_range(range_header, len(body))
            if span is None:
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE
            if span != (0, len(body)):
                status, (start, end) = HTTPStatus.PARTIAL_CONTENT, span
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", last_modified)
        self.send_header("Accept-Ranges", "bytes")
        if status == HTTPStatus.PARTIAL_CONTENT:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(body)}")
        self.end_headers()
        if send_body:
            self.wfile.write(body[start:end])
        return status

    def _not_modified(self, etag: str, mtime: int) -> bool:
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:
            return etag in {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")} or (
                if_none_match.strip() == "*"
            )
        since = self.headers.get("If-Modified-Since")
        if since:
            try:
                parsed = email.utils.parsedate_to_datetime(since)
            except (TypeError, ValueError):
                return False
            return mtime <= parsed.timestamp()
        return False

    def _redirect(self, location: str, send_body: bool) -> int:
        body = f'<html><body>Moved to <a href="{location}">{location}</a></body></html>\n'.encode()
        self.send_response(HTTPStatus.MOVED_PERMANENTLY)
        self.send_header("Location", location)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)
        return HTTPStatus.MOVED_PERMANENTLY

    def _plain(self, status: HTTPStatus, send_body: bool) -> int:
        body = f"<html><body><h1>{status.value} {status.phrase}</h1></body></html>\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)
        return int(status)


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """The [start, end) of a single `bytes=` range; the whole body for forms we do not serve."""
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return 0, size  # multi-range or another unit: a server may ignore Range and send it all
    first, _, last = spec.strip().partition("-")
    try:
        if not first:  # suffix form: the last N bytes
            n = int(last)
            return (max(0, size - n), size) if n > 0 else None
        start = int(first)
        end = min(int(last) + 1, size) if last else size
    except ValueError:
        return 0, size
    if start >= size or end <= start:
        return None
    return start, end


class DemoServer:
    """The demo web, served on 127.77.0.1–3 (one address per site, one shared port) in background threads."""

    def __init__(
        self, root: Path | None = None, port: int = 0, sites: tuple[DemoSite, ...] = DEMO_SITES
    ) -> None:
        self.root = root if root is not None else DEMO_ROOT
        self.sites = sites
        self._wanted_port = port
        self._port = 0
        self._servers: list[_SiteServer] = []
        self._threads: list[threading.Thread] = []
        self._requests: list[DemoRequest] = []
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The port every site listens on (0 before start)."""
        return self._port

    @property
    def seed_url(self) -> str:
        """Where a crawl of the demo starts: site-a's front page."""
        return self.url(self.sites[0].host, "/")

    @property
    def seeds(self) -> list[str]:
        """The seed URLs of a demo crawl."""
        return [self.seed_url]

    @property
    def resolve(self) -> list[str]:
        """`--resolve HOST:PORT:ADDR` entries mapping each demo host name to its address."""
        return [f"{site.host}:{self._port}:{site.address}" for site in self.sites]

    @property
    def allow_net(self) -> list[str]:
        """The CIDRs a crawler must be allowed to reach (loopback is private and blocked by default)."""
        return [DEMO_NET]

    def config_values(self) -> dict[str, list[str] | str]:
        """Crawl settings (names as in CrawlConfig, for `config_from_mapping`) that crawl this demo.

        `scope` is "any" because the demo's point is a crawl that crosses its three sites.
        """
        return {"seeds": self.seeds, "resolve": self.resolve, "allow_net": self.allow_net, "scope": "any"}

    def url(self, host: str, path: str = "/") -> str:
        """The absolute URL of `path` on the demo host `host` (e.g. `site-b.demo`)."""
        return f"http://{host}:{self._port}{path}"

    def requests(self) -> list[DemoRequest]:
        """Every request answered so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def _record(self, request: DemoRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def start(self) -> DemoServer:
        """Bind every site's address and start serving; returns self."""
        if self._servers:
            return self
        last_error: OSError | None = None
        attempts = 1 if self._wanted_port else _BIND_ATTEMPTS
        for _ in range(attempts):
            try:
                self._bind_all(self._wanted_port)
                break
            except OSError as exc:
                last_error = exc
                self._close_all()
        else:
            raise OSError(
                f"cannot bind the demo sites on {', '.join(s.address for s in self.sites)}"
                f" (needs Linux, where all of 127.0.0.0/8 is loopback): {last_error}"
            ) from last_error
        for server in self._servers:
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1},
                name=f"demo-{server.site.directory}", daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        return self

    def _bind_all(self, port: int) -> None:
        for site in self.sites:
            server = _SiteServer((site.address, port), site, self)
            self._servers.append(server)
            port = server.server_address[1]
        self._port = port

    def _close_all(self) -> None:
        for server in self._servers:
            server.server_close()
        self._servers.clear()

    def stop(self) -> None:
        """Stop serving and release the sockets; safe to call twice."""
        for server in self._servers:
            server.shutdown()
        for thread in self._threads:
            thread.join(timeout=5.0)
        self._threads.clear()
        self._close_all()

    def __enter__(self) -> DemoServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def demo_config_values(server: DemoServer) -> dict[str, list[str] | str]:
    """Crawl settings (names as in CrawlConfig, for `config_from_mapping`) for a running DemoServer."""
    return server.config_values()


@dataclass(frozen=True, slots=True)
class DemoWeb:
    """The running demo web, as a program needs it: where to start, what to fetch, how to reach it."""

    server: DemoServer
    seeds: tuple[str, ...]  # site-a's front page: a crawl from here crosses all three sites
    urls: tuple[str, ...]  # one URL of each kind the demo shows (DEMO_SIGHTS): pages, a 404, a 301 ...
    options: Mapping[str, Any]  # resolve and allow_net: pass to download() or CrawlConfig(...)


@contextlib.contextmanager
def demo_web() -> Iterator[DemoWeb]:
    """Serve the bundled demo web on loopback while the block runs; no internet, no DNS needed.

    `web.options` maps the demo's host names to their loopback addresses (`resolve`) and lets the
    private-address guard reach them (`allow_net`): `harvestman.download(web.urls, **web.options)`,
    `harvestman.CrawlConfig(seeds=web.seeds, scope="any", **web.options)`.
    """
    with DemoServer() as server:
        urls = tuple(server.url(sight.host, sight.path) for sight in DEMO_SIGHTS)
        options = {"resolve": tuple(server.resolve), "allow_net": tuple(server.allow_net)}
        yield DemoWeb(server, tuple(server.seeds), urls, options)


def demo_guide(server: DemoServer, folder: Path, records: Mapping[str, UrlRecord | None]) -> str:
    """What to look at after a demo crawl into `folder`: each sight's recorded state, and the commands.

    `records` holds the crawl database's row of each sight's URL (None: the crawl never met it).
    """
    seen: dict[str, int] = {}
    for request in server.requests():
        url = server.url(request.host, request.path)
        seen[url] = seen.get(url, 0) + 1
    lines = ["What the demo shows: look these URLs up in the export (state in crawl.db; requests the",
             "demo server answered):"]
    for sight in DEMO_SIGHTS:
        url = server.url(sight.host, sight.path)
        record = records.get(url)
        if record is None:
            state = "not in the crawl"
        else:
            detail = record.error_class or (f"HTTP {record.http_status}" if record.http_status else "")
            state = record.state.name.lower() + (f" ({detail})" if detail else "")
        count = seen.get(url, 0)
        lines.append(f"  {url}   {state}, {count} request{'' if count == 1 else 's'}")
        lines.append(f"      {sight.shows}")
    commands = [
        (f"harvestman status {folder}", "URLs by state, errors by class"),
        (f"harvestman export {folder}", f"one JSON line per URL, written to {folder / 'export.jsonl'}"),
        (f"{folder / 'warc'}/", "every request and response, in WARC files (*.warc.gz)"),
        (f"{folder / 'download.log'}", "one line per URL: URL|Success or URL|FAILED|reason"),
    ]
    width = max(len(command) for command, _ in commands)
    lines.append("To look for yourself:")
    lines += [f"  {command.ljust(width)}   {what}" for command, what in commands]
    return "\n".join(lines)


def check_demo_folder(folder: Path) -> None:
    """Refuse a demo into a folder that holds a crawl: the demo web's port, hence its URLs, is new each
    run, so continuing that crawl would mix two copies of the demo."""
    if crawl_exists(folder, ""):
        raise ConfigError(f"{folder} already holds a crawl: choose a new --out, or look at it with "
                          f"`harvestman status {folder}`")


# The last line `harvestman demo --serve` prints once the demo web waits for the other commands.
SERVING_LINE = "the demo web is up until Ctrl-C (or SIGTERM)"


def demo_commands(server: DemoServer, folder: Path) -> list[tuple[str, str]]:
    """The commands to try on a demo crawl while its web serves, each with what it shows."""
    where = shlex.quote(str(folder.resolve()))  # absolute: pasted in another terminal, it still works
    # No --resolve or --allow-net: the crawl folder keeps them (store/crawldir.py).
    return [
        (f"harvestman status {where}", "URLs by state, errors by class"),
        (f"harvestman crawl --out {where} --resume",
         "continue the crawl (after a stop): nothing is fetched twice"),
        (f"harvestman recrawl {where} --all",
         "fetch every page again, downloading only what changed (conditional GET)"),
        (f"harvestman index {where}", "build the full-text index of the fetched pages"),
        (f"harvestman search {where} orchard", "search it"),
        (f"harvestman export {where} --format cdxj", "a CDXJ index of the WARC files (for pywb)"),
    ]


def serving_guide(server: DemoServer, folder: Path) -> str:
    """What `harvestman demo --serve` prints once the crawl is done: the sites, the commands to paste."""
    lines = ["The demo web serves on:"]
    lines += [f"  {server.url(site.host)}   ({site.address})" for site in server.sites]
    lines.append("Try the other commands on the crawl while it serves (paste them as they are):")
    for command, what in demo_commands(server, folder):
        lines += [f"  # {what}", f"  {command}"]
    lines.append(SERVING_LINE)
    return "\n".join(lines)


def serve_until_stopped(guide: str) -> None:
    """Print `guide`, then block until Ctrl-C or SIGTERM (the demo web serves from its own threads)."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda _sig, _frame: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(guide, flush=True)  # only now: a signal sent once the guide is read must find the handler
        while not stop.wait(0.5):  # a bounded wait: a signal's handler runs between two waits at worst
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

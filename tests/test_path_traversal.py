"""Path traversal (docs/reliability.md, "path traversal"): hostile URLs and Content-Disposition headers
never choose where a file is written.

A loopback server answers every path with a page whose Content-Disposition names a file outside the
output folder ("../", "%2e%2e%2f", "\\", "%00", 300-byte names, "CON", an absolute path). The
`crawl` and `download` commands and the `download()` function run against it with the output folder
six levels deep in the test's folder, so that even six "../" stay where the test can see them. Then
nothing outside the output folder may have changed, and every file inside it must have one of the
names harvestman gives itself (no name comes from a URL or a header).
"""

from __future__ import annotations

import hashlib
import html
import re
import subprocess
from pathlib import Path
from typing import Any

import harvestman
from tests.support.crawlcheck import harvestman_cmd, warc_responses
from tests.support.httpserver import RouteHandler, RouteServer, RouteValue

HOST = "127.1.7.1"
ALLOW = ["--allow-net", "127.1.7.0/24"]
DEPTH = 6  # the output folder's depth below the test's folder: as many "../" as the URLs below use

HOSTILE_PATHS = [
    "/../../../../../../escape-dotdot",
    "/..%2f..%2f..%2f..%2f..%2f..%2fescape-encoded-slash",
    "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/escape-encoded-dots",
    "/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fescape-all-encoded",
    "/%252e%252e%252f%252e%252e%252fescape-double-encoded",
    "/..\\..\\..\\..\\..\\..\\escape-backslash",
    "/a%5c..%5c..%5c..%5c..%5c..%5c..%5cescape-encoded-backslash",
    "/nul%00byte.html",
    "/%00",
    "/" + "A" * 300,
    "/" + "x" * 300 + "/" + "y" * 300,
    "/" + "%C3%A9" * 60,
    "/CON",
    "/con.html",
    "/PRN.txt",
    "/AUX",
    "/NUL",
    "/COM1",
    "/LPT9",
    "/dir/CON/file",
    "/.",
    "/..",
    "/...",
    "/.hidden",
    "/~root",
    "/%2fetc%2fpasswd",
    "/download?name=..%2F..%2F..%2Fescape-query",
    "/trailing-dot.",
    "/a:b|c*d",
    "/redirect",
]


def _dispositions(absolute_target: Path) -> list[str]:
    return [
        'attachment; filename="../../../../../../escape-cd.txt"',
        "attachment; filename*=UTF-8''..%2F..%2F..%2F..%2F..%2F..%2Fescape-cd-ext.txt",
        'attachment; filename="..\\..\\..\\..\\..\\..\\escape-cd-backslash.txt"',
        f'attachment; filename="{absolute_target}"',
        'attachment; filename="CON"',
        'attachment; filename="nul%00.txt"',
        'attachment; filename="' + "B" * 300 + '"',
        'inline; filename="%2e%2e%2f%2e%2e%2fescape-cd-encoded.txt"',
    ]


class _EveryPath(dict[str, RouteValue]):
    """Routes that answer every path with one handler (RouteHandler looks routes up with get())."""

    def __init__(self, handler: RouteValue) -> None:
        super().__init__()
        self._handler = handler

    def get(self, key: str, default: Any = None) -> RouteValue:
        return self._handler


def _hostile_server(absolute_target: Path) -> RouteServer:
    dispositions = _dispositions(absolute_target)
    links = "".join(f'<a href="{html.escape(p, quote=True)}">{i}</a>' for i, p in enumerate(HOSTILE_PATHS))
    # Relative forms too, resolved against a deep page: the parser's view of "../".
    links += '<a href="../../../../../../escape-relative">r</a><a href="..\\..\\escape-rel-backslash">b</a>'

    def answer(handler: RouteHandler) -> None:
        if handler.path == "/robots.txt":
            handler.send_simple(404, {"Content-Type": "text/plain"}, b"none")
            return
        if handler.path == "/redirect":
            handler.send_simple(302, {"Location": "/../../../../../../escape-redirect"}, b"")
            return
        # Some answers look like file downloads; the seed is a page, or there would be nothing to follow.
        binary = handler.path != "/" and hashlib.sha1(handler.path.encode()).digest()[0] % 3 == 0
        # Every hostile name on every answer: a client may use the first or the last of them.
        headers = [("Content-Type", "application/octet-stream" if binary else "text/html; charset=utf-8")]
        headers += [("Content-Disposition", value) for value in dispositions]
        body = b"\x00\x01binary" if binary else f"<html><body>{links}</body></html>".encode()
        handler.send_simple(200, headers, body)

    server = RouteServer({}, host=HOST)
    server.routes = _EveryPath(answer)  # set after construction, which copies routes into a plain dict
    return server


def _snapshot(root: Path, skip: Path) -> dict[str, str]:
    """Every file and folder under `root` but `skip`, with a digest of each file's content."""
    state: dict[str, str] = {}
    for path in root.rglob("*"):
        if path == skip or skip in path.parents:
            continue
        state[path.relative_to(root).as_posix()] = (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir")
    return state


# Every name harvestman writes in an output folder; none of them comes from a URL or a header.
_OUR_NAMES = re.compile(
    r"crawl\.db|crawl\.db-wal|crawl\.db-shm|crawl\.db-journal|crawl\.db\.lock|crawl\.db\.writer|events\.jsonl"
    r"|download\.log|export\.jsonl|warc|warc/harvestman(-w\d+)?-\d{20}-\d{5}-[0-9a-f]{8}\.warc\.gz"
)


def _unexpected_names(out: Path) -> list[str]:
    names = [p.relative_to(out).as_posix() for p in out.rglob("*")]
    return [name for name in names if not _OUR_NAMES.fullmatch(name)]


def _run_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `harvestman ARGS` in `cwd`, where a name taken from a URL would land if it were relative."""
    return subprocess.run(harvestman_cmd(*args), cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)


def _layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The output folder DEPTH levels down, a working directory, and sibling files to watch."""
    deep = tmp_path.joinpath(*(f"level{i}" for i in range(1, DEPTH + 1)))
    deep.mkdir(parents=True)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for folder in (tmp_path, *deep.parents, deep):
        if tmp_path == folder or tmp_path in folder.parents:
            (folder / "sibling.txt").write_text(f"sibling in {folder.name}\n")
    return deep / "out", cwd, deep


def test_hostile_urls_and_content_disposition_never_write_outside_the_output_folder(tmp_path: Path) -> None:
    out, cwd, deep = _layout(tmp_path)
    target = tmp_path / "escape-cd-absolute.txt"
    dispositions = _dispositions(target)
    before = _snapshot(tmp_path, out)
    with _hostile_server(target) as srv:
        crawl = _run_in(cwd, "crawl", srv.url("/"), "--out", str(out / "crawl"), *ALLOW, "-q", "--retries",
                        "0", "--timeout", "10", "--max-depth", "3", "--max-pages", "300")
        assert crawl.returncode == 0, crawl.stderr
        url_list = deep / "urls.txt"
        url_list.write_text("".join(f"{srv.url(p)}\n" for p in HOSTILE_PATHS))
        before[url_list.relative_to(tmp_path).as_posix()] = hashlib.sha256(url_list.read_bytes()).hexdigest()
        dl = _run_in(cwd, "download", "-i", str(url_list), "--out", str(out / "download"), *ALLOW, "-q",
                     "--retries", "0", "--timeout", "10")
        assert dl.returncode == 0, dl.stderr
        results = list(harvestman.download([srv.url(p) for p in HOSTILE_PATHS], allow_net=["127.1.7.0/24"],
                                           retries=0, timeout=10, log_dir=out / "api"))
        export = _run_in(cwd, "export", str(out / "crawl"))
        assert export.returncode == 0, export.stderr
        requested = set(srv.paths)

    # The hostile answers were really fetched and stored (so the check below means something).
    assert len(requested) >= len(HOSTILE_PATHS) // 2, sorted(requested)
    assert "/" + "A" * 300 in requested
    assert all(r.header("content-disposition") == dispositions[-1] for r in results if r.status == 200)
    assert len(warc_responses(out / "crawl")) >= len(HOSTILE_PATHS) // 2
    assert len(warc_responses(out / "download")) >= len(HOSTILE_PATHS) // 2

    assert _snapshot(tmp_path, out) == before  # nothing outside the output folder changed
    assert not target.exists()
    assert not any(cwd.iterdir())  # nothing written relative to the working directory
    for run in ("crawl", "download", "api"):
        assert _unexpected_names(out / run) == [], run
    assert sorted(p.name for p in (out / "api").iterdir()) == ["download.log"]

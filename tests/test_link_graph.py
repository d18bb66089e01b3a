"""The link graph of a real loopback crawl: every fetched HTML page's http(s) links are stored (any
host, nofollow and past the depth limit too, capped per page) and `export --what links` writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.crawlcheck import run_cli
from tests.support.httpserver import RouteServer

HOST = "127.5.0.9"
HTML = {"Content-Type": "text/html; charset=utf-8"}
ELSEWHERE = 1500  # links to another host: more than the old cap of 1,000 links a page


def _page(body: str) -> tuple[int, dict[str, str], bytes]:
    return 200, HTML, f"<html><head><title>t</title>{body}</html>".encode()


ROUTES = {
    "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow:\n"),
    "/": _page('<link rel="canonical" href="/"></head><body><a href="/a">Page <b>A</b></a>'
               '<a href="/b" rel="nofollow">B</a><a href="">self</a>'
               + "".join(f'<a href="http://elsewhere.test/p{i}">e{i}</a>' for i in range(ELSEWHERE))),
    # Meta robots nofollow: /c is not followed, but the edge is kept, marked nofollow.
    "/a": _page('<meta name="robots" content="nofollow"></head><body><a href="/c">C</a>'),
    "/b": _page("</head><body>never fetched"),
    "/c": _page("</head><body>never fetched"),
}


Rows = list[dict[str, object]]


def _crawl_and_export(tmp_path: Path, fmt: str, *crawl_args: str, db: str = "") -> tuple[RouteServer, Rows]:
    out = tmp_path / "out"
    db_args = ("--db", db) if db else ()
    with RouteServer(ROUTES, host=HOST) as srv:
        done = run_cli("crawl", srv.url("/"), "--out", str(out), "--allow-net", "127.5.0.0/16", "-q",
                       *db_args, *crawl_args)
        assert done.returncode == 0, done.stderr
    target = tmp_path / f"links.{fmt}"
    done = run_cli("export", str(out), "--what", "links", "--format", fmt, "--output", str(target), *db_args)
    assert done.returncode == 0, done.stderr
    if fmt == "parquet":
        pq = pytest.importorskip("pyarrow.parquet")
        rows = pq.read_table(target).to_pylist()
    else:
        rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert done.stdout.startswith(f"{len(rows)} links written to {target}")
    return srv, rows


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_every_link_of_each_fetched_page_is_exported_without_anchor_text_by_default(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    db = request.getfixturevalue("postgres_url") if backend == "postgresql" else ""
    srv, rows = _crawl_and_export(tmp_path, "jsonl", "--workers", "1", db=db)
    assert not any(path in ("/b", "/c") for path in srv.paths)  # the following rules hold
    root, a = srv.url("/"), srv.url("/a")
    by_page: dict[object, list[tuple[object, ...]]] = {}
    for row in rows:
        assert set(row) == {"from_url", "to_url", "anchor", "kind", "nofollow"}
        assert row["anchor"] == ""  # the cheap parse: no anchor text unless --link-anchors
        by_page.setdefault(row["from_url"], []).append((row["to_url"], row["kind"], row["nofollow"]))
    assert set(by_page) == {root, a}  # only fetched HTML pages have links
    assert by_page[root][:4] == [(root, "canonical", False), (srv.url("/a"), "a", False),
                                 (srv.url("/b"), "a", True), (root, "a", False)]
    assert by_page[root][4:] == [(f"http://elsewhere.test/p{i}", "a", False) for i in range(ELSEWHERE)]
    assert by_page[a] == [(srv.url("/c"), "a", True)]


def test_anchor_texts_on_request_with_worker_processes_and_as_parquet(tmp_path: Path) -> None:
    srv, rows = _crawl_and_export(tmp_path, "parquet", "--link-anchors", "--workers", "2")
    anchors = {(row["from_url"], row["to_url"]): row["anchor"] for row in rows}
    assert anchors[(srv.url("/"), srv.url("/a"))] == "Page A"
    assert anchors[(srv.url("/"), "http://elsewhere.test/p7")] == "e7"
    assert anchors[(srv.url("/a"), srv.url("/c"))] == "C"
    assert len(rows) == 4 + ELSEWHERE + 1


def test_the_per_page_cap_bounds_the_stored_links(tmp_path: Path) -> None:
    config = tmp_path / "cap.toml"
    config.write_text("max_outlinks = 3\n", encoding="utf-8")
    srv, rows = _crawl_and_export(tmp_path, "jsonl", "--workers", "1", "--config", str(config))
    from_root = [row["to_url"] for row in rows if row["from_url"] == srv.url("/")]
    assert from_root == [srv.url("/"), srv.url("/a"), srv.url("/b")]


def test_links_are_not_an_index(tmp_path: Path) -> None:
    done = run_cli("export", str(tmp_path), "--what", "links", "--format", "cdxj")
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0 and "jsonl or parquet" in done.stderr, done.stderr

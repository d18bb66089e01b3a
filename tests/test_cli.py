"""The `harvestman` command run as a subprocess against nginx on loopback addresses: crawl, status,
export, download, --config, --log-json, demo, --resolve, the private-address guard, crawl limits,
and Ctrl-C followed by --resume."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.crawlcheck import interrupt_cli, run_cli, warc_responses
from tests.support.httpserver import RawServer
from tests.support.nginx import LogEntry, NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

HOSTS = ["127.1.2.1", "127.1.2.2", "127.1.2.3"]  # the generated multi-host site
SLOW = "127.1.2.8"  # one host with many pages, for the Ctrl-C test
CHAIN = "127.1.2.9"  # a small hand-written tree, for the limits
ALLOW = ["--allow-net", "127.1.0.0/16"]
# CHAIN's pages: / -> /a/1 -> /a/2 -> /a/3 and / -> /b/1 -> /b/2 (depth = number of hops).
CHAIN_LINKS = {
    "/": ["/a/1.html", "/b/1.html"],
    "/a/1.html": ["/a/2.html"],
    "/a/2.html": ["/a/3.html"],
    "/a/3.html": [],
    "/b/1.html": ["/b/2.html"],
    "/b/2.html": [],
}


@dataclass(frozen=True)
class Web:
    """The nginx serving every test site, and what was generated."""

    server: NginxServer
    spec: SiteSpec
    slow: SiteSpec

    def chain_url(self, path: str) -> str:
        """URL of a page of the CHAIN site."""
        return self.server.url(CHAIN, path)


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    require_nginx()
    root = tmp_path_factory.mktemp("www")
    port = free_port(HOSTS[0])
    spec = generate_site(root, HOSTS, 10, 4, seed=11, port=port)
    slow = generate_site(root, [SLOW], 40, 3, seed=5, port=port, broken_per_host=0)
    chain = root / CHAIN
    for path, links in CHAIN_LINKS.items():
        file = chain / ("index.html" if path == "/" else path.lstrip("/"))
        file.parent.mkdir(parents=True, exist_ok=True)
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
        file.write_text(f"<html><head><title>{path}</title></head><body>{anchors}</body></html>")
    (chain / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    with NginxServer(root, [*HOSTS, SLOW, CHAIN], port) as server:
        yield Web(server, spec, slow)


def during(web: Web, action: Callable[[], subprocess.CompletedProcess[str]]) -> tuple[
        subprocess.CompletedProcess[str], list[LogEntry]]:
    """Run `action` and return what it returned with the requests nginx logged meanwhile."""
    before = len(web.server.requests())
    done = action()
    time.sleep(0.05)  # nginx logs just after it responds
    return done, web.server.requests()[before:]


def pages(entries: list[LogEntry]) -> Counter[str]:
    """Requested URLs (robots.txt left out) and how often each was requested."""
    return Counter(
        f"http://{e.server_addr}:{e.server_port}{e.uri}" for e in entries if e.uri != "/robots.txt"
    )


def export_rows(out: Path) -> list[dict[str, object]]:
    """`harvestman export OUT --format jsonl`, read back."""
    done = run_cli("export", str(out), "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in (out / "export.jsonl").read_text().splitlines()]


def db_urls(out: Path) -> int:
    with sqlite3.connect(out / "crawl.db") as db:
        return int(db.execute("SELECT count(*) FROM urls").fetchone()[0])


@pytest.fixture(scope="module")
def crawled(web: Web, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[LogEntry]]:
    """One crawl of the multi-host site, shared by the status and export tests."""
    out = tmp_path_factory.mktemp("crawl") / "out"
    done, entries = during(
        web, lambda: run_cli("crawl", *web.spec.seeds, "--out", str(out), *ALLOW, "--scope", "any", "-q")
    )
    assert done.returncode == 0, done.stderr
    assert set(pages(entries)) == set(web.spec.reachable) | set(web.spec.missing)
    return out, entries


def test_status_human_and_json(web: Web, crawled: tuple[Path, list[LogEntry]]) -> None:
    out, entries = crawled
    spec = web.spec
    human = run_cli("status", str(out))
    assert human.returncode == 0, human.stderr
    assert "URLs fetched" in human.stdout and f"{len(spec.reachable):,}" in human.stdout
    assert "hosts" in human.stdout and "errors by class" in human.stdout and "http_404" in human.stdout

    done = run_cli("status", str(out), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["states"]["fetched"] == len(spec.reachable)
    assert report["states"]["gone"] == len(spec.missing) + len(spec.disallowed)
    assert report["states"]["unfetched"] == 0
    assert sum(report["states"].values()) == db_urls(out)
    assert report["host_count"] == len(report["hosts"]) == len(HOSTS)
    assert report["errors"] == {"http_404": len(spec.missing), "robots": len(spec.disallowed)}
    # URLs with a response: the pages and the 404s, not the URLs robots.txt kept out.
    assert report["responses"] == len(spec.reachable) + len(spec.missing)
    # The hosts add up to the whole.
    for key in ("urls", "errors", "wire_bytes"):
        assert sum(host[key] for host in report["hosts"].values()) == (
            report[key] if key != "errors" else sum(report["errors"].values()))
    for state, count in report["states"].items():
        assert sum(host["states"][state] for host in report["hosts"].values()) == count
    assert all(host in human.stdout for host in HOSTS)
    # Bytes on the wire: at least every body nginx sent (the heads come on top).
    sent = sum(e.bytes_sent for e in entries if e.uri != "/robots.txt")
    assert sent < report["wire_bytes"] < 3 * sent
    assert report["pages_per_second"] > 0


def test_export_jsonl_and_parquet(web: Web, crawled: tuple[Path, list[LogEntry]]) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out, _ = crawled
    spec = web.spec
    rows = export_rows(out)
    assert len(rows) == db_urls(out)
    by_url = {str(row["url"]): row for row in rows}
    assert len(by_url) == len(rows)  # one record per URL
    assert set(by_url) == set(spec.reachable) | set(spec.missing) | set(spec.disallowed)
    for url in spec.reachable:
        row = by_url[url]
        assert row["state"] == "fetched" and row["http_status"] == 200
        assert row["content_type"] == "text/html" and int(str(row["body_size"])) > 0
        assert str(row["fetch_time"]).endswith("Z") and row["signature"] and row["host"] in HOSTS
        assert row["final_url"] == url and row["title"] == url  # sitegen titles a page with its URL
    for url in spec.missing:
        assert (by_url[url]["state"], by_url[url]["http_status"], by_url[url]["error_class"]) == (
            "gone", 404, "http_404")
    for url in spec.disallowed:
        assert (by_url[url]["state"], by_url[url]["error_class"]) == ("gone", "robots")
    assert by_url[spec.seeds[0]]["depth"] == 0

    target = out / "urls.parquet"
    done = run_cli("export", str(out), "--format", "parquet", "--output", str(target))
    assert done.returncode == 0, done.stderr
    assert f"{len(rows)} records written" in done.stdout
    table = pq.read_table(target)
    assert table.num_rows == db_urls(out)
    parquet_rows = {row["url"]: row for row in table.to_pylist()}
    assert set(parquet_rows) == set(by_url)
    assert {row["state"] for row in parquet_rows.values()} == {"fetched", "gone"}
    assert parquet_rows[spec.seeds[0]]["http_status"] == 200


def test_download_fetches_exactly_the_listed_urls(web: Web, tmp_path: Path) -> None:
    spec = web.spec
    listed = sorted(spec.reachable)[:3] + sorted(spec.missing)[:1]
    url_file = tmp_path / "urls.txt"
    url_file.write_text("# a comment\n\n" + "\n".join(listed) + "\n")
    out = tmp_path / "dl"
    done, entries = during(
        web, lambda: run_cli("download", "-i", str(url_file), "--out", str(out), *ALLOW, "-q")
    )
    assert done.returncode == 0, done.stderr
    assert pages(entries) == Counter(listed)  # each listed URL once, no link followed
    assert set(warc_responses(out)) >= set(listed)
    log = sorted((out / "download.log").read_text().splitlines())
    expected = [f"{url}|Success" for url in listed if url in spec.reachable]
    expected += [f"{url}|FAILED|HTTP 404" for url in listed if url in spec.missing]
    assert log == sorted(expected)
    assert {row["url"] for row in export_rows(out)} == set(listed)


@pytest.mark.parametrize("text", [
    '[crawl]\nmax_pages = 3\nper_host = 1\nscope = "host"\nallow_net = ["127.1.0.0/16"]\nquiet = true\n',
    # The same in section tables.
    '[run]\nmax_pages = 3\nquiet = true\n[politeness]\nper_host = 1\n[links]\nscope = "host"\n'
    '[fetch]\nallow_net = ["127.1.0.0/16"]\n',
], ids=["flat", "sections"])
def test_config_file_sets_options_and_the_command_line_overrides_it(web: Web, tmp_path: Path,
                                                                    text: str) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(text)
    seed = web.chain_url("/")  # no robots-disallowed links there: every URL done is a request
    done, entries = during(web, lambda: run_cli("crawl", seed, "--out", str(tmp_path / "a"), "--config",
                                                str(config)))
    assert done.returncode == 0, done.stderr
    assert sum(pages(entries).values()) == 3
    assert done.stdout == ""  # quiet = true came from the file
    done, entries = during(web, lambda: run_cli("crawl", seed, "--out", str(tmp_path / "b"), "--config",
                                                str(config), "--max-pages", "5"))
    assert done.returncode == 0, done.stderr
    assert sum(pages(entries).values()) == 5


@pytest.mark.parametrize(
    "text, message",
    [
        ("[crawl]\nmax_pages = 3\nfavourite_colour = 'green'\n", "unknown setting 'favourite_colour'"),
        ("max_pages = = 3\n", "is not valid TOML"),
        ("[crawl]\nscope = 'galaxy'\n", "scope must be one of"),
        ("[crawl]\nmax_pages = 'ten'\n", "max_pages"),
        ("[crawl]\ninclude = 5\n", "include"),
        ("[crawl]\nuser_agent = 5\n", "user_agent"),
        ("crawl = 5\n", "[crawl] must be a table"),
        ("[crawl]\nquiet = 'no'\n", "quiet"),
        ("[crawl]\nmax_depth = true\n", "max_depth"),
        ("[crawl]\nextra_headers = 5\n", "extra_headers"),
        ("seeds = 5\n", "seeds"),
        ("[fetch]\nper_host = 1\n", "'per_host' belongs in [politeness], not in [fetch]"),
        (b"user_agent = 'caf\xe9'\n", "is not UTF-8 text (byte 0xe9 at offset 17)"),  # Latin-1
    ],
)
def test_a_bad_config_file_gets_exit_2_and_one_line(tmp_path: Path, text: str | bytes, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    done = run_cli("crawl", "http://x.invalid/", "--out", str(tmp_path / "out"), "--config", str(config))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_seed_string_in_the_config_file(web: Web, tmp_path: Path) -> None:
    config = tmp_path / "seeds.toml"
    config.write_text(f'seeds = "{web.chain_url("/")}"\nallow_net = "127.1.0.0/16"\nmax_depth = 0\n')
    done, entries = during(web, lambda: run_cli("crawl", "--out", str(tmp_path / "out"), "--config",
                                                str(config), "-q"))
    assert done.returncode == 0, done.stderr
    assert list(pages(entries)) == [web.chain_url("/")]


def test_log_json_prints_one_event_per_line(web: Web, tmp_path: Path) -> None:
    done = run_cli("crawl", web.chain_url("/"), "--out", str(tmp_path / "out"), *ALLOW, "--log-json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events and all(isinstance(e, dict) and "time" in e for e in events)
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "crawl_started" and kinds[-1] == "crawl_finished"
    fetched = {e["url"] for e in events if e["kind"] == "fetched"}
    assert fetched == {web.chain_url(p) for p in CHAIN_LINKS}
    assert all(e["status"] == 200 and e["bytes"] > 0 for e in events if e["kind"] == "fetched")
    # The same events went to events.jsonl: worker processes append theirs a batch at a time, so the
    # two interleave differently.
    stored = [line for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]
    assert sorted(stored) == sorted(done.stdout.splitlines())


def test_demo_crawls_three_hosts_and_skips_private_pages(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = run_cli("demo", "--out", str(out), "-q", timeout=60)
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout
    report = json.loads(run_cli("status", str(out), "--json").stdout)
    assert report["host_count"] == 3 and report["states"]["fetched"] >= 30
    assert report["errors"].get("robots", 0) >= 1
    rows = export_rows(out)
    fetched_hosts = {str(row["host"]).split(":")[0] for row in rows if row["state"] == "fetched"}
    assert fetched_hosts == {"site-a.demo", "site-b.demo", "site-c.demo"}
    private = [row for row in rows if "/private/" in str(row["url"])]
    assert private, "the demo links its private pages"
    for row in private:
        assert (row["state"], row["error_class"], row["http_status"]) == ("gone", "robots", 0)
    assert not [row for row in rows if "/private/" in str(row["url"]) and row["wire_bytes"]]


def test_resolve_pins_a_made_up_host_name(web: Web, tmp_path: Path) -> None:
    port = web.server.port
    seed = f"http://orchard.test:{port}/"
    out = tmp_path / "out"
    done, entries = during(web, lambda: run_cli("crawl", seed, "--out", str(out), *ALLOW, "-q",
                                                "--resolve", f"orchard.test:{port}:{CHAIN}"))
    assert done.returncode == 0, done.stderr
    assert {e.server_addr for e in entries} == {CHAIN}
    assert sorted(e.uri for e in entries) == sorted(["/robots.txt", *CHAIN_LINKS])
    rows = export_rows(out)
    assert {str(row["url"]) for row in rows} == {f"http://orchard.test:{port}{p}" for p in CHAIN_LINKS}
    assert all(row["state"] == "fetched" and row["host"] == "orchard.test" for row in rows)


def _crawl_canary(tmp_path: Path, *options: str) -> tuple[Path, str]:
    """Crawl a seed on 127.0.0.1 without --allow-net; the listener there must see no connection."""
    out = tmp_path / "out"
    with RawServer(lambda conn: None, host="127.0.0.1") as canary:
        done = run_cli("crawl", canary.url("/secret"), "--out", str(out), "-q", *options)
        time.sleep(0.1)
        assert canary.connections == 0
    assert done.returncode == 4, done.stderr  # a network failure: nothing was fetched
    return out, canary.url("/secret")


def test_a_loopback_seed_without_allow_net_is_refused(tmp_path: Path) -> None:
    out, url = _crawl_canary(tmp_path, "--ignore-robots")
    [row] = export_rows(out)
    assert row["url"] == url
    assert (row["state"], row["error_class"], row["http_status"]) == ("gone", "blocked_address", 0)
    [line] = (out / "download.log").read_text().splitlines()
    assert line.startswith(f"{url}|FAILED|") and "blocked_address" in line


def test_a_loopback_seed_is_recorded_as_blocked_when_robots_are_obeyed(tmp_path: Path) -> None:
    out, _ = _crawl_canary(tmp_path)
    [row] = export_rows(out)
    assert (row["state"], row["error_class"]) == ("gone", "blocked_address")


@pytest.mark.parametrize(
    "options, expected",
    [
        (["--max-pages", "2"], 2),
        (["--max-depth", "0"], ["/"]),
        (["--max-depth", "1"], ["/", "/a/1.html", "/b/1.html"]),
        (["--max-depth", "2"], ["/", "/a/1.html", "/a/2.html", "/b/1.html", "/b/2.html"]),
        (["--include", "/a/"], ["/", "/a/1.html", "/a/2.html", "/a/3.html"]),
        (["--exclude", r"/b/\d"], ["/", "/a/1.html", "/a/2.html", "/a/3.html"]),
        (["--include", "/a/", "--exclude", r"3\.html$"], ["/", "/a/1.html", "/a/2.html"]),
        ([], list(CHAIN_LINKS)),
    ],
)
def test_limits_and_filters_change_what_is_fetched(
    web: Web, tmp_path: Path, options: list[str], expected: int | list[str]
) -> None:
    out = tmp_path / "out"
    done, entries = during(web, lambda: run_cli("crawl", web.chain_url("/"), "--out", str(out), *ALLOW, "-q",
                                                *options))
    assert done.returncode == 0, done.stderr
    requested = pages(entries)
    assert max(requested.values()) == 1
    if isinstance(expected, int):
        assert len(requested) == expected
    else:
        assert sorted(requested) == sorted(web.chain_url(p) for p in expected)


def test_ctrl_c_stops_cleanly_and_resume_finishes(web: Web, tmp_path: Path) -> None:
    spec = web.slow
    out = tmp_path / "out"
    args = ["crawl", *spec.seeds, "--out", str(out), *ALLOW, "-q", "--per-host", "1"]
    before = len(web.server.requests())
    stopped = interrupt_cli(*args, "--delay", "0.1", wait=20, timeout=10,
                            ready=lambda _pid: len(web.server.requests()) - before >= 6)
    assert stopped.returncode == 0, stopped.stderr
    assert "Traceback" not in stopped.stderr
    time.sleep(0.05)
    first = pages(web.server.requests()[before:])
    assert 0 < sum(first.values()) < len(spec.reachable), "the crawl ended before Ctrl-C could stop it"
    report = json.loads(run_cli("status", str(out), "--json").stdout)
    assert report["states"]["unfetched"] > 0 and report["states"]["fetched"] == sum(first.values())

    done, entries = during(web, lambda: run_cli(*args, "--resume"))
    assert done.returncode == 0, done.stderr
    total = first + pages(entries)
    assert set(total) == set(spec.reachable)
    assert max(total.values()) == 1  # a clean stop stores what was in flight: nothing is fetched twice
    report = json.loads(run_cli("status", str(out), "--json").stdout)
    assert report["states"]["fetched"] == len(spec.reachable) and report["states"]["unfetched"] == 0

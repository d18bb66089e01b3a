"""The second command on a crawl: `--resume` and `recrawl` take the first run's settings from the
crawl, failures whose cause was mended are fetched again, and bad set-ups are refused before
anything is created. Every crawl here is of nginx on loopback; names are pinned with --resolve,
and the one test that runs without its pins does so behind a private resolver."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.crawlcheck import interrupt_cli, run_cli
from tests.support.fakedns import FakeDns, require_private_resolver
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import SiteSpec, generate_site

SLOW = "127.3.0.2"  # many pages: a crawl slow enough to stop midway
SMALL = "127.3.0.3"  # a few pages, one of them missing (404), one kept out by robots.txt
ALLOW = ["--allow-net", "127.3.0.0/16"]
NAME = "site.test"  # SMALL's name in the crawls that use one


@dataclass(frozen=True)
class Web:
    server: NginxServer
    slow: SiteSpec

    def small(self, path: str = "/", host: str = SMALL) -> str:
        return self.server.url(host, path)


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    require_nginx()
    root = tmp_path_factory.mktemp("www")
    port = free_port(SLOW)
    slow = generate_site(root, [SLOW], 40, 3, seed=7, port=port, broken_per_host=0)
    small = root / SMALL
    (small / "private").mkdir(parents=True)
    (small / "index.html").write_text(
        '<html><head><title>home</title></head><body><a href="/a.html">a</a> <a href="/gone.html">gone</a>'
        ' <a href="/private/p.html">p</a></body></html>')
    (small / "a.html").write_text("<html><head><title>a</title></head><body>page a</body></html>")
    (small / "private" / "p.html").write_text("<html><body>private</body></html>")
    (small / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    with NginxServer(root, [SLOW, SMALL], port) as server:
        yield Web(server, slow)


def status(out: Path) -> dict[str, object]:
    done = run_cli("status", str(out), "--json")
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def states(out: Path) -> dict[str, int]:
    found = status(out)["states"]
    assert isinstance(found, dict)
    return found


def rows(out: Path, *db: str) -> dict[str, dict[str, object]]:
    done = run_cli("export", str(out), "--format", "jsonl", "--output", str(out / "rows.jsonl"), *db)
    assert done.returncode == 0, done.stderr
    lines = (out / "rows.jsonl").read_text().splitlines()
    return {row["url"]: row for row in map(json.loads, lines)}


def requested(web: Web, since: int) -> list[str]:
    time.sleep(0.05)  # nginx logs just after it answers
    return [e.uri for e in web.server.requests()[since:] if e.uri != "/robots.txt"]


def test_resume_without_the_first_runs_flags_keeps_them(web: Web, tmp_path: Path) -> None:
    """Finding 1: `--resume` typed without `--allow-net` used to end every URL left `gone`."""
    out = tmp_path / "out"
    before = len(web.server.requests())
    stopped = interrupt_cli("crawl", *web.slow.seeds, "--out", str(out), *ALLOW, "-q", "--per-host", "1",
                            "--delay", "0.1", wait=20, timeout=10,
                            ready=lambda _pid: len(web.server.requests()) - before >= 6)
    assert stopped.returncode == 0, stopped.stderr
    assert states(out)["unfetched"] > 0, "the crawl ended before Ctrl-C could stop it"

    done = run_cli("crawl", "--out", str(out), "--resume", "-q")
    assert done.returncode == 0, done.stderr
    found = states(out)
    assert found["unfetched"] == 0 and found["fetched"] == len(web.slow.reachable)
    assert status(out)["errors"] == {"robots": len(web.slow.disallowed)}  # no blocked_address


def test_a_flag_given_on_resume_replaces_the_stored_one_and_says_so(web: Web, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_cli("crawl", web.small(), "--out", str(out), *ALLOW, "-q", "--max-depth", "0")
    assert first.returncode == 0, first.stderr
    assert set(rows(out)) == {web.small()}
    done = run_cli("crawl", "--out", str(out), "--resume", "-q", "--max-depth", "1")
    assert done.returncode == 0, done.stderr
    assert "--max-depth: 1 replaces the crawl's stored 0" in done.stderr
    again = run_cli("crawl", "--out", str(out), "--resume", "-q")  # kept: nothing to say
    assert again.returncode == 0 and "replaces" not in again.stderr, again.stderr


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_seed_refused_for_a_missing_allow_net_is_fetched_once_it_is_given(
        web: Web, tmp_path: Path, request: pytest.FixtureRequest, backend: str) -> None:
    """Finding 3: the URL stayed dead (exit 4, the same hint) after `--resume --allow-net`."""
    out = tmp_path / "out"
    db = ["--db", request.getfixturevalue("postgres_url")] if backend == "postgres" else []
    refused = run_cli("crawl", web.small(), "--out", str(out), "-q", *db)
    assert refused.returncode == 4, refused.stderr
    assert rows(out, *db)[web.small()]["error_class"] == "blocked_address"

    since = len(web.server.requests())
    done = run_cli("crawl", "--out", str(out), "--resume", *ALLOW, *db)
    assert done.returncode == 0, done.stderr
    assert "1 failed URLs queued again (1 --allow-net allows them)" in done.stderr
    assert sorted(requested(web, since)) == ["/", "/a.html", "/gone.html"]
    found = rows(out, *db)
    assert found[web.small()]["state"] == "fetched" and found[web.small("/a.html")]["state"] == "fetched"
    # Kept for later runs: a resume typed without the flag revives nothing and refuses nothing.
    again = run_cli("crawl", "--out", str(out), "--resume", "-q", *db)
    assert again.returncode == 0 and "queued again" not in again.stderr, again.stderr


def test_robots_and_retry_failed_revive_what_they_name(web: Web, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_cli("crawl", web.small(), "--out", str(out), *ALLOW, "-q")
    assert first.returncode == 0, first.stderr
    found = rows(out)
    assert found[web.small("/private/p.html")]["error_class"] == "robots"
    assert found[web.small("/gone.html")]["error_class"] == "http_404"

    since = len(web.server.requests())
    done = run_cli("crawl", "--out", str(out), "--resume", "--ignore-robots", "--retry-failed", "http_4xx")
    assert done.returncode != 2, done.stderr
    assert "2 failed URLs queued again" in done.stderr
    assert sorted(requested(web, since)) == ["/gone.html", "/private/p.html"]
    assert rows(out)[web.small("/private/p.html")]["state"] == "fetched"

    bad = run_cli("crawl", "--out", str(out), "--resume", "--retry-failed", "no such class")
    assert bad.returncode == 2 and "--retry-failed" in bad.stderr and "Traceback" not in bad.stderr


def test_recrawl_takes_the_crawls_resolve_pins_and_asks_no_resolver(web: Web, tmp_path: Path) -> None:
    """Finding 2: `recrawl --all` without `--resolve` marked every page gone (dns), asking the
    system's resolver for the crawl's names. Here a private resolver answers NXDOMAIN to all."""
    out = tmp_path / "out"
    port = web.server.port
    seed = f"http://{NAME}:{port}/"
    first = run_cli("crawl", seed, "--out", str(out), *ALLOW, "--resolve", f"{NAME}:{port}:{SMALL}", "-q")
    assert first.returncode == 0, first.stderr
    fetched = states(out)["fetched"]
    assert fetched == 2  # the home page and /a.html
    # Its own address (not FakeDns's default): test modules may run at once (pytest -n).
    with FakeDns({}, address="127.53.2.1") as dns:
        prefix = require_private_resolver(dns, tmp_path)
        args = [*prefix, sys.executable, "-m", "harvestman.app.cli", "recrawl", str(out), "--all", "--json"]
        done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert not dns.queries_for(NAME)
    report = json.loads(done.stdout)
    assert report["checked"] == fetched and report["gone"] == 0
    assert states(out)["fetched"] + states(out)["not_modified"] == fetched


def test_postgres_without_psycopg_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    """Finding 11: `crawl --db postgresql://...` without psycopg made DIR/warc/ before refusing."""
    out = tmp_path / "out"
    code = ("import sys; sys.modules['psycopg'] = None\n"  # as if it were not installed
            "from harvestman.app.cli import main\n"
            f"sys.exit(main(['crawl', 'http://127.3.0.3/', '--db', 'postgresql://u@127.0.0.1/x', "
            f"'--out', {str(out)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2, done.stderr
    assert "pip install '.[postgres]'" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_replay_reads_example_pages_from_the_crawl_it_replays(web: Web, tmp_path: Path) -> None:
    """Finding 10: `replay --focus` refused example URLs on loopback (no --allow-net there), though
    the replayed crawl holds those very pages."""
    out = tmp_path / "out"
    first = run_cli("crawl", web.small(), "--out", str(out), *ALLOW, "-q")
    assert first.returncode == 0, first.stderr
    other = tmp_path / "other.txt"
    other.write_text("weather report: rain, wind and snow over the hills all week", encoding="utf-8")
    focus = tmp_path / "focus.toml"
    focus.write_text(f'mode = "soft"\n[[topic]]\nname = "a"\npositive = ["{web.small("/a.html")}"]\n'
                     f'negative = ["{other}"]\n', encoding="utf-8")
    since = len(web.server.requests())
    done = run_cli("replay", str(out), "--focus", str(focus), "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    assert requested(web, since) == []  # the example was read from the crawl: no request at all
    assert (tmp_path / "report" / "summary.json").is_file()


def test_a_recrawl_of_a_site_that_is_down_says_so_and_retry_failed_mends_it(tmp_path: Path) -> None:
    """A re-crawl while the site is down used to end every page `gone` with exit 0, silently."""
    root = tmp_path / "www"
    (root / SMALL).mkdir(parents=True)
    (root / SMALL / "index.html").write_text('<html><body><a href="/a.html">a</a></body></html>')
    (root / SMALL / "a.html").write_text("<html><body>page a</body></html>")
    port = free_port(SMALL)
    out = tmp_path / "out"
    with NginxServer(root, [SMALL], port) as server:
        first = run_cli("crawl", server.url(SMALL), "--out", str(out), *ALLOW, "-q")
        assert first.returncode == 0, first.stderr
    down = run_cli("recrawl", str(out), "--all", "--retries", "0")
    assert down.returncode == 4, down.stdout + down.stderr  # a network failure, as `crawl` says it
    assert "every page checked failed (connect 2)" in down.stderr
    assert "--retry-failed connect" in down.stderr and "Traceback" not in down.stderr
    with NginxServer(root, [SMALL], port):
        back = run_cli("recrawl", str(out), "--all", "--json", "--retry-failed", "connect")
    assert back.returncode == 0, back.stderr
    report = json.loads(back.stdout)
    assert report["revived"] == 2 and report["gone"] == 0
    assert states(out)["fetched"] == 2

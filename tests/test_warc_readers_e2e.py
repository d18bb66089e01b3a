"""What reads a crawl's WARC files, over real crawls: the CDXJ export of a cycle crawl (its WARC files
are the segments'), and the search index built while the crawl runs, then after (`harvestman index`,
the served search)."""

from __future__ import annotations

import json
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvestman.store.sqlite_store import SqliteStore
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.support.sitegen import generate_site

HOSTS = ["127.9.4.1", "127.9.4.2"]
NET = ("--allow-net", "127.9.0.0/16")


def _responses(out: Path) -> int:
    """The response records in every WARC file of the crawl in `out`."""
    count = 0
    for path in out.glob("**/*.warc.gz"):
        with path.open("rb") as stream:
            count += sum(1 for r in ArchiveIterator(stream) if r.rec_type == "response")
    return count


# -- the CDXJ export of a cycle crawl ----------------------------------------------------------------


def test_cdxj_export_of_a_cycle_crawl_indexes_the_segments_warc_files(tmp_path: Path) -> None:
    require_nginx()
    port = free_port(HOSTS[0])
    spec = generate_site(tmp_path / "site", HOSTS, 6, 3, seed=3, port=port)
    out = tmp_path / "out"
    with NginxServer(tmp_path / "site", HOSTS, port):
        done = run_cli("crawl", *spec.seeds, "--out", str(out), *NET, "--scope", "any", "-q",
                       "--rounds", "2", "--top-n", "1000", timeout=120)
        assert done.returncode == 0, done.stderr
    assert not (out / "warc").exists() and list(out.glob("segments/*/warc/*.warc.gz"))  # segments only
    done = run_cli("export", str(out), "--format", "cdxj")
    assert done.returncode == 0, done.stderr
    lines = (out / "index.cdxj").read_text().splitlines()
    assert len(lines) == _responses(out) > 0
    assert f"{len(lines)} index lines written" in done.stdout
    for line in lines:
        entry = json.loads(line.split(" ", 2)[2])
        with open(out / entry["filename"], "rb") as warc:  # relative to DIR
            warc.seek(int(entry["offset"]))
            record = next(iter(ArchiveIterator(warc)))
            assert record.rec_headers.get_header("WARC-Target-URI") == entry["url"]


def test_cdxj_export_of_a_crawl_without_warc_records_says_so(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "crawl.db", host_of=lambda u: "a.test").close()
    done = run_cli("export", str(tmp_path), "--format", "cdxj")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("0 index lines written")
    assert "no finished WARC file" in done.stderr

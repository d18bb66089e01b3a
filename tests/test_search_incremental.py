"""The search index kept up to date over a re-crawl (only the changed page replaced, a 404'd page removed,
duplicates left out after dedup), and its export as OpenSearch and Solr bulk files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import harvestman
from harvestman.index.export import PART_DOCS
from harvestman.model.records import UrlState
from harvestman.store.factory import open_store
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port, require_nginx
from tests.test_search import HOSTS, NET, page, write_site


def found_urls(out: Path, query: str) -> set[str]:
    return {h.url for h in harvestman.search(out, query, limit=50).hits}


def index(out: Path) -> str:
    done = run_cli("index", str(out))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_reindex_after_a_recrawl_replaces_changed_removes_gone_and_duplicates(tmp_path: Path) -> None:
    require_nginx()
    port = free_port(HOSTS[0])
    root = tmp_path / "site"
    site = write_site(root, port)
    out = tmp_path / "out"
    with NginxServer(root, HOSTS, port):
        # The run ends with its re-visits waiting; --resume makes them after the site changed.
        done = run_cli("crawl", site["front"], "--out", str(out), *NET, "--revisit-after", "1",
                       "--max-wait", "0.5", timeout=60)
        assert done.returncode == 0, done.stderr
        assert index(out).startswith("7 pages in the index (7 added, 0 replaced, 0 removed, 0 unchanged)")
        assert index(out).startswith("7 pages in the index (0 added, 0 replaced, 0 removed, 7 unchanged)")
        assert found_urls(out, "fax") == {site["gone"]}

        (root / HOSTS[0] / "python.html").write_text(page("Python tutorial", "<p>Now about generators.</p>"))
        (root / HOSTS[0] / "gone.html").unlink()
        time.sleep(1.2)  # past the re-visit time
        # --revisit-after 0 replaces the stored 1: this re-visit is the last.
        done = run_cli("crawl", "--resume", "--out", str(out), *NET, "--revisit-after", "0", timeout=60)
        assert done.returncode == 0, done.stderr
    store = open_store(str(out / "crawl.db"), read_only=True)
    try:
        records = {r.url: r for r in store.records()}
    finally:
        store.close()
    assert records[site["gone"]].state == UrlState.GONE
    assert records[site["rust"]].state == UrlState.NOT_MODIFIED  # re-visited, the same
    assert records[site["python"]].state == UrlState.FETCHED
    assert index(out).startswith("6 pages in the index (0 added, 1 replaced, 1 removed, 5 unchanged)")
    assert found_urls(out, "generators") == {site["python"]}
    assert found_urls(out, "dictionaries") == set()  # the old text is gone with the old version
    assert found_urls(out, "fax") == set()
    assert site["rust"] in found_urls(out, "ownership")  # an unchanged page stays

    # rust.html and copy.html are one page: dedup keeps one, the index drops the other.
    done = run_cli("dedup", str(out))
    assert done.returncode == 0, done.stderr
    assert "1 duplicates" in done.stdout, done.stdout
    assert index(out).startswith("5 pages in the index (0 added, 0 replaced, 1 removed, 5 unchanged)")
    assert len(found_urls(out, "ownership")) == 1

    done = run_cli("index", str(out), "--rebuild")
    assert done.returncode == 0  # from empty: every page added again
    assert done.stdout.startswith("5 pages in the index (5 added, 0 replaced")


def test_export_as_opensearch_bulk_and_solr_update_files(tmp_path: Path) -> None:
    require_nginx()
    port = free_port(HOSTS[0])
    site = write_site(tmp_path / "site", port)
    out = tmp_path / "out"
    with NginxServer(tmp_path / "site", HOSTS, port):
        done = run_cli("crawl", site["front"], "--out", str(out), *NET)
    assert done.returncode == 0, done.stderr
    index(out)

    done = run_cli("export", str(out), "--what", "index", "--format", "opensearch")
    assert done.returncode == 0, done.stderr
    folder = out / "export" / "opensearch"
    assert done.stdout.strip() == f"7 documents written to {folder}"
    mapping = json.loads((folder / "mapping.json").read_text())
    properties = mapping["mappings"]["properties"]
    lines = (folder / "bulk-00000.ndjson").read_text().splitlines()
    assert len(lines) == 14 and (folder / "bulk-00000.ndjson").read_text().endswith("\n")
    docs = {}
    for action, source in zip(lines[::2], lines[1::2], strict=True):
        meta = json.loads(action)["index"]
        doc = json.loads(source)
        assert meta["_index"] == "harvestman" and meta["_id"] == doc["url"]
        assert set(doc) <= set(properties), set(doc) - set(properties)  # every field mapped
        docs[doc["url"]] = doc
    assert set(docs) == {site[n] for n in ("front", "other", "python", "rust", "secret", "gone", "copy")}
    secret = docs[site["secret"]]
    assert secret["title"] == "Stripes" and "savanna" in secret["content"]
    assert "zebra crossing" in secret["anchor"]
    assert secret["host"][0] == HOSTS[0] and f"{HOSTS[0]}:{port}" in secret["host"]
    assert properties["anchor"]["type"] == "text" and properties["host"]["type"] == "keyword"

    done = run_cli("export", str(out), "--what", "index", "--format", "solr", "--output", str(tmp_path / "s"))
    assert done.returncode == 0, done.stderr
    schema = json.loads((tmp_path / "s" / "schema.json").read_text())
    fields = {f["name"]: f for f in schema["add-field"]}
    solr_docs = json.loads((tmp_path / "s" / "docs-00000.json").read_text())
    assert len(solr_docs) == 7 and all(set(d) <= set(fields) | {"id"} for d in solr_docs)
    assert fields["anchor"]["multiValued"] and fields["content"]["type"] == "text_en"
    assert {d["id"] for d in solr_docs} == set(docs)
    assert PART_DOCS >= 1000  # parts stay one file here

    bad = run_cli("export", str(out), "--what", "urls", "--format", "solr")
    assert bad.returncode == 2 and "--what index" in bad.stderr
    bad = run_cli("export", str(out), "--what", "index", "--format", "jsonl")
    assert bad.returncode == 2 and "opensearch or solr" in bad.stderr


@pytest.mark.parametrize("fmt", ["opensearch", "solr"])
def test_export_of_an_empty_index_writes_the_mapping_and_an_empty_part(tmp_path: Path, fmt: str) -> None:
    from harvestman.index.export import export_index
    from harvestman.index.schema import open_index

    open_index(tmp_path, create=True).writer().commit()
    written = export_index(tmp_path, fmt)
    assert written.documents == 0 and len(written.files) == 2
    assert all(p.is_file() for p in written.files)

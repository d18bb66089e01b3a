"""Page features (seed 000): right on known pages, written by a `--features` crawl (two workers) one
row a page, the same when `harvestman features DIR` computes them from the WARC files, exported."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harvestman import CrawlConfig, Crawler, CrawlJob, JobState
from harvestman.crawl import engine
from harvestman.index.features import extract_features
from harvestman.index.pages import FEATURES_DIR, PAGES_FILE
from harvestman.model.errors import ConfigError
from tests.support.crawlcheck import run_cli
from tests.support.featuresite import write_language_site
from tests.support.httpserver import RouteServer
from tests.support.nginx import NginxServer, free_port

HOST = "127.61.0.1"
NET = "127.61.0.0/16"


def test_features_of_a_known_page() -> None:
    html = write_language_site_html()["en.html"]
    features = extract_features(html, "http://example.test/en.html")
    assert features.title == "Library opening hours"
    assert features.description == "When the library opens"
    # The sidebar's and the nav's headings are the site's, not the page's.
    assert features.headings == ((1, "Library opening hours"), (2, "Opening hours"), (2, "Reading group"),
                                 (2, "Fees"))
    for boilerplate in ("Site menu", "Contact us", "Copyright", "trackingcode", "color:red", "Elsewhere"):
        assert boilerplate not in features.text
    assert "Students may borrow up to ten books at a time." in features.text
    # A real splitter: "9 a.m." and "Dr." and "4.2" end no sentence.
    assert "The library opens at 9 a.m. on weekdays." in features.sentences
    assert "Dr. Smith leads the reading group." in features.sentences
    assert "It meets every Tuesday in room 4.2 of the east wing." in features.sentences
    assert features.language == "en"
    tags = dict(features.tag_counts)
    assert tags["p"] == 4 and tags["h2"] == 4 and tags["a"] == 4 and tags["script"] == 1
    assert features.tag_counts[0][1] >= features.tag_counts[-1][1]  # most frequent first
    grams = dict(features.ngrams)
    assert grams["the"] == max(count for gram, count in features.ngrams if " " not in gram)
    assert grams["reading group"] == 2  # the heading's and the sentence's
    assert sum(gram.count(" ") == 2 for gram in grams) == 20  # the top 20 trigrams
    assert features.category == "" and features.category_probability == 0.0


def write_language_site_html() -> dict[str, str]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return write_language_site(Path(folder))


@pytest.mark.parametrize(("name", "language"), [("de.html", "de"), ("fr.html", "fr")])
def test_language_is_told_from_the_text(name: str, language: str) -> None:
    features = extract_features(write_language_site_html()[name], "http://example.test/")
    assert features.language == language
    # Headings are blocks of their own (a "sentence" each); the paragraphs hold two sentences each.
    assert len([s for s in features.sentences if s.endswith(".")]) == 4


def test_a_page_without_text_takes_its_declared_language_and_has_no_sentences() -> None:
    features = extract_features('<html lang="pt-BR"><head><title>x</title></head><body></body></html>', "u")
    assert features.language == "pt" and features.sentences == () and features.text == ""


def _rows(path: Path) -> dict[str, dict[str, object]]:
    rows = pq.read_table(path).to_pylist()
    by_url = {row["url"]: row for row in rows}
    assert len(by_url) == len(rows)  # one row a page
    return by_url


def test_features_crawl_with_two_workers_then_from_warc_then_export(tmp_path: Path) -> None:
    root = tmp_path / "www"
    pages = write_language_site(root / HOST)
    out = tmp_path / "out"
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", NET, "-q",
                       "--features", "--workers", "2")
        assert done.returncode == 0, done.stderr
        urls = {server.url(HOST, "/" if name == "index.html" else f"/{name}") for name in pages}
    parts = sorted((out / FEATURES_DIR).glob("pages-*.parquet"))
    assert len(parts) == 2  # one a worker
    crawled: dict[str, dict[str, object]] = {}
    for part in parts:
        for url, row in _rows(part).items():
            assert url not in crawled
            crawled[url] = row
    assert set(crawled) == urls
    assert crawled[server.url(HOST, "/de.html")]["language"] == "de"

    done = run_cli("features", str(out))
    assert done.returncode == 0, done.stderr
    whole = out / FEATURES_DIR / PAGES_FILE
    assert done.stdout.strip() == f"features of {len(urls)} pages written to {whole}"
    assert _rows(whole) == crawled  # the same features from the WARC files as the crawl computed

    for fmt in ("jsonl", "parquet"):
        target = tmp_path / f"pages.{fmt}"
        done = run_cli("export", str(out), "--what", "pages", "--format", fmt, "--output", str(target))
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{len(urls)} pages written to {target}")
        if fmt == "parquet":
            exported = _rows(target)
        else:
            exported = {row["url"]: row for row in map(json.loads, target.read_text().splitlines())}
        assert exported == crawled


def test_the_library_page_record_carries_features_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "www"
    write_language_site(root / HOST)
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        cfg = CrawlConfig(seeds=(server.url(HOST, "/"),), out_dir=tmp_path / "out", allow_net=(NET,),
                          features=True, quiet=True)
        pages = {page.result.url: page for page in Crawler(cfg)}
        plain = CrawlConfig(seeds=(server.url(HOST, "/"),), out_dir=tmp_path / "plain", allow_net=(NET,),
                            quiet=True)
        assert all(page.features is None for page in Crawler(plain))  # off by default
    fr = pages[server.url(HOST, "/fr.html")]
    assert fr.features is not None and fr.features.language == "fr"
    assert fr.features.title == "Horaires de la bibliothèque"
    robots = [page for url, page in pages.items() if url.endswith("/robots.txt")]
    assert all(page.features is None for page in robots)


def _page(title: str, *links: str) -> tuple[int, dict[str, str], bytes]:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    body = f"<html><head><title>{title}</title></head><body><p>The {title} page.</p>{anchors}</body></html>"
    return 200, {"Content-Type": "text/html"}, body.encode()


def test_the_page_stages_come_from_above_and_reach_spawned_workers(tmp_path: Path) -> None:
    # crawl/ never loads index/: the engine alone refuses `features`; the library's face brings the
    # stages. The test process runs the server's thread, so the workers are spawned: the stages reach
    # them pickled, and each worker writes its own features and Markdown.
    site = {"/": _page("home", "/a", "/b"), "/a": _page("apples"), "/b": _page("bananas")}
    with RouteServer(site, host="127.61.0.20") as server:
        cfg = CrawlConfig(seeds=(server.url("/"),), out_dir=tmp_path / "out", allow_net=(NET,), features=True,
                          markdown=True, workers=2, quiet=True)
        with pytest.raises(ConfigError, match="features is on, but the crawl was given no stage for it"):
            engine.Crawler(cfg)
        job = CrawlJob(cfg)
        job.start()
        assert job.result().state is JobState.FINISHED
    titles = [row["title"] for part in (tmp_path / "out" / FEATURES_DIR).glob("pages-w*.parquet")
              for row in pq.read_table(part).to_pylist()]
    assert sorted(titles) == ["apples", "bananas", "home"]
    markdown = [json.loads(line)["url"] for part in (tmp_path / "out" / "markdown").glob("pages-w*.jsonl")
                for line in part.read_text(encoding="utf-8").splitlines()]
    assert sorted(markdown) == sorted(server.url(path) for path in site)


def test_bad_input_is_refused_with_one_line_and_status_2(tmp_path: Path) -> None:
    done = run_cli("features", str(tmp_path / "missing"))
    assert done.returncode == 2 and done.stderr.startswith("harvestman: error:")
    assert "not a crawl folder" in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_cli("features", str(empty))
    assert done.returncode == 2 and "holds no WARC files" in done.stderr
    done = run_cli("features", str(empty), "--top-k", "0")
    assert done.returncode == 2 and "--top-k" in done.stderr
    (empty / "crawl.db").write_bytes(b"")
    done = run_cli("export", str(empty), "--what", "pages")
    assert done.returncode == 2 and "holds no page features" in done.stderr
    assert "Traceback" not in done.stderr

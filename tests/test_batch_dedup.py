"""SimHash and dedup: the banded search finds what a brute-force comparison finds; precision and
recall on a generated set of exact copies, near copies (a few words changed) and distinct pages,
some of whose SimHashes come from the WARC files."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import harvestman.batch as hb
from harvestman.batch.duplicates import bands
from harvestman.batch.simhash import hamming, html_simhash, simhash, visible_text
from harvestman.model.records import UrlState
from harvestman.store.factory import open_store
from tests.support.batchgraph import Page, make_crawl

VOCABULARY = [f"word{i}" for i in range(4000)]


def test_visible_text_leaves_out_what_a_reader_does_not_see() -> None:
    html = ("<html><head><title>T</title><style>p{}</style></head><body><p>shown text</p>"
            "<script>var hidden = 1;</script><noscript>no</noscript><template>tpl</template></body></html>")
    assert visible_text(html).split() == ["shown", "text"]
    assert html_simhash(html) == simhash("shown text")
    assert simhash("") == 0 and simhash("   ...  ") == 0


def test_near_texts_are_a_few_bits_apart_and_distinct_ones_far() -> None:
    rng = random.Random(3)
    words = [rng.choice(VOCABULARY) for _ in range(1500)]
    near = list(words)
    near[700] = "changed"
    other = [rng.choice(VOCABULARY) for _ in range(1500)]
    assert simhash(" ".join(words)) == simhash(" ".join(words).upper())  # case does not matter
    assert hamming(simhash(" ".join(words)), simhash(" ".join(near))) <= 3
    assert hamming(simhash(" ".join(words)), simhash(" ".join(other))) > 10


@pytest.mark.parametrize("distance", [0, 1, 3, 5, 7])
def test_bands_cover_the_hash_so_close_pairs_share_one(distance: int) -> None:
    parts = bands(distance)
    assert len(parts) == distance + 1 and sum(w for _, w in parts) == 64
    assert [s for s, _ in parts] == [sum(w for _, w in parts[:i]) for i in range(len(parts))]
    rng = random.Random(distance)
    for _ in range(200):
        a = rng.getrandbits(64)
        b = a
        for bit in rng.sample(range(64), distance):
            b ^= 1 << bit
        assert any((a >> s) & ((1 << w) - 1) == (b >> s) & ((1 << w) - 1) for s, w in parts)


def _groups(pairs: list[tuple[str, str]], nodes: list[str]) -> dict[str, str]:
    parent = {n: n for n in nodes}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in pairs:
        parent[find(a)] = find(b)
    return {n: find(n) for n in nodes}


def test_the_banded_search_finds_the_components_a_brute_force_finds(tmp_path: Path) -> None:
    rng = random.Random(11)
    hashes: dict[str, int] = {}
    for cluster in range(40):
        centre = rng.getrandbits(64)
        for member in range(rng.randint(1, 4)):
            value = centre
            for bit in rng.sample(range(64), rng.randint(0, 4)):
                value ^= 1 << bit
            hashes[f"http://h{cluster % 5}.test/c{cluster}-{member}"] = value or 1
    make_crawl(tmp_path, {url: Page(simhash=h) for url, h in hashes.items()})
    result = hb.dedup(tmp_path, distance=3, write_back=False)
    urls = sorted(hashes)
    brute = _groups([(a, b) for i, a in enumerate(urls) for b in urls[i + 1:]
                     if hamming(hashes[a], hashes[b]) <= 3], urls)
    found = {r["url"]: r["duplicate_of"] for r in pq.read_table(result.path).to_pylist()}
    ours = _groups(list(found.items()), urls)
    same = {(a, b) for a in urls for b in urls if brute[a] == brute[b]}
    assert same == {(a, b) for a in urls for b in urls if ours[a] == ours[b]}
    assert len(found) == len(urls) - len(set(brute.values()))


def _html(words: list[str]) -> bytes:
    return (f"<html><head><title>t</title><script>var x = {random.random()};</script></head><body>"
            f"<nav>home about</nav><p>{' '.join(words)}</p></body></html>").encode()


def _write_warc(path: Path, pages: dict[str, bytes], date: str) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for url, body in pages.items():
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")],
                                       protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=headers,
                warc_headers_dict={"WARC-Date": date}))


def test_dedup_precision_and_recall_on_exact_near_and_distinct_pages(tmp_path: Path) -> None:
    rng = random.Random(7)
    truth: dict[str, int] = {}  # url -> the group it belongs to
    bodies: dict[str, bytes] = {}
    signatures: dict[str, str] = {}
    for group in range(25):
        words = [rng.choice(VOCABULARY) for _ in range(rng.randint(1200, 2000))]
        copies = {"": words, "copy": words}
        for n in range(2):  # near copies: one or two words changed
            near = list(words)
            for _ in range(rng.randint(1, 2)):
                near[rng.randrange(len(near))] = rng.choice(VOCABULARY)
            copies[f"near{n}"] = near
        for suffix, text in copies.items():
            url = f"http://site{group % 4}.test/g{group}/{suffix}"
            truth[url] = group
            bodies[url] = _html(text)
            signatures[url] = f"sig-{group}" if suffix in ("", "copy") else f"sig-{group}-{suffix}"
    for n in range(50):
        url = f"http://other.test/p{n}"
        truth[url] = 1000 + n
        bodies[url] = _html([rng.choice(VOCABULARY) for _ in range(rng.randint(300, 1500))])
        signatures[url] = f"other-{n}"
    urls = sorted(truth)
    # Half the pages have their SimHash in the database; the others only in WARC files.
    stored = set(urls[::2])
    pages = {url: Page(signature=signatures[url], simhash=html_simhash(bodies[url]) if url in stored else 0)
             for url in urls}
    make_crawl(tmp_path, pages)
    missing = [u for u in urls if u not in stored]
    # The first five were fetched twice: the later response (by WARC-Date) counts, in whichever file.
    _write_warc(tmp_path / "warc" / "a.warc.gz", {u: b"<html>an older fetch</html>" for u in missing[:5]}
                | {u: bodies[u] for u in missing[6::2]}, "2026-01-01T00:00:00Z")
    _write_warc(tmp_path / "segments" / "20260101" / "warc" / "b.warc.gz",
                {u: bodies[u] for u in missing[1::2]} | {u: bodies[u] for u in missing[:5:2]},
                "2026-02-01T00:00:00Z")
    result = hb.dedup(tmp_path)
    found = {r["url"]: r["duplicate_of"] for r in pq.read_table(result.path).to_pylist()}
    true_duplicates = len(truth) - len(set(truth.values()))
    correct = sum(truth[url] == truth[kept] for url, kept in found.items())
    precision = correct / len(found)
    recall = correct / true_duplicates
    assert precision == 1.0, found
    assert recall >= 0.9, (recall, correct, true_duplicates)
    store = open_store(str(tmp_path / "crawl.db"), read_only=True)
    try:
        records = {r.url: r for r in store.records()}
    finally:
        store.close()
    assert all(records[u].simhash == html_simhash(bodies[u]) for u in missing)  # written back
    assert sum(r.state == UrlState.DUPLICATE for r in records.values()) == len(found)

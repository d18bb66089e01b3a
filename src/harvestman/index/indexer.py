"""`harvestman index`: the full-text index of a crawl's fetched pages, kept up to date incrementally.

A page's document holds its title, headings, defined terms (its <dt>s), main text (read from its last
HTML 200 response in the WARC files, the one being written included), URL, host, category
(DIR/features/pages.parquet, when written) and the anchor texts of the links to it (from the crawl
database's link graph), and all of these in one field the default search scores. Per URL the
indexer keeps a digest of those inputs (content signature, anchors, category), once its response was
read: a run replaces only the pages whose digest changed or that were never read (fetched while the
last run ran, their record not yet stored), removes those that are gone, duplicates, redirects or
noindex, and leaves the rest untouched.
"""

from __future__ import annotations

import hashlib
import ipaddress
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.index.pagetext import page_text
from harvestman.index.schema import ALL_FIELD, ALL_REPEATS, SCHEMA_VERSION, STATE_FILE, index_path, open_index
from harvestman.model.errors import StorageError
from harvestman.model.records import UrlRecord, UrlState
from harvestman.net.urls import host_of
from harvestman.store.crawldir import CrawlDir
from harvestman.store.frontier import CrawlDb
from harvestman.store.warc_read import HTML_TYPES, MACHINES_DIR, stored_responses

FEATURES_FILE = Path("features") / "pages.parquet"  # url, ..., category: written by index/features.py
_INDEXED_STATES = (UrlState.FETCHED, UrlState.NOT_MODIFIED)
MAX_ANCHORS = 200  # distinct anchor texts kept a page: a site-wide link's many copies say one thing
WRITER_HEAP = 200_000_000  # bytes tantivy buffers before it writes a segment


@dataclass(frozen=True, slots=True)
class IndexResult:
    """What one `index` run did."""

    path: Path
    documents: int  # pages in the index after the run
    added: int  # pages indexed for the first time
    replaced: int  # pages indexed again because their content, anchors or category changed
    removed: int  # pages taken out: gone, duplicate, redirected, noindex, or no longer stored
    unchanged: int  # indexed pages left as they were
    seconds: float
    missing: tuple[str, ...] = ()  # fetched pages found in no WARC file of the folder (not indexed yet)

    def missing_note(self, folder: Path) -> str:
        """Why pages of the crawl are not in the index ('' when none are missing)."""
        if not self.missing:
            return ""
        some = ", ".join(self.missing[:3]) + (", ..." if len(self.missing) > 3 else "")
        return (f"{len(self.missing)} fetched pages are in no WARC file under {folder} ({some}): their "
                f"machine's folder is elsewhere (copy it, or let that machine write, into "
                f"{Path(folder) / MACHINES_DIR}/NAME/), or their records are still being written; "
                "`index` again picks them up")


@dataclass(frozen=True, slots=True)
class PageDocument:
    """One page as the index holds it."""

    url: str
    title: str
    headings: str
    defines: tuple[str, ...]
    text: str
    anchors: tuple[str, ...]
    category: str
    signature: str


def _is_html(record: UrlRecord) -> bool:
    ctype = record.content_type.split(";", 1)[0].strip().lower()
    return not ctype or ctype in HTML_TYPES  # a 304's row may keep no type: the WARC decides


def _candidates(crawl: CrawlDb) -> dict[str, UrlRecord]:
    """The URLs whose pages belong in the index: fetched (or confirmed unchanged) HTML pages."""
    return {r.url: r for r in crawl.records() if r.state in _INDEXED_STATES and _is_html(r)}


def _anchors(crawl: CrawlDb, wanted: dict[str, UrlRecord]) -> dict[str, list[str]]:
    """The distinct anchor texts of the links to each wanted URL from other pages, in link order."""
    found: dict[str, dict[str, None]] = {}
    for edge in crawl.links():
        anchor = " ".join(edge.anchor.split())
        if not anchor or edge.to_url == edge.from_url or edge.to_url not in wanted:
            continue
        texts = found.setdefault(edge.to_url, {})
        if len(texts) < MAX_ANCHORS:
            texts.setdefault(anchor, None)
    return {url: list(texts) for url, texts in found.items()}


def read_categories(folder: Path) -> dict[str, str]:
    """url → category from DIR/features/pages.parquet, when it exists and has a category column."""
    path = Path(folder) / FEATURES_FILE
    if not path.is_file():
        return {}
    import pyarrow.parquet as pq  # imported here: heavy, and only a crawl with features needs it

    try:
        names = pq.read_schema(path).names
        if "url" not in names or "category" not in names:
            return {}
        table = pq.read_table(path, columns=["url", "category"]).to_pydict()
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None
    return {u: c for u, c in zip(table["url"], table["category"], strict=True) if u and c}


def _digest(record: UrlRecord, anchors: list[str], category: str) -> str:
    """What the page's document is made of, in a few bytes: equal digests, equal documents."""
    content = record.signature or f"t{record.fetch_time}"  # no signature: any new fetch counts as new
    parts = [str(SCHEMA_VERSION), content, category, *anchors]
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def site_keys(url: str) -> list[str]:
    """The names `--site` finds a page's URL by: its host, host:port, and each parent domain."""
    host = host_of(url)
    keys = [host]
    authority = url.split("/", 3)[2].rsplit("@", 1)[-1].lower()
    if authority != host:
        keys.append(authority)
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        labels = host.split(".")
        keys.extend(".".join(labels[i:]) for i in range(1, len(labels) - 1))
    return keys


def to_tantivy(doc: PageDocument) -> Any:
    """A tantivy document of a page."""
    import tantivy

    # One value per part of `all`: tantivy leaves a position between values, so a phrase does not
    # run from the title's last word into the next part.
    everything = [*[doc.title] * ALL_REPEATS["title"], *[doc.headings] * ALL_REPEATS["headings"], doc.url,
                  *doc.anchors, doc.text]
    return tantivy.Document(id=doc.url, url=doc.url, host=site_keys(doc.url), category=doc.category,
                            title=doc.title, headings=doc.headings, defines=list(doc.defines), text=doc.text,
                            anchor=list(doc.anchors), signature=doc.signature,
                            **{ALL_FIELD: [p for p in everything if p]})


def page_document(url: str, body: bytes | str, *, anchors: tuple[str, ...] = (), category: str = "",
                  signature: str = "", fallback_title: str = "") -> PageDocument | None:
    """The document of one HTML page; None when the page asks not to be indexed (noindex)."""
    text = page_text(body)
    if text.noindex:
        return None
    return PageDocument(url, text.title or fallback_title, text.headings, text.defines, text.text, anchors,
                        category, signature)


class _State:
    """The indexer's bookkeeping: per URL the digest it indexed, in DIR/searchindex/indexed.sqlite."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS pages (url TEXT PRIMARY KEY, digest TEXT NOT NULL,"
                         " indexed INTEGER NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def version(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def pages(self) -> dict[str, tuple[str, bool]]:
        return {u: (d, bool(i)) for u, d, i in self._db.execute("SELECT url, digest, indexed FROM pages")}

    def save(self, done: dict[str, tuple[str, bool]], removed: list[str], *, reset: bool) -> None:
        with self._db:
            if reset:
                self._db.execute("DELETE FROM pages")
            self._db.executemany("DELETE FROM pages WHERE url = ?", ((u,) for u in removed))
            self._db.executemany("INSERT OR REPLACE INTO pages VALUES (?, ?, ?)",
                                 ((u, d, int(i)) for u, (d, i) in done.items()))
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self._db.close()


def build_index(folder: Path, db: str = "", *, rebuild: bool = False) -> IndexResult:
    """Bring DIR/searchindex up to date with the crawl: index new and changed pages, drop the ones
    that left (gone, duplicate, redirect, noindex); `rebuild` indexes every page again."""
    started = time.perf_counter()
    folder = Path(folder)
    with CrawlDir(folder, db).read() as crawl:
        candidates = _candidates(crawl)
        anchors = _anchors(crawl, candidates)
    categories = read_categories(folder)
    index = open_index(folder, create=True)
    state = _State(index_path(folder) / STATE_FILE)
    try:
        reset = rebuild or state.version() != SCHEMA_VERSION
        before = {} if reset else state.pages()
        digests = {u: _digest(r, anchors.get(u, []), categories.get(u, "")) for u, r in candidates.items()}
        todo = {u: d for u, d in digests.items() if before.get(u, ("", False))[0] != d}
        leaving = [u for u, (_, indexed) in before.items() if u not in digests and indexed]
        writer = index.writer(heap_size=WRITER_HEAP)
        if reset:
            writer.delete_all_documents()
        for url in leaving:
            writer.delete_documents_by_term("id", url)
        # Only the pages read are marked done: one fetched but not yet stored (its record still in
        # the writer's hands) keeps its old digest, so the next run picks it up.
        done: dict[str, tuple[str, bool]] = {}
        for found in stored_responses(folder, latest=True, urls=todo):
            url = found.url
            record = candidates[url]
            doc = page_document(url, found.body or b"", anchors=tuple(anchors.get(url, ())),
                                category=categories.get(url, ""), signature=record.signature,
                                fallback_title=record.title)
            if before.get(url, ("", False))[1]:
                writer.delete_documents_by_term("id", url)
            if doc is not None:
                writer.add_document(to_tantivy(doc))
            done[url] = (todo[url], doc is not None)
        writer.commit()
        writer.wait_merging_threads()
        # Bookkeeping after the index: a crash between the two makes the next run redo, never skip.
        state.save(done, [u for u in before if u not in digests], reset=reset)
    finally:
        state.close()
    index.reload()
    was = {u for u, (_, indexed) in before.items() if indexed}
    added = sum(1 for u, (_, ok) in done.items() if ok and u not in was)
    replaced = sum(1 for u, (_, ok) in done.items() if ok and u in was)
    removed = len(leaving) + sum(1 for u, (_, ok) in done.items() if not ok and u in was)
    documents = index.searcher().num_docs
    unchanged = sum(1 for u in digests if u not in todo and u in was)
    return IndexResult(index_path(folder), documents, added, replaced, removed, unchanged,
                       time.perf_counter() - started, tuple(sorted(u for u in todo if u not in done)))

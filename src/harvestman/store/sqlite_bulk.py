"""The bulk operations of batch jobs and crawl steps on the SQLite store: rankings, SimHashes, inlink
counts, duplicates, URL metadata, and the selection of a segment (generate)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import TypeVar

from harvestman.model.records import UrlRecord, UrlState
from harvestman.store.frontier import GENERATE_ORDERS, row_to_record, signed64
from harvestman.store.sql_shared import SQLITE_SQL as SQL
from harvestman.store.sqlite_file import SqliteFile

T = TypeVar("T")
_BATCH = 10_000  # rows an executemany, so that a job over 10^6 URLs never holds them all


def _batches(items: Iterable[T]) -> Iterator[list[T]]:
    it = iter(items)
    while batch := list(islice(it, _BATCH)):
        yield batch


class SqliteBulk(SqliteFile):
    """The CrawlDb's bulk operations, on the file SqliteStore keeps."""

    def set_scores(self, scores: Iterable[tuple[str, float, float]]) -> int:
        """Set (url, score, priority) of known URLs (a batch job's ranking); returns how many were known."""
        known = 0
        for batch in _batches(scores):
            with self._tx() as db:
                known += db.executemany("UPDATE urls SET score = ?, priority = ? WHERE url = ?",
                                        [(s, p, u) for u, s, p in batch]).rowcount
        with self._tx() as db:  # every host's best priority anew: one index probe a host
            db.execute(SQL.best_all)
        return known

    def add_scores(self, items: Iterable[tuple[str, float]]) -> int:
        """Add (url, amount) to the score of known URLs; returns how many rows were updated."""
        known = 0
        for batch in _batches(items):
            with self._tx() as db:
                known += db.executemany("UPDATE urls SET score = score + ? WHERE url = ?",
                                        [(float(a), u) for u, a in batch]).rowcount
        return known

    def set_simhashes(self, items: Iterable[tuple[str, int]]) -> int:
        """Set (url, 64-bit SimHash) of known URLs; returns how many were known."""
        known = 0
        for batch in _batches(items):
            with self._tx() as db:
                known += db.executemany("UPDATE urls SET simhash = ? WHERE url = ?",
                                        [(signed64(h), u) for u, h in batch]).rowcount
        return known

    def set_inlinks(self, items: Iterable[tuple[str, int]]) -> int:
        """Replace every URL's inlink count (those not given get 0); returns how many were known."""
        known = 0
        with self._tx() as db:  # one transaction: a reader never sees half the counts
            db.execute(SQL.reset_inlinks)
            for batch in _batches(items):
                known += db.executemany("UPDATE urls SET inlinks = ? WHERE url = ?",
                                        [(n, u) for u, n in batch]).rowcount
        return known

    def set_duplicates(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Replace the crawl's duplicates: each (url, kept url) becomes DUPLICATE of the kept one; URLs
        marked before and not given now are FETCHED again. Returns how many were marked."""
        marked = 0
        with self._tx() as db:
            db.execute(SQL.unmark_duplicates,
                       (int(UrlState.FETCHED), int(UrlState.DUPLICATE)))
            for batch in _batches(pairs):
                marked += db.executemany(
                    "UPDATE urls SET state = ?, duplicate_of = ? WHERE url = ? AND url <> ?",
                    [(int(UrlState.DUPLICATE), kept, url, kept) for url, kept in batch]).rowcount
        return marked

    def requeue(self, urls: Iterable[str]) -> int:
        """Queue GONE URLs again as UNFETCHED, their failure forgotten (its cause was mended);
        returns how many were GONE."""
        done = 0
        for batch in _batches(urls):
            with self._tx() as db:
                rows = [row for url in batch for row in db.execute(
                    "UPDATE urls SET state = ?, queued = 1, retries = 0, next_fetch_time = 0,"
                    " lease_until = 0, http_status = 0, error_class = '', error_message = ''"
                    " WHERE url = ? AND state = ?"
                    " RETURNING host_id, priority", (int(UrlState.UNFETCHED), url, int(UrlState.GONE)))]
                best: dict[int, float] = {}
                for host, priority in rows:
                    best[host] = min(best.get(host, priority), priority)
                db.executemany("UPDATE hosts SET wake_at = 0, best = MIN(best, ?) WHERE id = ?",
                               [(p, h) for h, p in best.items()])
                done += len(rows)
        return done

    def set_metadata(self, items: Iterable[tuple[str, Mapping[str, str]]]) -> int:
        """Merge keys into the metadata of known URLs; returns how many were known."""
        known = 0
        for batch in _batches(items):
            with self._tx() as db:
                known += db.executemany(
                    "UPDATE urls SET metadata ="
                    " json_patch(CASE metadata WHEN '' THEN '{}' ELSE metadata END, ?) WHERE url = ?",
                    [(json.dumps(dict(meta), ensure_ascii=False), u) for u, meta in batch]).rowcount
        return known

    def generate(self, limit: int, max_per_host: int, order: str, now: float,
                 until: float) -> list[UrlRecord]:
        """Select up to `limit` due URLs, best first by GENERATE_ORDERS[order], at most `max_per_host`
        a host (0: no cap), and hold them until `until` (see CrawlDb.generate)."""
        key = GENERATE_ORDERS[order]
        with self._tx() as db:
            # Held rows carry lease_until: neither generate nor a crawl's lease takes them before it
            # passes; reporting a fetch (complete) clears it.
            ids = [r[0] for r in db.execute(
                SQL.generate.format(key=key),
                (now, now, max_per_host or 1 << 62, max(limit, 0)),
            )]
            if not ids:
                return []
            chosen = json.dumps(ids)
            db.execute("UPDATE urls SET lease_until = ? WHERE id IN (SELECT value FROM json_each(?))",
                       (until, chosen))
            rows = db.execute(
                f"SELECT {self._record_cols} FROM json_each(?) c JOIN urls u ON u.id = c.value"
                " JOIN hosts h ON h.id = u.host_id ORDER BY c.key", (chosen,)).fetchall()
        return [row_to_record(r) for r in rows]

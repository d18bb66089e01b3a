"""The default store: a Frontier and CrawlDb on one SQLite file (see sqlite_file for the file itself)."""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harvestman.model.errors import FrontierError
from harvestman.model.faults import crash_point
from harvestman.model.records import (
    FetchOutcome,
    LeasedUrl,
    NewUrl,
    PageLinks,
    UrlRecord,
    UrlState,
    landing_state,
)
from harvestman.store.frontier import HostStats
from harvestman.store.linkcodec import encode_links
from harvestman.store.sql_reads import SqlReads
from harvestman.store.sql_shared import RECORD_FIELDS, SQLITE, outcome_params, record_values
from harvestman.store.sql_shared import SQLITE_SQL as SQL
from harvestman.store.sqlite_bulk import SqliteBulk
from harvestman.store.sqlite_file import BEST_OF_HOST, ORDER_INDEX, ORDER_INDEX_SQL

_FAR_FUTURE = 1e18  # "never": a host with no leasable URL and no lease to wait for

# The seen check: the batch's URLs that the UNIQUE index does not hold (one probe each).
_UNKNOWN_URLS = "SELECT value FROM json_each(?) WHERE value NOT IN (SELECT url FROM urls)"
_INSERT_URL = (
    "INSERT OR IGNORE INTO urls(url, host_id, depth, score, parent, priority) VALUES (?, ?, ?, ?, ?, ?)"
)
# A whole row (put_records): the record's columns, then its priority (its depth) and whether queued.
_PUT_RECORD = (
    "INSERT OR IGNORE INTO urls(" + ", ".join(("host_id" if f == "host" else f) for f in RECORD_FIELDS)
    + ", priority, queued) VALUES (" + ", ".join("?" * (len(RECORD_FIELDS) + 2)) + ")"
)


def _numbered(sql: str) -> tuple[str, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    """`sql` with its `:name` parameters numbered (?1, ?2, ...), and what takes their values, in
    that order, from a dict of them: sqlite3 binds a dict by making a str of every parameter's name
    and looking it up, a tuple by position. write_outcome's 27 parameters: 8.5 -> 3.8 µs a row
    alone; SqliteStore.complete of 35 pages a call, 34.9 -> 31.9 µs a page (medians of 5 runs)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"?{names.index(match.group(1)) + 1}"

    numbered = re.sub(r":([A-Za-z_]\w*)", number, sql)
    pick = operator.itemgetter(*names)
    return numbered, lambda values: tuple(pick(values))


_WRITE_OUTCOME_NUMBERED, _outcome_values = _numbered(SQL.write_outcome)


class SqliteStore(SqliteBulk, SqlReads):
    """A Store on one SQLite file; the default, `DIR/crawl.db`.

    The worker processes of one crawl share the file: the process that holds the lock starts them,
    and each opens the file with `shard=(index, count)` and no lock of its own. A worker leases only
    from its share of the hosts (host id modulo count), so each host's politeness is kept by one
    process; every worker adds and completes URLs of any host, and the seen check stays the
    database's.

    With `ordered`, a lease takes the ready hosts best first by the priority of their best queued
    URL (hosts.best, lowest first), so that a crawl's order (score, opic, pagerank, focus) holds
    across hosts, politeness as ever; without it (bfs, the default) in the order their clocks
    allow, as cheap as ever.
    """

    _dialect = SQLITE
    _sql = SQL

    def __init__(
        self,
        path: Path,
        *,
        per_host: int = 2,
        delay: float = 0.0,
        lease_seconds: float = 300.0,
        host_of: Callable[[str], str],
        read_only: bool = False,
        shard: tuple[int, int] = (0, 1),
        ordered: bool = False,
    ) -> None:
        self.per_host = per_host
        self.ordered = ordered
        self.delay = delay
        self.lease_seconds = lease_seconds
        self._host_of = host_of
        self._hosts: dict[str, int] = {}  # host name -> id; bounded by the number of hosts
        index, count = shard
        # SQL that keeps a hosts-table query to this process's share ("h" aliases the table).
        self._mine = f" AND h.id % {count} = {index}" if count > 1 else ""
        # The ready hosts, in the order a lease takes them. Ordered, the hosts_order index, walked
        # from the best host until enough ready ones are found: the planner, without statistics,
        # would rather take every host ready_at allows (nearly all of them) and sort them.
        self._ready_hosts = (
            "SELECT id, name, in_flight, COALESCE(delay, ?) FROM hosts h"
            + (f" INDEXED BY {ORDER_INDEX}" if ordered else "")
            + " WHERE pending > 0 AND ready_at <= ? AND paused_until <= ? AND wake_at <= ?"
            f" AND in_flight < ?{self._mine} ORDER BY {'best, ready_at' if ordered else 'ready_at'}, id"
            " LIMIT ?"
        )
        # A host's clocks after a lease took from it; its best priority too when the lease is ordered.
        self._took = (
            "UPDATE hosts SET in_flight = in_flight + ?1, ready_at = MAX(ready_at, ?2)"
            + (f", best = {BEST_OF_HOST.format(host='?3')}" if ordered else "") + " WHERE id = ?3"
        )
        super().__init__(path, read_only=read_only, shard=shard)
        if not read_only:
            try:
                with self._tx() as db:
                    db.execute(ORDER_INDEX_SQL if ordered else f"DROP INDEX IF EXISTS {ORDER_INDEX}")
            except FrontierError:
                self.close()
                raise

    @classmethod
    def open_read_only(cls, path: Path) -> SqliteStore:
        """Open an existing crawl database for reports, beside a crawl that may be running."""
        if not Path(path).is_file():
            raise FrontierError(f"no crawl database at {path}")
        return cls(path, host_of=lambda url: url, read_only=True)

    def _forget(self) -> None:
        self._hosts.clear()  # host ids inserted in a rolled-back transaction are gone

    def _host_ids(self, names: set[str]) -> dict[str, int]:
        """Ids of `names`, creating the hosts that are new (inside the caller's transaction)."""
        cache = self._hosts
        missing = [n for n in names if n not in cache]
        if missing:
            self._db.executemany("INSERT OR IGNORE INTO hosts(name) VALUES (?)", [(n,) for n in missing])
            for name in missing:
                cache[name] = self._db.execute("SELECT id FROM hosts WHERE name = ?", (name,)).fetchone()[0]
        return cache

    def _host_id(self, name: str) -> int:
        return self._host_ids({name})[name]

    # -- adding and leasing ----------------------------------------------------------------------

    def add(self, urls: Sequence[NewUrl]) -> int:
        """Insert URLs not yet known as UNFETCHED; return how many were new (known ones stay as they are)."""
        if not urls:
            return 0
        with self._tx():
            return self._insert(urls)

    def _insert(self, urls: Sequence[NewUrl]) -> int:
        # The seen check is the UNIQUE index, no Python-side set of all URLs: one query passes the
        # whole batch (as JSON) and returns the unknown URLs; only those are inserted, and only their
        # hosts looked up. Batches of 1000, 90% known, on a 2·10^6-URL file, medians of 4 runs: 138k
        # URLs/s (174k per CPU second) against 129k/s (157k) for one INSERT OR IGNORE per URL.
        # Sorting the batch (probes in index key order) measured the same there (137k/s, 177k); it
        # is kept, being cheap, for files much larger than the page cache (not measured apart).
        batch = json.dumps(sorted({u.url for u in urls}), ensure_ascii=False)
        unknown = {row[0] for row in self._db.execute(_UNKNOWN_URLS, (batch,))}
        if not unknown:
            return 0
        # Inserted in the order given: the rowid is the insertion order that leases follow.
        fresh = [u for u in urls if u.url in unknown]
        ids = self._host_ids({u.host for u in fresh})
        rows = [(u.url, ids[u.host], u.depth, u.score, u.parent, u.priority) for u in fresh]
        return self._db.executemany(_INSERT_URL, rows).rowcount

    def put_records(self, records: Sequence[UrlRecord], *, queued: bool = True) -> int:
        """Insert whole rows, as another store holds them (a segment's fetch list: validators,
        signature, interval, retries kept, so that re-fetches are conditional and schedules see the
        last fetch; its bytes too, the page's full size among them); `queued` rows are leasable from
        their next fetch time, the others only known. Known URLs stay as they are; returns how many
        were new."""
        if not records:
            return 0
        with self._tx() as db:
            ids = self._host_ids({r.host for r in records})
            rows = [(*record_values(r, ids[r.host]), float(r.depth), int(queued)) for r in records]
            return db.executemany(_PUT_RECORD, rows).rowcount

    def lease(self, limit: int, now: float) -> list[LeasedUrl]:
        """Hand out up to `limit` due URLs from ready hosts, honouring per-host concurrency and delay."""
        if limit <= 0:
            return []
        with self._tx():
            return self._lease(limit, now)

    def _lease(self, limit: int, now: float) -> list[LeasedUrl]:
        """`lease()` inside the caller's transaction."""
        db = self._db
        out: list[LeasedUrl] = []
        self._reclaim_expired(now)
        lease_until = now + self.lease_seconds
        seen: set[int] = set()
        while len(out) < limit:
            # Every host handled below leaves the candidate set (full, delayed or parked),
            # so re-running the query walks on to the next hosts in lease order.
            hosts = db.execute(
                self._ready_hosts, (self.delay, now, now, now, self.per_host, max(limit - len(out), 16))
            ).fetchall()
            hosts = [h for h in hosts if h[0] not in seen]
            if not hosts:
                break
            for host_id, name, in_flight, delay in hosts:
                seen.add(host_id)
                room = 1 if delay > 0 else self.per_host - in_flight
                room = min(room, limit - len(out))
                if room <= 0:
                    break
                rows = db.execute(
                    "SELECT id, url, depth, retries, etag, last_modified, signature, fetch_interval, score"
                    " FROM urls"
                    " WHERE host_id = ? AND queued = 1 AND next_fetch_time <= ? AND lease_until = 0"
                    " ORDER BY priority, id LIMIT ?",
                    (host_id, now, room),
                ).fetchall()
                if rows:
                    db.executemany(
                        "UPDATE urls SET lease_until = ? WHERE id = ?",
                        [(lease_until, r[0]) for r in rows],
                    )
                    db.execute(self._took, (len(rows), now + delay, host_id))
                    out.extend(LeasedUrl(r[1], name, r[2], r[3], lease_until, *r[4:]) for r in rows)
                if len(rows) < room:
                    self._park(host_id, now)
        return out

    def _park(self, host_id: int, now: float) -> None:
        """Skip a host with nothing leasable until its next URL is due or one of its leases expires."""
        db = self._db
        due, best = db.execute(
            "SELECT MIN(next_fetch_time), MIN(priority) FROM urls"
            " WHERE host_id = ? AND queued = 1 AND lease_until = 0",
            (host_id,),
        ).fetchone()
        if self.ordered:  # what is queued but not due yet: a retry, a re-visit
            db.execute("UPDATE hosts SET best = ? WHERE id = ?",
                       (float("inf") if best is None else best, host_id))
        expiry = db.execute(
            "SELECT MIN(lease_until) FROM urls WHERE host_id = ? AND lease_until > 0", (host_id,)
        ).fetchone()[0]
        wake = min(x for x in (due, expiry, _FAR_FUTURE) if x is not None)
        if wake > now:
            db.execute("UPDATE hosts SET wake_at = ? WHERE id = ?", (wake, host_id))

    def _reclaim_expired(self, now: float) -> None:
        """Take back leases whose worker never reported (it died): the URLs become leasable again."""
        db = self._db
        rows = db.execute(
            "SELECT id, host_id, CASE WHEN queued = 1 THEN priority ELSE 9e999 END FROM urls"
            " WHERE lease_until > 0 AND lease_until <= ?", (now,)
        ).fetchall()
        if rows:
            db.executemany("UPDATE urls SET lease_until = 0 WHERE id = ?", [(r[0],) for r in rows])
            db.executemany(
                "UPDATE hosts SET in_flight = MAX(in_flight - 1, 0), wake_at = 0 WHERE id = ?",
                [(r[1],) for r in rows],
            )
            db.executemany("UPDATE hosts SET best = ?1 WHERE id = ?2 AND best > ?1",
                           [(r[2], r[1]) for r in rows])

    # -- reporting back ----------------------------------------------------------------------------

    def complete(self, outcomes: Sequence[FetchOutcome], now: float, new_urls: Sequence[NewUrl] = (), *,
                 links: Sequence[PageLinks] = (), lease: int = 0) -> list[LeasedUrl]:
        """Record fetch outcomes, free their leases, add discovered URLs, replace the stored links of
        the pages in `links`, and lease up to `lease` URLs (as `lease()` would, returned), all in
        one transaction."""
        with self._tx() as db:
            if new_urls:
                self._insert(new_urls)
            ids: dict[str, int] = {}  # the rows just written, for their links
            for outcome in outcomes:
                ids[outcome.url] = self._write_outcome(outcome, outcome.url, outcome.state, now, 0, "")
                final = outcome.final_url
                state = landing_state(outcome)  # the page a redirect ended on is fetched too
                if state is not None:
                    depth_row = self._db.execute(
                        "SELECT depth FROM urls WHERE url = ?", (outcome.url,)
                    ).fetchone()
                    # The target is fetched again when the URL that led to it is (no re-visit of its own).
                    self._write_outcome(outcome, final, state, now, depth_row[0], outcome.url, revisit=False)
            if links:
                db.executemany(
                    "INSERT OR REPLACE INTO links(url_id, links)"
                    " SELECT COALESCE(?, (SELECT id FROM urls WHERE url = ?)), ?",
                    [(ids.get(page.url), page.url, encode_links(page.links)) for page in links],
                )
            leased = self._lease(lease, now) if lease > 0 else []
            crash_point("db-mid-commit")  # crash tests: outcomes and new URLs written, COMMIT not yet run
        return leased

    def _write_outcome(
        self, o: FetchOutcome, url: str, state: UrlState, now: float, depth: int, parent: str, *,
        revisit: bool = True,
    ) -> int:
        """Write one outcome on the row of `url` (made when missing); the row's id."""
        db = self._db
        row = db.execute(
            "SELECT id, host_id, lease_until, priority FROM urls WHERE url = ?", (url,)
        ).fetchone()
        if row is None:
            # Reported without being added (a final URL, or a URL leased from an older file): upsert.
            host_id = self._host_id(self._host_of(url))
            db.execute(
                "INSERT INTO urls(url, host_id, depth, parent, state) VALUES (?, ?, ?, ?, ?)",
                (url, host_id, depth, parent, int(state)),
            )
            row = db.execute(
                "SELECT id, host_id, lease_until, priority FROM urls WHERE url = ?", (url,)
            ).fetchone()
        url_id, host_id, leased, priority = row
        next_fetch_time = o.next_fetch_time if revisit or state == UrlState.UNFETCHED else 0.0
        queued = state == UrlState.UNFETCHED or next_fetch_time > 0
        db.execute(
            _WRITE_OUTCOME_NUMBERED,
            _outcome_values(outcome_params(o, url, url_id, state, next_fetch_time, queued)),
        )
        db.execute(
            "UPDATE hosts SET in_flight = MAX(in_flight - ?, 0),"
            " ready_at = MAX(ready_at, ? + COALESCE(delay, ?)),"
            " wake_at = CASE WHEN ? THEN MIN(wake_at, ?) ELSE wake_at END WHERE id = ?",
            (
                1 if leased > 0 else 0,
                now,
                self.delay,
                queued or leased > 0,
                # A retry or re-visit becomes leasable at its next fetch time; a freed slot at once.
                next_fetch_time if leased == 0 else 0.0,
                host_id,
            ),
        )
        if queued:  # queued again (a retry, a re-visit): the host's best may be this
            db.execute("UPDATE hosts SET best = ? WHERE id = ? AND best > ?", (priority, host_id, priority))
        return int(url_id)

    # -- host controls -------------------------------------------------------------------------------

    def set_host_delay(self, host: str, delay: float) -> None:
        """Set the seconds between two requests to `host` (robots.txt Crawl-delay)."""
        with self._tx() as db:
            db.execute(SQL.set_host_delay, (delay, self._host_id(host)))

    def pause_host(self, host: str, until: float, reason: str) -> None:
        """Lease nothing from `host` before `until`; a pause is only ever extended, never shortened."""
        with self._tx() as db:
            db.execute(
                SQL.pause_host,
                (until, reason, self._host_id(host)),
            )

    def host_failure(self, host: str, now: float) -> int:
        """Count one more URL in the failure streak of `host` (the engine counts each URL once) and
        return the count."""
        with self._tx() as db:
            host_id = self._host_id(host)
            db.execute(
                "UPDATE hosts SET failures = failures + 1, last_failure = ? WHERE id = ?", (now, host_id)
            )
            return int(db.execute("SELECT failures FROM hosts WHERE id = ?", (host_id,)).fetchone()[0])

    def host_success(self, host: str) -> None:
        """Reset the consecutive-failure count of `host`."""
        with self._tx() as db:
            db.execute(SQL.host_success, (host,))

    def release_leases(self) -> int:
        """Hand back every lease (a crawl resumed by its only process); returns how many there were."""
        with self._tx() as db:
            db.execute(SQL.release_best)
            n = db.execute(SQL.release_urls).rowcount
            db.execute(SQL.release_hosts)
            return n

    # -- status and export ------------------------------------------------------------------------------

    def counts(self) -> dict[UrlState, int]:
        """Number of URLs in each state (every state present, zero included)."""
        with self._reading():
            rows = dict(self._read().execute("SELECT state, n FROM state_counts").fetchall())
        return {s: int(rows.get(int(s), 0)) for s in UrlState}

    def pending(self) -> int:
        """Number of queued URLs, due or not, leased or not: the work the crawl has left."""
        with self._reading():
            return int(self._read().execute("SELECT COALESCE(SUM(pending), 0) FROM hosts").fetchone()[0])

    def next_ready_time(self, *, everywhere: bool = False) -> float | None:
        """Earliest time a lease may succeed (never later than the truth), or None when nothing is queued.

        For a worker: in its share of the hosts, or with `everywhere` in the whole crawl.
        """
        with self._reading():
            # A full host waits for a lease to expire (or, sooner, a completion the engine sees itself).
            row = (
                self._read()
                .execute(
                    "SELECT MIN(MAX(h.ready_at, h.paused_until, h.wake_at, CASE WHEN h.in_flight >= ?"
                    " THEN COALESCE((SELECT MIN(lease_until) FROM urls"
                    " WHERE host_id = h.id AND lease_until > 0), 0) ELSE 0 END))"
                    f" FROM hosts h WHERE h.pending > 0{'' if everywhere else self._mine}",
                    (self.per_host,),
                )
                .fetchone()
            )
        return None if row[0] is None else float(row[0])

    def host_stats(self) -> list[HostStats]:
        """Per host: (host, queued, fetched, errors); fetched counts FETCHED and NOT_MODIFIED."""
        with self._reading():
            rows = (
                self._read()
                .execute(
                    "SELECT h.name, h.pending, COALESCE(SUM(u.state IN (?, ?)), 0),"
                    " COALESCE(SUM(u.error_class <> ''), 0)"
                    " FROM hosts h LEFT JOIN urls u ON u.host_id = h.id GROUP BY h.id ORDER BY h.name",
                    (int(UrlState.FETCHED), int(UrlState.NOT_MODIFIED)),
                )
                .fetchall()
            )
        return [(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]

    def set_meta(self, key: str, value: str) -> None:
        """Store a run-metadata value."""
        with self._tx() as db:
            db.execute(SQL.set_meta, (key, value))

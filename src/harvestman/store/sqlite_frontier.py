"""The default Frontier: one SQLite file in WAL mode, owned by one process at a time."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harvestman.model.errors import FrontierError
from harvestman.model.faults import crash_point
from harvestman.model.records import (
    CrawlTotals,
    FetchOutcome,
    HostTotals,
    LeasedUrl,
    NewUrl,
    UrlRecord,
    UrlState,
)
from harvestman.store.frontier import HostStats

SCHEMA_VERSION = 2  # 2: urls.title
_FAR_FUTURE = 1e18  # "never": a host with no leasable URL and no lease to wait for
_UNFETCHED = int(UrlState.UNFETCHED)

# Design notes (measured on this 2-core machine, 100k add()s with 90% known, batches of 500):
# `url TEXT UNIQUE` with the rowid as insertion order was as fast as a 64-bit hash primary key
# (both 50-80k/s on a 1M-row file, 95-100k+/s on small files; the machine was shared, noise ±30%),
# needs no collision handling, and its rowid gives BFS insertion order for free. A hash key saves
# ~25% of file size but costs a second lookup (hash index, then the row) to compare the text.
_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE hosts(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    ready_at REAL NOT NULL DEFAULT 0,      -- politeness clock: no lease before this
    paused_until REAL NOT NULL DEFAULT 0,
    pause_reason TEXT NOT NULL DEFAULT '',
    wake_at REAL NOT NULL DEFAULT 0,       -- nothing leasable before this (see _park)
    delay REAL,                            -- NULL: the frontier's default delay
    in_flight INTEGER NOT NULL DEFAULT 0,
    pending INTEGER NOT NULL DEFAULT 0,    -- UNFETCHED urls, kept by triggers
    failures INTEGER NOT NULL DEFAULT 0,
    last_failure REAL NOT NULL DEFAULT 0
);
CREATE INDEX hosts_ready ON hosts(ready_at) WHERE pending > 0;
CREATE TABLE urls(
    id INTEGER PRIMARY KEY,                -- insertion order
    url TEXT NOT NULL UNIQUE,
    host_id INTEGER NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,
    depth INTEGER NOT NULL DEFAULT 0,
    score REAL NOT NULL DEFAULT 0,
    parent TEXT NOT NULL DEFAULT '',
    retries INTEGER NOT NULL DEFAULT 0,
    fetch_time REAL NOT NULL DEFAULT 0,
    next_fetch_time REAL NOT NULL DEFAULT 0,
    lease_until REAL NOT NULL DEFAULT 0,   -- 0: not leased
    http_status INTEGER NOT NULL DEFAULT 0,
    error_class TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    signature TEXT NOT NULL DEFAULT '',
    etag TEXT NOT NULL DEFAULT '',
    last_modified TEXT NOT NULL DEFAULT '',
    content_type TEXT NOT NULL DEFAULT '',
    body_size INTEGER NOT NULL DEFAULT 0,
    wire_bytes INTEGER NOT NULL DEFAULT 0,
    final_url TEXT NOT NULL DEFAULT '',    -- '' when it is the URL itself (see _record_cols)
    title TEXT NOT NULL DEFAULT ''
);
-- The per-host queue: only UNFETCHED rows, in lease order (the rowid ends every index entry).
CREATE INDEX urls_queue ON urls(host_id, depth, score DESC) WHERE state = 0;
-- Leased rows only: a few thousand at most, so expiry and next-ready scans stay cheap.
CREATE INDEX urls_leased ON urls(host_id, lease_until) WHERE lease_until > 0;
CREATE INDEX urls_lease_expiry ON urls(lease_until) WHERE lease_until > 0;
CREATE TABLE state_counts(state INTEGER PRIMARY KEY, n INTEGER NOT NULL);
CREATE TRIGGER urls_ins AFTER INSERT ON urls BEGIN
    UPDATE state_counts SET n = n + 1 WHERE state = new.state;
    UPDATE hosts SET pending = pending + 1, wake_at = 0 WHERE id = new.host_id AND new.state = 0;
END;
CREATE TRIGGER urls_state AFTER UPDATE OF state ON urls WHEN old.state <> new.state BEGIN
    UPDATE state_counts SET n = n - 1 WHERE state = old.state;
    UPDATE state_counts SET n = n + 1 WHERE state = new.state;
    UPDATE hosts SET pending = pending + (new.state = 0) - (old.state = 0)
        WHERE id = new.host_id AND (old.state = 0 OR new.state = 0);
END;
"""

# The seen check: the batch's URLs that the UNIQUE index does not hold (one probe each).
_UNKNOWN_URLS = "SELECT value FROM json_each(?) WHERE value NOT IN (SELECT url FROM urls)"
_INSERT_URL = "INSERT OR IGNORE INTO urls(url, host_id, depth, score, parent) VALUES (?, ?, ?, ?, ?)"
# Schema changes of an existing file, by the version they lead to; each runs in one transaction.
# ADD COLUMN only rewrites the schema, not the rows: instant on a file of any size.
_MIGRATIONS = {2: "ALTER TABLE urls ADD COLUMN title TEXT NOT NULL DEFAULT '';"}


def _record_cols(version: int) -> str:
    """The UrlRecord columns; a file of an older schema, open read-only, gets its defaults."""
    # final_url is stored only when it differs from the URL (most rows would hold their URL twice).
    return (
        "u.url, h.name, u.state, u.depth, u.retries, u.score, u.parent, u.fetch_time, u.next_fetch_time,"
        " u.http_status, u.error_class, u.error_message, u.signature, u.etag, u.last_modified,"
        " u.content_type, u.body_size, u.wire_bytes,"
        " CASE WHEN u.final_url <> '' THEN u.final_url WHEN u.http_status > 0 THEN u.url ELSE '' END,"
        + (" u.title" if version >= 2 else " ''")
    )


_WRITE_OUTCOME = """
UPDATE urls SET state = :state, fetch_time = :fetch_time, next_fetch_time = :next_fetch_time,
    http_status = :http_status, error_class = :error_class, error_message = :error_message,
    signature = CASE WHEN :keep AND :signature = '' THEN signature ELSE :signature END,
    etag = CASE WHEN :keep AND :etag = '' THEN etag ELSE :etag END,
    last_modified = CASE WHEN :keep AND :last_modified = '' THEN last_modified ELSE :last_modified END,
    content_type = CASE WHEN :keep AND :content_type = '' THEN content_type ELSE :content_type END,
    title = CASE WHEN :keep AND :title = '' THEN title ELSE :title END,
    body_size = :body_size, wire_bytes = :wire_bytes, final_url = :final_url,
    retries = retries + :retried, lease_until = 0
WHERE id = :id
"""


def _row_to_record(row: Sequence[Any]) -> UrlRecord:
    return UrlRecord(row[0], row[1], UrlState(row[2]), *row[3:])


class SqliteFrontier:
    """A Frontier on one SQLite file (WAL); an exclusive lock file keeps other crawls out.

    The worker processes of one crawl share the file: the process that holds the lock starts them,
    and each opens the file with `shard=(index, count)` and no lock of its own. A worker leases only
    from its share of the hosts (host id modulo count), so each host's politeness is kept by one
    process; every worker adds and completes URLs of any host, and the seen check stays the
    database's.
    """

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
    ) -> None:
        index, count = shard
        if not 0 <= index < count:
            raise ValueError(f"shard index must be in [0, {count}), got {index}")
        self.path = Path(path)
        self.read_only = read_only
        self.shard = shard
        # SQL that keeps a hosts-table query to this process's share ("h" aliases the table).
        self._mine = f" AND h.id % {count} = {index}" if count > 1 else ""
        self.per_host = per_host
        self.delay = delay
        self.lease_seconds = lease_seconds
        self._host_of = host_of
        self._lock = threading.RLock()  # one connection, shared by the engine's threads
        self._hosts: dict[str, int] = {}  # host name -> id; bounded by the number of hosts
        self._record_cols = _record_cols(SCHEMA_VERSION)
        self._closed = False
        self._lock_fd = self._take_lock() if self._owns_files else -1
        # Workers take turns at writing through a blocking flock, which wakes the next one as soon
        # as a transaction ends; SQLite's own busy handler sleeps 1, 2, 5, 10... ms between tries,
        # and two workers waiting so for each other ran at a third of one worker's speed.
        self._writer_fd = -1
        if shard[1] > 1 and not read_only:
            try:
                self._writer_fd = os.open(f"{self.path}.writer", os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                self._drop_lock()
                raise FrontierError(f"cannot create lock file {self.path}.writer: {exc.strerror}") from None
        try:
            self._db = self._connect()
        except sqlite3.Error as exc:
            self._drop_lock()
            raise FrontierError(f"cannot open crawl database {self.path}: {exc}") from None
        try:
            self._open()
        except FrontierError:
            self._db.close()
            self._drop_lock()
            raise
        except sqlite3.Error as exc:
            self._db.close()
            self._drop_lock()
            raise FrontierError(f"{self.path} is not a usable crawl database: {exc}") from None

    # -- opening -----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        """The connection; a reader's is read-write where it may be, but only reads (query_only).

        A `mode=ro` connection opened after the crawl had closed the file created crawl.db-wal and
        -shm and, unable to checkpoint, left them behind; a read-write one, the last to close,
        removes them as the crawl's own does.
        """
        if not self.read_only:
            return sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=rw", isolation_level=None,
                                 check_same_thread=False, uri=True)
        except sqlite3.OperationalError:  # a file this user may not write
            db = sqlite3.connect(f"file:{self.path}?mode=ro", isolation_level=None,
                                 check_same_thread=False, uri=True)
        db.execute("PRAGMA query_only=ON")
        return db

    @property
    def _owns_files(self) -> bool:
        """Whether this process holds the crawl's lock (not a reader, not a worker)."""
        return not self.read_only and self.shard[1] == 1

    def _take_lock(self) -> int:
        lock_path = f"{self.path}.lock"
        while True:
            try:
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise FrontierError(f"cannot create lock file {lock_path}: {exc.strerror}") from None
            try:
                # flock belongs to the open file: the kernel drops it when the process dies, even by
                # SIGKILL. A reader (status, export) takes no lock: it may look at a crawl while it
                # runs; nor does a worker, whose parent holds it.
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise FrontierError(f"crawl database in use by another process: {self.path}") from None
            # The crawl that held the lock removes its file when it closes (see close): a lock taken
            # on a file since removed is no lock, so take it again on the file now there.
            try:
                if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)

    def _remove_own_files(self) -> None:
        """Remove the lock files of a crawl closed by the process that holds its lock.

        The lock is still held here, so no other crawl is between its open and its flock of this
        file but one that will find it removed (see _take_lock). Workers are done by then: their
        parent closes last.
        """
        for suffix in (".writer", ".lock"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def _drop_lock(self) -> None:
        if self._writer_fd >= 0:
            os.close(self._writer_fd)
            self._writer_fd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = -1

    @classmethod
    def open_read_only(cls, path: Path) -> SqliteFrontier:
        """Open an existing crawl database for reports, beside a crawl that may be running."""
        if not Path(path).is_file():
            raise FrontierError(f"no crawl database at {path}")
        return cls(path, host_of=lambda url: url, read_only=True)

    def _open(self) -> None:
        db = self._db
        if self.read_only:
            self._check_schema()
            return
        # WAL + synchronous=NORMAL: a killed process never corrupts the file and loses no
        # committed transaction; only a power loss may drop the last few commits.
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise FrontierError(f"{self.path}: cannot switch the crawl database to WAL mode")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA cache_size=-65536")  # 64 MiB
        # No mmap_size: mapped pages count in RSS and were never faster here. bench/frontier_add.py
        # to 10^7 URLs (2.4 GB file): mmap 1 GiB: 89k URLs/s at 10^7, RSS 1145 MB (1044 MB mapped);
        # 256 MiB: 113k/s, 378 MB; none (pread through the OS page cache): 125k/s, 123 MB, +3 MB
        # from 10^6 (one run each). At 2*10^6: 68-70k/s with 1 GiB mapped (2 runs), 111-113k/s
        # without (medians of 3 runs of two variants; shared machine).
        db.execute("PRAGMA busy_timeout=10000")
        # Checkpoint every ~40 MiB of WAL instead of 4 MiB: pages dirtied again and again (hosts,
        # index leaves) are copied back once, which measured add() at ~115k/s instead of ~80k/s.
        db.execute("PRAGMA wal_autocheckpoint=10000")
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            # One script, one transaction: a crash during creation leaves an empty file, not half a schema.
            counts = "".join(f"INSERT INTO state_counts VALUES ({int(s)}, 0);" for s in UrlState)
            db.executescript(
                f"BEGIN IMMEDIATE;{_SCHEMA}{counts}"
                f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}');COMMIT;"
            )
            return
        self._check_schema()

    def _check_schema(self) -> None:
        db = self._db
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables or "urls" not in tables:
            raise FrontierError(f"{self.path} is an SQLite file but not a harvestman crawl database")
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else -1
        if version > SCHEMA_VERSION:
            raise FrontierError(
                f"{self.path} has crawl database schema {version}, newer than this harvestman "
                f"understands ({SCHEMA_VERSION}): upgrade harvestman"
            )
        if version < 1:
            raise FrontierError(f"{self.path} has an unknown crawl database schema ({row and row[0]!r})")
        if version < SCHEMA_VERSION and not self.read_only:
            self._migrate()
            version = SCHEMA_VERSION
        self._record_cols = _record_cols(version)

    def _migrate(self) -> None:
        """Bring a file of an older schema up to SCHEMA_VERSION, each step in one transaction."""
        db = self._db
        for target in range(2, SCHEMA_VERSION + 1):
            db.execute("BEGIN IMMEDIATE")
            try:
                # Read again under the write lock: another process may have migrated meanwhile.
                current = int(db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
                if current < target:
                    db.execute(_MIGRATIONS[target])
                    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(target),))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction under the thread lock; rolled back (and caches dropped) on error."""
        with self._lock:
            if self._closed:
                raise FrontierError(f"crawl database {self.path} is closed")
            db = self._db
            if self._writer_fd >= 0:
                fcntl.flock(self._writer_fd, fcntl.LOCK_EX)
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    self._hosts.clear()  # host ids inserted in the rolled-back transaction are gone
                    raise
            except sqlite3.Error as exc:  # a full disk, a damaged file: say so in harvestman's terms
                raise FrontierError(f"crawl database {self.path}: {exc}") from None
            finally:
                if self._writer_fd >= 0:
                    fcntl.flock(self._writer_fd, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """The thread lock for a read, with SQLite's errors turned into FrontierError."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise FrontierError(f"crawl database {self.path}: {exc}") from None

    def _read(self) -> sqlite3.Connection:
        if self._closed:
            raise FrontierError(f"crawl database {self.path} is closed")
        return self._db

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
        rows = [(u.url, ids[u.host], u.depth, u.score, u.parent) for u in fresh]
        return self._db.executemany(_INSERT_URL, rows).rowcount

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
            # so re-running the query walks on to the next hosts in ready_at order.
            hosts = db.execute(
                "SELECT id, name, in_flight, COALESCE(delay, ?) FROM hosts h"
                " WHERE pending > 0 AND ready_at <= ? AND paused_until <= ? AND wake_at <= ?"
                f" AND in_flight < ?{self._mine} ORDER BY ready_at, id LIMIT ?",
                (self.delay, now, now, now, self.per_host, max(limit - len(out), 16)),
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
                    "SELECT id, url, depth, retries, etag, last_modified FROM urls"
                    " WHERE host_id = ? AND state = 0 AND next_fetch_time <= ? AND lease_until = 0"
                    " ORDER BY depth, score DESC, id LIMIT ?",
                    (host_id, now, room),
                ).fetchall()
                if rows:
                    db.executemany(
                        "UPDATE urls SET lease_until = ? WHERE id = ?",
                        [(lease_until, r[0]) for r in rows],
                    )
                    db.execute(
                        "UPDATE hosts SET in_flight = in_flight + ?, ready_at = MAX(ready_at, ?)"
                        " WHERE id = ?",
                        (len(rows), now + delay, host_id),
                    )
                    out.extend(LeasedUrl(r[1], name, r[2], r[3], lease_until, r[4], r[5]) for r in rows)
                if len(rows) < room:
                    self._park(host_id, now)
        return out

    def _park(self, host_id: int, now: float) -> None:
        """Skip a host with nothing leasable until its next URL is due or one of its leases expires."""
        db = self._db
        due = db.execute(
            "SELECT MIN(next_fetch_time) FROM urls WHERE host_id = ? AND state = 0 AND lease_until = 0",
            (host_id,),
        ).fetchone()[0]
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
            "SELECT id, host_id FROM urls WHERE lease_until > 0 AND lease_until <= ?", (now,)
        ).fetchall()
        if rows:
            db.executemany("UPDATE urls SET lease_until = 0 WHERE id = ?", [(r[0],) for r in rows])
            db.executemany(
                "UPDATE hosts SET in_flight = MAX(in_flight - 1, 0), wake_at = 0 WHERE id = ?",
                [(r[1],) for r in rows],
            )

    # -- reporting back ----------------------------------------------------------------------------

    def complete(self, outcomes: Sequence[FetchOutcome], now: float, new_urls: Sequence[NewUrl] = (), *,
                 lease: int = 0) -> list[LeasedUrl]:
        """Record fetch outcomes, free their leases, add discovered URLs and lease up to `lease` URLs
        (as `lease()` would, returned), all in one transaction."""
        with self._tx():
            if new_urls:
                self._insert(new_urls)
            for outcome in outcomes:
                self._write_outcome(outcome, outcome.url, outcome.state, now, 0, "")
                final = outcome.final_url
                # The page a redirect ended on is fetched too: mark it so it is not fetched again when
                # found later. A retry (UNFETCHED) will follow the redirect again, so nothing to mark;
                # nor does a redirect that was not followed (a 3xx is the last response): its target
                # was not fetched here.
                if (final and final != outcome.url and outcome.state != UrlState.UNFETCHED
                        and not 300 <= outcome.http_status < 400):
                    state = outcome.state
                    if state in (UrlState.REDIRECT_TEMP, UrlState.REDIRECT_PERM):
                        state = UrlState.FETCHED
                    depth_row = self._db.execute(
                        "SELECT depth FROM urls WHERE url = ?", (outcome.url,)
                    ).fetchone()
                    self._write_outcome(outcome, final, state, now, depth_row[0], outcome.url)
            leased = self._lease(lease, now) if lease > 0 else []
            crash_point("db-mid-commit")  # crash tests: outcomes and new URLs written, COMMIT not yet run
        return leased

    def _write_outcome(
        self, o: FetchOutcome, url: str, state: UrlState, now: float, depth: int, parent: str
    ) -> None:
        db = self._db
        row = db.execute("SELECT id, host_id, lease_until FROM urls WHERE url = ?", (url,)).fetchone()
        if row is None:
            # Reported without being added (a final URL, or a URL leased from an older file): upsert.
            host_id = self._host_id(self._host_of(url))
            db.execute(
                "INSERT INTO urls(url, host_id, depth, parent, state) VALUES (?, ?, ?, ?, ?)",
                (url, host_id, depth, parent, int(state)),
            )
            row = db.execute("SELECT id, host_id, lease_until FROM urls WHERE url = ?", (url,)).fetchone()
        url_id, host_id, leased = row
        db.execute(
            _WRITE_OUTCOME,
            {
                "id": url_id,
                "state": int(state),
                "fetch_time": o.fetch_time,
                "next_fetch_time": o.next_fetch_time,
                "http_status": o.http_status,
                "error_class": o.error_class,
                "error_message": o.error_message,
                # A 304 usually repeats no validators: keep what the last full fetch recorded.
                "keep": state == UrlState.NOT_MODIFIED,
                "signature": o.signature,
                "etag": o.etag,
                "last_modified": o.last_modified,
                "content_type": o.content_type,
                "body_size": o.body_size,
                "wire_bytes": o.wire_bytes,
                "final_url": o.final_url if url == o.url else "",
                "title": o.title,
                "retried": 1 if o.retried and url == o.url else 0,
            },
        )
        db.execute(
            "UPDATE hosts SET in_flight = MAX(in_flight - ?, 0),"
            " ready_at = MAX(ready_at, ? + COALESCE(delay, ?)),"
            " wake_at = CASE WHEN ? THEN MIN(wake_at, ?) ELSE wake_at END WHERE id = ?",
            (
                1 if leased > 0 else 0,
                now,
                self.delay,
                state == UrlState.UNFETCHED or leased > 0,
                # A retry becomes leasable at its next fetch time; a freed slot at once.
                o.next_fetch_time if leased == 0 else 0.0,
                host_id,
            ),
        )

    # -- host controls -------------------------------------------------------------------------------

    def set_host_delay(self, host: str, delay: float) -> None:
        """Set the seconds between two requests to `host` (robots.txt Crawl-delay)."""
        with self._tx() as db:
            db.execute("UPDATE hosts SET delay = ? WHERE id = ?", (delay, self._host_id(host)))

    def pause_host(self, host: str, until: float, reason: str) -> None:
        """Lease nothing from `host` before `until`; a pause is only ever extended, never shortened."""
        with self._tx() as db:
            db.execute(
                "UPDATE hosts SET paused_until = MAX(paused_until, ?), pause_reason = ? WHERE id = ?",
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
            db.execute("UPDATE hosts SET failures = 0 WHERE name = ? AND failures <> 0", (host,))

    def release_leases(self) -> int:
        """Hand back every lease (a crawl resumed by its only process); returns how many there were."""
        with self._tx() as db:
            n = db.execute("UPDATE urls SET lease_until = 0 WHERE lease_until > 0").rowcount
            db.execute("UPDATE hosts SET in_flight = 0, wake_at = 0 WHERE in_flight <> 0 OR wake_at <> 0")
            return n

    # -- status and export ------------------------------------------------------------------------------

    def counts(self) -> dict[UrlState, int]:
        """Number of URLs in each state (every state present, zero included)."""
        with self._reading():
            rows = dict(self._read().execute("SELECT state, n FROM state_counts").fetchall())
        return {s: int(rows.get(int(s), 0)) for s in UrlState}

    def due_count(self, now: float) -> int:
        """Number of unfetched URLs that are due and not leased."""
        with self._reading():
            return int(
                self._read()
                .execute(
                    "SELECT COUNT(*) FROM urls WHERE state = 0 AND next_fetch_time <= ? AND lease_until = 0",
                    (now,),
                )
                .fetchone()[0]
            )

    def in_flight(self) -> int:
        """Number of URLs currently leased."""
        with self._reading():
            return int(self._read().execute("SELECT COUNT(*) FROM urls WHERE lease_until > 0").fetchone()[0])

    def next_ready_time(self, *, everywhere: bool = False) -> float | None:
        """Earliest time a lease may succeed (never later than the truth), or None when nothing is pending.

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

    def records(self) -> Iterator[UrlRecord]:
        """Stream every URL row in insertion order (for export)."""
        last = 0
        while True:
            # Keyset pages: no read transaction stays open between yields, so writers are never blocked.
            with self._reading():
                rows = (
                    self._read()
                    .execute(
                        f"SELECT u.id, {self._record_cols} FROM urls u JOIN hosts h ON h.id = u.host_id"
                        " WHERE u.id > ? ORDER BY u.id LIMIT 1000",
                        (last,),
                    )
                    .fetchall()
                )
            if not rows:
                return
            last = rows[-1][0]
            for row in rows:
                yield _row_to_record(row[1:])

    def host_stats(self) -> list[HostStats]:
        """Per host: (host, pending, fetched, errors); fetched counts FETCHED and NOT_MODIFIED."""
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

    def host_totals(self) -> list[HostTotals]:
        """Per host: URLs by state, URLs with an error, bytes on the wire (one scan, in SQL), by name."""
        with self._reading():
            rows = (
                self._read()
                .execute(
                    "SELECT h.name, u.state, COUNT(*), SUM(u.error_class <> ''), SUM(u.wire_bytes)"
                    " FROM urls u JOIN hosts h ON h.id = u.host_id GROUP BY u.host_id, u.state"
                    " ORDER BY h.name"
                )
                .fetchall()
            )
        hosts: dict[str, tuple[dict[UrlState, int], list[int]]] = {}
        for name, state, urls, errors, wire_bytes in rows:
            states, sums = hosts.setdefault(str(name), ({s: 0 for s in UrlState}, [0, 0]))
            states[UrlState(state)] = int(urls)
            sums[0] += int(errors)
            sums[1] += int(wire_bytes)
        return [HostTotals(name, states, errors, wire_bytes)
                for name, (states, (errors, wire_bytes)) in hosts.items()]

    def totals(self) -> CrawlTotals:
        """Responses, bytes on the wire, and the span of fetch times over all URLs (one scan, in SQL)."""
        with self._reading():
            row = self._read().execute(
                "SELECT COUNT(*) FILTER (WHERE http_status > 0), COALESCE(SUM(wire_bytes), 0),"
                " COALESCE(MIN(fetch_time) FILTER (WHERE http_status > 0), 0),"
                " COALESCE(MAX(fetch_time) FILTER (WHERE http_status > 0), 0) FROM urls"
            ).fetchone()
        return CrawlTotals(int(row[0]), int(row[1]), float(row[2]), float(row[3]))

    def error_counts(self) -> dict[str, int]:
        """Number of URLs per recorded error class."""
        with self._reading():
            rows = (
                self._read()
                .execute(
                    "SELECT error_class, COUNT(*) FROM urls WHERE error_class <> '' GROUP BY error_class"
                )
                .fetchall()
            )
        return {str(k): int(v) for k, v in rows}

    def get(self, url: str) -> UrlRecord | None:
        """The row of `url`, or None when it is not known."""
        with self._reading():
            row = (
                self._read()
                .execute(
                    f"SELECT {self._record_cols} FROM urls u JOIN hosts h ON h.id = u.host_id"
                    " WHERE u.url = ?",
                    (url,),
                )
                .fetchone()
            )
        return None if row is None else _row_to_record(row)

    def get_meta(self, key: str) -> str | None:
        """A stored run-metadata value (seeds, config, start time), or None."""
        with self._reading():
            row = self._read().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Store a run-metadata value."""
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def integrity_check(self) -> str:
        """SQLite's own integrity check: 'ok', or the problems it found."""
        with self._reading():
            rows = self._read().execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    def close(self) -> None:
        """Release the database and its lock; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(sqlite3.Error):
                self._db.close()  # the last connection's close checkpoints the WAL and removes it
            if self._owns_files:
                self._remove_own_files()
            self._drop_lock()

    def __enter__(self) -> SqliteFrontier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

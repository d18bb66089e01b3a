"""The SQLite file under the default store: schema and migrations, the crawl's lock, transactions."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

from harvestman.model.errors import FrontierError
from harvestman.model.records import UrlState
from harvestman.store.sql_shared import BEST_OF_HOST as SHARED_BEST_OF_HOST
from harvestman.store.sql_shared import LEASE_EXPIRY_INDEX, META_TABLE, SQLITE, render, stored_schema
from harvestman.store.sql_shared import SQLITE_SQL as SQL
from harvestman.store.sql_shared import record_columns as shared_record_columns

# The version _SCHEMA creates; a later one is its migration alone (a new file runs it too), so that a
# new column is a UrlRecord field and one migration here (SCHEMA_VERSION follows _MIGRATIONS).
_SCHEMA_BASE = 7  # 2: urls.title; 3: queued URLs by priority (re-visits), the link graph;
# 4: what batch jobs and schedules keep (simhash, duplicate_of, fetch_interval, inlinks, metadata);
# 5: what a fetch cost and found (body_wire_bytes, saved_bytes, partial, change, checked_by);
# 6: focused crawling's judgement of a page (topic, relevance); 7: hosts.best, the global lease order

# Design notes (measured on this 2-core machine, 100k add()s with 90% known, batches of 500):
# `url TEXT UNIQUE` with the rowid as insertion order was as fast as a 64-bit hash primary key
# (both 50-80k/s on a 1M-row file, 95-100k+/s on small files; the machine was shared, noise ±30%),
# needs no collision handling, and its rowid gives BFS insertion order for free. A hash key saves
# ~25% of file size but costs a second lookup (hash index, then the row) to compare the text.
# Statements shared by a new file's schema and the migration to version 3 (one statement each).
_TRIGGERS = (
    # best is written only when it falls (in a bfs crawl, almost never): a write moves the row in
    # the hosts_order index, where an ordered crawl has one.
    """CREATE TRIGGER urls_ins AFTER INSERT ON urls BEGIN
    UPDATE state_counts SET n = n + 1 WHERE state = new.state;
    UPDATE hosts SET pending = pending + 1, wake_at = 0 WHERE id = new.host_id AND new.queued = 1;
    UPDATE hosts SET best = new.priority WHERE id = new.host_id AND new.queued = 1 AND best > new.priority;
END""",
    """CREATE TRIGGER urls_state AFTER UPDATE OF state ON urls WHEN old.state <> new.state BEGIN
    UPDATE state_counts SET n = n - 1 WHERE state = old.state;
    UPDATE state_counts SET n = n + 1 WHERE state = new.state;
END""",
    """CREATE TRIGGER urls_queued AFTER UPDATE OF queued ON urls WHEN old.queued <> new.queued BEGIN
    UPDATE hosts SET pending = pending + new.queued - old.queued WHERE id = new.host_id;
    UPDATE hosts SET best = new.priority
    WHERE id = new.host_id AND new.queued = 1 AND new.lease_until = 0 AND best > new.priority;
END""",
)
# Version 3's triggers, as a file went on from there until version 7 (which replaces two of them).
_TRIGGERS_V3 = (
    """CREATE TRIGGER urls_ins AFTER INSERT ON urls BEGIN
    UPDATE state_counts SET n = n + 1 WHERE state = new.state;
    UPDATE hosts SET pending = pending + 1, wake_at = 0 WHERE id = new.host_id AND new.queued = 1;
END""",
    _TRIGGERS[1],
    """CREATE TRIGGER urls_queued AFTER UPDATE OF queued ON urls WHEN old.queued <> new.queued BEGIN
    UPDATE hosts SET pending = pending + new.queued - old.queued WHERE id = new.host_id;
END""",
)
BEST_OF_HOST = render(SHARED_BEST_OF_HOST, SQLITE)  # see sql_shared.BEST_OF_HOST
# The ordered lease's index, made by a store opened ordered and dropped by one opened unordered
# (sqlite_store): its entries move at every lease and outcome (ready_at), which a bfs crawl, whose
# lease never reads it, should not pay for. On best alone, ties sorted apart by ready_at, the lease
# sorted every host with pending URLs: 116 µs a leased URL at 10^4 hosts, against 24 for bfs.
ORDER_INDEX = "hosts_order"
ORDER_INDEX_SQL = f"CREATE INDEX IF NOT EXISTS {ORDER_INDEX} ON hosts(best, ready_at) WHERE pending > 0"
# The per-host queues: only queued rows, in lease order (the rowid ends every index entry).
_QUEUE_INDEX = "CREATE INDEX urls_queue ON urls(host_id, priority) WHERE queued = 1"
# The link graph: one row a fetched HTML page, its links as JSON [[url, anchor, kind, nofollow], ...].
# One row a page, not one an edge: a page's links cost one insert on the crawl's hot path.
_LINKS_TABLE = "CREATE TABLE links(url_id INTEGER PRIMARY KEY, links TEXT NOT NULL)"
_SCHEMA = (
    f"""
{META_TABLE};
CREATE TABLE hosts(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    ready_at REAL NOT NULL DEFAULT 0,      -- politeness clock: no lease before this
    paused_until REAL NOT NULL DEFAULT 0,
    pause_reason TEXT NOT NULL DEFAULT '',
    wake_at REAL NOT NULL DEFAULT 0,       -- nothing leasable before this (see _park)
    delay REAL,                            -- NULL: the frontier's default delay
    in_flight INTEGER NOT NULL DEFAULT 0,
    pending INTEGER NOT NULL DEFAULT 0,    -- queued urls, kept by triggers
    failures INTEGER NOT NULL DEFAULT 0,
    last_failure REAL NOT NULL DEFAULT 0,
    best REAL NOT NULL DEFAULT 9e999       -- the global lease order: see BEST_OF_HOST
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
    final_url TEXT NOT NULL DEFAULT '',    -- '' when it is the URL itself (see record_columns)
    title TEXT NOT NULL DEFAULT '',
    priority REAL NOT NULL DEFAULT 0,      -- lease order in its host's queue, lowest first
    queued INTEGER NOT NULL DEFAULT 1,     -- 1: to be fetched (UNFETCHED, or a re-visit is scheduled)
    simhash INTEGER NOT NULL DEFAULT 0,    -- 64-bit SimHash of the visible text, signed; 0: none
    duplicate_of TEXT NOT NULL DEFAULT '', -- the URL kept in its place (state DUPLICATE)
    fetch_interval REAL NOT NULL DEFAULT 0,  -- the schedule's current interval (s); 0: none yet
    inlinks INTEGER NOT NULL DEFAULT 0,    -- linking pages, as invertlinks last counted them
    metadata TEXT NOT NULL DEFAULT '',     -- a JSON object (seed metadata, sitemap lastmod); '': none
    body_wire_bytes INTEGER NOT NULL DEFAULT 0,  -- the body as transferred (encoded), headers aside
    saved_bytes INTEGER NOT NULL DEFAULT 0,  -- what a full fetch would have cost more (304, HEAD, a stop)
    partial TEXT NOT NULL DEFAULT '',      -- why the body stops early: head, selector:…, bytes:N
    change TEXT NOT NULL DEFAULT '',       -- against the fetch before: new, unchanged, minor, major
    checked_by TEXT NOT NULL DEFAULT '',   -- how a re-fetch was checked: conditional, size, sitemap, full
    topic TEXT NOT NULL DEFAULT '',        -- focused crawling: the page's most likely target topic
    relevance REAL NOT NULL DEFAULT 0      -- ... and its probability (policy/focus.py)
);
-- Leased rows only: a few thousand at most, so expiry and next-ready scans stay cheap.
CREATE INDEX urls_leased ON urls(host_id, lease_until) WHERE lease_until > 0;
{LEASE_EXPIRY_INDEX};
CREATE TABLE state_counts(state INTEGER PRIMARY KEY, n INTEGER NOT NULL);
"""
    + "".join(f"{s};\n" for s in (_QUEUE_INDEX, *_TRIGGERS, _LINKS_TABLE))
)

_V4_COLUMNS = (
    "simhash INTEGER NOT NULL DEFAULT 0",
    "duplicate_of TEXT NOT NULL DEFAULT ''",
    "fetch_interval REAL NOT NULL DEFAULT 0",
    "inlinks INTEGER NOT NULL DEFAULT 0",
    "metadata TEXT NOT NULL DEFAULT ''",
)
_V5_COLUMNS = (
    "body_wire_bytes INTEGER NOT NULL DEFAULT 0",
    "saved_bytes INTEGER NOT NULL DEFAULT 0",
    "partial TEXT NOT NULL DEFAULT ''",
    "change TEXT NOT NULL DEFAULT ''",
    "checked_by TEXT NOT NULL DEFAULT ''",
)
_V6_COLUMNS = (
    "topic TEXT NOT NULL DEFAULT ''",
    "relevance REAL NOT NULL DEFAULT 0",
)

# Schema changes of an existing file, by the version they lead to; each runs in one transaction.
# ADD COLUMN only rewrites the schema, not the rows: instant on a file of any size (version 3's
# UPDATE does rewrite them, once).
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: ("ALTER TABLE urls ADD COLUMN title TEXT NOT NULL DEFAULT ''",),
    3: (
        "ALTER TABLE urls ADD COLUMN priority REAL NOT NULL DEFAULT 0",
        "ALTER TABLE urls ADD COLUMN queued INTEGER NOT NULL DEFAULT 1",
        "DROP TRIGGER urls_ins",
        "DROP TRIGGER urls_state",
        "DROP INDEX urls_queue",
        # Before the new triggers: hosts.pending already counts these rows (UNFETCHED ones).
        "UPDATE urls SET priority = depth, queued = (state = 0)",
        _QUEUE_INDEX,
        *_TRIGGERS_V3,
        _LINKS_TABLE,
    ),
    4: tuple(f"ALTER TABLE urls ADD COLUMN {column}" for column in _V4_COLUMNS),
    5: tuple(f"ALTER TABLE urls ADD COLUMN {column}" for column in _V5_COLUMNS),
    6: tuple(f"ALTER TABLE urls ADD COLUMN {column}" for column in _V6_COLUMNS),
    # One pass over the hosts, each an index probe into its queue.
    7: (
        f"ALTER TABLE hosts ADD COLUMN best REAL NOT NULL DEFAULT {SQLITE.infinity}",
        SQL.best_all,
        "DROP TRIGGER urls_ins",
        "DROP TRIGGER urls_queued",
        _TRIGGERS[0],
        _TRIGGERS[2],
    ),
}
SCHEMA_VERSION = max(_MIGRATIONS)


def record_columns(version: int) -> str:
    """The UrlRecord columns; a file of an older schema, open read-only, gets its defaults for the
    columns added since (by _MIGRATIONS)."""
    added = (re.findall(r"ADD COLUMN (\w+)", sql) for v in range(version + 1, SCHEMA_VERSION + 1)
             for sql in _MIGRATIONS[v])
    return shared_record_columns({name for names in added for name in names})


class SqliteFile:
    """One crawl database file (WAL mode); an exclusive lock file keeps other crawls out.

    The process that holds the lock may start worker processes that open the same file with
    `shard=(index, count)` and no lock of their own; their writes take turns through a second lock
    file (`.writer`). Readers (status, export) take no lock: they may look at a crawl while it runs.
    """

    def __init__(self, path: Path, *, read_only: bool = False, shard: tuple[int, int] = (0, 1)) -> None:
        index, count = shard
        if not 0 <= index < count:
            raise ValueError(f"shard index must be in [0, {count}), got {index}")
        self.path = Path(path)
        self.read_only = read_only
        self.shard = shard
        self._lock = threading.RLock()  # one connection, shared by the engine's threads
        self._record_cols = record_columns(SCHEMA_VERSION)
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

    def _forget(self) -> None:
        """Drop caches of what a rolled-back transaction wrote (a subclass's host ids)."""

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
                f"INSERT INTO meta VALUES ('schema_version', '{_SCHEMA_BASE}');COMMIT;"
            )
            if _SCHEMA_BASE < SCHEMA_VERSION:
                self._migrate()
            return
        self._check_schema()

    def _check_schema(self) -> None:
        db = self._db
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables or "urls" not in tables:
            raise FrontierError(f"{self.path} is an SQLite file but not a harvestman crawl database")
        version = stored_schema(db.execute(SQL.schema_version).fetchone(), str(self.path), SCHEMA_VERSION)
        if version < SCHEMA_VERSION and not self.read_only:
            self._migrate()
            version = SCHEMA_VERSION
        self._record_cols = record_columns(version)

    def _migrate(self) -> None:
        """Bring a file of an older schema up to SCHEMA_VERSION, each step in one transaction."""
        db = self._db
        for target in range(2, SCHEMA_VERSION + 1):
            db.execute("BEGIN IMMEDIATE")
            try:
                # Read again under the write lock: another process may have migrated meanwhile.
                current = int(db.execute(SQL.schema_version).fetchone()[0])
                if current < target:
                    for statement in _MIGRATIONS[target]:
                        db.execute(statement)
                    db.execute(SQL.set_schema_version, (str(target),))
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
                    self._forget()  # what the rolled-back transaction wrote is gone
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

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read (see SqlReads)."""
        with self._reading():
            return self._read().execute(sql, params).fetchall()

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

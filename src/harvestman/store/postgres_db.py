"""The PostgreSQL database under PostgresStore: connection, schema, transactions, and the CrawlDb side
(records, statistics, metadata, the link graph, bulk operations)."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice
from typing import Any, Self, TypeVar, cast

from harvestman.model.config import DB_OUTAGE_LIMIT
from harvestman.model.errors import ConfigError, DatabaseUnavailable, FrontierError
from harvestman.model.records import UrlRecord, UrlState
from harvestman.net.urls import without_password
from harvestman.store.frontier import GENERATE_ORDERS, HostStats, row_to_record, signed64

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
except ImportError:
    raise ConfigError(
        "a postgresql:// crawl database needs psycopg: pip install '.[postgres]' (in harvestman's folder)"
    ) from None

from harvestman.store.postgres_sql import MIGRATIONS, RECORD_COLS, SCHEMA, SCHEMA_BASE, SCHEMA_VERSION
from harvestman.store.sql_reads import SqlReads
from harvestman.store.sql_shared import POSTGRES, stored_schema
from harvestman.store.sql_shared import POSTGRES_SQL as SQL

_RETRIES = 5
_WAITS = (0.05, 5.0)  # the first wait before reaching a lost database again, and the longest
# SQLSTATEs that say the server went away rather than that a statement failed: admin_shutdown (a
# fast or immediate stop, a restart), crash_shutdown, cannot_connect_now (starting or stopping).
_LOST_STATES = frozenset({"57P01", "57P02", "57P03"})
# A network cut sends nothing: without these a statement would wait for an answer for hours (the
# kernel's TCP keepalive) and a connection attempt for minutes. Given in the URL, the URL's win.
_PATIENCE = {"connect_timeout": "10", "keepalives": "1", "keepalives_idle": "30",
             "keepalives_interval": "10", "keepalives_count": "3"}
_SCHEMA_LOCK = 0x68766D31  # advisory lock id taken while creating the schema ("hvm1")
_COMPACT_AT = 2000  # tallies rows beyond which counts() folds them into one row each
_BATCH = 10_000  # rows a bulk statement (see _update_batches)
QUEUED = -1  # the tallies key of queued URLs (the others are states)
T = TypeVar("T")


def clean(text: str) -> str:
    """PostgreSQL's text refuses NUL characters, which a page title or an error may hold: drop them."""
    return text.replace("\x00", "") if "\x00" in text else text


def connection_lost(exc: psycopg.Error, conn: psycopg.Connection[Any] | None) -> bool:
    """Whether `exc` means the connection was lost (a restart, a failover, a network cut), not that
    the statement failed: only then is the work tried again, on a new connection."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    # psycopg gives no SQLSTATE for what failed on the client's side (a closed socket, no server).
    return (conn is None or conn.closed or conn.broken or state is None or state.startswith("08")
            or state in _LOST_STATES)


log = logging.getLogger(__name__)


class PostgresDb(SqlReads):
    """One crawl's PostgreSQL database, over one connection shared by the caller's threads.

    The schema is created by the first process to open an empty database (under an advisory lock,
    so two processes starting at once make one). A reader (`read_only`) writes nothing.

    A lost connection (the server restarted, a failover, a network cut) is opened again and the
    work done again, with back-off, for up to `outage_limit` seconds (see _retrying); a write whose
    COMMIT got no answer is asked about (txid_status) rather than done twice.
    """

    _dialect = POSTGRES
    _sql = SQL
    _record_cols = RECORD_COLS

    def __init__(self, url: str, *, read_only: bool = False, outage_limit: float = DB_OUTAGE_LIMIT) -> None:
        self.url = url
        self.name = without_password(url)
        self.read_only = read_only
        self.outage_limit = outage_limit
        self._lock = threading.RLock()  # one connection, shared by the engine's threads
        self._closed = False
        # Commits need not wait for the disk: a killed process loses nothing it committed, and only
        # a crash of the server's machine may drop the last fraction of a second (the same promise
        # as SQLite's WAL with synchronous=NORMAL); a lost completion is leased and fetched again.
        self._options = "-c synchronous_commit=off" + (
            " -c default_transaction_read_only=on" if read_only else "")
        self._conn: psycopg.Connection[Any] | None = None
        self._depth = 0  # calls of _retrying under way: >0 inside a transaction of _write's (see _run)
        self._lost_at = 0.0  # when the connection was lost (time.monotonic()), 0 while it is up
        try:
            # The first connection is not waited for: a wrong address is said at once.
            self._conn = conn = self._connect()
        except psycopg.Error as exc:
            raise FrontierError(f"cannot open crawl database {self.name}: {exc}".strip()) from None
        try:
            self._open(conn)
        except psycopg.Error as exc:
            conn.close()
            raise FrontierError(f"{self.name} is not a usable crawl database: {exc}") from None
        except FrontierError:
            conn.close()
            raise

    def _forget(self) -> None:
        """Drop what a rolled-back transaction may have made stale (a subclass's caches)."""

    # -- opening and transactions --------------------------------------------------------------

    def _open(self, conn: psycopg.Connection[Any]) -> None:
        if not self.read_only:
            with conn.transaction():
                # Two processes opening a new database at once: one creates, the other then finds it.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                tables = self._tables(conn)
                if not tables:
                    conn.execute(SCHEMA)
                    conn.execute("INSERT INTO meta VALUES ('schema_version', %s)", (str(SCHEMA_BASE),))
                    self._migrate(conn)  # the versions past SCHEMA_BASE
                    return
                if {"meta", "urls"} <= tables:
                    self._migrate(conn)
        tables = self._tables(conn)
        if "meta" not in tables or "urls" not in tables:
            if not tables:
                raise FrontierError(f"no crawl in database {self.name}")
            raise FrontierError(f"{self.name} is a PostgreSQL database but not a harvestman crawl database")
        version = stored_schema(conn.execute(SQL.schema_version).fetchone(), str(self.name), SCHEMA_VERSION)
        if version < SCHEMA_VERSION:  # read-only: the columns it reads are not there yet
            raise FrontierError(
                f"{self.name} has crawl database schema {version}: run a harvestman command that writes "
                "to it (crawl --resume, inject) once to upgrade it"
            )

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Bring a database of an older schema up to SCHEMA_VERSION (inside _open's transaction)."""
        row = conn.execute(SQL.schema_version).fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else SCHEMA_VERSION
        for target in range(version + 1, SCHEMA_VERSION + 1):
            conn.execute(MIGRATIONS[target])
            conn.execute(SQL.set_schema_version, (str(target),))

    def _tables(self, conn: psycopg.Connection[Any]) -> set[str]:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        return {str(r[0]) for r in rows}

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection to the crawl's database, in autocommit (_transaction says BEGIN)."""
        given = conninfo_to_dict(self.url)
        patience = {k: v for k, v in _PATIENCE.items() if k not in given}
        return psycopg.connect(make_conninfo(self.url, options=self._options, **patience), autocommit=True)

    def _retrying(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work(connection)`; when the connection is lost, the same on a new one, after a wait that
        doubles each time, until the database has been away `outage_limit` seconds (then
        DatabaseUnavailable; a later call tries once, not for as long again). Any other error is
        raised as it is. Call it under the lock."""
        wait = _WAITS[0]
        self._depth += 1
        try:
            while True:
                if self._closed:
                    raise FrontierError(f"crawl database {self.name} is closed")
                conn = self._conn
                try:
                    if conn is None:
                        self._conn = conn = self._connect()
                    result = work(conn)
                    if self._lost_at:
                        log.warning("harvestman: crawl database %s: back after %.1f s", self.name,
                                    time.monotonic() - self._lost_at)
                        self._lost_at = 0.0
                    return result
                except psycopg.Error as exc:
                    if not connection_lost(exc, conn):
                        raise
                    cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                # A broken connection cannot be used again: it is closed and opened anew.
                self._conn = None
                if conn is not None:
                    conn.close()
                self._forget()
                now = time.monotonic()
                if not self._lost_at:
                    self._lost_at = now
                    log.warning("harvestman: crawl database %s: connection lost (%s); trying again for "
                                "up to %g s", self.name, cause, self.outage_limit)
                away = now - self._lost_at
                if away >= self.outage_limit:
                    raise DatabaseUnavailable(
                        f"crawl database {self.name} unreachable for {away:.0f} s (db_outage_limit "
                        f"{self.outage_limit:g} s): {cause}; once it is back, --resume (or worker) continues")
                time.sleep(min(wait, self.outage_limit - away))
                wait = min(wait * 2, _WAITS[1])
        finally:
            self._depth -= 1

    def _transaction(self, conn: psycopg.Connection[Any], work: Callable[[psycopg.Connection[Any]], T],
                     unanswered: list[tuple[int, int, Any]]) -> T:
        """`work` in one transaction on `conn`. Its id is taken with its BEGIN (one round trip, as
        BEGIN alone): when the COMMIT goes unanswered because the connection was lost, (id, backend,
        result) goes to `unanswered`, for _write to ask whether it committed."""
        cur = conn.execute("BEGIN; SELECT txid_current()")  # no parameters: one simple query
        cur.nextset()
        row = cur.fetchone()
        txid, pid = int(row[0]) if row else 0, conn.info.backend_pid  # (not known once it is closed)
        try:
            result = work(conn)
        except BaseException:
            if not conn.broken and not conn.closed:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
            raise
        try:
            self._commit(conn)
        except psycopg.Error as exc:
            if connection_lost(exc, conn):
                unanswered.append((txid, pid, result))
            raise
        return result

    def _commit(self, conn: psycopg.Connection[Any]) -> None:
        """COMMIT (a method of its own: tests lose the connection here)."""
        conn.execute("COMMIT")

    def _committed(self, conn: psycopg.Connection[Any], txid: int, pid: int) -> bool:
        """Whether transaction `txid` of the lost backend `pid` committed. One still in progress
        (its backend has not noticed a network cut yet) is ended first, so that it cannot commit
        later."""
        for _ in range(50):
            row = conn.execute("SELECT txid_status(%s)", (txid,)).fetchone()
            status = row[0] if row else None
            if status != "in progress":
                return status == "committed"
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            time.sleep(0.1)
        raise FrontierError(f"crawl database {self.name}: transaction {txid} of a lost connection "
                            "neither commits nor ends")

    def _write(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run `work` in one transaction under the thread lock: again after a deadlock (rolled
        back), and on a new connection after the connection was lost, but never twice: a COMMIT
        that got no answer is asked about first (txid_status), and its result stands if it did."""
        unanswered: list[tuple[int, int, Any]] = []

        def attempt(conn: psycopg.Connection[Any]) -> T:
            if unanswered:
                txid, pid, result = unanswered[0]
                committed = self._committed(conn, txid, pid)
                unanswered.clear()  # only once answered: a connection lost while asking asks again
                if committed:
                    return cast(T, result)
            return self._transaction(conn, work, unanswered)

        with self._lock:
            for try_ in range(_RETRIES):
                try:
                    return self._retrying(attempt)
                except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure) as exc:
                    self._forget()
                    if try_ == _RETRIES - 1:
                        raise FrontierError(f"crawl database {self.name}: {exc}") from None
                except psycopg.Error as exc:
                    self._forget()
                    raise FrontierError(f"crawl database {self.name}: {exc}") from None
            raise AssertionError("unreachable")

    def _run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work(connection)` under the thread lock, on a new connection if it was lost (see
        _retrying), psycopg's errors as FrontierError. Inside a transaction (a statement of
        _write's work), on its connection and with its errors as they are: a lost connection is
        the transaction's to mend."""
        with self._lock:
            if self._depth and self._conn is not None:
                return work(self._conn)
            try:
                return self._retrying(work)
            except psycopg.Error as exc:
                raise FrontierError(f"crawl database {self.name}: {exc}") from None

    def _read(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query (its own snapshot), with psycopg's errors as FrontierError; asked
        again on a new connection when the connection was lost."""
        return self._run(lambda conn: conn.execute(sql, params).fetchall())

    _rows = _read  # what SqlReads reads with

    # -- the database of record --------------------------------------------------------------------

    def _tallies(self) -> dict[int, int]:
        """The tallies (URLs per state, and queued), folded into one row each when they pile up."""
        rows = self._read("SELECT what, SUM(n), COUNT(*) FROM tallies GROUP BY what")
        if not self.read_only and sum(int(r[2]) for r in rows) > _COMPACT_AT:
            # A concurrent fold waits for this one's rows and then finds them gone: nothing is
            # counted twice.
            self._write(lambda conn: conn.execute(
                "WITH gone AS (DELETE FROM tallies RETURNING what, n)"
                " INSERT INTO tallies(what, n) SELECT what, SUM(n) FROM gone GROUP BY what"))
        return {int(r[0]): int(r[1]) for r in rows}

    def counts(self) -> dict[UrlState, int]:
        """Number of URLs in each state (every state present, zero included)."""
        found = self._tallies()
        return {s: found.get(int(s), 0) for s in UrlState}

    def _update_batches(self, items: Iterable[T], statement: str,
                        columns: Callable[[list[T]], tuple[Any, ...]]) -> int:
        """Run `statement` over `items` in batches (URLs in order: rows locked in URL order, as
        everywhere), each with the arrays `columns` makes of it; the rows it changed."""
        done = 0
        it = iter(items)
        while batch := list(islice(it, _BATCH)):
            batch.sort()
            args = columns(batch)

            def work(conn: psycopg.Connection[Any], args: tuple[Any, ...] = args) -> int:
                return int(conn.execute(statement, args).rowcount)

            done += self._write(work)
        return done

    def set_scores(self, scores: Iterable[tuple[str, float, float]]) -> int:
        """Set (url, score, priority) of known URLs (a batch job's ranking); returns how many were known."""
        known = self._update_batches(
            scores,
            "UPDATE urls u SET score = v.score, priority = v.priority"
            " FROM unnest(%s::text[], %s::float8[], %s::float8[]) AS v(url, score, priority)"
            " WHERE u.url = v.url",
            lambda b: ([x[0] for x in b], [float(x[1]) for x in b], [float(x[2]) for x in b]))
        # Every host's best priority anew (hosts in id order, as every lock is taken).
        self._write(lambda conn: conn.execute(
            SQL.best_all + " WHERE id IN (SELECT id FROM hosts ORDER BY id FOR UPDATE)"))
        return known

    def add_scores(self, items: Iterable[tuple[str, float]]) -> int:
        """Add (url, amount) to the score of known URLs; returns how many rows were updated."""
        # Summed per URL first: an UPDATE ... FROM applies one joined row a target row, not all.
        return self._update_batches(
            items,
            "UPDATE urls u SET score = u.score + v.amount FROM (SELECT url, SUM(amount) AS amount"
            " FROM unnest(%s::text[], %s::float8[]) AS x(url, amount) GROUP BY url) v"
            " WHERE u.url = v.url",
            lambda b: ([x[0] for x in b], [float(x[1]) for x in b]))

    def set_simhashes(self, items: Iterable[tuple[str, int]]) -> int:
        """Set (url, 64-bit SimHash) of known URLs; returns how many were known."""
        return self._update_batches(
            items,
            "UPDATE urls u SET simhash = v.h FROM unnest(%s::text[], %s::int8[]) AS v(url, h)"
            " WHERE u.url = v.url",
            lambda b: ([x[0] for x in b], [signed64(x[1]) for x in b]))

    def set_inlinks(self, items: Iterable[tuple[str, int]]) -> int:
        """Replace every URL's inlink count (those not given get 0); returns how many were known."""
        self._write(lambda conn: conn.execute(SQL.reset_inlinks))
        return self._update_batches(
            items,
            "UPDATE urls u SET inlinks = v.n FROM unnest(%s::text[], %s::int[]) AS v(url, n)"
            " WHERE u.url = v.url",
            lambda b: ([x[0] for x in b], [int(x[1]) for x in b]))

    def requeue(self, urls: Iterable[str]) -> int:
        """Queue GONE URLs again as UNFETCHED, their failure forgotten (its cause was mended);
        returns how many were GONE."""
        done = 0
        it = iter(urls)
        while batch := sorted(islice(it, _BATCH)):
            def work(conn: psycopg.Connection[Any], batch: list[str] = batch) -> int:
                # The self-join reads each row as it was: whether it was queued, for the tallies.
                rows = conn.execute(
                    "UPDATE urls u SET state = %s, queued = TRUE, retries = 0, next_fetch_time = 0,"
                    " lease_until = 0, http_status = 0, error_class = '', error_message = ''"
                    " FROM urls o WHERE u.url = ANY(%s::text[]) AND u.state = %s AND o.id = u.id"
                    " RETURNING u.host_id, o.queued, u.priority",
                    (int(UrlState.UNFETCHED), batch, int(UrlState.GONE))).fetchall()
                if rows:
                    queued = sum(1 for _, was, _ in rows if not was)
                    with conn.cursor() as cur:
                        n = len(rows)
                        changes = [(int(UrlState.GONE), -n), (int(UrlState.UNFETCHED), n), (QUEUED, queued)]
                        cur.executemany("INSERT INTO tallies(what, n) VALUES (%s, %s)", changes)
                    best: dict[int, float] = {}
                    for host, _, priority in rows:
                        best[int(host)] = min(best.get(int(host), priority), priority)
                    hosts = sorted(best)
                    conn.execute(
                        "UPDATE hosts SET wake_at = 0, best = LEAST(hosts.best, v.best)"
                        " FROM unnest(%s::int[], %s::float8[]) AS v(id, best) WHERE hosts.id = v.id",
                        (hosts, [float(best[h]) for h in hosts]))
                return len(rows)

            done += self._write(work)
        return done

    def set_duplicates(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Replace the crawl's duplicates: each (url, kept url) becomes DUPLICATE of the kept one; URLs
        marked before and not given now are FETCHED again. Returns how many were marked."""
        def unmark(conn: psycopg.Connection[Any]) -> None:
            n = conn.execute(SQL.unmark_duplicates,
                             (int(UrlState.FETCHED), int(UrlState.DUPLICATE))).rowcount
            if n:
                conn.execute("INSERT INTO tallies(what, n) VALUES (%s, %s), (%s, %s)",
                             (int(UrlState.DUPLICATE), -n, int(UrlState.FETCHED), n))

        self._write(unmark)
        marked = 0
        it = iter(pairs)
        while batch := sorted(islice(it, _BATCH)):
            def mark(conn: psycopg.Connection[Any], batch: list[tuple[str, str]] = batch) -> int:
                # The self-join reads each row as it was: its old state, for the tallies.
                old = Counter(int(r[0]) for r in conn.execute(
                    "UPDATE urls u SET state = %s, duplicate_of = v.kept"
                    " FROM unnest(%s::text[], %s::text[]) AS v(url, kept), urls o"
                    " WHERE u.url = v.url AND v.url <> v.kept AND o.id = u.id RETURNING o.state",
                    (int(UrlState.DUPLICATE), [p[0] for p in batch], [p[1] for p in batch])).fetchall())
                rows = list(old.items())
                changes = [(int(state), -int(n)) for state, n in rows]
                total = sum(int(n) for _, n in rows)
                if total:
                    with conn.cursor() as cur:
                        cur.executemany("INSERT INTO tallies(what, n) VALUES (%s, %s)",
                                        [*changes, (int(UrlState.DUPLICATE), total)])
                return total

            marked += self._write(mark)
        return marked

    def set_metadata(self, items: Iterable[tuple[str, Mapping[str, str]]]) -> int:
        """Merge keys into the metadata of known URLs; returns how many were known."""
        return self._update_batches(
            ((url, json.dumps(dict(meta), ensure_ascii=False)) for url, meta in items),
            "UPDATE urls u SET metadata = (COALESCE(NULLIF(u.metadata, ''), '{}')::jsonb || v.m::jsonb)::text"
            " FROM unnest(%s::text[], %s::text[]) AS v(url, m) WHERE u.url = v.url",
            lambda b: ([x[0] for x in b], [clean(x[1]) for x in b]))

    def generate(self, limit: int, max_per_host: int, order: str, now: float,
                 until: float) -> list[UrlRecord]:
        """Select up to `limit` due URLs, best first by GENERATE_ORDERS[order], at most `max_per_host`
        a host (0: no cap), and hold them until `until` (see CrawlDb.generate)."""
        key = GENERATE_ORDERS[order]

        def work(conn: psycopg.Connection[Any]) -> list[UrlRecord]:
            # Held rows carry lease_until, as SqliteBulk.generate's.
            ids = [r[0] for r in conn.execute(SQL.generate.format(key=key),
                (now, now, max_per_host or 1 << 62, max(limit, 0))).fetchall()]
            if not ids:
                return []
            conn.execute("UPDATE urls SET lease_until = %s WHERE id = ANY(%s)", (until, sorted(ids)))
            rows = conn.execute(
                f"SELECT {RECORD_COLS} FROM unnest(%s::bigint[]) WITH ORDINALITY AS c(id, n)"
                " JOIN urls u ON u.id = c.id JOIN hosts h ON h.id = u.host_id ORDER BY c.n",
                (ids,)).fetchall()
            return [row_to_record(r) for r in rows]

        return self._write(work)

    def host_stats(self) -> list[HostStats]:
        """Per host: (host, queued, fetched, errors); fetched counts FETCHED and NOT_MODIFIED."""
        rows = self._read(
            "SELECT h.name, COUNT(*) FILTER (WHERE u.queued), COUNT(*) FILTER (WHERE u.state IN (%s, %s)),"
            " COUNT(*) FILTER (WHERE u.error_class <> '')"
            " FROM hosts h LEFT JOIN urls u ON u.host_id = h.id GROUP BY h.id, h.name ORDER BY h.name",
            (int(UrlState.FETCHED), int(UrlState.NOT_MODIFIED)),
        )
        return [(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]

    def set_meta(self, key: str, value: str) -> None:
        """Store a run-metadata value."""
        self._write(lambda conn: conn.execute(
            SQL.set_meta, (key, value)))

    def close(self) -> None:
        """Close the connection; idempotent. Leases still out expire as a dead process's would."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._conn is not None:
                self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

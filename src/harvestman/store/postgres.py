"""A Frontier on PostgreSQL (psycopg 3): one crawl shared by processes on many machines.

The politeness clocks of each host (ready_at, in_flight, delay, pause, failure streak) are columns of
its row, so `per_host` and `delay` hold across every process that leases from the database. A lease
locks the host rows it takes URLs from (`FOR UPDATE SKIP LOCKED`): two processes never lease from one
host at once, so in_flight never passes per_host, and neither ever waits for the other.

Lock order, which keeps transactions free of deadlocks: hosts are created in a statement of their
own before any transaction; a transaction then locks URL rows (inserts and outcomes, sorted by URL)
before host rows (sorted by id). Whatever is taken out of that order is taken with SKIP LOCKED and so
never waits. A deadlock or serialization failure that slips through is retried (_RETRIES).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from harvestman.model.errors import ConfigError, FrontierError
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

try:
    import psycopg
    from psycopg import errors as pg_errors
except ImportError:
    raise ConfigError(
        "a postgresql:// crawl database needs psycopg: pip install 'harvestman[postgres]'"
    ) from None

from harvestman.store.postgres_sql import (
    FAR_FUTURE,
    FREE_HOST,
    INSERT_URLS,
    PARKED,
    RECORD_COLS,
    SCHEMA,
    SCHEMA_VERSION,
    WRITE_OUTCOME,
)

_RETRIES = 5
_LOCKSCHEMA = 0x68766D31  # advisory lock id taken while creating the schema ("hvm1")
_COMPACT_AT = 2000  # state_deltas rows beyond which counts() folds them into one row per state
T = TypeVar("T")


def redact(url: str) -> str:
    """`url` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[2]}"))


def _clean(text: str) -> str:
    """PostgreSQL's text refuses NUL characters, which a page title or an error may hold: drop them."""
    return text.replace("\x00", "") if "\x00" in text else text


def _row_to_record(row: Sequence[Any]) -> UrlRecord:
    return UrlRecord(row[0], row[1], UrlState(row[2]), *row[3:])


class PostgresFrontier:
    """A Frontier in a PostgreSQL database, shared by any number of processes on any machines.

    The schema is created by the first process to open an empty database. Every process reads the
    same state: there are no shards, a lease takes whichever ready hosts no one else holds.
    """

    def __init__(
        self,
        url: str,
        *,
        per_host: int = 2,
        delay: float = 0.0,
        lease_seconds: float = 300.0,
        host_of: Callable[[str], str],
        read_only: bool = False,
    ) -> None:
        self.url = url
        self.name = redact(url)
        self.per_host = per_host
        self.delay = delay
        self.lease_seconds = lease_seconds
        self.read_only = read_only
        self._host_of = host_of
        self._lock = threading.RLock()  # one connection, shared by the engine's threads
        self._hosts: dict[str, int] = {}  # host name -> id; bounded by the number of hosts
        self._closed = False
        # Commits need not wait for the disk: a killed process loses nothing it committed, and only
        # a crash of the server's machine may drop the last fraction of a second (the same promise
        # as SQLite's WAL with synchronous=NORMAL); a lost completion is leased and fetched again.
        options = "-c synchronous_commit=off" + (" -c default_transaction_read_only=on" if read_only else "")
        try:
            self._conn = psycopg.connect(url, autocommit=True, options=options)
        except psycopg.Error as exc:
            raise FrontierError(f"cannot open crawl database {self.name}: {exc}".strip()) from None
        try:
            self._open()
        except psycopg.Error as exc:
            self._conn.close()
            raise FrontierError(f"{self.name} is not a usable crawl database: {exc}") from None
        except FrontierError:
            self._conn.close()
            raise

    # -- opening ---------------------------------------------------------------------------------

    def _open(self) -> None:
        conn = self._conn
        if not self.read_only:
            with conn.transaction():
                # Two processes opening a new database at once: one creates, the other then finds it.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCKSCHEMA,))
                tables = self._tables()
                if not tables:
                    conn.execute(SCHEMA)
                    conn.execute("INSERT INTO meta VALUES ('schema_version', %s)", (str(SCHEMA_VERSION),))
                    return
        tables = self._tables()
        if "meta" not in tables or "urls" not in tables:
            if not tables:
                raise FrontierError(f"no crawl in database {self.name}")
            raise FrontierError(f"{self.name} is a PostgreSQL database but not a harvestman crawl database")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else -1
        if version > SCHEMA_VERSION:
            raise FrontierError(
                f"{self.name} has crawl database schema {version}, newer than this harvestman "
                f"understands ({SCHEMA_VERSION}): upgrade harvestman"
            )
        if version < 1:
            raise FrontierError(f"{self.name} has an unknown crawl database schema ({row and row[0]!r})")

    def _tables(self) -> set[str]:
        rows = self._conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        return {str(r[0]) for r in rows}

    @classmethod
    def open_read_only(cls, url: str) -> PostgresFrontier:
        """Open an existing crawl for reports, beside processes that may be crawling it."""
        return cls(url, host_of=lambda u: u, read_only=True)

    # -- transactions ----------------------------------------------------------------------------

    def _conn_open(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise FrontierError(f"crawl database {self.name} is closed")
        return self._conn

    def _write(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run `work` in one transaction under the thread lock, again after a deadlock (rolled back)."""
        with self._lock:
            conn = self._conn_open()
            for attempt in range(_RETRIES):
                try:
                    with conn.transaction():
                        return work(conn)
                except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure) as exc:
                    self._hosts.clear()  # host ids made in the rolled-back transaction are gone
                    if attempt == _RETRIES - 1:
                        raise FrontierError(f"crawl database {self.name}: {exc}") from None
                except psycopg.Error as exc:
                    self._hosts.clear()
                    raise FrontierError(f"crawl database {self.name}: {exc}") from None
            raise AssertionError("unreachable")

    def _read(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query (its own snapshot), with psycopg's errors as FrontierError."""
        with self._lock:
            conn = self._conn_open()
            try:
                return conn.execute(sql, params).fetchall()
            except psycopg.Error as exc:
                raise FrontierError(f"crawl database {self.name}: {exc}") from None

    def _host_ids(self, names: Iterable[str]) -> dict[str, int]:
        """Ids of `names`, creating the hosts that are new in a statement of their own (see the top)."""
        cache = self._hosts
        missing = sorted({n for n in names if n not in cache})
        if missing:
            with self._lock:
                conn = self._conn_open()
                try:
                    # Outside a transaction but for a URL reported without being added (rare):
                    # then inside it, and a rollback empties the cache (see _write).
                    conn.execute(
                        "INSERT INTO hosts(name) SELECT unnest(%s::text[]) ORDER BY 1 ON CONFLICT DO NOTHING",
                        (missing,),
                    )
                    rows = conn.execute("SELECT name, id FROM hosts WHERE name = ANY(%s)", (missing,))
                    cache.update((str(name), int(id_)) for name, id_ in rows)
                except psycopg.Error as exc:
                    raise FrontierError(f"crawl database {self.name}: {exc}") from None
        return cache

    # -- adding and leasing ----------------------------------------------------------------------

    def add(self, urls: Sequence[NewUrl]) -> int:
        """Insert URLs not yet known as UNFETCHED; return how many were new (known ones stay as they are)."""
        if not urls:
            return 0
        ids = self._host_ids(u.host for u in urls)
        return self._write(lambda conn: self._insert(conn, urls, ids))

    def _insert(self, conn: psycopg.Connection[Any], urls: Sequence[NewUrl], ids: dict[str, int]) -> int:
        row = conn.execute(INSERT_URLS, {
            "url": [u.url for u in urls],
            "host": [ids[u.host] for u in urls],
            "depth": [u.depth for u in urls],
            "score": [u.score for u in urls],
            "parent": [u.parent for u in urls],
        }).fetchone()
        return int(row[0]) if row else 0

    def lease(self, limit: int, now: float) -> list[LeasedUrl]:
        """Hand out up to `limit` due URLs from ready hosts, honouring per-host concurrency and delay."""
        if limit <= 0:
            return []
        return self._write(lambda conn: self._lease(conn, limit, now))

    def _lease(self, conn: psycopg.Connection[Any], limit: int, now: float) -> list[LeasedUrl]:
        """`lease()` inside the caller's transaction."""
        self._reclaim_expired(conn, now)
        out: list[LeasedUrl] = []
        lease_until = now + self.lease_seconds
        seen: list[int] = []
        while len(out) < limit:
            # Host rows another process holds are skipped, not waited for: it is leasing from them
            # (or reporting back), and their clocks will say what is next when it commits.
            hosts = conn.execute(
                "SELECT id, name, in_flight, COALESCE(delay, %s) FROM hosts"
                f" WHERE wake_at < {PARKED} AND ready_at <= %s AND paused_until <= %s AND wake_at <= %s"
                " AND in_flight < %s AND id <> ALL(%s) ORDER BY ready_at, id LIMIT %s FOR UPDATE SKIP LOCKED",
                (self.delay, now, now, now, self.per_host, seen, max(limit - len(out), 16)),
            ).fetchall()
            if not hosts:
                break
            for host_id, name, in_flight, delay in hosts:
                seen.append(host_id)
                room = min(1 if delay > 0 else self.per_host - in_flight, limit - len(out))
                if room <= 0:
                    break
                rows = conn.execute(
                    "UPDATE urls SET lease_until = %s WHERE id IN ("
                    " SELECT id FROM urls WHERE host_id = %s AND state = 0 AND next_fetch_time <= %s"
                    " AND lease_until = 0 ORDER BY depth, score DESC, id LIMIT %s FOR UPDATE SKIP LOCKED)"
                    " RETURNING depth, score, id, url, retries, etag, last_modified",
                    (lease_until, host_id, now, room),
                ).fetchall()
                if rows:
                    rows.sort(key=lambda r: (r[0], -r[1], r[2]))  # RETURNING keeps no order
                    conn.execute(
                        "UPDATE hosts SET in_flight = in_flight + %s, ready_at = GREATEST(ready_at, %s)"
                        " WHERE id = %s",
                        (len(rows), now + delay, host_id),
                    )
                    out.extend(LeasedUrl(r[3], name, r[0], r[4], lease_until, r[5], r[6]) for r in rows)
                if len(rows) < room:
                    self._park(conn, host_id, now)
        return out

    def _park(self, conn: psycopg.Connection[Any], host_id: int, now: float) -> None:
        """Skip a host with nothing leasable until its next URL is due or one of its leases expires."""
        conn.execute(
            "UPDATE hosts SET wake_at = w.at FROM (SELECT LEAST("
            " (SELECT MIN(next_fetch_time) FROM urls"
            "  WHERE host_id = %(id)s AND state = 0 AND lease_until = 0),"
            " (SELECT MIN(lease_until) FROM urls WHERE host_id = %(id)s AND lease_until > 0),"
            " %(far)s) AS at) w WHERE hosts.id = %(id)s AND w.at > %(now)s",
            {"id": host_id, "far": FAR_FUTURE, "now": now},
        )

    def _reclaim_expired(self, conn: psycopg.Connection[Any], now: float) -> None:
        """Take back leases whose process never reported (it died): the URLs become leasable again.

        Only from hosts no one else holds (SKIP LOCKED): whoever holds one may be reporting back for
        it, and a later lease takes the rest.
        """
        hosts = [r[0] for r in conn.execute(
            "SELECT DISTINCT host_id FROM urls WHERE lease_until > 0 AND lease_until <= %s", (now,))]
        if not hosts:
            return
        conn.execute(
            "WITH mine AS (SELECT id FROM hosts WHERE id = ANY(%(hosts)s) FOR UPDATE SKIP LOCKED),"
            " freed AS (UPDATE urls SET lease_until = 0 WHERE id IN (SELECT id FROM urls"
            "  WHERE host_id IN (SELECT id FROM mine) AND lease_until > 0 AND lease_until <= %(now)s"
            "  FOR UPDATE SKIP LOCKED) RETURNING host_id)"
            " UPDATE hosts SET in_flight = GREATEST(in_flight - f.n, 0), wake_at = 0"
            " FROM (SELECT host_id, COUNT(*) AS n FROM freed GROUP BY host_id) f WHERE hosts.id = f.host_id",
            {"hosts": hosts, "now": now},
        )

    # -- reporting back ----------------------------------------------------------------------------

    def complete(self, outcomes: Sequence[FetchOutcome], now: float, new_urls: Sequence[NewUrl] = (), *,
                 lease: int = 0) -> list[LeasedUrl]:
        """Record fetch outcomes, free their leases, add discovered URLs and lease up to `lease` URLs
        (as `lease()` would, returned), all in one transaction."""
        ids = self._host_ids([u.host for u in new_urls]
                             + [self._host_of(o.final_url) for o in outcomes if _marks_final(o)])

        def work(conn: psycopg.Connection[Any]) -> list[LeasedUrl]:
            if new_urls:
                self._insert(conn, new_urls, ids)
            if outcomes:
                self._write_outcomes(conn, outcomes, now)
            leased = self._lease(conn, lease, now) if lease > 0 else []
            crash_point("db-mid-commit")  # crash tests: outcomes and new URLs written, COMMIT not yet run
            return leased

        return self._write(work)

    def _write_outcomes(self, conn: psycopg.Connection[Any], outcomes: Sequence[FetchOutcome],
                        now: float) -> None:
        """Write each outcome (and the page its redirects ended on) as SqliteFrontier does, in a few
        statements: rows locked in URL order, then the hosts' clocks in id order."""
        wanted = {o.url for o in outcomes} | {o.final_url for o in outcomes if _marks_final(o)}
        rows: dict[str, list[Any]] = {  # url -> [id, host_id, state, lease_until, depth], as written
            r[0]: list(r[1:]) for r in conn.execute(
                "SELECT url, id, host_id, state, lease_until, depth FROM urls WHERE url = ANY(%s)"
                " ORDER BY url FOR UPDATE", (sorted(wanted),))
        }
        deltas: Counter[int] = Counter()
        updates: list[dict[str, Any]] = []
        hosts: dict[int, list[Any]] = {}  # host id -> [leases freed, wake time or None]

        def write(o: FetchOutcome, url: str, state: UrlState, depth: int, parent: str) -> None:
            row = rows.get(url)
            if row is None:
                # Reported without being added (a final URL, or a URL leased before): upsert.
                host_id = self._host_ids([self._host_of(url)])[self._host_of(url)]
                got = conn.execute(
                    "INSERT INTO urls(id, url, host_id, depth, parent, state)"
                    " VALUES (nextval('urls_id_seq'), %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (url, host_id, depth, parent, int(state)),
                ).rowcount
                if got:
                    deltas[int(state)] += 1
                row = list(conn.execute(
                    "SELECT id, host_id, state, lease_until, depth FROM urls WHERE url = %s FOR UPDATE",
                    (url,)).fetchone() or ())
                rows[url] = row
            url_id, host_id, old_state, leased, _ = row
            if old_state != int(state):
                deltas[old_state] -= 1
                deltas[int(state)] += 1
            row[2], row[3] = int(state), 0.0
            updates.append({
                "id": url_id, "state": int(state), "fetch_time": o.fetch_time,
                "next_fetch_time": o.next_fetch_time, "http_status": o.http_status,
                "error_class": _clean(o.error_class), "error_message": _clean(o.error_message),
                # A 304 usually repeats no validators: keep what the last full fetch recorded.
                "keep": state == UrlState.NOT_MODIFIED,
                "signature": _clean(o.signature), "etag": _clean(o.etag),
                "last_modified": _clean(o.last_modified), "content_type": _clean(o.content_type),
                "body_size": o.body_size, "wire_bytes": o.wire_bytes,
                "final_url": o.final_url if url == o.url else "", "title": _clean(o.title),
                "retried": 1 if o.retried and url == o.url else 0,
            })
            host = hosts.setdefault(host_id, [0, None])
            host[0] += 1 if leased > 0 else 0
            if state == UrlState.UNFETCHED or leased > 0:
                # A retry becomes leasable at its next fetch time; a freed slot at once.
                wake = o.next_fetch_time if leased == 0 else 0.0
                host[1] = wake if host[1] is None else min(host[1], wake)

        for o in outcomes:
            write(o, o.url, o.state, 0, "")
            if _marks_final(o):
                state = o.state
                if state in (UrlState.REDIRECT_TEMP, UrlState.REDIRECT_PERM):
                    state = UrlState.FETCHED
                write(o, o.final_url, state, rows[o.url][4], o.url)
        with conn.cursor() as cur:
            cur.executemany(WRITE_OUTCOME, updates)
            cur.executemany(FREE_HOST, [
                {"id": host_id, "freed": freed, "wake": wake, "now": now, "delay": self.delay}
                for host_id, (freed, wake) in sorted(hosts.items())
            ])
        self._count(conn, deltas)

    def _count(self, conn: psycopg.Connection[Any], deltas: Counter[int]) -> None:
        changes = [(s, n) for s, n in deltas.items() if n]
        if changes:
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO state_deltas(state, n) VALUES (%s, %s)", changes)

    # -- host controls -------------------------------------------------------------------------------

    def set_host_delay(self, host: str, delay: float) -> None:
        """Set the seconds between two requests to `host` (robots.txt Crawl-delay)."""
        host_id = self._host_ids([host])[host]
        self._write(lambda conn: conn.execute("UPDATE hosts SET delay = %s WHERE id = %s", (delay, host_id)))

    def pause_host(self, host: str, until: float, reason: str) -> None:
        """Lease nothing from `host` before `until`; a pause is only ever extended, never shortened."""
        host_id = self._host_ids([host])[host]
        self._write(lambda conn: conn.execute(
            "UPDATE hosts SET paused_until = GREATEST(paused_until, %s), pause_reason = %s WHERE id = %s",
            (until, _clean(reason), host_id)))

    def host_failure(self, host: str, now: float) -> int:
        """Count one more URL in the failure streak of `host` (the engine counts each URL once) and
        return the count."""
        host_id = self._host_ids([host])[host]

        def work(conn: psycopg.Connection[Any]) -> int:
            row = conn.execute(
                "UPDATE hosts SET failures = failures + 1, last_failure = %s WHERE id = %s"
                " RETURNING failures",
                (now, host_id)).fetchone()
            return int(row[0]) if row else 0

        return self._write(work)

    def host_success(self, host: str) -> None:
        """Reset the consecutive-failure count of `host`."""
        self._write(lambda conn: conn.execute(
            "UPDATE hosts SET failures = 0 WHERE name = %s AND failures <> 0", (host,)))

    def release_leases(self) -> int:
        """Hand back every lease (a crawl resumed by its only process); returns how many there were.

        Every process's leases: call it only when no other process works on this crawl.
        """
        def work(conn: psycopg.Connection[Any]) -> int:
            n = conn.execute("UPDATE urls SET lease_until = 0 WHERE lease_until > 0").rowcount
            conn.execute("UPDATE hosts SET in_flight = 0, wake_at = 0 WHERE in_flight <> 0 OR wake_at <> 0")
            return n

        return self._write(work)

    # -- status and export ------------------------------------------------------------------------------

    def counts(self) -> dict[UrlState, int]:
        """Number of URLs in each state (every state present, zero included)."""
        rows = self._read("SELECT state, SUM(n), COUNT(*) FROM state_deltas GROUP BY state")
        if not self.read_only and sum(int(r[2]) for r in rows) > _COMPACT_AT:
            # Fold the appended changes into one row per state. A concurrent fold waits for this one's
            # rows and then finds them gone, so nothing is counted twice.
            self._write(lambda conn: conn.execute(
                "WITH gone AS (DELETE FROM state_deltas RETURNING state, n)"
                " INSERT INTO state_deltas(state, n) SELECT state, SUM(n) FROM gone GROUP BY state"))
        found = {int(r[0]): int(r[1]) for r in rows}
        return {s: found.get(int(s), 0) for s in UrlState}

    def due_count(self, now: float) -> int:
        """Number of unfetched URLs that are due and not leased."""
        return int(self._read(
            "SELECT COUNT(*) FROM urls WHERE state = 0 AND next_fetch_time <= %s AND lease_until = 0", (now,)
        )[0][0])

    def in_flight(self) -> int:
        """Number of URLs currently leased (by any process)."""
        return int(self._read("SELECT COUNT(*) FROM urls WHERE lease_until > 0")[0][0])

    def next_ready_time(self, *, everywhere: bool = False) -> float | None:
        """Earliest time a lease may succeed (never later than the truth), or None when nothing is pending.

        Every process leases from every host, so `everywhere` changes nothing here.
        """
        # A full host waits for a lease to expire (or, sooner, a completion the engine sees itself).
        row = self._read(
            "SELECT MIN(GREATEST(h.ready_at, h.paused_until, h.wake_at, CASE WHEN h.in_flight >= %s"
            " THEN COALESCE((SELECT MIN(lease_until) FROM urls WHERE host_id = h.id AND lease_until > 0), 0)"
            " ELSE 0 END)) FROM hosts h WHERE EXISTS (SELECT 1 FROM urls WHERE host_id = h.id AND state = 0)",
            (self.per_host,),
        )[0]
        return None if row[0] is None else float(row[0])

    def records(self) -> Iterator[UrlRecord]:
        """Stream every URL row in insertion order (for export)."""
        last = 0
        while True:
            # Keyset pages: no transaction stays open between yields.
            rows = self._read(
                f"SELECT u.id, {RECORD_COLS} FROM urls u JOIN hosts h ON h.id = u.host_id"
                " WHERE u.id > %s ORDER BY u.id LIMIT 1000", (last,))
            if not rows:
                return
            last = rows[-1][0]
            for row in rows:
                yield _row_to_record(row[1:])

    def host_stats(self) -> list[HostStats]:
        """Per host: (host, pending, fetched, errors); fetched counts FETCHED and NOT_MODIFIED."""
        rows = self._read(
            "SELECT h.name, COUNT(*) FILTER (WHERE u.state = 0), COUNT(*) FILTER (WHERE u.state IN (%s, %s)),"
            " COUNT(*) FILTER (WHERE u.error_class <> '')"
            " FROM hosts h LEFT JOIN urls u ON u.host_id = h.id GROUP BY h.id, h.name ORDER BY h.name",
            (int(UrlState.FETCHED), int(UrlState.NOT_MODIFIED)),
        )
        return [(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]

    def host_totals(self) -> list[HostTotals]:
        """Per host: URLs by state, URLs with an error, bytes on the wire (one scan, in SQL), by name."""
        rows = self._read(
            "SELECT h.name, u.state, COUNT(*), COUNT(*) FILTER (WHERE u.error_class <> ''), SUM(u.wire_bytes)"
            " FROM urls u JOIN hosts h ON h.id = u.host_id GROUP BY h.name, u.state ORDER BY h.name"
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
        row = self._read(
            "SELECT COUNT(*) FILTER (WHERE http_status > 0), COALESCE(SUM(wire_bytes), 0),"
            " COALESCE(MIN(fetch_time) FILTER (WHERE http_status > 0), 0),"
            " COALESCE(MAX(fetch_time) FILTER (WHERE http_status > 0), 0) FROM urls"
        )[0]
        return CrawlTotals(int(row[0]), int(row[1]), float(row[2]), float(row[3]))

    def error_counts(self) -> dict[str, int]:
        """Number of URLs per recorded error class."""
        rows = self._read(
            "SELECT error_class, COUNT(*) FROM urls WHERE error_class <> '' GROUP BY error_class")
        return {str(k): int(v) for k, v in rows}

    def get(self, url: str) -> UrlRecord | None:
        """The row of `url`, or None when it is not known."""
        rows = self._read(
            f"SELECT {RECORD_COLS} FROM urls u JOIN hosts h ON h.id = u.host_id WHERE u.url = %s", (url,))
        return _row_to_record(rows[0]) if rows else None

    def get_meta(self, key: str) -> str | None:
        """A stored run-metadata value (seeds, config, start time), or None."""
        rows = self._read("SELECT value FROM meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Store a run-metadata value."""
        self._write(lambda conn: conn.execute(
            "INSERT INTO meta(key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value)))

    def close(self) -> None:
        """Close the connection; idempotent. Leases still out expire as a dead process's would."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._conn.close()

    def __enter__(self) -> PostgresFrontier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _marks_final(o: FetchOutcome) -> bool:
    """Whether the page a redirect ended on is marked fetched too (so it is not fetched again when
    found later): not for a retry (it follows the redirect again), nor for a redirect not followed
    (a 3xx is the last response: its target was not fetched here)."""
    return (bool(o.final_url) and o.final_url != o.url and o.state != UrlState.UNFETCHED
            and not 300 <= o.http_status < 400)

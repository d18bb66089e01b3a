"""A Store (Frontier and CrawlDb) on PostgreSQL (psycopg 3): one crawl shared by many machines.

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

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from harvestman.model.config import DB_OUTAGE_LIMIT
from harvestman.model.faults import crash_point
from harvestman.model.records import FetchOutcome, LeasedUrl, NewUrl, PageLinks, UrlState, landing_state
from harvestman.store.linkcodec import encode_links
from harvestman.store.postgres_db import QUEUED, PostgresDb, clean
from harvestman.store.postgres_sql import (
    BEST_OF_HOST,
    FAR_FUTURE,
    FREE_HOST,
    INSERT_URLS,
    LEASE,
    LEASE_ORDERED,
    PARKED,
)
from harvestman.store.sql_shared import POSTGRES_SQL as SQL
from harvestman.store.sql_shared import outcome_params

if TYPE_CHECKING:
    import psycopg


class PostgresStore(PostgresDb):
    """A Store in a PostgreSQL database, shared by any number of processes on any machines.

    The schema is created by the first process to open an empty database. Every process sees the
    same state: there are no shards, a lease takes whichever ready hosts no one else holds.
    With `ordered`, it takes them best first by their best URL's priority, as SqliteStore's.
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
        ordered: bool = False,
        outage_limit: float = DB_OUTAGE_LIMIT,
    ) -> None:
        self.per_host = per_host
        self.ordered = ordered
        self._lease_sql = LEASE_ORDERED if ordered else LEASE
        self.delay = delay
        self.lease_seconds = lease_seconds
        self._host_of = host_of
        self._hosts: dict[str, int] = {}  # host name -> id; bounded by the number of hosts
        super().__init__(url, read_only=read_only, outage_limit=outage_limit)

    def _forget(self) -> None:
        # Host ids made in a rolled-back transaction are gone. A new dict, not cleared: a caller
        # retrying its transaction still holds the ids it took before it, which stand.
        self._hosts = {}

    @classmethod
    def open_read_only(cls, url: str) -> PostgresStore:
        """Open an existing crawl for reports, beside processes that may be crawling it."""
        return cls(url, host_of=lambda u: u, read_only=True)

    def _host_ids(self, names: Iterable[str]) -> dict[str, int]:
        """Ids of `names`, creating the hosts that are new in a statement of their own (see the top)."""
        missing = sorted({n for n in names if n not in self._hosts})
        if missing:
            def work(conn: psycopg.Connection[Any]) -> None:
                # Outside a transaction but for a URL reported without being added (rare): then
                # inside it, and a rollback empties the cache (see _write).
                conn.execute(
                    "INSERT INTO hosts(name) SELECT unnest(%s::text[]) ORDER BY 1 ON CONFLICT DO NOTHING",
                    (missing,),
                )
                rows = conn.execute("SELECT name, id FROM hosts WHERE name = ANY(%s)", (missing,))
                self._hosts.update((str(name), int(id_)) for name, id_ in rows)

            self._run(work)
        return self._hosts

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
            "score": [float(u.score) for u in urls],  # psycopg wants a list of one type
            "parent": [u.parent for u in urls],
            "priority": [float(u.priority) for u in urls],
        }).fetchone()
        return int(row[0]) if row else 0

    def lease(self, limit: int, now: float) -> list[LeasedUrl]:
        """Hand out up to `limit` due URLs from ready hosts, honouring per-host concurrency and delay."""
        if limit <= 0:
            return []
        return self._write(lambda conn: self._lease(conn, limit, now))

    def _lease(self, conn: psycopg.Connection[Any], limit: int, now: float) -> list[LeasedUrl]:
        """`lease()` inside the caller's transaction: SqliteStore's walk over the ready hosts, a
        batch of hosts a statement (LEASE) instead of a few statements a host."""
        self._reclaim_expired(conn, now)
        out: list[LeasedUrl] = []
        lease_until = now + self.lease_seconds
        seen: list[int] = []
        while len(out) < limit:
            want = limit - len(out)
            rows = conn.execute(self._lease_sql, {
                "delay": self.delay, "per_host": self.per_host, "now": now, "want": want, "seen": seen,
                "hosts": max(want, 16), "until": lease_until,
            }).fetchall()
            if not rows:
                break
            taken: dict[int, tuple[int, float]] = {}  # host id -> (URLs leased, its delay)
            park: list[int] = []
            # Rows come host by host in lease order, a host without a URL once with url NULL.
            for (host_id, name, room, delay, url, depth, retries, etag, last_modified, sig, interval,
                 score) in rows:
                if host_id not in taken:
                    if want <= 0:
                        break  # the hosts after the last one leased from stay as they are
                    seen.append(host_id)
                    taken[host_id] = (0, delay)
                    room = min(room, want)
                    got = sum(1 for r in rows if r[0] == host_id and r[4] is not None)
                    if got < room:
                        park.append(host_id)
                if url is not None and want > 0:
                    taken[host_id] = (taken[host_id][0] + 1, delay)
                    want -= 1
                    out.append(LeasedUrl(url, name, depth, retries, lease_until, etag, last_modified, sig,
                                          interval, score))
            busy = [(h, n, d) for h, (n, d) in taken.items() if n]
            if busy:
                conn.execute(
                    "UPDATE hosts SET in_flight = in_flight + v.n,"
                    " ready_at = GREATEST(ready_at, %s + v.delay)"
                    + (f", best = {BEST_OF_HOST.format(host='hosts.id')}" if self.ordered else "")
                    + " FROM unnest(%s::int[], %s::int[], %s::float8[]) AS v(id, n, delay)"
                    " WHERE hosts.id = v.id",
                    (now, [b[0] for b in busy], [b[1] for b in busy], [float(b[2]) for b in busy]),
                )
            if park:
                self._park(conn, park, now)
        return out

    def _park(self, conn: psycopg.Connection[Any], host_ids: list[int], now: float) -> None:
        """Skip hosts with nothing leasable until their next URL is due or one of their leases expires."""
        conn.execute(
            "UPDATE hosts SET wake_at = w.at FROM (SELECT p.host, LEAST("
            " (SELECT MIN(next_fetch_time) FROM urls WHERE host_id = p.host AND queued AND lease_until = 0),"
            " (SELECT MIN(lease_until) FROM urls WHERE host_id = p.host AND lease_until > 0),"
            " %s) AS at FROM unnest(%s::int[]) AS p(host)) w WHERE hosts.id = w.host AND w.at > %s",
            (FAR_FUTURE, host_ids, now),
        )
        if self.ordered:  # what is queued but not due yet: a retry, a re-visit
            conn.execute(SQL.best_all + " WHERE id = ANY(%s::int[])", (host_ids,))

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
            "  FOR UPDATE SKIP LOCKED) RETURNING host_id, priority, queued)"
            " UPDATE hosts SET in_flight = GREATEST(in_flight - f.n, 0), wake_at = 0,"
            " best = LEAST(hosts.best, f.best) FROM (SELECT host_id, COUNT(*) AS n,"
            "  MIN(priority) FILTER (WHERE queued) AS best FROM freed GROUP BY host_id) f"
            " WHERE hosts.id = f.host_id",
            {"hosts": hosts, "now": now},
        )

    # -- reporting back ----------------------------------------------------------------------------

    def complete(self, outcomes: Sequence[FetchOutcome], now: float, new_urls: Sequence[NewUrl] = (), *,
                 links: Sequence[PageLinks] = (), lease: int = 0) -> list[LeasedUrl]:
        """Record fetch outcomes, free their leases, add discovered URLs, replace the stored links of
        the pages in `links`, and lease up to `lease` URLs (as `lease()` would, returned), all in
        one transaction."""
        ids = self._host_ids([u.host for u in new_urls]
                             + [self._host_of(o.final_url) for o in outcomes if landing_state(o) is not None])

        def work(conn: psycopg.Connection[Any]) -> list[LeasedUrl]:
            if new_urls:
                self._insert(conn, new_urls, ids)
            if outcomes:
                self._write_outcomes(conn, outcomes, links, now)
            elif links:
                self._write_links(conn, links)
            leased = self._lease(conn, lease, now) if lease > 0 else []
            crash_point("db-mid-commit")  # crash tests: outcomes and new URLs written, COMMIT not yet run
            return leased

        return self._write(work)

    def _write_outcomes(self, conn: psycopg.Connection[Any], outcomes: Sequence[FetchOutcome],
                        links: Sequence[PageLinks], now: float) -> None:
        """Write each outcome (and the page its redirects ended on) as SqliteStore does, in a few
        statements: URL rows locked in URL order, links, then the hosts' clocks in id order."""
        wanted = {o.url for o in outcomes} | {o.final_url for o in outcomes if landing_state(o) is not None}
        # url -> [id, host_id, state, lease_until, depth, queued, priority], kept as written
        rows: dict[str, list[Any]] = {
            r[0]: list(r[1:]) for r in conn.execute(
                "SELECT url, id, host_id, state, lease_until, depth, queued, priority FROM urls"
                " WHERE url = ANY(%s) ORDER BY url FOR UPDATE", (sorted(wanted),))
        }
        tallies: Counter[int] = Counter()
        updates: list[dict[str, Any]] = []
        hosts: dict[int, list[Any]] = {}  # host id -> [leases freed, wake time or None, best or None]

        def write(o: FetchOutcome, url: str, state: UrlState, depth: int, parent: str,
                  revisit: bool = True) -> None:
            row = rows.get(url)
            if row is None:
                # Reported without being added (a final URL, or a URL leased before): upsert.
                host = self._host_of(url)
                got = conn.execute(
                    "INSERT INTO urls(id, url, host_id, depth, parent, state)"
                    " VALUES (nextval('urls_id_seq'), %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (url, self._host_ids([host])[host], depth, parent, int(state)),
                ).rowcount
                if got:
                    tallies[int(state)] += 1
                    tallies[QUEUED] += 1
                row = list(conn.execute(
                    "SELECT id, host_id, state, lease_until, depth, queued, priority FROM urls WHERE url = %s"
                    " FOR UPDATE", (url,)).fetchone() or ())
                rows[url] = row
            url_id, host_id, old_state, leased, _, was_queued, priority = row
            next_fetch_time = o.next_fetch_time if revisit or state == UrlState.UNFETCHED else 0.0
            queued = state == UrlState.UNFETCHED or next_fetch_time > 0
            tallies[old_state] -= 1
            tallies[int(state)] += 1
            tallies[QUEUED] += int(queued) - int(was_queued)
            row[2], row[3], row[5] = int(state), 0.0, queued
            params = outcome_params(o, url, url_id, state, next_fetch_time, queued)
            updates.append({k: clean(v) if type(v) is str else v for k, v in params.items()})
            clocks = hosts.setdefault(host_id, [0, None, None])
            clocks[0] += 1 if leased > 0 else 0
            if queued:  # queued again: the host's best may be this
                clocks[2] = priority if clocks[2] is None else min(clocks[2], priority)
            if queued or leased > 0:
                # A retry or re-visit becomes leasable at its next fetch time; a freed slot at once.
                wake = next_fetch_time if leased == 0 else 0.0
                clocks[1] = wake if clocks[1] is None else min(clocks[1], wake)

        for o in outcomes:
            write(o, o.url, o.state, 0, "")
            state = landing_state(o)  # the page a redirect ended on is fetched too
            if state is not None:
                # The target is fetched again when the URL that led to it is (no re-visit of its own).
                write(o, o.final_url, state, rows[o.url][4], o.url, revisit=False)
        with conn.cursor() as cur:
            cur.executemany(SQL.write_outcome, updates)
            if links:
                self._write_links(conn, links)
            cur.executemany(FREE_HOST, [
                {"id": host_id, "freed": freed, "wake": wake, "now": now, "delay": self.delay, "best": best}
                for host_id, (freed, wake, best) in sorted(hosts.items())
            ])
            changes = [(what, n) for what, n in tallies.items() if n]
            if changes:
                cur.executemany("INSERT INTO tallies(what, n) VALUES (%s, %s)", changes)

    def _write_links(self, conn: psycopg.Connection[Any], links: Sequence[PageLinks]) -> None:
        """Replace the stored links of each page (pages in URL order, as every lock is taken)."""
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO links(url_id, links) SELECT id, %s FROM urls WHERE url = %s"
                " ON CONFLICT (url_id) DO UPDATE SET links = excluded.links",
                [(clean(encode_links(page.links)), page.url) for page in sorted(links, key=lambda p: p.url)],
            )

    # -- host controls -------------------------------------------------------------------------------

    def set_host_delay(self, host: str, delay: float) -> None:
        """Set the seconds between two requests to `host` (robots.txt Crawl-delay)."""
        host_id = self._host_ids([host])[host]
        self._write(lambda conn: conn.execute(SQL.set_host_delay, (delay, host_id)))

    def pause_host(self, host: str, until: float, reason: str) -> None:
        """Lease nothing from `host` before `until`; a pause is only ever extended, never shortened."""
        host_id = self._host_ids([host])[host]
        self._write(lambda conn: conn.execute(
            SQL.pause_host,
            (until, clean(reason), host_id)))

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
            SQL.host_success, (host,)))

    def release_leases(self) -> int:
        """Hand back every lease (a crawl resumed by its only process); returns how many there were.

        Every process's leases: call it only when no other process works on this crawl.
        """
        def work(conn: psycopg.Connection[Any]) -> int:
            conn.execute(SQL.release_best)
            n = conn.execute(SQL.release_urls).rowcount
            conn.execute(SQL.release_hosts)
            return n

        return self._write(work)

    # -- the queue's figures -------------------------------------------------------------------------

    def pending(self) -> int:
        """Number of queued URLs, due or not, leased or not: the work the crawl has left."""
        return self._tallies().get(QUEUED, 0)

    def next_ready_time(self, *, everywhere: bool = False) -> float | None:
        """Earliest time a lease may succeed (never later than the truth), or None when nothing is pending.

        Every process leases from every host, so `everywhere` changes nothing here.
        """
        if not self.pending():
            return None
        # Over the hosts not parked for good (the hosts_ready index), without asking each whether it
        # has a queued URL (59 ms for 10,000 hosts): one that has none but is not parked yet gives an
        # early time, which is allowed, and the lease then made parks it. A full host waits for a
        # lease to expire (or, sooner, a completion the engine sees itself).
        row = self._read(
            "SELECT MIN(GREATEST(h.ready_at, h.paused_until, h.wake_at, CASE WHEN h.in_flight >= %s"
            " THEN COALESCE((SELECT MIN(lease_until) FROM urls WHERE host_id = h.id AND lease_until > 0), 0)"
            f" ELSE 0 END)) FROM hosts h WHERE h.wake_at < {PARKED}",
            (self.per_host,),
        )[0]
        return None if row[0] is None else float(row[0])

"""The CrawlDb reads both stores answer alike: one body each, over the shared statements and a
backend's `_rows` (the rows of one query, its errors as FrontierError)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from harvestman.model.records import CrawlTotals, HostTotals, LinkEdge, UrlRecord, UrlState
from harvestman.store.frontier import row_to_record
from harvestman.store.linkcodec import decode_links
from harvestman.store.sql_shared import Dialect, Statements, render


class SqlReads:
    """Status, export and metadata reads, written once for SqliteStore and PostgresStore."""

    _dialect: Dialect
    _sql: Statements  # the shared statements in _dialect's spellings
    _record_cols: str  # the UrlRecord select list (sql_shared.record_columns)

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def due_count(self, now: float) -> int:
        """Number of queued URLs that are due and not leased."""
        return int(self._rows(self._sql.due_count, (now,))[0][0])

    def in_flight(self) -> int:
        """Number of URLs currently leased."""
        return int(self._rows(self._sql.in_flight)[0][0])

    def records(self) -> Iterator[UrlRecord]:
        """Stream every URL row in insertion order (for export)."""
        return self._records("", ())

    def failures(self) -> Iterator[UrlRecord]:
        """Stream every URL that ended GONE, in insertion order (what a `--resume` may revive)."""
        return self._records(render("u.state = ? AND", self._dialect), (int(UrlState.GONE),))

    def _records(self, where: str, args: tuple[Any, ...]) -> Iterator[UrlRecord]:
        """Stream the rows that `where` (an SQL condition and AND, or '') selects, in insertion order."""
        sql = self._sql.records_page.format(cols=self._record_cols, where=where)
        last = 0
        while True:
            # Keyset pages: no transaction stays open between yields, so writers are never blocked.
            rows = self._rows(sql, (*args, last))
            if not rows:
                return
            last = rows[-1][0]
            for row in rows:
                yield row_to_record(row[1:])

    def links(self) -> Iterator[LinkEdge]:
        """Stream every stored link, page by page in the order the pages were first known."""
        last = 0
        while True:
            rows = self._rows(self._sql.links_page, (last,))  # keyset pages, as records()
            if not rows:
                return
            last = rows[-1][0]
            for _, page, stored in rows:
                for to_url, anchor, kind, nofollow in decode_links(stored):
                    yield LinkEdge(page, to_url, anchor, kind, nofollow)

    def totals(self) -> CrawlTotals:
        """Responses, bytes on the wire, and the span of fetch times over all URLs (one scan, in SQL)."""
        row = self._rows(self._sql.totals)[0]
        return CrawlTotals(int(row[0]), int(row[1]), float(row[2]), float(row[3]),
                           int(row[4]), int(row[5]), int(row[6]), int(row[7]))

    def host_totals(self) -> list[HostTotals]:
        """Per host: URLs by state, URLs with an error, bytes on the wire (one scan, in SQL), by name."""
        hosts: dict[str, tuple[dict[UrlState, int], list[int]]] = {}
        for name, state, urls, errors, wire_bytes in self._rows(self._sql.host_totals):
            states, sums = hosts.setdefault(str(name), ({s: 0 for s in UrlState}, [0, 0]))
            states[UrlState(state)] = int(urls)
            sums[0] += int(errors)
            sums[1] += int(wire_bytes)
        return [HostTotals(name, states, errors, wire_bytes)
                for name, (states, (errors, wire_bytes)) in hosts.items()]

    def error_counts(self) -> dict[str, int]:
        """Number of URLs per recorded error class."""
        return {str(k): int(v) for k, v in self._rows(self._sql.error_counts)}

    def get(self, url: str) -> UrlRecord | None:
        """The row of `url`, or None when it is not known."""
        rows = self._rows(self._sql.get.format(cols=self._record_cols), (url,))
        return row_to_record(rows[0]) if rows else None

    def host_best(self, host: str) -> float | None:
        """The priority an ordered lease ranks `host` by (hosts.best; inf: nothing queued), or None
        when the host is not known."""
        rows = self._rows(self._sql.host_best, (host,))
        return float(rows[0][0]) if rows else None

    def get_meta(self, key: str) -> str | None:
        """A stored run-metadata value (seeds, config, start time), or None."""
        rows = self._rows(self._sql.get_meta, (key,))
        return str(rows[0][0]) if rows else None

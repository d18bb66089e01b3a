"""The SQL both stores run, written once and rendered for each backend's dialect (SQLite, PostgreSQL).

A statement here is written in the words both databases take (`ON CONFLICT ... DO UPDATE`, `FILTER`,
`UPDATE ... FROM`, `COALESCE`) and in a few spellings that `render` turns into each dialect's:
`?` positional and `:name` named parameters, GREATEST/LEAST (SQLite's scalar MAX/MIN), TRUE
(SQLite's 1, so that its partial indexes on `queued = 1` still match) and INFINITY (a float's +inf).
Each backend renders them once, at import: the lease and commit paths run fixed strings, as
before (a query builder would build them on those paths). Before/after, alternating runs on a busy
2-core machine: bench/commit_batch.py 29.4 -> 29.8 µs CPU a page at 17 pages a call, 25.5 -> 25.7 at
64 (medians of 3); bench/lease_order.py (2,000 hosts x 50) lease 11.1-11.9 -> 11.8-11.9 µs a URL
(bfs), 18.5-21.1 -> 18.9-19.7 (ordered); the same within the noise.
`{cols}` stands for the backend's URL record columns (as read for a UrlRecord).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Collection
from dataclasses import dataclass, fields
from typing import Any

from harvestman.model.errors import FrontierError
from harvestman.model.records import FetchOutcome, UrlRecord, UrlState
from harvestman.store.frontier import signed64


@dataclass(frozen=True)
class Dialect:
    """How one database spells what the shared statements say."""

    positional: str  # a `?` parameter
    named: str  # a `:name` parameter, with {} for the name
    greatest: str
    least: str
    true: str
    infinity: str


SQLITE = Dialect(positional="?", named=":{}", greatest="MAX(", least="MIN(", true="1", infinity="9e999")
POSTGRES = Dialect(
    positional="%s", named="%({})s", greatest="GREATEST(", least="LEAST(", true="TRUE", infinity="'Infinity'"
)

_SPELLINGS = re.compile(r"(?<![\w:]):([A-Za-z_]\w*)|\?|\bGREATEST\(|\bLEAST\(|\bTRUE\b|\bINFINITY\b")


def render(sql: str, dialect: Dialect) -> str:
    """`sql`, written in the shared spellings, in `dialect`'s."""
    def word(match: re.Match[str]) -> str:
        text = match.group(0)
        if match.group(1):
            return dialect.named.format(match.group(1))
        if text == "?":
            return dialect.positional
        return {"GREATEST(": dialect.greatest, "LEAST(": dialect.least, "TRUE": dialect.true,
                "INFINITY": dialect.infinity}[text]

    return _SPELLINGS.sub(word, sql)


# A host's best priority: never above the lowest priority of its queued URLs not leased (a new,
# re-queued or freed URL lowers it at once), and set to exactly that when an ordered lease takes
# from the host (INFINITY: none). A lease ordered globally takes the ready hosts by it. {host}: the
# host's id (an expression).
BEST_OF_HOST = (
    "COALESCE((SELECT priority FROM urls WHERE host_id = {host} AND queued = TRUE AND lease_until = 0"
    " ORDER BY priority LIMIT 1), INFINITY)"
)
# A URL row's columns are UrlRecord's fields, in its order (a urls column of the same name each), read
# from `urls u JOIN hosts h` as they are stored but for these:
_READ_AS = {
    "host": "h.name",
    # final_url is stored only when it differs from the URL (most rows would hold their URL twice).
    "final_url": "CASE WHEN u.final_url <> '' THEN u.final_url WHEN u.http_status > 0 THEN u.url ELSE '' END",
}
RECORD_FIELDS = tuple(f.name for f in fields(UrlRecord))
_record_fields = operator.attrgetter(*RECORD_FIELDS)  # not astuple: that copies each value deeply


def record_columns(missing: Collection[str] = ()) -> str:
    """The select list of a UrlRecord (see frontier.row_to_record); a column in `missing` (a database
    of an older schema, opened read-only) is read as its type's zero."""
    return ", ".join(
        ("''" if f.type == "str" else "0") if f.name in missing else _READ_AS.get(f.name, f"u.{f.name}")
        for f in fields(UrlRecord)
    )


def record_values(record: UrlRecord, host_id: int) -> tuple[object, ...]:
    """The stored values of `record`'s columns (RECORD_FIELDS, host as its id): as row_to_record's
    reverse."""
    values = list(_record_fields(record))
    values[1] = host_id
    values[2] = int(record.state)
    values[RECORD_FIELDS.index("final_url")] = "" if record.final_url == record.url else record.final_url
    values[RECORD_FIELDS.index("simhash")] = signed64(record.simhash)
    return tuple(values)


META_TABLE = "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
LEASE_EXPIRY_INDEX = "CREATE INDEX urls_lease_expiry ON urls(lease_until) WHERE lease_until > 0"


@dataclass(frozen=True)
class Statements:
    """The statements both stores run, by what they are for; `Statements()` holds them in the shared
    spellings, `for_dialect` in one database's."""

    schema_version: str = "SELECT value FROM meta WHERE key = 'schema_version'"
    set_schema_version: str = "UPDATE meta SET value = ? WHERE key = 'schema_version'"
    get_meta: str = "SELECT value FROM meta WHERE key = ?"
    set_meta: str = (
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )

    # -- host controls
    set_host_delay: str = "UPDATE hosts SET delay = ? WHERE id = ?"
    pause_host: str = (
        "UPDATE hosts SET paused_until = GREATEST(paused_until, ?), pause_reason = ? WHERE id = ?"
    )
    host_success: str = "UPDATE hosts SET failures = 0 WHERE name = ? AND failures <> 0"
    host_best: str = "SELECT best FROM hosts WHERE name = ?"
    # Every host's best priority anew: one index probe a host (a backend may add a WHERE).
    best_all: str = "UPDATE hosts SET best = " + BEST_OF_HOST.format(host="hosts.id")
    # release_leases: the hosts' best priorities first (their leased URLs become leasable), then the
    # leases, then the hosts' clocks.
    release_best: str = (
        "UPDATE hosts SET best = LEAST(hosts.best, r.best) FROM (SELECT host_id,"
        " MIN(priority) AS best FROM urls WHERE lease_until > 0 AND queued = TRUE GROUP BY host_id) r"
        " WHERE hosts.id = r.host_id"
    )
    release_urls: str = "UPDATE urls SET lease_until = 0 WHERE lease_until > 0"
    release_hosts: str = "UPDATE hosts SET in_flight = 0, wake_at = 0 WHERE in_flight <> 0 OR wake_at <> 0"

    # -- status and export
    due_count: str = (
        "SELECT COUNT(*) FROM urls WHERE queued = TRUE AND next_fetch_time <= ? AND lease_until = 0"
    )
    in_flight: str = "SELECT COUNT(*) FROM urls WHERE lease_until > 0"
    totals: str = (
        "SELECT COUNT(*) FILTER (WHERE http_status > 0), COALESCE(SUM(wire_bytes), 0),"
        " COALESCE(MIN(fetch_time) FILTER (WHERE http_status > 0), 0),"
        " COALESCE(MAX(fetch_time) FILTER (WHERE http_status > 0), 0),"
        " COALESCE(SUM(body_wire_bytes), 0), COALESCE(SUM(body_size), 0), COALESCE(SUM(saved_bytes), 0),"
        " COUNT(*) FILTER (WHERE partial <> '') FROM urls"
    )
    host_totals: str = (
        "SELECT h.name, u.state, COUNT(*), COUNT(*) FILTER (WHERE u.error_class <> ''), SUM(u.wire_bytes)"
        " FROM urls u JOIN hosts h ON h.id = u.host_id GROUP BY h.id, h.name, u.state ORDER BY h.name"
    )
    error_counts: str = "SELECT error_class, COUNT(*) FROM urls WHERE error_class <> '' GROUP BY error_class"
    # Keyset pages (no transaction held between them), in the order the pages were first known.
    links_page: str = (
        "SELECT l.url_id, u.url, l.links FROM links l JOIN urls u ON u.id = l.url_id"
        " WHERE l.url_id > ? ORDER BY l.url_id LIMIT 200"
    )
    get: str = "SELECT {cols} FROM urls u JOIN hosts h ON h.id = u.host_id WHERE u.url = ?"
    # {where}: an SQL condition and AND, or ''.
    records_page: str = (
        "SELECT u.id, {cols} FROM urls u JOIN hosts h ON h.id = u.host_id"
        " WHERE {where} u.id > ? ORDER BY u.id LIMIT 1000"
    )

    # -- bulk operations
    reset_inlinks: str = "UPDATE urls SET inlinks = 0 WHERE inlinks <> 0"
    unmark_duplicates: str = "UPDATE urls SET state = ?, duplicate_of = '' WHERE state = ?"
    # generate's choice: {key} is a GENERATE_ORDERS value.
    generate: str = (
        "SELECT id FROM (SELECT id, depth, score,"
        " ROW_NUMBER() OVER (PARTITION BY host_id ORDER BY {key}) AS n"
        " FROM urls WHERE queued = TRUE AND next_fetch_time <= ? AND lease_until <= ?) s"
        " WHERE n <= ? ORDER BY {key} LIMIT ?"
    )

    # -- reporting back: one fetch's outcome on its row (outcome_params)
    write_outcome: str = """
UPDATE urls SET state = :state, fetch_time = :fetch_time, next_fetch_time = :next_fetch_time,
    http_status = :http_status, error_class = :error_class, error_message = :error_message,
    signature = CASE WHEN :keep AND :signature = '' THEN signature ELSE :signature END,
    etag = CASE WHEN :keep AND :etag = '' THEN etag ELSE :etag END,
    last_modified = CASE WHEN :keep AND :last_modified = '' THEN last_modified ELSE :last_modified END,
    content_type = CASE WHEN :keep AND :content_type = '' THEN content_type ELSE :content_type END,
    title = CASE WHEN :keep AND :title = '' THEN title ELSE :title END,
    body_size = CASE WHEN :keep AND :body_size = 0 THEN body_size ELSE :body_size END,
    wire_bytes = :wire_bytes, final_url = :final_url,
    retries = retries + :retried, lease_until = 0, queued = :queued,
    fetch_interval = CASE WHEN :fetch_interval > 0 THEN :fetch_interval ELSE fetch_interval END,
    simhash = CASE WHEN :simhash <> 0 THEN :simhash
              WHEN :keep OR :signature = signature THEN simhash ELSE 0 END,
    body_wire_bytes = :body_wire_bytes,
    saved_bytes = CASE WHEN :keep AND :saved_bytes = 0
                  THEN GREATEST(wire_bytes + saved_bytes - :wire_bytes, 0) ELSE :saved_bytes END,
    partial = :partial,
    change = :change, checked_by = :checked_by, topic = :topic, relevance = :relevance
WHERE id = :id
"""

    def for_dialect(self, dialect: Dialect) -> Statements:
        """These statements in `dialect`'s spellings."""
        return Statements(**{f.name: render(getattr(self, f.name), dialect) for f in fields(self)})


SQLITE_SQL = Statements().for_dialect(SQLITE)
POSTGRES_SQL = Statements().for_dialect(POSTGRES)


def outcome_params(o: FetchOutcome, url: str, url_id: int, state: UrlState, next_fetch_time: float,
                   queued: bool) -> dict[str, Any]:
    """write_outcome's parameters: outcome `o` on the row `url_id` of `url` (its own URL, or the
    page its redirects ended on), landing in `state`."""
    own = url == o.url
    return {
        "id": url_id, "state": int(state), "fetch_time": o.fetch_time,
        "next_fetch_time": next_fetch_time, "queued": queued, "http_status": o.http_status,
        "error_class": o.error_class, "error_message": o.error_message,
        # A 304 usually repeats no validators: keep what the last full fetch recorded; and it has
        # no body: keep the page's size, and count what it saved against the page's full response
        # (the row's wire + saved bytes), which the next check compares with.
        "keep": state == UrlState.NOT_MODIFIED,
        "signature": o.signature, "etag": o.etag, "last_modified": o.last_modified,
        "content_type": o.content_type, "body_size": o.body_size, "wire_bytes": o.wire_bytes,
        "final_url": o.final_url if own else "", "title": o.title,
        "retried": 1 if o.retried and own else 0,
        "fetch_interval": float(o.fetch_interval),
        # Kept while the content is the same; a changed page's old SimHash would mislead dedup.
        "simhash": signed64(o.simhash),
        "body_wire_bytes": o.body_wire_bytes, "saved_bytes": o.saved_bytes, "partial": o.partial,
        "change": o.change, "checked_by": o.checked_by, "topic": o.topic, "relevance": float(o.relevance),
    }


def stored_schema(row: tuple[Any, ...] | None, name: str, latest: int) -> int:
    """The schema version a crawl database stores (`row`: the answer of its schema_version query),
    refused in one error of the tree when it is unknown or newer than `latest`, the one this
    harvestman writes (`name`: the database as the user named it)."""
    version = int(row[0]) if row and str(row[0]).isdigit() else -1
    if version > latest:
        raise FrontierError(f"{name} has crawl database schema {version}, newer than this harvestman "
                            f"understands ({latest}): upgrade harvestman")
    if version < 1:
        raise FrontierError(f"{name} has an unknown crawl database schema ({row and row[0]!r})")
    return version

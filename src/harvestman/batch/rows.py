"""The one definition of a URL row and a link row as they leave the crawl database, and the one table of
writers over it: `export` (JSONL, Parquet), `readdb --dump` and the batch jobs' snapshot all read it.

How a value is written, whatever the path:
- a state by its name in lower case (`fetched`, `not_modified`), as `status` names it;
- a time (epoch seconds in the database) as UTC: ISO 8601 text in JSON, timestamp[us, UTC] in Parquet;
  0 (never) as null;
- a SimHash as its 64 bits: the unsigned number in JSON, a signed int64 with the same bits in Parquet
  (as the databases hold it, and the only 64-bit integer the batch engines' XOR and bit counts take);
- a URL's metadata (a JSON object): an object in JSON, its text in Parquet; none as null;
- `final_url` '' (no response yet) as null.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from harvestman.batch.simhash import signed
from harvestman.model.records import LinkEdge, UrlRecord, UrlState

BATCH_ROWS = 10_000  # rows a Parquet write: bounded memory whatever the crawl's size


@dataclass(frozen=True, slots=True)
class Column:
    """One exported column: its name and its kind (how its value is written)."""

    name: str
    kind: str  # str, int, float, bool, state, time, simhash, json


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa  # heavy: loaded by the Parquet writers only

    return {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
            "state": pa.string(), "time": pa.timestamp("us", tz="UTC"), "simhash": pa.int64(),
            "json": pa.string()}[kind]


_SPECIAL = {"state": "state", "fetch_time": "time", "next_fetch_time": "time", "simhash": "simhash",
            "metadata": "json"}
# Every field of UrlRecord, in its order: a field added there is exported everywhere.
URL_COLUMNS: tuple[Column, ...] = tuple(
    Column(f.name, _SPECIAL.get(f.name, str(f.type))) for f in dataclasses.fields(UrlRecord))
_URL_FIELDS = tuple(c.name for c in URL_COLUMNS)
# Every field of LinkEdge; its kind (LinkKind) by name.
LINK_COLUMNS: tuple[Column, ...] = tuple(
    Column(name, "bool" if name == "nofollow" else "str") for name in LinkEdge._fields)


def columns(names: Iterable[str], extra: Sequence[Column] = ()) -> tuple[Column, ...]:
    """The columns named, in that order, among the URL and link columns and `extra` (a snapshot's `seq`)."""
    by_name = {c.name: c for c in (*URL_COLUMNS, *LINK_COLUMNS, *extra)}
    return tuple(by_name[n] for n in names)


def utc_time(ts: float) -> datetime | None:
    """Epoch seconds as an aware UTC datetime; 0 (never) as None."""
    return datetime.fromtimestamp(ts, UTC) if ts else None


def iso(when: datetime) -> str:
    """A UTC datetime as ISO 8601 ('2026-05-01T12:00:00.123456Z')."""
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


def state_name(state: UrlState) -> str:
    """A state as every row names it: `fetched`, `not_modified`."""
    return state.name.lower()


def url_row(record: UrlRecord) -> dict[str, Any]:
    """One URL's row: its state by name, times as UTC datetimes (None: never), metadata as an object,
    final_url None before any response; the SimHash unsigned (the writers say how each is written)."""
    row = {name: getattr(record, name) for name in _URL_FIELDS}
    row["state"] = state_name(record.state)
    row["fetch_time"] = utc_time(record.fetch_time)
    row["next_fetch_time"] = utc_time(record.next_fetch_time)
    row["metadata"] = json.loads(record.metadata) if record.metadata else None
    row["final_url"] = record.final_url or None
    return row


def link_row(edge: LinkEdge) -> dict[str, Any]:
    """One edge of the link graph, its kind by name."""
    return {"from_url": edge.from_url, "to_url": edge.to_url, "anchor": edge.anchor,
            "kind": edge.kind.value, "nofollow": bool(edge.nofollow)}


def json_default(value: object) -> str:
    """`json.dumps`'s `default` for a row: a time as ISO 8601 text."""
    if isinstance(value, datetime):
        return iso(value)
    raise TypeError(f"cannot export {type(value).__name__}")


def json_line(row: dict[str, Any]) -> str:
    """A row as one JSON line (times as ISO 8601 text)."""
    return json.dumps(row, ensure_ascii=False, default=json_default) + "\n"


def write_jsonl(rows: Iterable[dict[str, Any]], out: TextIO) -> int:
    """Write `rows` as JSON lines to `out`; how many."""
    count = 0
    for row in rows:
        out.write(json_line(row))
        count += 1
    return count


def arrow_schema(cols: Sequence[Column]) -> Any:
    """The Parquet schema of `cols`."""
    import pyarrow as pa

    return pa.schema([(c.name, _arrow_type(c.kind)) for c in cols])


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


_TO_PARQUET: dict[str, Callable[[Any], Any]] = {"simhash": signed, "json": _json_text}  # the rest as they are


def write_parquet(rows: Iterable[dict[str, Any]], cols: Sequence[Column], path: Path, *,
                  compression: str = "snappy", batch_rows: int = BATCH_ROWS) -> int:
    """Write the `cols` of `rows` to a Parquet file at `path`, in batches (via a temporary name: no
    half file after a crash); how many. An empty table still gets the columns' schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(cols)
    plain = [c.name for c in cols if c.kind not in _TO_PARQUET]
    convert = [(c.name, _TO_PARQUET[c.kind]) for c in cols if c.kind in _TO_PARQUET]
    part = path.with_name(path.name + ".part")
    count = 0
    with pq.ParquetWriter(str(part), schema, compression=compression) as writer:
        batch: dict[str, list[Any]] = {name: [] for name in schema.names}
        for row in rows:
            for name in plain:
                batch[name].append(row[name])
            for name, conv in convert:
                batch[name].append(conv(row[name]))
            count += 1
            if count % batch_rows == 0:
                writer.write_batch(pa.record_batch(list(batch.values()), schema=schema))
                batch = {name: [] for name in schema.names}
        writer.write_batch(pa.record_batch(list(batch.values()), schema=schema))
    part.replace(path)
    return count


def write_rows(fmt: str, rows: Iterable[dict[str, Any]], cols: Sequence[Column], path: Path) -> int:
    """Write `rows` to a file at `path` in `fmt` (a name of WRITERS); how many."""
    return WRITERS[fmt](rows, cols, path)


def _jsonl_file(rows: Iterable[dict[str, Any]], cols: Sequence[Column], path: Path) -> int:
    del cols  # a JSON line holds every key of its row
    with open(path, "w", encoding="utf-8") as out:
        return write_jsonl(rows, out)


WRITERS: dict[str, Callable[[Iterable[dict[str, Any]], Sequence[Column], Path], int]] = {
    "jsonl": _jsonl_file,
    "parquet": write_parquet,
}

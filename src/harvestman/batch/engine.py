"""The seam between batch jobs and what runs their SQL: DuckDB (embedded, the default) or Spark.

A job is SQL over the tables of a snapshot (registered as views), materialized step by step into
named tables; where the two dialects differ, the engine supplies the fragment (`popcount_xor`,
`shift_right`). The jobs themselves never import an engine's library.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pyarrow is imported where it is used: the CLI imports this module for its names
    import pyarrow as pa

ENGINES = ("duckdb", "spark")


@runtime_checkable
class BatchEngine(Protocol):
    """Runs a batch job's SQL: register Parquet files, materialize tables, read results back."""

    name: str

    def register(self, table: str, path: Path) -> None:
        """Make the Parquet file at `path` queryable as `table`."""
        ...

    def materialize(self, table: str, sql: str) -> None:
        """Run `sql` and keep its result as `table` (replacing one of that name)."""
        ...

    def drop(self, table: str) -> None:
        """Forget a materialized table; nothing happens when there is none."""
        ...

    def scalar(self, sql: str) -> Any:
        """The single value `sql` returns (None for an empty result)."""
        ...

    def arrow(self, sql: str) -> pa.Table:
        """The result of `sql` as an Arrow table, on this machine."""
        ...

    def write_parquet(self, sql: str, path: Path) -> int:
        """Write the result of `sql` to one Parquet file at `path`; returns its row count."""
        ...

    def popcount_xor(self, a: str, b: str) -> str:
        """SQL for the number of bits that differ between two BIGINT expressions."""
        ...

    def shift_right(self, value: str, bits: int) -> str:
        """SQL for a BIGINT expression shifted right by `bits` (arithmetic or logical: callers mask)."""
        ...

    def close(self) -> None:
        """Release what the engine holds (a Spark session it started itself)."""
        ...


def write_arrow(table: pa.Table, path: Path) -> int:
    """Write an Arrow table to `path` via a temporary name (no half file after a crash)."""
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".parquet.part")
    pq.write_table(table, part, compression="zstd")
    part.replace(path)
    return int(table.num_rows)


class DuckDbEngine:
    """Batch SQL on an embedded DuckDB database in memory (spilling to `temp_dir` when it is large)."""

    name = "duckdb"

    def __init__(self, *, threads: int = 0, memory_limit: str = "", temp_dir: Path | None = None) -> None:
        import duckdb  # imported here: only batch jobs need it

        self._db = duckdb.connect(":memory:")
        if threads:
            self._db.execute(f"SET threads = {int(threads)}")
        if memory_limit:
            self._db.execute(f"SET memory_limit = '{memory_limit}'")
        if temp_dir is not None:
            self._db.execute(f"SET temp_directory = '{_quoted(str(temp_dir))}'")
        self._db.execute("SET preserve_insertion_order = false")  # lets big writes stream

    def register(self, table: str, path: Path) -> None:
        """Make the Parquet file at `path` queryable as `table`."""
        source = f"read_parquet('{_quoted(str(path))}')"
        self._db.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {source}")

    def materialize(self, table: str, sql: str) -> None:
        """Run `sql` and keep its result as a temporary table."""
        self._db.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {sql}")

    def drop(self, table: str) -> None:
        """Forget a materialized table."""
        self._db.execute(f"DROP TABLE IF EXISTS {table}")

    def scalar(self, sql: str) -> Any:
        """The single value `sql` returns."""
        row = self._db.execute(sql).fetchone()
        return None if row is None else row[0]

    def arrow(self, sql: str) -> pa.Table:
        """The result of `sql` as an Arrow table."""
        import pyarrow as pa

        relation = self._db.sql(sql)
        # DuckDB 1.4 named it to_arrow_table; before, a relation's arrow() returned the table.
        fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
        result = fetch()
        return result if isinstance(result, pa.Table) else pa.table(result)

    def write_parquet(self, sql: str, path: Path) -> int:
        """Write the result of `sql` straight from DuckDB to one Parquet file."""
        import pyarrow.parquet as pq

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(".parquet.part")
        self._db.execute(f"COPY ({sql}) TO '{_quoted(str(part))}' (FORMAT PARQUET, COMPRESSION ZSTD)")
        part.replace(path)
        return int(pq.ParquetFile(path).metadata.num_rows)

    def popcount_xor(self, a: str, b: str) -> str:
        """DuckDB: bit_count(xor(a, b))."""
        return f"bit_count(xor({a}, {b}))"

    def shift_right(self, value: str, bits: int) -> str:
        """DuckDB: the >> operator."""
        return f"({value} >> {int(bits)})"

    def close(self) -> None:
        """Close the in-memory database."""
        self._db.close()


def _quoted(text: str) -> str:
    return text.replace("'", "''")

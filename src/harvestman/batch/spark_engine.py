"""Batch SQL on Apache Spark (pyspark), for crawls one machine's DuckDB cannot hold; local mode by default.

pyspark is imported only here, and only when `--engine spark` asks for it (the `spark` extra).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from harvestman.batch.engine import write_arrow
from harvestman.model.errors import ConfigError


def start_session(master: str = "local[2]", *, shuffle_partitions: int = 8, driver_memory: str = "4g") -> Any:
    """A Spark session for batch jobs (an expensive start: a JVM; share one where you can)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigError("--engine spark needs pyspark: "
                          "pip install '.[spark]' (in harvestman's folder)") from None
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (SparkSession.builder.master(master).appName("harvestman-batch")
            .config("spark.ui.enabled", "false")
            # Local mode talks to itself only: keep the driver's sockets on loopback.
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.showConsoleProgress", "false")
            # Few partitions: in local mode 200 shuffle tasks a step cost more than the work.
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.driver.memory", driver_memory)
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


class SparkEngine:
    """Batch SQL on a Spark session: one given (shared, left running) or its own (stopped on close)."""

    name = "spark"

    def __init__(self, session: Any = None, **options: Any) -> None:
        self._own = session is None
        self._spark = start_session(**options) if session is None else session
        self._tables: dict[str, Any] = {}

    def register(self, table: str, path: Path) -> None:
        """Make the Parquet file at `path` queryable as `table`."""
        self._spark.read.parquet(str(path)).createOrReplaceTempView(table)

    def materialize(self, table: str, sql: str) -> None:
        """Run `sql` now and keep its result (checkpointed locally: an iterative job's plan stays short)."""
        frame = self._spark.sql(sql).localCheckpoint(eager=True)
        self.drop(table)
        frame.createOrReplaceTempView(table)
        self._tables[table] = frame

    def drop(self, table: str) -> None:
        """Forget a materialized table and free its blocks."""
        frame = self._tables.pop(table, None)
        if frame is not None:
            frame.unpersist()
        self._spark.catalog.dropTempView(table)

    def scalar(self, sql: str) -> Any:
        """The single value `sql` returns."""
        rows = self._spark.sql(sql).collect()
        return rows[0][0] if rows else None

    def arrow(self, sql: str) -> pa.Table:
        """The result of `sql` collected to the driver as Arrow."""
        table = self._spark.sql(sql).toArrow()
        return table if isinstance(table, pa.Table) else pa.table(table)

    def write_parquet(self, sql: str, path: Path) -> int:
        """Collect the result of `sql` and write it to one Parquet file (what readers of DIR expect)."""
        return write_arrow(self.arrow(sql), path)

    def popcount_xor(self, a: str, b: str) -> str:
        """Spark SQL: bit_count(a ^ b)."""
        return f"bit_count({a} ^ {b})"

    def shift_right(self, value: str, bits: int) -> str:
        """Spark SQL: shiftright()."""
        return f"shiftright({value}, {int(bits)})"

    def close(self) -> None:
        """Drop this engine's tables; stop the session when the engine started it."""
        for table in list(self._tables):
            self.drop(table)
        if self._own:
            self._spark.stop()

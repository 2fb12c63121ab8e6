"""The database file: one writer at a time, atomic replacement, read-only readers.

A refresh never writes the live file. It copies it (or starts empty), writes the copy, checkpoints,
fsyncs and renames the copy over the live file in one `os.replace`. A reader therefore sees the
old state or the new one, never a mix; a killed refresh leaves only a stray temporary file, which
the next refresh removes. Readers attach the file read-only and let go of it within 0.25 s of
their last query, at once when a writer waits for the lock, so a refresh (or a verdict log write)
is never blocked for long.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ..errors import invalid
from ..metrics.registry import REGISTRY
from ..store.schema import SCHEMA_VERSION, TABLES, create_schema, table_names

EXPORT_TABLES = ("question_scores", "claims", "retrieved", "records", "questions", "runs")


def _lock_path(db: Path) -> Path:
    return db.with_name(f".{db.name}.lock")


def _temp_prefix(db: Path) -> str:
    return f".{db.name}.refresh-"


@contextmanager
def writer_lock(db: Path, timeout: float = 600.0) -> Iterator[None]:
    """Serialise writers of one database file (refreshes and verdict logs) across processes."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(_lock_path(db), "a+") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise invalid("another refresh holds the database; try again when it ends", "db", str(db))
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remove_stale_copies(db: Path) -> None:
    """Delete temporary copies left by refreshes that were killed (call under the writer lock)."""
    for stray in db.parent.glob(_temp_prefix(db) + "*"):
        if stray.is_dir():  # DuckDB's spill folder of a killed refresh
            shutil.rmtree(stray, ignore_errors=True)
        else:
            stray.unlink(missing_ok=True)


def working_copy(db: Path) -> Path:
    """A private copy of the live database (or a new path when there is none) to write into."""
    temp = db.with_name(f"{_temp_prefix(db)}{os.getpid()}.tmp")
    temp.unlink(missing_ok=True)
    if db.exists():
        shutil.copyfile(db, temp)
    return temp


def publish(temp: Path, db: Path) -> None:
    """Make the finished copy the live database in one atomic rename, durable on disk."""
    with open(temp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temp, db)
    directory = os.open(db.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def connect_readonly(db: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection; a missing file is a clear error, not an empty database."""
    if not db.exists():
        raise invalid("no database here; create it with `ragslice refresh WORKSPACE --db FILE`", "db", str(db))
    return duckdb.connect(str(db), read_only=True)


def stored_hashes(db: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(suite -> files_hash, run_id -> files_hash) of the live database; empty when there is none."""
    if not db.exists():
        return {}, {}
    with connect_readonly(db) as con:
        if not {"suites", "runs"} <= table_names(con):
            return {}, {}
        suites = dict(con.execute("SELECT suite, files_hash FROM suites").fetchall())
        runs = dict(con.execute("SELECT run_id, files_hash FROM runs").fetchall())
    return suites, runs


def write_registry(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the `metrics` table from the registry, so users' SQL can read every definition
    (recreated: a database of an older version may hold fewer columns)."""
    con.execute(f"CREATE OR REPLACE TABLE metrics ({TABLES['metrics']}\n)")
    con.executemany(
        "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (m.key, m.name, m.family, m.level, m.numerator, m.denominator, m.na_rule, m.failure, m.higher_is_better,
             m.pooled[0] if m.pooled else None, m.pooled[1] if m.pooled else None, m.pooling, m.help,
             list(m.aliases))
            for m in REGISTRY
        ],
    )


def write_meta(con: duckdb.DuckDBPyConnection, **values: object) -> None:
    values = {"schema_version": SCHEMA_VERSION, **values}
    for key, value in values.items():
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, json.dumps(value) if not isinstance(value, str) else value])


WRITE_MEMORY_LIMIT = "2GB"
"""DuckDB's memory budget while a refresh writes: larger joins and sorts spill to a temporary folder
beside the working copy (removed when the connection closes) instead of growing the process."""


def open_for_write(temp: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(temp), config={"memory_limit": WRITE_MEMORY_LIMIT})
    create_schema(con)
    return con


def export_command(db: Path, out: Path, *, fmt: str = "csv") -> int:
    """Write the per-question tables as one CSV or Parquet file each into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    with connect_readonly(db) as con:
        for table in EXPORT_TABLES:
            if table not in TABLES:
                continue
            target = out / f"{table}.{fmt}"
            options = "(FORMAT parquet)" if fmt == "parquet" else "(FORMAT csv, HEADER true)"
            con.execute(f"COPY (SELECT * FROM {table}) TO '{_sql_path(target)}' {options}")
            print(target)
    return 0


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")

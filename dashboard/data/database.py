"""The dashboard's one door to the database: which file, how it is opened, and every cache.

The file is `$RAGSLICE_DB` (or `--db FILE` after `--` on the streamlit command line); the policy
evaluated live and review mode come the same way (`policy_path`, `review_mode`). The database is
opened only here, read-only, through `scoring.store.database.Database.reading`: one attachment per
process, shared by the reads of a page and let go when a writer waits. Results are cached on (what
was read, the file's signature), so the first rerun after a refresh reads the new file.

Two kinds of cache, both made here and nowhere else: `copied` (small tables, `st.cache_data`: each
caller gets a copy) and `shared` (what many figures of a page share, `st.cache_resource`: one copy,
never modified). A cached function of the file takes the file's path and signature first; `on_file`
calls it on the current file, and inside it `reading` opens the file. `query` / `query_many` run SQL
with bound parameters; `read` runs a scoring function of a read-only connection. The catalog (meta,
suites, runs, table names) is read once per file, shared.

Rules: every value is a bound parameter; the only identifiers spliced into SQL are metric columns
the registry declares (`allowed_metric`) and table names from fixed lists.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pandas as pd
import streamlit as st

from scoring.metrics import BY_KEY, REGISTRY
from scoring.store.database import READ_ERRORS, Database, DatabaseMissing, Signature, outdated_reason, signature

DB_ENV = "RAGSLICE_DB"
POLICY_ENV = "RAGSLICE_POLICY"
WORKSPACE_ENV = "RAGSLICE_WORKSPACE"
REVIEWER_ENV = "RAGSLICE_REVIEWER"
DEFAULT_DB = "ragslice.duckdb"
METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY)

T = TypeVar("T")


# -- the files: database, policy, review mode -----------------------------------------------------


def _option(env: str, flag: str) -> str | None:
    """`$env`, else `flag VALUE` (or `flag=VALUE`) after `--` on the streamlit command line."""
    value = os.environ.get(env)
    if value:
        return value
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f"{flag}="):
            return arg.removeprefix(f"{flag}=")
    return None


def db_path() -> Path:
    """The database: `$RAGSLICE_DB`, else `--db FILE` after `--` on the streamlit command line,
    else ./ragslice.duckdb."""
    return Path(_option(DB_ENV, "--db") or DEFAULT_DB)


def policy_path() -> Path | None:
    """The acceptance policy evaluated live: `$RAGSLICE_POLICY`, else `--policy FILE` after `--` on
    the streamlit command line, else None (no live verdict)."""
    value = _option(POLICY_ENV, "--policy")
    return Path(value) if value else None


def review_mode() -> tuple[Path, str] | None:
    """(workspace, reviewer) when the dashboard records label decisions (`ragslice dashboard --workspace
    WS --reviewer NAME`), else None: the dashboard is read-only."""
    workspace, reviewer = _option(WORKSPACE_ENV, "--workspace"), _option(REVIEWER_ENV, "--reviewer")
    return (Path(workspace), reviewer) if workspace and reviewer else None


def file_signature(path: Path | None) -> tuple[int, int, int] | None:
    """(inode, size, mtime_ns) of a file other than the database (the policy), a cache key; None
    when there is no such file."""
    if path is None:
        return None
    try:
        st_ = path.stat()
    except OSError:
        return None
    return (st_.st_ino, st_.st_size, st_.st_mtime_ns)


# -- connections and caches ------------------------------------------------------------------------


def copied(*, max_entries: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Cache a function of the file (path and signature first) per arguments; each caller gets a
    copy of the result (`st.cache_data`)."""
    return st.cache_data(show_spinner=False, max_entries=max_entries)


def shared(*, max_entries: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Cache a function of the file (path and signature first) per arguments; every caller gets the
    same object, which nobody modifies (`st.cache_resource`)."""
    return st.cache_resource(show_spinner=False, max_entries=max_entries)


def reading(path: str | Path, sig: Signature | None = None) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """A read-only cursor on the file as of `sig` (None: now), on the process's shared attachment
    (`Database.reading`); read errors of a missing or foreign file become DatabaseMissing."""
    return Database(path).reading(sig)


def current() -> tuple[str, Signature]:
    """The database file now: its path and signature (DatabaseMissing when there is no file)."""
    path = db_path()
    return str(path), signature(path)


def _unreadable(path: Path, error: Exception) -> DatabaseMissing:
    return DatabaseMissing(f"{path} is not a readable ragslice database ({error})")


def on_file(cached: Callable[..., T], *args: Any) -> T:
    """`cached(path, sig, *args)` on the current file; a read error becomes DatabaseMissing."""
    path = db_path()
    sig = signature(path)
    try:
        return cached(str(path), sig, *args)
    except READ_ERRORS as error:
        raise _unreadable(path, error) from error


Statement = tuple[str, Any]
"""(SQL, bound parameters): a list or a dict of `$name` values."""


@copied(max_entries=512)
def _cached(path: str, sig: Signature, statements: tuple[Statement, ...]) -> list[pd.DataFrame]:
    with reading(path, sig) as con:
        return [con.execute(sql, params).df() for sql, params in statements]


def query_many(*statements: Statement) -> list[pd.DataFrame]:
    """Run read-only queries with bound parameters in one batch; the results are cached together
    until the file changes."""
    return on_file(_cached, tuple(statements))


def query(sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> pd.DataFrame:
    """Run one read-only query with bound parameters; cached until the file changes."""
    return query_many((sql, params))[0]


def query_uncached(sql: str, params: Sequence[Any]) -> pd.DataFrame:
    """`query` without the cache, for reads keyed on long lists (hashing them would cost more than
    the read) whose callers cache the result."""
    path = db_path()
    try:
        with reading(path) as con:
            return con.execute(sql, params).df()
    except READ_ERRORS as error:
        raise _unreadable(path, error) from error


@copied(max_entries=128)
def _read(path: str, sig: Signature, name: str, args: tuple[Any, ...], _reader: Callable[..., Any]) -> Any:
    del name  # cache key only: which function `_reader` is
    with reading(path, sig) as con:
        return _reader(con, *args)


def read(reader: Callable[..., T], *args: Any) -> T:
    """`reader(con, *args)`, a scoring function of a read-only connection, on the current file;
    cached on the reader's name and `args` (each caller gets a copy) until the file changes."""
    return on_file(_read, f"{reader.__module__}.{reader.__qualname__}", args, reader)


# -- the catalog -----------------------------------------------------------------------------------

CATALOG = (
    ("SELECT key, value FROM meta", []),
    ("SELECT * FROM suites ORDER BY suite", []),
    ("SELECT * FROM runs ORDER BY created_at, run_id", []),
    ("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()", []),
)


@shared(max_entries=8)
def catalog_at(path: str, sig: Signature) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, frozenset[str]]:
    """`catalog` of one file, shared (never modified: the functions that return a part copy it)."""
    with reading(path, sig) as con:
        meta_rows, suite_rows, run_rows, tables = (con.execute(sql, params).df() for sql, params in CATALOG)
    return meta_rows, suite_rows, run_rows, frozenset(tables["table_name"])


def catalog() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, frozenset[str]]:
    """meta, suites, runs and the table names: what every page needs, read in one batch (one shared
    copy: every page asks for them several times)."""
    return on_file(catalog_at)


def has(table: str) -> bool:
    """Whether the database holds `table` (a summary or a table newer versions write)."""
    return table in catalog()[3]


def meta() -> dict[str, str]:
    """The `meta` table as a dict; raises DatabaseMissing when the file is absent or foreign."""
    rows = catalog()[0]
    return dict(zip(rows["key"], rows["value"]))


def schema_problem() -> str | None:
    """A sentence when the database was written by a different schema version (or none), naming the
    command that rebuilds it; else None."""
    reason = outdated_reason(meta(), current()[0])
    return None if reason is None else reason[0].upper() + reason[1:] + "."


def suites() -> pd.DataFrame:
    """The `suites` table, by suite name."""
    return catalog()[1].copy()


def runs(suite: str | None = None) -> pd.DataFrame:
    """Runs (manifest columns and record counts), oldest first."""
    table = catalog()[2]
    if suite is None:
        return table.copy()
    return table[table["suite"] == suite].reset_index(drop=True)


def allowed_metric(key: str) -> str:
    """Allow-list check: a metric identifier may reach SQL only if the registry declares it."""
    if key not in BY_KEY:
        raise ValueError(f"unknown metric {key!r}")
    return key


__all__ = ["CATALOG", "DB_ENV", "DEFAULT_DB", "METRIC_KEYS", "POLICY_ENV", "REVIEWER_ENV", "WORKSPACE_ENV",
           "DatabaseMissing", "Statement", "allowed_metric", "catalog", "catalog_at", "copied", "current", "db_path",
           "file_signature", "has", "meta", "on_file", "policy_path", "query", "query_many", "query_uncached",
           "read", "reading", "review_mode", "runs", "schema_problem", "shared", "suites"]

"""The one door to the database file: who opens it, read-only or as the writer, for how long, and
with which cache key.

- **Readers** open it read-only. `Database.reading` is for a long-lived process that reads often (the
  dashboard): one in-memory DuckDB instance per process attaches the file read-only for batches of
  reads, keeps it `LINGER` seconds after the last batch (the next read of the same page reuses it:
  attaching costs milliseconds) and lets go at once when a writer waits for it. `Database.connect`
  gives a short-lived command (`ragslice compare`, `ragslice report`) its own read-only connection.
  `Database.signature` (the file's inode, size and modification time) keys every cache: it changes
  whenever a refresh replaces the file.
- **The writer** is a refresh, or a verdict being recorded, each under `writer_lock`. A refresh never
  writes the live file: it copies it (or starts empty), writes the copy, checkpoints, fsyncs and
  renames the copy over the live file in one `os.replace` (`working_copy`, `publish`), so a reader
  sees the old state or the new one, never a mix, and a killed refresh leaves only a stray temporary
  file that the next refresh removes. A verdict is appended to the live file in one short
  transaction (`Database.appending`).
"""
from __future__ import annotations

import atexit
import fcntl
import itertools
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..errors import invalid
from ..metrics.registry import REGISTRY
from .hashes import HASHES_KEY, HashCache
from .schema import SCHEMA_VERSION, TABLES, create_schema, table_names


class DatabaseMissing(RuntimeError):
    """The database file does not exist, or is not a readable ragslice database."""


Signature = tuple[int, int, int]


def signature(path: Path) -> Signature:
    """(inode, size, mtime_ns) of the file, its write-ahead log's size and time included: changes
    whenever a refresh replaces the file or commits to it."""
    try:
        st_ = Path(path).stat()
    except FileNotFoundError as error:
        raise DatabaseMissing(f"no database at {path}") from error
    try:
        wal = Path(f"{path}.wal").stat()
    except FileNotFoundError:
        return (st_.st_ino, st_.st_size, st_.st_mtime_ns)
    return (st_.st_ino, st_.st_size + wal.st_size, max(st_.st_mtime_ns, wal.st_mtime_ns))


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


def settle(db: Path) -> None:
    """Merge the write-ahead log of the live file, if it has one (a writer that committed in place and
    was killed before its checkpoint), into the file, so that a copy of the file holds every committed
    change and no log is left beside a file it does not belong to (call under `writer_lock`)."""
    if Path(f"{db}.wal").exists():
        con = connect_for_write(db, wait_seconds=WRITER_WAIT, what="merge the database's write-ahead log")
        try:
            con.execute("CHECKPOINT")
        finally:
            con.close()


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


WRITER_WAIT = 60.0
"""Seconds a reader waits for a writer that holds the file (a refresh applying review decisions in
place, `scoring.store.refresh.apply_decisions`, or a verdict being recorded)."""


def while_written(path: Path, attempt: int, error: duckdb.Error, deadline: float) -> bool:
    """Whether to try opening `path` again after `error`: the file is locked, and a writer holds the
    writer lock (until `deadline`) or this is one of the first `LOCK_RETRIES` attempts."""
    if "lock" not in str(error).lower():
        return False
    return attempt < LOCK_RETRIES - 1 or (writer_waiting(str(path)) and time.monotonic() < deadline)


def connect_readonly(db: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection; a missing file is a clear error, not an empty database. Waits while a
    writer holds the file (`while_written`)."""
    if not db.exists():
        raise invalid("no database here; create it with `ragslice refresh WORKSPACE --db FILE`", "db", str(db))
    deadline = time.monotonic() + WRITER_WAIT
    for attempt in itertools.count():
        try:
            return duckdb.connect(str(db), read_only=True)
        except duckdb.IOException as error:
            if not while_written(db, attempt, error, deadline):
                raise
            time.sleep(LOCK_WAIT)
    raise AssertionError("unreachable")


def stored_hashes(db: Path) -> tuple[dict[str, tuple[str, str]], dict[str, str], HashCache]:
    """(suite -> (files_hash, base_hash), run_id -> files_hash, the file sets' hashes by status) of the
    live database; empty when there is none, or it was written with another schema version (its
    scored tables are rebuilt)."""
    if not db.exists():
        return {}, {}, HashCache()
    with connect_readonly(db) as con:
        if not {"suites", "runs", "meta"} <= table_names(con):
            return {}, {}, HashCache()
        meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('schema_version', ?)",
                                [HASHES_KEY]).fetchall())
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            return {}, {}, HashCache()
        suites = {suite: (files, base) for suite, files, base in con.execute(
            "SELECT suite, files_hash, base_hash FROM suites").fetchall()}
        runs = dict(con.execute("SELECT run_id, files_hash FROM runs").fetchall())
    return suites, runs, HashCache.loads(meta.get(HASHES_KEY))


def outdated(con: duckdb.DuckDBPyConnection, db: Path) -> str | None:
    """Why a database written with another schema version cannot be read, and the command that rebuilds
    it (the workspace it was refreshed from, when it says); None when it is of this version, or has no
    `meta` table to say (a file without one is refused by the reader that misses its tables)."""
    if "meta" not in table_names(con):
        return None
    return outdated_reason(dict(con.execute("SELECT key, value FROM meta").fetchall()), db)


def outdated_reason(meta: dict[str, str], db: Path | str) -> str | None:
    """`outdated` from the `meta` table's keys and values (a `meta` without a version is of none)."""
    version = meta.get("schema_version", "(none)")
    if version == str(SCHEMA_VERSION):
        return None
    return (f"the database was written with schema version {version}, this ragslice reads version {SCHEMA_VERSION}; "
            f"refresh it first: ragslice refresh {meta.get('workspace', 'WORKSPACE')} --db {db}")


def write_registry(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the `metrics` table from the registry, so users' SQL can read every definition
    (recreated: a database of an older version may hold fewer columns)."""
    from .suite_tables import rows_table

    con.execute(f"CREATE OR REPLACE TABLE metrics ({TABLES['metrics']}\n)")
    rows = [(m.key, m.name, m.family, m.level, m.numerator, m.denominator, m.na_rule, m.failure, m.higher_is_better,
             m.pooled[0] if m.pooled else None, m.pooled[1] if m.pooled else None, m.pooling, m.help,
             list(m.aliases)) for m in REGISTRY]
    columns = [line.split()[0] for line in TABLES["metrics"].strip().splitlines()]
    # one statement for every row: executemany runs one per row
    con.register("_incoming_metrics", rows_table(rows, columns))
    try:
        con.execute("INSERT INTO metrics BY NAME SELECT * FROM _incoming_metrics")
    finally:
        con.unregister("_incoming_metrics")


def write_meta(con: duckdb.DuckDBPyConnection, **values: object) -> None:
    values = {"schema_version": SCHEMA_VERSION, **values}
    pairs = [(key, json.dumps(value) if not isinstance(value, str) else value) for key, value in values.items()]
    con.execute(f"INSERT OR REPLACE INTO meta VALUES {', '.join(['(?, ?)'] * len(pairs))}",
                [item for pair in pairs for item in pair])


MEMORY_FLOOR_GB = 2
MEMORY_SHARE = 0.4
"""DuckDB's memory budget while a refresh writes, by default: this share of the machine's memory, at
least `MEMORY_FLOOR_GB` (9GB on a machine of 24 GiB). Larger joins and sorts spill to a temporary folder
beside the working copy (removed when the connection closes) instead of growing the process; `ragslice
refresh --memory` sets another."""
MEMORY_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", re.IGNORECASE)


def memory_budget(memory: str | None = None) -> str:
    """The memory budget of a refresh: `memory` as given (a number and a unit: KB, MB, GB, TB or KiB,
    MiB, GiB, TiB; ValidationError naming --memory otherwise), else `MEMORY_SHARE` of the machine's
    memory, at least `MEMORY_FLOOR_GB`."""
    from ..errors import invalid

    if memory is not None:
        found = MEMORY_SIZE.fullmatch(memory)
        if found is None or float(found.group(1)) <= 0:
            raise invalid("a memory size: a number and a unit, e.g. 8GB or 512MB", "--memory", memory)
        return f"{found.group(1)}{found.group(2)}"
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    return f"{max(MEMORY_FLOOR_GB, int(total * MEMORY_SHARE / 2 ** 30))}GB"


def open_for_write(temp: Path, memory: str | None = None) -> duckdb.DuckDBPyConnection:
    """The working copy, opened with the refresh's memory budget (`memory_budget`)."""
    con = duckdb.connect(str(temp), config={"memory_limit": memory_budget(memory)})
    create_schema(con)
    return con


# -- the reading door ---------------------------------------------------------------------------------


LOCK_RETRIES = 40
LOCK_WAIT = 0.05
"""A writer (`ragslice compare` recording a verdict) locks the file briefly; retry for up to 2 s."""
READ_ERRORS = (duckdb.CatalogException, duckdb.IOException, duckdb.InvalidInputException,
               duckdb.BinderException, duckdb.SerializationException)


LINGER = 0.25
"""Seconds an attachment stays after its last batch, so the next batch of the same page reuses it;
dropped at once when a writer is waiting for the file (`writer_waiting`)."""


@dataclass
class _Attachment:
    alias: str
    sig: tuple[int, int, int]
    users: int
    idle: int = 0
    """Counts the times the attachment fell idle: a linger timer detaches only the idle spell it saw."""


_MEMORY: duckdb.DuckDBPyConnection | None = None
_ATTACHED: dict[str, _Attachment] = {}
_FREE = threading.Condition()
_TIMERS: dict[str, threading.Timer] = {}
"""The latest linger timer of each file (`_release`), cancelled when the process exits."""
_ALIASES = itertools.count()


def writer_waiting(path: str) -> bool:
    """Whether a writer (`ragslice refresh`, `ragslice compare` recording a verdict) holds the
    database's writer lock (`scoring.store.writer_lock`) and so may be waiting for the file."""
    try:
        handle = os.open(_lock_path(Path(path)), os.O_RDONLY)
    except OSError:
        return False  # no writer ever ran here
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
    finally:
        os.close(handle)


@contextmanager
def _reading(path: str, sig: tuple[int, int, int]) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor whose default database is the file at `path`, attached read-only. Batches running at
    the same time share one attachment; it stays `LINGER` seconds after the last one ends (the next
    read of the page reuses it), and goes at once when a writer waits for the file, so the file is
    never held long between reads."""
    cursor = _acquire(path, sig)
    try:
        yield cursor
    finally:
        cursor.close()
        _release(path)


def _detach(path: str) -> None:
    """Detach the idle attachment of `path` (call holding `_FREE`)."""
    attachment = _ATTACHED.pop(path)
    if _MEMORY is not None:
        _MEMORY.execute(f"DETACH {attachment.alias}")
    _FREE.notify_all()


def _acquire(path: str, sig: tuple[int, int, int]) -> duckdb.DuckDBPyConnection:
    global _MEMORY
    with _FREE:
        if _MEMORY is None:
            _MEMORY = duckdb.connect()
        while path in _ATTACHED:
            attachment = _ATTACHED[path]
            waiting = writer_waiting(path)
            if attachment.users == 0 and (attachment.sig != sig or waiting):
                _detach(path)  # an older file, or a writer wants this one: let go
                break
            if attachment.sig == sig and not waiting:
                break
            _FREE.wait(LOCK_WAIT)  # readers of an older file, or a writer waiting: join no batch now
        if path not in _ATTACHED:
            for attempt in range(LOCK_RETRIES):
                if not writer_waiting(path) or attempt == LOCK_RETRIES - 1:
                    break
                _FREE.wait(LOCK_WAIT)  # a writer is at work: let it have the file first
            alias = f"ragslice_{next(_ALIASES)}"  # identifiers from a counter only
            deadline = time.monotonic() + WRITER_WAIT
            for attempt in itertools.count():
                try:
                    _MEMORY.execute(f"ATTACH ? AS {alias} (READ_ONLY)", [path])
                    break
                except duckdb.IOException as error:
                    if not while_written(Path(path), attempt, error, deadline):
                        raise
                    _FREE.wait(LOCK_WAIT)
            _ATTACHED[path] = _Attachment(alias, sig, 0)
        attachment = _ATTACHED[path]
        attachment.users += 1
        cursor = _MEMORY.cursor()
    try:
        cursor.execute(f"USE {attachment.alias}")
    except BaseException:
        cursor.close()
        _release(path)
        raise
    return cursor


def _release(path: str) -> None:
    with _FREE:
        attachment = _ATTACHED[path]
        attachment.users -= 1
        if attachment.users == 0:
            attachment.idle += 1
            if writer_waiting(path):
                _detach(path)
                return
            timer = threading.Timer(LINGER, _expire, args=(path, attachment, attachment.idle))
            timer.daemon = True
            _TIMERS[path] = timer
            timer.start()


@atexit.register
def _close_at_exit() -> None:
    """Cancel the linger timers and close the in-memory instance before the interpreter finalizes: a
    daemon timer still detaching a file then would abort the process."""
    global _MEMORY
    with _FREE:
        for timer in _TIMERS.values():
            timer.cancel()
        _TIMERS.clear()
        _ATTACHED.clear()
        if _MEMORY is not None:
            _MEMORY.close()
            _MEMORY = None


def _expire(path: str, attachment: _Attachment, idle: int) -> None:
    """Detach `attachment` if it is still the one of `path` and has stayed idle since spell `idle`."""
    with _FREE:
        if _ATTACHED.get(path) is attachment and attachment.users == 0 and attachment.idle == idle:
            _detach(path)


class Database:
    """One ragslice database file, opened only through here (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def signature(self) -> Signature:
        return signature(self.path)

    @contextmanager
    def reading(self, sig: Signature | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on the file, attached read-only and shared by the process's readers (`_reading`);
        read errors of a missing or foreign file become DatabaseMissing."""
        try:
            with _reading(str(self.path), sig or self.signature()) as cursor:
                yield cursor
        except READ_ERRORS as error:
            raise DatabaseMissing(f"{self.path} is not a readable ragslice database ({error})") from error

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A read-only connection of its own; a missing file is a clear error, not an empty database, and
        a file of another schema version is refused naming the command that rebuilds it."""
        con = connect_readonly(self.path)
        try:
            problem = outdated(con, self.path)
        except duckdb.Error:
            problem = None  # not a ragslice database: the reader's own error says so
        if problem is not None:
            con.close()
            raise invalid(problem, "db", str(self.path))
        return con

    @contextmanager
    def command(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """`connect` for a command's one read: closed after it, and a DuckDB error while reading becomes
        a ValidationError naming the file (the command exits 2), never a traceback."""
        con = self.connect()
        try:
            yield con
        except duckdb.Error as error:
            raise invalid(f"cannot read the database: {error}", "db", str(self.path)) from None
        finally:
            con.close()

    @contextmanager
    def scratch(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A private in-memory connection with the file attached read-only as `stored` (and used): room
        for temporary tables over the stored ones (re-scoring, what-if), nothing written to the file."""
        if not self.path.exists():
            raise DatabaseMissing(f"no database at {self.path}")
        con = duckdb.connect()
        try:
            con.execute("ATTACH ? AS stored (READ_ONLY)", [str(self.path)])
            con.execute("USE stored")
            yield con
        finally:
            con.close()

    def writer_waiting(self) -> bool:
        return writer_waiting(str(self.path))

    def schema_version(self) -> str | None:
        """The schema version the file was written with (None: no file, or no version recorded)."""
        if not self.path.exists():
            return None
        with connect_readonly(self.path) as con:
            if "meta" not in table_names(con):
                return None
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return None if row is None else row[0]

    @contextmanager
    def appending(self, *, wait_seconds: float = 5.0, what: str = "write") -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection to the live file under the writer lock, for a short append outside a
        refresh (a verdict); retried for `wait_seconds` while another connection holds the file."""
        with writer_lock(self.path, timeout=30.0):
            con = connect_for_write(self.path, wait_seconds=wait_seconds, what=what)
            try:
                yield con
            finally:
                con.close()


def connect_for_write(db: Path, *, wait_seconds: float, what: str = "write",
                      config: dict[str, str] | None = None) -> duckdb.DuckDBPyConnection:
    """A read-write connection to the live file, retried for `wait_seconds` while another connection
    holds it (call under `writer_lock`)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return duckdb.connect(str(db), config=config or {})
        except (duckdb.IOException, duckdb.ConnectionException) as error:
            held = "lock" in str(error).lower() or "different configuration" in str(error).lower()
            if not held or time.monotonic() >= deadline:
                raise invalid(f"cannot {what}: the database is held open by another connection "
                              f"({str(error).splitlines()[0][:160]}); close it and run the comparison again",
                              "db", str(db)) from None
            time.sleep(0.1)

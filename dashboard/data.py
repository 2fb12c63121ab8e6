"""The dashboard's one door to the database: read-only reads, bound parameters, cached results.

`ragslice refresh` replaces the database file atomically (write a new file, then rename) and
`ragslice compare` writes verdicts into it, so the dashboard never holds the file for long: one
in-memory DuckDB instance per process attaches it read-only for batches of reads, keeps it
`LINGER` seconds after the last batch (the next read of the same page reuses it: attaching costs
milliseconds) and lets go at once when a writer waits for it. Results are cached on (what was read,
file signature); the signature is the file's inode, size and modification time, so the first
rerun after a refresh reads the new file.

Two caches: small tables in `st.cache_data` (each caller gets a copy), and what many figures of a
page share in `st.cache_resource` (one shared copy, never modified): the catalog (meta, suites,
runs, table names), the questions' slice columns, and the per-question scores of a comparison's two
sides (`scoring.decide.comparison.read_side_scores`: no text, latency or cost), from which the headline, the
per-question deltas, the slices, the aggregation choices and the statistics are all computed: a
page reads them once. Question IDs, text and tags are read for the rows shown only. Summary tables
(`scoring.store.summaries`) are read when the database has them; without them the same figures come from
the scored tables, more slowly.

Rules: every value is a bound parameter; the only identifiers spliced into SQL are metric columns
from the registry (`scoring.metrics.REGISTRY`), slice columns from `SLICE_COLUMNS` and table names
from fixed lists. Definitions (names, denominators, n/a rules, direction) live in the registry; this
module only aggregates.
"""
from __future__ import annotations

import atexit
import fcntl
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
import numpy as np
import pandas as pd
import streamlit as st

from scoring.decide import comparison as scoring_compare
from scoring.metrics import BY_KEY, REGISTRY
from scoring.store.schema import SCHEMA_VERSION
from scoring.metrics import slices
from scoring.store.summaries import RUN_TOTAL_COLUMNS, run_totals_sql

DB_ENV = "RAGSLICE_DB"
POLICY_ENV = "RAGSLICE_POLICY"
DEFAULT_DB = "ragslice.duckdb"
METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY)
HIGHER_IS_BETTER: list[str] = [m.key for m in REGISTRY if m.higher_is_better]
UNCHANGED_TOLERANCE = 1e-9
"""Deltas within this distance of 0 count as unchanged (float noise from averaging repeats)."""

SLICE_COLUMNS: tuple[str, ...] = slices.PARTITIONS
"""The slice families `aggregates` reads (`scoring.metrics.slices`: those that partition the suite)."""

STATUSES: tuple[str, ...] = ("regressed", "improved", "unchanged", "n/a", "missing", "failed")
WORSE: tuple[str, ...] = ("regressed", "missing", "failed")
"""Statuses a question can score worse with: a missing or failed record scores as a failure."""
DELTA_ROWS = 1_000
"""`question_deltas` returns at most this many questions (in the chosen order) unless told otherwise."""
QUESTION_CHOICES = 200
"""`question_choices` lists at most this many questions."""


class DatabaseMissing(RuntimeError):
    """The database file does not exist or is not a ragslice database."""


# -- the database file ---------------------------------------------------------------------------


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


def signature(path: Path) -> tuple[int, int, int]:
    """(inode, size, mtime_ns): changes whenever a refresh replaces the file."""
    try:
        st_ = path.stat()
    except FileNotFoundError as error:
        raise DatabaseMissing(f"no database at {path}") from error
    return (st_.st_ino, st_.st_size, st_.st_mtime_ns)


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
    from scoring.store.database import _lock_path  # the one definition of the lock file's name

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
            for attempt in range(LOCK_RETRIES):
                try:
                    _MEMORY.execute(f"ATTACH ? AS {alias} (READ_ONLY)", [path])
                    break
                except duckdb.IOException as error:
                    if "lock" not in str(error).lower() or attempt == LOCK_RETRIES - 1:
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


Statement = tuple[str, Any]
"""(SQL, bound parameters): a list or a dict of `$name` values."""


@st.cache_data(show_spinner=False, max_entries=512)
def _cached(path: str, sig: tuple[int, int, int], statements: tuple[Statement, ...]) -> list[pd.DataFrame]:
    with _reading(path, sig) as con:
        return [con.execute(sql, params).df() for sql, params in statements]


def query_many(*statements: Statement) -> list[pd.DataFrame]:
    """Run read-only queries with bound parameters in one batch; the results are cached together
    until the file changes."""
    path = db_path()
    sig = signature(path)
    try:
        return _cached(str(path), sig, tuple(statements))
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error


def query(sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> pd.DataFrame:
    """Run one read-only query with bound parameters; cached until the file changes."""
    return query_many((sql, params))[0]


def _query_uncached(sql: str, params: Sequence[Any]) -> pd.DataFrame:
    """`query` without the cache, for reads keyed on long lists (hashing them would cost more than
    the read) whose callers cache the result."""
    path = db_path()
    try:
        with _reading(str(path), signature(path)) as con:
            return con.execute(sql, params).df()
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error


CATALOG = (
    ("SELECT key, value FROM meta", []),
    ("SELECT * FROM suites ORDER BY suite", []),
    ("SELECT * FROM runs ORDER BY created_at, run_id", []),
    ("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()", []),
)


@st.cache_resource(show_spinner=False, max_entries=8)
def _catalog_of(path: str, sig: tuple[int, int, int]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame,
                                                                 frozenset[str]]:
    """`_catalog` of one file, shared (never modified: the functions that return a part copy it)."""
    with _reading(path, sig) as con:
        meta_rows, suite_rows, run_rows, tables = (con.execute(sql, params).df() for sql, params in CATALOG)
    return meta_rows, suite_rows, run_rows, frozenset(tables["table_name"])


def _catalog() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, frozenset[str]]:
    """meta, suites, runs and the table names: what every page needs, read in one batch (one shared
    copy: every page asks for them several times)."""
    path = db_path()
    sig = signature(path)
    try:
        return _catalog_of(str(path), sig)
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error


def _has(table: str) -> bool:
    return table in _catalog()[3]


def meta() -> dict[str, str]:
    """The `meta` table as a dict; raises DatabaseMissing when the file is absent or foreign."""
    rows = _catalog()[0]
    return dict(zip(rows["key"], rows["value"]))


def schema_problem() -> str | None:
    """A sentence when the database was written by a different schema version, else None."""
    version = meta().get("schema_version")
    if version != str(SCHEMA_VERSION):
        return (
            f"The database has schema version {version}; this dashboard reads version {SCHEMA_VERSION}. "
            "Run `ragslice refresh` again with this version of ragslice."
        )
    return None


# -- suites, runs and the two sides of a comparison ----------------------------------------------


def suites() -> pd.DataFrame:
    return _catalog()[1].copy()


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a single run, or a group of repeats (values are means over its runs)."""

    name: str
    kind: Literal["run", "group"]
    run_ids: tuple[str, ...]

    @property
    def label(self) -> str:
        if self.kind == "run":
            return self.name
        return f"{self.name} (group: mean over {len(self.run_ids)} repeats)"


def runs(suite: str | None = None) -> pd.DataFrame:
    """Runs (manifest columns and record counts), oldest first."""
    table = _catalog()[2]
    if suite is None:
        return table.copy()
    return table[table["suite"] == suite].reset_index(drop=True)


def sides(suite: str) -> list[Side]:
    """Every run of the suite, then every group of repeats (a name shared by a run and a group
    refers to the run)."""
    table = runs(suite)
    out = [Side(r, "run", (r,)) for r in table["run_id"]]
    taken = set(table["run_id"])
    grouped = table[table["run_group"].notna()].sort_values(["run_group", "repeat", "run_id"], na_position="last")
    for group, members in grouped.groupby("run_group", sort=True):
        if group not in taken:
            out.append(Side(str(group), "group", tuple(members["run_id"])))
    return out


def _metric(key: str) -> str:
    """Allow-list check: a metric identifier may reach SQL only if the registry declares it."""
    if key not in BY_KEY:
        raise ValueError(f"unknown metric {key!r}")
    return key


# -- the two sides' per-question scores ----------------------------------------------------------

_HIGHER = np.array([m.higher_is_better for m in REGISTRY])


@dataclass(frozen=True)
class _Pair:
    """Both sides of a comparison over every question of the suite, in suite order (row i: the i-th
    question of `_questions`).

    `metrics`: the metrics held; `scores`: what was read (`scoring.decide.comparison.SideScores`): per side (0
    baseline, 1 candidate) the per-question mean over its runs of each metric held and, for the
    whole pair, of every pooling count (NaN: n/a, or no row), and whether the side has a row;
    `missing`, `failed`: either side has no record / a failed record for the question (no row at all
    counts as missing); `records`: the questions and score rows `scoring.decide.comparison.read_scores` read
    when every record's detail was read (a group of repeats, or a live policy: the statistics need
    them), else None. Derived arrays are computed on first use and kept."""

    metrics: tuple[str, ...]
    scores: scoring_compare.SideScores
    missing: np.ndarray
    failed: np.ndarray
    records: tuple[pd.DataFrame, Any] | None
    _derived: dict[Any, Any]

    def side(self, side: int, metric: str) -> np.ndarray:
        """Side `side`'s per-question values of `metric`."""
        return self.scores.columns[side][metric]

    @property
    def present(self) -> tuple[np.ndarray, np.ndarray]:
        return self.scores.present

    def codes(self, metric: str) -> np.ndarray:
        """Per question, the status on `metric` as an index into `STATUSES` (see `_statuses`)."""
        if ("codes", metric) not in self._derived:
            if "record" not in self._derived:  # the same for every metric
                self._derived["record"] = _record_codes(self.missing, self.failed)
            self._derived["codes", metric] = _status_codes(self.side(0, metric), self.side(1, metric),
                                                           self._derived["record"], BY_KEY[metric].higher_is_better)
        return self._derived["codes", metric]


def _record_codes(missing: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """Per question, the code into `STATUSES` of a missing (first) or failed record; -1: neither."""
    return np.where(missing, np.int8(STATUSES.index("missing")), np.where(
        failed, np.int8(STATUSES.index("failed")), np.int8(-1))).astype(np.int8)


def _status_codes(b: np.ndarray, c: np.ndarray, record: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """`_statuses` of one metric: per question a code into `STATUSES`; `record`: per question the
    code of missing or failed when its record is, else -1."""
    with np.errstate(invalid="ignore"):
        gain = c - b if higher_is_better else b - c
    up, down = (gain > UNCHANGED_TOLERANCE).view(np.int8), (gain < -UNCHANGED_TOLERANCE).view(np.int8)
    codes = np.int8(STATUSES.index("unchanged")) - up - np.int8(2) * down  # improved 1, regressed 0, unchanged 2
    np.copyto(codes, np.int8(STATUSES.index("n/a")), where=np.isnan(b) | np.isnan(c))
    np.copyto(codes, record, where=record >= 0)
    return codes


def _statuses(b: np.ndarray, c: np.ndarray, missing: np.ndarray, failed: np.ndarray,
              higher: np.ndarray = _HIGHER) -> np.ndarray:
    """Status codes (index into `STATUSES`), questions x metrics, first match wins: missing > failed
    > n/a (a value is NaN) > improved / regressed (candidate - baseline with / against the metric's
    direction `higher`, beyond UNCHANGED_TOLERANCE) > unchanged. `missing`, `failed`: questions x 1."""
    record = _record_codes(missing[:, 0], failed[:, 0])
    return np.column_stack([_status_codes(b[:, j], c[:, j], record, bool(higher[j])) for j in range(b.shape[1])]
                           ) if b.shape[1] else np.zeros(b.shape, dtype=np.int8)


@st.cache_resource(show_spinner=False, max_entries=8)
def _questions(path: str, sig: tuple[int, int, int], suite: str) -> pd.DataFrame:
    """The suite's questions in suite order with their slice columns only: position, type, split,
    critical, answerable (`scoring.decide.comparison.read_slice_columns`; IDs, text and tags are read for the
    rows shown, `_details`), shared."""
    with _reading(path, sig) as con:
        return scoring_compare.read_slice_columns(con, suite)


@st.cache_resource(show_spinner=False, max_entries=4)
def _full_questions(path: str, sig: tuple[int, int, int], suite: str) -> pd.DataFrame:
    """The suite's questions without their text (`scoring.decide.comparison.read_questions`), shared: what a
    comparison with every record's detail needs."""
    with _reading(path, sig) as con:
        return scoring_compare.read_questions(con, suite, with_text=False)


@st.cache_resource(show_spinner=False, max_entries=8)
def _positions(path: str, sig: tuple[int, int, int], suite: str) -> np.ndarray:
    """The positions of the suite's questions in suite order (row i of `_questions`): 0 .. n - 1
    when they are that (one aggregate read), else read."""
    with _reading(path, sig) as con:
        low, high, size = con.execute("SELECT min(position), max(position), count(*) FROM questions WHERE suite = ?",
                                      [suite]).fetchall()[0]
        if not size or (low, high) == (0, size - 1):  # a suite's positions are its questions' order in its file
            return np.arange(size, dtype=np.int64)
        found = con.execute("SELECT position FROM questions WHERE suite = ? ORDER BY position", [suite]).fetchnumpy()
    return np.asarray(found["position"], dtype=np.int64)


def _needs_records(base: Sequence[str], cand: Sequence[str]) -> bool:
    """Whether the statistics of these sides need every record's detail: a group of repeats (its
    flaky questions) or a live policy (its gates)."""
    return len(base) > 1 or len(cand) > 1 or policy_path() is not None


@st.cache_resource(show_spinner=False, max_entries=6)
def _pair(path: str, sig: tuple[int, int, int], suite: str, base: tuple[str, ...], cand: tuple[str, ...],
          columns: tuple[str, ...] = scoring_compare.SCORE_COLUMNS, records: bool = False) -> _Pair:
    """`columns` (metrics, and pooling counts) of both sides (`scoring.decide.comparison.read_side_scores`: a
    float per column, question and side, about 300 bytes per question for every column); with
    `records`, every record's detail instead (`scoring.decide.comparison.read_scores`, kept for the statistics)."""
    positions = _positions(path, sig, suite)
    kept = None
    with _reading(path, sig) as con:
        if records:
            kept = scoring_compare.read_scores(con, suite, base, cand, questions=_full_questions(path, sig, suite))
            scores = scoring_compare.side_scores(kept[1], base, cand, positions)
        else:
            scores = scoring_compare.read_side_scores(con, suite, base, cand, positions, columns)
    metrics = tuple(c for c in columns if c in BY_KEY)
    missing = scores.missing[0] | scores.missing[1] | ~scores.present[0] | ~scores.present[1]
    return _Pair(metrics, scores, missing, scores.failed[0] | scores.failed[1], kept, {})


def _pair_of(suite: str, base: Side, cand: Side, metrics: Sequence[str] | None = None) -> _Pair:
    """Every metric and pooling count of both sides (with every record's detail when the statistics
    will need it, `_needs_records`), or only `metrics`."""
    path = db_path()
    sig = signature(path)
    b, c = tuple(base.run_ids), tuple(cand.run_ids)
    try:
        if metrics is not None:
            return _pair(str(path), sig, suite, b, c, tuple(_metric(m) for m in metrics))
        return _pair(str(path), sig, suite, b, c, scoring_compare.SCORE_COLUMNS, _needs_records(b, c))
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error


def _questions_of(suite: str) -> pd.DataFrame:
    """The suite's questions' slice columns, in suite order (shared; see `_questions`)."""
    path = db_path()
    try:
        return _questions(str(path), signature(path), suite)
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error


# -- per-question deltas -------------------------------------------------------------------------

DELTA_COLUMNS = ("question_id", "position", "text", "type", "split", "critical", "tags", "answerable", "disputed",
                 "baseline", "candidate", "delta", "status")
ORDERS = ("worst first", "best first", "suite order")


@dataclass(frozen=True)
class Deltas:
    """`rows`: at most `limit` questions (`DELTA_COLUMNS`) in the chosen order; `matched`: the
    questions the filters keep; `total`: the suite's questions."""

    rows: pd.DataFrame
    matched: int
    total: int


def question_facets(suite: str) -> tuple[list[str], list[str], list[str]]:
    """The suite's question types, splits and tags, each sorted: the choices of the deltas filters."""
    q = _questions_of(suite)  # its categories are the distinct types and splits, sorted; shared with the deltas
    tags = query("SELECT DISTINCT unnest(tags) AS tag FROM questions WHERE suite = ? ORDER BY tag", [suite])
    return [str(t) for t in q["type"].cat.categories], [str(t) for t in q["split"].cat.categories], list(tags["tag"])


def _matching(suite: str, search: str) -> np.ndarray:
    """Positions of the questions whose ID or text contains `search`, case-insensitively."""
    needle = search.lower()
    found = query("SELECT position FROM questions WHERE suite = ? AND (contains(lower(question_id), ?) "
                  "OR contains(lower(text), ?))", [suite, needle, needle])
    return found["position"].to_numpy(dtype=np.int64)


def _details(suite: str, positions: np.ndarray) -> dict[int, tuple[str, str, list[str], str | None]]:
    """(question_id, text, tags, disputed) of the questions at these positions, by position (joined
    to the list of positions: the join's filter on the scan reads text and tags of those rows only;
    an `IN (...)` list of the same positions took twice as long on 200,000 questions)."""
    if not len(positions):
        return {}
    wanted = [int(p) for p in positions]
    columns = "q.position, q.question_id, q.text, q.tags, q.disputed"
    found = _query_uncached(f"SELECT {columns} FROM questions q JOIN (SELECT unnest(?::INTEGER[]) AS position) p "
                            "ON p.position = q.position WHERE q.suite = ?", [wanted, suite])
    return {int(p): (str(i), t, [str(x) for x in (tags if tags is not None else [])], None if pd.isna(d) else str(d))
            for p, i, t, tags, d in zip(found["position"], found["question_id"], found["text"], found["tags"],
                                         found["disputed"])}


def _delta_rows(suite: str, q: pd.DataFrame, pair: _Pair, metric: str, at: np.ndarray) -> pd.DataFrame:
    """`DELTA_COLUMNS` for the questions `q` at slots `at` (in that order) on `metric`."""
    shown = q.take(at)  # the few rows first: IDs, text and tags are read for them only
    positions = shown["position"].to_numpy()
    details = _details(suite, positions)
    found = [details.get(int(p), (None, None, [], None)) for p in positions]
    b, c = pair.side(0, metric).take(at), pair.side(1, metric).take(at)
    frame = pd.DataFrame({
        "question_id": np.array([f[0] for f in found], dtype=object),
        "position": positions,
        "text": [f[1] for f in found],
        "type": shown["type"].to_numpy(dtype=object),
        "split": shown["split"].to_numpy(dtype=object),
        "critical": shown["critical"].to_numpy(dtype=bool),
        "tags": [f[2] for f in found],
        "answerable": shown["answerable"].to_numpy(dtype=bool),
        "disputed": np.array([f[3] for f in found], dtype=object),
        "baseline": b,
        "candidate": c,
        "delta": c - b,
        "status": np.array(STATUSES, dtype=object).take(pair.codes(metric).take(at)),
    })
    return frame[list(DELTA_COLUMNS)]


def _slots(q: pd.DataFrame, positions: np.ndarray) -> np.ndarray:
    """Which questions of `q` (suite order) are at these positions, as a boolean per question."""
    found = scoring_compare.position_slots(q["position"].to_numpy(), positions)
    hit = np.zeros(len(q), dtype=bool)
    hit[found[found >= 0]] = True
    return hit


def _kept(suite: str, q: pd.DataFrame, pair: _Pair, metric: str, *, types: Sequence[str], answerable: bool | None,
          splits: Sequence[str],
          critical: bool | None, tags: Sequence[str], statuses: Sequence[str], search: str,
          picked: Sequence[str]) -> np.ndarray:
    keep = np.ones(len(q), dtype=bool)
    if types:
        keep &= q["type"].isin(list(types)).to_numpy()
    if answerable is not None:
        keep &= q["answerable"].to_numpy() == answerable
    if splits:
        keep &= q["split"].isin(list(splits)).to_numpy()
    if critical is not None:
        keep &= q["critical"].to_numpy() == critical
    if tags:
        found = query("SELECT position FROM questions WHERE suite = ? AND list_has_any(tags, ?::VARCHAR[])",
                      [suite, sorted(set(tags))])
        keep &= _slots(q, found["position"].to_numpy(dtype=np.int64))
    if statuses:
        keep &= np.isin(pair.codes(metric), [STATUSES.index(s) for s in statuses if s in STATUSES])
    if search:
        keep &= _slots(q, _matching(suite, search))
    if picked:
        found = query("SELECT position FROM questions WHERE suite = ? AND list_contains(?::VARCHAR[], question_id)",
                      [suite, sorted(set(map(str, picked)))])
        keep &= _slots(q, found["position"].to_numpy(dtype=np.int64))
    return np.flatnonzero(keep)


def question_deltas(
    suite: str, base: Side, cand: Side, metric: str, *, types: Sequence[str] = (), answerable: bool | None = None,
    splits: Sequence[str] = (), critical: bool | None = None, tags: Sequence[str] = (),
    statuses: Sequence[str] = (), search: str = "", picked: Sequence[str] = (), order: str = "worst first",
    limit: int | None = DELTA_ROWS,
) -> Deltas:
    """The suite's questions with the baseline and candidate value of `metric` (for a group: the
    mean over its repeats), delta = candidate - baseline and a status (see `_statuses`), filtered:
    question type in `types`, `answerable`, split in `splits`, `critical`, any tag in `tags`, status
    in `statuses`, ID or text containing `search` (case-insensitive), ID in `picked` (empty or None:
    no filter). `order`: worst first / best first (delta against / with the registry's direction,
    n/a last, then suite order) or suite order. At most `limit` rows (None: all)."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}")
    pair = _pair_of(suite, base, cand, (_metric(metric),))
    q = _questions_of(suite)
    at = _kept(suite, q, pair, metric, types=types, answerable=answerable, splits=splits, critical=critical, tags=tags,
               statuses=statuses, search=search, picked=picked)
    if order != "suite order":
        with np.errstate(invalid="ignore"):
            gain = (pair.side(1, metric) - pair.side(0, metric)).take(at) * (1.0 if BY_KEY[metric].higher_is_better
                                                                            else -1.0)
        key = gain if order == "worst first" else -gain
        shown = at.take(_first(np.where(np.isnan(key), np.inf, key), at, limit))
    else:
        shown = at if limit is None else at[:limit]
    return Deltas(_delta_rows(suite, q, pair, metric, shown), len(at), len(q))


def _first(key: np.ndarray, tie: np.ndarray, limit: int | None) -> np.ndarray:
    """Indexes of the `limit` smallest `key`s (None: all), ordered by key, then `tie`: the head of
    `np.lexsort((tie, key))`, sorting only the entries that can be in it."""
    if limit is None or limit >= len(key):
        return np.lexsort((tie, key))
    if limit <= 0:
        return np.zeros(0, dtype=np.int64)
    bound = np.partition(key, limit - 1)[limit - 1]
    within = np.flatnonzero(key <= bound)  # every entry of the head, and the ties at its bound
    return within.take(np.lexsort((tie.take(within), key.take(within))))[:limit]


def deltas_csv(suite: str, base: Side, cand: Side, metric: str, **filters: Any) -> Callable[[], bytes]:
    """A function that returns every question `question_deltas(..., **filters)` keeps (no limit) as
    CSV: question_id, type, baseline, candidate, delta, status, critical, split, tags (joined with
    ';'), text. Nothing is read until it is called (a deferred download)."""
    filters = {k: v for k, v in filters.items() if k != "limit"}

    def build() -> bytes:
        rows = question_deltas(suite, base, cand, metric, limit=None, **filters).rows
        view = rows[["question_id", "type", "baseline", "candidate", "delta", "status", "critical", "split", "tags",
                     "text"]]
        view = view.assign(tags=view["tags"].map(lambda ts: ";".join(ts if ts is not None else [])))
        return view.to_csv(index=False).encode("utf-8")

    return build


def worst_regressions(suite: str, base: Side, cand: Side, metric: str, limit: int = 10) -> Deltas:
    """The questions that scored worse on `metric` (status regressed, or missing / failed with a
    lower value), critical ones first, then by size of the drop, then suite order; at most `limit`
    (`matched`: all of them)."""
    pair = _pair_of(suite, base, cand)  # the whole pair: the release review reads it for the statistics too
    q = _questions_of(suite)
    with np.errstate(invalid="ignore"):
        gain = (pair.side(1, _metric(metric)) - pair.side(0, metric)) * (1.0 if BY_KEY[metric].higher_is_better
                                                                         else -1.0)
    worse = np.isin(pair.codes(metric), [STATUSES.index(s) for s in WORSE]) & (gain < -UNCHANGED_TOLERANCE)
    at = np.flatnonzero(worse)
    critical = q["critical"].to_numpy(dtype=bool).take(at)
    at = at.take(np.lexsort((at, gain.take(at), ~critical)))
    return Deltas(_delta_rows(suite, q, pair, metric, at[:limit]), len(at), len(q))


def headline(suite: str, base: Side, cand: Side, metrics: Sequence[str] = METRIC_KEYS) -> pd.DataFrame:
    """One row per metric of `metrics` (registry order; default every metric): macro mean over scored
    questions per side and its delta; scored n and n/a count per side; the number of questions per
    status (see `question_deltas`)."""
    wanted = [k for k in METRIC_KEYS if k in {_metric(m) for m in metrics}]
    pair = _pair_of(suite, base, cand)
    size = len(pair.missing)
    rows = []
    for key in wanted:
        b, c = pair.side(0, key), pair.side(1, key)
        scored_b, scored_c = ~np.isnan(b), ~np.isnan(c)
        nb, nc = int(np.count_nonzero(scored_b)), int(np.count_nonzero(scored_c))
        mb = float(np.nansum(b)) / nb if nb else np.nan
        mc = float(np.nansum(c)) / nc if nc else np.nan
        codes = pair.codes(key)
        rows.append({"metric": key, "baseline": mb, "candidate": mc, "delta": mc - mb,
                     "n_baseline": nb, "n_candidate": nc, "na_baseline": size - nb, "na_candidate": size - nc,
                     **{s: int(np.count_nonzero(codes == i_)) for i_, s in enumerate(STATUSES)}})
    return pd.DataFrame(rows, columns=["metric", "baseline", "candidate", "delta", "n_baseline", "n_candidate",
                                       "na_baseline", "na_candidate", *STATUSES])


def question_pair(suite: str, base: Side, cand: Side, question_id: str) -> pd.DataFrame:
    """One row per registry metric for one question: baseline, candidate (means over repeats for a
    group), delta and status, as in `question_deltas`."""
    found = question(suite, question_id)
    metrics = ", ".join(f"CAST(s.{_metric(k)} AS DOUBLE) AS {k}" for k in METRIC_KEYS)
    if found is not None and _has("scores_by_position"):
        where, key = "s.position = $key", int(found["position"])
        source = "scores_by_position s"
    else:
        where, key, source = "s.question_id = $key", question_id, "question_scores s"
    rows = query(f"SELECT s.run_id, s.missing, s.failed, {metrics} FROM {source} "
                 f"WHERE s.suite = $suite AND {where} AND list_contains($runs, s.run_id)",
                 {"suite": suite, "key": key, "runs": [*base.run_ids, *cand.run_ids]})
    values, missing, failed = [], False, False
    for side in (base, cand):
        own = rows[rows["run_id"].isin(list(side.run_ids))]
        values.append(own[list(METRIC_KEYS)].astype(float).mean(axis=0, skipna=True).to_numpy()[None, :]
                      if len(own) else np.full((1, len(METRIC_KEYS)), np.nan))
        missing |= bool(own["missing"].any()) or own.empty
        failed |= bool(own["failed"].any())
    if found is None:  # not a question of the suite
        return pd.DataFrame(columns=["metric", "baseline", "candidate", "delta", "status"])
    codes = _statuses(values[0], values[1], np.array([[missing]]), np.array([[failed]]))[0]
    b, c = values[0][0], values[1][0]
    return pd.DataFrame({"metric": list(METRIC_KEYS), "baseline": b, "candidate": c, "delta": c - b,
                         "status": [STATUSES[i] for i in codes]})


# -- aggregates by slice ---------------------------------------------------------------------------


def aggregate(suite: str, base: Side, cand: Side, by: str) -> pd.DataFrame:
    """Per slice of family `by` (a SLICE_COLUMNS key) and metric, both sides side by side
    (prefix `b_` baseline, `c_` candidate):

    - `questions`: questions in the slice;
    - `*_macro` = `*_sum` / `*_n`: mean over the questions scored (NULLs skipped), `*_na` excluded;
    - `*_num`, `*_den`, `*_pooled`: the registry's pooled numerator and denominator summed over the
      scored questions, and their ratio (NULL where the registry says pooling equals the macro mean,
      or the denominator is 0);
    - `delta_macro`, `delta_pooled`: candidate - baseline.

    For a group of repeats every count is first averaged per question over the repeats."""
    return aggregates(suite, base, cand, (by,))[by]


def aggregates(suite: str, base: Side, cand: Side, families: Sequence[str]) -> dict[str, pd.DataFrame]:
    """`aggregate` for several slice families, from one read of the two sides' scores."""
    families = tuple(dict.fromkeys(families))
    for by in families:
        if by not in SLICE_COLUMNS:
            raise ValueError(f"unknown slice family {by!r}")
    if len(base.run_ids) == 1 and len(cand.run_ids) == 1 and _has("slice_sums"):
        return _stored_aggregates(base.run_ids[0], cand.run_ids[0], families)
    pair = _pair_of(suite, base, cand)
    q = _questions_of(suite)
    # one pass over the questions: sums per cell (a combination of every family's slice), then per slice
    codes = {by: slices.codes(q, by) for by in families}
    joint = np.zeros(len(q), dtype=np.int64)
    for by in families:
        joint = joint * max(1, len(codes[by][1])) + codes[by][0]
    cell_ids = np.flatnonzero(np.bincount(joint)) if len(joint) else np.zeros(0, dtype=np.int64)
    lookup = np.full(int(cell_ids[-1]) + 1 if len(cell_ids) else 0, -1, dtype=np.int64)
    lookup[cell_ids] = np.arange(len(cell_ids))
    cell = lookup.take(joint)
    n_cells = len(cell_ids)
    cell_of = {by: np.zeros(n_cells, dtype=np.int64) for by in families}
    for by in families:
        cell_of[by][cell] = codes[by][0]
    sums: dict[tuple[int, str], np.ndarray] = {}
    for side in (0, 1):
        present = pair.present[side]
        sums[side, "questions"] = np.bincount(cell, weights=present, minlength=n_cells)
        for m in REGISTRY:
            values = pair.side(side, m.key)
            scored = ~np.isnan(values)
            sums[side, f"{m.key}__n"] = np.bincount(cell, weights=scored, minlength=n_cells)
            sums[side, f"{m.key}__sum"] = np.bincount(cell, weights=np.where(scored, values, 0.0),
                                                      minlength=n_cells)
            if m.pooled:
                for part, column in zip(("num", "den"), m.pooled):
                    raw = pair.scores.columns[side][column]
                    sums[side, f"{m.key}__{part}"] = np.bincount(
                        cell, weights=np.where(scored, np.nan_to_num(raw), 0.0), minlength=n_cells)
                    sums[side, f"{m.key}__{part}_n"] = np.bincount(
                        cell, weights=scored & ~np.isnan(raw), minlength=n_cells)
    return {by: _side_by_side(by, codes[by][1], cell_of[by], sums) for by in families}


def _stored_aggregates(base: str, cand: str, families: Sequence[str]) -> dict[str, pd.DataFrame]:
    """`aggregates` of two single runs, from the per-run sums of `slice_sums` (no per-question read)."""
    stored = query("SELECT * FROM slice_sums WHERE run_id IN (?, ?) AND list_contains(?, family)",
                   [base, cand, list(families)])
    out = {}
    for by in families:
        rows = stored[stored["family"] == by]
        names = np.array(sorted(set(rows["slice"].astype(str))), dtype=object)
        sums: dict[tuple[int, str], np.ndarray] = {}
        numbers = [c for c in stored.columns if c not in ("run_id", "family", "slice")]
        at = {c: i for i, c in enumerate(numbers)}
        for side, run_id in ((0, base), (1, cand)):
            own = rows[rows["run_id"] == run_id].set_index("slice").reindex(names)
            table = own[numbers].to_numpy(dtype=float, na_value=np.nan)  # slices x columns, NaN: NULL or absent
            sums[side, "questions"] = np.nan_to_num(table[:, at["questions"]])
            for m in REGISTRY:
                sums[side, f"{m.key}__n"] = np.nan_to_num(table[:, at[f"{m.key}__n"]])
                sums[side, f"{m.key}__sum"] = np.nan_to_num(table[:, at[f"{m.key}__sum"]])
                if m.pooled:
                    for part in ("num", "den"):
                        values = table[:, at[f"{m.key}__{part}"]]
                        sums[side, f"{m.key}__{part}"] = np.nan_to_num(values)
                        sums[side, f"{m.key}__{part}_n"] = (~np.isnan(values)).astype(float)
        out[by] = _side_by_side(by, names, np.arange(len(names)), sums)
    return out


def _side_by_side(by: str, names: np.ndarray, cell_of: np.ndarray, sums: dict[tuple[int, str], np.ndarray]
                  ) -> pd.DataFrame:
    """The `aggregate` table from sums per cell (`cell_of`: each cell's slice, an index into `names`)."""
    per_slice = {key: np.bincount(cell_of, weights=cells, minlength=len(names)) for key, cells in sums.items()}
    kept = np.flatnonzero((per_slice[0, "questions"] > 0) | (per_slice[1, "questions"] > 0))  # a row on a side
    size, width = len(kept), len(METRIC_KEYS)
    columns: dict[str, Any] = {"slice": np.repeat(names.take(kept).astype(str), width),
                               "metric": np.tile(np.array(METRIC_KEYS, dtype=object), size)}
    for side, prefix in ((0, "b_"), (1, "c_")):
        questions = np.repeat(per_slice[side, "questions"].take(kept), width)
        absent = questions == 0  # the side has no row in the slice: every figure None
        n = np.column_stack([per_slice[side, f"{k}__n"].take(kept) for k in METRIC_KEYS]).ravel() if size else \
            np.zeros(0)
        total = np.column_stack([per_slice[side, f"{k}__sum"].take(kept) for k in METRIC_KEYS]).ravel() if size \
            else np.zeros(0)
        num, den = np.full(size * width, np.nan), np.full(size * width, np.nan)
        for j, m in enumerate(REGISTRY):
            if m.pooled:
                for part, target in (("num", num), ("den", den)):
                    scored = per_slice[side, f"{m.key}__{part}_n"].take(kept) > 0
                    target[j::width] = np.where(scored, per_slice[side, f"{m.key}__{part}"].take(kept), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            macro = np.where(n > 0, total / np.maximum(n, 1), np.nan)
            pooled = np.where(~np.isnan(num) & ~np.isnan(den) & (den != 0), num / np.where(den != 0, den, 1), np.nan)
        columns[f"{prefix}questions"] = _ints(questions, absent)
        columns[f"{prefix}n"] = _ints(n, absent)
        columns[f"{prefix}na"] = _ints(questions - n, absent)
        columns[f"{prefix}sum"] = _floats_or_none(np.where(n > 0, total, np.nan), absent)
        columns[f"{prefix}macro"] = _floats_or_none(macro, absent)
        columns[f"{prefix}num"] = _floats_or_none(num, absent)
        columns[f"{prefix}den"] = _floats_or_none(den, absent)
        columns[f"{prefix}pooled"] = _floats_or_none(pooled, absent)
    out = pd.DataFrame(columns)
    out["questions"] = out[["b_questions", "c_questions"]].max(axis=1)
    out["delta_macro"] = pd.to_numeric(out["c_macro"]) - pd.to_numeric(out["b_macro"])
    out["delta_pooled"] = pd.to_numeric(out["c_pooled"]) - pd.to_numeric(out["b_pooled"])
    order = {k: i for i, k in enumerate(METRIC_KEYS)}
    return out.sort_values(["slice", "metric"], key=lambda s: s.map(order) if s.name == "metric" else s).reset_index(
        drop=True
    )


def _ints(values: np.ndarray, absent: np.ndarray) -> Any:
    """Whole numbers; None where `absent`."""
    counts = np.rint(values).astype(np.int64)
    if not absent.any():
        return counts
    return [None if a else int(v) for v, a in zip(counts.tolist(), absent.tolist())]


def _floats_or_none(values: np.ndarray, absent: np.ndarray) -> list[float | None]:
    """Floats, None for NaN and where `absent` (NULL in the table, as `aggregate` documents)."""
    return [None if a or v != v else float(v) for v, a in zip(values.tolist(), absent.tolist())]


def aggregation_choices(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Long table, one row per (metric, aggregation): macro over all questions, pooled, macro over
    answerable questions only, and macro per question type; each with baseline and candidate value,
    numerator, denominator, n/a excluded, and delta. `direction`: +1 improved, -1 worse, 0 unchanged
    or n/a, in the registry's direction. Per metric: `flip` (macro, pooled and answerable-only
    disagree on the direction) and `hidden` (questions that regressed while the macro mean over all
    questions improved); per type row: `against_macro` (the type moves against the overall macro)."""
    path = db_path()
    return _aggregation_choices(str(path), signature(path), suite, base, cand)


def _improves(row: dict[str, Any], higher_is_better: bool) -> bool:
    """Whether the macro mean over all questions moves in the metric's direction (beyond the tolerance)."""
    b, c = _number(row["b_macro"]), _number(row["c_macro"])
    return b is not None and c is not None and (c - b) * (1 if higher_is_better else -1) > UNCHANGED_TOLERANCE


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


@st.cache_data(show_spinner=False, max_entries=64)
def _aggregation_choices(path: str, sig: tuple[int, int, int], suite: str, base: Side, cand: Side) -> pd.DataFrame:
    del path, sig  # cache key only: the inputs below are read from this file
    frames = aggregates(suite, base, cand, ("all", "answerable", "type"))
    records = {by: frame.to_dict("records") for by, frame in frames.items()}
    overall = {r["metric"]: r for r in records["all"]}
    improving = [m.key for m in REGISTRY if _improves(overall[m.key], m.higher_is_better)]
    regressed: dict[str, int] = {}
    if improving:  # questions that regressed, needed only where the macro mean improves
        pair = _pair_of(suite, base, cand, improving)
        regressed = {k: int(np.count_nonzero(pair.codes(k) == STATUSES.index("regressed"))) for k in improving}
    rows: list[dict[str, Any]] = []
    for m in REGISTRY:
        sign = 1 if m.higher_is_better else -1
        mine = {by: [r for r in recs if r["metric"] == m.key] for by, recs in records.items()}
        overall = mine["all"][0]
        entries = [("macro", "all questions", overall, "macro", "sum", "n")]
        if m.pooled:
            entries.append(("pooled", "all questions", overall, "pooled", "num", "den"))
        entries += [("macro", "answerable only", r, "macro", "sum", "n") for r in mine["answerable"]
                    if r["slice"] == "answerable"]
        entries += [("macro", f"type: {r['slice']}", r, "macro", "sum", "n")
                    for r in sorted(mine["type"], key=lambda r: str(r["slice"]))]
        metric_rows = []
        for how, scope, r, value, num, den in entries:
            b, c = _number(r[f"b_{value}"]), _number(r[f"c_{value}"])
            delta = None if b is None or c is None else c - b
            direction = 0 if delta is None or abs(delta) <= UNCHANGED_TOLERANCE else (1 if delta * sign > 0 else -1)
            metric_rows.append({
                "metric": m.key, "aggregation": how, "scope": scope,
                "baseline": b, "b_numerator": _number(r[f"b_{num}"]), "b_denominator": _number(r[f"b_{den}"]),
                "b_na": int(r["b_na"]),
                "candidate": c, "c_numerator": _number(r[f"c_{num}"]), "c_denominator": _number(r[f"c_{den}"]),
                "c_na": int(r["c_na"]),
                "delta": delta, "direction": direction,
            })
        overall_moves = {r["direction"] for r in metric_rows
                         if r["scope"] in ("all questions", "answerable only") and r["direction"] != 0}
        macro = metric_rows[0]["direction"]
        for r in metric_rows:
            r["flip"] = len(overall_moves) > 1
            r["against_macro"] = r["scope"].startswith("type: ") and r["direction"] != 0 and r["direction"] == -macro
            r["hidden"] = int(regressed.get(m.key, 0)) if macro > 0 else 0
        rows += metric_rows
    return pd.DataFrame(rows)


# -- one question ----------------------------------------------------------------------------------


def question_choices(suite: str, search: str = "", limit: int = QUESTION_CHOICES) -> pd.DataFrame:
    """`question_id` and `text` of the first `limit` questions of the suite (suite order) whose ID or
    text contains `search`, case-insensitively (empty: every question)."""
    needle = search.lower()
    if not needle:  # the first positions (0 .. n - 1 in suite order): the scan skips the other row groups
        first = query("SELECT question_id, text FROM questions WHERE suite = ? AND position < ? ORDER BY position",
                      [suite, int(limit)])
        if len(first) == min(int(limit), int(suites().set_index("suite").loc[suite, "n_questions"])):
            return first
    return query("SELECT question_id, text FROM questions WHERE suite = ? AND (? = '' "
                 "OR contains(lower(question_id), ?) OR contains(lower(text), ?)) ORDER BY position LIMIT ?",
                 [suite, needle, needle, needle, int(limit)])


def question(suite: str, question_id: str) -> dict[str, Any] | None:
    """The question's row of `questions` as a dict; None when the suite has no such question."""
    rows = query("SELECT * FROM questions WHERE suite = ? AND question_id = ?", [suite, question_id])
    return rows.iloc[0].to_dict() if len(rows) else None


def question_labels(suite: str, question_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(relevant documents with grade, title and access; expected claims with proposition and docs)."""
    docs, claims = query_many(
        ("""SELECT l.doc_id, l.grade, d.title, d.access
            FROM labels l LEFT JOIN documents d ON d.suite = l.suite AND d.doc_id = l.doc_id
            WHERE l.suite = ? AND l.question_id = ? ORDER BY l.grade DESC, l.doc_id""", [suite, question_id]),
        ("SELECT claim_id, proposition, docs FROM expected_claims WHERE suite = ? AND question_id = ? ORDER BY claim_id",
         [suite, question_id]),
    )
    return docs, claims


RETRIEVED_COLUMNS = ("rank", "doc_id", "chunk_id", "relevant", "visible", "restricted", "counted", "grade", "title",
                     "doc_version", "chunk_text")
CLAIM_COLUMNS = ("claim_id", "supported", "reasons", "citations", "cited_docs", "text")
OPTIONAL_COLUMNS = ("chunk_id", "doc_version", "chunk_text")
"""Display order of the columns `question_runs` returns: those the database has, without chunk
columns that are empty for the run (document-level retrieval)."""


def question_runs(suite: str, run_ids: Sequence[str], question_id: str) -> dict[str, dict[str, Any]]:
    """What each run did on one question, by run: `record` (dict or None), `scores` (dict or None),
    `retrieved` (rank order, with title and the relevant / visible / restricted marks) and `claims`
    (answer order, with verdict and reasons). One read of each per-record table for all the runs."""
    ids = list(dict.fromkeys(run_ids))
    marks = ", ".join("?" for _ in ids)
    found = question(suite, question_id)
    if found is not None and _has("scores_by_position"):
        scores_sql = (f"SELECT * FROM scores_by_position WHERE suite = ? AND position = ? AND run_id IN ({marks})",
                      [suite, int(found["position"]), *ids])
    else:
        scores_sql = (f"SELECT * FROM question_scores WHERE suite = ? AND question_id = ? AND run_id IN ({marks})",
                      [suite, question_id, *ids])
    record, scores, retrieved, claims = query_many(
        (f"SELECT run_id, answer, context, latency_ms, cost_usd, error, line FROM records "
         f"WHERE question_id = ? AND run_id IN ({marks})", [question_id, *ids]),
        scores_sql,
        (f"SELECT * EXCLUDE (question_id) FROM retrieved WHERE question_id = ? AND run_id IN ({marks}) "
         "ORDER BY run_id, rank", [question_id, *ids]),
        (f"SELECT * EXCLUDE (question_id) FROM claims WHERE question_id = ? AND run_id IN ({marks}) "
         "ORDER BY run_id, position", [question_id, *ids]),
    )
    titles: dict[str, Any] = {}
    shown_docs = sorted(set(retrieved["doc_id"].astype(str)))
    if shown_docs:  # the titles of these few documents only (a join would hash every document)
        marks_docs = ", ".join("?" for _ in shown_docs)
        found_titles = query(f"SELECT doc_id, title FROM documents WHERE suite = ? AND doc_id IN ({marks_docs})",
                             [suite, *shown_docs])
        titles = dict(zip(found_titles["doc_id"], found_titles["title"]))
    retrieved = retrieved.assign(title=retrieved["doc_id"].map(lambda d: titles.get(d)) if len(retrieved) else None)
    out = {}
    for run_id in ids:
        own_record = record[record["run_id"] == run_id].drop(columns="run_id")
        own_scores = scores[scores["run_id"] == run_id]
        own_retrieved = retrieved[retrieved["run_id"] == run_id].drop(columns="run_id").reset_index(drop=True)
        own_claims = claims[claims["run_id"] == run_id].drop(columns="run_id").reset_index(drop=True)
        own_retrieved = own_retrieved[[c for c in RETRIEVED_COLUMNS if c in own_retrieved.columns
                                       and not (c in OPTIONAL_COLUMNS and own_retrieved[c].isna().all())]]
        out[run_id] = {
            "record": own_record.iloc[0].to_dict() if len(own_record) else None,
            "scores": own_scores.iloc[0].to_dict() if len(own_scores) else None,
            "retrieved": own_retrieved,
            "claims": own_claims[[c for c in CLAIM_COLUMNS if c in own_claims.columns]],
        }
    return out


# -- runs ------------------------------------------------------------------------------------------


def run_stats(suite: str) -> pd.DataFrame:
    """Per run of the suite: questions, records, missing, failed, latency p50 / p95 (ms, over
    records with a latency), total and mean cost (USD, over records with a cost), and the macro mean
    of every metric (`scoring.store.summaries.run_totals_sql`: read from `run_totals` when present)."""
    source = "run_totals" if _has("run_totals") else f"({run_totals_sql()})"
    columns = ", ".join(f"t.{c}" for c in RUN_TOTAL_COLUMNS)
    sql = f"""SELECT r.run_id, r.run_group, r.repeat, r.created_at, r.k, r.model, r.n_records AS records, {columns}
FROM runs r LEFT JOIN {source} t USING (run_id)
WHERE r.suite = $suite ORDER BY r.created_at, r.run_id"""
    return query(sql, {"suite": suite})


def group_spread(suite: str) -> pd.DataFrame:
    """Per group of repeats and metric: the runs, and the lowest, mean and highest macro mean over
    the repeats (how much one configuration moves from run to run)."""
    stats = run_stats(suite)
    grouped = stats[stats["run_group"].notna()]
    rows = []
    for group, members in grouped.groupby("run_group", sort=True):
        for key in METRIC_KEYS:
            values = pd.to_numeric(members[key]).dropna()
            rows.append({
                "group": str(group), "runs": ", ".join(members["run_id"].astype(str)), "repeats": len(members),
                "metric": key,
                "lowest": values.min() if len(values) else None,
                "mean": values.mean() if len(values) else None,
                "highest": values.max() if len(values) else None,
            })
    return pd.DataFrame(rows, columns=["group", "runs", "repeats", "metric", "lowest", "mean", "highest"])


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """A manifest as {dotted.field: JSON text of the leaf value}."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: json.dumps(value, sort_keys=True)}


def manifest_diff(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Manifest fields whose value differs between the sides (field, baseline, candidate). A side
    whose repeats disagree on a field shows every distinct value, joined by ' | '."""
    table = runs(suite).set_index("run_id")

    def side_fields(side: Side) -> dict[str, str]:
        flat = [flatten(json.loads(table.loc[r, "manifest"])) for r in side.run_ids if r in table.index]
        fields = sorted({f for m in flat for f in m})
        return {f: " | ".join(dict.fromkeys(m.get(f, "(absent)") for m in flat)) for f in fields}

    b, c = side_fields(base), side_fields(cand)
    rows = [(f, b.get(f, "(absent)"), c.get(f, "(absent)")) for f in sorted(set(b) | set(c))]
    return pd.DataFrame([r for r in rows if r[1] != r[2]], columns=["field", "baseline", "candidate"])


# -- the release verdict ---------------------------------------------------------------------------


def latest_verdict(suite: str, base: Side, cand: Side) -> dict[str, Any] | None:
    """The newest verdict `ragslice compare --policy` recorded for exactly these runs (table
    `verdicts`, see docs/schema.md), with `gates` and `warnings` decoded; None when there is none.
    The dashboard only reads it: the statistics and gates live in `scoring.decide.comparison` / `scoring.decide.policy`."""
    if "verdicts" not in _catalog()[3]:
        return None
    rows = query(
        """SELECT verdict_id, created_at, baseline, candidate, policy_name, policy_hash, verdict, gates,
                  verdict_without_disputed, warnings
           FROM verdicts
           WHERE suite = ? AND list_sort(baseline_runs) = list_sort(?::VARCHAR[])
             AND list_sort(candidate_runs) = list_sort(?::VARCHAR[])
           ORDER BY created_at DESC LIMIT 1""",
        [suite, list(base.run_ids), list(cand.run_ids)],
    )
    if rows.empty:
        return None
    out = rows.iloc[0].to_dict()
    out["gates"] = pd.DataFrame(json.loads(out["gates"]))
    out["warnings"] = list(json.loads(out["warnings"]))
    out["refreshed_at"] = meta().get("refreshed_at")
    out["refreshed_after"] = _later(out["refreshed_at"], out["created_at"])
    return out


def _later(refreshed_at: Any, created_at: Any) -> bool:
    """Whether the last refresh (ISO text, UTC) happened after the verdict (naive UTC timestamp)."""
    try:
        refreshed = pd.Timestamp(refreshed_at)
        created = pd.Timestamp(created_at)
    except (TypeError, ValueError):
        return False
    if refreshed.tzinfo is not None:
        refreshed = refreshed.tz_convert("UTC").tz_localize(None)
    if created.tzinfo is not None:
        created = created.tz_convert("UTC").tz_localize(None)
    return bool(refreshed > created)


# -- can these two sides be compared? -------------------------------------------------------------

FEW_QUESTIONS = 30
"""Below this many paired questions the page warns that one question moves the averages a lot."""


@dataclass(frozen=True)
class Compatibility:
    """`refusals`: reasons the comparison is meaningless; `warnings`: caveats. Plain sentences."""

    refusals: tuple[str, ...]
    warnings: tuple[str, ...]


def compatibility(suite: str, base: Side, cand: Side) -> Compatibility:
    """Refuse when the runs were recorded against different suite or corpus versions (or another
    suite); warn on rubric or cutoff differences, runs recorded against an older suite version,
    repeats that disagree, few questions, and missing or failed records."""
    table = runs(suite).set_index("run_id")
    suite_row = suites().set_index("suite").loc[suite]
    refusals: list[str] = []
    warnings: list[str] = []
    members = {"baseline": base, "candidate": cand}
    absent = [r for s in members.values() for r in s.run_ids if r not in table.index]
    if absent:
        return Compatibility((f"Run(s) {', '.join(absent)} are not runs of suite {suite}.",), ())
    picked = table.loc[[r for s in members.values() for r in s.run_ids]]
    for field, words in (("suite_version", "suite versions"), ("corpus_version", "corpus versions")):
        values = sorted(set(picked[field]))
        if len(values) > 1:
            detail = "; ".join(f"{r}: {v}" for r, v in picked[field].items())
            refusals.append(
                f"The runs were recorded against different {words} ({detail}). Questions, labels or "
                "documents changed between them, so per-question deltas would compare different tests. "
                "Re-run both configurations on the same frozen suite and corpus."
            )
    for field, words in (("rubric_version", "rubric versions"), ("k", "context cutoffs (k)")):
        values = sorted({str(v) for v in picked[field]})
        if len(values) > 1:
            detail = "; ".join(f"{r}: {v}" for r, v in picked[field].items())
            warnings.append(f"The runs use different {words} ({detail}); cutoff and answer metrics are not like for like.")
    stale = picked[picked["suite_version"] != suite_row["version"]]
    if len(stale):
        warnings.append(
            f"Run(s) {', '.join(stale.index)} were recorded against suite version "
            f"{', '.join(sorted(set(stale['suite_version'])))}; the suite is now version {suite_row['version']}."
        )
    for name, side in members.items():
        if side.kind == "group":
            rows = table.loc[list(side.run_ids)]
            differing = [f for f in ("k", "model", "prompt_revision", "code_revision", "retrieval", "rubric_version")
                         if rows[f].astype(str).nunique() > 1]
            if differing:
                warnings.append(f"The {name} group {side.name} has repeats that differ in {', '.join(differing)}.")
        rows = table.loc[list(side.run_ids)]
        missing, failed = int(rows["n_missing"].sum()), int(rows["n_failed"].sum())
        if missing or failed:
            parts = [f"{missing} question{'' if missing == 1 else 's'} with no record" if missing else "",
                     f"{failed} failed record{'' if failed == 1 else 's'}" if failed else ""]
            across = " across its runs" if side.kind == "group" else ""
            warnings.append(f"The {name} {side.name} has {' and '.join(p for p in parts if p)}{across}; each counts "
                            "as a failure (0) in every denominator, not as n/a.")
    n_questions = int(suite_row["n_questions"])
    if n_questions < FEW_QUESTIONS:
        warnings.append(
            f"Only {n_questions} questions: one question moves every average by at least {100 / n_questions:.0f} "
            "percentage points. Read the per-question table rather than the averages."
        )
    if base.run_ids == cand.run_ids:
        warnings.append("Baseline and candidate are the same run(s): every delta is 0.")
    return Compatibility(tuple(refusals), tuple(warnings))


def newest_verdict() -> tuple[str, str, str] | None:
    """(suite, baseline, candidate) of the newest recorded verdict, names as `ragslice compare` took
    them; None when none was recorded. The sidebar opens on this comparison when the URL names none."""
    if "verdicts" not in _catalog()[3]:
        return None
    rows = query("SELECT suite, baseline, candidate FROM verdicts ORDER BY created_at DESC LIMIT 1")
    if rows.empty:
        return None
    return tuple(str(v) for v in rows.iloc[0])  # type: ignore[return-value]


HISTORY_COLUMNS = ("created_at", "baseline", "candidate", "policy_name", "policy_hash", "verdict",
                   "verdict_without_disputed", "this_comparison")


def verdict_history(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Every verdict recorded for the suite (table `verdicts`), newest first: when (UTC), the sides
    by name, the policy's name and sha256, the verdict, the verdict without disputed questions, and
    `this_comparison` (recorded for exactly these runs). Empty when none was recorded."""
    if "verdicts" not in _catalog()[3]:
        return pd.DataFrame(columns=list(HISTORY_COLUMNS))
    return query(
        """SELECT created_at, baseline, candidate, policy_name, policy_hash, verdict, verdict_without_disputed,
                  list_sort(baseline_runs) = list_sort($base::VARCHAR[])
                    AND list_sort(candidate_runs) = list_sort($cand::VARCHAR[]) AS this_comparison
           FROM verdicts WHERE suite = $suite ORDER BY created_at DESC, verdict_id""",
        {"suite": suite, "base": list(base.run_ids), "cand": list(cand.run_ids)},
    )


# -- paired statistics and the live verdict (computed by scoring.decide.comparison) -------------------------


class StatisticsUnavailable(RuntimeError):
    """`scoring.decide.comparison` refused the comparison; the message says why (e.g. the sides share runs)."""


@dataclass(frozen=True)
class PolicyInfo:
    """Which acceptance policy a live verdict applied: its name, sha256 of its text, and its file."""

    name: str
    sha256: str
    path: str
    description: str | None


@dataclass(frozen=True)
class Statistics:
    """What `scoring.decide.comparison.compare` computed for two sides on the current database (nothing recorded).

    - `table`: one row per metric x slice with n >= 1 (`scoring.decide.comparison.COMPARISON_COLUMNS`): n
      paired questions (both sides scored; n/a excluded, never 0), both macro means, the mean paired
      delta and its bootstrap interval (`ci_low`, `ci_high`), p-values (t-test, Wilcoxon,
      sign-flip randomization, and the randomization p Holm-adjusted across every row), questions
      improved / regressed / unchanged, and warnings (too few pairs for a test to mean anything);
    - `flaky`: per side with repeats, the question x metric (or `status`) whose repeats disagree,
      with the values per repeat;
    - `settings`: the resampling and test settings in words; `warnings`: about the comparison;
    - `verdict`: the policy's verdict evaluated now (`scoring.decide.policy.Verdict`), None without a
      policy; `policy`: which policy; `policy_error`: why the policy file could not be used;
    - `confidence`: the interval's confidence level; `seconds`: how long `compare` took.
    """

    table: pd.DataFrame
    flaky: pd.DataFrame
    settings: str
    confidence: float
    warnings: tuple[str, ...]
    n_questions: int
    verdict: Any
    policy: PolicyInfo | None
    policy_error: str | None
    seconds: float


def side_spec(side: Side) -> str:
    """The side as `ragslice compare` names it, kind forced (`run:A`, `group:c`), so a run and a
    group of the same name cannot be confused."""
    return f"{side.kind}:{side.name}"


def _file_signature(path: Path | None) -> tuple[int, int, int] | None:
    if path is None:
        return None
    try:
        st_ = path.stat()
    except OSError:
        return None
    return (st_.st_ino, st_.st_size, st_.st_mtime_ns)


def statistics(base: Side, cand: Side) -> Statistics:
    """Paired statistics for the two sides and, when a policy file is known (`policy_path`), its
    verdict evaluated live. Computed by `scoring.decide.comparison` from the sides' scores (read once and
    shared with the other figures of the page) and a few small tables; nothing holds the file while
    it computes. Two single runs without a policy are compared on inputs read without detail (the
    questions' slice columns and the page's per-question scores, `scoring.decide.comparison.read_inputs`); a
    group's flaky questions and a policy's gates need every record.
    Cached on the database's and the policy file's signatures and the two sides. Raises
    StatisticsUnavailable when scoring refuses the comparison."""
    return _statistics_of(base, cand, None)


def release_statistics(base: Side, cand: Side, metrics: Sequence[str] = METRIC_KEYS) -> Statistics:
    """What the release review shows of `statistics`: the same verdict, settings and warnings, and a
    table whose overall rows (slice ``all``) of `metrics` hold every figure; with no live policy the
    other rows hold n, the means, the counts and the randomization p-value but no interval, t-test
    or Wilcoxon p (None, not computed). Every Holm-adjusted p-value is the one `statistics` gives:
    the adjustment spans every row either way."""
    return _statistics_of(base, cand, tuple((_metric(m), "all") for m in dict.fromkeys(metrics)))


def _statistics_of(base: Side, cand: Side, rows: tuple[tuple[str, str], ...] | None) -> Statistics:
    path = db_path()
    policy = policy_path()
    sig = signature(path)
    table = runs().set_index("run_id")
    suite = str(table.loc[base.run_ids[0], "suite"]) if base.run_ids and base.run_ids[0] in table.index else None
    return _statistics(str(path), sig, side_spec(base), side_spec(cand), suite, tuple(base.run_ids),
                       tuple(cand.run_ids), None if policy is None else str(policy), _file_signature(policy), rows)


@st.cache_data(show_spinner=False, max_entries=32)
def _statistics(path: str, sig: tuple[int, int, int], base: str, cand: str, suite: str | None,
                base_runs: tuple[str, ...], cand_runs: tuple[str, ...], policy: str | None,
                policy_sig: tuple[int, int, int] | None, rows: tuple[tuple[str, str], ...] | None = None
                ) -> Statistics:
    del policy_sig  # cache key only
    from scoring.decide.comparison import compare  # looked up when called
    from scoring.errors import ValidationError
    from scoring.decide.policy import load_policy

    loaded, problem = None, None
    if policy is not None:
        try:
            loaded = load_policy(policy)
        except ValidationError as error:
            problem = str(error)
    started = time.perf_counter()
    paired = suite is not None and not set(base_runs) & set(cand_runs)
    # two single runs and nothing to judge: the table from the per-question scores the page shares;
    # a group's flaky questions and a policy's gates need every record (read once for the page too)
    detail = loaded is not None or len(base_runs) != 1 or len(cand_runs) != 1 or not paired
    try:
        pair = _pair(path, sig, suite, base_runs, cand_runs, scoring_compare.SCORE_COLUMNS,
                     _needs_records(base_runs, cand_runs) or detail) if paired else None
        with _reading(path, sig) as con:
            if detail:
                inputs = scoring_compare.read_inputs(con, base, cand, with_text=False,
                                                     scores=pair.records if pair is not None else None)
            else:
                inputs = scoring_compare.read_inputs(con, base, cand, detail=False, side_scores=pair.scores,
                                                     slice_columns=_questions(path, sig, suite))
        result = compare(inputs, base, cand, policy=loaded, tested=rows)  # the file is let go by now
    except ValidationError as error:
        raise StatisticsUnavailable(str(error)) from None
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error
    seconds = time.perf_counter() - started
    return Statistics(
        table=result.table.reset_index(drop=True),
        flaky=result.flaky.reset_index(drop=True),
        settings=result.settings.describe(),
        confidence=float(result.settings.confidence),
        warnings=tuple(result.warnings),
        n_questions=int(len(result.questions)),
        verdict=result.verdict if loaded is not None else None,
        policy=None if loaded is None else PolicyInfo(loaded.name, loaded.sha256, str(policy), loaded.description),
        policy_error=problem,
        seconds=seconds,
    )


GATE_COLUMNS = ("name", "passed", "observed", "threshold", "n", "reason", "metric", "slice", "aggregate", "baseline",
                "p_value", "warning", "line")
"""Display order of a verdict's gate table (live or recorded)."""


def gates_frame(gates: Any) -> pd.DataFrame:
    """A verdict's gates as a table in `GATE_COLUMNS` order: from `scoring.decide.policy.GateResult`s (a
    live verdict) or the decoded JSON of a recorded one (a DataFrame). `observed` is the text every
    rendering shows (`GateResult.observed_text`: never rounded across its threshold) where the
    verdict holds it."""
    from dataclasses import asdict

    frame = gates if isinstance(gates, pd.DataFrame) else pd.DataFrame([asdict(g) for g in gates])
    if "observed_text" in frame.columns:
        frame = frame.assign(observed=frame["observed_text"].where(frame["observed_text"].notna(),
                                                                   frame["observed"].map(_plain_number)))
    return frame[[c for c in GATE_COLUMNS if c in frame.columns]].reset_index(drop=True)


def _plain_number(value: Any) -> str:
    return "n/a" if value is None or value != value else repr(float(value))


SLICE_FAMILIES: tuple[str, ...] = tuple(f.name for f in slices.FAMILIES)
P_COLUMNS: dict[str, str] = {
    "p_holm": "Holm-adjusted randomization p",
    "p_randomization": "randomization p (unadjusted)",
    "p_ttest": "paired t-test p (unadjusted)",
    "p_wilcoxon": "Wilcoxon signed-rank p (unadjusted)",
}


def slice_family(slice_: str) -> str:
    """The family of a slice name (`scoring.metrics.slices.family_of`)."""
    return slices.family_of(slice_)


def statistics_rows(
    table: pd.DataFrame,
    *,
    metrics: Sequence[str] = (),
    families: Sequence[str] = (),
    alpha: float = 0.05,
    p_column: str = "p_holm",
    significant_only: bool = False,
    regressions_only: bool = False,
) -> pd.DataFrame:
    """The rows of `Statistics.table` the filters keep (empty `metrics` / `families`: all), with
    three columns added: `family` (`slice_family`), `significant` (`p_column` <= `alpha`; False
    where that p-value is n/a) and `moves` (better / worse / unchanged: the mean paired delta with /
    against the registry's direction, beyond `scoring.decide.stats.TIE`). `regressions_only` keeps the
    rows that move worse."""
    from scoring.decide.stats import TIE

    if p_column not in P_COLUMNS:
        raise ValueError(f"unknown p-value column {p_column!r}")
    out = table.copy()
    out["family"] = out["slice"].map(slice_family)
    p = pd.to_numeric(out[p_column], errors="coerce")
    out["significant"] = (p <= alpha).fillna(False).astype(bool)
    gain = pd.to_numeric(out["delta"], errors="coerce") * out["higher_is_better"].map({True: 1.0, False: -1.0})
    out["moves"] = "unchanged"
    out.loc[gain > TIE, "moves"] = "better"
    out.loc[gain < -TIE, "moves"] = "worse"
    keep = pd.Series(True, index=out.index)
    if metrics:
        keep &= out["metric"].isin(list(metrics))
    if families:
        keep &= out["family"].isin(list(families))
    if significant_only:
        keep &= out["significant"]
    if regressions_only:
        keep &= out["moves"] == "worse"
    return out[keep].reset_index(drop=True)

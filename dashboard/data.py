"""What the dashboard's pages read: queries through the database door, cached, shaped for the pages.

The database is opened only through `scoring.store.database.Database.reading`: one read-only
attachment per process, shared by the reads of a page and let go when a writer waits. Results are
cached on (what was read, the file's signature), so the first rerun after a refresh reads the new
file. Two caches: small tables in `st.cache_data` (each caller gets a copy), and what many figures of
a page share in `st.cache_resource` (one shared copy, never modified): the catalog (meta, suites,
runs, table names), the questions' slice columns, and the per-question scores of a comparison's two
sides (`scoring.decide.scores`), from which the headline, the per-question deltas, the slices, the
aggregation choices and the statistics are all computed by `scoring`: a page reads them once.
Question IDs, text and tags are read for the rows shown only.

Rules: every value is a bound parameter; the only identifiers spliced into SQL are metric columns
from the registry and table names from fixed lists. No scoring rule lives here: statuses and the
rule of change come from `scoring.decide.change`, aggregates from `scoring.decide.aggregates`, which
sides may be compared from `scoring.decide.sides`, statistics and verdicts from
`scoring.decide.comparison` and `scoring.decide.policy`.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from scoring.decide import aggregates as scoring_aggregates
from scoring.decide import change
from scoring.decide import comparison as scoring_compare
from scoring.decide import scores as scoring_scores
from scoring.decide import sides as scoring_sides
from scoring.decide.sides import Compatibility, Side
from scoring.metrics import BY_KEY, REGISTRY, slices
from scoring.store.database import READ_ERRORS, Database, DatabaseMissing, signature
from scoring.store.schema import SCHEMA_VERSION
from scoring.store.summaries import RUN_TOTAL_COLUMNS, run_totals_sql

DB_ENV = "RAGSLICE_DB"
POLICY_ENV = "RAGSLICE_POLICY"
WORKSPACE_ENV = "RAGSLICE_WORKSPACE"
REVIEWER_ENV = "RAGSLICE_REVIEWER"
DEFAULT_DB = "ragslice.duckdb"
METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY)

SLICE_COLUMNS: tuple[str, ...] = slices.PARTITIONS
"""The slice families `aggregates` reads (`scoring.metrics.slices`: those that partition the suite)."""

STATUSES: tuple[str, ...] = change.STATUSES
DELTA_ROWS = 1_000
"""`question_deltas` returns at most this many questions (in the chosen order) unless told otherwise."""
QUESTION_CHOICES = 200
"""`question_choices` lists at most this many questions."""


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


def review_mode() -> tuple[Path, str] | None:
    """(workspace, reviewer) when the dashboard records label decisions (`ragslice dashboard --workspace
    WS --reviewer NAME`), else None: the dashboard is read-only."""
    workspace, reviewer = _option(WORKSPACE_ENV, "--workspace"), _option(REVIEWER_ENV, "--reviewer")
    return (Path(workspace), reviewer) if workspace and reviewer else None


Statement = tuple[str, Any]
"""(SQL, bound parameters): a list or a dict of `$name` values."""


@st.cache_data(show_spinner=False, max_entries=512)
def _cached(path: str, sig: tuple[int, int, int], statements: tuple[Statement, ...]) -> list[pd.DataFrame]:
    with Database(path).reading(sig) as con:
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
        with Database(path).reading() as con:
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
    with Database(path).reading(sig) as con:
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


def runs(suite: str | None = None) -> pd.DataFrame:
    """Runs (manifest columns and record counts), oldest first."""
    table = _catalog()[2]
    if suite is None:
        return table.copy()
    return table[table["suite"] == suite].reset_index(drop=True)


def sides(suite: str) -> list[Side]:
    """Every run of the suite, then every group of repeats (`scoring.decide.sides.sides_of`)."""
    return scoring_sides.sides_of(runs(suite))


def _metric(key: str) -> str:
    """Allow-list check: a metric identifier may reach SQL only if the registry declares it."""
    if key not in BY_KEY:
        raise ValueError(f"unknown metric {key!r}")
    return key


# -- the two sides' per-question scores ----------------------------------------------------------

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
    scores: scoring_scores.SideScores
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
        """Per question, the status on `metric` as an index into `STATUSES` (`scoring.decide.change`)."""
        if ("codes", metric) not in self._derived:
            if "record" not in self._derived:  # the same for every metric
                self._derived["record"] = change.record_codes(self.missing, self.failed)
            self._derived["codes", metric] = change.status_codes(self.side(0, metric), self.side(1, metric),
                                                                 BY_KEY[metric].higher_is_better,
                                                                 self._derived["record"])
        return self._derived["codes", metric]


@st.cache_resource(show_spinner=False, max_entries=8)
def _questions(path: str, sig: tuple[int, int, int], suite: str) -> pd.DataFrame:
    """The suite's questions in suite order with their slice columns only: position, type, split,
    critical, answerable (`scoring.decide.comparison.read_slice_columns`; IDs, text and tags are read for the
    rows shown, `_details`), shared."""
    with Database(path).reading(sig) as con:
        return scoring_scores.read_slice_columns(con, suite)


@st.cache_resource(show_spinner=False, max_entries=4)
def _full_questions(path: str, sig: tuple[int, int, int], suite: str) -> pd.DataFrame:
    """The suite's questions without their text (`scoring.decide.comparison.read_questions`), shared: what a
    comparison with every record's detail needs."""
    with Database(path).reading(sig) as con:
        return scoring_scores.read_questions(con, suite, with_text=False)


@st.cache_resource(show_spinner=False, max_entries=8)
def _positions(path: str, sig: tuple[int, int, int], suite: str) -> np.ndarray:
    """The positions of the suite's questions in suite order (row i of `_questions`): 0 .. n - 1
    when they are that (one aggregate read), else read."""
    with Database(path).reading(sig) as con:
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
          columns: tuple[str, ...] = scoring_scores.SCORE_COLUMNS, records: bool = False) -> _Pair:
    """`columns` (metrics, and pooling counts) of both sides (`scoring.decide.comparison.read_side_scores`: a
    float per column, question and side, about 300 bytes per question for every column); with
    `records`, every record's detail instead (`scoring.decide.comparison.read_scores`, kept for the statistics)."""
    positions = _positions(path, sig, suite)
    kept = None
    with Database(path).reading(sig) as con:
        if records:
            kept = scoring_scores.read_scores(con, suite, base, cand, questions=_full_questions(path, sig, suite))
            scores = scoring_scores.side_scores(kept[1], base, cand, positions)
        else:
            scores = scoring_scores.read_side_scores(con, suite, base, cand, positions, columns)
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
        return _pair(str(path), sig, suite, b, c, scoring_scores.SCORE_COLUMNS, _needs_records(b, c))
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
                 "baseline", "candidate", "delta", "status", "label_gap")
ORDERS = ("worst first", "best first", "suite order")


@dataclass(frozen=True)
class Deltas:
    """`rows`: at most `limit` questions (`DELTA_COLUMNS`) in the chosen order; `matched`: the
    questions the filters keep; `total`: the suite's questions; `counts`: per status, the questions
    every filter but the status filter keeps (None where not counted)."""

    rows: pd.DataFrame
    matched: int
    total: int
    counts: dict[str, int] | None = None


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
        "label_gap": _label_gaps(pair, metric).take(at),
    })
    return frame[list(DELTA_COLUMNS)]


def _label_gaps(pair: _Pair, metric: str) -> np.ndarray:
    """Per question: regressed on `metric` while the candidate's first k hold a document nobody judged
    (its Judged@k below 1): the regression may be a label gap."""
    judged = pair.side(1, "judged") if "judged" in pair.metrics else np.full(len(pair.missing), np.nan)
    with np.errstate(invalid="ignore"):
        return (pair.codes(metric) == STATUSES.index("regressed")) & (judged < 1 - change.TIE)


def _slots(q: pd.DataFrame, positions: np.ndarray) -> np.ndarray:
    """Which questions of `q` (suite order) are at these positions, as a boolean per question."""
    found = scoring_scores.position_slots(q["position"].to_numpy(), positions)
    hit = np.zeros(len(q), dtype=bool)
    hit[found[found >= 0]] = True
    return hit


def _kept(suite: str, q: pd.DataFrame, pair: _Pair, metric: str, *, types: Sequence[str], answerable: bool | None,
          splits: Sequence[str],
          critical: bool | None, tags: Sequence[str], statuses: Sequence[str], search: str,
          picked: Sequence[str], label_gap: bool = False) -> np.ndarray:
    keep = np.ones(len(q), dtype=bool)
    if label_gap:
        keep &= _label_gaps(pair, metric)
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
    limit: int | None = DELTA_ROWS, label_gap: bool = False, worse: bool = False,
) -> Deltas:
    """The suite's questions with the baseline and candidate value of `metric` (for a group: the
    mean over its repeats), delta = candidate - baseline and a status (`scoring.decide.change.status_codes`), filtered:
    question type in `types`, `answerable`, split in `splits`, `critical`, any tag in `tags`, status
    in `statuses`, ID or text containing `search` (case-insensitive), ID in `picked` (empty or None:
    no filter), only the regressions that may be a label gap (`label_gap`: the candidate's first k hold a
    document nobody judged), only the questions that scored worse (`worse`, `scoring.decide.change.worse`).
    `order`: worst first (`scoring.decide.change.worst_first`: worse ones first, critical before the
    others, by size of the drop), best first (gain with the registry's direction, n/a last, then suite
    order) or suite order. At most `limit` rows (None: all). `counts`: the matches per status, the
    status filter aside."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}")
    pair = _pair_of(suite, base, cand, tuple(dict.fromkeys((_metric(metric), "judged"))))
    q = _questions_of(suite)
    at = _kept(suite, q, pair, metric, types=types, answerable=answerable, splits=splits, critical=critical, tags=tags,
               statuses=(), search=search, picked=picked, label_gap=label_gap)
    gain = change.gain(pair.side(0, metric), pair.side(1, metric), BY_KEY[metric].higher_is_better)
    if worse:
        at = at[change.worse(gain.take(at))]
    codes = pair.codes(metric).take(at)
    counts = {s: int(n) for s, n in zip(STATUSES, np.bincount(codes.astype(np.int64), minlength=len(STATUSES)))}
    if statuses:
        at = at[np.isin(codes, [STATUSES.index(s) for s in statuses if s in STATUSES])]
    if order == "worst first":
        shown = at.take(change.worst_first(gain.take(at), q["critical"].to_numpy(dtype=bool).take(at), at))
        shown = shown if limit is None else shown[:limit]
    elif order == "best first":
        key = -gain.take(at)
        shown = at.take(_first(np.where(np.isnan(key), np.inf, key), at, limit))
    else:
        shown = at if limit is None else at[:limit]
    return Deltas(_delta_rows(suite, q, pair, metric, shown), len(at), len(q), counts)


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
                     "text", "label_gap"]]
        view = view.assign(tags=view["tags"].map(lambda ts: ";".join(ts if ts is not None else [])))
        return view.to_csv(index=False).encode("utf-8")

    return build


def worst_regressions(suite: str, base: Side, cand: Side, metric: str, limit: int = 10) -> Deltas:
    """The questions that scored worse on `metric` (`scoring.decide.change.worse`: regressed, or
    lower because a record is missing or failed) in `scoring.decide.change.worst_first` order
    (critical ones first, then by size of the drop, then suite order); at most `limit` (`matched`:
    all of them)."""
    pair = _pair_of(suite, base, cand)  # the whole pair: the release review reads it for the statistics too
    q = _questions_of(suite)
    gain = change.gain(pair.side(0, _metric(metric)), pair.side(1, metric), BY_KEY[metric].higher_is_better)
    at = np.flatnonzero(change.worse(gain))
    at = at.take(change.worst_first(gain.take(at), q["critical"].to_numpy(dtype=bool).take(at), at))
    return Deltas(_delta_rows(suite, q, pair, metric, at[:limit]), len(at), len(q))


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
    record = change.record_codes(np.array([missing]), np.array([failed]))
    codes = [int(change.status_codes(values[0][:, j], values[1][:, j], m.higher_is_better, record)[0])
             for j, m in enumerate(REGISTRY)]
    b, c = values[0][0], values[1][0]
    return pd.DataFrame({"metric": list(METRIC_KEYS), "baseline": b, "candidate": c, "delta": c - b,
                         "status": [STATUSES[i] for i in codes]})


# -- aggregates by slice ---------------------------------------------------------------------------


def aggregate(suite: str, base: Side, cand: Side, by: str) -> pd.DataFrame:
    """Per slice of family `by` and metric, both sides side by side
    (`scoring.decide.aggregates.slice_aggregates` states every column)."""
    return aggregates(suite, base, cand, (by,))[by]


def aggregates(suite: str, base: Side, cand: Side, families: Sequence[str]) -> dict[str, pd.DataFrame]:
    """`aggregate` for several slice families: from the `slice_sums` summary for two single runs,
    else from one read of the two sides' scores."""
    if len(base.run_ids) == 1 and len(cand.run_ids) == 1 and _has("slice_sums"):
        stored = query("SELECT * FROM slice_sums WHERE run_id IN (?, ?) AND list_contains(?, family)",
                       [base.run_ids[0], cand.run_ids[0], list(dict.fromkeys(families))])
        return scoring_aggregates.stored_slice_aggregates(stored, base.run_ids[0], cand.run_ids[0], families)
    return scoring_aggregates.slice_aggregates(_questions_of(suite), _pair_of(suite, base, cand).scores, families)


def headline(suite: str, base: Side, cand: Side, metrics: Sequence[str] = METRIC_KEYS) -> pd.DataFrame:
    """Each side's own macro mean per metric, n and n/a, and the questions per status
    (`scoring.decide.aggregates.headline`)."""
    pair = _pair_of(suite, base, cand)
    wanted = [_metric(m) for m in metrics]
    return scoring_aggregates.headline(pair.scores, {k: pair.codes(k) for k in wanted}, wanted)


def aggregation_choices(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Macro, pooled, answerable-only and per-type aggregates side by side, with flips and hidden
    regressions (`scoring.decide.aggregates.aggregation_choices`)."""
    path = db_path()
    return _aggregation_choices(str(path), signature(path), suite, base.run_ids, cand.run_ids)


@st.cache_data(show_spinner=False, max_entries=64)
def _aggregation_choices(path: str, sig: tuple[int, int, int], suite: str, base: tuple[str, ...],
                         cand: tuple[str, ...]) -> pd.DataFrame:
    del path, sig  # cache key only: the inputs below are read from this file
    sides = {s.run_ids: s for s in scoring_sides.sides_of(runs(suite))}
    b = sides.get(base) or Side(base[0], "run", base)
    c = sides.get(cand) or Side(cand[0], "run", cand)
    frames = aggregates(suite, b, c, scoring_aggregates.CHOICE_FAMILIES)
    improving = scoring_aggregates.improving(frames)
    regressed: dict[str, int] = {}
    if improving:  # questions that regressed, needed only where the macro mean improves
        pair = _pair_of(suite, b, c, improving)
        regressed = {k: int(np.count_nonzero(pair.codes(k) == STATUSES.index("regressed"))) for k in improving}
    return scoring_aggregates.aggregation_choices(frames, regressed)


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


RETRIEVED_COLUMNS = ("rank", "doc_id", "chunk_id", "relevant", "cited", "visible", "restricted", "counted", "grade",
                     "title", "doc_version", "chunk_text")
CLAIM_COLUMNS = ("claim_id", "supported", "reasons", "citations", "cited_docs", "text", "aligned_by")
OPTIONAL_COLUMNS = ("chunk_id", "doc_version", "chunk_text", "aligned_by")
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
        cited = {str(d) for docs in own_claims.get("cited_docs", pd.Series([], dtype=object)) if docs is not None
                 for d in docs} | {str(d) for docs in own_claims.get("citations", pd.Series([], dtype=object))
                                   if docs is not None for d in docs}
        own_retrieved = own_retrieved.assign(cited=[str(d) in cited or (c is not None and str(c) in cited)
                                                    for d, c in zip(own_retrieved["doc_id"],
                                                                    own_retrieved.get("chunk_id", [None] * len(own_retrieved)))])
        own_retrieved = own_retrieved[[c for c in RETRIEVED_COLUMNS if c in own_retrieved.columns
                                       and not (c in OPTIONAL_COLUMNS and own_retrieved[c].isna().all())]]
        out[run_id] = {
            "record": own_record.iloc[0].to_dict() if len(own_record) else None,
            "scores": own_scores.iloc[0].to_dict() if len(own_scores) else None,
            "retrieved": own_retrieved,
            "claims": own_claims[[c for c in CLAIM_COLUMNS if c in own_claims.columns
                                  and not (c in OPTIONAL_COLUMNS and own_claims[c].isna().all())]],
        }
    return out


def answer_change(shown: dict[str, dict[str, Any]], base_run: str, cand_run: str) -> tuple[str, Any] | None:
    """The two shown runs' answers as a word-level diff (escaped HTML, `scoring.decide.answer_diff`) and
    the documents the candidate's claims stopped or started citing; None when either has no record."""
    from scoring.decide.answer_diff import citation_change, diff_html, word_diff

    base, cand = shown[base_run], shown[cand_run]
    if base["record"] is None or cand["record"] is None:
        return None

    def text(side: dict[str, Any]) -> str | None:
        answer = side["record"]["answer"]
        return None if answer is None or (isinstance(answer, float) and pd.isna(answer)) else str(answer)

    def cited(side: dict[str, Any]) -> list[list[str]]:
        column = side["claims"].get("cited_docs", pd.Series([], dtype=object))
        return [[str(d) for d in docs] for docs in column if docs is not None]

    return diff_html(word_diff(text(base), text(cand))), citation_change(cited(base), cited(cand))


def diagnoses(suite: str, run_ids: Sequence[str], question_id: str) -> dict[str, Any]:
    """Each run's case on one question (`scoring.decide.diagnosis`: the record failed, retrieval
    missed the evidence, the answer misused it, or neither), by run."""
    from scoring.decide.diagnosis import DIAGNOSIS_SQL, diagnoses as diagnose

    params = {"suite": suite, "q": question_id, "runs": list(dict.fromkeys(run_ids))}
    frames = query_many(*((sql, {k: v for k, v in params.items() if f"${k}" in sql}) for sql in DIAGNOSIS_SQL))
    return diagnose(frames, list(run_ids))


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



def configuration_changes(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """`manifest_diff` without the bookkeeping fields (`scoring.decide.report.is_setting`): what was
    configured differently."""
    from scoring.decide.report import is_setting

    diff = manifest_diff(suite, base, cand)
    return diff[diff["field"].map(is_setting)].reset_index(drop=True)


# -- the release verdict ---------------------------------------------------------------------------


def latest_verdict(suite: str, base: Side, cand: Side) -> dict[str, Any] | None:
    """The newest verdict `ragslice compare --policy` recorded for exactly these runs (table
    `verdicts`, see docs/schema.md), with `gates` and `warnings` decoded; None when there is none.
    The dashboard only reads it: the statistics and gates live in `scoring.decide.comparison` / `scoring.decide.policy`."""
    if "verdicts" not in _catalog()[3]:
        return None
    rows = query(
        """SELECT * EXCLUDE (policy_text)
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


def compatibility(suite: str, base: Side, cand: Side) -> Compatibility:
    """Refusals and caveats for the two sides (`scoring.decide.sides.compatibility`)."""
    row = suites().set_index("suite").loc[suite]
    return scoring_sides.compatibility(runs(suite), str(row["version"]), int(row["n_questions"]), base, cand)


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
    return _statistics(str(path), sig, base.spec, cand.spec, suite, tuple(base.run_ids),
                       tuple(cand.run_ids), None if policy is None else str(policy), _file_signature(policy), rows)


def _comparison_inputs(path: str, sig: tuple[int, int, int], base: str, cand: str, suite: str | None,
                       base_runs: tuple[str, ...], cand_runs: tuple[str, ...], *, judged: bool) -> Any:
    """The comparison's inputs (`scoring.decide.comparison.read_inputs`) as the pages share them: two
    single runs with nothing to judge (`judged`: a policy's gates) from the per-question scores and
    slice columns the pages read; a group's flaky questions and a policy's gates need every record
    (read once for the pages too)."""
    paired = suite is not None and not set(base_runs) & set(cand_runs)
    detail = judged or len(base_runs) != 1 or len(cand_runs) != 1 or not paired
    pair = _pair(path, sig, suite, base_runs, cand_runs, scoring_scores.SCORE_COLUMNS,
                 _needs_records(base_runs, cand_runs) or detail) if paired else None
    with Database(path).reading(sig) as con:
        if detail:
            return scoring_compare.read_inputs(con, base, cand, with_text=False,
                                               scores=pair.records if pair is not None else None)
        return scoring_compare.read_inputs(con, base, cand, detail=False, side_scores=pair.scores,
                                           slice_columns=_questions(path, sig, suite))


@st.cache_data(show_spinner=False, max_entries=32)
def _statistics(path: str, sig: tuple[int, int, int], base: str, cand: str, suite: str | None,
                base_runs: tuple[str, ...], cand_runs: tuple[str, ...], policy: str | None,
                policy_sig: tuple[int, int, int] | None, rows: tuple[tuple[str, str], ...] | None = None
                ) -> Statistics:
    del policy_sig  # cache key only
    from scoring.decide.comparison import compare  # looked up when called
    from scoring.decide.policy import load_policy
    from scoring.errors import ValidationError

    loaded, problem = None, None
    if policy is not None:
        try:
            loaded = load_policy(policy)
        except ValidationError as error:
            problem = str(error)
    started = time.perf_counter()
    try:
        inputs = _comparison_inputs(path, sig, base, cand, suite, base_runs, cand_runs, judged=loaded is not None)
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


def presentation(base: Side, cand: Side) -> str:
    """The decision in five screens (`scoring.decide.present`) as one HTML document: the comparison of the
    other pages, with the policy file given to the dashboard (a policy that cannot be read gives no
    verdict). The same document `ragslice report --slides` writes. Read as `statistics` reads (two single
    runs without a policy: the slice columns and per-question scores the other pages share), plus the
    few regressed questions and their evidence the screens show. Cached on the database's and the
    policy file's signatures and the two sides."""
    path, policy = db_path(), policy_path()
    table = runs().set_index("run_id")
    suite = str(table.loc[base.run_ids[0], "suite"]) if base.run_ids and base.run_ids[0] in table.index else None
    return _presentation(str(path), signature(path), base.spec, cand.spec, suite, tuple(base.run_ids),
                         tuple(cand.run_ids), None if policy is None else str(policy), _file_signature(policy))


@st.cache_data(show_spinner=False, max_entries=8)
def _presentation(path: str, sig: tuple[int, int, int], base: str, cand: str, suite: str | None,
                  base_runs: tuple[str, ...], cand_runs: tuple[str, ...], policy: str | None,
                  policy_sig: tuple[int, int, int] | None) -> str:
    del policy_sig  # cache key only
    from scoring.decide.comparison import compare, read_regressed
    from scoring.decide.policy import load_policy
    from scoring.decide.present import WORST, slides_html
    from scoring.decide.report import load_evidence
    from scoring.errors import ValidationError

    try:
        loaded = load_policy(policy) if policy is not None else None
    except ValidationError:
        loaded = None  # the release review names the policy's problem
    try:
        inputs = _comparison_inputs(path, sig, base, cand, suite, base_runs, cand_runs, judged=loaded is not None)
        # the screens show no interval, t-test or Wilcoxon p (a policy's gates may read them)
        result = compare(inputs, base, cand, policy=loaded, tested=None if loaded is not None else ())
        with Database(path).reading(sig) as con:
            evidence = load_evidence(con, result, read_regressed(con, result, WORST)["question_id"])
    except ValidationError as error:
        raise StatisticsUnavailable(str(error)) from None
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error
    return slides_html(result, evidence)


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


SLICE_FAMILIES: tuple[str, ...] = tuple(f.name for f in slices.FAMILIES)
P_COLUMNS = scoring_compare.P_COLUMNS
statistics_rows = scoring_compare.table_rows


# -- labels and their review -------------------------------------------------------------------------

REVIEW_TABLES = ("reviews", "label_changes")


def pool(suite: str, base: Side, cand: Side, limit: int = 50) -> pd.DataFrame:
    """The documents the two sides ranked within their k that nobody judged, most influential first
    (`scoring.decide.pool.unjudged`), with the question's text and the document's title and text."""
    from scoring.decide.pool import unjudged

    path = db_path()
    with Database(path).reading() as con:
        found = unjudged(con, [*base.run_ids, *cand.run_ids], limit=limit)
        if found.empty:
            return found.assign(question=[], title=[], text=[])
        extra = con.execute(
            """SELECT p.question_id, p.doc_id, q.text AS question, d.title, d.text
               FROM (SELECT unnest(?::VARCHAR[]) AS question_id, unnest(?::VARCHAR[]) AS doc_id) p
               JOIN questions q ON q.suite = ? AND q.question_id = p.question_id
               LEFT JOIN documents d ON d.suite = ? AND d.doc_id = p.doc_id""",
            [list(found["question_id"]), list(found["doc_id"]), suite, suite]).df()
    return found.merge(extra, on=["question_id", "doc_id"], how="left")


def rankings_of(suite: str, run_ids: Sequence[str], question_id: str, doc_id: str) -> pd.DataFrame:
    """Where each run ranked a document for a question (run_id, rank, visible)."""
    return query("SELECT run_id, rank, visible FROM retrieved WHERE question_id = ? AND doc_id = ? "
                 "AND list_contains(?::VARCHAR[], run_id) ORDER BY run_id, rank",
                 [question_id, doc_id, list(run_ids)])


# -- free-text answers -----------------------------------------------------------------------------

SENTENCES_SQL = """
WITH s AS (
  SELECT run_id, question_id, sentence, text, citations FROM answer_sentences
  WHERE question_id = ? AND list_contains(?::VARCHAR[], run_id)
),
cited AS (
  SELECT s.run_id, s.sentence, c.doc, c.pos FROM s, unnest(s.citations) WITH ORDINALITY AS c(doc, pos)
),
marks AS (
  SELECT c.run_id, c.sentence,
         list(c.doc || ' (' || array_to_string(list_value(
                CASE WHEN coalesce(r.visible, false) THEN 'visible' ELSE 'not in the first k' END,
                CASE WHEN l.doc_id IS NOT NULL THEN 'labelled for ' || l.claims END,
                CASE WHEN coalesce(r.restricted, false) THEN 'restricted' END), ', ') || ')' ORDER BY c.pos) AS marked
  FROM cited c
  LEFT JOIN (SELECT run_id, coalesce(chunk_id, doc_id) AS item, bool_or(visible) AS visible,
                    bool_or(restricted) AS restricted
             FROM retrieved WHERE question_id = ? GROUP BY ALL) r ON r.run_id = c.run_id AND r.item = c.doc
  LEFT JOIN (SELECT d AS doc_id, string_agg(claim_id, ', ' ORDER BY claim_id) AS claims
             FROM (SELECT claim_id, unnest(docs) AS d FROM expected_claims WHERE suite = ? AND question_id = ?)
             GROUP BY d) l ON l.doc_id = c.doc
  GROUP BY c.run_id, c.sentence
),
others AS (
  SELECT run_id, sentence,
         string_agg(CASE aligner WHEN 'lexical' THEN 'lexical' WHEN 'judge' THEN 'judge ' || decided_by
                    ELSE 'reviewer ' || decided_by END || ': '
                    || CASE WHEN outcome = 'claims' THEN array_to_string(claim_ids, ', ') ELSE outcome END, '; '
                    ORDER BY aligner, decided_by) AS overruled
  FROM alignments WHERE question_id = ? AND NOT applied AND list_contains(?::VARCHAR[], run_id) GROUP BY ALL
)
SELECT s.run_id, s.sentence + 1 AS "#", s.text AS sentence, coalesce(m.marked, []) AS citations,
       CASE WHEN a.outcome IS NULL THEN 'kept for display (the record has claims)'
            WHEN a.outcome = 'claims' THEN array_to_string(a.claim_ids, ', ')
            WHEN a.outcome = 'unlabelled' THEN 'unlabelled (a claim no label supports)'
            ELSE 'no claim (not counted)' END AS aligned_to,
       CASE a.aligner WHEN 'human' THEN 'reviewer ' || a.decided_by
            WHEN 'judge' THEN 'judge ' || a.decided_by || coalesce(' (' || round(a.confidence, 2)::VARCHAR || ')', '')
            WHEN 'lexical' THEN 'lexical (' || round(a.confidence, 2)::VARCHAR || ')' END AS decided_by,
       o.overruled AS other_aligners
FROM s
LEFT JOIN alignments a ON a.run_id = s.run_id AND a.question_id = ? AND a.sentence = s.sentence AND a.applied
LEFT JOIN marks m ON m.run_id = s.run_id AND m.sentence = s.sentence
LEFT JOIN others o ON o.run_id = s.run_id AND o.sentence = s.sentence
ORDER BY s.run_id, s.sentence
"""


def answer_sentences(suite: str, run_ids: Sequence[str], question_id: str) -> dict[str, pd.DataFrame]:
    """Each run's answer sentence by sentence (runs that answered in sentences only): the sentence, its
    citations marked visible / labelled (for which expected claims) / restricted, what it is aligned to,
    who decided it (reviewer, judge and confidence, or lexical and its overlap) and what the other aligners
    said."""
    if not _has("answer_sentences"):
        return {}
    ids = list(dict.fromkeys(run_ids))
    found = query(SENTENCES_SQL, [question_id, ids, question_id, suite, question_id, question_id, ids, question_id])
    return {run_id: own.drop(columns="run_id").reset_index(drop=True) for run_id, own in found.groupby("run_id")}


def alignment_facts(suite: str, base: Side, cand: Side) -> dict[str, Any] | None:
    """What the comparison's claims rest on (`scoring.decide.alignment`): per side sentences and claims
    by aligner, and each automatic aligner's agreement with the reviewers; None when no run of the suite
    answers in sentences."""
    path = db_path()
    sig = signature(path)
    return _alignment_facts(str(path), sig, suite, tuple(base.run_ids), tuple(cand.run_ids))


@st.cache_data(show_spinner=False, max_entries=16)
def _alignment_facts(path: str, sig: tuple[int, int, int], suite: str, base_runs: tuple[str, ...],
                     cand_runs: tuple[str, ...]) -> dict[str, Any] | None:
    from scoring.decide.alignment import read_alignment

    with Database(path).reading(sig) as con:
        found = read_alignment(con, suite, base_runs, cand_runs)
    if found is None:
        return None
    facts, resting = found
    return facts.to_dict() | {"resting": [{"aligner": name, "kappa": kappa, "claims": n}
                                          for name, kappa, n in facts.automatic_aligners(resting)]}


ALIGNMENT_QUEUE_SQL = """
WITH auto AS (
  SELECT a.question_id, a.text, a.citations, a.aligner, a.decided_by, a.outcome, a.claim_ids, a.confidence,
         a.applied, a.reviewed, a.run_id
  FROM alignments a WHERE list_contains(?::VARCHAR[], a.run_id) AND NOT a.reviewed
),
items AS (
  SELECT question_id, {normalised} AS norm, any_value(text) AS sentence, any_value(citations) AS citations,
         list(DISTINCT CASE WHEN aligner = 'lexical' THEN 'lexical' ELSE 'judge ' || decided_by END || ': ' ||
              CASE WHEN outcome = 'claims' THEN array_to_string(claim_ids, ', ') ELSE outcome END) AS opinions,
         count(DISTINCT CASE WHEN outcome = 'claims' THEN array_to_string(claim_ids, '+') ELSE outcome END) > 1
           AS aligners_disagree,
         min(confidence) FILTER (WHERE applied) AS confidence,
         list(DISTINCT run_id ORDER BY run_id) AS runs
  FROM auto GROUP BY question_id, norm
)
SELECT i.*, q.text AS question FROM items i
JOIN questions q ON q.suite = ? AND q.question_id = i.question_id
ORDER BY i.aligners_disagree DESC, i.confidence ASC NULLS FIRST, i.question_id, i.norm
LIMIT ?
"""


def alignment_queue(suite: str, base: Side, cand: Side, limit: int = 10) -> pd.DataFrame:
    """Sentences of either side no reviewer aligned yet, those the automatic aligners disagree on first,
    then the lowest confidence of the alignment applied: question, sentence, citations, each aligner's
    opinion, the runs that wrote it."""
    from scoring.store.alignment import normalised

    if not _has("alignments"):
        return pd.DataFrame(columns=["question_id", "norm", "sentence", "citations", "opinions", "aligners_disagree",
                                     "confidence", "runs", "question"])
    sql = ALIGNMENT_QUEUE_SQL.replace("{normalised}", normalised("text"))
    return query(sql, [[*base.run_ids, *cand.run_ids], suite, limit])


def question_claims(suite: str, question_id: str) -> pd.DataFrame:
    """The question's expected claims (claim_id, proposition), in claim ID order."""
    return query("SELECT claim_id, proposition FROM expected_claims WHERE suite = ? AND question_id = ? "
                 "ORDER BY claim_id", [suite, question_id])


class _Units:
    """The suite's documents (or chunks, in a passage-level suite), looked up one at a time."""

    def __init__(self, suite: str, unit: str):
        self.suite, self.unit = suite, unit

    def __contains__(self, item: object) -> bool:
        table = "chunks" if self.unit == "chunk" else "documents"
        column = "chunk_id" if self.unit == "chunk" else "doc_id"
        extra = " AND run_id IS NULL" if self.unit == "chunk" else ""
        found = query(f"SELECT count(*) AS n FROM {table} WHERE suite = ? AND {column} = ?{extra}",
                      [self.suite, str(item)])
        return bool(found["n"].iloc[0])


def record_decision(suite: str, fields: dict[str, Any]) -> Any:
    """Check one decision of the reviewer (review mode) against the question's labels as the database
    holds them, append it to the reviewer's file (durable before this returns) and ask for a refresh.
    Raises ValidationError, nothing written, when it breaks a rule."""
    from scoring.store.background import refresher
    from scoring.store.reviews import Known
    from scoring.store.reviews import record_decision as record

    mode = review_mode()
    if mode is None:
        raise RuntimeError("the dashboard is not in review mode")
    workspace, reviewer = mode
    question_id = str(fields.get("question_id"))
    grades, claims = query_many(
        ("SELECT doc_id, grade FROM labels WHERE suite = ? AND question_id = ?", [suite, question_id]),
        ("SELECT claim_id, docs FROM expected_claims WHERE suite = ? AND question_id = ?", [suite, question_id]))
    exists = question(suite, question_id) is not None
    unit = str(suites().set_index("suite").loc[suite, "unit"])
    known = Known(suite, _Units(suite, unit),
                  {question_id: {c: list(d) for c, d in zip(claims["claim_id"], claims["docs"])}} if exists else {},
                  unit, {question_id: dict(zip(grades["doc_id"], grades["grade"].astype(int)))})
    decision = record(workspace / "suites" / suite, known, {**fields, "reviewer": reviewer})
    refresher(workspace, db_path()).request()
    return decision


def refresh_status() -> Any:
    """Where the refreshes this dashboard asked for stand (`scoring.store.background.Status`); None
    outside review mode."""
    from scoring.store.background import refresher

    mode = review_mode()
    return None if mode is None else refresher(mode[0], db_path()).status()


def reviews(suite: str) -> pd.DataFrame:
    """Every review decision of the suite, newest first, with what became of it (table `reviews`)."""
    if "reviews" not in _catalog()[3]:
        return pd.DataFrame(columns=["reviewer", "line", "decided_at", "kind", "question_id", "doc_id", "claim_id",
                                     "grade", "supports", "note", "status"])
    return query("SELECT * EXCLUDE (suite) FROM reviews WHERE suite = ? ORDER BY decided_at DESC, reviewer, line",
                 [suite])


def disagreements(suite: str) -> pd.DataFrame:
    """The labels whose reviewers' latest decisions differ (one row per label and reviewer)."""
    found = reviews(suite)
    return found[found["status"] == "disagreed"].sort_values(["question_id", "kind", "doc_id", "reviewer"]) \
        .reset_index(drop=True)


def reviewer_agreement(suite: str) -> pd.DataFrame:
    """Per kind and pair of reviewers, their agreement (`scoring.decide.agreement.reviewer_agreement`)."""
    from scoring.decide.agreement import reviewer_agreement as agreement

    return agreement(reviews(suite))


def decisions_since(suite: str, moment: Any) -> tuple[int, int]:
    """(decisions, reviewers) recorded on the suite after `moment` (a recorded verdict's time)."""
    found = reviews(suite)
    if found.empty:
        return 0, 0
    later = found[pd.to_datetime(found["decided_at"]) > pd.Timestamp(moment)]
    return len(later), int(later["reviewer"].nunique())


def labels_hash(suite: str) -> str:
    """The suite's effective labels as scored (`suites.labels_hash`)."""
    return str(suites().set_index("suite").loc[suite, "labels_hash"])


def relabelling(base: Side, cand: Side) -> Any:
    """What the reviews changed for this comparison (`scoring.decide.relabel.relabelling`), with the live
    policy's verdict under each set of labels; cached until the database or the policy changes."""
    path, policy = db_path(), policy_path()
    return _relabelling(str(path), signature(path), base.spec, cand.spec, None if policy is None else str(policy),
                        _file_signature(policy))


@st.cache_resource(show_spinner=False, max_entries=8)
def _relabelling(path: str, sig: tuple[int, int, int], base: str, cand: str, policy: str | None,
                 policy_sig: Any) -> Any:
    del sig, policy_sig  # cache keys only
    from scoring.decide.policy import load_policy
    from scoring.decide.relabel import relabelling as compute

    return compute(Path(path), base, cand, policy=load_policy(policy) if policy else None)


# -- the release matrix: one baseline against many candidates --------------------------------------


def matrix_candidates(suite: str, baseline: Side) -> tuple[list[Side], list[tuple[str, str]]]:
    """Every side of the suite that can be compared with `baseline` (runs, then groups), and
    (name, reason) for those `scoring.decide.sides.refusals` refuses (the baseline itself, a group
    holding its run, another suite version ...)."""
    fine, refused = [], []
    for side in sides(suite):
        if side.name == baseline.name:
            continue
        reasons = scoring_sides.refusals(baseline, side)
        if reasons:
            refused.append((side.name, reasons[0]))
        else:
            fine.append(side)
    return fine, refused


def release_matrix(suite: str, baseline: Side, candidates: Sequence[Side], metrics: Sequence[str],
                   slice_names: Sequence[str]) -> Any:
    """The baseline against every candidate on `metrics` x `slice_names`, set-based
    (`scoring.decide.matrix.matrix`: one read of the scores, one batch of statistics, Holm across the
    cells asked for), with each side's failure rate, latency p95, mean cost and Judged@k. Cached
    until the database changes."""
    path = db_path()
    try:
        return _release_matrix(str(path), signature(path), suite, baseline.name,
                               tuple(c.name for c in candidates), tuple(_metric(m) for m in metrics),
                               tuple(slice_names))
    except READ_ERRORS as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error


@st.cache_resource(show_spinner=False, max_entries=16)
def _release_matrix(path: str, sig: tuple[int, int, int], suite: str, baseline: str, candidates: tuple[str, ...],
                    metrics: tuple[str, ...], slice_names: tuple[str, ...]) -> Any:
    from scoring.decide.matrix import matrix

    table = _catalog_of(path, sig)[2]
    by_name = {s.name: s for s in scoring_sides.sides_of(table[table["suite"] == suite].reset_index(drop=True))}
    with Database(path).reading(sig) as con:
        return matrix(con, by_name[baseline], [by_name[c] for c in candidates], metrics, slice_names)


def matrix_verdicts(baseline: Side, candidates: Sequence[Side]) -> dict[str, str]:
    """Each candidate's verdict under the live policy (`statistics`, cached per pair), by name; empty
    without a policy. A candidate whose comparison scoring refuses is left out."""
    if policy_path() is None:
        return {}
    out = {}
    for cand in candidates:
        try:
            verdict = statistics(baseline, cand).verdict
        except StatisticsUnavailable:
            continue
        if verdict is not None:
            out[cand.name] = str(verdict.verdict)
    return out


def recorded_verdicts(suite: str, baseline: Side) -> pd.DataFrame:
    """The newest recorded verdict (table `verdicts`) of each candidate against exactly the baseline's
    runs: candidate (name as recorded), verdict, policy_name, created_at. Empty when none."""
    if not _has("verdicts"):
        return pd.DataFrame(columns=["candidate", "verdict", "policy_name", "created_at"])
    return query(
        """SELECT candidate, arg_max(verdict, created_at) AS verdict, arg_max(policy_name, created_at) AS policy_name,
                  max(created_at) AS created_at
           FROM verdicts WHERE suite = ? AND list_sort(baseline_runs) = list_sort(?::VARCHAR[])
           GROUP BY candidate ORDER BY candidate""",
        [suite, list(baseline.run_ids)])


# -- the standing baseline and the history of releases --------------------------------------------


def pinned_baseline(suite: str) -> str | None:
    """The side name pinned as the suite's standing baseline (table `baseline_pins`, published by a
    refresh from the workspace's `suites/<suite>/baseline.jsonl`: the last line wins), or None."""
    if not _has("baseline_pins"):
        return None
    found = query("SELECT baseline FROM baseline_pins WHERE suite = ? ORDER BY line DESC LIMIT 1", [suite])
    return None if found.empty else str(found.iloc[0, 0])


def release_history(suite: str) -> pd.DataFrame:
    """One row per release of the suite, oldest first: a run's release is its manifest's `release`
    field, else the run itself. Columns: release, created_at (the earliest manifest time of its
    runs, UTC), runs (their IDs), groups (the groups of repeats they belong to), and per metric the mean over its runs of each run's macro mean
    (`run_stats`; one run: its macro mean). Ordered by created_at, then release."""
    stats = run_stats(suite)
    manifests = runs(suite).set_index("run_id")["manifest"]
    stats["release"] = [str(json.loads(manifests.loc[r]).get("release") or r) for r in stats["run_id"]]
    stats["created_at"] = pd.to_datetime(stats["created_at"], utc=True)
    keys = [k for k in METRIC_KEYS if k in stats.columns]
    grouped = stats.groupby("release", sort=False)
    out = grouped[keys].mean()
    out["created_at"] = grouped["created_at"].min()
    out["runs"] = grouped["run_id"].agg(list)
    out["groups"] = grouped["run_group"].agg(lambda g: sorted({str(v) for v in g.dropna()}))
    out = out.reset_index().sort_values(["created_at", "release"], kind="stable").reset_index(drop=True)
    return out[["release", "created_at", "runs", "groups", *keys]]


SUITE_VERDICT_COLUMNS = ("created_at", "baseline", "candidate", "candidate_runs", "policy_name", "verdict",
                         "verdict_without_disputed")


def suite_verdicts(suite: str) -> pd.DataFrame:
    """Every verdict recorded for the suite (table `verdicts`), oldest first, with the candidate's
    runs; empty when none was recorded."""
    if not _has("verdicts"):
        return pd.DataFrame(columns=list(SUITE_VERDICT_COLUMNS))
    return query(
        """SELECT created_at, baseline, candidate, candidate_runs, policy_name, verdict, verdict_without_disputed
           FROM verdicts WHERE suite = ? ORDER BY created_at, verdict_id""", [suite])

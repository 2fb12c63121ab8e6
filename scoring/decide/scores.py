"""Reading per-question scores: the suite's questions, and both sides' score rows.

`read_rows` is the one read of `question_scores` (through the `scores_by_position` summary when the
database has it): per run and question, the record's status and the score columns asked for, with
latency and cost when read with detail. Everything else is a view of those rows: `side_scores`
collapses them per side (a group's value is the mean over the repeats that score the question),
`read_side_scores` reads without detail and collapses, `question_side_scores` collapses the rows of
one question the same way; `pair_records` is what a question's records say of the pair (missing,
failed). `read_questions` and `read_slice_columns` read the suite's questions in suite order (the
latter only the columns slices need).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import invalid
from ..metrics.registry import BY_KEY, REGISTRY
from ..store.schema import table_names
from ..store.workspace import HELDOUT

METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY)


COUNT_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(c for m in REGISTRY if m.pooled for c in m.pooled))


SCORE_COLUMNS: tuple[str, ...] = (*METRIC_KEYS, *COUNT_COLUMNS)
"""The per-question score columns a side holds (`ScoreRows.values`, `SideScores.columns`)."""


SIDES: tuple[str, ...] = ("baseline", "candidate")


def _read_questions(con: duckdb.DuckDBPyConnection, suite: str, with_text: bool = True) -> pd.DataFrame:
    """The suite's questions in suite order (index question_id); `text` None for every question
    when read without text."""
    text = "text" if with_text else "CAST(NULL AS VARCHAR) AS text"
    q = con.sql(
        f"SELECT question_id, position, {text}, type, split, critical, CAST(to_json(tags) AS VARCHAR) AS tags, "
        "answerable, disputed, cluster FROM questions WHERE suite = $suite", params={"suite": suite}
    ).to_arrow_table().to_pandas()
    order = np.argsort(q["position"].to_numpy(), kind="stable")
    if (order != np.arange(len(q))).any():  # sorted here: cheaper than ORDER BY on the text
        q = q.take(order).reset_index(drop=True)
    # few distinct tag lists: decode each once
    codes, lists = pd.factorize(q["tags"])
    decoded = np.empty(len(lists) + 1, dtype=object)
    for i, text_ in enumerate(lists):
        decoded[i] = tuple(json.loads(text_) or ())
    decoded[-1] = ()
    q["tags"] = decoded[codes]
    q["critical"] = q["critical"].astype(bool)
    q["answerable"] = q["answerable"].astype(bool)
    q["disputed"] = q["disputed"].astype(object).where(q["disputed"].notna(), None)
    q["cluster"] = q["cluster"].astype(object).where(q["cluster"].notna(), None)
    if not with_text:
        q["text"] = None
    return q.set_index("question_id")


RECORD_STATUSES: tuple[str, ...] = ("ok", "missing", "failed")
"""Record statuses (docs/schema.md), coded by position in `ScoreRows.status`."""


@dataclass(frozen=True)
class ScoreRows:
    """The question_scores rows of both sides as arrays, one entry per run x question.

    `side` 0 (baseline) or 1 (candidate); `run` the run's position in baseline runs + candidate runs;
    `slot` the question's position in the compared questions; `status` a code into `RECORD_STATUSES`;
    `values` one column per name of `columns` (NaN: n/a); `latency`, `cost` NaN when read without
    detail (`read_rows`).
    """

    run_ids: tuple[str, ...]
    side: np.ndarray
    run: np.ndarray
    slot: np.ndarray
    status: np.ndarray
    values: np.ndarray
    latency: np.ndarray
    cost: np.ndarray
    columns: tuple[str, ...] = SCORE_COLUMNS


def read_rows(con: duckdb.DuckDBPyConnection, suite: str, baseline: Sequence[str], candidate: Sequence[str],
              positions: np.ndarray, columns: Sequence[str] = SCORE_COLUMNS, *, detail: bool = True) -> ScoreRows:
    """Both sides' rows of `columns` (of `SCORE_COLUMNS`) for the questions at `positions` (suite
    order), with each record's status; with `detail`, its latency and cost too. The one read of
    per-question scores: `read_scores` and `read_side_scores` are views of it.

    Read from `scores_by_position` (`scoring.store.summaries`) when the database has it, else from
    `question_scores` joined with `questions`: the same rows either way."""
    columns = tuple(dict.fromkeys(columns))
    unknown = [n for n in columns if n not in SCORE_COLUMNS]
    if unknown:
        raise ValueError(f"unknown score column(s) {', '.join(unknown)}")
    run_ids = (*baseline, *candidate)
    # names from SCORE_COLUMNS only; flags are handed over as doubles (Arrow's own cast of a nullable
    # boolean costs more), numbers in their stored types (fewer bytes; `arrow_floats` widens them)
    cols = ", ".join(f"CAST(s.{n} AS DOUBLE) AS {n}" if n in BY_KEY and BY_KEY[n].value == "flag" else f"s.{n}"
                     for n in columns)
    extra = ", s.latency_ms, s.cost_usd" if detail else ""
    source, position = _score_source(con)
    read: dict[str, Any] = {}
    for run_id in dict.fromkeys(run_ids):  # one scan per run: with the summary, of that run's rows only
        read[run_id] = con.sql(
            f"SELECT {position} AS position, "
            "CAST(coalesce(list_position(?::VARCHAR[], s.status), 0) - 1 AS TINYINT) AS status, "
            f"{cols}{extra} "
            f"FROM {source} WHERE s.suite = ? AND s.run_id = ?",
            params=[list(RECORD_STATUSES), suite, run_id],
        ).to_arrow_table()  # the status is coded in the database: no text is handed over
    blocks = [read[run_id] for run_id in run_ids]  # a run on both sides is read once, used twice
    starts = np.cumsum([0] + [b.num_rows for b in blocks])

    def column(name: str, dtype: Any = float) -> np.ndarray:
        out = np.empty(int(starts[-1]), dtype=dtype)
        for block, start, end in zip(blocks, starts[:-1], starts[1:]):
            out[start:end] = arrow_floats(block.column(name)) if dtype is float else block.column(name).to_numpy()
        return out

    slot = position_slots(positions, column("position", np.int64))
    keep = None if (slot >= 0).all() else np.flatnonzero(slot >= 0)  # rows of left-out (held-out) questions go
    run = np.repeat(np.arange(len(blocks), dtype=np.int64), np.diff(starts))
    status = column("status", np.int8)
    if (status < 0).any():
        raise invalid(f"question_scores holds a status other than {', '.join(RECORD_STATUSES)}; refresh the database "
                      "with this version of ragslice")
    values = np.empty((int(starts[-1]), len(columns)), order="F")  # column-major: columns are read one at a time
    for k, name in enumerate(columns):
        for block, start, end in zip(blocks, starts[:-1], starts[1:]):
            values[start:end, k] = arrow_floats(block.column(name))
    latency, cost = (column("latency_ms"), column("cost_usd")) if detail else (
        np.full(int(starts[-1]), np.nan), np.full(int(starts[-1]), np.nan))
    if keep is not None:
        slot, run, status, values = slot.take(keep), run.take(keep), status.take(keep), values.take(keep, axis=0)
        latency, cost = latency.take(keep), cost.take(keep)
    return ScoreRows(
        run_ids=tuple(run_ids),
        side=(run >= len(baseline)).astype(np.int8),
        run=run,
        slot=slot,
        status=status,
        values=np.asfortranarray(values),
        latency=latency,
        cost=cost,
        columns=columns,
    )


def position_slots(positions: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each question position in `at`, its index in `positions` (distinct positions in suite
    order); -1 where it is not among them."""
    positions, at = np.asarray(positions, dtype=np.int64), np.asarray(at, dtype=np.int64)
    size = max(int(positions.max()) if len(positions) else -1, int(at.max()) if len(at) else -1) + 1
    lookup = np.full(size, -1, dtype=np.int64)
    lookup[positions] = np.arange(len(positions))
    return lookup.take(at)


def arrow_floats(column: Any) -> np.ndarray:
    """An Arrow column (double, integer or boolean) as float64, NULL as NaN."""
    if not pa.types.is_floating(column.type):
        column = pc.cast(column, pa.float64())
    return column.to_numpy()


def _score_source(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    """(FROM clause over the scored rows as `s`, expression of the question's position): the
    `scores_by_position` summary when the database has it, else `question_scores` joined with
    `questions` (the same rows either way)."""
    if "scores_by_position" in table_names(con):
        return "scores_by_position s", "s.position"
    return "question_scores s JOIN questions q ON q.suite = s.suite AND q.question_id = s.question_id", "q.position"


def read_slice_columns(con: duckdb.DuckDBPyConnection, suite: str) -> pd.DataFrame:
    """The suite's questions in suite order with what `default_slices` needs and nothing else:
    `position`, `type` and `split` (categoricals), `critical`, `answerable`; row i is the i-th
    question (RangeIndex, no question IDs). The same slices as `read_questions` gives, read in a
    fraction of its time (no IDs, text or tags are handed over). When a question carries a cluster,
    `cluster` too (None where none is given)."""
    types, splits, clustered = con.execute(
        "SELECT list(DISTINCT type ORDER BY type), list(DISTINCT split ORDER BY split), count(cluster) > 0 "
        "FROM questions WHERE suite = ?", [suite]).fetchall()[0]
    types, splits = list(types or []), list(splits or [])
    params: dict[str, Any] = {"suite": suite, **{f"t{i}": v for i, v in enumerate(types)},
                              **{f"s{i}": v for i, v in enumerate(splits)}}

    def code(column: str, prefix: str, values: list[str]) -> str:  # parameters named by a counter only
        if not values:
            return "CAST(NULL AS SMALLINT)"
        cases = " ".join(f"WHEN ${prefix}{i} THEN {i}" for i in range(len(values)))
        return f"CAST(CASE {column} {cases} END AS SMALLINT)"

    table = con.sql(
        f"SELECT position, {code('type', 't', types)} AS type, {code('split', 's', splits)} AS split, critical, "
        f"answerable{', cluster' if clustered else ''} FROM questions WHERE suite = $suite", params=params).to_arrow_table()
    position = table.column("position").to_numpy().astype(np.int64)
    order = None if bool((position[1:] > position[:-1]).all()) else np.argsort(position, kind="stable")

    def column(name: str) -> np.ndarray:  # in suite order (sorted here: cheaper than ORDER BY)
        values = table.column(name).to_numpy(zero_copy_only=False)
        return values if order is None else values.take(order)

    out = pd.DataFrame({
        "position": column("position"),
        "type": pd.Categorical.from_codes(column("type").astype(np.int64), categories=types),
        "split": pd.Categorical.from_codes(column("split").astype(np.int64), categories=splits),
        "critical": column("critical").astype(bool),
        "answerable": column("answerable").astype(bool),
    })
    if clustered:
        out["cluster"] = pd.Series(column("cluster"), dtype=object)
    return out


@dataclass(frozen=True)
class SideScores:
    """Both sides' per-question scores over given questions (row i: the question at `positions[i]`),
    without per-record detail (`read_side_scores`).

    `columns[s][name]`: side s's (0 baseline, 1 candidate) values of a `SCORE_COLUMNS` column, each
    the mean over the side's runs that scored the question (NaN: n/a, or no row): what `side_values`
    gives for the same runs, bit for bit. `present[s]`: the side has a row for the question;
    `missing[s]`, `failed[s]`: one of its runs has a missing / failed record for it.
    """

    run_ids: tuple[tuple[str, ...], tuple[str, ...]]
    positions: np.ndarray
    columns: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]
    present: tuple[np.ndarray, np.ndarray]
    missing: tuple[np.ndarray, np.ndarray]
    failed: tuple[np.ndarray, np.ndarray]


def read_side_scores(con: duckdb.DuckDBPyConnection, suite: str, baseline: Sequence[str], candidate: Sequence[str],
                     positions: np.ndarray, columns: Sequence[str] = SCORE_COLUMNS) -> SideScores:
    """Both sides' `columns` per question at `positions` (suite order), with each question's status:
    `read_rows` without latency or cost, collapsed per side (`side_scores`)."""
    rows = read_rows(con, suite, baseline, candidate, positions, columns, detail=False)
    return side_scores(rows, baseline, candidate, positions)


def side_scores(rows: ScoreRows, baseline: Sequence[str], candidate: Sequence[str], positions: np.ndarray
                ) -> SideScores:
    """`SideScores` from score rows (`read_rows`, over the questions at `positions`): per side and
    question, the mean over the side's runs of each column read."""
    size = len(positions)
    ids = pd.RangeIndex(size)
    columns, present, missing, failed = [], [], [], []
    for side in (0, 1):
        frame = _collapse(rows, side, ids)
        columns.append({n: frame[n].to_numpy() for n in rows.columns})
        own = rows.side == side
        slot, status = rows.slot[own], rows.status[own]
        present.append(np.bincount(slot, minlength=size) > 0)
        missing.append(np.bincount(slot, weights=status == RECORD_STATUSES.index("missing"), minlength=size) > 0)
        failed.append(np.bincount(slot, weights=status == RECORD_STATUSES.index("failed"), minlength=size) > 0)
    return SideScores((tuple(baseline), tuple(candidate)), np.asarray(positions, dtype=np.int64),
                      (columns[0], columns[1]), (present[0], present[1]), (missing[0], missing[1]),
                      (failed[0], failed[1]))


def record_frame(rows: ScoreRows, ids: pd.Index) -> pd.DataFrame:
    """One row per record of either side (every repeat): run_id, question_id, status, latency_ms,
    cost_usd, side."""
    return pd.DataFrame({
        "run_id": np.array(rows.run_ids, dtype=object)[rows.run],
        "question_id": ids.take(rows.slot),
        "status": np.array(RECORD_STATUSES, dtype=object)[rows.status],
        "latency_ms": rows.latency,
        "cost_usd": rows.cost,
        "side": np.array(SIDES, dtype=object)[rows.side],
    })


def side_values(rows: ScoreRows, side: int, ids: pd.Index) -> pd.DataFrame:
    """Per-question means over the side's (0 baseline, 1 candidate) repeats of every metric and
    pooling count (NaN where no repeat scored the question), in suite order (`ids`)."""
    return _collapse(rows, side, ids)


def _collapse(rows: ScoreRows, side: int, ids: pd.Index) -> pd.DataFrame:
    """Per-question means over the side's repeats (NaN where no repeat scored the question), in suite order."""
    own = np.flatnonzero(rows.side == side)
    slot = rows.slot[own]
    if len(own) == len(ids) and len(own) and own[-1] - own[0] == len(own) - 1 and \
            (slot == np.arange(len(ids))).all():  # one row per question, consecutive, in suite order
        block = rows.values[own[0]:own[-1] + 1]
        return pd.DataFrame(block, index=ids, columns=list(rows.columns), copy=False)
    return pd.DataFrame(_means(rows.values, own, slot, len(ids)), index=ids, columns=list(rows.columns), copy=False)


def _means(values: np.ndarray, own: np.ndarray, slot: np.ndarray, size: int) -> np.ndarray:
    """Per question 0 .. size - 1, each column's mean over the rows `own` of `values` at that question
    (`slot[i]`: the question of row `own[i]`) that score it; NaN where none does. The one mean over a
    side's repeats."""
    out = np.full((size, values.shape[1]), np.nan, order="F")  # column-major, as pandas stores it
    single = len(slot) == 0 or np.bincount(slot).max() == 1  # one row per question: nothing to average
    with np.errstate(invalid="ignore", divide="ignore"):
        for k in range(values.shape[1]):
            column = values[own, k]
            if single:
                out[slot, k] = column
                continue
            scored = ~np.isnan(column)
            total = np.bincount(slot, weights=np.where(scored, column, 0.0), minlength=size)
            count = np.bincount(slot, weights=scored, minlength=size)
            out[:, k] = np.where(count > 0, total / count, np.nan)
    return out


def question_side_scores(rows: pd.DataFrame, baseline: Sequence[str], candidate: Sequence[str], position: int,
                         columns: Sequence[str]) -> SideScores:
    """Both sides' `columns` on the one question at `position`, from its score rows (`run_id`, `missing`,
    `failed` and `columns`; one row per run that has one): `SideScores` over that question alone, each
    side's value the mean over its runs that score it, as `side_scores` gives it for every question."""
    values = rows[list(columns)].to_numpy(dtype=float).reshape(len(rows), len(columns))
    found, present, missing, failed = [], [], [], []
    for runs in (baseline, candidate):
        own = np.flatnonzero(rows["run_id"].isin(list(runs)).to_numpy())
        means = _means(values, own, np.zeros(len(own), dtype=np.int64), 1)
        found.append({n: means[:, k] for k, n in enumerate(columns)})
        present.append(np.array([len(own) > 0]))
        missing.append(np.array([bool(rows["missing"].to_numpy(dtype=bool).take(own).any())]))
        failed.append(np.array([bool(rows["failed"].to_numpy(dtype=bool).take(own).any())]))
    return SideScores((tuple(baseline), tuple(candidate)), np.array([position], dtype=np.int64),
                      (found[0], found[1]), (present[0], present[1]), (missing[0], missing[1]), (failed[0], failed[1]))


def pair_records(scores: SideScores) -> tuple[np.ndarray, np.ndarray]:
    """Per question, (missing, failed) for the pair, what its status says before any value
    (`scoring.decide.change.record_codes`): either side's record is missing, or the side has no row
    for the question at all / either side's record failed."""
    missing = scores.missing[0] | scores.missing[1] | ~scores.present[0] | ~scores.present[1]
    return missing, scores.failed[0] | scores.failed[1]


def read_questions(con: duckdb.DuckDBPyConnection, suite: str, *, with_text: bool = True) -> pd.DataFrame:
    """Every question of `suite` in suite order (see `Inputs.questions`)."""
    return _read_questions(con, suite, with_text)


def read_scores(con: duckdb.DuckDBPyConnection, suite: str, baseline: Sequence[str], candidate: Sequence[str], *,
                include_heldout: bool = True, with_text: bool = True, questions: pd.DataFrame | None = None
                ) -> tuple[pd.DataFrame, ScoreRows]:
    """The compared questions of `suite` in suite order (see `Inputs.questions`) and both sides'
    score rows, for the runs given (no check that they may be compared: see `read_inputs`).
    `questions`: what `read_questions` returned for the suite, when already read."""
    if questions is None:
        questions = _read_questions(con, suite, with_text)
    if not include_heldout:
        questions = questions[questions["split"] != HELDOUT]
    return questions, read_rows(con, suite, baseline, candidate, questions["position"].to_numpy())


__all__ = ["COUNT_COLUMNS", "METRIC_KEYS", "RECORD_STATUSES", "SCORE_COLUMNS", "SIDES", "ScoreRows", "SideScores",
           "arrow_floats", "pair_records", "position_slots", "question_side_scores", "read_questions", "read_rows",
           "read_scores", "read_side_scores", "read_slice_columns", "record_frame", "side_scores", "side_values"]

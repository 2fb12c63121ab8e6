"""What the relabelling changed: a comparison under the suite's labels as its files have them, beside
the same comparison under the reviewed labels the database holds.

Only the questions a review changed can move (`label_changes`); each side's runs are re-scored on those
questions under the unreviewed labels (`scoring.store.refresh.rescore_unreviewed`, on a view of the file
that holds those questions only: a question's scores read its own rows alone), and the comparison and
its verdict are computed again on the scores with those rows swapped in. With no label change on the
compared questions both comparisons are one, computed when first asked for.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from ..metrics.registry import BY_KEY
from ..store.database import Database
from ..store.refresh import rescore_unreviewed
from ..store.schema import table_names
from .comparison import Comparison, compare, read_inputs
from .policy import Policy
from .scores import SCORE_COLUMNS
from .sides import check_comparable, read_runs, resolve_side

CHANGE_COLUMNS: tuple[str, ...] = ("question_id", "metric", "baseline_unreviewed", "baseline", "candidate_unreviewed",
                                   "candidate")


@dataclass(frozen=True)
class Relabelling:
    """`changes`: the suite's label changes (rows of `label_changes`); `values`: per changed question
    and metric, each side's value under the unreviewed labels and under the reviewed ones
    (`CHANGE_COLUMNS`, only where one of them differs); `reviewed`, `unreviewed`: the comparison under
    each set of labels (their verdicts say whether the relabelling moves the decision), from
    `comparisons` (called once, when one of them is first asked for)."""

    changes: pd.DataFrame
    values: pd.DataFrame
    comparisons: Callable[[], tuple[Comparison, Comparison]] = field(repr=False, compare=False)

    @cached_property
    def _compared(self) -> tuple[Comparison, Comparison]:
        return self.comparisons()

    @property
    def reviewed(self) -> Comparison:
        return self._compared[0]

    @property
    def unreviewed(self) -> Comparison:
        return self._compared[1]

    @property
    def verdict_moves(self) -> bool:
        return self.reviewed.verdict.verdict != self.unreviewed.verdict.verdict

    def gates_that_move(self) -> list[str]:
        """The gates that pass under one set of labels and fail under the other."""
        before = {g.name: g.passed for g in self.unreviewed.verdict.gates}
        return [g.name for g in self.reviewed.verdict.gates if before.get(g.name) != g.passed]


def relabelling(db: Path, baseline: str, candidate: str, *, policy: Policy | None = None,
                metrics: tuple[str, ...] = tuple(BY_KEY), level: int = 1) -> Relabelling:
    """The comparison of `baseline` and `candidate` (names as `compare` takes them) under the
    reviewed and the unreviewed labels."""
    door = Database(db)
    with door.connect() as con:
        sides = read_runs(con, table_names(con))
        first = resolve_side(sides, baseline, "baseline")
        check_comparable(first, resolve_side(sides, candidate, "candidate"))  # what `read_inputs` refuses first
        changes = con.execute("SELECT * FROM label_changes WHERE suite = ? ORDER BY question_id, doc_id",
                              [first.suite]).df()
        touched = sorted(q for (q,) in con.execute(
            "SELECT DISTINCT c.question_id FROM label_changes c "
            "JOIN questions q ON q.suite = c.suite AND q.question_id = c.question_id WHERE c.suite = ?",
            [first.suite]).fetchall())
        inputs = read_inputs(con, baseline, candidate, with_text=False) if touched else None
    if inputs is None:  # no review changed a label these sides are compared on: one comparison, both labels

        def once() -> tuple[Comparison, Comparison]:
            with door.connect() as con:
                same = compare(read_inputs(con, baseline, candidate, with_text=False), baseline, candidate,
                               policy=policy)
            return same, same

        return Relabelling(changes, pd.DataFrame([], columns=list(CHANGE_COLUMNS)), once)
    reviewed = compare(inputs, baseline, candidate, policy=policy)
    compared = inputs.questions.index
    touched = sorted(compared[compared.isin(touched)])
    if not touched:
        return Relabelling(changes, pd.DataFrame([], columns=list(CHANGE_COLUMNS)), lambda: (reviewed, reviewed))
    runs = [*inputs.baseline.run_ids, *inputs.candidate.run_ids]
    with _questions_only(db, runs, touched) as scratch:
        rescored = rescore_unreviewed(scratch, runs, touched, level=level)
    unreviewed = compare(_swapped(inputs, rescored), baseline, candidate, policy=policy)
    rows = []
    for q in touched:
        for key in metrics:
            old = [unreviewed.values[s][key].get(q) for s in ("baseline", "candidate")]
            new = [reviewed.values[s][key].get(q) for s in ("baseline", "candidate")]
            if any(_differs(a, b) for a, b in zip(old, new)):
                rows.append({"question_id": q, "metric": key, "baseline_unreviewed": old[0], "baseline": new[0],
                             "candidate_unreviewed": old[1], "candidate": new[1]})
    return Relabelling(changes, pd.DataFrame(rows, columns=list(CHANGE_COLUMNS)), lambda: (reviewed, unreviewed))


_BY_QUESTION = ("records", "claims")
"""Tables of the re-scored runs' rows, kept for those runs and the touched questions (and their
`retrieved_slots`, found by the questions' codes)."""
_OF_QUESTION = ("questions", "labels", "expected_claims", "assessed_claims", "label_changes")
"""Tables of the suite's questions, kept for the touched questions."""
_WHOLE = ("runs", "suites", "documents", "document_codes", "chunks")
"""Tables re-scoring reads whole."""


@contextmanager
def _questions_only(db: Path, run_ids: list[str], question_ids: list[str]) -> Iterator[duckdb.DuckDBPyConnection]:
    """`Database.scratch` for re-scoring `question_ids` in `run_ids`: `stored` holds the tables
    re-scoring reads, cut to those runs and questions (read once from the file, attached read-only)."""
    con = duckdb.connect()
    try:
        con.execute("ATTACH ? AS source (READ_ONLY)", [str(db)])
        con.execute("ATTACH ':memory:' AS stored")
        con.execute("USE stored")
        for table in _BY_QUESTION:
            con.execute(f"CREATE TABLE stored.{table} AS SELECT * FROM source.{table} "
                        "WHERE list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id)",
                        [list(run_ids), list(question_ids)])
        for table in _OF_QUESTION:
            con.execute(f"CREATE TABLE stored.{table} AS SELECT * FROM source.{table} "
                        "WHERE list_contains(?::VARCHAR[], question_id)", [list(question_ids)])
        # the questions' codes in the runs' suite, then a filter on them (a join would hash every slot)
        codes = [code for (code,) in con.execute(
            "SELECT position FROM stored.questions WHERE suite IN "
            "(SELECT suite FROM source.runs WHERE list_contains(?::VARCHAR[], run_id))", [list(run_ids)]).fetchall()]
        con.execute("CREATE TABLE stored.retrieved_slots AS SELECT * FROM source.retrieved_slots "
                    "WHERE list_contains(?::VARCHAR[], run_id) AND list_contains(?::INTEGER[], question_code)",
                    [list(run_ids), codes])
        for table in _WHOLE:
            con.execute(f"CREATE VIEW stored.{table} AS SELECT * FROM source.{table}")
        yield con
    finally:
        con.close()


def _differs(a: float | None, b: float | None) -> bool:
    a_na, b_na = a is None or a != a, b is None or b != b
    return a_na != b_na or (not a_na and abs(float(a) - float(b)) > 1e-12)


def _swapped(inputs, rescored: pd.DataFrame):
    """The inputs with the rescored rows' values (and the questions' answerability) in place of the stored."""
    if rescored.empty:
        return inputs
    rows = inputs.rows
    n_slots = max(len(inputs.questions), 1)
    at = pd.Series(np.arange(len(rows.run)), index=np.asarray(rows.run, dtype=np.int64) * n_slots
                   + np.asarray(rows.slot, dtype=np.int64))
    at = at[~at.index.duplicated(keep="last")]
    run = pd.Index(list(rows.run_ids)).get_indexer(rescored["run_id"])
    slot = inputs.questions.index.get_indexer(rescored["question_id"])
    found = (run >= 0) & (slot >= 0)
    where = pd.Index(at.index).get_indexer(run[found].astype(np.int64) * n_slots + slot[found])
    hit = where >= 0
    values = np.array(rows.values, dtype=float, order="F", copy=True)
    values[at.to_numpy()[where[hit]]] = np.column_stack(
        [rescored[c].to_numpy(dtype=float, na_value=np.nan) for c in SCORE_COLUMNS])[found][hit]
    questions = inputs.questions.copy()
    answerable = rescored.groupby("question_id")["answerable"].first()
    questions.loc[answerable.index.intersection(questions.index), "answerable"] = answerable.astype(bool)
    return replace(inputs, rows=replace(rows, values=values), questions=questions)


__all__ = ["CHANGE_COLUMNS", "Relabelling", "relabelling"]

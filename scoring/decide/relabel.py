"""What the relabelling changed: a comparison under the suite's labels as its files have them, beside
the same comparison under the reviewed labels the database holds.

Only the questions a review changed can move (`label_changes`); each side's runs are re-scored on those
questions under the unreviewed labels (`scoring.store.refresh.rescore_unreviewed`), and the comparison
and its verdict are computed again on the scores with those rows swapped in.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics.registry import BY_KEY
from ..store.database import Database
from ..store.refresh import rescore_unreviewed
from .comparison import Comparison, compare, read_inputs
from .policy import Policy
from .scores import SCORE_COLUMNS

CHANGE_COLUMNS: tuple[str, ...] = ("question_id", "metric", "baseline_unreviewed", "baseline", "candidate_unreviewed",
                                   "candidate")


@dataclass(frozen=True)
class Relabelling:
    """`changes`: the suite's label changes (rows of `label_changes`); `values`: per changed question
    and metric, each side's value under the unreviewed labels and under the reviewed ones
    (`CHANGE_COLUMNS`, only where one of them differs); `reviewed`, `unreviewed`: the comparison under
    each set of labels (their verdicts say whether the relabelling moves the decision)."""

    changes: pd.DataFrame
    values: pd.DataFrame
    reviewed: Comparison
    unreviewed: Comparison

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
        inputs = read_inputs(con, baseline, candidate, with_text=False)
        changes = con.execute("SELECT * FROM label_changes WHERE suite = ? ORDER BY question_id, doc_id",
                              [inputs.baseline.suite]).df()
    reviewed = compare(inputs, baseline, candidate, policy=policy)
    touched = sorted(set(changes["question_id"]) & set(inputs.questions.index))
    runs = [*inputs.baseline.run_ids, *inputs.candidate.run_ids]
    with door.scratch() as scratch:
        rescored = rescore_unreviewed(scratch, runs, touched, level=level) if touched else pd.DataFrame()
    unreviewed = compare(_swapped(inputs, rescored), baseline, candidate, policy=policy)
    rows = []
    for q in touched:
        for key in metrics:
            old = [unreviewed.values[s][key].get(q) for s in ("baseline", "candidate")]
            new = [reviewed.values[s][key].get(q) for s in ("baseline", "candidate")]
            if any(_differs(a, b) for a, b in zip(old, new)):
                rows.append({"question_id": q, "metric": key, "baseline_unreviewed": old[0], "baseline": new[0],
                             "candidate_unreviewed": old[1], "candidate": new[1]})
    return Relabelling(changes, pd.DataFrame(rows, columns=list(CHANGE_COLUMNS)), reviewed, unreviewed)


def _differs(a: float | None, b: float | None) -> bool:
    a_na, b_na = a is None or a != a, b is None or b != b
    return a_na != b_na or (not a_na and abs(float(a) - float(b)) > 1e-12)


def _swapped(inputs, rescored: pd.DataFrame):
    """The inputs with the rescored rows' values (and the questions' answerability) in place of the stored."""
    if rescored.empty:
        return inputs
    rows = inputs.rows
    slot_of = {q: i for i, q in enumerate(inputs.questions.index)}
    run_of = {r: i for i, r in enumerate(rows.run_ids)}
    values = rows.values.copy()
    at = {(int(r), int(s)): i for i, (r, s) in enumerate(zip(rows.run, rows.slot))}
    for _, row in rescored.iterrows():
        i = at.get((run_of.get(row["run_id"], -1), slot_of.get(row["question_id"], -1)))
        if i is None:
            continue
        values[i] = [np.nan if row[c] is None or pd.isna(row[c]) else float(row[c]) for c in SCORE_COLUMNS]
    questions = inputs.questions.copy()
    answerable = rescored.groupby("question_id")["answerable"].first()
    questions.loc[answerable.index.intersection(questions.index), "answerable"] = answerable.astype(bool)
    return replace(inputs, rows=replace(rows, values=np.asfortranarray(values)), questions=questions)


__all__ = ["CHANGE_COLUMNS", "Relabelling", "relabelling"]

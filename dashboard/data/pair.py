"""The two sides of a comparison and their per-question scores, read once and shared by the page's
figures: which sides a suite offers and whether two may be compared (`scoring.decide.sides`), both
sides' scores over every question (`Pair`, `scoring.decide.scores`), and what `scoring.decide.aggregates`
computes from them: the headline, the aggregates by slice and the aggregation choices.

Statuses come from the rule of change (`scoring.decide.change`): `Pair.codes`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scoring.decide import aggregates as scoring_aggregates
from scoring.decide import change
from scoring.decide import scores as scoring_scores
from scoring.decide import sides as scoring_sides
from scoring.decide.sides import Compatibility, Side
from scoring.metrics import BY_KEY, slices
from scoring.store.database import Signature

from .database import (METRIC_KEYS, allowed_metric, copied, current, has, on_file, policy_path, query, reading, runs,
                       shared, suites)

SLICE_COLUMNS: tuple[str, ...] = slices.PARTITIONS
"""The slice families `aggregates` reads (`scoring.metrics.slices`: those that partition the suite)."""

STATUSES: tuple[str, ...] = change.STATUSES


# -- the sides -------------------------------------------------------------------------------------


def sides(suite: str) -> list[Side]:
    """Every run of the suite, then every group of repeats (`scoring.decide.sides.sides_of`)."""
    return scoring_sides.sides_of(runs(suite))


def compatibility(suite: str, base: Side, cand: Side) -> Compatibility:
    """Refusals and caveats for the two sides (`scoring.decide.sides.compatibility`)."""
    row = suites().set_index("suite").loc[suite]
    return scoring_sides.compatibility(runs(suite), str(row["version"]), int(row["n_questions"]), base, cand)


# -- both sides' per-question scores --------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """Both sides of a comparison over every question of the suite, in suite order (row i: the i-th
    question of `questions_at`).

    `metrics`: the metrics held; `scores`: what was read (`scoring.decide.scores.SideScores`): per side (0
    baseline, 1 candidate) the per-question mean over its runs of each metric held and, for the
    whole pair, of every pooling count (NaN: n/a, or no row), and whether the side has a row;
    `missing`, `failed`: either side has no record / a failed record for the question (no row at all
    counts as missing, `scoring.decide.scores.pair_records`); `records`: the questions and score rows `scoring.decide.scores.read_scores` read
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


@shared(max_entries=8)
def questions_at(path: str, sig: Signature, suite: str) -> pd.DataFrame:
    """The suite's questions in suite order with their slice columns only: position, type, split,
    critical, answerable (`scoring.decide.scores.read_slice_columns`; IDs, text and tags are read for the
    rows shown, `dashboard.data.deltas`), shared."""
    with reading(path, sig) as con:
        return scoring_scores.read_slice_columns(con, suite)


@shared(max_entries=4)
def _full_questions(path: str, sig: Signature, suite: str) -> pd.DataFrame:
    """The suite's questions without their text (`scoring.decide.scores.read_questions`), shared: what a
    comparison with every record's detail needs."""
    with reading(path, sig) as con:
        return scoring_scores.read_questions(con, suite, with_text=False)


@shared(max_entries=8)
def _positions(path: str, sig: Signature, suite: str) -> np.ndarray:
    """The positions of the suite's questions in suite order (row i of `questions_at`): 0 .. n - 1
    when they are that (one aggregate read), else read."""
    with reading(path, sig) as con:
        low, high, size = con.execute("SELECT min(position), max(position), count(*) FROM questions WHERE suite = ?",
                                      [suite]).fetchall()[0]
        if not size or (low, high) == (0, size - 1):  # a suite's positions are its questions' order in its file
            return np.arange(size, dtype=np.int64)
        found = con.execute("SELECT position FROM questions WHERE suite = ? ORDER BY position", [suite]).fetchnumpy()
    return np.asarray(found["position"], dtype=np.int64)


def needs_records(base: Sequence[str], cand: Sequence[str]) -> bool:
    """Whether the statistics of these sides need every record's detail: a group of repeats (its
    flaky questions) or a live policy (its gates)."""
    return len(base) > 1 or len(cand) > 1 or policy_path() is not None


@shared(max_entries=6)
def pair_at(path: str, sig: Signature, suite: str, base: tuple[str, ...], cand: tuple[str, ...],
            columns: tuple[str, ...] = scoring_scores.SCORE_COLUMNS, records: bool = False) -> Pair:
    """`columns` (metrics, and pooling counts) of both sides (`scoring.decide.scores.read_side_scores`: a
    float per column, question and side, about 300 bytes per question for every column); with
    `records`, every record's detail instead (`scoring.decide.scores.read_scores`, kept for the statistics)."""
    positions = _positions(path, sig, suite)
    kept = None
    with reading(path, sig) as con:
        if records:
            kept = scoring_scores.read_scores(con, suite, base, cand, questions=_full_questions(path, sig, suite))
            scores = scoring_scores.side_scores(kept[1], base, cand, positions)
        else:
            scores = scoring_scores.read_side_scores(con, suite, base, cand, positions, columns)
    metrics = tuple(c for c in columns if c in BY_KEY)
    missing, failed = scoring_scores.pair_records(scores)
    return Pair(metrics, scores, missing, failed, kept, {})


def pair_of(suite: str, base: Side, cand: Side, metrics: Sequence[str] | None = None) -> Pair:
    """Every metric and pooling count of both sides (with every record's detail when the statistics
    will need it, `needs_records`), or only `metrics`."""
    b, c = tuple(base.run_ids), tuple(cand.run_ids)
    if metrics is not None:
        return on_file(pair_at, suite, b, c, tuple(allowed_metric(m) for m in metrics))
    return on_file(pair_at, suite, b, c, scoring_scores.SCORE_COLUMNS, needs_records(b, c))


def questions_of(suite: str) -> pd.DataFrame:
    """The suite's questions' slice columns, in suite order (shared; see `questions_at`)."""
    return on_file(questions_at, suite)


# -- what scoring computes from them ---------------------------------------------------------------


def aggregate(suite: str, base: Side, cand: Side, by: str) -> pd.DataFrame:
    """Per slice of family `by` and metric, both sides side by side
    (`scoring.decide.aggregates.slice_aggregates` states every column)."""
    return aggregates(suite, base, cand, (by,))[by]


def aggregates(suite: str, base: Side, cand: Side, families: Sequence[str]) -> dict[str, pd.DataFrame]:
    """`aggregate` for several slice families: from the `slice_sums` summary for two single runs,
    else from one read of the two sides' scores."""
    if len(base.run_ids) == 1 and len(cand.run_ids) == 1 and has("slice_sums"):
        stored = query("SELECT * FROM slice_sums WHERE run_id IN (?, ?) AND list_contains(?, family)",
                       [base.run_ids[0], cand.run_ids[0], list(dict.fromkeys(families))])
        return scoring_aggregates.stored_slice_aggregates(stored, base.run_ids[0], cand.run_ids[0], families)
    return scoring_aggregates.slice_aggregates(questions_of(suite), pair_of(suite, base, cand).scores, families)


def headline(suite: str, base: Side, cand: Side, metrics: Sequence[str] = METRIC_KEYS) -> pd.DataFrame:
    """Each side's own macro mean per metric, n and n/a, and the questions per status
    (`scoring.decide.aggregates.headline`)."""
    pair = pair_of(suite, base, cand)
    wanted = [allowed_metric(m) for m in metrics]
    return scoring_aggregates.headline(pair.scores, {k: pair.codes(k) for k in wanted}, wanted)


def aggregation_choices(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Macro, pooled, answerable-only and per-type aggregates side by side, with flips and hidden
    regressions (`scoring.decide.aggregates.aggregation_choices`)."""
    return _aggregation_choices(*current(), suite, base.run_ids, cand.run_ids)


@copied(max_entries=64)
def _aggregation_choices(path: str, sig: Signature, suite: str, base: tuple[str, ...],
                         cand: tuple[str, ...]) -> pd.DataFrame:
    del path, sig  # cache key only: the inputs below are read from this file
    sides = {s.run_ids: s for s in scoring_sides.sides_of(runs(suite))}
    b = sides.get(base) or Side(base[0], "run", base)
    c = sides.get(cand) or Side(cand[0], "run", cand)
    frames = aggregates(suite, b, c, scoring_aggregates.CHOICE_FAMILIES)
    improving = scoring_aggregates.improving(frames)
    regressed: dict[str, int] = {}
    if improving:  # questions that regressed, needed only where the macro mean improves
        pair = pair_of(suite, b, c, improving)
        regressed = {k: int(np.count_nonzero(pair.codes(k) == STATUSES.index("regressed"))) for k in improving}
    return scoring_aggregates.aggregation_choices(frames, regressed)

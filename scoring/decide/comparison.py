"""Paired comparison of a baseline and a candidate, and the release verdict.

A side is one run or a group of repeats (`scoring.decide.sides`). Both sides must be on the same
suite, suite version and corpus version. Questions are paired by ``question_id``
within the suite; for each metric a question counts only where both sides have a value (n/a is
excluded, never 0; missing and failed records are already scored as 0 / false).

With repeats, a question's value on a side is its mean over the repeats that scored it; the spread
is kept (`Comparison.spread`) and questions whose outcome differs between repeats are listed as
flaky (`Comparison.flaky`). Tests treat questions, not repeats, as the samples.

For every metric x slice (all, answerable, unanswerable, critical, each type, each split) the
comparison holds n, both macro means, the mean delta with its paired-bootstrap interval, the
t-test, Wilcoxon and sign-flip randomization p-values, the Holm-adjusted randomization p-value
across the whole family, the counts improved / regressed / unchanged, and the method (resampling,
or normal above `stats.LARGE_SAMPLE` non-zero differences; see `scoring.decide.stats`). Every metric x
slice is computed in one batch (`stats_batch.paired_many`) that shares resampling work between rows.

`compare` only reads (use a read-only connection), or reads nothing when given the `Inputs` that
`read_inputs` read before (a reader can then close the file before the statistics run); scores are
read by `scoring.decide.scores`. For two single runs without a policy, inputs read without detail
give the same table from far less: the questions' slice columns and both sides' per-question scores,
not every record's status, latency, cost and question text. `run_comparison` reads, compares and
records the verdict and the held-out use (`scoring.decide.verdicts`).
"""
from __future__ import annotations

import warnings as _warnings
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from ..errors import invalid
from ..metrics import slices
from ..metrics.registry import BY_KEY, OPERATIONAL, REGISTRY
from ..metrics.slices import Slice
from ..store.database import Database
from ..store.schema import table_names
from ..store.workspace import HELDOUT
from . import aggregates, change, stats, stats_batch, verdicts
from . import policy as policies
from .alignment import AlignmentFacts, read_alignment
from .policy import Policy, Verdict
from .scores import (
    METRIC_KEYS,
    RECORD_STATUSES,
    SCORE_COLUMNS,
    SIDES,
    ScoreRows,
    SideScores,
    read_questions,
    read_rows,
    read_side_scores,
    read_slice_columns,
    record_frame,
    side_values,
)
from .sides import Side, check_comparable, read_runs, resolve_side
from .verdicts import HeldoutLog, comparison_key, record

_AT_K = [m.name for m in REGISTRY if m.cutoff != "none"]
CUTOFF_NAMES = ", ".join(_AT_K[:-1]) + f" and {_AT_K[-1]}"
"""Every metric stored at the run's cutoff k, in words: what a difference in k makes incomparable."""


@dataclass(frozen=True)
class Settings:
    """Everything needed to reproduce the figures."""

    seed: int = 0
    bootstrap_resamples: int = stats.BOOTSTRAP_RESAMPLES
    randomization_resamples: int = stats.RANDOMIZATION_RESAMPLES
    exact_max: int = stats.EXACT_MAX
    confidence: float = stats.CONFIDENCE
    holm_of: str = "p_randomization"
    tie: float = change.TIE
    large_sample: int = stats.LARGE_SAMPLE

    def describe(self, across: str = "metric x slice") -> str:
        """The method in words; `across`: what the Holm adjustment spans (a `Family`: every candidate too)."""
        return (f"{self.confidence:.0%} percentile bootstrap intervals ({self.bootstrap_resamples:,} resamples), "
                f"sign-flip randomization test (exact when at most {self.exact_max} pairs differ, else "
                f"{self.randomization_resamples:,} random sign patterns), seed {self.seed}; above "
                f"{self.large_sample:,} differing pairs the normal interval and the normal approximation of the "
                f"sign-flip test (method: normal); Holm adjustment of {self.holm_of} across every {across}; "
                f"values within {self.tie:g} count as unchanged")


@dataclass(frozen=True)
class HeldoutUse:
    """How many distinct comparisons this suite version's held-out questions have served, this one
    included. A comparison is its runs, its policy and its labels (`comparison_key`): printing the
    same comparison again, in any format, is no new use."""

    n_questions: int
    previous: int
    budget: int | None
    key: str = ""
    logged: bool = False
    """Whether this very comparison was logged before."""

    @property
    def uses(self) -> int:
        return self.previous + 1

    def describe(self) -> str:
        """The count and the budget in words."""
        budget = "no budget set" if self.budget is None else f"budget {self.budget}"
        return (f"held-out use {self.uses} ({budget}): distinct comparisons of this suite version's "
                f"{self.n_questions} held-out questions" + ("; this one was logged before" if self.logged else ""))


COMPARISON_COLUMNS: tuple[str, ...] = (
    "metric", "metric_name", "slice", "n", "baseline", "candidate", "delta", "ci_low", "ci_high",
    "p_ttest", "p_wilcoxon", "p_randomization", "p_holm", "improved", "regressed", "unchanged",
    "baseline_pooled", "candidate_pooled", "higher_is_better", "warnings", "method",
)


@dataclass
class Comparison:
    """A paired comparison: tables for every view, and the verdict when a policy was given.

    Frames (pandas):
    - `questions`: the suite's questions (index question_id) with type, split, critical, tags,
      answerable, disputed, text, position;
    - `table`: one row per metric x slice with n >= 1 (`COMPARISON_COLUMNS`); `method` is
      ``resampling`` or ``normal`` (`scoring.decide.stats`), None where n < 2;
    - `deltas`: one row per question x metric where either side has a value: baseline, candidate,
      delta, change (improved | regressed | unchanged | n/a); built on first use;
    - `spread`: per side with repeats, per question x metric: repeats, mean, sd, min, max;
    - `flaky`: per side, question and metric (or ``status``) whose outcome differs between repeats;
    - `operations`: per side: failure rate, latency p50/p95, mean and total cost, on all questions.
    """

    baseline: Side
    candidate: Side
    suite: str
    suite_version: str
    corpus_version: str
    questions: pd.DataFrame
    table: pd.DataFrame
    spread: pd.DataFrame
    flaky: pd.DataFrame
    settings: Settings
    warnings: tuple[str, ...]
    heldout: HeldoutUse | None
    verdict: Verdict
    policy: Policy | None = None
    labels_hash: str = ""
    """The suite's effective labels the scores were taken with (`suites.labels_hash`)."""
    alignment: AlignmentFacts | None = None
    """Free-text answers: sentences and claims by aligner, agreement (None when no run answers in sentences)."""
    resting: dict[tuple[str, str], int] = field(default_factory=dict)
    """(aligner, decided_by) -> generated claims of either side resting on that automatic aligner."""
    values: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    rows: ScoreRows | None = field(default=None, repr=False)
    detail: bool = field(default=True, repr=False)
    """False when compared on inputs read without detail (`read_inputs`): `questions` then holds
    the slice columns only, and the per-question views and gate evidence are refused (but the count
    of regressed questions, and the first few of them once `read_regressed` read them)."""
    _masks: dict[tuple, Any] = field(default_factory=dict, init=False, repr=False)
    _delta_rows: pd.DataFrame | None = field(default=None, init=False, repr=False)
    _record_rows: pd.DataFrame | None = field(default=None, init=False, repr=False)
    _regressed: pd.DataFrame | None = field(default=None, init=False, repr=False)
    _regressed_at: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None = field(
        default=None, init=False, repr=False)
    _question_rows: pd.DataFrame | None = field(default=None, init=False, repr=False)
    """Some questions' rows as `read_questions` gives them (text included), index: their slot in `questions`."""
    _operation_rows: pd.DataFrame | None = field(default=None, init=False, repr=False)

    @property
    def operations(self) -> pd.DataFrame:
        """Per side: records, failure rate, latency p50 / p95, mean and total cost. Built on first use."""
        if self._operation_rows is None:
            self._operation_rows = _operations(self.rows) if self.rows is not None else pd.DataFrame(
                columns=["side", "records", "failure_rate", "latency_p50", "latency_p95", "cost_mean", "cost_total"])
        return self._operation_rows

    @property
    def records(self) -> pd.DataFrame:
        """One row per record of either side (every repeat): run_id, question_id, status, latency_ms,
        cost_usd, side. Built on first use."""
        if self._record_rows is None:
            self._record_rows = record_frame(self.rows, self.questions.index) if self.rows is not None else \
                pd.DataFrame(columns=["run_id", "question_id", "status", "latency_ms", "cost_usd", "side"])
        return self._record_rows

    def _detailed(self, what: str) -> None:
        if not self.detail:
            raise ValueError(f"{what} needs the questions' IDs: compare inputs read with detail")

    @property
    def deltas(self) -> pd.DataFrame:
        self._detailed("the per-question deltas")
        if self._delta_rows is None:
            self._delta_rows = _deltas(self.values)
        return self._delta_rows

    # -- policy.Evidence ------------------------------------------------------------------------

    def _mask(self, slice_: Slice, exclude: str | None) -> np.ndarray:
        """The questions of a slice as a boolean array in suite order (cached), without the disputed
        ones (`exclude` "disputed") or those with a claim resting on an automatic alignment ("automatic")."""
        self._detailed("a gate's slice")
        key = ("mask", slice_, exclude)
        if key not in self._masks:
            q = self.questions
            mask = slices.mask(q, slice_)
            if exclude == "disputed":
                mask = mask & q["disputed"].isna().to_numpy()
            elif exclude == "automatic" and "automatic" in q:
                mask = mask & ~q["automatic"].to_numpy(dtype=bool)
            self._masks[key] = mask
        return self._masks[key]

    def _positions(self, slice_: Slice, exclude: str | None) -> np.ndarray:
        """The positions of a slice's questions in suite order (cached)."""
        key = ("positions", slice_, exclude)
        if key not in self._masks:
            self._masks[key] = np.flatnonzero(self._mask(slice_, exclude))
        return self._masks[key]

    def slice_questions(self, slice_: Slice, *, exclude: str | None = None) -> list[str]:
        key = ("ids", slice_, exclude)
        if key not in self._masks:
            self._masks[key] = self.questions.index.take(self._positions(slice_, exclude)).tolist()
        return list(self._masks[key])

    def slice_values(self, kind: str) -> list[str]:
        return slices.values(self.questions, kind)

    def paired_values(self, key: str, slice_: Slice, *, exclude: str | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        at = self._positions(slice_, exclude)
        b = self.values["baseline"][key].to_numpy(dtype=float).take(at)
        c = self.values["candidate"][key].to_numpy(dtype=float).take(at)
        keep = ~(np.isnan(b) | np.isnan(c))
        return b[keep], c[keep]

    def aggregate(self, side: str, key: str, slice_: Slice, aggregate: str, *, exclude: str | None = None
                  ) -> tuple[float | None, int]:
        mask = self._mask(slice_, exclude)
        if key in OPERATIONAL:
            r = self.rows
            if r is None:
                return None, 0
            keep = (r.side == SIDES.index(side)) & mask[r.slot]
            return aggregates.operational_values(r.status[keep], r.latency[keep], r.cost[keep], r.run[keep], key, aggregate)
        at = self._positions(slice_, exclude)
        frame = self.values[side]
        pooled = BY_KEY[key].pooled
        parts = tuple(frame[c].to_numpy(dtype=float).take(at) for c in pooled) if pooled else None
        return aggregates.aggregate_values(frame[key].to_numpy(dtype=float).take(at), parts, aggregate)

    def automatic_aligners(self) -> list[tuple[str, float | None, int]]:
        return self.alignment.automatic_aligners(self.resting) if self.alignment is not None else []

    @property
    def n_automatic(self) -> int:
        return int(self.questions["automatic"].sum()) if "automatic" in self.questions else 0

    # -- views ----------------------------------------------------------------------------------

    @property
    def n_disputed(self) -> int:
        return int(self.questions["disputed"].notna().sum())

    def regressions(self) -> pd.DataFrame:
        """Every regressed question x metric, joined with the question's text and slices."""
        reg = self.deltas[self.deltas["change"] == "regressed"]
        cols = ["text", "type", "split", "critical", "answerable", "disputed", "position"]
        out = reg.join(self.questions[cols], on="question_id")
        return out.sort_values(["position", "metric_order"]).reset_index(drop=True)

    def _regressed_order(self, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(question x metric regressed flags in suite order and `REGISTRY` order, the rows of
        `questions` worse on at least one metric in `regressed_questions` order: the first `limit`
        only when given). Built on first use, from the per-question values, positions and critical
        flags (inputs read without detail hold them)."""
        if self._regressed_at is None:
            b, k = self.values["baseline"], self.values["candidate"]
            worse = np.empty((len(self.questions), len(REGISTRY)), dtype=bool)
            for j, m in enumerate(REGISTRY):  # column by column: no copy of the frames
                worse[:, j] = change.regressed(b[m.key].to_numpy(dtype=float), k[m.key].to_numpy(dtype=float),
                                               m.higher_is_better)
            n_metrics = worse.sum(axis=1)
            at = np.flatnonzero(n_metrics > 0)
            position = self.questions["position"].to_numpy(dtype=np.int64)[at]
            critical = self.questions["critical"].to_numpy(dtype=bool)[at]
            # one integer orders them: critical first, then more metrics, then suite order (positions unique)
            rank = (~critical).astype(np.int64) * (len(REGISTRY) + 1) + (len(REGISTRY) - n_metrics[at])
            key = rank * (int(position.max()) + 1 if len(at) else 1) + position
            self._regressed_at = (worse, at, key, None)
        worse, at, key, order = self._regressed_at
        if limit is not None and limit < len(at):
            top = np.argpartition(key, limit - 1)[:limit] if limit > 0 else np.zeros(0, dtype=np.int64)
            return worse, at[top[np.argsort(key[top], kind="stable")]]
        if order is None:
            order = at[np.argsort(key, kind="stable")]
            self._regressed_at = (worse, at, key, order)
        return worse, order

    @property
    def n_regressed_questions(self) -> int:
        """How many questions are worse on at least one metric (the rows of `regressed_questions`)."""
        self._regressed_order(0)
        return int(len(self._regressed_at[1]))

    def regressed_questions(self, limit: int | None = None) -> pd.DataFrame:
        """One row per question worse on at least one metric, most important first; the first `limit`
        rows only when given (None: every one).

        Order: critical questions first, then more regressed metrics, then suite order. `changes`
        lists ``(metric name, baseline, candidate)`` for each regressed metric, in metric order.
        Compared on inputs read without detail, only the rows that `read_regressed` read are given:
        more is refused (ValueError); read without the questions' text, the other rows' text is None.
        """
        cols = ["question_id", "text", "type", "split", "critical", "answerable", "disputed", "position",
                "n_metrics", "changes"]
        if limit is None and self._regressed is not None:
            return self._regressed
        worse, chosen = self._regressed_order(None if limit is None else max(limit, 0))
        if not self.n_regressed_questions:
            return pd.DataFrame(columns=cols)
        read = self._question_rows
        if read is not None and np.isin(chosen, read.index.to_numpy()).all():
            out = read.loc[chosen, cols[:-2]].reset_index(drop=True)
        else:
            self._detailed("the regressed questions")
            out = self.questions.iloc[chosen][cols[1:-2]].reset_index()
            out = out.rename(columns={out.columns[0]: "question_id"})
        flags = worse[chosen]
        out["n_metrics"] = flags.sum(axis=1)
        frames = [(self.values["baseline"][m.key].to_numpy(dtype=float),
                   self.values["candidate"][m.key].to_numpy(dtype=float)) for m in REGISTRY]
        out["changes"] = pd.Series([[(m.name, float(frames[j][0][q]), float(frames[j][1][q]))
                                     for j, m in enumerate(REGISTRY) if row[j]]
                                    for q, row in zip(chosen.tolist(), flags)], index=out.index, dtype=object)
        out = out[cols]
        if limit is None:
            self._regressed = out
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``ragslice compare --format json``."""
        self._detailed("the JSON document")
        v = self.verdict
        return {
            "verdict": v.verdict,
            "baseline": _side_dict(self.baseline),
            "candidate": _side_dict(self.candidate),
            "suite": self.suite,
            "suite_version": self.suite_version,
            "labels_hash": self.labels_hash,
            "corpus_version": self.corpus_version,
            "n_questions": int(len(self.questions)),
            "policy": None if self.policy is None else {
                "name": self.policy.name, "path": self.policy.path, "sha256": self.policy.sha256},
            "gates": [g.to_dict() for g in v.gates],
            "warnings": list(self.warnings) + list(v.warnings),
            "without_disputed": None if v.disputed is None else {
                "n_disputed": v.disputed.n_disputed,
                "verdict": v.disputed.verdict,
                "differences": list(v.disputed.differences),
                "gates": [g.to_dict() for g in v.disputed.gates],
            },
            "heldout": None if self.heldout is None else {
                "n_questions": self.heldout.n_questions, "uses": self.heldout.uses,
                "budget": self.heldout.budget, "comparison_key": self.heldout.key,
                "logged_before": self.heldout.logged},
            "without_unreviewed_alignments": None if v.unreviewed is None else {
                "n_excluded": v.unreviewed.n_disputed,
                "verdict": v.unreviewed.verdict,
                "differences": list(v.unreviewed.differences),
                "gates": [g.to_dict() for g in v.unreviewed.gates],
            },
            "judged": judged(self.table),
            "alignment": None if self.alignment is None else self.alignment.to_dict(),
            "settings": asdict(self.settings),
            "comparisons": [_jsonable(r) for r in self.table.to_dict(orient="records")],
            "operations": [_jsonable(r) for r in self.operations.to_dict(orient="records")],
            "regressions": [_jsonable(r) for r in self.regressions()[
                ["question_id", "metric", "metric_name", "baseline", "candidate", "delta"]].to_dict(orient="records")],
            "flaky": [_jsonable(r) for r in self.flaky.to_dict(orient="records")],
        }


def _side_dict(side: Side) -> dict[str, Any]:
    return {"name": side.name, "kind": side.kind, "runs": list(side.run_ids), "k": list(side.k)}


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        if isinstance(value, (np.floating, float)):
            value = None if np.isnan(value) else float(value)
        elif isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, np.bool_):
            value = bool(value)
        elif isinstance(value, (tuple, np.ndarray)):
            value = list(value)
        out[key] = value
    return out


# --- slices and aggregates ----------------------------------------------------------------------


# --- reading the database -----------------------------------------------------------------------


# --- the comparison ------------------------------------------------------------------------------


def _spread_and_flaky(name: str, rows: ScoreRows, side: int, run_ids: Sequence[str], ids: pd.Index
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spread over repeats per question x metric, and the question x metric (or status) that flip.

    A question flips when its repeats disagree: values further apart than `change.TIE`, a value in
    some repeats and n/a in others, or different statuses (ok / missing / failed).
    """
    if len(run_ids) < 2:
        return pd.DataFrame(), pd.DataFrame()
    own = rows.side == side
    qi = rows.slot[own]
    ri = rows.run[own] - (0 if side == 0 else len(rows.run_ids) - len(run_ids))
    metrics = len(METRIC_KEYS)
    cube = np.full((len(ids), len(run_ids), metrics), np.nan)  # question x repeat x metric
    cube[qi, ri, :] = rows.values[own][:, :metrics]
    status = np.full((len(ids), len(run_ids)), RECORD_STATUSES.index("missing"), dtype=np.int8)
    status[qi, ri] = rows.status[own]
    scored = ~np.isnan(cube)
    count = scored.sum(axis=1)
    with np.errstate(invalid="ignore"), _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        mean, low, high = np.nanmean(cube, axis=1), np.nanmin(cube, axis=1), np.nanmax(cube, axis=1)
        sd = np.where(count >= 2, np.nanstd(cube, axis=1, ddof=1), np.nan)
    q_idx, m_idx = np.nonzero(count > 0)
    spread = pd.DataFrame({
        "side": name, "question_id": ids[q_idx], "metric": np.array(METRIC_KEYS, dtype=object)[m_idx],
        "repeats": count[q_idx, m_idx], "mean": mean[q_idx, m_idx], "sd": sd[q_idx, m_idx],
        "min": low[q_idx, m_idx], "max": high[q_idx, m_idx],
    })
    flips = ((high - low) > change.TIE) | ((count > 0) & (count < len(run_ids)))
    fq, fm = np.nonzero(flips)
    rows_out = [(name, ids[q], METRIC_KEYS[m], q, m, tuple(None if v != v else float(v) for v in cube[q, :, m]))
                for q, m in zip(fq, fm)]
    status_flips = np.flatnonzero((status != status[:, :1]).any(axis=1))
    rows_out += [(name, ids[q], "status", q, metrics, tuple(RECORD_STATUSES[c] for c in status[q])) for q in status_flips]
    rows_out.sort(key=lambda r: (r[3], r[4]))
    flaky = pd.DataFrame([(a, b, c, v) for a, b, c, _, _, v in rows_out],
                         columns=["side", "question_id", "metric", "values"])
    return spread, flaky


def _deltas(values: dict[str, pd.DataFrame]) -> pd.DataFrame:
    frames = []
    for i, m in enumerate(REGISTRY):
        b, c = values["baseline"][m.key], values["candidate"][m.key]
        keep = b.notna() | c.notna()
        frames.append(pd.DataFrame({
            "question_id": b.index, "metric": m.key, "metric_name": m.name, "metric_order": i,
            "baseline": b.to_numpy(), "candidate": c.to_numpy(), "delta": (c - b).to_numpy(),
            "change": change.change(b.to_numpy(), c.to_numpy(), m.higher_is_better),
        })[keep.to_numpy()])
    return pd.concat(frames, ignore_index=True)


def _table(questions: pd.DataFrame, values: dict[str, Any], settings: Settings,
           tested: Collection[tuple[str, str]] | None = None) -> pd.DataFrame:
    """One row per metric x slice with at least one paired question, computed in one batch.

    Slices holding the same paired questions for a metric (e.g. all and answerable for retrieval
    metrics) get the same, identically seeded result. `tested`: (metric key, slice) pairs whose
    interval, t-test and Wilcoxon p are computed; the other rows hold them as None (None: every
    row's). Every other figure, the Holm adjustment included, does not depend on `tested`.
    """
    chosen = slices.default_slices(questions)
    masks = [slices.mask(questions, s) for s in chosen]
    base = [np.asarray(values["baseline"][m.key], dtype=float) for m in REGISTRY]
    cand = [np.asarray(values["candidate"][m.key], dtype=float) for m in REGISTRY]
    cells = stats_batch.Cells(masks, len(questions))
    samples: list[tuple[int, np.ndarray]] = []
    layout: list[tuple[int, Slice, int, int]] = []
    pooled_sums: dict[int, np.ndarray] = {}
    paired_masks = []
    counts = {(side, c): np.asarray(values[side][c], dtype=float) for side in SIDES for m in REGISTRY
              for c in m.pooled or ()}
    for j, m in enumerate(REGISTRY):
        both = ~(np.isnan(base[j]) | np.isnan(cand[j]))
        paired_masks.append(both)
        for k, (s, mask) in enumerate(zip(chosen, masks)):  # slices without a paired question go below (n 0)
            layout.append((j, s, len(samples), k))
            samples.append((j, mask))
        if m.pooled:
            paired = np.where(both, cells.cell, cells.size)  # cell of each paired question; the others: a last bin
            pooled_sums[j] = np.column_stack([
                cells.over(np.bincount(paired, weights=counts[side, c], minlength=cells.size + 1)[:cells.size])
                for side in SIDES for c in m.pooled])  # slices x (side, numerator / denominator)
    complete = None
    if tested is not None:
        wanted = {(str(key), str(name)) for key, name in tested}
        complete = [(REGISTRY[j].key, str(s)) in wanted for j, s, _, _ in layout]
    results = stats_batch.paired_many(
        base, cand, samples, higher_is_better=[m.higher_is_better for m in REGISTRY], seed=settings.seed,
        bootstrap_resamples=settings.bootstrap_resamples, randomization_resamples=settings.randomization_resamples,
        exact_max=settings.exact_max, confidence=settings.confidence, large_sample=settings.large_sample,
        cells=cells, complete=complete, paired=paired_masks)
    out = []
    for j, s, at, k in layout:
        m, r = REGISTRY[j], results[at]
        if r.n < 1:  # no paired question in the slice: no row
            continue
        pooled: dict[str, float | None] = {"baseline_pooled": None, "candidate_pooled": None}
        if m.pooled:
            for i, side in enumerate(SIDES):
                num, den = pooled_sums[j][k, 2 * i], pooled_sums[j][k, 2 * i + 1]
                pooled[f"{side}_pooled"] = float(num / den) if den else None
        out.append({
            "metric": m.key, "metric_name": m.name, "slice": str(s), "n": r.n,
            "baseline": r.baseline, "candidate": r.candidate, "delta": r.delta,
            "ci_low": r.ci_low, "ci_high": r.ci_high, "p_ttest": r.p_ttest, "p_wilcoxon": r.p_wilcoxon,
            "p_randomization": r.p_randomization, "p_holm": None, "improved": r.improved,
            "regressed": r.regressed, "unchanged": r.unchanged, **pooled,
            "higher_is_better": m.higher_is_better, "warnings": list(r.warnings), "method": r.method,
        })
    table = pd.DataFrame(out, columns=list(COMPARISON_COLUMNS))
    table["method"] = pd.Series([r["method"] for r in out], dtype=object)  # None (n < 2) stays None
    if len(table):
        adjusted = stats.holm([None if pd.isna(p) else float(p) for p in table[settings.holm_of]])
        table["p_holm"] = pd.Series(adjusted, dtype=object).to_numpy()
    return table


def _operations(rows: ScoreRows) -> pd.DataFrame:
    out = []
    for at, side in enumerate(SIDES):
        own = rows.side == at
        parts = (rows.status[own], rows.latency[own], rows.cost[own], rows.run[own])
        out.append({
            "side": side, "records": int(np.count_nonzero(own)),
            "failure_rate": aggregates.operational_values(*parts, "failure_rate", "rate")[0],
            "latency_p50": aggregates.operational_values(*parts, "latency", "p50")[0],
            "latency_p95": aggregates.operational_values(*parts, "latency", "p95")[0],
            "cost_mean": aggregates.operational_values(*parts, "cost", "mean")[0],
            "cost_total": aggregates.operational_values(*parts, "cost", "total")[0],
        })
    return pd.DataFrame(out)


def judged(table: pd.DataFrame) -> dict[str, Any] | None:
    """Both sides' Judged@k over all questions (the paired means, and n), None when no pair scores it."""
    row = table[(table["metric"] == "judged") & (table["slice"] == "all")]
    if row.empty:
        return None
    r = row.iloc[0]
    return {"baseline": float(r["baseline"]), "candidate": float(r["candidate"]), "n": int(r["n"])}


def label_gap_warning(table: pd.DataFrame) -> str | None:
    """A warning when the candidate's Judged@k is below the baseline's: part of the comparison may be
    decided by documents nobody judged (they count as not relevant)."""
    found = judged(table)
    if found is None or change.moved(found["candidate"] - found["baseline"], True) != "worse":
        return None
    return (f"the candidate's Judged@k ({found['candidate']:.3f}) is below the baseline's ({found['baseline']:.3f}) "
            f"on {found['n']} paired questions: its rankings hold more documents nobody judged, which count as not "
            "relevant, so part of this comparison may rest on label gaps; judge them (ragslice pool, or the "
            "dashboard's Labels page) before reading a retrieval regression as real")


def _comparison_warnings(baseline: Side, candidate: Side, n_questions: int, include_heldout: bool,
                         n_heldout_dropped: int) -> list[str]:
    out = []
    for side in (baseline, candidate):
        if len(set(side.k)) > 1:
            ks = ", ".join(map(str, sorted(set(side.k))))
            out.append(f"the repeats of {side.name} use different cutoffs k ({ks})")
    if set(baseline.k) != set(candidate.k):
        shown = lambda s: "/".join(map(str, sorted(set(s.k))))  # noqa: E731
        out.append(f"k differs (baseline {shown(baseline)}, candidate {shown(candidate)}): {CUTOFF_NAMES} compare "
                   "different cutoffs, and the answer stage saw different context")
    b_rubric = {m.get("rubric_version") for m in baseline.manifests.values()}
    c_rubric = {m.get("rubric_version") for m in candidate.manifests.values()}
    if b_rubric != c_rubric:
        out.append(f"rubric versions differ (baseline {sorted(map(str, b_rubric))}, candidate "
                   f"{sorted(map(str, c_rubric))})")
    if n_questions < stats.SMALL_N:
        out.append(f"only {n_questions} questions: every figure here is arithmetic on a handful of cases, "
                   "not an estimate of general performance; read the per-question deltas")
    if not include_heldout and n_heldout_dropped:
        out.append(f"{n_heldout_dropped} held-out questions left out (development questions only)")
    return out


@dataclass(frozen=True)
class Inputs:
    """Everything `compare` reads from the database, read at once by `read_inputs`.

    `compare` given Inputs reads nothing, so a reader can close the file before the statistics run.
    `questions`: the compared questions in suite order (`text` None when read without text);
    `n_heldout`: the suite's held-out questions; `heldout_log`: the comparisons logged on the held-out
    set of this suite version (empty when no held-out question is compared); `labels_hash`: the
    suite's labels as scored (`suites.files_hash`); `verdicts`:
    (policy_name, policy_hash, verdict, created_at) of the verdicts recorded for these side names,
    newest first. Read without detail (`read_inputs`), `questions` holds the slice columns only
    (`read_slice_columns`), `rows` is None and `scores` holds both sides' per-question scores.
    """

    baseline_name: str
    candidate_name: str
    include_heldout: bool
    baseline: Side
    candidate: Side
    questions: pd.DataFrame
    n_heldout: int
    rows: ScoreRows | None
    heldout_log: HeldoutLog
    verdicts: tuple[tuple[str, str, str, datetime], ...]
    scores: SideScores | None = None
    labels_hash: str = ""
    alignment: tuple[AlignmentFacts, dict[tuple[str, str], int]] | None = None
    """What free-text alignment means here (`alignment.read_alignment`), None when no run answers in sentences."""


def read_inputs(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, *, include_heldout: bool = True,
                with_text: bool = True, scores: tuple[pd.DataFrame, ScoreRows] | None = None, detail: bool = True,
                side_scores: SideScores | None = None, slice_columns: pd.DataFrame | None = None) -> Inputs:
    """Read what `compare` needs for these two sides (names as `compare` takes them).

    Raises ValidationError for unknown names, sides on different suites / versions, or a database
    that is not a ragslice database. `with_text` False leaves the questions' text out (None).
    `scores`: what `read_scores` returned for the same runs (in side order) and held-out choice,
    read before; used instead of reading them again when the runs agree.

    `detail` False reads only what the comparison's table needs, for two single runs: the
    questions' slice columns (`read_slice_columns`; `slice_columns`: those read before) and both
    sides' per-question scores (`read_side_scores`; `side_scores`: those read before, used when they
    hold these runs over these questions), not every record's status, latency and cost nor the
    questions' IDs, tags and text. `compare` then gives the same table, settings, warnings and
    (empty) flaky list, and refuses a policy; a group of repeats (its flaky questions) needs `detail`.
    """
    tables = table_names(con)
    runs = read_runs(con, tables)
    b_side = resolve_side(runs, baseline, "baseline")
    c_side = resolve_side(runs, candidate, "candidate")
    check_comparable(b_side, c_side)
    if not detail:
        if len(b_side.run_ids) != 1 or len(c_side.run_ids) != 1:
            raise ValueError("a group of repeats needs every record (its flaky questions): read the inputs with detail")
        questions = slice_columns if slice_columns is not None else read_slice_columns(con, b_side.suite)
        n_heldout = int((questions["split"] == HELDOUT).sum())
        if not include_heldout:
            questions = questions[questions["split"] != HELDOUT].reset_index(drop=True)
        positions = questions["position"].to_numpy(dtype=np.int64)
        if side_scores is None or side_scores.run_ids != (b_side.run_ids, c_side.run_ids) or \
                not np.array_equal(side_scores.positions, positions) or \
                any(n not in side_scores.columns[0] for n in SCORE_COLUMNS):
            side_scores = read_side_scores(con, b_side.suite, b_side.run_ids, c_side.run_ids, positions)
        log = verdicts.read_heldout_log(con, b_side.suite, b_side.suite_version, tables) \
            if include_heldout and n_heldout else HeldoutLog()
        return Inputs(baseline, candidate, include_heldout, b_side, c_side, questions, n_heldout, None, log,
                      verdicts.read_earlier_verdicts(con, b_side.name, c_side.name, tables), side_scores,
                      verdicts.read_labels_hash(con, b_side.suite))
    if scores is not None and scores[1].run_ids == (*b_side.run_ids, *c_side.run_ids):
        questions, rows = scores
        n_heldout = int((questions["split"] == HELDOUT).sum()) if include_heldout else int(con.execute(
            "SELECT count(*) FROM questions WHERE suite = ? AND split = ?", [b_side.suite, HELDOUT]).fetchall()[0][0])
    else:
        questions = read_questions(con, b_side.suite, with_text=with_text)
        n_heldout = int((questions["split"] == HELDOUT).sum())
        if not include_heldout:
            questions = questions[questions["split"] != HELDOUT]
        rows = read_rows(con, b_side.suite, b_side.run_ids, c_side.run_ids, questions["position"].to_numpy())
    log = verdicts.read_heldout_log(con, b_side.suite, b_side.suite_version, tables) \
        if include_heldout and n_heldout else HeldoutLog()
    return Inputs(baseline, candidate, include_heldout, b_side, c_side, questions, n_heldout, rows, log,
                  verdicts.read_earlier_verdicts(con, b_side.name, c_side.name, tables),
                  labels_hash=verdicts.read_labels_hash(con, b_side.suite),
                  alignment=read_alignment(con, b_side.suite, b_side.run_ids, c_side.run_ids))


def compare(
    con: duckdb.DuckDBPyConnection | Inputs,
    baseline: str,
    candidate: str,
    *,
    policy: Policy | str | Path | None = None,
    seed: int = 0,
    bootstrap_resamples: int = stats.BOOTSTRAP_RESAMPLES,
    randomization_resamples: int = stats.RANDOMIZATION_RESAMPLES,
    include_heldout: bool = True,
    tested: Collection[tuple[str, str]] | None = None,
) -> Comparison:
    """Compare two runs or groups on a (read-only) connection, or on `Inputs` that `read_inputs`
    read for the same names and `include_heldout`; evaluate `policy` when given.

    Raises ValidationError for unknown names, sides on different suites / versions, or a database
    that is not a ragslice database. With `include_heldout` False the held-out questions are left
    out of every slice (and the comparison does not count as a use of the held-out set).
    `tested`: the (metric key, slice) rows of the table whose interval, t-test and Wilcoxon p are
    wanted; the other rows hold those three as None, not computed (their randomization p-values,
    and so every Holm-adjusted p-value, are computed all the same). None: every row. Inputs read
    without detail give the table, settings, warnings and flaky list only: no policy, no
    per-question view.
    """
    pol = policies.load_policy(policy) if isinstance(policy, (str, Path)) else policy
    settings = Settings(seed=seed, bootstrap_resamples=bootstrap_resamples,
                        randomization_resamples=randomization_resamples, large_sample=stats.LARGE_SAMPLE)
    if isinstance(con, Inputs):
        inputs = con
        asked = (baseline, candidate, include_heldout)
        if (inputs.baseline_name, inputs.candidate_name, inputs.include_heldout) != asked:
            raise ValueError(f"the inputs were read for {inputs.baseline_name} vs {inputs.candidate_name} "
                             f"(held-out included: {inputs.include_heldout}), not {asked}")
    else:
        inputs = read_inputs(con, baseline, candidate, include_heldout=include_heldout)
    b_side, c_side, questions, rows = inputs.baseline, inputs.candidate, inputs.questions, inputs.rows
    n_heldout = inputs.n_heldout
    ids = questions.index
    values: dict[str, pd.DataFrame] = {}
    spreads, flakies = [], []
    if rows is None:  # read without detail: two single runs, their per-question scores only
        if pol is not None:
            raise ValueError("a policy's gates need every record: read the inputs with detail")
        if inputs.scores is None:
            raise ValueError("inputs without score rows need the sides' per-question scores")
        for at, name in enumerate(SIDES):
            columns = inputs.scores.columns[at]
            values[name] = pd.DataFrame({n: columns[n] for n in SCORE_COLUMNS}, index=ids, copy=False)
    for at, (name, side) in enumerate((("baseline", b_side), ("candidate", c_side)) if rows is not None else ()):
        values[name] = side_values(rows, at, ids)
        spread, flaky = _spread_and_flaky(name, rows, at, side.run_ids, ids)
        spreads.append(spread)
        flakies.append(flaky)
    spread = pd.concat([s for s in spreads if len(s)], ignore_index=True) if any(len(s) for s in spreads) else \
        pd.DataFrame(columns=["side", "question_id", "metric", "repeats", "mean", "sd", "min", "max"])
    flaky = pd.concat([f for f in flakies if len(f)], ignore_index=True) if any(len(f) for f in flakies) else \
        pd.DataFrame(columns=["side", "question_id", "metric", "values"])
    heldout = None
    if include_heldout and n_heldout:
        key = comparison_key(b_side.run_ids, c_side.run_ids, pol.sha256 if pol else None, inputs.labels_hash)
        heldout = HeldoutUse(n_heldout, inputs.heldout_log.previous(key), pol.heldout_budget if pol else None, key,
                             key in inputs.heldout_log.keys)
    warnings = _comparison_warnings(b_side, c_side, len(questions), include_heldout, n_heldout)
    alignment, resting = inputs.alignment if inputs.alignment is not None else (None, {})
    if alignment is not None and rows is not None:
        questions = questions.assign(automatic=questions.index.isin(list(alignment.automatic_questions)))
    table = _table(questions, values, settings, tested)
    gap = label_gap_warning(table)
    warnings += [gap] if gap else []
    comparison = Comparison(
        baseline=b_side, candidate=c_side, suite=b_side.suite, suite_version=b_side.suite_version,
        corpus_version=b_side.corpus_version, questions=questions, table=table,
        spread=spread, flaky=flaky,
        settings=settings, warnings=tuple(warnings), heldout=heldout, verdict=policies.no_policy_verdict(),
        policy=pol, values=values, rows=rows, detail=rows is not None, labels_hash=inputs.labels_hash,
        alignment=alignment, resting=resting,
    )
    if pol is not None:
        notes = verdicts.policy_edits(inputs.verdicts, b_side.name, c_side.name, pol)
        if heldout is not None:
            note = policies.heldout_warning(pol, heldout.uses, b_side.suite, b_side.suite_version)
            notes += [note] if note else []
        comparison.verdict = policies.evaluate(pol, comparison, n_disputed=comparison.n_disputed, notes=notes,
                                               seed=seed)
    return comparison


def read_regressed(con: duckdb.DuckDBPyConnection, c: Comparison, limit: int) -> pd.DataFrame:
    """`c.regressed_questions(limit)` for a comparison on any inputs, those read without detail or
    without the questions' text included: the first `limit` regressed questions' IDs, text and slices
    are read here (by suite position, a few rows) and kept, so that later calls of
    `regressed_questions` with at most `limit` give the same rows. Regressed questions as always:
    worse beyond `change.TIE` on at least one metric both sides score."""
    chosen = c._regressed_order(max(limit, 0))[1]
    if len(chosen):
        positions = c.questions["position"].to_numpy(dtype=np.int64)[chosen]
        q = con.sql(
            "SELECT question_id, position, text, type, split, critical, answerable, disputed FROM questions "
            "WHERE suite = $suite AND list_contains($positions, CAST(position AS BIGINT))",
            params={"suite": c.suite, "positions": positions.tolist()}).to_arrow_table().to_pandas()
        q["critical"] = q["critical"].astype(bool)
        q["answerable"] = q["answerable"].astype(bool)
        q["disputed"] = q["disputed"].astype(object).where(q["disputed"].notna(), None)
        slot = dict(zip(positions.tolist(), chosen.tolist()))
        q.index = pd.Index([slot[int(p)] for p in q["position"]], dtype=np.int64)
        c._question_rows = q
    return c.regressed_questions(limit)


# --- storing verdicts ----------------------------------------------------------------------------


def run_comparison(
    baseline: str, candidate: str, *, db: Path, policy: str | Path | None, seed: int = 0
) -> Comparison:
    """Read the database (read-only), compare, then record the verdict and held-out use."""
    pol = policies.load_policy(policy) if policy else None
    with Database(db).command() as con:
        comparison = compare(con, baseline, candidate, policy=pol, seed=seed)
    record(db, comparison)
    return comparison


P_COLUMNS: dict[str, str] = {
    "p_holm": "Holm-adjusted randomization p",
    "p_randomization": "randomization p (unadjusted)",
    "p_ttest": "paired t-test p (unadjusted)",
    "p_wilcoxon": "Wilcoxon signed-rank p (unadjusted)",
}
"""The p-values a row of `Comparison.table` carries, in words."""


def table_rows(table: pd.DataFrame, *, metrics: Sequence[str] = (), families: Sequence[str] = (),
               alpha: float = 0.05, p_column: str = "p_holm", significant_only: bool = False,
               regressions_only: bool = False) -> pd.DataFrame:
    """The rows of a comparison's table the filters keep (empty `metrics` / `families`: all), with
    three columns added: `family` (`scoring.metrics.slices.family_of`), `significant` (`p_column` <=
    `alpha`; False where that p-value is n/a) and `moves` (`change.moved`: better / worse / unchanged,
    the mean paired delta in the metric's direction). `regressions_only` keeps the rows that move worse."""
    if p_column not in P_COLUMNS:
        raise ValueError(f"unknown p-value column {p_column!r}")
    out = table.copy()
    out["family"] = out["slice"].map(slices.family_of)
    p = pd.to_numeric(out[p_column], errors="coerce")
    out["significant"] = (p <= alpha).fillna(False).astype(bool)
    out["moves"] = [change.moved(None if pd.isna(d) else float(d), bool(h))
                    for d, h in zip(out["delta"], out["higher_is_better"])]
    keep = pd.Series(True, index=out.index)
    if metrics:
        keep &= out["metric"].isin(list(metrics))
    if families:
        keep &= out["family"].isin([slices.family(f).name for f in families])
    if significant_only:
        keep &= out["significant"]
    if regressions_only:
        keep &= out["moves"] == "worse"
    return out[keep].reset_index(drop=True)


# --- one baseline, several candidates ------------------------------------------------------------

HOLM_FAMILY = "candidate x metric x slice"
"""What the Holm adjustment of a `Family` spans: every row of every candidate's table."""


@dataclass
class Family:
    """One baseline against one or more candidates (runs or groups), each compared as `compare` does.

    Every figure of a candidate's `Comparison` is the one a single comparison gives, except
    `p_holm`: the randomization p-values are Holm-adjusted once across the whole family (every
    candidate x metric x slice row, `n_tests` non-None p-values), so a candidate's `p_holm` is at
    least its single comparison's. With one candidate the family is that comparison's own table
    and nothing changes. Each candidate's verdict is its own policy evaluation, exactly the verdict
    of its single comparison: no gate reads `p_holm` (a `max_drop` gate runs its own one-sided test,
    declared per candidate in advance; adjusting it for the number of candidates would only let
    more drops pass).
    """

    comparisons: list[Comparison]
    n_tests: int

    @property
    def single(self) -> bool:
        return len(self.comparisons) == 1

    @property
    def baseline(self) -> Side:
        return self.comparisons[0].baseline

    @property
    def policy(self) -> Policy | None:
        return self.comparisons[0].policy

    @property
    def failed(self) -> bool:
        """Whether any candidate's verdict failed (the command's exit code 1)."""
        return any(c.verdict.failed for c in self.comparisons)

    @property
    def verdict(self) -> str:
        """``fail`` when any candidate fails, ``pass`` when every one passes, ``none`` without a policy."""
        if self.policy is None:
            return "none"
        return "fail" if self.failed else "pass"

    def holm_dict(self) -> dict[str, Any]:
        """What the reported `p_holm` is adjusted across (the JSON document's ``holm``), and
        `resolution_warning` (None when there is nothing to say)."""
        first = self.comparisons[0]
        return {"of": first.settings.holm_of, "across": HOLM_FAMILY, "candidates": len(self.comparisons),
                "tests": self.n_tests, "warning": self.resolution_warning()}

    def resolution_warning(self) -> str | None:
        """A sentence when the family is so large that no resampled randomization p can survive Holm:
        with B random sign patterns a p-value is at least 1 / (B + 1), and Holm multiplies the
        smallest by the number of tests."""
        resamples = self.comparisons[0].settings.randomization_resamples
        floor = self.n_tests / (resamples + 1)
        if self.single or floor < SIGNIFICANT:
            return None
        return (f"Holm over {self.n_tests:,} tests: a randomization p drawn from {resamples:,} sign patterns is at "
                f"least 1/{resamples + 1:,}, so no row tested by resampling can reach p_holm < {SIGNIFICANT:g} "
                f"(its smallest p_holm is {min(floor, 1.0):.3f}); only exact tests (at most "
                f"{self.comparisons[0].settings.exact_max} differing pairs) and the normal approximation (above "
                f"{self.comparisons[0].settings.large_sample:,}) can. Compare fewer candidates at once for "
                "significance marks")

    def holm_text(self) -> str:
        """What p_holm is, in words."""
        return (f"{self.comparisons[0].settings.holm_of} Holm-adjusted across the whole family "
                f"({len(self.comparisons)} candidates x metric x slice: {self.n_tests:,} tests)")

    def matrix(self, slice_: str = "all") -> pd.DataFrame:
        """One row per candidate (in the order given) and metric with a row on `slice_`: candidate,
        metric, metric_name, n, delta, p_holm (family-wide), significant (p_holm < 0.05), higher_is_better."""
        frames = []
        for c in self.comparisons:
            rows = c.table[c.table["slice"] == slice_]
            frames.append(pd.DataFrame({
                "candidate": c.candidate.name, "metric": rows["metric"].to_numpy(),
                "metric_name": rows["metric_name"].to_numpy(), "n": rows["n"].to_numpy(),
                "delta": rows["delta"].to_numpy(), "p_holm": rows["p_holm"].to_numpy(),
                "higher_is_better": rows["higher_is_better"].to_numpy()}))
        out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        p = pd.to_numeric(out["p_holm"], errors="coerce")
        out["significant"] = (p < SIGNIFICANT).fillna(False).astype(bool)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``ragslice compare --format json``: with one candidate, that
        comparison's document (`Comparison.to_dict`, every key as before); with several, the keys
        the candidates share and the family's verdict. Both add ``candidates`` (one
        `Comparison.to_dict` per candidate, in the order given) and ``holm`` (what `p_holm` is
        adjusted across)."""
        docs = [c.to_dict() for c in self.comparisons]
        if self.single:
            return {**docs[0], "holm": self.holm_dict(), "candidates": docs}
        first = docs[0]
        shared = {key: first[key] for key in ("baseline", "suite", "suite_version", "labels_hash", "corpus_version",
                                              "n_questions", "policy", "settings")}
        return {"verdict": self.verdict, **shared, "holm": self.holm_dict(), "candidates": docs}


SIGNIFICANT = 0.05
"""The `p_holm` below which a family's matrix marks a delta as significant."""


def adjust_family(comparisons: Sequence[Comparison]) -> int:
    """Holm-adjust every candidate's randomization p-values together (`stats.holm` over the rows of
    every table, in candidate order) and write the result to each table's `p_holm`; returns the
    number of tests (non-None p-values). One comparison keeps its own adjustment."""
    p_values: list[float | None] = []
    for c in comparisons:
        p_values += [None if pd.isna(p) else float(p) for p in c.table[c.settings.holm_of]]
    adjusted = stats.holm(p_values)
    at = 0
    for c in comparisons:
        size = len(c.table)
        if size:
            c.table = c.table.assign(p_holm=pd.Series(adjusted[at:at + size], dtype=object).to_numpy())
        at += size
    return sum(p is not None for p in p_values)


def _distinct_candidates(baseline: str, candidates: Sequence[str]) -> None:
    if not candidates:
        raise invalid("name at least one candidate", "candidate", "")
    seen: set[str] = set()
    for name in candidates:
        if name in seen:
            raise invalid("candidate given twice: each candidate is compared once", "candidate", name)
        seen.add(name)


def compare_many(con: duckdb.DuckDBPyConnection, baseline: str, candidates: Sequence[str], *,
                 policy: Policy | str | Path | None = None, seed: int = 0, include_heldout: bool = True,
                 **kw: Any) -> Family:
    """Compare `baseline` with each of `candidates` (`compare`, the same settings), then Holm-adjust
    across the family (`adjust_family`). Raises ValidationError for an empty or repeated candidate
    list and whatever `compare` refuses (naming the candidate)."""
    _distinct_candidates(baseline, candidates)
    pol = policies.load_policy(policy) if isinstance(policy, (str, Path)) else policy
    comparisons = [compare(con, baseline, name, policy=pol, seed=seed, include_heldout=include_heldout, **kw)
                   for name in candidates]
    return Family(comparisons, adjust_family(comparisons))


def run_comparisons(baseline: str, candidates: Sequence[str], *, db: Path, policy: str | Path | None,
                    seed: int = 0) -> Family:
    """Read the database (read-only), compare every candidate, then record each verdict and
    held-out use (`run_comparison` for several candidates). Nothing is recorded when any candidate
    is refused."""
    pol = policies.load_policy(policy) if policy else None
    with Database(db).command() as con:
        family = compare_many(con, baseline, candidates, policy=pol, seed=seed)
    for comparison in family.comparisons:
        record(db, comparison)
    return family

"""The `Comparison` type: a paired comparison's figures and its read-only views.

A `Comparison` holds what `scoring.decide.compute.compare` computed for a baseline and a candidate
(each one run or a group of repeats, `scoring.decide.sides`): the suite's questions, the table of
every metric x slice (`COMPARISON_COLUMNS`), the spread and flaky questions of repeats, the
`Settings` that reproduce the figures, the warnings, the held-out use (`HeldoutUse`) and the
verdict. Its views (the per-question deltas, the regressed questions, the operations, the JSON
document) and the `gates.Evidence` a policy's gates read are built on first use from those
values and never change them. This module reads no database and computes no statistic.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import slices
from ..metrics.registry import BY_KEY, OPERATIONAL, REGISTRY
from ..metrics.slices import Slice
from . import aggregates, change, stats
from .alignment import AlignmentFacts
from .clusters import Clusters
from .clusters import words as cluster_words
from .policy import Policy
from .gates import Verdict
from .scores import SIDES, ScoreRows, record_frame
from .sides import Side


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
                f"sign-flip test (method: normal); Holm adjustment of {self.holm_of} across every {across}, "
                f"Benjamini-Hochberg beside it (p_fdr); in a family too large for the random patterns, the sampled "
                f"p-values at most 0.05 recomputed finer (exactly, or with 20 x tests / 0.05 patterns; p_floor); "
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
    "baseline_pooled", "candidate_pooled", "higher_is_better", "warnings", "method", "p_fdr", "p_floor",
    "mde", "bound", "clusters",
)
"""`mde` and `bound` (added after `method`): the smallest drop a one-sided test at 0.05 detects with power
0.8 at the row's spread (None: the randomization test cannot reach 0.05 with the row's differing pairs),
and Student's one-sided 95% upper bound of the drop, both in the metric's direction (`detect.row_figures`).
`clusters` (added last): the clusters among the row's paired questions when the comparison is clustered
(every interval, test, MDE and bound of the row then resamples whole clusters: `clusters`), None when not."""


@dataclass
class Comparison:
    """A paired comparison: tables for every view, and the verdict when a policy was given.

    Frames (pandas):
    - `questions`: the suite's questions (index question_id) with type, split, critical, tags,
      answerable, disputed, text, position;
    - `table`: one row per metric x slice with n >= 1 (`COMPARISON_COLUMNS`); `method` is
      ``resampling`` or ``normal`` (`scoring.decide.stats`), None where n < 2; `p_holm` and `p_fdr`
      adjust the randomization p across the family (Holm; Benjamini-Hochberg); `p_floor` is the
      smallest randomization p the row's test could report (`scoring.decide.family.resolve`);
      `mde` and `bound` what the row's sample can detect and its bound of the drop
      (`detect.row_figures`);
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
    corrected: Any = None
    """Pooled Support, Coverage and the abstention rates corrected by review samples
    (`scoring.decide.corrected.CorrectedFacts`), None when no run answers in sentences."""
    resolution: Any = None
    """How finely the table's randomization p-values are resolved for its family
    (`scoring.decide.family.Resolution`; a `Family` sets the family's), None when not known."""
    clusters: Clusters | None = None
    """Each question's cluster when the comparison is clustered (`clusters.question_clusters`), else None."""
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

    # -- gates.Evidence --------------------------------------------------------------------------

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

    def paired_clusters(self, key: str, slice_: Slice, *, exclude: str | None = None) -> np.ndarray | None:
        """Per pair of `paired_values` (same order), its question's cluster code; None when unclustered."""
        if self.clusters is None:
            return None
        at = self._positions(slice_, exclude)
        b = self.values["baseline"][key].to_numpy(dtype=float).take(at)
        c = self.values["candidate"][key].to_numpy(dtype=float).take(at)
        return self.clusters.codes.take(at)[~(np.isnan(b) | np.isnan(c))]

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

    def paired_unknown(self, key: str, slice_: Slice, *, exclude: str | None = None) -> np.ndarray:
        """Per pair of `paired_values` (same order), how far above its scored value the candidate's value
        could have been had its failed or missing records answered: the metric's range (1 for a rate or a
        flag, unbounded for a count) times the share of the question's scored candidate repeats that
        failed or are missing; 0 for a question every repeat answered (`drop`)."""
        at = self._positions(slice_, exclude)
        b = self.values["baseline"][key].to_numpy(dtype=float).take(at)
        c = self.values["candidate"][key].to_numpy(dtype=float).take(at)
        keep = ~(np.isnan(b) | np.isnan(c))
        cache = ("unknown", key)
        if cache not in self._masks:
            share = np.zeros(len(self.questions))
            r = self.rows
            if r is not None and key in r.columns:
                own = r.side == SIDES.index("candidate")
                scored = own & ~np.isnan(r.values[:, r.columns.index(key)])
                failed = scored & (r.status != 0)
                total = np.bincount(r.slot[scored], minlength=len(share))
                bad = np.bincount(r.slot[failed], minlength=len(share))
                with np.errstate(invalid="ignore", divide="ignore"):
                    share = np.where(total > 0, bad / np.maximum(total, 1), 0.0)
            span = np.inf if BY_KEY[key].value == "count" else 1.0
            self._masks[cache] = np.where(share > 0, share * span, 0.0)
        return self._masks[cache].take(at)[keep]

    def operational_range(self, side: str, key: str, slice_: Slice, aggregate: str, *, budget: float | None = None,
                          exclude: str | None = None) -> tuple[float | None, float | None, int, int]:
        """A side's latency or cost aggregate over the slice's records with failed and missing records
        unknown up to `budget` (`aggregates.operational_range`): (low, high, n, unknown)."""
        r = self.rows
        if r is None:
            return None, None, 0, 0
        keep = (r.side == SIDES.index(side)) & self._mask(slice_, exclude)[r.slot]
        return aggregates.operational_range(r.status[keep], r.latency[keep], r.cost[keep], r.run[keep], key, aggregate,
                                            budget)

    def automatic_aligners(self) -> list[tuple[str, float | None, int]]:
        return self.alignment.automatic_aligners(self.resting) if self.alignment is not None else []

    def corrected_estimate(self, side: str, key: str, slice_: Any) -> Any:
        """A side's corrected figure of `key` on the slice (`scoring.decide.corrected.Corrected`), None when
        nothing of it rests on an alignment or no corrected estimate exists for the metric or slice."""
        from .corrected import CORRECTABLE

        if self.corrected is None or key not in CORRECTABLE:
            return None
        return self.corrected.get(side, str(slice_), key)

    def aligner_intervals(self) -> dict[str, tuple[float, float] | None]:
        """Per automatic aligner of `automatic_aligners`: the bootstrap interval of its kappa, None when unknown."""
        return self.alignment.aligner_intervals(self.resting) if self.alignment is not None else {}

    @property
    def n_automatic(self) -> int:
        return int(self.questions["automatic"].sum()) if "automatic" in self.questions else 0

    # -- views ----------------------------------------------------------------------------------

    def method(self, across: str = "metric x slice") -> str:
        """The method in words (`Settings.describe`), and when the questions are clustered, how: ``...;
        clustered: 95 clusters (cluster_by cluster): ...``."""
        text = self.settings.describe(across)
        if self.clusters is not None:
            text += (f"; {cluster_words(self.clusters.count)} (cluster_by {self.clusters.by}): every interval, test, "
                     "MDE and bound resamples whole clusters (cluster bootstrap, sign flips of cluster sums, "
                     "cluster-robust t with clusters - 1 df, Wilcoxon of cluster means)")
        return text

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
            "clusters": None if self.clusters is None else self.clusters.count,
            "cluster_by": None if self.clusters is None else self.clusters.by,
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
            "corrected": None if self.corrected is None else self.corrected.to_dict(),
            "settings": asdict(self.settings),
            "resolution": None if self.resolution is None else self.resolution.to_dict(),
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

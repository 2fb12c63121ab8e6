"""Paired comparison of a baseline and a candidate, and the release verdict.

A side is one run or a group of repeats (runs sharing the manifest's ``group``). Both sides must
be on the same suite, suite version and corpus version. Questions are paired by ``question_id``
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
slice is computed in one batch (`stats.paired_many`) that shares resampling work between rows.

`compare` only reads (use a read-only connection), or reads nothing when given the `Inputs` that
`read_inputs` read before (a reader can then close the file before the statistics run). Scores
come from the `scores_by_position` summary (`scoring.store.summaries`) when the database has it. For two
single runs without a policy, inputs read without detail give the same table from far less: the
questions' slice columns and both sides' per-question scores (`read_slice_columns`,
`read_side_scores`), not every record's status, latency, cost and question text. `record` stores
the verdict and the held-out log in one short write; `compare_command` is ``ragslice compare``.
"""
from __future__ import annotations

import json
import time
import uuid
import warnings as _warnings
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..decide import policy as policies
from ..decide import stats
from ..store import database as store
from ..errors import invalid
from ..metrics.registry import BY_KEY, REGISTRY
from ..metrics.registry import OPERATIONAL
from ..metrics import slices
from .policy import HELDOUT, Policy, Verdict
from ..metrics.slices import Slice
from ..store.schema import table_names

METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY)
COUNT_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(c for m in REGISTRY if m.pooled for c in m.pooled))
SCORE_COLUMNS: tuple[str, ...] = (*METRIC_KEYS, *COUNT_COLUMNS)
"""The per-question score columns a side holds (`ScoreRows.values`, `SideScores.columns`)."""
SIDES: tuple[str, ...] = ("baseline", "candidate")
_AT_K = [m.name for m in REGISTRY if m.cutoff != "none"]
CUTOFF_NAMES = ", ".join(_AT_K[:-1]) + f" and {_AT_K[-1]}"
"""Every metric stored at the run's cutoff k, in words: what a difference in k makes incomparable."""

VERDICT_TABLES: dict[str, str] = {
    "verdicts": """
    verdict_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    baseline VARCHAR NOT NULL,
    candidate VARCHAR NOT NULL,
    baseline_runs VARCHAR[] NOT NULL,
    candidate_runs VARCHAR[] NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    policy_name VARCHAR NOT NULL,
    policy_hash VARCHAR NOT NULL,
    policy_text VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL,
    gates JSON NOT NULL,
    verdict_without_disputed VARCHAR,
    warnings JSON NOT NULL""",
    "heldout_log": """
    created_at TIMESTAMP NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    baseline VARCHAR NOT NULL,
    candidate VARCHAR NOT NULL,
    policy_hash VARCHAR,
    n_heldout INTEGER NOT NULL,
    comparison_key VARCHAR""",
}
"""Tables `record` creates (if absent) in the database; documented in docs/schema.md."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a single run or the runs of one group (ordered by repeat)."""

    name: str
    kind: Literal["run", "group"]
    run_ids: tuple[str, ...]
    suite: str
    suite_version: str
    corpus_version: str
    k: tuple[int, ...]
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.kind == "run":
            return self.name
        return f"{self.name} ({len(self.run_ids)} repeats)"


@dataclass(frozen=True)
class Settings:
    """Everything needed to reproduce the figures."""

    seed: int = 0
    bootstrap_resamples: int = stats.BOOTSTRAP_RESAMPLES
    randomization_resamples: int = stats.RANDOMIZATION_RESAMPLES
    exact_max: int = stats.EXACT_MAX
    confidence: float = stats.CONFIDENCE
    holm_of: str = "p_randomization"
    tie: float = stats.TIE
    large_sample: int = stats.LARGE_SAMPLE

    def describe(self) -> str:
        return (f"{self.confidence:.0%} percentile bootstrap intervals ({self.bootstrap_resamples:,} resamples), "
                f"sign-flip randomization test (exact when at most {self.exact_max} pairs differ, else "
                f"{self.randomization_resamples:,} random sign patterns), seed {self.seed}; above "
                f"{self.large_sample:,} differing pairs the normal interval and the normal approximation of the "
                f"sign-flip test (method: normal); Holm adjustment of {self.holm_of} across every metric x slice; "
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


def comparison_key(baseline_runs: Sequence[str], candidate_runs: Sequence[str], policy_hash: str | None,
                   labels_hash: str) -> str:
    """What makes two comparisons the same for the held-out budget: the same runs on each side, the
    same policy text and the same labels."""
    import hashlib

    payload = json.dumps([sorted(baseline_runs), sorted(candidate_runs), policy_hash, labels_hash])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


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
    values: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    rows: ScoreRows | None = field(default=None, repr=False)
    detail: bool = field(default=True, repr=False)
    """False when compared on inputs read without detail (`read_inputs`): `questions` then holds
    the slice columns only, and the per-question views and gate evidence are refused."""
    _masks: dict[tuple, Any] = field(default_factory=dict, init=False, repr=False)
    _delta_rows: pd.DataFrame | None = field(default=None, init=False, repr=False)
    _record_rows: pd.DataFrame | None = field(default=None, init=False, repr=False)
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
            self._record_rows = _record_frame(self.rows, self.questions.index) if self.rows is not None else \
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

    def _mask(self, slice_: Slice, exclude_disputed: bool) -> np.ndarray:
        """The questions of a slice as a boolean array in suite order (cached)."""
        self._detailed("a gate's slice")
        key = ("mask", slice_, exclude_disputed)
        if key not in self._masks:
            q = self.questions
            mask = slices.mask(q, slice_)
            if exclude_disputed:
                mask = mask & q["disputed"].isna().to_numpy()
            self._masks[key] = mask
        return self._masks[key]

    def _positions(self, slice_: Slice, exclude_disputed: bool) -> np.ndarray:
        """The positions of a slice's questions in suite order (cached)."""
        key = ("positions", slice_, exclude_disputed)
        if key not in self._masks:
            self._masks[key] = np.flatnonzero(self._mask(slice_, exclude_disputed))
        return self._masks[key]

    def slice_questions(self, slice_: Slice, *, exclude_disputed: bool = False) -> list[str]:
        key = ("ids", slice_, exclude_disputed)
        if key not in self._masks:
            self._masks[key] = self.questions.index.take(self._positions(slice_, exclude_disputed)).tolist()
        return list(self._masks[key])

    def slice_values(self, kind: str) -> list[str]:
        return slices.values(self.questions, kind)

    def paired_values(self, key: str, slice_: Slice, *, exclude_disputed: bool = False
                      ) -> tuple[np.ndarray, np.ndarray]:
        at = self._positions(slice_, exclude_disputed)
        b = self.values["baseline"][key].to_numpy(dtype=float).take(at)
        c = self.values["candidate"][key].to_numpy(dtype=float).take(at)
        keep = ~(np.isnan(b) | np.isnan(c))
        return b[keep], c[keep]

    def aggregate(self, side: str, key: str, slice_: Slice, aggregate: str, *, exclude_disputed: bool = False
                  ) -> tuple[float | None, int]:
        mask = self._mask(slice_, exclude_disputed)
        if key in OPERATIONAL:
            r = self.rows
            if r is None:
                return None, 0
            keep = (r.side == SIDES.index(side)) & mask[r.slot]
            return _operational(r.status[keep], r.latency[keep], r.cost[keep], r.run[keep], key, aggregate)
        at = self._positions(slice_, exclude_disputed)
        frame = self.values[side]
        pooled = BY_KEY[key].pooled
        parts = tuple(frame[c].to_numpy(dtype=float).take(at) for c in pooled) if pooled else None
        return _aggregate(frame[key].to_numpy(dtype=float).take(at), parts, aggregate)

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

    def regressed_questions(self) -> pd.DataFrame:
        """One row per question worse on at least one metric, most important first.

        Order: critical questions first, then more regressed metrics, then suite order. `changes`
        lists ``(metric name, baseline, candidate)`` for each regressed metric.
        """
        regs = self.regressions()
        cols = ["question_id", "text", "type", "split", "critical", "answerable", "disputed", "position",
                "n_metrics", "changes"]
        if not len(regs):
            return pd.DataFrame(columns=cols)
        grouped = regs.groupby("question_id", sort=False)
        out = grouped[["text", "type", "split", "critical", "answerable", "disputed", "position"]].first()
        out["n_metrics"] = grouped.size()
        out["changes"] = grouped.apply(
            lambda g: [(n, b, c) for n, b, c in zip(g["metric_name"], g["baseline"], g["candidate"])],
            include_groups=False)
        out = out.reset_index().sort_values(["critical", "n_metrics", "position"], ascending=[False, False, True])
        return out[cols].reset_index(drop=True)

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
            "corpus_version": self.corpus_version,
            "n_questions": int(len(self.questions)),
            "policy": None if self.policy is None else {
                "name": self.policy.name, "path": self.policy.path, "sha256": self.policy.sha256},
            "gates": [_gate_dict(g) for g in v.gates],
            "warnings": list(self.warnings) + list(v.warnings),
            "without_disputed": None if v.disputed is None else {
                "n_disputed": v.disputed.n_disputed,
                "verdict": v.disputed.verdict,
                "differences": list(v.disputed.differences),
                "gates": [_gate_dict(g) for g in v.disputed.gates],
            },
            "heldout": None if self.heldout is None else {
                "n_questions": self.heldout.n_questions, "uses": self.heldout.uses,
                "budget": self.heldout.budget, "comparison_key": self.heldout.key,
                "logged_before": self.heldout.logged},
            "settings": asdict(self.settings),
            "comparisons": [_jsonable(r) for r in self.table.to_dict(orient="records")],
            "operations": [_jsonable(r) for r in self.operations.to_dict(orient="records")],
            "regressions": [_jsonable(r) for r in self.regressions()[
                ["question_id", "metric", "metric_name", "baseline", "candidate", "delta"]].to_dict(orient="records")],
            "flaky": [_jsonable(r) for r in self.flaky.to_dict(orient="records")],
        }


def _side_dict(side: Side) -> dict[str, Any]:
    return {"name": side.name, "kind": side.kind, "runs": list(side.run_ids), "k": list(side.k)}


def _gate_dict(g: policies.GateResult) -> dict[str, Any]:
    return _jsonable(asdict(g))


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


def side_aggregate(values: pd.DataFrame, key: str, aggregate: str) -> tuple[float | None, int]:
    """One side's aggregate of a registry metric over the given per-question rows.

    macro: mean of the scored questions' values; pooled: sum of the registry's numerator column over
    sum of its denominator column, on the scored questions (the macro mean when the metric does not
    pool); total: sum of the values. n: the scored questions. None when nothing is scored.
    """
    pooled = BY_KEY[key].pooled
    parts = tuple(values[c].to_numpy(dtype=float) for c in pooled) if pooled else None
    return _aggregate(values[key].to_numpy(dtype=float), parts, aggregate)


def _aggregate(column: np.ndarray, pooled: tuple[np.ndarray, ...] | None, aggregate: str
               ) -> tuple[float | None, int]:
    """`side_aggregate` over arrays: the metric's values and its pooled numerator / denominator columns."""
    scored = ~np.isnan(column)
    n = int(np.count_nonzero(scored))
    if n == 0:
        return None, 0
    if aggregate == "macro":
        return float(column[scored].mean()), n
    if aggregate == "total":
        return float(column[scored].sum()), n
    if aggregate == "pooled":
        if pooled is None:
            return float(column[scored].mean()), n
        num, den = (float(part[scored].sum()) for part in pooled)
        return (num / den if den else None), n
    raise ValueError(f"unknown aggregate {aggregate!r}")


def operational_aggregate(records: pd.DataFrame, key: str, aggregate: str) -> tuple[float | None, int]:
    """Failure rate, latency or cost over record rows (every repeat); see `scoring.metrics.OPERATIONAL`."""
    ok = (records["status"] == "ok").to_numpy(dtype=bool)
    runs = pd.factorize(records["run_id"])[0]
    return _operational(np.where(ok, 0, 2), records["latency_ms"].to_numpy(dtype=float),
                        records["cost_usd"].to_numpy(dtype=float), runs, key, aggregate)


def _operational(status: np.ndarray, latency: np.ndarray, cost: np.ndarray, runs: np.ndarray, key: str,
                 aggregate: str) -> tuple[float | None, int]:
    """`operational_aggregate` over record arrays: status codes (`STATUSES`), latency, cost, run ids."""
    if key == "failure_rate":
        n = len(status)
        return (float(np.count_nonzero(status != 0) / n) if n else None), n
    column = {"latency": latency, "cost": cost}[key]
    values = column[~np.isnan(column)]
    n = len(values)
    if n == 0:
        return None, 0
    if aggregate in ("p50", "p95", "p99"):
        return float(np.percentile(values, float(aggregate[1:]))), n
    if aggregate == "mean":
        return float(values.mean()), n
    if aggregate == "max":
        return float(values.max()), n
    if aggregate == "total":
        return float(values.sum()) / max(1, len(np.unique(runs))), n
    raise ValueError(f"unknown aggregate {aggregate!r} for {key}")


# --- reading the database -----------------------------------------------------------------------


def _runs(con: duckdb.DuckDBPyConnection, tables: set[str] | None = None) -> pd.DataFrame:
    if not {"runs", "question_scores", "questions"} <= (table_names(con) if tables is None else tables):
        raise invalid("not a ragslice database (no runs, questions or question_scores table); "
                      "create it with `ragslice refresh WORKSPACE --db FILE`")
    return con.execute(
        "SELECT run_id, suite, suite_version, corpus_version, rubric_version, k, run_group, repeat, "
        "CAST(manifest AS VARCHAR) AS manifest FROM runs ORDER BY run_id"
    ).df()


def resolve_side(runs: pd.DataFrame, name: str, role: str) -> Side:
    """A run ID or a group name (``run:ID`` / ``group:NAME`` force one reading).

    A bare name that is both a run ID and the group of other runs is ambiguous and refused.
    """
    forced, sep, rest = name.partition(":")
    if sep and forced in ("run", "group") and rest:
        kinds, key = (forced,), rest
    else:
        kinds, key = ("run", "group"), name
    as_run = runs[runs["run_id"] == key] if "run" in kinds else runs.iloc[0:0]
    as_group = runs[runs["run_group"] == key] if "group" in kinds else runs.iloc[0:0]
    if len(as_run) and len(as_group) and set(as_group["run_id"]) != set(as_run["run_id"]):
        raise invalid(f"{role} {key!r} is both a run and the group of other runs; write run:{key} or group:{key}",
                      role, name)
    if len(as_run):
        chosen, kind = as_run, "run"
    elif len(as_group):
        chosen, kind = as_group.sort_values(["repeat", "run_id"], na_position="last"), "group"
    else:
        groups = sorted(g for g in runs["run_group"].dropna().unique())
        listed = ", ".join(runs["run_id"].head(20)) + (" ..." if len(runs) > 20 else "")
        extra = f"; groups: {', '.join(groups[:20])}" if groups else ""
        raise invalid(f"no run or group of that name in the database (runs: {listed or 'none'}{extra})", role, name)
    for column, what in (("suite", "suite"), ("suite_version", "suite version"), ("corpus_version", "corpus version")):
        found = sorted(chosen[column].unique())
        if len(found) > 1:
            raise invalid(f"the runs of group {key!r} are on different {what}s ({', '.join(found)}); "
                          "repeats must share the suite, its version and the corpus version", role, name)
    first = chosen.iloc[0]
    return Side(
        name=key,
        kind=kind,  # type: ignore[arg-type]
        run_ids=tuple(chosen["run_id"]),
        suite=first["suite"],
        suite_version=first["suite_version"],
        corpus_version=first["corpus_version"],
        k=tuple(int(v) for v in chosen["k"]),
        manifests={r: json.loads(m) for r, m in zip(chosen["run_id"], chosen["manifest"])},
    )


def check_comparable(baseline: Side, candidate: Side) -> None:
    """Refuse sides on different suites or versions, or sides that share runs."""
    for attr, what in (("suite", "suite"), ("suite_version", "suite version"), ("corpus_version", "corpus version")):
        b, c = getattr(baseline, attr), getattr(candidate, attr)
        if b != c:
            raise invalid(
                f"baseline {baseline.name!r} is on {what} {b!r} and candidate {candidate.name!r} on {c!r}: scores "
                f"against different questions, labels or documents are not comparable; compare runs recorded "
                f"against the same {what}", "candidate", candidate.name)
    shared = sorted(set(baseline.run_ids) & set(candidate.run_ids))
    if shared:
        raise invalid(f"baseline and candidate share runs ({', '.join(shared)}); a comparison needs two "
                      "different sides", "candidate", candidate.name)


def _questions(con: duckdb.DuckDBPyConnection, suite: str, with_text: bool = True) -> pd.DataFrame:
    """The suite's questions in suite order (index question_id); `text` None for every question
    when read without text."""
    text = "text" if with_text else "CAST(NULL AS VARCHAR) AS text"
    q = con.sql(
        f"SELECT question_id, position, {text}, type, split, critical, CAST(to_json(tags) AS VARCHAR) AS tags, "
        "answerable, disputed FROM questions WHERE suite = $suite", params={"suite": suite}
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
    if not with_text:
        q["text"] = None
    return q.set_index("question_id")


STATUSES: tuple[str, ...] = ("ok", "missing", "failed")
"""Record statuses (docs/schema.md), coded by position in `ScoreRows.status`."""


@dataclass(frozen=True)
class ScoreRows:
    """The question_scores rows of both sides as arrays, one entry per run x question.

    `side` 0 (baseline) or 1 (candidate); `run` the run's position in baseline runs + candidate runs;
    `slot` the question's position in the compared questions; `status` a code into `STATUSES`;
    `values` one column per `METRIC_KEYS` + `COUNT_COLUMNS` (NaN: n/a).
    """

    run_ids: tuple[str, ...]
    side: np.ndarray
    run: np.ndarray
    slot: np.ndarray
    status: np.ndarray
    values: np.ndarray
    latency: np.ndarray
    cost: np.ndarray


def _score_rows(con: duckdb.DuckDBPyConnection, suite: str, baseline: Sequence[str], candidate: Sequence[str],
                positions: np.ndarray) -> ScoreRows:
    """Both sides' rows for the compared questions, given by their `position`s in suite order.

    Read from `scores_by_position` (`scoring.store.summaries`) when the database has it, else from
    `question_scores` joined with `questions`: the same rows either way."""
    run_ids = (*baseline, *candidate)
    columns = SCORE_COLUMNS
    cols = ", ".join(f"s.{c}" for c in columns)  # stored types: fewer bytes to hand over than DOUBLE
    source, position = _score_source(con)
    read: dict[str, Any] = {}
    for run_id in dict.fromkeys(run_ids):  # one scan per run: with the summary, of that run's rows only
        read[run_id] = con.sql(
            f"SELECT {position} AS position, "
            "CAST(coalesce(list_position(?::VARCHAR[], s.status), 0) - 1 AS TINYINT) AS status, "
            f"{cols}, s.latency_ms, s.cost_usd "
            f"FROM {source} WHERE s.suite = ? AND s.run_id = ?",
            params=[list(STATUSES), suite, run_id],
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
        raise invalid(f"question_scores holds a status other than {', '.join(STATUSES)}; refresh the database "
                      "with this version of ragslice")
    values = np.empty((int(starts[-1]), len(columns)), order="F")  # column-major: columns are read one at a time
    for k, name in enumerate(columns):
        for block, start, end in zip(blocks, starts[:-1], starts[1:]):
            values[start:end, k] = arrow_floats(block.column(name))
    latency, cost = column("latency_ms"), column("cost_usd")
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
    fraction of its time (no IDs, text or tags are handed over)."""
    types, splits = con.execute(
        "SELECT list(DISTINCT type ORDER BY type), list(DISTINCT split ORDER BY split) FROM questions WHERE suite = ?",
        [suite]).fetchall()[0]
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
        "answerable FROM questions WHERE suite = $suite", params=params).to_arrow_table()
    position = table.column("position").to_numpy().astype(np.int64)
    order = None if bool((position[1:] > position[:-1]).all()) else np.argsort(position, kind="stable")

    def column(name: str) -> np.ndarray:  # in suite order (sorted here: cheaper than ORDER BY)
        values = table.column(name).to_numpy(zero_copy_only=False)
        return values if order is None else values.take(order)

    return pd.DataFrame({
        "position": column("position"),
        "type": pd.Categorical.from_codes(column("type").astype(np.int64), categories=types),
        "split": pd.Categorical.from_codes(column("split").astype(np.int64), categories=splits),
        "critical": column("critical").astype(bool),
        "answerable": column("answerable").astype(bool),
    })


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
    """Both sides' `columns` (of `SCORE_COLUMNS`) per question at `positions` (suite order), with
    each question's status: one scan of each run's rows (of that run's rows only with the summary),
    no latency, cost or text. Rows of questions not at `positions` are left out."""
    names = tuple(dict.fromkeys(columns))
    unknown = [n for n in names if n not in SCORE_COLUMNS]
    if unknown:
        raise ValueError(f"unknown score column(s) {', '.join(unknown)}")
    positions = np.asarray(positions, dtype=np.int64)
    size = len(positions)
    source, position = _score_source(con)
    # names from SCORE_COLUMNS only; flags are handed over as doubles (Arrow's own cast of a nullable
    # boolean costs more), numbers in their stored types (fewer bytes; `arrow_floats` widens them)
    cols = "".join(f", CAST(s.{n} AS DOUBLE) AS {n}" if n in BY_KEY and BY_KEY[n].value == "flag" else f", s.{n}"
                   for n in names)
    identity = bool((positions == np.arange(size)).all())
    read: dict[str, tuple[np.ndarray | None, np.ndarray, dict[str, np.ndarray]]] = {}
    for run_id in dict.fromkeys((*baseline, *candidate)):  # a run on both sides is read once
        block = con.sql(f"SELECT {position} AS position, s.missing, s.failed{cols} FROM {source} "
                        "WHERE s.suite = ? AND s.run_id = ?", params=[suite, run_id]).to_arrow_table()
        at = block.column("position").to_numpy().astype(np.int64)
        status = np.zeros(len(at), dtype=np.int8)  # a code into STATUSES
        status[block.column("missing").to_numpy(zero_copy_only=False)] = STATUSES.index("missing")
        status[block.column("failed").to_numpy(zero_copy_only=False)] = STATUSES.index("failed")
        values = {n: arrow_floats(block.column(n)) for n in names}
        if identity and len(at) == size and bool((at == positions).all()):
            read[run_id] = (None, status, values)  # every question once, in suite order
            continue
        slot = position_slots(positions, at)
        keep = np.flatnonzero(slot >= 0)  # rows of questions left out (held-out) go
        read[run_id] = (slot.take(keep), status.take(keep), {n: v.take(keep) for n, v in values.items()})

    out_columns, present, missing, failed = [], [], [], []
    for runs in (tuple(baseline), tuple(candidate)):
        if len(runs) == 1:
            slot, status, values = read[runs[0]]
            if slot is None:
                out_columns.append(dict(values))
                present.append(np.ones(size, dtype=bool))
                missing.append(status == STATUSES.index("missing"))
                failed.append(status == STATUSES.index("failed"))
                continue
        mine = {n: np.zeros(size) for n in names}
        scored = {n: np.zeros(size) for n in names}
        rows, lost, broken = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
        for run_id in runs:  # in run order: a question's total adds its repeats' values one by one
            slot, status, values = read[run_id]
            slot = np.arange(size) if slot is None else slot
            rows[slot] = True
            lost[slot[status == STATUSES.index("missing")]] = True
            broken[slot[status == STATUSES.index("failed")]] = True
            for n, v in values.items():
                has = ~np.isnan(v)
                mine[n][slot] += np.where(has, v, 0.0)
                scored[n][slot] += has
        with np.errstate(invalid="ignore", divide="ignore"):
            out_columns.append({n: np.where(scored[n] > 0, mine[n] / scored[n], np.nan) for n in names})
        present.append(rows)
        missing.append(lost)
        failed.append(broken)
    return SideScores((tuple(baseline), tuple(candidate)), positions, (out_columns[0], out_columns[1]),
                      (present[0], present[1]), (missing[0], missing[1]), (failed[0], failed[1]))


def side_scores(rows: ScoreRows, baseline: Sequence[str], candidate: Sequence[str], positions: np.ndarray
                ) -> SideScores:
    """`SideScores` from score rows read before (`read_scores`, over the questions at `positions`):
    the same arrays `read_side_scores` reads."""
    size = len(positions)
    ids = pd.RangeIndex(size)
    columns, present, missing, failed = [], [], [], []
    for side in (0, 1):
        frame = _collapse(rows, side, ids)
        columns.append({n: frame[n].to_numpy() for n in SCORE_COLUMNS})
        own = rows.side == side
        slot, status = rows.slot[own], rows.status[own]
        present.append(np.bincount(slot, minlength=size) > 0)
        missing.append(np.bincount(slot, weights=status == STATUSES.index("missing"), minlength=size) > 0)
        failed.append(np.bincount(slot, weights=status == STATUSES.index("failed"), minlength=size) > 0)
    return SideScores((tuple(baseline), tuple(candidate)), np.asarray(positions, dtype=np.int64),
                      (columns[0], columns[1]), (present[0], present[1]), (missing[0], missing[1]),
                      (failed[0], failed[1]))


def _record_frame(rows: ScoreRows, ids: pd.Index) -> pd.DataFrame:
    return pd.DataFrame({
        "run_id": np.array(rows.run_ids, dtype=object)[rows.run],
        "question_id": ids.take(rows.slot),
        "status": np.array(STATUSES, dtype=object)[rows.status],
        "latency_ms": rows.latency,
        "cost_usd": rows.cost,
        "side": np.array(SIDES, dtype=object)[rows.side],
    })


@dataclass(frozen=True)
class HeldoutLog:
    """The comparisons logged on one suite version's held-out set: their keys, and how many rows
    carry none (logged by an older version, each counted as a comparison of its own)."""

    keys: frozenset[str] = frozenset()
    unkeyed: int = 0

    def previous(self, key: str) -> int:
        """Distinct comparisons logged other than `key`."""
        return self.unkeyed + len(self.keys - {key})


def _heldout_log(con: duckdb.DuckDBPyConnection, suite: str, version: str, tables: set[str] | None = None
                 ) -> HeldoutLog:
    if "heldout_log" not in (table_names(con) if tables is None else tables):
        return HeldoutLog()
    columns = {name for (name,) in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'heldout_log' "
        "AND table_catalog = current_database()").fetchall()}
    if "comparison_key" not in columns:
        rows = con.execute("SELECT count(*) FROM heldout_log WHERE suite = ? AND suite_version = ?",
                           [suite, version]).fetchall()
        return HeldoutLog(frozenset(), int(rows[0][0]))
    keys, unkeyed = con.execute(
        "SELECT coalesce(list(DISTINCT comparison_key) FILTER (WHERE comparison_key IS NOT NULL), []), "
        "count(*) FILTER (WHERE comparison_key IS NULL) FROM heldout_log WHERE suite = ? AND suite_version = ?",
        [suite, version]).fetchall()[0]
    return HeldoutLog(frozenset(keys), int(unkeyed))


def _labels_hash(con: duckdb.DuckDBPyConnection, suite: str) -> str:
    found = con.execute("SELECT files_hash FROM suites WHERE suite = ?", [suite]).fetchall()
    return str(found[0][0]) if found else ""


def _earlier_verdicts(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, tables: set[str] | None = None
                      ) -> tuple[tuple[str, str, str, datetime], ...]:
    """(policy_name, policy_hash, verdict, created_at) of every verdict recorded for these side names, newest first."""
    if "verdicts" not in (table_names(con) if tables is None else tables):
        return ()
    rows = con.execute(
        "SELECT policy_name, policy_hash, verdict, created_at FROM verdicts WHERE baseline = ? AND candidate = ? "
        "ORDER BY created_at DESC", [baseline, candidate]).fetchall()
    return tuple(tuple(r) for r in rows)  # type: ignore[misc]


def _policy_edits(earlier: Sequence[tuple[str, str, str, datetime]], baseline: str, candidate: str,
                  policy: Policy) -> list[str]:
    """Warnings when a policy of this name judged this pair before with different text."""
    for name, h, v, t in earlier:
        if name == policy.name and h != policy.sha256:
            return [f"policy {policy.name!r} judged {baseline} vs {candidate} before with different text "
                    f"(sha256 {h[:12]}, verdict {v}, {t:%Y-%m-%d %H:%M} UTC): a policy edited after its results were "
                    "seen is no longer declared in advance"]
    return []


# --- the comparison ------------------------------------------------------------------------------


def side_values(rows: ScoreRows, side: int, ids: pd.Index) -> pd.DataFrame:
    """Per-question means over the side's (0 baseline, 1 candidate) repeats of every metric and
    pooling count (NaN where no repeat scored the question), in suite order (`ids`)."""
    return _collapse(rows, side, ids)


def _collapse(rows: ScoreRows, side: int, ids: pd.Index) -> pd.DataFrame:
    """Per-question means over the side's repeats (NaN where no repeat scored the question), in suite order."""
    own = np.flatnonzero(rows.side == side)
    slot = rows.slot[own]
    width = rows.values.shape[1]
    if len(own) == len(ids) and len(own) and own[-1] - own[0] == len(own) - 1 and \
            (slot == np.arange(len(ids))).all():  # one row per question, consecutive, in suite order
        block = rows.values[own[0]:own[-1] + 1]
        return pd.DataFrame(block, index=ids, columns=list(SCORE_COLUMNS), copy=False)
    out = np.full((len(ids), width), np.nan, order="F")  # column-major, as pandas stores it
    single = len(slot) == 0 or np.bincount(slot).max() == 1  # one row per question: nothing to average
    with np.errstate(invalid="ignore", divide="ignore"):
        for k in range(width):
            column = rows.values[own, k]
            if single:
                out[slot, k] = column
                continue
            scored = ~np.isnan(column)
            total = np.bincount(slot, weights=np.where(scored, column, 0.0), minlength=len(ids))
            count = np.bincount(slot, weights=scored, minlength=len(ids))
            out[:, k] = np.where(count > 0, total / count, np.nan)
    return pd.DataFrame(out, index=ids, columns=list(SCORE_COLUMNS), copy=False)


def _spread_and_flaky(name: str, rows: ScoreRows, side: int, run_ids: Sequence[str], ids: pd.Index
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spread over repeats per question x metric, and the question x metric (or status) that flip.

    A question flips when its repeats disagree: values further apart than `stats.TIE`, a value in
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
    status = np.full((len(ids), len(run_ids)), STATUSES.index("missing"), dtype=np.int8)
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
    flips = ((high - low) > stats.TIE) | ((count > 0) & (count < len(run_ids)))
    fq, fm = np.nonzero(flips)
    rows_out = [(name, ids[q], METRIC_KEYS[m], q, m, tuple(None if v != v else float(v) for v in cube[q, :, m]))
                for q, m in zip(fq, fm)]
    status_flips = np.flatnonzero((status != status[:, :1]).any(axis=1))
    rows_out += [(name, ids[q], "status", q, metrics, tuple(STATUSES[c] for c in status[q])) for q in status_flips]
    rows_out.sort(key=lambda r: (r[3], r[4]))
    flaky = pd.DataFrame([(a, b, c, v) for a, b, c, _, _, v in rows_out],
                         columns=["side", "question_id", "metric", "values"])
    return spread, flaky


def _deltas(values: dict[str, pd.DataFrame]) -> pd.DataFrame:
    frames = []
    for i, m in enumerate(REGISTRY):
        b, c = values["baseline"][m.key], values["candidate"][m.key]
        keep = b.notna() | c.notna()
        d = c - b
        better = d if m.higher_is_better else -d
        change = np.where(b.isna() | c.isna(), "n/a",
                          np.where(better > stats.TIE, "improved", np.where(better < -stats.TIE, "regressed",
                                                                             "unchanged")))
        frames.append(pd.DataFrame({
            "question_id": b.index, "metric": m.key, "metric_name": m.name, "metric_order": i,
            "baseline": b.to_numpy(), "candidate": c.to_numpy(), "delta": d.to_numpy(), "change": change,
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
    cells = stats.Cells(masks, len(questions))
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
    results = stats.paired_many(
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
            "failure_rate": _operational(*parts, "failure_rate", "rate")[0],
            "latency_p50": _operational(*parts, "latency", "p50")[0],
            "latency_p95": _operational(*parts, "latency", "p95")[0],
            "cost_mean": _operational(*parts, "cost", "mean")[0],
            "cost_total": _operational(*parts, "cost", "total")[0],
        })
    return pd.DataFrame(out)


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


def read_questions(con: duckdb.DuckDBPyConnection, suite: str, *, with_text: bool = True) -> pd.DataFrame:
    """Every question of `suite` in suite order (see `Inputs.questions`)."""
    return _questions(con, suite, with_text)


def read_scores(con: duckdb.DuckDBPyConnection, suite: str, baseline: Sequence[str], candidate: Sequence[str], *,
                include_heldout: bool = True, with_text: bool = True, questions: pd.DataFrame | None = None
                ) -> tuple[pd.DataFrame, ScoreRows]:
    """The compared questions of `suite` in suite order (see `Inputs.questions`) and both sides'
    score rows, for the runs given (no check that they may be compared: see `read_inputs`).
    `questions`: what `read_questions` returned for the suite, when already read."""
    if questions is None:
        questions = _questions(con, suite, with_text)
    if not include_heldout:
        questions = questions[questions["split"] != HELDOUT]
    return questions, _score_rows(con, suite, baseline, candidate, questions["position"].to_numpy())


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
    runs = _runs(con, tables)
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
        log = _heldout_log(con, b_side.suite, b_side.suite_version, tables) \
            if include_heldout and n_heldout else HeldoutLog()
        return Inputs(baseline, candidate, include_heldout, b_side, c_side, questions, n_heldout, None, log,
                      _earlier_verdicts(con, b_side.name, c_side.name, tables), side_scores,
                      _labels_hash(con, b_side.suite))
    if scores is not None and scores[1].run_ids == (*b_side.run_ids, *c_side.run_ids):
        questions, rows = scores
        n_heldout = int((questions["split"] == HELDOUT).sum()) if include_heldout else int(con.execute(
            "SELECT count(*) FROM questions WHERE suite = ? AND split = ?", [b_side.suite, HELDOUT]).fetchall()[0][0])
    else:
        questions = _questions(con, b_side.suite, with_text)
        n_heldout = int((questions["split"] == HELDOUT).sum())
        if not include_heldout:
            questions = questions[questions["split"] != HELDOUT]
        rows = _score_rows(con, b_side.suite, b_side.run_ids, c_side.run_ids, questions["position"].to_numpy())
    log = _heldout_log(con, b_side.suite, b_side.suite_version, tables) \
        if include_heldout and n_heldout else HeldoutLog()
    return Inputs(baseline, candidate, include_heldout, b_side, c_side, questions, n_heldout, rows, log,
                  _earlier_verdicts(con, b_side.name, c_side.name, tables), labels_hash=_labels_hash(con, b_side.suite))


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
        values[name] = _collapse(rows, at, ids)
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
    comparison = Comparison(
        baseline=b_side, candidate=c_side, suite=b_side.suite, suite_version=b_side.suite_version,
        corpus_version=b_side.corpus_version, questions=questions, table=_table(questions, values, settings, tested),
        spread=spread, flaky=flaky,
        settings=settings, warnings=tuple(warnings), heldout=heldout, verdict=policies.no_policy_verdict(),
        policy=pol, values=values, rows=rows, detail=rows is not None,
    )
    if pol is not None:
        notes = _policy_edits(inputs.verdicts, b_side.name, c_side.name, pol)
        if heldout is not None:
            note = policies.heldout_warning(pol, heldout.uses, b_side.suite, b_side.suite_version)
            notes += [note] if note else []
        comparison.verdict = policies.evaluate(pol, comparison, n_disputed=comparison.n_disputed, notes=notes,
                                               seed=seed)
    return comparison


# --- storing verdicts ----------------------------------------------------------------------------


def create_verdict_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create `verdicts` and `heldout_log` if absent, and add the columns a newer version logs (read-write
    connection)."""
    for name, columns in VERDICT_TABLES.items():
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns}\n)")
    con.execute("ALTER TABLE heldout_log ADD COLUMN IF NOT EXISTS comparison_key VARCHAR")


def _connect_for_write(db: Path, *, wait_seconds: float) -> duckdb.DuckDBPyConnection:
    """A read-write connection, retried for `wait_seconds` while another connection holds the file."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return duckdb.connect(str(db))
        except (duckdb.IOException, duckdb.ConnectionException) as error:
            held = "lock" in str(error).lower() or "different configuration" in str(error).lower()
            if not held or time.monotonic() >= deadline:
                raise invalid(f"cannot store the verdict: the database is held open by another connection "
                              f"({str(error).splitlines()[0][:160]}); close it and run the comparison again",
                              "db", str(db)) from None
            time.sleep(0.1)


def record(db: Path, comparison: Comparison, *, wait_seconds: float = 5.0) -> str | None:
    """Store the verdict (when a policy was given) and the held-out use, in one short transaction.

    Returns the new verdict_id, or None when no verdict was stored. Writes go to the live file under
    the writer lock that refreshes also take, so a refresh never copies a half-written log.
    """
    v = comparison.verdict
    store_verdict = comparison.policy is not None
    if not store_verdict and comparison.heldout is None:
        return None
    verdict_id = uuid.uuid4().hex if store_verdict else None
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.writer_lock(db, timeout=30.0):
        con = _connect_for_write(db, wait_seconds=wait_seconds)
        try:
            create_verdict_tables(con)
            con.execute("BEGIN TRANSACTION")
            if store_verdict and comparison.policy is not None:
                p = comparison.policy
                con.execute(
                    "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [verdict_id, now, comparison.baseline.name, comparison.candidate.name,
                     list(comparison.baseline.run_ids), list(comparison.candidate.run_ids), comparison.suite,
                     comparison.suite_version, p.name, p.sha256, p.text, v.verdict,
                     json.dumps([_gate_dict(g) for g in v.gates]),
                     v.disputed.verdict if v.disputed else None,
                     json.dumps(list(comparison.warnings) + list(v.warnings))],
                )
            if comparison.heldout is not None:
                con.execute(
                    "INSERT INTO heldout_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [now, comparison.suite, comparison.suite_version, comparison.baseline.name,
                     comparison.candidate.name, comparison.policy.sha256 if comparison.policy else None,
                     comparison.heldout.n_questions, comparison.heldout.key],
                )
            con.execute("COMMIT")
        except BaseException:
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass
            raise
        finally:
            con.close()
    return verdict_id


def read_verdicts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Stored verdicts, newest first (empty when none was stored yet)."""
    if "verdicts" not in table_names(con):
        return pd.DataFrame(columns=["verdict_id", "created_at", "baseline", "candidate", "suite", "suite_version",
                                     "policy_name", "policy_hash", "verdict"])
    return con.execute(
        "SELECT verdict_id, created_at, baseline, candidate, suite, suite_version, policy_name, policy_hash, "
        "verdict, verdict_without_disputed FROM verdicts ORDER BY created_at DESC"
    ).df()


def run_comparison(
    baseline: str, candidate: str, *, db: Path, policy: str | Path | None, seed: int = 0
) -> Comparison:
    """Read the database (read-only), compare, then record the verdict and held-out use."""
    pol = policies.load_policy(policy) if policy else None
    con = store.connect_readonly(db)
    try:
        comparison = compare(con, baseline, candidate, policy=pol, seed=seed)
    except duckdb.Error as error:
        raise invalid(f"cannot read the database: {error}", "db", str(db)) from None
    finally:
        con.close()
    record(db, comparison)
    return comparison


def compare_command(baseline: str, candidate: str, *, db: Path, policy: str | None, fmt: str) -> int:
    """``ragslice compare``: 0 when every gate passes or no policy was given (no verdict), 1 when a
    gate fails (2 on bad input, via the CLI)."""
    from ..decide import report

    comparison = run_comparison(baseline, candidate, db=db, policy=policy)
    if fmt == "json":
        print(json.dumps(comparison.to_dict(), indent=2, default=str))
    elif fmt == "markdown":
        print(report.markdown(comparison))
    elif fmt == "text":
        print(report.text(comparison))
    else:
        raise invalid("format is text, json or markdown", "--format", fmt)
    return 1 if comparison.verdict.failed else 0


__all__ = [
    "Comparison", "HeldoutUse", "Inputs", "SCORE_COLUMNS", "Settings", "Side", "SideScores", "VERDICT_TABLES",
    "check_comparable", "compare",
    "compare_command", "create_verdict_tables", "operational_aggregate", "read_inputs",
    "read_questions", "read_scores", "read_side_scores", "read_slice_columns", "read_verdicts", "arrow_floats",
    "record", "resolve_side", "run_comparison", "side_aggregate", "side_scores", "side_values",
]

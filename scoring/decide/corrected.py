"""Corrected estimates: a side's figures with the judge's alignments corrected by a review sample
(`scoring.store.samples`), by prediction-powered inference (`scoring.decide.ppi`).

**What is estimated.** Pooled Support over the side's generated claims (supported claims / claims, the
denominator counting a failed or missing record's charge as the Support metric does), from a sample of
unit `sentence`; pooled Coverage (expected claims made and supported / expected claims), the correct
abstention rate (unanswerable questions answered with no claim / unanswerable questions that ask for an
answer) and the false abstention rate (answerable questions left without a successful answer / answerable
questions with expected claims), from a sample of unit `question`; each as reviewers would align every
answer sentence. The frames, and what each item contributes, are `scoring.decide.frames`.

**The parts.** The prediction of a frame item is its figure under the automatic alignments; its truth,
when it was drawn and reviewed for the sample, its figure under the reviewers' alignments. Everything
else is known exactly. Three figures come out: judge-only (every frame item as the judge aligned it: the
figure the database holds), corrected (PPI++, `ppi.ratio_estimate`) and reviewed-only (the same with
lambda = 0: the reviewed items alone stand for their strata).

**Assumptions.** The sample is a random draw from the frame (`ragslice sample`), and the items reviewed
so far are a random subset of it: review in the queue's order. The judge's alignments and the labels
do not change between the draw and the estimate other than through the sample's reviews.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from ..metrics.registry import BY_KEY, display_name
from ..metrics.slices import mask, parse_slice
from . import ppi
from .frames import (ALIGNMENTS_SQL, SAMPLE_REVIEWS_SQL, UNIT, Frame, answers_reviewed, has_tables, latest_sample,
                     question_frames, read_answers, sample_status, sentence_frame)

CORRECTABLE = ("support", "coverage", "abstention_correct", "false_abstention")
"""The metrics a corrected estimate exists for (`frames.UNIT`: the sample unit each reads)."""
AGGREGATES = {"support": ("pooled",), "coverage": ("pooled",), "abstention_correct": ("macro", "pooled"),
              "false_abstention": ("macro", "pooled")}
"""The aggregates a corrected estimate is of: pooled Support and Coverage; the abstention rates, whose
macro and pooled figures are one (a question counts 1)."""
ESTIMATES = ("judge", "corrected")
"""What a gate on an answer metric may read: the figure as scored (`judge`, the default), or the corrected one."""


@dataclass(frozen=True)
class Corrected:
    """One side's (or a paired delta's) Support three ways, on one slice."""

    metric: str
    slice: str
    sample: str | None
    judge: float | None
    corrected: ppi.RatioEstimate
    reviewed_only: ppi.RatioEstimate
    judged: int
    """Frame items (sentences resting on an automatic alignment, or sampled)."""
    strata: list[dict[str, Any]] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        c = self.corrected.estimate
        return c is not None and self.judge is not None and abs(c - self.judge) > 5e-4 or (
            self.corrected.low is not None and self.judge is not None
            and not self.corrected.low <= self.judge <= self.corrected.high)

    def to_dict(self) -> dict[str, Any]:
        c = self.corrected
        return {"metric": self.metric, "slice": self.slice, "sample": self.sample, "judge": self.judge,
                "estimate": c.estimate, "interval": None if c.low is None else [c.low, c.high],
                "se": c.se, "n_frame": c.frame, "n_sampled": c.sampled, "n_reviewed": c.reviewed,
                "reviewed_only": self.reviewed_only.estimate,
                "reviewed_only_interval": None if self.reviewed_only.low is None else
                [self.reviewed_only.low, self.reviewed_only.high],
                "lambda": c.lambdas, "method": ppi.METHOD, "valid": c.valid, "reason": c.reason,
                "strata": self.strata}

    def words(self, name: str) -> str:
        """One line: judge-only, corrected with its interval, reviewed-only, and the counts."""
        c, r = self.corrected, self.reviewed_only
        judge = "n/a" if self.judge is None else f"{self.judge:.3f}"
        if c.valid:
            corrected = f"{c.estimate:.3f} (95% {c.low:.3f} to {c.high:.3f})"
        else:
            corrected = f"none ({c.reason})"
        reviewed = ("n/a" if r.estimate is None else f"{r.estimate:.3f}" +
                    (f" (95% {r.low:.3f} to {r.high:.3f})" if r.valid else ""))
        return (f"{name} {self.metric} ({self.slice}): judge-only {judge}, corrected {corrected}, reviewed-only "
                f"{reviewed}; {c.reviewed} of {c.sampled} sampled reviewed, {c.frame} judged")


def _question_frame(con: duckdb.DuckDBPyConnection, suite: str) -> pd.DataFrame:
    return con.execute("SELECT question_id, type, split, critical, tags, answerable FROM questions WHERE suite = ? "
                       "ORDER BY question_id", [suite]).df()


def frame_of(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], metric: str,
             sample: str | None = None) -> Frame | None:
    """The runs' frame for a correctable metric (`frames`); None when the runs answer in no sentences."""
    if metric not in CORRECTABLE:
        raise ValueError(f"no corrected estimate exists for {metric!r} (one of {', '.join(CORRECTABLE)})")
    if UNIT[metric] == "sentence":
        return sentence_frame(con, suite, run_ids, sample)
    frames = question_frames(con, suite, run_ids, sample)
    return None if frames is None else frames[metric]


def corrected_metric(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], metric: str = "support", *,
                     slice_: str = "all", sample: str | None = None, found: Frame | None = None,
                     questions: pd.DataFrame | None = None) -> Corrected | None:
    """A correctable metric of the runs three ways on a slice (module docstring); None when the runs answer
    in no sentences (nothing rests on an alignment: the figure is as scored), and for a question metric
    when it applies to no question of the slice. `sample`: the sample to use (by default the latest of
    the metric's unit that covers the runs); `found`, `questions`: the runs' frame for the metric and the
    suite's questions, read before."""
    inputs = _inputs(con, suite, run_ids, metric, slice_, sample, found, questions)
    if inputs is None:
        return None
    strata, known_pair, judged, sample = inputs
    if metric != "support" and not judged and not known_pair[1]:
        return None
    judge = ppi.judge_only(strata, known_pair)
    if judged and sample is None:
        none = ppi.RatioEstimate(None, None, None, None, judged, 0, 0,
                                 reason=f"no review sample covers these runs: draw one with `ragslice sample "
                                        f"--unit {UNIT[metric]}`")
        return Corrected(metric, slice_, None, judge, none, none, judged)
    corrected = ppi.ratio_estimate(strata, known_pair)
    reviewed_only = ppi.ratio_estimate(strata, known_pair, lam=0.0)
    rows_out = [{"stratum": s.name, "frame": s.population, "sampled": s.drawn, "reviewed": s.reviewed,
                 "lambda": corrected.lambdas.get(s.name)} for s in strata]
    return Corrected(metric, slice_, sample, judge, corrected, reviewed_only, judged, rows_out)


def corrected_support(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], *, slice_: str = "all",
                      sample: str | None = None, found: Frame | None = None,
                      questions: pd.DataFrame | None = None) -> Corrected | None:
    """Pooled Support three ways (`corrected_metric`)."""
    return corrected_metric(con, suite, run_ids, "support", slice_=slice_, sample=sample, found=found,
                            questions=questions)


def _inputs(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], metric: str, slice_: str,
            sample: str | None, found: Frame | None = None, questions: pd.DataFrame | None = None
            ) -> tuple[list[ppi.Stratum], tuple[float, float], int, str | None] | None:
    """(strata, known (numerator, denominator), frame items, sample) of `corrected_metric`; `found`: the
    run set's frame for the metric, `questions`: the suite's `_question_frame`, read before."""
    if found is None:
        found = frame_of(con, suite, run_ids, metric, sample)
    if found is None:
        return None
    questions = _question_frame(con, suite) if questions is None else questions
    in_slice = set(questions[mask(questions, parse_slice(slice_))]["question_id"])
    known = np.array([0.0, 0.0])
    for q, totals in found.known.items():
        if q in in_slice:
            known += totals
    by_stratum: dict[str, dict[str, list]] = {}
    judged = 0
    for item in found.items:
        if item.question_id not in in_slice:
            continue
        known -= item.part
        part = by_stratum.setdefault(item.stratum, {"truth": [], "rp": [], "up": [], "drawn": 0})
        part["drawn"] += int(item.drawn)
        judged += 1
        if item.truth is not None:
            part["truth"].append(item.truth)
            part["rp"].append(item.prediction)
        else:
            part["up"].append(item.prediction)
    strata = [ppi.Stratum(name, len(p["truth"]) + len(p["up"]), np.array(p["truth"], dtype=float).reshape(-1, 2),
                          np.array(p["rp"], dtype=float).reshape(-1, 2), np.array(p["up"], dtype=float).reshape(-1, 2),
                          p["drawn"]) for name, p in sorted(by_stratum.items())]
    return strata, (float(known[0]), float(known[1])), judged, found.sample


def next_review_gain(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], *,
                     sample: str | None = None, metric: str = "support") -> list[dict[str, Any]]:
    """Per stratum: reviewed and sampled, the half-width of the corrected interval of `metric` now, about
    how wide once every sampled item of the stratum is reviewed, and the narrowing one more review there
    buys (`ppi.projected_half_width`; None while a stratum has too few reviews for a spread)."""
    found = _inputs(con, suite, run_ids, metric, "all", sample)
    if found is None or found[3] is None:
        return []
    strata, known = found[0], found[1]
    now = ppi.projected_half_width(strata, known, {s.name: s.reviewed for s in strata})
    out = []
    for s in strata:
        full = ppi.projected_half_width(strata, known, {s.name: max(s.drawn, s.reviewed)})
        one = ppi.projected_half_width(strata, known, {s.name: s.reviewed + 1})
        out.append({"stratum": s.name, "frame": s.population, "sampled": s.drawn, "reviewed": s.reviewed,
                    "half_width": now, "half_width_at_sample": full,
                    "gain_per_review": None if now is None or one is None else now - one})
    return out


def projected_at_sample(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str], *,
                        sample: str | None = None, metric: str = "support", frame: Frame | None = None
                        ) -> float | None:
    """About the half-width of the corrected interval of `metric` once every sampled item is reviewed
    (`frame`: the runs' frame for the metric, read before)."""
    found = _inputs(con, suite, run_ids, metric, "all", sample, frame)
    if found is None or found[3] is None:
        return None
    strata, known = found[0], found[1]
    return ppi.projected_half_width(strata, known, {s.name: max(s.drawn, s.reviewed) for s in strata})


def _frames(con: duckdb.DuckDBPyConnection, suite: str, runs: list[str]) -> dict[str, Frame] | None:
    """The runs' frame of every correctable metric, the answers read once; None when the runs answer in
    no sentences."""
    answers = read_answers(con, suite, runs)
    if answers is None:
        return None
    return {"support": sentence_frame(con, suite, runs, None, answers),
            **(question_frames(con, suite, runs, None, answers) or {})}


def estimates(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str]) -> dict[str, Corrected]:
    """Each correctable metric of the runs on all questions, three ways (`corrected_metric`), by the
    latest sample of its unit: a metric is absent when nothing of it rests on an alignment."""
    runs = list(run_ids)
    frames = _frames(con, suite, runs)
    if frames is None:
        return {}
    questions = _question_frame(con, suite)
    found = {m: corrected_metric(con, suite, runs, m, found=frames[m], questions=questions) for m in CORRECTABLE}
    return {m: c for m, c in found.items() if c is not None}


@dataclass(frozen=True)
class Progress:
    """How far a review sample covering some runs is reviewed, for the metric whose interval is widest
    (a sentence sample: Support; a question sample: the widest of the question metrics)."""

    sample: str
    unit: str
    metric: str
    sampled: int
    """Items drawn for the runs (sentences, or answers)."""
    reviewed: int
    half_width: float | None
    at_sample: float | None
    """About the half-width once every sampled item is reviewed (None without an interval)."""


def sample_progress(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str]) -> list[Progress]:
    """Per unit with a review sample covering the runs, its `Progress`."""
    runs = list(run_ids)
    frames = _frames(con, suite, runs)
    if frames is None:
        return []
    questions = _question_frame(con, suite)
    out = []
    for unit in ("sentence", "question"):
        found = [c for m in CORRECTABLE if UNIT[m] == unit
                 and (c := corrected_metric(con, suite, runs, m, found=frames[m], questions=questions)) is not None
                 and c.sample is not None]
        if not found:
            continue
        widest = max(found, key=lambda c: -1.0 if c.corrected.half_width is None else c.corrected.half_width)
        k = widest.corrected
        sampled, reviewed = (k.sampled, k.reviewed) if unit == "sentence" else answers_reviewed(
            {m: frames[m] for m in CORRECTABLE if UNIT[m] == "question"})
        out.append(Progress(str(widest.sample), unit, widest.metric, sampled, reviewed, k.half_width,
                            projected_at_sample(con, suite, runs, sample=widest.sample, metric=widest.metric,
                                                frame=frames[widest.metric])))
    return out


SIDES = ("baseline", "candidate")


@dataclass
class CorrectedFacts:
    """A comparison's corrected estimates: per metric and slice, each side's three figures and the paired
    delta."""

    by_metric: dict[str, dict[str, dict[str, Corrected | None]]]
    """metric -> slice -> side -> its figures (None: nothing of the side rests on an alignment). Support
    has every slice; a question metric only the slices where either side has figures."""
    exact: dict[tuple[str, str, str], float | None] = field(default_factory=dict)
    """(metric, side, slice) -> the pooled figure of a side nothing of which rests on an alignment (exact)."""

    @property
    def slices(self) -> dict[str, dict[str, Corrected | None]]:
        """Support's figures: slice -> side -> figures."""
        return self.by_slice("support")

    def by_slice(self, metric: str = "support") -> dict[str, dict[str, Corrected | None]]:
        return self.by_metric.get(metric, {})

    def get(self, side: str, slice_: str, metric: str = "support") -> Corrected | None:
        return self.by_slice(metric).get(slice_, {}).get(side)

    def judged_sides(self, slice_: str = "all", metric: str = "support") -> list[tuple[str, Corrected]]:
        """(side, its figures) for each side, baseline first, whose figure of `metric` on the slice rests
        on automatic alignments."""
        return [(side, found) for side in SIDES if (found := self.get(side, slice_, metric)) is not None
                and found.judged]

    def _figures(self, metric: str) -> list[Corrected]:
        return [c for row in self.by_slice(metric).values() for c in row.values() if c is not None]

    def sampled_metrics(self) -> list[str]:
        """Support, and each question metric a side's question sample covers, in `CORRECTABLE`'s order."""
        return ["support"] + [m for m in CORRECTABLE[1:] if any(c.sample is not None for c in self._figures(m))]

    def _exact(self, side: str, slice_: str, metric: str) -> ppi.RatioEstimate:
        """A side with nothing resting on an alignment: its figure is exact (no interval width)."""
        value = self.exact.get((metric, side, slice_))
        return ppi.RatioEstimate(value, 0.0 if value is not None else None, value, value, 0, 0, 0)

    def delta(self, slice_: str, metric: str = "support") -> ppi.RatioEstimate | None:
        b, c = self.get("baseline", slice_, metric), self.get("candidate", slice_, metric)
        if b is None and c is None:
            return None
        return ppi.difference(c.corrected if c is not None else self._exact("candidate", slice_, metric),
                              b.corrected if b is not None else self._exact("baseline", slice_, metric))

    def sample_of(self, metric: str = "support") -> str | None:
        return next((c.sample for c in self._figures(metric) if c.sample), None)

    @property
    def sample(self) -> str | None:
        return self.sample_of("support")

    def summary(self) -> list[str]:
        """Plain sentences: per side on all questions, judge-only vs corrected vs reviewed-only Support, and
        each question metric a question sample covers; the corrected paired deltas."""
        out = []
        for metric in self.sampled_metrics():
            for side in SIDES:
                c = self.get(side, "all", metric)
                if c is not None:
                    out.append(c.words(f"The {side}'s"))
            d = self.delta("all", metric)
            if d is not None and d.valid:
                what = "pooled Support" if metric == "support" else display_name(metric)
                out.append(f"Corrected paired delta of {what} (candidate - baseline): {d.estimate:+.3f} "
                           f"(95% {d.low:+.3f} to {d.high:+.3f}).")
        return out

    def _block(self, metric: str) -> dict[str, Any]:
        main = self.get("candidate", "all", metric)
        head = main.to_dict() if main is not None else {}
        rows = []
        for name, row in self.by_slice(metric).items():
            d = self.delta(name, metric)
            rows.append({"slice": name, **{side: (None if c is None else c.to_dict()) for side, c in row.items()},
                         "delta": None if d is None else d.to_dict()})
        return {"metric": metric, "aggregate": AGGREGATES[metric][0], "method": ppi.METHOD,
                "sample": self.sample_of(metric), "estimate": head.get("estimate"), "interval": head.get("interval"),
                "judge": head.get("judge"), "reviewed_only": head.get("reviewed_only"),
                "n_sampled": head.get("n_sampled"), "n_reviewed": head.get("n_reviewed"), "slices": rows}

    def to_dict(self) -> dict[str, Any]:
        """Support's block (the keys of every earlier version) with `metrics`: each question metric's block
        of the same shape, for every metric any slice of either side has figures of."""
        out = self._block("support")
        out["metrics"] = {m: self._block(m) for m in CORRECTABLE[1:] if self._figures(m)}
        return out


def read_corrected(con: duckdb.DuckDBPyConnection, suite: str, baseline_runs: Sequence[str],
                   candidate_runs: Sequence[str]) -> CorrectedFacts | None:
    """Both sides' corrected estimates (`CORRECTABLE`) on all questions, answerable, unanswerable and each
    question type; None when neither side answers in sentences."""
    if not has_tables(con, "alignments", "samples"):
        return None
    types = [t for (t,) in con.execute("SELECT DISTINCT type FROM questions WHERE suite = ? ORDER BY type",
                                       [suite]).fetchall()]
    slices = ["all", "answerable", "unanswerable", *(f"type:{t}" for t in types)]
    sides = (("baseline", list(baseline_runs)), ("candidate", list(candidate_runs)))
    read = {side: _frames(con, suite, runs) for side, runs in sides}
    if all(found is None for found in read.values()):
        return None
    frames = {m: {side: None if found is None else found[m] for side, found in read.items()} for m in CORRECTABLE}
    questions = _question_frame(con, suite)
    facts = CorrectedFacts({m: {} for m in CORRECTABLE})
    for metric in CORRECTABLE:
        for name in slices:
            row: dict[str, Corrected | None] = {}
            for side, runs in sides:
                frame = frames[metric][side]
                found = None if frame is None else corrected_metric(con, suite, runs, metric, slice_=name,
                                                                    found=frame, questions=questions)
                row[side] = found
                if found is None:
                    chosen = list(questions[mask(questions, parse_slice(name))]["question_id"])
                    facts.exact[(metric, side, name)] = _scored(con, metric, runs, chosen)
            if metric == "support" or any(found is not None for found in row.values()):
                facts.by_metric[metric][name] = row
    return facts


def _pooled_sql(metric: str) -> str:
    """SQL for a correctable metric's pooled (numerator, denominator) over `question_scores` rows, from the
    registry: its pooled columns, or for a flag (`pooled` None) the questions flagged over those scored."""
    numerator_denominator = BY_KEY[metric].pooled
    if numerator_denominator is not None:
        return "sum({}), sum({})".format(*numerator_denominator)
    return f"sum({metric}::INTEGER), count({metric})"


def _scored(con: duckdb.DuckDBPyConnection, metric: str, runs: list[str], chosen: list[str]) -> float | None:
    """The metric's pooled figure as scored over the runs and questions (None when its denominator is 0)."""
    s, c = con.execute(f"SELECT {_pooled_sql(metric)} FROM question_scores WHERE "
                       "list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id)",
                       [runs, chosen]).fetchall()[0]
    return None if not c else float(s) / float(c)


__all__ = ["AGGREGATES", "ALIGNMENTS_SQL", "CORRECTABLE", "ESTIMATES", "SAMPLE_REVIEWS_SQL", "UNIT", "Corrected",
           "CorrectedFacts", "Progress", "corrected_metric", "corrected_support", "estimates", "frame_of", "latest_sample",
           "next_review_gain", "projected_at_sample", "read_corrected", "sample_progress", "sample_status"]

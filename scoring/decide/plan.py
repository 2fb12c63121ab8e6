"""Sample-size advice (``ragslice plan``): for each statistical gate, the questions its slice has, the
minimum detectable effect now, and the questions it needs to detect its margin.

With a candidate, the spread is the observed one: the standard deviation of the gate's paired
differences, failed records taken at their worst, exactly as the gate computes it (`drop.figures`).
Without one there is no difference to measure; the spread is then assumed to be that of two
independent draws of the baseline's values, ``sqrt(2) * sd(baseline)`` over the slice: no credit for
pairing, so usually more than a real candidate shows (name a candidate, or a repeat of the baseline,
for the observed spread). The figures are those of `detect` (one-sided paired t, noncentral; a
sign-based test also needs enough differing pairs: with a candidate at its observed share, without one
every pair is assumed to differ).

Clustered questions (`clusters`, chosen by ``cluster_by`` as `compare` chooses them: the policy's, else
the questions' own ``cluster``) are planned as the gate tests them: with a candidate, the gate's own
clustered figures; without one, the cluster-robust standard error of the baseline's mean times sqrt(2)
(two independent draws of whole clusters), the baseline's degrees of freedom (`clusters.robust_df`), and
the questions needed at the clusters' mean size (`clusters.mde`, `clusters.power_at`, `clusters.questions_needed`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import duckdb
import numpy as np

from ..errors import invalid
from ..metrics import slices
from ..metrics.registry import BY_KEY, display_name, measure_key
from ..metrics.slices import parse_slice
from ..store.schema import table_names
from . import clusters, detect, stats
from .policy import Gate, Policy
from .gates import evaluate_gate
from .scores import read_questions, read_rows, side_values
from .sides import read_runs, resolve_side


@dataclass(frozen=True)
class PlanRow:
    """One statistical gate's advice. `spread` says where `sd` comes from: ``observed`` (the candidate's
    paired differences) or ``assumed`` (no candidate: sqrt(2) x the baseline's spread)."""

    gate: str
    metric: str
    slice: str
    rule: str
    test: str
    alpha: float
    margin: float
    power: float
    n: int
    sd: float | None
    spread: str
    mde: float | None
    power_at_margin: float | None
    questions_needed: int | None
    clusters: int | None = None
    """The clusters the gate's test resamples (None: unclustered)."""

    @property
    def more(self) -> int | None:
        """Questions to add: the needed ones beyond those the slice has (0 when it has enough)."""
        return None if self.questions_needed is None else max(0, self.questions_needed - self.n)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "more": self.more}


def adhoc_gate(metric: str, slice_: str, margin: float, *, alpha: float = 0.05, test: str = "randomization",
               rule: str = "significant_drop") -> Gate:
    """A max_drop gate named on the command line (``--metric --slice --margin``), checked as a policy's is."""
    key = measure_key(metric)
    if key not in BY_KEY:
        raise invalid("a max_drop gate compares per-question values: name a registry metric", "--metric", metric)
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin > 0):
        raise invalid("the margin is a number > 0 (the tolerated drop, in the metric's units)", "--margin", margin)
    if not 0 < alpha < 1:
        raise invalid("alpha is a number between 0 and 1", "--alpha", alpha)
    if test not in stats.TESTS:
        raise invalid(f"test is one of {', '.join(stats.TESTS)}", "--test", test)
    where = parse_slice(slice_)
    return Gate(name=f"{display_name(key)} on {where}, margin {margin:g}", metric=key, slice=where, kind="drop",
                aggregate="macro", max_drop=float(margin), alpha=float(alpha), test=test, rule=rule)


def statistical_gates(policy: Policy | None, named: Gate | None) -> list[Gate]:
    """The gates to advise on: the named one, else the policy's max_drop gates (ValidationError when there
    is none)."""
    if named is not None:
        return [named]
    if policy is None:
        raise invalid("name a policy (--policy) or a gate (--metric, --slice and --margin)", "--policy", "")
    gates = [g for g in policy.gates if g.kind == "drop"]
    if not gates:
        raise invalid("the policy has no max_drop gate: nothing statistical to plan for (or name one with --metric, "
                      "--slice and --margin)", "--policy", policy.path)
    return gates


def plan(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str | None, gates: Sequence[Gate], *,
         power: float = detect.POWER, seed: int = 0, cluster_by: str | None = None) -> list[PlanRow]:
    """The advice for each of `gates` (max_drop gates) at `power`; `cluster_by` (`clusters.CLUSTER_BY`):
    how the questions are clustered, as `compare` takes it (None: the questions' own ``cluster``)."""
    if not 0 < power < 1:
        raise invalid("power is a number between 0 and 1", "--power", power)
    gates = [replace(g, power=power) for g in gates]
    if candidate is not None:
        from .compute import compare

        comparison = compare(con, baseline, candidate, seed=seed, cluster_by=cluster_by)
        out = []
        for g in gates:
            r = evaluate_gate(g, comparison, seed=seed)
            out.append(PlanRow(g.name, g.metric, str(g.slice), g.rule, g.test, g.alpha, float(g.max_drop or 0.0),
                               power, r.n, r.sd, "observed", r.mde, r.power_at_margin, r.questions_needed, r.clusters))
        return out
    return [_assumed(g, values, codes)
            for g, (values, codes) in zip(gates, _baseline_values(con, baseline, gates, cluster_by))]


def _baseline_values(con: duckdb.DuckDBPyConnection, baseline: str, gates: Sequence[Gate], cluster_by: str | None
                     ) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Each gate's baseline per-question values over its slice (n/a left out), with their cluster codes
    (None: unclustered)."""
    side = resolve_side(read_runs(con, table_names(con)), baseline, "baseline")
    questions = read_questions(con, side.suite, with_text=False)
    rows = read_rows(con, side.suite, side.run_ids, (), questions["position"].to_numpy())
    values = side_values(rows, 0, questions.index)
    grouped = clusters.question_clusters(questions, cluster_by or clusters.DEFAULT_BY)
    out = []
    for g in gates:
        where = slices.mask(questions, g.slice)
        column = values[g.metric].to_numpy(dtype=float)[where]
        given = ~np.isnan(column)
        out.append((column[given], None if grouped is None else grouped.codes[where][given]))
    return out


def _assumed(g: Gate, values: np.ndarray, codes: np.ndarray | None) -> PlanRow:
    n = len(values)
    own = detect.sample_sd(values)
    sd = None if own is None else math.sqrt(2.0) * own
    margin = float(g.max_drop or 0.0)
    options = dict(exact_max=stats.EXACT_MAX, resamples=stats.RANDOMIZATION_RESAMPLES, large_sample=stats.LARGE_SAMPLE)
    if codes is not None:
        return _assumed_clustered(g, values, codes, sd, margin, options)
    resolvable = n >= 2 and detect.resolves(g.test, n, g.alpha, **options)
    mde = detect.mde(sd, n, g.alpha, g.power) if resolvable and sd is not None else None
    at = detect.power_at(margin, sd, n, g.alpha) if resolvable and sd is not None else (0.0 if n >= 2 else None)
    needed = detect.questions_needed(sd, margin, g.alpha, g.power, nonzero_share=1.0, test=g.test, **options)
    return PlanRow(g.name, g.metric, str(g.slice), g.rule, g.test, g.alpha, margin, g.power, n, sd, "assumed", mde,
                   at, needed)


def _assumed_clustered(g: Gate, values: np.ndarray, codes: np.ndarray, sd: float | None, margin: float,
                       options: dict[str, int]) -> PlanRow:
    """`_assumed` with the questions in clusters: sqrt(2) x the cluster-robust se of the baseline's mean,
    the baseline's `clusters.robust_df`, every cluster assumed to differ."""
    n, count = len(values), clusters.count(codes) if len(values) else 0
    own = clusters.robust_se(values, codes) if n >= 2 else None
    se = None if own is None else math.sqrt(2.0) * own
    df = clusters.robust_df(values, codes) if own is not None else None
    resolvable = count >= 2 and detect.resolves(g.test, count, g.alpha, **options)
    mde = clusters.mde(se, count, g.alpha, g.power, df) if resolvable and se is not None else None
    at = clusters.power_at(margin, se, count, g.alpha, df) if resolvable and se is not None else \
        (0.0 if count >= 2 else None)
    needed = clusters.questions_needed(se, n, count, margin, g.alpha, g.power, nonzero_share=1.0, test=g.test,
                                       **options)
    return PlanRow(g.name, g.metric, str(g.slice), g.rule, g.test, g.alpha, margin, g.power, n, sd, "assumed", mde,
                   at, needed, count)


def plan_text(rows: Sequence[PlanRow], baseline: str, candidate: str | None) -> str:
    """The advice as the terminal prints it."""
    spread = ("the observed spread of the paired differences" if candidate is not None else
              "an assumed spread: no candidate, so sqrt(2) x the baseline's spread (no credit for pairing); name a "
              "candidate for the observed one")
    lines = [f"ragslice plan: {baseline} -> {candidate or '(no candidate)'}; {spread}"]
    for r in rows:
        rule = "non-inferiority" if r.rule == "non_inferiority" else "significant drop"
        lines += ["", f"{r.gate}: {display_name(r.metric)} on {r.slice}, margin {r.margin:g} ({rule}, {r.test}, "
                      f"one-sided alpha {r.alpha:g}, power {r.power:g})",
                  (f"  questions now: {r.n} (paired)" if candidate is not None else f"  questions now: {r.n}")
                  + (f"; {clusters.words(r.clusters)}" if r.clusters is not None else ""),
                  f"  spread (sd of the differences): {'n/a' if r.sd is None else f'{r.sd:.3f}'} ({r.spread})",
                  "  minimum detectable drop now: " + ("none: the test cannot reach alpha with these questions"
                                                        if r.mde is None else f"{r.mde:.3f}")
                  + ("" if r.power_at_margin is None else f"; power at the margin {r.power_at_margin:.2f}"),
                  "  questions needed to detect the margin at this spread: "
                  + ("not reachable at this spread" if r.questions_needed is None else
                     f"{r.questions_needed:,}" + (f" ({r.more:,} more)" if r.more else " (enough now)"))]
    lines += ["", "Method: one-sided paired t-test power (noncentral t) at the gate's alpha; sign-based tests also "
                  "need enough differing pairs to reach alpha (docs/statistics.md)."]
    return "\n".join(lines)


__all__ = ["PlanRow", "adhoc_gate", "plan", "plan_text", "statistical_gates"]

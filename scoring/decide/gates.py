"""The verdict of a policy (`policy.Policy`) on the evidence of a comparison: each gate's result
(`GateResult`: observed, n, n/a, bound, p, detection figures, outcome), the alignment gate, and the
verdict, "fail" when a gate fails, "inconclusive" when none fails and one is, "pass" only when every
gate passes; without a policy there is no verdict ("none"), never a pass. The rules are those the
`policy` module's docstring declares."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np

from ..metrics.registry import OPERATIONAL, display_name, higher_is_better
from ..metrics.slices import Slice
from . import change, clusters, drop
from .change import TIE
from .gate_words import format_bound, format_value, threshold_words
from .policy import BUDGET_KEYS, Gate, GateKind, Outcome, Policy
from .significance import significant as is_significant


class Evidence(Protocol):
    """What gate evaluation needs from a comparison (implemented by `compare.Comparison`)."""

    def slice_questions(self, slice_: Slice, *, exclude: str | None = None) -> list[str]:
        """Question IDs in the slice (empty when none match), without the "disputed" ones or those with a
        claim resting on an "automatic" alignment when `exclude` says so."""

    def slice_values(self, kind: str) -> list[str]:
        """The values a valued slice kind takes in this suite (types, splits, tags)."""

    def paired_values(self, key: str, slice_: Slice, *, exclude: str | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Per-question baseline and candidate values where both are scored."""

    def aggregate(self, side: str, key: str, slice_: Slice, aggregate: str, *, exclude: str | None = None
                  ) -> tuple[float | None, int]:
        """One side's aggregate over the slice and the number of values it used."""

    def automatic_aligners(self) -> list[tuple[str, float | None, int]]:
        """(aligner, its measured kappa or None, claims resting on it) for each automatic aligner a claim
        of either side rests on."""

    @property
    def n_automatic(self) -> int:
        """Questions with a claim (either side) resting on an automatic alignment."""


@dataclass(frozen=True)
class GateResult:
    """One gate's outcome: the observed value, the bound, and the reason in words.

    The bound is also kept as its parts (`min`, `max`, `max_regressions`, `max_drop` with `alpha`, `test`
    and `rule`; `min` is the kappa of the alignment gate; None where the kind has none): the words of a
    gate (`gate_words`) are built from the fields, never from `threshold`'s text.

    `outcome` is pass, fail or inconclusive (`passed` is True only for pass). A max_drop gate also holds
    what its sample can detect (`detect`, `drop`): `mde` (None: no drop of any size is detectable),
    `power` (declared), `power_at_margin`, `bound` (the one-sided upper confidence bound of the drop),
    `sd` (the spread they use) and `questions_needed` (to detect the margin at that spread); `min_power`
    is the policy's, when it set one; `failed` counts the pairs taken at their worst (`drop`); `clusters`
    the clusters a clustered test resampled (None: unclustered)."""

    name: str
    kind: GateKind
    metric: str
    slice: str
    aggregate: str
    threshold: str
    passed: bool
    observed: float | None
    baseline: float | None
    n: int
    reason: str
    p_value: float | None = None
    warning: str | None = None
    line: int | None = None
    observed_text: str = "n/a"
    """`observed` as every rendering shows it: for a threshold gate with enough digits that it never
    reads as on the other side of the threshold (`format_value`)."""
    min: float | None = None
    max: float | None = None
    max_regressions: int | None = None
    max_drop: float | None = None
    alpha: float | None = None
    test: str | None = None
    rule: str | None = None
    outcome: Outcome | None = None
    mde: float | None = None
    power: float | None = None
    power_at_margin: float | None = None
    bound: float | None = None
    sd: float | None = None
    questions_needed: int | None = None
    min_power: float | None = None
    failed: int | None = None
    n_na: int | None = None
    """Questions of the slice left out of `n` because their value is n/a (on either side, for a paired
    gate); None for a gate on records (failures, latency, cost) and a gate recorded before it was kept."""
    clusters: int | None = None
    """A max_drop gate's clusters: how many whole clusters its test resampled (`clusters`); None when
    its questions were taken as independent."""
    estimate: str | None = None
    """"corrected" for a gate on the figure corrected by a review sample (None: the figure as scored)."""
    interval: tuple[float, float] | None = None
    """A corrected gate's 95% interval of the candidate's figure."""

    def __post_init__(self) -> None:
        if self.outcome is None:
            object.__setattr__(self, "outcome", "pass" if self.passed else "fail")
        elif self.passed != (self.outcome == "pass"):
            raise ValueError(f"gate {self.name!r}: passed={self.passed} contradicts outcome {self.outcome!r}")

    @property
    def inconclusive(self) -> bool:
        return self.outcome == "inconclusive"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (as the JSON document and the `verdicts` table store a gate); a value that
        is NaN or infinite (an unbounded latency or cost) is None, its words in `observed_text`."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = None
            elif hasattr(value, "item") and not isinstance(value, (str, bytes)):
                out[key] = value.item()  # a numpy scalar
        return out


@dataclass(frozen=True)
class DisputedCheck:
    """The verdict recomputed without disputed questions, and what changed."""

    n_disputed: int
    verdict: str
    gates: tuple[GateResult, ...]
    differences: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    """pass when every gate passes, fail when one fails, inconclusive when none fails and one is
    inconclusive (`GateResult.outcome`), none when no policy was given (nothing was checked: no verdict,
    and never a pass); the policy's identity travels with it."""

    verdict: Literal["pass", "fail", "inconclusive", "none"]
    gates: tuple[GateResult, ...]
    policy_name: str | None
    policy_hash: str | None
    warnings: tuple[str, ...] = ()
    disputed: DisputedCheck | None = None
    unreviewed: DisputedCheck | None = None
    """The verdict on the questions whose claims rest on reviewed alignments only (`n_disputed` then
    counts the questions left out)."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def failed(self) -> bool:
        return self.verdict == "fail"

    @property
    def inconclusive(self) -> bool:
        return self.verdict == "inconclusive"

    @property
    def failed_gates(self) -> tuple[GateResult, ...]:
        return tuple(g for g in self.gates if g.outcome == "fail")

    @property
    def inconclusive_gates(self) -> tuple[GateResult, ...]:
        return tuple(g for g in self.gates if g.outcome == "inconclusive")


def verdict_of(gates: Sequence[GateResult]) -> Literal["pass", "fail", "inconclusive"]:
    """fail when a gate fails; else inconclusive when a gate is; else pass."""
    outcomes = {g.outcome for g in gates}
    return "fail" if "fail" in outcomes else "inconclusive" if "inconclusive" in outcomes else "pass"


def evaluate_gate(gate: Gate, evidence: Evidence, *, exclude: str | None = None, seed: int = 0) -> GateResult:
    """Evaluate one gate. An empty slice fails with a reason; it never passes silently."""
    base = dict(name=gate.name, kind=gate.kind, metric=gate.metric, slice=str(gate.slice),
                aggregate=gate.aggregate if gate.kind == "threshold" else "per question",
                threshold=gate.threshold, line=gate.line, **gate.bounds())
    label = display_name(gate.metric)
    questions = evidence.slice_questions(gate.slice, exclude=exclude)
    if not questions:
        known = evidence.slice_values(gate.slice.kind) if gate.slice.value is not None else []
        hint = f" ({gate.slice.kind} values in this suite: {', '.join(known) or 'none'})" if gate.slice.value else ""
        return GateResult(**base, passed=False, observed=None, baseline=None, n=0,
                          reason=f"slice {gate.slice} has no question{hint}; a gate over an empty slice fails")
    if gate.kind == "threshold":
        result = _threshold(gate, evidence, base, label, exclude)
        if gate.metric in OPERATIONAL or result.n == 0:
            return result
        return replace(result, n_na=len(questions) - result.n)
    b, c = evidence.paired_values(gate.metric, gate.slice, exclude=exclude)
    n = len(b)
    base["n_na"] = len(questions) - n
    if n == 0:
        return GateResult(**base, passed=False, observed=None, baseline=None, n=0,
                          reason=f"no question in slice {gate.slice} has {label} scored on both sides "
                                 f"({len(questions)} questions, all n/a); a gate over an empty slice fails")
    better = (c - b) if higher_is_better(gate.metric) else (b - c)
    if gate.kind == "drop":
        unknown = getattr(evidence, "paired_unknown", None)
        width = unknown(gate.metric, gate.slice, exclude=exclude) if unknown is not None else None
        grouped = getattr(evidence, "paired_clusters", None)
        codes = grouped(gate.metric, gate.slice, exclude=exclude) if grouped is not None else None
        return _drop(gate, base, label, b, c, better, seed, width, codes)
    if gate.kind == "regressions":
        regressed = int(np.count_nonzero(change.regressed(b, c, higher_is_better(gate.metric))))
        passed = regressed <= (gate.max_regressions or 0)
        reason = (f"{regressed} of {n} paired questions in {gate.slice} have a worse {label} than the baseline "
                  f"(allowed {gate.max_regressions})")
        return GateResult(**base, passed=passed, observed=float(regressed), baseline=None, n=n, reason=reason,
                          observed_text=f"{regressed} regressed")
    raise ValueError(f"unknown gate kind {gate.kind!r}")


def _threshold(gate: Gate, evidence: Evidence, base: dict, label: str, exclude: str | None) -> GateResult:
    if gate.estimate == "corrected":
        return _corrected(gate, evidence, base, label)
    ranged = getattr(evidence, "operational_range", None)
    if gate.metric in BUDGET_KEYS and ranged is not None:
        return _operational(gate, ranged, base, label, exclude)
    value, n = evidence.aggregate("candidate", gate.metric, gate.slice, gate.aggregate,
                                  exclude=exclude)
    before, _ = evidence.aggregate("baseline", gate.metric, gate.slice, gate.aggregate,
                                   exclude=exclude)
    what = f"candidate {label} ({gate.aggregate}) on {gate.slice}"
    if value is None or n == 0:
        why = (f"no record in the slice has a {OPERATIONAL[gate.metric].unit} value"
               if gate.metric in OPERATIONAL else "every question in the slice is n/a")
        return GateResult(**base, passed=False, observed=None, baseline=before, n=0,
                          reason=f"{what} has no value: {why}; a gate over an empty slice fails")
    shown = format_value(value, gate.min, gate.max)
    broken = _outside(gate, value, value)
    reason = f"{what} = {shown} is {broken or gate.threshold} (n = {n}; baseline {format_value(before)})"
    return GateResult(**base, passed=broken is None, observed=value, baseline=before, n=n, reason=reason,
                      observed_text=shown)


def _corrected(gate: Gate, evidence: Evidence, base: dict, label: str) -> GateResult:
    """A min/max gate on the candidate's figure corrected by a review sample (`scoring.decide.corrected`):
    passes when its whole 95% interval is within the bounds, fails when the whole interval is outside,
    and is inconclusive when the interval straddles a bound, or without a valid sample (none drawn, or too
    few reviewed for an interval): never passed on the judge's word alone."""
    base = {**base, "estimate": "corrected"}
    found = getattr(evidence, "corrected_estimate", lambda *a: None)("candidate", gate.metric, gate.slice)
    what = f"candidate {label} ({gate.aggregate}, corrected by a review sample) on {gate.slice}"
    if found is None:
        judge, n = evidence.aggregate("candidate", gate.metric, gate.slice, gate.aggregate)
        if judge is None:
            return GateResult(**base, passed=False, observed=None, baseline=None, n=0,
                              reason=f"{what} has no value: every question in the slice is n/a; a gate over an "
                                     "empty slice fails")
        broken = _outside(gate, judge, judge)
        # nothing of the candidate rests on an automatic alignment: its figure is exact
        return GateResult(**base, passed=broken is None, observed=judge, baseline=None, n=n,
                          reason=f"{what}: nothing rests on an automatic alignment, so the figure as scored is exact: "
                                 f"{format_value(judge, gate.min, gate.max)} is {broken or gate.threshold}",
                          observed_text=format_value(judge, gate.min, gate.max), interval=(judge, judge))
    c = found.corrected
    judge = "n/a" if found.judge is None else format_value(found.judge)
    if not c.valid:
        return GateResult(**{**base, "outcome": "inconclusive"}, passed=False, observed=c.estimate, baseline=None,
                          n=c.reviewed, observed_text="no corrected estimate",
                          reason=f"{what} has no valid interval: {c.reason} (judge-only {judge}); the gate is "
                                 "inconclusive until the sample is reviewed")
    low, high = float(c.low), float(c.high)
    shown = (f"{format_value(c.estimate, gate.min, gate.max)} (95% {format_value(low)} to {format_value(high)}, "
             f"{c.reviewed} of {c.sampled} sampled reviewed; judge-only {judge})")
    if _outside(gate, high, low) is not None:  # even its best end breaks the bound
        outcome, words = "fail", f"is {_outside(gate, c.estimate, c.estimate) or _outside(gate, high, low)}"
    elif _outside(gate, low, high) is None:
        outcome, words = "pass", f"is {gate.threshold} over its whole interval"
    else:
        outcome, words = "inconclusive", f"has an interval that straddles {gate.threshold}: review more of the sample"
    return GateResult(**{**base, "outcome": outcome}, passed=outcome == "pass", observed=c.estimate, baseline=None,
                      n=c.reviewed, reason=f"{what} = {shown} {words}", observed_text=shown, interval=(low, high))


def _outside(gate: Gate, low: float, high: float) -> str | None:
    """Where a value (between `low` and `high`) breaks the gate's min / max bound, in words (``below min
    0.9``); None when it is within both (a value within `TIE` of a bound counts as on it)."""
    if gate.min is not None and low < gate.min - TIE:
        return f"below min {format_bound(gate.min)}"
    if gate.max is not None and high > gate.max + TIE:
        return f"above max {format_bound(gate.max)}"
    return None


def _operational(gate: Gate, ranged: Any, base: dict, label: str, exclude: str | None) -> GateResult:
    """A latency or cost gate: failed and missing records count as unknown, from 0 up to the policy's
    budget (`aggregates.operational_range`); a max bound is checked on the highest value that allows, a
    min bound on the lowest, so no failure can help."""
    low, high, n, unknown = ranged("candidate", gate.metric, gate.slice, gate.aggregate, budget=gate.budget,
                                   exclude=exclude)
    _, before, _, _ = ranged("baseline", gate.metric, gate.slice, gate.aggregate, budget=gate.budget,
                             exclude=exclude)
    what = f"candidate {label} ({gate.aggregate}) on {gate.slice}"
    unit = OPERATIONAL[gate.metric].unit
    if high is None or n == 0:
        return GateResult(**base, passed=False, observed=None, baseline=before, n=0,
                          reason=f"{what} has no value: no record in the slice has a {unit} value; a gate over an "
                                 "empty slice fails")
    budget_key = BUDGET_KEYS[gate.metric]
    counted = ""
    if unknown:
        at = (f"up to the policy's {budget_key} ({format_bound(gate.budget)} {unit})" if gate.budget is not None
              else f"without bound (the policy sets no {budget_key})")
        counted = (f"; {unknown} failed or missing record(s) did not answer: each counts as unknown, {at}, "
                   "so a failure never lowers it")
    observed = high if gate.max is not None or gate.min is None else low
    broken = _outside(gate, low, high)
    shown = format_value(observed, gate.min, gate.max) if math.isfinite(observed) else "unbounded"
    if low != high and gate.min is not None and gate.max is not None:
        top = format_value(high, gate.max) if math.isfinite(high) else "unbounded"
        shown = f"{format_value(low, gate.min)} to {top}"
    baseline = before if before is not None and math.isfinite(before) else None
    tail = f" (n = {n}{counted}; baseline {format_value(baseline)})"
    reason = f"{what} = {shown} is {broken or gate.threshold}{tail}"
    return GateResult(**base, passed=broken is None, observed=observed, baseline=baseline, n=n, reason=reason,
                      observed_text=shown)


def _drop(gate: Gate, base: dict, label: str, b: np.ndarray, c: np.ndarray, better: np.ndarray, seed: int,
          width: np.ndarray | None = None, codes: np.ndarray | None = None) -> GateResult:
    n = len(better)
    delta = float((c - b).mean())
    change = float(better.mean())
    margin = gate.max_drop or 0.0
    f = drop.figures(better, margin, alpha=gate.alpha, test=gate.test, rule=gate.rule, power=gate.power,
                     width=width, seed=seed, codes=codes)
    p = f.p
    if change < 0:
        worse = f"worse by {format_value(-change, margin)}"
    else:
        worse = f"better by {format_value(change)}" if change > 0 else "unchanged"
    shown = "n/a" if p is None else format_value(p, gate.alpha) if p >= 0.001 else f"{p:.3g}"
    alpha = format_bound(gate.alpha)
    figures = dict(mde=f.mde, power=f.power, power_at_margin=f.power_at_margin, bound=f.bound, sd=f.sd,
                   questions_needed=f.questions_needed, min_power=gate.min_power, failed=f.failed,
                   clusters=f.clusters)
    failed_words = (f"; {f.failed} failed or missing record(s) taken at their worst (any score they could have had)"
                    if f.failed else "")
    failed_words += f"; {clusters.words(f.clusters)}" if f.clusters is not None else ""
    if gate.rule == "non_inferiority":
        level = f"{1 - gate.alpha:.0%}"
        bound = "none (no margin would be shown)" if f.bound is None else format_value(f.bound, margin)
        reason = (f"mean {label} on {gate.slice} is {worse} (delta {delta:+.3f}, n = {n}); the one-sided {level} "
                  f"upper bound of the drop ({gate.test}) is {bound}, "
                  + (f"below the margin {format_bound(margin)}: shown within it" if f.decided else
                     f"not below the margin {format_bound(margin)}: not shown within it")
                  + f" (one-sided p = {shown} that the drop is below {format_bound(margin)}, alpha {alpha})"
                  + failed_words)
        warning = f"n = {n}: the {gate.test} test is undefined here, so nothing can be shown" if p is None else None
        outcome: Outcome = "pass" if f.decided else "fail"
        return GateResult(**{**base, "outcome": outcome}, passed=f.decided, observed=delta, baseline=float(b.mean()),
                          n=n, reason=reason, p_value=p, warning=warning, observed_text=f"delta {delta:+.3f}",
                          **figures)
    significant = f.decided
    reason = (f"mean {label} on {gate.slice} is {worse} (delta {delta:+.3f}, n = {n}); one-sided {gate.test} "
              f"p = {shown} that the drop exceeds {format_bound(margin)}")
    reason += f" < alpha {alpha}: significant" if significant else f", not below alpha {alpha}"
    if f.unbounded:
        reason += (f"; the Wilcoxon test's worst case over {f.failed} failed record(s) is not searched, so the drop "
                   "counts as significant (use the randomization test)")
    reason += failed_words
    warning = None
    nonzero = int(np.count_nonzero(np.abs(better + margin) > TIE)) if f.clusters is None else f.m
    floor = 2.0 ** -nonzero if gate.test in ("randomization", "wilcoxon") else None
    units = "" if f.clusters is None else f" ({nonzero} of {f.clusters} clusters differ)"
    if p is None:
        warning = f"n = {n}: the {gate.test} test is undefined here, so this gate cannot fail"
    elif floor is not None and not is_significant(floor, gate.alpha):
        warning = (f"n = {n}{units}: the one-sided {gate.test} test cannot go below p = {floor:.3g}, so this gate "
                   f"cannot fail at alpha {gate.alpha:g}")
    elif -change > margin and not significant:
        warning = (f"the mean drop {format_value(-change, margin)} exceeds {format_bound(margin)} but is not "
                   "significant at this n")
    outcome = "fail" if significant else "pass"
    if not significant and gate.min_power is not None and (f.power_at_margin is None
                                                           or f.power_at_margin < gate.min_power):
        outcome = "inconclusive"
    return GateResult(**{**base, "outcome": outcome}, passed=outcome == "pass", observed=delta,
                      baseline=float(b.mean()), n=n, reason=reason, p_value=p, warning=warning,
                      observed_text=f"delta {delta:+.3f}", **figures)


def heldout_warning(policy: Policy | None, uses: int, suite: str, suite_version: str) -> str | None:
    """The warning when a held-out set has been used for more comparisons than the policy allows."""
    if policy is None or policy.heldout_budget is None or uses <= policy.heldout_budget:
        return None
    return (f"the held-out questions of {suite} version {suite_version} have been used in {uses} comparisons, "
            f"more than the policy's heldout_budget of {policy.heldout_budget}: a held-out set that results "
            "were tuned against has become development data; write fresh held-out questions")


def evaluate(
    policy: Policy,
    evidence: Evidence,
    *,
    n_disputed: int = 0,
    notes: Sequence[str] = (),
    seed: int = 0,
) -> Verdict:
    """Evaluate every gate (and the alignment gate when the policy sets `min_alignment_kappa`); when
    disputed questions exist, evaluate again without them, and when claims rest on automatic alignments,
    again on the questions whose alignments were all reviewed; report what changes."""
    gates = tuple(evaluate_gate(g, evidence, seed=seed) for g in policy.gates)
    if policy.min_alignment_kappa is not None:
        gates += (alignment_gate(policy.min_alignment_kappa, evidence, policy.alignment_kappa_bound),)
    verdict = verdict_of(gates)
    warnings = list(notes)
    checks: dict[str, DisputedCheck | None] = {"disputed": None, "automatic": None}
    n_automatic = int(getattr(evidence, "n_automatic", 0) or 0)
    for exclude, n, what, without in (
            ("disputed", n_disputed, "disputed question(s)", "resolve the disputed labels before deciding"),
            ("automatic", n_automatic, "question(s) whose claims rest on unreviewed automatic alignments",
             "review those alignments before deciding")):
        if not n:
            continue
        again = tuple(evaluate_gate(g, evidence, exclude=exclude, seed=seed) for g in policy.gates)
        # without the automatic alignments nothing rests on them: the alignment gate then holds
        kept = [g for g in gates if g.kind == "agreement"] if exclude == "disputed" else []
        other = verdict_of((*again, *kept))
        label = "disputed questions" if exclude == "disputed" else "unreviewed alignments"
        differences = tuple(_difference(a, b, label) for a, b in zip(gates, again) if _differs(a, b))
        checks[exclude] = DisputedCheck(n, other, again, differences)
        if other != verdict:
            warnings.append(f"the verdict depends on {n} {what}: {verdict} with them, {other} without them; {without}")
        elif differences:
            warnings.append(f"without the {n} {what} the verdict is still {other}, but {len(differences)} gate "
                            "value(s) change")
    return Verdict(verdict, gates, policy.name, policy.sha256, tuple(warnings), checks["disputed"],
                   checks["automatic"])


def alignment_gate(min_kappa: float, evidence: Evidence, bound: str = "estimate") -> GateResult:
    """Fails when a claim of either side rests on an automatic aligner whose measured kappa is below
    `min_kappa` or unmeasured; passes when no claim rests on one. `bound` "lower": the lower end of
    kappa's bootstrap interval is measured instead (unmeasured below `agreement.MIN_ITEMS` sentences).
    The reason states each interval the evidence knows (`aligner_intervals`)."""
    aligners = list(getattr(evidence, "automatic_aligners", lambda: [])())
    intervals = dict(getattr(evidence, "aligner_intervals", lambda: {})())
    if bound == "lower":
        aligners = [(name, None if intervals.get(name) is None else intervals[name][0], n) for name, _, n in aligners]
    base: dict[str, Any] = dict(name="alignment agreement", kind="agreement", metric="alignment", slice="all",
                                aggregate="kappa", baseline=None, line=None, min=min_kappa)
    base["threshold"] = threshold_words(base)
    if not aligners:
        return GateResult(**base, passed=True, observed=None, n=0, observed_text="n/a",
                          reason="no claim rests on an automatic alignment")
    claims = sum(n for _, _, n in aligners)
    unmeasured = [name for name, kappa, _ in aligners if kappa is None]
    low = [(name, kappa) for name, kappa, _ in aligners if kappa is not None and kappa < min_kappa - TIE]
    measured = [kappa for _, kappa, _ in aligners if kappa is not None]
    observed = None if unmeasured else min(measured)
    said = "kappa's lower bound" if bound == "lower" else "kappa"
    shown = "; ".join(f"{name}: {said} {format_value(kappa, min_kappa)}" + (
        "" if intervals.get(name) is None else
        f" (95% interval {format_value(intervals[name][0])} to {format_value(intervals[name][1])})")
        if kappa is not None else f"{name}: not measured (" + (
            "too few sentences both it and a reviewer decided for an interval)" if bound == "lower" else
            "no sentence both it and a reviewer decided)") for name, kappa, _ in aligners)
    passed = not unmeasured and not low
    reason = (f"{claims} claim(s) rest on automatic alignments ({shown}); "
              + ("every aligner's measured agreement with the reviewers reaches " if passed else
                 "the verdict rests on alignments whose agreement with the reviewers is below or without ")
              + f"{said} {format_bound(min_kappa)}")
    return GateResult(**base, passed=passed, observed=observed, n=claims, reason=reason,
                      observed_text=format_value(observed, min_kappa))


def _differs(a: GateResult, b: GateResult) -> bool:
    if a.outcome != b.outcome or (a.observed is None) != (b.observed is None):
        return True
    return a.observed is not None and b.observed is not None and abs(a.observed - b.observed) > TIE


_DOES = {"pass": "passes", "fail": "fails", "inconclusive": "is inconclusive"}


def _difference(a: GateResult, b: GateResult, label: str = "disputed questions") -> str:
    state = (f"{_DOES[str(a.outcome)]} with {label}, {_DOES[str(b.outcome)]} without them" if a.outcome != b.outcome
             else f"{_DOES[str(a.outcome)]} either way")
    return f"gate {a.name!r}: {state} (observed {format_value(a.observed)} with, {format_value(b.observed)} without)"


NO_POLICY = "no policy given: no gate was checked, so there is no verdict"


def no_policy_verdict(notes: Sequence[str] = ()) -> Verdict:
    """The verdict of a comparison without a policy: none, with nothing checked, and said so."""
    return Verdict("none", (), None, None, (NO_POLICY,) + tuple(notes))


__all__ = [
    "DisputedCheck", "Evidence", "GateResult", "NO_POLICY", "Verdict", "alignment_gate", "evaluate", "evaluate_gate",
    "heldout_warning", "no_policy_verdict", "verdict_of",
]

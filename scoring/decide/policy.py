"""Acceptance policies: a TOML file of gates declared before results are seen (their verdict: `gates`).

A policy names itself and lists gates; each gate checks one metric on one slice of questions::

    name = "release-gate"
    description = "..."           # optional
    heldout_budget = 5            # optional: warn when a suite version's held-out set is used more often
    alpha = 0.05                  # optional: the default alpha of max_drop gates
    min_alignment_kappa = 0.6     # optional: a gate on the automatic alignments the claims rest on
    alignment_kappa_bound = "lower"  # optional: judge kappa by its interval's lower end (default "estimate")
    cluster_by = "type"           # optional: cluster | type | tag:<prefix> | none (default: the questions' cluster)
    [[gates]]
    name = "critical coverage"
    metric = "coverage"           # registry name or seed alias; or failure_rate | latency | cost
    slice = "critical"            # all | answerable | unanswerable | critical | type:<t> | split:<s> | tag:<t>
    aggregate = "macro"           # macro | pooled | total (disclosures); latency: p95 p50 p99 mean max;
                                  # cost: mean total
    min = 0.9                     # candidate aggregate >= min; `max` for <= (both allowed)

A gate has exactly one kind, chosen by its threshold keys:

- ``min`` / ``max``: the candidate's aggregate over the slice (its own scored questions) is within bounds;
- ``max_regressions``: at most this many paired questions are worse than the baseline (the metric's
  direction decides what "worse" is);
- ``max_drop`` (with ``alpha``, default 0.05, ``test``: randomization | ttest | wilcoxon, and ``rule``):
  with ``rule = "significant_drop"`` (the default) fail only when the mean paired change is significantly
  worse than ``-max_drop`` (one-sided, see `stats.drop_p`); with ``rule = "non_inferiority"`` pass only
  when the one-sided (1 - alpha) upper confidence bound of the drop is below ``max_drop`` (`drop`). Every
  max_drop gate also reports what its sample can detect: the minimum detectable effect at the declared
  ``power`` (default 0.8), the power at its margin and the bound (`detect`); failed and missing records
  enter at their worst (`drop`).

With ``min_power``, a significant_drop gate that did not fail but whose power at its margin is below
``min_power`` is inconclusive, not passed: the verdict is "inconclusive" when no gate fails and one is.
Latency and cost gates count a failed or missing record as unknown up to ``latency_budget_ms`` /
``cost_budget_usd`` (unbounded without one; `aggregates.operational_range`).

With ``min_alignment_kappa``, one more gate ("alignment agreement") fails when a claim of either side
rests on an automatic alignment (a judge's or the lexical aligner's, `scoring.metrics.alignment`) whose
measured agreement with the reviewers (Cohen's kappa, `agreement.aligner_agreement`) is below it or
unmeasured; with ``alignment_kappa_bound = "lower"``, the lower end of kappa's bootstrap interval
(`agreement.kappa_interval`) must reach it. A gate over an empty slice fails and says so. The verdict
is "fail" when a gate fails, "inconclusive" when none fails and one is inconclusive, "pass" only when
every gate passes; without a policy there is no verdict ("none"), never a pass.
The policy's text and its sha256 (of the file bytes) are stored with every verdict.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..errors import Problems, ValidationError, invalid
from ..metrics.registry import COUNT_KEYS, OPERATIONAL, display_name, measure_key
from ..metrics.slices import Slice, parse_slice
from ..store.files import parse_toml
from . import clusters, detect, stats
from .corrected import AGGREGATES
from .drop import RULES
from .gate_words import format_bound, format_value, threshold_words


def metric_aggregates(key: str) -> tuple[str, ...]:
    """Aggregates a gate may use for a registry key or operational measure, the default first."""
    if key in OPERATIONAL:
        return OPERATIONAL[key].aggregates
    base = ("macro", "pooled")
    return base + ("total",) if key in COUNT_KEYS else base


GateKind = Literal["threshold", "regressions", "drop", "agreement"]
Outcome = Literal["pass", "fail", "inconclusive"]
BUDGET_KEYS = {"latency": "latency_budget_ms", "cost": "cost_budget_usd"}
"""The policy key that bounds what a failed or missing record counts as, per operational measure."""


@dataclass(frozen=True)
class Gate:
    """One declared check. `line` is where its ``[[gates]]`` table starts in the policy file."""

    name: str
    metric: str
    slice: Slice
    kind: GateKind
    aggregate: str = "macro"
    min: float | None = None
    max: float | None = None
    max_regressions: int | None = None
    max_drop: float | None = None
    alpha: float = 0.05
    test: str = "randomization"
    line: int | None = None
    rule: str = "significant_drop"
    """A max_drop gate's rule: significant_drop (fail on a significant drop beyond the margin) or
    non_inferiority (pass only when the upper bound of the drop is below the margin)."""
    power: float = detect.POWER
    """The power its MDE and the questions needed are computed at (the policy's ``power``)."""
    min_power: float | None = None
    """The policy's ``min_power``: a significant_drop gate below it at its margin is inconclusive."""
    budget: float | None = None
    """A latency or cost gate's budget: what a failed or missing record counts as at most (None: unbounded)."""
    estimate: str = "judge"
    """`ESTIMATES`: "corrected" reads the figure corrected by a review sample; without a valid one the gate
    is inconclusive."""

    @property
    def threshold(self) -> str:
        """The bound in words: ``>= 0.9``, ``<= 0 regressed questions``, ``drop <= 0.02 unless significant
        (randomization, one-sided alpha 0.05)`` (`gate_words.threshold_words`)."""
        return threshold_words(self)

    def bounds(self) -> dict[str, Any]:
        """The declared bounds as `GateResult` fields (`gate_words.BOUNDS`); None where this kind has none."""
        drop = self.kind == "drop"
        return dict(min=self.min, max=self.max, max_regressions=self.max_regressions, max_drop=self.max_drop,
                    alpha=self.alpha if drop else None, test=self.test if drop else None,
                    rule=self.rule if drop else None)


@dataclass(frozen=True)
class Policy:
    """A parsed acceptance policy with the exact text it came from and that text's sha256."""

    name: str
    gates: tuple[Gate, ...]
    text: str
    sha256: str
    path: str = "policy.toml"
    description: str | None = None
    heldout_budget: int | None = None
    min_alignment_kappa: float | None = None
    alignment_kappa_bound: str = "estimate"
    min_power: float | None = None
    """Below this power at its margin a significant_drop gate that did not fail is inconclusive."""
    power: float = detect.POWER
    """The power MDEs and questions needed are computed at: ``power``, else ``min_power``, else 0.8."""
    latency_budget_ms: float | None = None
    cost_budget_usd: float | None = None
    cluster_by: str | None = None
    """How the comparison's questions are clustered (`clusters.CLUSTER_BY`); None: not stated, so the
    questions' own ``cluster`` when they carry one (`clusters.DEFAULT_BY`)."""


TOP_KEYS = ("name", "description", "heldout_budget", "alpha", "min_alignment_kappa", "alignment_kappa_bound",
            "min_power", "power", "latency_budget_ms", "cost_budget_usd", "cluster_by", "gates")
KAPPA_BOUNDS = ("estimate", "lower")
GATE_KEYS = ("name", "description", "metric", "slice", "aggregate", "min", "max",
             "max_regressions", "max_drop", "alpha", "test", "rule", "estimate")
ESTIMATES = ("judge", "corrected")
"""What a min/max gate on an answer metric reads: the figure as scored (`judge`: automatic alignments taken at
face value) or the figure corrected by a review sample (`corrected`: `scoring.decide.corrected`)."""
CORRECTED = AGGREGATES
"""The metrics (and aggregates) a corrected estimate exists for (`scoring.decide.corrected.AGGREGATES`)."""
_GATES_HEADER = re.compile(r"^\s*\[\[\s*gates\s*\]\]")
_TABLE_HEADER = re.compile(r"^\s*\[")


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy file; ValidationError (`path:line: ...`) on any problem."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as error:
        raise invalid(f"cannot read the policy file: {error.strerror or error}", path=str(p)) from None
    return parse_policy(data, path=str(p))


def parse_policy(data: bytes | str, *, path: str = "policy.toml") -> Policy:
    """Validate policy TOML; every problem is reported with its line before anything is evaluated."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    doc, text = parse_toml(raw, path=path, what="the policy")
    lines = _Lines(text)
    problems = Problems()

    def add(rule: str, field: str | None = None, value: Any = ..., line: int | None = None) -> None:
        problems.add(rule, field, value, path=path, line=line)

    for key in doc:
        if key not in TOP_KEYS:
            add(f"unknown key; a policy has {', '.join(TOP_KEYS)}", key, line=lines.top(key))
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip():
        add('a policy needs a name: name = "release-gate"', "name", name if "name" in doc else ...,
            line=lines.top("name") or 1)
    description = doc.get("description")
    if description is not None and not isinstance(description, str):
        add("description is text", "description", description, line=lines.top("description"))
    budget = doc.get("heldout_budget")
    if budget is not None and (not _is_int(budget) or budget < 0):
        add("heldout_budget is a whole number >= 0 (comparisons allowed on a held-out set)",
            "heldout_budget", budget, line=lines.top("heldout_budget"))
    min_kappa = doc.get("min_alignment_kappa")
    if min_kappa is not None and (not _is_number(min_kappa) or not -1 <= min_kappa <= 1):
        add("min_alignment_kappa is a number from -1 to 1 (Cohen's kappa)", "min_alignment_kappa", min_kappa,
            line=lines.top("min_alignment_kappa"))
        min_kappa = None
    kappa_bound = doc.get("alignment_kappa_bound", "estimate")
    if kappa_bound not in KAPPA_BOUNDS:
        add('alignment_kappa_bound is "estimate" (kappa) or "lower" (its interval\'s lower end)',
            "alignment_kappa_bound", kappa_bound, line=lines.top("alignment_kappa_bound"))
    fractions: dict[str, float | None] = {}
    for key, what in (("min_power", "a gate whose power at its margin is below it is inconclusive"),
                      ("power", "the power MDEs and questions needed are computed at")):
        value = doc.get(key)
        if value is not None and (not _is_number(value) or not 0 < value < 1):
            add(f"{key} is a number between 0 and 1 ({what})", key, value, line=lines.top(key))
            value = None
        fractions[key] = None if value is None else float(value)
    budgets: dict[str, float | None] = {}
    for key, unit in (("latency_budget_ms", "milliseconds"), ("cost_budget_usd", "USD")):
        value = doc.get(key)
        if value is not None and (not _is_number(value) or value <= 0):
            add(f"{key} is a number > 0 (in {unit}: what a failed or missing record counts as at most)", key, value,
                line=lines.top(key))
            value = None
        budgets[key] = None if value is None else float(value)
    power = fractions["power"] or fractions["min_power"] or detect.POWER
    cluster_by = doc.get("cluster_by")
    if cluster_by is not None:
        try:
            cluster_by = clusters.parse_cluster_by(cluster_by)
        except ValueError as error:
            add(str(error), "cluster_by", cluster_by, line=lines.top("cluster_by"))
            cluster_by = None
    default_alpha = doc.get("alpha", 0.05)
    if not _is_number(default_alpha) or not 0 < default_alpha < 1:
        add("alpha is a number between 0 and 1", "alpha", default_alpha, line=lines.top("alpha"))
        default_alpha = 0.05
    raw_gates = doc.get("gates")
    gates: list[Gate] = []
    if not isinstance(raw_gates, list) or not raw_gates or not all(isinstance(g, dict) for g in raw_gates):
        add("a policy needs at least one [[gates]] table", "gates", line=lines.top("gates") or None)
    else:
        for i, table in enumerate(raw_gates):
            gate = _parse_gate(table, i, float(default_alpha), lines, problems, path)
            if gate is not None:
                gate = replace(gate, power=power, min_power=fractions["min_power"],
                               budget=budgets.get(BUDGET_KEYS.get(gate.metric, "")))
            if gate is not None:
                gates.append(gate)
        seen: dict[str, Gate] = {}
        for gate in gates:
            if gate.name in seen:
                add(f"gate names must be unique (also at line {seen[gate.name].line})", "name", gate.name,
                    line=gate.line)
            seen[gate.name] = gate
    problems.raise_if_any()
    return Policy(
        name=str(name).strip(),
        gates=tuple(gates),
        text=text,
        sha256=hashlib.sha256(raw).hexdigest(),
        path=path,
        description=description,
        heldout_budget=budget,
        min_alignment_kappa=None if min_kappa is None else float(min_kappa),
        alignment_kappa_bound=str(kappa_bound),
        min_power=fractions["min_power"],
        power=power,
        latency_budget_ms=budgets["latency_budget_ms"],
        cost_budget_usd=budgets["cost_budget_usd"],
        cluster_by=cluster_by,
    )


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _Lines:
    """Finds the line of a top-level key, of the i-th ``[[gates]]`` table and of a key inside it."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.headers = [n for n, line in enumerate(self.lines, 1) if _GATES_HEADER.match(line)]
        first_table = next((n for n, line in enumerate(self.lines, 1) if _TABLE_HEADER.match(line)), None)
        self.top_end = first_table or len(self.lines) + 1

    @staticmethod
    def _key(key: str) -> re.Pattern[str]:
        return re.compile(rf"""^\s*(["']?){re.escape(key)}\1\s*=""")

    def top(self, key: str) -> int | None:
        pattern = self._key(key)
        return next((n for n in range(1, self.top_end) if pattern.match(self.lines[n - 1])), None)

    def gate(self, index: int) -> int | None:
        return self.headers[index] if index < len(self.headers) else self.top("gates")

    def gate_key(self, index: int, key: str) -> int | None:
        start = self.gate(index)
        if start is None or index >= len(self.headers):
            return start
        pattern = self._key(key)
        for n in range(start + 1, len(self.lines) + 1):
            line = self.lines[n - 1]
            if _TABLE_HEADER.match(line):
                break
            if pattern.match(line):
                return n
        return start


def _parse_gate(
    table: dict[str, Any], index: int, default_alpha: float, lines: _Lines, problems: Problems, path: str
) -> Gate | None:
    """One ``[[gates]]`` table; problems go to `problems` with the line of the offending key."""
    start = lines.gate(index)
    before = len(problems.items)

    def err(rule: str, key: str | None = None, value: Any = ...) -> None:
        line = lines.gate_key(index, key) if key else start
        problems.add(f"gate {index + 1}: {rule}", key, value, path=path, line=line)

    for key in table:
        if key not in GATE_KEYS:
            err(f"unknown key; a gate has {', '.join(GATE_KEYS)}", key, table[key])
    name = table.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        err("name is non-empty text", "name", name)
    raw_metric = table.get("metric")
    key: str | None = None
    if not isinstance(raw_metric, str):
        err('a gate needs a metric: metric = "coverage"', "metric", raw_metric if "metric" in table else ...)
    else:
        try:
            key = measure_key(raw_metric)
        except ValidationError as error:
            err(error.problems[0].rule, "metric", raw_metric)
    raw_slice = table.get("slice", "all")
    slice_: Slice | None = None
    if not isinstance(raw_slice, str):
        err("slice is text such as \"critical\" or \"type:lookup\"", "slice", raw_slice)
    else:
        try:
            slice_ = parse_slice(raw_slice)
        except ValidationError as error:
            err(error.problems[0].rule, "slice", raw_slice)

    has = {k for k in ("min", "max", "max_regressions", "max_drop") if k in table}
    kinds = {"threshold" if k in ("min", "max") else "regressions" if k == "max_regressions" else "drop" for k in has}
    kind: GateKind | None = None
    if not kinds:
        err("a gate needs a threshold: min and/or max, max_regressions, or max_drop (with alpha)")
    elif len(kinds) > 1:
        last = max(has, key=lambda k: lines.gate_key(index, k) or 0)
        err(f"a gate has one kind of threshold; split {', '.join(sorted(has))} into separate gates", last)
    else:
        kind = kinds.pop()  # type: ignore[assignment]
    for bound in ("min", "max", "max_drop"):
        if bound in table and not _is_number(table[bound]):
            err("a number", bound, table[bound])
    if "max_drop" in table and _is_number(table["max_drop"]) and table["max_drop"] < 0:
        err("max_drop is >= 0 (the tolerated worsening, in the metric's units)", "max_drop", table["max_drop"])
    if "max_regressions" in table and (not _is_int(table["max_regressions"]) or table["max_regressions"] < 0):
        err("max_regressions is a whole number >= 0", "max_regressions", table["max_regressions"])
    if _is_number(table.get("min")) and _is_number(table.get("max")) and table["min"] > table["max"]:
        err(f"min {table['min']} is above max {table['max']}: no value can pass", "min", table["min"])
    for extra in ("alpha", "test", "rule"):
        if extra in table and kind is not None and kind != "drop":
            err(f"{extra} applies only to max_drop gates", extra, table[extra])
    alpha = table.get("alpha", default_alpha)
    if not _is_number(alpha) or not 0 < alpha < 1:
        err("alpha is a number between 0 and 1", "alpha", alpha)
    test = table.get("test", "randomization")
    if test not in stats.TESTS:
        err(f"test is one of {', '.join(stats.TESTS)}", "test", test)
    rule = table.get("rule", "significant_drop")
    if rule not in RULES:
        err(f"rule is one of {', '.join(RULES)} (significant_drop: fail on a significant drop beyond max_drop; "
            "non_inferiority: pass only when the upper bound of the drop is below max_drop)", "rule", rule)
    elif rule == "non_inferiority" and test == "wilcoxon":
        err("a non_inferiority gate takes test = \"randomization\" or \"ttest\": inverting the Wilcoxon test bounds "
            "a median shift, not the mean drop the margin is in", "test", test)
    aggregate = table.get("aggregate")
    estimate = table.get("estimate", "judge")
    if estimate not in ESTIMATES:
        err('estimate is "judge" (the figure as scored) or "corrected" (corrected by a review sample)', "estimate",
            estimate)
    elif estimate == "corrected" and key is not None:
        allowed_corrected = CORRECTED.get(key)
        if allowed_corrected is None or kind != "threshold" or (aggregate or allowed_corrected[0]) not in allowed_corrected:
            err("estimate = \"corrected\" applies to min/max gates on " + ", ".join(
                f"{display_name(m)} ({'/'.join(a)})" for m, a in CORRECTED.items()) + ": a corrected estimate "
                "exists for them only", "estimate", estimate)
    if key is not None:
        allowed = metric_aggregates(key)
        if aggregate is not None and (not isinstance(aggregate, str) or aggregate not in allowed):
            err(f"aggregate for {display_name(key)} is one of {', '.join(allowed)}", "aggregate", aggregate)
        if key in OPERATIONAL and kind in ("regressions", "drop"):
            err(f"{key} is measured per run, not per question: use min / max", sorted(has)[0])
        if kind in ("regressions", "drop") and aggregate is not None:
            err("max_regressions and max_drop compare per-question values; aggregate does not apply",
                "aggregate", aggregate)
    if len(problems.items) > before or key is None or slice_ is None or kind is None:
        return None
    default_name = f"{display_name(key)} on {slice_}"
    return Gate(
        name=name.strip() if isinstance(name, str) else default_name,
        metric=key,
        slice=slice_,
        kind=kind,
        aggregate=aggregate or (CORRECTED[key][0] if estimate == "corrected" and key in CORRECTED
                                else metric_aggregates(key)[0]),
        min=float(table["min"]) if "min" in table else None,
        max=float(table["max"]) if "max" in table else None,
        max_regressions=table.get("max_regressions"),
        max_drop=float(table["max_drop"]) if "max_drop" in table else None,
        alpha=float(alpha),
        test=test,
        line=start,
        rule=rule,
        estimate=str(estimate),
    )


__all__ = [
    "BUDGET_KEYS", "CORRECTED", "Gate", "Policy", "Slice", "format_bound", "format_value", "load_policy",
    "metric_aggregates", "parse_policy", "parse_slice",
]

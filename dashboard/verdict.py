"""A release verdict in words: each gate as one plain sentence, the failing ones first, and the page
that shows what a gate measured.

The pass / fail of every gate comes from `scoring.decide.policy` (live) or the `verdicts` table
(recorded); nothing here decides. A gate reads as `GateResult` fields, from either source.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scoring.metrics import BY_KEY
from scoring.metrics.registry import display_name

from .display import missing

PAGE_OF_QUESTIONS = "views/question_deltas.py"
PAGE_OF_SLICES = "views/slices.py"
PAGE_OF_RUNS = "views/runs.py"


@dataclass(frozen=True)
class GateLine:
    """One gate as the verdict card shows it: passed, the sentence, and the page (with its query
    parameters beyond the comparison's) that lists the questions or figures behind it."""

    name: str
    passed: bool
    sentence: str
    page: str
    params: dict[str, Any]
    link_label: str


def slice_words(name: str) -> str:
    """A slice name as words: `critical` -> critical questions, `type:outdated` -> outdated questions."""
    if name == "all":
        return "all questions"
    family, _, value = name.partition(":")
    if not value:
        return f"{name} questions"
    return {"type": f"{value} questions", "split": f"questions of split {value}",
            "tag": f"questions tagged {value}"}.get(family, f"questions in {name}")


OPERATIONAL_WORDS = {"failure_rate": "Failure rate", "latency": "Latency (ms)", "cost": "Cost (USD)"}


def measure_words(metric: str) -> str:
    """A gate's measure as the page names it: the registry's name, or words for an operational one."""
    if metric in OPERATIONAL_WORDS:
        return OPERATIONAL_WORDS[metric]
    try:
        return display_name(metric)
    except KeyError:
        return metric


def _value(gate: Mapping[str, Any], field: str) -> Any:
    value = gate.get(field)
    return None if missing(value) else value


def gate_sentence(gate: Mapping[str, Any]) -> str:
    """What the gate found, in one sentence with its numbers: `Coverage on critical questions is
    0.732, below the minimum 0.9 (66 questions; baseline 0.929).`"""
    kind, metric, where = str(gate.get("kind")), str(gate.get("metric")), slice_words(str(gate.get("slice")))
    name = measure_words(metric)
    observed, shown = _value(gate, "observed"), _value(gate, "observed_text")
    n, baseline, threshold = _value(gate, "n"), _value(gate, "baseline"), str(gate.get("threshold") or "")
    passed = bool(gate.get("passed"))
    count = "" if n is None else f"{int(n)} "
    if kind == "agreement":
        return f"Alignment agreement: {gate.get('reason')}."
    if observed is None:
        return f"{name} on {where}: no value ({gate.get('reason')})."
    if kind == "regressions":
        worse = int(observed)
        allowed = threshold.removeprefix("<= ").split(" ")[0]
        return f"{worse} of {count}{where} scored worse on {name} than the baseline (allowed {allowed})."
    if kind == "drop":
        p = _value(gate, "p_value")
        delta = shown.removeprefix("delta ") if shown else f"{observed:+.3f}"
        moved = "rose" if not delta.startswith("-") else "dropped"
        bound = re.match(r"drop <= (\S+) unless significant .*alpha (\S+?)\)?$", threshold)
        max_drop, alpha = (bound.group(1), bound.group(2)) if bound else (threshold, "")
        p_text = "" if p is None else f"one-sided p {p:.3f}"
        if passed:
            verdict = f"within the {max_drop} allowed, or not significant ({p_text})" if p_text else "within bounds"
        else:
            verdict = f"more than the {max_drop} allowed, and significant ({p_text}, alpha {alpha})"
        return f"{name} on {where} {moved} by {delta.lstrip('+-')} ({count}questions): {verdict}."
    value = shown or f"{observed:.3f}"
    bounds = threshold.split(" and ")
    if passed:
        where_ok = " and ".join(b.replace(">=", "at least").replace("<=", "at most") for b in bounds)
        relation = f"within the bound ({where_ok})"
    else:
        low = next((b for b in bounds if b.startswith(">=")), None)
        high = next((b for b in bounds if b.startswith("<=")), None)
        relation = (f"below the minimum {low.removeprefix('>= ')}" if low and (high is None or
                    float(observed) < float(low.removeprefix(">= ")))
                    else f"above the maximum {high.removeprefix('<= ') if high else threshold}")
    unit = "records" if metric in ("failure_rate", "latency", "cost") else "questions"
    before = "" if baseline is None else f"; baseline {baseline:.4g}" if isinstance(baseline, float) else \
        f"; baseline {baseline}"
    aggregate = str(gate.get("aggregate") or "")
    how = f", {aggregate}," if aggregate not in ("macro", "rate", "per question", "") else ""
    return f"{name}{how} on {where} is {value}, {relation} ({count}{unit}{before})."


def slice_filters(name: str) -> dict[str, Any]:
    """The Question deltas filters that keep exactly the questions of a slice."""
    family, _, value = name.partition(":")
    if name == "all":
        return {}
    if name in ("answerable", "unanswerable"):
        return {"slice": name}
    if name == "critical":
        return {"critical": "critical only"}
    if family in ("type", "split") and value:
        return {family: value}
    if family == "tag" and value:
        return {"tags": value}
    return {}


QUESTION_FILTERS_CLEARED: dict[str, str] = {
    "type": "", "split": "", "tags": "", "status": "", "search": "", "pick": "", "slice": "all", "critical": "all",
    "worse": "0", "gap": "0", "sort": "worst first"}
"""Every Question deltas filter set to keep everything: a gate's link names each, so a filter chosen
earlier in the session never narrows what the gate's link shows."""


def gate_line(gate: Mapping[str, Any]) -> GateLine:
    """The sentence and the filtered view of one gate: a registry metric's gate opens Question deltas
    on that metric and slice, every other filter cleared (the questions that scored worse come first;
    a gate that counts regressions keeps only them); a gate on failures, latency or cost opens Runs."""
    metric, slice_ = str(gate.get("metric")), str(gate.get("slice"))
    sentence = gate_sentence(gate)
    if metric in BY_KEY:
        params = {**QUESTION_FILTERS_CLEARED, "metric": metric, **slice_filters(slice_)}
        if str(gate.get("kind")) == "regressions":
            params["worse"] = "1"
        worse = " that scored worse" if str(gate.get("kind")) == "regressions" else ""
        label = f"Show {'the ' if slice_ != 'all' else ''}{slice_words(slice_)}{worse} on {measure_words(metric)}"
        return GateLine(str(gate.get("name")), bool(gate.get("passed")), sentence, PAGE_OF_QUESTIONS, params, label)
    return GateLine(str(gate.get("name")), bool(gate.get("passed")), sentence, PAGE_OF_RUNS, {},
                    "Show latency, cost and failures per run")


def gate_lines(gates: Any) -> list[GateLine]:
    """Every gate (records of `data.gates_frame`) as a `GateLine`, failing gates first, each group in
    policy order."""
    rows = gates.to_dict("records") if hasattr(gates, "to_dict") else list(gates)
    lines = [gate_line(g) for g in rows]
    return [line for line in lines if not line.passed] + [line for line in lines if line.passed]

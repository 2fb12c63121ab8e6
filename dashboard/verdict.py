"""A release verdict in words: each gate as one plain sentence, the failing ones first, then the ones
that could not tell, and the page that shows what a gate measured.

The pass / fail / inconclusive of every gate comes from `scoring.decide.gates` (live) or the
`verdicts` table (recorded); nothing here decides. A gate reads as `GateResult` fields, from either source, and its
sentence and names come from `scoring.decide.gate_words`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scoring.decide.change import STATUSES
from scoring.decide.gate_words import gate_fields, gate_sentence, measure_words, questions_behind, slice_words
from scoring.metrics import BY_KEY

PAGE_OF_QUESTIONS = "views/question_deltas.py"
PAGE_OF_SLICES = "views/slices.py"
PAGE_OF_RUNS = "views/runs.py"


@dataclass(frozen=True)
class GateLine:
    """One gate as the verdict card shows it: passed, the sentence, and the page (with its query
    parameters beyond the comparison's) that lists the questions or figures behind it; `outcome` is
    pass, fail or inconclusive (a gate recorded before outcomes: pass or fail)."""

    name: str
    passed: bool
    sentence: str
    page: str
    params: dict[str, Any]
    link_label: str
    outcome: str = "fail"

    @property
    def inconclusive(self) -> bool:
        return self.outcome == "inconclusive"


VERDICT_MARKS = {"pass": ":green[:material/check_circle: PASS]", "fail": ":red[:material/cancel: FAIL]",
                 "inconclusive": ":orange[:material/help: INCONCLUSIVE]"}
"""The verdict's heading on the card."""
GATE_ICONS = {"pass": ":green[:material/check:]", "fail": ":red[:material/close:]",
              "inconclusive": ":orange[:material/help:]"}
"""A gate's icon on the card."""


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


SCORED = [s for s in STATUSES if s != "n/a"]
"""The Question deltas status filter that leaves out the n/a questions, as a gate leaves them out."""


def gate_line(gate: Mapping[str, Any]) -> GateLine:
    """The sentence and the filtered view of one gate: a registry metric's gate opens Question deltas
    on exactly the questions behind it (`gate_words.questions_behind`): its metric and slice, every
    other filter cleared, then only the questions that scored worse for a gate that counts them, or
    without the n/a questions the gate left out; a gate on failures, latency or cost opens Runs."""
    metric, slice_ = str(gate.get("metric")), str(gate.get("slice"))
    sentence = gate_sentence(gate)
    outcome = str(gate_fields(gate)["outcome"])
    if metric in BY_KEY:
        behind = questions_behind(gate)
        params: dict[str, Any] = {**QUESTION_FILTERS_CLEARED, "metric": metric, **slice_filters(slice_)}
        if behind["worse_only"]:
            params["worse"] = "1"
        if behind["scored_only"]:
            params["status"] = SCORED
        which = " that scored worse" if behind["worse_only"] else " with a value" if behind["scored_only"] else ""
        count = "" if behind["count"] is None else f" ({behind['count']})"
        label = (f"Show {'the ' if slice_ != 'all' else ''}{slice_words(slice_)}{which} on {measure_words(metric)}"
                 f"{count}")
        return GateLine(str(gate.get("name")), bool(gate.get("passed")), sentence, PAGE_OF_QUESTIONS, params, label,
                        outcome)
    return GateLine(str(gate.get("name")), bool(gate.get("passed")), sentence, PAGE_OF_RUNS, {},
                    "Show latency, cost and failures per run", outcome)


def gate_lines(gates: Any) -> list[GateLine]:
    """Every gate (records of `data.gates_frame`) as a `GateLine`: failing gates first, then the
    inconclusive ones, then the passing ones, each group in policy order."""
    rows = gates.to_dict("records") if hasattr(gates, "to_dict") else list(gates)
    lines = [gate_line(g) for g in rows]
    return [line for outcome in ("fail", "inconclusive", "pass") for line in lines if line.outcome == outcome]

"""A gate in words, built from its parts: the bound a policy declares and the one sentence that says
what the gate found.

A gate's parts are the fields of `gates.GateResult` (kind, metric, slice, aggregate, the bounds
``min`` / ``max`` / ``max_regressions`` / ``max_drop`` with ``alpha``, ``test`` and ``rule``, observed,
observed_text, baseline, n, p_value, passed, outcome, reason, and what a max_drop gate's sample can
detect: mde, power, power_at_margin, bound, sd, questions_needed, min_power), read from the result itself
or from the same
keys in a mapping (the JSON a verdict is stored as, decoded; a DataFrame record, where a missing
number is NaN). Every wording reads these fields, never another wording: the bound's text
(`threshold_words`) can be reworded without changing a sentence (`gate_sentence`).

The verdict card, the reports, the slides and ``ragslice compare`` word a gate through this module.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ..metrics.registry import display_name
from .change import TIE
from .clusters import words as clustered_words
from .detect import POWER
from .significance import ALPHA

BOUNDS = ("min", "max", "max_regressions", "max_drop", "alpha", "test", "rule")
"""A gate's declared bounds as fields: ``min`` / ``max`` (a threshold gate; ``min`` is the kappa of the
alignment gate), ``max_regressions``, ``max_drop`` with ``alpha``, ``test`` and ``rule``; None where the
kind has none (a drop gate recorded without ``rule`` is a significant_drop gate)."""

DETECTION = ("mde", "power", "power_at_margin", "bound", "sd", "questions_needed", "min_power", "clusters")
"""What a max_drop gate's sample can detect (`scoring.decide.detect`); None where not computed. `clusters`:
the clusters its test resampled (`scoring.decide.clusters`), None when its questions were independent."""

FIELDS = ("name", "kind", "metric", "slice", "aggregate", "passed", "outcome", "observed", "observed_text", "baseline",
          "n", "n_na", "reason", "p_value", *BOUNDS, *DETECTION)

OPERATIONAL_WORDS = {"failure_rate": "Failure rate", "latency": "Latency (ms)", "cost": "Cost (USD)"}
UNMARKED_AGGREGATES = ("macro", "rate", "per question", "")
"""Aggregates a sentence does not name: the default of a metric, and the per-question comparisons."""


# --- numbers -------------------------------------------------------------------------------------


def format_value(value: float | None, *bounds: float | None) -> str:
    """A value in a reason: whole numbers plain, others to three decimals (four significant digits
    from 1000 on), with more digits where fewer would round it onto or across one of `bounds`: shown
    beside a threshold, it compares to the threshold's printed figure as the value itself does
    (values within `TIE` of a bound count as equal to it)."""
    if value is None:
        return "n/a"
    value = float(value)
    if value.is_integer():
        return f"{value:.0f}"
    shown = f"{value:.4g}" if abs(value) >= 1000 else f"{value:.3f}"
    for digits in range(4, 18):
        if all(_same_side(float(shown), value, b) for b in bounds if b is not None):
            break
        shown = f"{value:.{digits}g}"
    return shown


def _same_side(shown: float, value: float, bound: float) -> bool:
    """Whether `shown` lies on the same side of `bound` as `value` (either side when within TIE)."""
    if abs(value - bound) <= TIE:
        return True
    return (shown > bound) == (value > bound) and shown != bound


def format_bound(value: float) -> str:
    """A threshold as written in the policy: the shortest text that reads back as the same number."""
    return f"{value:.0f}" if float(value).is_integer() else repr(float(value))


# --- names ---------------------------------------------------------------------------------------


def slice_words(name: str) -> str:
    """A slice name as words: `critical` -> critical questions, `type:outdated` -> outdated questions."""
    if name == "all":
        return "all questions"
    family, _, value = name.partition(":")
    if not value:
        return f"{name} questions"
    return {"type": f"{value} questions", "split": f"questions of split {value}",
            "tag": f"questions tagged {value}"}.get(family, f"questions in {name}")


def measure_words(metric: str) -> str:
    """A gate's measure as a page names it: the registry's name, or words for an operational one."""
    if metric in OPERATIONAL_WORDS:
        return OPERATIONAL_WORDS[metric]
    try:
        return display_name(metric)
    except KeyError:
        return metric


# --- the parts -----------------------------------------------------------------------------------


def missing(value: Any) -> bool:
    """True for None, NaN and pandas' NA (a value a gate or a table cell does not have)."""
    if value is None:
        return True
    try:
        return bool(value != value) or (isinstance(value, float) and math.isnan(value))
    except (TypeError, ValueError):
        return str(value) == "<NA>"


def gate_fields(gate: Any) -> dict[str, Any]:
    """The parts of a gate (`FIELDS`) from a `GateResult` or a mapping of its fields; None for a
    field it lacks or holds as NaN. A gate recorded before its bounds were stored as fields carries
    them only in its ``threshold`` text: they are read back from it (`_recorded_bounds`)."""
    if isinstance(gate, Mapping):
        out = {key: gate.get(key) for key in FIELDS}
        if not any(key in gate for key in BOUNDS):
            out.update(_recorded_bounds(str(out["kind"]), str(gate.get("threshold") or "")))
    else:
        out = {key: getattr(gate, key, None) for key in FIELDS}
    out = {key: None if missing(value) else value for key, value in out.items()}
    if out["outcome"] not in ("pass", "fail", "inconclusive"):  # recorded before outcomes: pass or fail
        out["outcome"] = "pass" if out["passed"] else "fail"
    return out


_RECORDED = {
    "threshold": re.compile(r"^(?:>= (?P<min>\S+))?(?: and )?(?:<= (?P<max>\S+))?$"),
    "regressions": re.compile(r"^<= (?P<max_regressions>\d+) regressed questions$"),
    "drop": re.compile(r"^drop <= (?P<max_drop>\S+) unless significant \((?P<test>\w+), one-sided alpha "
                       r"(?P<alpha>\S+)\)$"),
    "agreement": re.compile(r"^kappa >= (?P<min>\S+)$"),
}
"""The ``threshold`` text of gates recorded before the bounds were stored as fields, in the one form
those versions wrote. Frozen: it reads old rows only, so `threshold_words` may word bounds differently."""


def _recorded_bounds(kind: str, threshold: str) -> dict[str, Any]:
    """The bounds of a gate recorded without them, from its recorded ``threshold`` text; None for
    each one that text does not hold."""
    found = _RECORDED[kind].match(threshold) if kind in _RECORDED else None
    parts = {key: None for key in BOUNDS}
    for key, text in (found.groupdict() if found else {}).items():
        if text is not None:
            parts[key] = text if key == "test" else int(text) if key == "max_regressions" else float(text)
    return parts


# --- words ---------------------------------------------------------------------------------------


def threshold_words(gate: Any) -> str:
    """The bound in words (a `Gate`, a `GateResult` or a mapping of its fields): ``>= 0.9``,
    ``>= 0.2 and <= 0.8``, ``<= 0 regressed questions``, ``drop <= 0.02 unless significant
    (randomization, one-sided alpha 0.05)``, ``kappa >= 0.6``."""
    g = gate_fields(gate)
    kind = g["kind"]
    if kind == "threshold":
        return " and ".join(f"{sign} {format_bound(g[key])}" for sign, key in ((">=", "min"), ("<=", "max"))
                            if g[key] is not None)
    if kind == "regressions":
        return f"<= {_count(g['max_regressions'])} regressed questions"
    if kind == "agreement":
        return f"kappa >= {format_bound(g['min'])}"
    if g["rule"] == "non_inferiority":
        level = f"{1 - float(g['alpha']):.0%}" if g["alpha"] is not None else "one-sided"
        return (f"upper {level} bound of the drop < {format_bound(g['max_drop'])} ({g['test']}, "
                "non-inferiority)")
    return (f"drop <= {format_bound(g['max_drop'])} unless significant ({g['test']}, one-sided alpha "
            f"{format_bound(g['alpha'])})")


def _count(value: Any) -> str:
    return str(int(value)) if value is not None else "n/a"


def na_words(gate: Any) -> str:
    """The questions of a gate's slice left out as n/a, to follow its count: ``; 6 n/a left out``; empty
    when none was (or the gate does not know: a gate on records, one recorded before it was kept)."""
    n_na = gate_fields(gate)["n_na"]
    return f"; {int(n_na)} n/a left out" if n_na else ""


def questions_behind(gate: Any) -> dict[str, Any]:
    """Which questions a gate on a registry metric rests on, for a link that opens exactly them: its
    ``slice``; ``worse_only`` (a regressions gate counts the questions that scored worse; a threshold
    gate on a total, such as disclosures, is moved by them); ``scored_only`` (the slice's n/a
    questions left out, as the gate leaves them); ``count``, how many that is when the gate knows it
    (its n, or its count of questions that scored worse), else None."""
    g = gate_fields(gate)
    worse_only = g["kind"] == "regressions" or (g["kind"] == "threshold" and g["aggregate"] == "total")
    count = g["observed"] if g["kind"] == "regressions" else None if worse_only else g["n"]
    return {"slice": str(g["slice"]), "worse_only": worse_only, "scored_only": not worse_only and bool(g["n_na"]),
            "count": None if count is None else int(count)}


def gate_sentence(gate: Any) -> str:
    """What the gate found, in one sentence with its numbers (a `GateResult` or a mapping of its
    fields): `Coverage on critical questions is 0.732, below the minimum 0.9 (66 questions; 6 n/a left
    out; baseline 0.929).` Every number to three decimals at most (`format_value`); the count is the
    questions the gate used, and the slice's n/a questions are said beside it (`na_words`)."""
    g = gate_fields(gate)
    kind, metric = str(g["kind"]), str(g["metric"])
    name, where = measure_words(metric), slice_words(str(g["slice"]))
    observed, n = g["observed"], g["n"]
    count = "" if n is None else f"{int(n)} "
    if kind == "agreement":
        return f"Alignment agreement: {g['reason']}."
    if observed is None:
        return f"{name} on {where}: no value ({g['reason']})."
    if kind == "regressions":
        return (f"{int(observed)} of {count}{where} scored worse on {name} than the baseline "
                f"(allowed {_count(g['max_regressions'])}{na_words(g)}).")
    if kind == "drop":
        return _drop_sentence(g, name, where, count)
    return _threshold_sentence(g, name, where, count)


def _drop_sentence(g: dict[str, Any], name: str, where: str, count: str) -> str:
    delta = f"{float(g['observed']):+.3f}"
    moved = "dropped" if delta.startswith("-") else "rose"
    allowed = format_bound(g["max_drop"]) if g["max_drop"] is not None else "n/a"
    p = g["p_value"]
    p_text = "" if p is None else f"one-sided p {p:.3f}"
    grouped = f", {clustered_words(g['clusters'])}" if g["clusters"] is not None else ""
    head = f"{name} on {where} {moved} by {delta.lstrip('+-')} ({count}questions{grouped}{na_words(g)}): "
    if g["rule"] == "non_inferiority":
        level = f"{1 - float(g['alpha']):.0%} " if g["alpha"] is not None else ""
        bound = "no bound" if g["bound"] is None else f"{short(g['bound'])}"
        if g["passed"]:
            verdict = f"shown within the {allowed} allowed (upper {level}bound of the drop {bound})"
        else:
            verdict = f"not shown within the {allowed} allowed (upper {level}bound of the drop {bound})"
        words = detection_words(g)
        return head + verdict + "." + (f" {words[0].upper()}{words[1:]}." if words and not g["passed"] else "")
    if g["outcome"] == "inconclusive":
        return head + f"not significant ({p_text}), but inconclusive: {inconclusive_words(g)}."
    if g["passed"]:
        verdict = f"within the {allowed} allowed, or not significant ({p_text})" if p_text else "within bounds"
    else:
        alpha = format_bound(g["alpha"]) if g["alpha"] is not None else ""
        verdict = f"more than the {allowed} allowed, and significant ({p_text}, alpha {alpha})"
    words = detection_words(g) if g["passed"] else None
    return head + verdict + "." + (f" {words[0].upper()}{words[1:]}." if words else "")


def short(value: float) -> str:
    """An MDE, a bound or a power in words: two decimals (two significant digits below 0.01)."""
    value = float(value)
    return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.2g}"


def detection_words(gate: Any) -> str | None:
    """What a max_drop gate's sample could not detect, when its minimum detectable effect exceeds its
    margin: ``31 questions can only detect a drop of 0.14 or more; the margin is 0.02``; when the test
    cannot reach alpha at all: ``31 questions cannot detect a drop of any size with the one-sided
    randomization test at alpha 0.05; the margin is 0.02``. None when the MDE is within the margin, or
    for a gate without these figures."""
    g = gate_fields(gate)
    if g["kind"] != "drop" or g["n"] is None or g["max_drop"] is None or g["power"] is None:
        return None
    n, margin = int(g["n"]), format_bound(g["max_drop"])
    if n < 2:
        return f"{n} question cannot detect a drop of any size; the margin is {margin}"
    if g["mde"] is None:
        alpha = format_bound(g["alpha"]) if g["alpha"] is not None else "its alpha"
        return (f"{n} questions cannot detect a drop of any size with the one-sided {g['test']} test at alpha "
                f"{alpha}; the margin is {margin}")
    if float(g["mde"]) <= float(g["max_drop"]) + TIE:
        return None
    return f"{n} questions can only detect a drop of {short(g['mde'])} or more; the margin is {margin}"


def row_detection_words(mde: Any, bound: Any, *, alpha: float = ALPHA, power: float = POWER) -> str:
    """What a comparison row's or a matrix cell's questions can detect (`detect.row_figures`, at `alpha` and
    `power`): ``smallest drop detectable 0.144 (one-sided 0.05, power 0.8); 95% upper bound of the drop
    0.133``; no MDE: too few differing pairs for any drop to be detectable."""
    seen = ("no drop of any size is detectable (too few differing pairs)" if missing(mde) else
            f"smallest drop detectable {float(mde):.3f} (one-sided {alpha:g}, power {power:g})")
    return seen + ("" if missing(bound) else f"; {1 - alpha:.0%} upper bound of the drop {float(bound):.3f}")


def inconclusive_words(gate: Any) -> str:
    """Why a gate could not tell, and how many questions would make it conclusive at the observed spread:
    ``31 questions can only detect a drop of 0.14 or more; the margin is 0.02 (power at the margin 0.10,
    below min_power 0.8); about 1,531 questions would make it conclusive at the observed spread``."""
    if (gate.get("estimate") if isinstance(gate, dict) else getattr(gate, "estimate", None)) == "corrected":
        return str(gate["reason"] if isinstance(gate, dict) else gate.reason)  # the review sample's words
    g = gate_fields(gate)
    words = detection_words(g) or f"{_count(g['n'])} questions cannot detect a drop of the margin reliably"
    at = g["power_at_margin"]
    floor = format_bound(g["min_power"]) if g["min_power"] is not None else "min_power"
    power = f" (power at the margin {short(at) if at is not None else 'n/a'}, below min_power {floor})"
    needed = g["questions_needed"]
    more = (f"; about {int(needed):,} questions would make it conclusive at the observed spread" if needed is not None
            else "; no number of questions would, at the observed spread")
    return words + power + more


def detection_line(gate: Any) -> str | None:
    """A max_drop gate's detection figures in one line, for reports: ``MDE 0.144 at power 0.8; power at
    the margin 0.02: 0.097; upper 95% bound of the drop 0.133; 1,531 questions to detect the margin at
    this spread (sd 0.315)``. None for other gates and gates recorded without them."""
    g = gate_fields(gate)
    if g["kind"] != "drop" or g["power"] is None:
        return None
    margin = format_bound(g["max_drop"]) if g["max_drop"] is not None else "n/a"
    mde = "none (no drop is detectable)" if g["mde"] is None else f"{float(g['mde']):.3f}"
    level = f"{1 - float(g['alpha']):.0%}" if g["alpha"] is not None else ""
    at = "n/a" if g["power_at_margin"] is None else f"{float(g['power_at_margin']):.3f}"
    bound = "none" if g["bound"] is None else f"{float(g['bound']):.3f}"
    needed = "not reachable" if g["questions_needed"] is None else f"{int(g['questions_needed']):,}"
    sd = "" if g["sd"] is None else f" (sd {float(g['sd']):.3f})"
    grouped = f"; {clustered_words(g['clusters'])}" if g["clusters"] is not None else ""
    return (f"MDE {mde} at power {format_bound(g['power'])}; power at the margin {margin}: {at}; upper {level} bound "
            f"of the drop {bound}; questions to detect the margin at this spread{sd}: {needed}{grouped}")


def _threshold_sentence(g: dict[str, Any], name: str, where: str, count: str) -> str:
    observed, low, high = float(g["observed"]), g["min"], g["max"]
    value = g["observed_text"] or f"{observed:.3f}"
    if g["passed"]:
        bounds = [f"{words} {format_bound(b)}" for words, b in (("at least", low), ("at most", high)) if b is not None]
        relation = f"within the bound ({' and '.join(bounds)})"
    elif low is not None and (high is None or observed < low):
        relation = f"below the minimum {format_bound(low)}"
    else:
        relation = f"above the maximum {format_bound(high) if high is not None else 'n/a'}"
    unit = ("record" if g["metric"] in OPERATIONAL_WORDS else "question") + ("" if g["n"] == 1 else "s")
    baseline = g["baseline"]
    before = "" if baseline is None else f"; baseline {format_value(baseline)}" if isinstance(baseline, (int, float)) \
        else f"; baseline {baseline}"
    aggregate = str(g["aggregate"] or "")
    how = f", {aggregate}," if aggregate not in UNMARKED_AGGREGATES else ""
    return f"{name}{how} on {where} is {value}, {relation} ({count}{unit}{na_words(g)}{before})."


__all__ = ["BOUNDS", "DETECTION", "FIELDS", "OPERATIONAL_WORDS", "detection_line", "detection_words",
           "format_bound", "format_value", "gate_fields", "gate_sentence", "na_words", "questions_behind", "inconclusive_words", "measure_words",
           "short", "slice_words", "threshold_words"]

"""The one rule of change: when a question, a mean or a gate counts as improved, regressed or unchanged.

The gain of a change is candidate - baseline in the metric's direction (baseline - candidate where
lower is better). A gain above `TIE` is an improvement, one below -`TIE` a regression, anything
within `TIE` of 0 unchanged: float noise from averaging repeats is no change. Where either side is
n/a there is no change to speak of (n/a). A question whose record is missing or failed on either
side says so first: the failure is what happened to it, whatever its values.
"""
from __future__ import annotations

import numpy as np

TIE = 1e-9
"""Values within this distance count as equal (a change within it is no change)."""

CHANGES: tuple[str, ...] = ("improved", "regressed", "unchanged")
STATUSES: tuple[str, ...] = ("regressed", "improved", "unchanged", "n/a", "missing", "failed")
"""A question's status on a metric, in the order its codes number them (`status_codes`)."""
WORSE: tuple[str, ...] = ("regressed", "missing", "failed")
"""Statuses a question can score worse with: a missing or failed record scores as a failure."""
MOVES: tuple[str, ...] = ("better", "worse", "unchanged")
"""How a mean moved, in the metric's direction."""


def gain(baseline: np.ndarray, candidate: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """candidate - baseline in the metric's direction (NaN where either is n/a)."""
    with np.errstate(invalid="ignore"):
        delta = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    return delta if higher_is_better else -delta


def change(baseline: np.ndarray, candidate: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Per pair: improved, regressed, unchanged, or n/a where either side is n/a."""
    g = gain(baseline, candidate, higher_is_better)
    with np.errstate(invalid="ignore"):
        out = np.where(g > TIE, "improved", np.where(g < -TIE, "regressed", "unchanged")).astype(object)
    out[np.isnan(g)] = "n/a"
    return out


def regressed(baseline: np.ndarray, candidate: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Per pair: whether the candidate is worse beyond `TIE` (False where either side is n/a)."""
    with np.errstate(invalid="ignore"):
        return gain(baseline, candidate, higher_is_better) < -TIE


def moved(delta: float | None, higher_is_better: bool) -> str:
    """How a mean delta moved: better, worse or unchanged (also for n/a)."""
    if delta is None or delta != delta:
        return "unchanged"
    g = delta if higher_is_better else -delta
    return "better" if g > TIE else "worse" if g < -TIE else "unchanged"


FAINT = 0.15
"""The colour strength of a change that is not significant: its direction barely hinted, never read as a finding."""


def strength(delta: float | None, higher_is_better: bool, significant: bool, span: float) -> tuple[str, float]:
    """How strongly to colour a mean delta: (`moved`, 0..1). The direction is `moved`'s; the strength
    follows the evidence, then the size: a change that is not significant (or unchanged, or n/a) reads as
    neutral (at most `FAINT`, by size), a significant one from 0.35 up to 1 as its size reaches `span` (the
    largest change shown beside it, say). One rule for every page that colours changes."""
    how = moved(delta, higher_is_better)
    if how == "unchanged":
        return how, 0.0
    size = min(1.0, abs(float(delta)) / span) if span and span > 0 else 1.0
    return how, round(0.35 + 0.65 * size, 3) if significant else round(FAINT * size, 3)


def direction(delta: float | None, higher_is_better: bool) -> int:
    """+1 better, -1 worse, 0 unchanged or n/a."""
    return {"better": 1, "worse": -1, "unchanged": 0}[moved(delta, higher_is_better)]


def worse(gain_: np.ndarray) -> np.ndarray:
    """Per question: scored worse, a gain below -`TIE` (a regression, or a lower value because a
    record is missing or failed); False for n/a."""
    with np.errstate(invalid="ignore"):
        return np.asarray(gain_, dtype=float) < -TIE


def worst_first(gain_: np.ndarray, critical: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """The order every list of questions is read in, worst first, as indexes: the questions that
    scored worse (`worse`) first, critical ones before the others, each by size of the drop; then
    the rest by gain, lowest first; n/a last; `tie` (suite order) breaks ties."""
    g = np.asarray(gain_, dtype=float)
    bad = worse(g)
    group = np.where(np.isnan(g), 3, np.where(bad, np.where(np.asarray(critical, dtype=bool), 0, 1), 2))
    return np.lexsort((np.asarray(tie), np.where(np.isnan(g), 0.0, g), group))


def record_codes(missing: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """Per question, the code into `STATUSES` of a missing (first) or failed record; -1: neither."""
    return np.where(missing, np.int8(STATUSES.index("missing")), np.where(
        failed, np.int8(STATUSES.index("failed")), np.int8(-1))).astype(np.int8)


def status_codes(baseline: np.ndarray, candidate: np.ndarray, higher_is_better: bool,
                 record: np.ndarray | None = None) -> np.ndarray:
    """Per question, its status on one metric as a code into `STATUSES`, first match wins: missing >
    failed (`record`, from `record_codes`) > n/a > improved / regressed > unchanged."""
    g = gain(baseline, candidate, higher_is_better)
    with np.errstate(invalid="ignore"):
        up, down = (g > TIE).view(np.int8), (g < -TIE).view(np.int8)
    codes = np.int8(STATUSES.index("unchanged")) - up - np.int8(2) * down  # improved 1, regressed 0, unchanged 2
    np.copyto(codes, np.int8(STATUSES.index("n/a")), where=np.isnan(g))
    if record is not None:
        np.copyto(codes, record, where=record >= 0)
    return codes


__all__ = ["CHANGES", "FAINT", "MOVES", "STATUSES", "TIE", "WORSE", "change", "direction", "gain", "moved", "record_codes", "strength",
           "regressed", "status_codes", "worse", "worst_first"]

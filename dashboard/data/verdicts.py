"""Recorded verdicts (table `verdicts`, written by `ragslice compare --policy`) as the pages show
them: the latest for a comparison, the newest of all, the history of a suite and of a baseline's
candidates, and a verdict's gates as a table. Every read is `scoring.decide.verdicts`'s.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from scoring.decide import verdicts as scoring_verdicts
from scoring.decide.sides import Side
from scoring.decide.verdicts import HISTORY_COLUMNS, SUITE_VERDICT_COLUMNS

from .database import meta, read


def latest_verdict(suite: str, base: Side, cand: Side) -> dict[str, Any] | None:
    """The newest verdict `ragslice compare --policy` recorded for exactly these runs
    (`scoring.decide.verdicts.read_latest_verdict`: `gates` and `warnings` decoded), with the last
    refresh's time (`refreshed_at`) and whether it came after the verdict (`refreshed_after`,
    `scoring.decide.verdicts.refreshed_after`); None when there is none. The dashboard only reads it:
    the statistics and gates live in `scoring.decide.comparison` / `scoring.decide.policy`."""
    out = read(scoring_verdicts.read_latest_verdict, suite, tuple(base.run_ids), tuple(cand.run_ids))
    if out is None:
        return None
    out["refreshed_at"] = meta().get("refreshed_at")
    out["refreshed_after"] = scoring_verdicts.refreshed_after(out["refreshed_at"], out["created_at"])
    return out


def newest_verdict() -> tuple[str, str, str] | None:
    """(suite, baseline, candidate) of the newest recorded verdict, names as `ragslice compare` took
    them (`scoring.decide.verdicts.read_newest_verdict`); None when none was recorded. The sidebar
    opens on this comparison when the URL names none."""
    return read(scoring_verdicts.read_newest_verdict)


def verdict_history(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Every verdict recorded for the suite, newest first, and whether each was recorded for exactly
    these runs (`scoring.decide.verdicts.read_verdict_history` states the columns, `HISTORY_COLUMNS`)."""
    return read(scoring_verdicts.read_verdict_history, suite, tuple(base.run_ids), tuple(cand.run_ids))


def recorded_verdicts(suite: str, baseline: Side) -> pd.DataFrame:
    """The newest recorded verdict of each candidate against exactly the baseline's runs: candidate
    (name as recorded), verdict, policy_name, created_at (`scoring.decide.verdicts.read_recorded_verdicts`)."""
    return read(scoring_verdicts.read_recorded_verdicts, suite, tuple(baseline.run_ids))


def suite_verdicts(suite: str) -> pd.DataFrame:
    """Every verdict recorded for the suite, oldest first, with the candidate's runs
    (`scoring.decide.verdicts.read_suite_verdicts`, `SUITE_VERDICT_COLUMNS`); empty when none was recorded."""
    return read(scoring_verdicts.read_suite_verdicts, suite)


GATE_COLUMNS = ("name", "passed", "observed", "threshold", "n", "reason", "metric", "slice", "aggregate", "baseline",
                "p_value", "warning", "line")
"""Display order of a verdict's gate table (live or recorded)."""


def gates_frame(gates: Any) -> pd.DataFrame:
    """A verdict's gates as a table in `GATE_COLUMNS` order: from `scoring.decide.gates.GateResult`s (a
    live verdict) or the decoded JSON of a recorded one (a DataFrame). `observed` is the text every
    rendering shows (`GateResult.observed_text`: never rounded across its threshold) where the
    verdict holds it."""
    from dataclasses import asdict

    frame = gates if isinstance(gates, pd.DataFrame) else pd.DataFrame([asdict(g) for g in gates])
    if "observed_text" in frame.columns:
        frame = frame.assign(observed=frame["observed_text"].where(frame["observed_text"].notna(),
                                                                   frame["observed"].map(_plain_number)))
    return frame[[c for c in GATE_COLUMNS if c in frame.columns]].reset_index(drop=True)


def _plain_number(value: Any) -> str:
    return "n/a" if value is None or value != value else repr(float(value))


__all__ = ["GATE_COLUMNS", "HISTORY_COLUMNS", "SUITE_VERDICT_COLUMNS", "gates_frame", "latest_verdict", "newest_verdict",
           "recorded_verdicts", "suite_verdicts", "verdict_history"]

"""Recorded verdicts (table `verdicts`, written by `ragslice compare --policy`): the latest for a
comparison, the newest of all, the history of a suite and of a baseline's candidates, and a
verdict's gates as a table.
"""
from __future__ import annotations

import json
from typing import Any

import pandas as pd

from scoring.decide.sides import Side

from .database import catalog, has, meta, query


def latest_verdict(suite: str, base: Side, cand: Side) -> dict[str, Any] | None:
    """The newest verdict `ragslice compare --policy` recorded for exactly these runs (table
    `verdicts`, see docs/schema.md), with `gates` and `warnings` decoded; None when there is none.
    The dashboard only reads it: the statistics and gates live in `scoring.decide.comparison` / `scoring.decide.policy`."""
    if "verdicts" not in catalog()[3]:
        return None
    rows = query(
        """SELECT * EXCLUDE (policy_text)
           FROM verdicts
           WHERE suite = ? AND list_sort(baseline_runs) = list_sort(?::VARCHAR[])
             AND list_sort(candidate_runs) = list_sort(?::VARCHAR[])
           ORDER BY created_at DESC LIMIT 1""",
        [suite, list(base.run_ids), list(cand.run_ids)],
    )
    if rows.empty:
        return None
    out = rows.iloc[0].to_dict()
    out["gates"] = pd.DataFrame(json.loads(out["gates"]))
    out["warnings"] = list(json.loads(out["warnings"]))
    out["refreshed_at"] = meta().get("refreshed_at")
    out["refreshed_after"] = _later(out["refreshed_at"], out["created_at"])
    return out


def _later(refreshed_at: Any, created_at: Any) -> bool:
    """Whether the last refresh (ISO text, UTC) happened after the verdict (naive UTC timestamp)."""
    try:
        refreshed = pd.Timestamp(refreshed_at)
        created = pd.Timestamp(created_at)
    except (TypeError, ValueError):
        return False
    if refreshed.tzinfo is not None:
        refreshed = refreshed.tz_convert("UTC").tz_localize(None)
    if created.tzinfo is not None:
        created = created.tz_convert("UTC").tz_localize(None)
    return bool(refreshed > created)


def newest_verdict() -> tuple[str, str, str] | None:
    """(suite, baseline, candidate) of the newest recorded verdict, names as `ragslice compare` took
    them; None when none was recorded. The sidebar opens on this comparison when the URL names none."""
    if "verdicts" not in catalog()[3]:
        return None
    rows = query("SELECT suite, baseline, candidate FROM verdicts ORDER BY created_at DESC LIMIT 1")
    if rows.empty:
        return None
    return tuple(str(v) for v in rows.iloc[0])  # type: ignore[return-value]


HISTORY_COLUMNS = ("created_at", "baseline", "candidate", "policy_name", "policy_hash", "verdict",
                   "verdict_without_disputed", "this_comparison")


def verdict_history(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Every verdict recorded for the suite (table `verdicts`), newest first: when (UTC), the sides
    by name, the policy's name and sha256, the verdict, the verdict without disputed questions, and
    `this_comparison` (recorded for exactly these runs). Empty when none was recorded."""
    if "verdicts" not in catalog()[3]:
        return pd.DataFrame(columns=list(HISTORY_COLUMNS))
    return query(
        """SELECT created_at, baseline, candidate, policy_name, policy_hash, verdict, verdict_without_disputed,
                  list_sort(baseline_runs) = list_sort($base::VARCHAR[])
                    AND list_sort(candidate_runs) = list_sort($cand::VARCHAR[]) AS this_comparison
           FROM verdicts WHERE suite = $suite ORDER BY created_at DESC, verdict_id""",
        {"suite": suite, "base": list(base.run_ids), "cand": list(cand.run_ids)},
    )


GATE_COLUMNS = ("name", "passed", "observed", "threshold", "n", "reason", "metric", "slice", "aggregate", "baseline",
                "p_value", "warning", "line")
"""Display order of a verdict's gate table (live or recorded)."""


def gates_frame(gates: Any) -> pd.DataFrame:
    """A verdict's gates as a table in `GATE_COLUMNS` order: from `scoring.decide.policy.GateResult`s (a
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


def recorded_verdicts(suite: str, baseline: Side) -> pd.DataFrame:
    """The newest recorded verdict (table `verdicts`) of each candidate against exactly the baseline's
    runs: candidate (name as recorded), verdict, policy_name, created_at. Empty when none."""
    if not has("verdicts"):
        return pd.DataFrame(columns=["candidate", "verdict", "policy_name", "created_at"])
    return query(
        """SELECT candidate, arg_max(verdict, created_at) AS verdict, arg_max(policy_name, created_at) AS policy_name,
                  max(created_at) AS created_at
           FROM verdicts WHERE suite = ? AND list_sort(baseline_runs) = list_sort(?::VARCHAR[])
           GROUP BY candidate ORDER BY candidate""",
        [suite, list(baseline.run_ids)])


SUITE_VERDICT_COLUMNS = ("created_at", "baseline", "candidate", "candidate_runs", "policy_name", "verdict",
                         "verdict_without_disputed")


def suite_verdicts(suite: str) -> pd.DataFrame:
    """Every verdict recorded for the suite (table `verdicts`), oldest first, with the candidate's
    runs; empty when none was recorded."""
    if not has("verdicts"):
        return pd.DataFrame(columns=list(SUITE_VERDICT_COLUMNS))
    return query(
        """SELECT created_at, baseline, candidate, candidate_runs, policy_name, verdict, verdict_without_disputed
           FROM verdicts WHERE suite = ? ORDER BY created_at, verdict_id""", [suite])

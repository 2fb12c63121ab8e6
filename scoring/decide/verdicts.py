"""Recorded decisions: the verdicts `ragslice compare --policy` stores, and the log of comparisons made
on each suite version's held-out questions.

Both are the only rows written outside a refresh: `record` appends them to the live file in one short
transaction, under the writer lock refreshes take (`scoring.store.database`). A comparison is its
runs, its policy text and its labels (`comparison_key`): the held-out budget counts comparisons, not
invocations. The tables are declared in `scoring.store.schema` (`VERDICT_TABLES`).

The `read_*` functions are every read of the recorded verdicts (the commands' and the dashboard's):
a database without a `verdicts` table has recorded none. A verdict was recorded for a comparison when
each side's runs are the comparison's, in any order (`_same_runs`).
"""
from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pandas as pd

from ..store.database import Database
from ..store.schema import VERDICT_TABLES, table_names
from .policy import Policy
from .gates import Verdict


class Decided(Protocol):
    """What `record` stores of a comparison (`scoring.decide.comparison.Comparison` is one)."""

    baseline: Any
    candidate: Any
    suite: str
    suite_version: str
    labels_hash: str
    verdict: Verdict
    policy: Policy | None
    heldout: Any
    warnings: tuple[str, ...]


def comparison_key(baseline_runs: Sequence[str], candidate_runs: Sequence[str], policy_hash: str | None,
                   labels_hash: str) -> str:
    """What makes two comparisons the same for the held-out budget: the same runs on each side, the
    same policy text and the same labels."""
    payload = json.dumps([sorted(baseline_runs), sorted(candidate_runs), policy_hash, labels_hash])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class HeldoutLog:
    """The comparisons logged on one suite version's held-out set: their keys, and how many rows
    carry none (logged by an older version, each counted as a comparison of its own)."""

    keys: frozenset[str] = frozenset()
    unkeyed: int = 0

    def previous(self, key: str) -> int:
        """Distinct comparisons logged other than `key`."""
        return self.unkeyed + len(self.keys - {key})


def read_heldout_log(con: duckdb.DuckDBPyConnection, suite: str, version: str, tables: set[str] | None = None
                 ) -> HeldoutLog:
    if "heldout_log" not in (table_names(con) if tables is None else tables):
        return HeldoutLog()
    columns = {name for (name,) in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'heldout_log' "
        "AND table_catalog = current_database()").fetchall()}
    if "comparison_key" not in columns:
        rows = con.execute("SELECT count(*) FROM heldout_log WHERE suite = ? AND suite_version = ?",
                           [suite, version]).fetchall()
        return HeldoutLog(frozenset(), int(rows[0][0]))
    keys, unkeyed = con.execute(
        "SELECT coalesce(list(DISTINCT comparison_key) FILTER (WHERE comparison_key IS NOT NULL), []), "
        "count(*) FILTER (WHERE comparison_key IS NULL) FROM heldout_log WHERE suite = ? AND suite_version = ?",
        [suite, version]).fetchall()[0]
    return HeldoutLog(frozenset(keys), int(unkeyed))


def read_labels_hash(con: duckdb.DuckDBPyConnection, suite: str) -> str:
    """The suite's effective labels as scored (`suites.labels_hash`: its files' labels, reviews applied)."""
    found = con.execute("SELECT labels_hash FROM suites WHERE suite = ?", [suite]).fetchall()
    return str(found[0][0]) if found else ""


def _same_runs(column: str, param: str) -> str:
    """SQL: whether the run list in `column` holds the runs of the bound list `$param`, in any order."""
    return f"list_sort({column}) = list_sort(${param}::VARCHAR[])"


def _recorded(con: duckdb.DuckDBPyConnection, tables: set[str] | None) -> bool:
    """Whether the database has a `verdicts` table (none: nothing was recorded)."""
    return "verdicts" in (table_names(con) if tables is None else tables)


def read_earlier_verdicts(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, tables: set[str] | None = None
                      ) -> tuple[tuple[str, str, str, datetime], ...]:
    """(policy_name, policy_hash, verdict, created_at) of every verdict recorded for these side names, newest first."""
    if not _recorded(con, tables):
        return ()
    rows = con.execute(
        "SELECT policy_name, policy_hash, verdict, created_at FROM verdicts WHERE baseline = ? AND candidate = ? "
        "ORDER BY created_at DESC", [baseline, candidate]).fetchall()
    return tuple(tuple(r) for r in rows)  # type: ignore[misc]


def policy_edits(earlier: Sequence[tuple[str, str, str, datetime]], baseline: str, candidate: str,
                  policy: Policy) -> list[str]:
    """Warnings when a policy of this name judged this pair before with different text."""
    for name, h, v, t in earlier:
        if name == policy.name and h != policy.sha256:
            return [f"policy {policy.name!r} judged {baseline} vs {candidate} before with different text "
                    f"(sha256 {h[:12]}, verdict {v}, {t:%Y-%m-%d %H:%M} UTC): a policy edited after its results were "
                    "seen is no longer declared in advance"]
    return []


def create_verdict_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create `verdicts` and `heldout_log` if absent, and add the columns a newer version logs (read-write
    connection)."""
    for name, columns in VERDICT_TABLES.items():
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns}\n)")
    con.execute("ALTER TABLE heldout_log ADD COLUMN IF NOT EXISTS comparison_key VARCHAR")
    con.execute("ALTER TABLE verdicts ADD COLUMN IF NOT EXISTS labels_hash VARCHAR")


def record(db: Path, comparison: Decided, *, wait_seconds: float = 5.0) -> str | None:
    """Store the verdict (when a policy was given) and the held-out use, in one short transaction.

    Returns the new verdict_id, or None when no verdict was stored. Writes go to the live file under
    the writer lock that refreshes also take, so a refresh never copies a half-written log.
    """
    v = comparison.verdict
    store_verdict = comparison.policy is not None
    if not store_verdict and comparison.heldout is None:
        return None
    verdict_id = uuid.uuid4().hex if store_verdict else None
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with Database(db).appending(wait_seconds=wait_seconds, what="store the verdict") as con:
        try:
            create_verdict_tables(con)
            con.execute("BEGIN TRANSACTION")
            if store_verdict and comparison.policy is not None:
                p = comparison.policy
                con.execute(
                    "INSERT INTO verdicts (verdict_id, created_at, baseline, candidate, baseline_runs, candidate_runs, "
                    "suite, suite_version, policy_name, policy_hash, policy_text, verdict, gates, "
                    "verdict_without_disputed, warnings, labels_hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [verdict_id, now, comparison.baseline.name, comparison.candidate.name,
                     list(comparison.baseline.run_ids), list(comparison.candidate.run_ids), comparison.suite,
                     comparison.suite_version, p.name, p.sha256, p.text, v.verdict,
                     json.dumps([g.to_dict() for g in v.gates]),
                     v.disputed.verdict if v.disputed else None,
                     json.dumps(list(comparison.warnings) + list(v.warnings)), comparison.labels_hash],
                )
            if comparison.heldout is not None:
                con.execute(
                    "INSERT INTO heldout_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [now, comparison.suite, comparison.suite_version, comparison.baseline.name,
                     comparison.candidate.name, comparison.policy.sha256 if comparison.policy else None,
                     comparison.heldout.n_questions, comparison.heldout.key],
                )
            con.execute("COMMIT")
        except BaseException:
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass
            raise
    return verdict_id


def read_verdicts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Stored verdicts, newest first (empty when none was stored yet)."""
    if not _recorded(con, None):
        return pd.DataFrame(columns=["verdict_id", "created_at", "baseline", "candidate", "suite", "suite_version",
                                     "policy_name", "policy_hash", "verdict"])
    return con.execute(
        "SELECT verdict_id, created_at, baseline, candidate, suite, suite_version, policy_name, policy_hash, "
        "verdict, verdict_without_disputed FROM verdicts ORDER BY created_at DESC"
    ).df()


def read_latest_verdict(con: duckdb.DuckDBPyConnection, suite: str, baseline_runs: Sequence[str],
                        candidate_runs: Sequence[str], tables: set[str] | None = None) -> dict[str, Any] | None:
    """The newest verdict recorded for exactly these runs on the suite, every column but `policy_text`,
    with `gates` decoded as a DataFrame (one row per gate) and `warnings` as a list; None when none was
    recorded."""
    if not _recorded(con, tables):
        return None
    rows = con.execute(
        f"""SELECT * EXCLUDE (policy_text) FROM verdicts
            WHERE suite = $suite AND {_same_runs("baseline_runs", "base")} AND {_same_runs("candidate_runs", "cand")}
            ORDER BY created_at DESC LIMIT 1""",
        {"suite": suite, "base": list(baseline_runs), "cand": list(candidate_runs)}).df()
    if rows.empty:
        return None
    out = rows.iloc[0].to_dict()
    out["gates"] = pd.DataFrame(json.loads(out["gates"]))
    out["warnings"] = list(json.loads(out["warnings"]))
    return out


def read_newest_verdict(con: duckdb.DuckDBPyConnection, tables: set[str] | None = None) -> tuple[str, str, str] | None:
    """(suite, baseline, candidate) of the newest recorded verdict, the sides named as `ragslice compare`
    took them; None when none was recorded."""
    if not _recorded(con, tables):
        return None
    rows = con.execute("SELECT suite, baseline, candidate FROM verdicts ORDER BY created_at DESC LIMIT 1").fetchall()
    return tuple(str(v) for v in rows[0]) if rows else None  # type: ignore[return-value]


HISTORY_COLUMNS: tuple[str, ...] = ("created_at", "baseline", "candidate", "policy_name", "policy_hash", "verdict",
                                    "verdict_without_disputed", "this_comparison")
"""The columns of `read_verdict_history`."""


def read_verdict_history(con: duckdb.DuckDBPyConnection, suite: str, baseline_runs: Sequence[str],
                         candidate_runs: Sequence[str], tables: set[str] | None = None) -> pd.DataFrame:
    """Every verdict recorded for the suite, newest first (`HISTORY_COLUMNS`): when (UTC), the sides by
    name, the policy's name and sha256, the verdict, the verdict without disputed questions, and
    `this_comparison` (recorded for exactly these runs). Empty when none was recorded."""
    if not _recorded(con, tables):
        return pd.DataFrame(columns=list(HISTORY_COLUMNS))
    return con.execute(
        f"""SELECT created_at, baseline, candidate, policy_name, policy_hash, verdict, verdict_without_disputed,
                   {_same_runs("baseline_runs", "base")} AND {_same_runs("candidate_runs", "cand")} AS this_comparison
            FROM verdicts WHERE suite = $suite ORDER BY created_at DESC, verdict_id""",
        {"suite": suite, "base": list(baseline_runs), "cand": list(candidate_runs)}).df()


RECORDED_COLUMNS: tuple[str, ...] = ("candidate", "verdict", "policy_name", "created_at")
"""The columns of `read_recorded_verdicts`."""


def read_recorded_verdicts(con: duckdb.DuckDBPyConnection, suite: str, baseline_runs: Sequence[str],
                           tables: set[str] | None = None) -> pd.DataFrame:
    """The newest verdict recorded of each candidate against exactly these baseline runs
    (`RECORDED_COLUMNS`: the candidate named as recorded), by candidate name. Empty when none."""
    if not _recorded(con, tables):
        return pd.DataFrame(columns=list(RECORDED_COLUMNS))
    return con.execute(
        f"""SELECT candidate, arg_max(verdict, created_at) AS verdict, arg_max(policy_name, created_at) AS policy_name,
                   max(created_at) AS created_at
            FROM verdicts WHERE suite = $suite AND {_same_runs("baseline_runs", "base")}
            GROUP BY candidate ORDER BY candidate""",
        {"suite": suite, "base": list(baseline_runs)}).df()


SUITE_VERDICT_COLUMNS: tuple[str, ...] = ("created_at", "baseline", "candidate", "candidate_runs", "policy_name",
                                          "verdict", "verdict_without_disputed")
"""The columns of `read_suite_verdicts`."""


def read_suite_verdicts(con: duckdb.DuckDBPyConnection, suite: str, tables: set[str] | None = None) -> pd.DataFrame:
    """Every verdict recorded for the suite, oldest first (`SUITE_VERDICT_COLUMNS`, with the candidate's
    runs); empty when none was recorded."""
    if not _recorded(con, tables):
        return pd.DataFrame(columns=list(SUITE_VERDICT_COLUMNS))
    return con.execute(
        """SELECT created_at, baseline, candidate, candidate_runs, policy_name, verdict, verdict_without_disputed
           FROM verdicts WHERE suite = $suite ORDER BY created_at, verdict_id""", {"suite": suite}).df()


def refreshed_after(refreshed_at: Any, created_at: Any) -> bool:
    """Whether the database was refreshed (`refreshed_at`, ISO text, UTC) after the verdict was recorded
    (`created_at`, a naive UTC timestamp): the scores it was decided on may have changed since. False
    when either time cannot be read."""
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


__all__ = ["HISTORY_COLUMNS", "RECORDED_COLUMNS", "SUITE_VERDICT_COLUMNS", "Decided", "HeldoutLog", "comparison_key",
           "create_verdict_tables", "policy_edits", "read_earlier_verdicts", "read_heldout_log", "read_labels_hash",
           "read_latest_verdict", "read_newest_verdict", "read_recorded_verdicts", "read_suite_verdicts",
           "read_verdict_history", "read_verdicts", "record", "refreshed_after"]

"""The two sides of a comparison: which runs they are, and whether they may be set side by side.

A side is one run or a group of repeats (runs sharing the manifest's ``group``). Two sides may be
compared only on the same suite, suite version and corpus version, and without sharing a run
(`refusals`); other differences (rubric, cutoff, repeats that disagree, records that are missing or
failed, few questions) are caveats (`compatibility`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import duckdb
import pandas as pd

from ..errors import invalid
from ..store.schema import table_names

FEW_QUESTIONS = 30
"""Below this many questions, one question moves every average by more than 3 percentage points."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a single run or the runs of one group (ordered by repeat); a
    group's per-question value is the mean over its repeats that score the question."""

    name: str
    kind: Literal["run", "group"]
    run_ids: tuple[str, ...]
    suite: str = ""
    suite_version: str = ""
    corpus_version: str = ""
    k: tuple[int, ...] = ()
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def label(self) -> str:
        if self.kind == "run":
            return self.name
        return f"{self.name} (group: mean over {len(self.run_ids)} repeats)"

    @property
    def spec(self) -> str:
        """The side as `ragslice compare` names it, its kind forced (``run:A``, ``group:c``), so that a
        run and a group of the same name cannot be confused."""
        return f"{self.kind}:{self.name}"


def read_runs(con: duckdb.DuckDBPyConnection, tables: set[str] | None = None) -> pd.DataFrame:
    """The `runs` table's manifest columns, one row per run (ValidationError: no ragslice database)."""
    if not {"runs", "question_scores", "questions"} <= (table_names(con) if tables is None else tables):
        raise invalid("not a ragslice database (no runs, questions or question_scores table); "
                      "create it with `ragslice refresh WORKSPACE --db FILE`")
    return con.execute(
        "SELECT run_id, suite, suite_version, corpus_version, rubric_version, k, run_group, repeat, "
        "CAST(manifest AS VARCHAR) AS manifest FROM runs ORDER BY run_id"
    ).df()


def resolve_side(runs: pd.DataFrame, name: str, role: str) -> Side:
    """A run ID or a group name (``run:ID`` / ``group:NAME`` force one reading).

    A bare name that is both a run ID and the group of other runs is ambiguous and refused.
    """
    forced, sep, rest = name.partition(":")
    if sep and forced in ("run", "group") and rest:
        kinds, key = (forced,), rest
    else:
        kinds, key = ("run", "group"), name
    as_run = runs[runs["run_id"] == key] if "run" in kinds else runs.iloc[0:0]
    as_group = runs[runs["run_group"] == key] if "group" in kinds else runs.iloc[0:0]
    if len(as_run) and len(as_group) and set(as_group["run_id"]) != set(as_run["run_id"]):
        raise invalid(f"{role} {key!r} is both a run and the group of other runs; write run:{key} or group:{key}",
                      role, name)
    if len(as_run):
        chosen, kind = as_run, "run"
    elif len(as_group):
        chosen, kind = as_group.sort_values(["repeat", "run_id"], na_position="last"), "group"
    else:
        groups = sorted(g for g in runs["run_group"].dropna().unique())
        listed = ", ".join(runs["run_id"].head(20)) + (" ..." if len(runs) > 20 else "")
        extra = f"; groups: {', '.join(groups[:20])}" if groups else ""
        raise invalid(f"no run or group of that name in the database (runs: {listed or 'none'}{extra})", role, name)
    for column, what in (("suite", "suite"), ("suite_version", "suite version"), ("corpus_version", "corpus version")):
        found = sorted(chosen[column].unique())
        if len(found) > 1:
            raise invalid(f"the runs of group {key!r} are on different {what}s ({', '.join(found)}); "
                          "repeats must share the suite, its version and the corpus version", role, name)
    return _side(chosen, key, kind)  # type: ignore[arg-type]


def _side(chosen: pd.DataFrame, name: str, kind: str) -> Side:
    first = chosen.iloc[0]
    return Side(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        run_ids=tuple(chosen["run_id"]),
        suite=first["suite"],
        suite_version=first["suite_version"],
        corpus_version=first["corpus_version"],
        k=tuple(int(v) for v in chosen["k"]),
        manifests={r: json.loads(m) if isinstance(m, str) else m for r, m in zip(chosen["run_id"], chosen["manifest"])},
    )


def sides_of(runs: pd.DataFrame) -> list[Side]:
    """Every run of a runs frame (`read_runs` rows of one suite, oldest first), then every group of
    repeats by name; a name shared by a run and a group refers to the run."""
    out = [_side(runs.iloc[[i]], r, "run") for i, r in enumerate(runs["run_id"])]
    taken = set(runs["run_id"])
    grouped = runs[runs["run_group"].notna()].sort_values(["run_group", "repeat", "run_id"], na_position="last")
    for group, members in grouped.groupby("run_group", sort=True):
        if group not in taken:
            out.append(_side(members, str(group), "group"))
    return out


def refusals(baseline: Side, candidate: Side, *, same_runs_allowed: bool = False) -> list[str]:
    """Why two sides may not be compared: different suites, suite versions or corpus versions (the
    scores were taken against different questions, labels or documents), or runs on both sides."""
    out = []
    for attr, what in (("suite", "suite"), ("suite_version", "suite version"), ("corpus_version", "corpus version")):
        b, c = getattr(baseline, attr), getattr(candidate, attr)
        if b != c:
            out.append(f"baseline {baseline.name!r} is on {what} {b!r} and candidate {candidate.name!r} on {c!r}: "
                       f"scores against different questions, labels or documents are not comparable; compare "
                       f"runs recorded against the same {what}")
    shared = sorted(set(baseline.run_ids) & set(candidate.run_ids))
    if shared and not same_runs_allowed:
        out.append(f"baseline and candidate share runs ({', '.join(shared)}); a comparison needs two different "
                   "sides")
    return out


def check_comparable(baseline: Side, candidate: Side) -> None:
    """Refuse sides that `refusals` refuses (ValidationError naming the candidate)."""
    found = refusals(baseline, candidate)
    if found:
        raise invalid(found[0], "candidate", candidate.name)


@dataclass(frozen=True)
class Compatibility:
    """`refusals`: why the comparison is meaningless; `warnings`: caveats. Plain sentences."""

    refusals: tuple[str, ...]
    warnings: tuple[str, ...]


def compatibility(runs: pd.DataFrame, suite_version: str, n_questions: int, baseline: Side,
                  candidate: Side) -> Compatibility:
    """Refusals (as `check_comparable` raises them) and caveats for two sides, from the runs frame
    of their suite (`read_runs` columns, `n_missing` and `n_failed` included) and the suite's current
    version and size: rubric or cutoff differences, runs recorded against an older suite version,
    repeats that disagree, missing or failed records, few questions, the same runs on both sides."""
    table = runs.set_index("run_id")
    members = {"baseline": baseline, "candidate": candidate}
    absent = [r for s in members.values() for r in s.run_ids if r not in table.index]
    if absent:
        return Compatibility((f"Run(s) {', '.join(absent)} are not runs of this suite.",), ())
    refused = refusals(baseline, candidate, same_runs_allowed=True)
    warnings: list[str] = []
    picked = table.loc[[r for s in members.values() for r in s.run_ids]]
    for column, words in (("rubric_version", "rubric versions"), ("k", "context cutoffs (k)")):
        if picked[column].astype(str).nunique() > 1:
            detail = "; ".join(f"{r}: {v}" for r, v in picked[column].items())
            warnings.append(f"The runs use different {words} ({detail}); cutoff and answer metrics are not like "
                            "for like.")
    stale = picked[picked["suite_version"] != suite_version]
    if len(stale):
        warnings.append(f"Run(s) {', '.join(stale.index)} were recorded against suite version "
                        f"{', '.join(sorted(set(stale['suite_version'])))}; the suite is now version {suite_version}.")
    for role, side in members.items():
        rows = table.loc[list(side.run_ids)]
        if side.kind == "group":
            differing = [f for f in ("k", "model", "prompt_revision", "code_revision", "retrieval", "rubric_version")
                         if f in rows and rows[f].astype(str).nunique() > 1]
            if differing:
                warnings.append(f"The {role} group {side.name} has repeats that differ in {', '.join(differing)}.")
        missing, failed = int(rows["n_missing"].sum()), int(rows["n_failed"].sum())
        if missing or failed:
            parts = [f"{missing} question{'' if missing == 1 else 's'} with no record" if missing else "",
                     f"{failed} failed record{'' if failed == 1 else 's'}" if failed else ""]
            across = " across its runs" if side.kind == "group" else ""
            warnings.append(f"The {role} {side.name} has {' and '.join(p for p in parts if p)}{across}; each counts "
                            "as a failure (0) in every denominator, not as n/a.")
    if n_questions < FEW_QUESTIONS:
        warnings.append(f"Only {n_questions} questions: one question moves every average by at least "
                        f"{100 / n_questions:.0f} percentage points. Read the per-question table rather than the "
                        "averages.")
    if baseline.run_ids == candidate.run_ids:
        warnings.append("Baseline and candidate are the same run(s): every delta is 0.")
    return Compatibility(tuple(refused), tuple(warnings))


__all__ = ["FEW_QUESTIONS", "Compatibility", "Side", "check_comparable", "compatibility", "read_runs", "refusals",
           "resolve_side", "sides_of"]

"""Runs and releases: each run's totals (`scoring.store.summaries`), how a group's repeats spread and
the history of releases (`scoring.decide.releases`), what two sides' manifests configure differently,
and the standing baseline.
"""
from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import pandas as pd

from scoring.decide import manifests as manifests_
from scoring.decide import releases as scoring_releases
from scoring.decide.sides import Side
from scoring.store.summaries import RUN_TOTAL_COLUMNS, run_totals_sql

from .database import METRIC_KEYS, has, query, runs
from .verdicts import suite_verdicts


def run_stats(suite: str) -> pd.DataFrame:
    """Per run of the suite: questions, records, missing, failed, latency p50 / p95 (ms, over
    records with a latency), total and mean cost (USD, over records with a cost), and the macro mean
    of every metric (`scoring.store.summaries.run_totals_sql`: read from `run_totals` when present)."""
    source = "run_totals" if has("run_totals") else f"({run_totals_sql()})"
    columns = ", ".join(f"t.{c}" for c in RUN_TOTAL_COLUMNS)
    sql = f"""SELECT r.run_id, r.run_group, r.repeat, r.created_at, r.k, r.model, r.n_records AS records, {columns}
FROM runs r LEFT JOIN {source} t USING (run_id)
WHERE r.suite = $suite ORDER BY r.created_at, r.run_id"""
    return query(sql, {"suite": suite})


def group_spread(suite: str) -> pd.DataFrame:
    """Per group of repeats and metric: the runs, and the lowest, mean and highest macro mean over
    the repeats (how much one configuration moves from run to run; `scoring.decide.releases.group_spread`)."""
    return scoring_releases.group_spread(run_stats(suite), METRIC_KEYS)


def manifest_diff(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Manifest fields whose value differs between the sides (field, baseline, candidate), by
    `scoring.decide.manifests.manifest_diff`: a side whose repeats disagree on a field shows every
    distinct value, joined by ' | '; an empty object is the value `{}`, apart from a missing field."""
    table = runs(suite).set_index("run_id")

    def manifests(side: Side) -> list[dict[str, Any]]:
        return [json.loads(table.loc[r, "manifest"]) for r in side.run_ids if r in table.index]

    rows = manifests_.manifest_diff(manifests(base), manifests(cand))
    return pd.DataFrame(rows, columns=["field", "baseline", "candidate"])


def configuration_changes(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """`manifest_diff` without the bookkeeping fields (`scoring.decide.manifests.is_setting`): what was
    configured differently."""
    diff = manifest_diff(suite, base, cand)
    return diff[diff["field"].map(manifests_.is_setting)].reset_index(drop=True)


# -- the standing baseline and the history of releases --------------------------------------------


def pinned_baseline(suite: str) -> str | None:
    """The side name pinned as the suite's standing baseline (table `baseline_pins`, published by a
    refresh from the workspace's `suites/<suite>/baseline.jsonl`: the last line wins), or None."""
    if not has("baseline_pins"):
        return None
    found = query("SELECT baseline FROM baseline_pins WHERE suite = ? ORDER BY line DESC LIMIT 1", [suite])
    return None if found.empty else str(found.iloc[0, 0])


def marked_releases(suite: str) -> set[str]:
    """The suite's runs marked as releases (`scoring.decide.releases.marked_releases`): a manifest's
    `release`, a side ever pinned as the standing baseline, a side or run of a recorded verdict."""
    pinned = query("SELECT baseline FROM baseline_pins WHERE suite = ?", [suite])["baseline"].tolist() \
        if has("baseline_pins") else []
    verdicts = suite_verdicts(suite)
    compared = [*verdicts["baseline"].astype(str), *verdicts["candidate"].astype(str),
                *(str(r) for found in verdicts["candidate_runs"] for r in found)]
    return scoring_releases.marked_releases(runs(suite).set_index("run_id")["manifest"], pinned, compared)


def release_history(suite: str, only: Collection[str] | None = None) -> pd.DataFrame:
    """One row per release of the suite, oldest first (`scoring.decide.releases.release_history`: a
    run's release is its manifest's `release` field, else its group, else the run itself): release,
    created_at (the earliest manifest time of its runs, UTC), runs, groups, and per metric the mean over
    its runs of each run's macro mean (`run_stats`). `only`: the runs to count (None: every run)."""
    return scoring_releases.release_history(run_stats(suite), runs(suite).set_index("run_id")["manifest"],
                                            METRIC_KEYS, only)

"""Run-level figures pooled over runs: how much a group's repeats spread, and each release's figures.

Both start from the runs' totals (one row per run: `run_id`, `run_group`, `created_at` and each
metric's macro mean over the suite, as `scoring.store.summaries.run_totals_sql` computes them).

Not every run is a release: most are experiments (a repeat of a sampling setting, another chunk size).
A run is marked as a release (`marked_releases`) when its manifest names a `release`, when it (or its
group) is or was the suite's pinned standing baseline, or when a recorded verdict compared it, as
baseline or as candidate: a release decision was taken on it. A run's release is its manifest's
`release` field, else its group of repeats (one configuration), else the run itself (`release_of`).
A release's value on a metric is the mean over its runs of each run's macro mean (one run: its macro
mean), not a mean over the pooled questions. A group's spread is the lowest, mean and highest macro mean over
its repeats; a repeat with no value on the metric (n/a) is left out, never counted as 0.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence

import pandas as pd

SPREAD_COLUMNS: tuple[str, ...] = ("group", "runs", "repeats", "metric", "lowest", "mean", "highest")


def group_spread(totals: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Per group of repeats (sorted by name) and metric of `metrics`: the runs (joined with ', '), how
    many, and the lowest, mean and highest macro mean over the repeats that have one (None when none
    has). Runs outside a group are left out."""
    grouped = totals[totals["run_group"].notna()]
    rows = []
    for group, members in grouped.groupby("run_group", sort=True):
        for key in metrics:
            values = pd.to_numeric(members[key]).dropna()
            rows.append({
                "group": str(group), "runs": ", ".join(members["run_id"].astype(str)), "repeats": len(members),
                "metric": key,
                "lowest": values.min() if len(values) else None,
                "mean": values.mean() if len(values) else None,
                "highest": values.max() if len(values) else None,
            })
    return pd.DataFrame(rows, columns=list(SPREAD_COLUMNS))


def release_of(run_id: str, manifest: str) -> str:
    """The release a run belongs to: its manifest's (JSON text) `release` field, else its `group` of
    repeats, else the run itself."""
    found = json.loads(manifest)
    return str(found.get("release") or found.get("group") or run_id)


def marked_releases(manifests: Mapping[str, str], pinned: Iterable[str], compared: Iterable[str]) -> set[str]:
    """The runs marked as releases (module docstring): their manifest (JSON text, by run ID) names a
    `release`, or their run ID or group is among `pinned` (every side ever pinned as the standing
    baseline) or `compared` (the sides and runs of every recorded verdict)."""
    named = {str(n) for n in (*pinned, *compared)}
    out = set()
    for run_id, manifest in manifests.items():
        found = json.loads(manifest)
        if found.get("release") or run_id in named or (found.get("group") is not None and str(found["group"]) in named):
            out.add(run_id)
    return out


def release_history(totals: pd.DataFrame, manifests: Mapping[str, str], metrics: Sequence[str],
                    runs: Collection[str] | None = None) -> pd.DataFrame:
    """One row per release, oldest first: release, created_at (the earliest of its runs', UTC), runs
    (their IDs), groups (the groups of repeats they belong to, sorted), and per metric of `metrics` the
    totals hold the mean over its runs of each run's macro mean. Ordered by created_at, then release.
    `manifests`: each run's manifest (JSON text), by run ID; `runs`: the runs to count (None: every run
    of `totals`; `marked_releases` gives the releases)."""
    if runs is not None:
        totals = totals[totals["run_id"].isin(list(runs))]
    stats = totals.assign(release=[release_of(r, manifests[r]) for r in totals["run_id"]],
                          created_at=pd.to_datetime(totals["created_at"], utc=True))
    keys = [k for k in metrics if k in stats.columns]
    grouped = stats.groupby("release", sort=False)
    out = grouped[keys].mean()
    out["created_at"] = grouped["created_at"].min()
    out["runs"] = grouped["run_id"].agg(list)
    out["groups"] = grouped["run_group"].agg(lambda g: sorted({str(v) for v in g.dropna()}))
    out = out.reset_index().sort_values(["created_at", "release"], kind="stable").reset_index(drop=True)
    return out[["release", "created_at", "runs", "groups", *keys]]


__all__ = ["SPREAD_COLUMNS", "group_spread", "marked_releases", "release_history", "release_of"]

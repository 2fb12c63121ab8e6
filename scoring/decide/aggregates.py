"""Aggregates: one side's figure over a set of questions, as gates, tiles and tables read it.

- **macro**: the mean of the questions the metric scores (n/a excluded, never 0);
- **pooled**: the registry's pooled numerator summed over those questions, over its pooled denominator
  summed likewise (the macro mean for a metric that does not pool);
- **total**: the sum of the values (count metrics);
- the operational measures (failure rate, latency, cost) over records: every repeat's.

`slice_aggregates` gives every slice of the partitioning families at once, for both sides, from sums
per cell; `aggregation_choices` sets macro, pooled, answerable-only and per-type side by side and
flags where the choice flips the direction of a change.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import slices
from ..metrics.registry import BY_KEY, REGISTRY
from . import change
from .scores import METRIC_KEYS, SideScores


def sideaggregate_values(values: pd.DataFrame, key: str, aggregate: str) -> tuple[float | None, int]:
    """One side's aggregate of a registry metric over the given per-question rows.

    macro: mean of the scored questions' values; pooled: sum of the registry's numerator column over
    sum of its denominator column, on the scored questions (the macro mean when the metric does not
    pool); total: sum of the values. n: the scored questions. None when nothing is scored.
    """
    pooled = BY_KEY[key].pooled
    parts = tuple(values[c].to_numpy(dtype=float) for c in pooled) if pooled else None
    return aggregate_values(values[key].to_numpy(dtype=float), parts, aggregate)


def aggregate_values(column: np.ndarray, pooled: tuple[np.ndarray, ...] | None, aggregate: str
               ) -> tuple[float | None, int]:
    """A side's aggregate over arrays: the metric's values and its pooled numerator / denominator columns."""
    scored = ~np.isnan(column)
    n = int(np.count_nonzero(scored))
    if n == 0:
        return None, 0
    if aggregate == "macro":
        return float(column[scored].mean()), n
    if aggregate == "total":
        return float(column[scored].sum()), n
    if aggregate == "pooled":
        if pooled is None:
            return float(column[scored].mean()), n
        num, den = (float(part[scored].sum()) for part in pooled)
        return (num / den if den else None), n
    raise ValueError(f"unknown aggregate {aggregate!r}")


def operationalaggregate_values(records: pd.DataFrame, key: str, aggregate: str) -> tuple[float | None, int]:
    """Failure rate, latency or cost over record rows (every repeat); see `scoring.metrics.OPERATIONAL`."""
    ok = (records["status"] == "ok").to_numpy(dtype=bool)
    runs = pd.factorize(records["run_id"])[0]
    return operational_values(np.where(ok, 0, 2), records["latency_ms"].to_numpy(dtype=float),
                        records["cost_usd"].to_numpy(dtype=float), runs, key, aggregate)


def operational_values(status: np.ndarray, latency: np.ndarray, cost: np.ndarray, runs: np.ndarray, key: str,
                 aggregate: str) -> tuple[float | None, int]:
    """A side's operational aggregate over record arrays: status codes (`scores.RECORD_STATUSES`), latency, cost, run ids."""
    if key == "failure_rate":
        n = len(status)
        return (float(np.count_nonzero(status != 0) / n) if n else None), n
    column = {"latency": latency, "cost": cost}[key]
    values = column[~np.isnan(column)]
    n = len(values)
    if n == 0:
        return None, 0
    if aggregate in ("p50", "p95", "p99"):
        return float(np.percentile(values, float(aggregate[1:]))), n
    if aggregate == "mean":
        return float(values.mean()), n
    if aggregate == "max":
        return float(values.max()), n
    if aggregate == "total":
        return float(values.sum()) / max(1, len(np.unique(runs))), n
    raise ValueError(f"unknown aggregate {aggregate!r} for {key}")


def operational_range(status: np.ndarray, latency: np.ndarray, cost: np.ndarray, runs: np.ndarray, key: str,
                      aggregate: str, budget: float | None = None) -> tuple[float | None, float | None, int, int]:
    """A gate's latency or cost aggregate when failed and missing records are unknown, as
    ``(low, high, n, unknown)``.

    A failed or missing record (status not ok) did not answer: what it would have taken or cost is
    unknown, anywhere from 0 to the `budget` (the policy's ``latency_budget_ms`` / ``cost_budget_usd``;
    None: unbounded). With a budget, a recorded value above it counts as the budget too (a record over
    budget is as bad as a failure). `low` is the aggregate with every unknown at 0, `high` with every
    unknown at the budget (``inf`` without one: a mean, total or max is then unbounded; a percentile
    stays finite while the unknowns stay in the tail above it). Each aggregate is monotone in every value,
    so turning a record into a failure never lowers `high` nor raises `low`. An ok record without a value
    is left out, as `operational_values` leaves it. n: the values used; unknown: the failed and missing
    records among them. (None, None, 0, 0) when there is none."""
    column = {"latency": latency, "cost": cost}[key]
    ok = status == 0
    recorded = ok & ~np.isnan(column)
    known = column[recorded]
    unknown = int(np.count_nonzero(~ok))
    ceiling = math.inf if budget is None else float(budget)
    if budget is not None:
        known = np.minimum(known, ceiling)
    n = len(known) + unknown
    if n == 0:
        return None, None, 0, 0
    kept_runs = np.concatenate([runs[recorded], runs[~ok]])
    low = _aggregate_of(np.concatenate([known, np.zeros(unknown)]), aggregate, kept_runs)
    high = _aggregate_of(np.concatenate([known, np.full(unknown, ceiling)]), aggregate, kept_runs)
    return low, high, n, unknown


def _aggregate_of(values: np.ndarray, aggregate: str, runs: np.ndarray) -> float:
    """`operational_values`' aggregates of values that may hold ``inf``: percentiles by numpy's linear
    interpolation (``inf`` where it would interpolate towards one), mean, max, total per run."""
    if aggregate in ("p50", "p95", "p99"):
        if np.isfinite(values).all():
            return float(np.percentile(values, float(aggregate[1:])))
        ordered = np.sort(values)
        position = float(aggregate[1:]) / 100 * (len(ordered) - 1)
        below = int(math.floor(position))
        touched = ordered[below:below + 2] if position > below else ordered[below:below + 1]
        if not np.isfinite(touched).all():
            return math.inf
        # the values interpolated between are finite: any finite stand-in for the others gives numpy's figure
        return float(np.percentile(np.minimum(values, float(touched.max())), float(aggregate[1:])))
    if aggregate == "mean":
        return float(values.mean())
    if aggregate == "max":
        return float(values.max())
    if aggregate == "total":
        return float(values.sum()) / max(1, len(np.unique(runs)))
    raise ValueError(f"unknown aggregate {aggregate!r}")


def _families(families: Sequence[str]) -> tuple[str, ...]:
    """The families asked for, each once; ValueError for one that does not partition the suite."""
    out = tuple(dict.fromkeys(families))
    for by in out:
        if by not in slices.PARTITIONS:
            raise ValueError(f"unknown slice family {by!r} (partitions: {', '.join(slices.PARTITIONS)})")
    return out


def _difference(baseline: Any, candidate: Any) -> float | None:
    b, c = _number(baseline), _number(candidate)
    return None if b is None or c is None else c - b


HEADLINE_COLUMNS: tuple[str, ...] = ("metric", "baseline", "candidate", "delta", "n_baseline", "n_candidate",
                                     "na_baseline", "na_candidate", *change.STATUSES)


def headline(scores: SideScores, codes: dict[str, np.ndarray], metrics: Sequence[str] = METRIC_KEYS) -> pd.DataFrame:
    """One row per metric of `metrics` (registry order): each side's own macro mean over the questions
    it scores (unpaired) and their difference; scored n and n/a count per side; the number of
    questions per status (`codes[metric]`: `change.status_codes` per question)."""
    wanted = [k for k in METRIC_KEYS if k in set(metrics)]
    size = len(scores.positions)
    rows = []
    for key in wanted:
        b, c = scores.columns[0][key], scores.columns[1][key]
        nb, nc = int(np.count_nonzero(~np.isnan(b))), int(np.count_nonzero(~np.isnan(c)))
        mb = float(np.nansum(b)) / nb if nb else np.nan
        mc = float(np.nansum(c)) / nc if nc else np.nan
        found = codes[key]
        rows.append({"metric": key, "baseline": mb, "candidate": mc, "delta": mc - mb,
                     "n_baseline": nb, "n_candidate": nc, "na_baseline": size - nb, "na_candidate": size - nc,
                     **{s: int(np.count_nonzero(found == i)) for i, s in enumerate(change.STATUSES)}})
    return pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))


def slice_aggregates(questions: pd.DataFrame, scores: SideScores, families: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Per slice of each partitioning family and per metric, both sides side by side (`SIDE_BY_SIDE`
    columns, prefix `b_` baseline, `c_` candidate), from both sides' per-question scores over the
    suite's questions in suite order (`questions`: slice columns, row i the i-th question):

    - `questions`: questions in the slice (that the side has a row for);
    - `*_macro` = `*_sum` / `*_n`: mean over the questions scored (n/a skipped), `*_na` excluded;
    - `*_num`, `*_den`, `*_pooled`: the registry's pooled numerator and denominator summed over the
      scored questions, and their ratio (None where the metric does not pool, or the denominator is 0);
    - `delta_macro`, `delta_pooled`: candidate - baseline.

    For a group of repeats every count is first a mean per question over the repeats (`SideScores`).
    Computed in one pass: sums per cell (a combination of every family's slice), then per slice."""
    q = questions
    families = _families(families)
    # one pass over the questions: sums per cell (a combination of every family's slice), then per slice
    codes = {by: slices.codes(q, by) for by in families}
    joint = np.zeros(len(q), dtype=np.int64)
    for by in families:
        joint = joint * max(1, len(codes[by][1])) + codes[by][0]
    cell_ids = np.flatnonzero(np.bincount(joint)) if len(joint) else np.zeros(0, dtype=np.int64)
    lookup = np.full(int(cell_ids[-1]) + 1 if len(cell_ids) else 0, -1, dtype=np.int64)
    lookup[cell_ids] = np.arange(len(cell_ids))
    cell = lookup.take(joint)
    n_cells = len(cell_ids)
    cell_of = {by: np.zeros(n_cells, dtype=np.int64) for by in families}
    for by in families:
        cell_of[by][cell] = codes[by][0]
    sums: dict[tuple[int, str], np.ndarray] = {}
    for side in (0, 1):
        present = scores.present[side]
        sums[side, "questions"] = np.bincount(cell, weights=present, minlength=n_cells)
        for m in REGISTRY:
            values = scores.columns[side][m.key]
            scored = ~np.isnan(values)
            sums[side, f"{m.key}__n"] = np.bincount(cell, weights=scored, minlength=n_cells)
            sums[side, f"{m.key}__sum"] = np.bincount(cell, weights=np.where(scored, values, 0.0),
                                                      minlength=n_cells)
            if m.pooled:
                for part, column in zip(("num", "den"), m.pooled):
                    raw = scores.columns[side][column]
                    sums[side, f"{m.key}__{part}"] = np.bincount(
                        cell, weights=np.where(scored, np.nan_to_num(raw), 0.0), minlength=n_cells)
                    sums[side, f"{m.key}__{part}_n"] = np.bincount(
                        cell, weights=scored & ~np.isnan(raw), minlength=n_cells)
    return {by: _side_by_side(by, codes[by][1], cell_of[by], sums) for by in families}


def stored_slice_aggregates(stored: pd.DataFrame, base: str, cand: str, families: Sequence[str]
                            ) -> dict[str, pd.DataFrame]:
    """`slice_aggregates` of two single runs, from their rows of the `slice_sums` summary (`stored`)."""
    families = _families(families)
    out = {}
    for by in families:
        rows = stored[stored["family"] == by]
        names = np.array(sorted(set(rows["slice"].astype(str))), dtype=object)
        sums: dict[tuple[int, str], np.ndarray] = {}
        numbers = [c for c in stored.columns if c not in ("run_id", "family", "slice")]
        at = {c: i for i, c in enumerate(numbers)}
        for side, run_id in ((0, base), (1, cand)):
            own = rows[rows["run_id"] == run_id].set_index("slice").reindex(names)
            table = own[numbers].to_numpy(dtype=float, na_value=np.nan)  # slices x columns, NaN: NULL or absent
            sums[side, "questions"] = np.nan_to_num(table[:, at["questions"]])
            for m in REGISTRY:
                sums[side, f"{m.key}__n"] = np.nan_to_num(table[:, at[f"{m.key}__n"]])
                sums[side, f"{m.key}__sum"] = np.nan_to_num(table[:, at[f"{m.key}__sum"]])
                if m.pooled:
                    for part in ("num", "den"):
                        values = table[:, at[f"{m.key}__{part}"]]
                        sums[side, f"{m.key}__{part}"] = np.nan_to_num(values)
                        sums[side, f"{m.key}__{part}_n"] = (~np.isnan(values)).astype(float)
        out[by] = _side_by_side(by, names, np.arange(len(names)), sums)
    return out


def _side_by_side(by: str, names: np.ndarray, cell_of: np.ndarray, sums: dict[tuple[int, str], np.ndarray]
                  ) -> pd.DataFrame:
    """The `aggregate` table from sums per cell (`cell_of`: each cell's slice, an index into `names`)."""
    per_slice = {key: np.bincount(cell_of, weights=cells, minlength=len(names)) for key, cells in sums.items()}
    kept = np.flatnonzero((per_slice[0, "questions"] > 0) | (per_slice[1, "questions"] > 0))  # a row on a side
    size, width = len(kept), len(METRIC_KEYS)
    columns: dict[str, Any] = {"slice": np.repeat(names.take(kept).astype(str), width),
                               "metric": np.tile(np.array(METRIC_KEYS, dtype=object), size)}
    for side, prefix in ((0, "b_"), (1, "c_")):
        questions = np.repeat(per_slice[side, "questions"].take(kept), width)
        absent = questions == 0  # the side has no row in the slice: every figure None
        n = np.column_stack([per_slice[side, f"{k}__n"].take(kept) for k in METRIC_KEYS]).ravel() if size else \
            np.zeros(0)
        total = np.column_stack([per_slice[side, f"{k}__sum"].take(kept) for k in METRIC_KEYS]).ravel() if size \
            else np.zeros(0)
        num, den = np.full(size * width, np.nan), np.full(size * width, np.nan)
        for j, m in enumerate(REGISTRY):
            if m.pooled:
                for part, target in (("num", num), ("den", den)):
                    scored = per_slice[side, f"{m.key}__{part}_n"].take(kept) > 0
                    target[j::width] = np.where(scored, per_slice[side, f"{m.key}__{part}"].take(kept), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            macro = np.where(n > 0, total / np.maximum(n, 1), np.nan)
            pooled = np.where(~np.isnan(num) & ~np.isnan(den) & (den != 0), num / np.where(den != 0, den, 1), np.nan)
        columns[f"{prefix}questions"] = _ints(questions, absent)
        columns[f"{prefix}n"] = _ints(n, absent)
        columns[f"{prefix}na"] = _ints(questions - n, absent)
        columns[f"{prefix}sum"] = _floats_or_none(np.where(n > 0, total, np.nan), absent)
        columns[f"{prefix}macro"] = _floats_or_none(macro, absent)
        columns[f"{prefix}num"] = _floats_or_none(num, absent)
        columns[f"{prefix}den"] = _floats_or_none(den, absent)
        columns[f"{prefix}pooled"] = _floats_or_none(pooled, absent)
    out = pd.DataFrame(columns)
    out["questions"] = out[["b_questions", "c_questions"]].max(axis=1)
    out["delta_macro"] = pd.to_numeric(out["c_macro"]) - pd.to_numeric(out["b_macro"])
    out["delta_pooled"] = pd.to_numeric(out["c_pooled"]) - pd.to_numeric(out["b_pooled"])
    order = {k: i for i, k in enumerate(METRIC_KEYS)}
    return out.sort_values(["slice", "metric"], key=lambda s: s.map(order) if s.name == "metric" else s).reset_index(
        drop=True
    )


def _ints(values: np.ndarray, absent: np.ndarray) -> Any:
    """Whole numbers; None where `absent`."""
    counts = np.rint(values).astype(np.int64)
    if not absent.any():
        return counts
    return [None if a else int(v) for v, a in zip(counts.tolist(), absent.tolist())]


def _floats_or_none(values: np.ndarray, absent: np.ndarray) -> list[float | None]:
    """Floats, None for NaN and where `absent` (NULL in the table, as `aggregate` documents)."""
    return [None if a or v != v else float(v) for v, a in zip(values.tolist(), absent.tolist())]


CHOICE_FAMILIES: tuple[str, ...] = ("all", "answerable", "type")
"""The slice families `aggregation_choices` reads."""


def improving(frames: dict[str, pd.DataFrame]) -> list[str]:
    """The metrics whose macro mean over all questions moves in the metric's direction (`slice_aggregates`
    frames): where regressed questions would be hidden by the average."""
    overall = {r["metric"]: r for r in frames["all"].to_dict("records")}
    return [m.key for m in REGISTRY
            if change.moved(_difference(overall[m.key]["b_macro"], overall[m.key]["c_macro"]), m.higher_is_better)
            == "better"]


def aggregation_choices(frames: dict[str, pd.DataFrame], regressed: dict[str, int]) -> pd.DataFrame:
    """Long table, one row per (metric, aggregation): macro over all questions, pooled, macro over
    answerable questions only, and macro per question type (from `slice_aggregates` frames of
    `CHOICE_FAMILIES`); each with baseline and candidate value, numerator, denominator, n/a excluded,
    and delta. `direction`: +1 better, -1 worse, 0 unchanged or n/a (`change.direction`). Per metric:
    `flip` (macro, pooled and answerable-only disagree on the direction) and `hidden` (questions that
    regressed, `regressed[metric]`, while the macro mean over all questions improved); per type row:
    `against_macro` (the type moves against the overall macro)."""
    records = {by: frame.to_dict("records") for by, frame in frames.items()}
    rows: list[dict[str, Any]] = []
    for m in REGISTRY:
        mine = {by: [r for r in recs if r["metric"] == m.key] for by, recs in records.items()}
        overall = mine["all"][0]
        entries = [("macro", "all questions", overall, "macro", "sum", "n")]
        if m.pooled:
            entries.append(("pooled", "all questions", overall, "pooled", "num", "den"))
        entries += [("macro", "answerable only", r, "macro", "sum", "n") for r in mine["answerable"]
                    if r["slice"] == "answerable"]
        entries += [("macro", f"type: {r['slice']}", r, "macro", "sum", "n")
                    for r in sorted(mine["type"], key=lambda r: str(r["slice"]))]
        metric_rows = []
        for how, scope, r, value, num, den in entries:
            b, c = _number(r[f"b_{value}"]), _number(r[f"c_{value}"])
            delta = None if b is None or c is None else c - b
            direction = change.direction(delta, m.higher_is_better)
            metric_rows.append({
                "metric": m.key, "aggregation": how, "scope": scope,
                "baseline": b, "b_numerator": _number(r[f"b_{num}"]), "b_denominator": _number(r[f"b_{den}"]),
                "b_na": int(r["b_na"]),
                "candidate": c, "c_numerator": _number(r[f"c_{num}"]), "c_denominator": _number(r[f"c_{den}"]),
                "c_na": int(r["c_na"]),
                "delta": delta, "direction": direction,
            })
        overall_moves = {r["direction"] for r in metric_rows
                         if r["scope"] in ("all questions", "answerable only") and r["direction"] != 0}
        macro = metric_rows[0]["direction"]
        for r in metric_rows:
            r["flip"] = len(overall_moves) > 1
            r["against_macro"] = r["scope"].startswith("type: ") and r["direction"] != 0 and r["direction"] == -macro
            r["hidden"] = int(regressed.get(m.key, 0)) if macro > 0 else 0
        rows += metric_rows
    return pd.DataFrame(rows)


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


__all__ = ["CHOICE_FAMILIES", "HEADLINE_COLUMNS", "aggregate_values", "aggregation_choices", "headline", "improving",
           "operational_values", "slice_aggregates",
           "stored_slice_aggregates"]

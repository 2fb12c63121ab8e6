"""The release matrix: one baseline against many candidates, set-based.

Where `compute.compare_many` compares candidates one after the other (every figure of every
metric x slice), the matrix computes only the cells asked for (candidates x metrics x slices), all
at once: one read of `question_scores` for the baseline's and every candidate's runs, and one batch
of paired statistics (`stats_batch.paired_many`) for every cell. A cell's n, means, delta, counts and
randomization p are exactly those of the same row of `compare` (same pairing, same seed) when the
matrix is small enough for its sampled tests (else resolved for its size, `family.resolve`); its
`p_holm` and `p_fdr` are Holm- and BH-adjusted across the cells of this matrix (candidates x the
metrics x the slices asked for), so they match `ragslice compare` only when the same family is asked
for. Operations per
candidate (failure rate, latency p95, mean cost, over every record of its runs) use the rule of
`aggregates.operational_values`; Judged@k is the candidate's macro mean over all questions.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from ..metrics import slices
from ..metrics.registry import BY_KEY
from . import aggregates, clusters, detect, stats_batch
from .change import TIE
from .family import Resolution, fdr_adjusted, holm_adjusted, p_floors, resolve, significant
from .paired import Settings
from .significance import ALPHA
from .scores import RECORD_STATUSES, _score_source, arrow_floats, position_slots, read_slice_columns
from .sides import Side

CELL_COLUMNS: tuple[str, ...] = (
    "candidate", "metric", "slice", "n", "baseline", "candidate_mean", "delta", "p_randomization", "p_holm",
    "significant", "improved", "regressed", "unchanged", "higher_is_better", "p_fdr", "fdr_significant", "p_floor",
    "mde", "bound",
)
OPERATION_COLUMNS: tuple[str, ...] = ("candidate", "records", "failure_rate", "latency_p95", "cost_mean", "judged")


@dataclass(frozen=True)
class Matrix:
    """`cells`: one row per candidate x metric x slice with at least one paired question
    (`CELL_COLUMNS`; `candidate_mean` is the candidate's macro mean over the paired questions,
    `significant`: p_holm < `family.SIGNIFICANT`, for claims; `fdr_significant`: p_fdr below it, for
    exploring; `p_floor`: the smallest randomization p the cell's test could report); `operations`:
    one row per side, the baseline first (`OPERATION_COLUMNS`, None where no record has the value);
    `n_tests`: the non-None randomization p-values the Holm adjustment spans; `slices`: the slices the
    suite has, in order; `mde`, `bound`: `detect.row_figures` of the cell, as a comparison's table row;
    `resolution`: how finely the cells' randomization p-values are resolved."""

    cells: pd.DataFrame
    operations: pd.DataFrame
    n_tests: int
    slices: tuple[str, ...]
    resolution: Resolution | None = None


def read_sides(con: duckdb.DuckDBPyConnection, suite: str, sides: Sequence[Side], metrics: Sequence[str],
               positions: np.ndarray) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, tuple[np.ndarray, ...]]]:
    """Per side name: each metric's per-question value (the mean over the side's runs that score the
    question; NaN: n/a or no row) at `positions` (suite order); and per side its records' status
    codes, latency, cost and run index. One query over every run of every side."""
    for m in metrics:
        if m not in BY_KEY:
            raise ValueError(f"unknown metric {m!r}")
    run_ids = sorted({r for s in sides for r in s.run_ids})
    source, position = _score_source(con)
    cols = ", ".join(f"CAST(s.{m} AS DOUBLE) AS {m}" for m in metrics)  # registry keys only
    table = con.sql(
        f"SELECT s.run_id, {position} AS position, "
        "CAST(coalesce(list_position(?::VARCHAR[], s.status), 0) - 1 AS TINYINT) AS status, "
        f"s.latency_ms, s.cost_usd{', ' + cols if cols else ''} "
        f"FROM {source} WHERE s.suite = ? AND list_contains(?::VARCHAR[], s.run_id)",
        params=[list(RECORD_STATUSES), suite, run_ids]).to_arrow_table()
    run_codes, run_names = pd.factorize(np.asarray(table.column("run_id").to_numpy(zero_copy_only=False)))
    index = {name: i for i, name in enumerate(run_names)}
    slot = position_slots(positions, table.column("position").to_numpy().astype(np.int64))
    kept = slot >= 0
    size = len(positions)
    values = {m: arrow_floats(table.column(m)) for m in metrics}
    status = table.column("status").to_numpy().astype(np.int8)
    latency, cost = arrow_floats(table.column("latency_ms")), arrow_floats(table.column("cost_usd"))
    out: dict[str, dict[str, np.ndarray]] = {}
    records: dict[str, tuple[np.ndarray, ...]] = {}
    for side in sides:
        codes = [index[r] for r in side.run_ids if r in index]
        own = np.isin(run_codes, codes)
        rows = np.flatnonzero(own & kept)
        at = slot.take(rows)
        per: dict[str, np.ndarray] = {}
        for m in metrics:
            column = values[m].take(rows)
            scored = ~np.isnan(column)
            total = np.bincount(at, weights=np.where(scored, column, 0.0), minlength=size)
            count = np.bincount(at, weights=scored, minlength=size)
            with np.errstate(invalid="ignore", divide="ignore"):
                per[m] = np.where(count > 0, total / count, np.nan)
        out[side.name] = per
        everything = np.flatnonzero(own)
        records[side.name] = (status.take(everything), latency.take(everything), cost.take(everything),
                              run_codes.take(everything))
    return out, records


def matrix(con: duckdb.DuckDBPyConnection, baseline: Side, candidates: Sequence[Side], metrics: Sequence[str],
           slice_names: Sequence[str] = ("all",), *, settings: Settings | None = None,
           cluster_by: str = clusters.DEFAULT_BY) -> Matrix:
    """The baseline against every candidate on `metrics` x `slice_names` (those the suite has;
    `slices.default_slices`), computed in one read and one batch. Sides must be comparable (the
    caller checks `sides.refusals`); candidates keep their order. When the questions are clustered
    (`clusters.question_clusters` under `cluster_by`), every cell resamples whole clusters, as a
    comparison's rows do."""
    settings = settings or Settings()
    suite = baseline.suite
    questions = read_slice_columns(con, suite)
    grouped = clusters.question_clusters(questions, cluster_by)
    chosen = [s for s in slices.default_slices(questions) if str(s) in set(slice_names)]
    available = tuple(str(s) for s in slices.default_slices(questions))
    metrics = [m for m in dict.fromkeys(metrics) if m in BY_KEY]
    wanted = list(dict.fromkeys([*metrics, "judged"]))
    values, records = read_sides(con, suite, [baseline, *candidates], wanted,
                                 questions["position"].to_numpy(dtype=np.int64))
    masks = [slices.mask(questions, s) for s in chosen]
    base_arrays, cand_arrays, directions, samples, layout = [], [], [], [], []
    for c in candidates:
        for m in metrics:
            j = len(base_arrays)
            base_arrays.append(values[baseline.name][m])
            cand_arrays.append(values[c.name][m])
            directions.append(BY_KEY[m].higher_is_better)
            for s, mask in zip(chosen, masks):
                layout.append((c.name, m, str(s)))
                samples.append((j, mask))
    options = dict(seed=settings.seed, bootstrap_resamples=settings.bootstrap_resamples,
                   randomization_resamples=settings.randomization_resamples, exact_max=settings.exact_max,
                   confidence=settings.confidence, large_sample=settings.large_sample, complete=[False] * len(samples))
    if not samples:
        results = []
    elif grouped is None:
        results = stats_batch.paired_many(base_arrays, cand_arrays, samples, higher_is_better=directions, **options)
    else:
        results = clusters.paired_many(base_arrays, cand_arrays, samples, None, grouped.codes,
                                       higher_is_better=directions, **options)
    rows = []
    kept: list[int] = []  # the sample of each cell
    for at, ((cand, m, s), r) in enumerate(zip(layout, results)):
        if r.n < 1:
            continue
        kept.append(at)
        j, mask = samples[at]
        mde, bound = _detection(base_arrays[j], cand_arrays[j], mask, directions[j], settings, grouped)
        rows.append({"candidate": cand, "metric": m, "slice": s, "n": r.n, "baseline": r.baseline,
                     "candidate_mean": r.candidate, "delta": r.delta, "p_randomization": r.p_randomization,
                     "improved": r.improved, "regressed": r.regressed, "unchanged": r.unchanged,
                     "higher_is_better": BY_KEY[m].higher_is_better, "mde": mde, "bound": bound})
    cells = pd.DataFrame(rows, columns=[c for c in CELL_COLUMNS if c not in ("p_holm", "significant", "p_fdr",
                                                                           "fdr_significant", "p_floor")])

    def differences(i: int) -> np.ndarray:  # what the sign-flip test flips: the differences, or cluster sums
        j, mask = samples[kept[i]]
        d = cand_arrays[j][mask] - base_arrays[j][mask]
        if grouped is None:
            return d[~np.isnan(d)]
        return clusters.sums(d[~np.isnan(d)], grouped.codes[mask][~np.isnan(d)])[0]

    nonzero = [int(r["improved"] + r["regressed"]) for r in rows] if grouped is None else \
        [int(np.count_nonzero(np.abs(differences(i)) > TIE)) for i in range(len(rows))]
    p_values, floors, resolution = resolve(cells["p_randomization"], p_floors(nonzero, cells["p_randomization"],
                                                                              settings), nonzero, differences, settings)
    if resolution.refined:
        cells["p_randomization"] = np.array([np.nan if pd.isna(p) else float(p) for p in p_values], dtype=float)
    cells["p_holm"] = holm_adjusted(cells["p_randomization"])
    cells["significant"] = significant(cells["p_holm"])
    cells["p_fdr"] = fdr_adjusted(cells["p_randomization"])
    cells["fdr_significant"] = significant(cells["p_fdr"])
    cells["p_floor"] = np.array([np.nan if pd.isna(f) else float(f) for f in floors], dtype=float)
    ops = []
    for side in (baseline, *candidates):
        status, latency, cost, run = records[side.name]
        # Judged@k as the comparison's table has it: the paired mean over the questions both sides score (the
        # baseline's own mean on its row), so the matrix and the release review show one figure
        judged = values[side.name]["judged"]
        if side is not baseline:
            base_judged = values[baseline.name]["judged"]
            judged = np.where(np.isnan(base_judged), np.nan, judged)
        ops.append({
            "candidate": side.name, "records": int(len(status)),
            "failure_rate": aggregates.operational_values(status, latency, cost, run, "failure_rate", "rate")[0],
            "latency_p95": aggregates.operational_values(status, latency, cost, run, "latency", "p95")[0],
            "cost_mean": aggregates.operational_values(status, latency, cost, run, "cost", "mean")[0],
            "judged": float(np.nanmean(judged)) if np.any(~np.isnan(judged)) else None,
        })
    n_tests = sum(x is not None for x in cells["p_holm"])
    return Matrix(cells[list(CELL_COLUMNS)], pd.DataFrame(ops, columns=list(OPERATION_COLUMNS)), n_tests, available,
                  resolution)


def _detection(base: np.ndarray, cand: np.ndarray, mask: np.ndarray, higher: bool, settings: Settings,
               grouped: clusters.Clusters | None = None) -> tuple[float | None, float | None]:
    """A cell's MDE and bound of the drop, as a comparison's table row has them (`detect.row_figures`;
    `clusters.row_figures` when the questions are clustered)."""
    both = mask & ~(np.isnan(base) | np.isnan(cand))
    d = cand[both] - base[both]
    if grouped is not None:
        return clusters.row_figures(d if higher else -d, grouped.codes[both], ALPHA, detect.POWER,
                                    exact_max=settings.exact_max, resamples=settings.randomization_resamples,
                                    large_sample=settings.large_sample)
    return detect.row_figures(d if higher else -d, ALPHA, detect.POWER, exact_max=settings.exact_max,
                              resamples=settings.randomization_resamples, large_sample=settings.large_sample,
                              tie=settings.tie)


__all__ = ["CELL_COLUMNS", "Matrix", "OPERATION_COLUMNS", "matrix", "read_sides"]

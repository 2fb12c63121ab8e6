"""The release matrix: one baseline against every candidate the suite offers, set-based
(`scoring.decide.matrix`), with each candidate's live verdict (`statistics`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.decide import sides as scoring_sides
from scoring.decide.sides import Side
from scoring.store.database import Signature

from .database import allowed_metric, catalog_at, on_file, policy_path, reading, shared
from .pair import sides
from .stats import StatisticsUnavailable, statistics


def matrix_candidates(suite: str, baseline: Side) -> tuple[list[Side], list[tuple[str, str]]]:
    """Every side of the suite that can be compared with `baseline` (runs, then groups), and
    (name, reason) for those `scoring.decide.sides.refusals` refuses (the baseline itself, a group
    holding its run, another suite version ...)."""
    fine, refused = [], []
    for side in sides(suite):
        if side.name == baseline.name:
            continue
        reasons = scoring_sides.refusals(baseline, side)
        if reasons:
            refused.append((side.name, reasons[0]))
        else:
            fine.append(side)
    return fine, refused


def release_matrix(suite: str, baseline: Side, candidates: Sequence[Side], metrics: Sequence[str],
                   slice_names: Sequence[str]) -> Any:
    """The baseline against every candidate on `metrics` x `slice_names`, set-based
    (`scoring.decide.matrix.matrix`: one read of the scores, one batch of statistics, Holm across the
    cells asked for), with each side's failure rate, latency p95, mean cost and Judged@k. Cached
    until the database changes."""
    return on_file(_release_matrix, suite, baseline.name, tuple(c.name for c in candidates),
                   tuple(allowed_metric(m) for m in metrics), tuple(slice_names))


@shared(max_entries=16)
def _release_matrix(path: str, sig: Signature, suite: str, baseline: str, candidates: tuple[str, ...],
                    metrics: tuple[str, ...], slice_names: tuple[str, ...]) -> Any:
    from scoring.decide.matrix import matrix

    table = catalog_at(path, sig)[2]
    by_name = {s.name: s for s in scoring_sides.sides_of(table[table["suite"] == suite].reset_index(drop=True))}
    with reading(path, sig) as con:
        return matrix(con, by_name[baseline], [by_name[c] for c in candidates], metrics, slice_names)


def matrix_verdicts(baseline: Side, candidates: Sequence[Side]) -> dict[str, str]:
    """Each candidate's verdict under the live policy (`statistics`, cached per pair), by name; empty
    without a policy. A candidate whose comparison scoring refuses is left out."""
    if policy_path() is None:
        return {}
    out = {}
    for cand in candidates:
        try:
            verdict = statistics(baseline, cand).verdict
        except StatisticsUnavailable:
            continue
        if verdict is not None:
            out[cand.name] = str(verdict.verdict)
    return out

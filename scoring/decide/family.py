"""Families of paired tests and their p-value corrections: one baseline against many candidates.

A family is every test whose p-values are adjusted together: the metric x slice rows of one
comparison's table (`scoring.decide.compute.compare`), every candidate's rows in a `Family`
(`compare_many`, ``candidate x metric x slice``), or the cells of a release matrix
(`scoring.decide.matrix`). The correction is chosen and applied here, once: `holm_adjusted` (Holm's
step-down adjustment, `stats.holm`, of the randomization p-values, `Settings.holm_of`), and
`significant` marks an adjusted p-value below `SIGNIFICANT`. `P_COLUMNS` names every p-value a
comparison's table carries and `table_rows` filters a table by one of them. This module reads no
database and compares nothing itself.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import slices
from . import change, stats
from .paired import Comparison
from .significance import significant as _significant
from .policy import Policy
from .sides import Side

# --- p-value corrections -------------------------------------------------------------------------

SIGNIFICANT = 0.05
"""The `p_holm` below which a family's matrix marks a delta as significant."""


def holm_adjusted(p_values: Iterable[Any]) -> np.ndarray:
    """Holm's step-down adjustment (`stats.holm`) of `p_values` taken as one family, in their
    order, as an object array: a None or NaN p-value is n/a, stays None and does not count in the
    family's size."""
    adjusted = stats.holm([None if pd.isna(p) else float(p) for p in p_values])
    return pd.Series(adjusted, dtype=object).to_numpy()


def significant(p_values: pd.Series) -> pd.Series:
    """Whether each adjusted p-value is below `SIGNIFICANT` (the one rule, `significance.significant`);
    False where it is n/a."""
    return _significant(pd.Series(p_values), SIGNIFICANT)


P_COLUMNS: dict[str, str] = {
    "p_holm": "Holm-adjusted randomization p",
    "p_randomization": "randomization p (unadjusted)",
    "p_ttest": "paired t-test p (unadjusted)",
    "p_wilcoxon": "Wilcoxon signed-rank p (unadjusted)",
}
"""The p-values a row of `Comparison.table` carries, in words."""


def table_rows(table: pd.DataFrame, *, metrics: Sequence[str] = (), families: Sequence[str] = (),
               alpha: float = 0.05, p_column: str = "p_holm", significant_only: bool = False,
               regressions_only: bool = False) -> pd.DataFrame:
    """The rows of a comparison's table the filters keep (empty `metrics` / `families`: all), with
    three columns added: `family` (`scoring.metrics.slices.family_of`), `significant` (`p_column` <
    `alpha`, the one rule `significance.significant`; False where that p-value is n/a) and `moves`
    (`change.moved`: better / worse / unchanged,
    the mean paired delta in the metric's direction). `regressions_only` keeps the rows that move worse."""
    if p_column not in P_COLUMNS:
        raise ValueError(f"unknown p-value column {p_column!r}")
    out = table.copy()
    out["family"] = out["slice"].map(slices.family_of)
    out["significant"] = _significant(out[p_column], alpha)
    out["moves"] = [change.moved(None if pd.isna(d) else float(d), bool(h))
                    for d, h in zip(out["delta"], out["higher_is_better"])]
    keep = pd.Series(True, index=out.index)
    if metrics:
        keep &= out["metric"].isin(list(metrics))
    if families:
        keep &= out["family"].isin([slices.family(f).name for f in families])
    if significant_only:
        keep &= out["significant"]
    if regressions_only:
        keep &= out["moves"] == "worse"
    return out[keep].reset_index(drop=True)


# --- one baseline, several candidates ------------------------------------------------------------

HOLM_FAMILY = "candidate x metric x slice"
"""What the Holm adjustment of a `Family` spans: every row of every candidate's table."""


@dataclass
class Family:
    """One baseline against one or more candidates (runs or groups), each compared as `compare` does.

    Every figure of a candidate's `Comparison` is the one a single comparison gives, except
    `p_holm`: the randomization p-values are Holm-adjusted once across the whole family (every
    candidate x metric x slice row, `n_tests` non-None p-values), so a candidate's `p_holm` is at
    least its single comparison's. With one candidate the family is that comparison's own table
    and nothing changes. Each candidate's verdict is its own policy evaluation, exactly the verdict
    of its single comparison: no gate reads `p_holm` (a `max_drop` gate runs its own one-sided test,
    declared per candidate in advance; adjusting it for the number of candidates would only let
    more drops pass).
    """

    comparisons: list[Comparison]
    n_tests: int

    @property
    def single(self) -> bool:
        return len(self.comparisons) == 1

    @property
    def baseline(self) -> Side:
        return self.comparisons[0].baseline

    @property
    def policy(self) -> Policy | None:
        return self.comparisons[0].policy

    @property
    def failed(self) -> bool:
        """Whether any candidate's verdict failed (the command's exit code 1)."""
        return any(c.verdict.failed for c in self.comparisons)

    @property
    def inconclusive(self) -> bool:
        """Whether no candidate failed and one is inconclusive (the command's exit code 3)."""
        return not self.failed and any(c.verdict.inconclusive for c in self.comparisons)

    @property
    def verdict(self) -> str:
        """``fail`` when any candidate fails, else ``inconclusive`` when one is, ``pass`` when every one
        passes, ``none`` without a policy."""
        if self.policy is None:
            return "none"
        return "fail" if self.failed else "inconclusive" if self.inconclusive else "pass"

    def holm_dict(self) -> dict[str, Any]:
        """What the reported `p_holm` is adjusted across (the JSON document's ``holm``), and
        `resolution_warning` (None when there is nothing to say)."""
        first = self.comparisons[0]
        return {"of": first.settings.holm_of, "across": HOLM_FAMILY, "candidates": len(self.comparisons),
                "tests": self.n_tests, "warning": self.resolution_warning()}

    def resolution_warning(self) -> str | None:
        """A sentence when the family is so large that no resampled randomization p can survive Holm:
        with B random sign patterns a p-value is at least 1 / (B + 1), and Holm multiplies the
        smallest by the number of tests."""
        resamples = self.comparisons[0].settings.randomization_resamples
        floor = self.n_tests / (resamples + 1)
        if self.single or floor < SIGNIFICANT:
            return None
        return (f"Holm over {self.n_tests:,} tests: a randomization p drawn from {resamples:,} sign patterns is at "
                f"least 1/{resamples + 1:,}, so no row tested by resampling can reach p_holm < {SIGNIFICANT:g} "
                f"(its smallest p_holm is {min(floor, 1.0):.3f}); only exact tests (at most "
                f"{self.comparisons[0].settings.exact_max} differing pairs) and the normal approximation (above "
                f"{self.comparisons[0].settings.large_sample:,}) can. Compare fewer candidates at once for "
                "significance marks")

    def holm_text(self) -> str:
        """What p_holm is, in words."""
        return (f"{self.comparisons[0].settings.holm_of} Holm-adjusted across the whole family "
                f"({len(self.comparisons)} candidates x metric x slice: {self.n_tests:,} tests)")

    def matrix(self, slice_: str = "all") -> pd.DataFrame:
        """One row per candidate (in the order given) and metric with a row on `slice_`: candidate,
        metric, metric_name, n, delta, p_holm (family-wide), significant (p_holm < 0.05), higher_is_better."""
        frames = []
        for c in self.comparisons:
            rows = c.table[c.table["slice"] == slice_]
            frames.append(pd.DataFrame({
                "candidate": c.candidate.name, "metric": rows["metric"].to_numpy(),
                "metric_name": rows["metric_name"].to_numpy(), "n": rows["n"].to_numpy(),
                "delta": rows["delta"].to_numpy(), "p_holm": rows["p_holm"].to_numpy(),
                "higher_is_better": rows["higher_is_better"].to_numpy()}))
        out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        out["significant"] = significant(out["p_holm"])
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``ragslice compare --format json``: with one candidate, that
        comparison's document (`Comparison.to_dict`, every key as before); with several, the keys
        the candidates share and the family's verdict. Both add ``candidates`` (one
        `Comparison.to_dict` per candidate, in the order given) and ``holm`` (what `p_holm` is
        adjusted across)."""
        docs = [c.to_dict() for c in self.comparisons]
        if self.single:
            return {**docs[0], "holm": self.holm_dict(), "candidates": docs}
        first = docs[0]
        shared = {key: first[key] for key in ("baseline", "suite", "suite_version", "labels_hash", "corpus_version",
                                              "n_questions", "policy", "settings")}
        return {"verdict": self.verdict, **shared, "holm": self.holm_dict(), "candidates": docs}


def adjust_family(comparisons: Sequence[Comparison]) -> int:
    """Holm-adjust every candidate's randomization p-values together (`holm_adjusted` over the rows
    of every table, in candidate order) and write the result to each table's `p_holm`; returns the
    number of tests (p-values that are not n/a). One comparison keeps its own adjustment."""
    p_values: list[Any] = []
    for c in comparisons:
        p_values += list(c.table[c.settings.holm_of])
    adjusted = holm_adjusted(p_values)
    at = 0
    for c in comparisons:
        size = len(c.table)
        if size:
            c.table = c.table.assign(p_holm=adjusted[at:at + size])
        at += size
    return sum(not pd.isna(p) for p in p_values)

"""Families of paired tests and their p-value corrections: one baseline against many candidates.

A family is every test whose p-values are adjusted together: the metric x slice rows of one
comparison's table (`scoring.decide.compute.compare`), every candidate's rows in a `Family`
(`compare_many`, ``candidate x metric x slice``), or the cells of a release matrix
(`scoring.decide.matrix`). The correction is chosen and applied here, once: `holm_adjusted` (Holm's
step-down adjustment, `multiplicity.holm`, of the randomization p-values, `Settings.holm_of`), and
`significant` marks an adjusted p-value below `SIGNIFICANT`; beside it, `fdr_adjusted` (Benjamini and
Hochberg's false discovery rate adjustment, `multiplicity.benjamini_hochberg`) gives `p_fdr`. Holm marks
claims: the chance of any false mark in the family stays at most alpha. BH marks cells worth
exploring: among the marks, the expected share of false ones stays at most alpha, so with many
cells it marks more. `P_COLUMNS` names every p-value a comparison's table carries and `table_rows`
filters a table by one of them.

A family's randomization p-values must be fine enough for its size: with B random sign patterns a
p-value is at least 1 / (B + 1), and Holm multiplies the smallest by the number of tests.
`resolve` recomputes, for a family too large for B, the tests that could be marked
(`Resolution`, `stats.fine_sign_flip_p`). This module reads no database and compares nothing itself.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import slices
from . import change, multiplicity, stats
from .clusters import sums as cluster_sums
from .paired import Comparison, Settings
from .significance import significant as _significant
from .policy import Policy
from .sides import Side

# --- p-value corrections -------------------------------------------------------------------------

SIGNIFICANT = 0.05
"""The `p_holm` below which a family's matrix marks a delta as significant."""


def holm_adjusted(p_values: Iterable[Any]) -> np.ndarray:
    """Holm's step-down adjustment (`multiplicity.holm`) of `p_values` taken as one family, in their
    order, as an object array: a None or NaN p-value is n/a, stays None and does not count in the
    family's size."""
    adjusted = multiplicity.holm([None if pd.isna(p) else float(p) for p in p_values])
    return pd.Series(adjusted, dtype=object).to_numpy()


def fdr_adjusted(p_values: Iterable[Any]) -> np.ndarray:
    """Benjamini-Hochberg adjustment (`multiplicity.benjamini_hochberg`) of `p_values` taken as one family, in
    their order, as an object array: a None or NaN p-value is n/a, stays None and does not count."""
    adjusted = multiplicity.benjamini_hochberg([None if pd.isna(p) else float(p) for p in p_values])
    return pd.Series(adjusted, dtype=object).to_numpy()


def significant(p_values: pd.Series) -> pd.Series:
    """Whether each adjusted p-value is below `SIGNIFICANT` (the one rule, `significance.significant`);
    False where it is n/a."""
    return _significant(pd.Series(p_values), SIGNIFICANT)


SIGNIFICANT_MARK = "†"
"""Marks a matrix delta whose family-wide Holm p is below `SIGNIFICANT`: a claim."""
FDR_MARK = "‡"
"""Marks a matrix delta whose family-wide Benjamini-Hochberg p, but not its Holm p, is below
`SIGNIFICANT`: a cell worth exploring, no claim."""


def cell_mark(holm: bool, fdr: bool) -> str:
    """A matrix delta's mark: `SIGNIFICANT_MARK` when Holm marks it, else `FDR_MARK` when BH does."""
    return SIGNIFICANT_MARK if holm else FDR_MARK if fdr else ""


MARKS = {
    "p_holm": "Holm marks claims: the chance of any false mark among all the family's tests stays at most alpha",
    "p_fdr": "Benjamini-Hochberg marks cells worth exploring: among the marked cells, the expected share of false "
             "marks stays at most alpha; with many cells it marks more than Holm, but a single mark is no claim",
}
"""Which adjusted p-value marks what, in words."""


P_COLUMNS: dict[str, str] = {
    "p_holm": "Holm-adjusted randomization p",
    "p_fdr": "Benjamini-Hochberg-adjusted randomization p (false discovery rate)",
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


# --- resolution: p-values fine enough for the family ---------------------------------------------

HEADROOM = 20
"""A family too large for its sampled tests draws ``HEADROOM x tests / alpha`` sign patterns per
refined test: the smallest p a refined test can report is a twentieth of what Holm needs to mark it."""
MAX_PATTERNS = 1_000_000
"""The most sign patterns a refined test draws (about a second for 1,000 differing pairs)."""
REFINE_BELOW = SIGNIFICANT
"""Only tests whose p-value is at most this are refined: a larger p can be marked by neither Holm
nor Benjamini-Hochberg (both mark only p-values below alpha)."""


@dataclass(frozen=True)
class Resolution:
    """How finely a family's randomization p-values were resolved (`resolve`).

    `patterns`: the random sign patterns of a sampled test (`Settings.randomization_resamples`);
    `refined_patterns`: those of a refined test, None when the family is small enough for `patterns`
    (then nothing is recomputed); `refined`: tests recomputed, `exact` of them exactly."""

    n_tests: int
    patterns: int
    refined_patterns: int | None = None
    refined: int = 0
    exact: int = 0
    exact_max: int = stats.EXACT_MAX
    large_sample: int = stats.LARGE_SAMPLE

    @property
    def finest(self) -> int:
        """The most patterns a sampled test of the family drew."""
        return max(self.patterns, self.refined_patterns or 0)

    @property
    def smallest_sampled_p_holm(self) -> float:
        """The smallest p_holm a test decided by random sign patterns can reach: tests / (patterns + 1)."""
        return min(1.0, self.n_tests / (self.finest + 1))

    def warning(self) -> str | None:
        """A sentence when no test decided by random sign patterns can reach p_holm < `SIGNIFICANT`
        (None when they can)."""
        if self.smallest_sampled_p_holm < SIGNIFICANT:
            return None
        exact = (f"at most {self.exact_max} differing pairs" if self.refined_patterns is None else
                 f"at most {self.exact_max} differing pairs, or, for this family, a sign-flip sum with at most "
                 f"{stats.EXACT_SUMS:,} values")
        return (f"Holm over {self.n_tests:,} tests: a randomization p drawn from {self.finest:,} sign patterns is at "
                f"least 1/{self.finest + 1:,}, so no row tested by resampling can reach p_holm < {SIGNIFICANT:g} "
                f"(its smallest p_holm is {self.smallest_sampled_p_holm:.3f}); only exact tests ({exact}) and the "
                f"normal approximation (above {self.large_sample:,}) can. Compare fewer candidates at once for "
                "significance marks")

    def to_dict(self) -> dict[str, Any]:
        """The JSON document's ``resolution``: the family's size, the patterns, what was refined, the
        smallest p_holm a sampled test can reach, the warning, and which adjusted p marks what."""
        return {"tests": self.n_tests, "alpha": SIGNIFICANT, "patterns": self.patterns,
                "refined_patterns": self.refined_patterns, "refined": self.refined, "exact": self.exact,
                "smallest_sampled_p_holm": self.smallest_sampled_p_holm, "warning": self.warning(), "marks": MARKS}


def family_patterns(n_tests: int, patterns: int) -> int | None:
    """The sign patterns a refined test of a family of `n_tests` draws, None when `patterns` suffice
    (``n_tests / (patterns + 1) < SIGNIFICANT``: a sampled test can reach a Holm mark):
    ``HEADROOM x n_tests / SIGNIFICANT``, at least `patterns`, at most `MAX_PATTERNS`."""
    if n_tests / (patterns + 1) < SIGNIFICANT:
        return None
    return min(MAX_PATTERNS, max(patterns, math.ceil(HEADROOM * n_tests / SIGNIFICANT)))


def resolve(p_values: Sequence[Any], floors: Sequence[Any], nonzero: Sequence[int],
            differences: Callable[[int], np.ndarray], settings: Settings
            ) -> tuple[list[Any], list[Any], Resolution]:
    """The family's randomization p-values (and each test's `p_floor`, the smallest p its method can
    report), resolved for the family's size.

    When ``tests / (patterns + 1)`` is at least `SIGNIFICANT` (no sampled test could reach a Holm mark),
    every test decided by random sign patterns (more than `exact_max`, at most `large_sample` differing
    pairs) whose p-value is at most `REFINE_BELOW` is recomputed by `stats.fine_sign_flip_p`: exactly
    when its sign-flip sum takes few enough values, else with `family_patterns` patterns (seeded). The
    others keep their p-value. Refining only small p-values keeps every p-value valid: for u below
    the cut-off, P(refined p <= u) <= u; above it, P(p <= u) <= P(first p <= u) <= u.
    `differences(i)`: test i's paired differences (n/a pairs excluded). Inputs are not changed.
    """
    p_out, floor_out = list(p_values), list(floors)
    n_tests = sum(not pd.isna(p) for p in p_out)
    base = settings.randomization_resamples
    patterns = family_patterns(n_tests, base)
    refined = exact = 0
    if patterns is not None:
        for i, (p, floor, m) in enumerate(zip(p_out, floor_out, nonzero)):
            if pd.isna(p) or pd.isna(floor) or float(p) > REFINE_BELOW or float(floor) <= 1 / (patterns + 1) \
                    or not settings.exact_max < int(m) <= settings.large_sample:
                continue
            fine = stats.fine_sign_flip_p(differences(i), resamples=patterns, seed=settings.seed,
                                          large_sample=settings.large_sample)
            if fine.method == "sampled" and patterns <= base:
                continue  # no finer than the first p-value
            p_out[i], floor_out[i] = fine.p, fine.floor
            refined += 1
            exact += fine.method == "exact"
    return p_out, floor_out, Resolution(n_tests, base, patterns, refined, exact, settings.exact_max,
                                        settings.large_sample)


def p_floors(nonzero: Sequence[int], p_values: Sequence[Any], settings: Settings) -> list[float | None]:
    """Each test's `p_floor` before `resolve`: the smallest randomization p its method can report with
    its m differing pairs (`stats.sign_flip_floor`); None where the p-value is n/a."""
    return [None if pd.isna(p) else stats.sign_flip_floor(int(m), resamples=settings.randomization_resamples,
                                                          exact_max=settings.exact_max,
                                                          large_sample=settings.large_sample)
            for m, p in zip(nonzero, p_values)]


# --- one baseline, several candidates ------------------------------------------------------------

HOLM_FAMILY = "candidate x metric x slice"
"""What the Holm adjustment of a `Family` spans: every row of every candidate's table."""


@dataclass
class Family:
    """One baseline against one or more candidates (runs or groups), each compared as `compare` does.

    Every figure of a candidate's `Comparison` is the one a single comparison gives, except
    `p_holm` and `p_fdr`: the randomization p-values are Holm- and BH-adjusted once across the whole
    family (every candidate x metric x slice row, `n_tests` non-None p-values), so a candidate's
    `p_holm` is at least its single comparison's; and, in a family too large for its sampled tests
    (`Resolution`), the small randomization p-values, recomputed finer (`resolve`). With one
    candidate the family is that comparison's own table and nothing changes. Each candidate's
    verdict is its own policy evaluation, exactly the verdict of its single comparison: no gate
    reads `p_holm` (a `max_drop` gate runs its own one-sided test,
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

    @property
    def resolution(self) -> Resolution:
        """How finely the family's randomization p-values are resolved."""
        found = self.comparisons[0].resolution
        if found is None:
            settings = self.comparisons[0].settings
            return Resolution(self.n_tests, settings.randomization_resamples, exact_max=settings.exact_max,
                              large_sample=settings.large_sample)
        return found

    def holm_dict(self) -> dict[str, Any]:
        """What the reported `p_holm` is adjusted across (the JSON document's ``holm``), and
        `resolution_warning` (None when there is nothing to say)."""
        first = self.comparisons[0]
        return {"of": first.settings.holm_of, "across": HOLM_FAMILY, "candidates": len(self.comparisons),
                "tests": self.n_tests, "warning": self.resolution_warning()}

    def resolution_warning(self) -> str | None:
        """A sentence when the family is so large that no resampled randomization p can survive Holm
        even at the family's resolution (`Resolution.warning`): with B random sign patterns a p-value
        is at least 1 / (B + 1), and Holm multiplies the smallest by the number of tests."""
        return self.resolution.warning()

    def holm_text(self) -> str:
        """What p_holm is, in words."""
        return (f"{self.comparisons[0].settings.holm_of} Holm-adjusted across the whole family "
                f"({len(self.comparisons)} candidates x metric x slice: {self.n_tests:,} tests)")

    def matrix(self, slice_: str = "all") -> pd.DataFrame:
        """One row per candidate (in the order given) and metric with a row on `slice_`: candidate,
        metric, metric_name, n, delta, p_holm (family-wide), significant (p_holm < 0.05), higher_is_better,
        p_fdr (family-wide) and fdr_significant (p_fdr < 0.05)."""
        frames = []
        for c in self.comparisons:
            rows = c.table[c.table["slice"] == slice_]
            frames.append(pd.DataFrame({
                "candidate": c.candidate.name, "metric": rows["metric"].to_numpy(),
                "metric_name": rows["metric_name"].to_numpy(), "n": rows["n"].to_numpy(),
                "delta": rows["delta"].to_numpy(), "p_holm": rows["p_holm"].to_numpy(),
                "higher_is_better": rows["higher_is_better"].to_numpy(), "p_fdr": rows["p_fdr"].to_numpy()}))
        out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        out["significant"] = significant(out["p_holm"])
        out["fdr_significant"] = significant(out["p_fdr"])
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
                                              "n_questions", "clusters", "cluster_by", "policy", "settings",
                                              "resolution")}
        return {"verdict": self.verdict, **shared, "holm": self.holm_dict(), "candidates": docs}


def _floats(values: Sequence[Any]) -> np.ndarray:
    """A float column: None and NaN as NaN."""
    return np.array([np.nan if pd.isna(v) else float(v) for v in values], dtype=float)


def differences(c: Comparison, metric: str, slice_name: str) -> np.ndarray:
    """The paired differences (candidate - baseline, n/a pairs excluded) behind the row of `c.table`
    for `metric` on `slice_name`, in suite order; for a clustered comparison, what its sign-flip test
    flips: the cluster sums of those differences (`clusters.sums`)."""
    mask = slices.mask(c.questions, slices.parse_slice(slice_name))
    candidate = c.values["candidate"][metric].to_numpy(dtype=float)[mask]
    d = candidate - c.values["baseline"][metric].to_numpy(dtype=float)[mask]
    keep = ~np.isnan(d)
    if c.clusters is None:
        return d[keep]
    return cluster_sums(d[keep], c.clusters.codes[mask][keep])[0]


def adjust_family(comparisons: Sequence[Comparison]) -> int:
    """Resolve every candidate's randomization p-values for the family's size (`resolve`), then Holm-
    and BH-adjust them together (`holm_adjusted`, `fdr_adjusted` over the rows of every table, in
    candidate order), writing `p_randomization`, `p_floor`, `p_holm`, `p_fdr` and each comparison's
    `resolution`; returns the number of tests (p-values that are not n/a). One comparison keeps its
    own figures."""
    if len(comparisons) == 1:
        c = comparisons[0]
        return sum(not pd.isna(p) for p in c.table[c.settings.holm_of])
    rows = [(c, r) for c in comparisons for r in zip(c.table["metric"], c.table["slice"])]
    settings = comparisons[0].settings
    p_values, floors, resolution = resolve(
        [p for c in comparisons for p in c.table["p_randomization"]],
        [f for c in comparisons for f in c.table["p_floor"]],
        [int(i + r) if c.clusters is None else int(np.count_nonzero(np.abs(differences(c, m, s)) > change.TIE))
         for c in comparisons for i, r, m, s in zip(c.table["improved"], c.table["regressed"], c.table["metric"],
                                                   c.table["slice"])],
        lambda i: differences(rows[i][0], *rows[i][1]), settings)
    at = 0
    for c in comparisons:
        size = len(c.table)
        if size:
            c.table = c.table.assign(p_randomization=_floats(p_values[at:at + size]),
                                     p_floor=_floats(floors[at:at + size]))
        c.resolution = resolution
        at += size
    tested = [p for c in comparisons for p in c.table[settings.holm_of]]
    holm, fdr = holm_adjusted(tested), fdr_adjusted(tested)
    at = 0
    for c in comparisons:
        size = len(c.table)
        if size:
            c.table = c.table.assign(p_holm=holm[at:at + size], p_fdr=fdr[at:at + size])
        at += size
    return sum(not pd.isna(p) for p in tested)

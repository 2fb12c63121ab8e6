"""Paired statistics over per-question values: intervals, tests, multiplicity, warnings.

The samples are questions. A baseline value and a candidate value for the same question form a
pair; the difference is ``candidate - baseline``. Pairs where either side is n/a (None or NaN) are
excluded before anything is computed, so ``n`` is the number of questions scored on both sides.

Every random procedure is seeded and declares its size, so each figure can be reproduced:

- the **bootstrap** interval is the percentile interval of the mean difference over
  `resamples` resamples of the n differences with replacement (drawn as question indexes, or,
  when the differences take few distinct values, as multinomial counts over those values: the
  same distribution, drawn faster);
- the **randomization** test flips the sign of each difference (H0: differences are symmetric
  about zero); it enumerates all ``2**m`` sign patterns when the m non-zero differences number at
  most `exact_max`, otherwise it draws `resamples` patterns and reports ``(1 + hits) / (1 + B)``;
- the **t-test** is scipy's paired t-test, the **Wilcoxon** test scipy's signed-rank test (zero
  differences dropped, scipy's exact or normal method).
"""
from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import stats as _scipy

BOOTSTRAP_RESAMPLES = 10_000
RANDOMIZATION_RESAMPLES = 10_000
EXACT_MAX = 16
CONFIDENCE = 0.95
SMALL_N = 10
"""Below this many pairs the bootstrap interval is too narrow and the t-test's normality cannot be checked."""
FEW_DISTINCT = 25
"""Resample by counts over distinct values when there are at most n / FEW_DISTINCT of them (faster);
sign flips by counts when there are at most n / (2 * FEW_DISTINCT)."""
TIE = 1e-9
"""Two values closer than this are equal (per-question values may be means over repeats)."""

Alternative = Literal["two-sided", "less", "greater"]
TestName = Literal["randomization", "ttest", "wilcoxon"]
TESTS: tuple[str, ...] = ("randomization", "ttest", "wilcoxon")


@dataclass(frozen=True)
class Paired:
    """One paired comparison. Means are macro means over the n paired questions.

    `improved` / `regressed` follow the metric's direction (`higher_is_better`); `unchanged` pairs
    differ by less than `TIE`. p-values are two-sided; None where the test is undefined.
    """

    n: int
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_ttest: float | None
    p_wilcoxon: float | None
    p_randomization: float | None
    improved: int
    regressed: int
    unchanged: int
    warnings: tuple[str, ...] = field(default=())


def pairs(baseline: Sequence[float | None], candidate: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs where both sides have a value, as two float arrays (n/a: None or NaN)."""
    if len(baseline) != len(candidate):
        raise ValueError(f"paired samples differ in length: {len(baseline)} baseline, {len(candidate)} candidate")
    b = np.array([np.nan if v is None else float(v) for v in baseline], dtype=float)
    c = np.array([np.nan if v is None else float(v) for v in candidate], dtype=float)
    keep = ~(np.isnan(b) | np.isnan(c))
    return b[keep], c[keep]


def _clean(diffs: Sequence[float] | np.ndarray) -> np.ndarray:
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1:
        raise ValueError("differences must be one-dimensional")
    if np.isnan(d).any():
        raise ValueError("differences contain n/a: drop unpaired questions first (see `pairs`)")
    return d


def _distinct(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values (ties within TIE merged) and how often each occurs."""
    rounded = np.round(d / TIE) * TIE
    values, counts = np.unique(rounded, return_counts=True)
    # represent each group by the mean of its members so merged values keep their exact sum
    sums = np.zeros(len(values))
    np.add.at(sums, np.searchsorted(values, rounded), d)
    return sums / counts, counts


def bootstrap_ci(
    diffs: Sequence[float] | np.ndarray,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean difference; None when there is no difference.

    Each resample draws n differences with replacement; the interval is the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the resampled means
    (numpy's default linear interpolation).
    """
    d = _clean(diffs)
    n = len(d)
    if n == 0:
        return None
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError("resamples must be >= 1 and confidence between 0 and 1")
    values, counts = _distinct(d)
    if len(values) == 1:
        return float(values[0]), float(values[0])
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    by_counts = len(values) * FEW_DISTINCT <= n
    step = max(1, 2_000_000 // (len(values) if by_counts else n))
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        if by_counts:
            means[start : start + size] = rng.multinomial(n, counts / n, size=size) @ values / n
        else:
            means[start : start + size] = d[rng.integers(0, n, size=(size, n))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def sign_flip_p(
    diffs: Sequence[float] | np.ndarray,
    *,
    alternative: Alternative = "two-sided",
    resamples: int = RANDOMIZATION_RESAMPLES,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
) -> float | None:
    """Paired sign-flip randomization p-value for the mean difference (statistic: the sum).

    Two-sided: share of sign patterns with ``|sum| >= |observed sum|``; "less": ``sum <= observed``;
    "greater": ``sum >= observed``. Zero differences do not change the sum and are left out of the
    enumeration. Exact over all ``2**m`` patterns when m <= `exact_max`; otherwise `resamples`
    random patterns plus the observed one (``(1 + hits) / (1 + resamples)``). None when n = 0.
    """
    d = _clean(diffs)
    if len(d) == 0:
        return None
    nz = d[np.abs(d) > TIE]
    observed = float(nz.sum())
    slack = 1e-9 * max(1.0, float(np.abs(nz).sum()))
    m = len(nz)
    if m <= exact_max:
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1) * 2 - 1 if m else np.ones((1, 0))
        sums = patterns @ nz if m else np.zeros(1)
        return _tail_share(sums, observed, slack, alternative, plus_one=False)
    rng = np.random.default_rng(seed)
    values, counts = _distinct(np.abs(nz))
    by_counts = len(values) * 2 * FEW_DISTINCT <= m
    hits = 0
    step = max(1, 2_000_000 // (len(values) if by_counts else m))
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        if by_counts:
            sums = (2 * rng.binomial(counts, 0.5, size=(size, len(values))) - counts) @ values
        else:
            # one random bit per difference: bit 1 keeps its sign, bit 0 flips it
            bits = np.unpackbits(rng.integers(0, 256, size=(size, (m + 7) // 8), dtype=np.uint8), axis=1, count=m)
            sums = bits @ (2 * nz) - nz.sum()
        hits += _tail_hits(sums, observed, slack, alternative)
    return (1 + hits) / (1 + resamples)


def _tail_hits(sums: np.ndarray, observed: float, slack: float, alternative: Alternative) -> int:
    if alternative == "two-sided":
        return int(np.count_nonzero(np.abs(sums) >= abs(observed) - slack))
    if alternative == "less":
        return int(np.count_nonzero(sums <= observed + slack))
    if alternative == "greater":
        return int(np.count_nonzero(sums >= observed - slack))
    raise ValueError(f"unknown alternative {alternative!r}")


def _tail_share(sums: np.ndarray, observed: float, slack: float, alternative: Alternative, *, plus_one: bool) -> float:
    hits = _tail_hits(sums, observed, slack, alternative)
    return (hits + plus_one) / (len(sums) + plus_one)


def ttest_p(
    diffs: Sequence[float] | np.ndarray, *, alternative: Alternative = "two-sided", mu: float = 0.0
) -> float | None:
    """scipy's one-sample t-test of the differences against `mu` (the paired t-test when mu = 0).

    None when n < 2 or the differences have no spread (the statistic is 0/0 or infinite).
    """
    d = _clean(diffs)
    if len(d) < 2 or np.ptp(d) <= TIE:
        return None
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        p = float(_scipy.ttest_1samp(d, mu, alternative=alternative).pvalue)
    return None if math.isnan(p) else p


def wilcoxon_p(
    diffs: Sequence[float] | np.ndarray, *, alternative: Alternative = "two-sided", mu: float = 0.0
) -> float | None:
    """scipy's Wilcoxon signed-rank test of ``diffs - mu`` (zero differences dropped).

    1.0 when every difference equals `mu` (no signed rank to test); None when n = 0.
    """
    d = _clean(diffs) - mu
    if len(d) == 0:
        return None
    if not (np.abs(d) > TIE).any():
        return 1.0
    d = np.where(np.abs(d) > TIE, d, 0.0)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        p = float(_scipy.wilcoxon(d, zero_method="wilcox", alternative=alternative).pvalue)
    return None if math.isnan(p) else p


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values over the family of non-None p-values (order kept).

    With the m p-values sorted ascending, ``p_holm(i) = min(1, max_{j <= i} (m - j + 1) p(j))``
    (1-based ranks); None stays None and does not count in m.
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None and not math.isnan(p)]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: (pvalues[i], i))):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))  # type: ignore[arg-type]
        out[i] = running
    return out


def min_sign_p(m: int) -> float:
    """The smallest two-sided p a sign-based test (Wilcoxon, sign-flip) can reach with m non-zero pairs."""
    return min(1.0, 2.0 ** (1 - m)) if m else 1.0


def small_sample_warnings(n: int, nonzero: int, *, alpha: float = 0.05) -> tuple[str, ...]:
    """Plain warnings for a paired sample too small for a test to mean anything."""
    if n == 0:
        return ("no question is scored on both sides: nothing to compare",)
    if n == 1:
        return ("n = 1: one paired question; no interval or test is possible",)
    out = []
    floor = min_sign_p(nonzero)
    if nonzero == 0:
        out.append(f"n = {n}: every paired difference is zero; there is no change to test")
    elif floor > alpha:
        out.append(
            f"only {nonzero} of n = {n} pairs differ: the Wilcoxon and randomization tests cannot go below "
            f"p = {floor:.3g}, so they cannot reach {alpha:g}"
        )
    if n < SMALL_N:
        out.append(
            f"n = {n} < {SMALL_N}: the bootstrap interval is too narrow and the t-test's normality cannot be "
            "checked; read the per-question deltas instead"
        )
    return tuple(out)


def paired(
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    *,
    higher_is_better: bool = True,
    seed: int = 0,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
    randomization_resamples: int = RANDOMIZATION_RESAMPLES,
    exact_max: int = EXACT_MAX,
    confidence: float = CONFIDENCE,
) -> Paired:
    """Compare paired per-question values (n/a pairs excluded); see the module docstring for methods.

    The interval and tests need n >= 2; below that they are None and a warning says why.
    """
    b, c = pairs(baseline, candidate)
    n = len(b)
    d = c - b
    nonzero = int(np.count_nonzero(np.abs(d) > TIE))
    up = int(np.count_nonzero(d > TIE))
    down = int(np.count_nonzero(d < -TIE))
    improved, regressed = (up, down) if higher_is_better else (down, up)
    notes = small_sample_warnings(n, nonzero, alpha=1 - confidence)
    if n == 0:
        return Paired(0, None, None, None, None, None, None, None, None, 0, 0, 0, notes)
    delta = float(d.mean())
    if n < 2:
        return Paired(n, float(b.mean()), float(c.mean()), delta, None, None, None, None, None,
                      improved, regressed, n - nonzero, notes)
    low, high = bootstrap_ci(d, resamples=bootstrap_resamples, seed=seed, confidence=confidence) or (None, None)
    if nonzero and np.ptp(d) <= TIE:
        notes += ("every paired difference is the same: the t-test is undefined (no spread)",)
    return Paired(
        n=n,
        baseline=float(b.mean()),
        candidate=float(c.mean()),
        delta=delta,
        ci_low=low,
        ci_high=high,
        p_ttest=ttest_p(d),
        p_wilcoxon=wilcoxon_p(d),
        p_randomization=sign_flip_p(d, resamples=randomization_resamples, seed=seed, exact_max=exact_max),
        improved=improved,
        regressed=regressed,
        unchanged=n - nonzero,
        warnings=notes,
    )


def drop_p(
    better: Sequence[float] | np.ndarray,
    max_drop: float,
    *,
    test: TestName = "randomization",
    seed: int = 0,
    resamples: int = RANDOMIZATION_RESAMPLES,
    exact_max: int = EXACT_MAX,
) -> float | None:
    """One-sided p-value that the mean change is worse than ``-max_drop``.

    `better` holds differences oriented so positive means better (``candidate - baseline`` for a
    higher-is-better metric, its negation otherwise). H0: the true mean change is >= -max_drop;
    H1: it is < -max_drop. A small p means the drop beyond the tolerated `max_drop` is significant.
    None when n < 2 (randomization: n = 0) or the chosen test is undefined.
    """
    d = _clean(better)
    if test == "randomization":
        return sign_flip_p(d + max_drop, alternative="less", resamples=resamples, seed=seed, exact_max=exact_max)
    if test == "ttest":
        return ttest_p(d, alternative="less", mu=-max_drop)
    if test == "wilcoxon":
        return wilcoxon_p(d, alternative="less", mu=-max_drop)
    raise ValueError(f"unknown test {test!r}; known: {', '.join(TESTS)}")

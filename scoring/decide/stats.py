"""Paired statistics over per-question values: intervals, tests, multiplicity, warnings.

The samples are questions. A baseline value and a candidate value for the same question form a
pair; the difference is ``candidate - baseline``. Pairs where either side is n/a (None or NaN) are
excluded before anything is computed, so ``n`` is the number of questions scored on both sides;
``m`` is the number of them whose difference is non-zero (``|d| > TIE``).

Every random procedure is seeded and declares its size, so each figure can be reproduced:

- the **bootstrap** interval is the percentile interval of the mean difference over `resamples`
  resamples of the n differences with replacement. The resamples are the rows of a matrix of
  question indexes drawn from ``default_rng(seed)`` block by block,
  ``integers(0, n, (BLOCK // n, n), dtype=uint16)``, so every sample of the same size n and seed
  uses the same index matrix. When n is above `LARGE_SAMPLE` but m is not, only the draws that land
  on a non-zero difference are made: their number per resample is binomial(n, m / n), each uniform
  over the m non-zero differences (the same distribution, with work proportional to m); and when,
  in that case, the sample's K distinct differences (0 included) number at most m / `FEW_VALUES`,
  a resample is drawn as how often it takes each of them:
  ``default_rng(seed).multinomial(n, counts / n, size=resamples)``, values in ascending order (the
  same distribution again, with work proportional to K);
- the **randomization** test flips the signs of the m non-zero differences (H0: differences are
  symmetric about zero; statistic: their sum). It enumerates all ``2**m`` sign patterns when
  m <= `exact_max`; otherwise it draws `resamples` patterns and reports ``(1 + hits) / (1 + B)``.
  Pattern r keeps the sign of the j-th non-zero difference (question order) when bit r of row j of
  ``default_rng(seed).integers(0, 2**32, (m, ceil(B / 32)), uint32)`` (little-endian) is 1 and
  flips it otherwise, so samples with the same seed share the patterns of their first differences.
  When the m differences take at most m / `FEW_SIGN_VALUES` distinct absolute values a_k (c_k
  differences each, ascending), a pattern is drawn as how many of each keep their sign:
  ``kept = default_rng(seed).binomial(counts, 0.5, size=(resamples, K))``, its sum
  ``(2 * kept - counts) @ values`` (the same distribution, with work proportional to K);
- **large samples**: when m is above `LARGE_SAMPLE`, resampling is replaced by its normal limit:
  the interval is ``mean ± z * s / sqrt(n)`` (s the sample standard deviation, z the normal
  quantile of the confidence level) and the randomization p-value is the normal approximation of
  the sign-flip distribution, whose exact mean is 0 and variance ``sum(d_i**2)``. Each result
  names its method: ``resampling`` or ``normal``;
- the **t-test** is the paired t-test, computed as scipy's ``ttest_1samp`` computes it (mean, ddof=1
  variance, Student t with n - 1 df);
- the **Wilcoxon** test is scipy's signed-rank test with zero differences dropped and scipy's
  default method: its exact distribution for at most `WILCOXON_SCIPY_MAX` differences (zeros
  included) without zeros or ties, all sign patterns for at most 13 with them, and otherwise its
  normal approximation (tie-corrected variance, no continuity correction). scipy runs the first;
  the other two are computed here as scipy computes them (the normal one with one ranking shared
  by every subset of the same values), because scipy's own take milliseconds to a quarter second
  per call.
"""
from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import special as _special

BOOTSTRAP_RESAMPLES = 10_000
RANDOMIZATION_RESAMPLES = 10_000
EXACT_MAX = 16
CONFIDENCE = 0.95
SMALL_N = 10
"""Below this many pairs the bootstrap interval is too narrow and the t-test's normality cannot be checked."""
LARGE_SAMPLE = 1_000
"""Above this many non-zero paired differences the interval and the randomization test use their normal
large-sample forms (method ``normal``); at most this many, resampling (method ``resampling``)."""
WILCOXON_SCIPY_MAX = 50
"""scipy's default Wilcoxon method is its normal approximation above this many differences (zeros included)."""
TIE = 1e-9
"""Two values closer than this are equal (per-question values may be means over repeats)."""
BLOCK = 65_536
"""Bootstrap index draws made and counted at once (sized to stay in the processor's cache)."""
FEW_VALUES = 16
"""The bootstrap of more than `LARGE_SAMPLE` questions draws counts of distinct values when their
number times this is at most m (module docstring)."""
FEW_SIGN_VALUES = 64
"""The sampled sign-flip test draws counts of distinct |differences| when their number times this is
at most m (module docstring)."""

Alternative = Literal["two-sided", "less", "greater"]
TestName = Literal["randomization", "ttest", "wilcoxon"]
Method = Literal["resampling", "normal"]
TESTS: tuple[str, ...] = ("randomization", "ttest", "wilcoxon")


@dataclass(frozen=True)
class Paired:
    """One paired comparison. Means are macro means over the n paired questions.

    `improved` / `regressed` follow the metric's direction (`higher_is_better`); `unchanged` pairs
    differ by less than `TIE`. p-values are two-sided; None where the test is undefined. `method`:
    ``resampling`` (bootstrap interval, sign-flip test exact or sampled) or ``normal`` (more than
    `LARGE_SAMPLE` non-zero differences); None when n < 2 (no interval or test).
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
    method: Method | None = None


def pairs(baseline: Sequence[float | None], candidate: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs where both sides have a value, as two float arrays (n/a: None or NaN)."""
    if len(baseline) != len(candidate):
        raise ValueError(f"paired samples differ in length: {len(baseline)} baseline, {len(candidate)} candidate")
    b, c = _floats(baseline), _floats(candidate)
    keep = ~(np.isnan(b) | np.isnan(c))
    return b[keep], c[keep]


def _floats(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        return values.astype(float, copy=False)
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def _clean(diffs: Sequence[float] | np.ndarray) -> np.ndarray:
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1:
        raise ValueError("differences must be one-dimensional")
    if np.isnan(d).any():
        raise ValueError("differences contain n/a: drop unpaired questions first (see `pairs`)")
    return d


def _check_sizes(resamples: int, confidence: float = CONFIDENCE) -> None:
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError("resamples must be >= 1 and confidence between 0 and 1")


# --- the bootstrap -------------------------------------------------------------------------------


def _bootstrap_means(d: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Resampled means of every column of `d` (n x r), all columns drawn with the same indexes."""
    n = d.shape[0]
    rng = np.random.default_rng(seed)
    # four columns per product: each BLAS call stays within 2**18 multiply-adds, which OpenBLAS (numpy's
    # default) runs on one thread (more threads only contend on a busy machine); padding keeps every
    # column on the same kernel, so a column's means do not depend on the columns beside it
    width = -(-d.shape[1] // 4) * 4
    padded = np.zeros((n, width))
    padded[:, :d.shape[1]] = d
    groups = [np.ascontiguousarray(padded[:, col:col + 4]) for col in range(0, width, 4)]
    means = np.empty((resamples, width))
    step = max(1, BLOCK // n)
    offsets = (np.arange(step, dtype=np.int64) * n)[:, None]
    dtype = _index_type(n)
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        idx = rng.integers(0, n, size=(size, n), dtype=dtype)
        counts = np.bincount((idx + offsets[:size]).ravel(), minlength=size * n).reshape(size, n).astype(float)
        for g, group in enumerate(groups):
            means[start:start + size, 4 * g:4 * g + 4] = counts @ group
    return means[:, :d.shape[1]] / n


def _index_type(n: int) -> type:
    """The narrowest index type numpy draws fastest for indexes below n."""
    return np.uint16 if n <= 2**16 else np.int64


def _bootstrap_means_sparse(nonzero: np.ndarray, n: int, resamples: int, seed: int) -> np.ndarray:
    """Resampled means of n differences of which only `nonzero` (m values) are not zero.

    A resample's draws that land on a non-zero difference number binomial(n, m / n); each is uniform
    over the m non-zero differences; the other draws add zero.
    """
    m = len(nonzero)
    rng = np.random.default_rng(seed)
    hits = rng.binomial(n, m / n, size=resamples)
    sums = np.empty(resamples)
    step = max(1, BLOCK // max(1, m))
    for start in range(0, resamples, step):
        k = hits[start:start + step]
        idx = rng.integers(0, m, size=int(k.sum()), dtype=_index_type(m))
        drawn = np.append(nonzero[idx], 0.0)  # the 0.0 closes the last resample's run
        part = np.add.reduceat(drawn, np.cumsum(k) - k)  # resample b sums its run of k[b] draws
        part[k == 0] = 0.0  # reduceat gives the next draw for an empty run
        sums[start:start + len(k)] = part
    return sums / n


def _bootstrap_values(nonzero: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """For a sample of n > `LARGE_SAMPLE` questions with m non-zero differences: its distinct differences
    (0 for the n - m others) and how many questions have each, when `FEW_VALUES` per distinct value are
    at most m (the draws of a resample on non-zero differences); None otherwise."""
    m = len(nonzero)
    if FEW_VALUES > m:
        return None
    values, counts = np.unique(nonzero, return_counts=True)
    if FEW_VALUES * (len(values) + 1) > m:
        return None
    at = int(np.searchsorted(values, 0.0))  # the n - m differences within TIE of 0 add 0
    return np.insert(values, at, 0.0), np.insert(counts, at, n - m)


def _bootstrap_means_counted(values: np.ndarray, counts: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Resampled means drawn as counts: how often each distinct value is drawn in n draws with
    replacement is multinomial(n, counts / n), so each resample costs one draw per distinct value."""
    n = int(counts.sum())
    drawn = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    return drawn @ values / n


def _normal_interval(d: np.ndarray, confidence: float) -> tuple[float, float]:
    n = len(d)
    mean = float(d.mean())
    half = float(_special.ndtri(0.5 + confidence / 2)) * math.sqrt(_variance(d, mean) / n)
    return mean - half, mean + half


def _variance(d: np.ndarray, mean: float) -> float:
    """ddof=1 variance as scipy computes it (second central moment times n / (n - 1))."""
    n = len(d)
    return float(np.mean((d - mean) ** 2)) * (n / (n - 1))


def bootstrap_ci(
    diffs: Sequence[float] | np.ndarray,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    large_sample: int = LARGE_SAMPLE,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean difference; None when there is no difference.

    Each resample draws n differences with replacement; the interval is the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the resampled means
    (numpy's default linear interpolation). Differences that all agree within `TIE` give
    ``(mean, mean)``. Above `large_sample` non-zero differences: the normal interval (module docstring).
    """
    d = _clean(diffs)
    n = len(d)
    if n == 0:
        return None
    _check_sizes(resamples, confidence)
    if np.ptp(d) <= TIE:
        mean = float(d.mean())
        return mean, mean
    nonzero = d[np.abs(d) > TIE]
    if len(nonzero) > large_sample:
        return _normal_interval(d, confidence)
    counted = _bootstrap_values(nonzero, n) if n > large_sample else None
    if counted is not None:
        means = _bootstrap_means_counted(*counted, resamples, seed)
    elif n > large_sample:
        means = _bootstrap_means_sparse(nonzero, n, resamples, seed)
    else:
        means = _bootstrap_means(d[:, None], resamples, seed)[:, 0]
    return _percentile_interval(means, confidence)


def _percentile_interval(means: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


# --- the sign-flip randomization test ------------------------------------------------------------


def _all_sign_sums(nonzero: np.ndarray) -> np.ndarray:
    """The sums of `nonzero` under all 2**m sign patterns (in no particular order)."""
    sums = np.zeros(1)
    for v in nonzero:
        sums = np.concatenate((sums + v, sums - v))
    return sums


def _sign_bits(width: int, resamples: int, seed: int) -> np.ndarray:
    """(width x resamples) 0/1 matrix: bit r of row j keeps (1) or flips (0) difference j in pattern r.

    Row j depends only on j, the seed and `resamples`, never on `width`.
    """
    words = (resamples + 31) // 32
    raw = np.random.default_rng(seed).integers(0, 2**32, size=(width, words), dtype=np.uint32)
    return np.unpackbits(raw.astype("<u4").view(np.uint8), axis=1, count=resamples, bitorder="little")


_BYTE_SIGNS = (((np.arange(256)[:, None] >> np.arange(8)) & 1) * 2 - 1).astype(float)
"""Row v: the signs (+1 kept, -1 flipped) that the 8 bits of byte value v give to 8 differences."""


def _sampled_sums(nonzero: Sequence[np.ndarray], resamples: int, seed: int) -> np.ndarray:
    """Sums under `resamples` random sign patterns for each vector of non-zero differences (rows x B).

    Bits are packed 8 differences to a byte; each vector gets a table of the 256 partial sums per
    byte, so a pattern's sum is one lookup per 8 differences (plain numpy, no BLAS threads).
    """
    width = max(len(v) for v in nonzero)
    packed = np.packbits(_sign_bits(width, resamples, seed), axis=0, bitorder="little")
    sums = np.empty((len(nonzero), resamples))
    for i, v in enumerate(nonzero):
        chunks = -(-len(v) // 8)
        padded = np.zeros(chunks * 8)
        padded[:len(v)] = v
        table = (padded.reshape(chunks, 1, 8) * _BYTE_SIGNS).sum(axis=2)  # chunks x 256
        step = max(1, BLOCK * 4 // chunks)
        for start in range(0, resamples, step):
            block = packed[:chunks, start:start + step]
            sums[i, start:start + step] = table[np.arange(chunks)[:, None], block].sum(axis=0)
    return sums


def _counted_sign_sums(nonzero: np.ndarray, resamples: int, seed: int) -> np.ndarray | None:
    """Sums under `resamples` random sign patterns drawn as counts, when the m non-zero differences take
    at most m / `FEW_SIGN_VALUES` distinct absolute values (else None): of the c_k differences of
    absolute value a_k, binomial(c_k, 1/2) keep their sign, so a pattern's sum is
    sum_k a_k (2 kept_k - c_k)."""
    if FEW_SIGN_VALUES > len(nonzero):
        return None
    values, counts = np.unique(np.abs(nonzero), return_counts=True)
    if FEW_SIGN_VALUES * len(values) > len(nonzero):
        return None
    kept = np.random.default_rng(seed).binomial(counts, 0.5, size=(resamples, len(values)))
    return (2 * kept - counts) @ values


def _slack(nonzero: np.ndarray) -> float:
    return 1e-9 * max(1.0, float(np.abs(nonzero).sum()))


def _normal_sign_flip_p(nonzero: np.ndarray, alternative: Alternative) -> float:
    """Normal approximation of the sign-flip p-value: the sum has mean 0 and variance sum(d**2)."""
    z = float(nonzero.sum()) / math.sqrt(float(np.square(nonzero).sum()))
    return _normal_p(z, alternative)


def _normal_p(z: float, alternative: Alternative) -> float:
    if alternative == "two-sided":
        return min(1.0, 2 * float(_special.ndtr(-abs(z))))
    if alternative == "less":
        return float(_special.ndtr(z))
    if alternative == "greater":
        return float(_special.ndtr(-z))
    raise ValueError(f"unknown alternative {alternative!r}")


def sign_flip_p(
    diffs: Sequence[float] | np.ndarray,
    *,
    alternative: Alternative = "two-sided",
    resamples: int = RANDOMIZATION_RESAMPLES,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
    large_sample: int = LARGE_SAMPLE,
) -> float | None:
    """Paired sign-flip randomization p-value for the mean difference (statistic: the sum).

    Two-sided: share of sign patterns with ``|sum| >= |observed sum|``; "less": ``sum <= observed``;
    "greater": ``sum >= observed``. Zero differences do not change the sum and are left out. Above
    `large_sample` non-zero differences the normal approximation; otherwise exact over all ``2**m``
    patterns when m <= `exact_max`, else `resamples` random patterns plus the observed one
    (``(1 + hits) / (1 + resamples)``). None when n = 0.
    """
    d = _clean(diffs)
    if len(d) == 0:
        return None
    _check_sizes(resamples)
    nonzero = d[np.abs(d) > TIE]
    return _sign_flip(nonzero, alternative, resamples, seed, exact_max, large_sample, None)


def _sign_flip(nonzero: np.ndarray, alternative: Alternative, resamples: int, seed: int, exact_max: int,
               large_sample: int, sampled: np.ndarray | None) -> float:
    m = len(nonzero)
    if m > large_sample:
        return _normal_sign_flip_p(nonzero, alternative)
    observed = float(nonzero.sum())
    slack = _slack(nonzero)
    if m <= exact_max:
        sums = _all_sign_sums(nonzero)
        return _tail_hits(sums, observed, slack, alternative) / len(sums)
    if sampled is None:
        sampled = _counted_sign_sums(nonzero, resamples, seed)
    if sampled is None:
        sampled = _sampled_sums([nonzero], resamples, seed)[0]
    return (1 + _tail_hits(sampled, observed, slack, alternative)) / (1 + len(sampled))


def _tail_hits(sums: np.ndarray, observed: float, slack: float, alternative: Alternative) -> int:
    if alternative == "two-sided":
        return int(np.count_nonzero(np.abs(sums) >= abs(observed) - slack))
    if alternative == "less":
        return int(np.count_nonzero(sums <= observed + slack))
    if alternative == "greater":
        return int(np.count_nonzero(sums >= observed - slack))
    raise ValueError(f"unknown alternative {alternative!r}")


# --- t-test and Wilcoxon -------------------------------------------------------------------------


def _t_p(shift: float, variance: float, n: int, alternative: Alternative) -> float | None:
    """Student t p-value of ``shift / sqrt(variance / n)`` with n - 1 df, as scipy's ttest_1samp."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(shift, np.sqrt(variance / n))
    df = n - 1
    if alternative == "two-sided":
        p = 2 * _special.stdtr(df, -np.abs(t))
    elif alternative == "less":
        p = _special.stdtr(df, t)
    elif alternative == "greater":
        p = _special.stdtr(df, -t)
    else:
        raise ValueError(f"unknown alternative {alternative!r}")
    return None if math.isnan(p) else float(p)


def ttest_p(
    diffs: Sequence[float] | np.ndarray, *, alternative: Alternative = "two-sided", mu: float = 0.0
) -> float | None:
    """One-sample t-test of the differences against `mu` (the paired t-test when mu = 0), as scipy's
    ``ttest_1samp``. None when n < 2 or the differences have no spread (the statistic is 0/0 or infinite).
    """
    d = _clean(diffs)
    if len(d) < 2 or np.ptp(d) <= TIE:
        return None
    mean = float(np.mean(d))
    return _t_p(mean - mu, _variance(d, mean), len(d), alternative)


def _rank_groups(values: np.ndarray) -> np.ndarray:
    """Tie-group ids of `values` (equal values share an id; ids ascend with the value)."""
    return np.unique(values, return_inverse=True)[1].reshape(-1)


def _signed_rank_normal_p(sizes: np.ndarray, positives: np.ndarray, alternative: Alternative) -> float:
    """scipy's normal approximation of the Wilcoxon test (zeros dropped, tie-corrected variance, no
    continuity correction) from the non-zero |d| grouped by value: per group (ascending |d|) how many
    differences it holds and how many of them are positive.

    Midranks follow from the group sizes, so one ranking of a superset serves every subset of it.
    """
    sizes = sizes.astype(float)
    midranks = np.cumsum(sizes) - sizes + (sizes + 1) / 2
    r_plus = float(positives @ midranks)
    m = float(sizes.sum())
    mean = m * (m + 1) * 0.25
    variance = (m * (m + 1) * (2 * m + 1) - float((sizes**3 - sizes).sum()) / 2) / 24
    return _normal_p((r_plus - mean) / math.sqrt(variance), alternative)


def wilcoxon_p(
    diffs: Sequence[float] | np.ndarray, *, alternative: Alternative = "two-sided", mu: float = 0.0
) -> float | None:
    """scipy's Wilcoxon signed-rank test of ``diffs - mu`` (zero differences dropped, scipy's default
    method, see the module docstring).

    1.0 when every difference equals `mu` (no signed rank to test); None when n = 0.
    """
    d = _clean(diffs) - mu
    if len(d) == 0:
        return None
    nonzero = np.abs(d) > TIE
    if not nonzero.any():
        return 1.0
    method = _wilcoxon_method(d, nonzero)
    if method == "exact":
        return _scipy_wilcoxon(d, alternative)
    groups = _rank_groups(np.abs(d[nonzero]))
    sizes = np.bincount(groups)
    positives = np.bincount(groups[d[nonzero] > 0], minlength=len(sizes))
    if method == "permutation":
        return _signed_rank_permutation_p(sizes, positives, alternative)
    return _signed_rank_normal_p(sizes, positives, alternative)


WilcoxonMethod = Literal["exact", "permutation", "normal"]


def _wilcoxon_method(d: np.ndarray, nonzero: np.ndarray) -> WilcoxonMethod:
    """scipy's default ("auto") method for these differences (zeros included in their number).

    Its exact distribution for at most `WILCOXON_SCIPY_MAX` differences without zeros or tied
    |differences|; with them, all sign patterns for at most 13 differences; otherwise the normal
    approximation.
    """
    if len(d) > WILCOXON_SCIPY_MAX:
        return "normal"
    if nonzero.all() and len(np.unique(np.abs(d))) == len(d):
        return "exact"
    return "permutation" if len(d) <= 13 else "normal"


def _signed_rank_permutation_p(sizes: np.ndarray, positives: np.ndarray, alternative: Alternative) -> float:
    """scipy's permutation method for the Wilcoxon test: the rank sum of the positive differences
    under every sign pattern of the non-zero ones (zeros only repeat each pattern), compared with
    scipy's relative tolerance of 100 machine epsilons; two-sided: twice the smaller tail."""
    sizes = sizes.astype(float)
    midranks = np.cumsum(sizes) - sizes + (sizes + 1) / 2
    observed = float(positives @ midranks)
    null = np.zeros(1)
    for rank in np.repeat(midranks, sizes.astype(int)):
        null = np.concatenate((null, null + rank))
    slack = abs(np.finfo(float).eps * 100 * observed)
    below = np.count_nonzero(null <= observed + slack) / len(null)
    above = np.count_nonzero(null >= observed - slack) / len(null)
    p = {"less": below, "greater": above, "two-sided": 2 * min(below, above)}[alternative]
    return float(min(1.0, p))


def _scipy_wilcoxon(d: np.ndarray, alternative: Alternative) -> float | None:
    """scipy itself (used for its exact distribution: no zero and no tie among the differences)."""
    from scipy import stats as _scipy  # imported on first use: it takes about half a second

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        p = float(_scipy.wilcoxon(d, zero_method="wilcox", alternative=alternative).pvalue)
    return None if math.isnan(p) else p


# --- multiplicity and warnings -------------------------------------------------------------------


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


# --- paired comparisons, one or many -------------------------------------------------------------


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
    large_sample: int = LARGE_SAMPLE,
) -> Paired:
    """Compare paired per-question values (n/a pairs excluded); see the module docstring for methods.

    The interval and tests need n >= 2; below that they are None and a warning says why.
    """
    b, c = pairs(baseline, candidate)
    return paired_many([b], [c], [(0, None)], higher_is_better=[higher_is_better], seed=seed,
                       bootstrap_resamples=bootstrap_resamples, randomization_resamples=randomization_resamples,
                       exact_max=exact_max, confidence=confidence, large_sample=large_sample)[0]


@dataclass
class _Pending:
    """A sample with n >= 2 whose interval and tests are still being computed."""

    d: np.ndarray
    nonzero: np.ndarray
    fields: dict


def paired_many(
    baseline: Sequence[np.ndarray],
    candidate: Sequence[np.ndarray],
    samples: Sequence[tuple[int, np.ndarray | None]],
    *,
    higher_is_better: Sequence[bool] | None = None,
    seed: int = 0,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
    randomization_resamples: int = RANDOMIZATION_RESAMPLES,
    exact_max: int = EXACT_MAX,
    confidence: float = CONFIDENCE,
    large_sample: int = LARGE_SAMPLE,
    cells: Cells | None = None,
    complete: Sequence[bool] | None = None,
    paired: Sequence[np.ndarray] | None = None,
) -> list[Paired]:
    """`paired` for many samples at once; each result equals `paired` on that sample alone (up to rounding).

    `baseline[j]` and `candidate[j]` hold variable j's per-question values (NaN: n/a), equal lengths.
    A sample ``(j, mask)`` is variable j over the questions the boolean `mask` selects (None: all),
    paired where both sides have a value. Work is shared: one bootstrap index matrix per sample size,
    one matrix of random sign patterns, one ranking per variable for the Wilcoxon test (a sample whose
    differences take few distinct values draws counts of them instead: module docstring). A sample with
    more than `large_sample` non-zero differences (method ``normal``) needs only sums, counts and
    the Wilcoxon rank-group counts: those come from the `Cells` of the samples' masks (questions
    held by the same masks), so such a sample costs no pass over its questions. `cells`: `Cells`
    built from (at least) the very mask arrays of `samples`, when the caller has them.

    `paired[j]`: variable j's paired questions (both sides have a value), when the caller has them.

    `complete[i]` False: sample i needs only its n, means, counts, warnings, method and
    randomization p-value (what a Holm adjustment over every sample needs): its interval, t-test
    and Wilcoxon p are left None, not computed. Every other figure is the one computed with
    `complete` None (all True).
    """
    if complete is not None and len(complete) != len(samples):
        raise ValueError("complete needs one flag per sample")
    _check_sizes(bootstrap_resamples, confidence)
    _check_sizes(randomization_resamples)
    base = [np.asarray(v, dtype=float) for v in baseline]
    cand = [np.asarray(v, dtype=float) for v in candidate]
    if len(base) != len(cand) or any(len(b) != len(c) for b, c in zip(base, cand)):
        raise ValueError("baseline and candidate need the same variables with the same lengths")
    if paired is not None and (len(paired) != len(base) or any(len(p) != len(b) for p, b in zip(paired, base))):
        raise ValueError("paired needs one mask per variable, as long as its values")
    directions = list(higher_is_better) if higher_is_better is not None else [True] * len(base)
    both = [~(np.isnan(b) | np.isnan(c)) for b, c in zip(base, cand)] if paired is None else \
        [np.asarray(p, dtype=bool) for p in paired]
    diffs = [c - b for b, c in zip(base, cand)]
    alpha = 1 - confidence

    results: list[Paired | None] = [None] * len(samples)
    pending: dict[int, _Pending] = {}
    by_size: dict[int, list[int]] = {}
    counted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    sparse: list[int] = []
    sampled_flips: list[int] = []

    def flip_test(i: int, nz: np.ndarray) -> None:  # now, or with the batch's shared sign patterns
        sums = None
        if exact_max < len(nz) <= large_sample:
            sums = _counted_sign_sums(nz, randomization_resamples, seed)
            if sums is None:
                sampled_flips.append(i)
                return
        pending[i].fields["p_randomization"] = _sign_flip(nz, "two-sided", randomization_resamples, seed,
                                                          exact_max, large_sample, sums)

    ranked: dict[int, list[tuple[int, np.ndarray]]] = {}
    by_variable: dict[int, list[int]] = {}
    for i, (j, _) in enumerate(samples):
        by_variable.setdefault(j, []).append(i)
    masks: dict[int, np.ndarray] = {}
    for _, mask in samples:
        if mask is not None:
            masks.setdefault(id(mask), mask)
    size = len(base[0]) if base else 0
    if cells is not None and (len(cells.cell) != size or any(key not in cells.column for key in masks)):
        raise ValueError("cells must be the Cells of (at least) every mask of the samples, over the same questions")
    if cells is None and len(masks) <= MAX_MASKS and size:
        cells = Cells(list(masks.values()), size)

    # only a variable with more than `large_sample` pairs can hold a sample computed from cell sums; each
    # variable's tally is independent of the others' (pandas releases the GIL while it hashes; numpy's
    # bincount holds it, so two threads take about a quarter off a batch's tallies, not half)
    n_paired = {j: int(np.count_nonzero(both[j])) for j in by_variable}
    tallied = [j for j in by_variable if cells is not None and n_paired[j] > large_sample]
    with _workers(len(tallied)) as pool:
        variables = dict(zip(tallied, pool.map(lambda j: _Variable(cells, base[j], cand[j], both[j], diffs[j]),
                                               tallied)))
    for j, members in by_variable.items():
        variable = variables.get(j)
        for i in members:
            empty = n_paired[j] == 0
            if variable is not None:
                mask = samples[i][1]
                at_cells = variable.cells.member[:, variable.cells.column[id(mask)]] if mask is not None else \
                    np.ones(variable.cells.size, dtype=bool)
                empty = not variable.count[at_cells].any()
            if empty:  # no paired question: what the question-by-question path gives for n = 0
                results[i] = Paired(n=0, baseline=None, candidate=None, delta=None, ci_low=None, ci_high=None,
                                    p_ttest=None, p_wilcoxon=None, p_randomization=None, improved=0, regressed=0,
                                    unchanged=0, warnings=small_sample_warnings(0, 0, alpha=alpha))
                continue
            if variable is not None:
                if variable.nonzero(at_cells) > large_sample:
                    results[i] = variable.normal(at_cells, directions[j], alpha, confidence,
                                                 complete is None or bool(complete[i]))
                    continue
                unchanged = variable.unchanged(at_cells, alpha, complete is None or bool(complete[i]))
                if unchanged is not None:
                    results[i] = unchanged
                    continue
            mask = samples[i][1]
            keep = both[j] if mask is None else both[j] & np.asarray(mask, dtype=bool)
            at = np.flatnonzero(keep)  # positions, then take(): much faster than boolean indexing
            d = diffs[j].take(at)
            n = len(d)
            rises, falls = d > TIE, d < -TIE
            up, down = int(np.count_nonzero(rises)), int(np.count_nonzero(falls))
            nonzero = up + down
            improved, regressed = (up, down) if directions[j] else (down, up)
            notes = small_sample_warnings(n, nonzero, alpha=alpha)
            if n == 0:
                results[i] = Paired(0, None, None, None, None, None, None, None, None, 0, 0, 0, notes)
                continue
            mean = float(d.mean())
            common = dict(n=n, baseline=float(base[j].take(at).mean()), candidate=float(cand[j].take(at).mean()),
                          delta=mean, improved=improved, regressed=regressed, unchanged=n - nonzero)
            if n < 2:
                results[i] = Paired(**common, ci_low=None, ci_high=None, p_ttest=None, p_wilcoxon=None,
                                    p_randomization=None, warnings=notes)
                continue
            flat = bool(np.ptp(d) <= TIE)
            if nonzero and flat:
                notes += ("every paired difference is the same: the t-test is undefined (no spread)",)
            method: Method = "normal" if nonzero > large_sample else "resampling"
            fields = dict(common, warnings=notes, method=method, p_ttest=None)
            differs = rises | falls
            nz = d[differs]
            pending[i] = _Pending(d, nz, fields)
            if complete is not None and not complete[i]:  # the sign-flip test only
                fields.update(ci_low=None, ci_high=None, p_wilcoxon=None)
                flip_test(i, nz)
                continue
            variance = None if flat else _variance(d, mean)
            # the interval
            if flat:
                fields["ci_low"] = fields["ci_high"] = mean
            elif method == "normal":
                half = float(_special.ndtri(0.5 + confidence / 2)) * math.sqrt(variance / n)  # type: ignore[operator]
                fields["ci_low"], fields["ci_high"] = mean - half, mean + half
            elif n > large_sample:
                values = _bootstrap_values(nz, n)
                if values is None:
                    sparse.append(i)
                else:
                    counted[i] = values
            else:
                by_size.setdefault(n, []).append(i)
            # the t-test
            if variance is not None:
                fields["p_ttest"] = _t_p(mean, variance, n, "two-sided")
            # Wilcoxon
            if not nonzero:
                fields["p_wilcoxon"] = 1.0
            else:
                wilcoxon = _wilcoxon_method(d, differs)
                if wilcoxon == "normal":
                    ranked.setdefault(j, []).append((i, at))
                else:
                    fields["p_wilcoxon"] = wilcoxon_p(d)
            flip_test(i, nz)

    def intervals(members: list[int]) -> None:  # one bootstrap index matrix per sample size
        means = _bootstrap_means(np.column_stack([pending[i].d for i in members]), bootstrap_resamples, seed)
        tail = (1 - confidence) / 2
        lows, highs = np.quantile(means, [tail, 1 - tail], axis=0)
        for i, low, high in zip(members, lows, highs):
            pending[i].fields["ci_low"], pending[i].fields["ci_high"] = float(low), float(high)

    def counted_interval(i: int) -> None:
        means = _bootstrap_means_counted(*counted[i], bootstrap_resamples, seed)
        pending[i].fields["ci_low"], pending[i].fields["ci_high"] = _percentile_interval(means, confidence)

    def sparse_interval(i: int) -> None:
        p = pending[i]
        means = _bootstrap_means_sparse(p.nonzero, len(p.d), bootstrap_resamples, seed)
        p.fields["ci_low"], p.fields["ci_high"] = _percentile_interval(means, confidence)

    def sign_flips() -> None:  # one matrix of random sign patterns
        sums = _sampled_sums([pending[i].nonzero for i in sampled_flips], randomization_resamples, seed)
        for i, row in zip(sampled_flips, sums):
            p = pending[i]
            p.fields["p_randomization"] = _sign_flip(p.nonzero, "two-sided", randomization_resamples, seed,
                                                     exact_max, large_sample, row)

    # seeded resampling: each task draws from its own generator and fills its own samples' fields
    tasks = [*(lambda m=m: intervals(m) for m in by_size.values()), *(lambda i=i: counted_interval(i) for i in counted),
             *(lambda i=i: sparse_interval(i) for i in sparse),
             *([sign_flips] if sampled_flips else [])]
    with _workers(len(tasks)) as pool:
        list(pool.map(lambda task: task(), tasks))
    for j, members in ranked.items():
        groups, n_groups = variables[j].groups() if j in variables else _variable_groups(diffs[j], both[j])
        positive_groups = np.where(both[j] & (diffs[j] > TIE), groups, 0)
        for i, at in members:
            sizes = np.bincount(groups.take(at), minlength=n_groups)[1:]
            positives = np.bincount(positive_groups.take(at), minlength=n_groups)[1:]
            pending[i].fields["p_wilcoxon"] = _signed_rank_normal_p(sizes, positives, "two-sided")
    for i, p in pending.items():
        results[i] = Paired(**p.fields)
    return results  # type: ignore[return-value]


WORKERS = 2
"""Threads for a batch's independent work (`paired_many`: the variables' tallies, then the seeded
resampling tasks); 1: one after the other."""


@contextmanager
def _workers(tasks: int) -> Iterator[Any]:
    """A pool of up to `WORKERS` threads for `tasks` independent tasks (`map` in order), or an
    inline one when a single thread is enough."""
    if min(WORKERS, tasks) <= 1:
        yield _Inline()
        return
    with ThreadPoolExecutor(max_workers=min(WORKERS, tasks), thread_name_prefix="ragslice-stats") as pool:
        yield pool


class _Inline:
    """`ThreadPoolExecutor.map` without threads."""

    @staticmethod
    def map(function: Any, items: Sequence[Any]) -> Iterator[Any]:
        return map(function, items)


def _rank_groups_fast(values: np.ndarray) -> tuple[np.ndarray, int]:
    """`_rank_groups` by hashing (no sort of the values, only of the distinct ones): the same ids,
    and their number."""
    import pandas as pd  # imported here: the rest of the module needs only numpy and scipy

    codes, uniques = pd.factorize(values, sort=False)
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[np.argsort(np.asarray(uniques), kind="stable")] = np.arange(len(uniques))
    return rank.take(codes), len(uniques)


def _variable_groups(d: np.ndarray, both: np.ndarray) -> tuple[np.ndarray, int]:
    """Per question, the Wilcoxon rank group of |d| among the variable's non-zero paired differences
    (1 + its `_rank_groups` id; 0 for zero and unpaired differences), and the number of ids (with 0)."""
    d_all = np.where(both, d, 0.0)
    differs_all = np.abs(d_all) > TIE
    groups = np.zeros(len(d_all), dtype=np.int64)
    ids, count = _rank_groups_fast(np.abs(d_all[differs_all]))
    groups[differs_all] = ids + 1
    return groups, count + 1


FACTORIZE_HINT = 1_024
"""Starting size of the hash table that codes a variable's distinct differences (the codes do not
depend on it: first appearance order)."""
MAX_MASKS = 20
"""Above this many distinct masks in one batch, no cells: every sample is taken one by one."""
MAX_CELL_GROUPS = 4_000_000
"""Above this many cells x distinct paired differences, a variable's tally lists only the (cell,
difference) pairs that occur; above this many cells x Wilcoxon rank groups, a sample's rank-group
counts are taken from its own tally entries."""


class Cells:
    """Questions split by the masks that hold them: cell c holds the questions held by exactly the
    masks `member[c]` (a row of booleans, one per mask). A sum over a mask's questions is the sum of
    its cells' sums, so many masks cost one pass over the questions (`totals`, then `over`)."""

    def __init__(self, masks: Sequence[np.ndarray], size: int):
        if len(masks) > MAX_MASKS:
            raise ValueError(f"at most {MAX_MASKS} masks")
        self.masks = tuple(masks)
        self.column = {id(mask): k for k, mask in enumerate(masks)}
        """A mask's column in `member`, by the identity of the array given."""
        key = np.zeros(size, dtype=np.int64)
        for k, mask in enumerate(masks):
            key |= np.asarray(mask, dtype=bool).astype(np.int64) << k
        present = np.flatnonzero(np.bincount(key, minlength=1 << len(masks)))
        lookup = np.full(1 << len(masks), -1, dtype=np.int64)
        lookup[present] = np.arange(len(present))
        self.cell = lookup.take(key)
        self.member = ((present[:, None] >> np.arange(len(masks))) & 1) == 1  # cells x masks
        self.size = len(present)

    def totals(self, weights: np.ndarray) -> np.ndarray:
        """Per cell: the sum of `weights` (one per question)."""
        return np.bincount(self.cell, weights=weights, minlength=self.size)

    def over(self, per_cell: np.ndarray) -> np.ndarray:
        """Per mask: the sum of a per-cell quantity over the mask's cells (exact for whole numbers)."""
        return np.where(self.member, per_cell[:, None], 0).sum(axis=0)


class _Variable:
    """One variable's paired differences summed per cell of the batch's masks; a sample (one mask)
    with more than `LARGE_SAMPLE` non-zero differences is computed from these sums alone (`normal`).

    The differences are first tallied per cell and distinct value (`tally`: how many paired
    questions of cell c have difference `values[k]`); per cell: paired questions, sums of both sides
    (one pass over the questions each) and of the differences, increases, decreases, the sum and sum
    of squares of the non-zero differences, the within-cell sum of squared deviations (a sample's
    variance combines its cells: Chan's pairwise formula), the extreme differences, and the Wilcoxon
    rank-group counts of the non-zero |d| all follow from that tally.
    """

    def __init__(self, cells: Cells, b: np.ndarray, c: np.ndarray, both: np.ndarray, d: np.ndarray):
        import pandas as pd  # imported here: the rest of the module needs only numpy and scipy

        self.cells = cells
        size = cells.size
        # NaN (unpaired) -> -1; a small starting hash table (it grows as needed): differences take few
        # distinct values, and a table sized for every question costs more than the hashing
        codes, values = pd.factorize(np.where(both, d, np.nan), size_hint=FACTORIZE_HINT)
        values = np.asarray(values, dtype=float)
        width = len(values)
        if size * width <= MAX_CELL_GROUPS:  # a dense cells x values table, one pass
            key = np.where(codes >= 0, cells.cell * width + codes, size * width)
            dense = np.bincount(key, minlength=size * width + 1)[:size * width]
            entries = np.flatnonzero(dense)
            count = dense.take(entries)
        else:  # many distinct differences: tally the (cell, value) pairs that occur
            paired = codes >= 0
            key = cells.cell[paired] * width + codes[paired]
            pair_codes, entries = pd.factorize(key)
            entries = np.asarray(entries, dtype=np.int64)
            count = np.bincount(pair_codes, minlength=len(entries))
        self.codes = codes
        self.values = values
        self.cell_of = entries // max(width, 1)
        """Per (cell, value) entry of the tally: its cell; `value_of`: its value's index; `tally`: its questions."""
        self.value_of = entries % max(width, 1)
        self.tally = count.astype(float)
        self.entry_d = values.take(self.value_of)
        rises, falls = self.entry_d > TIE, self.entry_d < -TIE
        differs = rises | falls
        self.count = self._per_cell(count).astype(np.int64)
        self.up = self._per_cell(np.where(rises, count, 0)).astype(np.int64)
        self.down = self._per_cell(np.where(falls, count, 0)).astype(np.int64)
        paired_key = np.where(codes >= 0, cells.cell, size)
        weighted = self.tally * self.entry_d
        self.sums = {
            "b": np.bincount(paired_key, weights=b, minlength=size + 1)[:size],
            "c": np.bincount(paired_key, weights=c, minlength=size + 1)[:size],
            "d": self._per_cell(weighted),
            "nz": self._per_cell(np.where(differs, weighted, 0.0)),
            "nz2": self._per_cell(np.where(differs, weighted * self.entry_d, 0.0)),
        }
        self._entry_rises, self._entry_differs = rises, differs
        self._squares: np.ndarray | None = None
        self._extremes: tuple[np.ndarray, np.ndarray] | None = None
        self._groups: tuple[np.ndarray, int] | None = None
        self._ranks: tuple[np.ndarray, np.ndarray] | None | bool = False

    def _per_cell(self, per_entry: np.ndarray) -> np.ndarray:
        """Per cell: the sum of a quantity given per tally entry."""
        return np.bincount(self.cell_of, weights=per_entry, minlength=self.cells.size)

    def nonzero(self, at: np.ndarray) -> int:
        return int(self.up[at].sum() + self.down[at].sum())

    def squares(self) -> np.ndarray:
        if self._squares is None:
            cell_mean = self.sums["d"] / np.maximum(self.count, 1)
            deviation = self.entry_d - cell_mean.take(self.cell_of)
            self._squares = self._per_cell(self.tally * deviation * deviation)
        return self._squares

    def extremes(self) -> tuple[np.ndarray, np.ndarray]:
        if self._extremes is None:
            size = self.cells.size
            low, high = np.full(size, np.inf), np.full(size, -np.inf)
            np.minimum.at(low, self.cell_of, self.entry_d)
            np.maximum.at(high, self.cell_of, self.entry_d)
            self._extremes = (low, high)
        return self._extremes

    def _value_groups(self) -> tuple[np.ndarray, int]:
        """Per distinct value: 1 + the Wilcoxon rank group of its |d| among the non-zero ones (0 for
        |d| <= TIE), and the number of ids with 0."""
        differs = np.abs(self.values) > TIE
        ids, count = _rank_groups_fast(np.abs(self.values[differs]))
        groups = np.zeros(len(self.values), dtype=np.int64)
        groups[differs] = ids + 1
        return groups, count + 1

    def groups(self) -> tuple[np.ndarray, int]:
        """Per question, 1 + the Wilcoxon rank group of its non-zero paired |d| (0: none), and the
        number of ids with 0: `_variable_groups` of the variable."""
        if self._groups is None:
            by_value, n_groups = self._value_groups()
            self._groups = (np.append(by_value, 0).take(self.codes), n_groups)  # code -1 (unpaired): 0
        return self._groups

    def ranks(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per cell x rank group (ascending |d|): non-zero differences, and the positive ones; None
        when that table would be too large."""
        if self._ranks is False:
            by_value, n_groups = self._value_groups()
            n_ids = n_groups - 1
            if self.cells.size * n_ids > MAX_CELL_GROUPS:
                self._ranks = None
            else:
                group = by_value.take(self.value_of)
                flat = (self.cell_of * n_ids + group - 1)[self._entry_differs]
                size = self.cells.size * n_ids
                sizes = np.bincount(flat, weights=self.tally[self._entry_differs], minlength=size)
                positives = np.bincount(flat, weights=np.where(self._entry_rises, self.tally, 0.0)[self._entry_differs],
                                        minlength=size)
                self._ranks = (sizes.astype(np.int64).reshape(self.cells.size, n_ids),
                               positives.astype(np.int64).reshape(self.cells.size, n_ids))
        return self._ranks  # type: ignore[return-value]

    def unchanged(self, at: np.ndarray, alpha: float, complete: bool = True) -> Paired | None:
        """The sample made of the cells `at` when it holds at least 2 paired questions and none of
        their differences exceeds `TIE` nor do they spread beyond it (every test is then decided:
        interval (mean, mean), no t-test, Wilcoxon and sign-flip p 1; without `complete` the
        interval and Wilcoxon p are left None); else None."""
        n = int(self.count[at].sum())
        if n < 2 or self.nonzero(at):
            return None
        low, high = self.extremes()
        if float(high[at].max()) - float(low[at].min()) > TIE:
            return None
        mean = float(self.sums["d"][at].sum()) / n
        return Paired(n=n, baseline=float(self.sums["b"][at].sum()) / n, candidate=float(self.sums["c"][at].sum()) / n,
                      delta=mean, ci_low=mean if complete else None, ci_high=mean if complete else None, p_ttest=None,
                      p_wilcoxon=1.0 if complete else None, p_randomization=1.0,
                      improved=0, regressed=0, unchanged=n, warnings=small_sample_warnings(n, 0, alpha=alpha),
                      method="resampling")

    def normal(self, at: np.ndarray, higher_is_better: bool, alpha: float, confidence: float,
               complete: bool = True) -> Paired:
        """The sample made of the cells `at`, known to hold more than `LARGE_SAMPLE` non-zero
        differences; without `complete`, its interval, t-test and Wilcoxon p are left None."""
        count = self.count[at]
        n = int(count.sum())
        up, down = int(self.up[at].sum()), int(self.down[at].sum())
        nonzero = up + down
        improved, regressed = (up, down) if higher_is_better else (down, up)
        notes = small_sample_warnings(n, nonzero, alpha=alpha)
        mean = float(self.sums["d"][at].sum()) / n
        fields = dict(n=n, baseline=float(self.sums["b"][at].sum()) / n, candidate=float(self.sums["c"][at].sum()) / n,
                      delta=mean, improved=improved, regressed=regressed, unchanged=n - nonzero, method="normal",
                      p_ttest=None)
        flat = False
        if nonzero == n:  # with a zero difference beside non-zero ones the spread exceeds TIE
            low, high = self.extremes()
            flat = bool(float(high[at].max()) - float(low[at].min()) <= TIE)
        z = float(self.sums["nz"][at].sum()) / math.sqrt(float(self.sums["nz2"][at].sum()))
        fields["p_randomization"] = _normal_p(z, "two-sided")
        if flat:
            notes += ("every paired difference is the same: the t-test is undefined (no spread)",)
        if not complete:
            return Paired(**fields, ci_low=None, ci_high=None, p_wilcoxon=None, warnings=notes)
        if flat:
            fields["ci_low"] = fields["ci_high"] = mean
        else:
            cell_mean = self.sums["d"][at] / np.maximum(count, 1)
            spread = float(self.squares()[at].sum()) + float((count * np.square(cell_mean - mean)).sum())
            variance = spread / (n - 1)
            half = float(_special.ndtri(0.5 + confidence / 2)) * math.sqrt(variance / n)
            fields["ci_low"], fields["ci_high"] = mean - half, mean + half
            fields["p_ttest"] = _t_p(mean, variance, n, "two-sided")
        ranks = self.ranks()
        if ranks is None:  # too many distinct |d| for a table per cell: count the sample's own entries
            by_value, n_groups = self._value_groups()
            inside = at.take(self.cell_of) & self._entry_differs
            group = by_value.take(self.value_of[inside])
            sizes = np.bincount(group, weights=self.tally[inside], minlength=n_groups)[1:]
            positives = np.bincount(group, weights=np.where(self._entry_rises[inside], self.tally[inside], 0.0),
                                    minlength=n_groups)[1:]
        else:
            sizes, positives = ranks[0][at].sum(axis=0), ranks[1][at].sum(axis=0)
        fields["p_wilcoxon"] = _signed_rank_normal_p(sizes, positives, "two-sided")
        return Paired(**fields, warnings=notes)


def drop_p(
    better: Sequence[float] | np.ndarray,
    max_drop: float,
    *,
    test: TestName = "randomization",
    seed: int = 0,
    resamples: int = RANDOMIZATION_RESAMPLES,
    exact_max: int = EXACT_MAX,
    large_sample: int = LARGE_SAMPLE,
) -> float | None:
    """One-sided p-value that the mean change is worse than ``-max_drop``.

    `better` holds differences oriented so positive means better (``candidate - baseline`` for a
    higher-is-better metric, its negation otherwise). H0: the true mean change is >= -max_drop;
    H1: it is < -max_drop. A small p means the drop beyond the tolerated `max_drop` is significant.
    None when n < 2 (randomization: n = 0) or the chosen test is undefined. The randomization test
    follows `sign_flip_p` (normal approximation above `large_sample` non-zero shifted differences).
    """
    d = _clean(better)
    if test == "randomization":
        return sign_flip_p(d + max_drop, alternative="less", resamples=resamples, seed=seed, exact_max=exact_max,
                           large_sample=large_sample)
    if test == "ttest":
        return ttest_p(d, alternative="less", mu=-max_drop)
    if test == "wilcoxon":
        return wilcoxon_p(d, alternative="less", mu=-max_drop)
    raise ValueError(f"unknown test {test!r}; known: {', '.join(TESTS)}")

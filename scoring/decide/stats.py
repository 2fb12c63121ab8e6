"""Paired statistics over per-question values: intervals, tests, warnings (the corrections for
multiplicity are in `multiplicity`).

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
- **at a family's resolution** (`fine_sign_flip_p`, used by `scoring.decide.family.resolve` when a
  family is too large for `resamples` patterns): exact when the distribution of the sum over all
  ``2**m`` sign patterns, counted by distinct |difference| (``sum_k a_k (2 kept_k - c_k)`` with
  ``kept_k ~ binomial(c_k, 1/2)``), takes at most `EXACT_SUMS` distinct values (always for m <= 20;
  differences on a coarse grid, such as a share of k documents, for far more); otherwise `resamples`
  random patterns from ``default_rng((seed, 1))``, block by block: per block, counts of each distinct
  |difference| kept (``binomial(counts, 0.5)``) when they are at most m / `FEW_SIGN_VALUES`, else
  uniform random bytes whose bits keep (1) or flip (0) eight differences each;
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import special as _special

from .change import TIE
from .multiplicity import benjamini_hochberg, holm  # noqa: F401 - part of this module's interface

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
BLOCK = 65_536
"""Bootstrap index draws made and counted at once (sized to stay in the processor's cache)."""
FEW_VALUES = 16
"""The bootstrap of more than `LARGE_SAMPLE` questions draws counts of distinct values when their
number times this is at most m (module docstring)."""
FEW_SIGN_VALUES = 64
"""The sampled sign-flip test draws counts of distinct |differences| when their number times this is
at most m (module docstring)."""
EXACT_SUMS = 2**20
"""`fine_sign_flip_p` computes the exact sign-flip distribution when its sum takes at most this many
distinct values (2**20: every sample of at most 20 non-zero differences)."""
_EXACT_WORK = 2**22

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


@lru_cache(maxsize=64)
def _packed_sign_bits(width: int, resamples: int, seed: int) -> np.ndarray:
    """`_sign_bits` packed 8 rows to a byte (read-only), kept per process: a bound's bisection and a
    family's tests ask for the same patterns again and again."""
    packed = np.packbits(_sign_bits(width, resamples, seed), axis=0, bitorder="little")
    packed.flags.writeable = False
    return packed


_BYTE_SIGNS = (((np.arange(256)[:, None] >> np.arange(8)) & 1) * 2 - 1).astype(float)
"""Row v: the signs (+1 kept, -1 flipped) that the 8 bits of byte value v give to 8 differences."""


def _sampled_sums(nonzero: Sequence[np.ndarray], resamples: int, seed: int) -> np.ndarray:
    """Sums under `resamples` random sign patterns for each vector of non-zero differences (rows x B).

    Bits are packed 8 differences to a byte; each vector gets a table of the 256 partial sums per
    byte, so a pattern's sum is one lookup per 8 differences (plain numpy, no BLAS threads).
    """
    packed = _packed_sign_bits(max(len(v) for v in nonzero), resamples, seed)
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


def sign_flip_floor(m: int, *, resamples: int = RANDOMIZATION_RESAMPLES, exact_max: int = EXACT_MAX,
                    large_sample: int = LARGE_SAMPLE) -> float:
    """The smallest two-sided p `sign_flip_p` can report with m non-zero differences: ``2**(1 - m)``
    when it enumerates every pattern (1 when m = 0), ``1 / (resamples + 1)`` when it draws them, and 0
    for the normal approximation (above `large_sample`)."""
    if m > large_sample:
        return 0.0
    if m <= exact_max:
        return min_sign_p(m)
    return 1 / (resamples + 1)


def _grid_sums(values: np.ndarray, counts: np.ndarray) -> float:
    """How many distinct values the sign-flip sum can take at most: the number of grid points between
    -sum(|d|) and +sum(|d|) when every |d| is a whole multiple of a common step (a fraction with a
    denominator of at most 10,000), else the number of sign-count combinations prod(c_k + 1)."""
    from fractions import Fraction
    from math import gcd, lcm

    if not len(values):
        return 1.0
    combinations = float(np.prod((counts + 1).astype(float)))
    fractions = [Fraction(float(v)).limit_denominator(10_000) for v in values]
    if any(abs(float(f) - float(v)) > 1e-9 * max(1.0, float(v)) for f, v in zip(fractions, values)):
        return combinations
    denominator = lcm(*(f.denominator for f in fractions))
    step = Fraction(gcd(*(f.numerator * (denominator // f.denominator) for f in fractions)), denominator)
    span = float(sum(f * int(c) for f, c in zip(fractions, counts)) / step)
    return min(combinations, 2 * span + 1)


def _binomial_half(c: int) -> np.ndarray:
    """binomial(c, 1/2) probabilities of 0..c."""
    k = np.arange(c + 1)
    return np.exp(_special.gammaln(c + 1) - _special.gammaln(k + 1) - _special.gammaln(c - k + 1) - c * math.log(2))


def sign_flip_distribution(diffs: Sequence[float] | np.ndarray, *, max_sums: int = EXACT_SUMS
                           ) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact null distribution of the sign-flip sum of the non-zero differences: (sums ascending,
    probabilities), every one of the ``2**m`` sign patterns equally likely; None when the sum would take
    more than `max_sums` distinct values.

    Differences are grouped by |d| (value a_k, c_k of them); of each group binomial(c_k, 1/2) keep their
    sign, adding ``a_k (2 kept_k - c_k)``; the groups are convolved one after the other, sums closer than
    1e-12 x sum(|d|) counted as one (they are the same sum up to rounding).
    """
    d = _clean(diffs)
    nonzero = np.abs(d[np.abs(d) > TIE])
    values, counts = np.unique(nonzero, return_counts=True)
    if _grid_sums(values, counts) > max_sums:
        return None
    tol = 1e-12 * max(1.0, float(nonzero.sum()))
    sums, probs = np.zeros(1), np.ones(1)
    for value, count in zip(values, counts):
        c = int(count)
        if len(sums) * (c + 1) > max(_EXACT_WORK, max_sums):
            return None
        steps = value * (2 * np.arange(c + 1) - c)
        s = (sums[:, None] + steps[None, :]).ravel()
        w = (probs[:, None] * _binomial_half(c)[None, :]).ravel()
        order = np.argsort(s, kind="stable")
        s, w = s[order], w[order]
        starts = np.flatnonzero(np.concatenate(([True], np.diff(s) > tol)))
        sums, probs = s[starts], np.add.reduceat(w, starts)
        if len(sums) > max_sums:
            return None
    return sums, probs


def _sampled_hits(nonzero: np.ndarray, observed: float, slack: float, alternative: Alternative, resamples: int,
                  rng: np.random.Generator) -> int:
    """How many of `resamples` random sign patterns reach the observed sum, drawn block by block
    (module docstring: *at a family's resolution*)."""
    values, counts = np.unique(np.abs(nonzero), return_counts=True)
    hits = 0
    if FEW_SIGN_VALUES * len(values) <= len(nonzero):
        step = max(1, BLOCK * 4 // len(values))
        for start in range(0, resamples, step):
            kept = rng.binomial(counts, 0.5, size=(min(step, resamples - start), len(values)))
            hits += _tail_hits((2 * kept - counts) @ values, observed, slack, alternative)
        return hits
    chunks = -(-len(nonzero) // 8)
    padded = np.zeros(chunks * 8)
    padded[:len(nonzero)] = nonzero
    table = (padded.reshape(chunks, 1, 8) * _BYTE_SIGNS).sum(axis=2).ravel()  # chunk c, byte v at 256 c + v
    offsets = (np.arange(chunks, dtype=np.intp) * 256)[:, None]
    step = max(1, BLOCK * 4 // chunks)
    for start in range(0, resamples, step):
        block = rng.integers(0, 256, size=(chunks, min(step, resamples - start)), dtype=np.uint8)
        hits += _tail_hits(table[offsets + block].sum(axis=0), observed, slack, alternative)
    return hits


FineMethod = Literal["exact", "sampled", "normal"]


@dataclass(frozen=True)
class FineP:
    """A sign-flip p-value at a family's resolution: the p-value, how it was found, and the smallest p
    that method could report for this sample (`floor`)."""

    p: float | None
    method: FineMethod | None
    floor: float | None


def fine_sign_flip_p(
    diffs: Sequence[float] | np.ndarray,
    *,
    alternative: Alternative = "two-sided",
    resamples: int = RANDOMIZATION_RESAMPLES,
    seed: int = 0,
    large_sample: int = LARGE_SAMPLE,
    max_sums: int = EXACT_SUMS,
) -> FineP:
    """The sign-flip p-value of `sign_flip_p` (same statistic, same null) resolved as finely as a large
    family needs (module docstring, *at a family's resolution*): the normal approximation above
    `large_sample` non-zero differences; else exact over all ``2**m`` patterns when the sum takes at most
    `max_sums` distinct values (`sign_flip_distribution`); else ``(1 + hits) / (1 + resamples)`` over
    `resamples` random patterns from ``default_rng((seed, 1))``. None when n = 0.
    """
    d = _clean(diffs)
    if len(d) == 0:
        return FineP(None, None, None)
    _check_sizes(resamples)
    nonzero = d[np.abs(d) > TIE]
    m = len(nonzero)
    if m > large_sample:
        return FineP(_normal_sign_flip_p(nonzero, alternative), "normal", 0.0)
    observed, slack = float(nonzero.sum()), _slack(nonzero)
    exact = sign_flip_distribution(nonzero, max_sums=max_sums)
    if exact is not None:
        sums, probs = exact
        if alternative == "two-sided":
            tail = np.abs(sums) >= abs(observed) - slack
        elif alternative == "less":
            tail = sums <= observed + slack
        elif alternative == "greater":
            tail = sums >= observed - slack
        else:
            raise ValueError(f"unknown alternative {alternative!r}")
        return FineP(min(1.0, float(probs[tail].sum())), "exact", min_sign_p(m))
    rng = np.random.default_rng((seed, 1))
    hits = _sampled_hits(nonzero, observed, slack, alternative, resamples, rng)
    return FineP((1 + hits) / (1 + resamples), "sampled", 1 / (1 + resamples))


# --- t-test and Wilcoxon -------------------------------------------------------------------------


def _t_p(shift: float, variance: float, n: int, alternative: Alternative) -> float | None:
    """Student t p-value of ``shift / sqrt(variance / n)`` with n - 1 df, as scipy's ttest_1samp."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(shift, np.sqrt(variance / n))
    return t_p_value(t, n - 1, alternative)


def t_p_value(t: float, df: float, alternative: Alternative) -> float | None:
    """The p-value of a Student t statistic `t` with `df` degrees of freedom; None when t is not a number."""
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


# --- warnings -----------------------------------------------------------------------------------


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
    """Compare paired per-question values (n/a pairs excluded) with the procedures above; see the
    module docstring for methods. The interval and tests need n >= 2; below that they are None and a
    warning says why. (`scoring.decide.stats_batch.paired_many` gives the same for many samples.)"""
    b, c = pairs(baseline, candidate)
    n = len(b)
    d = c - b
    better = d if higher_is_better else -d
    improved, regressed = int(np.count_nonzero(better > TIE)), int(np.count_nonzero(better < -TIE))
    nonzero = int(np.count_nonzero(np.abs(d) > TIE))
    warnings = small_sample_warnings(n, nonzero, alpha=1 - confidence)
    if n == 0:
        return Paired(0, None, None, None, None, None, None, None, None, 0, 0, 0, warnings)
    means = float(b.mean()), float(c.mean())
    counts = (improved, regressed, n - improved - regressed)
    if n < 2:
        return Paired(n, *means, float(d.mean()), None, None, None, None, None, *counts, warnings)
    if nonzero and np.ptp(d) <= TIE:
        warnings += ("every paired difference is the same: the t-test is undefined (no spread)",)
    interval = bootstrap_ci(d, resamples=bootstrap_resamples, seed=seed, confidence=confidence,
                            large_sample=large_sample)
    return Paired(
        n, *means, float(d.mean()), *(interval or (None, None)), ttest_p(d), wilcoxon_p(d),
        sign_flip_p(d, resamples=randomization_resamples, seed=seed, exact_max=exact_max, large_sample=large_sample),
        *counts, warnings, "normal" if nonzero > large_sample else "resampling")


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

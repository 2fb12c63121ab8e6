"""What a paired sample can detect: power, the minimum detectable effect (MDE), the questions needed,
and the one-sided confidence bound of a drop.

Every figure here is about a *drop*: a change for the worse in the metric's direction (positive: worse).
The differences are oriented so that positive means better (``candidate - baseline`` for a
higher-is-better metric, its negation otherwise), as `stats.drop_p` takes them.

**Power and MDE (declared method: the one-sided paired t-test, noncentral t).** For n paired questions
whose differences have standard deviation s, a one-sided test at level alpha of "no change" against
"a drop" rejects when ``t = mean / (s / sqrt(n)) < -t_{1-alpha, n-1}``. At a true drop delta, t follows a
noncentral t distribution with n - 1 degrees of freedom and noncentrality ``delta * sqrt(n) / s``, so

    power(delta) = P(T_{n-1, delta sqrt(n)/s} > t_{1-alpha, n-1})            (`power_at`)

and the MDE is the drop at which that power equals the declared power (default `POWER` = 0.8),
``mde = nc * s / sqrt(n)`` with nc the noncentrality solving it (`mde`). This is the exact form of the
textbook approximation ``(t_{1-alpha, n-1} + t_{power, n-1}) * s / sqrt(n)`` (Cohen 1988, ch. 2;
statsmodels' ``TTestPower`` solves the same equation); the two differ by under 1% from n = 10 on.
The s used is the sample's, so a reported MDE is an estimate: at the true s it is exact for
normally distributed differences (tested by simulation, `docs/statistics.md`). The randomization and
Wilcoxon tests are asymptotically as powerful as the t-test on such data (Lehmann 1975; Wilcoxon's
efficiency is 3/pi = 0.955 at the normal), and their MDE is this one, with one exception:

**Resolution.** A sign-based test (sign-flip randomization, Wilcoxon) with m non-zero differences cannot
give a one-sided p below ``2**-m`` when it is exact (`min_p`); when that floor is not significant at
alpha (`significance.significant`), no drop of any size can be detected: the MDE is None (infinite) and
the power 0.

**The one-sided bound of the drop.** ``bound = -mean + t_{1-alpha, n-1} * s / sqrt(n)``: the drop is
below it with confidence 1 - alpha (Student's interval, one-sided; `t_bound`). A non-inferiority gate
inverts its own test instead where that test is not the t-test (`scoring.decide.drop`).

**Questions needed** at the observed spread: the smallest n whose power at the margin reaches the
declared power (`questions_needed`), with the same spread s; for a sign-based test also enough
non-zero differences (at the sample's share of them) to get past its resolution.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special as _special

from .significance import significant

POWER = 0.8
"""The power an MDE and the questions needed are computed at when nothing declares another."""
MAX_QUESTIONS = 10**9
"""Questions needed above this are reported as None (not reachable)."""


def t_critical(alpha: float, df: float) -> float:
    """The one-sided critical value ``t_{1-alpha, df}`` of Student's t."""
    return float(_special.stdtrit(df, 1.0 - alpha))


def _noncentral_sf(df: float, nc: float, t: float) -> float:
    """P(T > t) for T noncentral t with `df` degrees of freedom and noncentrality `nc` (scipy's
    ``nctdtr``, whose series underflows to NaN where the probability is 0 or 1)."""
    cdf = float(_special.nctdtr(df, nc, t))
    if math.isnan(cdf):
        cdf = 0.0 if nc > t else 1.0
    return min(1.0, max(0.0, 1.0 - cdf))


def power_at(drop: float, sd: float, n: int, alpha: float) -> float | None:
    """The power of the one-sided paired t-test at level `alpha` to detect a true drop `drop` with n
    pairs whose differences have standard deviation `sd`; None when n < 2 (no test)."""
    if n < 2:
        return None
    return power_of_se(drop, sd / math.sqrt(n), n - 1, alpha)


def power_of_se(drop: float, se: float, df: float, alpha: float) -> float:
    """The power of a one-sided t-test at level `alpha` with `df` degrees of freedom to detect a true drop
    `drop` when the mean's standard error is `se` (certain detection of any drop at se 0, none at an
    infinite se)."""
    if se <= 0 or not math.isfinite(se):
        if not math.isfinite(se):
            return 0.0
        return 1.0 if drop > 0 else (alpha if drop == 0 else 0.0)
    return _noncentral_sf(df, drop / se, t_critical(alpha, df))


def mde(sd: float, n: int, alpha: float, power: float = POWER) -> float | None:
    """The smallest true drop the one-sided paired t-test at `alpha` detects with probability `power`
    (n pairs, spread `sd`); None when n < 2 or the spread is unbounded, 0 without spread."""
    if n < 2 or not math.isfinite(sd):
        return None
    if sd <= 0:
        return 0.0
    nc = float(_special.nctdtrinc(n - 1, 1.0 - power, t_critical(alpha, n - 1)))
    return nc * sd / math.sqrt(n)


def min_p(test: str, m: int, *, exact_max: int, resamples: int, large_sample: int) -> float:
    """The smallest one-sided p-value `test` can give with m non-zero (shifted) differences: ``2**-m``
    for the exact sign-flip test (m <= `exact_max`) and for Wilcoxon's exact and permutation methods
    (m <= 50); ``1 / (resamples + 1)`` for the sampled sign-flip test; 0 for the t-test (m >= 1) and
    the normal approximations."""
    if m <= 0:
        return 1.0
    if test == "randomization":
        if m <= exact_max:
            return 2.0 ** -m
        return 1.0 / (resamples + 1) if m <= large_sample else 0.0
    if test == "wilcoxon":
        return 2.0 ** -m if m <= 50 else 0.0
    return 0.0


def resolves(test: str, m: int, alpha: float, *, exact_max: int, resamples: int, large_sample: int) -> bool:
    """Whether `test` can reach significance at `alpha` at all with m non-zero differences."""
    return bool(significant(min_p(test, m, exact_max=exact_max, resamples=resamples, large_sample=large_sample),
                            alpha))


def t_bound(better: np.ndarray, alpha: float) -> float | None:
    """Student's one-sided (1 - alpha) upper confidence bound of the mean drop:
    ``-mean + t_{1-alpha, n-1} * s / sqrt(n)`` (s with ddof = 1); None when n < 2."""
    d = np.asarray(better, dtype=float)
    n = len(d)
    if n < 2:
        return None
    mean = float(d.mean())
    sd = float(np.sqrt(np.mean((d - mean) ** 2) * n / (n - 1)))
    return -mean + t_critical(alpha, n - 1) * sd / math.sqrt(n)


def sample_sd(better: np.ndarray) -> float | None:
    """The differences' standard deviation (ddof = 1); None when n < 2."""
    d = np.asarray(better, dtype=float)
    if len(d) < 2:
        return None
    mean = float(d.mean())
    return float(np.sqrt(np.mean((d - mean) ** 2) * len(d) / (len(d) - 1)))


def questions_needed(sd: float | None, margin: float, alpha: float, power: float = POWER, *,
                     nonzero_share: float = 1.0, test: str = "ttest", exact_max: int = 16,
                     resamples: int = 10_000, large_sample: int = 1_000) -> int | None:
    """The questions a sample needs for the one-sided paired t-test at `alpha` to detect a drop of
    `margin` with probability `power`, at spread `sd`; for a sign-based test also enough questions
    that ``nonzero_share`` of them (the share of non-zero differences observed) get past its
    resolution (`resolves`). None when the margin is not positive, the spread is unknown or unbounded,
    or more than `MAX_QUESTIONS` would be needed."""
    if sd is None or not math.isfinite(sd) or margin <= 0 or not 0 < power < 1:
        return None
    floor = resolution_floor(test, alpha, nonzero_share, exact_max=exact_max, resamples=resamples,
                             large_sample=large_sample)
    if floor is None:
        return None
    if sd <= 0:
        return floor

    def enough(n: int) -> bool:
        found = power_at(margin, sd, n, alpha)
        return found is not None and found >= power

    return smallest_enough(enough, max(floor, 2), MAX_QUESTIONS)


def resolution_floor(test: str, alpha: float, nonzero_share: float, *, exact_max: int, resamples: int,
                     large_sample: int) -> int | None:
    """The fewest samples (questions, or clusters) a test needs before it can reach `alpha` at all: 2
    for the t-test; for a sign-based test enough that `nonzero_share` of them get past its resolution
    (`resolves`). None when no share differs or more than 64 non-zero samples would be needed."""
    if test not in ("randomization", "wilcoxon"):
        return 2
    if nonzero_share <= 0:
        return None
    m = 1
    while not resolves(test, m, alpha, exact_max=exact_max, resamples=resamples, large_sample=large_sample):
        m += 1
        if m > 64:
            return None
    return max(2, math.ceil(m / nonzero_share))


def smallest_enough(enough: Callable[[int], bool], floor: int, limit: float) -> int | None:
    """The smallest size from `floor` up for which `enough` holds (it holds for every larger size once it
    holds), by doubling then bisection; None when it needs more than `limit`."""
    high = floor
    while not enough(high):
        high *= 2
        if high > limit:
            return None
    low = max(floor, high // 2)
    if enough(low):
        return low
    while high - low > 1:  # enough(high), not enough(low)
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def row_figures(better: np.ndarray, alpha: float = 0.05, power: float = POWER, *, exact_max: int = 16,
                resamples: int = 10_000, large_sample: int = 1_000, tie: float = 1e-9
                ) -> tuple[float | None, float | None]:
    """(mde, bound) of one row of a comparison's table or one release-matrix cell: the MDE of a one-sided
    test of "no change" at `alpha` and `power` (None where the randomization test, with the row's
    non-zero differences, cannot reach alpha), and Student's upper bound of the drop."""
    d = np.asarray(better, dtype=float)
    sd = sample_sd(d)
    m = int(np.count_nonzero(np.abs(d) > tie))
    found = None
    if sd is not None and resolves("randomization", m, alpha, exact_max=exact_max, resamples=resamples,
                                   large_sample=large_sample):
        found = mde(sd, len(d), alpha, power)
    return found, t_bound(d, alpha)


__all__ = ["MAX_QUESTIONS", "POWER", "mde", "min_p", "power_at", "questions_needed", "resolves", "row_figures",
           "sample_sd", "t_bound", "t_critical"]

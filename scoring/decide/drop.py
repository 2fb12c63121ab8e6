"""A max_drop gate's statistics under either rule, with failed records taken at their worst.

A max_drop gate compares the paired differences `better` (positive: better, `stats.drop_p`) with a
tolerated drop, the margin, at level alpha, by one test (randomization, ttest or wilcoxon):

- rule ``significant_drop`` (the default): the gate fails when the drop beyond the margin is significant:
  one-sided p of H0 "mean change >= -margin" against "mean change < -margin" (`stats.drop_p`) below alpha;
- rule ``non_inferiority``: the gate passes only when the drop is shown to be below the margin: one-sided
  p of H0 "mean change <= -margin" against "mean change > -margin" below alpha. Equivalently, the
  one-sided (1 - alpha) upper confidence bound of the drop, the inversion of the same test (`bound`), is
  below the margin.

**Failed and missing records.** A candidate record that failed or is missing is scored as the metric's
worst value (`scoring.metrics.registry`), but its real score is unknown: it could have been anything
from that worst value up to the metric's best. Its difference is therefore an interval
``[scored, scored + width]`` (width: the metric's range times the share of the question's repeats that
failed; infinite for a count metric). Each rule is decided at the worst case over every value those
intervals allow, so turning records into failures can never turn a gate from fail to pass, or (with
``min_power``) from inconclusive to pass: whatever the record would have scored is one of the values
considered. Per test:

- randomization: the exact and sampled sign-flip p-values are monotone in every difference (a pattern
  counts when the sum of the flipped differences is >= 0, for "less"), so the worst case is the scored
  value itself; above `stats.LARGE_SAMPLE` differences the normal approximation is bounded as the
  t-test is;
- ttest: without spread (every difference equal) the t-test is undefined: a significant_drop gate then
  cannot fail (as ever), and a non_inferiority gate takes t's limit, passing when the difference is above
  ``-margin`` (its bound, ``-mean``, is below the margin); otherwise
  ``t = (mean + margin) / (s / sqrt(n))`` is bounded below over the intervals by its smallest
  numerator (every failed pair at its scored value) over the smallest spread the intervals allow when that
  numerator is negative (`spread_range`), else over the largest; its p-value is taken there;
- wilcoxon: its p-value changes only where a failed difference crosses zero or ties another
  difference's magnitude, so the worst case is found among those values (`_wilcoxon_worst`); when more
  than `WILCOXON_COMBINATIONS` combinations would have to be tried, the gate counts the drop as
  significant and says so (a Wilcoxon non-inferiority gate is refused by the policy: its inversion bounds
  a median, not the mean drop).

The spread for power, MDE and the questions needed is the largest the intervals allow (`spread_range`),
and the non-zero differences that decide a sign-based test's resolution are counted only where no
allowed value is zero. Without failed pairs every figure is the plain one.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import special as _special

from . import clusters, detect, stats
from .change import TIE
from .significance import significant

Rule = Literal["significant_drop", "non_inferiority"]
RULES: tuple[str, ...] = ("significant_drop", "non_inferiority")
WILCOXON_COMBINATIONS = 512
"""At most this many combinations of failed differences are tried for the Wilcoxon worst case."""


@dataclass(frozen=True)
class DropFigures:
    """What a max_drop gate found.

    `p`: the rule's one-sided p-value at the worst case (None where the test is undefined); `decided`:
    significant_drop: the drop beyond the margin is significant (the gate fails); non_inferiority: the
    drop is shown below the margin (the gate passes). `sd`: the spread power is computed with;
    `mde`, `power_at_margin`, `questions_needed` at the declared `power` (`detect`; None / 0 where the
    test cannot resolve alpha); `bound`: the one-sided (1 - alpha) upper confidence bound of the drop
    (None where no value bounds it); `m`: non-zero shifted differences counted for the resolution;
    `failed`: pairs whose candidate value is a failure's (an interval); `unbounded`: the Wilcoxon
    worst case was not searched (too many combinations)."""

    p: float | None
    decided: bool
    n: int
    sd: float | None
    mde: float | None
    power: float
    power_at_margin: float | None
    bound: float | None
    questions_needed: int | None
    m: int
    resolvable: bool
    failed: int = 0
    unbounded: bool = False
    clusters: int | None = None
    """The clusters the figures resampled (`clusters`), None when unclustered."""


def spread_range(lo: np.ndarray, width: np.ndarray) -> tuple[float, float]:
    """(smallest, largest) sample standard deviation (ddof = 1) of values x_i in ``[lo_i, lo_i +
    width_i]``: the smallest exactly (each interval's value closest to a common centre c, the one that
    minimises the sum of squared distances), the largest bounded above by
    ``min_c sum_i max((lo_i - c)^2, (hi_i - c)^2) / (n - 1)``, which is the largest exactly when no
    more than one interval is open and never smaller than any allowed value's spread. Both equal the
    plain spread when every width is 0; the largest is infinite when a width is."""
    n = len(lo)
    if n < 2:
        return 0.0, 0.0
    hi = lo + width
    free = width > 0
    if not free.any():
        sd = float(np.sqrt(np.mean((lo - lo.mean()) ** 2) * n / (n - 1)))
        return sd, sd
    fixed = lo[~free]
    a, b = lo[free], hi[free]

    def low_slope(c: float) -> float:  # derivative of sum (x - c)^2 + sum dist(c, [a, b])^2, halved
        return float(-(fixed - c).sum() + (c - np.clip(c, a, b)).sum())

    points = np.concatenate([fixed, a, b[np.isfinite(b)]])
    left, right = float(points.min()), float(points.max())
    c = _root(low_slope, left, right)
    low = float(((fixed - c) ** 2).sum() + ((c - np.clip(c, a, b)) ** 2).sum())
    if not np.isfinite(b).all():
        return math.sqrt(low / (n - 1)), math.inf
    mid, half = (a + b) / 2, (b - a) / 2

    def high_slope(c: float) -> float:  # subgradient of sum (x - c)^2 + sum (|c - mid| + half)^2, halved
        return float(-(fixed - c).sum() + (np.sign(c - mid) * (np.abs(c - mid) + half)).sum())

    c = _root(high_slope, left, right)
    high = float(((fixed - c) ** 2).sum() + ((np.abs(c - mid) + half) ** 2).sum())
    return math.sqrt(low / (n - 1)), math.sqrt(max(high, low) / (n - 1))


def _root(slope, left: float, right: float) -> float:
    """Where a nondecreasing function crosses zero on [left, right] (bisection; an end when it does not)."""
    if slope(left) >= 0:
        return left
    if slope(right) <= 0:
        return right
    for _ in range(200):
        middle = (left + right) / 2
        if slope(middle) > 0:
            right = middle
        else:
            left = middle
        if right - left <= 1e-15 * max(1.0, abs(left), abs(right)):
            break
    return (left + right) / 2


def _t_low(x: np.ndarray, width: np.ndarray) -> float | None:
    """A lower bound of ``mean(x) / (s(x) / sqrt(n))`` over x_i in ``[x_i, x_i + width_i]`` (exact without
    widths); None when n < 2 or, without widths, the values have no spread (the t-test is undefined)."""
    n = len(x)
    if n < 2:
        return None
    low_sd, high_sd = spread_range(x, width)
    numerator = float(x.mean())
    if not (width > 0).any():
        if np.ptp(x) <= TIE:
            return None
        return numerator * math.sqrt(n) / low_sd
    sd = low_sd if numerator < 0 else high_sd
    if sd == 0 or not math.isfinite(sd):
        return -math.inf if numerator < 0 else 0.0
    return numerator * math.sqrt(n) / sd


def _t_p(x: np.ndarray, width: np.ndarray, alternative: str) -> float | None:
    """The one-sided t-test p at the worst case: its largest p for "greater" (non-inferiority), its
    smallest for "less" (a significant drop), both from the lower bound of t (`_t_low`)."""
    if not (width > 0).any():
        return stats.ttest_p(x, alternative=alternative)  # type: ignore[arg-type]
    t = _t_low(x, width)
    if t is None:
        return None
    df = len(x) - 1
    return float(_special.stdtr(df, t)) if alternative == "less" else float(_special.stdtr(df, -t))


def _normal_z_low(x: np.ndarray, width: np.ndarray) -> float:
    """A lower bound of the sign-flip normal statistic ``sum(x) / sqrt(sum(x**2))`` over the intervals."""
    hi = x + width
    free = width > 0
    fixed_sq = float(np.square(x[~free]).sum())
    total = float(x.sum())
    if total < 0:
        q = fixed_sq + float(np.square(np.clip(0.0, x[free], hi[free])).sum())
    else:
        q = fixed_sq + float(np.maximum(np.square(x[free]), np.square(hi[free])).sum())
    if q == 0:
        return 0.0
    return total / math.sqrt(q) if math.isfinite(q) else (total / math.sqrt(q) if total < 0 else 0.0)


def _randomization_p(x: np.ndarray, width: np.ndarray, alternative: str, *, seed: int, resamples: int,
                     exact_max: int, large_sample: int) -> float | None:
    nonzero = int(np.count_nonzero(np.abs(x) > TIE))
    if nonzero > large_sample and (width > 0).any():
        z = _normal_z_low(x, width)
        return float(_special.ndtr(z)) if alternative == "less" else float(_special.ndtr(-z))
    return stats.sign_flip_p(x, alternative=alternative, resamples=resamples, seed=seed,  # type: ignore[arg-type]
                             exact_max=exact_max, large_sample=large_sample)


def _wilcoxon_worst(x: np.ndarray, width: np.ndarray) -> tuple[float | None, bool]:
    """(smallest one-sided "less" Wilcoxon p over the failed differences' intervals, whether the search
    was given up). The p-value is constant while no difference crosses zero or ties another's magnitude,
    and rises as a difference rises between those points; so each failed difference is tried at its
    scored value, just above it, and at every zero or tie point inside its interval."""
    free = np.flatnonzero(width > 0)
    if not len(free):
        return stats.wilcoxon_p(x, alternative="less"), False
    fixed = np.delete(x, free)
    magnitudes = np.abs(fixed[np.abs(fixed) > TIE])
    points = np.unique(np.concatenate([[0.0], magnitudes, -magnitudes, x[free], -x[free]]))
    gaps = np.diff(np.unique(np.abs(points)))
    eps = min(1e-7, float(gaps[gaps > 0].min()) / 4) if (gaps > 0).any() else 1e-7
    points = np.unique(np.concatenate([points, x[free] + eps, -(x[free] + eps)]))
    choices = []
    for j in free:
        lo, hi = float(x[j]), float(x[j] + width[j])
        inside = points[(points > lo) & (points <= hi)]
        choices.append(np.unique(np.concatenate([[lo, lo + eps], inside])))
    if math.prod(len(c) for c in choices) > WILCOXON_COMBINATIONS:
        return 0.0, True
    best: tuple[float, np.ndarray] | None = None
    trial = x.copy()
    for combination in itertools.product(*choices):
        trial[free] = combination
        p = _wilcoxon_less(trial)
        if p is not None and (best is None or p < best[0]):
            best = (p, trial.copy())
    # the p-value at the worst values, as the gate's own test computes it there
    return (None, False) if best is None else (stats.wilcoxon_p(best[1], alternative="less"), False)


@lru_cache(maxsize=128)
def _rank_sum_counts(m: int) -> np.ndarray:
    """How many subsets of the ranks 1..m have each rank sum (0 .. m(m+1)/2): the exact null distribution
    of Wilcoxon's W+ without ties, times 2**m (exact in floating point up to m = 50)."""
    counts = np.zeros(m * (m + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, m + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts


def _wilcoxon_less(d: np.ndarray) -> float | None:
    """`stats.wilcoxon_p(d, alternative="less")`, its exact case (no zero, no tie) from the rank-sum counts
    instead of a call of scipy per value tried: the same distribution, so the same p (the worst case found
    is then recomputed by `stats.wilcoxon_p` itself)."""
    nonzero = np.abs(d) > TIE
    if len(d) and stats._wilcoxon_method(d, nonzero) == "exact":
        ranks = np.argsort(np.argsort(np.abs(d))) + 1
        w_plus = int(ranks[d > 0].sum())
        counts = _rank_sum_counts(len(d))
        return float(counts[:w_plus + 1].sum() / counts.sum())
    return stats.wilcoxon_p(d, alternative="less")


def _randomization_bound(better: np.ndarray, alpha: float, *, seed: int, resamples: int, exact_max: int,
                         large_sample: int, sizes: np.ndarray | None = None) -> float | None:
    """The one-sided (1 - alpha) upper bound of the drop by inverting the sign-flip test: the smallest
    margin at which "the drop is below the margin" becomes significant (bisection; the p-value of
    ``better + margin``, "greater", does not rise with the margin). None when no margin makes it so.
    With `sizes`, `better` holds cluster sums and a margin shifts each by its cluster's size."""
    if not len(better):
        return None
    per = better if sizes is None else better / sizes

    def p(margin: float) -> float:
        shifted = better + margin if sizes is None else better + margin * sizes
        found = stats.sign_flip_p(shifted, alternative="greater", resamples=resamples, seed=seed,
                                  exact_max=exact_max, large_sample=large_sample)
        return 1.0 if found is None else found

    spread = float(np.ptp(per)) + 1.0
    low, high = float(-per.max()) - spread, float(-per.min()) + spread
    if not significant(p(high), alpha):
        return None
    while high - low > 1e-5 * spread:
        middle = (low + high) / 2
        if significant(p(middle), alpha):
            high = middle
        else:
            low = middle
    return high


def robust_se_range(x: np.ndarray, width: np.ndarray, codes: np.ndarray) -> tuple[float, float]:
    """(smallest, largest) cluster-robust standard error (`clusters.robust_se`) of the mean of values
    x_i in ``[x_i, x_i + width_i]``: the smallest exactly (the convex quadratic ``sum_c w_c (S_c - n_c m)**2``,
    ``w_c = 1 / (1 - n_c / n)``, minimised over the box of cluster sums, `scipy.optimize.lsq_linear`), the
    largest bounded above by ``sum_c w_c max(|hi_c - n_c m_lo|, |lo_c - n_c m_hi|)**2`` (each cluster's
    residual at its farthest from any allowed mean). Both the plain se without widths; the largest infinite
    when a width is."""
    s, size = clusters.sums(x, codes)
    w, _ = clusters.sums(width, codes)
    g, n = len(s), len(x)
    if g < 2:
        return 0.0, 0.0
    if not (w > 0).any():
        se = clusters.robust_se(x, codes) or 0.0
        return se, se
    from scipy.optimize import lsq_linear

    weight = 1 / (1 - size / n)
    root = np.sqrt(weight)[:, None]
    a = np.eye(g) - np.outer(size, np.ones(g)) / n  # residuals S_c - n_c m as a linear map of the sums
    free = w > 0
    fit = lsq_linear(root * a[:, free], -(root * a[:, ~free]) @ s[~free], bounds=(s[free], s[free] + w[free]))
    low = float(np.sum(fit.fun ** 2))
    if not np.isfinite(w).all():
        return math.sqrt(max(low, 0.0)) / n, math.inf
    m_lo, m_hi = float(s.sum()) / n, float((s + w).sum()) / n
    high = float(np.sum(weight * np.maximum(np.abs(s + w - size * m_lo), np.abs(s - size * m_hi)) ** 2))
    return math.sqrt(max(low, 0.0)) / n, math.sqrt(max(high, low)) / n


def _clustered_t_p(x: np.ndarray, width: np.ndarray, codes: np.ndarray, alternative: str) -> float | None:
    """The one-sided cluster-robust t-test p at the worst case over the failed pairs' intervals: t bounded
    below by the lowest mean over the smallest se when that mean is negative, else over the largest
    (`robust_se_range`), at whichever end of `clusters.df_range` gives the larger p; the plain clustered test
    without widths."""
    if not (width > 0).any():
        return clusters.ttest_p(x, codes, alternative=alternative)  # type: ignore[arg-type]
    if clusters.count(codes) < 2:
        return None
    low_se, high_se = robust_se_range(x, width, codes)
    numerator = float(x.mean())
    se = low_se if numerator < 0 else high_se
    if se == 0 or not math.isfinite(se):
        t = -math.inf if numerator < 0 else 0.0
    else:
        t = numerator / se
    tail = t if alternative == "less" else -t
    return max(float(_special.stdtr(df, tail)) for df in clusters.df_range(codes))


def figures(better: np.ndarray, margin: float, *, alpha: float, test: str, rule: str = "significant_drop",
            power: float = detect.POWER, width: np.ndarray | None = None, seed: int = 0,
            resamples: int = stats.RANDOMIZATION_RESAMPLES, exact_max: int = stats.EXACT_MAX,
            large_sample: int = stats.LARGE_SAMPLE, with_bound: bool = True,
            codes: np.ndarray | None = None) -> DropFigures:
    """The gate's figures (`DropFigures`) for differences `better`, oriented and paired, with the failed
    pairs' interval widths `width` (0: a scored record; None: none failed). `with_bound` False leaves the
    bound out (None), for simulations of the decision alone: inverting the randomization test takes a
    bisection of a few dozen tests. `codes`: each pair's cluster (`clusters.Clusters`): every figure is
    then clustered (`_clustered`); None: the questions are independent."""
    if codes is not None:
        return _clustered(np.asarray(better, dtype=float), margin, np.asarray(codes), alpha=alpha, test=test,
                          rule=rule, power=power, width=width, seed=seed, resamples=resamples, exact_max=exact_max,
                          large_sample=large_sample, with_bound=with_bound)
    d = np.asarray(better, dtype=float)
    n = len(d)
    w = np.zeros(n) if width is None else np.asarray(width, dtype=float)
    x = d + margin
    options = dict(seed=seed, resamples=resamples, exact_max=exact_max, large_sample=large_sample)
    unbounded = False
    failed = bool((w > 0).any())
    _check_rule(rule, test)
    if rule == "significant_drop" and not failed:
        p = stats.drop_p(d, margin, test=test, **options)  # type: ignore[arg-type]  # the plain gate, exactly
    elif rule == "significant_drop" and test == "randomization":
        p = _randomization_p(x, w, "less", **options)
    elif rule == "significant_drop" and test == "ttest":
        p = _t_p(x, w, "less")
    elif rule == "significant_drop":
        p, unbounded = _wilcoxon_worst(x, w)
    elif test == "randomization":
        p = _randomization_p(x, w, "greater", **options)
    else:
        p = _t_p(x, w, "greater")
        if p is None and n >= 2:  # no spread: t is +inf or -inf, the bound is -mean; shown iff it is below the margin
            p = 0.0 if float(x.mean()) > TIE else 1.0
    decided = bool(significant(p, alpha))
    low_sd, high_sd = spread_range(d, w) if n >= 2 else (0.0, 0.0)
    sd = high_sd if n >= 2 else None
    hi = x + w
    fixed_nonzero = (w == 0) & (np.abs(x) > TIE)
    free_nonzero = (w > 0) & ((x > TIE) | (hi < -TIE))
    m = int(np.count_nonzero(fixed_nonzero | free_nonzero))
    resolvable = n >= 2 and detect.resolves(test, m if test != "ttest" else n, alpha, exact_max=exact_max,
                                            resamples=resamples, large_sample=large_sample)
    found_mde = detect.mde(sd, n, alpha, power) if resolvable and sd is not None else None
    at_margin = detect.power_at(margin, sd, n, alpha) if resolvable and sd is not None else (0.0 if n >= 2 else None)
    needed = detect.questions_needed(sd, margin, alpha, power, nonzero_share=m / n if n else 0.0, test=test,
                                     exact_max=exact_max, resamples=resamples, large_sample=large_sample)
    if not with_bound:
        bound = None
    elif test == "randomization" and n:
        bound = _randomization_bound(d, alpha, **options)  # monotone: the scored values are the worst case
    elif n >= 2 and sd is not None:
        bound = -float(d.mean()) + detect.t_critical(alpha, n - 1) * sd / math.sqrt(n)
        bound = bound if math.isfinite(bound) else None
    else:
        bound = None
    return DropFigures(p=p, decided=decided, n=n, sd=sd, mde=found_mde, power=power, power_at_margin=at_margin,
                       bound=bound, questions_needed=needed, m=m, resolvable=resolvable,
                       failed=int(np.count_nonzero(w > 0)), unbounded=unbounded)


def _clustered(d: np.ndarray, margin: float, codes: np.ndarray, *, alpha: float, test: str, rule: str, power: float,
               width: np.ndarray | None, seed: int, resamples: int, exact_max: int, large_sample: int,
               with_bound: bool) -> DropFigures:
    """`figures` with the questions in clusters: the cluster sign-flip test on cluster sums, the cluster-robust
    t-test (CR2, Bell-McCaffrey df), Wilcoxon on cluster means, failed records at their worst as in `figures`
    (the sign-flip test monotone in every cluster sum; t bounded with `robust_se_range`; Wilcoxon searched
    over the cluster means' intervals); power, MDE and the bound at the clustered se (at its largest over the
    intervals) with `clusters.robust_df` (with failed records the smallest of `clusters.df_range`);
    questions needed with G' - 1 df for G' clusters of the mean size (`clusters`)."""
    n = len(d)
    w = np.zeros(n) if width is None else np.asarray(width, dtype=float)
    x = d + margin
    g = clusters.count(codes)
    options = dict(seed=seed, resamples=resamples, exact_max=exact_max, large_sample=large_sample)
    _check_rule(rule, test)
    sx, size = clusters.sums(x, codes)
    sw, _ = clusters.sums(w, codes)
    alternative = "less" if rule == "significant_drop" else "greater"
    unbounded = False
    if test == "randomization":
        p = _randomization_p(sx, sw, alternative, **options)
    elif test == "ttest" and rule == "significant_drop" and not (w > 0).any():
        p = clusters.drop_p(d, codes, margin, test="ttest")  # as `stats.drop_p` computes it
    elif test == "ttest":
        p = _clustered_t_p(x, w, codes, alternative)
        if p is None and rule == "non_inferiority" and n >= 2 and g >= 2:  # no spread: shown iff above -margin
            p = 0.0 if float(x.mean()) > TIE else 1.0
    else:
        p, unbounded = _wilcoxon_worst(sx / size, sw / size)
    decided = bool(significant(p, alpha))
    sd = spread_range(d, w)[1] if n >= 2 else None
    se = robust_se_range(d, w, codes)[1] if g >= 2 else None
    df = None if g < 2 else clusters.robust_df(d, codes) if not (w > 0).any() else clusters.df_range(codes)[0]
    fixed_nonzero = (sw == 0) & (np.abs(sx) > TIE)
    free_nonzero = (sw > 0) & ((sx > TIE) | (sx + sw < -TIE))
    m = int(np.count_nonzero(fixed_nonzero | free_nonzero))
    resolvable = g >= 2 and detect.resolves(test, m if test != "ttest" else g, alpha, exact_max=exact_max,
                                            resamples=resamples, large_sample=large_sample)
    found_mde = clusters.mde(se, g, alpha, power, df) if resolvable and se is not None else None
    at_margin = clusters.power_at(margin, se, g, alpha, df) if resolvable and se is not None else \
        (0.0 if g >= 2 else None)
    needed = clusters.questions_needed(se, n, g, margin, alpha, power, nonzero_share=m / g if g else 0.0, test=test,
                                       exact_max=exact_max, resamples=resamples, large_sample=large_sample)
    if not with_bound:
        bound = None
    elif test == "randomization" and n:
        s, _ = clusters.sums(d, codes)
        bound = _randomization_bound(s, alpha, sizes=size.astype(float), **options)
    elif g >= 2 and se is not None:
        bound = -float(d.mean()) + detect.t_critical(alpha, df) * se
        bound = bound if math.isfinite(bound) else None
    else:
        bound = None
    return DropFigures(p=p, decided=decided, n=n, sd=sd, mde=found_mde, power=power, power_at_margin=at_margin,
                       bound=bound, questions_needed=needed, m=m, resolvable=resolvable,
                       failed=int(np.count_nonzero(w > 0)), unbounded=unbounded, clusters=g)


def _check_rule(rule: str, test: str) -> None:
    """Refuse an unknown rule or test, and a non-inferiority gate on Wilcoxon (it has no bound)."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")
    if test not in stats.TESTS:
        raise ValueError(f"unknown test {test!r}; known: {', '.join(stats.TESTS)}")
    if rule == "non_inferiority" and test == "wilcoxon":
        raise ValueError("a non-inferiority gate takes the randomization or t-test, not wilcoxon")


__all__ = ["DropFigures", "RULES", "Rule", "WILCOXON_COMBINATIONS", "figures", "robust_se_range", "spread_range"]

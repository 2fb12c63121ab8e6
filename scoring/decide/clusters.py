"""Clustered questions: paired statistics that resample whole clusters.

Questions written from the same source (a runbook, a policy) move together: a candidate that misreads
the source misses all of them. Tests that take every question as independent then see more
evidence than there is, and their intervals are too narrow. When a comparison's questions fall into
clusters (`question_clusters`, chosen by `CLUSTER_BY`), every paired figure treats the cluster as the
unit of resampling; the statistic is still the mean paired difference over questions.

For the differences d_i of n paired questions in G clusters (cluster c: its n_c questions, their sum
``S_c = sum_{i in c} d_i``; mean ``m = sum_c S_c / n``):

- **cluster sign-flip test** (`sign_flip_p`): under H0 each cluster's sum is symmetric about zero, so
  flipping the sign of whole cluster sums is equally likely; the statistic is ``sum_c S_c`` (n times
  the mean). Exact over all ``2**G'`` patterns of the G' non-zero cluster sums when G' <=
  `stats.EXACT_MAX`, else `stats.RANDOMIZATION_RESAMPLES` seeded patterns, else (G' above
  `stats.LARGE_SAMPLE`) the normal approximation: the unclustered procedure of `stats.sign_flip_p` run
  on the cluster sums in order of first appearance;
- **cluster bootstrap** (`bootstrap_ci`): each resample draws G clusters with replacement (the same
  index matrix `stats` draws for a sample of size G) and takes ``sum of drawn S_c / sum of drawn n_c``;
  the percentile interval of those means. Above `stats.LARGE_SAMPLE` non-zero cluster sums, the normal
  interval ``m +- z * se``;
- **cluster-robust t-test** (`ttest_p`): ``t = (m - mu) / se``, se the CR2 (Bell-McCaffrey) standard
  error of the mean, ``se**2 = sum_c e_c**2 / (1 - n_c / n) / n**2``, ``e_c = S_c - n_c m`` (the cluster's
  summed residuals), with the Bell-McCaffrey degrees of freedom under a working model of one
  intra-cluster correlation estimated from the sample (`robust_df`: Imbens and Kolesar 2016). With equal
  cluster sizes this is CR1 with G - 1 df, exactly Student's t on the G cluster means; with uneven sizes
  CR1 with G - 1 df rejects too often with 20 clusters or fewer (docs/statistics.md);
- **Wilcoxon** (`wilcoxon_p`): the signed-rank test of the G cluster means (the cluster-summary
  approach: one observation per cluster);
- **MDE, power, questions needed, bound** (`mde`, `power_at`, `questions_needed`, `t_bound`): those of
  `detect` with the clustered se in place of ``s / sqrt(n)`` and `robust_df` degrees of freedom; the
  questions needed keep the clusters' mean size (clusters needed x n / G, each with G' - 1 df).

With one question per cluster every figure is the unclustered one: the sums are the differences, the
bootstrap draws the same indexes, CR2's ``sum e**2 / (1 - 1/n) / n**2`` is ``s**2 / n`` and the df n - 1.
References: Liang and Zeger (1986), *Biometrika* 73:13-22; Cameron and Miller (2015), "A practitioner's
guide to cluster-robust inference", *J. Human Resources* 50:317-372 (CR1, G - 1 df, wild cluster
sign flips); Bell and McCaffrey (2002), *Survey Methodology* 28:169-181 (CR2 and its df); Imbens and
Kolesar (2016), *Rev. Econ. Stat.* 98:701-712 (the df under a random-effects working model); Field and
Welsh (2007), *JRSS B* 69:369-390 (the cluster bootstrap).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import special as _special

from . import detect, stats
from .change import TIE
from .significance import significant

CLUSTER_BY = ("cluster", "type", "tag:<prefix>", "none")
"""What a policy's ``cluster_by`` may say: the questions' own ``cluster`` (the default), their type,
the first tag starting with a prefix (``tag:team-``: a question tagged ``team-search`` is in cluster
``team-search``), or ``none`` (every question on its own: no clustering)."""
DEFAULT_BY = "cluster"


def parse_cluster_by(value: object) -> str:
    """The ``cluster_by`` value, checked; ValueError with the rule otherwise."""
    if isinstance(value, str):
        if value in ("cluster", "type", "none"):
            return value
        if value.startswith("tag:") and value[4:].strip() == value[4:] and value[4:]:
            return value
    raise ValueError('cluster_by is "cluster" (the questions\' own), "type", "tag:<prefix>" (the first tag with '
                     'that prefix) or "none"')


@dataclass(frozen=True)
class Clusters:
    """The cluster of every question of a comparison, in suite order: `codes` (0 .. count - 1, numbered in
    order of first appearance), `by` the ``cluster_by`` that made them. A question without a cluster
    (none given, no tag with the prefix) is a cluster of its own."""

    codes: np.ndarray
    by: str

    @property
    def count(self) -> int:
        return int(self.codes.max()) + 1 if len(self.codes) else 0


def question_clusters(questions: pd.DataFrame, by: str = DEFAULT_BY) -> Clusters | None:
    """The questions' clusters under `by` (`CLUSTER_BY`); None when nothing clusters them: ``none``, or no
    question has a cluster (no ``cluster`` given, no tag with the prefix). ``type`` always clusters."""
    by = parse_cluster_by(by)
    if by == "none" or not len(questions):
        return None
    if by == "type":
        names = pd.Series(questions["type"].astype(str).to_numpy(), dtype=object)
    elif by == "cluster":
        if "cluster" not in questions:
            return None
        names = pd.Series(questions["cluster"].to_numpy(), dtype=object)
    else:
        prefix = by[4:]
        if "tags" not in questions:
            return None
        names = pd.Series([next((t for t in tags if str(t).startswith(prefix)), None)
                           for tags in questions["tags"]], dtype=object)
    given = names.notna().to_numpy()
    if not given.any():
        return None
    codes = np.empty(len(names), dtype=np.int64)
    codes[given] = pd.factorize(names[given], sort=False)[0]
    alone = np.flatnonzero(~given)
    codes[alone] = codes[given].max() + 1 + np.arange(len(alone))
    return Clusters(_first_seen(codes), by)


def _first_seen(codes: np.ndarray) -> np.ndarray:
    """`codes` renumbered 0, 1, ... in order of first appearance."""
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def sums(d: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S_c, n_c) of the clusters present in this sample, in order of first appearance."""
    d = np.asarray(d, dtype=float)
    local = _first_seen(np.asarray(codes))
    size = int(local.max()) + 1 if len(local) else 0
    return np.bincount(local, weights=d, minlength=size), np.bincount(local, minlength=size)


def count(codes: np.ndarray) -> int:
    """The number of distinct clusters among `codes`."""
    return int(len(np.unique(codes)))


def nonzero_sums(d: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The cluster sums further than `TIE` from 0 (what the sign-flip test flips), in order of first appearance."""
    s, _ = sums(d, codes)
    return s[np.abs(s) > TIE]


# --- tests ---------------------------------------------------------------------------------------


def sign_flip_p(d: np.ndarray, codes: np.ndarray, *, alternative: stats.Alternative = "two-sided",
                resamples: int = stats.RANDOMIZATION_RESAMPLES, seed: int = 0, exact_max: int = stats.EXACT_MAX,
                large_sample: int = stats.LARGE_SAMPLE) -> float | None:
    """The cluster sign-flip p-value (module docstring); None when n = 0."""
    if not len(d):
        return None
    return stats.sign_flip_p(sums(d, codes)[0], alternative=alternative, resamples=resamples, seed=seed,
                             exact_max=exact_max, large_sample=large_sample)


def robust_se(d: np.ndarray, codes: np.ndarray) -> float | None:
    """The CR2 (Bell-McCaffrey) standard error of the mean difference, ``se**2 = sum_c e_c**2 / (1 - n_c / n)
    / n**2`` (`e_c = S_c - n_c m`); None with fewer than two clusters. With equal cluster sizes it is
    CR1's ``G / (G - 1) * sum_c e_c**2 / n**2``; with one question per cluster ``s**2 / n``."""
    d = np.asarray(d, dtype=float)
    s, size = sums(d, codes)
    if len(s) < 2:
        return None
    g, n = len(s), len(d)
    residual = s - size * float(np.mean(d))
    if (size == size[0]).all():  # CR1, computed as `stats` computes s**2 / n for singletons
        return math.sqrt(float(np.mean(residual ** 2)) * (g / (g - 1)) / n * (g / n))
    return math.sqrt(float(np.sum(residual ** 2 / (1 - size / n)))) / n


def icc(d: np.ndarray, codes: np.ndarray) -> float:
    """The intra-cluster correlation of `d` by one-way ANOVA (method of moments), clipped to [0, 1]; 0 when
    every cluster has one question or nothing varies."""
    d = np.asarray(d, dtype=float)
    s, size = sums(d, codes)
    g, n = len(s), len(d)
    if g < 2 or n <= g:
        return 0.0
    local = _first_seen(np.asarray(codes))
    mean_c = s / size
    between = float(np.sum(size * (mean_c - d.mean()) ** 2)) / (g - 1)
    within = float(np.sum((d - mean_c[local]) ** 2)) / (n - g)
    n0 = (n - float(np.sum(size.astype(float) ** 2)) / n) / (g - 1)
    var_c = max((between - within) / n0, 0.0)
    return min(var_c / (var_c + within), 1.0) if var_c + within > 0 else 0.0


def df_at(size: np.ndarray, rho: float) -> float:
    """The Bell-McCaffrey degrees of freedom of the CR2 t-test of a mean over clusters of sizes `size`,
    under the working model of an intra-cluster correlation `rho` (Imbens and Kolesar 2016):
    ``tr(M)**2 / tr(M**2)``, M the G x G matrix ``G' Omega G`` of the CR2 variance's cluster parts. G - 1
    with equal sizes, whatever `rho`. Computed in O(G): M is a diagonal plus a rank-two part."""
    size = np.asarray(size, dtype=float)
    if (size == size[0]).all():
        return float(len(size) - 1)
    n = float(size.sum())
    share = size / n
    c = 1 / np.sqrt(1 - share)
    q = size * (1 - rho + rho * size)
    total = float(q.sum())
    diag, a, b = c * c * q, c * q, c * share
    trace = float(diag.sum() - 2 * a @ b + total * (b @ b))
    gram = np.array([[a @ a, a @ b], [a @ b, b @ b]])
    low_rank = np.array([[0.0, -1.0], [-1.0, total]]) @ gram
    square = float(diag @ diag + 2 * diag @ (-2 * a * b + total * b * b) + np.trace(low_rank @ low_rank))
    return trace ** 2 / square


def robust_df(d: np.ndarray, codes: np.ndarray) -> float | None:
    """The degrees of freedom of the clustered t-test: `df_at` the clusters' sizes and the sample's `icc`;
    None with fewer than two clusters."""
    _, size = sums(d, codes)
    return df_at(size, icc(d, codes)) if len(size) >= 2 else None


def df_range(codes: np.ndarray) -> tuple[float, float]:
    """(smallest, largest) `df_at` these clusters' sizes over every intra-cluster correlation in [0, 1]: the
    two ends (the degrees of freedom are monotone in it, tested), for a bound that must hold whatever the
    sample's correlation."""
    _, size = sums(np.zeros(len(codes)), codes)
    ends = df_at(size, 0.0), df_at(size, 1.0)
    return min(ends), max(ends)


def ttest_p(d: np.ndarray, codes: np.ndarray, *, alternative: stats.Alternative = "two-sided",
            mu: float = 0.0) -> float | None:
    """The cluster-robust t-test of the mean difference against `mu`: ``(m - mu) / se`` (`robust_se`),
    Student t with `robust_df` degrees of freedom. None with fewer than two clusters or no spread."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2 or np.ptp(d) <= TIE:
        return None
    se = robust_se(d, codes)
    if se is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(float(np.mean(d)) - mu, se)
    return stats.t_p_value(t, robust_df(d, codes), alternative)


def means(d: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each cluster's mean difference (S_c / n_c), in order of first appearance."""
    s, size = sums(d, codes)
    return s / size


def wilcoxon_p(d: np.ndarray, codes: np.ndarray, *, alternative: stats.Alternative = "two-sided",
               mu: float = 0.0) -> float | None:
    """The Wilcoxon signed-rank test of the cluster means against `mu` (`stats.wilcoxon_p` on `means`)."""
    if not len(d):
        return None
    return stats.wilcoxon_p(means(d, codes), alternative=alternative, mu=mu)


def bootstrap_ci(d: np.ndarray, codes: np.ndarray, *, resamples: int = stats.BOOTSTRAP_RESAMPLES, seed: int = 0,
                 confidence: float = stats.CONFIDENCE, large_sample: int = stats.LARGE_SAMPLE
                 ) -> tuple[float, float] | None:
    """The cluster bootstrap's percentile interval of the mean difference (module docstring); None when
    n = 0; ``(mean, mean)`` without spread. A sample of one question per cluster takes
    `stats.bootstrap_ci` itself (the same resampling)."""
    found = _interval_or_sums(d, codes, resamples=resamples, seed=seed, confidence=confidence,
                              large_sample=large_sample)
    if not isinstance(found, _Resampled):
        return found
    drawn = stats._bootstrap_means(np.column_stack([found.s, found.size]), resamples, seed)
    return stats._percentile_interval(drawn[:, 0] / drawn[:, 1], confidence)


@dataclass(frozen=True)
class _Resampled:
    """A cluster bootstrap still to draw: the sample's cluster sums and sizes (order of first appearance)."""

    s: np.ndarray
    size: np.ndarray


def _interval_or_sums(d: np.ndarray, codes: np.ndarray, *, resamples: int, seed: int, confidence: float,
                      large_sample: int) -> tuple[float, float] | None | _Resampled:
    """`bootstrap_ci`, or what its resampling draws from when it resamples cluster sums."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0:
        return None
    s, size = sums(d, codes)
    if len(s) == n:
        return stats.bootstrap_ci(d, resamples=resamples, seed=seed, confidence=confidence, large_sample=large_sample)
    if np.ptp(d) <= TIE:
        mean = float(d.mean())
        return mean, mean
    if np.count_nonzero(np.abs(s) > TIE) > large_sample or len(s) < 2:
        se = robust_se(d, codes)
        if se is None:
            mean = float(d.mean())
            return mean, mean
        half = float(_special.ndtri(0.5 + confidence / 2)) * se
        return float(d.mean()) - half, float(d.mean()) + half
    return _Resampled(s, size.astype(float))


def _intervals_drawn_together(found: Sequence[_Resampled], resamples: int, seed: int,
                              confidence: float) -> list[tuple[float, float]]:
    """`bootstrap_ci` of samples over the same clusters (equal sizes), one index matrix for all: each
    column's means are those it gets alone (`stats._bootstrap_means`)."""
    drawn = stats._bootstrap_means(np.column_stack([*(f.s for f in found), found[0].size]), resamples, seed)
    return [stats._percentile_interval(drawn[:, i] / drawn[:, -1], confidence) for i in range(len(found))]


_UNSET = object()


def paired(b: np.ndarray, c: np.ndarray, codes: np.ndarray, *, higher_is_better: bool = True, seed: int = 0,
           bootstrap_resamples: int = stats.BOOTSTRAP_RESAMPLES,
           randomization_resamples: int = stats.RANDOMIZATION_RESAMPLES, exact_max: int = stats.EXACT_MAX,
           confidence: float = stats.CONFIDENCE, large_sample: int = stats.LARGE_SAMPLE,
           complete: bool = True, interval: Any = _UNSET) -> stats.Paired:
    """`stats.paired` with the questions in clusters (`codes`, one per pair; n/a pairs already left out):
    the same fields, every interval and test clustered (module docstring); `method` ``normal`` above
    `large_sample` non-zero cluster sums. `complete` False leaves the interval, t-test and Wilcoxon
    None, as `stats_batch.paired_many` does. `interval`: `bootstrap_ci` of these differences, drawn before."""
    b, c = np.asarray(b, dtype=float), np.asarray(c, dtype=float)
    n = len(b)
    d = c - b
    better = d if higher_is_better else -d
    improved, regressed = int(np.count_nonzero(better > TIE)), int(np.count_nonzero(better < -TIE))
    nonzero = int(np.count_nonzero(np.abs(d) > TIE))
    alpha = 1 - confidence
    if n == 0:
        return stats.Paired(0, None, None, None, None, None, None, None, None, 0, 0, 0,
                            stats.small_sample_warnings(0, 0, alpha=alpha))
    flips = nonzero_sums(d, codes)
    warnings = stats.small_sample_warnings(n, nonzero, alpha=alpha)
    g = count(codes)
    if n >= 2 and nonzero and significant(stats.min_sign_p(nonzero), alpha) and \
            not significant(stats.min_sign_p(len(flips)), alpha):
        warnings += (f"only {len(flips)} of {g} clusters differ: the clustered randomization and Wilcoxon tests "
                     f"cannot go below p = {stats.min_sign_p(len(flips)):.3g}, so they cannot reach {alpha:g}",)
    means_ = float(b.mean()), float(c.mean())
    counts = (improved, regressed, n - improved - regressed)
    if n < 2:
        return stats.Paired(n, *means_, float(d.mean()), None, None, None, None, None, *counts, warnings)
    if nonzero and np.ptp(d) <= TIE:
        warnings += ("every paired difference is the same: the t-test is undefined (no spread)",)
    method: stats.Method = "normal" if len(flips) > large_sample else "resampling"
    p_flip = stats._sign_flip(flips, "two-sided", randomization_resamples, seed, exact_max, large_sample, None)
    if not complete:
        return stats.Paired(n, *means_, float(d.mean()), None, None, None, None, p_flip, *counts, warnings, method)
    if interval is _UNSET:
        interval = bootstrap_ci(d, codes, resamples=bootstrap_resamples, seed=seed, confidence=confidence,
                                large_sample=large_sample)
    return stats.Paired(n, *means_, float(d.mean()), *(interval or (None, None)), ttest_p(d, codes),
                        wilcoxon_p(d, codes), p_flip, *counts, warnings, method)


def paired_many(base: Sequence[np.ndarray], cand: Sequence[np.ndarray], samples: Sequence[tuple[int, np.ndarray]],
                paired_masks: Sequence[np.ndarray] | None, codes: np.ndarray, *, higher_is_better: Sequence[bool],
                seed: int = 0, bootstrap_resamples: int = stats.BOOTSTRAP_RESAMPLES,
                randomization_resamples: int = stats.RANDOMIZATION_RESAMPLES, exact_max: int = stats.EXACT_MAX,
                confidence: float = stats.CONFIDENCE, large_sample: int = stats.LARGE_SAMPLE,
                complete: Sequence[bool] | None = None) -> list[stats.Paired]:
    """`stats_batch.paired_many` with the questions in clusters (`codes`, one per question): each sample
    ``(j, mask)`` by `paired` over variable j's paired questions in the mask (`paired_masks[j]`; None:
    where both sides have a value); samples holding the same pairs of a variable share one result."""
    todo: dict[tuple[int, bytes, bool], np.ndarray] = {}
    keys = []
    for i, (j, mask) in enumerate(samples):
        both = ~(np.isnan(base[j]) | np.isnan(cand[j])) if paired_masks is None else paired_masks[j]
        keep = both & np.asarray(mask, dtype=bool)
        key = (j, np.packbits(keep).tobytes(), complete is None or bool(complete[i]))
        todo.setdefault(key, keep)
        keys.append(key)
    # the cluster bootstraps of samples over the same questions draw one index matrix together
    intervals: dict[tuple[int, bytes, bool], Any] = {}
    same_questions: dict[bytes, list[tuple[tuple[int, bytes, bool], _Resampled]]] = {}
    for key, keep in todo.items():
        j, questions, full = key
        if not full or np.count_nonzero(keep) < 2:
            continue
        found = _interval_or_sums(cand[j][keep] - base[j][keep], codes[keep], resamples=bootstrap_resamples,
                                  seed=seed, confidence=confidence, large_sample=large_sample)
        if isinstance(found, _Resampled):
            same_questions.setdefault(questions, []).append((key, found))
        else:
            intervals[key] = found
    for group in same_questions.values():
        drawn = _intervals_drawn_together([f for _, f in group], bootstrap_resamples, seed, confidence)
        intervals.update((key, interval) for (key, _), interval in zip(group, drawn))
    done = {key: paired(base[key[0]][keep], cand[key[0]][keep], codes[keep], higher_is_better=higher_is_better[key[0]],
                        seed=seed, bootstrap_resamples=bootstrap_resamples,
                        randomization_resamples=randomization_resamples, exact_max=exact_max, confidence=confidence,
                        large_sample=large_sample, complete=key[2], interval=intervals.get(key, _UNSET))
            for key, keep in todo.items()}
    return [done[key] for key in keys]


def drop_p(better: np.ndarray, codes: np.ndarray, max_drop: float, *, test: str = "randomization", seed: int = 0,
           resamples: int = stats.RANDOMIZATION_RESAMPLES, exact_max: int = stats.EXACT_MAX,
           large_sample: int = stats.LARGE_SAMPLE) -> float | None:
    """`stats.drop_p` with clusters: one-sided p that the mean change is worse than ``-max_drop``."""
    d = np.asarray(better, dtype=float)
    if test == "randomization":
        return sign_flip_p(d + max_drop, codes, alternative="less", resamples=resamples, seed=seed,
                           exact_max=exact_max, large_sample=large_sample)
    if test == "ttest":
        return ttest_p(d, codes, alternative="less", mu=-max_drop)
    if test == "wilcoxon":
        return wilcoxon_p(d, codes, alternative="less", mu=-max_drop)
    raise ValueError(f"unknown test {test!r}; known: {', '.join(stats.TESTS)}")


# --- what a clustered sample can detect ----------------------------------------------------------


def power_at(drop: float, se: float, clusters: int, alpha: float, df: float | None = None) -> float | None:
    """`detect.power_at` with the clustered standard error of the mean `se` and `df` degrees of freedom
    (`robust_df`; G - 1 when not given, as for equal sizes): the power of the one-sided cluster-robust
    t-test to detect a true drop `drop`; None with fewer than two clusters."""
    if clusters < 2:
        return None
    return detect.power_of_se(drop, se, clusters - 1 if df is None else df, alpha)


def mde(se: float, clusters: int, alpha: float, power: float = detect.POWER, df: float | None = None
        ) -> float | None:
    """`detect.mde` with the clustered se and `df` degrees of freedom (`robust_df`; G - 1 when not given);
    None with fewer than two clusters or an unbounded se."""
    if clusters < 2 or not math.isfinite(se):
        return None
    if se <= 0:
        return 0.0
    df = clusters - 1 if df is None else df
    nc = float(_special.nctdtrinc(df, 1.0 - power, detect.t_critical(alpha, df)))
    return nc * se


def t_bound(better: np.ndarray, codes: np.ndarray, alpha: float) -> float | None:
    """The cluster-robust one-sided (1 - alpha) upper bound of the mean drop: ``-m + t_{1-alpha, df} se``
    (`robust_se`, `robust_df`)."""
    d = np.asarray(better, dtype=float)
    se = robust_se(d, codes) if len(d) >= 2 else None
    if se is None:
        return None
    return -float(d.mean()) + detect.t_critical(alpha, robust_df(d, codes)) * se


def questions_needed(se: float | None, n: int, clusters: int, margin: float, alpha: float,
                     power: float = detect.POWER, *, nonzero_share: float = 1.0, test: str = "ttest",
                     exact_max: int = stats.EXACT_MAX, resamples: int = stats.RANDOMIZATION_RESAMPLES,
                     large_sample: int = stats.LARGE_SAMPLE) -> int | None:
    """The questions a clustered sample needs to detect a drop of `margin` with `power`: the clusters
    needed (`detect.questions_needed`'s search, with the se of G' clusters ``se * sqrt(G / G')``, G' - 1
    df, and for a sign-based test enough non-zero clusters at `nonzero_share` of them), times the mean
    cluster size n / G, rounded up. None where `detect.questions_needed` gives None."""
    if se is None or clusters < 1 or not math.isfinite(se) or margin <= 0 or not 0 < power < 1:
        return None
    floor = detect.resolution_floor(test, alpha, nonzero_share, exact_max=exact_max, resamples=resamples,
                                    large_sample=large_sample)
    if floor is None:
        return None
    per_cluster = n / clusters
    if se <= 0:
        return math.ceil(floor * per_cluster)

    def enough(g: int) -> bool:
        found = power_at(margin, se * math.sqrt(clusters / g), g, alpha)
        return found is not None and found >= power

    needed = detect.smallest_enough(enough, floor, detect.MAX_QUESTIONS / per_cluster)
    return None if needed is None else math.ceil(needed * per_cluster - 1e-9)


def row_figures(better: np.ndarray, codes: np.ndarray, alpha: float = 0.05, power: float = detect.POWER, *,
                exact_max: int = stats.EXACT_MAX, resamples: int = stats.RANDOMIZATION_RESAMPLES,
                large_sample: int = stats.LARGE_SAMPLE) -> tuple[float | None, float | None]:
    """`detect.row_figures` with clusters: (mde, bound) at the clustered se, None for the MDE where the
    cluster sign-flip test, with the row's non-zero cluster sums, cannot reach alpha."""
    d = np.asarray(better, dtype=float)
    se = robust_se(d, codes) if len(d) >= 2 else None
    m = len(nonzero_sums(d, codes))
    found = None
    if se is not None and detect.resolves("randomization", m, alpha, exact_max=exact_max, resamples=resamples,
                                          large_sample=large_sample):
        found = mde(se, count(codes), alpha, power, robust_df(d, codes))
    return found, t_bound(d, codes, alpha)


def words(clusters: int | None) -> str:
    """``clustered: 57 clusters`` (one cluster: ``clustered: 1 cluster``); empty when unclustered (None)."""
    if clusters is None:
        return ""
    return f"clustered: {clusters} cluster" + ("" if clusters == 1 else "s")


__all__ = ["CLUSTER_BY", "Clusters", "DEFAULT_BY", "bootstrap_ci", "count", "df_at", "df_range", "drop_p", "icc",
           "means", "mde", "nonzero_sums", "paired", "paired_many", "parse_cluster_by", "power_at", "question_clusters",
           "questions_needed", "robust_df", "robust_se", "row_figures", "sign_flip_p", "sums", "t_bound", "ttest_p",
           "wilcoxon_p", "words"]

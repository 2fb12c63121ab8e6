"""Calibration of the clustered statistics by simulation: with questions in correlated clusters, the
clustered tests hold their level where the unclustered ones do not (tests/test_clusters.py runs a small
version).

    python benchmarks/calibrate_cluster.py [--trials 2000] [--level-trials 20000] [--seed 0]

Paired differences under a true null in G clusters: a cluster effect shared by the cluster's questions
(normal, variance icc) plus each question's own (normal, variance 1 - icc). Cluster sizes are equal
(``4``) or uneven (``1-12``: uniform from 1 to 12, mean 6.5). Figures are shares of trials with their
Monte Carlo standard error; nothing is asserted. docs/statistics.md quotes the tables.

1. Level: the one-sided test of "no drop" at alpha 0.05 against "a drop"; a test of level 0.05 rejects in
   at most 5% of trials. Unclustered: the t-test and sign-flip test over questions; clustered: CR1 with
   G - 1 df (for reference: the textbook cluster-robust t, not what ragslice runs), the cluster-robust t
   ragslice runs (CR2, Bell-McCaffrey df), the cluster sign-flip test (10,000 seeded patterns, as the
   product draws them), Wilcoxon of the cluster means. `--level-trials` trials a cell.
2. Coverage: the share of trials whose interval holds the true mean (0): the two-sided 95% percentile
   bootstrap over questions and over clusters (2,000 resamples), and the one-sided 95% upper bound of the
   drop (Student's and the cluster-robust one).
3. Power at the clustered MDE: the true drop equals the MDE at the population's clustered se (power 0.8);
   the share of trials in which the clustered t-test rejects.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from scoring.decide import clusters as C
from scoring.decide import detect, stats
from scoring.decide.stats import t_p_value

ALPHA = 0.05
CELLS = ((10, "4", 0.3), (20, "4", 0.3), (50, "4", 0.3), (10, "1-12", 0.3), (20, "1-12", 0.3), (50, "1-12", 0.3),
         (20, "4", 0.0), (20, "4", 0.6))
"""(clusters, sizes, intra-cluster correlation) of each row."""


def draw(rng: np.random.Generator, g: int, sizes: str, icc: float, shift: float = 0.0
         ) -> tuple[np.ndarray, np.ndarray]:
    size = np.full(g, 4) if sizes == "4" else rng.integers(1, 13, g)
    codes = np.repeat(np.arange(g), size)
    d = rng.normal(0, math.sqrt(icc), g)[codes] + rng.normal(0, math.sqrt(1 - icc), len(codes)) + shift
    return d, codes


def share(hits: int, trials: int) -> str:
    rate = hits / trials
    return f"{rate:.3f} ± {math.sqrt(max(rate * (1 - rate), 1e-12) / trials):.3f}"


def cr1_p(d: np.ndarray, codes: np.ndarray) -> float | None:
    """The one-sided (less) CR1 t-test with G - 1 df: ``G / (G - 1) * sum_c e_c**2 / n**2``."""
    s, size = C.sums(d, codes)
    g, n = len(s), len(d)
    se = math.sqrt(g / (g - 1) * float(np.sum((s - size * d.mean()) ** 2))) / n
    return t_p_value(d.mean() / se, g - 1, "less")


def level(trials: int, seed: int) -> None:
    print("1. Level (true change 0; one-sided alpha 0.05): share of trials that report a significant drop")
    print(f"  {'G':>3} {'sizes':>5} {'icc':>4}  {'t':>13} {'sign-flip':>13}  {'CR1, G-1 df':>13} "
          f"{'t clustered':>13} {'flip clustered':>14} {'Wilcoxon cl.':>13}")
    for g, sizes, icc in CELLS:
        rng = np.random.default_rng((seed, g, len(sizes), int(icc * 10)))
        hits = np.zeros(6, dtype=int)
        for _ in range(trials):
            d, codes = draw(rng, g, sizes, icc)
            found = (stats.ttest_p(d, alternative="less"),
                     stats.sign_flip_p(d, alternative="less", resamples=999),
                     cr1_p(d, codes),
                     C.ttest_p(d, codes, alternative="less"),
                     C.sign_flip_p(d, codes, alternative="less"),
                     C.wilcoxon_p(d, codes, alternative="less"))
            hits += [p is not None and p < ALPHA for p in found]
        print(f"  {g:>3} {sizes:>5} {icc:>4}  " + " ".join(f"{share(h, trials):>13}" for h in hits))


def coverage(trials: int, seed: int) -> None:
    print("\n2. Coverage of the true mean 0: 95% bootstrap intervals (two-sided) and 95% upper bounds of the drop")
    print(f"  {'G':>3} {'sizes':>5} {'icc':>4}  {'bootstrap':>13} {'cluster boot.':>13}  {'Student':>13} "
          f"{'CR2 bound':>13}")
    for g, sizes, icc in CELLS:
        rng = np.random.default_rng((seed, 1, g, len(sizes), int(icc * 10)))
        hits = np.zeros(4, dtype=int)
        for t in range(trials):
            d, codes = draw(rng, g, sizes, icc)
            plain = stats.bootstrap_ci(d, resamples=2000, seed=t)
            clustered = C.bootstrap_ci(d, codes, resamples=2000, seed=t)
            hits += [plain[0] <= 0 <= plain[1], clustered[0] <= 0 <= clustered[1],
                     detect.t_bound(d, ALPHA) >= 0, C.t_bound(d, codes, ALPHA) >= 0]
        print(f"  {g:>3} {sizes:>5} {icc:>4}  " + " ".join(f"{share(h, trials):>13}" for h in hits))


def power(trials: int, seed: int) -> None:
    print("\n3. Power of the clustered t-test at the clustered MDE (declared power 0.8; MDE at the population's se)")
    print(f"  {'G':>3} {'sizes':>5} {'icc':>4}  {'MDE':>6} {'power':>13}")
    for g, sizes, icc in CELLS:
        if sizes != "4":
            continue
        n = 4 * g
        se = math.sqrt((icc * 16 + (1 - icc) * 4) * g) / n  # sum over clusters of Var(S_c), over n**2
        drop_ = C.mde(se, g, ALPHA, 0.8)  # equal sizes: G - 1 df
        rng = np.random.default_rng((seed, 2, g, int(icc * 10)))
        hits = 0
        for _ in range(trials):
            d, codes = draw(rng, g, sizes, icc, -drop_)
            p = C.ttest_p(d, codes, alternative="less")
            hits += p is not None and p < ALPHA
        print(f"  {g:>3} {sizes:>5} {icc:>4}  {drop_:>6.3f} {share(hits, trials):>13}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--level-trials", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    level(args.level_trials, args.seed)
    coverage(args.trials, args.seed)
    power(args.trials, args.seed)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""Calibration of the max_drop gates' statistics: each rule's level, the power at the reported MDE, and
the coverage of the bound of the drop, by simulation (the tests run a small version of each).

    python benchmarks/calibrate_power.py [--trials 2000] [--bound-trials 500] [--seed 0]

Differences are drawn from two populations: normal (sd 0.3), and a discrete one shaped like a metric's
paired differences (most questions unchanged: -1, -0.5, 0, 0.5, 1 with probabilities 0.05, 0.1, 0.7, 0.1,
0.05, times 0.8; sd 0.286), each shifted by the planted true change. Figures are shares of trials with
their Monte Carlo standard error; nothing is asserted. docs/statistics.md quotes the table.

1. Level: the true drop equals the margin (0.05), the boundary of both rules' null hypotheses. A
   significant_drop gate should fail, and a non_inferiority gate pass, in at most alpha = 5% of trials.
2. Power at the MDE: the true drop equals the MDE computed at the population's spread (`detect.mde`,
   power 0.8); the share of trials in which the one-sided test of "no change" at 0.05 rejects. Beside it,
   the mean MDE the samples report (from their own spread) over the planted one.
3. Coverage: the share of trials whose one-sided 95% upper bound of the drop is at least the true drop
   (0.05): Student's bound, and the inverted sign-flip test's (fewer trials: a bisection each).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from scoring.decide import detect, drop, stats
from scoring.decide.significance import significant

ALPHA = 0.05
MARGIN = 0.05
SIZES = (10, 30, 100)
DISCRETE = (np.array([-1.0, -0.5, 0.0, 0.5, 1.0]) * 0.8, np.array([0.05, 0.1, 0.7, 0.1, 0.05]))


def draw(kind: str, rng: np.random.Generator, n: int, shift: float) -> np.ndarray:
    if kind == "normal":
        return rng.normal(shift, 0.3, n)
    values, weights = DISCRETE
    return rng.choice(values, size=n, p=weights) + shift


def spread(kind: str) -> float:
    if kind == "normal":
        return 0.3
    values, weights = DISCRETE
    return float(math.sqrt((weights * values**2).sum()))


def share(hits: int, trials: int) -> str:
    rate = hits / trials
    return f"{rate:.3f} ± {math.sqrt(max(rate * (1 - rate), 1e-12) / trials):.3f}"


def level(trials: int, seed: int) -> None:
    print("1. Level at the margin (true drop = margin 0.05, alpha 0.05): false FAIL of significant_drop, false PASS "
          "of non_inferiority")
    print(f"  {'population':10} {'n':>4}  {'rule':17} {'test':14} {'share':>14}")
    for kind in ("normal", "discrete"):
        for n in SIZES:
            for rule, tests in (("significant_drop", stats.TESTS), ("non_inferiority", ("randomization", "ttest"))):
                for test in tests:
                    rng = np.random.default_rng(seed)
                    hits = sum(drop.figures(draw(kind, rng, n, -MARGIN), MARGIN, alpha=ALPHA, test=test, rule=rule,
                                            with_bound=False).decided for _ in range(trials))
                    print(f"  {kind:10} {n:>4}  {rule:17} {test:14} {share(hits, trials):>14}")


def power(trials: int, seed: int) -> None:
    print("\n2. Power at the MDE (declared power 0.8; the one-sided test of no change at alpha 0.05)")
    print(f"  {'population':10} {'n':>4} {'MDE':>7}  {'t-test':>14} {'randomization':>14} {'wilcoxon':>14} "
          f"{'reported/planted':>17}")
    for kind in ("normal", "discrete"):
        for n in SIZES:
            planted = detect.mde(spread(kind), n, ALPHA, 0.8)
            rng = np.random.default_rng(seed)
            hits = {test: 0 for test in stats.TESTS}
            reported = []
            for _ in range(trials):
                d = draw(kind, rng, n, -planted)
                for test in stats.TESTS:
                    hits[test] += significant(stats.drop_p(d, 0.0, test=test), ALPHA)  # type: ignore[arg-type]
                own = detect.sample_sd(d)
                reported.append(detect.mde(own, n, ALPHA, 0.8) if own else 0.0)
            print(f"  {kind:10} {n:>4} {planted:7.3f}  {share(hits['ttest'], trials):>14} "
                  f"{share(hits['randomization'], trials):>14} {share(hits['wilcoxon'], trials):>14} "
                  f"{float(np.mean(reported)) / planted:17.3f}")


def coverage(trials: int, bound_trials: int, seed: int) -> None:
    print("\n3. Coverage of the one-sided 95% upper bound of the drop (true drop 0.05)")
    print(f"  {'population':10} {'n':>4}  {'Student t':>14} {'sign-flip inverted':>19}")
    for kind in ("normal", "discrete"):
        for n in SIZES:
            rng = np.random.default_rng(seed)
            covered = sum(detect.t_bound(draw(kind, rng, n, -MARGIN), ALPHA) >= MARGIN for _ in range(trials))
            rng = np.random.default_rng(seed)
            flips = 0
            for _ in range(bound_trials):
                bound = drop.figures(draw(kind, rng, n, -MARGIN), MARGIN, alpha=ALPHA, test="randomization",
                                     rule="non_inferiority").bound
                flips += bound is None or bound >= MARGIN
            print(f"  {kind:10} {n:>4}  {share(covered, trials):>14} {share(flips, bound_trials):>19}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--bound-trials", type=int, default=500, help="trials of the inverted sign-flip bound")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"calibrate_power: {args.trials} trials per cell ({args.bound_trials} for the sign-flip bound), seed "
          f"{args.seed}; share ± its Monte Carlo standard error\n")
    level(args.trials, args.seed)
    power(args.trials, args.seed)
    coverage(args.trials, args.bound_trials, args.seed)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

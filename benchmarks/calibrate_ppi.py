"""Calibration of the corrected (prediction-powered) estimate: the coverage of its 95% interval, and of
the judge-only and reviewed-only intervals, by simulation (tests/test_ppi.py runs a small version).

    python benchmarks/calibrate_ppi.py [--trials 2000] [--seed 0]

The population: 2,000 answer sentences, one claim each, in two strata of 1,200 and 800. The truth is
supported with probability 0.85 in stratum a and 0.5 in stratum b. The judge is right on every sentence
of stratum a and, in stratum b, calls 40% of the unsupported claims supported (a judge good on one kind
of question and biased on another). Each trial draws a stratified sample of n per stratum without
replacement, reviews all of it, and builds three 95% intervals of the population's pooled Support:
corrected (PPI++, `ppi.ratio_estimate`), reviewed-only (lambda = 0), and judge-only (the judge's figure
with a binomial interval over the 2,000, which cannot see the judge's bias). Figures are shares of
trials holding the true value, with their Monte Carlo standard error, and the mean half-widths; nothing
is asserted. docs/statistics.md quotes the table.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from scoring.decide import ppi

SIZES = {"a": 1200, "b": 800}
PER_STRATUM = (10, 20, 40, 100, 200)


def population(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], float]:
    truth = {"a": rng.random(SIZES["a"]) < 0.85, "b": rng.random(SIZES["b"]) < 0.5}
    pred = {"a": truth["a"].copy(), "b": truth["b"] | (rng.random(SIZES["b"]) < 0.4)}
    return truth, pred, float((truth["a"].sum() + truth["b"].sum()) / sum(SIZES.values()))


def pairs(u: np.ndarray) -> np.ndarray:
    return np.stack([u.astype(float), np.ones(len(u))], axis=1)


def trial(rng, truth, pred, n: int):
    strata = []
    for h, size in SIZES.items():
        picked = rng.choice(size, n, replace=False)
        rest = np.setdiff1d(np.arange(size), picked)
        strata.append(ppi.Stratum(h, size, pairs(truth[h][picked]), pairs(pred[h][picked]), pairs(pred[h][rest]),
                                  drawn=n))
    corrected = ppi.ratio_estimate(strata, (0.0, 0.0))
    reviewed = ppi.ratio_estimate(strata, (0.0, 0.0), lam=0.0)
    judged = ppi.judge_only(strata, (0.0, 0.0))
    half = 1.959964 * math.sqrt(judged * (1 - judged) / sum(SIZES.values()))
    return corrected, reviewed, (judged - half, judged + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    truth, pred, true_value = population(rng)
    started = time.perf_counter()
    print(f"true pooled Support {true_value:.3f}; judge-only {ppi.judge_only([ppi.Stratum(h, s, pairs(truth[h][:0]), pairs(pred[h][:0]), pairs(pred[h]), 0) for h, s in SIZES.items()], (0.0, 0.0)):.3f}")
    se = math.sqrt(0.95 * 0.05 / args.trials)
    print(f"| reviewed per stratum | corrected | reviewed-only | judge-only | corrected half-width | reviewed-only half-width |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in PER_STRATUM:
        hits = [0, 0, 0]
        widths = [0.0, 0.0]
        for _ in range(args.trials):
            c, r, (lo, hi) = trial(rng, truth, pred, n)
            hits[0] += c.low <= true_value <= c.high
            hits[1] += r.low <= true_value <= r.high
            hits[2] += lo <= true_value <= hi
            widths[0] += c.half_width
            widths[1] += r.half_width
        share = [h / args.trials for h in hits]
        print(f"| {n} | {share[0]:.3f} ± {se:.3f} | {share[1]:.3f} ± {se:.3f} | {share[2]:.3f} | "
              f"{widths[0] / args.trials:.3f} | {widths[1] / args.trials:.3f} |")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()

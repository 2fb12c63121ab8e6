"""Calibration of the corrected (prediction-powered) estimate: the coverage of its 95% interval, and of
the plain CLT, reviewed-only and judge-only intervals, by simulation (tests/test_ppi.py runs a small
version).

    python benchmarks/calibrate_ppi.py [--trials 2000] [--seed 0] [--scenario NAME ...]

Populations of answer sentences, one claim each (u = 1 when the claim is supported), in strata:

- `biased-one-kind`: 2,000 sentences in two strata of 1,200 and 800. The truth is supported with
  probability 0.85 in stratum a and 0.5 in stratum b. The judge is right on every sentence of stratum a
  (a stratum where it is perfect) and, in stratum b, calls 40% of the unsupported claims supported.
- `rare-errors`: 2,000 sentences in two strata of 1,000; supported with probability 0.75 and 0.6; the
  judge flips 5% of stratum a's decisions and 10% of stratum b's (errors a few reviews rarely see).
- `demo-like`: eight strata the sizes of the demo's (37, 70, 141, 35, 34, 7, 26, 14 judged sentences),
  the last two refusals the judge reads as claims a third of the time, the others with the judge wrong on
  5 to 15%; the sample is allocated proportionally (at least two a stratum) as `ragslice sample` does,
  with its size in the first column (about n / 8 reviewed per stratum: the demo's 64 is about 8).

Populations of answers (the question unit: Coverage and the abstention rates, `scoring.decide.frames`):

- `coverage-answers`: 1,500 answers in three strata of 600, 500 and 400, each with 1 to 3 expected
  claims (c), of which the answer supports u ~ Binomial(c, p), p 0.8, 0.65 and 0.5; the judge is right
  on the first stratum, counts one more expected claim supported (up to c) on 30% of the second's
  answers (a superseded value read as the claim) and on 15% of the third's.
- `abstention`: 600 answers in two strata of 400 (answers) and 200 (refusals), one flag each (abstained,
  1); truly abstained with probability 0.05 and 0.7; the judge reads 35% of the refusals' abstentions as
  claims (not abstained) and 3% of the answers' claims as none.

Each trial draws a stratified sample without replacement, reviews all of it, and builds 95% intervals
of the population's pooled Support: corrected (the product's method, `ppi.ratio_estimate`), plain CLT
(the same PPI++ estimate with the rectifier's plain sample variance and a normal quantile: the method
before pseudo-reviews), reviewed-only (lambda = 0, with the product's small-sample adjustments), and
judge-only (the judge's figure with a binomial interval over the frame, which cannot see the judge's
bias; over items (u, c): the ratio's delta-method interval with the items as a simple random sample). Figures are shares of trials holding the true value; the Monte Carlo standard error of a share
near 0.95 is given in the header. Nothing is asserted. docs/statistics.md quotes the tables.
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np

from scoring.decide import ppi
from scoring.store.samples import allocate


@dataclass(frozen=True)
class Scenario:
    name: str
    sizes: dict[str, int]
    supported: dict[str, float]
    sizes_are_totals: bool
    """False: the sample sizes are per stratum; True: the sample's total, allocated proportionally."""
    sample_sizes: tuple[int, ...]

    def population(self, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Per stratum, the items' (u, c) rows as reviewers and as the judge would have them."""
        truth = {h: rng.random(n) < self.supported[h] for h, n in self.sizes.items()}
        return ({h: pairs(t) for h, t in truth.items()},
                {h: pairs(self.judge(h, truth[h], rng)) for h in self.sizes})

    def judge(self, h: str, truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def per_stratum(self, size: int) -> dict[str, int]:
        return allocate(self.sizes, size) if self.sizes_are_totals else {h: size for h in self.sizes}


class BiasedOneKind(Scenario):
    def judge(self, h, truth, rng):
        return truth.copy() if h == "a" else truth | (rng.random(len(truth)) < 0.4)


class RareErrors(Scenario):
    def judge(self, h, truth, rng):
        return truth ^ (rng.random(len(truth)) < {"a": 0.05, "b": 0.10}[h])


DEMO_SIZES = {"conflicting": 37, "lookup": 70, "multi-evidence": 141, "near-duplicate": 35, "outdated": 34,
              "permission-refusal": 7, "permission": 26, "unanswerable": 14}
DEMO_ERRORS = {"conflicting": 0.15, "lookup": 0.05, "multi-evidence": 0.10, "near-duplicate": 0.10,
               "outdated": 0.15, "permission": 0.10}


class DemoLike(Scenario):
    def judge(self, h, truth, rng):
        if h in ("permission-refusal", "unanswerable"):  # a refusal read as a supported claim a third of the time
            return truth | (rng.random(len(truth)) < 1 / 3)
        return truth ^ (rng.random(len(truth)) < DEMO_ERRORS[h])


class CoverageAnswers(Scenario):
    """Answers with 1 to 3 expected claims; the judge over-counts supported claims on two strata."""

    OVERCOUNT = {"a": 0.0, "b": 0.30, "c": 0.15}

    def population(self, rng):
        truth, pred = {}, {}
        for h, n in self.sizes.items():
            c = rng.integers(1, 4, n).astype(float)
            u = rng.binomial(c.astype(int), self.supported[h]).astype(float)
            extra = (rng.random(n) < self.OVERCOUNT[h]) & (u < c)
            truth[h] = np.stack([u, c], axis=1)
            pred[h] = np.stack([u + extra, c], axis=1)
        return truth, pred


class Abstention(Scenario):
    """Abstention flags; the judge reads refusals as claims (35%) and, rarely, answers as none (3%)."""

    def judge(self, h, truth, rng):
        if h == "refusals":
            return truth & ~(rng.random(len(truth)) < 0.35)
        return truth | (rng.random(len(truth)) < 0.03)


SCENARIOS = {
    "biased-one-kind": BiasedOneKind("biased-one-kind", {"a": 1200, "b": 800}, {"a": 0.85, "b": 0.5}, False,
                                     (3, 5, 8, 10, 20, 40, 100, 200)),
    "rare-errors": RareErrors("rare-errors", {"a": 1000, "b": 1000}, {"a": 0.75, "b": 0.6}, False,
                              (3, 5, 8, 10, 20, 40, 100)),
    "demo-like": DemoLike("demo-like", DEMO_SIZES, {**{h: 0.8 for h in DEMO_SIZES}, "permission-refusal": 0.1,
                                                    "unanswerable": 0.1}, True, (24, 40, 64, 100, 160)),
    "coverage-answers": CoverageAnswers("coverage-answers", {"a": 600, "b": 500, "c": 400},
                                        {"a": 0.8, "b": 0.65, "c": 0.5}, False, (5, 8, 10, 20, 40, 100)),
    "abstention": Abstention("abstention", {"answers": 400, "refusals": 200}, {"answers": 0.05, "refusals": 0.7},
                             False, (5, 8, 10, 20, 40, 100)),
}


def pairs(u: np.ndarray) -> np.ndarray:
    return np.stack([u.astype(float), np.ones(len(u))], axis=1)


def trial(rng, scenario: Scenario, truth, pred, size: int):
    strata = []
    for h, n in scenario.per_stratum(size).items():
        population = scenario.sizes[h]
        picked = rng.choice(population, n, replace=False)
        rest = np.setdiff1d(np.arange(population), picked)
        strata.append(ppi.Stratum(h, population, truth[h][picked], pred[h][picked], pred[h][rest], drawn=n))
    corrected = ppi.ratio_estimate(strata, (0.0, 0.0))
    plain = ppi.ratio_estimate(strata, (0.0, 0.0), pseudo=0)
    reviewed = ppi.ratio_estimate(strata, (0.0, 0.0), lam=0.0)
    judged = ppi.judge_only(strata, (0.0, 0.0))
    every = np.concatenate(list(pred.values()))
    half = 1.959964 * math.sqrt(float(((every[:, 0] - judged * every[:, 1]) ** 2).sum())) / float(every[:, 1].sum())
    return corrected, plain, reviewed, (judged - half, judged + half)


def run(scenario: Scenario, trials: int, rng: np.random.Generator) -> None:
    truth, pred = scenario.population(rng)
    true_value = float(sum(t[:, 0].sum() for t in truth.values()) / sum(t[:, 1].sum() for t in truth.values()))
    judge = float(sum(p[:, 0].sum() for p in pred.values()) / sum(p[:, 1].sum() for p in pred.values()))
    se = math.sqrt(0.95 * 0.05 / trials)
    unit = "sample size (all strata)" if scenario.sizes_are_totals else "reviewed per stratum"
    print(f"\n{scenario.name}: true pooled figure {true_value:.3f}, judge-only {judge:.3f}; "
          f"{trials} trials a row, Monte Carlo se {se:.3f} at 0.95\n")
    print(f"| {unit} | corrected | plain CLT | reviewed-only | judge-only | corrected half-width | "
          f"plain CLT half-width |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in scenario.sample_sizes:
        hits = [0, 0, 0, 0]
        widths = [0.0, 0.0]
        given = 0
        for _ in range(trials):
            c, p, r, (lo, hi) = trial(rng, scenario, truth, pred, size)
            if not c.valid:
                continue
            given += 1
            hits[0] += c.low <= true_value <= c.high
            hits[1] += p.low <= true_value <= p.high
            hits[2] += r.low <= true_value <= r.high
            hits[3] += lo <= true_value <= hi
            widths[0] += c.half_width
            widths[1] += p.half_width
        if not given:
            print(f"| {size} | no interval (fewer than {ppi.MIN_SAMPLE} reviewed) | | | | | |")
            continue
        share = [h / given for h in hits]
        print(f"| {size} | {share[0]:.3f} | {share[1]:.3f} | {share[2]:.3f} | {share[3]:.3f} | "
              f"{widths[0] / given:.3f} | {widths[1] / given:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenario", nargs="*", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    args = parser.parse_args()
    started = time.perf_counter()
    for name in args.scenario:
        run(SCENARIOS[name], args.trials, np.random.default_rng(args.seed))
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()

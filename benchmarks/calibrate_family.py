"""Calibration of the family statistics: the error rates of Holm and Benjamini-Hochberg over sign-flip
p-values resolved for the family's size, the level of a refined p-value, the demo's 8-candidate family,
and the coverage of kappa's bootstrap interval.

    python benchmarks/calibrate_family.py [--families 1000] [--kappa-runs 1000] [--db /tmp/x.duckdb] [--seed 0]

About ten minutes on 2 cores at the defaults: start it in the background.

1. Families of simulated comparisons, each test 25 paired differences (half on a grid of shares, half
   continuous), the first `effects` shifted (90% of the signs positive), the others symmetric about 0.
   p-values as a comparison computes them: `stats.sign_flip_p` with B = 200 sign patterns, then
   `family.resolve` (tests / 201 >= 0.05, so the small ones are recomputed, exactly or with 20 x tests /
   0.05 patterns). Printed: Holm's family-wise error rate (any false mark), BH's false discovery rate
   (mean share of false marks among the marks), and the share of true effects each marks (power), with
   Monte Carlo standard errors.
2. The level of one resolved p-value under the null: P(p <= u) for a few u, the p-value computed
   with 200 patterns and, when at most `family.REFINE_BELOW`, recomputed with 80,000.
3. The demo: every other run and group against prod-baseline (1,160 tests): how many p-values were
   recomputed, how, in how long, and rerank-v2's two headline cells.
4. Kappa's 95% percentile bootstrap interval (`agreement.kappa_interval`, 2,000 resamples) over n items
   drawn from a known joint distribution of two raters: coverage of the population kappa and mean width.

Figures are printed; nothing is asserted (tests/test_multiplicity.py and tests/test_agreement.py hold
smaller versions of 1 and 4).
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from common import heading, row
from scoring.decide import agreement, family, stats
from scoring.decide.paired import Settings

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"
CANDIDATES = ["chunk-160", "hybrid-v1", "prod-text", "rerank-v2", "temp07-r1", "temp07-r2", "temp07-r3", "temp07"]


def simulated_family(rng: np.random.Generator, n_tests: int, effects: int, seed: int,
                     size: int = 25) -> tuple[list[float], np.ndarray, np.ndarray]:
    """One family: resolved p-values, Holm marks and BH marks at 0.05."""
    settings = Settings(seed=seed, randomization_resamples=200)
    diffs = []
    for i in range(n_tests):
        value = np.where(i % 2, rng.choice([0.2, 0.4, 0.6, 1.0], size), rng.exponential(0.5, size))
        signs = np.where(rng.random(size) < (0.9 if i < effects else 0.5), 1.0, -1.0)
        diffs.append(np.round(signs * value, 6))
    p = [stats.sign_flip_p(d, resamples=200, seed=seed) for d in diffs]
    floors = family.p_floors([size] * n_tests, p, settings)
    resolved = family.resolve(p, floors, [size] * n_tests, lambda i: diffs[i], settings)[0]
    return resolved, np.array(stats.holm(resolved)) < 0.05, np.array(stats.benjamini_hochberg(resolved)) < 0.05


def error_rates(families: int, seed: int) -> None:
    heading("1. Holm and BH over resolved sign-flip p-values (alpha 0.05)")
    row("tests, true effects", "families", "Holm FWER", "BH FDR", "BH FWER", "Holm power", "BH power", "seconds",
        width=20)
    rng = np.random.default_rng(seed)
    for n_tests, effects in ((40, 0), (40, 10), (200, 0), (200, 20), (200, 50)):
        start = time.perf_counter()
        holm_any = fdr_any = 0
        shares, holm_power, fdr_power = [], [], []
        runs = families if n_tests <= 40 else max(1, families // 4)  # a family of 200 takes five times longer
        for r in range(runs):
            _, holm, fdr = simulated_family(rng, n_tests, effects, seed=r)
            holm_any += holm[effects:].any()
            fdr_any += fdr[effects:].any()
            shares.append(fdr[effects:].sum() / max(1, fdr.sum()))
            if effects:
                holm_power.append(holm[:effects].mean())
                fdr_power.append(fdr[:effects].mean())
        se = lambda x: math.sqrt(max(x * (1 - x), 0.05 * 0.95) / runs)  # noqa: E731
        fwer, fdr_fwer = holm_any / runs, fdr_any / runs
        fdr_rate, fdr_se = float(np.mean(shares)), float(np.std(shares) / math.sqrt(runs))
        power = (f"{np.mean(holm_power):.3f}", f"{np.mean(fdr_power):.3f}") if effects else ("-", "-")
        row(f"{n_tests}, {effects}", str(runs), f"{fwer:.3f} ± {se(fwer):.3f}", f"{fdr_rate:.3f} ± {fdr_se:.3f}",
            f"{fdr_fwer:.3f} ± {se(fdr_fwer):.3f}", *power, f"{time.perf_counter() - start:.1f}", width=20)


def level(runs: int, seed: int) -> None:
    heading("2. The level of a resolved p-value under the null (30 continuous differences)")
    # as `family.resolve` computes it in a family of 200 tests: 200 patterns first; at most REFINE_BELOW,
    # recomputed with 20 x 200 / 0.05 = 80,000 patterns (too many sums for the exact distribution)
    patterns = family.family_patterns(200, 200)
    rng = np.random.default_rng(seed + 1)
    found = []
    for r in range(runs):
        d = np.round(np.where(rng.random(30) < 0.5, 1.0, -1.0) * rng.exponential(0.5, 30), 6)
        p = stats.sign_flip_p(d, resamples=200, seed=r)
        found.append(stats.fine_sign_flip_p(d, resamples=patterns, seed=r).p if p <= family.REFINE_BELOW else p)
    found = np.array(found)
    row("u", "P(p <= u)", "± se", width=22)
    for u in (0.0001, 0.001, 0.01, 0.05, 0.2):
        share = float((found <= u).mean())
        row(f"{u:g}", f"{share:.4f}", f"{math.sqrt(u * (1 - u) / runs):.4f}", width=22)


def demo(db: Path | None) -> None:
    import duckdb

    from scoring.decide import compute
    from scoring.store.refresh import refresh

    heading("3. The demo: every other run and group against prod-baseline")
    if db is None:
        db = Path(tempfile.mkdtemp(prefix="ragslice-calibrate-")) / "demo.duckdb"
        refresh(DEMO, db)
    with duckdb.connect(str(db), read_only=True) as con:
        start = time.perf_counter()
        fam = compute.compare_many(con, "prod-baseline", CANDIDATES)
        seconds = time.perf_counter() - start
    res = fam.resolution
    row("tests", f"{res.n_tests:,}", width=40)
    row("patterns of a sampled test", f"{res.patterns:,}", width=40)
    row("patterns of a refined test", f"{res.refined_patterns:,}", width=40)
    row("p-values recomputed (exactly)", f"{res.refined} ({res.exact})", width=40)
    row("smallest p_holm of a sampled test", f"{res.smallest_sampled_p_holm:.4f}", width=40)
    row("compare_many seconds", f"{seconds:.1f}", width=40)
    table = next(c.table for c in fam.comparisons if c.candidate.name == "rerank-v2").set_index(["metric", "slice"])
    row("rerank-v2 cell", "n", "delta", "p_ttest", "p_rand", "p_holm", "p_fdr", width=28)
    for key in (("recall", "type:multi-evidence"), ("judged", "all")):
        r = table.loc[key]
        row(" ".join(key), str(int(r["n"])), f"{r['delta']:+.3f}", f"{r['p_ttest']:.1e}",
            f"{r['p_randomization']:.1e}", f"{r['p_holm']:.1e}", f"{r['p_fdr']:.1e}", width=28)


def kappa_coverage(runs: int, seed: int) -> None:
    heading("4. Kappa's 95% bootstrap interval: coverage of the population kappa")
    joints = {"3 labels": np.array([[0.30, 0.05, 0.02], [0.04, 0.25, 0.04], [0.02, 0.05, 0.23]]),
              "2 labels": np.array([[0.45, 0.20], [0.15, 0.20]])}
    row("joint (kappa), n", "coverage", "± se", "mean width", width=26)
    rng = np.random.default_rng(seed + 2)
    for name, joint in joints.items():
        observed, expected = np.trace(joint), float(joint.sum(axis=1) @ joint.sum(axis=0))
        kappa = (observed - expected) / (1 - expected)
        labels = len(joint)
        for n in (20, 40, 80, 200):
            covered, widths = 0, []
            for r in range(runs):
                cells = rng.choice(labels * labels, size=n, p=joint.ravel())
                found = agreement.kappa_interval(list(cells // labels), list(cells % labels), resamples=2000, seed=r)
                if found is None:
                    continue
                covered += found[0] <= kappa <= found[1]
                widths.append(found[1] - found[0])
            share = covered / runs
            row(f"{name} ({kappa:.3f}), {n}", f"{share:.3f}", f"{math.sqrt(0.95 * 0.05 / runs):.3f}",
                f"{np.mean(widths):.3f}", width=26)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", type=int, default=1000,
                        help="simulated families of 40 tests per setting (a quarter as many of 200)")
    parser.add_argument("--kappa-runs", type=int, default=1000, help="simulated samples per kappa setting")
    parser.add_argument("--db", type=Path, help="the demo's database (default: refreshed into a temporary folder)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    error_rates(args.families, args.seed)
    level(20 * args.families, args.seed)
    demo(args.db)
    kappa_coverage(args.kappa_runs, args.seed)


if __name__ == "__main__":
    main()

"""What a paired sample can detect, and the rules of a max_drop gate: hand-computed figures checked
against scipy's distributions, and simulations of each rule's level, the power at the reported MDE and
the coverage of the bound (small in the fast tier, full size with `tiers.full`; the larger table is
benchmarks/calibrate_power.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sp

import tiers
from scoring.decide import detect, drop, stats
from scoring.decide.significance import significant

# --- hand-computed ---------------------------------------------------------------------------------


def test_the_demo_gate_can_only_detect_a_drop_of_014():
    """31 outdated questions, differences with sd 0.31, one-sided alpha 0.05, power 0.8: the textbook
    approximation (t_{0.95,30} + t_{0.80,30}) * 0.31 / sqrt(31) = (1.6973 + 0.8538) * 0.05568 = 0.1420; the
    exact (noncentral t) MDE is within 0.5% of it, and at that drop scipy's noncentral t gives power 0.8."""
    approx = (sp.t.ppf(0.95, 30) + sp.t.ppf(0.80, 30)) * 0.31 / math.sqrt(31)
    assert approx == pytest.approx(0.1420, abs=5e-4)
    found = detect.mde(0.31, 31, 0.05, 0.8)
    assert found == pytest.approx(approx, rel=5e-3) and found == pytest.approx(0.1417, abs=5e-4)
    power = sp.nct.sf(sp.t.ppf(0.95, 30), 30, found * math.sqrt(31) / 0.31)
    assert power == pytest.approx(0.8, abs=1e-6)
    assert detect.power_at(found, 0.31, 31, 0.05) == pytest.approx(0.8, abs=1e-6)


def test_power_at_the_margin_against_scipy():
    # a drop of the margin 0.02: noncentrality 0.02 * sqrt(31) / 0.31 = 0.3592
    expected = sp.nct.sf(sp.t.ppf(0.95, 30), 30, 0.02 * math.sqrt(31) / 0.31)
    assert detect.power_at(0.02, 0.31, 31, 0.05) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(0.0979, abs=5e-4)  # the normal approximation says 0.090
    # no drop: the test's size; any drop with no spread: certain; fewer than 2 pairs: no test
    assert detect.power_at(0.0, 0.31, 31, 0.05) == pytest.approx(0.05)
    assert detect.power_at(0.01, 0.0, 31, 0.05) == 1.0
    assert detect.power_at(0.01, 0.3, 1, 0.05) is None
    assert detect.power_at(0.01, math.inf, 30, 0.05) == 0.0


def test_questions_needed_is_the_smallest_n_with_the_power():
    n = detect.questions_needed(0.31, 0.02, 0.05, 0.8, test="ttest")
    assert detect.power_at(0.02, 0.31, n, 0.05) >= 0.8 > detect.power_at(0.02, 0.31, n - 1, 0.05)
    # z approximation: ((1.645 + 0.8416) * 0.31 / 0.02)^2 = 1485.6; the t test needs a few more
    assert 1486 <= n <= 1490
    # a sign-based test needs 5 differing pairs at alpha 0.05 (2^-5 = 0.031 < 0.05 <= 2^-4); with 1 in 4 pairs
    # differing that is 20 questions, though the t-test alone would need 2
    assert detect.questions_needed(0.01, 0.5, 0.05, 0.8, test="randomization", nonzero_share=0.25) == 20
    assert detect.questions_needed(0.01, 0.5, 0.05, 0.8, test="ttest") == 2
    assert detect.questions_needed(None, 0.02, 0.05) is None and detect.questions_needed(0.3, 0.0, 0.05) is None


def test_the_randomization_tests_resolution():
    options = dict(exact_max=16, resamples=10_000, large_sample=1_000)
    assert detect.min_p("randomization", 4, **options) == 1 / 16 and not detect.resolves("randomization", 4, 0.05,
                                                                                           **options)
    assert detect.resolves("randomization", 5, 0.05, **options)  # 1/32
    assert detect.min_p("randomization", 20, **options) == 1 / 10_001
    # p equal to alpha is not significant (the one rule): 2^-5 = 0.03125 at alpha 0.03125
    assert not detect.resolves("randomization", 5, 2 ** -5, **options)
    # three differing pairs of 31: no drop of any size is detectable, the MDE is None
    d = np.zeros(31)
    d[:3] = [-1, -1, 1]
    mde, bound = detect.row_figures(d)
    assert mde is None and bound == pytest.approx(-d.mean() + sp.t.ppf(0.95, 30) * d.std(ddof=1) / math.sqrt(31))


def test_the_student_bound_by_hand():
    # differences -0.1 x4, -0.2, -0.1: mean -0.11667, sd 0.040825; t_{0.95,5} = 2.01505
    d = np.array([-0.1, -0.1, -0.1, -0.1, -0.2, -0.1])
    expected = 0.116667 + 2.015048 * 0.0408248 / math.sqrt(6)
    assert detect.t_bound(d, 0.05) == pytest.approx(expected, abs=1e-5)
    assert detect.t_bound(d, 0.05) == pytest.approx(-sp.t.interval(0.90, 5, d.mean(), sp.sem(d))[0], rel=1e-9)


def test_the_six_differences_of_the_issue():
    """-0.1 x4, -0.2, -0.1 against a margin of 0.02: the t-test's one-sided p is 0.0011 (scipy) and the gate
    fails; the bound of the drop, 0.150, is above the margin, so a non-inferiority gate fails too."""
    d = np.array([-0.1, -0.1, -0.1, -0.1, -0.2, -0.1])
    scipy_p = sp.ttest_1samp(d, -0.02, alternative="less").pvalue
    f = drop.figures(d, 0.02, alpha=0.05, test="ttest")
    assert f.p == pytest.approx(scipy_p) and f.p == pytest.approx(0.0011, abs=1e-4) and f.decided
    ni = drop.figures(d, 0.02, alpha=0.05, test="ttest", rule="non_inferiority")
    assert not ni.decided and ni.bound == pytest.approx(0.1502, abs=1e-4)
    # the last record failed (difference -1): the plain t-test would pass (p 0.078); the gate takes the failed
    # pair at its worst (the smallest spread the interval [-1, 0] allows with the lowest mean) and still fails
    failed = d.copy()
    failed[-1] = -1.0
    assert sp.ttest_1samp(failed, -0.02, alternative="less").pvalue == pytest.approx(0.0777, abs=1e-4)
    worst = drop.figures(failed, 0.02, alpha=0.05, test="ttest", width=np.array([0, 0, 0, 0, 0, 1.0]))
    assert worst.decided and worst.p < f.p and worst.failed == 1


def test_non_inferiority_by_hand_against_scipy():
    """Differences with mean +0.01 and sd 0.05 on 40 pairs, margin 0.02: the 95% upper bound of the drop is
    -0.01 + 1.6849 * 0.05 / sqrt(40) = 0.00332 < 0.02, so the gate passes; its p is scipy's one-sided t-test
    of mean > -0.02."""
    rng = np.random.default_rng(3)
    d = rng.normal(size=40)
    d = 0.01 + 0.05 * (d - d.mean()) / d.std(ddof=1)
    f = drop.figures(d, 0.02, alpha=0.05, test="ttest", rule="non_inferiority")
    assert f.bound == pytest.approx(-0.01 + sp.t.ppf(0.95, 39) * 0.05 / math.sqrt(40), abs=1e-12)
    assert f.bound == pytest.approx(0.00332, abs=1e-5)
    assert f.p == pytest.approx(sp.ttest_1samp(d, -0.02, alternative="greater").pvalue) and f.decided
    # the randomization rule inverts the sign-flip test: its bound is where its p crosses alpha
    r = drop.figures(d, 0.02, alpha=0.05, test="randomization", rule="non_inferiority")
    below = stats.sign_flip_p(d + r.bound - 1e-4, alternative="greater")
    above = stats.sign_flip_p(d + r.bound + 1e-4, alternative="greater")
    assert not significant(below, 0.05) and significant(above, 0.05)
    assert r.bound == pytest.approx(f.bound, abs=0.01) and r.decided


def test_spread_range_over_failed_intervals():
    # fixed 0, 0, 1 and one failed value in [-1, 0]: smallest spread with it at the others' mean 1/3 clipped to 0
    lo, width = np.array([0.0, 0.0, 1.0, -1.0]), np.array([0, 0, 0, 1.0])
    low, high = drop.spread_range(lo, width)
    assert low == pytest.approx(np.std([0, 0, 1, 0], ddof=1))
    assert high == pytest.approx(np.std([0, 0, 1, -1], ddof=1), rel=1e-6)  # one interval: its far end, exactly
    every = [np.std([0, 0, 1, x], ddof=1) for x in np.linspace(-1, 0, 101)]
    assert low <= min(every) + 1e-12 and high >= max(every) - 1e-12
    assert drop.spread_range(np.array([0.2, 0.5]), np.zeros(2)) == pytest.approx((np.std([0.2, 0.5], ddof=1),) * 2)
    assert drop.spread_range(np.array([0.0, 1.0]), np.array([0.0, math.inf]))[1] == math.inf


@pytest.mark.parametrize("seed", tiers.some(range(40), 8))
def test_the_largest_spread_bounds_every_allowed_value(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    lo = rng.choice(np.linspace(-1, 1, 9), size=n)
    width = np.where(rng.random(n) < 0.4, rng.choice([0.5, 1.0], size=n), 0.0)
    low, high = drop.spread_range(lo, width)
    for _ in range(200):
        x = lo + width * rng.random(n)
        sd = float(np.std(x, ddof=1))
        assert low - 1e-9 <= sd <= high + 1e-9


# --- simulations -----------------------------------------------------------------------------------

ALPHA = 0.05


def _trials(full: int, fast: int) -> int:
    return full if tiers.full else fast


def _mc_ceiling(rate: float, trials: int) -> float:
    """rate + 3 binomial standard errors: the Monte Carlo margin a level or power check allows."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / trials)


@pytest.mark.parametrize("test", ["ttest", "randomization", "wilcoxon"])
def test_significant_drop_fails_at_most_alpha_of_the_time_at_its_margin(test):
    """True drop exactly the margin (the null's boundary), normal differences: the share of false FAILs is at
    most alpha within Monte Carlo error."""
    trials, n, margin = _trials(2000, 300), 30, 0.05
    rng = np.random.default_rng(11)
    fails = sum(drop.figures(rng.normal(-margin, 0.3, n), margin, alpha=ALPHA, test=test, with_bound=False).decided
                for _ in range(trials))
    assert fails / trials <= _mc_ceiling(ALPHA, trials)


@pytest.mark.parametrize("test", ["ttest", "randomization"])
def test_non_inferiority_passes_at_most_alpha_of_the_time_at_its_margin(test):
    """True drop exactly the margin: the share of false PASSes of a non-inferiority gate is at most alpha,
    which is the bound covering the true drop at its nominal 95%."""
    trials, n, margin = _trials(2000, 300), 30, 0.05
    rng = np.random.default_rng(12)
    passes = sum(drop.figures(rng.normal(-margin, 0.3, n), margin, alpha=ALPHA, test=test, rule="non_inferiority",
                              with_bound=False).decided for _ in range(trials))
    assert passes / trials <= _mc_ceiling(ALPHA, trials)


def test_a_drop_equal_to_the_mde_is_detected_with_the_declared_power():
    """Plant the MDE (at the true spread) as the true drop: the one-sided t-test of no change rejects it 80%
    of the time within Monte Carlo error; the reported MDE (from each sample's spread) averages the true one."""
    trials, n, sd = _trials(4000, 600), 25, 0.3
    planted = detect.mde(sd, n, ALPHA, 0.8)
    rng = np.random.default_rng(13)
    hits, reported = 0, []
    for _ in range(trials):
        d = rng.normal(-planted, sd, n)
        hits += significant(stats.ttest_p(d, alternative="less"), ALPHA)
        reported.append(detect.mde(float(np.std(d, ddof=1)), n, ALPHA, 0.8))
    error = 3 * math.sqrt(0.8 * 0.2 / trials)
    assert abs(hits / trials - 0.8) <= error
    assert abs(float(np.mean(reported)) / planted - 1) <= 0.05


def test_the_bound_covers_the_true_drop_at_its_nominal_rate():
    trials, n = _trials(4000, 600), 20
    rng = np.random.default_rng(14)
    covered = sum(detect.t_bound(rng.normal(-0.1, 0.4, n), ALPHA) >= 0.1 for _ in range(trials))
    error = 3 * math.sqrt(0.95 * 0.05 / trials)
    assert abs(covered / trials - 0.95) <= error


@pytest.mark.parametrize("seed", tiers.some(range(60), 10))
def test_the_wilcoxon_worst_case_search_computes_scipys_p(seed):
    """The worst-case search over failed differences reads the exact Wilcoxon p from the rank-sum counts;
    it is scipy's (exact, no zero or tie), and the gate's own test otherwise."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=int(rng.integers(1, 40)))
    if seed % 3 == 0:
        d = np.round(d, 1)  # ties and zeros: the permutation or normal method, the gate's own
    assert drop._wilcoxon_less(d) == pytest.approx(stats.wilcoxon_p(d, alternative="less"), rel=1e-12, abs=1e-15)


def test_a_non_inferiority_t_gate_without_spread_takes_the_limit_of_t():
    """Every difference equal: the t-test is undefined (no spread). A significant_drop gate cannot fail then, as
    ever; a non_inferiority gate takes t's limit: shown within the margin when the difference is above -margin
    (its bound -mean is below the margin), else not. Failed pairs add spread and never turn a fail into a pass."""
    flat = np.zeros(6)
    shown = drop.figures(flat, 0.5, alpha=ALPHA, test="ttest", rule="non_inferiority")
    assert shown.decided and shown.p == 0.0 and shown.bound == 0.0
    below = drop.figures(flat - 0.6, 0.5, alpha=ALPHA, test="ttest", rule="non_inferiority")
    assert not below.decided and below.p == 1.0 and below.bound == pytest.approx(0.6)
    assert drop.figures(flat - 0.6, 0.5, alpha=ALPHA, test="ttest").p is None  # the drop gate: undefined, no fail
    failed = drop.figures(flat - 0.6, 0.5, alpha=ALPHA, test="ttest", rule="non_inferiority",
                          width=np.array([1.0, 0, 0, 1.0, 0, 0]))
    assert not failed.decided

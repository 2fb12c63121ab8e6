"""Families of tests: Benjamini-Hochberg beside Holm, sign-flip p-values fine enough for the family
(`stats.fine_sign_flip_p`, `family.resolve`), and simulations of their error rates under a true null.

Hand arithmetic first, then agreement with scipy (`false_discovery_control`, `permutation_test`) and
with an exact count in whole numbers, then the level of the whole procedure by simulation (small in
the fast tier, full when `tiers.full`; benchmarks/calibrate_family.py prints larger tables).
"""
from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sp

import tiers
from scoring.decide import family, stats
from scoring.decide.paired import Settings

# --- Benjamini-Hochberg ----------------------------------------------------------------------------


def test_benjamini_hochberg_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 with m = 4: p x m / rank = 0.02, 0.02, 0.04, 0.04; the running minimum
    # from the largest rank down keeps them; None stays None and does not count in m
    assert stats.benjamini_hochberg([0.01, 0.04, 0.03, 0.005, None]) == pytest.approx([0.02, 0.04, 0.04, 0.02, None])
    # scipy's docstring example: 0.5 x 4/3 = 0.667 is above 0.6 x 4/4, so it takes 0.6
    assert stats.benjamini_hochberg([0.5, 0.6, 0.1, 0.001]) == pytest.approx([0.6, 0.6, 0.2, 0.004])
    # Holm on the same family: 4 x 0.005, 3 x 0.01, 2 x 0.03, 1 x 0.04 -> 0.02, 0.03, 0.06, 0.06: BH marks more
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.benjamini_hochberg([]) == [] and stats.benjamini_hochberg([None]) == [None]
    assert stats.benjamini_hochberg([0.002]) == [0.002]
    assert stats.benjamini_hochberg([0.9, 0.95]) == pytest.approx([0.95, 0.95])


@given(st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.01, 0.05, 1.0]), st.none()), max_size=60))
def test_benjamini_hochberg_is_scipys_false_discovery_control(p):
    """To the last bit, on any family (ties, zeros and ones included), n/a values left out."""
    got = stats.benjamini_hochberg(p)
    known = [x for x in p if x is not None]
    want = iter(sp.false_discovery_control(known).tolist() if len(known) > 1 else known)
    assert got == [None if x is None else next(want) for x in p]


def test_fdr_adjusted_never_above_holm():
    rng = np.random.default_rng(5)
    p = list(rng.uniform(0, 0.1, 40)) + [None, float("nan")]
    fdr, holm = family.fdr_adjusted(p), family.holm_adjusted(p)
    assert fdr[-1] is None and fdr[-2] is None
    assert all(f <= h + 1e-15 and f >= raw for f, h, raw in zip(fdr[:-2], holm[:-2], p[:-2]))


# --- the sign-flip test at a family's resolution --------------------------------------------------------


def test_fine_sign_flip_by_hand():
    # d = 1, 2, 3: the 8 sign patterns sum to 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 twice
    assert stats.fine_sign_flip_p([1, 2, 3]) == stats.FineP(0.25, "exact", 0.25)
    assert stats.fine_sign_flip_p([1, 2, 3], alternative="greater").p == pytest.approx(1 / 8)
    assert stats.fine_sign_flip_p([1, 2, 3], alternative="less").p == pytest.approx(1.0)
    # six equal differences, zeros dropped: all-plus and all-minus only
    assert stats.fine_sign_flip_p([0.5] * 6 + [0.0, 0.0]).p == pytest.approx(2 / 64)
    # the distribution itself: |d| = 1, 1, 2; the 8 patterns sum to 4, 0, 2, -2, 2, -2, 0, -4
    sums, probs = stats.sign_flip_distribution([1, -1, 2])
    assert sums.tolist() == [-4, -2, 0, 2, 4] and probs.tolist() == pytest.approx([1 / 8, 2 / 8, 2 / 8, 2 / 8, 1 / 8])
    assert stats.fine_sign_flip_p([]) == stats.FineP(None, None, None)
    assert stats.fine_sign_flip_p([0.0, 0.0]).p == 1.0


def test_fine_sign_flip_exact_is_scipys_permutation_test():
    rng = np.random.default_rng(11)
    for n in (6, 10, 13):
        d = np.round(rng.normal(0.4, 1, n), 2)
        for alternative in ("two-sided", "greater", "less"):
            ref = sp.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf,
                                      alternative=alternative).pvalue
            got = stats.fine_sign_flip_p(d, alternative=alternative)
            assert got.method == "exact" and got.p == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("m", [17, 20])
def test_fine_sign_flip_up_to_twenty_pairs_is_the_full_enumeration(m):
    """2**20 patterns: `sign_flip_p` enumerating every one of them gives the same p."""
    d = np.round(np.random.default_rng(m).normal(0.3, 1, m), 4)
    got = stats.fine_sign_flip_p(d, resamples=100)
    assert got.method == "exact" and got.floor == stats.min_sign_p(m)
    assert got.p == pytest.approx(stats.sign_flip_p(d, exact_max=20), rel=1e-12)


def _count_by_hand(d: np.ndarray) -> float:
    """The two-sided sign-flip p as a count of the 2**m patterns in whole numbers (d on a grid of 1/60)."""
    ints = [int(Fraction(float(x)).limit_denominator(60) * 60) for x in d if abs(x) > 1e-9]
    ways = Counter({0: 1})
    for v in ints:
        step: Counter = Counter()
        for total, n in ways.items():
            step[total + v] += n
            step[total - v] += n
        ways = step
    observed = abs(sum(ints))
    return sum(n for total, n in ways.items() if abs(total) >= observed) / 2 ** len(ints)


@pytest.mark.sampled
@pytest.mark.parametrize("seed", tiers.some(range(6), 3))
def test_fine_sign_flip_on_a_grid_is_an_exact_count(seed):
    """Differences that are shares of a few documents (multiples of 1/60) take few sums: 150 of them
    are counted exactly, far beyond what enumeration reaches."""
    rng = np.random.default_rng(seed)
    d = rng.choice([-1, -2 / 3, -0.5, -0.2, 0, 0.2, 1 / 3, 0.5, 0.75, 1], size=150)
    got = stats.fine_sign_flip_p(d)
    assert got.method == "exact"
    assert got.p == pytest.approx(_count_by_hand(d), rel=1e-9)


def test_fine_sign_flip_sampled_close_to_exact_and_seeded():
    d = np.round(np.random.default_rng(2).normal(0.35, 1, 18), 3)
    exact = stats.sign_flip_p(d, exact_max=18)
    sampled = stats.fine_sign_flip_p(d, resamples=40_000, seed=3, max_sums=16)  # too many sums: sampled
    assert sampled.method == "sampled" and sampled.floor == 1 / 40_001
    assert abs(sampled.p - exact) < 5 * math.sqrt(exact * (1 - exact) / 40_000) + 1e-4
    assert stats.fine_sign_flip_p(d, resamples=40_000, seed=3, max_sums=16) == sampled
    # few distinct |d| (counts drawn per value) agree with the exact distribution too
    few = np.random.default_rng(4).choice([-0.7, -0.3, 0.3, 0.7, 0.7], size=200)
    exact_few = stats.fine_sign_flip_p(few).p
    drawn = stats.fine_sign_flip_p(few, resamples=40_000, max_sums=1)
    assert drawn.method == "sampled"
    assert abs(drawn.p - exact_few) < 5 * math.sqrt(exact_few * (1 - exact_few) / 40_000) + 1e-4
    # above large_sample, the normal approximation of the same sum
    assert stats.fine_sign_flip_p(few, large_sample=100) == stats.FineP(
        stats._normal_sign_flip_p(few[np.abs(few) > 0], "two-sided"), "normal", 0.0)


def test_sign_flip_floor():
    assert stats.sign_flip_floor(0) == 1.0
    assert stats.sign_flip_floor(6) == 2 / 64
    assert stats.sign_flip_floor(17) == 1 / 10_001
    assert stats.sign_flip_floor(17, resamples=999) == 1 / 1000
    assert stats.sign_flip_floor(1001) == 0.0


# --- resolving a family -------------------------------------------------------------------------------


def test_family_patterns():
    # 145 tests: 145 / 10,001 < 0.05, the sampled tests can reach a Holm mark: nothing to refine
    assert family.family_patterns(145, 10_000) is None
    assert family.family_patterns(499, 10_000) is None
    # 1,160 tests: 20 x 1,160 / 0.05 patterns; 30,000 tests: the cap
    assert family.family_patterns(1160, 10_000) == 464_000
    assert family.family_patterns(30_000, 10_000) == family.MAX_PATTERNS


def test_resolve_refines_only_small_sampled_p_values():
    """Four tests in a family of 1,000 (the others n/a-free but not given): only the sampled test with
    a small p is recomputed; the exact, normal and large-p tests keep theirs."""
    settings = Settings()
    rng = np.random.default_rng(0)
    strong = rng.choice([0.2, 0.4, 0.6], size=40)  # 40 gains on a grid: exact
    weak = np.round(rng.normal(0, 1, 40), 3)
    diffs = [strong, weak, np.ones(10), np.round(rng.normal(0.2, 1, 1200), 3)]
    p = [stats.sign_flip_p(d) for d in diffs] + [0.9] * 996
    nonzero = [40, 40, 10, 1200] + [20] * 996
    floors = family.p_floors(nonzero, p, settings)
    got, got_floors, res = family.resolve(p, floors, nonzero, lambda i: diffs[i], settings)
    assert res == family.Resolution(1000, 10_000, 400_000, 1, 1)
    assert got[0] == stats.fine_sign_flip_p(strong).p == pytest.approx(2 / 2**40)
    assert got_floors[0] == stats.min_sign_p(40)
    assert got[1:] == p[1:] and got_floors[1:] == floors[1:]
    # a small family leaves every p as it was
    small = family.resolve(p[:4], floors[:4], nonzero[:4], lambda i: diffs[i], settings)
    assert small[0] == p[:4] and small[2].refined_patterns is None and small[2].warning() is None


def test_resolution_says_when_no_sampled_test_can_be_marked():
    res = family.Resolution(60_000, 10_000, family.MAX_PATTERNS, 3, 2)
    assert res.smallest_sampled_p_holm == pytest.approx(60_000 / 1_000_001)
    assert "no row tested by resampling can reach p_holm < 0.05 (its smallest p_holm is 0.060)" in res.warning()
    assert res.to_dict()["warning"] == res.warning() and set(res.to_dict()["marks"]) == {"p_holm", "p_fdr"}


# --- the level of the whole procedure, by simulation --------------------------------------------------


def _family_marks(rng: np.random.Generator, n_tests: int, effects: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One simulated family: `n_tests` paired samples of 25 differences, the first `effects` shifted,
    the others symmetric about 0 (half on a grid, half continuous); p-values as a comparison computes
    them (200 sign patterns, then `family.resolve`); Holm and BH marks at 0.05."""
    settings = Settings(seed=seed, randomization_resamples=200)
    diffs = []
    for i in range(n_tests):
        size = np.where(i % 2, rng.choice([0.2, 0.4, 0.6, 1.0], 25), rng.exponential(0.5, 25))
        signs = np.where(rng.random(25) < (0.9 if i < effects else 0.5), 1.0, -1.0)
        diffs.append(np.round(signs * size, 6))
    p = [stats.sign_flip_p(d, resamples=200, seed=seed) for d in diffs]
    floors = family.p_floors([25] * n_tests, p, settings)
    resolved = family.resolve(p, floors, [25] * n_tests, lambda i: diffs[i], settings)[0]
    holm = np.array(stats.holm(resolved)) < 0.05
    fdr = np.array(stats.benjamini_hochberg(resolved)) < 0.05
    return holm, fdr


@pytest.mark.sampled
def test_under_a_true_null_holm_and_bh_keep_their_error_rates():
    """40 tests per family, every null true: the share of families with any false mark (FWER; under a
    complete null also BH's false discovery rate) stays at most 0.05 within Monte Carlo error, with the
    p-values refined for the family's size (40 / 201 > 0.05: the small ones are recomputed)."""
    rng = np.random.default_rng(20)
    runs = 5 * tiers.examples(90)
    any_holm = any_fdr = 0
    for r in range(runs):
        holm, fdr = _family_marks(rng, 40, 0, seed=r)
        any_holm += holm.any()
        any_fdr += fdr.any()
    error = 3 * math.sqrt(0.05 * 0.95 / runs)
    assert any_holm / runs <= 0.05 + error and any_fdr / runs <= 0.05 + error


@pytest.mark.sampled
def test_with_true_effects_bh_keeps_the_false_discovery_rate():
    """40 tests, 10 with a real effect: among BH's marks the share of false ones averages at most 0.05
    (BH guarantees 0.05 x 30 / 40); Holm's chance of any false mark stays at most 0.05."""
    rng = np.random.default_rng(21)
    runs = 5 * tiers.examples(90)
    shares, any_false = [], 0
    for r in range(runs):
        holm, fdr = _family_marks(rng, 40, 10, seed=r)
        shares.append(fdr[10:].sum() / max(1, fdr.sum()))
        any_false += holm[10:].any()
    assert np.mean(shares) <= 0.05 + 3 * (np.std(shares) / math.sqrt(runs) + 1e-3)
    assert any_false / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)

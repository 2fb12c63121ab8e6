"""Paired statistics: hand arithmetic on small samples, and agreement with scipy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from tiers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats as sp

from scoring.decide import stats, stats_batch


# --- sign-flip randomization test ----------------------------------------------------------------


def test_sign_flip_exact_by_hand():
    # d = 1, 2, 3: the 8 sign patterns sum to 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 twice.
    assert stats.sign_flip_p([1, 2, 3]) == pytest.approx(2 / 8)
    # one-sided: sum >= 6 once; sum <= 6 always
    assert stats.sign_flip_p([1, 2, 3], alternative="greater") == pytest.approx(1 / 8)
    assert stats.sign_flip_p([1, 2, 3], alternative="less") == pytest.approx(1.0)
    # six equal differences: only all-plus and all-minus reach |sum| = 3
    assert stats.sign_flip_p([0.5] * 6) == pytest.approx(2 / 64)
    # 1 and -1: sums 0, 2, -2, 0 all have |sum| >= 0
    assert stats.sign_flip_p([1, -1]) == pytest.approx(1.0)


def test_sign_flip_zero_differences_drop_out():
    assert stats.sign_flip_p([0, 0, 1, 2, 3]) == pytest.approx(2 / 8)
    assert stats.sign_flip_p([0, 0, 0]) == pytest.approx(1.0)
    assert stats.sign_flip_p([]) is None


def test_sign_flip_exact_matches_scipy_permutation_test():
    rng = np.random.default_rng(7)
    for n in (5, 9, 12):
        d = np.round(rng.normal(0.2, 1, n), 3)
        ref = sp.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf,
                                  alternative="two-sided").pvalue
        assert stats.sign_flip_p(d) == pytest.approx(ref, rel=1e-9)
        greater = sp.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf,
                                      alternative="greater").pvalue
        assert stats.sign_flip_p(d, alternative="greater") == pytest.approx(greater, rel=1e-9)


def test_sign_flip_monte_carlo_close_to_exact():
    rng = np.random.default_rng(3)
    d = np.round(rng.normal(0.3, 1, 18), 2)
    exact = stats.sign_flip_p(d, exact_max=18)
    sampled = stats.sign_flip_p(d, exact_max=16, resamples=20_000, seed=1)
    se = math.sqrt(exact * (1 - exact) / 20_000)
    assert abs(sampled - exact) < 5 * se + 1e-4
    # Monte Carlo p-values include the observed pattern: never 0
    assert stats.sign_flip_p([1.0] * 40, resamples=1000) == pytest.approx(1 / 1001)


def test_sign_flip_seeded_and_reproducible():
    d = np.linspace(-1, 2, 30)
    assert stats.sign_flip_p(d, seed=5) == stats.sign_flip_p(d, seed=5)
    ps = {stats.sign_flip_p(d, seed=s, resamples=2000) for s in range(5)}
    assert len(ps) > 1


def test_sign_flip_count_and_index_paths_agree():
    # about 280 non-zero differences with 2 distinct absolute values take the binomial-count path; a
    # version with tiny jitter (280 distinct values) takes the sign-pattern path; both estimate the same p
    rng = np.random.default_rng(0)
    d = rng.choice([-0.5, 0.0, 0.5, 1.0, -1.0], size=400, p=[0.3, 0.3, 0.27, 0.06, 0.07])
    # jitter within the sums' tie slack: the sums sit on a lattice, and a pattern whose |sum| ties the
    # observed one must count the same on both paths
    jitter = d + rng.uniform(-1e-11, 1e-11, size=400) * (d != 0)
    assert stats._counted_sign_sums(d[d != 0], 10, 0) is not None
    assert stats._counted_sign_sums(jitter[jitter != 0], 10, 0) is None
    a = stats.sign_flip_p(d, resamples=20_000, seed=2)
    b = stats.sign_flip_p(jitter, resamples=20_000, seed=2)
    assert 0.05 < a < 0.95 and a != b  # two random streams ...
    assert abs(a - b) < 0.02  # ... of the same distribution


def test_sign_flip_counts_close_to_exact():
    # 70 differences of absolute value 1 (K = 1 <= 70 / 64): the count path; exact p by the binomial tail
    d = np.array([1.0] * 44 + [-1.0] * 26)
    assert stats._counted_sign_sums(d, 10, 0) is not None
    exact = 2 * sp.binom.sf(43, 70, 0.5)  # P(|2 B - 70| >= 18), B ~ binomial(70, 1/2)
    got = stats.sign_flip_p(d, resamples=40_000, seed=3)
    assert abs(got - exact) < 5 * math.sqrt(exact * (1 - exact) / 40_000) + 1e-4


def test_sign_flip_counts_as_documented():
    # K distinct |d| (ascending) with counts c: kept = binomial(c, 1/2) per pattern, sum = (2 kept - c) @ values
    d = np.array([0.25] * 90 + [-0.25] * 60 + [1.0] * 30 + [-1.0] * 20 + [0.0] * 7)
    nonzero = d[d != 0]
    values, counts = np.array([0.25, 1.0]), np.array([150, 50])
    resamples = 3000
    kept = np.random.default_rng(8).binomial(counts, 0.5, size=(resamples, 2))
    sums = (2 * kept - counts) @ values
    hits = int(np.count_nonzero(np.abs(sums) >= abs(nonzero.sum()) - 1e-9 * np.abs(nonzero).sum()))
    assert stats.sign_flip_p(d, resamples=resamples, seed=8) == (1 + hits) / (1 + resamples)


# --- bootstrap -----------------------------------------------------------------------------------


def test_bootstrap_by_hand():
    # n = 2, d = 0, 1: resampled means 0 (1/4), 0.5 (1/2), 1 (1/4) -> 2.5% and 97.5% quantiles 0 and 1
    assert stats.bootstrap_ci([0, 1], resamples=20_000) == pytest.approx((0.0, 1.0))
    # constant differences: every resample has the same mean
    assert stats.bootstrap_ci([0.25, 0.25, 0.25]) == (0.25, 0.25)
    assert stats.bootstrap_ci([]) is None
    # d = 0, 0.5, 1: a mean of 0 (or 1) needs all three draws equal: 1/27 > 2.5% each
    assert stats.bootstrap_ci([0, 0.5, 1]) == pytest.approx((0.0, 1.0))


def test_bootstrap_close_to_scipy_percentile():
    rng = np.random.default_rng(11)
    d = rng.normal(0.1, 0.5, 40)
    ref = sp.bootstrap((d,), np.mean, method="percentile", n_resamples=20_000, random_state=3).confidence_interval
    low, high = stats.bootstrap_ci(d, resamples=20_000, seed=3)
    assert low == pytest.approx(ref.low, abs=0.02)
    assert high == pytest.approx(ref.high, abs=0.02)
    assert low < d.mean() < high


def test_bootstrap_count_and_index_paths_agree():
    # 3,000 questions, about 300 changed with 3 distinct values: drawn as value counts; with tiny jitter
    # (300 distinct values) the same sample is drawn per non-zero difference; below the threshold of
    # questions, per question
    rng = np.random.default_rng(4)
    d = np.where(rng.random(3000) < 0.1, rng.choice([-1.0, 0.5, 1.0], size=3000), 0.0)
    jitter = d + rng.uniform(-1e-6, 1e-6, size=3000) * (d != 0)
    assert stats._bootstrap_values(d[d != 0], len(d)) is not None
    assert stats._bootstrap_values(jitter[jitter != 0], len(d)) is None
    counted = stats.bootstrap_ci(d, resamples=20_000, seed=9)
    sparse = stats.bootstrap_ci(jitter, resamples=20_000, seed=9)
    by_index = stats.bootstrap_ci(d, resamples=20_000, seed=9, large_sample=len(d))
    se = d.std(ddof=1) / math.sqrt(len(d))
    assert counted != sparse  # other random streams (the means of d are multiples of 1 / 6000, so
    assert counted == pytest.approx(sparse, abs=0.08 * se)  # two streams may give the same quantiles) ...
    assert counted == pytest.approx(by_index, abs=0.08 * se)  # ... of one distribution


def test_bootstrap_counts_as_documented():
    # n > LARGE_SAMPLE, few distinct differences: multinomial(n, counts / n) over the values, ascending
    d = np.array([-0.5] * 40 + [0.0] * 1400 + [1e-12] * 60 + [0.5] * 100 + [1.0] * 60)
    n, resamples = len(d), 4000
    values, counts = np.array([-0.5, 0.0, 0.5, 1.0]), np.array([40, 1460, 100, 60])
    means = np.random.default_rng(5).multinomial(n, counts / n, size=resamples) @ values / n
    expected = np.quantile(means, [0.025, 0.975])
    assert stats.bootstrap_ci(d, resamples=resamples, seed=5) == pytest.approx(tuple(expected), rel=1e-12)


def test_bootstrap_seeded():
    d = np.linspace(-1, 1, 25) ** 3
    assert stats.bootstrap_ci(d, seed=1) == stats.bootstrap_ci(d, seed=1)
    assert stats.bootstrap_ci(d, seed=1) != stats.bootstrap_ci(d, seed=2)


# --- t-test and Wilcoxon -------------------------------------------------------------------------


def test_ttest_by_hand_and_scipy():
    # d = 1, 2, 3: mean 2, sd 1, t = 2 / (1 / sqrt 3) = 2 sqrt 3 with 2 df; for 2 df the two-sided
    # p is 1 - t / sqrt(2 + t^2)
    t = 2 * math.sqrt(3)
    assert stats.ttest_p([1, 2, 3]) == pytest.approx(1 - t / math.sqrt(2 + t * t))
    b = np.array([0.2, 0.4, 0.1, 0.9, 0.5])
    c = np.array([0.5, 0.4, 0.3, 1.0, 0.2])
    assert stats.ttest_p(c - b) == pytest.approx(sp.ttest_rel(c, b).pvalue)


def test_ttest_undefined_cases():
    assert stats.ttest_p([0.5]) is None
    assert stats.ttest_p([0, 0, 0]) is None
    assert stats.ttest_p([0.5, 0.5, 0.5]) is None


def test_wilcoxon_by_hand_and_scipy():
    # all of n differences positive: exact two-sided p = 2 / 2^n
    assert stats.wilcoxon_p([1, 2, 3]) == pytest.approx(2 / 8)
    assert stats.wilcoxon_p([1, 2, 3, 4, 5, 6]) == pytest.approx(2 / 64)
    # zeros are dropped before ranking
    assert stats.wilcoxon_p([0, 0, 1, 2, 3]) == pytest.approx(2 / 8)
    d = [0.3, -0.1, 0.5, 0.25, -0.4, 0.6, 0.7]
    assert stats.wilcoxon_p(d) == pytest.approx(sp.wilcoxon(d).pvalue)
    assert stats.wilcoxon_p([0, 0]) == 1.0
    assert stats.wilcoxon_p([]) is None


# --- Holm ----------------------------------------------------------------------------------------


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 with m = 3: 3 x 0.01 = 0.03; 2 x 0.03 = 0.06; 1 x 0.04 -> max(0.06, 0.04)
    assert stats.holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []
    assert stats.holm([None]) == [None]
    assert stats.holm([0.002]) == pytest.approx([0.002])


def test_holm_never_below_raw_and_order_preserving():
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 0.2, 30).tolist()
    adj = stats.holm(p)
    assert all(a >= r for a, r in zip(adj, p))
    order = np.argsort(p)
    assert all(adj[order[i]] <= adj[order[i + 1]] for i in range(len(p) - 1))


# --- paired ----------------------------------------------------------------------------------------


def test_paired_excludes_na_and_counts_by_direction():
    b = [0.0, 0.5, None, 1.0, 0.5, float("nan")]
    c = [1.0, 0.5, 1.0, 0.0, 1.0, 0.0]
    r = stats.paired(b, c)
    assert r.n == 4  # the None and NaN pairs are left out
    assert r.baseline == pytest.approx((0 + 0.5 + 1 + 0.5) / 4)
    assert r.candidate == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert r.delta == pytest.approx((1 + 0 - 1 + 0.5) / 4)
    assert (r.improved, r.regressed, r.unchanged) == (2, 1, 1)
    lower = stats.paired(b, c, higher_is_better=False)
    assert (lower.improved, lower.regressed, lower.unchanged) == (1, 2, 1)
    assert lower.delta == r.delta  # delta stays candidate - baseline


def test_paired_matches_scipy_on_a_sample():
    rng = np.random.default_rng(5)
    b = np.round(rng.uniform(0, 1, 25), 2)
    c = np.clip(b + np.round(rng.normal(0.05, 0.2, 25), 2), 0, 1)
    r = stats.paired(b, c)
    assert r.p_ttest == pytest.approx(sp.ttest_rel(c, b).pvalue)
    d = c - b
    assert r.p_wilcoxon == pytest.approx(sp.wilcoxon(d[np.abs(d) > 1e-9]).pvalue)
    assert r.ci_low < r.delta < r.ci_high
    assert r.warnings == ()


def test_paired_small_samples_warn_plainly():
    none = stats.paired([None, 1.0], [0.5, None])
    assert none.n == 0 and none.delta is None and none.p_ttest is None
    assert "nothing to compare" in none.warnings[0]
    one = stats.paired([0.0], [1.0])
    assert one.n == 1 and one.delta == 1.0
    assert (one.ci_low, one.p_ttest, one.p_wilcoxon, one.p_randomization) == (None, None, None, None)
    assert "n = 1" in one.warnings[0]
    three = stats.paired([0, 0, 0], [1, 1, 0.5])
    joined = " ".join(three.warnings)
    assert "cannot go below p = 0.25" in joined  # 2 / 2^3
    assert "n = 3 < 10" in joined
    same = stats.paired([0, 0, 0, 0], [0, 0, 0, 0])
    assert "every paired difference is zero" in " ".join(same.warnings)
    assert same.p_randomization == 1.0 and same.p_ttest is None


def test_min_sign_p():
    assert stats.min_sign_p(0) == 1.0
    assert stats.min_sign_p(1) == 1.0
    assert stats.min_sign_p(5) == pytest.approx(0.0625)
    assert stats.min_sign_p(6) == pytest.approx(0.03125)
    assert stats.min_sign_p(5000) == 0.0  # no overflow on large samples


def test_pairs_length_mismatch():
    with pytest.raises(ValueError, match="differ in length"):
        stats.pairs([1.0], [1.0, 2.0])


# --- the non-inferiority test of max_drop gates ----------------------------------------------------


def test_drop_p_randomization_by_hand():
    # six questions each 0.1 worse, margin 0.02: shifted differences are all -0.08; only the all-minus
    # pattern has a sum as low: p = 1/64
    assert stats.drop_p([-0.1] * 6, 0.02) == pytest.approx(1 / 64)
    # a drop within the margin: shifted differences all +0.01, every pattern's sum <= observed: p = 1
    assert stats.drop_p([-0.01] * 6, 0.02) == pytest.approx(1.0)


def test_drop_p_ttest_and_wilcoxon_match_scipy():
    d = np.array([-0.2, -0.05, -0.1, 0.0, -0.3, -0.15, 0.05, -0.12])
    assert stats.drop_p(d, 0.02, test="ttest") == pytest.approx(
        sp.ttest_1samp(d, -0.02, alternative="less").pvalue)
    assert stats.drop_p(d, 0.02, test="wilcoxon") == pytest.approx(
        sp.wilcoxon(d + 0.02, alternative="less").pvalue)
    with pytest.raises(ValueError, match="unknown test"):
        stats.drop_p(d, 0.02, test="bayes")  # type: ignore[arg-type]


# --- many samples at once, and the declared drawing rules ------------------------------------------


def _realistic(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Per-question differences shaped like the registry's metrics."""
    if kind == "binary":  # abstention, success: -1, 0 or 1
        return rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.08, 0.8, 0.12])
    if kind == "fraction":  # support, coverage over 1-3 claims
        values = np.array([0, 1 / 3, 1 / 2, 2 / 3, 1.0])
        b = rng.choice(values, size=n)
        return np.where(rng.random(n) < 0.6, b, rng.choice(values, size=n)) - b
    if kind == "graded":  # nDCG, AP: continuous, many ties at no change
        b = rng.beta(2, 2, n)
        return np.where(rng.random(n) < 0.4, b, np.clip(b + rng.normal(0.02, 0.15, n), 0, 1)) - b
    if kind == "rare":  # a few questions change, all one way
        return np.where(rng.random(n) < 0.03, rng.uniform(0.2, 1.0, n), 0.0)
    raise ValueError(kind)


def _figures(r: stats.Paired) -> list[float]:
    """The numeric fields (None as NaN), for comparison with pytest.approx."""
    values = (r.baseline, r.candidate, r.delta, r.ci_low, r.ci_high, r.p_ttest, r.p_wilcoxon, r.p_randomization)
    return [math.nan if v is None else v for v in values]


def _labels(r: stats.Paired) -> tuple:
    return (r.n, r.improved, r.regressed, r.unchanged, r.warnings, r.method)


VALUES = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.floats(0, 1, allow_nan=False))


@settings(max_examples=examples(60))
@given(st.lists(st.tuples(VALUES, VALUES), max_size=40), st.booleans(), st.integers(0, 3), st.sampled_from([5, 1000]))
@example([(0.0, 0.25)] * 6, False, 0, 5)  # scipy's permutation Wilcoxon, not the normal one, below 51 differences
def test_the_batch_engine_equals_the_readable_procedures(pairs_, higher, seed, large_sample):
    """Two implementations, one truth: `stats_batch.paired_many` on one sample equals `stats.paired`,
    which composes the readable procedures (n/a pairs, ties, zeros, both methods)."""
    b = np.array([np.nan if x is None else x for x, _ in pairs_], dtype=float)
    c = np.array([np.nan if y is None else y for _, y in pairs_], dtype=float)
    got = stats_batch.paired_many([b], [c], [(0, None)], higher_is_better=[higher], seed=seed, large_sample=large_sample,
                                  bootstrap_resamples=500, randomization_resamples=500)[0]
    alone = stats.paired(b, c, higher_is_better=higher, seed=seed, large_sample=large_sample, bootstrap_resamples=500,
                         randomization_resamples=500)
    assert _labels(got) == _labels(alone)
    assert _figures(got) == pytest.approx(_figures(alone), rel=1e-9, abs=1e-12, nan_ok=True)


def test_paired_many_equals_paired_one_sample_at_a_time():
    rng = np.random.default_rng(8)
    q = 1500
    base = [rng.uniform(0, 1, q).round(2), rng.choice([0.0, 1.0], q), rng.uniform(0, 1, q)]
    cand = [np.clip(base[0] + rng.normal(0.02, 0.2, q), 0, 1).round(2),
            np.where(rng.random(q) < 0.05, 1 - base[1], base[1]),
            np.where(rng.random(q) < 0.5, base[2], rng.uniform(0, 1, q))]
    base[0][rng.random(q) < 0.1] = np.nan  # n/a on one side only
    cand[2][rng.random(q) < 0.1] = np.nan
    small = np.zeros(q, dtype=bool)
    small[:12] = True  # exact sign flips, scipy's own Wilcoxon
    medium = np.zeros(q, dtype=bool)
    medium[:400] = True  # bootstrap by indexes, sampled sign flips
    samples = [(j, mask) for j in range(3) for mask in (None, small, medium)]
    samples += [(0, np.zeros(q, dtype=bool)), (1, np.arange(q) == 3)]  # empty, one pair
    many = stats_batch.paired_many(base, cand, samples, higher_is_better=[True, False, True], seed=4, large_sample=1000)
    methods = set()
    for (j, mask), got in zip(samples, many):
        keep = np.ones(q, dtype=bool) if mask is None else mask
        alone = stats.paired(base[j][keep], cand[j][keep], higher_is_better=[True, False, True][j], seed=4,
                             large_sample=1000)
        assert _labels(got) == _labels(alone)
        assert _figures(got) == pytest.approx(_figures(alone), rel=1e-12, abs=1e-15, nan_ok=True), (j, keep.sum())
        methods.add(got.method)
        if got.n >= 2:  # and each figure is the one the single-purpose function gives
            b, c = stats.pairs(base[j][keep], cand[j][keep])
            d = c - b
            assert (got.ci_low, got.ci_high) == pytest.approx(stats.bootstrap_ci(d, seed=4, large_sample=1000),
                                                              rel=1e-12)
            assert got.p_randomization == pytest.approx(stats.sign_flip_p(d, seed=4, large_sample=1000), rel=1e-12)
            assert got.p_wilcoxon == pytest.approx(stats.wilcoxon_p(d), rel=1e-12)
            assert got.p_ttest == pytest.approx(stats.ttest_p(d), rel=1e-12)
    # every path is exercised: normal (variable 0 and 2 on all), sparse and index bootstraps, n < 2
    assert methods == {"normal", "resampling", None}


def test_bootstrap_draws_as_documented():
    # the documented rule, written out: blocks of BLOCK // n resamples of uint16 question indexes
    d = np.linspace(-0.4, 0.9, 37) ** 3
    n, resamples = len(d), 3000
    rng = np.random.default_rng(6)
    means = []
    for start in range(0, resamples, stats.BLOCK // n):
        idx = rng.integers(0, n, size=(min(stats.BLOCK // n, resamples - start), n), dtype=np.uint16)
        means.extend(d[idx].mean(axis=1))
    expected = np.quantile(means, [0.025, 0.975])
    assert stats.bootstrap_ci(d, resamples=resamples, seed=6) == pytest.approx(tuple(expected), rel=1e-12)


def test_sign_flip_patterns_as_documented():
    # pattern r keeps the j-th non-zero difference when bit r of row j of the uint32 words
    # (little-endian) is 1; zero differences take no row
    d = np.round(np.random.default_rng(2).normal(0.1, 1, 25), 2)
    assert (d == 0).sum() == 1
    nonzero = d[d != 0]
    resamples = 500
    words = np.random.default_rng(3).integers(0, 2**32, size=(24, -(-resamples // 32)), dtype=np.uint32)
    hits = 0
    for r in range(resamples):
        keep = (words[:, r // 32] >> np.uint32(r % 32)) & np.uint32(1)
        total = float(np.where(keep == 1, nonzero, -nonzero).sum())
        hits += abs(total) >= abs(nonzero.sum()) - 1e-9
    assert stats.sign_flip_p(d, resamples=resamples, seed=3) == pytest.approx((1 + hits) / (1 + resamples))


def test_bootstrap_over_non_zero_draws_matches_index_draws():
    # n above the large-sample threshold but few non-zero differences: draws land on them binomially
    rng = np.random.default_rng(12)
    d = _realistic("rare", 3000, rng)
    se = d.std(ddof=1) / math.sqrt(len(d))
    by_index = stats.bootstrap_ci(d, large_sample=len(d))  # n <= threshold: index matrix
    non_zero = stats.bootstrap_ci(d, large_sample=len(d) - 1)  # n above it, m below: non-zero draws only
    assert non_zero != by_index  # another random stream ...
    assert non_zero == pytest.approx(by_index, abs=0.08 * se)  # ... of the same distribution


def test_large_sample_methods_by_hand():
    # d = 0, 1, 2 with the threshold at 1 non-zero difference: mean 1, s = 1, n = 3
    z = 1.959963984540054  # the normal 97.5% quantile
    low, high = stats.bootstrap_ci([0, 1, 2], large_sample=1)
    assert (low, high) == pytest.approx((1 - z / math.sqrt(3), 1 + z / math.sqrt(3)))
    # sign flips of 1, -1, 2: the sum 2 has mean 0 and variance 1 + 1 + 4 = 6
    two_sided = math.erfc(2 / math.sqrt(6) / math.sqrt(2))
    assert stats.sign_flip_p([1, -1, 2], large_sample=2) == pytest.approx(two_sided)
    assert stats.sign_flip_p([1, -1, 2], large_sample=2, alternative="greater") == pytest.approx(two_sided / 2)
    # below the threshold, exact: the 8 sums are +-2, +-4, 0, 0, +-2 -> |sum| >= 2 in 6 of 8 patterns
    assert stats.sign_flip_p([1, -1, 2]) == pytest.approx(6 / 8)
    r = stats.paired([0, 0, 0, 0], [0, 1, -1, 2], large_sample=2)
    assert r.method == "normal" and r.p_randomization == pytest.approx(two_sided)
    assert stats.paired([0, 0, 0, 0], [0, 1, -1, 2]).method == "resampling"
    assert stats.paired([0.0], [1.0]).method is None


@pytest.mark.parametrize("kind", ["binary", "fraction", "graded", "rare"])
def test_large_sample_methods_agree_with_resampling_at_the_threshold(kind):
    # exactly LARGE_SAMPLE non-zero differences: resampling (threshold m) vs normal (threshold m - 1)
    rng = np.random.default_rng(1)
    d = _realistic(kind, 40 * stats.LARGE_SAMPLE, rng)
    last = np.flatnonzero(np.abs(d) > stats.TIE)[stats.LARGE_SAMPLE - 1]
    d = d[:last + 1]
    m = int(np.count_nonzero(np.abs(d) > stats.TIE))
    assert m == stats.LARGE_SAMPLE
    se = d.std(ddof=1) / math.sqrt(len(d))
    resampled = stats.bootstrap_ci(d, large_sample=m)
    normal = stats.bootstrap_ci(d, large_sample=m - 1)
    assert resampled == pytest.approx(normal, abs=0.1 * se)  # within a tenth of a standard error
    # p-values away from 0 as well: the same magnitudes with random signs (m unchanged)
    for signed in (d, np.abs(d) * rng.choice([-1.0, 1.0], len(d))):
        sampled, approx = (stats.sign_flip_p(signed, large_sample=t) for t in (m, m - 1))
        assert abs(sampled - approx) < 4 * math.sqrt(approx * (1 - approx) / stats.RANDOMIZATION_RESAMPLES) + 2e-4


def test_ttest_is_scipys_on_many_samples():
    rng = np.random.default_rng(21)
    for n in (2, 3, 10, 57, 400):
        d = np.round(rng.normal(0.05, 0.3, n), 3)
        for alternative in ("two-sided", "less", "greater"):
            ref = sp.ttest_1samp(d, 0.01, alternative=alternative).pvalue
            assert stats.ttest_p(d, alternative=alternative, mu=0.01) == pytest.approx(ref, rel=1e-10)


def test_wilcoxon_is_scipys_default_method_with_ties_and_zeros():
    # scipy: all sign patterns up to 13 differences with ties or zeros, the normal approximation above
    rng = np.random.default_rng(13)
    for n, zeros in [(5, 0), (9, 3), (12, 0), (13, 2), (14, 3), (30, 3), (50, 0), (51, 3), (300, 3), (2000, 3)]:
        d = np.round(rng.normal(0.05, 0.4, n), 1)  # rounded: ties (and perhaps zeros)
        d[d == 0] = 0.1
        d[:zeros] = 0.0
        for alternative in ("two-sided", "less", "greater"):
            ref = sp.wilcoxon(d, alternative=alternative).pvalue
            assert stats.wilcoxon_p(d, alternative=alternative) == pytest.approx(ref, rel=1e-10), (n, alternative)
        distinct = rng.permutation(np.arange(1, n + 1)) * rng.choice([-1, 1], n) / 7  # no ties, no zeros
        assert stats.wilcoxon_p(distinct) == pytest.approx(sp.wilcoxon(distinct).pvalue, rel=1e-10), n


def test_cells_sum_each_mask_from_its_cells_by_hand():
    a = np.array([True, True, False, False])
    b = np.array([False, True, True, False])
    cells = stats_batch.Cells([a, b], 4)
    # questions held by: {a}, {a, b}, {b}, {} -> four cells
    assert cells.size == 4
    sums = cells.over(cells.totals(np.array([1.0, 2.0, 3.0, 4.0])))
    assert sums.tolist() == [1 + 2, 2 + 3]


def test_paired_many_from_cells_equals_each_sample_alone_on_overlapping_masks():
    """Samples above the large-sample threshold are computed from per-cell sums: with overlapping masks
    (a partition, a subset, everything) shared by several variables, each still equals the single-purpose
    functions on its own pairs."""
    rng = np.random.default_rng(31)
    q = 3000
    kind = rng.integers(0, 3, q)
    masks = [kind == 0, kind == 1, kind == 2, rng.random(q) < 0.3, None]
    base = [rng.choice([0.0, 0.5, 1.0], q), rng.uniform(0, 1, q).round(3), np.zeros(q)]
    cand = [np.where(rng.random(q) < 0.6, base[0], rng.choice([0.0, 0.5, 1.0], q)), rng.uniform(0, 1, q).round(3),
            np.ones(q)]  # variable 2: every difference is +1, no spread
    base[0][rng.random(q) < 0.1] = np.nan
    cand[1][rng.random(q) < 0.1] = np.nan
    directions = [True, False, True]
    samples = [(j, mask) for j in range(3) for mask in masks]
    many = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=2, large_sample=50)
    for (j, mask), got in zip(samples, many):
        keep = np.ones(q, dtype=bool) if mask is None else mask
        b, c = stats.pairs(base[j][keep], cand[j][keep])
        d = c - b
        up, down = int((d > stats.TIE).sum()), int((d < -stats.TIE).sum())
        assert got.method == "normal"
        assert (got.n, got.improved, got.regressed, got.unchanged) == (
            len(d), *((up, down) if directions[j] else (down, up)), len(d) - up - down)
        assert (got.baseline, got.candidate, got.delta) == pytest.approx((b.mean(), c.mean(), d.mean()), rel=1e-12)
        assert (got.ci_low, got.ci_high) == pytest.approx(stats.bootstrap_ci(d, large_sample=50), rel=1e-12)
        assert got.p_randomization == pytest.approx(stats.sign_flip_p(d, large_sample=50), rel=1e-9)
        assert got.p_wilcoxon == pytest.approx(sp.wilcoxon(d).pvalue, rel=1e-9)
        if j == 2:
            assert got.p_ttest is None and any("no spread" in w for w in got.warnings)
        else:
            assert got.p_ttest == pytest.approx(sp.ttest_1samp(d, 0).pvalue, rel=1e-9)

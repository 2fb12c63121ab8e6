"""Clustered questions: each clustered statistic by hand on small examples, against scipy and statsmodels
where they have the test, equal to the unclustered one with one question per cluster, and holding its
level by simulation where the unclustered test does not (docs/statistics.md, "Clustered questions")."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scoring.decide import clusters as C
from scoring.decide import detect, drop, stats
from scoring.decide.compute import compare
from scoring.decide.policy import parse_policy
from scoring.errors import ValidationError
from scoring.store.database import connect_readonly
from scoring.store.refresh import refresh
from fixtures import Q, build, set_field

# Three clusters: {0.1, 0.2}, {-0.05}, {0.3, 0.1, 0.0}; sums 0.3, -0.05, 0.4 (total 0.65), sizes 2, 1, 3.
D = np.array([0.1, 0.2, -0.05, 0.3, 0.1, 0.0])
CODES = np.array([0, 0, 1, 2, 2, 2])


# --- by hand -------------------------------------------------------------------------------------


def test_cluster_sums_in_order_of_first_appearance():
    s, size = C.sums(D, np.array([7, 7, 3, 5, 5, 5]))
    assert s.tolist() == pytest.approx([0.3, -0.05, 0.4]) and size.tolist() == [2, 1, 3]


def test_cluster_sign_flip_p_by_hand():
    """Eight patterns of the three cluster sums; the observed sum 0.65. Their sums: +-0.65, +-0.75, +-0.05, +-0.15.
    Two-sided: |sum| >= 0.65 in 4 of 8; greater: 0.65 and 0.75, 2 of 8; less: all but 0.75, 7 of 8."""
    assert C.sign_flip_p(D, CODES) == 0.5
    assert C.sign_flip_p(D, CODES, alternative="greater") == 0.25
    assert C.sign_flip_p(D, CODES, alternative="less") == 0.875
    # flipping each question instead (2**5 patterns of the five non-zero differences) is another test
    assert stats.sign_flip_p(D, alternative="greater") == pytest.approx(2 / 32)


def test_cluster_sign_flip_agrees_with_scipy():
    from scipy.stats import permutation_test

    rng = np.random.default_rng(3)
    codes = rng.integers(0, 12, 60)
    d = rng.normal(0.1, 0.5, 60) + rng.normal(0, 0.5, 12)[codes]
    s, _ = C.sums(d, codes)
    for alternative in ("two-sided", "less", "greater"):
        expected = permutation_test((s,), np.sum, permutation_type="samples", alternative=alternative,
                                    n_resamples=np.inf).pvalue
        assert C.sign_flip_p(d, codes, alternative=alternative) == pytest.approx(expected, rel=1e-12)


def test_cluster_robust_se_by_hand():
    """CR2: mean 0.65 / 6; cluster residual sums e = 0.3 - 2m, -0.05 - m, 0.4 - 3m, each over
    1 - n_c / n = 4/6, 5/6, 3/6; se**2 = sum e**2 / (1 - n_c / n) / n**2."""
    m = 0.65 / 6
    e = np.array([0.3 - 2 * m, -0.05 - m, 0.4 - 3 * m])
    se = math.sqrt(float((e ** 2 / np.array([4 / 6, 5 / 6, 3 / 6])).sum()) / 36)
    assert C.robust_se(D, CODES) == pytest.approx(se, rel=1e-12)
    assert se == pytest.approx(0.0379144, abs=1e-7)
    from scipy import stats as sps

    t, df = m / se, C.robust_df(D, CODES)
    assert C.ttest_p(D, CODES, alternative="greater") == pytest.approx(sps.t.sf(t, df), rel=1e-10)
    assert C.ttest_p(D, CODES) == pytest.approx(2 * sps.t.sf(t, df), rel=1e-10)


def test_with_equal_cluster_sizes_the_clustered_t_test_is_statsmodels_cr1_and_the_t_test_of_cluster_means():
    """Equal sizes: CR2 is CR1 (G / (G - 1) * sum e**2 / n**2), the df G - 1 whatever the correlation, and
    the test is Student's one-sample t-test of the G cluster means."""
    import statsmodels.api as sm
    from scipy import stats as sps

    rng = np.random.default_rng(4)
    codes = np.repeat(np.arange(7), 4)
    d = rng.normal(0.1, 0.4, 28) + rng.normal(0, 0.4, 7)[codes]
    fit = sm.OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    assert C.robust_se(d, codes) == pytest.approx(float(fit.bse[0]), rel=1e-10)
    assert C.ttest_p(d, codes) == pytest.approx(float(fit.pvalues[0]), rel=1e-10)
    assert C.robust_df(d, codes) == pytest.approx(6, rel=1e-12)
    means = d.reshape(7, 4).mean(axis=1)
    assert C.ttest_p(d, codes) == pytest.approx(float(sps.ttest_1samp(means, 0).pvalue), rel=1e-10)


def bell_mccaffrey(d: np.ndarray, codes: np.ndarray, rho: float) -> tuple[float, float]:
    """CR2 and its Bell-McCaffrey df by the general matrix formulas (Imbens and Kolesar 2016, section 4),
    for the regression of d on a constant: A_g = (I - H_gg)^(-1/2); V = (X'X)^-1 sum_g X_g' A_g e_g e_g'
    A_g X_g (X'X)^-1; G_g = (I - H)_g A_g X_g (X'X)^-1; df = tr(G' Omega G)**2 / tr((G' Omega G)**2) with
    Omega 1 - rho on the diagonal, rho within a cluster, 0 across."""
    n = len(d)
    x = np.ones((n, 1))
    h = x @ x.T / n
    e = d - d.mean()
    columns, meat = [], 0.0
    same = codes[:, None] == codes[None, :]
    omega = np.where(same, rho, 0.0) + (1 - rho) * np.eye(n)
    for g in np.unique(codes):
        idx = np.flatnonzero(codes == g)
        values, vectors = np.linalg.eigh(np.eye(len(idx)) - h[np.ix_(idx, idx)])
        a = vectors @ np.diag(values ** -0.5) @ vectors.T
        meat += (x[idx].T @ a @ e[idx]).item() ** 2
        columns.append((np.eye(n) - h)[:, idx] @ a @ x[idx] / n)
    gm = np.hstack(columns)
    m = gm.T @ omega @ gm
    return math.sqrt(meat) / n, float(np.trace(m) ** 2 / np.trace(m @ m))


def test_cr2_and_its_degrees_of_freedom_are_the_matrix_formulas():
    rng = np.random.default_rng(11)
    for _ in range(12):
        g = int(rng.integers(2, 9))
        codes = np.repeat(np.arange(g), rng.integers(1, 7, g))
        d = rng.normal(0, 1, len(codes)) + rng.normal(0, 1, g)[codes]
        for rho in (0.0, 0.35, 1.0):
            se, df = bell_mccaffrey(d, codes, rho)
            assert C.robust_se(d, codes) == pytest.approx(se, rel=1e-10)
            assert C.df_at(C.sums(d, codes)[1], rho) == pytest.approx(df, rel=1e-9)
        assert C.robust_df(d, codes) == pytest.approx(bell_mccaffrey(d, codes, C.icc(d, codes))[1], rel=1e-9)


def test_icc_is_the_one_way_anova_estimate():
    """Equal sizes k: ICC(1) = (F - 1) / (F + k - 1), F scipy's one-way ANOVA statistic; clipped at 0."""
    from scipy.stats import f_oneway

    rng = np.random.default_rng(2)
    codes = np.repeat(np.arange(9), 5)
    d = rng.normal(0, 1, 45) + rng.normal(0, 1, 9)[codes]
    f = f_oneway(*d.reshape(9, 5)).statistic
    assert C.icc(d, codes) == pytest.approx((f - 1) / (f + 4), rel=1e-10)
    assert C.icc(np.tile([0.0, 1.0, 2.0], 4), np.repeat(np.arange(4), 3)) == 0.0  # clusters alike: clipped
    assert C.icc(D, np.arange(6)) == 0.0  # one question per cluster


def test_degrees_of_freedom_are_monotone_in_the_correlation():
    """`df_range` takes the two ends of [0, 1] as the smallest and largest df: the df moves one way as the
    correlation grows, on 300 random designs."""
    rng = np.random.default_rng(6)
    for _ in range(300):
        g = int(rng.integers(2, 25))
        size = rng.integers(1, int(rng.integers(2, 30)), g)
        dfs = np.diff([C.df_at(size, rho) for rho in np.linspace(0, 1, 21)])
        assert (dfs <= 1e-9).all() or (dfs >= -1e-9).all(), size
        low, high = C.df_range(np.repeat(np.arange(g), size))
        assert low - 1e-9 <= C.df_at(size, 0.4) <= high + 1e-9


def test_cluster_wilcoxon_is_signed_rank_of_cluster_means():
    from scipy.stats import wilcoxon

    means = np.array([0.15, -0.05, 0.4 / 3])
    assert C.means(D, CODES) == pytest.approx(means)
    assert C.wilcoxon_p(D, CODES) == pytest.approx(float(wilcoxon(means).pvalue))


def test_cluster_bootstrap_draws_whole_clusters_as_documented():
    """Each resample: G cluster indexes from `stats`'s index matrix for a sample of size G, then
    sum of drawn sums / sum of drawn sizes; the percentile interval of those."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 3, size=(min(10_000, stats.BLOCK // 3), 3), dtype=np.uint16)
    s, size = np.array([0.3, -0.05, 0.4]), np.array([2.0, 1.0, 3.0])
    ratios = s[idx].sum(axis=1) / size[idx].sum(axis=1)
    low, high = np.quantile(ratios, [0.025, 0.975])
    assert C.bootstrap_ci(D, CODES, resamples=len(idx)) == pytest.approx((low, high), rel=1e-12)
    # every resampled mean is a mean over whole clusters: never below the lowest cluster mean
    assert low >= -0.05 - 1e-12 and high <= 0.4 / 3 + 0.15


def test_paired_many_is_paired_one_sample_at_a_time():
    """Samples over the same questions draw their cluster bootstraps together (one index matrix): each
    sample's figures, interval included, are still those `paired` gives it alone. Three variables, n/a in
    one, masks that overlap, repeat and leave one question: the resampled, normal, no-spread and
    one-question-per-cluster routes."""
    rng = np.random.default_rng(8)
    n = 60
    codes = np.repeat(np.arange(20), 3)
    base = [rng.random(n), rng.integers(0, 2, n).astype(float), np.full(n, 0.5), rng.random(n)]
    cand = [base[0] + rng.normal(0.05, 0.2, n), rng.integers(0, 2, n).astype(float), np.full(n, 0.5),
            base[3] - rng.normal(0.05, 0.2, n)]
    base[3][::7] = np.nan
    every, first, odd, one = np.ones(n, bool), np.arange(n) < 30, np.arange(n) % 2 == 1, np.arange(n) == 4
    samples = [(0, every), (1, every), (3, every), (0, first), (1, first), (2, first), (3, first), (0, odd),
               (1, odd), (0, every), (0, one), (1, np.arange(n) % 3 == 0)]
    directions = [True, False, True, True]
    many = C.paired_many(base, cand, samples, None, codes, higher_is_better=directions, seed=3, large_sample=15)
    for (j, mask), got in zip(samples, many):
        keep = mask & ~(np.isnan(base[j]) | np.isnan(cand[j]))
        alone = C.paired(base[j][keep], cand[j][keep], codes[keep], higher_is_better=directions[j], seed=3,
                         large_sample=15)
        assert got == alone, (j, mask.sum())
    assert any(p.method == "normal" for p in many) and any(p.method == "resampling" for p in many)


def test_clustered_mde_power_and_bound_use_the_clustered_se_and_df():
    se, df = C.robust_se(D, CODES), C.robust_df(D, CODES)
    nc = detect._special.nctdtrinc(df, 0.2, detect.t_critical(0.05, df))
    assert C.mde(se, 3, 0.05, 0.8, df) == pytest.approx(nc * se)
    assert C.power_at(C.mde(se, 3, 0.05, 0.8, df), se, 3, 0.05, df) == pytest.approx(0.8, abs=1e-6)
    assert C.t_bound(D, CODES, 0.05) == pytest.approx(-0.65 / 6 + detect.t_critical(0.05, df) * se)
    figures = drop.figures(D, 0.02, alpha=0.05, test="ttest", codes=CODES)
    assert figures.mde == pytest.approx(C.mde(se, 3, 0.05, 0.8, df))
    assert figures.bound == pytest.approx(C.t_bound(D, CODES, 0.05))


def test_questions_needed_keep_the_mean_cluster_size():
    se, n, g = 0.05, 40, 10
    needed = C.questions_needed(se, n, g, 0.02, 0.05, 0.8)
    clusters = math.ceil(needed / (n / g))
    assert C.power_at(0.02, se * math.sqrt(g / clusters), clusters, 0.05) >= 0.8
    assert C.power_at(0.02, se * math.sqrt(g / (clusters - 1)), clusters - 1, 0.05) < 0.8


# --- one question per cluster is the unclustered test --------------------------------------------


@pytest.mark.parametrize("n", [6, 25, 60])
def test_one_question_per_cluster_equals_unclustered(n):
    rng = np.random.default_rng(n)
    b = rng.random(n)
    c = np.clip(b + np.round(rng.normal(0.02, 0.3, n), 2), 0, 1)
    alone = np.arange(n)
    assert C.paired(b, c, alone) == stats.paired(b, c)
    d = c - b
    for mde_c, mde_u in zip(C.row_figures(d, alone), detect.row_figures(d)):
        assert mde_c == pytest.approx(mde_u, rel=1e-12)
    for test in stats.TESTS:
        for rule in drop.RULES:
            if test == "wilcoxon" and rule == "non_inferiority":
                continue
            plain = drop.figures(d, 0.02, alpha=0.05, test=test, rule=rule)
            clustered = drop.figures(d, 0.02, alpha=0.05, test=test, rule=rule, codes=alone)
            assert clustered.p == plain.p and clustered.decided == plain.decided
            for name in ("mde", "power_at_margin", "bound", "sd"):
                assert getattr(clustered, name) == pytest.approx(getattr(plain, name), rel=1e-9), name
            assert clustered.questions_needed == plain.questions_needed and clustered.clusters == n


def test_failed_records_never_help_a_clustered_gate():
    """Failed pairs at their worst: a clustered gate's p with the failed pairs is never more favourable to the
    candidate than at any value they could have had."""
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 8, 40)
    d = np.round(rng.normal(-0.02, 0.3, 40), 2)
    width = np.where(rng.random(40) < 0.15, 0.5, 0.0)
    for test in ("randomization", "ttest"):
        worst = drop.figures(d, 0.02, alpha=0.05, test=test, codes=codes, width=width)
        for _ in range(20):
            real = d + width * rng.random(40)
            seen = drop.figures(real, 0.02, alpha=0.05, test=test, codes=codes)
            assert worst.p <= seen.p + 1e-12
        shown = drop.figures(d, 0.02, alpha=0.05, test=test, rule="non_inferiority", codes=codes, width=width)
        for _ in range(20):
            real = d + width * rng.random(40)
            seen = drop.figures(real, 0.02, alpha=0.05, test=test, rule="non_inferiority", codes=codes)
            assert shown.p >= seen.p - 1e-12


# --- choosing the clusters -----------------------------------------------------------------------


def test_question_clusters_by_each_rule():
    q = pd.DataFrame({"type": ["a", "b", "a", "c"], "cluster": ["x", None, "x", "y"],
                      "tags": [("team-a", "t"), (), ("team-b",), ("u", "team-a")]})
    assert C.question_clusters(q).codes.tolist() == [0, 1, 0, 2]   # no cluster: one of its own
    assert C.question_clusters(q, "type").codes.tolist() == [0, 1, 0, 2]
    assert C.question_clusters(q, "tag:team-").codes.tolist() == [0, 1, 2, 0]
    assert C.question_clusters(q, "none") is None
    assert C.question_clusters(q.assign(cluster=None)) is None
    assert C.question_clusters(q, "tag:zzz") is None


@pytest.mark.parametrize("value", ["doc", "tag:", "tag: x", "", 3, True, ["type"]])
def test_policy_cluster_by_refused_with_its_line(value):
    text = f'name = "g"\ncluster_by = {json.dumps(value)}\n[[gates]]\nmetric = "recall"\nmax_drop = 0.02\n'
    with pytest.raises(ValidationError) as error:
        parse_policy(text)
    assert str(error.value).startswith("policy.toml:2: field 'cluster_by': ")
    assert '"cluster" (the questions\' own), "type", "tag:<prefix>"' in str(error.value)


@pytest.mark.parametrize("value", ["cluster", "type", "tag:team-", "none"])
def test_policy_cluster_by_accepted(value):
    text = f'name = "g"\ncluster_by = "{value}"\n[[gates]]\nmetric = "recall"\nmax_drop = 0.02\n'
    assert parse_policy(text).cluster_by == value
    assert parse_policy(text.replace(f'cluster_by = "{value}"\n', "")).cluster_by is None


def test_bad_cluster_values_are_refused_with_file_and_line(tmp_path):
    ws = build(tmp_path / "ws")
    set_field(Q(ws), 2, "cluster", 7)
    set_field(Q(ws), 4, "cluster", "  ")
    with pytest.raises(ValidationError) as error:
        refresh(ws, tmp_path / "x.duckdb")
    text = str(error.value)
    assert "suites/demo/questions.jsonl:2: question 'q-2': field 'cluster': 7: expected a non-empty string" in text
    assert "suites/demo/questions.jsonl:4: question 'q-4': field 'cluster': '  ': expected a non-empty string" in text


# --- through a comparison ------------------------------------------------------------------------

POLICY = 'name = "g"\n[[gates]]\nname = "recall"\nmetric = "recall"\nmax_drop = 0.02\n'


def _compared(tmp_path: Path, clusters: dict[int, str], policy: str = POLICY) -> dict:
    ws = build(tmp_path / "ws")
    for line, name in clusters.items():
        set_field(Q(ws), line, "cluster", name)
    db = tmp_path / "ws.duckdb"
    refresh(ws, db)
    with connect_readonly(db) as con:
        stored = con.execute("SELECT question_id, cluster FROM questions ORDER BY position").fetchall()
        c = compare(con, "base", "cand", policy=parse_policy(policy))
    return {"stored": stored, "doc": c.to_dict(), "method": c.method()}


def test_a_suite_with_clusters_says_so_everywhere(tmp_path):
    found = _compared(tmp_path, {1: "release", 2: "release", 4: "hr", 5: "release"})
    assert found["stored"] == [("q-1", "release"), ("q-2", "release"), ("q-3", None), ("q-4", "hr"),
                               ("q-5", "release")]
    doc = found["doc"]
    assert doc["clusters"] == 3 and doc["cluster_by"] == "cluster"   # q-3 alone
    gate = doc["gates"][0]
    assert gate["clusters"] == 2 and "clustered: 2 clusters" in gate["reason"]   # recall: q-3 is n/a
    assert max(r["clusters"] for r in doc["comparisons"] if r["slice"] == "all") == 3
    assert "clustered: 3 clusters (cluster_by cluster)" in found["method"]


def test_a_suite_without_clusters_is_unclustered(tmp_path):
    doc = _compared(tmp_path, {})["doc"]
    assert doc["clusters"] is None and doc["cluster_by"] is None
    assert doc["gates"][0]["clusters"] is None and "clustered" not in doc["gates"][0]["reason"]
    assert all(r["clusters"] is None for r in doc["comparisons"])


def test_a_policy_can_switch_clustering_off_or_cluster_by_type(tmp_path):
    off = _compared(tmp_path / "off", {1: "a", 2: "a"}, POLICY.replace('name = "g"', 'name = "g"\ncluster_by = "none"'))
    assert off["doc"]["clusters"] is None
    by_type = _compared(tmp_path / "type", {}, POLICY.replace('name = "g"', 'name = "g"\ncluster_by = "type"'))
    assert by_type["doc"]["clusters"] == 4 and by_type["doc"]["cluster_by"] == "type"


# --- calibration by simulation -------------------------------------------------------------------


def correlated_null(rng: np.random.Generator, clusters: int, size: int, icc: float) -> tuple[np.ndarray, np.ndarray]:
    """Paired differences under a true null in correlated clusters: a cluster effect shared by its
    questions (variance icc) plus each question's own (variance 1 - icc), both symmetric about 0."""
    codes = np.repeat(np.arange(clusters), size)
    d = rng.normal(0, math.sqrt(icc), clusters)[codes] + rng.normal(0, math.sqrt(1 - icc), clusters * size)
    return d, codes


def test_clustered_tests_hold_their_level_where_unclustered_ones_do_not():
    """400 null samples of 20 clusters x 6 questions (intra-cluster correlation 0.5): the one-sided tests at
    0.05. Monte Carlo se at 0.05: 0.011."""
    rng = np.random.default_rng(0)
    trials, hits = 400, {"t": 0, "flip": 0, "t_clustered": 0, "flip_clustered": 0}
    for _ in range(trials):
        d, codes = correlated_null(rng, 20, 6, 0.5)
        hits["t"] += stats.ttest_p(d, alternative="less") < 0.05
        hits["flip"] += stats.sign_flip_p(d, alternative="less", resamples=999) < 0.05
        hits["t_clustered"] += C.ttest_p(d, codes, alternative="less") < 0.05
        hits["flip_clustered"] += C.sign_flip_p(d, codes, alternative="less", resamples=999) < 0.05
    rate = {k: v / trials for k, v in hits.items()}
    assert rate["t_clustered"] <= 0.05 + 3 * 0.011 and rate["flip_clustered"] <= 0.05 + 3 * 0.011
    assert rate["t"] >= 0.15 and rate["flip"] >= 0.15


def test_plan_without_a_candidate_is_clustered_as_its_gate_would_be(demo_db, capsys):
    """No candidate: sqrt(2) x the cluster-robust se of the baseline's mean (CR2, by hand here), its df;
    the demo's 31 outdated questions in 20 clusters. `--cluster-by none` plans them unclustered."""
    from scoring.cli import main

    args = ["plan", "--db", str(demo_db), "--baseline", "prod-baseline", "--metric", "coverage", "--slice",
            "type:outdated", "--margin", "0.02", "--format", "json"]
    assert main(args) == 0
    (row,) = json.loads(capsys.readouterr().out)["gates"]
    with connect_readonly(demo_db) as con:
        found = con.execute("""
            SELECT q.cluster, s.coverage FROM questions q JOIN question_scores s USING (question_id)
            WHERE q.suite = 'demo' AND q.type = 'outdated' AND s.run_id = 'prod-baseline' AND s.coverage IS NOT NULL
            ORDER BY q.position""").fetchall()
    values = np.array([v for _, v in found])
    by_cluster = pd.Series(values).groupby([c for c, _ in found], sort=False)
    n = len(values)
    assert by_cluster.ngroups == 20
    residual = by_cluster.sum() - by_cluster.size() * values.mean()
    se = math.sqrt(2 * float((residual ** 2 / (1 - by_cluster.size() / n)).sum()) / n ** 2)
    codes = pd.factorize(pd.Series([c for c, _ in found]))[0]
    df = C.robust_df(values, codes)
    assert (row["n"], row["clusters"], row["spread"]) == (31, 20, "assumed")
    assert row["mde"] == pytest.approx(C.mde(se, 20, 0.05, 0.8, df))
    assert row["power_at_margin"] == pytest.approx(C.power_at(0.02, se, 20, 0.05, df))
    assert row["questions_needed"] == C.questions_needed(se, 31, 20, 0.02, 0.05, 0.8, test="randomization")
    assert main([*args, "--cluster-by", "none"]) == 0
    (plain,) = json.loads(capsys.readouterr().out)["gates"]
    assert plain["clusters"] is None and plain["n"] == 31
    assert plain["mde"] == pytest.approx(detect.mde(math.sqrt(2) * float(np.std(values, ddof=1)), 31, 0.05, 0.8))
    assert main([*args[:-2], "--format", "text"]) == 0
    assert "questions now: 31; clustered: 20 clusters" in capsys.readouterr().out
    assert main([*args, "--cluster-by", "tags"]) == 2
    assert "--cluster-by" in capsys.readouterr().err


def test_plan_with_a_candidate_clusters_as_the_policy_says(demo_db, tmp_path, capsys):
    """With a candidate the plan is the gate's own figures, under the policy's cluster_by."""
    policy = tmp_path / "p.toml"
    policy.write_text('name = "p"\ncluster_by = "type"\n[[gates]]\nname = "outdated"\nmetric = "coverage"\n'
                      'slice = "type:outdated"\nmax_drop = 0.02\n')
    assert main_plan(demo_db, policy, capsys)["clusters"] == 1   # one type: one cluster
    policy.write_text(policy.read_text().replace('cluster_by = "type"', 'cluster_by = "cluster"'))
    assert main_plan(demo_db, policy, capsys)["clusters"] == 20


def main_plan(db: Path, policy: Path, capsys) -> dict:
    from scoring.cli import main

    assert main(["plan", "--db", str(db), "--baseline", "prod-baseline", "--candidate", "hybrid-v1", "--policy",
                 str(policy), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["gates"]
    return row

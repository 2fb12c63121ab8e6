"""The fast paths of the statistics give the figures of the reference paths.

- `scoring.decide.comparison.compare` on inputs read without detail (the dashboard's statistics for two single
  runs: slice columns and per-question scores only) against `compare` on every record: the same
  table to the last bit, on the bundled demo, the small test workspaces and synthetic suites where
  slices fall on both sides of `stats.LARGE_SAMPLE`, with and without the summary tables;
- `scoring.decide.comparison.read_side_scores` against `side_values` over `read_scores`, held-out questions
  left out and groups of repeats included;
- `dashboard.data.statistics` / `release_statistics` against `compare`;
- the per-cell tally of `stats.paired_many` (its sparse layout, its rank tables left out, samples
  whose differences are all zero, samples that need only their randomization p) against the same
  samples computed one by one.
"""
from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import streamlit as st

from scoring.decide import comparison as C
from scoring.decide import scores as S
from scoring.metrics import slices
from scoring.decide import stats, stats_batch
from scoring.store.refresh import refresh
from scoring.store.schema import table_names
from fixtures import build, build_large, synth_db
from tiers import some

REPO = Path(__file__).resolve().parents[1]


def _refreshed(root: Path, workspace: Path) -> Path:
    db = root / "scores.duckdb"
    refresh(workspace, db)
    return db


@pytest.fixture(scope="module")
def databases(demo_db, tmp_path_factory) -> dict[str, Path]:
    """name -> database: the bundled demo (runs and a group of repeats), the small test workspace,
    a larger plain one, and two synthetic suites (single runs; groups of repeats)."""
    out = {"demo": demo_db}
    root = tmp_path_factory.mktemp("small")
    out["small"] = _refreshed(root, build(root / "ws"))
    root = tmp_path_factory.mktemp("large")
    out["large"] = _refreshed(root, build_large(root / "ws", questions=1500, runs=3, seed=4))
    out["synth"] = synth_db(tmp_path_factory, 2500, 3, seed=7)
    out["repeats"] = synth_db(tmp_path_factory, 600, 2, seed=2, repeats=3)
    return out


def _single_run_pairs(db: Path, limit: int = 6) -> list[tuple[str, str]]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT suite, run_id FROM runs ORDER BY suite, run_id").fetchall()
    pairs = [(f"run:{a}", f"run:{b}") for (sa, a), (sb, b) in itertools.permutations(rows, 2) if sa == sb]
    return pairs[:limit]


def _lean(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, **kw) -> C.Comparison:
    """`compare` on inputs read without detail."""
    inputs = C.read_inputs(con, baseline, candidate, detail=False,
                           **({"include_heldout": kw["include_heldout"]} if "include_heldout" in kw else {}))
    return C.compare(inputs, baseline, candidate, **kw)


def _assert_same_table(fast: pd.DataFrame, reference: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(fast.reset_index(drop=True), reference.reset_index(drop=True), check_exact=True)


# -- without detail against with detail ---------------------------------------------------------------------


@pytest.mark.sampled
@pytest.mark.parametrize("name", ["demo", "small", "large", "synth", "repeats"])
def test_without_detail_the_table_is_the_same_to_the_last_bit(databases, name):
    db = databases[name]
    pairs = _single_run_pairs(db, limit=2 if name in ("large", "synth") else 6)
    assert pairs
    with duckdb.connect(str(db), read_only=True) as con:
        for (baseline, candidate), heldout in some(list(itertools.product(pairs, (True, False))), 2, seed=6):
            full = C.compare(con, baseline, candidate, seed=3, include_heldout=heldout)
            fast = _lean(con, baseline, candidate, seed=3, include_heldout=heldout)
            _assert_same_table(fast.table, full.table)
            pd.testing.assert_frame_equal(fast.flaky, full.flaky)
            assert fast.warnings == full.warnings
            assert len(fast.questions) == len(full.questions)
            assert fast.settings == full.settings
            assert fast.heldout == full.heldout


def test_without_detail_the_same_where_slices_cross_the_large_sample_threshold(databases, monkeypatch):
    """With the threshold lowered, the synthetic suite's big slices take the normal methods from
    per-cell tallies while its small ones are resampled question by question: both paths agree."""
    monkeypatch.setattr(stats, "LARGE_SAMPLE", 150)
    db = databases["synth"]
    methods = set()
    with duckdb.connect(str(db), read_only=True) as con:
        for baseline, candidate in _single_run_pairs(db, limit=3):
            full = C.compare(con, baseline, candidate)
            fast = _lean(con, baseline, candidate)
            _assert_same_table(fast.table, full.table)
            methods |= set(full.table["method"].dropna())
            nonzero = full.table["improved"] + full.table["regressed"]
            assert (full.table.loc[nonzero > 150, "method"] == "normal").all()
            assert (full.table.loc[(nonzero <= 150) & (full.table["n"] >= 2), "method"] == "resampling").all()
    assert methods == {"normal", "resampling"}


def test_without_detail_the_same_without_the_summary_tables(databases, tmp_path):
    from scoring.store.summaries import SUMMARY_TABLES

    db = tmp_path / "plain.duckdb"
    shutil.copyfile(databases["synth"], db)
    with duckdb.connect(str(db)) as con:
        for table in SUMMARY_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {table}")  # names from a fixed tuple
    with duckdb.connect(str(databases["synth"]), read_only=True) as con:
        with_summaries = _lean(con, "sys-000", "sys-001")
    with duckdb.connect(str(db), read_only=True) as con:
        assert "scores_by_position" not in table_names(con)
        _assert_same_table(_lean(con, "sys-000", "sys-001").table, C.compare(con, "sys-000", "sys-001").table)
        _assert_same_table(_lean(con, "sys-000", "sys-001").table, with_summaries.table)


def test_without_detail_what_compare_refuses_and_what_it_cannot_give(databases):
    from scoring.errors import ValidationError
    from scoring.decide.policy import parse_policy

    with duckdb.connect(str(databases["repeats"]), read_only=True) as con:
        groups = [g for (g,) in con.execute("SELECT DISTINCT run_group FROM runs ORDER BY 1").fetchall()]
        with pytest.raises(ValidationError, match="share runs"):
            C.read_inputs(con, "sys-000.r1", "sys-000.r1", detail=False)
        with pytest.raises(ValidationError, match="no run or group"):
            C.read_inputs(con, "nope", "sys-000.r1", detail=False)
        with pytest.raises(ValueError, match="group of repeats"):  # its flaky questions need every record
            C.read_inputs(con, f"group:{groups[0]}", f"group:{groups[1]}", detail=False)
        inputs = C.read_inputs(con, "sys-000.r1", "sys-001.r1", detail=False)
    policy = parse_policy('name = "p"\n[[gates]]\nmetric = "recall"\nmin = 0.1\n')
    with pytest.raises(ValueError, match="every record"):
        C.compare(inputs, "sys-000.r1", "sys-001.r1", policy=policy)
    lean = C.compare(inputs, "sys-000.r1", "sys-001.r1")
    for view in (lambda: lean.deltas, lean.regressions, lean.to_dict):
        with pytest.raises(ValueError, match="IDs"):
            view()


def test_rows_leave_out_only_the_interval_and_the_two_other_tests(databases, monkeypatch):
    monkeypatch.setattr(stats, "LARGE_SAMPLE", 150)
    wanted = [("recall", "all"), ("support", "all"), ("abstention_correct", "all"), ("precision", "type:lookup")]
    with duckdb.connect(str(databases["synth"]), read_only=True) as con:
        full = C.compare(con, "sys-000", "sys-002").table
        part = _lean(con, "sys-000", "sys-002", tested=wanted).table
        _assert_same_table(C.compare(con, "sys-000", "sys-002", tested=wanted).table, part)
    chosen = [(m, s) in set(wanted) for m, s in zip(full["metric"], full["slice"])]
    assert sum(chosen) == len(wanted)
    skipped = ["ci_low", "ci_high", "p_ttest", "p_wilcoxon"]
    kept = [c for c in full.columns if c not in skipped]
    _assert_same_table(part[kept], full[kept])  # p_holm included: the adjustment spans every row
    _assert_same_table(part[chosen], full[chosen])
    others = part[[not c for c in chosen]]
    assert others[skipped].isna().all().all() and others["p_randomization"].notna().all()


# -- the per-question scores --------------------------------------------------------------------


@pytest.mark.parametrize("sides", [(("sys-000.r1",), ("sys-001.r2",)), (("sys-000.r1", "sys-000.r2", "sys-000.r3"),
                                                                          ("sys-001.r1", "sys-001.r3")),
                                   (("sys-000.r1",), ("sys-000.r1",))])
@pytest.mark.parametrize("heldout", [True, False])
def test_side_scores_are_the_collapsed_score_rows(databases, sides, heldout):
    baseline, candidate = sides
    with duckdb.connect(str(databases["repeats"]), read_only=True) as con:
        questions, rows = S.read_scores(con, "synth", baseline, candidate, include_heldout=heldout)
        positions = questions["position"].to_numpy()
        read = S.read_side_scores(con, "synth", baseline, candidate, positions)
    assert 0 < len(positions) and (heldout or len(positions) < 600)
    converted = S.side_scores(rows, baseline, candidate, positions)
    for side in (0, 1):
        expected = S.side_values(rows, side, questions.index)
        for name in S.SCORE_COLUMNS:
            np.testing.assert_array_equal(read.columns[side][name], expected[name].to_numpy(), strict=True)
            np.testing.assert_array_equal(converted.columns[side][name], expected[name].to_numpy(), strict=True)
        own = rows.side == side
        for got in (read, converted):
            np.testing.assert_array_equal(got.present[side], np.isin(np.arange(len(positions)), rows.slot[own]))
            for code, flags in ((1, got.missing[side]), (2, got.failed[side])):
                np.testing.assert_array_equal(flags, np.isin(np.arange(len(positions)),
                                                             rows.slot[own & (rows.status == code)]))


def test_slice_columns_give_the_slices_of_the_questions(databases):
    with duckdb.connect(str(databases["demo"]), read_only=True) as con:
        for (suite,) in con.execute("SELECT suite FROM suites").fetchall():
            full = S.read_questions(con, suite)
            lean = S.read_slice_columns(con, suite)
            assert slices.default_slices(lean) == slices.default_slices(full)
            for s in slices.default_slices(full):
                np.testing.assert_array_equal(slices.mask(lean, s), slices.mask(full, s), err_msg=str(s))
            np.testing.assert_array_equal(lean["position"].to_numpy(), full["position"].to_numpy())


# -- the dashboard's statistics -------------------------------------------------------------------


@pytest.mark.sampled
@pytest.mark.parametrize("name", ["demo", "synth"])
def test_dashboard_statistics_are_compares(databases, monkeypatch, name):
    from dashboard import data

    monkeypatch.setenv("RAGSLICE_DB", str(databases[name]))
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    checked = 0
    with duckdb.connect(str(databases[name]), read_only=True) as con:
        for suite in data.suites()["suite"]:
            runs = [s for s in data.sides(suite) if s.kind == "run"]
            for base, cand in some(list(itertools.permutations(runs, 2))[:4], 2, seed=7):
                full = C.compare(con, base.spec, cand.spec)
                shown = data.statistics(base, cand)
                _assert_same_table(shown.table, full.table)
                assert shown.warnings == tuple(full.warnings) and shown.n_questions == len(full.questions)
                assert shown.flaky.empty and list(shown.flaky.columns) == list(full.flaky.columns)
                release = data.release_statistics(base, cand, ("recall", "support"))
                overall = full.table["slice"] == "all"
                for key in ("recall", "support"):
                    row = overall & (full.table["metric"] == key)
                    _assert_same_table(release.table[row], full.table[row])
                _assert_same_table(release.table[["p_randomization", "p_holm", "n", "delta"]],
                                   full.table[["p_randomization", "p_holm", "n", "delta"]])
                checked += 1
    assert checked


# -- the per-cell tally of paired_many --------------------------------------------------------------


def _figures(r: stats.Paired) -> tuple:
    return (r.n, r.baseline, r.candidate, r.delta, r.ci_low, r.ci_high, r.p_ttest, r.p_wilcoxon, r.p_randomization,
            r.improved, r.regressed, r.unchanged, r.warnings, r.method)


def _close(a: stats.Paired, b: stats.Paired) -> None:
    for x, y in zip(_figures(a), _figures(b)):
        if isinstance(x, float) or isinstance(y, float):
            assert x == pytest.approx(y, rel=1e-12, abs=1e-15), (a, b)
        else:
            assert x == y, (a, b)


def _batch():
    """Three variables over 4,000 questions in overlapping masks: a discrete one, a near-continuous
    one (many distinct differences) and one whose differences are all zero on some masks."""
    rng = np.random.default_rng(11)
    q = 4000
    kind = rng.integers(0, 4, q)
    masks = [kind == 0, kind == 1, kind >= 2, rng.random(q) < 0.4, None]
    base = [rng.choice([0.0, 0.25, 0.5, 1.0], q), rng.uniform(0, 1, q), rng.choice([0.0, 1.0], q)]
    cand = [np.where(rng.random(q) < 0.5, base[0], rng.choice([0.0, 0.25, 0.5, 1.0], q)), rng.uniform(0, 1, q),
            np.where(kind == 3, 1.0 - base[2], base[2])]  # variable 2 changes on kind 3 only
    base[0][rng.random(q) < 0.1] = np.nan
    cand[1][rng.random(q) < 0.1] = np.nan
    samples = [(j, mask) for j in range(3) for mask in masks]
    return base, cand, samples, [True, False, True]


def test_tally_layouts_and_rank_tables_agree(monkeypatch):
    """The dense cells x values tally, the sparse one (many distinct differences) and the sample's
    own rank counts (rank tables too large) give the same results, which are each sample's alone."""
    base, cand, samples, directions = _batch()
    default = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=5, large_sample=100)
    monkeypatch.setattr(stats_batch, "MAX_CELL_GROUPS", 10)  # every tally sparse, no rank table
    sparse = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=5, large_sample=100)
    methods = set()
    for (j, mask), a, b in zip(samples, default, sparse):
        _close(a, b)
        keep = np.ones(len(base[j]), dtype=bool) if mask is None else mask
        _close(a, stats.paired(base[j][keep], cand[j][keep], higher_is_better=directions[j], seed=5,
                               large_sample=100))
        methods.add(a.method)
    assert methods == {"normal", "resampling"}


def test_unchanged_samples_from_the_tally_equal_the_question_by_question_path():
    base, cand, samples, directions = _batch()
    many = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=1, large_sample=100)
    unchanged = [(s, r) for s, r in zip(samples, many) if s[0] == 2 and r.n >= 2 and r.improved + r.regressed == 0]
    assert len(unchanged) == 2  # kinds 0 and 1 (masks 0 and 1) never change on variable 2
    for (j, mask), got in unchanged:
        _close(got, stats.paired(base[j][mask], cand[j][mask], seed=1, large_sample=100))
        assert (got.ci_low, got.ci_high, got.p_wilcoxon, got.p_randomization) == (got.delta, got.delta, 1.0, 1.0)


def test_incomplete_samples_keep_every_figure_but_three():
    base, cand, samples, directions = _batch()
    full = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=9, large_sample=100)
    complete = [i % 3 == 0 for i in range(len(samples))]
    part = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=9, large_sample=100,
                             complete=complete)
    for whole, some, wanted in zip(full, part, complete):
        if wanted:
            assert _figures(some) == _figures(whole)
        else:
            assert (some.ci_low, some.ci_high, some.p_ttest, some.p_wilcoxon) == (None, None, None, None)
            assert _figures(some)[:4] + _figures(some)[8:] == _figures(whole)[:4] + _figures(whole)[8:]
    with pytest.raises(ValueError, match="one flag per sample"):
        stats_batch.paired_many(base, cand, samples, complete=[True])


def test_threads_do_not_change_a_figure(monkeypatch):
    base, cand, samples, directions = _batch()
    monkeypatch.setattr(stats_batch, "WORKERS", 1)
    alone = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=2, large_sample=100)
    monkeypatch.setattr(stats_batch, "WORKERS", 4)
    pooled = stats_batch.paired_many(base, cand, samples, higher_is_better=directions, seed=2, large_sample=100)
    assert [_figures(r) for r in alone] == [_figures(r) for r in pooled]


def test_samples_without_a_paired_question_equal_the_question_by_question_path():
    """A mask that holds no paired question of a tallied variable (here: only questions n/a on one
    side), and a variable without any pair at all, give the n = 0 result of `paired`: no means, no
    test, the small-sample warnings."""
    base, cand, samples, directions = _batch()
    unpaired = np.isnan(base[0]) | np.isnan(cand[0])  # 10% of 4,000: variable 0 is tallied (above 100 pairs)
    assert 0 < unpaired.sum() < len(unpaired) - 100
    nothing = np.full(len(base[0]), np.nan)
    base, cand = [*base, nothing], [*cand, cand[0].copy()]
    batch = [(0, unpaired), (3, None), (3, unpaired), *samples]
    many = stats_batch.paired_many(base, cand, batch, higher_is_better=[*directions, True], seed=4, large_sample=100)
    for (j, mask), got in zip(batch[:3], many[:3]):
        keep = np.ones(len(base[j]), dtype=bool) if mask is None else mask
        alone = stats.paired(base[j][keep], cand[j][keep], seed=4, large_sample=100)
        assert _figures(got) == _figures(alone)
        assert (got.n, got.baseline, got.delta, got.p_randomization, got.method) == (0, None, None, None, None)
        assert got.warnings  # a sample of 0 pairs says so
    for (j, mask), got in zip(batch[3:], many[3:]):  # the other samples are untouched by the empty ones
        keep = np.ones(len(base[j]), dtype=bool) if mask is None else mask
        _close(got, stats.paired(base[j][keep], cand[j][keep], higher_is_better=directions[j], seed=4,
                                 large_sample=100))


def test_the_table_holds_a_row_exactly_for_each_metric_and_slice_with_a_pair(databases):
    """Rows of `compare`'s table: one per metric x slice whose paired questions (both sides scored)
    number at least one, with that n; counted here from the per-question values and slice masks."""
    from scoring.metrics import REGISTRY

    db = databases["demo"]
    with duckdb.connect(str(db), read_only=True) as con:
        for baseline, candidate in _single_run_pairs(db, limit=3):
            result = C.compare(con, baseline, candidate, seed=1)
            expected = {}
            for s in slices.default_slices(result.questions):
                mask = slices.mask(result.questions, s)
                for m in REGISTRY:
                    b = result.values["baseline"][m.key].to_numpy(dtype=float)
                    c = result.values["candidate"][m.key].to_numpy(dtype=float)
                    n = int((mask & ~np.isnan(b) & ~np.isnan(c)).sum())
                    if n:
                        expected[m.key, str(s)] = n
            got = {(r.metric, r.slice): int(r.n) for r in result.table.itertuples()}
            assert got == expected
            assert len(got) < len(REGISTRY) * len(slices.default_slices(result.questions))  # some have no pair

"""Paired comparison over databases written by `ragslice refresh`: seed figures, repeats, gates, logs, CLI."""
from __future__ import annotations

import hashlib
import json
import re
import math
import shutil
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from scoring.decide import comparison as C
from scoring.decide import scores as S
from scoring.decide import sides, verdicts
from scoring.metrics import slices
from scoring.decide import stats
from scoring.cli import main
from scoring.errors import ValidationError
from scoring.decide.policy import parse_policy
from scoring.store.refresh import refresh
from fixtures import SEED_LAB, abstain, comparison, hit, miss, question, write_policy, write_workspace_files


# --- workspaces written for these tests -----------------------------------------------------------


def build(tmp_path: Path, questions, runs, **kw) -> Path:
    ws = write_workspace_files(tmp_path / "ws", questions, runs, **kw)
    db = tmp_path / "scores.duckdb"
    refresh(ws, db)
    return db


def row(c: C.Comparison, metric: str, slice_: str) -> dict[str, Any]:
    found = c.table[(c.table["metric"] == metric) & (c.table["slice"] == slice_)]
    assert len(found) == 1, (metric, slice_)
    return found.iloc[0].to_dict()


# --- the seed's fixture ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("seed") / "seed.duckdb"
    refresh(SEED_LAB, db)
    return db


@pytest.fixture()
def seed_copy(seed_db, tmp_path) -> Path:
    """A private copy for tests that write verdicts."""
    target = tmp_path / "seed.duckdb"
    shutil.copyfile(seed_db, target)
    return target


def test_seed_means_match_the_seed(seed_db):
    c = comparison(seed_db, "A", "B")
    recall = row(c, "recall", "answerable")
    # (1 + 0.5 + 1) / 3 -> 1.00 on the three answerable questions
    assert (recall["n"], recall["baseline"], recall["candidate"]) == (3, pytest.approx(2.5 / 3), 1.0)
    support = row(c, "support", "answerable")
    # (1 + 1 + 0) / 3 -> (0.5 + 1 + 1) / 3; pooled 2 of 3 claims -> 4 of 5
    assert support["baseline"] == pytest.approx(2 / 3) and support["candidate"] == pytest.approx(2.5 / 3)
    assert support["baseline_pooled"] == pytest.approx(2 / 3) and support["candidate_pooled"] == pytest.approx(0.8)
    assert (support["improved"], support["regressed"], support["unchanged"]) == (1, 1, 1)
    # support on all questions: region B made no claim (n/a), so the pair is left out, also when pooling
    every = row(c, "support", "all")
    assert every["n"] == 3 and every["baseline_pooled"] == pytest.approx(2 / 3)
    abst = row(c, "abstention_correct", "unanswerable")
    assert (abst["n"], abst["baseline"], abst["candidate"], abst["improved"]) == (1, 0.0, 1.0, 1)
    # retrieval metrics are n/a on the unanswerable question: no row for that slice
    assert not ((c.table["metric"] == "recall") & (c.table["slice"] == "unanswerable")).any()
    assert set(c.table["slice"]) == {"all", "answerable", "unanswerable", "type:lookup", "type:multi-evidence",
                                     "type:unanswerable", "split:dev"}


def test_seed_launch_is_the_one_regression(seed_db):
    c = comparison(seed_db, "A", "B")
    regs = c.regressions()
    # the seed lab grades no support partial: GradedSupport is Support there, and regresses with it
    assert list(zip(regs["question_id"], regs["metric"])) == [("launch", "support"), ("launch", "support_graded")]
    assert (regs.iloc[0]["baseline"], regs.iloc[0]["candidate"]) == (1.0, 0.5)
    support = c.deltas[(c.deltas["metric"] == "support")].set_index("question_id")
    assert support.loc["region", "change"] == "n/a"


def test_seed_statistics_by_hand(seed_db):
    c = comparison(seed_db, "A", "B")
    cov = row(c, "coverage", "answerable")
    # per-question coverage A: launch 1, rollback 0.5, owner 0; B: 1, 1, 1 -> d = 0, 0.5, 1
    d = np.array([0.0, 0.5, 1.0])
    t = d.mean() / (d.std(ddof=1) / math.sqrt(3))  # sqrt 3
    assert cov["p_ttest"] == pytest.approx(1 - t / math.sqrt(2 + t * t))  # two-sided t with 2 df
    assert cov["p_ttest"] == pytest.approx(sp.ttest_rel([1, 1, 1], [1, 0.5, 0]).pvalue)
    # Wilcoxon and sign flips drop the zero: 0.5 and 1 both positive -> 2 of 4 patterns as extreme
    assert cov["p_wilcoxon"] == pytest.approx(0.5)
    assert cov["p_randomization"] == pytest.approx(0.5)
    # bootstrap means of 3 draws from {0, 0.5, 1}: all-0 and all-1 each have probability 1/27 > 2.5%
    assert (cov["ci_low"], cov["ci_high"]) == (0.0, 1.0)
    assert cov["delta"] == pytest.approx(0.5)
    assert "cannot go below p = 0.5" in " ".join(cov["warnings"])


def test_holm_spans_the_whole_family(seed_db):
    c = comparison(seed_db, "A", "B")
    p = c.table["p_randomization"]
    m = int(p.notna().sum())
    smallest = c.table.loc[p.idxmin()]
    assert smallest["p_holm"] == pytest.approx(min(1.0, m * smallest["p_randomization"]))
    assert all(h is None for h, r in zip(c.table["p_holm"], p) if r is None or r != r)


def test_seed_text_output(seed_copy, capsys):
    assert main(["compare", "A", "B", "--db", str(seed_copy)]) == 0
    out = capsys.readouterr().out
    assert "VERDICT: NONE (no policy given: no gate was checked, so there is no verdict)" in out
    assert "PASS" not in out
    assert "launch [lookup, dev]: Support 1.000 -> 0.500" in out
    assert "only 4 questions" in out


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_without_a_policy_there_is_no_verdict_and_no_pass_mark(seed_copy, fmt, capsys):
    """Exit 0, JSON "verdict": "none", and no pass wording or mark in any format, although nothing failed."""
    assert main(["compare", "A", "B", "--db", str(seed_copy), "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        doc = json.loads(out)
        assert doc["verdict"] == "none" and doc["gates"] == [] and doc["policy"] is None
        assert any("no policy given" in w for w in doc["warnings"])
    else:
        assert "✅" not in out and not re.search(r"\bpass\b", out, re.IGNORECASE)
        assert "there is no verdict" in out


def test_json_has_the_documented_keys(seed_copy, tmp_path, capsys):
    pol = write_policy(tmp_path / "p.toml", '[[gates]]\nname = "cov"\nmetric = "coverage"\nslice = "answerable"\n'
                                            'min = 0.9\n')
    assert main(["compare", "A", "B", "--db", str(seed_copy), "--policy", str(pol), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert doc["verdict"] == "pass"
    assert {"name", "passed", "observed", "reason"} <= set(doc["gates"][0])
    assert doc["gates"][0]["observed"] == 1.0
    keys = {"metric", "slice", "n", "baseline", "candidate", "delta", "ci_low", "ci_high", "p_ttest", "p_wilcoxon",
            "p_randomization", "p_holm", "improved", "regressed"}
    assert all(keys <= set(c) for c in doc["comparisons"])
    first = next(c for c in doc["comparisons"] if c["metric"] == "coverage" and c["slice"] == "answerable")
    assert first["p_randomization"] == pytest.approx(0.5)
    assert doc["settings"]["bootstrap_resamples"] == 10_000 and doc["settings"]["seed"] == 0


def test_markdown_output(seed_copy, capsys):
    assert main(["compare", "A", "B", "--db", str(seed_copy), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## ➖ ragslice: NONE (no policy given")  # no policy: no verdict, no pass mark
    assert "| Support | 3 | 0.667 | 0.833 | +0.167 | [-0.500, +1.000] |" in out
    assert "<details><summary>Every metric x slice</summary>" in out


# --- exit codes --------------------------------------------------------------------------------------


def test_exit_codes(seed_copy, tmp_path, capsys):
    passing = write_policy(tmp_path / "pass.toml", '[[gates]]\nmetric = "recall"\nslice = "answerable"\nmin = 0.9\n')
    failing = write_policy(tmp_path / "fail.toml", '[[gates]]\nmetric = "support"\nslice = "answerable"\n'
                                                   'max_regressions = 0\n')
    broken = write_policy(tmp_path / "broken.toml", '[[gates]]\nmetric = "recall"\nslice = "answerable"\n')
    db = str(seed_copy)
    assert main(["compare", "A", "B", "--db", db, "--policy", str(passing)]) == 0
    assert main(["compare", "A", "B", "--db", db, "--policy", str(failing)]) == 1
    capsys.readouterr()
    assert main(["compare", "A", "B", "--db", db, "--policy", str(broken)]) == 2
    assert f"{broken}:2: gate 1: a gate needs a threshold" in capsys.readouterr().err
    assert main(["compare", "A", "nope", "--db", db]) == 2
    assert "no run or group of that name" in capsys.readouterr().err
    assert main(["compare", "A", "B", "--db", str(tmp_path / "absent.duckdb")]) == 2
    assert main(["compare", "A", "B", "--db", db, "--policy", str(tmp_path / "absent.toml")]) == 2


def test_a_gate_over_an_empty_slice_fails(seed_copy, tmp_path, capsys):
    pol = write_policy(tmp_path / "p.toml", '[[gates]]\nname = "critical coverage"\nmetric = "coverage"\n'
                                            'slice = "critical"\nmin = 0.9\n')
    assert main(["compare", "A", "B", "--db", str(seed_copy), "--policy", str(pol), "--format", "json"]) == 1
    gate = json.loads(capsys.readouterr().out)["gates"][0]
    assert gate["passed"] is False and gate["observed"] is None
    assert "slice critical has no question" in gate["reason"]


def test_verdicts_are_stored_with_policy_text_and_hash(seed_copy, tmp_path, capsys):
    pol = write_policy(tmp_path / "p.toml", '[[gates]]\nmetric = "support"\nslice = "answerable"\n'
                                            'max_regressions = 0\n')
    assert main(["compare", "A", "B", "--db", str(seed_copy), "--policy", str(pol)]) == 1
    with duckdb.connect(str(seed_copy), read_only=True) as con:
        rows = con.execute("SELECT baseline, candidate, suite, suite_version, policy_name, policy_hash, policy_text, "
                           "verdict, gates FROM verdicts").fetchall()
        logged = con.execute("SELECT count(*) FROM heldout_log").fetchone()[0]
    assert len(rows) == 1
    b, c, suite, version, name, digest, text, verdict, gates = rows[0]
    assert (b, c, suite, version, name, verdict) == ("A", "B", "seed-lab", "1", "rg", "fail")
    assert digest == hashlib.sha256(pol.read_bytes()).hexdigest() and text == pol.read_text()
    assert json.loads(gates)[0]["passed"] is False
    assert logged == 0  # the seed has no held-out question
    # an edited policy of the same name is flagged on the next verdict for this pair
    pol.write_text(pol.read_text().replace("max_regressions = 0", "max_regressions = 1"))
    capsys.readouterr()
    assert main(["compare", "A", "B", "--db", str(seed_copy), "--policy", str(pol), "--format", "json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any("judged A vs B before with different text" in w for w in warnings)


# --- side resolution and refusals ---------------------------------------------------------------------


def test_different_suites_are_refused(tmp_path):
    ws = write_workspace_files(tmp_path / "ws", [question(1)], {"a": {"records": [hit(1)]}}, suite="s1")
    write_workspace_files(ws, [question(1)], {"b": {"records": [hit(1)], "suite": "s2"}}, suite="s2")
    db = tmp_path / "x.duckdb"
    refresh(ws, db)
    with pytest.raises(ValidationError, match="on suite 's1' and candidate 'b' on 's2'"):
        comparison(db, "a", "b")


def _side(**kw) -> sides.Side:
    base = dict(name="x", kind="run", run_ids=("x",), suite="s", suite_version="1", corpus_version="c1", k=(2,))
    return sides.Side(**{**base, **kw})


def test_different_versions_are_refused():
    with pytest.raises(ValidationError, match="suite version '1' and candidate 'y' on '2'"):
        sides.check_comparable(_side(), _side(name="y", run_ids=("y",), suite_version="2"))
    with pytest.raises(ValidationError, match="corpus version"):
        sides.check_comparable(_side(), _side(name="y", run_ids=("y",), corpus_version="c2"))
    with pytest.raises(ValidationError, match="share runs"):
        sides.check_comparable(_side(), _side(name="y"))


QUESTIONS5 = [question(i) for i in range(1, 6)]


@pytest.fixture(scope="module")
def repeats_db(tmp_path_factory) -> Path:
    """Baseline run `base`; candidate group `cand` of 3 repeats.

    q1 hit in every repeat; q2 hit, miss, hit; q3 fails in repeat 2; q4 abstains in repeat 3; q5 miss always.
    `cand-1` is also the name of a group holding `solo` (an ambiguous name).
    """
    root = tmp_path_factory.mktemp("repeats")
    runs = {
        "base": {"records": [hit(1), hit(2), hit(3), hit(4), hit(5)]},
        "cand-1": {"group": "cand", "repeat": 1, "records": [hit(1), hit(2), hit(3), hit(4), miss(5)]},
        "cand-2": {"group": "cand", "repeat": 2,
                   "records": [hit(1), miss(2), hit(3, error="timeout"), hit(4), miss(5)]},
        "cand-3": {"group": "cand", "repeat": 3, "records": [hit(1), hit(2), hit(3), abstain(4), miss(5)]},
        "solo": {"group": "cand-1", "records": [hit(1), hit(2), hit(3), hit(4), hit(5)]},
    }
    ws = write_workspace_files(root / "ws", QUESTIONS5, runs)
    db = root / "r.duckdb"
    refresh(ws, db)
    return db


def test_repeats_average_per_question_and_count_questions(repeats_db):
    c = comparison(repeats_db, "base", "cand")
    assert c.candidate.kind == "group" and c.candidate.run_ids == ("cand-1", "cand-2", "cand-3")
    cov = c.values["candidate"]["coverage"]
    # q2: (1 + 0 + 1) / 3; q3: the failed repeat scores 0 -> 2/3; q4: abstaining on answerable -> coverage 0
    assert list(cov.round(6)) == [1.0, round(2 / 3, 6), round(2 / 3, 6), round(2 / 3, 6), 0.0]
    r = row(c, "coverage", "all")
    assert r["n"] == 5  # questions, not 15 repeats
    assert r["candidate"] == pytest.approx((1 + 2 / 3 + 2 / 3 + 2 / 3 + 0) / 5)
    # support on q4: n/a in the abstaining repeat, so the mean is over the two repeats that scored it
    assert c.values["candidate"].loc["q4", "support"] == 1.0


def test_repeats_keep_spread_and_list_flaky_questions(repeats_db):
    c = comparison(repeats_db, "base", "cand")
    spread = c.spread.set_index(["question_id", "metric"])
    assert spread.loc[("q2", "coverage"), "sd"] == pytest.approx(np.std([1, 0, 1], ddof=1))
    assert spread.loc[("q1", "coverage"), "sd"] == 0.0
    assert spread.loc[("q4", "support"), "repeats"] == 2
    flaky = {(f.question_id, f.metric): f.values for f in c.flaky.itertuples()}
    assert flaky[("q2", "coverage")] == (1.0, 0.0, 1.0)
    assert flaky[("q3", "status")] == ("ok", "failed", "ok")
    assert flaky[("q4", "support")] == (1.0, 1.0, None)
    assert not any(q in ("q1", "q5") for q, _ in flaky)
    assert set(c.flaky["side"]) == {"candidate"}


def test_names_groups_and_ambiguity(repeats_db):
    with pytest.raises(ValidationError, match="both a run and the group of other runs"):
        comparison(repeats_db, "base", "cand-1")
    assert comparison(repeats_db, "base", "run:cand-1").candidate.run_ids == ("cand-1",)
    assert comparison(repeats_db, "base", "group:cand-1").candidate.run_ids == ("solo",)
    with pytest.raises(ValidationError, match="groups: cand, cand-1"):
        comparison(repeats_db, "base", "cnad")


def test_seeded_figures_reproduce(repeats_db):
    a = comparison(repeats_db, "base", "cand", seed=3)
    b = comparison(repeats_db, "base", "cand", seed=3)
    cols = ["ci_low", "ci_high", "p_randomization", "p_holm"]
    assert a.table[cols].astype(float).equals(b.table[cols].astype(float))


# --- operational gates, disclosures, disputed labels, held-out discipline -----------------------------


@pytest.fixture(scope="module")
def ops_db(tmp_path_factory) -> Path:
    """Five questions; q5 is critical and disputed, q4/q5 are held out, q3 is permission-restricted.

    Candidate latencies 100, 200, 300, 400, 1000 ms; costs 0.01 each; q2 fails; q3 shows a restricted doc.
    """
    root = tmp_path_factory.mktemp("ops")
    questions = [question(1, tags=["billing"]), question(2), question(3, type="permission", caller=["eng"]),
                 question(4, split="heldout"), question(5, split="heldout", critical=True, disputed="unsure")]
    documents = [{"id": f"d{i}", "text": f"Doc {i}."} for i in range(1, 6)] + [
        {"id": "other", "text": "Other."}, {"id": "secret", "text": "Secret.", "access": ["hr"]}]
    lat = [100, 200, 300, 400, 1000]
    base = [hit(i, latency_ms=50.0, cost_usd=0.02) for i in range(1, 6)]
    base[4] = miss(5, latency_ms=50.0, cost_usd=0.02)
    cand = [hit(i, latency_ms=float(lat[i - 1]), cost_usd=0.01) for i in range(1, 6)]
    cand[1] = miss(2, latency_ms=200.0, cost_usd=0.01, error="upstream timeout")
    cand[2] = {**hit(3, latency_ms=300.0, cost_usd=0.01), "retrieved": ["d3", "secret"]}
    ws = write_workspace_files(root / "ws", questions, {"base": {"records": base}, "cand": {"records": cand}},
                         documents=documents)
    db = root / "o.duckdb"
    refresh(ws, db)
    return db


@pytest.fixture()
def ops_copy(ops_db, tmp_path) -> Path:
    target = tmp_path / "o.duckdb"
    shutil.copyfile(ops_db, target)
    return target


def gate_result(db: Path, body: str, **kw):
    pol = parse_policy('name = "g"\n[[gates]]\n' + body)
    c = comparison(db, "base", "cand", policy=pol, **kw)
    return c.verdict.gates[0]


def test_latency_cost_and_failure_gates(ops_db):
    # q2 failed (after 200 ms): what it would have taken is unknown, so it counts up to the budget.
    # Without one: p95 of 100, 300, 400, 1000 and an unbounded q2 interpolates towards it: unbounded.
    r = gate_result(ops_db, 'metric = "latency"\nmax = 900\n')
    assert not r.passed and r.observed == math.inf and r.baseline == pytest.approx(50.0)
    assert r.to_dict()["observed"] is None and r.observed_text == "unbounded" and "1 failed or missing" in r.reason
    # latency_budget_ms = 2000: 100, 300, 400, 1000, 2000; p95 = 1000 + 0.8 x 1000 = 1800
    budget = 'latency_budget_ms = 2000\n[[gates]]\nmetric = "latency"\n'
    r = parse_policy('name = "g"\n' + budget + 'max = 1800\n')
    assert comparison(ops_db, "base", "cand", policy=r).verdict.gates[0].observed == pytest.approx(1800.0)
    assert comparison(ops_db, "base", "cand", policy=r).verdict.passed
    r = parse_policy('name = "g"\n' + budget + 'max = 1799\n')
    assert not comparison(ops_db, "base", "cand", policy=r).verdict.passed
    # p50: the middle of 100, 300, 400, 1000 and the unknown q2 (above them all at its most): 400
    assert gate_result(ops_db, 'metric = "latency"\naggregate = "p50"\nmax = 300\n').observed == 400.0
    cost = gate_result(ops_db, 'metric = "cost"\naggregate = "total"\nmax = 0.04\n')
    assert not cost.passed and cost.observed == math.inf
    assert not gate_result(ops_db, 'metric = "cost"\nmax = 0.01\n').passed  # q2's cost unknown: unbounded
    # cost_budget_usd = 0.01: q2 counts 0.01, as every answered record costs: mean 0.01, total 0.05
    pol = parse_policy('name = "g"\ncost_budget_usd = 0.01\n[[gates]]\nmetric = "cost"\nmax = 0.01\n'
                         '[[gates]]\nname = "total"\nmetric = "cost"\naggregate = "total"\nmax = 0.04\n')
    mean, total = comparison(ops_db, "base", "cand", policy=pol).verdict.gates
    assert mean.passed and mean.observed == pytest.approx(0.01)
    assert not total.passed and total.observed == pytest.approx(0.05)
    fail = gate_result(ops_db, 'metric = "failure_rate"\nmax = 0.1\n')
    assert not fail.passed and fail.observed == pytest.approx(1 / 5)
    assert gate_result(ops_db, 'metric = "failure_rate"\nslice = "tag:billing"\nmax = 0\n').passed


def test_disclosure_gates(ops_db):
    total = gate_result(ops_db, 'metric = "disclosures"\naggregate = "total"\nmax = 0\n')
    assert not total.passed and total.observed == 1.0 and total.baseline == 0.0
    reg = gate_result(ops_db, 'metric = "disclosures"\nslice = "type:permission"\nmax_regressions = 0\n')
    assert not reg.passed and reg.observed == 1


def test_threshold_gate_uses_the_candidates_own_scored_questions(ops_db):
    # coverage on critical: q5 hit in the candidate -> 1.0 (baseline missed it: 0.0)
    r = gate_result(ops_db, 'metric = "coverage"\nslice = "critical"\nmin = 0.9\n')
    assert r.passed and r.observed == 1.0 and r.baseline == 0.0 and r.n == 1
    pooled = gate_result(ops_db, 'metric = "recall"\naggregate = "pooled"\nmin = 0.8\n')
    assert pooled.observed == pytest.approx(4 / 5)  # hits 1+0+1+1+1 over 5 relevant documents


def test_disputed_questions_recompute_the_verdict(ops_db):
    pol = parse_policy('name = "g"\n[[gates]]\nname = "heldout coverage"\nmetric = "coverage"\n'
                       'slice = "split:heldout"\nmin = 1\n[[gates]]\nname = "recall"\nmetric = "recall"\n'
                       'min = 0.5\n')
    c = comparison(ops_db, "base", "cand", policy=pol)
    v = c.verdict
    assert c.n_disputed == 1 and v.verdict == "pass"
    assert v.disputed is not None and v.disputed.verdict == "pass"
    # without q5 the recall mean changes from 4/5 to 3/4; the held-out coverage stays 1
    assert v.disputed.differences == ("gate 'recall': passes either way (observed 0.800 with, 0.750 without)",)
    critical = parse_policy('name = "g"\n[[gates]]\nmetric = "coverage"\nslice = "critical"\nmin = 1\n')
    flip = comparison(ops_db, "base", "cand", policy=critical).verdict
    assert flip.verdict == "pass" and flip.disputed.verdict == "fail"
    assert "slice critical has no question" in flip.disputed.gates[0].reason
    assert any("depends on 1 disputed" in w for w in flip.warnings)


def test_heldout_budget_counts_comparisons_not_invocations(ops_copy, tmp_path, capsys):
    """The same comparison (runs, policy text, labels) printed as JSON, text and markdown is one use of
    the held-out set; another policy text makes another comparison. Every invocation is logged."""
    pol = write_policy(tmp_path / "p.toml", 'heldout_budget = 1\n[[gates]]\nmetric = "recall"\nmin = 0\n')
    args = ["compare", "base", "cand", "--db", str(ops_copy), "--policy", str(pol)]
    assert main([*args, "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert {k: first["heldout"][k] for k in ("n_questions", "uses", "budget", "logged_before")} == \
        {"n_questions": 2, "uses": 1, "budget": 1, "logged_before": False}
    assert not any("heldout_budget" in w for w in first["warnings"])
    for fmt in ("text", "markdown"):
        assert main([*args, "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "held-out use 1 (budget 1)" in out and "more than the policy's heldout_budget" not in out
    assert main([*args, "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["heldout"]["uses"] == 1 and again["heldout"]["logged_before"]
    assert again["heldout"]["comparison_key"] == first["heldout"]["comparison_key"]
    edited = write_policy(tmp_path / "q.toml", 'heldout_budget = 1\n[[gates]]\nmetric = "recall"\nmin = 0.1\n')
    assert main(["compare", "base", "cand", "--db", str(ops_copy), "--policy", str(edited), "--format", "json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["heldout"]["uses"] == 2
    assert any("used in 2 comparisons, more than the policy's heldout_budget of 1" in w for w in second["warnings"])
    # without a policy the use is still logged: a third comparison
    assert main(["compare", "base", "cand", "--db", str(ops_copy), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["heldout"]["uses"] == 3
    with duckdb.connect(str(ops_copy), read_only=True) as con:
        log = con.execute("SELECT suite, suite_version, baseline, candidate, policy_hash, n_heldout "
                          "FROM heldout_log ORDER BY created_at").fetchall()
        keys = con.execute("SELECT count(DISTINCT comparison_key) FROM heldout_log").fetchone()[0]
        verdicts = con.execute("SELECT count(*) FROM verdicts").fetchone()[0]
    digest = hashlib.sha256(pol.read_bytes()).hexdigest()
    other = hashlib.sha256(edited.read_bytes()).hexdigest()
    assert log == [("s", "1", "base", "cand", digest, 2)] * 4 + [("s", "1", "base", "cand", other, 2),
                                                                  ("s", "1", "base", "cand", None, 2)]
    assert keys == 3 and verdicts == 5


def test_heldout_rows_logged_before_comparison_keys_count_one_each(ops_copy):
    """A log written by an older version has no comparison_key: each of its rows is a comparison."""
    with duckdb.connect(str(ops_copy)) as con:
        con.execute("CREATE TABLE heldout_log (created_at TIMESTAMP NOT NULL, suite VARCHAR NOT NULL, "
                    "suite_version VARCHAR NOT NULL, baseline VARCHAR NOT NULL, candidate VARCHAR NOT NULL, "
                    "policy_hash VARCHAR, n_heldout INTEGER NOT NULL)")
        con.execute("INSERT INTO heldout_log VALUES (now(), 's', '1', 'base', 'cand', NULL, 2), "
                    "(now(), 's', '1', 'base', 'cand', NULL, 2)")
    c = comparison(ops_copy, "base", "cand")
    assert c.heldout.uses == 3
    verdicts.record(ops_copy, c)
    assert comparison(ops_copy, "base", "cand").heldout.uses == 3  # logged now, with its key: the same one


def test_dev_only_comparison_leaves_heldout_out(ops_copy):
    c = comparison(ops_copy, "base", "cand", include_heldout=False)
    assert c.heldout is None and list(c.questions.index) == ["q1", "q2", "q3"]
    assert verdicts.record(ops_copy, c) is None
    with duckdb.connect(str(ops_copy), read_only=True) as con:
        tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert "heldout_log" not in tables


def test_record_reports_a_held_database(ops_copy):
    c = comparison(ops_copy, "base", "cand")
    with duckdb.connect(str(ops_copy), read_only=True):
        with pytest.raises(ValidationError, match="held open by another connection"):
            verdicts.record(ops_copy, c, wait_seconds=0.3)


def test_k_difference_is_warned(tmp_path):
    db = build(tmp_path, [question(1), question(2)],
               {"a": {"records": [hit(1), hit(2)]}, "b": {"records": [hit(1), miss(2)], "k": 5}})
    c = comparison(db, "a", "b")
    warning = next(w for w in c.warnings if "k differs (baseline 2, candidate 5)" in w)
    # every metric stored at the run's cutoff is named, RR@k and AP@k included
    assert ("P@k, R@k, RR@k, nDCG@k, AP@k, F1@k, Success@k, Judged@k, P'@k, nDCG'@k, AP'@k and Bpref@k compare "
            "different cutoffs") in warning


def test_compare_works_on_a_read_only_connection_and_large_n_is_quiet(tmp_path):
    n = 30
    base = [hit(i) if i % 3 else miss(i) for i in range(1, n + 1)]
    cand = [hit(i) if i % 5 else miss(i) for i in range(1, n + 1)]
    db = build(tmp_path, [question(i) for i in range(1, n + 1)], {"a": {"records": base}, "b": {"records": cand}})
    c = comparison(db, "a", "b")
    r = row(c, "recall", "all")
    b = np.array([0.0 if i % 3 == 0 else 1.0 for i in range(1, n + 1)])
    k = np.array([0.0 if i % 5 == 0 else 1.0 for i in range(1, n + 1)])
    assert r["n"] == n and r["delta"] == pytest.approx((k - b).mean())
    assert r["p_ttest"] == pytest.approx(sp.ttest_rel(k, b).pvalue)
    assert r["p_randomization"] == pytest.approx(stats.sign_flip_p(k - b))
    assert r["warnings"] == []
    assert (r["improved"], r["regressed"]) == (int(((k - b) > 0).sum()), int(((k - b) < 0).sum()))


def test_verdicts_survive_a_refresh(tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(SEED_LAB, ws)
    db = tmp_path / "seed.duckdb"
    refresh(ws, db)
    pol = write_policy(tmp_path / "p.toml", '[[gates]]\nmetric = "recall"\nslice = "answerable"\nmin = 0.9\n')
    assert main(["compare", "A", "B", "--db", str(db), "--policy", str(pol)]) == 0
    manifest = ws / "runs" / "B" / "manifest.json"
    manifest.write_text(manifest.read_text().replace("System B", "System B, re-recorded"))
    assert refresh(ws, db).runs_scored == 1
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT baseline, candidate, verdict FROM verdicts").fetchall() == [("A", "B", "pass")]


# --- the batched table and the large-sample methods ----------------------------------------------------


@pytest.fixture(scope="module")
def mixed_db(tmp_path_factory) -> Path:
    """48 questions over three types, both splits, a few critical and unanswerable ones; two runs that
    hit, miss or abstain in a fixed pseudo-random pattern."""
    rng = np.random.default_rng(17)
    types = ["lookup", "multi-evidence", "outdated"]
    questions, base, cand = [], [], []
    for i in range(1, 49):
        unanswerable = i % 9 == 0
        extra = {"type": "unanswerable" if unanswerable else types[i % 3], "split": "heldout" if i % 4 == 0 else "dev",
                 "critical": i % 7 == 0}
        if unanswerable:
            questions.append({"id": f"q{i}", "text": f"Question {i}?", "relevant": [], "support": {}, **extra})
        else:
            questions.append(question(i, **extra))
        for records, p_hit in ((base, 0.55), (cand, 0.7)):
            u = rng.random()
            if unanswerable:  # abstain (right) or answer from another document (wrong)
                records.append(abstain(i) if u < p_hit else miss(i))
            else:
                records.append(abstain(i) if u > 0.9 else hit(i) if u < p_hit else miss(i))
    root = tmp_path_factory.mktemp("mixed")
    ws = write_workspace_files(root / "ws", questions, {"base": {"records": base}, "cand": {"records": cand}})
    db = root / "m.duckdb"
    refresh(ws, db)
    return db


def test_every_row_is_the_paired_statistics_of_its_slice(mixed_db):
    c = comparison(mixed_db, "base", "cand", seed=2)
    assert len(c.table) > 40 and set(c.table["method"]) == {"resampling", None}  # None: n = 1
    chosen = {str(s): s for s in slices.default_slices(c.questions)}
    for r in c.table.itertuples():
        mask = slices.mask(c.questions, chosen[r.slice])
        b = c.values["baseline"][r.metric].to_numpy()[mask]
        k = c.values["candidate"][r.metric].to_numpy()[mask]
        alone = stats.paired(b, k, higher_is_better=r.higher_is_better, seed=2)
        assert (r.n, r.improved, r.regressed, r.unchanged, tuple(r.warnings), r.method) == (
            alone.n, alone.improved, alone.regressed, alone.unchanged, alone.warnings, alone.method)
        got = [r.baseline, r.candidate, r.delta, r.ci_low, r.ci_high, r.p_ttest, r.p_wilcoxon, r.p_randomization]
        want = [alone.baseline, alone.candidate, alone.delta, alone.ci_low, alone.ci_high, alone.p_ttest,
                alone.p_wilcoxon, alone.p_randomization]
        assert [math.nan if v is None else v for v in got] == pytest.approx(
            [math.nan if v is None else v for v in want], rel=1e-12, nan_ok=True), (r.metric, r.slice)


def test_large_samples_use_the_normal_forms(mixed_db, monkeypatch):
    monkeypatch.setattr(stats, "LARGE_SAMPLE", 5)
    c = comparison(mixed_db, "base", "cand")
    assert c.settings.large_sample == 5 and "above 5 differing pairs" in c.settings.describe()
    big = c.table[c.table["n"] - c.table["unchanged"] > 5]
    small = c.table[(c.table["n"] - c.table["unchanged"] <= 5) & (c.table["n"] >= 2)]
    assert len(big) and len(small)
    assert set(big["method"]) == {"normal"} and set(small["method"]) == {"resampling"}
    r = row(c, "recall", "all")
    assert r["method"] == "normal"
    d = (c.values["candidate"]["recall"] - c.values["baseline"]["recall"]).dropna().to_numpy()
    half = 1.959963984540054 * d.std(ddof=1) / math.sqrt(len(d))  # mean +- z s / sqrt(n)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    nonzero = d[np.abs(d) > stats.TIE]
    z = nonzero.sum() / math.sqrt((nonzero**2).sum())  # sign flips: mean 0, variance sum d^2
    assert r["p_randomization"] == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))
    doc = c.to_dict()
    assert doc["settings"]["large_sample"] == 5
    assert {c_["method"] for c_ in doc["comparisons"]} <= {"normal", "resampling", None}


# --- reading once, computing later; the summary tables -----------------------------------------------


def _same(a: C.Comparison, b: C.Comparison) -> None:
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.flaky, b.flaky)
    pd.testing.assert_frame_equal(a.operations, b.operations)
    for side in C.SIDES:
        pd.testing.assert_frame_equal(a.values[side], b.values[side])


def test_compare_on_inputs_read_before_equals_compare_on_the_connection(repeats_db):
    with duckdb.connect(str(repeats_db), read_only=True) as con:
        direct = C.compare(con, "base", "cand", seed=3)
        inputs = C.read_inputs(con, "base", "cand")
        questions, rows = S.read_scores(con, "s", ("base",), ("cand-1", "cand-2", "cand-3"))
        reused = C.read_inputs(con, "base", "cand", scores=(questions, rows))
    _same(direct, C.compare(inputs, "base", "cand", seed=3))  # the file is closed by now
    _same(direct, C.compare(reused, "base", "cand", seed=3))
    with pytest.raises(ValueError, match="inputs were read for base vs cand"):
        C.compare(inputs, "base", "cand-2")


def test_the_summary_table_gives_the_same_comparison(repeats_db, tmp_path):
    from scoring.store.summaries import build_summaries

    db = tmp_path / "summarized.duckdb"
    shutil.copyfile(repeats_db, db)
    with duckdb.connect(str(db)) as con:
        build_summaries(con)
        build_summaries(con)  # idempotent
        # the held-out questions left out, and a run on both sides: the same rows either way
        assert con.execute("SELECT count(*) FROM scores_by_position").fetchall() == [(5 * 5,)]
    for kw in ({}, {"include_heldout": False}):
        with duckdb.connect(str(repeats_db), read_only=True) as con:
            plain = C.compare(con, "base", "cand", seed=1, **kw)
        with duckdb.connect(str(db), read_only=True) as con:
            summarized = C.compare(con, "base", "cand", seed=1, **kw)
        _same(plain, summarized)
    with duckdb.connect(str(db), read_only=True) as con:
        _, rows = S.read_scores(con, "s", ("base",), ("base",))
    assert (rows.side == 0).sum() == (rows.side == 1).sum() == 5  # one run on both sides is read for each

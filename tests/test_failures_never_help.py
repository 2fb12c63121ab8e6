"""A failure never helps: turning successful records into failed or missing ones never raises a
higher-is-better figure, never lowers a lower-is-better one, never turns a value into n/a, and never
turns a gate's outcome better: fail stays fail, inconclusive never becomes pass.

Checked over the whole path on random workspaces: workspace files -> `ragslice refresh` ->
`question_scores` and `slice_sums` -> `ragslice compare --format json` (the candidate's paired means,
every gate) -> the dashboard's data functions. The candidate's records are the ones that fail; the
registry declares the exceptions (`Metric.failures_never_help`: Disclosures counts what a request
actually showed; Judged@k measures the labels, not the system). Every gate kind, rule and test is
checked: thresholds, regressions, max_drop gates with each test under the significant_drop rule and
with the randomization and t-test under the non_inferiority rule (`scoring.decide.drop` takes a failed
record's difference at its worst), min_power (inconclusive), and latency and cost gates of every
aggregate with a min or a max bound, with and without a budget (a failed or missing record's latency
and cost are unknown, up to the budget: `aggregates.operational_range`).

One more limit is declared, not hidden: Support is n/a on an abstention, so a candidate that fails
where it abstained adds a question to the pairs of a comparison. That can move a mean paired delta and
the max_drop test of Support either way, and it can give a max_regressions gate on Support its first
pair (a gate without a pair fails; with one unchanged pair it passes). The candidate's own paired mean
cannot rise, a regressions count cannot fall once a pair exists, and both are checked. Threshold gates
here sit above the worst value: a `min = 0` gate passes on any value, so an all-n/a slice that a failure
fills with zeros would pass it.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from tiers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.cli import main
from scoring.metrics import BY_KEY, REGISTRY
from scoring.decide.policy import metric_aggregates
from scoring.store.refresh import refresh
from fixtures import SEED_LAB, run_manifest, write_jsonl, write_run_folder, write_suite_folder

DOCS = [f"d{i}" for i in range(8)]
RESTRICTED = "d7"
TYPES = ("lookup", "multi")
SLICES = ("all", "answerable", "unanswerable", "critical", *(f"type:{t}" for t in TYPES))
KEPT = [m for m in REGISTRY if m.failures_never_help]
SUPPORT_LIKE = {"support", *(m.key for m in REGISTRY if m.lenient_of == "support")}
"""Support and its graded twin: n/a on an abstention, so the declared limit (module docstring) is theirs."""
MAX_CLAIMS = 3
FAILURE_RATE = ("failure_rate", "rate")


# --- random workspaces ------------------------------------------------------------------------------


@st.composite
def workspaces(draw) -> dict[str, Any]:
    """A suite (answerable questions with and without expected claims, unanswerable ones, a caller who
    may not see one document) and two runs, base and cand, with some failed and missing records."""
    questions = []
    retrieval_only_suite = draw(st.integers(0, 6)) == 0
    for i in range(draw(st.integers(3, 7))):
        kind = draw(st.sampled_from(("answer", "answer", "unanswerable", "retrieval")))
        if retrieval_only_suite and kind == "answer":
            kind = "retrieval"
        positive = draw(st.lists(st.sampled_from(DOCS[:6]), unique=True, min_size=1, max_size=2))
        zero = draw(st.sampled_from([None, DOCS[6]]))
        relevant = {} if kind == "unanswerable" else {d: draw(st.integers(1, 2)) for d in positive}
        if zero:
            relevant[zero] = 0
        support = {f"c{j}": [d] for j, d in enumerate(positive)} if kind == "answer" else {}
        q = {"id": f"q{i}", "text": f"Question {i}?", "type": draw(st.sampled_from(TYPES)), "split": "dev",
             "critical": draw(st.booleans()), "relevant": relevant, "support": support}
        if draw(st.booleans()):
            q["caller"] = ["eng"]
        questions.append(q)
    runs = {}
    for run_id in ("base", "cand"):
        records = []
        for q in questions:
            if draw(st.integers(0, 9)) == 0:
                continue  # missing already
            retrieved = draw(st.permutations(DOCS))[: draw(st.integers(0, 5))]
            pool = [*q["support"], "x1", "x2"]
            claim_ids = draw(st.lists(st.sampled_from(pool), unique=True, max_size=MAX_CLAIMS))
            claims = [{"id": c, "citations": draw(st.lists(st.sampled_from([*DOCS, "ghost"]), unique=True,
                                                            max_size=2))} for c in claim_ids]
            records.append({"question_id": q["id"], "retrieved": retrieved, "claims": claims, "answer": "a",
                            "latency_ms": float(draw(st.integers(1, 5000))), "cost_usd": draw(st.integers(0, 9)) / 1000,
                            "error": "boom" if draw(st.integers(0, 9)) == 0 else None})
        if not records:  # a run records at least one question
            return draw(workspaces())
        runs[run_id] = records
    ok = [i for i, r in enumerate(runs["cand"]) if r["error"] is None]
    if not ok:
        return draw(workspaces())
    chosen = draw(st.lists(st.sampled_from(ok), unique=True, min_size=1))
    turned = {i: draw(st.sampled_from(("failed", "missing"))) for i in chosen}
    if sum(how == "missing" for how in turned.values()) == len(runs["cand"]):
        turned[chosen[0]] = "failed"  # a records file holds at least one record
    return {"questions": questions, "runs": runs, "turned": turned}


def write_workspace(root: Path, drawn: dict[str, Any], *, fail: bool) -> Path:
    """The drawn workspace; with `fail`, the chosen candidate records failed (error set, the rest as
    recorded) or missing (line dropped)."""
    write_suite_folder(root, "s", [{"id": d, "text": f"Text {d}.", **({"access": ["hr"]} if d == RESTRICTED else {})}
                                   for d in DOCS], drawn["questions"], corpus_version="c", rubric_version="r",
                       max_claims=MAX_CLAIMS)
    for run_id, records in drawn["runs"].items():
        rows = []
        for i, record in enumerate(records):
            how = drawn["turned"].get(i) if fail and run_id == "cand" else None
            if how == "missing":
                continue
            rows.append({**record, "error": "upstream timeout"} if how == "failed" else record)
        write_run_folder(root, run_manifest(run_id, suite="s", corpus_version="c", rubric_version="r", k=3), rows)
    return root


# --- what each side of the change shows -------------------------------------------------------------


DROP_GATES = (  # (test, rule, margin) of the max_drop gates beyond the default one, for every metric but Support
    # and its graded twin (which shares Support's failure rule)
    ("ttest", "significant_drop", 0.1), ("wilcoxon", "significant_drop", 0.1), ("ttest", "significant_drop", 0.5),
    ("randomization", "non_inferiority", 0.5), ("ttest", "non_inferiority", 0.5))
DROP_SLICES = ("all", "answerable", "critical", "type:lookup")
OPERATIONS = (("latency", ("p95", "p50", "p99", "mean", "max"), 2500, 1000),
              ("cost", ("mean", "total"), 0.005, 0.002))


def gate_policy(path: Path) -> Path:
    """A gate for every metric that failures cannot help, on every slice and aggregate; a
    regressions gate and (but Support and GradedSupport) a max_drop gate per metric, and on some slices one per test, rule
    and margin (`DROP_GATES`); a min_power that makes some of them inconclusive; latency and cost gates of
    every aggregate with a max and a min bound (latency with a budget, cost without); the failure-rate gate."""
    lines = ['name = "every figure"', "min_power = 0.5", "latency_budget_ms = 4000"]
    for m in KEPT:
        bound = "min = 0.5" if m.higher_is_better else "max = 0.5"
        for s in SLICES:
            for aggregate in metric_aggregates(m.key):
                lines += ["[[gates]]", f'name = "{m.key} {aggregate} {s}"', f'metric = "{m.key}"', f'slice = "{s}"',
                          f'aggregate = "{aggregate}"', bound]
            lines += ["[[gates]]", f'name = "{m.key} regressions {s}"', f'metric = "{m.key}"', f'slice = "{s}"',
                      "max_regressions = 0"]
            if m.key not in SUPPORT_LIKE:
                lines += ["[[gates]]", f'name = "{m.key} drop {s}"', f'metric = "{m.key}"', f'slice = "{s}"',
                          "max_drop = 0.1"]
            if m.key not in SUPPORT_LIKE and s in DROP_SLICES:
                for test, rule, margin in DROP_GATES:
                    lines += ["[[gates]]", f'name = "{m.key} {test} {rule} {margin} {s}"', f'metric = "{m.key}"',
                              f'slice = "{s}"', f"max_drop = {margin}", f'test = "{test}"', f'rule = "{rule}"']
    for key, aggregates, high, low in OPERATIONS:
        for aggregate in aggregates:
            for bound, value in (("max", high), ("min", low)):
                lines += ["[[gates]]", f'name = "{key} {aggregate} {bound}"', f'metric = "{key}"',
                          f'aggregate = "{aggregate}"', f"{bound} = {value}"]
    lines += ["[[gates]]", 'name = "failure rate"', 'metric = "failure_rate"', "max = 0.05"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def observe(ws: Path, db: Path, policy: Path) -> dict[str, Any]:
    """Everything the candidate shows: per-question scores, slice sums, compare JSON, dashboard data."""
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute("SELECT * FROM question_scores WHERE run_id = 'cand'")
        names = [d[0] for d in cur.description]
        scores = {row[names.index("question_id")]: dict(zip(names, row)) for row in cur.fetchall()}
        cur = con.execute("SELECT * FROM slice_sums WHERE run_id = 'cand'")
        names = [d[0] for d in cur.description]
        sums = {(r[names.index("family")], r[names.index("slice")]): dict(zip(names, r)) for r in cur.fetchall()}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["compare", "base", "cand", "--db", str(db), "--policy", str(policy), "--format", "json"])
    assert code in (0, 1, 3)
    document = json.loads(out.getvalue())
    assert code == {"pass": 0, "fail": 1, "inconclusive": 3}[document["verdict"]]
    return {"scores": scores, "sums": sums, "compare": document, "dashboard": dashboard_figures(db)}


def dashboard_figures(db: Path) -> dict[str, Any]:
    """The candidate's figures as the dashboard's data module gives them: headline macro means and
    every slice family's macro and pooled values."""
    from dashboard import data

    os.environ[data.DB_ENV] = str(db)
    sides = {s.name: s for s in data.sides("s")}
    base, cand = sides["base"], sides["cand"]
    head = data.headline("s", base, cand).set_index("metric")["candidate"].to_dict()
    slices = {}
    for by, frame in data.aggregates("s", base, cand, ("all", "answerable", "type")).items():
        for r in frame.to_dict("records"):
            slices[(by, r["slice"], r["metric"])] = (r["c_macro"], r["c_pooled"])
    return {"headline": head, "slices": slices}


# --- the invariant -------------------------------------------------------------------------------


def na(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def no_better(before: Any, after: Any, higher_is_better: bool, where: Any) -> None:
    """`after` is no better than `before` in the metric's direction, and not n/a where `before` was a value."""
    if na(before):
        return
    assert not na(after), f"{where}: {before} turned into n/a"
    if higher_is_better:
        assert float(after) <= float(before) + 1e-9, f"{where}: rose from {before} to {after}"
    else:
        assert float(after) >= float(before) - 1e-9, f"{where}: fell from {before} to {after}"


def worst(m) -> float:
    return 0.0 if m.higher_is_better else 1.0


def assert_no_failure_helps(before: dict[str, Any], after: dict[str, Any], turned: set[str]) -> None:
    for qid, row in before["scores"].items():
        new = after["scores"][qid]
        for m in KEPT:
            no_better(row[m.key], new[m.key], m.higher_is_better, (qid, m.key))
            if qid in turned and not na(new[m.key]):
                assert float(new[m.key]) == worst(m), (qid, m.key, new[m.key])
    for key, row in before["sums"].items():
        new = after["sums"][key]
        for m in KEPT:
            if row[f"{m.key}__n"]:
                no_better(row[f"{m.key}__sum"] / row[f"{m.key}__n"], new[f"{m.key}__sum"] / new[f"{m.key}__n"]
                          if new[f"{m.key}__n"] else None, m.higher_is_better, (key, m.key, "macro"))
            if m.pooled and row[f"{m.key}__den"]:
                pooled = row[f"{m.key}__num"] / row[f"{m.key}__den"]
                again = new[f"{m.key}__num"] / new[f"{m.key}__den"] if new[f"{m.key}__den"] else None
                no_better(pooled, again, m.higher_is_better, (key, m.key, "pooled"))
    old_rows = {(r["metric"], r["slice"]): r for r in before["compare"]["comparisons"]}
    new_rows = {(r["metric"], r["slice"]): r for r in after["compare"]["comparisons"]}
    for (key, s), row in old_rows.items():
        m = BY_KEY[key]
        if not m.failures_never_help:
            continue
        assert (key, s) in new_rows, f"{key} on {s}: the candidate lost every paired question"
        no_better(row["candidate"], new_rows[key, s]["candidate"], m.higher_is_better, (key, s, "paired mean"))
        no_better(row["candidate_pooled"], new_rows[key, s]["candidate_pooled"], m.higher_is_better,
                  (key, s, "paired pooled"))
    old_gates = {g["name"]: g for g in before["compare"]["gates"]}
    for gate in after["compare"]["gates"]:
        was = old_gates[gate["name"]]
        if gate["kind"] == "threshold" and gate["metric"] in ("latency", "cost"):
            if gate["max"] is not None and was["observed"] is not None and gate["observed"] is not None:
                # the highest value the unknowns allow never falls (None: unbounded, the worst)
                assert gate["observed"] >= was["observed"] - 1e-9, (gate["name"], was["observed"], gate["observed"])
            if gate["max"] is not None and gate["observed"] is None and was["observed"] is not None:
                assert "unbounded" in gate["observed_text"], gate["name"]
        elif gate["kind"] == "threshold":
            higher = gate["metric"] not in ("failure_rate",) and BY_KEY[gate["metric"]].higher_is_better
            no_better(was["observed"], gate["observed"], higher, ("gate", gate["name"]))
        elif gate["kind"] == "regressions" and was["observed"] is not None:
            assert gate["observed"] is not None and gate["observed"] >= was["observed"], gate["name"]
    for gate in after["compare"]["gates"]:
        was = old_gates[gate["name"]]
        if gate["metric"] in SUPPORT_LIKE and gate["kind"] == "regressions" and was["n"] == 0:
            continue  # no pair before: the failure made the first (see the module docstring)
        assert was["passed"] or not gate["passed"], f"gate {gate['name']!r} failed before the failures, passes after"
        assert RANK[gate["outcome"]] <= RANK[was["outcome"]], (gate["name"], was["outcome"], gate["outcome"])
    assert RANK[after["compare"]["verdict"]] <= RANK[before["compare"]["verdict"]]
    for key, value in before["dashboard"]["headline"].items():
        if BY_KEY[key].failures_never_help:
            no_better(value, after["dashboard"]["headline"][key], BY_KEY[key].higher_is_better, ("headline", key))
    for (by, s, key), (macro, pooled) in before["dashboard"]["slices"].items():
        if BY_KEY[key].failures_never_help:
            new_macro, new_pooled = after["dashboard"]["slices"][by, s, key]
            no_better(macro, new_macro, BY_KEY[key].higher_is_better, ("dashboard", by, s, key, "macro"))
            no_better(pooled, new_pooled, BY_KEY[key].higher_is_better, ("dashboard", by, s, key, "pooled"))


RANK = {"fail": 0, "inconclusive": 1, "pass": 2}
"""Outcomes from worst to best: a failure may move a gate or a verdict left, never right."""

EXAMPLES = int(os.environ.get("RAGSLICE_FAILURE_EXAMPLES", examples(12)))


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(workspaces())
def test_turning_records_into_failures_never_helps(tmp_path_factory, drawn):
    root = tmp_path_factory.mktemp("failures")
    policy = gate_policy(root / "policy.toml")
    before = observe(write_workspace(root / "before", drawn, fail=False), root / "before.duckdb", policy)
    after = observe(write_workspace(root / "after", drawn, fail=True), root / "after.duckdb", policy)
    turned = {drawn["runs"]["cand"][i]["question_id"] for i in drawn["turned"]}
    assert_no_failure_helps(before, after, turned)


def test_the_registry_declares_its_exceptions():
    """Disclosures counts what a request showed; Judged@k measures the labels' reach, not the system:
    the two measures a failure may move the other way, each saying why."""
    assert [m.key for m in REGISTRY if not m.failures_never_help] == ["judged", "disclosures"]
    assert all(m.failure for m in REGISTRY)
    assert all("declared exception" in m.failure or "the one measure" in m.failure
               for m in REGISTRY if not m.failures_never_help)


# --- the two cases that were reported, by hand -------------------------------------------------------


def fail_records(ws: Path, run_id: str, questions: set[str] | None = None) -> None:
    path = ws / "runs" / run_id / "records.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        if questions is None or row["question_id"] in questions:
            row["error"] = "upstream timeout"
    write_jsonl(path, rows)


def pooled_support_gate(tmp_path: Path) -> Path:
    return gate_path(tmp_path, '[[gates]]\nmetric = "support"\naggregate = "pooled"\nmin = 0.9\n')


def gate_path(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(f'name = "g"\n{body}', encoding="utf-8")
    return path


def compare_json(db: Path, policy: Path, capsys) -> dict[str, Any]:
    code = main(["compare", "A", "B", "--db", str(db), "--policy", str(policy), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == {"pass": 0, "fail": 1, "inconclusive": 3}[document["verdict"]]
    return document


def test_a_failed_record_does_not_pass_a_pooled_support_gate(tmp_path, capsys):
    """Seed-lab run B fails on launch (the answer with the bonus claim). Pooled Support: B made 5 claims,
    4 supported: 4 / 5 = 0.8. Failed, launch counts as 3 unsupported claims (seed-lab's max_claims):
    rollback 2 / 2 and owner 1 / 1 give (2 + 1) / (3 + 2 + 1) = 0.5. It once read 3 / 3 = 1.0 and passed."""
    ws = shutil.copytree(SEED_LAB, tmp_path / "ws")
    policy = pooled_support_gate(tmp_path)
    refresh(ws, tmp_path / "before.duckdb")
    gate = compare_json(tmp_path / "before.duckdb", policy, capsys)["gates"][0]
    assert (gate["passed"], gate["observed"]) == (False, pytest.approx(0.8))
    fail_records(ws, "B", {"launch"})
    refresh(ws, tmp_path / "after.duckdb")
    gate = compare_json(tmp_path / "after.duckdb", policy, capsys)["gates"][0]
    assert (gate["passed"], gate["observed"]) == (False, pytest.approx(0.5))
    with duckdb.connect(str(tmp_path / "after.duckdb"), read_only=True) as con:
        row = con.execute("SELECT status, support, n_claims, n_supported, false_abstention FROM question_scores "
                          "WHERE run_id = 'B' AND question_id = 'launch'").fetchone()
    assert row == ("failed", 0.0, 3, 0, True)


def test_a_total_outage_reads_as_every_answerable_question_unanswered(tmp_path, capsys):
    """FalseAbstention (lower is better) once scored a failed record 0, so an outage read as an
    improvement and a max gate on it passed. Every answerable seed question failed: 3 / 3 = 1.0."""
    ws = shutil.copytree(SEED_LAB, tmp_path / "ws")
    policy = gate_path(tmp_path, '[[gates]]\nmetric = "false_abstention"\nslice = "answerable"\nmax = 0.2\n')
    fail_records(ws, "B")
    refresh(ws, tmp_path / "db.duckdb")
    gate = compare_json(tmp_path / "db.duckdb", policy, capsys)["gates"][0]
    assert (gate["passed"], gate["observed"], gate["n"]) == (False, 1.0, 3)


def test_a_failed_record_does_not_pass_a_t_test_drop_gate(tmp_path, capsys):
    """Six questions with ten relevant documents each, at k = 10: the baseline retrieves all ten, the
    candidate nine (R@k -0.1) or eight (-0.2): differences -0.1 x4, -0.2, -0.1 fail a max_drop 0.02 t-test gate
    (one-sided p 0.0011). The last record then fails (R@k 0, difference -1): the plain t-test's variance rises
    and its p to 0.078, which passed the gate; its difference is now taken at its worst over every R@k the
    record could have had (from 0 up), and the gate fails with a smaller p."""
    docs = [{"id": f"d{i}-{j}", "text": f"Doc {i} {j}."} for i in range(6) for j in range(10)]
    questions = [{"id": f"q{i}", "text": f"Question {i}?", "relevant": [f"d{i}-{j}" for j in range(10)],
                  "type": "lookup", "split": "dev", "critical": False} for i in range(6)]
    kept = [9, 9, 9, 9, 8, 9]

    def records(found: list[int], failed: int | None = None) -> list[dict[str, Any]]:
        return [{"question_id": f"q{i}", "retrieved": [f"d{i}-{j}" for j in range(n)], "claims": [], "answer": "a",
                 "latency_ms": 100.0, "cost_usd": 0.001, "error": "upstream timeout" if i == failed else None}
                for i, n in enumerate(found)]

    policy = gate_path(tmp_path, '[[gates]]\nmetric = "recall"\nmax_drop = 0.02\ntest = "ttest"\n')
    gates = []
    for name, failed in (("before", None), ("after", 5)):
        ws = tmp_path / name
        write_suite_folder(ws, "s", docs, questions, corpus_version="c", rubric_version="r")
        for run_id, found in (("A", [10] * 6), ("B", kept)):
            write_run_folder(ws, run_manifest(run_id, suite="s", corpus_version="c", rubric_version="r", k=10),
                             records(found, failed if run_id == "B" else None))
        refresh(ws, tmp_path / f"{name}.duckdb")
        gates.append(compare_json(tmp_path / f"{name}.duckdb", policy, capsys)["gates"][0])
    before, after = gates
    assert before["observed"] == pytest.approx(-0.7 / 6) and before["p_value"] == pytest.approx(0.00107, abs=1e-5)
    assert before["outcome"] == "fail" and before["failed"] == 0
    assert after["observed"] == pytest.approx(-1.6 / 6) and after["failed"] == 1
    assert after["outcome"] == "fail" and after["p_value"] < before["p_value"]
    assert "1 failed or missing record(s) taken at their worst" in after["reason"]


def test_a_fast_failure_does_not_lower_the_p95_latency_or_the_mean_cost(tmp_path, capsys):
    """Seed-lab run B's latencies 100, 200, 300, 2000 ms: p95 = 300 + 0.85 x 1700 = 1745 > 1000, the gate fails;
    costs 0.001 x3 and 0.009: mean 0.003 > 0.0025. The slow, costly record then fails after 12 ms at no cost:
    counted as it reported, p95 became 200 + 0.85 x 100 = 285 and the mean 0.00075, and both gates passed. A
    failed record's latency and cost are unknown: without a budget the p95 interpolates towards an unbounded
    value, and with latency_budget_ms = 5000 it is 300 + 0.85 x 4700 = 4295; the mean cost is unbounded, or
    (0.003 + 0.01) / 4 = 0.00325 with cost_budget_usd = 0.01: every gate still fails."""
    ws = shutil.copytree(SEED_LAB, tmp_path / "ws")
    path = ws / "runs" / "B" / "records.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(rows) == 4
    for row, latency, cost in zip(rows, (100.0, 200.0, 300.0, 2000.0), (0.001, 0.001, 0.001, 0.009)):
        row.update(latency_ms=latency, cost_usd=cost, error=None)
    write_jsonl(path, rows)
    gates = ('[[gates]]\nname = "p95"\nmetric = "latency"\naggregate = "p95"\nmax = 1000\n'
             '[[gates]]\nname = "cost"\nmetric = "cost"\naggregate = "mean"\nmax = 0.0025\n')
    plain = gate_path(tmp_path, gates)
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(f'name = "g"\nlatency_budget_ms = 5000\ncost_budget_usd = 0.01\n{gates}', encoding="utf-8")
    refresh(ws, tmp_path / "before.duckdb")
    p95, cost = compare_json(tmp_path / "before.duckdb", plain, capsys)["gates"]
    assert (p95["outcome"], p95["observed"]) == ("fail", pytest.approx(1745.0))
    assert (cost["outcome"], cost["observed"]) == ("fail", pytest.approx(0.003))
    rows[3].update(latency_ms=12.0, cost_usd=0.0, error="upstream timeout")
    write_jsonl(path, rows)
    refresh(ws, tmp_path / "after.duckdb")
    p95, cost = compare_json(tmp_path / "after.duckdb", plain, capsys)["gates"]
    assert p95["outcome"] == "fail" and p95["observed"] is None and p95["observed_text"] == "unbounded"
    assert cost["outcome"] == "fail" and cost["observed"] is None
    p95, cost = compare_json(tmp_path / "after.duckdb", budgets, capsys)["gates"]
    assert (p95["outcome"], p95["observed"]) == ("fail", pytest.approx(4295.0))
    assert (cost["outcome"], cost["observed"]) == ("fail", pytest.approx(0.00325))

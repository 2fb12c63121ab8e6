"""The dashboard driven through Streamlit's AppTest, over a database written by the real refresh.

The workspace (`fixtures.build_dashboard_workspace`) is the bundled seed-lab (runs A and B) plus three
additions:
- runs C1, C2 of seed-lab, group `c`: copies of B, except that C2 cites `archive` for `aurora`;
- suite `hostile`: markup in every text field (and in a question ID), runs H1 and H2;
- suite `flip`: two questions where macro and pooled support move in opposite directions.

Expected values are hand arithmetic on the seed (chapter 04 of the seed text).
"""
from __future__ import annotations

import hashlib
import html
import json
import re
import shlex
import shutil
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from fixtures import (
    DASHBOARD_RUN, HOSTILE, HOSTILE_GROUP, HOSTILE_ID, REPO, build_dashboard_workspace, comparison, copy_run,
    run_manifest, timed_record,
    write_run_folder, write_suite_folder,
)
from scoring.metrics import REGISTRY
from scoring.store.refresh import refresh

APP = REPO / "dashboard" / "app.py"
PAGES = ("release_review", "statistics", "question_deltas", "question_detail", "present", "slices", "aggregation",
         "runs")
TITLES = {"release_review": "Release review", "statistics": "Statistics", "question_deltas": "Question deltas",
          "question_detail": "Question detail", "present": "Present", "slices": "Slices", "aggregation": "Aggregation",
          "runs": "Runs"}

RAW_MARKUP = ("<script", "](javascript:", ":red[", "<img", "**bold**")


@pytest.fixture(scope="session")
def dashboard_db(tmp_path_factory) -> Path:
    """The database of `build_dashboard_workspace`, written by `scoring.store.refresh.refresh`."""
    root = tmp_path_factory.mktemp("dashboard")
    db = root / "dashboard.duckdb"
    refresh(build_dashboard_workspace(root), db)
    return db


@pytest.fixture
def app(dashboard_db, monkeypatch):
    """A fresh AppTest of the entry file over the fixture database; call `open_page` on it."""
    monkeypatch.setenv("RAGSLICE_DB", str(dashboard_db))
    return AppTest.from_file(str(APP), default_timeout=60)


def open_page(at: AppTest, page: str, **params: str | list[str]) -> AppTest:
    """Open `page` with these query parameters, as a pasted link would."""
    at.query_params.clear()
    at.query_params.update(params)
    at.run()
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frame(at: AppTest, key: str) -> pd.DataFrame:
    """The table shown with `display.table(..., key=key)`."""
    return at.get_by_key(f"box_{key}").dataframe[0].value


def static_table(at: AppTest, key: str) -> pd.DataFrame:
    """The table shown with `display.wrapped_table(..., key=key)`: cells as the page shows them (text)."""
    shown = at.get_by_key(f"box_{key}").table[0].value
    return shown.map(lambda v: v.replace("\\", "") if isinstance(v, str) else v)  # cells are escaped markdown


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def unescaped(body: str) -> str:
    """`body` with every backslash-escaped character blanked: what markdown would interpret."""
    return re.sub(r"\\.", "_", body)


def metric_tile(at: AppTest, label: str):
    return next(m for m in at.metric if m.label == label)


def all_markdown(at: AppTest) -> list[str]:
    """Every text the app rendered as markdown: markdown, captions, alerts, titles, widget labels
    and help texts, metric labels, page-link labels."""
    bodies = [e.value for e in (*at.markdown, *at.caption, *at.title, *at.header, *at.subheader)]
    bodies += [e.proto.body for e in (*at.error, *at.warning, *at.info, *at.success)]
    widgets = (*at.selectbox, *at.multiselect, *at.text_input, *at.metric)
    bodies += [w.label for w in widgets] + [w.help for w in widgets if w.help]
    bodies += [link.value for link in at.page_link]
    return bodies


# -- every page ----------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_exception(app, page):
    at = open_page(app, page)
    assert [t.value for t in at.title] == [TITLES[page]]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.cases(3)
def test_every_page_renders_a_group_of_repeats(app, page):
    at = open_page(app, page, suite="seed-lab", baseline="A", candidate="c")
    assert any("mean over 2 repeats (C1, C2)" in c.value.replace("\\", "") for c in at.caption)


def test_missing_database_is_explained(monkeypatch, tmp_path):
    absent = tmp_path / "my data" / "absent.duckdb"
    monkeypatch.setenv("RAGSLICE_DB", str(absent))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception
    message = at.error[0].proto.body.replace("\\", "")
    assert "ragslice refresh" in message
    assert message.endswith(f"--db {shlex.quote(str(absent))}")  # a command the shell takes as written


# -- release review ------------------------------------------------------------------------------


def test_release_review_tiles_counts_and_worst_regression(app):
    at = open_page(app, "release_review", suite="seed-lab", baseline="A", candidate="B", metric="support")
    # Support, paired over the questions both sides score (region B is an abstention: n/a): A (1 + 1 + 0) / 3
    # = 0.6667, B (0.5 + 1 + 1) / 3 = 0.8333, delta +0.1667. Unpaired macro means: A (1 + 1 + 0 + 0) / 4 = 0.5,
    # B 0.8333: their difference (+0.333) is not what the tile shows.
    support = metric_tile(at, "Support")
    assert (support.value, support.delta) == ("0.833", "+0.167")
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any(c.startswith("paired n 3 · baseline 0.667 · CI [") for c in captions)
    assert "unpaired macro: baseline 0.500 (n 4, n/a 0) · candidate 0.833 (n 3, n/a 1) · 1 improved, 1 regressed" \
        in captions
    # R@k on the three answerable questions: A (1 + 0.5 + 1) / 3 = 0.8333, B 1.0.
    recall = metric_tile(at, "R@k")
    assert (recall.value, recall.delta) == ("1.000", "+0.167")
    counts = {m.label: m.value for m in at.metric if m.label in ("regressed", "improved", "unchanged", "n/a",
                                                                  "missing", "failed")}
    assert counts == {"regressed": "1", "improved": "1", "unchanged": "1", "n/a": "1", "missing": "0", "failed": "0"}
    # The only regression is launch (support 1.0 -> 0.5), linked to its detail page.
    texts = [t.value for t in at.text]
    assert "launch  ·  lookup  ·  regressed" in texts and "1.000 → 0.500\n(-0.500)" in texts
    assert [link.proto.page for link in at.page_link if link.value == "Question detail"] == ["question_detail"]
    assert any("launch" in link.proto.query_string for link in at.page_link)
    assert any(m.value.startswith("## Release verdict: ") for m in at.markdown)


def _record_verdict(con, baseline: list[str], candidate: list[str], verdict: str, created_at: datetime) -> None:
    gates = [{"name": "critical coverage", "kind": "threshold", "metric": "coverage", "slice": "critical",
              "aggregate": "macro", "threshold": ">= 0.9", "passed": verdict == "pass", "observed": 0.5,
              "baseline": 0.9, "n": 4, "reason": HOSTILE, "p_value": None, "warning": None, "line": 3}]
    con.execute(
        """INSERT INTO verdicts (verdict_id, created_at, baseline, candidate, baseline_runs, candidate_runs, suite,
               suite_version, policy_name, policy_hash, policy_text, verdict, gates, verdict_without_disputed, warnings)
           VALUES (?, ?, ?, ?, ?, ?, 'seed-lab', '1', 'gate', 'abc123', '', ?, ?, NULL, ?)""",
        [f"{verdict}-{created_at.year}-{baseline[0]}", created_at, ",".join(baseline), ",".join(candidate), baseline, candidate,
         verdict, json.dumps(gates), json.dumps(["the policy changed since the last verdict"])],
    )


def test_release_review_shows_the_recorded_verdict(dashboard_db, monkeypatch, tmp_path):
    from scoring.decide.verdicts import create_verdict_tables

    db = tmp_path / "verdicts.duckdb"
    shutil.copy(dashboard_db, db)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with duckdb.connect(str(db)) as con:
        create_verdict_tables(con)
        _record_verdict(con, ["A"], ["B"], "pass", datetime(2000, 1, 1))
        _record_verdict(con, ["A"], ["B"], "fail", now)
        _record_verdict(con, ["B"], ["A"], "pass", datetime(2000, 1, 1))
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    at = open_page(AppTest.from_file(str(APP), default_timeout=60), "release_review", suite="seed-lab",
                   baseline="A", candidate="B")
    # The newest verdict for exactly these runs; its gates are plain table cells. No policy file: nothing live.
    assert [e.proto.body for e in at.error] == ["Recorded verdict: FAIL"]
    assert any("No policy file was given" in i.proto.body for i in at.info)
    gates = frame(at, "w_gates")
    assert gates[["name", "passed", "reason"]].values.tolist() == [["critical coverage", False, HOSTILE]]
    assert not any("refreshed" in w.proto.body for w in at.warning)
    history = frame(at, "w_history")
    assert history["verdict"].tolist() == ["fail", "pass", "pass"]
    assert history["this_comparison"].tolist() == [True, True, False]
    at = open_page(at, "release_review", suite="seed-lab", baseline="B", candidate="A")
    assert [e.proto.body for e in at.success] == ["Recorded verdict: PASS"]
    assert any("after this verdict" in w.proto.body.replace("\\", "") for w in at.warning)
    at = open_page(at, "release_review", suite="seed-lab", baseline="A", candidate="c")
    assert any("No verdict recorded for this comparison yet" in i.proto.body for i in at.info)
    assert not at.error and not at.success


def test_release_review_metric_choice_changes_the_counts(app):
    at = open_page(app, "release_review", suite="seed-lab", baseline="A", candidate="B")
    at.selectbox(key="w_metric").select("recall").run()
    assert at.query_params["metric"] == "recall"
    counts = {m.label: m.value for m in at.metric if m.label in ("regressed", "improved", "unchanged", "n/a")}
    # Recall: rollback 0.5 -> 1 improved; launch and owner stay 1; region is unanswerable (n/a).
    assert counts == {"regressed": "0", "improved": "1", "unchanged": "2", "n/a": "1"}
    assert any("No question regressed" in i.proto.body for i in at.info)


def test_release_review_group_side_is_the_mean_over_repeats(app):
    at = open_page(app, "release_review", suite="seed-lab", baseline="A", candidate="c", metric="support")
    # c = mean of C1 (= B) and C2 (owner cites archive: support 0): launch 0.5, rollback 1,
    # owner (1 + 0) / 2 = 0.5, region n/a -> (0.5 + 1 + 0.5) / 3 = 0.6667.
    assert metric_tile(at, "Support").value == "0.667"


SEED_POLICY = """name = "seed-gate"

[[gates]]
name = "support at least 0.8"
metric = "support"
slice = "all"
aggregate = "macro"
min = 0.8

[[gates]]
name = "no answerable question loses support"
metric = "support"
slice = "answerable"
max_regressions = 0
"""


def _policy_app(db: Path, policy: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.setenv("RAGSLICE_POLICY", str(policy))
    return AppTest.from_file(str(APP), default_timeout=60)


def test_release_review_evaluates_the_policy_live_without_writing(dashboard_db, monkeypatch, tmp_path):
    db = tmp_path / "live.duckdb"
    shutil.copy(dashboard_db, db)
    policy = tmp_path / "policy.toml"
    policy.write_text(SEED_POLICY, encoding="utf-8")
    before = db.read_bytes()
    at = open_page(_policy_app(db, policy, monkeypatch), "release_review", suite="seed-lab", baseline="A",
                   candidate="B")
    assert [e.proto.body for e in at.error] == ["Live verdict: FAIL"]
    sha = hashlib.sha256(SEED_POLICY.encode("utf-8")).hexdigest()
    assert any(f"sha256 {sha[:12]}" in c.value.replace("\\", "") and "1 of 2 gates failed" in c.value.replace("\\", "")
               for c in at.caption)
    gates = frame(at, "w_live_gates").set_index("name")
    # Support macro of B over its scored answers: (0.5 + 1 + 1) / 3 = 0.8333 >= 0.8 (region is an abstention).
    passing = gates.loc["support at least 0.8"]
    assert (bool(passing["passed"]), passing["n"], passing["threshold"]) == (True, 3, ">= 0.8")
    assert passing["observed"] == "0.833"  # the text every rendering shows (`GateResult.observed_text`)
    # launch loses support (1 -> 0.5): 1 of the 3 paired answerable questions regressed, 0 allowed.
    failing = gates.loc["no answerable question loses support"]
    assert (bool(failing["passed"]), failing["observed"], failing["n"]) == (False, "1 regressed", 3)
    assert list(gates.columns[:6]) == ["passed", "observed", "threshold", "n", "reason", "metric"]
    # Nothing recorded: the file is unchanged and the recorded side says so.
    assert any("No verdict recorded for this comparison yet" in i.proto.body for i in at.info)
    assert db.read_bytes() == before
    with duckdb.connect(str(db), read_only=True) as con:
        assert "verdicts" not in {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_release_review_live_and_recorded_policies_differ(dashboard_db, monkeypatch, tmp_path):
    from scoring.decide.verdicts import create_verdict_tables

    db = tmp_path / "both.duckdb"
    shutil.copy(dashboard_db, db)
    with duckdb.connect(str(db)) as con:
        create_verdict_tables(con)
        _record_verdict(con, ["A"], ["B"], "pass", datetime(2000, 1, 1))
        _record_verdict(con, ["B"], ["A"], "fail", datetime(2001, 1, 1))
    policy = tmp_path / "policy.toml"
    policy.write_text(SEED_POLICY, encoding="utf-8")
    at = open_page(_policy_app(db, policy, monkeypatch), "release_review", suite="seed-lab", baseline="A",
                   candidate="B")
    assert [e.proto.body for e in at.error] == ["Live verdict: FAIL"]
    assert [e.proto.body for e in at.success] == ["Recorded verdict: PASS"]
    assert any("differs from the policy this verdict was recorded with (sha256 abc123)" in w.proto.body.replace("\\", "")
               for w in at.warning)
    assert frame(at, "w_gates")["name"].tolist() == ["critical coverage"]
    # A new session opens on the newest recorded verdict's comparison (B against A) when the URL names none.
    at = open_page(_policy_app(db, policy, monkeypatch), "release_review")
    assert (at.query_params["suite"], at.query_params["baseline"], at.query_params["candidate"]) == ("seed-lab", "B", "A")
    # Support of A, macro over its four answers: (1 + 1 + 0 + 0) / 4 = 0.5 < 0.8, so the live verdict fails too.
    assert [e.proto.body for e in at.error] == ["Live verdict: FAIL", "Recorded verdict: FAIL"]


def test_release_review_reports_a_broken_policy_and_still_shows_the_tiles(dashboard_db, monkeypatch, tmp_path):
    policy = tmp_path / "broken.toml"
    policy.write_text(SEED_POLICY.replace('metric = "support"\nslice = "answerable"', 'metric = "nope"\nslice = "answerable"'),
                      encoding="utf-8")
    at = open_page(_policy_app(dashboard_db, policy, monkeypatch), "release_review", suite="seed-lab", baseline="A",
                   candidate="B")
    assert any("cannot be used" in e.proto.body for e in at.error)
    # The unknown metric is on line 12 of the file; the error names it.
    assert any(f"{policy}:12" in c.value and "nope" in c.value for c in at.code)
    assert metric_tile(at, "Support").value == "0.833"


def test_release_review_tiles_carry_the_paired_test(significance_db, monkeypatch):
    monkeypatch.setenv("RAGSLICE_DB", str(significance_db))
    at = open_page(AppTest.from_file(str(APP), default_timeout=60), "release_review", suite="sig", baseline="S0",
                   candidate="S1")
    captions = [c.value.replace("\\", "") for c in at.caption]
    # Support 0 -> 1 on all six questions: the bootstrap interval is [1, 1]; the exact sign-flip p is 2 / 2**6,
    # and Holm multiplies the smallest p by the number of tested rows (at least 32 here), capped at 1.
    assert "paired n 6 · baseline 0.000 · CI [+1.000, +1.000] · Holm p 1.000 · not significant" in captions
    assert (metric_tile(at, "Support").value, metric_tile(at, "Support").delta) == ("1.000", "+1.000")
    # Disclosures stay 0: an interval of [0, 0], and a zero delta drawn neutral: no sign, no arrow, no colour.
    assert any(c.startswith("paired n 6 · baseline 0.000 · CI [+0.000, +0.000]") for c in captions)
    disclosures = metric_tile(at, "Disclosures")
    proto = type(disclosures.proto)
    assert (disclosures.delta, disclosures.proto.color, disclosures.proto.direction) == (
        "0.000", proto.MetricColor.GRAY, proto.MetricDirection.NONE)


def test_release_review_without_statistics_for_the_same_runs(app):
    at = open_page(app, "release_review", suite="seed-lab", baseline="A", candidate="A")
    assert any("No paired comparison" in i.proto.body and "share runs" in i.proto.body for i in at.info)
    assert metric_tile(at, "Support (unpaired)").value == "0.500"


# -- statistics ----------------------------------------------------------------------------------


def build_significance_workspace(root: Path) -> Path:
    """Suite `sig`: six lookup questions, each with one relevant document and one expected claim
    supported by it. S0 retrieves only the irrelevant `x` and cites it; S1 retrieves the relevant
    document and cites it. Every retrieval and answer metric moves by the same amount on all six."""
    ws = root / "sig-ws"
    write_suite_folder(ws, "sig", [{"id": "x", "text": "unrelated"}] + [{"id": f"d{i}", "text": f"document {i}"}
                                                                       for i in range(1, 7)], [
        {"id": f"q{i}", "text": f"Question {i}", "type": "lookup", "split": "dev", "relevant": [f"d{i}"],
         "support": {f"c{i}": [f"d{i}"]}} for i in range(1, 7)])
    for run_id, doc in (("S0", lambda i: "x"), ("S1", lambda i: f"d{i}")):
        write_run_folder(ws, run_manifest(run_id, suite="sig", **DASHBOARD_RUN),
                         [timed_record(f"q{i}", [doc(i)], [(f"c{i}", [doc(i)])]) for i in range(1, 7)])
    return ws


@pytest.fixture(scope="session")
def significance_db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("significance")
    db = root / "sig.duckdb"
    refresh(build_significance_workspace(root), db)
    return db


def test_statistics_rows_by_hand_and_the_metric_family_and_regression_filters(app):
    at = open_page(app, "statistics", suite="seed-lab", baseline="B", candidate="A")
    at.multiselect(key="w_metrics").set_value(["support"]).run()
    assert at.query_params["metrics"] == "support"
    table = frame(at, "w_stats_table").set_index("slice")
    # Support B -> A per slice (region is n/a for B, so it is in no pair; no question is critical):
    # all: launch 0.5 -> 1, rollback 1 -> 1, owner 1 -> 0.
    assert list(table.index) == ["all", "answerable", "type:lookup", "type:multi-evidence", "split:dev"]
    assert set(table["metric"]) == {"Support"}
    assert table.loc["all", ["n", "improved", "regressed", "unchanged"]].tolist() == [3, 1, 1, 1]
    assert table.loc["all", ["baseline", "candidate", "delta"]].tolist() == pytest.approx([2.5 / 3, 2 / 3, -0.5 / 3])
    # lookup: launch and owner, (0.5 + 1) / 2 -> (1 + 0) / 2.
    assert table.loc["type:lookup", ["n", "baseline", "candidate", "delta"]].tolist() == pytest.approx([2, 0.75, 0.5, -0.25])
    assert table.loc["type:multi-evidence", "moves"] == "unchanged"
    assert table.loc["all", "moves"] == "worse"
    # Three pairs, two of them differing: far below the large-sample threshold, so resampled.
    assert table.loc["all", "method"] == "resampling"
    at.checkbox(key="w_regressions").check().run()
    assert at.query_params["regressions"] == "1"
    assert list(frame(at, "w_stats_table")["slice"]) == ["all", "answerable", "type:lookup", "split:dev"]
    at.multiselect(key="w_family").set_value(["type"]).run()
    assert list(frame(at, "w_stats_table")["slice"]) == ["type:lookup"]
    at.checkbox(key="w_regressions").uncheck().run()
    assert list(frame(at, "w_stats_table")["slice"]) == ["type:lookup", "type:multi-evidence"]
    assert "regressions" not in at.query_params


def test_statistics_significance_filter_and_its_test(significance_db, monkeypatch):
    monkeypatch.setenv("RAGSLICE_DB", str(significance_db))
    at = open_page(AppTest.from_file(str(APP), default_timeout=60), "statistics", suite="sig", baseline="S0",
                   candidate="S1")
    every = frame(at, "w_stats_table")
    # Every registry metric but Abstention (n/a on answerable questions) x four slices (all, answerable,
    # type:lookup, split:dev). Disclosures (0) and FalseAbstention (every answer makes a claim) do not move.
    assert set(every["slice"]) == {"all", "answerable", "type:lookup", "split:dev"}
    assert len(every) == 4 * (len(REGISTRY) - 1) and "Abstention" not in set(every["metric"])
    moving = every[~every["metric"].isin(["Disclosures", "FalseAbstention"])]
    # Six equal positive differences: the exact sign-flip test sees 2 of 2**6 sign patterns as extreme.
    # Judged@k too (x is unjudged), and P'@k, nDCG'@k, AP'@k, Bpref, GradedSupport, GradedCoverage
    assert moving["p_randomization"].tolist() == pytest.approx([2 / 64] * 64)
    assert moving.set_index(["metric", "slice"]).loc[("P@k", "all"), "delta"] == pytest.approx(0.5)
    at.checkbox(key="w_significant").check().run()
    # Holm: 2 / 64 times at least 32 tested rows is 1: nothing is significant.
    assert frame(at, "w_stats_table").empty
    at.selectbox(key="w_p").select("p_randomization").run()
    shown = frame(at, "w_stats_table")
    assert len(shown) == 64 and set(shown["metric"]) == set(moving["metric"]) and shown["significant"].all()
    at.selectbox(key="w_alpha").select("0.01").run()
    assert frame(at, "w_stats_table").empty
    assert (at.query_params["p"], at.query_params["alpha"], at.query_params["significant"]) == ("p_randomization", "0.01", "1")
    registry = frame(at, "w_stats_registry").set_index("metric")
    assert registry.loc["Support", "denominator"] == "generated claims"


def test_statistics_lists_the_flaky_questions_of_a_group(app):
    at = open_page(app, "statistics", suite="seed-lab", baseline="A", candidate="c")
    flaky = frame(at, "w_flaky")
    # C2 cites archive for owner's aurora claim: support and coverage 1 in C1, 0 in C2 (strict and graded alike:
    # the seed lab grades no support partial).
    assert flaky[["side", "question_id", "metric", "values"]].values.tolist() == [
        ["candidate", "owner", "Support", "1.000 / 0.000"], ["candidate", "owner", "Coverage", "1.000 / 0.000"],
        ["candidate", "owner", "GradedSupport", "1.000 / 0.000"], ["candidate", "owner", "GradedCoverage", "1.000 / 0.000"]]
    at = open_page(app, "statistics", suite="seed-lab", baseline="A", candidate="B")
    assert any("Both sides are single runs" in i.proto.body for i in at.info)


def test_statistics_chart_is_the_sidebar_metric_per_slice(app):
    at = open_page(app, "statistics", suite="seed-lab", baseline="A", candidate="B", metric="coverage")
    spec = charts(at)[0]
    assert spec["title"] == "Coverage: mean paired delta and its interval per slice"
    # The chart's data travels beside the spec, as Arrow tables; the per-slice one has a `slice` column.
    tables = [pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in at.get("vega_lite_chart")[0].proto.datasets]
    rows = next(t for t in tables if "slice" in t.columns).set_index("slice")
    # Coverage A -> B: launch 1 -> 1, rollback 0.5 -> 1, owner 0 -> 1; region has no expected claim (n/a).
    assert list(rows.index) == ["all", "answerable", "type:lookup", "type:multi-evidence", "split:dev"]
    assert rows.loc["all", "delta"] == pytest.approx(1.5 / 3)
    assert rows.loc["type:lookup", ["n", "delta"]].tolist() == pytest.approx([2, 0.5])


# -- question deltas -----------------------------------------------------------------------------


def test_question_deltas_rows_and_worst_first_order(app):
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", metric="support")
    table = frame(at, "w_delta_table")
    # Worst first: launch -0.5, rollback 0, owner +1, then region (n/a) last.
    assert list(table["question_id"]) == ["launch", "rollback", "owner", "region"]
    assert list(table["delta"].iloc[:3]) == pytest.approx([-0.5, 0.0, 1.0])
    assert pd.isna(table["delta"].iloc[3])
    assert list(table["status"]) == ["regressed", "unchanged", "improved", "n/a"]
    at.selectbox(key="w_sort").select("best first").run()
    assert list(frame(at, "w_delta_table")["question_id"]) == ["owner", "rollback", "launch", "region"]


@pytest.mark.parametrize(
    ("widget", "value", "expected"),
    [
        ("w_status", ["regressed"], ["launch"]),
        ("w_type", ["lookup"], ["launch", "owner"]),
        ("w_split", ["dev"], ["launch", "rollback", "owner", "region"]),
    ],
)
def test_question_deltas_multiselect_filters(app, widget, value, expected):
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", metric="support",
                   sort="suite order")
    at.multiselect(key=widget).set_value(value).run()
    assert list(frame(at, "w_delta_table")["question_id"]) == expected
    assert at.query_params[widget.removeprefix("w_")] == (value[0] if len(value) == 1 else value)


def test_question_deltas_search_slice_and_critical(app):
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", sort="suite order")
    at.text_input(key="w_search").input("ROLLBACK").run()
    assert list(frame(at, "w_delta_table")["question_id"]) == ["rollback"]
    at.text_input(key="w_search").input("").run()
    at.selectbox(key="w_slice").select("unanswerable").run()
    assert list(frame(at, "w_delta_table")["question_id"]) == ["region"]
    at.selectbox(key="w_critical").select("critical only").run()
    assert frame(at, "w_delta_table").empty


def test_question_deltas_link_reproduces_filters(app):
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", metric="support",
                   type="lookup", status="improved")
    assert list(frame(at, "w_delta_table")["question_id"]) == ["owner"]
    assert at.multiselect(key="w_type").value == ["lookup"]
    assert at.multiselect(key="w_status").value == ["improved"]


def test_question_deltas_chart_is_sorted_and_its_pick_narrows_the_table(app):
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", metric="support")
    spec = charts(at)[0]
    assert spec["encoding"]["x"]["sort"] == ["owner", "rollback", "launch"]
    assert spec["params"][0]["name"] == "pick"
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", metric="support",
                   pick="owner")
    assert list(frame(at, "w_delta_table")["question_id"]) == ["owner"]
    at.button(key="w_clear_pick").click().run()
    assert len(frame(at, "w_delta_table")) == 4
    assert "pick" not in at.query_params


def test_question_deltas_statuses_missing_failed_and_direction(app):
    at = open_page(app, "question_deltas", suite="hostile", baseline="H1", candidate=HOSTILE_GROUP, metric="support",
                   sort="suite order")
    table = frame(at, "w_delta_table").set_index("question_id")
    # Support 1 -> 0 (no citation); h2's candidate record failed; h3 has no candidate record.
    assert table["status"].to_dict() == {HOSTILE_ID: "regressed", "h2": "failed", "h3": "missing"}
    warnings = [w.proto.body.replace("\\", "") for w in at.warning]
    assert sum("has 1 question with no record and 1 failed record across its runs; each counts as a failure (0)"
               in w for w in warnings) == 1, warnings
    assert not any("H1 has" in w for w in warnings)  # the baseline has neither
    assert table.loc["h3", ["baseline", "candidate"]].tolist() == [1.0, 0.0]
    at.selectbox(key="w_metric").select("disclosures").run()
    table = frame(at, "w_delta_table").set_index("question_id")
    # Disclosures (lower is better): the restricted d2 inside the first k for the `eng` caller, 0 -> 1.
    assert table.loc[HOSTILE_ID, ["baseline", "candidate", "status"]].tolist() == [0.0, 1.0, "regressed"]


def test_question_deltas_download_is_the_filtered_table(app):
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", status="regressed")
    assert [b.proto.label for b in at.get("download_button")] == ["Download the filtered table (CSV)"]
    # a download is served from the page as shown; the click reruns nothing, so it cannot race a rerun
    assert [b.proto.ignore_rerun for b in at.get("download_button")] == [True]


def test_statistics_download_reruns_nothing(app):
    at = open_page(app, "statistics", suite="seed-lab", baseline="A", candidate="B")
    buttons = at.get("download_button")
    assert [(b.proto.label, b.proto.ignore_rerun) for b in buttons] == [("Download the shown rows (CSV)", True)]


# -- slices --------------------------------------------------------------------------------------


def test_slices_answerable_and_unanswerable_with_their_n(app):
    at = open_page(app, "slices", suite="seed-lab", baseline="A", candidate="B", metric="support")
    answerable = frame(at, "w_slice_answerable").set_index("metric")
    # Support on the three answerable questions: A (1 + 1 + 0) / 3, B (0.5 + 1 + 1) / 3.
    assert answerable.loc["Support", ["b_macro", "c_macro"]].tolist() == pytest.approx([2 / 3, 2.5 / 3])
    assert answerable.loc["Support", ["n", "n/a"]].tolist() == ["3 / 3", "0 / 0"]
    assert answerable.loc["FalseAbstention", ["b_macro", "c_macro", "n"]].tolist() == [0.0, 0.0, "3 / 3"]
    unanswerable = frame(at, "w_slice_unanswerable").set_index("metric")
    # region: A makes a claim (no abstention, support 0); B abstains (support n/a).
    assert unanswerable.loc["Abstention", ["b_macro", "c_macro", "n"]].tolist() == [0.0, 1.0, "1 / 1"]
    assert unanswerable.loc["Support", ["b_macro", "n", "n/a"]].tolist() == [0.0, "1 / 0", "0 / 1"]
    assert pd.isna(unanswerable.loc["Support", "c_macro"])
    assert pd.isna(unanswerable.loc["R@k", "b_macro"])


def test_slices_metric_choice_changes_the_charts(app):
    at = open_page(app, "slices", suite="seed-lab", baseline="A", candidate="B", metric="support")
    before = charts(at)
    assert len(before) == 3 and before[0]["title"].startswith("Support by answerability: candidate - baseline")
    at.selectbox(key="w_metric").select("recall").run()
    after = charts(at)
    assert after[0]["title"].startswith("R@k by answerability: candidate - baseline") and after != before
    by_type = frame(at, "w_slice_type").set_index("slice")
    # R@k by type: lookup (launch 1, owner 1) stays 1; multi-evidence (rollback) 0.5 -> 1.
    assert by_type.loc["multi-evidence", ["b_macro", "c_macro", "b_n"]].tolist() == [0.5, 1.0, 1]


# -- aggregation ---------------------------------------------------------------------------------


def test_aggregation_seed_support_hides_the_launch_regression(app):
    at = open_page(app, "aggregation", suite="seed-lab", baseline="A", candidate="B", metric="support")
    summary = frame(at, "w_agg_summary").set_index("metric")
    # Macro over all: 0.5 -> 0.8333; pooled: A 2 / 4 claims, B 4 / 5 claims; answerable only 0.6667 -> 0.8333.
    assert summary.loc["Support", "macro (all questions)"] == pytest.approx(2.5 / 3 - 0.5)
    assert summary.loc["Support", "pooled"] == "+0.3000"  # 0.8 - 0.5
    assert summary.loc["nDCG@k", "pooled"] == "same as macro"  # the registry pools nDCG as its macro mean
    assert summary.loc["Support", "macro (answerable only)"] == pytest.approx(2.5 / 3 - 2 / 3)
    assert "mean improves while 1 question(s) regressed" in summary.loc["Support", "flags"]
    assert "flips" not in summary.loc["Support", "flags"]
    detail = frame(at, "w_agg_detail").set_index(["aggregation", "scope"])
    pooled = detail.loc[("pooled", "all questions")]
    assert [pooled["b_numerator"], pooled["b_denominator"], pooled["c_numerator"], pooled["c_denominator"]] == [2, 4, 4, 5]
    assert (pooled["b_na"], pooled["c_na"]) == (0, 1)
    # Pooled P@k over the answerable questions only: hits 1 + 1 + 1 over k = 2 per question.
    at.selectbox(key="w_metric").select("precision").run()
    pooled = frame(at, "w_agg_detail").set_index(["aggregation", "scope"]).loc[("pooled", "all questions")]
    assert [pooled["b_numerator"], pooled["b_denominator"], pooled["baseline"]] == [3, 6, 0.5]
    assert (pooled["c_numerator"], pooled["c_denominator"]) == (4, 6)


def test_aggregation_flags_a_direction_flip(app):
    at = open_page(app, "aggregation", suite="flip", baseline="F1", candidate="F2", metric="support")
    summary = frame(at, "w_agg_summary").set_index("metric")
    # Macro: (1 + 0) / 2 = 0.5 -> (0 + 0.75) / 2 = 0.375; pooled: 1 / 5 = 0.2 -> 3 / 5 = 0.6.
    assert summary.loc["Support", "macro (all questions)"] == pytest.approx(-0.125)
    assert summary.loc["Support", "pooled"] == "+0.4000"  # shown as text: "same as macro" where that is what it is
    assert "aggregation flips the direction" in summary.loc["Support", "flags"]
    warnings = [w.proto.body.replace("\\", "") for w in at.warning]
    assert any(w.startswith("Support: the aggregation decides the direction") for w in warnings)
    assert not any(w.startswith("R@k") for w in warnings)


# -- question detail -----------------------------------------------------------------------------


def test_question_detail_side_by_side(app):
    at = open_page(app, "question_detail", suite="seed-lab", baseline="A", candidate="B", q="launch")
    assert "When does the release window start?" in [t.value for t in at.text]
    labels = frame(at, "w_labels")
    assert list(labels["doc_id"]) == ["launch"] and list(labels["grade"]) == [1]
    assert list(frame(at, "w_expected")["claim_id"]) == ["monday"]
    retrieved = frame(at, "w_retrieved_baseline")
    assert list(retrieved["doc_id"]) == ["launch", "archive"]
    assert list(retrieved["relevant"]) == [True, False] and list(retrieved["visible"]) == [True, True]
    claims = static_table(at, "w_claims_candidate").set_index("claim")
    assert claims.loc["monday", "supported"] == "yes" and claims.loc["bonus", "supported"] == "no"
    # bonus has no support label, and launch is not labelled as supporting it (codes unlabelled_claim and
    # citation_not_supporting, shown in words).
    assert claims.loc["bonus", "why not supported"] == ("not a claim the labels expect, cites a document not "
                                                        "labelled as supporting it")
    pair = frame(at, "w_pair").set_index("metric")
    assert pair.loc["Support", ["baseline", "candidate", "delta"]].tolist() == [1.0, 0.5, -0.5]


def test_question_detail_question_choice(app):
    at = open_page(app, "question_detail", suite="seed-lab", baseline="A", candidate="B", q="launch")
    at.selectbox(key="w_q").select("owner").run()
    assert at.query_params["q"] == "owner"
    assert "Who owns the alert?" in [t.value for t in at.text]
    claims = static_table(at, "w_claims_baseline").set_index("claim")
    assert claims.loc["aurora", "why not supported"] == "cites a document not labelled as supporting it"


def test_question_detail_group_shows_one_repeat_at_a_time(app):
    at = open_page(app, "question_detail", suite="seed-lab", baseline="A", candidate="c", q="owner")
    # The repeats differ on owner (C2 cites archive, which does not support the claim), so each is marked with its
    # case and the one that misused its evidence is shown first.
    assert at.selectbox(key="w_candidate_run").options == [
        "C1: evidence delivered and used (differs)", "C2: evidence delivered, but the answer misused it (differs)"]
    assert static_table(at, "w_claims_candidate")["cites"].iloc[0] == "archive"
    at.selectbox(key="w_candidate_run").select("C1").run()
    assert static_table(at, "w_claims_candidate")["cites"].iloc[0] == "owners"
    # The scores table shows the mean over both repeats: support (1 + 0) / 2.
    assert frame(at, "w_pair").set_index("metric").loc["Support", "candidate"] == 0.5


# -- runs ----------------------------------------------------------------------------------------


def test_runs_configuration_diff_and_repeats(app):
    at = open_page(app, "runs", suite="seed-lab", baseline="A", candidate="B")
    diff = frame(at, "w_diff").set_index("field")
    assert sorted(diff.index) == ["notes", "run_id"]
    at = open_page(app, "runs", suite="seed-lab", baseline="B", candidate="c")
    diff = frame(at, "w_diff").set_index("field")
    assert diff.loc["repeat", "candidate"] == "1 | 2" and diff.loc["group", "baseline"] == "(absent)"
    assert "created_at" in diff.index and "k" not in diff.index
    stats = frame(at, "w_stats").set_index("run_id")
    assert sorted(stats.index) == ["A", "B", "C1", "C2"]
    assert stats.loc["A", ["questions", "missing", "failed"]].tolist() == [4, 0, 0]
    spread = frame(at, "w_spread").set_index("metric")
    # Support macro: C1 = B = 0.8333; C2: (0.5 + 1 + 0) / 3 = 0.5.
    assert spread.loc["Support", ["lowest", "highest"]].tolist() == pytest.approx([0.5, 2.5 / 3])
    assert spread.loc["Support", "runs"] == "C1, C2"


# -- text from the data is plain text ---------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.cases(3)
def test_hostile_text_is_never_markdown(app, page):
    at = open_page(app, page, suite="hostile", baseline="H1", candidate=HOSTILE_GROUP, q=HOSTILE_ID, metric="support")
    assert any("mean over 1 repeats (H2)" in c.value.replace("\\", "") for c in at.caption)
    bodies = all_markdown(at)
    assert bodies
    for body in bodies:
        for raw in RAW_MARKUP:
            assert raw not in unescaped(body), (page, body)


def test_hostile_text_shows_verbatim_as_plain_text(app):
    at = open_page(app, "question_detail", suite="hostile", baseline="H1", candidate=HOSTILE_GROUP, q=HOSTILE_ID)
    assert HOSTILE in [t.value for t in at.text]
    assert HOSTILE in [c.value for c in at.code]
    at = open_page(app, "release_review", suite="hostile", baseline="H1", candidate=HOSTILE_GROUP, metric="support")
    texts = [t.value for t in at.text]
    # Critical first; then h3, which has no candidate record (support 1 -> 0).
    assert texts.index(f"CRITICAL  {HOSTILE_ID}  ·  lookup  ·  regressed") < texts.index("h3  ·  lookup  ·  missing")
    assert any(HOSTILE_ID.replace("(", "%28") in link.proto.query_string or "javascript" in link.proto.query_string
               for link in at.page_link)
    # the command that records a verdict is one a shell takes as written: the hostile group name quoted
    commands = [c.value for c in at.code if c.value.startswith("ragslice compare")]
    assert commands and commands[0].startswith(f"ragslice compare H1 {shlex.quote(HOSTILE_GROUP)} --db ")


# -- a refresh is seen without a restart ------------------------------------------------------


def test_a_refresh_replacing_the_file_is_seen_on_the_next_rerun(monkeypatch, tmp_path):
    ws = build_dashboard_workspace(tmp_path)
    db = tmp_path / "live.duckdb"
    refresh(ws, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    at = open_page(AppTest.from_file(str(APP), default_timeout=60), "runs", suite="seed-lab")
    assert sorted(frame(at, "w_stats")["run_id"]) == ["A", "B", "C1", "C2"]
    copy_run(ws, "A", "E")
    refresh(ws, db)
    at.run()
    assert sorted(frame(at, "w_stats")["run_id"]) == ["A", "B", "C1", "C2", "E"]


# -- the escaping helper ----------------------------------------------------------------------


def test_escape_neutralises_markdown_directives_and_html():
    from dashboard.display import escape

    escaped = escape(HOSTILE)
    for raw in RAW_MARKUP:
        assert raw in HOSTILE and raw not in unescaped(escaped)
    assert escaped.replace("\\", "") == HOSTILE


def test_file_paths_are_shown_relative_to_the_working_directory(monkeypatch, tmp_path):
    from dashboard.display import file_path

    (tmp_path / "my data").mkdir()
    monkeypatch.chdir(tmp_path)
    assert file_path(tmp_path / "my data" / "policy.toml") == "my data/policy.toml"
    assert file_path(tmp_path / "my data" / "policy.toml", shell=True) == "'my data/policy.toml'"
    assert file_path("ragslice.duckdb", shell=True) == "ragslice.duckdb"
    outside = tmp_path.parent / "elsewhere.toml"
    assert file_path(outside) == str(outside)


# -- `ragslice dashboard` --------------------------------------------------------------------------


def test_dashboard_command_line_is_headless_and_local_by_default(tmp_path):
    from scoring.cli import build_parser
    from scoring.serve import streamlit_command

    args = build_parser().parse_args(["dashboard", "--db", "x.duckdb"])
    assert (args.address, args.port) == ("127.0.0.1", 8501)
    command = streamlit_command(tmp_path / "x.duckdb", port=8599, address=args.address)
    assert command[1:4] == ["-m", "streamlit", "run"] and Path(command[4]) == APP
    options = dict(zip(command[5:-3:2], command[6:-3:2]))
    assert options == {"--server.address": "127.0.0.1", "--server.port": "8599", "--server.headless": "true",
                       "--browser.gatherUsageStats": "false", "--server.fileWatcherType": "none",
                       "--client.toolbarMode": "viewer"}
    assert command[-3:] == ["--", "--db", str(tmp_path / "x.duckdb")]


def test_dashboard_command_refuses_a_missing_database(tmp_path, capsys):
    from scoring.cli import main

    assert main(["dashboard", "--db", str(tmp_path / "absent.duckdb"), "--port", "8599"]) == 2
    assert "ragslice refresh" in capsys.readouterr().err


# -- summary tables and scale --------------------------------------------------------------------

COMPARISONS = [("seed-lab", "A", "B"), ("seed-lab", "A", "c"), ("seed-lab", "c", "B"), ("hostile", "H1", HOSTILE_GROUP),
               ("flip", "F1", "F2")]


@pytest.fixture(scope="session")
def summarized_db(dashboard_db, tmp_path_factory) -> Path:
    """A copy of the fixture database with the summary tables of `scoring.store.summaries` built."""
    from scoring.store.summaries import build_summaries

    db = tmp_path_factory.mktemp("summarized") / "dashboard.duckdb"
    shutil.copyfile(dashboard_db, db)
    with duckdb.connect(str(db)) as con:
        con.execute("BEGIN TRANSACTION")
        build_summaries(con)
        con.execute("COMMIT")
    return db


@pytest.fixture
def summarized_app(summarized_db, monkeypatch):
    monkeypatch.setenv("RAGSLICE_DB", str(summarized_db))
    return AppTest.from_file(str(APP), default_timeout=60)


def _figures(db: Path, monkeypatch, suite: str, base_name: str, cand_name: str) -> dict:
    """Every figure the data module computes for one comparison, read from `db`."""
    from dashboard import data

    monkeypatch.setenv("RAGSLICE_DB", str(db))
    sides = {s.name: s for s in data.sides(suite)}
    b, c = sides[base_name], sides[cand_name]
    ids = data.question_choices(suite)["question_id"].tolist()
    out = {"headline": data.headline(suite, b, c), "run_stats": data.run_stats(suite),
           "choices": data.aggregation_choices(suite, b, c),
           "worst": data.worst_regressions(suite, b, c, "support").rows}
    for by, frame_ in data.aggregates(suite, b, c, tuple(data.SLICE_COLUMNS)).items():
        out[f"aggregate {by}"] = frame_
    for key in data.METRIC_KEYS:
        out[f"deltas {key}"] = data.question_deltas(suite, b, c, key, order="suite order").rows
    for qid in ids:
        out[f"pair {qid}"] = data.question_pair(suite, b, c, qid)
        runs_ = data.question_runs(suite, [*b.run_ids, *c.run_ids], qid)
        out[f"scores {qid}"] = pd.DataFrame([{k: v for k, v in (r["scores"] or {}).items()
                                               if k not in ("position", "question_id")} for r in runs_.values()])
    return out


@pytest.mark.parametrize(("suite", "base", "cand"), COMPARISONS)
def test_summary_tables_change_no_figure(dashboard_db, summarized_db, monkeypatch, suite, base, cand):
    """The summaries are another route to the same figures: every data function agrees with and without them."""
    plain = _figures(dashboard_db, monkeypatch, suite, base, cand)
    summarized = _figures(summarized_db, monkeypatch, suite, base, cand)
    assert plain.keys() == summarized.keys()
    for name in plain:
        left = plain[name].reset_index(drop=True)
        right = summarized[name].reset_index(drop=True)[list(left.columns)]
        pd.testing.assert_frame_equal(left, right, check_dtype=False, rtol=1e-12, obj=name)


def test_summaries_are_read_when_present(summarized_db, monkeypatch):
    """The stored sums, not a scan: a summary row altered in a copy shows up in the figures."""
    from dashboard import data

    db = summarized_db.with_name("altered.duckdb")
    shutil.copyfile(summarized_db, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE slice_sums SET support__sum = 99 WHERE run_id = 'A' AND family = 'all'")
        con.execute("UPDATE run_totals SET latency_p50 = 12345 WHERE run_id = 'A'")
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    sides = {s.name: s for s in data.sides("seed-lab")}
    support = data.aggregate("seed-lab", sides["A"], sides["B"], "all").set_index("metric").loc["support"]
    assert support["b_sum"] == 99 and support["b_macro"] == pytest.approx(99 / 4)
    assert data.run_stats("seed-lab").set_index("run_id").loc["A", "latency_p50"] == 12345


def test_slices_and_aggregation_hand_figures_from_the_summaries(summarized_app):
    at = open_page(summarized_app, "slices", suite="seed-lab", baseline="A", candidate="B", metric="support")
    answerable = frame(at, "w_slice_answerable").set_index("metric")
    # Support on the three answerable questions: A (1 + 1 + 0) / 3, B (0.5 + 1 + 1) / 3.
    assert answerable.loc["Support", ["b_macro", "c_macro"]].tolist() == pytest.approx([2 / 3, 2.5 / 3])
    assert answerable.loc["Support", ["n", "n/a"]].tolist() == ["3 / 3", "0 / 0"]
    at = open_page(summarized_app, "aggregation", suite="seed-lab", baseline="A", candidate="B", metric="support")
    detail = frame(at, "w_agg_detail").set_index(["aggregation", "scope"])
    pooled = detail.loc[("pooled", "all questions")]
    # Pooled support: A 2 of 4 claims supported, B 4 of 5.
    assert [pooled[c] for c in ("b_numerator", "b_denominator", "c_numerator", "c_denominator")] == [2, 4, 4, 5]
    summary = frame(at, "w_agg_summary").set_index("metric")
    assert "mean improves while 1 question(s) regressed" in summary.loc["Support", "flags"]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.cases(3)
def test_every_page_renders_from_the_summaries(summarized_app, page):
    at = open_page(summarized_app, page, suite="seed-lab", baseline="A", candidate="c")
    assert [t.value for t in at.title] == [TITLES[page]]


def test_question_deltas_lists_at_most_the_limit_and_counts_the_rest(dashboard_db, monkeypatch):
    from dashboard import data

    monkeypatch.setenv("RAGSLICE_DB", str(dashboard_db))
    sides = {s.name: s for s in data.sides("seed-lab")}
    deltas = data.question_deltas("seed-lab", sides["A"], sides["B"], "support", limit=2)
    # Worst first: launch -0.5, rollback 0 (owner +1 and region n/a follow, not listed).
    assert list(deltas.rows["question_id"]) == ["launch", "rollback"]
    assert (deltas.matched, deltas.total) == (4, 4)
    found = data.question_deltas("seed-lab", sides["A"], sides["B"], "support", search="ROLL", statuses=["unchanged"])
    assert list(found.rows["question_id"]) == ["rollback"] and found.matched == 1
    csv = data.deltas_csv("seed-lab", sides["A"], sides["B"], "support", statuses=["regressed"])().decode()
    assert csv.splitlines() == ["question_id,type,baseline,candidate,delta,status,critical,split,tags,text,label_gap",
                                "launch,lookup,1.0,0.5,-0.5,regressed,False,dev,,When does the release window start?,True"]


def test_worst_regressions_put_critical_questions_first(dashboard_db, monkeypatch):
    from dashboard import data

    monkeypatch.setenv("RAGSLICE_DB", str(dashboard_db))
    sides = {s.name: s for s in data.sides("hostile")}
    worst = data.worst_regressions("hostile", sides["H1"], sides[HOSTILE_GROUP], "support", limit=1)
    # Support on the critical hostile question 1 -> 0 (no citation); h3 1 -> 0 (no record: missing); h2 has no
    # delta (the baseline abstains: n/a). The critical one comes first.
    assert list(worst.rows["question_id"]) == [HOSTILE_ID] and worst.matched == 2


def test_question_detail_finds_a_question_by_search(app):
    at = open_page(app, "question_detail", suite="seed-lab", baseline="A", candidate="B", q="launch")
    assert at.selectbox(key="w_q").options[0].startswith("launch")
    at.text_input(key="w_qsearch").input("alert").run()
    assert [o.split(":")[0] for o in at.selectbox(key="w_q").options] == ["launch", "owner"]
    at.selectbox(key="w_q").select("owner").run()
    assert "Who owns the alert?" in [t.value for t in at.text]


# -- present -------------------------------------------------------------------------------------


def test_present_shows_the_five_screens_of_the_comparison(app, dashboard_db):
    from scoring.decide.present import screens
    from scoring.decide.report import load_evidence

    at = open_page(app, "present", suite="seed-lab", baseline="A", candidate="B")
    slides = at.get("iframe")[0].proto.srcdoc
    c = comparison(dashboard_db, "A", "B")
    with duckdb.connect(str(dashboard_db), read_only=True) as con:
        expected = screens(c, load_evidence(con, c, c.regressed_questions()["question_id"].head(3)))
    for screen in expected:  # the same screens `ragslice report --slides` writes
        assert f'id="{screen.key}"><h1>{screen.title}</h1><p class="message">{html.escape(screen.message)}</p>' \
            in slides
    assert "No policy was given, so there is no verdict." in slides
    assert any("no verdict" in i.proto.body for i in at.info)  # and the page says how to get one

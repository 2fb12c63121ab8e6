"""The dashboard driven through Streamlit's AppTest, over a database written by the real refresh.

The workspace is the bundled seed-lab (runs A and B) plus three additions written here:
- runs C1, C2 of seed-lab, group `c`: copies of B, except that C2 cites `archive` for `aurora`;
- suite `hostile`: markup in every text field (and in a question ID), runs H1 and H2;
- suite `flip`: two questions where macro and pooled support move in opposite directions.

Expected values are hand arithmetic on the seed (chapter 04 of the seed text).
"""
from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import duckdb

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from scoring.refresh import refresh

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "dashboard" / "app.py"
SEED_LAB = REPO / "data" / "seed-lab"
PAGES = ("release_review", "question_deltas", "question_detail", "slices", "aggregation", "runs")
TITLES = {"release_review": "Release review", "question_deltas": "Question deltas", "question_detail": "Question detail",
          "slices": "Slices", "aggregation": "Aggregation", "runs": "Runs"}

HOSTILE = "<script>alert(1)</script> [x](javascript:alert(1)) :red[boom] **bold** <img src=x onerror=alert(1)>"
HOSTILE_ID = "[h1](javascript:alert(1))"
HOSTILE_GROUP = "<b>g</b> :red[g] [g](javascript:alert(1))"
RAW_MARKUP = ("<script", "](javascript:", ":red[", "<img", "**bold**")


def _write(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")


def _write_lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _manifest(run_id: str, suite: str, version: str, corpus: str, rubric: str, **extra) -> dict:
    return {"run_id": run_id, "suite": suite, "suite_version": version, "corpus_version": corpus,
            "created_at": "2026-11-02T00:00:00Z", "code_revision": "r1", "retrieval": {"method": "bm25"}, "k": 2,
            "prompt_revision": "p1", "model": "m1", "generation": {"temperature": 0.7}, "rubric_version": rubric,
            **extra}


def _record(qid: str, retrieved: list[str], claims: list[tuple[str, list[str]]], **extra) -> dict:
    return {"question_id": qid, "retrieved": retrieved,
            "claims": [{"id": c, "citations": cites, "text": f"claim {c}"} for c, cites in claims],
            "answer": extra.pop("answer", "an answer"), "latency_ms": extra.pop("latency_ms", 100.0),
            "cost_usd": extra.pop("cost_usd", 0.001), "error": extra.pop("error", None), **extra}


def build_dashboard_workspace(root: Path) -> Path:
    """Write the workspace described in the module docstring under `root`; return it."""
    ws = root / "ws"
    shutil.copytree(SEED_LAB, ws)
    b_manifest = json.loads((ws / "runs" / "B" / "manifest.json").read_text())
    b_records = [json.loads(line) for line in (ws / "runs" / "B" / "records.jsonl").read_text().splitlines() if line]
    for repeat, run_id in enumerate(("C1", "C2"), 1):
        _write(ws / "runs" / run_id / "manifest.json",
               {**b_manifest, "run_id": run_id, "group": "c", "repeat": repeat, "created_at": "2026-11-02T00:00:00Z",
                "notes": f"Repeat {repeat} of B's configuration."})
        records = json.loads(json.dumps(b_records))
        if run_id == "C2":
            owner = next(r for r in records if r["question_id"] == "owner")
            owner["claims"] = [{"id": "aurora", "citations": ["archive"]}]
        _write_lines(ws / "runs" / run_id / "records.jsonl", records)

    hostile = ws / "suites" / "hostile"
    _write(hostile / "suite.json", {"name": "hostile", "version": "1", "corpus_version": "c1", "rubric_version": "r1",
                                    "description": HOSTILE})
    _write_lines(hostile / "documents.jsonl", [{"id": "d1", "title": HOSTILE, "text": HOSTILE},
                                               {"id": "d2", "text": "restricted", "access": ["hr"]},
                                               {"id": "d3", "text": "plain"}])
    _write_lines(hostile / "questions.jsonl", [
        {"id": HOSTILE_ID, "text": HOSTILE, "type": "lookup", "split": "dev", "critical": True, "tags": [":red[tag]"],
         "caller": ["eng"], "relevant": ["d1"], "support": {"c1": ["d1"]}, "claims": {"c1": HOSTILE},
         "disputed": HOSTILE},
        {"id": "h2", "text": "Unanswerable " + HOSTILE, "type": "unanswerable", "split": "dev", "relevant": [],
         "support": {}},
        {"id": "h3", "text": "Plain", "type": "lookup", "split": "heldout", "relevant": ["d3"], "support": {"k": ["d3"]}},
    ])
    # H1: supports c1, abstains on h2, answers h3. H2 (a group of one, with a hostile name): cites nothing
    # for c1 and shows the restricted d2 to the `eng` caller, fails on h2, has no record for h3.
    _write(ws / "runs" / "H1" / "manifest.json", _manifest("H1", "hostile", "1", "c1", "r1", notes=HOSTILE,
                                                             created_at="2026-11-01T00:00:00Z"))
    _write_lines(ws / "runs" / "H1" / "records.jsonl", [
        _record(HOSTILE_ID, ["d1"], [("c1", ["d1"])], answer=HOSTILE, context=HOSTILE),
        _record("h2", [], [], answer=HOSTILE),
        _record("h3", ["d3"], [("k", ["d3"])]),
    ])
    _write(ws / "runs" / "H2" / "manifest.json", _manifest("H2", "hostile", "1", "c1", "r1", group=HOSTILE_GROUP,
                                                             repeat=1, retrieval={"method": HOSTILE}))
    _write_lines(ws / "runs" / "H2" / "records.jsonl", [
        _record(HOSTILE_ID, ["d2", "d1"], [("c1", [])], answer=HOSTILE, context=HOSTILE),
        _record("h2", [], [], answer=None, error=HOSTILE),
    ])

    flip = ws / "suites" / "flip"
    _write(flip / "suite.json", {"name": "flip", "version": "1", "corpus_version": "c1", "rubric_version": "r1"})
    _write_lines(flip / "documents.jsonl", [{"id": "d1", "text": "one"}, {"id": "d2", "text": "two"}])
    _write_lines(flip / "questions.jsonl", [
        {"id": "q1", "text": "One claim", "type": "lookup", "split": "dev", "relevant": ["d1"], "support": {"m": ["d1"]}},
        {"id": "q2", "text": "Three claims", "type": "multi-evidence", "split": "dev", "relevant": ["d2"],
         "support": {"a": ["d2"], "b": ["d2"], "c": ["d2"]}},
    ])
    _write(ws / "runs" / "F1" / "manifest.json", _manifest("F1", "flip", "1", "c1", "r1", created_at="2026-11-01T00:00:00Z"))
    _write_lines(ws / "runs" / "F1" / "records.jsonl", [
        _record("q1", ["d1"], [("m", ["d1"])]),
        _record("q2", ["d2"], [("a", ["d1"]), ("b", ["d1"]), ("c", ["d1"]), ("x", ["d1"])]),
    ])
    _write(ws / "runs" / "F2" / "manifest.json", _manifest("F2", "flip", "1", "c1", "r1"))
    _write_lines(ws / "runs" / "F2" / "records.jsonl", [
        _record("q1", ["d1"], [("m", ["d2"])]),
        _record("q2", ["d2"], [("a", ["d2"]), ("b", ["d2"]), ("c", ["d2"]), ("x", ["d1"])]),
    ])
    return ws


@pytest.fixture(scope="session")
def dashboard_db(tmp_path_factory) -> Path:
    """The database of `build_dashboard_workspace`, written by `scoring.refresh.refresh`."""
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
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frame(at: AppTest, key: str) -> pd.DataFrame:
    """The table shown with `display.table(..., key=key)`."""
    return at.get_by_key(f"box_{key}").dataframe[0].value


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
def test_every_page_renders_a_group_of_repeats(app, page):
    at = open_page(app, page, suite="seed-lab", baseline="A", candidate="c")
    assert any("mean over 2 repeats (C1, C2)" in c.value.replace("\\", "") for c in at.caption)


def test_missing_database_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGSLICE_DB", str(tmp_path / "absent.duckdb"))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception
    assert "ragslice refresh" in at.error[0].proto.body.replace("\\", "")


# -- release review ------------------------------------------------------------------------------


def test_release_review_tiles_counts_and_worst_regression(app):
    at = open_page(app, "release_review", suite="seed-lab", baseline="A", candidate="B", metric="support")
    # Support, macro over answers with a claim: A (1 + 1 + 0 + 0) / 4 = 0.5; B (0.5 + 1 + 1) / 3 = 0.8333,
    # region B is an abstention (n/a).
    support = metric_tile(at, "Support")
    assert (support.value, support.delta) == ("0.833", "+0.333")
    assert any("baseline 0.500 · n 4 / 3 · n/a 0 / 1 · 1 improved, 1 regressed" in c.value.replace("\\", "")
               for c in at.caption)
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
    assert any("Release verdict" in s.value for s in at.subheader)


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
    from scoring.compare import create_verdict_tables

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
    # The newest verdict for exactly these runs; its gates are plain table cells.
    assert [e.proto.body for e in at.error] == ["Verdict: FAIL"]
    gates = frame(at, "w_gates")
    assert gates[["name", "passed", "reason"]].values.tolist() == [["critical coverage", False, HOSTILE]]
    assert not any("refreshed" in w.proto.body for w in at.warning)
    at = open_page(at, "release_review", suite="seed-lab", baseline="B", candidate="A")
    assert [e.proto.body for e in at.success] == ["Verdict: PASS"]
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
    assert table.loc["h3", ["baseline", "candidate"]].tolist() == [1.0, 0.0]
    at.selectbox(key="w_metric").select("disclosures").run()
    table = frame(at, "w_delta_table").set_index("question_id")
    # Disclosures (lower is better): the restricted d2 inside the first k for the `eng` caller, 0 -> 1.
    assert table.loc[HOSTILE_ID, ["baseline", "candidate", "status"]].tolist() == [0.0, 1.0, "regressed"]


def test_question_deltas_download_is_the_filtered_table(app):
    at = open_page(app, "question_deltas", suite="seed-lab", baseline="A", candidate="B", status="regressed")
    assert [b.proto.label for b in at.get("download_button")] == ["Download the filtered table (CSV)"]


# -- slices --------------------------------------------------------------------------------------


def test_slices_answerable_and_unanswerable_with_their_n(app):
    at = open_page(app, "slices", suite="seed-lab", baseline="A", candidate="B", metric="support")
    answerable = frame(at, "w_slice_answerable").set_index("metric")
    # Support on the three answerable questions: A (1 + 1 + 0) / 3, B (0.5 + 1 + 1) / 3.
    assert answerable.loc["Support", ["b_macro", "c_macro"]].tolist() == pytest.approx([2 / 3, 2.5 / 3])
    assert answerable.loc["Support", ["n", "n/a"]].tolist() == ["3 / 3", "0 / 0"]
    assert answerable.loc["False abstention", ["b_macro", "c_macro", "n"]].tolist() == [0.0, 0.0, "3 / 3"]
    unanswerable = frame(at, "w_slice_unanswerable").set_index("metric")
    # region: A makes a claim (no abstention, support 0); B abstains (support n/a).
    assert unanswerable.loc["Abstention", ["b_macro", "c_macro", "n"]].tolist() == [0.0, 1.0, "1 / 1"]
    assert unanswerable.loc["Support", ["b_macro", "n", "n/a"]].tolist() == [0.0, "1 / 0", "0 / 1"]
    assert pd.isna(unanswerable.loc["Support", "c_macro"])
    assert pd.isna(unanswerable.loc["R@k", "b_macro"])


def test_slices_metric_choice_changes_the_charts(app):
    at = open_page(app, "slices", suite="seed-lab", baseline="A", candidate="B", metric="support")
    before = charts(at)
    assert len(before) == 3 and before[0]["title"].startswith("Support by answerability")
    at.selectbox(key="w_metric").select("recall").run()
    after = charts(at)
    assert after[0]["title"].startswith("R@k by answerability") and after != before
    by_type = frame(at, "w_slice_type").set_index("slice")
    # R@k by type: lookup (launch 1, owner 1) stays 1; multi-evidence (rollback) 0.5 -> 1.
    assert by_type.loc["multi-evidence", ["b_macro", "c_macro", "b_n"]].tolist() == [0.5, 1.0, 1]


# -- aggregation ---------------------------------------------------------------------------------


def test_aggregation_seed_support_hides_the_launch_regression(app):
    at = open_page(app, "aggregation", suite="seed-lab", baseline="A", candidate="B", metric="support")
    summary = frame(at, "w_agg_summary").set_index("metric")
    # Macro over all: 0.5 -> 0.8333; pooled: A 2 / 4 claims, B 4 / 5 claims; answerable only 0.6667 -> 0.8333.
    assert summary.loc["Support", "macro (all questions)"] == pytest.approx(2.5 / 3 - 0.5)
    assert summary.loc["Support", "pooled"] == pytest.approx(0.8 - 0.5)
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
    assert summary.loc["Support", "pooled"] == pytest.approx(0.4)
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
    claims = frame(at, "w_claims_candidate").set_index("claim_id")
    assert bool(claims.loc["monday", "supported"]) and not bool(claims.loc["bonus", "supported"])
    # bonus has no support label, and launch is not labelled as supporting it.
    assert list(claims.loc["bonus", "reasons"]) == ["unlabelled_claim", "citation_not_supporting"]
    pair = frame(at, "w_pair").set_index("metric")
    assert pair.loc["Support", ["baseline", "candidate", "delta"]].tolist() == [1.0, 0.5, -0.5]


def test_question_detail_question_choice(app):
    at = open_page(app, "question_detail", suite="seed-lab", baseline="A", candidate="B", q="launch")
    at.selectbox(key="w_q").select("owner").run()
    assert at.query_params["q"] == "owner"
    assert "Who owns the alert?" in [t.value for t in at.text]
    claims = frame(at, "w_claims_baseline").set_index("claim_id")
    assert list(claims.loc["aurora", "reasons"]) == ["citation_not_supporting"]


def test_question_detail_group_shows_one_repeat_at_a_time(app):
    at = open_page(app, "question_detail", suite="seed-lab", baseline="A", candidate="c", q="owner")
    assert at.selectbox(key="w_candidate_run").options == ["C1", "C2"]
    assert list(frame(at, "w_claims_candidate")["citations"].iloc[0]) == ["owners"]
    at.selectbox(key="w_candidate_run").select("C2").run()
    assert list(frame(at, "w_claims_candidate")["citations"].iloc[0]) == ["archive"]
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


# -- a refresh is seen without a restart ------------------------------------------------------


def test_a_refresh_replacing_the_file_is_seen_on_the_next_rerun(monkeypatch, tmp_path):
    ws = build_dashboard_workspace(tmp_path)
    db = tmp_path / "live.duckdb"
    refresh(ws, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    at = open_page(AppTest.from_file(str(APP), default_timeout=60), "runs", suite="seed-lab")
    assert sorted(frame(at, "w_stats")["run_id"]) == ["A", "B", "C1", "C2"]
    shutil.copytree(ws / "runs" / "A", ws / "runs" / "E")
    manifest = json.loads((ws / "runs" / "E" / "manifest.json").read_text())
    (ws / "runs" / "E" / "manifest.json").write_text(json.dumps({**manifest, "run_id": "E"}))
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

"""Review mode in the dashboard (AppTest): the Labels page, recording decisions, the background refresh,
and what the release review and question deltas say about labels."""
from __future__ import annotations

import json
import re
import shutil
from datetime import timedelta, timezone
from pathlib import Path

import duckdb
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from scoring.cli import main
from scoring.store.background import refresher
from scoring.store.refresh import refresh
from scoring.store.times import format_time, now

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "dashboard" / "app.py"
SEED_LAB = REPO / "data" / "seed-lab"
SEED = {"suite": "seed-lab", "baseline": "A", "candidate": "B"}


@pytest.fixture
def reviewed(tmp_path, monkeypatch):
    """A seed-lab workspace and its database, the dashboard in review mode as `carl`."""
    ws = Path(shutil.copytree(SEED_LAB, tmp_path / "ws"))
    db = tmp_path / "seed.duckdb"
    refresh(ws, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.setenv("RAGSLICE_WORKSPACE", str(ws))
    monkeypatch.setenv("RAGSLICE_REVIEWER", "carl")
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    return ws, db


def open_page(page: str | None, **params) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({**SEED, **params})
    at.run()
    if page:
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(at: AppTest, key: str):
    """The frame of the table keyed `key` (see `dashboard.display.table`)."""
    return at.get_by_key(f"box_{key}").dataframe[0].value


def test_without_review_mode_there_is_no_labels_page(tmp_path, monkeypatch):
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    for name in ("RAGSLICE_WORKSPACE", "RAGSLICE_REVIEWER", "RAGSLICE_POLICY"):
        monkeypatch.delenv(name, raising=False)
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    with pytest.raises(Exception):
        at.switch_page("views/labels.py").run()


def test_the_labels_page_queues_unjudged_documents_and_records_a_grade(reviewed):
    ws, db = reviewed
    at = open_page("labels")
    # k = 2: owner's archive (A rank 1, B rank 2) first, then launch's archive (both, rank 2), then region's (A)
    shown = [t.value for t in at.text]
    assert shown[:2] == ["owner: Who owns the alert?", "document archive: Archived planning note"]
    at.selectbox(key="w_grade_0").select(1).run()
    at.text_input(key="w_note_0").input("names the <team>").run()
    at.button(key="w_save_0").click().run()
    assert not at.exception and not at.error, [e.proto.body for e in at.error]
    line = json.loads((ws / "suites" / "seed-lab" / "reviews" / "carl.jsonl").read_text())
    assert {k: line[k] for k in ("reviewer", "kind", "question_id", "doc_id", "grade", "note")} == {
        "reviewer": "carl", "kind": "relevance", "question_id": "owner", "doc_id": "archive", "grade": 1,
        "note": "names the <team>"}
    status = refresher(ws, db).wait(60)
    assert status.ok and not status.running, status.message
    at.run()
    assert [t.value for t in at.text][:1] == ["launch: When does the release window start?"]  # owner's is judged
    decisions = at.dataframe[-1].value
    assert list(decisions["status"]) == ["applied"] and list(decisions["note"]) == ["names the <team>"]


def test_a_refused_decision_is_said_and_nothing_is_written(reviewed):
    ws, _ = reviewed
    at = open_page("question_detail", q="launch")
    at.selectbox(key="w_detail_kind").set_value("support").run()  # the support form, nothing answered in advance
    at.text_input(key="w_detail_doc").input("archive")
    at.text_input(key="w_detail_claim").input("monday")
    at.radio(key="w_detail_supports").set_value("yes")
    at.button[0].click().run()  # the form's submit button
    assert any("archive is not labelled relevant" in e.proto.body.replace("\\", "") for e in at.error)
    assert not (ws / "suites" / "seed-lab" / "reviews" / "carl.jsonl").exists()


def test_disagreements_and_agreement_are_listed(reviewed):
    ws, db = reviewed
    folder = ws / "suites" / "seed-lab" / "reviews"
    folder.mkdir(parents=True)
    for reviewer, grade in (("carl", 1), ("dana", 0)):
        (folder / f"{reviewer}.jsonl").write_text(json.dumps({
            "at": "2026-11-30T10:00:00Z", "reviewer": reviewer, "kind": "relevance", "question_id": "owner",
            "doc_id": "archive", "grade": grade}) + "\n")
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    at = open_page("labels")
    disagree = shown(at, "w_disagreements")
    assert sorted(disagree["reviewer"]) == ["carl", "dana"] and set(disagree["grade"]) == {0, 1}
    agreement = shown(at, "w_agreement")
    assert (agreement.iloc[0]["n"], agreement.iloc[0]["agreed"]) == (1, 0)
    # carl may take dana's grade: one click records it, and the disagreement goes after the refresh
    button = next(b for b in at.button if "Agree with dana" in b.label.replace("\\", ""))
    button.click().run()
    assert refresher(ws, db).wait(60).ok
    at.run()
    assert any(c.value == "No label has reviewers whose latest decisions differ." for c in at.caption)
    assert (shown(at, "w_agreement").iloc[0]["agreed"]) == 1
    assert "disagreed" not in set(shown(at, "w_reviews")["status"])


def test_question_deltas_mark_and_filter_the_regressions_that_may_be_a_label_gap(reviewed):
    at = open_page("question_deltas", metric="support")
    table = at.dataframe[0].value.set_index("question_id")
    # launch regresses on Support, and B ranks archive (judged by nobody) within its k = 2
    assert bool(table.loc["launch", "label_gap"]) and not table.drop("launch")["label_gap"].any()
    at.checkbox(key="w_gap").check().run()
    assert list(at.dataframe[0].value["question_id"]) == ["launch"] and at.query_params["gap"] == "1"


def test_the_release_review_warns_when_the_candidate_is_less_judged(reviewed):
    ws, db = reviewed
    records = ws / "runs" / "B" / "records.jsonl"
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    for line in lines:
        if line["question_id"] == "launch":
            line["retrieved"] = ["launch"]  # B no longer ranks the unjudged archive on launch
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    refresh(ws, db)
    at = open_page(None, baseline="B", candidate="A")
    warnings = [w.proto.body.replace("\\", "") for w in at.warning]
    # A ranks the unjudged archive on launch, owner and region; B on owner only
    assert any(w.startswith("The candidate's Judged@k") and "label gaps" in w for w in warnings), warnings
    at = open_page(None)
    assert not any("Judged@k" in w.proto.body for w in at.warning)


def test_decisions_since_a_verdict_are_counted_to_the_millisecond(reviewed, tmp_path, monkeypatch):
    """A decision recorded in the same second as the verdict is still before or after it."""
    ws, db = reviewed
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "p"\n[[gates]]\nmetric = "support"\nslice = "all"\nmin = 0.5\n')
    assert main(["compare", "A", "B", "--db", str(db), "--policy", str(policy)]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        (created,) = con.execute("SELECT created_at FROM verdicts").fetchone()
    folder = ws / "suites" / "seed-lab" / "reviews"
    folder.mkdir(parents=True)
    moments = [format_time((created + timedelta(milliseconds=ms)).replace(tzinfo=timezone.utc)) for ms in (-1, 1)]
    (folder / "carl.jsonl").write_text("".join(json.dumps({
        "at": at, "reviewer": "carl", "kind": "relevance", "question_id": q, "doc_id": "archive", "grade": 1}) + "\n"
        for at, q in zip(moments, ("launch", "owner"))))
    refresh(ws, db)
    monkeypatch.setenv("RAGSLICE_POLICY", str(policy))
    warnings = [w.proto.body.replace("\\", "") for w in open_page(None).warning]
    assert any(w.startswith("The labels changed since this verdict: 1 review decision since, by 1 reviewer")
               for w in warnings), warnings
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now())

"""Free-text answers in the dashboard (AppTest): sentences on Question detail, the alignment queue on the Labels
page (review mode), and what the release review says about claims resting on automatic alignments."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fixtures import R, build, edit_line, write_jsonl
from scoring.cli import main
from scoring.store.refresh import refresh

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
SIDES = {"suite": "demo", "baseline": "base", "candidate": "cand"}
JUDGE = """\
import json, re, sys
for line in sys.stdin:
    request = json.loads(line)
    text = request["sentence"].lower()
    ids = [c["id"] for c in request["claims"] if c["id"] in re.findall(r"[a-z]+", text)]
    answer = {"claim_ids": ids, "confidence": 0.9} if ids else {"claim_ids": "unlabelled", "confidence": 0.55}
    print(json.dumps({"claim_ids": "no_claim"} if "found" in text else answer), flush=True)
"""
SENTENCES = [
    {"text": "Here is what I found:", "citations": []},
    {"text": "The window opens on monday.", "citations": [0]},
    {"text": "The release window starts on Mondays <b>now</b>.", "citations": [0, "hr-1"]},
]


@pytest.fixture
def ws(tmp_path, monkeypatch):
    root = build(tmp_path / "ws")
    edit_line(R(root), 1, lambda obj: (obj.pop("claims"), obj.update(answer_sentences=SENTENCES)))
    suite = root / "suites" / "demo"
    (suite / "judge.py").write_text(JUDGE)
    (suite / "judges.toml").write_text(f'[judges.names]\ncommand = ["{sys.executable}", "judge.py"]\n')
    assert main(["align", str(root), "--runs", "base", "--judge", "names"]) == 0
    write_jsonl(suite / "reviews" / "ann.jsonl", [{
        "at": "2026-11-30T10:00:00Z", "reviewer": "ann", "kind": "alignment", "question_id": "q-1",
        "sentence": SENTENCES[2]["text"], "claim_ids": ["monday"]}])
    db = tmp_path / "db.duckdb"
    refresh(root, db)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.setenv("RAGSLICE_WORKSPACE", str(root))
    monkeypatch.setenv("RAGSLICE_REVIEWER", "carl")
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    return root


def open_page(page: str | None, **params) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({**SIDES, **params})
    at.run()
    if page:
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(at: AppTest, key: str):
    return at.get_by_key(f"box_{key}").dataframe[0].value


def test_question_detail_shows_the_answer_sentence_by_sentence(ws):
    at = open_page("question_detail", q="q-1")
    sentences = shown(at, "w_sentences_baseline")
    assert list(sentences["sentence"]) == [s["text"] for s in SENTENCES]  # hostile text shown as written
    assert list(sentences["aligned_to"]) == ["no claim (not counted)", "monday", "monday"]
    assert list(sentences["decided_by"]) == ["judge names", "judge names (0.9)", "reviewer ann"]
    assert list(sentences["citations"][2]) == ["rb-3 (visible, labelled for monday)", "hr-1 (not in the first k)"]
    assert sentences["other_aligners"][2] == "judge names: unlabelled; lexical: monday"
    # Claims are a static table (long text wraps), headed for reading.
    claims = at.get_by_key("box_w_claims_baseline").table[0].value  # cells are escaped markdown
    assert list(claims["claim"]) == ["monday"] and list(claims["aligned by"]) == ["judge"]
    assert "aligned by" not in at.get_by_key("box_w_claims_candidate").table[0].value  # recorded claims: no aligner


def test_the_labels_page_queues_unreviewed_sentences_and_records_an_alignment(ws):
    at = open_page("labels")
    texts = [t.value for t in at.get_by_key("align_0").code]
    assert texts == ["The window opens on monday."]  # the judge and the lexical aligner disagree on it
    assert [t.value for t in at.get_by_key("align_1").code] == ["Here is what I found:"]
    at.selectbox(key="w_align_outcome_0").set_value("states claims")
    at.multiselect(key="w_align_claims_0").set_value(["monday"])
    at.button(key="w_align_save_0").click().run()
    assert not at.error, [e.proto.body for e in at.error]
    line = json.loads((ws / "suites" / "demo" / "reviews" / "carl.jsonl").read_text())
    assert {k: line[k] for k in ("kind", "question_id", "sentence", "claim_ids")} == {
        "kind": "alignment", "question_id": "q-1", "sentence": "The window opens on monday.", "claim_ids": ["monday"]}
    assert [t.value for t in at.get_by_key("align_0").code] == ["Here is what I found:"]  # decided: leaves the queue
    agreement = shown(at, "w_aligner_agreement").set_index("decided_by")
    assert (agreement.loc["names", "n"], agreement.loc["names", "agreed"]) == (1, 0)


def test_the_release_review_counts_claims_resting_on_automatic_alignments(ws):
    at = open_page(None)
    labels = [e.label for e in at.expander]
    assert any(label.startswith("Free-text answers: 1 of the baseline's and 0 of the candidate's claims rest on "
                                "unreviewed automatic alignments") for label in labels), labels
    resting = shown(at, "w_resting")
    assert list(resting["aligner"]) == ["judge names"] and list(resting["claims"]) == [1]

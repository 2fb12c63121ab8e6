"""Assessed claims: claims a run made whose support was judged (a TREC RAG support assessment), labelled in a
question's `assessed` in the form of `support`. Support judges them as it judges expected claims; Coverage
counts expected claims only. By hand through a real refresh, and against the reference."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from fixtures import claim, record, write_workspace_files
from scoring.errors import ValidationError
from scoring.metrics.reference import Output, score_question, suite_labels
from scoring.store.refresh import refresh

DOCS = [{"id": d, "text": f"Text of {d}."} for d in ("d1", "d2", "d3")]
QUESTIONS = [
    {"id": "q1", "text": "First?", "type": "lookup", "split": "dev", "relevant": ["d1", "d2"],
     "support": {"c1": ["d1"]}, "assessed": {"r-s0": {"d1": "full", "d2": "partial"}, "r-s1": {"d3": "none"}}},
    {"id": "q2", "text": "Second?", "type": "lookup", "split": "dev", "relevant": ["d2"],
     "assessed": {"r-s2": ["d2"]}},
]
RECORDS = [
    record("q1", ["d1", "d2", "d3"], [claim("c1", ["d1"]), claim("r-s0", ["d1", "d2"]), claim("r-s1", ["d3"])]),
    record("q2", ["d2", "d1"], [claim("r-s2", ["d2"])]),
]


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict[str, dict]:
    root = write_workspace_files(tmp_path_factory.mktemp("ws"), QUESTIONS, {"r": {"records": RECORDS, "k": 3}},
                                 documents=DOCS)
    db = root / "db.duckdb"
    refresh(root, db)
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute("SELECT * FROM question_scores ORDER BY question_id")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row)) for row in cursor.fetchall()]
        assert con.execute("SELECT count(*) FROM assessed_claims").fetchone()[0] == 3
        reasons = dict(con.execute("SELECT claim_id, reasons FROM claims").fetchall())
    return {r["question_id"]: r for r in rows} | {"reasons": reasons}


def test_support_counts_assessed_claims_and_coverage_does_not(scored):
    q1, q2 = scored["q1"], scored["q2"]
    # q1: c1 (expected) supported; r-s0 cites d1 (full) and d2 (partial): unsupported, 0.5 graded;
    # r-s1 cites d3, judged none: unsupported
    assert (q1["n_claims"], q1["n_supported"], q1["support"]) == (3, 1, pytest.approx(1 / 3))
    assert q1["support_graded"] == pytest.approx(1.5 / 3)
    assert (q1["n_expected"], q1["coverage"]) == (1, 1.0)  # the assessed claims are not expected
    # q2: no expected claim, one assessed claim, supported: Support 1, Coverage n/a; it asks for an answer
    assert (q2["support"], q2["coverage"], q2["false_abstention"]) == (1.0, None, False)
    assert scored["reasons"]["r-s0"] == ["citation_partial"]
    assert scored["reasons"]["r-s1"] == ["citation_not_supporting"]


def test_the_reference_scores_assessed_claims_alike(scored):
    labels = suite_labels(QUESTIONS)
    for rec in RECORDS:
        output = Output(tuple(rec["retrieved"]), tuple((c["id"], tuple(c["citations"])) for c in rec["claims"]))
        expected = score_question(labels[rec["question_id"]], output, k=3, known={"d1", "d2", "d3"})
        row = scored[rec["question_id"]]
        for key in ("support", "coverage", "support_graded", "coverage_graded", "n_claims", "n_supported",
                    "n_expected", "abstention_correct", "false_abstention"):
            got = row[key]
            assert got == (pytest.approx(expected[key]) if isinstance(expected[key], float) else expected[key]), key


@pytest.mark.parametrize("assessed, field", [
    ({"c1": ["d1"]}, "assessed"),               # the ID of an expected claim
    ({"r-s9": ["nowhere"]}, "assessed['r-s9']"),  # a document the suite does not hold
    ({"r-s9": {"d1": "mostly"}}, "assessed['r-s9']['d1']"),
])
def test_a_bad_assessed_claim_is_refused_with_file_line_and_field(tmp_path, assessed, field):
    questions = [dict(QUESTIONS[0], assessed=assessed), QUESTIONS[1]]
    root = write_workspace_files(tmp_path, questions, {"r": {"records": RECORDS, "k": 3}}, documents=DOCS)
    with pytest.raises(ValidationError) as raised:
        refresh(root, tmp_path / "db.duckdb")
    message = str(raised.value)
    assert "questions.jsonl:1" in message and f"field {json.dumps(field)[1:-1]!r}" in message.replace('"', "'") \
        or field in message, message
    assert not (tmp_path / "db.duckdb").exists()


def test_a_suite_with_assessed_claims_is_read_by_the_line_reader(tmp_path, monkeypatch):
    """The set-based reader leaves a suite with assessed claims to the line reader (which checks them)."""
    import scoring.store.refresh as refresh_module

    said = []
    stage = refresh_module.stage_suite
    monkeypatch.setattr(refresh_module, "stage_suite", lambda con, suite: said.append(stage(con, suite)) or said[-1])
    root = write_workspace_files(tmp_path, QUESTIONS, {"r": {"records": RECORDS, "k": 3}}, documents=DOCS)
    refresh(root, Path(tmp_path) / "db.duckdb")
    assert said == [False]

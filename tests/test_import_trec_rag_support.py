"""`ragslice import trec-rag --support`: the track's support assessments (its support evaluation output, the
run line with `support_eval`: FS, PS or NS per judged citation) become assessed claims, so a TREC RAG run's
Support and GradedSupport are scored as the track judged them, per topic and per run; figures by hand on the
bundled fixture (data/examples/trec-rag/support.rag24.jsonl, written from the track's description)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from scoring.cli import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "data" / "examples" / "trec-rag"


def imported(tmp_path: Path, *extra: str, unit: str = "document", support: Path | None = None) -> Path:
    out = tmp_path / f"ws-{unit}"
    args = ["import", "trec-rag", "--topics", str(EXAMPLES / "topics.rag24.tsv"), "--run",
            str(EXAMPLES / "bm25-rag.jsonl"), "--qrels", str(EXAMPLES / "qrels.rag24.txt"), "--support",
            str(support or EXAMPLES / "support.rag24.jsonl"), "--unit", unit, "--out", str(out), *extra]
    assert main(args) == 0
    return out


def scores(ws: Path, tmp_path: Path) -> dict[str, tuple]:
    db = tmp_path / f"{ws.name}.duckdb"
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        return {q: (n, s, support, graded, coverage) for q, n, s, support, graded, coverage in con.execute(
            "SELECT question_id, n_claims, n_supported, support, support_graded, coverage FROM question_scores "
            "WHERE run_id = 'bm25-rag' ORDER BY question_id").fetchall()}


def test_document_unit_support_by_hand(tmp_path, capsys):
    """105741: sentence 0 cites #3 (PS) and #0 (FS) of one document: one citation, graded its best, full;
    sentence 1 cites 223451890 (FS): 2 of 2. 127266: sentence 1 cites 1043805224 (FS) and 556301789 (NS):
    unsupported; 1 of 2. 96359: the one score is null, so the claim cites nothing: 0 of 1. Coverage n/a."""
    ws = imported(tmp_path)
    out = capsys.readouterr().out
    assert "3 answers of 3 answers assessed; judged citations: 4 full, 1 partial, 1 none; 1 citation with no " \
           "readable score left unjudged" in out
    found = scores(ws, tmp_path)
    assert found == {"2024-105741": (2, 2, 1.0, 1.0, None), "2024-127266": (2, 1, 0.5, 0.5, None),
                     "2024-96359": (1, 0, 0.0, 0.0, None)}
    question = json.loads((ws / "suites" / "trec-rag" / "questions.jsonl").read_text().splitlines()[0])
    assert question["assessed"] == {"bm25-rag-s0": {"msmarco_v2.1_doc_13_1647729865": "full"},
                                    "bm25-rag-s1": {"msmarco_v2.1_doc_07_223451890": "full"}}
    assert question["support"] == {}


def test_segment_unit_support_strict_and_lenient_by_hand(tmp_path, capsys):
    """At segment unit sentence 0 of 105741 cites a partly (#3) and a fully (#0) supporting segment:
    unsupported, 0.5 graded. Pooled: strict 2 of 5 = 0.4, graded 2.5 of 5 = 0.5."""
    found = scores(imported(tmp_path, unit="segment"), tmp_path)
    assert found["2024-105741"] == (2, 1, 0.5, 0.75, None)
    assert sum(s for _, s, *_ in found.values()) / sum(n for n, *_ in found.values()) == pytest.approx(0.4)
    assert sum(g * n for n, _, _, g, _ in found.values()) / sum(n for n, *_ in found.values()) == pytest.approx(0.5)


def edited(tmp_path: Path, change) -> Path:
    lines = [json.loads(x) for x in (EXAMPLES / "support.rag24.jsonl").read_text().splitlines()]
    change(lines)
    path = tmp_path / "support.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.mark.parametrize("change, field", [
    (lambda lines: lines[0]["support_eval"][0].update(eval_scores=["PS", "maybe"]), "support_eval[0].eval_scores[1]"),
    (lambda lines: lines[1]["support_eval"].pop(), "support_eval"),
    (lambda lines: lines[0]["support_eval"][1].update(eval_scores=["FS", "FS"]), "support_eval[1].eval_scores"),
    (lambda lines: lines[2].update(run_id="other-run"), "run_id"),
    (lambda lines: lines[0]["answer"][0].update(text="Something else."), "answer"),
])
def test_a_bad_assessment_is_refused_with_file_line_and_field(tmp_path, capsys, change, field):
    path = edited(tmp_path, change)
    out = tmp_path / "ws"
    assert main(["import", "trec-rag", "--topics", str(EXAMPLES / "topics.rag24.tsv"), "--run",
                 str(EXAMPLES / "bm25-rag.jsonl"), "--support", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and f"field '{field}'" in err, err
    assert not out.exists()


def test_the_assessed_suite_keeps_its_sentences_for_review(tmp_path, capsys):
    ws = imported(tmp_path)
    records = [json.loads(x) for x in (ws / "runs" / "bm25-rag" / "records.jsonl").read_text().splitlines()]
    first = records[0]
    assert [c["id"] for c in first["claims"]] == ["bm25-rag-s0", "bm25-rag-s1"]
    assert first["claims"][0]["citations"] == ["msmarco_v2.1_doc_13_1647729865#3_3617403217",
                                               "msmarco_v2.1_doc_13_1647729865#0_3617397938"]
    assert len(first["answer_sentences"]) == 2  # shown sentence by sentence, scored on the claims
    shutil.rmtree(ws)

"""`ragslice import beir`: a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) and TREC run
files become a workspace that refreshes and scores by hand arithmetic; bad lines are refused."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import duckdb
import pytest

from fixtures import REPO, import_leftovers, near, read_jsonl, sha256_of, stored_scores
from scoring.cli import main

BEIR = Path(__file__).resolve().parent / "data" / "beir"
EXAMPLES = REPO / "data" / "examples"
L3 = 1 / math.log2(3)  # the discount of rank 2
FIVE = "precision, recall, rr, ndcg, ap"


def import_beir(ws: Path, *extra: str, folder: Path = BEIR / "mini") -> int:
    return main(["import", "beir", str(folder), "--run", str(BEIR / "bm25.trec"), "--run", str(BEIR / "dense.trec"),
                 "--out", str(ws), *extra])


def test_beir_folder_imports_refreshes_and_scores_by_hand(tmp_path, capsys):
    """tests/data/beir/mini at --k 3. qrels/test.tsv: q1 {d1: 1}; q2 {d2: 2, d4: 1}; q3 {d3: 0} (no
    positive grade: n/a). qrels/dev.tsv: q4 {d4: 1, d5: 1}. q5 is judged nowhere: not a question.

    bm25 (score descending): q1 [d2, d1]: P = 1/3, R = 1, RR = 1/2, nDCG = L3 / 1, AP = (1/2) / 1.
      q2 [d2, d3, d4]: P = 2/3, R = 1, RR = 1, nDCG = (2 + 1/2) / (2 + L3), AP = (1 + 2/3) / 2.
      q4 [d4]: P = 1/3, R = 1/2, RR = 1, nDCG = 1 / (1 + L3), AP = 1 / 2.
    dense: q1 [d1, d2, d7]: P = 1/3, R = 1, RR = 1, nDCG = 1, AP = 1.
      q2 [d4, d2] (a tie at 0.7: docno descending): P = 2/3, R = 1, RR = 1, nDCG = (1 + 2 L3) / (2 + L3),
      AP = (1 + 2/2) / 2. q4 is not ranked: missing, 0 everywhere."""
    ws = tmp_path / "ws"
    assert import_beir(ws, "--k", "3") == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {ws}: suite mini, 4 questions (test 3, dev 1), 6 documents, runs bm25, dense\n")
    assert "run bm25: 1 topic without qrels in the selected splits" in out
    assert "run dense: ranks nothing for 1 of 4 questions: scored as missing" in out
    got = stored_scores(ws, tmp_path / "db.duckdb", FIVE)
    assert got[("bm25", "q1")] == near(1 / 3, 1.0, 0.5, L3, 0.5)
    assert got[("bm25", "q2")] == near(2 / 3, 1.0, 1.0, 2.5 / (2 + L3), (1 + 2 / 3) / 2)
    assert got[("bm25", "q3")] == (None,) * 5
    assert got[("bm25", "q4")] == near(1 / 3, 0.5, 1.0, 1 / (1 + L3), 0.5)
    assert got[("dense", "q1")] == near(1 / 3, 1.0, 1.0, 1.0, 1.0)
    assert got[("dense", "q2")] == near(2 / 3, 1.0, 1.0, (1 + 2 * L3) / (2 + L3), 1.0)
    assert got[("dense", "q4")] == (0.0,) * 5
    assert len(got) == 8, "q5 (judged in no qrels file) is not a question"
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        questions = con.execute("SELECT question_id, split, tags, answerable FROM questions ORDER BY position").fetchall()
        docs = dict(con.execute("SELECT doc_id, text FROM documents").fetchall())
        status = con.execute("SELECT status FROM question_scores WHERE run_id = 'dense' AND question_id = 'q4'").fetchone()
    assert questions == [("q1", "heldout", ["beir:test"], True), ("q2", "heldout", ["beir:test"], True),
                         ("q3", "heldout", ["beir:test"], False), ("q4", "dev", ["beir:dev"], True)]
    assert status == ("missing",)
    assert sorted(docs) == ["d1", "d2", "d3", "d4", "d5", "d7"], "d6 is neither judged nor ranked"
    assert docs["d5"] == "Sleep and blood pressure", "an empty text is replaced by the title"
    assert docs["d7"] == "BEIR document d7 (not in corpus.jsonl)"


def test_beir_manifest_k_and_provenance(tmp_path, capsys):
    ws = tmp_path / "ws"
    assert import_beir(ws) == 0
    manifest = json.loads((ws / "runs" / "bm25" / "manifest.json").read_text())
    assert manifest["k"] == 10, "TREC run files do not say how many documents were delivered: --k, default 10"
    mini = BEIR / "mini"
    inputs = [mini / "corpus.jsonl", mini / "queries.jsonl", mini / "qrels" / "dev.tsv", mini / "qrels" / "test.tsv"]
    assert manifest["x_provenance"] == {
        "source_format": "beir", "source": str(BEIR / "bm25.trec"), "sha256": sha256_of(BEIR / "bm25.trec"),
        "inputs": [{"path": str(p), "sha256": sha256_of(p)} for p in inputs]}
    suite = json.loads((ws / "suites" / "mini" / "suite.json").read_text())
    assert suite["x_provenance"]["inputs"] == manifest["x_provenance"]["inputs"]


def test_beir_split_flag_imports_that_split_only(tmp_path, capsys):
    """--split dev: q4 only; its bm25 ranking [d4] at k 10: P = 1/10, R = 1/2."""
    ws = tmp_path / "ws"
    assert main(["import", "beir", str(BEIR / "mini"), "--split", "dev", "--run", str(BEIR / "bm25.trec"),
                 "--out", str(ws)]) == 0
    assert "run bm25: 4 topics without qrels in the selected splits" in capsys.readouterr().out
    assert stored_scores(ws, tmp_path / "db.duckdb", "precision, recall") == {("bm25", "q4"): near(0.1, 0.5)}


def test_beir_run_without_a_question_of_the_split_is_refused(tmp_path, capsys):
    """dense ranks nothing judged in qrels/dev.tsv: an import that writes it would not refresh."""
    assert import_beir(tmp_path / "ws", "--split", "dev") == 2
    assert f"{BEIR / 'dense.trec'}: no topic of the run is a question of the suite" in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def test_beir_unknown_split_is_refused_with_the_splits_found(tmp_path, capsys):
    assert import_beir(tmp_path / "ws", "--split", "train") == 2
    assert "field '--split': 'train': no qrels/train.tsv in the BEIR folder (splits found: dev, test)" in \
        capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def beir_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "mini"
    shutil.copytree(BEIR / "mini", folder)
    return folder


@pytest.mark.parametrize("file, line, text, message", [
    ("qrels/test.tsv", 3, "q2\td2\ttwo", "question 'q2': field 'score': 'two': the score is a whole number"),
    ("qrels/test.tsv", 3, "q2\td2", "expected 3 tab-separated fields"),
    ("qrels/test.tsv", 3, "q9\td2\t1", "question 'q9': field 'query-id': 'q9': not a query of queries.jsonl"),
    ("qrels/test.tsv", 3, "q1\td1\t2", "question 'q1': field 'corpus-id': 'd1': already judged for this query at "
                                       "line 2"),
    ("qrels/test.tsv", 2, "q4\td4\t1", "question 'q4': field 'query-id': 'q4': this query is judged in split 'dev'"),
    ("queries.jsonl", 2, '{"_id": "q2", "text": ""}', "field 'text': '': required field is missing or empty"),
    ("queries.jsonl", 2, '{"_id": "q1", "text": "again"}', "field '_id': 'q1': duplicate query ID (first at line 1)"),
    ("corpus.jsonl", 4, '{"_id": "d 4", "text": "x"}', "field '_id': 'd 4': an ID is a string of 1-128 characters"),
    ("corpus.jsonl", 4, '{"_id": "d4", "text": null}', "field 'text': None: required field is missing or not a"),
    ("corpus.jsonl", 4, "{not json", "not valid JSON"),
])
def test_beir_bad_line_is_refused_with_its_line_and_nothing_written(tmp_path, capsys, file, line, text, message):
    folder = beir_copy(tmp_path)
    path = folder / file
    lines = path.read_text().splitlines()
    lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n")
    ws = tmp_path / "ws"
    assert import_beir(ws, folder=folder) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line}: {message}" in err, err
    assert not ws.exists() and import_leftovers(tmp_path) == []


def test_beir_missing_header_is_refused(tmp_path, capsys):
    folder = beir_copy(tmp_path)
    (folder / "qrels" / "dev.tsv").write_text("q4\td4\t1\n")
    assert import_beir(tmp_path / "ws", folder=folder) == 2
    assert "dev.tsv:1: the first line is the header `query-id<TAB>corpus-id<TAB>score`" in capsys.readouterr().err


def test_beir_skip_bad_lists_and_counts_and_imports_the_rest(tmp_path, capsys):
    """qrels/test.tsv line 3 (q2 d2) has a bad score and corpus.jsonl line 2 (d2) is not JSON: both are
    left out, so q2 keeps {d4: 1} and d2 has no text. bm25 q2 [d2, d3, d4] at k 3: P = 1/3, R = 1, RR = 1/3."""
    folder = beir_copy(tmp_path)
    qrels, corpus = folder / "qrels" / "test.tsv", folder / "corpus.jsonl"
    qrels.write_text(qrels.read_text().replace("q2\td2\t2", "q2\td2\thigh"))
    lines = corpus.read_text().splitlines()
    lines[1] = "{broken"
    corpus.write_text("\n".join(lines) + "\n")
    ws = tmp_path / "ws"
    assert import_beir(ws, "--k", "3", "--skip-bad", folder=folder) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"skipped {corpus}:2: not valid JSON (Expecting property name enclosed in double quotes)",
        f"skipped {qrels}:3: question 'q2': field 'score': 'high': the score is a whole number from -1000 to 1000",
        "skipped 2 lines (--skip-bad): not imported",
    ]
    got = stored_scores(ws, tmp_path / "db.duckdb", "precision, recall, rr")
    assert got[("bm25", "q2")] == near(1 / 3, 1.0, 1 / 3)
    assert {"id": "d2", "text": "BEIR document d2 (not in corpus.jsonl)"} in read_jsonl(
        ws / "suites" / "mini" / "documents.jsonl")


def test_beir_bad_run_line_is_refused_with_its_line(tmp_path, capsys):
    run = tmp_path / "bad.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\nq1 Q0 d2 2 high x\n")
    assert main(["import", "beir", str(BEIR / "mini"), "--run", str(run), "--out", str(tmp_path / "ws")]) == 2
    assert f"{run}:2: question 'q1': field 'score': 'high'" in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def test_beir_example_imports_and_scores(tmp_path, capsys):
    """data/examples/beir at k 10: query 36 ranks the relevant 18670 second under bm25 (RR = 1/2), query
    51 ranks 25254 second under dense; one relevant document in ten slots: P@10 = 1/10."""
    beir, ws = EXAMPLES / "beir", tmp_path / "beir"
    assert main(["import", "beir", str(beir / "scifact-mini"), "--run", str(beir / "runs" / "bm25.trec"),
                 "--run", str(beir / "runs" / "dense.trec"), "--out", str(ws)]) == 0
    got = stored_scores(ws, tmp_path / "beir.duckdb", "precision, rr")
    assert got[("bm25", "36")] == (0.1, 0.5) and got[("dense", "51")] == (0.1, 0.5)
    assert got[("bm25", "3")] == (None, None), "query 3 is judged 0 only: n/a"


def test_beir_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["import", "beir", "--help"])
    out = capsys.readouterr().out
    assert "example:\n  ragslice import beir " in out and "--skip-bad" in out and "--k" in out

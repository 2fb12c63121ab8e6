"""`ragslice import`: TREC files and Ragas samples become workspaces that refresh and score."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from scoring.cli import main
from scoring.refresh import refresh

TREC = Path(__file__).resolve().parent / "data" / "trec_eval"  # trec_eval's test files, see its README.md


def trec_eval_values(path: Path) -> dict[tuple[str, str], float]:
    out = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split()
        out[(measure, qid)] = float(value) if "." in value else value
    return out


def test_trec_import_scores_like_trec_eval_at_the_imported_cutoff(tmp_path, capsys):
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert main(["import", "trec", "--qrels", str(TREC / "qrels.test"), "--run", str(TREC / "results.test"),
                 "--out", str(ws)]) == 0
    assert "runs STANDARD" in capsys.readouterr().out
    refresh(ws, db)
    expected = trec_eval_values(TREC / "out.test.aq")
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT question_id, k, precision, recall, ndcg, ap FROM question_scores").fetchall()
        n_docs = con.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert len(rows) == 3
    for qid, k, p, r, ndcg, ap in rows:
        assert k == 10
        assert round(p, 4) == expected[("P_10", qid)]
        assert round(r, 4) == expected[("recall_10", qid)]
        assert round(ndcg, 4) == expected[("ndcg_cut_10", qid)]
        assert round(ap, 4) == expected[("map_cut_10", qid)]
    assert n_docs >= 3000  # every judged docno plus every retrieved one


def test_trec_import_skips_comment_and_blank_lines_of_the_qrels(tmp_path, capsys):
    """Comment and blank lines are not judgments (they once reached the import as NULL topics)."""
    qrels, run, ws = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws"
    qrels.write_text("# judged by hand\n1 0 d1 1\n\n1 0 d2 0\n2 0 d3 2\n")
    run.write_text("1 Q0 d2 1 2.0 sys\n1 Q0 d1 2 1.0 sys\n2 Q0 d3 1 1.0 sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws)]) == 0
    capsys.readouterr()
    refresh(ws, tmp_path / "db.duckdb")
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        labels = con.execute("SELECT question_id, doc_id, grade FROM labels ORDER BY ALL").fetchall()
        rr = dict(con.execute("SELECT question_id, rr FROM question_scores").fetchall())
    assert labels == [("1", "d1", 1), ("1", "d2", 0), ("2", "d3", 2)]
    assert rr == {"1": 0.5, "2": 1.0}  # d1 (the relevant one) at rank 2; d3 at rank 1


def test_ragas_samples_become_a_suite_and_a_run(tmp_path, capsys):
    samples = tmp_path / "eval-2026.jsonl"
    rows = [
        {"user_input": "Who owns the alert?", "retrieved_context_ids": ["c7", "c2"],
         "reference_context_ids": ["c2"], "response": "The Aurora team.",
         "retrieved_contexts": ["Old planning note.", "Aurora owns the alert."]},
        {"user_input": "What are the two rollback actions?", "retrieved_context_ids": ["c3"],
         "reference_context_ids": ["c3", "c4"], "response": "Switch traffic back."},
    ]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    assert main(["import", "ragas", str(samples), "--out", str(ws)]) == 0
    assert "run eval-2026" in capsys.readouterr().out
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("SELECT question_id, k, precision, recall, rr, support, coverage FROM question_scores "
                          "ORDER BY question_id").fetchall()
        text = con.execute("SELECT text FROM documents WHERE doc_id = 'c2'").fetchone()[0]
    # k = 10 slots; q1 finds its one relevant context at rank 2; q2 finds 1 of 2 at rank 1.
    assert got == [("q-00001", 10, 0.1, 1.0, 0.5, None, None), ("q-00002", 10, 0.1, 0.5, 1.0, None, None)]
    assert text == "Aurora owns the alert."


def test_ragas_bad_sample_names_file_and_line(tmp_path, capsys):
    samples = tmp_path / "bad.jsonl"
    samples.write_text('{"user_input": "ok", "retrieved_context_ids": ["a"], "reference_context_ids": []}\n'
                       '{"user_input": "", "retrieved_context_ids": []}\n')
    assert main(["import", "ragas", str(samples), "--out", str(tmp_path / "ws")]) == 2
    assert f"{samples}:2: field 'user_input'" in capsys.readouterr().err

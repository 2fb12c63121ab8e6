"""`ragslice export --format trec`: qrels and run files that trec_eval, pytrec_eval and `ragslice trec`
score exactly as the database does."""
from __future__ import annotations

import duckdb
import pytest

from fixtures import REPO, near, write_json
from scoring.cli import main
from scoring.io.eval_dataset import question_id
from scoring.io.trec import evaluate_files
from scoring.store.refresh import refresh

EXAMPLES = REPO / "data" / "examples"


def test_trec_export_scored_by_ragslice_trec_equals_the_database(tmp_path, capsys):
    """The demo workspace (chunks counted once at their first slot, missing and failed records,
    reviewed labels) exported and rescored: every per-question figure at the run's k equals the
    database's, n/a where the database has NULL (questions without a relevant document)."""
    db, out = tmp_path / "demo.duckdb", tmp_path / "trec"
    refresh(REPO / "data" / "demo", db)
    assert main(["export", "--db", str(db), "--out", str(out), "--format", "trec"]) == 0
    printed = capsys.readouterr().out.split()
    assert str(out / "demo" / "qrels.txt") in printed
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute("SELECT run_id, k FROM runs ORDER BY run_id").fetchall()
        rows = con.execute("SELECT run_id, question_id, status, precision, recall, ndcg, ap, rr, f1, success "
                           "FROM question_scores").fetchall()
        labelled = {q for (q,) in con.execute("SELECT DISTINCT question_id FROM labels").fetchall()}
    assert {r[2] for r in rows} == {"ok", "missing", "failed"}
    compared = 0
    for run_id, k in runs:
        measures = [f"P@{k}", f"R@{k}", f"nDCG@{k}", f"AP@{k}", f"RR@{k}", f"F1@{k}", f"Success@{k}"]
        got = evaluate_files(out / "demo" / "qrels.txt", out / "demo" / f"{run_id}.run", measures, exclude_na=True)
        for run, qid, _, *values in rows:
            if run != run_id:
                continue
            for measure, value in zip(measures, values):
                rescored = got.values[measure].get(qid)
                assert (rescored is None) == (value is None), (run_id, qid, measure)
                if value is not None:
                    assert rescored == pytest.approx(value, abs=1e-12), (run_id, qid, measure)
                    compared += 1
            assert qid in got.topics or qid not in labelled
    assert compared > 5000
    # `ragslice trec` on the command line, as a user rechecks one run
    assert main(["trec", str(out / "demo" / "qrels.txt"), str(out / "demo" / "rerank-v2.run"), "-q", "--exclude-na",
                 "-m", "nDCG@5"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    with duckdb.connect(str(db), read_only=True) as con:
        stored = dict(con.execute("SELECT question_id, ndcg FROM question_scores WHERE run_id = 'rerank-v2' "
                                  "AND ndcg IS NOT NULL").fetchall())
        mean = con.execute("SELECT avg(ndcg) FROM question_scores WHERE run_id = 'rerank-v2'").fetchone()[0]
    per_question = {qid: float(value) for _, qid, value in lines if qid != "all" and value != "n/a"}
    assert per_question == {q: pytest.approx(v, abs=5e-5) for q, v in stored.items()}
    assert float(lines[-1][2]) == pytest.approx(mean, abs=5e-5)


def test_trec_export_rechecked_with_pytrec_eval(tmp_path, capsys):
    """trec_eval's own measures (pytrec_eval) at k = 5 on the exported demo: P_5, recall_5,
    ndcg_cut_5 and map_cut_5 equal the database on every question it scores (trec_eval has no n/a:
    it scores a topic judged only below grade 1 as 0, where the database holds NULL)."""
    import pytrec_eval

    db, out = tmp_path / "demo.duckdb", tmp_path / "trec"
    refresh(REPO / "data" / "demo", db)
    assert main(["export", "--db", str(db), "--out", str(out), "--format", "trec"]) == 0
    qrels: dict[str, dict[str, int]] = {}
    for line in (out / "demo" / "qrels.txt").read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "recall_5", "ndcg_cut_5", "map_cut_5"})
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT DISTINCT k FROM runs").fetchall() == [(5,)]
        rows = con.execute("SELECT run_id, question_id, precision, recall, ndcg, ap FROM question_scores "
                           "WHERE precision IS NOT NULL").fetchall()
    checked = 0
    for run_id in sorted({r[0] for r in rows}):
        run: dict[str, dict[str, float]] = {}
        for line in (out / "demo" / f"{run_id}.run").read_text().splitlines():
            qid, _, doc, _, score, _ = line.split()
            run.setdefault(qid, {})[doc] = float(score)
        measured = evaluator.evaluate(run)
        for _, qid, *values in (r for r in rows if r[0] == run_id):
            got = measured[qid]
            assert (got["P_5"], got["recall_5"], got["ndcg_cut_5"], got["map_cut_5"]) == near(*values), (run_id, qid)
            checked += 1
    assert checked > 1000


def test_trec_export_writes_slots_and_failures_as_documented(tmp_path, capsys):
    """A repeat keeps its slot under its chunk ID (no label names it); a record that retrieved
    nothing, or is missing, is one unjudged line."""
    data = write_json(tmp_path / "dataset.json", [{"query": "a?", "relevant_docs": ["d1"]},
                                             {"query": "b?", "relevant_docs": ["d2"]},
                                             {"query": "c?", "relevant_docs": ["d3"]}])
    runs = write_json(tmp_path / "run.json", [{"query": "a?", "retrieved": ["d2", "d2", "d1"]},
                                          {"query": "b?", "retrieved": []}])
    ws, db, out = tmp_path / "ws", tmp_path / "db.duckdb", tmp_path / "trec"
    assert main(["import", "eval-dataset", str(data), "--run", f"r={runs}", "--out", str(ws)]) == 0
    refresh(ws, db)
    assert main(["export", "--db", str(db), "--out", str(out), "--format", "trec"]) == 0
    a, b, c = (question_id(i, q) for i, q in ((1, "a?"), (2, "b?"), (3, "c?")))
    assert (out / "dataset" / "r.run").read_text().splitlines() == [
        f"{a} Q0 d2 1 1000 r", f"{a} Q0 d2#2 2 999 r", f"{a} Q0 d1 3 998 r",
        f"{b} Q0 ragslice:no-ranking 1 0 r", f"{c} Q0 ragslice:no-ranking 1 0 r"]
    assert (out / "dataset" / "qrels.txt").read_text().splitlines() == [f"{a} 0 d1 1", f"{b} 0 d2 1", f"{c} 0 d3 1"]


def test_csv_export_is_unchanged(tmp_path, capsys):
    db = tmp_path / "db.duckdb"
    refresh(REPO / "data" / "seed-lab", db)
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "csv")]) == 0
    assert sorted(p.name for p in (tmp_path / "csv").iterdir()) == sorted(
        f"{t}.csv" for t in ("question_scores", "claims", "retrieved", "records", "questions", "runs"))


def test_trec_example_is_the_export_of_the_beir_example(tmp_path, capsys):
    """data/examples/trec holds what `ragslice export --format trec` writes for the BEIR example,
    byte for byte."""
    beir, ws, db = EXAMPLES / "beir", tmp_path / "beir", tmp_path / "beir.duckdb"
    assert main(["import", "beir", str(beir / "scifact-mini"), "--run", str(beir / "runs" / "bm25.trec"),
                 "--run", str(beir / "runs" / "dense.trec"), "--out", str(ws)]) == 0
    refresh(ws, db)
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "trec"), "--format", "trec"]) == 0
    for name in ("qrels.txt", "bm25.run", "dense.run"):
        assert (tmp_path / "trec" / "scifact-mini" / name).read_bytes() == \
            (EXAMPLES / "trec" / "scifact-mini" / name).read_bytes(), name


def test_trec_export_of_a_passage_level_suite_names_the_passages(tmp_path, capsys):
    """qrels judging passages make a passage-level suite (labels name chunks); exported, the qrels and
    the run name the passages, and `ragslice trec` gives the database's figures. t1 ranks p2, p1 (1),
    p3 (2): P@10 = 2/10, RR = 1/2."""
    qrels, run, passages = tmp_path / "qrels", tmp_path / "run", tmp_path / "map.tsv"
    qrels.write_text("t1 0 p1 1\nt1 0 p3 2\nt2 0 p4 1\n")
    run.write_text("t1 Q0 p2 1 3.0 chunky\nt1 Q0 p1 2 2.0 chunky\nt1 Q0 p3 3 1.0 chunky\nt2 Q0 p4 1 5.0 chunky\n")
    passages.write_text("p1\td1\np2\td1\np3\td2\np4\td3\n")
    ws, db, out = tmp_path / "ws", tmp_path / "db.duckdb", tmp_path / "trec"
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--chunk-map", str(passages),
                 "--out", str(ws)]) == 0
    refresh(ws, db)
    assert main(["export", "--db", str(db), "--out", str(out), "--format", "trec"]) == 0
    assert (out / "trec" / "qrels.txt").read_text() == "t1 0 p1 1\nt1 0 p3 2\nt2 0 p4 1\n"
    assert (out / "trec" / "chunky.run").read_text().splitlines()[:3] == [
        "t1 Q0 p2 1 1000 chunky", "t1 Q0 p1 2 999 chunky", "t1 Q0 p3 3 998 chunky"]
    measures = ["P@10", "R@10", "nDCG@10", "AP@10", "RR@10"]
    got = evaluate_files(out / "trec" / "qrels.txt", out / "trec" / "chunky.run", measures, exclude_na=True)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT question_id, precision, recall, ndcg, ap, rr FROM question_scores").fetchall()
    assert dict((q, (p, rr)) for q, p, _, _, _, rr in rows)["t1"] == near(0.2, 0.5)
    for qid, *values in rows:
        assert tuple(got.values[m][qid] for m in measures) == near(*values), qid

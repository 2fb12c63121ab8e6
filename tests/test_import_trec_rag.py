"""`ragslice import trec-rag` and `ragslice export --format trec-rag`: TREC RAG 2024 and 2025 runs
become runs with answer sentences, scored at document or at segment unit against hand arithmetic,
and written back in the TREC RAG layout so that a round trip scores the same."""
from __future__ import annotations

import json
import shutil
from math import log2
from pathlib import Path

import duckdb
import pytest
from fixtures import REPO, import_leftovers, near, read_jsonl, sha256_of, stored_scores

from scoring.cli import main

DATA = Path(__file__).resolve().parent / "data" / "trec_rag"
EXAMPLE = REPO / "data" / "examples" / "trec-rag"

# The fixture's segments: <document>#<segment>. A1 is retrieved through two segments (A1a, A1b).
A1, A2, A3, A4 = ("msmarco_v2.1_doc_13_1647729865", "msmarco_v2.1_doc_51_766815931", "msmarco_v2.1_doc_07_223451890",
                  "msmarco_v2.1_doc_29_981234567")
B1, B2, B3 = "msmarco_v2.1_doc_44_1043805224", "msmarco_v2.1_doc_02_556301789", "msmarco_v2.1_doc_18_300917431"
A1a, A1b = f"{A1}#0_3617397938", f"{A1}#3_3617403217"
A2a, A3a, A4a = f"{A2}#2_1606878413", f"{A3}#1_412203355", f"{A4}#5_2201928811"
B1a, B1b, B2a, B3a = f"{B1}#1_2191540137", f"{B1}#4_2191548810", f"{B2}#0_946103348", f"{B3}#7_505512902"
TA, TB, TC = "2024-105741", "2024-127266", "2024-96359"
# qrels (both years): A1a 3, A1b 1, A2a 0, A3a 2 for topic A; B1a 0, B1b 2, B2a 1, B3a 0 for topic B; none for C.
# Document grades (the best judged segment): A1 = max(3, 1) = 3, A2 = 0, A3 = 2; B1 = max(0, 2) = 2, B2 = 1, B3 = 0.

COLUMNS = "status, k, precision, recall, rr, ndcg, support, coverage, abstention_correct, false_abstention"


def import_2024(tmp_path: Path, *extra: str, out: str = "ws") -> Path:
    ws = tmp_path / out
    assert main(["import", "trec-rag", "--topics", str(DATA / "topics.rag24.tsv"), "--run", str(DATA / "bm25-rag.jsonl"),
                 "--run", str(DATA / "dense-rag.jsonl"), "--qrels", str(DATA / "qrels.rag24.txt"), *extra,
                 "--out", str(ws)]) == 0
    return ws


def import_2025(tmp_path: Path, *extra: str, out: str = "ws25") -> Path:
    ws = tmp_path / out
    assert main(["import", "trec-rag", "--topics", str(DATA / "topics.rag25.jsonl"), "--run",
                 str(DATA / "team-x-run25.jsonl"), "--qrels", str(DATA / "qrels.rag25.txt"), *extra,
                 "--out", str(ws)]) == 0
    return ws


def scores(ws: Path, db: Path, columns: str = "precision, recall, rr, ndcg") -> dict[tuple[str, str], tuple]:
    return stored_scores(ws, db, columns)


def test_2024_runs_at_document_unit_scored_by_hand(tmp_path, capsys):
    """Two 2024 run files become two runs of one suite; a segment stands for its document, a
    document retrieved through two segments counts once, at its first slot, and is graded by its best
    judged segment; citations credit the document; answer metrics are n/a (no expected claims)."""
    ws = import_2024(tmp_path)
    out = capsys.readouterr().out
    assert "runs bm25-rag (k = 5), dense-rag (k = 4)" in out
    assert "run dense-rag: answers 2 of 3 topics" in out
    assert not import_leftovers(tmp_path)
    questions = read_jsonl(ws / "suites" / "trec-rag" / "questions.jsonl")
    assert [(q["id"], q["relevant"]) for q in questions] == [
        (TA, {A1: 3, A2: 0, A3: 2}), (TB, {B1: 2, B2: 1, B3: 0}), (TC, {})]
    chunks = {c["id"]: c["doc"] for c in read_jsonl(ws / "runs" / "bm25-rag" / "chunks.jsonl")}
    assert chunks[A1a] == chunks[A1b] == A1 and chunks[B2a] == B2
    manifest = json.loads((ws / "runs" / "bm25-rag" / "manifest.json").read_text())
    assert manifest["k"] == 5  # the most references a topic delivered (topic A: 5)
    assert manifest["x_provenance"]["source_format"] == "trec-rag-2024"
    assert manifest["x_provenance"]["sha256"] == sha256_of(DATA / "bm25-rag.jsonl")
    assert [i["sha256"] for i in manifest["x_provenance"]["inputs"]] == [
        sha256_of(DATA / "topics.rag24.tsv"), sha256_of(DATA / "qrels.rag24.txt")]
    record = read_jsonl(ws / "runs" / "bm25-rag" / "records.jsonl")[0]
    assert record["answer_sentences"][0] == {"text": "Kilimanjaro is the tallest mountain in Africa.",
                                             "citations": [0, 2]}
    assert "claims" not in record

    db = tmp_path / "db.duckdb"
    got = stored_scores(ws, db, COLUMNS)
    # bm25-rag, k = 5, topic A: slots A1b->A1 (3), A2a->A2 (0), A1a->A1 (counts nothing), A4a->A4 (unjudged),
    # A3a->A3 (2). Relevant: A1, A3. P@5 = 2/5, R@5 = 2/2, RR = 1,
    # nDCG@5 = (3/log2 2 + 2/log2 6) / (3/log2 2 + 2/log2 3).
    assert got[("bm25-rag", TA)] == ("ok", 5, *near(2 / 5, 1, 1, (3 + 2 / log2(6)) / (3 + 2 / log2(3))),
                                     None, None, None, None)
    # topic B: B1a->B1 (2), B3a->B3 (0), B1b->B1 (counts nothing), B2a->B2 (1). P@5 = 2/5, R = 1, RR = 1,
    # nDCG@5 = (2 + 1/log2 5) / (2 + 1/log2 3).
    assert got[("bm25-rag", TB)] == ("ok", 5, *near(2 / 5, 1, 1, (2 + 1 / log2(5)) / (2 + 1 / log2(3))),
                                     None, None, None, None)
    # topic C has no qrels: retrieval n/a; its answer is stored, answer metrics n/a.
    assert got[("bm25-rag", TC)] == ("ok", 5, None, None, None, None, None, None, None, None)
    # dense-rag, k = 4, topic A: A3a->A3 (2), A1a->A1 (3), A2a->A2 (0). P@4 = 2/4, R = 1, RR = 1,
    # nDCG@4 = (2 + 3/log2 3) / (3 + 2/log2 3).
    assert got[("dense-rag", TA)] == ("ok", 4, *near(2 / 4, 1, 1, (2 + 3 / log2(3)) / (3 + 2 / log2(3))),
                                      None, None, None, None)
    # topic B: B2a->B2 (1), B1a->B1 (2), B1b->B1 (nothing), B3a->B3 (0). P@4 = 2/4, R = 1, RR = 1,
    # nDCG@4 = (1 + 2/log2 3) / (2 + 1/log2 3).
    assert got[("dense-rag", TB)] == ("ok", 4, *near(2 / 4, 1, 1, (1 + 2 / log2(3)) / (2 + 1 / log2(3))),
                                      None, None, None, None)
    assert got[("dense-rag", TC)][0] == "missing"
    with duckdb.connect(str(db), read_only=True) as con:
        slots = con.execute("SELECT rank, doc_id, chunk_id, counted FROM retrieved WHERE run_id = 'bm25-rag' "
                            "AND question_id = ? ORDER BY rank", [TA]).fetchall()
        cited = con.execute("SELECT claim_id, cited_docs FROM claims WHERE run_id = 'bm25-rag' AND question_id = ? "
                            "ORDER BY claim_id", [TA]).fetchall()
        outcomes = {o for (o,) in con.execute("SELECT outcome FROM alignments WHERE applied").fetchall()}
    assert slots == [(1, A1, A1b, True), (2, A2, A2a, True), (3, A1, A1a, False), (4, A4, A4a, True),
                     (5, A3, A3a, True)]
    # sentence 0 cites slots 0 and 2, two segments of A1: one cited document
    assert cited == [("unlabelled#0", [A1]), ("unlabelled#1", [A3])]
    assert outcomes == {"unlabelled"}


def test_2024_runs_at_segment_unit_scored_by_hand(tmp_path, capsys):
    """--unit segment: every segment is a document of its own, graded by its own qrels line."""
    ws = import_2024(tmp_path, "--unit", "segment")
    capsys.readouterr()
    assert not (ws / "runs" / "bm25-rag" / "chunks.jsonl").exists()
    assert read_jsonl(ws / "suites" / "trec-rag" / "questions.jsonl")[0]["relevant"] == {
        A1a: 3, A1b: 1, A2a: 0, A3a: 2}
    got = scores(ws, tmp_path / "db.duckdb")
    # bm25-rag, k = 5, topic A: A1b (1), A2a (0), A1a (3), A4a (unjudged), A3a (2). Relevant: A1a, A1b, A3a.
    # P@5 = 3/5, R = 3/3, RR = 1, nDCG@5 = (1 + 3/log2 4 + 2/log2 6) / (3 + 2/log2 3 + 1/log2 4).
    assert got[("bm25-rag", TA)] == near(3 / 5, 1, 1, (1 + 3 / 2 + 2 / log2(6)) / (3 + 2 / log2(3) + 1 / 2))
    # topic B: B1a (0), B3a (0), B1b (2), B2a (1). P@5 = 2/5, R = 1, RR = 1/3 (the document unit's RR is 1),
    # nDCG@5 = (2/log2 4 + 1/log2 5) / (2 + 1/log2 3).
    assert got[("bm25-rag", TB)] == near(2 / 5, 1, 1 / 3, (2 / 2 + 1 / log2(5)) / (2 + 1 / log2(3)))
    # dense-rag, k = 4, topic A: A3a (2), A1a (3), A2a (0); A1b never retrieved. P@4 = 2/4, R = 2/3, RR = 1,
    # nDCG@4 = (2 + 3/log2 3) / (3 + 2/log2 3 + 1/log2 4).
    assert got[("dense-rag", TA)] == near(2 / 4, 2 / 3, 1, (2 + 3 / log2(3)) / (3 + 2 / log2(3) + 1 / 2))
    # topic B: B2a (1), B1a (0), B1b (2), B3a (0). P@4 = 2/4, R = 1, RR = 1, nDCG@4 = (1 + 2/log2 4) / (2 + 1/log2 3).
    assert got[("dense-rag", TB)] == near(2 / 4, 1, 1, (1 + 2 / 2) / (2 + 1 / log2(3)))
    assert got[("bm25-rag", TC)] == (None, None, None, None)


def test_2025_run_numeric_and_string_narrative_ids_and_string_citations(tmp_path, capsys):
    """A 2025 run (metadata; narrative_id 35 as a number, "41" as a string; citations as segment IDs
    and as indexes) against JSON Lines topics, at document and at segment unit."""
    ws = import_2025(tmp_path)
    assert "runs team-x-run25 (k = 4)" in capsys.readouterr().out
    records = read_jsonl(ws / "runs" / "team-x-run25" / "records.jsonl")
    assert [r["question_id"] for r in records] == ["35", "41", "52"]
    # references of 35: A2a, A1a, A3a, A1b; citations [A1a, A1b] -> [1, 3], [2] stays [2]
    assert [s["citations"] for s in records[0]["answer_sentences"]] == [[1, 3], [2]]
    assert records[1]["answer_sentences"][0]["citations"] == [0]
    assert records[2]["answer_sentences"] == [] and records[2]["answer"] is None
    manifest = json.loads((ws / "runs" / "team-x-run25" / "manifest.json").read_text())
    assert manifest["x_provenance"]["source_format"] == "trec-rag-2025"
    assert manifest["retrieval"]["team_id"] == "team-x" and manifest["retrieval"]["type"] == "automatic"
    got = scores(ws, tmp_path / "db.duckdb")
    # document unit, k = 4, topic 35: A2 (0), A1 (3), A3 (2), A1b->A1 (nothing). P@4 = 2/4, R = 1, RR = 1/2,
    # nDCG@4 = (3/log2 3 + 2/log2 4) / (3 + 2/log2 3).
    assert got[("team-x-run25", "35")] == near(2 / 4, 1, 1 / 2, (3 / log2(3) + 2 / 2) / (3 + 2 / log2(3)))
    # topic 41: B1 (2), B2 (1): the ideal order. P@4 = 2/4, R = 1, RR = 1, nDCG = 1.
    assert got[("team-x-run25", "41")] == near(2 / 4, 1, 1, 1)
    assert got[("team-x-run25", "52")] == (None, None, None, None)

    ws = import_2025(tmp_path, "--unit", "segment", out="ws25s")
    capsys.readouterr()
    got = scores(ws, tmp_path / "db-s.duckdb")
    # segment unit, topic 35: A2a (0), A1a (3), A3a (2), A1b (1). P@4 = 3/4, R = 3/3, RR = 1/2,
    # nDCG@4 = (3/log2 3 + 2/log2 4 + 1/log2 5) / (3 + 2/log2 3 + 1/log2 4).
    assert got[("team-x-run25", "35")] == near(3 / 4, 1, 1 / 2,
                                               (3 / log2(3) + 2 / 2 + 1 / log2(5)) / (3 + 2 / log2(3) + 1 / 2))
    assert got[("team-x-run25", "41")] == near(2 / 4, 1, 1, 1)
    with duckdb.connect(str(tmp_path / "db-s.duckdb"), read_only=True) as con:
        cited = con.execute("SELECT cited_docs FROM claims WHERE question_id = '35' ORDER BY claim_id").fetchall()
    assert cited == [([A1a, A1b],), ([A3a],)]


BAD_2024 = ('{"run_id": "bm25-rag", "topic_id": "2024-127266", "topic": "t", "references": ["' + B1a
            + '"], "response_length": 1, "answer": [{"text": "One.", "citations": [3]}]}')
BAD_2025 = ('{"metadata": {"team_id": "t", "run_id": "team-x-run25", "type": "automatic", "narrative_id": 41}, '
            '"references": ["' + B1a + '"], "answer": [{"text": "One.", "citations": ["' + B2a + '"]}]}')


@pytest.mark.parametrize("case", ["2024 run", "2025 run", "2024 topics", "2025 topics", "qrels"])
def test_a_malformed_line_is_refused_with_its_line_and_nothing_is_written(tmp_path, capsys, case):
    """One bad line per format: exit code 2, the file, line, field and reason; no workspace, no leftovers."""
    folder = tmp_path / "in"
    shutil.copytree(DATA, folder)
    if case == "2024 run":
        path = folder / "bm25-rag.jsonl"
        lines = path.read_text().splitlines()
        path.write_text("\n".join([lines[0], BAD_2024, lines[2]]) + "\n")
        expected = f"{path}:2: field 'answer[0].citations[0]': 3 is not an index into references (it holds 1: " \
                   "indexes 0 to 0)"
    elif case == "2025 run":
        path = folder / "team-x-run25.jsonl"
        lines = path.read_text().splitlines()
        path.write_text("\n".join([lines[0], BAD_2025, lines[2]]) + "\n")
        expected = f"{path}:2: field 'answer[0].citations[0]': '{B2a}': cites a segment that is not among the " \
                   "line's references"
    elif case == "2024 topics":
        path = folder / "topics.rag24.tsv"
        path.write_text(path.read_text().replace("2024-127266\t", "2024-127266 "))
        expected = f"{path}:2: expected 2 tab-separated fields (`topic_id<TAB>query`)"
    elif case == "2025 topics":
        path = folder / "topics.rag25.jsonl"
        path.write_text(path.read_text().replace('"title": "how do', '"titel": "how do'))
        expected = f"{path}:2: field 'title': None: required field is missing or empty (the topic's text)"
    else:
        path = folder / "qrels.rag24.txt"
        path.write_text(path.read_text() + f"2024-999 Q0 {A1a} 1\n")
        expected = f"{path}:9: field 'qid': '2024-999': not a topic of the topics file"
    year = "25" if "2025" in case else "24"
    runs = ["--run", str(folder / "team-x-run25.jsonl")] if year == "25" else [
        "--run", str(folder / "bm25-rag.jsonl"), "--run", str(folder / "dense-rag.jsonl")]
    topics = folder / ("topics.rag25.jsonl" if year == "25" else "topics.rag24.tsv")
    ws = tmp_path / "ws"
    assert main(["import", "trec-rag", "--topics", str(topics), *runs, "--qrels", str(folder / f"qrels.rag{year}.txt"),
                 "--out", str(ws)]) == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert not ws.exists() and not import_leftovers(tmp_path)


def test_a_topic_the_topics_file_lacks_is_refused_at_its_line(tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    lines = (DATA / "bm25-rag.jsonl").read_text().splitlines()
    run.write_text("\n".join([lines[0], lines[1].replace(TB, "2024-000001")]) + "\n")
    assert main(["import", "trec-rag", "--topics", str(DATA / "topics.rag24.tsv"), "--run", str(run),
                 "--out", str(tmp_path / "ws")]) == 2
    assert f"{run}:2: field 'topic_id': '2024-000001': not a topic of the topics file" in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def test_skip_bad_lists_and_counts_the_lines_left_out(tmp_path, capsys):
    """--skip-bad: the bad 2024 line (topic B) and a 2025-shaped line in a 2024 file are left out,
    each listed with its reason, then counted; topic B is then scored missing for that run."""
    run = tmp_path / "bm25-rag.jsonl"
    lines = (DATA / "bm25-rag.jsonl").read_text().splitlines()
    run.write_text("\n".join([lines[0], BAD_2024, lines[2], BAD_2025]) + "\n")
    ws = tmp_path / "ws"
    assert main(["import", "trec-rag", "--topics", str(DATA / "topics.rag24.tsv"), "--run", str(run), "--qrels",
                 str(DATA / "qrels.rag24.txt"), "--skip-bad", "--out", str(ws)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        (f"skipped {run}:2: field 'answer[0].citations[0]': 3 is not an index into references (it holds 1: "
         "indexes 0 to 0)"),
        (f"skipped {run}:4: field 'metadata': this line has a metadata object, so it is TREC RAG 2025, but the file "
         "is TREC RAG 2024 (its first line); one format per file"),
        "skipped 2 lines (--skip-bad): not imported"]
    assert [r["question_id"] for r in read_jsonl(ws / "runs" / "bm25-rag" / "records.jsonl")] == [TA, TC]
    got = scores(ws, tmp_path / "db.duckdb")
    assert got[("bm25-rag", TB)] == near(0, 0, 0, 0)  # missing on a judged topic: 0, in every denominator
    assert got[("bm25-rag", TA)] == near(2 / 5, 1, 1, (3 + 2 / log2(6)) / (3 + 2 / log2(3)))


def test_k_is_the_flag_when_given(tmp_path, capsys):
    ws = import_2024(tmp_path, "--k", "3")
    capsys.readouterr()
    got = scores(ws, tmp_path / "db.duckdb")
    # bm25-rag at k = 3, topic A: A1 (3), A2 (0), A1 again (nothing): P@3 = 1/3, R@3 = 1/2, RR = 1,
    # nDCG@3 = 3 / (3 + 2/log2 3)
    assert got[("bm25-rag", TA)] == near(1 / 3, 1 / 2, 1, 3 / (3 + 2 / log2(3)))


@pytest.mark.parametrize("unit", ["document", "segment"])
def test_export_trec_rag_round_trip_scores_identically(tmp_path, capsys, unit):
    """import -> refresh -> export --format trec-rag -> import (the exported topics, qrels and runs)
    -> refresh: every per-question score equal, for the 2024 runs and the 2025 run."""
    columns = "status, k, precision, recall, rr, ndcg, ap, f1, success, judged, support, coverage, " \
              "abstention_correct, false_abstention, disclosures"
    for name, importer in (("24", import_2024), ("25", import_2025)):
        ws = importer(tmp_path, "--unit", unit, out=f"ws{name}")
        db = tmp_path / f"first{name}.duckdb"
        first = stored_scores(ws, db, columns)
        out = tmp_path / f"export{name}"
        capsys.readouterr()
        assert main(["export", "--db", str(db), "--out", str(out), "--format", "trec-rag"]) == 0
        skipped = "run dense-rag: 1 question with a missing or failed record not written"
        assert (skipped in capsys.readouterr().err) == (name == "24")
        runs = sorted((out / "trec-rag").glob("*.jsonl"))
        assert [r.name for r in runs] == (["bm25-rag.jsonl", "dense-rag.jsonl"] if name == "24"
                                          else ["team-x-run25.jsonl"])
        again = tmp_path / f"again{name}"
        assert main(["import", "trec-rag", "--topics", str(out / "trec-rag" / "topics.tsv"),
                     *[a for r in runs for a in ("--run", str(r))], "--qrels", str(out / "trec-rag" / "qrels.txt"),
                     "--unit", unit, "--out", str(again)]) == 0
        second = stored_scores(again, tmp_path / f"second{name}.duckdb", columns)
        assert second == first
        assert sum(1 for v in first.values() if v[2] is not None) >= 2
    line = json.loads((tmp_path / "export24" / "trec-rag" / "bm25-rag.jsonl").read_text().splitlines()[0])
    assert line == {"run_id": "bm25-rag", "topic_id": TA, "topic": "what is the tallest mountain in africa",
                    "references": [A1b, A2a, A1a, A4a, A3a], "response_length": 7 + 10,
                    "answer": [{"text": "Kilimanjaro is the tallest mountain in Africa.", "citations": [0, 2]},
                               {"text": "Its summit, Uhuru Peak, rises 5,895 metres above sea level.",
                                "citations": [4]}]}


def test_export_trec_rag_refuses_a_database_without_answer_sentences(tmp_path, capsys):
    qrels, run, ws, db = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "ws", tmp_path / "db.duckdb"
    qrels.write_text("1 0 d1 1\n")
    run.write_text("1 Q0 d1 1 2.0 sys\n")
    assert main(["import", "trec", "--qrels", str(qrels), "--run", str(run), "--out", str(ws)]) == 0
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "out"), "--format", "trec-rag"]) == 2
    assert "no run of the database has answer sentences" in capsys.readouterr().err


def test_help_shows_an_example(capsys):
    for argv in (["import", "trec-rag", "--help"], ["export", "--help"]):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 0
        text = capsys.readouterr().out
        assert "example:" in text
        assert ("ragslice import trec-rag --topics" in text) if argv[0] == "import" else ("--format trec-rag" in text)


def test_the_bundled_example_imports_as_documented(tmp_path, capsys):
    """data/examples/trec-rag/ (docs/formats.md, "TREC RAG runs"): the 2024 runs at document unit."""
    ws = tmp_path / "ws"
    assert main(["import", "trec-rag", "--topics", str(EXAMPLE / "topics.rag24.tsv"), "--run",
                 str(EXAMPLE / "bm25-rag.jsonl"), "--run", str(EXAMPLE / "dense-rag.jsonl"), "--qrels",
                 str(EXAMPLE / "qrels.rag24.txt"), "--out", str(ws)]) == 0
    capsys.readouterr()
    got = scores(ws, tmp_path / "db.duckdb")
    assert got[("bm25-rag", TA)] == near(2 / 5, 1, 1, (3 + 2 / log2(6)) / (3 + 2 / log2(3)))
    for name in ("topics.rag25.jsonl", "team-x-run25.jsonl", "qrels.rag25.txt"):
        assert (EXAMPLE / name).is_file()

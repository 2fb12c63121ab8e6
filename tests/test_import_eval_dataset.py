"""`ragslice import eval-dataset`: the retrieval-metrics source document's evaluation dataset and runs
become a workspace; its A/B test (nDCG@10, paired t-test) is `ragslice compare`."""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import duckdb
import pytest
from scipy.stats import ttest_rel

from fixtures import REPO, import_leftovers, near, read_jsonl, sha256_of, stored_scores, write_json
from scoring.cli import main
from scoring.io.eval_dataset import normalise_query, question_id

EVAL = Path(__file__).resolve().parent / "data" / "eval_dataset"
EXAMPLES = REPO / "data" / "examples"
L3 = 1 / math.log2(3)  # the discount of rank 2


def seed_ndcg_at_k(retrieved: list[str], relevant: set[str], k: int) -> float:
    """`RetrievalEvaluator.ndcg_at_k` of the retrieval-metrics source document, as written there."""
    dcg = 0.0
    for i, doc_id in enumerate(retrieved[:k], 1):
        if doc_id in relevant:
            dcg += 1.0 / math.log2(i + 1)
    num_relevant = min(len(relevant), k)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, num_relevant + 1))
    return 0.0 if idcg == 0 else dcg / idcg


def ab_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, db = tmp_path / "ws", tmp_path / "ab.duckdb"
    assert main(["import", "eval-dataset", str(EVAL / "eval_dataset.json"),
                 "--run", f"fixed-500={EVAL / 'fixed_500.json'}", "--run", f"semantic={EVAL / 'semantic.json'}",
                 "--k", "10", "--out", str(ws)]) == 0
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    return ws, db


def test_eval_dataset_ab_test_is_ragslice_compare_with_scipys_paired_t_test(tmp_path, capsys):
    """The source document's A/B test (fixed-size vs semantic chunking, nDCG@10 per query, then
    scipy's ttest_rel on the two lists) is `ragslice compare fixed-500 semantic` at k = 10.

    By hand for the first query (relevant chunk_doc1_3, chunk_doc1_7): fixed-500 ranks them 2nd and
    6th, nDCG@10 = (1/log2 3 + 1/log2 7) / (1 + 1/log2 3); semantic ranks them 1st and 2nd: 1."""
    ws, db = ab_workspace(tmp_path)
    capsys.readouterr()
    dataset = json.loads((EVAL / "eval_dataset.json").read_text())
    runs = {name: {normalise_query(item["query"]): item["retrieved"]
                   for item in json.loads((EVAL / f"{file}.json").read_text())}
            for name, file in (("fixed-500", "fixed_500"), ("semantic", "semantic"))}
    seed = {name: [seed_ndcg_at_k(ranking[normalise_query(item["query"])], set(item["relevant_docs"]), 10)
                   for item in dataset] for name, ranking in runs.items()}
    assert seed["fixed-500"][0] == pytest.approx((L3 + 1 / math.log2(7)) / (1 + L3), abs=1e-15)
    assert seed["semantic"][0] == 1.0
    with duckdb.connect(str(db), read_only=True) as con:
        stored = {name: [v for (v,) in con.execute(
            "SELECT s.ndcg FROM question_scores s JOIN questions q USING (suite, question_id) WHERE s.run_id = ? "
            "ORDER BY q.position", [name]).fetchall()] for name in runs}
    for name in runs:
        assert stored[name] == pytest.approx(seed[name], abs=1e-12), name
    assert main(["compare", "fixed-500", "semantic", "--db", str(db), "--format", "json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    row = next(r for r in comparison["comparisons"] if r["metric"] == "ndcg" and r["slice"] == "all")
    expected = ttest_rel(seed["fixed-500"], seed["semantic"])
    assert row["n"] == len(dataset) == 10
    assert row["p_ttest"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert row["baseline"] == pytest.approx(sum(seed["fixed-500"]) / 10, abs=1e-12)
    assert row["candidate"] == pytest.approx(sum(seed["semantic"]) / 10, abs=1e-12)
    assert comparison["baseline"]["k"] == [10] and comparison["candidate"]["k"] == [10]


def test_eval_dataset_question_ids_are_position_and_hash_of_the_normalised_query():
    expected = "q-0001-" + hashlib.sha256(b"How to install Python on macOS?").hexdigest()[:8]
    assert question_id(1, "  How to\tinstall Python  on macOS? ") == expected
    assert question_id(12345, "x").startswith("q-12345-")


def import_small(ws: Path, *extra: str) -> int:
    small = EVAL / "small"
    return main(["import", "eval-dataset", str(small / "dataset.json"), "--run", f"bm25={small / 'run.json'}",
                 "--corpus", str(small / "corpus.jsonl"), "--out", str(ws), *extra])


def test_eval_dataset_with_a_corpus_imports_and_scores_by_hand(tmp_path, capsys):
    """tests/data/eval_dataset/small; k = 3, the most IDs a result retrieved.
    q1 [notes-12, runbook-7, notes-12 again], relevant {runbook-7}: the repeat keeps slot 3 as a
    chunk: P@3 = 1/3, R@3 = 1, RR = 1/2. q2 (matched despite a double space) [runbook-2, 7],
    relevant {runbook-1, runbook-2} (listed with a repeat): P@3 = 1/3, R@3 = 1/2, RR = 1.
    q3 has no relevant document: n/a. q4 is not in the run: missing, 0."""
    ws = tmp_path / "ws"
    assert import_small(ws) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {ws}: suite dataset, 4 questions, 6 documents, runs bm25 (k = 3)\n")
    assert "1 question without relevant documents: retrieval metrics n/a" in out
    assert "run bm25: lists 3 of 4 questions" in out
    got = stored_scores(ws, tmp_path / "db.duckdb", "precision, recall, rr, status")
    ids = [q["id"] for q in read_jsonl(ws / "suites" / "dataset" / "questions.jsonl")]
    assert [got[("bm25", q)] for q in ids] == [
        (*near(1 / 3, 1.0, 0.5), "ok"), (*near(1 / 3, 0.5, 1.0), "ok"), (None, None, None, "ok"),
        (0.0, 0.0, 0.0, "missing")]
    assert read_jsonl(ws / "runs" / "bm25" / "chunks.jsonl") == [
        {"id": "notes-12#2", "doc": "notes-12", "doc_version": "eval-dataset-dataset.json"}]
    docs = {d["id"]: d for d in read_jsonl(ws / "suites" / "dataset" / "documents.jsonl")}
    assert docs["runbook-1"] == {"id": "runbook-1", "title": "Rollback",
                                 "text": "Switch traffic back to the previous version."}
    assert docs["7"]["text"] == "Document 7 (not in the corpus file corpus.jsonl)"
    assert "unused-1" not in docs
    manifest = json.loads((ws / "runs" / "bm25" / "manifest.json").read_text())
    small = EVAL / "small"
    assert manifest["k"] == 3
    assert manifest["x_provenance"] == {
        "source_format": "eval-dataset", "source": str(small / "run.json"), "sha256": sha256_of(small / "run.json"),
        "inputs": [{"path": str(small / "dataset.json"), "sha256": sha256_of(small / "dataset.json")},
                   {"path": str(small / "corpus.jsonl"), "sha256": sha256_of(small / "corpus.jsonl")}]}


def test_eval_dataset_without_a_corpus_marks_documents_as_having_no_text(tmp_path, capsys):
    ws = tmp_path / "ws"
    assert main(["import", "eval-dataset", str(EVAL / "eval_dataset.json"), "--run", str(EVAL / "fixed_500.json"),
                 "--out", str(ws)]) == 0
    docs = read_jsonl(ws / "suites" / "eval_dataset" / "documents.jsonl")
    assert docs[0] == {"id": "chunk_doc1_3", "text": "Document chunk_doc1_3 (text not in the evaluation dataset)"}
    assert json.loads((ws / "runs" / "fixed_500" / "manifest.json").read_text())["k"] == 10


@pytest.mark.parametrize("dataset, run, message", [
    ([{"query": "a?", "relevant_docs": ["d1"]}], [{"query": "a?", "retrieved": ["d1"]}, {"query": "b?",
                                                                                      "retrieved": ["d2"]}],
     "run.json[1]: field 'query': 'b?': no question of the dataset has this query"),
    ([{"query": "a?", "relevant_docs": ["d1"]}], [{"query": "a?", "retrieved": ["d1"]}, {"query": " a? ",
                                                                                       "retrieved": ["d2"]}],
     "run.json[1]: field 'query': ' a? ': this run lists the query already at"),
    ([{"query": "a?", "relevant_docs": ["d1"]}, {"query": "a?", "relevant_docs": ["d2"]}],
     [{"query": "a?", "retrieved": ["d1"]}], "dataset.json[1]: field 'query': 'a?': the same query as the item at"),
    ([{"query": "a?", "relevant_docs": ["d 1"]}], [{"query": "a?", "retrieved": ["d1"]}],
     "dataset.json[0]: field 'relevant_docs[0]': 'd 1': an ID is a string of 1-128 characters"),
    ([{"query": "a?", "relevant_docs": ["d1"]}], [{"query": "a?"}],
     "run.json[0]: field 'retrieved': None: expected a list of retrieved IDs"),
    ([{"query": "", "relevant_docs": ["d1"]}], [{"query": "a?", "retrieved": ["d1"]}],
     "dataset.json[0]: field 'query': '': required field is missing or empty"),
])
def test_eval_dataset_bad_item_is_refused_with_its_position_and_nothing_written(tmp_path, capsys, dataset, run,
                                                                                message):
    data, runs = write_json(tmp_path / "dataset.json", dataset), write_json(tmp_path / "run.json", run)
    ws = tmp_path / "ws"
    assert main(["import", "eval-dataset", str(data), "--run", str(runs), "--out", str(ws)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / message) in err, err
    assert not ws.exists() and import_leftovers(tmp_path) == []


def test_eval_dataset_skip_bad_lists_and_counts_and_imports_the_rest(tmp_path, capsys):
    """Run items 1 (an unknown query) and 2 (a repeat of item 0) are left out: q1 ranks [d2, d1],
    relevant {d1}; k = 2: P@2 = 1/2, RR = 1/2."""
    data = write_json(tmp_path / "dataset.json", [{"query": "a?", "relevant_docs": ["d1"]}])
    runs = write_json(tmp_path / "run.json", [{"query": "a?", "retrieved": ["d2", "d1"]},
                                          {"query": "b?", "retrieved": ["d3", "d4", "d5"]},
                                          {"query": "a?", "retrieved": ["d1"]}])
    ws = tmp_path / "ws"
    assert main(["import", "eval-dataset", str(data), "--run", f"r={runs}", "--out", str(ws), "--skip-bad"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"skipped {runs}[1]: field 'query': 'b?': no question of the dataset has this query (queries are matched "
        "by their text, whitespace and Unicode form aside)",
        f"skipped {runs}[2]: field 'query': 'a?': this run lists the query already at {runs}[0]; one result per query",
        "skipped 2 lines (--skip-bad): not imported",
    ]
    assert stored_scores(ws, tmp_path / "db.duckdb", "k, precision, rr") == {("r", "q-0001-" + hashlib.sha256(
        b"a?").hexdigest()[:8]): (2, 0.5, 0.5)}


@pytest.mark.parametrize("names, message", [
    (["a", "a"], "two runs have this name"),
    (["r" * 65, "b"], "a run name is a folder name"),
])
def test_eval_dataset_run_names_are_distinct_folder_names(tmp_path, capsys, names, message):
    data = write_json(tmp_path / "dataset.json", [{"query": "a?", "relevant_docs": ["d1"]}])
    runs = write_json(tmp_path / "run.json", [{"query": "a?", "retrieved": ["d1"]}])
    flags = [arg for name in names for arg in ("--run", f"{name}={runs}")]
    assert main(["import", "eval-dataset", str(data), *flags, "--out", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert f"field '--run': '{names[0][:20]}" in err and message in err, err
    assert not (tmp_path / "ws").exists()


def test_eval_dataset_more_than_100_retrieved_needs_the_k_flag(tmp_path, capsys):
    data = write_json(tmp_path / "dataset.json", [{"query": "a?", "relevant_docs": ["d100"]}])
    runs = write_json(tmp_path / "run.json", [{"query": "a?", "retrieved": [f"d{i}" for i in range(101)]}])
    assert main(["import", "eval-dataset", str(data), "--run", str(runs), "--out", str(tmp_path / "ws")]) == 2
    assert f"{runs}[0]: field 'retrieved': retrieves 101 IDs" in capsys.readouterr().err
    assert main(["import", "eval-dataset", str(data), "--run", str(runs), "--out", str(tmp_path / "ws"),
                 "--k", "100"]) == 0


def test_eval_dataset_example_imports_and_scores(tmp_path, capsys):
    """data/examples/eval-dataset (k = 5, the most IDs a query retrieved): fixed-500's first relevant
    chunk is at ranks 2, 1, 3, 1 (RR 1/2, 1, 1/3, 1); semantic's at rank 1 everywhere."""
    ev = EXAMPLES / "eval-dataset"
    assert main(["import", "eval-dataset", str(ev / "eval_dataset.json"), "--run", f"fixed-500={ev / 'fixed_500.json'}",
                 "--run", f"semantic={ev / 'semantic.json'}", "--corpus", str(ev / "corpus.jsonl"),
                 "--out", str(tmp_path / "ev")]) == 0
    got = stored_scores(tmp_path / "ev", tmp_path / "ev.duckdb", "k, rr")
    ids = [q["id"] for q in read_jsonl(tmp_path / "ev" / "suites" / "eval_dataset" / "questions.jsonl")]
    assert [got[("fixed-500", q)] for q in ids] == [(5, 0.5), (5, 1.0), near(5, 1 / 3), (5, 1.0)]
    assert {got[("semantic", q)] for q in ids} == {(5, 1.0)}


def test_eval_dataset_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["import", "eval-dataset", "--help"])
    out = capsys.readouterr().out
    assert "example:\n  ragslice import eval-dataset " in out and "--skip-bad" in out and "--k" in out

"""`ragslice import ragchecker`: a RAGChecker input file becomes a suite without relevance labels and one
run whose responses are answer sentences."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from fixtures import REPO, import_leftovers, near, read_jsonl, sha256_of, stored_scores, write_json
from scoring.cli import main
from scoring.io.importing import context_id

RC = Path(__file__).resolve().parent / "data" / "ragchecker"
INPUTS = RC / "checking_inputs.json"
CONGO = context_id("The Congo is the deepest river in the world.")


def run_import(file: Path, out: Path, *flags: str) -> int:
    return main(["import", "ragchecker", str(file), "--out", str(out), *flags])


def test_ragchecker_fixture_imports_with_no_labels_and_scores_na(tmp_path, capsys):
    """tests/data/ragchecker/checking_inputs.json: entry 0 retrieves [000, 001]; entry 1 (query_id 1,
    a number) [001, the Nile text without doc_id = 000 by normalised text, the Congo text = its hash,
    001 again = chunk 001#2]; entry 2 nothing. k = 4. No labels: every retrieval metric is n/a,
    Judged@4 is 0 where something was retrieved (n/a for entry 2), and with no expected claims every
    answer metric is n/a."""
    ws = tmp_path / "ws"
    assert run_import(INPUTS, ws) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {ws}: suite checking_inputs, 3 questions, 3 documents, runs checking_inputs "
                          "(k = 4)\n")
    assert "Judged@k is 0" in out and "ragslice pool, then ragslice review" in out
    suite = ws / "suites" / "checking_inputs"
    questions = read_jsonl(suite / "questions.jsonl")
    assert questions[1] == {"id": "1", "text": "Which river carries the most water?", "type": "ragchecker",
                            "split": "dev", "critical": False, "tags": [], "relevant": [], "support": {},
                            "x_reference": "The Amazon carries more water than any other river."}
    assert [d["id"] for d in read_jsonl(suite / "documents.jsonl")] == ["000", "001", CONGO]
    records = read_jsonl(ws / "runs" / "checking_inputs" / "records.jsonl")
    assert [r["retrieved"] for r in records] == [["000", "001"], ["001", "000", CONGO, "001#2"], []]
    assert records[1]["answer_sentences"] == [
        {"text": "The Amazon carries the most water!", "citations": []},
        {"text": "Its discharge exceeds that of the next seven rivers combined.", "citations": []}]
    assert "claims" not in records[0]
    manifest = json.loads((ws / "runs" / "checking_inputs" / "manifest.json").read_text())
    assert manifest["k"] == 4 and manifest["x_provenance"] == {
        "source_format": "ragchecker", "source": str(INPUTS), "sha256": sha256_of(INPUTS), "inputs": []}
    got = stored_scores(ws, tmp_path / "db.duckdb",
                        "precision, recall, rr, judged, support, coverage, abstention_correct, false_abstention")
    assert got == {("checking_inputs", "0"): (None, None, None, 0.0, None, None, None, None),
                   ("checking_inputs", "1"): (None, None, None, 0.0, None, None, None, None),
                   ("checking_inputs", "2"): (None, None, None, None, None, None, None, None)}


def test_ragchecker_labels_added_by_review_score_retrieval(tmp_path, capsys):
    """A reviewer grades 000 relevant for question 0 (the Nile question): at k = 4 entry 0's
    [000, 001] scores P@4 = 1/4, R@4 = 1/1, RR = 1, Judged@4 = 1/2 (000 judged, 001 not)."""
    ws = tmp_path / "ws"
    assert run_import(INPUTS, ws) == 0
    assert main(["review", str(ws), "--reviewer", "ana", "--question", "0", "--doc", "000", "--grade", "1"]) == 0
    got = stored_scores(ws, tmp_path / "db.duckdb", "precision, recall, rr, judged")
    assert got[("checking_inputs", "0")] == near(1 / 4, 1.0, 1.0, 1 / 2)
    assert got[("checking_inputs", "1")] == (None, None, None, 0.0)


def _inputs(tmp_path: Path, results) -> Path:
    return write_json(tmp_path / "inputs.json", {"results": results})


ENTRY = {"query_id": "a", "query": "Q?", "gt_answer": "A.", "response": "R.",
         "retrieved_context": [{"doc_id": "d1", "text": "one"}]}


@pytest.mark.parametrize("bad, message", [
    ({**ENTRY, "query": ""}, "[1]: field 'query': '': required field is missing or empty (the question)"),
    ({**ENTRY, "query_id": "a b"}, "[1]: field 'query_id': 'a b': required: the query ID"),
    ({**ENTRY, "response": None}, "[1]: field 'response': None: required: the response, a string"),
    ({**ENTRY, "retrieved_context": [{"doc_id": "d2", "text": "two"}, {"doc_id": "d3"}]},
     "[1]: field 'retrieved_context[1].text': None: required: the context's text"),
    ({**ENTRY, "retrieved_context": {"doc_id": "d2", "text": "two"}},
     "[1]: field 'retrieved_context': {'doc_id': 'd2', 'text': 'two'}: expected a list of"),
    ({**ENTRY, "query_id": "b", "retrieved_context": [{"doc_id": "d1", "text": "another text"}]},
     "[1]: field 'retrieved_context[0].doc_id': 'd1': this doc_id names another text at"),
    (ENTRY, "[1]: field 'query_id': 'a': duplicate query_id (first at"),
    ({**ENTRY, "gt_answer": 3}, "[1]: field 'gt_answer': 3: expected a string or null"),
])
def test_ragchecker_bad_entry_is_refused_with_its_index_and_field_and_nothing_written(tmp_path, capsys, bad,
                                                                                       message):
    inputs = _inputs(tmp_path, [ENTRY, bad])
    assert run_import(inputs, tmp_path / "ws") == 2
    err = capsys.readouterr().err
    assert f"{inputs}{message}" in err, err
    assert not (tmp_path / "ws").exists() and import_leftovers(tmp_path) == []


@pytest.mark.parametrize("text, message", [
    ('{"results": [\n  {"query_id": "a",}\n]}', ":2: not valid JSON (Expecting property name enclosed in double "
                                                 "quotes, column 20)"),
    ('[{"query_id": "a"}]', ": field 'results': expected a RAGChecker input"),
    ('{"results": []}', ": field 'results': the file holds no results"),
])
def test_ragchecker_unreadable_file_is_refused(tmp_path, capsys, text, message):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(text)
    assert run_import(inputs, tmp_path / "ws") == 2
    assert f"{inputs}{message}" in capsys.readouterr().err


def test_ragchecker_skip_bad_lists_and_counts_and_imports_the_rest(tmp_path, capsys):
    """Entries 1 and 2 are refused and left out; entry 0 (one context) imports: k = 1."""
    inputs = _inputs(tmp_path, [ENTRY, {**ENTRY, "query_id": "b", "query": None},
                                {**ENTRY, "query_id": "c", "retrieved_context": [{"doc_id": "d 9", "text": "x"}]}])
    ws = tmp_path / "ws"
    assert run_import(inputs, ws, "--skip-bad") == 0
    assert capsys.readouterr().err.splitlines() == [
        f"skipped {inputs}[1]: field 'query': None: required field is missing or empty (the question)",
        f"skipped {inputs}[2]: field 'retrieved_context[0].doc_id': 'd 9': a doc_id is a string of 1-128 characters "
        "with no whitespace or control characters, a whole number, or null",
        "skipped 2 lines (--skip-bad): not imported",
    ]
    assert [q["id"] for q in read_jsonl(ws / "suites" / "inputs" / "questions.jsonl")] == ["a"]
    assert json.loads((ws / "runs" / "inputs" / "manifest.json").read_text())["k"] == 1


def test_ragchecker_widest_entry_over_100_needs_the_k_flag(tmp_path, capsys):
    contexts = [{"doc_id": f"d{i}", "text": f"text {i}"} for i in range(101)]
    inputs = _inputs(tmp_path, [{**ENTRY, "retrieved_context": contexts}])
    assert run_import(inputs, tmp_path / "ws") == 2
    assert f"{inputs}[0]: field 'retrieved_context': delivers 101 contexts" in capsys.readouterr().err
    assert run_import(inputs, tmp_path / "ws", "--k", "10") == 0


def test_ragchecker_example_imports_and_scores(tmp_path, capsys):
    """data/examples/ragchecker: three entries, k = 3; no labels, so retrieval metrics are n/a and
    Judged@3 is 0."""
    example = REPO / "data" / "examples" / "ragchecker" / "checking_inputs.json"
    assert run_import(example, tmp_path / "ws") == 0
    got = stored_scores(tmp_path / "ws", tmp_path / "db.duckdb", "k, precision, judged")
    assert sorted(got.values()) == [(3, None, 0.0)] * 3
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM answer_sentences").fetchone()[0] > 0


def test_ragchecker_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["import", "ragchecker", "--help"])
    out = capsys.readouterr().out
    assert "example:\n  ragslice import ragchecker " in out and "--skip-bad" in out

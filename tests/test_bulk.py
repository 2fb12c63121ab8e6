"""The bulk path (`scoring.store.bulk`) against the rule-by-rule path (`scoring.store.records`).

Two guarantees: on a clean workspace both paths write identical tables; and the bulk path never
accepts what the rules refuse (it hands any doubt to the rules). The fuzz test
(`test_fuzz_refresh.py`) checks the second on random mutations; this file on named ones.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

import test_chunks
from scoring.store.bulk import shape_ok, stage_bulk
from scoring.errors import Problems
from scoring.store.refresh import refresh, stage, write_suite
from scoring.store.schema import create_schema
from scoring.io.synth import write_workspace
from scoring.store.workspace import load_workspace
from fixtures import R, build, build_large, edit_line, replace_line

DATA = Path(__file__).resolve().parents[1] / "data"
COMPARED = ("suites", "documents", "questions", "labels", "expected_claims", "chunks", "runs", "records",
            "retrieved", "claims", "question_scores", "answer_sentences", "alignments")


def _differences(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Per table, rows only in A and only in B (every column, as multisets of rows)."""
    con = duckdb.connect()
    con.execute("ATTACH ? AS a (READ_ONLY)", [str(a)])
    con.execute("ATTACH ? AS b (READ_ONLY)", [str(b)])
    out = {}
    for table in COMPARED:
        out[table] = tuple(
            con.execute(f"SELECT count(*) FROM (SELECT * FROM {x}.{table} EXCEPT ALL SELECT * FROM {y}.{table})")
            .fetchone()[0]
            for x, y in (("a", "b"), ("b", "a")))
    con.close()
    return out


def _both_ways(ws: Path, tmp_path: Path) -> dict[str, tuple[int, int]]:
    refresh(ws, tmp_path / "bulk.duckdb")
    refresh(ws, tmp_path / "rules.duckdb", bulk=False)
    return _differences(tmp_path / "bulk.duckdb", tmp_path / "rules.duckdb")


def _synth(root: Path) -> Path:
    write_workspace(300, 3, seed=5, out=root)
    return root


def _free_text(root: Path) -> Path:
    """The fixture with answers as sentences: citations by index, by ID and both, an extension field, a
    record with claims and sentences, and a free-text record in a run with its own chunk map."""
    ws = build(root)
    edit_line(R(ws), 1, lambda row: (row.pop("claims"), row.update(answer_sentences=[
        {"text": "The release window starts on Monday.", "citations": [0, "rb-4"], "x_score": 0.5},
        {"text": "Nothing else.", "citations": []}])))
    edit_line(R(ws), 2, lambda row: row.update(answer_sentences=[{"text": "Switch back.", "citations": ["rb-1"]}]))
    (ws / "runs" / "cand" / "chunks.jsonl").write_text(
        json.dumps({"id": "rb-2#0", "doc": "rb-2", "doc_version": "corpus-1", "text": "Smoke test."}) + "\n")
    edit_line(R(ws).parent.parent / "cand" / "records.jsonl", 2, lambda row: (row.pop("claims"), row.update(
        retrieved=["rb-2#0", "rb-1"], answer_sentences=[{"text": "Then run the smoke test.", "citations": [0, 1]}])))
    return ws


WORKSPACES = {
    "free-text answers (sentences, citations by index and ID, a chunk map)": _free_text,
    "seed-lab": lambda root: DATA / "seed-lab",
    "demo (a run with its own chunk map)": lambda root: DATA / "demo",
    "fixture": build,
    "chunk maps": test_chunks.build,
    "synthetic (missing and failed records)": _synth,
    "generated": lambda root: build_large(root, questions=200, runs=2),
}


@pytest.mark.parametrize("name", WORKSPACES)
def test_both_paths_write_identical_tables(name: str, tmp_path: Path) -> None:
    ws = WORKSPACES[name](tmp_path / "ws")
    differences = _both_ways(ws, tmp_path)
    assert differences == {table: (0, 0) for table in COMPARED}
    with duckdb.connect(str(tmp_path / "bulk.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM retrieved").fetchone()[0] > 0


def test_the_comparison_sees_a_changed_score(tmp_path: Path) -> None:
    """The table comparison above is not blind: one changed citation shows up as differing rows."""
    ws = build(tmp_path / "ws")
    refresh(ws, tmp_path / "before.duckdb")
    edit_line(R(ws), 1, lambda row: row["claims"][0].__setitem__("citations", []))
    refresh(ws, tmp_path / "after.duckdb")
    differences = _differences(tmp_path / "before.duckdb", tmp_path / "after.duckdb")
    assert differences["claims"] != (0, 0)
    assert differences["question_scores"] != (0, 0)


def _bulk_verdict(ws: Path) -> bool:
    problems = Problems()
    workspace = load_workspace(ws, problems)
    assert not problems
    con = duckdb.connect()
    create_schema(con)
    for suite in workspace.suites.values():
        write_suite(con, suite)
    from scoring.store.chunks import write_chunks
    from scoring.store.records import stage_runs

    runs = list(workspace.runs.values())
    for run in runs:  # as staging does: the runs' own chunk maps first
        write_chunks(con, run.suite, run.run_id, run.chunks or {})
    stage_runs(con, runs)
    return stage_bulk(con, runs)


def _rule_problems(ws: Path) -> list[str]:
    problems = Problems()
    workspace = load_workspace(ws, problems)
    con = duckdb.connect()
    create_schema(con)
    for suite in workspace.suites.values():
        write_suite(con, suite)
    stage(con, list(workspace.runs.values()), problems, bulk=False)
    return [p.rule for p in problems.items]


# Raw first lines of the fixture's first run that the record format refuses; each must make the bulk
# path step aside (and the rules name the problem).
BAD_LINES = {
    "repeated key, same type": '{"question_id": "q-1", "question_id": "q-1", "retrieved": [], "claims": []}',
    "repeated claim key": '{"question_id": "q-1", "retrieved": [], "claims": [{"id": "a", "id": "b", "citations": []}]}',
    "number as question ID": '{"question_id": 1, "retrieved": [], "claims": []}',
    "number as retrieved ID": '{"question_id": "q-1", "retrieved": [5], "claims": []}',
    "null in a ranking": '{"question_id": "q-1", "retrieved": ["rb-1", null], "claims": []}',
    "repeated retrieved ID": '{"question_id": "q-1", "retrieved": ["rb-1", "rb-1"], "claims": []}',
    "unknown document": '{"question_id": "q-1", "retrieved": ["nope"], "claims": []}',
    "latency as text": '{"question_id": "q-1", "retrieved": [], "claims": [], "latency_ms": "12"}',
    "negative cost": '{"question_id": "q-1", "retrieved": [], "claims": [], "cost_usd": -1}',
    "huge latency": '{"question_id": "q-1", "retrieved": [], "claims": [], "latency_ms": 1e400}',
    "unknown field": '{"question_id": "q-1", "retrieved": [], "claims": [], "score": 1}',
    "claims missing": '{"question_id": "q-1", "retrieved": []}',
    "one claim without citations": '{"question_id": "q-1", "retrieved": [], "claims": '
                                   '[{"id": "a", "citations": []}, {"id": "b"}]}',
    "null claim": '{"question_id": "q-1", "retrieved": [], "claims": [null]}',
    "repeated claim ID": '{"question_id": "q-1", "retrieved": [], "claims": '
                         '[{"id": "a", "citations": []}, {"id": "a", "citations": []}]}',
    "claim ID with a space": '{"question_id": "q-1", "retrieved": [], "claims": [{"id": "a b", "citations": []}]}',
    "cited twice": '{"question_id": "q-1", "retrieved": [], "claims": [{"id": "a", "citations": ["x", "x"]}]}',
    "claim text a number": '{"question_id": "q-1", "retrieved": [], "claims": [{"id": "a", "citations": [], "text": 3}]}',
    "not an object": '["q-1"]',
    "not JSON": '{"question_id": "q-1",',
    "unknown question": '{"question_id": "q-404", "retrieved": [], "claims": []}',
    "sentence index past the ranking": '{"question_id": "q-1", "retrieved": ["rb-1"], "answer_sentences": '
                                       '[{"text": "a", "citations": [1]}]}',
    "negative sentence index": '{"question_id": "q-1", "retrieved": ["rb-1", "rb-2"], "answer_sentences": '
                               '[{"text": "a", "citations": [-2]}]}',  # SQL would read it from the end
    "sentence cites a document twice (index and ID)": '{"question_id": "q-1", "retrieved": ["rb-1"], '
                                                      '"answer_sentences": [{"text": "a", "citations": [0, "rb-1"]}]}',
    "sentence without citations": '{"question_id": "q-1", "retrieved": [], "answer_sentences": [{"text": "a"}]}',
    "second sentence without citations": '{"question_id": "q-1", "retrieved": [], "answer_sentences": '
                                         '[{"text": "a", "citations": []}, {"text": "b"}]}',
    "blank sentence": '{"question_id": "q-1", "retrieved": [], "answer_sentences": [{"text": "  ", "citations": []}]}',
    "null sentence": '{"question_id": "q-1", "retrieved": [], "answer_sentences": [null]}',
    "sentence text a number": '{"question_id": "q-1", "retrieved": [], "answer_sentences": '
                              '[{"text": 3, "citations": []}]}',
    "fractional citation": '{"question_id": "q-1", "retrieved": ["rb-1"], "answer_sentences": '
                           '[{"text": "a", "citations": [0.5]}]}',
    "null citation": '{"question_id": "q-1", "retrieved": ["rb-1"], "answer_sentences": '
                     '[{"text": "a", "citations": [null, 0]}]}',
    "cited ID with a space": '{"question_id": "q-1", "retrieved": [], "answer_sentences": '
                             '[{"text": "a", "citations": ["a b"]}]}',
    "unknown sentence field": '{"question_id": "q-1", "retrieved": [], "answer_sentences": '
                              '[{"text": "a", "citations": [], "score": 1}]}',
    "repeated sentence key": '{"question_id": "q-1", "retrieved": [], "answer_sentences": '
                             '[{"text": "a", "text": "b", "citations": []}]}',
    "sentences not a list": '{"question_id": "q-1", "retrieved": [], "answer_sentences": "a"}',
    "null sentences, no claims": '{"question_id": "q-1", "retrieved": [], "answer_sentences": null}',
    "a sentence that is a string": '{"question_id": "q-1", "retrieved": [], "answer_sentences": ["a"]}',
    "more sentences than max_claims": '{"question_id": "q-1", "retrieved": [], "answer_sentences": ['
                                      + ", ".join(['{"text": "a", "citations": []}'] * 101) + ']}',
}


def test_deep_nesting_in_an_extension_is_left_to_the_rules_which_accept_it(tmp_path: Path) -> None:
    """The bulk path may be stricter than the rules (never laxer): a doubt costs time, not a refusal."""
    ws = build(tmp_path / "ws")
    replace_line(R(ws), 1, '{"question_id": "q-1", "retrieved": [], "claims": [], "x_deep": '
                 + "[" * 3000 + "]" * 3000 + "}")
    assert not _bulk_verdict(ws)
    assert _rule_problems(ws) == []
    assert refresh(ws, tmp_path / "scores.duckdb").records > 0


@pytest.mark.parametrize("name", BAD_LINES)
@pytest.mark.cases(14)
def test_a_broken_rule_sends_the_runs_to_the_rules(name: str, tmp_path: Path) -> None:
    ws = build(tmp_path / "ws")
    assert _bulk_verdict(ws)  # the fixture itself is clean
    replace_line(R(ws), 1, BAD_LINES[name])
    assert not _bulk_verdict(ws)
    assert _rule_problems(ws), "the rules must name a problem for this line"


def test_a_question_twice_in_one_run_sends_the_runs_to_the_rules(tmp_path: Path) -> None:
    ws = build(tmp_path / "ws")
    first = R(ws).read_text(encoding="utf-8").splitlines()[0]
    R(ws).write_text(R(ws).read_text(encoding="utf-8") + first + "\n", encoding="utf-8")
    assert not _bulk_verdict(ws)
    assert any("more than one line" in rule for rule in _rule_problems(ws))


def test_extensions_blank_lines_and_nulls_stay_on_the_bulk_path(tmp_path: Path) -> None:
    """What the format allows does not cost the slow path."""
    ws = build(tmp_path / "ws")
    def allowed(row: dict) -> None:
        row.update({"x_trace": {"id": [1, "a"]}, "answer": None, "latency_ms": None})
        row["claims"][0].update({"x_score": 0.5, "text": None})

    edit_line(R(ws), 1, allowed)
    R(ws).write_text(R(ws).read_text(encoding="utf-8") + "\n   \n", encoding="utf-8")
    assert _bulk_verdict(ws)
    assert _rule_problems(ws) == []


@pytest.mark.parametrize(("shape", "ok"), [
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "claims": ["NULL"]}, True),
    ({"question_id": "VARCHAR", "retrieved": ["NULL"], "claims": [{"id": "VARCHAR", "citations": ["NULL"]}],
      "latency_ms": "UBIGINT", "cost_usd": "DOUBLE", "error": "NULL", "x_any": {"a": "JSON"}}, True),
    ({"question_id": "VARCHAR", "retrieved": ["JSON"], "claims": ["NULL"]}, False),
    ({"question_id": "JSON", "retrieved": ["VARCHAR"], "claims": ["NULL"]}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "claims": [{"citations": ["VARCHAR"]}]}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "claims": ["NULL"], "latency_ms": "VARCHAR"}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "claims": ["NULL"], "latency_ms": "HUGEINT"}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"]}, False),
    ({"question_id": "VARCHAR", "retrieved": "VARCHAR", "claims": ["NULL"]}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "answer_sentences": [
        {"text": "VARCHAR", "citations": ["JSON"], "x_n": "UBIGINT"}]}, True),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "answer_sentences": ["NULL"], "claims": ["NULL"]}, True),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "answer_sentences": [{"text": "VARCHAR"}]}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "answer_sentences": [
        {"text": "NULL", "citations": ["NULL"]}]}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "answer_sentences": [
        {"text": "VARCHAR", "citations": ["DOUBLE"]}]}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "answer_sentences": ["JSON"]}, False),
    ({"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "answer_sentences": "NULL"}, False),
])
def test_record_shapes(shape: dict, ok: bool) -> None:
    assert shape_ok(json.dumps(shape)) is ok


def test_free_text_answers_take_the_bulk_path(tmp_path: Path) -> None:
    """Sentences (citations by index, by ID or both; extensions; beside claims) no longer cost the slow path:
    the bundled demo's free-text run and the free-text fixture are staged in bulk."""
    assert _bulk_verdict(_free_text(tmp_path / "ws"))
    assert _bulk_verdict(DATA / "demo")
    ws = _free_text(tmp_path / "again")
    refresh(ws, tmp_path / "bulk.duckdb")
    with duckdb.connect(str(tmp_path / "bulk.duckdb"), read_only=True) as con:
        # base q-1: sentence 0 cites index 0 (rb-3) and rb-4; cand q-2's index 0 is the chunk rb-2#0
        assert con.execute("SELECT run_id, question_id, sentence, citations, free FROM answer_sentences "
                           "ORDER BY ALL").fetchall() == [
            ("base", "q-1", 0, ["rb-3", "rb-4"], True), ("base", "q-1", 1, [], True),
            ("base", "q-2", 0, ["rb-1"], False), ("cand", "q-2", 0, ["rb-2#0", "rb-1"], True)]


def test_a_byte_order_mark_is_left_to_the_rules(tmp_path: Path) -> None:
    ws = build(tmp_path / "ws")
    R(ws).write_bytes(b"\xef\xbb\xbf" + R(ws).read_bytes())
    assert not _bulk_verdict(ws)
    assert any("byte-order mark" in rule for rule in _rule_problems(ws))


def test_parquet_records_take_the_bulk_path(tmp_path: Path) -> None:
    ws = build(tmp_path / "ws")
    records = R(ws)
    with duckdb.connect() as con:
        con.execute("COPY (SELECT * FROM read_json(?, format='newline_delimited')) TO ? (FORMAT parquet)",
                    [str(records), str(records.with_suffix(".parquet"))])
    records.unlink()
    assert _bulk_verdict(ws)
    differences = _both_ways(ws, tmp_path)
    assert differences == {table: (0, 0) for table in COMPARED}
    shutil.rmtree(ws)

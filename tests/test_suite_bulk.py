"""A suite read set-based (`scoring.store.suite_bulk`) makes the database a refresh that reads it in
Python makes, reviewers' decisions included; and a suite it doubts is read in Python, with the same
problems. (Line by line, the set-based reader is held to the Python reader in tests/test_validation.py.)"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

import scoring.store.refresh as refresh_module
from scoring.errors import ValidationError
from scoring.store.refresh import refresh
from fixtures import REPO, SEED_LAB

DEMO = REPO / "data" / "demo"
SKIPPED = ("refresh_log", "meta")
"""Tables that record when and how long, not what."""


def _tables(db: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(db), read_only=True) as con:
        names = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()]
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in names if t not in SKIPPED}


def _refresh_both_ways(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict, list[bool]]:
    """The tables of a refresh of `ws` as it reads suites, and of one reading them in Python only; and
    what the set-based reader said of each suite."""
    said: list[bool] = []
    stage = refresh_module.stage_suite

    def spy(con: duckdb.DuckDBPyConnection, suite: object) -> bool:
        said.append(stage(con, suite))
        return said[-1]

    with monkeypatch.context() as patch:
        patch.setattr(refresh_module, "stage_suite", spy)
        refresh(ws, tmp_path / "set-based.duckdb")
    with monkeypatch.context() as patch:
        patch.setattr(refresh_module, "stage_suite", lambda con, suite: False)
        refresh(ws, tmp_path / "python.duckdb")
    return _tables(tmp_path / "set-based.duckdb"), _tables(tmp_path / "python.duckdb"), said


def _refused_both_ways(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The problems of a refresh of `ws` as it reads suites, which must be those of one reading them in
    Python only; nothing is written."""
    problems = []
    for reader in (refresh_module.stage_suite, lambda con, suite: False):
        with monkeypatch.context() as patch, pytest.raises(ValidationError) as raised:
            patch.setattr(refresh_module, "stage_suite", reader)
            refresh(ws, tmp_path / f"db{len(problems)}.duckdb")
        problems.append(str(raised.value))
    assert problems[0] == problems[1]
    assert not (tmp_path / "db0.duckdb").exists()
    return problems[0]


def test_the_demo_read_set_based_makes_the_database_the_python_reader_makes(tmp_path, monkeypatch):
    """The demo suite carries reviewers' decisions of every kind (relevance, support, dispute,
    alignment, disagreements): applied to the staged rows, they leave every table as the Python reader
    leaves it."""
    ws = tmp_path / "ws"
    shutil.copytree(DEMO, ws)
    shutil.rmtree(ws / "runs" / "chunk-160")  # a run's own chunk map is checked against the suite in Python
    assert list((ws / "suites" / "demo" / "reviews").glob("*.jsonl"))
    set_based, python, said = _refresh_both_ways(ws, tmp_path, monkeypatch)
    assert said == [True]
    assert set_based == python
    assert len(set_based["reviews"]) > 0 and len(set_based["label_changes"]) > 0


def _edit_lines(path: Path, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(edit(lines)), encoding="utf-8")


@pytest.mark.parametrize("case, edit, set_based", [
    ("line feeds after carriage returns", lambda lines: [line.replace("\n", "\r\n") for line in lines], True),
    ("blank lines between the questions", lambda lines: [line + "\n  \n" for line in lines], True),
    ("an extension field", lambda lines: [lines[0].replace('{"id"', '{"x_owner": "ana", "id"', 1), *lines[1:]],
     False),
    ("a comma before a bracket inside a text", lambda lines: [lines[0].replace('"text": "', '"text": "a, ] b, } ', 1),
                                                             *lines[1:]], True),
    ("a null tag list refused", lambda lines: [lines[0].replace('{"id"', '{"tags": null, "id"', 1), *lines[1:]],
     False),
    ("a trailing comma refused", lambda lines: [lines[0].replace('{"id"', '{"id"', 1).rstrip()[:-1] + ", }\n",
                                                *lines[1:]], False),
    ("a carriage return between two objects refused",
     lambda lines: [lines[0].rstrip("\n") + "\r" + lines[1], *lines[2:]], False),
    ("a graded support map", lambda lines: [lines[0].replace('"support": {"monday": ["launch"]}',
                                                             '"support": {"monday": {"launch": "partial"}}'), *lines[1:]],
     True),
    ("a graded support map with an unknown grade refused",
     lambda lines: [lines[0].replace('"support": {"monday": ["launch"]}', '"support": {"monday": {"launch": "most"}}'),
                    *lines[1:]], False),
    ("a graded support map with only none refused",
     lambda lines: [lines[0].replace('"support": {"monday": ["launch"]}', '"support": {"monday": {"launch": "none"}}'),
                    *lines[1:]], False),
])
def test_a_suite_read_either_way_makes_one_database(tmp_path, monkeypatch, case, edit, set_based):
    """Lines the set-based reader takes, and lines it leaves to the Python reader (which accepts an
    extension field and refuses the rest with the same problems either way)."""
    ws = tmp_path / "ws"
    shutil.copytree(SEED_LAB, ws)
    _edit_lines(ws / "suites" / "seed-lab" / "questions.jsonl", edit)
    if case.endswith("refused"):
        assert "questions.jsonl:1" in _refused_both_ways(ws, tmp_path, monkeypatch)
        return
    first, second, said = _refresh_both_ways(ws, tmp_path, monkeypatch)
    assert said == [set_based]
    assert first == second
    assert len(first["questions"]) == 4


def test_a_question_with_a_reserved_claim_id_is_refused_either_way(tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(SEED_LAB, ws)
    path = ws / "suites" / "seed-lab" / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    claim = next(iter(rows[0]["support"]))
    rows[0]["support"] = {"unlabelled#2": rows[0]["support"][claim]}
    rows[0].pop("claims", None)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(ValidationError, match="is reserved for the generated claim of an unlabelled answer"):
        refresh(ws, tmp_path / "db.duckdb")


def _books(tmp_path: Path, *, passages: bool) -> Path:
    """tests/test_chunks.py's workspace without the run that brings its own chunk map: a suite with a
    chunk map (documents labelled), or the passage-level suite of that file (chunks labelled), with a
    review decision on a passage."""
    from test_chunks import build, rec

    ws = build(tmp_path / "ws")
    shutil.rmtree(ws / "runs" / "fine")
    if passages:
        suite = ws / "suites" / "books"
        meta = json.loads((suite / "suite.json").read_text(encoding="utf-8"))
        (suite / "suite.json").write_text(json.dumps({**meta, "unit": "chunk"}), encoding="utf-8")
        (suite / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in [
            {"id": "q1", "text": "Alpha three?", "type": "lookup", "split": "dev", "relevant": {"A#1": 2},
             "support": {"x": ["A#1"]}},
            {"id": "q2", "text": "Secret?", "type": "permission", "split": "dev", "caller": ["eng"],
             "relevant": {"C#0": 1}, "support": {}}]), encoding="utf-8")
        (ws / "runs" / "coarse" / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
            rec("q1", ["A#0", "A#1", "A"], {"x": ["A#1"], "y": ["A"]}), rec("q2", ["H#0", "C#0"], {})]),
            encoding="utf-8")
        (suite / "reviews").mkdir()
        (suite / "reviews" / "ana.jsonl").write_text(json.dumps(
            {"at": "2026-11-30T14:02:11Z", "reviewer": "ana", "kind": "relevance", "question_id": "q1",
             "doc_id": "A#0", "grade": 1}) + "\n", encoding="utf-8")
    return ws


@pytest.mark.parametrize("passages", [False, True], ids=["documents labelled", "passages labelled"])
def test_a_suite_with_a_chunk_map_is_read_set_based(tmp_path, monkeypatch, passages):
    ws = _books(tmp_path, passages=passages)
    set_based, python, said = _refresh_both_ways(ws, tmp_path, monkeypatch)
    assert said == [True]
    assert set_based == python
    assert len(set_based["chunks"]) == 6
    assert [row[1:3] for row in set_based["labels"]] == (
        [("q1", "A#0"), ("q1", "A#1"), ("q2", "C#0")] if passages else
        [("q1", "A"), ("q1", "B"), ("q2", "C"), ("q4", "A")])


@pytest.mark.parametrize("case, edit", [
    ("a chunk of another version", lambda c: c.update(doc_version="v1")),
    ("a chunk of no document", lambda c: c.update(doc="Z")),
    ("a chunk named as a document", lambda c: c.update(id="B")),
    ("a chunk ending before it starts", lambda c: c.update(start=20, end=5)),
    ("a negative offset", lambda c: c.update(start=-1)),
    ("an offset beyond a whole number of 64 bits", lambda c: c.update(end=2**63)),
    ("an unknown field", lambda c: c.update(score=1)),
    ("a number for text", lambda c: c.update(text=3)),
])
def test_a_chunk_map_the_rules_refuse_is_refused_either_way(tmp_path, monkeypatch, case, edit):
    ws = _books(tmp_path, passages=False)
    path = ws / "suites" / "books" / "chunks.jsonl"
    chunks = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edit(chunks[1])
    path.write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    assert "suites/books/chunks.jsonl:2" in _refused_both_ways(ws, tmp_path, monkeypatch)

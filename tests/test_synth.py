"""`ragslice synth`: valid workspaces of the requested size and shape, byte-identical per seed."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from fixtures import read_jsonl
from scoring.cli import main
from scoring.metrics.reference import evaluate
from scoring.errors import ValidationError
from scoring.store.refresh import refresh
from scoring.io.synth import write_workspace

QUESTIONS, RUNS, REPEATS = 50, 2, 2
TYPES = {"lookup", "multi-evidence", "near-duplicate", "outdated", "conflicting", "unanswerable", "permission"}


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "ws"
    write_workspace(QUESTIONS, RUNS, repeats=REPEATS, seed=7, out=root)
    return root


@pytest.fixture(scope="module")
def database(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("synth-db") / "synth.duckdb"
    refresh(workspace, db)
    return db


def test_layout_and_manifests_group_repeats(workspace: Path) -> None:
    runs = sorted(p.name for p in (workspace / "runs").iterdir())
    assert runs == ["sys-000.r1", "sys-000.r2", "sys-001.r1", "sys-001.r2"]
    manifest = json.loads((workspace / "runs" / "sys-001.r2" / "manifest.json").read_text())
    assert (manifest["run_id"], manifest["group"], manifest["repeat"]) == ("sys-001.r2", "sys-001", 2)
    assert [p.name for p in sorted((workspace / "suites").iterdir())] == ["synth"]


def test_refreshes_cleanly_with_every_pair_scored(workspace: Path, database: Path) -> None:
    lines = {run.name: read_jsonl(run / "records.jsonl") for run in (workspace / "runs").iterdir()}
    n_lines = sum(len(v) for v in lines.values())
    n_failed = sum(1 for v in lines.values() for r in v if r["error"] is not None)
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM questions").fetchone()[0] == QUESTIONS
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == RUNS * REPEATS
        assert con.execute("SELECT count(*) FROM records").fetchone()[0] == n_lines
        scored, missing, failed = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE missing), count(*) FILTER (WHERE failed) FROM question_scores"
        ).fetchone()
    assert scored == QUESTIONS * RUNS * REPEATS
    assert missing == QUESTIONS * RUNS * REPEATS - n_lines
    assert failed == n_failed


def test_records_have_the_promised_shape(workspace: Path) -> None:
    records = [r for run in (workspace / "runs").iterdir() for r in read_jsonl(run / "records.jsonl")]
    ok = [r for r in records if r["error"] is None]
    assert ok and all(len(r["retrieved"]) == 20 for r in ok)
    assert max(len(r["claims"]) for r in records) == 3
    assert any(not r["claims"] for r in ok), "some answers abstain"
    assert all(len(set(r["retrieved"])) == len(r["retrieved"]) for r in records)
    assert all(len({c["id"] for c in r["claims"]}) == len(r["claims"]) for r in records)


def test_suite_covers_every_type_grade_split_and_permission(workspace: Path) -> None:
    questions = read_jsonl(workspace / "suites" / "synth" / "questions.jsonl")
    documents = read_jsonl(workspace / "suites" / "synth" / "documents.jsonl")
    assert {q["type"] for q in questions} == TYPES
    assert {g for q in questions for g in q["relevant"].values()} == {0, 1, 2}
    assert {q["split"] for q in questions} == {"dev", "heldout"}
    assert any(q["critical"] for q in questions) and not all(q["critical"] for q in questions)
    assert any(q.get("caller") for q in questions)
    assert any(d.get("access") for d in documents)
    assert len(documents) == 500  # 10 per question
    assert max(len(q["support"]) for q in questions) == 3


def test_some_records_are_missing_and_some_failed(tmp_path: Path) -> None:
    counts = write_workspace(2000, 1, seed=3, out=tmp_path / "ws")
    lines = read_jsonl(tmp_path / "ws" / "runs" / "sys-000" / "records.jsonl")
    assert counts["records"] == len(lines) == 2000 - counts["missing"]
    assert 0 < counts["missing"] < 100
    assert 0 < counts["failed"] == sum(1 for r in lines if r["error"] is not None) < 100


def test_a_corpus_where_few_documents_carry_access_groups_refreshes(tmp_path: Path) -> None:
    """20,000 documents, 2.4% with access groups, none among every 20th row (a sampling type-inference trap)."""
    write_workspace(2000, 1, seed=3, out=tmp_path / "ws")
    documents = read_jsonl(tmp_path / "ws" / "suites" / "synth" / "documents.jsonl")
    restricted = {d["id"] for d in documents if d.get("access")}
    assert restricted and not any(d.get("access") for d in documents[::20])
    refresh(tmp_path / "ws", tmp_path / "db.duckdb")
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        stored = {d for (d,) in con.execute("SELECT doc_id FROM documents WHERE len(access) > 0").fetchall()}
    assert stored == restricted


def test_same_seed_same_bytes_and_other_seed_other_bytes(workspace: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    write_workspace(QUESTIONS, RUNS, repeats=REPEATS, seed=7, out=again)
    assert files(again) == files(workspace)
    other = tmp_path / "other"
    write_workspace(QUESTIONS, RUNS, repeats=REPEATS, seed=8, out=other)
    before, after = files(workspace), files(other)
    assert before.keys() == after.keys()
    assert before["runs/sys-000.r1/records.jsonl"] != after["runs/sys-000.r1/records.jsonl"]


def test_worker_processes_write_the_same_bytes(tmp_path: Path) -> None:
    write_workspace(30, 3, seed=5, out=tmp_path / "serial", workers=1)
    write_workspace(30, 3, seed=5, out=tmp_path / "parallel", workers=2)
    assert files(tmp_path / "serial") == files(tmp_path / "parallel")


def test_records_score_with_the_seed_entry_point_as_in_the_database(workspace: Path, database: Path) -> None:
    """Every ID passes the seed's stricter rule, so `evaluate` scores the records; same numbers as the DB."""
    docs = read_jsonl(workspace / "suites" / "synth" / "documents.jsonl")
    corpus = {d["id"]: d["text"] for d in docs}
    access = {d["id"]: d["access"] for d in docs if d.get("access")}
    cases = {q["id"]: q for q in read_jsonl(workspace / "suites" / "synth" / "questions.jsonl")}
    run = "sys-000.r1"
    k = json.loads((workspace / "runs" / run / "manifest.json").read_text())["k"]
    with duckdb.connect(str(database), read_only=True) as con:
        stored = {q: (p, rr, s, c) for q, p, rr, s, c in con.execute(
            "SELECT question_id, precision, rr, support, coverage FROM question_scores WHERE run_id = ?", [run]
        ).fetchall()}
    checked = 0
    for record in read_jsonl(workspace / "runs" / run / "records.jsonl"):
        if record["error"] is not None:
            continue
        case = cases[record["question_id"]]
        output = {"retrieved": record["retrieved"], "claims": [(c["id"], c["citations"]) for c in record["claims"]]}
        scores = evaluate(corpus, case, output, k=k, access=access)
        assert (scores["precision"], scores["rr"], scores["support"], scores["coverage"]) == pytest.approx(
            stored[record["question_id"]]), record["question_id"]
        checked += 1
    assert checked > 40


@pytest.mark.parametrize("args", [(0, 1, 1), (5, 0, 1), (5, 1, 0)])
def test_sizes_must_be_positive(args: tuple[int, int, int], tmp_path: Path) -> None:
    questions, runs, repeats = args
    with pytest.raises(ValidationError):
        write_workspace(questions, runs, repeats=repeats, out=tmp_path / "ws")
    assert not (tmp_path / "ws").exists()


def test_refuses_a_folder_that_already_holds_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("keep me")
    assert main(["synth", "--questions", "5", "--runs", "1", "--out", str(tmp_path / "ws")]) == 2
    assert "--out" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "ws").iterdir()] == ["notes.txt"]


def test_command_prints_what_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "--questions", "20", "--runs", "2", "--repeats", "3", "--seed", "1",
                 "--out", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "20 questions, 200 documents, 6 runs" in out
    assert len(list((tmp_path / "ws" / "runs").iterdir())) == 6

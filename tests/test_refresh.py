"""Files -> DuckDB -> table: the seed's figures through the whole path, and SQL == reference."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from scoring.cli import main
from scoring.metrics.reference import MAX_CLAIMS, Output, score_question, suite_labels
from scoring.metrics import REGISTRY
from scoring.store.refresh import refresh
from fixtures import SEED_LAB, copy_run, read_jsonl, write_jsonl
from seed_fixture import EXPECTED_TABLE



def reference_scores(workspace: Path, *, k: int | None = None) -> dict[tuple[str, str], dict]:
    """Score a workspace with the plain-Python reference, reading the files independently."""
    out = {}
    suites = {}
    for suite_dir in sorted((workspace / "suites").iterdir()):
        docs = read_jsonl(suite_dir / "documents.jsonl")
        access = {d["id"]: d.get("access") or [] for d in docs}
        questions = read_jsonl(suite_dir / "questions.jsonl")
        max_claims = json.loads((suite_dir / "suite.json").read_text()).get("max_claims", MAX_CLAIMS)
        suites[suite_dir.name] = ({d["id"] for d in docs}, access, questions, max_claims)
    for run_dir in sorted((workspace / "runs").iterdir()):
        manifest = json.loads((run_dir / "manifest.json").read_text())
        known, access, questions, max_claims = suites[manifest["suite"]]
        records = {r["question_id"]: r for r in read_jsonl(run_dir / "records.jsonl")}
        all_labels = suite_labels(questions)
        for q in questions:
            labels = all_labels[q["id"]]
            record = records.get(q["id"])
            status = "missing" if record is None else ("failed" if record.get("error") else "ok")
            output = None if record is None else Output(
                tuple(record["retrieved"]), tuple((c["id"], tuple(c["citations"])) for c in record["claims"]))
            out[(manifest["run_id"], q["id"])] = score_question(
                labels, output, k=k or manifest["k"], known=known, access=access, status=status,
                max_claims=max_claims)
    return out


def assert_db_matches_reference(db: Path, workspace: Path) -> int:
    expected = reference_scores(workspace)
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute("SELECT * FROM question_scores")
        names = [d[0] for d in cur.description]
        rows = {(r[names.index("run_id")], r[names.index("question_id")]): dict(zip(names, r)) for r in cur.fetchall()}
    assert set(rows) == set(expected)
    for key, ref in expected.items():
        for m in REGISTRY:
            got, want = rows[key][m.key], ref[m.key]
            if want is None or got is None:
                assert got is want, (key, m.key, got, want)
            else:
                assert got == pytest.approx(want, abs=1e-12), (key, m.key)
        for count in ("n_claims", "n_supported", "n_expected", "n_expected_supported", "n_hits", "n_relevant"):
            assert rows[key][count] == ref[count], (key, count)
    return len(expected)


def test_seed_table_through_files_duckdb_and_table(tmp_path, capsys):
    db = tmp_path / "seed.duckdb"
    assert main(["refresh", str(SEED_LAB), "--db", str(db), "--quiet"]) == 0
    assert "2 runs scored" in capsys.readouterr().out
    assert main(["table", str(SEED_LAB), "--db", str(db)]) == 0
    assert capsys.readouterr().out == EXPECTED_TABLE
    assert main(["table", str(SEED_LAB)]) == 0
    assert capsys.readouterr().out == EXPECTED_TABLE


def test_seed_table_as_a_real_command():
    result = subprocess.run(["ragslice", "table", str(SEED_LAB)], capture_output=True, text=True, check=True)
    assert result.stdout == EXPECTED_TABLE


def test_sql_scores_equal_the_reference_on_the_same_files(tmp_path):
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    assert assert_db_matches_reference(db, SEED_LAB) == 8


def test_what_if_cutoff_rescoring_matches_in_memory_and_hand_values(tmp_path, capsys):
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    assert main(["table", str(SEED_LAB), "--k", "1", "--runs", "B"]) == 0
    in_memory = capsys.readouterr().out
    assert main(["table", str(SEED_LAB), "--db", str(db), "--k", "1", "--runs", "B"]) == 0
    assert capsys.readouterr().out == in_memory
    lines = in_memory.splitlines()
    assert lines[0] == "case system | P@1 R@1 RR@1 support coverage abstention"
    # rollback B at k=1: 'checklist' falls out of the visible context, so 'smoke' is unsupported.
    assert "rollback B | 1.00 0.50 1.00 0.50 0.50 n/a" in lines
    assert len(lines) == 5


def test_unknown_run_in_table_is_a_clear_error(capsys):
    assert main(["table", str(SEED_LAB), "--runs", "A,nope"]) == 2
    assert "'nope'" in capsys.readouterr().err


def test_missing_and_failed_records_count_in_every_denominator(tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(SEED_LAB, ws)
    records = ws / "runs" / "B" / "records.jsonl"
    rows = read_jsonl(records)
    kept = []
    for row in rows:
        if row["question_id"] == "owner":
            continue  # missing
        if row["question_id"] in ("launch", "region"):
            row["error"] = "upstream timeout"
        kept.append(row)
    write_jsonl(records, kept)
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        got = {q: rest for q, *rest in con.execute(
            "SELECT question_id, status, precision, recall, rr, support, coverage, abstention_correct "
            "FROM question_scores WHERE run_id = 'B'").fetchall()}
        counts = con.execute("SELECT n_records, n_missing, n_failed FROM runs WHERE run_id = 'B'").fetchone()
    assert got["owner"] == ["missing", 0.0, 0.0, 0.0, 0.0, 0.0, None]
    assert got["launch"] == ["failed", 0.0, 0.0, 0.0, 0.0, 0.0, None]
    # Unanswerable: retrieval and coverage stay n/a, but an error is not an abstention.
    assert got["region"] == ["failed", None, None, None, 0.0, None, False]
    assert got["rollback"][0] == "ok"
    assert counts == (3, 1, 2)
    assert_db_matches_reference(db, ws)


def test_records_parquet_scores_like_jsonl(tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(SEED_LAB, ws)
    for run in ("A", "B"):
        src = ws / "runs" / run / "records.jsonl"
        with duckdb.connect() as con:
            con.execute(
                f"COPY (SELECT * FROM read_json('{src}', columns={{'question_id': 'VARCHAR', 'retrieved': 'VARCHAR[]', "
                "'answer': 'VARCHAR', 'claims': 'STRUCT(id VARCHAR, citations VARCHAR[])[]', "
                "'latency_ms': 'DOUBLE', 'cost_usd': 'DOUBLE', 'error': 'VARCHAR'})) "
                f"TO '{src.with_suffix('.parquet')}' (FORMAT parquet)")
        src.unlink()
    assert main(["table", str(ws)]) == 0
    assert capsys.readouterr().out == EXPECTED_TABLE


def test_export_writes_every_per_question_table(tmp_path):
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    for fmt in ("csv", "parquet"):
        out = tmp_path / fmt
        assert main(["export", "--db", str(db), "--out", str(out), "--format", fmt]) == 0
        with duckdb.connect() as con:
            n = con.execute(f"SELECT count(*) FROM '{out / ('question_scores.' + fmt)}'").fetchone()[0]
            claims = con.execute(f"SELECT count(*) FROM '{out / ('claims.' + fmt)}'").fetchone()[0]
        assert (n, claims) == (8, 9)


def test_registry_table_is_written_for_users_sql(tmp_path):
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = dict(con.execute("SELECT key, denominator FROM metrics").fetchall())
    assert set(rows) == {m.key for m in REGISTRY}
    assert rows["precision"].startswith("k, even when")


def test_every_command_has_help_with_an_example():
    for command in ("trec", "refresh", "table", "export", "import", "demo", "dashboard", "compare", "report", "synth"):
        result = subprocess.run([sys.executable, "-m", "scoring.cli", command, "--help"],
                                capture_output=True, text=True)
        assert result.returncode == 0, command
        assert "example:" in result.stdout and "ragslice " + command in result.stdout, command


def test_an_unchanged_suite_is_not_parsed_again_when_a_run_is_added(tmp_path, monkeypatch):
    import scoring.store.refresh as refresh_module
    import scoring.store.workspace as workspace

    ws, db = tmp_path / "ws", tmp_path / "db.duckdb"
    shutil.copytree(SEED_LAB, ws)
    refresh(ws, db)
    copy_run(ws, "B", "C")

    def no_parsing(*args, **kwargs):
        raise AssertionError("the unchanged suite was parsed again")

    monkeypatch.setattr(workspace, "_load_documents", no_parsing)   # read in Python
    monkeypatch.setattr(refresh_module, "stage_suite", no_parsing)  # read set-based
    summary = refresh(ws, db)
    assert (summary.runs_scored, summary.runs_skipped) == (1, 2)
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("SELECT question_id, support FROM question_scores WHERE run_id = 'C' "
                          "ORDER BY question_id").fetchall()
    assert got == [("launch", 0.5), ("owner", 1.0), ("region", None), ("rollback", 1.0)]
    (ws / "suites" / "seed-lab" / "suite.json").write_text(
        (ws / "suites" / "seed-lab" / "suite.json").read_text().replace("fixture", "fixture."))
    with pytest.raises(AssertionError, match="parsed again"):
        refresh(ws, db)  # a changed suite is parsed (and re-scores its runs)


def test_every_refresh_leaves_the_summary_tables_equal_to_the_scored_tables(tmp_path: Path) -> None:
    """Summaries are never stale: after a run is added, changed or removed and after the suite
    changes, each summary table holds exactly the rows computed afresh from the scored tables."""
    from scoring.store.summaries import SCORES_BY_POSITION_SQL, run_totals_sql, slice_sums_sql
    from fixtures import build, run_file, suite_file

    ws = build(tmp_path / "ws")
    db = tmp_path / "scores.duckdb"

    def check(expected_runs: set[str], rescored: frozenset[int] = frozenset()) -> None:
        """`rescored`: positions of questions re-scored for changed labels in runs whose files did not
        change; their rows are appended after the runs' blocks."""
        with duckdb.connect(str(db), read_only=True) as con:
            for table, sql in (("run_totals", run_totals_sql()), ("slice_sums", slice_sums_sql()),
                               ("scores_by_position", SCORES_BY_POSITION_SQL)):
                stored = con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
                assert stored == con.execute(f"SELECT * FROM ({sql}) ORDER BY ALL").fetchall(), table
                assert {row[0] for row in stored} == expected_runs, table
            # one run's rows are consecutive (run by run, in position order), re-scored ones aside
            order = [(run, position) for run, position in
                     con.execute("SELECT run_id, position FROM scores_by_position").fetchall()
                     if position not in rescored]
            runs_in_order = [run for i, (run, _) in enumerate(order) if i == 0 or order[i - 1][0] != run]
            assert len(runs_in_order) == len(set(runs_in_order)), runs_in_order
            for run in set(runs_in_order):
                positions = [position for r, position in order if r == run]
                assert positions == sorted(positions), run

    refresh(ws, db)
    runs = {p.name for p in (ws / "runs").iterdir()}
    check(runs)
    copy_run(ws, "cand", "late")
    refresh(ws, db)
    check(runs | {"late"})
    # a changed run: its records now retrieve nothing and claim nothing
    write_jsonl(run_file(ws, "late"), [{**r, "retrieved": [], "claims": []} for r in read_jsonl(run_file(ws, "late"))])
    assert refresh(ws, db).runs_scored == 1
    check(runs | {"late"})
    # a changed suite: every multi-evidence question becomes a lookup (type slices change for every
    # run); only those questions are re-scored, in every run
    questions = read_jsonl(suite_file(ws, "questions.jsonl"))
    write_jsonl(suite_file(ws, "questions.jsonl"),
                [{**q, "type": "lookup"} if q["type"] == "multi-evidence" else q for q in questions])
    moved = frozenset(i for i, q in enumerate(questions) if q["type"] == "multi-evidence")
    assert moved
    summary = refresh(ws, db)
    assert (summary.runs_scored, summary.questions_rescored, summary.records) == (len(runs) + 1, len(moved), 0)
    check(runs | {"late"}, moved)
    shutil.rmtree(ws / "runs" / "base")
    refresh(ws, db)
    check((runs | {"late"}) - {"base"}, moved)
    # a suite-wide change (a document's access groups) re-scores every run from its files
    documents = read_jsonl(suite_file(ws, "documents.jsonl"))
    write_jsonl(suite_file(ws, "documents.jsonl"), [{**documents[0], "access": ["staff"]}, *documents[1:]])
    summary = refresh(ws, db)
    assert (summary.runs_scored, summary.questions_rescored) == (len(runs), 0)
    check((runs | {"late"}) - {"base"})

"""The coded layout (docs/schema.md): ranked slots stored with integer codes in `retrieved_slots`,
`retrieved` a view with the columns it had; codes that follow the suite's files, kept by incremental
refreshes; a database of an older schema refused with the command that rebuilds it."""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from scoring.cli import main
from scoring.store.refresh import refresh
from scoring.store.schema import SCHEMA_VERSION

from test_rescore import tables

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("coded") / "demo.duckdb"
    refresh(DEMO, db)
    return db


def test_retrieved_is_a_view_over_integer_codes(demo_db):
    with duckdb.connect(str(demo_db), read_only=True) as con:
        kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables "
                                 "WHERE table_name IN ('retrieved', 'retrieved_slots')").fetchall())
        assert kinds == {"retrieved": "VIEW", "retrieved_slots": "BASE TABLE"}
        types = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                 "WHERE table_name = 'retrieved_slots'").fetchall())
        assert types["question_code"] == types["doc_code"] == "INTEGER" and "question_id" not in types
        # the codes, as documented: a question's position, a document's place among the suite's IDs
        assert con.execute("""
            SELECT count(*) FROM retrieved_slots t JOIN runs r USING (run_id)
            JOIN questions q ON q.suite = r.suite AND q.position = t.question_code""").fetchone()[0] == \
            con.execute("SELECT count(*) FROM retrieved").fetchone()[0] > 0
        ids = [d for (d,) in con.execute("SELECT doc_id FROM document_codes WHERE suite = 'demo' "
                                         "ORDER BY doc_code").fetchall()]
        assert ids == sorted(ids) and len(ids) == 165
        # one record's ranking, read through the view, is the ranking of its line
        first = con.execute("SELECT list(doc_id ORDER BY rank) FROM retrieved "
                            "WHERE run_id = 'rerank-v2' AND question_id = 'q-0001'").fetchone()[0]
    line = (DEMO / "runs" / "rerank-v2" / "records.jsonl").read_text().splitlines()[0]
    assert first == __import__("json").loads(line)["retrieved"]


def test_reordered_questions_keep_their_slots(tmp_path):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    questions = ws / "suites" / "demo" / "questions.jsonl"
    lines = questions.read_text().splitlines(keepends=True)
    questions.write_text("".join([lines[2], lines[0], lines[1], *lines[3:]]))  # three questions move
    summary = refresh(ws, db)
    assert summary.questions_rescored == 3 and summary.runs_scored == 8
    scratch = tmp_path / "scratch.duckdb"
    refresh(ws, scratch)
    assert tables(db) == tables(scratch)


def _as_older(db: Path) -> None:
    """The file as schema version 10 wrote it: `retrieved` a table with text keys, no codes."""
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE old_retrieved AS SELECT * FROM retrieved")
        con.execute("DROP VIEW retrieved")
        con.execute("DROP TABLE retrieved_slots")
        con.execute("ALTER TABLE old_retrieved RENAME TO retrieved")
        con.execute("DROP TABLE document_codes")
        con.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")


def test_an_older_database_is_refused_naming_the_command_that_rebuilds_it(tmp_path, capsys):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    before = tables(db)
    _as_older(db)
    rebuild = f"refresh it first: ragslice refresh {ws} --db {db}"
    for argv in (["table", str(ws), "--db", str(db)], ["compare", "--db", str(db), "prod-baseline", "rerank-v2"],
                 ["table", str(ws), "--db", str(db), "--k", "3"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"schema version 10, this ragslice reads version {SCHEMA_VERSION}; {rebuild}" in err, argv
        assert "Traceback" not in err
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    assert tables(db) == before  # rebuilt: the view and its codes again, the same rows


def test_the_dashboard_names_the_command_that_rebuilds_an_older_database(tmp_path, monkeypatch):
    from dashboard import data

    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    db, older = tmp_path / "db.duckdb", tmp_path / "older.duckdb"
    refresh(ws, db)
    shutil.copy(db, older)
    _as_older(older)
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    assert data.schema_problem() is None
    monkeypatch.setenv("RAGSLICE_DB", str(older))
    db = older
    problem = data.schema_problem()
    assert problem == (f"The database was written with schema version 10, this ragslice reads version "
                       f"{SCHEMA_VERSION}; refresh it first: ragslice refresh {ws} --db {db}.")

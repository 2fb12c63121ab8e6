"""The suite tables (`suites`, `documents`, `questions`, `labels`, `expected_claims`, the suite's
`chunks`) written from a checked `Suite`."""
from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow as pa

from .chunks import write_chunks
from .workspace import Suite

SUITE_TABLES = ("suites", "documents", "questions", "labels", "expected_claims", "chunks")


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    if frame.empty:
        return
    # Arrow types a column from every value; a pandas scan samples rows and can type a sparse column NULL.
    con.register("_incoming", pa.Table.from_pandas(frame, preserve_index=False))
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
    finally:
        con.unregister("_incoming")


def write_suite(con: duckdb.DuckDBPyConnection, suite: Suite) -> None:
    """Replace one suite's rows in the suite tables."""
    for table in SUITE_TABLES:
        con.execute(f"DELETE FROM {table} WHERE suite = ?", [suite.name])
    questions = list(suite.questions.values())
    insert_frame(con, "suites", pd.DataFrame([{
        "suite": suite.name, "version": suite.version, "corpus_version": suite.corpus_version,
        "rubric_version": suite.rubric_version, "description": suite.description,
        "n_documents": len(suite.documents), "n_questions": len(questions), "files_hash": suite.files_hash,
        "unit": suite.unit,
    }]))
    write_chunks(con, suite.name, None, suite.chunks)
    insert_frame(con, "documents", pd.DataFrame(
        [{"suite": suite.name, "doc_id": d.id, "version": d.version, "title": d.title, "text": d.text,
          "access": d.access} for d in suite.documents.values()],
        columns=["suite", "doc_id", "version", "title", "text", "access"], dtype=object))
    insert_frame(con, "questions", pd.DataFrame(
        [{"suite": suite.name, "question_id": q.id, "position": q.position, "text": q.text, "type": q.type,
          "split": q.split, "critical": q.critical, "tags": q.tags, "caller": q.caller,
          "answerable": any(g > 0 for g in q.grades.values()), "disputed": q.disputed,
          "n_relevant": sum(1 for g in q.grades.values() if g >= 1), "n_expected": len(q.support)}
         for q in questions], dtype=object))
    insert_frame(con, "labels", pd.DataFrame(
        [{"suite": suite.name, "question_id": q.id, "doc_id": doc, "grade": grade}
         for q in questions for doc, grade in q.grades.items()],
        columns=["suite", "question_id", "doc_id", "grade"], dtype=object))
    insert_frame(con, "expected_claims", pd.DataFrame(
        [{"suite": suite.name, "question_id": q.id, "claim_id": claim, "proposition": q.propositions.get(claim),
          "docs": docs} for q in questions for claim, docs in q.support.items()],
        columns=["suite", "question_id", "claim_id", "proposition", "docs"], dtype=object))

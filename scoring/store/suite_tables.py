"""The suite tables (`suites`, `documents`, `questions`, `labels`, `expected_claims`, the suite's
`chunks`) written from a checked `Suite`.

A suite's content goes to DuckDB as Arrow tables built column by column from its objects (no
per-row Python dicts): documents (`DOCUMENT_COLUMNS`), questions (`QUESTION_COLUMNS`), labels
(`LABEL_COLUMNS`) and expected claims (`CLAIM_COLUMNS`); each table's SQL adds the suite and the
questions' counts.
"""
from __future__ import annotations

import json
from operator import attrgetter

from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from .chunks import write_chunks
from .reviews import LABELS_HASH_SQL
from .samples import sample_rows
from .files import gc_paused
from .suite_bulk import drop_staged
from .workspace import Suite

if TYPE_CHECKING:
    import pandas as pd

SUITE_TABLES = ("suites", "documents", "document_codes", "questions", "labels", "expected_claims", "assessed_claims",
                "chunks", "reviews", "label_changes", "judges", "judgements", "judge_repeats", "samples")
_WITH_DOCUMENTS = ("documents", "document_codes")
"""Kept as they are when a suite's documents are the same (`write_suite(changes_only=True)`)."""

_TEXT = pa.string()
_TEXTS = pa.list_(pa.string())

DOCUMENT_COLUMNS = {"doc_id": _TEXT, "version": _TEXT, "title": _TEXT, "text": _TEXT, "access": _TEXTS}
QUESTION_COLUMNS = {
    "question_id": _TEXT, "position": pa.int64(), "text": _TEXT, "type": _TEXT, "split": _TEXT,
    "critical": pa.bool_(), "tags": _TEXTS, "caller": _TEXTS, "disputed": _TEXT,
    "cluster": _TEXT,
}
_QUESTION_FIELDS = ("id", "position", "text", "type", "split", "critical", "tags", "caller", "disputed", "cluster")
"""The `Question` attributes behind `QUESTION_COLUMNS`, in order."""
LABEL_COLUMNS = {"question_id": _TEXT, "doc_id": _TEXT, "grade": pa.int64()}
_QUESTION_RELATIONS = ("_suite_questions", "_suite_labels", "_suite_claims", "_suite_assessed")
"""The relations `question_columns` fills, by the names `_INSERTS` reads."""
CLAIM_COLUMNS = {"question_id": _TEXT, "claim_id": _TEXT, "proposition": _TEXT, "docs": _TEXTS, "partial_docs": _TEXTS}
ASSESSED_COLUMNS = {"question_id": _TEXT, "claim_id": _TEXT, "docs": _TEXTS, "partial_docs": _TEXTS}

# Each table's rows from the Arrow tables registered under these names; `?` is the suite. The
# questions' derived columns: answerable (some grade > 0), n_relevant (grades >= 1), n_expected.
_INSERTS = {
    "documents": "SELECT ? AS suite, * FROM _suite_documents",
    # a document's code (`retrieved_slots.doc_code`): its place among the suite's documents by ID
    "document_codes": "SELECT ? AS suite, doc_id, (row_number() OVER (ORDER BY doc_id) - 1)::INTEGER AS doc_code "
                      "FROM _suite_documents",
    "questions": """
        SELECT ? AS suite, q.*, coalesce(l.answerable, false) AS answerable,
               coalesce(l.n_relevant, 0) AS n_relevant, coalesce(c.n_expected, 0) AS n_expected
        FROM _suite_questions q
        LEFT JOIN (SELECT question_id, bool_or(grade > 0) AS answerable,
                          count(*) FILTER (WHERE grade >= 1) AS n_relevant
                   FROM _suite_labels GROUP BY question_id) l USING (question_id)
        LEFT JOIN (SELECT question_id, count(*) AS n_expected FROM _suite_claims GROUP BY question_id) c
          USING (question_id)""",
    "labels": "SELECT ? AS suite, * FROM _suite_labels",
    "expected_claims": "SELECT ? AS suite, * FROM _suite_claims",
    "assessed_claims": "SELECT ? AS suite, * FROM _suite_assessed",
}


# --- writing ----------------------------------------------------------------------------------


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    """Insert a DataFrame's rows into `table` (an allow-listed name), columns matched by name."""
    if frame.empty:
        return
    # Arrow types a column from every value; a pandas scan samples rows and can type a sparse column NULL.
    con.register("_incoming", pa.Table.from_pandas(frame, preserve_index=False))
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
    finally:
        con.unregister("_incoming")


DOCUMENTS_CHECKSUM = "SELECT count(*), sum(hash(doc_id, version, title, text, access)) FROM {source}"
"""Row count and order-independent checksum (64-bit row hashes, summed) of a suite's documents."""


DIFFED: dict[str, tuple[str, ...]] = {
    "questions": ("question_id",), "labels": ("question_id", "doc_id"), "expected_claims": ("question_id", "claim_id"),
    "assessed_claims": ("question_id", "claim_id"),
}
"""Tables `write_suite(changes_only=True)` updates row by row (key columns besides `suite`): the rows
that differ from the stored ones are kept in `stale_<table>` (stored rows that go) and `fresh_<table>`
(rows that come), and only those are deleted and inserted."""


def write_suite(con: duckdb.DuckDBPyConnection, suite: Suite, *, changes_only: bool = False) -> bool:
    """Replace one suite's rows in the suite tables (one `suites` row; documents, questions, labels,
    expected claims and the suite's chunk map as loaded), from its objects or, for a suite read
    set-based (`Suite.deferred`), from its staged relations (`scoring.store.suite_bulk`), which are
    dropped after.

    With `changes_only`, for a suite the database holds: stored documents that equal the suite's
    (same count and `DOCUMENTS_CHECKSUM`) are kept as they are, and questions, labels and expected
    claims are updated row by row (`DIFFED`): deleting and inserting keyed rows costs seconds per
    100,000 rows, and a review decision changes a few. Returns whether the documents were kept."""
    arrow = {} if suite.deferred else {"_suite_documents": document_columns(suite)}
    for name, table in arrow.items():
        con.register(name, table)
    try:
        kept = changes_only and _same_documents(con, suite.name)
        for table in SUITE_TABLES:
            if not (kept and table in _WITH_DOCUMENTS) and not (changes_only and table in DIFFED):
                con.execute(f"DELETE FROM {table} WHERE suite = ?", [suite.name])
        if not suite.deferred:
            arrow.update(zip(_QUESTION_RELATIONS, question_columns(suite)))
            for name in _QUESTION_RELATIONS:
                con.register(name, arrow[name])
        n_documents, n_questions = con.execute(
            "SELECT (SELECT count(*) FROM _suite_documents), (SELECT count(*) FROM _suite_questions)").fetchone()
        con.execute("INSERT INTO suites (suite, version, corpus_version, rubric_version, description, n_documents, "
                    "n_questions, files_hash, unit, max_claims, labels_hash, base_hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?)", [
                        suite.name, suite.version, suite.corpus_version, suite.rubric_version, suite.description,
                        n_documents, n_questions, suite.files_hash, suite.unit, suite.max_claims, suite.base_hash])
        if suite.deferred:
            con.execute("INSERT INTO chunks BY NAME SELECT ?::VARCHAR AS suite, NULL::VARCHAR AS run_id, * "
                        "FROM _suite_chunks", [suite.name])
        else:
            write_chunks(con, suite.name, None, suite.chunks)
        # In file order: the refresh's joins against these tables run markedly faster on rows stored
        # in the order rankings refer to them (measured: 13 s vs 24 s writing 20M ranked rows).
        for table, select in _INSERTS.items():
            if changes_only and table in DIFFED:
                _write_changes(con, table, select, suite.name)
            elif not (kept and table in _WITH_DOCUMENTS):
                con.execute(f"INSERT INTO {table} BY NAME {select}", [suite.name])
    finally:
        for name in arrow:
            con.unregister(name)
        if suite.deferred:
            drop_staged(con)
    write_review(con, suite)
    write_judges(con, suite)
    insert_rows(con, "samples", sample_rows(suite.name, suite.samples))
    con.execute(f"UPDATE suites SET labels_hash = ({LABELS_HASH_SQL}) WHERE suite = ?", [suite.name] * 5)
    return kept


def replace_questions(con: duckdb.DuckDBPyConnection, suite: Suite, *, staged: bool = False) -> None:
    """Replace the stored rows of the questions `suite` holds (some of a stored suite's questions, at
    their stored positions) in `questions`, `labels` and `expected_claims`; the other questions' rows
    stay as they are. `staged`: replace them in the staged relations of a suite being read instead
    (`scoring.store.suite_bulk`)."""
    rows = dict(zip(_QUESTION_RELATIONS, question_columns(suite)))
    ids = list(suite.questions)
    if staged:
        for name, table in rows.items():
            con.execute(f"DELETE FROM {name} WHERE list_contains(?::VARCHAR[], question_id)", [ids])
            con.register("_incoming_rows", table)
            try:
                con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM _incoming_rows")
            finally:
                con.unregister("_incoming_rows")
        return
    for table in DIFFED:
        con.execute(f"DELETE FROM {table} WHERE suite = ? AND list_contains(?::VARCHAR[], question_id)",
                    [suite.name, ids])
    for name, table in rows.items():
        con.register(name, table)
    try:
        for table in DIFFED:
            con.execute(f"INSERT INTO {table} BY NAME {_INSERTS[table]}", [suite.name])
    finally:
        for name in rows:
            con.unregister(name)


def _write_changes(con: duckdb.DuckDBPyConnection, table: str, select: str, suite: str) -> None:
    """Bring `table`'s rows of `suite` to those of `select` (bound to the suite) by deleting the stored
    rows that differ (`stale_<table>`, by key) and inserting the new ones that differ (`fresh_<table>`)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE incoming_{table} AS SELECT * FROM {table} LIMIT 0")
    con.execute(f"INSERT INTO incoming_{table} BY NAME {select}", [suite])
    con.execute(f"CREATE OR REPLACE TEMP TABLE stale_{table} AS "
                f"SELECT * FROM {table} WHERE suite = ? EXCEPT ALL SELECT * FROM incoming_{table}", [suite])
    con.execute(f"CREATE OR REPLACE TEMP TABLE fresh_{table} AS "
                f"SELECT * FROM incoming_{table} EXCEPT ALL SELECT * FROM {table} WHERE suite = ?", [suite])
    keys = " AND ".join(f"t.{key} = s.{key}" for key in ("suite", *DIFFED[table]))
    con.execute(f"DELETE FROM {table} t USING stale_{table} s WHERE {keys}")
    con.execute(f"INSERT INTO {table} SELECT * FROM fresh_{table}")
    con.execute(f"DROP TABLE incoming_{table}")


def _same_documents(con: duckdb.DuckDBPyConnection, suite: str) -> bool:
    """Whether the stored documents of `suite` are those of `_suite_documents` (`DOCUMENT_COLUMNS`), by
    row count and `DOCUMENTS_CHECKSUM`."""
    stored = con.execute(DOCUMENTS_CHECKSUM.format(source="documents WHERE suite = ?"), [suite]).fetchall()[0]
    incoming = con.execute(DOCUMENTS_CHECKSUM.format(source="_suite_documents")).fetchall()[0]
    return stored[0] > 0 and stored == incoming


def write_review(con: duckdb.DuckDBPyConnection, suite: Suite) -> None:
    """The suite's review decisions (each with what became of it) and the labels they changed."""
    review = suite.review
    if review is None:
        return
    insert_rows(con, "reviews", [
        (suite.name, d.reviewer, d.line, d.at.replace(tzinfo=None), d.kind, d.question_id, d.doc_id, d.claim_id,
         d.grade, d.strictly_supports, d.note, review.status[(d.path, d.line)], d.sentence,
         list(d.claim_ids) if isinstance(d.claim_ids, tuple) else None, d.outcome, d.sample, d.support_grade)
        for d in review.decisions])
    insert_rows(con, "label_changes", [
        (suite.name, c.question_id, c.kind, c.doc_id, c.claim_id,
         None if c.original is None else json.dumps(c.original), json.dumps(c.reviewed), list(c.reviewers))
        for c in review.changes])


def write_judges(con: duckdb.DuckDBPyConnection, suite: Suite) -> None:
    """The suite's judges (in precedence order) and their cached answers."""
    insert_rows(con, "judges", [
        (suite.name, j.name, position, j.kind, j.declaration_hash, json.dumps(
            ({"command": list(j.command)} if j.command is not None else
             {"endpoint": j.endpoint, "model": j.model, "api_key_env": j.api_key_env} | {"timeout": j.timeout})
            | ({"grades": True} if j.grades else {})))
        for position, j in enumerate(suite.judges.values())])
    insert_rows(con, "judgements", [
        (suite.name, judge, *_answer_row(c)) for judge, cache in suite.judgements.items() for c in cache.values()])
    insert_rows(con, "judge_repeats", [
        (suite.name, judge, *_answer_row(c), c.repeat, c.sample_seed)
        for judge, repeats in suite.repeats.items() for c in repeats])


def _answer_row(c: Any) -> tuple:
    """A cached (or repeated) answer's columns after suite and judge (`judgements`)."""
    a = c.answer
    return (c.line, c.key, c.question_id, c.sentence, list(c.citations), a.outcome, list(a.claim_ids), a.confidence,
            a.rationale, c.at.isoformat(), None if a.support is None else list(a.support), a.prompt_tokens,
            a.completion_tokens, a.cost_usd, a.latency_ms)


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple]) -> None:
    """Insert `rows` (tuples in the column order of `table`, an allow-listed name) in one statement:
    `executemany` binds and runs one statement per row (a second for a thousand cached answers)."""
    if not rows:
        return
    columns = [name for (name,) in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database() "
        "AND table_name = ? ORDER BY ordinal_position", [table]).fetchall()]
    con.register("_incoming_rows", rows_table(rows, columns))
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming_rows")
    finally:
        con.unregister("_incoming_rows")


def rows_table(rows: list[tuple], columns: list[str]) -> pa.Table:
    """`rows` (tuples in the order of `columns`) as an Arrow table, each column typed from its values
    (a column of NULLs only is typed NULL)."""
    return pa.table([pa.array(list(column)) for column in zip(*rows)], names=columns)


def document_columns(suite: Suite) -> pa.Table:
    """The suite's documents as `DOCUMENT_COLUMNS`, in file order."""
    fields = ("version", "title", "text", "access")
    with gc_paused():
        columns = [list(suite.documents), *(list(zip(*map(attrgetter(*fields), suite.documents.values())))
                                            or [[] for _ in fields])]
    return _table(columns, DOCUMENT_COLUMNS)


def question_columns(suite: Suite) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    """The suite's questions, labels, expected claims and assessed claims as `QUESTION_COLUMNS`,
    `LABEL_COLUMNS`, `CLAIM_COLUMNS` and `ASSESSED_COLUMNS`, in file order; a claim without a proposition
    has a NULL one."""
    questions = list(suite.questions.values())
    with gc_paused():
        plain = list(zip(*map(attrgetter(*_QUESTION_FIELDS), questions))) or [[] for _ in _QUESTION_FIELDS]
        label_question, label_doc, label_grade = [], [], []
        claim_question, claim_id, claim_words, claim_docs, claim_partial = [], [], [], [], []
        for q in questions:
            grades, support = q.grades, q.support
            label_question.extend([q.id] * len(grades))
            label_doc.extend(grades)
            label_grade.extend(grades.values())
            claim_question.extend([q.id] * len(support))
            claim_id.extend(support)
            claim_words.extend(map(q.propositions.get, support))
            claim_docs.extend(support.values())
            claim_partial.extend([q.partial.get(c, []) for c in support] if q.partial else [[]] * len(support))
        assessed = [(q.id, c, docs, q.assessed_partial.get(c, [])) for q in questions for c, docs in q.assessed.items()]
    return (_table(plain, QUESTION_COLUMNS), _table([label_question, label_doc, label_grade], LABEL_COLUMNS),
            _table([claim_question, claim_id, claim_words, claim_docs, claim_partial], CLAIM_COLUMNS),
            _table([list(column) for column in zip(*assessed)] or [[], [], [], []], ASSESSED_COLUMNS))


def _table(columns: list, layout: dict[str, pa.DataType]) -> pa.Table:
    """An Arrow table of `columns` (lists of values, in `layout`'s order) typed by `layout`."""
    return pa.table([pa.array(column, kind) for column, kind in zip(columns, layout.values())], names=list(layout))

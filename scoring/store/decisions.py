"""Reviewers' decisions applied to a stored suite, without reading the suite again.

When the only files of a suite that changed are its review files (`suites.base_hash` is unchanged),
the suite the database holds is the suite on disk but for its reviews. The decisions then bear on the
questions they name, and on those an earlier set of decisions named (a decision removed from a file
undoes what it did): those **touched** questions are read again from their lines of questions.jsonl
(at their stored positions), every decision is read and checked against them and against the stored
documents, and `apply_reviews` gives each touched question its labels as reviewed, exactly as a
refresh that reads the whole suite does. Their rows in `questions`, `labels` and `expected_claims`
are replaced, the suite's `reviews` and `label_changes` rewritten, and the questions whose rows
differ are listed in `rescore_questions` for `scoring.store.refresh.rescore_questions`.

Reading 200,000 questions in Python takes seconds; reading the few lines a decision touches takes
milliseconds. Anything unexpected (a line that is not the stored question) returns None, and the
refresh reads the suite in full instead.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import duckdb

from ..errors import Problems
from .files import iter_json_lines, parse_json_line
from .rescore import QUESTION_TABLES, both_ways, mark_for_rescoring
from .reviews import LABELS_HASH_SQL, Known, apply_reviews, read_reviews, review_files
from .suite_tables import replace_questions, write_review
from .workspace import Suite, add_questions

COMPARED = tuple(t for t in QUESTION_TABLES if t != "judgements")
"""The tables whose touched rows are compared before and after, to find the questions to re-score (the
judges' cached answers are among the suite's other files, which did not change)."""


def named_in_reviews(suite: Suite) -> tuple[set[str], set[str]]:
    """(question IDs, document IDs) the suite's review lines name; lines that do not parse are left to
    `read_reviews`, which reports them."""
    questions: set[str] = set()
    docs: set[str] = set()
    for path in review_files(suite.folder):
        for _, obj in iter_json_lines(path, Problems()):
            if isinstance(obj.get("question_id"), str):
                questions.add(obj["question_id"])
            if isinstance(obj.get("doc_id"), str):
                docs.add(obj["doc_id"])
    return questions, docs


def question_lines(path: Path, positions: dict[int, str]) -> dict[str, str] | None:
    """question ID -> the text of its line in questions.jsonl, for the questions at `positions` (0-based
    among the file's non-blank lines, as stored); None when a line does not name the question stored
    at its position."""
    found: dict[str, str] = {}
    position = -1
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            position += 1
            if position in positions:
                text = raw.decode("utf-8")
                if f'"{positions[position]}"' not in text:
                    return None
                found[positions[position]] = text
                if len(found) == len(positions):
                    break
    return found if len(found) == len(positions) else None


def stored_part(con: duckdb.DuckDBPyConnection, suite: Suite, problems: Problems, *,
                question: str | None = None, doc: str | None = None,
                staged: bool = False) -> tuple[Suite, Known] | None:
    """The touched questions of `suite` (`Suite.reviews_only`; and `question`, for a decision about to
    be recorded) with their labels as reviewed, and the review that made them (`Suite.review`); and
    what a new decision is checked against (`Known`: those questions, the stored documents named,
    `doc` included). Problems of the review files are recorded. None when the stored suite does not
    match its file (the caller then reads the suite in full).

    `staged`: the suite's rows are the staged relations of a suite just read (`scoring.store.suite_bulk`),
    with no decision applied yet, rather than the database's tables."""
    named, named_docs = named_in_reviews(suite)
    named |= {question} if question is not None else set()
    named_docs |= {doc} if doc is not None else set()
    before = set() if staged else {q for (q,) in con.execute(
        "SELECT DISTINCT question_id FROM reviews WHERE suite = ?", [suite.name]).fetchall()}
    source, bound = _rows_of("questions", suite, staged)
    rows = con.execute(f"SELECT position, question_id FROM {source} list_contains(?::VARCHAR[], question_id)",
                       [*bound, sorted(named | before)]).fetchall()
    path = suite.folder / "questions.jsonl"
    lines = question_lines(path, dict(rows))
    if lines is None:
        return None
    scratch = Problems()
    parsed = [(position, _parse(lines[qid], scratch)) for position, qid in sorted(rows)]
    if scratch:
        return None
    labels = {doc for _, obj in parsed for doc in _label_ids(obj)}
    units = _stored_units(con, suite, labels | named_docs, staged)
    part = dataclasses.replace(suite, questions={}, documents={}, chunks={}, review=None, judges={}, judgements={})
    add_questions(part, path, ((position, obj) for position, obj in parsed), dict.fromkeys(units), scratch)
    if scratch or len(part.questions) != len(rows):
        return None
    for position, qid in rows:  # `add_questions` numbers the questions it adds from 0
        part.questions[qid].position = position
    part.review = apply_reviews(part, read_reviews(part, problems, _known(part, units)), problems)
    return part, _known(part, units)  # the labels as reviewed


def _known(part: Suite, units: set[str]) -> Known:
    """What a decision is checked against: the questions of `part` with their labels as they stand."""
    return Known.of_questions(part.name, units, part.questions.values(), part.unit)


def _parse(text: str, problems: Problems) -> dict:
    try:
        value = parse_json_line(text)
    except ValueError as error:
        problems.add(str(error))
        return {}
    return value if isinstance(value, dict) else {}


def _label_ids(obj: dict) -> list[str]:
    """The IDs a question line's labels name (`relevant`: a list or a map)."""
    relevant = obj.get("relevant")
    return [doc for doc in relevant if isinstance(doc, str)] if isinstance(relevant, (list, dict)) else []


def _rows_of(table: str, suite: Suite, staged: bool) -> tuple[str, list[str]]:
    """SQL up to a WHERE clause's open end (`... WHERE [suite = ? AND]`) over `suite`'s rows of `table`,
    and the values it binds: the staged relation (`scoring.store.suite_bulk.STAGED`) or the stored table."""
    if staged:
        return f"_suite_{table} WHERE", []
    return f"{table} WHERE suite = ? AND", [suite.name]


def _stored_units(con: duckdb.DuckDBPyConnection, suite: Suite, ids: set[str], staged: bool = False) -> set[str]:
    """Those of `ids` that the suite's labels may name: its documents, or its chunks in a passage-level
    suite."""
    if suite.unit == "chunk" and not staged:
        source, bound, column = "chunks WHERE run_id IS NULL AND suite = ? AND", [suite.name], "chunk_id"
    else:
        (source, bound), column = _rows_of("chunks" if suite.unit == "chunk" else "documents", suite, staged), (
            "chunk_id" if suite.unit == "chunk" else "doc_id")
    return {doc for (doc,) in con.execute(
        f"SELECT {column} FROM {source} list_contains(?::VARCHAR[], {column})", [*bound, sorted(ids)]).fetchall()}


def review_staged(con: duckdb.DuckDBPyConnection, suite: Suite, problems: Problems) -> bool:
    """Apply the decisions of `suite`'s review files to its staged rows (`scoring.store.suite_bulk`), as
    reading the suite in Python applies them: the touched questions' rows are replaced by their rows as
    reviewed, and `suite.review` set. Problems of the review files are recorded. False, nothing
    changed, when a staged question does not match its line (the caller then reads the suite in
    Python)."""
    found = stored_part(con, suite, problems, staged=True)
    if found is None:
        return False
    part = found[0]
    replace_questions(con, part, staged=True)
    suite.review = part.review
    return True


def write_part(con: duckdb.DuckDBPyConnection, suite: Suite, part: Suite) -> int:
    """Write the reviewed questions of `part` (`stored_part`) and the suite's review over the stored
    rows, update the suite's hashes, and add the questions whose rows changed to `rescore_questions`
    (suite, question_id; created when absent); how many."""
    touched = sorted(part.questions)
    for table in COMPARED:
        con.execute(f"CREATE OR REPLACE TEMP TABLE prior_{table} AS SELECT * FROM {table} WHERE suite = ? "
                    "AND list_contains(?::VARCHAR[], question_id)", [suite.name, touched])
    replace_questions(con, part)
    for table in ("reviews", "label_changes"):
        con.execute(f"DELETE FROM {table} WHERE suite = ?", [suite.name])
    write_review(con, part)
    con.execute("UPDATE suites SET files_hash = ?, base_hash = ? WHERE suite = ?",
                [suite.files_hash, suite.base_hash, suite.name])
    con.execute(f"UPDATE suites SET labels_hash = ({LABELS_HASH_SQL}) WHERE suite = ?", [suite.name] * 5)
    # `reviews` and `label_changes` rows of questions no decision names any more are gone: compared in full
    parts = [part for table in COMPARED for part in both_ways(
        f"SELECT * FROM prior_{table}",
        f"SELECT * FROM {table} WHERE suite = $suite" if table in ("reviews", "label_changes") else
        f"SELECT * FROM {table} WHERE suite = $suite AND list_contains($touched, question_id)")]
    return mark_for_rescoring(con, parts, {"suite": suite.name, "touched": touched})

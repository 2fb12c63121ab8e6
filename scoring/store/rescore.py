"""Re-scoring only the questions whose labels changed, in runs whose files did not.

A suite's files change when a reviewer records a decision (`reviews/*.jsonl`), a question is edited,
a judge's cache grows, or anything else of the suite is edited. The refresh rewrites the suite's
tables (`scoring.store.suite_tables.write_suite`) and then compares them with the rows they replaced:

- **suite-wide** tables (`SUITE_WIDE`: the suite's own row, its chunk map, its judges; and its documents)
  bear on every question: a change there, or a question that is no longer in the suite (its stored
  records would now be refused), re-stages every run of the suite from its files, as before;
- **question** tables (`QUESTION_TABLES`: every row belongs to one question) bear on that question
  only: a question with any row added, removed or changed is re-scored in every run of the suite
  whose files did not change, from the rows the database already holds (`restage_stored`). A new
  question (appended to the suite) is scored the same way: no stored record names it, so it is
  missing in each run.

Re-staging from the database relies on what a refresh already checked: the runs' files did not
change since their records were validated against the suite, and a suite whose documents, chunk
map or suite.json changed is not re-scored this way, so every stored record still passes every
record rule. The one rule that reads the labels, the number of claims an answer's aligned
sentences make (`scoring.store.alignment`), is checked again with each record's file and line.
"""
from __future__ import annotations

import duckdb

from .bulk import CITATIONS_FROM_CLAIMS
from .chunks import chunk_joins, unit_sql
from . import schema
from .suite_tables import DIFFED

QUESTION_TABLES = ("questions", "labels", "expected_claims", "assessed_claims", "reviews", "label_changes",
                   "judgements")
"""Suite tables whose every row belongs to one question (`question_id`). The first four are written
row by row (`write_suite(changes_only=True)`), which keeps the rows that differ; the others are
compared with a snapshot taken before the suite's tables are rewritten."""
SNAPSHOT = tuple(t for t in QUESTION_TABLES if t not in DIFFED)
SUITE_WIDE = {
    "suites": "* EXCLUDE (files_hash, base_hash, labels_hash, n_questions)",
    "chunks": "* EXCLUDE (run_id)",
    "judges": "*",
}
"""Suite tables (and the columns compared) whose rows bear on every question of the suite; `chunks`:
the suite's own map only (`run_id` NULL). The documents bear on every question too: the suite's
tables are rewritten keeping the stored documents when they are the same
(`write_suite(changes_only=True)`), and documents that are not re-stage every run."""
_WHERE = {"chunks": "suite = ? AND run_id IS NULL"}


PRIOR_POSITIONS = "CREATE TEMP TABLE IF NOT EXISTS prior_positions (suite VARCHAR, question_id VARCHAR, position INTEGER)"
"""Each question's position before its suite's tables were rewritten: the code its stored slots carry
(`retrieved_slots.question_code`), which moves with the question when questions are reordered."""


def snapshot_suite(con: duckdb.DuckDBPyConnection, suite: str) -> None:
    """Keep the stored rows of `suite` in every compared table (`prior_<table>`), and its questions'
    positions (`prior_positions`, of every snapshot suite), before the suite's tables are rewritten."""
    for table in (*SUITE_WIDE, *SNAPSHOT):
        con.execute(f"CREATE OR REPLACE TEMP TABLE prior_{table} AS SELECT * FROM {table} "
                    f"WHERE {_WHERE.get(table, 'suite = ?')}", [suite])
    con.execute(PRIOR_POSITIONS)
    con.execute("DELETE FROM prior_positions WHERE suite = ?", [suite])
    con.execute("INSERT INTO prior_positions SELECT suite, question_id, position FROM questions WHERE suite = ?",
                [suite])


def changed_questions(con: duckdb.DuckDBPyConnection, suite: str) -> int | None:
    """Add to `rescore_questions` (suite, question_id; created when absent) the questions of `suite`
    whose rows differ between the stored tables and the rewritten ones (`snapshot_suite`, and the
    rows `write_suite(changes_only=True)` changed), and return how many; None, adding none, when a
    suite-wide row differs or a stored question is gone (every run of the suite must then be staged
    from its files)."""
    con.execute("CREATE TEMP TABLE IF NOT EXISTS rescore_questions (suite VARCHAR, question_id VARCHAR)")
    for table, columns in SUITE_WIDE.items():
        where = _WHERE.get(table, "suite = ?")
        differs = con.execute(f"""
            SELECT EXISTS (SELECT {columns} FROM prior_{table} EXCEPT ALL SELECT {columns} FROM {table} WHERE {where})
                OR EXISTS (SELECT {columns} FROM {table} WHERE {where} EXCEPT ALL SELECT {columns} FROM prior_{table})
        """, [suite, suite]).fetchall()[0][0]
        if differs:
            return None
    gone = con.execute("SELECT EXISTS (SELECT question_id FROM stale_questions EXCEPT "
                       "SELECT question_id FROM fresh_questions)").fetchall()[0][0]
    if gone:
        return None
    parts = [f"SELECT question_id FROM {kind}_{table}" for table in DIFFED for kind in ("stale", "fresh")]
    for table in SNAPSHOT:
        parts += both_ways(f"SELECT * FROM prior_{table}", f"SELECT * FROM {table} WHERE suite = $suite")
    return mark_for_rescoring(con, parts, {"suite": suite})


def both_ways(prior: str, current: str) -> list[str]:
    """The question IDs of the rows in which two relations (SELECTs of the same columns) differ, as two
    SELECTs: rows only in `prior`, rows only in `current` (EXCEPT ALL: a repeated row counts)."""
    return [f"SELECT question_id FROM ({prior} EXCEPT ALL {current})",
            f"SELECT question_id FROM ({current} EXCEPT ALL {prior})"]


def mark_for_rescoring(con: duckdb.DuckDBPyConnection, parts: list[str], params: dict[str, object]) -> int:
    """Add the questions the SELECTs `parts` name (question_id; bound with `params`, `$suite` among them)
    to `rescore_questions` (suite, question_id; created when absent); how many were added."""
    con.execute("CREATE TEMP TABLE IF NOT EXISTS rescore_questions (suite VARCHAR, question_id VARCHAR)")
    before = con.execute("SELECT count(*) FROM rescore_questions").fetchall()[0][0]
    con.execute(f"INSERT INTO rescore_questions SELECT DISTINCT $suite, question_id FROM ({' UNION ALL '.join(parts)})",
                params)
    return con.execute("SELECT count(*) FROM rescore_questions").fetchall()[0][0] - before


def drop_relation(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop the temporary table or view `name` (an allow-listed staging name), whichever it is."""
    schema.drop_relation(con, name, temp=True)


STAGED_FROM_STORED = {
    "stage_records": """
        SELECT t.run_id, t.question_id, t.line, t.answer, t.context, t.latency_ms, t.cost_usd, t.error
        FROM records t SEMI JOIN rescore_pairs p ON p.run_id = t.run_id AND p.question_id = t.question_id""",
    # a ranked chunk is stored with its document and its own ID: the ranking as recorded is its ID; a
    # pair's slots carry the code its question had when they were written (`rescore_pairs.stored_code`)
    "stage_rankings": """
        SELECT p.run_id, p.question_id, list(coalesce(t.chunk_id, d.doc_id) ORDER BY t.rank) AS items
        FROM retrieved_slots t JOIN rescore_pairs p ON p.run_id = t.run_id AND p.stored_code = t.question_code
        JOIN stage_runs r ON r.run_id = p.run_id
        JOIN document_codes d ON d.suite = r.suite AND d.doc_code = t.doc_code
        GROUP BY ALL""",
    # recorded claims only: claims generated from aligned sentences are aligned again
    "stage_claims": """
        SELECT t.run_id, t.question_id, t.claim_id, t.position, t.text, t.citations
        FROM claims t SEMI JOIN rescore_pairs p ON p.run_id = t.run_id AND p.question_id = t.question_id
        WHERE t.aligned_by IS NULL""",
    "stage_sentences": """
        SELECT t.run_id, t.question_id, t.sentence, t.text, t.citations, t.free
        FROM answer_sentences t SEMI JOIN rescore_pairs p ON p.run_id = t.run_id AND p.question_id = t.question_id""",
}
"""The staging relations of `scoring.store.records`, read back from the stored rows of `rescore_pairs`."""

SENTENCE_CITATIONS = """
SELECT f.run_id, f.question_id, f.sentence, f.position, f.doc_id, {unit} AS unit_id
FROM (SELECT s.run_id, r.suite, r.chunk_map, s.question_id, s.sentence, unnest(s.citations) AS doc_id,
             unnest(range(0, len(s.citations)))::INTEGER AS position
      FROM stage_sentences s JOIN stage_runs r ON r.run_id = s.run_id) f
LEFT JOIN suites x ON x.suite = f.suite
{chunk_joins}
""".replace("{chunk_joins}", chunk_joins("f", "f.doc_id")).replace("{unit}", unit_sql("x.unit", "f.doc_id"))
"""`stage_sentence_citations` of the staged sentences (their citations already resolved to IDs)."""


RESCORE_PAIRS = """
SELECT r.run_id, q.question_id, coalesce(p.position, s.position) AS stored_code
FROM stage_runs r JOIN rescore_questions q ON q.suite = r.suite
LEFT JOIN prior_positions p ON p.suite = q.suite AND p.question_id = q.question_id
LEFT JOIN questions s ON s.suite = q.suite AND s.question_id = q.question_id"""
"""`rescore_pairs`: the (run, question) pairs to re-score, and the question code of their stored slots
(its position before this refresh rewrote the suite: `prior_positions`; else where it is)."""


def pairs_to_rescore(con: duckdb.DuckDBPyConnection) -> None:
    """`rescore_pairs` of the staged runs and `rescore_questions` (`RESCORE_PAIRS`)."""
    con.execute(PRIOR_POSITIONS)
    con.execute(f"CREATE OR REPLACE TEMP TABLE rescore_pairs AS {RESCORE_PAIRS}")


def restage_stored(con: duckdb.DuckDBPyConnection) -> None:
    """Stage the stored rows of `rescore_pairs` (run_id, question_id, stored_code: `pairs_to_rescore`;
    `stage_runs` holds their runs),
    then delete those rows from every per-record table; the caller aligns, scores and writes them
    again. The staged relations are tables, so the deletion does not reach them."""
    for name, sql in STAGED_FROM_STORED.items():
        drop_relation(con, name)
        con.execute(f"CREATE TEMP TABLE {name} AS {sql}")
    for name, sql in (("stage_citations", CITATIONS_FROM_CLAIMS), ("stage_sentence_citations", SENTENCE_CITATIONS)):
        drop_relation(con, name)
        con.execute(f"CREATE TEMP TABLE {name} AS {sql}")
    for table in ("records", "claims", "question_scores", "answer_sentences", "alignments"):
        con.execute(f"DELETE FROM {table} t USING rescore_pairs p "
                    "WHERE t.run_id = p.run_id AND t.question_id = p.question_id")
    con.execute("DELETE FROM retrieved_slots t USING rescore_pairs p "
                "WHERE t.run_id = p.run_id AND t.question_code = p.stored_code")

"""The bulk path for recorded runs: each line parsed once, every record rule checked set-based.

`scoring.store.records` holds the rules, one SQL check each, and names the file, line, field and rule of
every problem; it re-reads each line's JSON once per rule. This module decides the common case,
a workspace with no problem, in a few passes: every line is parsed once into typed columns
(`json_transform`), its JSON shape (`json_structure`, one per distinct shape) is compared with the
record format, its keys are counted for repeats, and the remaining rules become aggregate checks
over the typed table. When every check holds, the typed table feeds the staging relations
directly. When any check fails, or a file cannot be read this way at all, nothing is staged and
the caller runs the rule-by-rule path, which reports the problems; a check here may be stricter
than the rules (a doubt sends the runs to the rules), never laxer.

Staged relations, the same columns as the rule-by-rule path's (see `scoring.store.records`):
`stage_claims` and `stage_citations` (tables), `stage_records` and `stage_rankings` (views over
the typed table, which is held once in memory).
"""
from __future__ import annotations

import json

import duckdb

from .chunks import chunk_joins, unit_sql
from .records import READ_LINES, READ_PARQUET, WHITESPACE, has_bom
from .workspace import ID_PATTERN, MAX_CITATIONS, MAX_LINE_BYTES, MAX_RETRIEVED, Run

RECORD_TYPE = (
    '{"question_id": "VARCHAR", "retrieved": ["VARCHAR"], "context": "VARCHAR", "answer": "VARCHAR", '
    '"claims": [{"id": "VARCHAR", "citations": ["VARCHAR"], "text": "VARCHAR"}], '
    '"latency_ms": "DOUBLE", "cost_usd": "DOUBLE", "error": "VARCHAR"}'
)
"""The typed record, as a `json_transform` structure. Its casts are lenient (a number becomes a
string), so the exact JSON types are checked on the line's shape first."""

TEXT_OR_NULL = {"VARCHAR", "NULL"}
NUMBER_OR_NULL = {"UBIGINT", "BIGINT", "DOUBLE", "NULL"}
ID_LIST = ({"VARCHAR"}, {"NULL"})  # ["NULL"] is an empty list (or a list of nulls, caught on the values)
RECORD_SHAPES: dict[str, object] = {
    "question_id": {"VARCHAR"}, "retrieved": ID_LIST, "claims": "claims", "answer": TEXT_OR_NULL,
    "context": TEXT_OR_NULL, "error": TEXT_OR_NULL, "latency_ms": NUMBER_OR_NULL, "cost_usd": NUMBER_OR_NULL,
}
REQUIRED = ("question_id", "retrieved", "claims")
CLAIM_SHAPES: dict[str, object] = {"id": {"VARCHAR"}, "citations": ID_LIST, "text": TEXT_OR_NULL}

def _list_shape(shape: object, allowed: tuple[set[str], ...]) -> bool:
    return isinstance(shape, list) and len(shape) == 1 and any({shape[0]} <= a for a in allowed if isinstance(shape[0], str))


def _claims_shape(shape: object) -> bool:
    if shape == ["NULL"]:
        return True
    if not (isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], dict)):
        return False
    return _object_shape(shape[0], CLAIM_SHAPES, required=("id", "citations"))


def _object_shape(shape: dict, fields: dict[str, object], *, required: tuple[str, ...]) -> bool:
    """Every key known (or an `x_` extension), every known key of an allowed JSON type."""
    if any(key not in shape for key in required):
        return False
    for key, value in shape.items():
        if key.startswith("x_"):
            continue
        allowed = fields.get(key)
        if allowed is None:
            return False
        if allowed == "claims":
            ok = _claims_shape(value)
        elif isinstance(allowed, tuple):
            ok = _list_shape(value, allowed)
        else:
            ok = isinstance(value, str) and value in allowed
        if not ok:
            return False
    return True


def shape_ok(structure: str | None) -> bool:
    """Whether a line's `json_structure` fits the record format (types only; values are checked in SQL)."""
    if structure is None or not structure.startswith("{"):
        return False
    try:
        shape = json.loads(structure)
    except (ValueError, RecursionError):  # nesting deeper than the format allows
        return False
    return isinstance(shape, dict) and _object_shape(shape, RECORD_SHAPES, required=REQUIRED)


def _source(runs: list[Run]) -> tuple[str, list[str]]:
    parts, params = [], []
    for run in runs:
        parts.append(READ_PARQUET if run.records_path.suffix == ".parquet" else READ_LINES)
        params += [run.run_id, str(run.records_path)]
    return " UNION ALL ".join(parts), params


def _parse(con: duckdb.DuckDBPyConnection, runs: list[Run]) -> bool:
    """Fill `bulk` with one typed row per non-blank line; False when a file cannot be read this way."""
    if any(has_bom(run.records_path) for run in runs):
        return False
    source, params = _source(runs)
    try:
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE bulk AS
            SELECT * EXCLUDE (r), unnest(r)  -- the record's fields as columns of their own
            FROM (SELECT run_id, line, strlen(raw) AS n_bytes, json_structure(raw) AS shape,
                         len(json_keys(raw)) AS n_keys, json_keys(raw, '$.claims[*]') AS claim_keys,
                         json_transform(raw, '{RECORD_TYPE}') AS r
                  FROM ({source})
                  WHERE CASE WHEN starts_with(raw, '{{') THEN true ELSE trim(raw, {WHITESPACE}) <> '' END)
        """, params)
    except duckdb.Error:
        return False
    return True


def _checks_hold(con: duckdb.DuckDBPyConnection, runs: list[Run]) -> bool:
    """Every record rule of `scoring.store.records`, as aggregate checks over `bulk` (True: no problem)."""
    shapes = con.execute("SELECT shape, min(n_keys), max(n_keys) FROM bulk GROUP BY shape").fetchall()
    for structure, fewest, most in shapes:
        if not shape_ok(structure):
            return False
        distinct_keys = len(json.loads(structure))  # parsed above, so it parses
        if fewest != distinct_keys or most != distinct_keys:  # a key repeated in one object
            return False
    counts = dict(con.execute("SELECT run_id, count(*) FROM bulk GROUP BY run_id").fetchall())
    if any(counts.get(run.run_id, 0) == 0 for run in runs):  # an empty file is reported by the rules
        return False
    bad_lines, unknown_questions, repeated_questions = con.execute(f"""
        SELECT count(*) FILTER (WHERE
                 n_bytes > {MAX_LINE_BYTES}
                 OR len(retrieved) > {MAX_RETRIEVED}
                 OR len(list_distinct(retrieved)) <> len(retrieved)   -- a repeat or a null
                 OR len(claims) > x.max_claims
                 OR len(list_distinct(list_transform(claims, lambda c: c.id))) <> len(claims)
                 OR list_bool_or(list_transform(claims, lambda c: c IS NULL OR c.citations IS NULL
                       OR len(c.citations) > {MAX_CITATIONS}
                       OR len(list_distinct(c.citations)) <> len(c.citations)))
                 OR list_bool_or(list_transform(claim_keys, lambda k: len(k) <> len(list_distinct(k))))
                 OR NOT coalesce(isfinite(latency_ms) AND latency_ms >= 0, latency_ms IS NULL)
                 OR NOT coalesce(isfinite(cost_usd) AND cost_usd >= 0, cost_usd IS NULL)),
               count(*) FILTER (WHERE q.question_id IS NULL),
               count(*) - count(DISTINCT (b.run_id, b.question_id))
        FROM bulk b JOIN stage_runs s ON s.run_id = b.run_id JOIN suites x ON x.suite = s.suite
        LEFT JOIN questions q ON q.suite = s.suite AND q.question_id = b.question_id
    """).fetchone()
    if bad_lines or unknown_questions or repeated_questions:
        return False
    # IDs: a retrieved ID must be a document of the suite or a chunk of the run's map (documents and
    # chunks passed the ID rule when their files were read); claim and cited IDs follow the ID rule.
    unknown_retrieved = con.execute("""
        SELECT count(*)
        FROM (SELECT DISTINCT run_id, unnest(retrieved) AS item FROM bulk) i
        JOIN stage_runs r ON r.run_id = i.run_id
        LEFT JOIN documents d ON d.suite = r.suite AND d.doc_id = i.item
        {chunk_joins}
        WHERE d.doc_id IS NULL AND rc.chunk_id IS NULL AND sc.chunk_id IS NULL
    """.replace("{chunk_joins}", chunk_joins("r", "i.item"))).fetchone()[0]
    if unknown_retrieved:
        return False
    bad_ids = con.execute("""
        WITH claim_ids AS (SELECT DISTINCT unnest(list_transform(claims, lambda c: c.id)) AS item FROM bulk),
        cited AS (SELECT DISTINCT unnest(flatten(list_transform(claims, lambda c: c.citations))) AS item FROM bulk)
        SELECT count(*) FROM (SELECT item FROM claim_ids UNION SELECT item FROM cited)
        WHERE NOT regexp_full_match(item, $pattern)
    """, {"pattern": ID_PATTERN}).fetchone()[0]
    return bad_ids == 0


CITATIONS_FROM_CLAIMS = """
WITH flat AS (
  SELECT c.run_id, c.question_id, c.claim_id, s.suite, s.chunk_map, x.unit,
         unnest(c.citations) AS item, unnest(range(0, len(c.citations)))::INTEGER AS position
  FROM stage_claims c JOIN stage_runs s ON s.run_id = c.run_id JOIN suites x ON x.suite = s.suite
)
SELECT run_id, question_id, claim_id, position, item AS doc_id, item AS unit_id, true AS counted
FROM flat WHERE chunk_map IS NULL
UNION ALL
SELECT *, row_number() OVER (PARTITION BY run_id, question_id, claim_id, unit_id ORDER BY position) = 1
FROM (SELECT f.run_id, f.question_id, f.claim_id, f.position, f.item AS doc_id, {unit} AS unit_id
      FROM flat f {chunk_joins}
      WHERE f.chunk_map IS NOT NULL)
""".replace("{chunk_joins}", chunk_joins("f", "f.item")).replace("{unit}", unit_sql("f.unit", "f.item"))
"""`stage_citations` of the staged claims (as recorded), chunks mapped as `scoring.store.records` maps
them: `unit_id` is what labels match; `counted` is false for a second citation of one document by
one claim."""


def _stage(con: duckdb.DuckDBPyConnection) -> None:
    """The staging relations from `bulk` (chunk mapping as in `scoring.store.records`)."""
    con.execute("""
        CREATE OR REPLACE TEMP VIEW stage_records AS
        SELECT run_id, question_id, line, answer, context, latency_ms, cost_usd, error FROM bulk
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_claims AS
        SELECT run_id, question_id, c.id AS claim_id, position::INTEGER AS position, c.text AS text,
               c.citations AS citations
        FROM (SELECT run_id, question_id, unnest(claims) AS c,
                     unnest(range(0, len(claims))) AS position
              FROM bulk)
    """)
    con.execute("CREATE OR REPLACE TEMP VIEW stage_rankings AS "
                "SELECT run_id, question_id, retrieved AS items FROM bulk")
    con.execute(f"CREATE OR REPLACE TEMP TABLE stage_citations AS {CITATIONS_FROM_CLAIMS}")


def stage_bulk(con: duckdb.DuckDBPyConnection, runs: list[Run]) -> bool:
    """Stage `runs` on the bulk path (`stage_runs` and the suite tables must be filled).

    Returns False, staging nothing, when a file cannot be read this way or any check fails: the
    caller then runs the rule-by-rule path, which names every problem.
    """
    if not runs:
        return False
    if not (_parse(con, runs) and _checks_hold(con, runs)):
        con.execute("DROP TABLE IF EXISTS bulk")
        return False
    _stage(con)
    return True

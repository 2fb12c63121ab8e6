"""The bulk path for recorded runs: each line parsed once, every record rule checked set-based.

Both paths take the record's fields from `scoring.store.formats`. `scoring.store.records` checks them
rule by rule, one SQL check each, and names the file, line, field and rule of
every problem; it re-reads each line's JSON once per rule. This module decides the common case,
a workspace with no problem, in a few passes: every line is parsed once into typed columns
(`json_transform`), its JSON shape (`json_structure`, one per distinct shape) is compared with the
record format, its keys are counted for repeats, and the remaining rules become aggregate checks
over the typed table. When every check holds, the typed table feeds the staging relations
directly. When any check fails, or a file cannot be read this way at all, nothing is staged and
the caller runs the rule-by-rule path, which reports the problems; a check here may be stricter
than the rules (a doubt sends the runs to the rules), never laxer.

Staged relations, the same columns as the rule-by-rule path's (see `scoring.store.records`):
`stage_claims`, `stage_citations`, `stage_sentences` and `stage_sentence_citations` (tables),
`stage_records` and `stage_rankings` (views over the typed table, which is held once in memory).
Answer sentences are checked rule by rule as the rule-by-rule path checks them (`SENTENCE_RULES`,
`SENTENCE_CITATION_RULES`): each citation an ID or an index into the record's own `retrieved`.
"""
from __future__ import annotations

import json
from collections.abc import Callable

import duckdb

from .chunks import chunk_joins, unit_sql
from .records import READ_LINES, READ_PARQUET
from .files import MAX_LINE_BYTES, not_strict_json
from .formats import ID, MAX_CLAIMS_OF_SUITE, RECORD, Bound, Format
from .lines import JSON_SPACE_SQL, has_bom
from .workspace import Run

RECORD_TYPE = RECORD.structure()
"""The typed record, as a `json_transform` structure (`formats.RECORD`). Its casts are lenient (a number becomes
a string), so the exact JSON types are checked on the line's shape first. A sentence's citations stay
JSON values: an ID (a string) and an index into `retrieved` (a whole number) are told apart by type."""


def shape_ok(structure: str | None) -> bool:
    """Whether a line's `json_structure` fits the record format (`formats.Format.shape_ok`: types only;
    values are checked in SQL)."""
    if structure is None or not structure.startswith("{"):
        return False
    try:
        shape = json.loads(structure)
    except (ValueError, RecursionError):  # nesting deeper than the format allows
        return False
    return RECORD.shape_ok(shape)


def _most(bound: Bound) -> str:
    return "x.max_claims" if bound.most == MAX_CLAIMS_OF_SUITE else str(bound.most)


def value_breaks(declared: Format, prefix: str = "", depth: int = 0,
                 cross: dict[str, Callable[[str], str]] | None = None) -> list[str]:
    """SQL conditions over the typed columns of `bulk` (`prefix`: the object's alias inside a list), each
    true when a declared field breaks a rule of its own that the line's shape cannot show: a required
    field null (elements of a list share one shape, so a key missing from one shows only as null), a
    value failing its kind's test, a list beyond its bound, an item not of its kind. An ID is left to
    `_id_values` (checked once per distinct value) or, where it refers to another file, to the join
    with it. `cross`: for a list of objects, further conditions on each object (rules across its items)."""
    out = []
    for f in declared.fields:
        column, kind = f"{prefix}{f.name}", f.kind
        if prefix and f.missing is not None and f.unless is None:
            out.append(f"{column} IS NULL")
        if kind.sql is not None and kind is not ID:
            out.append(f"({column} IS NOT NULL AND NOT coalesce({kind.sql(column)}, false))")
        out += [f"len({column}) > {_most(bound)}" for bound in f.bounds if bound.size]
        item, each = kind.items, f"x{depth}"
        if isinstance(item, Format):
            inner = [f"{each} IS NULL", *value_breaks(item, f"{each}.", depth + 1)]
            inner += [condition(each) for name, condition in (cross or {}).items() if name == f.name]
            out.append(f"list_bool_or(list_transform({column}, lambda {each}: {' OR '.join(inner)}))")
        elif item is not None and item.sql is not None and item is not ID:
            out.append(f"NOT coalesce(list_bool_and(list_transform({column}, lambda {each}: "
                       f"coalesce({item.sql(each)}, false))), true)")
    return out


def _id_values(declared: Format, prefix: str = "", depth: int = 0) -> list[tuple[str, bool]]:
    """(SQL, many) of every ID of a row of `bulk` that refers to no other file (`Field.refers`): one ID, or a
    list of them (`many`). Such IDs repeat from line to line: each distinct one is checked once."""
    out = []
    for f in declared.fields:
        column, kind, each = f"{prefix}{f.name}", f.kind, f"x{depth}"
        if f.refers is not None:
            continue
        if kind is ID:
            out.append((column, False))
        elif kind.items is ID:
            out.append((column, True))
        elif isinstance(kind.items, Format):
            for inner, many in _id_values(kind.items, f"{each}.", depth + 1):
                listed = f"list_transform({column}, lambda {each}: {inner})"
                out.append((f"flatten({listed})" if many else listed, True))
    return out


_BAD_IDS = "SELECT count(*) FROM ({}) WHERE NOT {}".format(
    " UNION ".join(f"SELECT DISTINCT {'unnest(' + sql + ')' if many else sql} AS item FROM bulk"
                   for sql, many in _id_values(RECORD)), ID.sql("item"))
"""The IDs of the records that refer to no other file (claim IDs, cited IDs) breaking the ID rule."""

_BAD_VALUES = " OR ".join([
    *value_breaks(RECORD, cross={"claims": lambda c: f"len(list_distinct({c}.citations)) <> len({c}.citations)"}),
    # across items: a retrieved ID once per ranking (a null too is caught here), a claim ID once per answer
    "len(list_distinct(retrieved)) <> len(retrieved)",
    "len(list_distinct(list_transform(claims, lambda c: c.id))) <> len(claims)",
    # a key twice in a claim or a sentence (the line's own keys are counted on its shape)
    "list_bool_or(list_transform(claim_keys, lambda k: len(k) <> len(list_distinct(k))))",
    "list_bool_or(list_transform(sentence_keys, lambda k: len(k) <> len(list_distinct(k))))",
    f"n_bytes > {MAX_LINE_BYTES}",
])
"""A line of `bulk` breaking a rule of its fields' values (after `shape_ok` held for its shape)."""


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
        # the lines first: parsed from a table, the JSON functions below run on every thread (read and
        # parsed in one pipeline, they ran at the pace of the reader: 1M records, 7.8 s against about 5 s)
        con.execute(f"CREATE OR REPLACE TEMP TABLE bulk_lines AS {source}", params)
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE bulk AS
            SELECT * EXCLUDE (r), unnest(r)  -- the record's fields as columns of their own
            FROM (SELECT run_id, line, strlen(raw) AS n_bytes, json_structure(raw) AS shape,
                         len(json_keys(raw)) AS n_keys, json_keys(raw, '$.claims[*]') AS claim_keys,
                         json_keys(raw, '$.answer_sentences[*]') AS sentence_keys,
                         json_transform(raw, '{RECORD_TYPE}') AS r
                  FROM bulk_lines
                  WHERE CASE WHEN starts_with(raw, '{{') THEN true ELSE trim(raw, {JSON_SPACE_SQL}) <> '' END)
        """)
        return not not_strict_json(con, "bulk_lines")
    except duckdb.Error:
        return False
    finally:
        con.execute("DROP TABLE IF EXISTS bulk_lines")


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
        SELECT count(*) FILTER (WHERE {_BAD_VALUES}),
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
    bad_ids = con.execute(_BAD_IDS).fetchone()[0]
    return bad_ids == 0 and _sentence_citations_hold(con)


def _sentence_citations_hold(con: duckdb.DuckDBPyConnection) -> bool:
    """`bulk_citations`: every citation of every answer sentence, an index resolved to the ID it points
    at in the record's own `retrieved`; True when each is an index into `retrieved` or an ID following
    the ID rule, and no sentence cites one ID twice (`scoring.store.records` SENTENCE_CITATION_RULES)."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE bulk_citations AS
        WITH sentences AS (
          SELECT run_id, question_id, retrieved, unnest(answer_sentences) AS s,
                 unnest(range(0, len(answer_sentences)))::INTEGER AS sentence
          FROM bulk WHERE answer_sentences IS NOT NULL
        ),
        flat AS (
          SELECT run_id, question_id, sentence, retrieved, unnest(s.citations) AS raw,
                 unnest(range(0, len(s.citations)))::INTEGER AS position
          FROM sentences
        )
        SELECT run_id, question_id, sentence, position, json_type(raw) = 'VARCHAR' AS named,
               CASE WHEN json_type(raw) = 'VARCHAR' THEN raw->>'$'
                    WHEN TRY_CAST(raw::VARCHAR AS BIGINT) BETWEEN 0 AND len(retrieved) - 1
                    THEN retrieved[TRY_CAST(raw::VARCHAR AS BIGINT) + 1] END AS doc_id
        FROM flat
    """)
    bad, repeated = con.execute(f"""
        SELECT count(*) FILTER (WHERE doc_id IS NULL OR (named AND NOT {ID.sql("doc_id")})),
               count(*) - count(DISTINCT (run_id, question_id, sentence, doc_id))
        FROM bulk_citations
    """).fetchone()
    return bad == 0 and repeated == 0


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
    # answer sentences: a record without `claims` is free-text (its claims come from its aligned sentences)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_sentences AS
        SELECT b.run_id, b.question_id, b.sentence, b.s.text AS text, coalesce(c.citations, []) AS citations, b.free
        FROM (SELECT run_id, question_id, claims IS NULL AS free, unnest(answer_sentences) AS s,
                     unnest(range(0, len(answer_sentences)))::INTEGER AS sentence
              FROM bulk WHERE answer_sentences IS NOT NULL) b
        LEFT JOIN (SELECT run_id, question_id, sentence, list(doc_id ORDER BY position) AS citations
                   FROM bulk_citations GROUP BY ALL) c
          ON c.run_id = b.run_id AND c.question_id = b.question_id AND c.sentence = b.sentence
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_sentence_citations AS
        SELECT f.run_id, f.question_id, f.sentence, f.position, f.doc_id, {unit} AS unit_id
        FROM (SELECT c.*, r.suite, r.chunk_map FROM bulk_citations c JOIN stage_runs r ON r.run_id = c.run_id) f
        LEFT JOIN suites s ON s.suite = f.suite
        {chunk_joins}
    """.replace("{chunk_joins}", chunk_joins("f", "f.doc_id")).replace("{unit}", unit_sql("s.unit", "f.doc_id")))
    con.execute("DROP TABLE bulk_citations")


def stage_bulk(con: duckdb.DuckDBPyConnection, runs: list[Run]) -> bool:
    """Stage `runs` on the bulk path (`stage_runs` and the suite tables must be filled).

    Returns False, staging nothing, when a file cannot be read this way or any check fails: the
    caller then runs the rule-by-rule path, which names every problem.
    """
    if not runs:
        return False
    if not (_parse(con, runs) and _checks_hold(con, runs)):
        con.execute("DROP TABLE IF EXISTS bulk")
        con.execute("DROP TABLE IF EXISTS bulk_citations")
        return False
    _stage(con)
    return True

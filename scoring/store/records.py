"""Staging and checking recorded runs with set-based SQL.

Each records file is read as numbered text lines (so every problem names its line), parsed with
DuckDB's JSON functions, checked rule by rule in SQL, and split into typed staging tables:

    stage_runs(run_id, suite, k, chunk_map, chunk_file)
    stage_records(run_id, question_id, line, answer, context, latency_ms, cost_usd, error)
    stage_rankings(run_id, question_id, items)           items: the ranking as recorded
    stage_claims(run_id, question_id, claim_id, position, text, citations)   citations: as recorded
    stage_citations(run_id, question_id, claim_id, position, doc_id, unit_id, counted)
    stage_sentences(run_id, question_id, sentence, text, citations, free)    citations: indexes resolved
    stage_sentence_citations(run_id, question_id, sentence, position, doc_id, unit_id)

`free` marks a record without `claims`: its claims come from its aligned sentences
(`scoring.store.alignment`, which adds them to `stage_claims` and `stage_citations`).

Cited chunks are mapped here, ranked ones when `retrieved` is written (`scoring.store.refresh`), by the
rule `scoring.store.chunks` states: an ID found in the run's chunk map (its own `chunks.jsonl`, else the
suite's) stands for its document. `unit_id` is what labels are matched on: the document, or in a
passage-level suite the ID as recorded. `counted` is false for a second citation of one document
by one claim. `stage_citations.doc_id` is the ID as cited.

`scoring.store.bulk` stages a clean workspace faster; this module names the file, line, field and rule of every
problem. The rules of each field (missing, not of its kind, beyond a bound) are generated from the declared
formats (`scoring.store.formats`: `field_rules`, `object_rules`); the rules across lines and files (a
question of the suite, a question once per run, an ID once per ranking or claim, a citation by index) are
written out below.

The suite tables (`suites`, `documents`, `questions`, `chunks`) must already hold the runs'
suites and the runs' own chunk maps.
"""
from __future__ import annotations

import re

import duckdb

from ..errors import Problems
from .chunks import chunk_joins, unit_sql
from .files import BOM_RULE, MAX_LINE_BYTES, iter_json_lines, not_strict_json
from .formats import CLAIM, ID, MAX_CITATIONS, MAX_RETRIEVED, RECORD, SENTENCE, Format
from .lines import JSON_SPACE_SQL, has_bom
from .workspace import MAX_CLAIMS, Run

RECORD_KEYS = list(RECORD.names)
CLAIM_KEYS = list(CLAIM.names)
SENTENCE_KEYS = list(SENTENCE.names)

READ_LINES = (
    "SELECT ?::VARCHAR AS run_id, ordinality::INTEGER AS line, raw FROM read_csv(?, columns={'raw': 'VARCHAR'}, "
    "header=false, delim=chr(1), quote='', escape='', auto_detect=false, strict_mode=false, "
    f"max_line_size={MAX_LINE_BYTES + 2}) WITH ORDINALITY"
)
READ_PARQUET = (
    "SELECT ?::VARCHAR AS run_id, (file_row_number + 1)::INTEGER AS line, "
    "json_merge_patch(to_json(p), '{\"file_row_number\": null}')::VARCHAR AS raw "
    "FROM read_parquet(?, file_row_number=true) p"
)




def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{value}'" for value in values)


def _value(obj: str, name: str, cast: object) -> str:
    """SQL: field `name` of the JSON object `obj`, read as `cast` (NULL when it cannot be)."""
    if cast == "VARCHAR":
        return f"{obj}->>'$.{name}'"
    if cast == "JSON" or not isinstance(cast, str):
        return f"{obj}->'$.{name}'"
    return f"TRY_CAST({obj}->>'$.{name}' AS {cast})"


def field_rules(declared: Format, obj: str, guard: str = "") -> list[tuple[str, str, str, str]]:
    """The rules of each declared field of `declared` (`scoring.store.formats`) over the JSON object `obj`, as
    (field, value shown, rule, condition): absent where required; not of its kind (its JSON type, a list's
    item types, the kind's test of the value); beyond a bound. `guard` prefixes each condition."""
    rules = []
    for f in declared.fields:
        kind, path = f.kind, f"'$.{f.name}'"
        json_type, shown = f"json_type({obj}, {path})", f"{obj}->{path}"
        if f.missing is not None:
            unless = f" AND json_type({obj}, '$.{f.unless}') IS NULL" if f.unless else ""
            rules.append((f.name, obj if f.shows == "object" else "NULL", f.missing,
                          f"{guard}{json_type} IS NULL{unless}"))
        allowed = kind.types + (("NULL",) if f.null_absent else ())
        wrong = f"{json_type} NOT IN ({_sql_list(allowed)})"
        if kind.items is not None:
            items = ("OBJECT",) if isinstance(kind.items, Format) else kind.items.types
            wrong += (f" OR ({json_type} = 'ARRAY' AND NOT list_bool_and(list_transform("
                      f"json_type({obj}, '$.{f.name}[*]'), lambda t: t IN ({_sql_list(items)}))))")
        broken = None
        if kind.sql is not None:
            broken = (f"{json_type} IN ({_sql_list(kind.types)}) "
                      f"AND NOT coalesce({kind.sql(_value(obj, f.name, kind.cast))}, false)")
        if broken is not None and kind.rule is None:
            wrong, broken = f"{wrong} OR ({broken})", None
        rules.append((f.name, obj if f.shows == "object" else shown, f.rule,
                      f"{guard}{json_type} IS NOT NULL AND ({wrong})"))
        if broken is not None:
            rules.append((f.name, shown, kind.rule, f"{guard}{broken}"))
        rules += [(f.name, f"to_json(json_array_length({obj}, {path}))", bound.rule,
                   f"{json_type} = 'ARRAY' AND json_array_length({obj}, {path}) > {bound.most}")
                  for bound in f.bounds if bound.size]
    return rules


def _twice(obj: str) -> str:
    """SQL for the keys of a JSON object `obj` that appear more than once."""
    return (f"to_json(list_sort(list_distinct(list_filter(json_keys({obj}), "
            f"lambda key, i: list_position(json_keys({obj}), key) < i))))")


def object_rules(declared: Format, obj: str, field: str, guard: str = "") -> list[tuple[str, str, str, str]]:
    """The rules of the object `obj` as a whole: no key but its declared fields (or `x_` extensions), no
    key twice; reported on `field`."""
    names = list(declared.names)
    unknown = (f"list_filter(json_keys({obj}), lambda key: NOT list_contains({names!r}, key) "
               "AND NOT starts_with(key, 'x_'))")
    return [
        (field, f"to_json({unknown})", f"unknown field (allowed: {', '.join(names)}; prefix extensions with x_)",
         f"{guard}len({unknown}) > 0"),
        (field, _twice(obj), "a key appears twice in one object (parsers disagree on which wins)",
         f"{guard}len(json_keys({obj})) > len(list_distinct(json_keys({obj})))"),
    ]


# Each rule: (field, SQL value shown, rule text, SQL condition that flags a problem), evaluated
# over `parsed` rows (one per non-blank line: run_id, line, suite, j JSON, qid): the line, then the
# declared fields of a record (`formats.RECORD`), then its question's references (`question_id` refers).
LINE_RULES: list[tuple[str | None, str, str, str]] = [
    (None, "NULL", "not valid JSON", "NOT valid"),
    (None, "NULL", "expected a JSON object on each line", "valid AND json_type(j) <> 'OBJECT'"),
    *field_rules(RECORD, "j", "is_obj AND "),
    ("question_id", "to_json(qid)", "is not a question of suite '{suite}'",
     f"qid IS NOT NULL AND NOT known_question AND {ID.sql('qid')}"),
    ("question_id", "to_json(qid)", "appears on more than one line of this run (first on line {first_line})",
     "qid IS NOT NULL AND line > first_line"),
    *object_rules(RECORD, "j", "(record)", "is_obj AND "),
]

# Rules over one retrieved ID (rows of `ret`: run_id, line, suite, qid, rank, doc_id as recorded, chunk_id
# when it is a chunk of the run's chunk map): the item's kind (`formats.RECORD` retrieved), what it refers to,
# each once per ranking.
RETRIEVED_RULES: list[tuple[str, str]] = [
    (ID.rule, f"NOT {ID.sql('doc_id')}"),
    ("is not a document of suite '{suite}' v{suite_version}{or_chunk}",
     f"NOT known_doc AND chunk_id IS NULL AND {ID.sql('doc_id')}"),
    ("appears twice in the ranking (first at rank {first_rank})", "rank > first_rank"),
]

# Rules over one claim (rows of `cl`: run_id, line, suite, qid, position, c JSON, claim_id):
# (field suffix, value shown, rule, condition). The field reads `claims['<id>'].citations`.
CLAIM_RULES: list[tuple[str, str, str, str]] = [
    *field_rules(CLAIM, "c"),
    ("id", "to_json(claim_id)", "is claimed twice in one answer", "claim_id IS NOT NULL AND position > first_position"),
    *object_rules(CLAIM, "c", ""),
]

# Rules over one answer sentence (rows of `sen`: run_id, line, suite, qid, position, s JSON): (field suffix,
# value shown, rule, condition). The field reads `answer_sentences[<n>].<suffix>`.
SENTENCE_RULES: list[tuple[str, str, str, str]] = [*field_rules(SENTENCE, "s"), *object_rules(SENTENCE, "s", "")]

# Rules over one sentence citation (rows of `scites`: ..., sentence, cite_pos, raw JSON, idx, n_retrieved, doc_id).
SENTENCE_CITATION_RULES: list[tuple[str, str, str]] = [
    ("raw", "is not an index into retrieved (it holds {n_retrieved} IDs: indexes 0 to {last_index})",
     "idx IS NOT NULL AND (idx < 0 OR idx >= n_retrieved)"),
    ("to_json(doc_id)", ID.rule, f"idx IS NULL AND NOT {ID.sql('doc_id')}"),
    ("to_json(doc_id)", "is cited twice by one sentence", "doc_id IS NOT NULL AND cite_pos > first_cite"),
]

# Rules over one cited ID of a claim (rows of `cites`): the item's kind (`formats.CLAIM` citations), each once.
CITATION_RULES: list[tuple[str, str]] = [
    (ID.rule, f"NOT {ID.sql('doc_id')}"),
    ("is cited twice by one claim", "cite_pos > first_cite"),
]


def _chunk_map(run: Run) -> tuple[str | None, str | None]:
    """(chunk_map, chunk_file): which chunk map applies to `run` ('run', 'suite' or None) and its file."""
    if run.chunks is not None:
        return "run", str(run.folder / "chunks.jsonl")
    suite_chunks = run.folder.parent.parent / "suites" / run.suite / "chunks.jsonl"
    return ("suite", str(suite_chunks)) if suite_chunks.exists() else (None, None)


def _rule_sql(rule: str) -> str:
    """A rule text as a SQL string expression; `{column}` placeholders become the row's value."""
    quoted = "'" + rule.replace("'", "''") + "'"
    return re.sub(r"\{(\w+)\}", lambda m: f"' || {m.group(1)} || '", quoted)


def _checks(table: str, rules: list[tuple[str | None, str, str, str]]) -> str:
    """One query listing (run_id, line, question, field, value, rule) for every broken rule."""
    parts = [
        f"SELECT run_id, line, qid, {'NULL' if field is None else field}, ({value})::VARCHAR, {_rule_sql(rule)} "
        f"FROM {table} WHERE {condition}"
        for field, value, rule, condition in rules
    ]
    return "SELECT * FROM (" + " UNION ALL ".join(parts) + ")"


def read_lines(con: duckdb.DuckDBPyConnection, runs: list[Run], problems: Problems) -> None:
    """Load every run's records as numbered raw lines into `stage_lines`."""
    con.execute("CREATE OR REPLACE TEMP TABLE stage_lines (run_id VARCHAR, line INTEGER, raw VARCHAR)")
    for run in runs:
        path = run.records_path
        if has_bom(path):
            problems.add(BOM_RULE, path=str(path), line=1)
            continue
        query = READ_PARQUET if path.suffix == ".parquet" else READ_LINES
        try:
            con.execute(f"INSERT INTO stage_lines {query}", [run.run_id, str(path)])
        except (duckdb.InvalidInputException, duckdb.ConversionException, duckdb.IOException) as error:
            before = len(problems.items)
            if path.suffix == ".parquet":
                problems.add(f"cannot read the Parquet file ({str(error).splitlines()[0]})", path=str(path))
            else:
                for _ in iter_json_lines(path, problems):
                    pass
            if len(problems.items) == before:
                problems.add(f"cannot read the file ({str(error).splitlines()[0]})", path=str(path))
    # One pass over the lines: which runs hold a record at all, and which lines break the length
    # limit (the reader's limit counts the line end; the documented limit is on the line's own bytes).
    paths = {run.run_id: run.records_path for run in runs}
    counts = dict.fromkeys(paths, 0)
    too_long: list[tuple[str, int]] = []
    for run_id, n_records, long_lines in con.execute(
        """SELECT run_id, count(*) FILTER (WHERE trim(raw, {JSON_SPACE}) <> ''),
                  list(line ORDER BY line) FILTER (WHERE strlen(raw) > ? AND strlen(rtrim(raw, chr(13))) > ?)
           FROM stage_lines GROUP BY run_id""".replace("{JSON_SPACE}", JSON_SPACE_SQL),
        [MAX_LINE_BYTES, MAX_LINE_BYTES],
    ).fetchall():
        counts[run_id] = n_records
        too_long += [(run_id, line) for line in long_lines or []]
    if too_long:
        con.execute("DELETE FROM stage_lines WHERE strlen(rtrim(raw, chr(13))) > ?", [MAX_LINE_BYTES])
    for run_id, line in sorted(too_long):
        problems.add(f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB", path=str(paths[run_id]), line=line)
    for run_id, n_records in counts.items():
        if n_records == 0 and not any(p.path == str(paths[run_id]) for p in problems.items):
            problems.add("the file holds no records", path=str(paths[run_id]))


def stage_runs(con: duckdb.DuckDBPyConnection, runs: list[Run]) -> None:
    """`stage_runs`: each run's suite, cutoff and chunk map."""
    con.execute("CREATE OR REPLACE TEMP TABLE stage_runs (run_id VARCHAR, suite VARCHAR, k INTEGER, "
                "chunk_map VARCHAR, chunk_file VARCHAR)")
    if runs:
        con.executemany("INSERT INTO stage_runs VALUES (?, ?, ?, ?, ?)", [(r.run_id, r.suite, r.k, *_chunk_map(r))
                                                                          for r in runs])


def _collect(con: duckdb.DuckDBPyConnection, sql: str, paths: dict[str, str], problems: Problems,
             limit: int = 1000) -> None:
    for run_id, line, question, field, value, rule in con.execute(f"{sql} ORDER BY 1, 2 LIMIT {limit}").fetchall():
        shown = value if value is None else _json_value(value)
        problems.add(rule, field, shown if value is not None else ..., path=paths[run_id], line=line,
                     question=question)


def _json_value(text: str):
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def stage_records(con: duckdb.DuckDBPyConnection, runs: list[Run], problems: Problems) -> None:
    """Parse and check `stage_lines` against the suite tables and `stage_runs`; fill the typed
    staging tables.

    Every broken rule is added to `problems` with its file and line.
    """
    paths = {run.run_id: str(run.records_path) for run in runs}
    con.execute("CREATE OR REPLACE TEMP TABLE not_strict (run_id VARCHAR, line INTEGER)")
    refused = not_strict_json(con, "stage_lines")
    if refused:
        con.executemany("INSERT INTO not_strict VALUES (?, ?)", refused)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE parsed AS
        WITH base AS (
          SELECT l.run_id, l.line, r.suite, json_valid(l.raw) AND n.line IS NULL AS valid,
                 CASE WHEN json_valid(l.raw) AND n.line IS NULL THEN l.raw::JSON END AS j
          FROM stage_lines l JOIN stage_runs r USING (run_id)
          LEFT JOIN not_strict n ON n.run_id = l.run_id AND n.line = l.line
          WHERE trim(l.raw, {JSON_SPACE}) <> ''
        ),
        typed AS (
          SELECT *, coalesce(json_type(j) = 'OBJECT', false) AS is_obj,
                 CASE WHEN json_type(j, '$.question_id') = 'VARCHAR' THEN j->>'$.question_id' END AS qid
          FROM base
        )
        SELECT t.*,
               q.question_id IS NOT NULL AS known_question,
               min(t.line) OVER (PARTITION BY t.run_id, t.qid) AS first_line,
               s.max_claims,
               CASE WHEN s.max_claims < {MAX_CLAIMS}
                    THEN s.max_claims || ' (the max_claims of suite ' || t.suite || ')'
                    ELSE s.max_claims::VARCHAR END AS claim_bound
        FROM typed t
        LEFT JOIN questions q ON q.suite = t.suite AND q.question_id = t.qid
        LEFT JOIN suites s ON s.suite = t.suite
    """.replace("{JSON_SPACE}", JSON_SPACE_SQL).replace("{MAX_CLAIMS}", str(MAX_CLAIMS)))
    line_rules = [(None if f is None else f"'{f}'", v, r, c) for f, v, r, c in LINE_RULES]
    _collect(con, _checks("parsed", line_rules), paths, problems)

    con.execute("""
        CREATE OR REPLACE TEMP TABLE good AS
        SELECT run_id, line, suite, qid, j, max_claims FROM parsed
        WHERE is_obj AND qid IS NOT NULL AND known_question AND line = first_line
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE ret AS
        WITH lists AS (
          SELECT run_id, line, suite, qid, json_extract_string(j, '$.retrieved[*]') AS docs FROM good
          WHERE json_type(j, '$.retrieved') = 'ARRAY' AND json_array_length(j, '$.retrieved') <= $max_retrieved
            AND list_bool_and(list_transform(json_type(j, '$.retrieved[*]'), lambda t: t = 'VARCHAR'))
        ),
        flat AS (
          SELECT run_id, line, suite, qid, len(list_distinct(docs)) < len(docs) AS has_duplicates,
                 unnest(docs) AS doc_id, unnest(range(1, len(docs) + 1)) AS rank FROM lists
        ),
        firsts AS (
          -- only a ranking that repeats an ID needs the window that finds each ID's first rank
          SELECT *, rank AS first_rank FROM flat WHERE NOT has_duplicates
          UNION ALL
          SELECT *, min(rank) OVER (PARTITION BY run_id, qid, doc_id) AS first_rank FROM flat WHERE has_duplicates
        )
        SELECT f.* EXCLUDE (has_duplicates), d.doc_id IS NOT NULL AS known_doc, s.version AS suite_version, s.unit,
               coalesce(d.version, s.corpus_version) AS current_version,
               coalesce(rc.chunk_id, sc.chunk_id) AS chunk_id, coalesce(rc.doc_id, sc.doc_id) AS chunk_doc,
               coalesce(rc.doc_version, sc.doc_version) AS chunk_version, coalesce(rc.text, sc.text) AS chunk_text,
               CASE WHEN r.chunk_file IS NULL THEN '' ELSE ' or a chunk of ' || r.chunk_file END AS or_chunk
        FROM firsts f
        JOIN stage_runs r ON r.run_id = f.run_id
        LEFT JOIN documents d ON d.suite = f.suite AND d.doc_id = f.doc_id
        LEFT JOIN suites s ON s.suite = f.suite
        {chunk_joins}
        WHERE f.doc_id IS NOT NULL
    """.replace("{chunk_joins}", chunk_joins("r", "f.doc_id")), {"max_retrieved": MAX_RETRIEVED})
    ret_rules = [("'retrieved'", "to_json(doc_id)", r, c) for r, c in RETRIEVED_RULES]
    _collect(con, _checks("ret", ret_rules), paths, problems)

    con.execute("""
        CREATE OR REPLACE TEMP TABLE cl AS
        WITH lists AS (
          SELECT run_id, line, suite, qid, json_extract(j, '$.claims[*]') AS cs FROM good
          WHERE json_type(j, '$.claims') = 'ARRAY' AND json_array_length(j, '$.claims') <= max_claims
        ),
        flat AS (
          SELECT run_id, line, suite, qid, unnest(cs) AS c, unnest(range(0, len(cs))) AS position FROM lists
        ),
        named AS (
          SELECT *, CASE WHEN json_type(c, '$.id') = 'VARCHAR' THEN c->>'$.id' END AS claim_id FROM flat
          WHERE json_type(c) = 'OBJECT'
        )
        SELECT *, min(position) OVER (PARTITION BY run_id, qid, claim_id) AS first_position FROM named
    """)
    claim_field = "'claims[' || coalesce(to_json(claim_id)::VARCHAR, position::VARCHAR) || ']'"
    claim_rules = [
        (claim_field + (f" || '.{suffix}'" if suffix else ""), value, rule, condition)
        for suffix, value, rule, condition in CLAIM_RULES
    ]
    _collect(con, _checks("cl", claim_rules), paths, problems)

    con.execute("""
        CREATE OR REPLACE TEMP TABLE cites AS
        WITH lists AS (
          SELECT run_id, line, suite, qid, claim_id, json_extract_string(c, '$.citations[*]') AS docs FROM cl
          WHERE claim_id IS NOT NULL AND position = first_position AND json_type(c, '$.citations') = 'ARRAY'
            AND json_array_length(c, '$.citations') <= $max_citations
            AND list_bool_and(list_transform(json_type(c, '$.citations[*]'), lambda t: t = 'VARCHAR'))
        ),
        flat AS (
          SELECT run_id, line, suite, qid, claim_id, unnest(docs) AS doc_id, unnest(range(0, len(docs))) AS cite_pos
          FROM lists
        )
        SELECT f.*, min(f.cite_pos) OVER (PARTITION BY f.run_id, f.qid, f.claim_id, f.doc_id) AS first_cite,
               {unit} AS unit_id
        FROM flat f
        JOIN stage_runs r ON r.run_id = f.run_id
        LEFT JOIN suites s ON s.suite = f.suite
        {chunk_joins}
        WHERE f.doc_id IS NOT NULL
    """.replace("{chunk_joins}", chunk_joins("r", "f.doc_id")).replace("{unit}", unit_sql("s.unit", "f.doc_id")),
        {"max_citations": MAX_CITATIONS})
    cite_rules = [
        ("'claims[' || to_json(claim_id)::VARCHAR || '].citations'", "to_json(doc_id)", r, c)
        for r, c in CITATION_RULES
    ]
    _collect(con, _checks("cites", cite_rules), paths, problems)
    _check_sentences(con, paths, problems)
    if problems:
        return

    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_records AS
        SELECT run_id, qid AS question_id, line,
               j->>'$.answer' AS answer, j->>'$.context' AS context,
               TRY_CAST(j->>'$.latency_ms' AS DOUBLE) AS latency_ms,
               TRY_CAST(j->>'$.cost_usd' AS DOUBLE) AS cost_usd,
               j->>'$.error' AS error
        FROM good
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_rankings AS
        SELECT run_id, qid AS question_id, list(doc_id ORDER BY rank) AS items FROM ret GROUP BY ALL
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_citations AS
        SELECT run_id, qid AS question_id, claim_id, cite_pos::INTEGER AS position, doc_id, unit_id,
               row_number() OVER (PARTITION BY run_id, qid, claim_id, unit_id ORDER BY cite_pos) = 1 AS counted
        FROM cites
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_claims AS
        SELECT l.run_id, l.qid AS question_id, l.claim_id, l.position::INTEGER AS position, l.c->>'$.text' AS text,
               coalesce(x.citations, []) AS citations
        FROM cl l
        LEFT JOIN (SELECT run_id, question_id, claim_id, list(doc_id ORDER BY position) AS citations
                   FROM stage_citations GROUP BY ALL) x
          ON x.run_id = l.run_id AND x.question_id = l.qid AND x.claim_id = l.claim_id
    """)
    _stage_sentences(con)
    for name in ("parsed", "good", "ret", "cl", "cites", "sen", "scites", "stage_lines"):
        con.execute(f"DROP TABLE IF EXISTS {name}")



def _check_sentences(con: duckdb.DuckDBPyConnection, paths: dict[str, str], problems: Problems) -> None:
    """`answer_sentences` of the `good` records: each sentence and each citation checked (indexes resolved
    against the record's own `retrieved`)."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sen AS
        WITH lists AS (
          SELECT run_id, line, suite, qid, j, json_extract(j, '$.answer_sentences[*]') AS ss FROM good
          WHERE json_type(j, '$.answer_sentences') = 'ARRAY' AND json_array_length(j, '$.answer_sentences') <= max_claims
        )
        SELECT run_id, line, suite, qid, j, unnest(ss) AS s, unnest(range(0, len(ss))) AS position FROM lists
    """)
    field = "'answer_sentences[' || position::VARCHAR || ']'"
    rules = [(field + (f" || '.{suffix}'" if suffix else ""), value, rule, condition)
             for suffix, value, rule, condition in SENTENCE_RULES]
    _collect(con, _checks("(SELECT * FROM sen WHERE json_type(s) = 'OBJECT')", rules), paths, problems)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE scites AS
        WITH lists AS (
          SELECT run_id, line, suite, qid, position AS sentence, j, json_extract(s, '$.citations[*]') AS cs FROM sen
          WHERE json_type(s) = 'OBJECT' AND json_type(s, '$.citations') = 'ARRAY'
            AND json_array_length(s, '$.citations') <= $max_citations
            AND list_bool_and(list_transform(json_type(s, '$.citations[*]'), lambda t: t IN ('VARCHAR', 'UBIGINT',
                                                                                              'BIGINT')))
        ),
        flat AS (
          SELECT run_id, line, suite, qid, sentence, unnest(cs) AS raw, unnest(range(0, len(cs))) AS cite_pos,
                 CASE WHEN json_type(j, '$.retrieved') = 'ARRAY' THEN json_array_length(j, '$.retrieved')::BIGINT
                      ELSE 0 END AS n_retrieved,
                 j
          FROM lists
        ),
        resolved AS (
          SELECT * EXCLUDE (j), n_retrieved - 1 AS last_index,
                 CASE WHEN json_type(raw) <> 'VARCHAR' THEN TRY_CAST(raw::VARCHAR AS BIGINT) END AS idx,
                 CASE WHEN json_type(raw) = 'VARCHAR' THEN raw->>'$'
                      WHEN TRY_CAST(raw::VARCHAR AS BIGINT) BETWEEN 0 AND n_retrieved - 1
                      THEN json_extract_string(j, '$.retrieved[' || raw::VARCHAR || ']') END AS doc_id
          FROM flat
        )
        SELECT *, min(cite_pos) OVER (PARTITION BY run_id, qid, sentence, doc_id) AS first_cite FROM resolved
    """, {"max_citations": MAX_CITATIONS})
    field = "'answer_sentences[' || sentence::VARCHAR || '].citations'"
    rules = [(field, value, rule, condition) for value, rule, condition in SENTENCE_CITATION_RULES]
    _collect(con, _checks("scites", rules), paths, problems)


def _stage_sentences(con: duckdb.DuckDBPyConnection) -> None:
    """`stage_sentences` and `stage_sentence_citations` from the checked `sen` and `scites` rows."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_sentences AS
        SELECT s.run_id, s.qid AS question_id, s.position::INTEGER AS sentence, s.s->>'$.text' AS text,
               coalesce(c.citations, []) AS citations, json_type(s.j, '$.claims') IS NULL AS free
        FROM sen s
        LEFT JOIN (SELECT run_id, qid, sentence, list(doc_id ORDER BY cite_pos) AS citations FROM scites GROUP BY ALL) c
          ON c.run_id = s.run_id AND c.qid = s.qid AND c.sentence = s.position
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE stage_sentence_citations AS
        SELECT f.run_id, f.qid AS question_id, f.sentence::INTEGER AS sentence, f.cite_pos::INTEGER AS position,
               f.doc_id, {unit} AS unit_id
        FROM scites f
        JOIN stage_runs r ON r.run_id = f.run_id
        LEFT JOIN suites s ON s.suite = f.suite
        {chunk_joins}
    """.replace("{chunk_joins}", chunk_joins("r", "f.doc_id")).replace("{unit}", unit_sql("s.unit", "f.doc_id")))

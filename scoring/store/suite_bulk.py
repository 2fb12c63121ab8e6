"""The suite read and checked set-based: documents.jsonl, chunks.jsonl and questions.jsonl parsed by DuckDB into the
staged relations `write_suite` writes from, every rule of a clean line checked as aggregate SQL.

Both readers take each line's fields from `scoring.store.formats`. The Python reader (`scoring.store.suite_lines`)
names the file, line, field and rule of every problem;
it builds a Python object per document and question (seconds for 200,000 questions). This module
decides the common case, a suite with no problem, in a few passes over typed columns. When every
check holds, the staged relations are the suite's rows exactly as the Python reader would write them
(`scoring.store.suite_tables`). When any check fails, or a file cannot be read this way at all,
nothing is staged and the caller reads the suite in Python, which reports the problems; a check here
may be stricter than the rules (a doubt sends the suite to the Python reader), never laxer.

Staged tables (temporary, no `suite` column; `suite_tables._INSERTS` adds it):
`_suite_documents` (`DOCUMENT_COLUMNS`), `_suite_questions` (`QUESTION_COLUMNS`), `_suite_labels`
(`LABEL_COLUMNS`), `_suite_claims` (`CLAIM_COLUMNS`) and `_suite_chunks` (the suite's chunk map as
`scoring.store.chunks` writes it; empty without one), in file order.

A run's own chunk map is checked against the suite's documents in Python (`suite_lines.load_chunks`):
the suite of such a run is read in Python (`workspace.load_workspace`).
"""
from __future__ import annotations

import duckdb

from ..metrics.alignment import UNLABELLED_ID
from ..metrics.registry import SUPPORT_GRADES
from . import formats
from .files import MAX_GRADE, MAX_LINE_BYTES, not_strict_json
from .formats import ID, MAX_CITATIONS, MAX_LABELS, TEXT, Format, Kind
from .lines import JSON_SPACE_SQL, LINE_END_SQL, has_bom
from .workspace import Suite

STAGED = ("_suite_documents", "_suite_questions", "_suite_labels", "_suite_claims", "_suite_assessed", "_suite_chunks")
"""The staged relations `scoring.store.suite_tables.write_suite` reads."""

RESERVED_PREFIX = UNLABELLED_ID.split("{")[0]
"""An expected claim whose ID starts so may be reserved (`workspace.UNLABELLED_CLAIM`): left to the
Python reader."""


LINES = (
    "SELECT line::INTEGER AS line, raw FROM (SELECT unnest(l) AS raw, generate_subscripts(l, 1) AS line "
    f"FROM (SELECT string_split(content, {LINE_END_SQL}) AS l FROM read_text(?)))"
)
"""A file's lines as Python reads them (split at line feeds only: `scoring.store.lines`), numbered from 1."""



class _Lines:
    """The lines of a declared format (`scoring.store.formats`) as `_parse` reads them: `v.<field>` its value, cast
    as declared (lenient: a number read as text becomes text), and `t[i]` its JSON type (NULL when the key is
    absent, 'NULL' when it is null), which the checks test before trusting the value."""

    def __init__(self, declared: Format):
        self.format = declared

    def names(self) -> tuple[str, ...]:
        return self.format.names

    def type(self, name: str) -> str:
        return f"t[{self.format.names.index(name) + 1}]"

    def is_(self, name: str, *kinds: str) -> str:
        """SQL: the field is present with one of the JSON types `kinds`."""
        listed = ", ".join(f"'{kind}'" for kind in kinds)
        return f"coalesce({self.type(name)} IN ({listed}), false)"

    def absent(self, name: str) -> str:
        return f"({self.type(name)} IS NULL)"

    def absent_or_null(self, name: str) -> str:
        return f"coalesce({self.type(name)} = 'NULL', true)"

    def ok(self, name: str) -> str:
        """SQL: the field breaks no declared rule of its own: absent (or null) only where allowed, of its kind,
        within its bounds."""
        declared = self.format[name]
        kind, value = declared.kind, f'v."{name}"'
        fits = [self.is_(name, *kind.types)]
        if kind.sql is not None:
            fits.append(kind.sql(value))
        if isinstance(kind.items, Kind) and kind.cast == "JSON":  # a list read as JSON: each item of the item kind
            item = kind.items
            test = " AND ".join([f"coalesce(json_type(e) IN ({', '.join(map(repr, item.types))}), false)"]
                                + ([item.sql("e->>'$'")] if item.sql is not None else []))
            fits.append(f"coalesce(list_bool_and(list_transform(from_json({value}, '[\"JSON\"]'), "
                        f"lambda e: {test})), true)")
        fits += [f"coalesce({value} <= {bound.most}, false)" for bound in declared.bounds if not bound.size]
        both = "(" + " AND ".join(fits) + ")"
        if declared.missing is not None:
            return both
        return f"({self.absent_or_null(name) if declared.null_absent else self.absent(name)} OR {both})"

    def all_ok(self) -> str:
        """SQL: every field of the line breaks no declared rule of its own."""
        return "\n    AND ".join(self.ok(name) for name in self.names())

    def structure(self) -> str:
        return self.format.structure()

    def paths(self) -> str:
        return "[" + ", ".join(f"'$.{name}'" for name in self.names()) + "]"


DOCUMENT = _Lines(formats.DOCUMENT)
CHUNK = _Lines(formats.CHUNK)
QUESTION = _Lines(formats.QUESTION)


def _parse(con: duckdb.DuckDBPyConnection, table: str, path: str, fields: _Lines) -> bool:
    """Create `table` (line, t, v): one row per non-blank line of `path`, read once by `fields`. False when
    a line is no object of those keys, each once, within the line limit, or is not strict JSON
    (`files.not_strict_json`)."""
    # the lines first, so that the parse below runs on every thread
    con.execute(f"CREATE OR REPLACE TEMP TABLE _suite_lines AS SELECT NULL AS run_id, * FROM ({LINES})", [path])
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {table} AS
        SELECT line, strlen(raw) AS n_bytes, ltrim(raw, {JSON_SPACE_SQL}) LIKE '{{%' AS is_object,
               json_keys(raw) AS keys,
               json_type(raw, {fields.paths()}) AS t, json_transform(raw, '{fields.structure()}') AS v
        FROM _suite_lines
        WHERE CASE WHEN starts_with(raw, '{{') THEN true ELSE trim(raw, {JSON_SPACE_SQL}) <> '' END""")
    if not_strict_json(con, "_suite_lines"):
        return False
    con.execute("DROP TABLE _suite_lines")
    bad = con.execute(f"SELECT count(*) FILTER (WHERE NOT is_object OR n_bytes > {MAX_LINE_BYTES - 2})"
                      f" FROM {table}").fetchone()[0]
    key_sets = [keys for (keys,) in con.execute(f"SELECT DISTINCT keys FROM {table}").fetchall()]
    return bad == 0 and all(len(set(keys)) == len(keys) and set(fields.names()).issuperset(keys) for keys in key_sets)


D, C, Q = DOCUMENT, CHUNK, QUESTION

_DOCUMENT_OK = D.all_ok()
"""A document line that breaks no rule of its declared fields (`formats.DOCUMENT`; its ID's uniqueness aside)."""

_CHUNK_OK = f"""
    {C.all_ok()}
    AND coalesce(v."end" >= v.start, true)
    AND d.doc_id IS NOT NULL AND v.doc_version = coalesce(d.version, $corpus_version)
    AND same.doc_id IS NULL"""
"""A line of the suite's chunk map that breaks no rule of `suite_lines.load_chunks` (its ID's uniqueness
aside), over the chunk lines `v` joined to its document `d` and to a document `same` of the chunk's own
ID: its declared fields (`formats.CHUNK`) fit; it does not end before it starts; its document is one of
the suite's (`doc` refers to it), at the suite's version of it; no document has its ID."""

_QUESTION_OK = Q.all_ok()
"""A question line whose declared fields (`formats.QUESTION`) break no rule of their own (its labels,
expected claims and propositions aside, which `_questions` unpacks and the label and claim checks check)."""

POSITION_DENSE = "line - 1"
"""A question's position (0-based among the file's non-blank lines) when no blank line precedes a question."""
POSITION = "row_number() OVER (ORDER BY line) - 1"
"""A question's position in any file (a sort of every question: a quarter of a second per 200,000)."""


def _questions(position: str) -> str:
    """SQL unpacking each clean question line (`position`: `POSITION_DENSE` or `POSITION`): its labels (a
    list of IDs, grade 1 each, or a map ID -> grade) as (doc, grade, ok: a whole-number grade, or a string
    ID), its expected claims and propositions as maps (a key twice in a map is an error here, which
    sends the suite to the Python reader)."""
    return f"""
    CREATE OR REPLACE TEMP TABLE _suite_question_rows AS
    SELECT line, ({position})::BIGINT AS position, v.id AS question_id,
           v.text, v.type, v.split, coalesce(v.critical, false) AS critical,
           coalesce(from_json(v.tags, '["VARCHAR"]'), []) AS tags,
           CASE WHEN {Q.is_('caller', 'ARRAY')} THEN from_json(v.caller, '["VARCHAR"]') END AS caller,
           v.disputed, v.cluster,
           CASE WHEN {Q.is_('relevant', 'ARRAY')}
                THEN list_transform(from_json(v.relevant, '["JSON"]'), lambda e: {{'doc': e->>'$', 'grade': 1::BIGINT,
                                    'ok': coalesce(json_type(e) = 'VARCHAR', false)}})
                ELSE list_transform(map_entries(v.relevant::MAP(VARCHAR, JSON)),
                                    lambda e: {{'doc': e.key, 'grade': TRY_CAST(e.value AS BIGINT),
                                          'ok': coalesce(json_type(e.value) IN ('UBIGINT', 'BIGINT'), false)}})
           END AS labels,
           map_entries(coalesce(v.support, '{{}}')::MAP(VARCHAR, JSON)) AS support,
           coalesce(v.claims, '{{}}')::MAP(VARCHAR, JSON) AS claims
    FROM _suite_question_lines"""


def _not_ok(condition: str) -> str:
    """SQL counting the rows for which `condition` does not hold (NULL counts as not holding)."""
    return f"count(*) FILTER (WHERE NOT coalesce({condition}, false))"


_LABELS_OK = f"""
    len(labels) <= {MAX_LABELS} AND len(list_distinct(list_transform(labels, lambda l: l.doc))) = len(labels)
    AND coalesce(list_bool_and(list_transform(labels, lambda l: coalesce(l.ok
        AND l.grade BETWEEN -{MAX_GRADE} AND {MAX_GRADE}, false))), true)"""
"""A question's labels: at most MAX_LABELS, no ID twice, every grade a whole number in range."""

_LABEL_PROBLEMS = f"""
    SELECT {_not_ok(_LABELS_OK)},
           (SELECT {_not_ok("u.unit IS NOT NULL")}
            FROM (SELECT unnest(labels).doc AS doc FROM _suite_question_rows) l
            LEFT JOIN _suite_units u ON u.unit = l.doc)
    FROM _suite_question_rows"""
"""Questions whose labels break `_LABELS_OK`; labels naming no document of the suite."""

_GRADES = "[" + ", ".join(f"'{g}'" for g in SUPPORT_GRADES) + "]"

_CLAIM_OK = f"""
    {ID.sql('s.key')} AND NOT starts_with(s.key, $reserved)
    AND CASE WHEN json_type(s.value) = 'ARRAY' THEN
          len(from_json(s.value, '["JSON"]')) BETWEEN 1 AND {MAX_CITATIONS}
          AND list_bool_and(list_transform(from_json(s.value, '["JSON"]'),
                                           lambda e: coalesce(json_type(e) = 'VARCHAR', false)))
          AND len(list_distinct(from_json(s.value, '["VARCHAR"]'))) = len(from_json(s.value, '["VARCHAR"]'))
          AND list_has_all(positive, from_json(s.value, '["VARCHAR"]'))
        WHEN json_type(s.value) = 'OBJECT' THEN
          len(json_keys(s.value)) BETWEEN 1 AND {MAX_CITATIONS}
          AND list_bool_and(list_transform(json_keys(s.value), lambda d: {ID.sql('d')}
              AND coalesce(json_type(s.value, '$."' || d || '"') = 'VARCHAR', false)
              AND list_contains({_GRADES}, json_extract_string(s.value, '$."' || d || '"'))
              AND list_contains(labelled, d)
              AND (json_extract_string(s.value, '$."' || d || '"') = 'none' OR list_contains(positive, d))))
          AND list_bool_or(list_transform(json_keys(s.value),
              lambda d: json_extract_string(s.value, '$."' || d || '"') <> 'none'))
        ELSE false END"""
"""An expected claim `s` (key: its ID, value: its documents): an ID well-formed and not reserved, and
either a list of 1 to MAX_CITATIONS distinct supporting documents, each labelled relevant (grade > 0),
or a map of 1 to MAX_CITATIONS documents to a grade (`SUPPORT_GRADES`), each labelled, those graded
full or partial relevant, one at least not `none` (the Python reader's `_graded_support`)."""

_CLAIM_PROBLEMS = f"""
    WITH claims AS (
      SELECT question_id, unnest(support) AS s, claims,
             list_transform(list_filter(labels, lambda l: l.grade > 0), lambda l: l.doc) AS positive,
             list_transform(labels, lambda l: l.doc) AS labelled
      FROM _suite_question_rows
    )
    SELECT {_not_ok(_CLAIM_OK)} FROM claims"""

_PROPOSITIONS_OK = f"""
    list_has_all(list_transform(support, lambda s: s.key), map_keys(claims))
    AND coalesce(list_bool_and(list_transform(map_values(claims), lambda p: coalesce(json_type(p) = 'VARCHAR', false)
        AND {TEXT.sql("p->>'$'")})), true)"""
"""A question's propositions: each for an expected claim, each a text."""

_PROPOSITION_PROBLEMS = f"SELECT {_not_ok(_PROPOSITIONS_OK)} FROM _suite_question_rows"

_STAGE = {
    "_suite_chunks": """
        SELECT v.id AS chunk_id, v.doc AS doc_id, v.doc_version, v.text, v.start AS start_offset,
               v."end" AS end_offset, line::BIGINT AS line
        FROM _suite_chunk_lines ORDER BY line""",
    "_suite_documents": f"""
        SELECT v.id AS doc_id, v.version, v.title, v.text,
               CASE WHEN {D.is_('access', 'ARRAY')} THEN from_json(v.access, '["VARCHAR"]') ELSE [] END AS access
        FROM _suite_document_lines ORDER BY line""",
    "_suite_questions": """
        SELECT question_id, position, text, type, split, critical, tags, caller, disputed, cluster
        FROM _suite_question_rows ORDER BY line""",
    "_suite_labels": """
        SELECT question_id, l.doc AS doc_id, l.grade AS grade
        FROM (SELECT line, question_id, unnest(labels) AS l, generate_subscripts(labels, 1) AS i
              FROM _suite_question_rows) ORDER BY line, i""",
    "_suite_claims": """
        SELECT question_id, s.key AS claim_id, claims[s.key] ->> '$' AS proposition,
               CASE WHEN json_type(s.value) = 'ARRAY' THEN from_json(s.value, '["VARCHAR"]')
                    ELSE list_filter(json_keys(s.value), lambda d: json_extract_string(s.value, '$."' || d || '"') = 'full')
               END AS docs,
               CASE WHEN json_type(s.value) = 'ARRAY' THEN []::VARCHAR[]
                    ELSE list_filter(json_keys(s.value),
                                     lambda d: json_extract_string(s.value, '$."' || d || '"') = 'partial')
               END AS partial_docs
        FROM (SELECT line, question_id, claims, unnest(support) AS s, generate_subscripts(support, 1) AS i
              FROM _suite_question_rows) ORDER BY line, i""",
    "_suite_assessed": """
        SELECT NULL::VARCHAR AS question_id, NULL::VARCHAR AS claim_id, []::VARCHAR[] AS docs,
               []::VARCHAR[] AS partial_docs WHERE false""",
}
"""The staged relations from the checked lines, in file order (labels and claims in key order)."""

_SCRATCH = ("_suite_lines", "_suite_document_lines", "_suite_chunk_lines", "_suite_question_lines",
            "_suite_question_rows", "_suite_units")


def stage_suite(con: duckdb.DuckDBPyConnection, suite: Suite) -> bool:
    """Read and check `suite`'s documents, chunk map (when it has one) and questions set-based into the
    staged relations (`STAGED`).

    False, nothing staged, when a file cannot be read this way or any check fails (the caller then
    reads the suite in Python, which names every problem)."""
    documents, questions = suite.folder / "documents.jsonl", suite.folder / "questions.jsonl"
    chunks = suite.folder / "chunks.jsonl"
    files = [documents, questions] + ([chunks] if chunks.exists() else [])
    if not all(path.exists() for path in files) or any(map(has_bom, files)):
        return False
    if suite.unit == "chunk" and not chunks.exists():
        return False
    try:
        staged = _stage(con, suite, str(documents), str(questions), str(chunks) if chunks.exists() else None)
    except duckdb.Error:  # not UTF-8, not JSON, a key twice in a map, ...
        staged = False
    finally:
        for name in _SCRATCH:
            con.execute(f"DROP TABLE IF EXISTS {name}")
    if not staged:
        drop_staged(con)
    return staged


def _stage(con: duckdb.DuckDBPyConnection, suite: Suite, documents: str, questions: str, chunks: str | None) -> bool:
    if not _parse(con, "_suite_document_lines", documents, DOCUMENT):
        return False
    bad, lines, distinct = con.execute(
        f"SELECT {_not_ok(_DOCUMENT_OK)}, count(*), count(DISTINCT v.id) FROM _suite_document_lines").fetchone()
    if bad or lines == 0 or distinct != lines:
        return False
    if chunks is None:
        con.execute("CREATE OR REPLACE TEMP TABLE _suite_chunk_lines (line INTEGER, t VARCHAR[], "
                    "v STRUCT(id VARCHAR, doc VARCHAR, doc_version VARCHAR, text VARCHAR, start BIGINT, \"end\" BIGINT))")
    elif not (_parse(con, "_suite_chunk_lines", chunks, CHUNK) and _chunks_hold(con, suite)):
        return False
    if not _parse(con, "_suite_question_lines", questions, QUESTION):
        return False
    bad, lines, distinct, assessed = con.execute(
        f"SELECT {_not_ok(_QUESTION_OK)}, count(*), count(DISTINCT v.id), count(v.assessed) "
        "FROM _suite_question_lines").fetchone()
    if bad or lines == 0 or distinct != lines or assessed:  # assessed claims: the line reader's
        return False
    first, last, lines = con.execute("SELECT min(line), max(line), count(*) FROM _suite_question_lines").fetchone()
    con.execute(_questions(POSITION_DENSE if first == 1 and last == lines else POSITION))
    units = "_suite_chunk_lines" if suite.unit == "chunk" else "_suite_document_lines"
    con.execute(f"CREATE OR REPLACE TEMP TABLE _suite_units AS SELECT v.id AS unit FROM {units}")
    if any(con.execute(_LABEL_PROBLEMS).fetchone()):
        return False
    if con.execute(_CLAIM_PROBLEMS, {"reserved": RESERVED_PREFIX}).fetchone()[0]:
        return False
    if con.execute(_PROPOSITION_PROBLEMS).fetchone()[0]:
        return False
    for name, select in _STAGE.items():
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {select}")
    return True


def _chunks_hold(con: duckdb.DuckDBPyConnection, suite: Suite) -> bool:
    """Whether every line of the parsed chunk map (`_suite_chunk_lines`) keeps the chunk rules: at least
    one chunk, each by `_CHUNK_OK`, no ID twice."""
    bad, lines, distinct = con.execute(f"""
        SELECT {_not_ok(_CHUNK_OK)}, count(*), count(DISTINCT v.id)
        FROM _suite_chunk_lines c
        LEFT JOIN (SELECT v.id AS doc_id, v.version FROM _suite_document_lines) d ON d.doc_id = c.v.doc
        LEFT JOIN (SELECT v.id AS doc_id FROM _suite_document_lines) same ON same.doc_id = c.v.id""",
                                       {"corpus_version": suite.corpus_version}).fetchone()
    return bad == 0 and lines > 0 and distinct == lines


def drop_staged(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the staged relations."""
    for name in STAGED:
        con.execute(f"DROP TABLE IF EXISTS {name}")

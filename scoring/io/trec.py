"""TREC files in, trec_eval-style numbers out: `ragslice trec QRELS RUN [-q] [-l LEVEL] [--exclude-na] [-m ...]`.

Both files are read by DuckDB's CSV reader (per-line Python only on the error path) and scored by
the SQL engine (`scoring.metrics.engine.retrieval_sql`); this module only builds the engine's `eval_*`
input relations (suite ``trec``, run ID from the run file).

Files (UTF-8; LF or CRLF line endings, one kind per file; fields separated by any run of
whitespace; blank lines and lines whose first field starts with ``#`` are skipped):
    qrels   ``qid 0 docno grade``                      exactly 4 fields, grade a whole number
    run     ``qid Q0 docno rank score runid ...``      6 fields or more, score a decimal number
The second column of both files, the rank column of the run and any field after its ``runid`` are
ignored, as by trec_eval (whose qrels reader refuses a fifth field: so does this one). A score is
a finite decimal number, plain or with an exponent (``12``, ``-0.5``, ``.5``, ``3.1e-2``): the
texts C's ``atof`` reads whole, as trec_eval does; other texts Python's ``float`` or DuckDB would
take (``1_000``, which ``atof`` reads as 1; ``inf``, ``nan``) are refused. A docno may appear
once per topic in each file (trec_eval refuses duplicates too). The run ID is the last line's
``runid``, as in trec_eval.

Conventions, those of trec_eval 10 (which they were checked against):
- ranking: score descending, ties broken by docno in descending byte order;
- topics scored: those in both files (run topics missing from the qrels are ignored, as by
  trec_eval without ``-c``; so are qrels topics missing from the run, as by trec_eval 9 and
  pytrec_eval, where trec_eval 10.0 without ``-c`` stops with an error);
- ``-l LEVEL`` (>= 1): a document is relevant when its grade >= LEVEL (binary measures);
  nDCG's gain is the grade (negative grades gain 0), the ideal ranking is built from every
  judged document of the topic, whatever the level;
- a measure without a cutoff (``RR``, ``AP``, ``AP'``, ``Bpref``) looks at the whole ranking;
- the measures over judged documents only (``P'@k``, ``nDCG'@k``, ``AP'``: the condensed list, as
  trec_eval ``-J`` and ir_measures' ``judged_only=True``; ``Bpref``, trec_eval's ``bpref``) take a
  document as judged when the qrels grade it 0 or above: a negative grade marks a document that was
  pooled but not judged (trec_eval's reading), which they pass over like a document missing from the
  qrels. Their relevant documents are those at the level, their judged non-relevant ones those graded
  from 0 to below the level. (In a workspace every label is a judgement, negative grades included.)

Means. By default the ``all`` line is trec_eval's: the mean over every scored topic, a topic
with no document at the relevance level scoring what trec_eval gives it, which ``-q`` prints
too: 0 for every measure but nDCG, which in trec_eval ignores ``-l`` (``ndcg_cut`` scores the
grades; 0 only for a topic without a positive grade; so does nDCG'). With ``--exclude-na``, the registry's n/a
rule: such a topic scores n/a for every measure (its ``-q`` lines read ``n/a``) and the ``all``
line is the mean over the other topics (``n/a`` when no topic is left). The two means agree
whenever every scored topic has a relevant document at the level.

Reading takes one of two routes, with the same result (tested to agree). The fast route reads a
file straight into typed columns when its fields are separated by single spaces (or by single
tabs, in a file without spaces), its lines have no field beyond the layout's (a run's ignored
fields send it to the line route) and it holds no other whitespace or control byte (no CR, VT, FF,
NUL or 0x01, so LF endings); it certifies every rule above in sets: field count, no empty field,
no comment line, grade or score, no repeated docno (hashes of (qid, docno): the top 32 bits
sorted, the few that meet compared in full). A file it cannot certify takes the line route: every line numbered and split on whitespace, each rule
checked line by line, which names the file, line and rule of each problem, or accepts what the
fast route merely could not certify (CRLF endings, tabs and spaces in one file, a line of
whitespace only, two pairs whose hashes collide).

Scoring: at a relevance level >= 1 only positive grades matter to the measures judged against the
relevant documents alone (the registry's `RANKING_KEYS`: the others neither count as relevant nor
gain), so the engine's ``eval_labels`` holds the positively graded judgements and
``eval_retrieved`` those documents at their rank in the topic's full ranking (ranks are slots,
so the gaps stand for the other documents): those metrics look at the ranking only through them
(hits, gains, first relevant rank; ``P@k`` divides by k), which the tests check metric by metric
against the whole ranking. The measures over judged documents only (`JUDGED_ONLY_KEYS`) need the
judged non-relevant documents too: when one is asked for, both relations hold every judged document
(grade 0 and above), and the unjudged ones are the gaps. Only the run's rows scored at or above the
topic's lowest-scored such document are sorted to find those ranks.

Output: ``MEASURE<TAB>QID<TAB>VALUE`` lines, values with 4 decimals, measures by canonical name
(``P@10``) in the order asked (duplicates dropped). With ``-q``, trec_eval's order: topic by
topic (qid in byte order), every measure per topic; then one ``all`` line per measure.

Errors raise `ValidationError` naming the file, the line and the broken rule (exit code 2); a
file's first 20 bad lines are listed at once.
"""
from __future__ import annotations

import math
import mmap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import duckdb

from ..errors import Problem, ValidationError, invalid
from ..metrics import engine
from ..metrics.registry import JUDGED_ONLY_KEYS, Measure, parse_measure
from ..store.lines import Lines, Unreadable

DEFAULT_MEASURES = ("P@10", "R@10", "nDCG@10", "RR", "AP")
SUITE = "trec"
MAX_PROBLEMS = 20
FileKind = Literal["qrels", "run"]

# (fields a line needs, their names, whether fields after them are allowed and ignored)
_LAYOUT: dict[FileKind, tuple[int, str, bool]] = {
    "qrels": (4, "qid 0 docno grade", False),
    "run": (6, "qid Q0 docno rank score runid", True),
}

# The typed values, one definition for both routes ({} is the field's text): a grade is a whole
# number that fits an INTEGER, a score a decimal number, plain or with an exponent, as a DOUBLE
# (finiteness is a rule of its own; a text of another shape is NULL, whatever DuckDB would cast).
_GRADE = "CASE WHEN regexp_full_match({0}, '[+-]?[0-9]+') THEN TRY_CAST({0} AS INTEGER) END"
_SCORE = r"CASE WHEN regexp_full_match({0}, '[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?') " \
         "THEN TRY_CAST({0} AS DOUBLE) END"

# --- the line route: every line numbered, split, checked -------------------------------------------

# A line's fields, split on trec_eval's isspace(); lines with single spaces take the fast split
# (substring tests cost less than one regular expression per line).
_FIELDS = r"""CASE
    WHEN l IS NULL THEN []::VARCHAR[]
    WHEN contains(l, '  ') OR starts_with(l, ' ') OR ends_with(l, ' ') OR contains(l, chr(9))
         OR contains(l, chr(11)) OR contains(l, chr(12)) OR contains(l, chr(13))
      THEN regexp_extract_all(l, '[^ \t\n\v\f\r]+')
    ELSE string_split(l, ' ')
  END"""

# One pass over the file: every line becomes a row (blank and comment lines are kept, marked
# `skip`), so with insertion order preserved the table's rowid + 1 is the line number.
_READ_SQL = f"""CREATE OR REPLACE TEMP TABLE {{table}} AS
SELECT len(f) = 0 OR starts_with(f[1], '#') AS skip, len(f) AS n_fields, {{columns}}
FROM (SELECT {_FIELDS} AS f
      FROM (SELECT line AS l FROM read_csv($path, columns = {{{{'line': 'VARCHAR'}}}}, delim = $delim, quote = '',
                                           escape = '', header = false, auto_detect = false)))"""

_COLUMNS: dict[FileKind, str] = {
    "qrels": f"f[1] AS qid, f[3] AS docno, {_GRADE.format('f[4]')} AS grade",
    "run": f"f[1] AS qid, f[3] AS docno, {_SCORE.format('f[5]')} AS score, f[6] AS runid",
}

_BAD_ROWS: dict[FileKind, str] = {
    "qrels": "NOT skip AND (n_fields <> 4 OR grade IS NULL)",
    "run": "NOT skip AND (n_fields < 6 OR score IS NULL OR NOT isfinite(score))",
}

# The field a bad row is reported for (0-based): the grade of a qrels line, the score of a run line.
_CHECKED_FIELD: dict[FileKind, int] = {"qrels": 3, "run": 4}

# The columns every route leaves in trec_qrels / trec_run, one row per data line; `pair` is a
# 64-bit hash of (qid, docno): equal pairs have equal hashes, so it narrows joins and duplicate
# checks on the pair, which then compare the text where hashes meet.
_KEPT: dict[FileKind, str] = {"qrels": "qid, docno, grade, hash(qid, docno) AS pair",
                              "run": "qid, docno, score, hash(qid, docno) AS pair"}

# --- the fast route: typed columns, every rule certified in sets ----------------------------------

# Every field is read as text and typed by the definitions above. A line with more fields than these
# (a run's ignored ones) stops the CSV reader: such a file takes the line route.
_FAST_FIELDS: dict[FileKind, dict[str, str]] = {
    "qrels": {"qid": "VARCHAR", "iter": "VARCHAR", "docno": "VARCHAR", "grade": "VARCHAR"},
    "run": {"qid": "VARCHAR", "iter": "VARCHAR", "docno": "VARCHAR", "rank": "VARCHAR", "score": "VARCHAR",
            "runid": "VARCHAR"},
}
_FAST_VALUE: dict[FileKind, str] = {"qrels": f"{_GRADE.format('grade')} AS grade",
                                    "run": f"{_SCORE.format('score')} AS score"}
_IGNORED: dict[FileKind, tuple[str, ...]] = {"qrels": ("iter",), "run": ("iter", "rank", "runid")}
# Checked on the table: an empty field reads as NULL, a bad grade or score as NULL.
_FAST_VALID: dict[FileKind, str] = {"qrels": "qid IS NOT NULL AND docno IS NOT NULL AND grade IS NOT NULL",
                                    "run": "qid IS NOT NULL AND docno IS NOT NULL AND isfinite(score)"}
# Bytes that make a file take the line route: whitespace other than the delimiter and LF (the line
# route splits on it), CR (line endings are the line route's to judge), NUL and 0x01.
_UNCERTIFIED = (b"\v", b"\f", b"\r", b"\x00", b"\x01")


@dataclass(frozen=True)
class TrecScores:
    """Per-topic values and their mean, per measure: trec_eval's (no n/a; the mean over every
    scored topic), or with `exclude_na` the registry's (None = n/a; the mean over the other topics,
    None when every topic is n/a)."""

    run_id: str
    measures: tuple[Measure, ...]
    topics: tuple[str, ...]
    values: dict[str, dict[str, float | None]]  # measure name -> qid -> value
    means: dict[str, float | None]  # measure name -> mean over the topics whose value is not None
    exclude_na: bool = False


def parse_measures(texts: Sequence[str]) -> tuple[Measure, ...]:
    """Retrieval measures in the order given, duplicates (``P_10`` = ``P@10``) dropped."""
    found: dict[str, Measure] = {}
    for text in texts:
        measure = parse_measure(text)
        if measure.metric.level != "retrieval":
            raise invalid(
                f"{measure.metric.name} is an answer-level metric; TREC files carry rankings only "
                "(use a retrieval measure such as P@10, R@100, nDCG@10, RR, AP, Success@1)",
                "measure",
                text,
            )
        if not measure.metric.relevance_required:
            raise invalid(f"{measure.metric.name} is scored on a workspace (ragslice import trec, then refresh): "
                          "ragslice trec ranks the relevant documents only", "measure", text)
        found.setdefault(str(measure), measure)
    if not found:
        raise invalid("name at least one measure", "measure")
    return tuple(found.values())


def load_qrels(con: duckdb.DuckDBPyConnection, path: str | Path, *, limit: int | None = MAX_PROBLEMS) -> None:
    """Read and validate a qrels file into the temp tables ``trec_qrels(qid, docno, grade, pair)``,
    one row per judgement (blank and comment lines left out; `pair` = hash(qid, docno)), and
    ``trec_qrels_topics(qid)``. A `ValidationError` lists the first `limit` bad lines (None: all)."""
    _load(con, Path(path), "qrels", limit)


def load_run(con: duckdb.DuckDBPyConnection, path: str | Path, *, limit: int | None = MAX_PROBLEMS) -> str:
    """Read and validate a run file into the temp tables ``trec_run(qid, docno, score, pair)`` and
    ``trec_run_topics(qid)`` (as `load_qrels`). Returns the run ID: the last line's, as trec_eval
    takes it."""
    return _load(con, Path(path), "run", limit)


def _load(con: duckdb.DuckDBPyConnection, path: Path, kind: FileKind, limit: int | None = MAX_PROBLEMS) -> str:
    """Create ``trec_{kind}`` and return the run ID ("" for qrels); raise `ValidationError`
    (file:line, rule) listing the first `limit` problems."""
    if not path.is_file():
        raise invalid("no such file", path=str(path))
    run_id = _read_fast(con, path, kind)
    return run_id if run_id is not None else _read_lines(con, path, kind, limit)


def _read_fast(con: duckdb.DuckDBPyConnection, path: Path, kind: FileKind) -> str | None:
    """The fast route (module docstring): create ``trec_{kind}`` and return the run ID ("" for
    qrels), or return None, leaving no table, when the file is not certified clean."""
    shape = _certified_shape(path)
    if shape is None:
        return None
    delim, run_id = shape
    table = f"trec_{kind}"  # kind is one of two literals
    columns = ", ".join(f"'{name}': '{sql_type}'" for name, sql_type in _FAST_FIELDS[kind].items())
    ignored = " AND ".join(f"{name} IS NOT NULL" for name in _IGNORED[kind])
    con.execute("SET preserve_insertion_order = false")
    try:
        # A field left empty among those not kept raises, so the read stops at the first one.
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {table} AS
            SELECT {_KEPT[kind]} FROM (
              SELECT CASE WHEN {ignored} THEN qid ELSE error('an empty field') END AS qid, docno, {_FAST_VALUE[kind]}
              FROM read_csv($path, columns = {{{columns}}}, delim = $delim, quote = '', escape = '', header = false,
                            auto_detect = false))""",
            {"path": str(path), "delim": delim},
        )
    except duckdb.Error:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        return None
    finally:
        con.execute("SET preserve_insertion_order = true")
    _create_topics(con, kind)
    certified = con.execute(
        f"""SELECT count(*) > 0 AND bool_and(coalesce({_FAST_VALID[kind]}, false))
                   AND NOT (SELECT bool_or(starts_with(qid, '#')) FROM {table}_topics)
            FROM {table}"""
    ).fetchone()[0]
    if not certified or _may_repeat_a_docno(con, table):
        con.execute(f"DROP TABLE {table}")
        con.execute(f"DROP TABLE {table}_topics")
        return None
    return "" if kind == "qrels" else run_id


def _create_topics(con: duckdb.DuckDBPyConnection, kind: FileKind) -> None:
    """``trec_{kind}_topics(qid)``: the file's distinct topics."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE trec_{kind}_topics AS SELECT DISTINCT qid FROM trec_{kind}")


def _may_repeat_a_docno(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """True when two rows share (qid, docno), or share a 64-bit hash of it (a collision, which the
    line route tells apart). Sorting the top 32 bits of the hashes costs less than sorting all 64
    or grouping the text pairs; the few rows whose top bits meet are then grouped by hash."""
    return con.execute(
        f"""WITH top AS (SELECT (pair >> 32)::UINTEGER AS bits FROM {table}),
                 shared AS (SELECT bits FROM (SELECT bits, lag(bits) OVER (ORDER BY bits) AS previous FROM top)
                            WHERE bits = previous)
            SELECT count(*) FROM (SELECT pair FROM {table} WHERE (pair >> 32)::UINTEGER IN (SELECT bits FROM shared)
                                  GROUP BY pair HAVING count(*) > 1)"""
    ).fetchone()[0] > 0


def _certified_shape(path: Path) -> tuple[str, str] | None:
    """The delimiter (space, or tab when the file has no space) and the sixth field of the last
    non-blank line (a run's ID; "" when it has fewer), when no byte of the file sends it to the
    line route; else None."""
    with path.open("rb") as handle:
        try:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return None
        with data:
            if data.find(b"\t") < 0:
                delim = b" "
            elif data.find(b" ") < 0:
                delim = b"\t"
            else:
                return None
            if any(data.find(byte) >= 0 for byte in _UNCERTIFIED):
                return None
            end = len(data)
            while end > 0:
                start = data.rfind(b"\n", 0, end) + 1
                fields = data[start:end].split()
                if fields:
                    run_id = fields[5] if len(fields) >= 6 else b""
                    return delim.decode(), run_id.decode("utf-8", errors="replace")
                end = start - 1
    return None


def _read_lines(con: duckdb.DuckDBPyConnection, path: Path, kind: FileKind, limit: int | None = MAX_PROBLEMS) -> str:
    """The line route: create ``trec_{kind}`` and return the run ID ("" for qrels), or raise
    `ValidationError` listing the first problems."""
    lines = f"trec_{kind}_lines"  # kind is one of two literals
    con.execute("SET preserve_insertion_order = true")  # rowid + 1 is the line number
    try:
        con.execute(_READ_SQL.format(table=lines, columns=_COLUMNS[kind]), {"path": str(path), "delim": "\x01"})
    except duckdb.Error as error:
        raise _unreadable(path, error) from None
    try:
        problems = _line_problems(con, path, kind, lines, limit)
        if problems:
            raise ValidationError(problems)
        run_id = "" if kind == "qrels" else con.execute(
            f"SELECT runid FROM {lines} WHERE NOT skip ORDER BY rowid DESC LIMIT 1").fetchone()[0]
        con.execute(f"CREATE OR REPLACE TEMP TABLE trec_{kind} AS SELECT {_KEPT[kind]} FROM {lines} WHERE NOT skip")
        _create_topics(con, kind)
    finally:
        con.execute(f"DROP TABLE {lines}")
    return run_id


def _line_problems(con: duckdb.DuckDBPyConnection, path: Path, kind: FileKind, table: str,
                   limit: int | None = MAX_PROBLEMS) -> list[Problem]:
    n_fields, layout, _ = _LAYOUT[kind]
    cap = "" if limit is None else f"LIMIT {int(limit)}"
    where = str(path)
    if con.execute(f"SELECT count(*) FROM {table} WHERE NOT skip").fetchone()[0] == 0:
        return [Problem(rule=f"the file has no lines; expected lines of `{layout}`", path=where)]
    bad = con.execute(
        f"SELECT rowid + 1, n_fields, qid FROM {table} WHERE {_BAD_ROWS[kind]} ORDER BY rowid {cap}"
    ).fetchall()
    if bad:
        shown = _fields_of_lines(path, {line_no for line_no, found, _ in bad if found >= n_fields})
        return [_bad_line(kind, where, line_no, found, qid, shown.get(line_no)) for line_no, found, qid in bad]
    duplicates = con.execute(
        f"""WITH rows AS (SELECT rowid + 1 AS line_no, qid, docno FROM {table} WHERE NOT skip),
                 dup AS (SELECT qid, docno, min(line_no) AS first_line FROM rows
                         GROUP BY qid, docno HAVING count(*) > 1)
            SELECT r.line_no, r.qid, r.docno, d.first_line FROM rows r
            JOIN dup d ON d.qid = r.qid AND d.docno = r.docno AND r.line_no > d.first_line
            ORDER BY r.line_no {cap}"""
    ).fetchall()
    return [
        Problem(rule=f"docno already listed for this topic at line {first}; a docno appears once per topic",
                field="docno", value=docno, has_value=True, path=where, line=line_no, question=qid)
        for line_no, qid, docno, first in duplicates
    ]


def _bad_line(kind: FileKind, where: str, line_no: int, found: int, qid: str, fields: list[str] | None) -> Problem:
    n_fields, layout, more = _LAYOUT[kind]
    if found < n_fields or (found > n_fields and not more):
        rule = f"expected at least {n_fields} fields (`{layout}`, later fields ignored)" if more else \
            f"expected {n_fields} fields (`{layout}`)"
        rule += f", found {found}"
        if found > n_fields:
            rule += f" (trec_eval refuses a field after the {layout.split()[-1]} too)"
        return Problem(rule=rule, path=where, line=line_no)
    name = "grade" if kind == "qrels" else "score"
    rule = "the grade is a whole number, e.g. 0, 1, 2" if kind == "qrels" else \
        "the score is a finite decimal number, plain or with an exponent, e.g. 12, -0.5, .5, 3.1e-2 (not 1_000, " \
        "0x10, inf or nan)"
    value = fields[_CHECKED_FIELD[kind]] if fields else None
    return Problem(rule=rule, field=name, value=value, has_value=fields is not None, path=where, line=line_no,
                   question=qid)


def _fields_of_lines(path: Path, wanted: set[int]) -> dict[int, list[str]]:
    """The fields of a few lines, for error messages only (a Python scan on the error path)."""
    found: dict[int, list[str]] = {}
    if not wanted:
        return found
    last = max(wanted)
    for line_no, line in Lines(path):
        if line_no in wanted:
            found[line_no] = (line.text if isinstance(line, Unreadable) else line).split()
        if line_no >= last:
            break
    return found


def _unreadable(path: Path, error: duckdb.Error) -> ValidationError:
    """Locate what the CSV reader refused (error path only: a Python scan for the line number)."""
    with path.open("rb") as handle:
        ending = None
        for line_no, raw in enumerate(handle, 1):
            this = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else None
            body = raw.rstrip(b"\r\n")
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as bad:
                return invalid(f"not UTF-8 text (byte {bad.start + 1} of the line); re-encode the file as UTF-8",
                               path=str(path), line=line_no)
            if b"\r" in body:
                return invalid("a carriage return inside a line; lines end with LF or CRLF",
                               path=str(path), line=line_no)
            if b"\x00" in body or b"\x01" in body:
                return invalid("a control character (NUL or 0x01) inside a line", path=str(path), line=line_no)
            if this is not None:
                if ending is not None and this != ending:
                    return invalid("mixed line endings (LF and CRLF); convert the file to one kind, e.g. dos2unix",
                                   path=str(path), line=line_no)
                ending = this
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return invalid(f"the file cannot be read as text lines: {first}", path=str(path))


def build_inputs(con: duckdb.DuckDBPyConnection, run_id: str, cutoffs: Sequence[int], *,
                 judged: bool = False) -> None:
    """Create the engine's eval_pairs, eval_labels and eval_retrieved over ``trec_qrels`` and
    ``trec_run``: one suite, one run, one eval_pairs row per topic found in both files and per
    cutoff. The engine reaches labels and rankings through eval_pairs only, so the other topics are
    never scored. Only positive grades matter at a relevance level >= 1 to `RANKING_KEYS` (the others
    neither count as relevant nor gain), so eval_labels holds the positively graded judgements and
    eval_retrieved those documents at their rank (1 + the documents ordered before them: score
    descending, docno descending); the rank is found by sorting only the rows scored at or above the
    topic's lowest such document. With `judged` (what `JUDGED_ONLY_KEYS` need), the same for every
    judged document: grade 0 and above (a negative grade marks a pooled document left unjudged, as
    trec_eval reads it)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE trec_ids AS SELECT $run_id::VARCHAR AS run_id, $suite::VARCHAR AS suite",
        {"run_id": run_id, "suite": SUITE},
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE eval_pairs AS
        WITH topics AS (SELECT qid FROM trec_run_topics INTERSECT SELECT qid FROM trec_qrels_topics)
        SELECT i.run_id, i.suite, t.qid AS question_id, c.k::INTEGER AS k, 'ok' AS status
        FROM topics t CROSS JOIN trec_ids i CROSS JOIN (SELECT unnest($cutoffs::INTEGER[]) AS k) c""",
        {"cutoffs": sorted(set(cutoffs))},
    )
    lowest = 0 if judged else 1  # the lowest grade the engine needs to see
    con.execute(
        """CREATE OR REPLACE TEMP TABLE eval_labels AS
        SELECT i.suite, q.qid AS question_id, q.docno AS doc_id, q.grade FROM trec_qrels q CROSS JOIN trec_ids i
        WHERE q.grade >= $lowest""",
        {"lowest": lowest},
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE eval_retrieved AS
        WITH labelled AS (SELECT qid, docno, pair FROM trec_qrels WHERE grade >= $lowest),
             -- every labelled row, and the rare row whose hash merely collides (the floor may only fall)
             found AS (SELECT r.qid, r.score FROM trec_run r SEMI JOIN labelled g ON g.pair = r.pair),
             floor AS (SELECT qid, min(score) AS score FROM found GROUP BY qid),
             ranked AS (
               SELECT r.qid, r.docno,
                      row_number() OVER (PARTITION BY r.qid ORDER BY r.score DESC, r.docno DESC)::INTEGER AS rank
               FROM trec_run r JOIN floor f ON f.qid = r.qid AND r.score >= f.score)
        SELECT i.run_id, k.qid AS question_id, k.rank, k.docno AS doc_id
        FROM ranked k JOIN labelled g ON g.qid = k.qid AND g.docno = k.docno CROSS JOIN trec_ids i""",
        {"lowest": lowest},
    )


def evaluate_files(qrels: str | Path, run: str | Path, measures: Sequence[str], *, level: int = 1,
                   exclude_na: bool = False) -> TrecScores:
    """Score a TREC run against TREC qrels at relevance `level` (>= 1).

    Topics scored: those in both files. A topic without a document at the level scores, by
    default, what trec_eval gives it (0; nDCG its graded value, as trec_eval's ``ndcg_cut``
    ignores ``-l``) and every scored topic counts in the mean (trec_eval's mean). With
    `exclude_na` it scores n/a (None) for every measure and the mean is over the other topics
    (None when no topic is left): the registry's n/a rule."""
    if type(level) is not int or level < 1:
        raise invalid("the relevance level is a whole number >= 1", "level", level)
    wanted = parse_measures(measures)
    con = duckdb.connect()
    try:
        load_qrels(con, qrels)
        run_id = load_run(con, run)
        cutoffs = [engine.WHOLE_RANKING if m.cutoff is None else m.cutoff for m in wanted]
        build_inputs(con, run_id, cutoffs, judged=any(m.metric.judged_only for m in wanted))
        topics = tuple(r[0] for r in con.execute(
            "SELECT DISTINCT question_id FROM eval_pairs ORDER BY question_id").fetchall())
        if not topics:
            raise ValidationError(
                Problem(rule=f"no topic of the run appears in the qrels {qrels}; check that the two files "
                        "belong together", path=str(run))
            )
        # a measure's own level (``P(rel=2)@5``) wins over `level`; one engine pass per level, keys from
        # the registry, never user text
        levels = {m.level or level for m in wanted}
        at = {lv: _engine_values(con, sorted({m.metric.key for m in wanted if (m.level or level) == lv}), lv)
              for lv in levels}
        # trec_eval's value of a graded measure on a topic without a document at the level: the engine's
        # at level 1, where its value is the same and n/a only without a positive grade.
        graded = sorted({m.metric.key for m in wanted if m.metric.graded})
        at_one = {} if exclude_na or not graded else at[1] if 1 in at else _engine_values(con, graded, 1)
    finally:
        con.close()
    values: dict[str, dict[str, float | None]] = {}
    means: dict[str, float | None] = {}
    for measure, k in zip(wanted, cutoffs):
        key = measure.metric.key
        at_level = at[measure.level or level]
        per_topic = {qid: at_level.get((qid, k, key)) for qid in topics}
        if not exclude_na:
            source = at_one if measure.metric.graded else at_level
            per_topic = {qid: value if value is not None else _trec_eval_value(source.get((qid, k, key)))
                         for qid, value in per_topic.items()}
        values[str(measure)] = per_topic
        scored = [v for v in per_topic.values() if v is not None]
        means[str(measure)] = math.fsum(scored) / len(scored) if scored else None
    return TrecScores(run_id, wanted, topics, values, means, exclude_na)


def _trec_eval_value(value: float | None) -> float:
    """trec_eval's value where the registry says n/a: 0 (it divides by no relevant document as 0)."""
    return 0.0 if value is None else value


def _engine_values(con: duckdb.DuckDBPyConnection, keys: Sequence[str],
                   level: int) -> dict[tuple[str, int, str], float | None]:
    """(qid, cutoff, metric key) -> the engine's value at `level` (None = n/a) over the eval_* inputs."""
    judged = any(key in JUDGED_ONLY_KEYS for key in keys)  # else the condensed lists are not built
    rows = con.execute(f"SELECT question_id, k, {', '.join(keys)} FROM ({engine.retrieval_sql(judged=judged)})",
                       {"level": level}).fetchall()
    return {(row[0], row[1], key): value for row in rows for key, value in zip(keys, row[2:])}


def _show(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def format_scores(scores: TrecScores, *, per_query: bool) -> str:
    """The ``MEASURE<TAB>QID<TAB>VALUE`` lines, in the order the module docstring states."""
    names = [str(m) for m in scores.measures]
    out = []
    if per_query:
        for qid in scores.topics:
            out += [f"{name}\t{qid}\t{_show(scores.values[name].get(qid))}" for name in names]
    out += [f"{name}\tall\t{_show(scores.means[name])}" for name in names]
    return "\n".join(out) + "\n"



"""`ragslice import trec`: TREC qrels and run files -> a workspace (docs/formats.md, "Chunks").

The qrels become a suite `trec` (every judged grade kept; no expected claims, so answer metrics
are n/a) and each run file a retrieval-only run, ranked as trec_eval ranks (score descending, ties
by docno descending), cut at 1000. Documents carry no text in TREC files; each gets a placeholder
naming its docno. Topics of a run missing from the qrels are dropped (as trec_eval does); qrels
topics a run never mentions are scored `missing` by ragslice. TREC run files do not say how many
documents the answer stage received: ``k`` is ``--k`` (default `IMPORT_K`).

With a passage map (`--chunk-map MAP`, lines `passage_id<TAB>doc_id`), passage IDs are kept as
chunks: the passages the qrels or the runs name become the suite's `chunks.jsonl`, and the runs
keep ranking passage IDs. When the qrels judge passages, the suite is passage-level (`unit:
chunk`: labels match passages exactly, as trec_eval scores them); when they judge documents, each
retrieved passage stands for its document, counted once at the slot of its first passage.

`load_trec_file` and `ranked_topics` are shared with the BEIR importer, whose runs are TREC run files.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import tempfile
from pathlib import Path
from typing import Literal

import duckdb

from ..errors import Problems, ValidationError, invalid
from ..store.files import WORKSPACE_ID
from ..store.lines import Lines, Unreadable
from ..store.workspace import MAX_RETRIEVED
from .importing import (IMPORT_K, Importer, ImportResult, Refusals, Source, check_k, invisible, manifest,
                        print_notes, provenance, run_id, staged, suite_json, write_json)
from .trec import load_qrels, load_run

TREC_SUITE = "trec"
_TREC_FIELD = re.compile(r"[^ \t\n\v\f\r]+")
MAX_MAP_PROBLEMS = 20

_READ_MAP = (
    "SELECT ordinality::INTEGER AS line, regexp_extract_all(l, '[^ \t\r]+') AS f "
    "FROM read_csv($path, columns={'l': 'VARCHAR'}, header=false, delim=chr(1), quote='', escape='', "
    "auto_detect=false) WITH ORDINALITY"
)


def load_trec_file(con: duckdb.DuckDBPyConnection, path: str | Path, kind: Literal["qrels", "run"],
                   refusals: Refusals) -> str:
    """Read a TREC qrels or run file with `scoring.io.trec`'s rules into ``trec_{kind}`` and return
    the run ID ("" for qrels), then refuse each line whose topic or docno breaks the workspace ID
    rule. Under ``--skip-bad`` the lines it refuses are left out: each pass blanks them in a copy of
    the file (blank lines are skipped, so line numbers stay those of the file given) and reads the
    copy again. A problem without a line, or mixed line endings, refuses the import."""
    load = load_qrels if kind == "qrels" else load_run
    original = Path(path)
    if not refusals.skip_bad:
        try:
            found = load(con, original)
        except ValidationError as error:
            refusals.extend(error)
            refusals.check()
            raise
        _refuse_bad_ids(con, original, kind, refusals)
        _warn_invisible(con, original, kind, refusals)
        return found or ""
    data = original.read_bytes() if original.is_file() else b""
    lines = [part + b"\n" for part in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    with tempfile.TemporaryDirectory() as folder:
        current = original
        while True:
            try:
                found = load(con, current, limit=None)
                break
            except ValidationError as error:
                mapped = [dataclasses.replace(p, path=str(original)) if p.path == str(current) else p
                          for p in error.problems]
                if any(p.line is None or p.rule.startswith("mixed line endings") for p in mapped):
                    raise ValidationError(mapped) from None
                refusals.refuse_all(mapped)
                for line in {p.line for p in mapped}:
                    lines[line - 1] = b"\r\n" if lines[line - 1].endswith(b"\r\n") else b"\n"
                current = Path(folder) / original.name
                current.write_bytes(b"".join(lines))
    _refuse_bad_ids(con, original, kind, refusals)
    _warn_invisible(con, original, kind, refusals)
    return found or ""


def _warn_invisible(con: duckdb.DuckDBPyConnection, path: Path, kind: str, refusals: Refusals) -> None:
    """Warn of each line whose topic or docno holds an invisible format character (Unicode category Cf:
    `Refusals.check_id`); the lines are found by a scan of the file, only when the table holds one."""
    table = f"trec_{kind}"  # kind is one of two literals
    found = con.execute(f"SELECT DISTINCT qid, docno FROM {table} WHERE regexp_matches(qid, $cf) "
                        "OR regexp_matches(docno, $cf)", {"cf": r"\p{Cf}"}).fetchall()
    qids = {q for q, _ in found if invisible(q)}
    docnos = {d for _, d in found if invisible(d)}
    if not qids and not docnos:
        return
    for number, text in Lines(path):
        fields = _TREC_FIELD.findall(text.text if isinstance(text, Unreadable) else text)
        if len(fields) >= 3:
            for name, value, wanted in (("qid", fields[0], qids), ("docno", fields[2], docnos)):
                if value in wanted:
                    refusals.check_id(value, name, path=str(path), line=number)


def _refuse_bad_ids(con: duckdb.DuckDBPyConnection, path: Path, kind: str, refusals: Refusals) -> None:
    """Refuse the lines whose topic or docno is not a workspace ID (1-128 characters, no control
    characters; TREC fields hold no whitespace); under ``--skip-bad`` their rows are dropped. The
    lines are found by a scan of the file, on this error path only."""
    table = f"trec_{kind}"  # kind is one of two literals
    ids = {"pattern": WORKSPACE_ID.pattern}
    broken = "NOT regexp_full_match(qid, $pattern) OR NOT regexp_full_match(docno, $pattern)"
    bad = con.execute(f"SELECT DISTINCT qid, docno FROM {table} WHERE {broken}", ids).fetchall()
    if not bad:
        return
    qids = {q for q, _ in bad if not WORKSPACE_ID.fullmatch(q)}
    docnos = {d for _, d in bad if not WORKSPACE_ID.fullmatch(d)}
    found = 0
    for number, text in Lines(path):
        # split as the TREC reader splits: ASCII whitespace only
        fields = _TREC_FIELD.findall(text.text if isinstance(text, Unreadable) else text)
        if len(fields) >= 3 and fields[0] in qids:
            refusals.refuse("a topic ID is 1-128 characters with no whitespace or control characters",
                            "qid", fields[0], path=str(path), line=number)
        elif len(fields) >= 3 and fields[2] in docnos:
            refusals.refuse("a docno is 1-128 characters with no whitespace or control characters",
                            "docno", fields[2], path=str(path), line=number)
        else:
            continue
        found += 1
    if not found:  # never expected: the file changed while it was read
        refusals.fatal("a topic or docno breaks the ID rule (1-128 characters, no control characters)",
                       "docno", bad[0][1], path=str(path))
    if refusals.skip_bad:
        con.execute(f"DELETE FROM {table} WHERE {broken}", ids)
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table}_topics AS SELECT DISTINCT qid FROM {table}")


def ranked_topics(con: duckdb.DuckDBPyConnection, topics: str) -> None:
    """``ranked(qid, docno, rank)``: the run's rows for the topics in the table `topics` (a column
    ``qid``), ranked as trec_eval ranks them (score descending, ties by docno descending)."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE ranked AS
        SELECT qid, docno, row_number() OVER (PARTITION BY qid ORDER BY score DESC, docno DESC) AS rank
        FROM trec_run WHERE qid IN (SELECT qid FROM {topics})""")


def load_chunk_map(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Read a passage map (``passage_id<TAB>doc_id`` lines; blank and ``#`` lines skipped) into the temp
    table ``passage_map(passage, doc, line)``; raise `ValidationError` naming file and line."""
    from .trec import _unreadable

    if not Path(path).is_file():
        raise invalid("no such file", "--chunk-map", path)
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE map_lines AS {_READ_MAP}", {"path": path})
    except duckdb.Error as error:
        raise _unreadable(Path(path), error) from None
    con.execute("DELETE FROM map_lines WHERE f IS NULL OR len(f) = 0 OR starts_with(f[1], '#')")
    problems = Problems()
    for line, found in con.execute(
            f"SELECT line, len(f) FROM map_lines WHERE len(f) <> 2 ORDER BY line LIMIT {MAX_MAP_PROBLEMS}").fetchall():
        problems.add(f"expected 2 fields (`passage_id<TAB>doc_id`), found {found}", path=path, line=line)
    problems.raise_if_any()
    con.execute("CREATE OR REPLACE TEMP TABLE passage_map AS SELECT f[1] AS passage, f[2] AS doc, line FROM map_lines")
    rules = [
        ("passage_id", "passage", "an ID is 1-128 characters with no whitespace",
         f"NOT regexp_full_match(passage, '{WORKSPACE_ID.pattern}')"),
        ("doc_id", "doc", "an ID is 1-128 characters with no whitespace",
         f"NOT regexp_full_match(doc, '{WORKSPACE_ID.pattern}')"),
        ("passage_id", "passage", "is listed twice (a passage belongs to one document)",
         "line > min(line) OVER (PARTITION BY passage)"),
        ("passage_id", "passage", "is also a document ID; passage and document IDs must differ",
         "passage IN (SELECT doc FROM passage_map)"),
    ]
    query = " UNION ALL ".join(
        f"SELECT line, '{field}' AS field, {column} AS value, '{rule}' AS rule FROM "
        f"(SELECT *, {condition} AS bad FROM passage_map) WHERE bad" for field, column, rule, condition in rules)
    for line, field, value, rule in con.execute(f"{query} ORDER BY line LIMIT {MAX_MAP_PROBLEMS}").fetchall():
        problems.add(rule, field, value, path=path, line=line)
    problems.raise_if_any()
    if not con.execute("SELECT count(*) FROM passage_map").fetchone()[0]:
        raise invalid("the file has no lines; expected lines of `passage_id<TAB>doc_id`", path=path)


def _copy(con: duckdb.DuckDBPyConnection, query: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    path = str(target).replace("'", "''")
    con.execute(f"COPY ({query}) TO '{path}' (FORMAT json)")


def import_trec(qrels: str, runs: list[str], out: Path, *, chunk_map: str | None = None, k: int = IMPORT_K,
                skip_bad: bool = False) -> ImportResult:
    """Write a workspace from TREC qrels and run files (suite `trec`, one run per file) at context
    cutoff `k`; nothing is written when a line is refused.

    `chunk_map`: a passage map; passages keep their IDs and become the suite's chunks."""
    refusals = Refusals(skip_bad)
    check_k(k, refusals)
    con = duckdb.connect()
    try:
        with staged(out) as temp:
            written = _import_trec(con, qrels, runs, temp, chunk_map, k, refusals)
    finally:
        con.close()
    return ImportResult(TREC_SUITE, written, refusals)


def _import_trec(con: duckdb.DuckDBPyConnection, qrels: str, runs: list[str], out: Path, chunk_map: str | None,
                 k: int, refusals: Refusals) -> list[str]:
    suite_dir = out / "suites" / TREC_SUITE
    load_trec_file(con, qrels, "qrels", refusals)
    con.execute("CREATE TEMP TABLE qrels AS SELECT * FROM trec_qrels")
    version = "trec-" + Path(qrels).name
    unit = "document"
    inputs = [Source.of(qrels)]
    if chunk_map is None:
        con.execute("CREATE TEMP TABLE passage_map (passage VARCHAR, doc VARCHAR, line INTEGER)")
    else:
        load_chunk_map(con, chunk_map)
        inputs.append(Source.of(chunk_map))
        judged_passage, judged_other = con.execute(
            "SELECT any_value(docno) FILTER (WHERE docno IN (SELECT passage FROM passage_map)), "
            "any_value(docno) FILTER (WHERE docno NOT IN (SELECT passage FROM passage_map)) FROM qrels").fetchone()
        if judged_passage is not None and judged_other is not None:
            raise invalid(f"the qrels judge passages of the map (e.g. {judged_passage!r}) and other IDs (e.g. "
                          f"{judged_other!r}); judge passages only (a passage-level suite) or documents only",
                          "docno", judged_other, path=qrels)
        unit = "chunk" if judged_passage is not None else "document"
    meta = suite_json(TREC_SUITE, version, f"Imported from TREC qrels {Path(qrels).name}.",
                      provenance("trec", None, inputs))
    write_json(suite_dir / "suite.json", meta | ({"unit": unit} if chunk_map is not None else {}))
    con.execute("CREATE TEMP TABLE docs (docno VARCHAR)")
    con.execute("CREATE TEMP TABLE used_passages (passage VARCHAR)")
    con.execute("INSERT INTO docs SELECT DISTINCT docno FROM qrels "
                "WHERE docno NOT IN (SELECT passage FROM passage_map)")
    con.execute("INSERT INTO used_passages SELECT DISTINCT docno FROM qrels WHERE docno IN (SELECT passage FROM "
                "passage_map)")
    written: list[str] = []
    taken: set[str] = set()
    for run_path in runs:
        rid = run_id(load_trec_file(con, run_path, "run", refusals), taken)
        run_dir = out / "runs" / rid
        write_json(run_dir / "manifest.json", manifest(
            rid, TREC_SUITE, version, f"TREC run {Path(run_path).name}", k,
            provenance("trec", Source.of(run_path), inputs)))
        ranked_topics(con, "qrels")
        con.execute(f"INSERT INTO docs SELECT DISTINCT docno FROM ranked WHERE rank <= {MAX_RETRIEVED} "
                    "AND docno NOT IN (SELECT passage FROM passage_map) EXCEPT SELECT docno FROM docs")
        con.execute(f"INSERT INTO used_passages SELECT DISTINCT docno FROM ranked WHERE rank <= {MAX_RETRIEVED} "
                    "AND docno IN (SELECT passage FROM passage_map) EXCEPT SELECT passage FROM used_passages")
        _copy(con, f"""
            SELECT qid AS question_id, list(docno ORDER BY rank) AS retrieved, NULL::VARCHAR AS answer,
                   []::STRUCT(id VARCHAR, citations VARCHAR[])[] AS claims, NULL::DOUBLE AS latency_ms,
                   NULL::DOUBLE AS cost_usd, NULL::VARCHAR AS error
            FROM ranked WHERE rank <= {MAX_RETRIEVED} GROUP BY qid ORDER BY qid""", run_dir / "records.jsonl")
        written.append(rid)
    con.execute("INSERT INTO docs SELECT DISTINCT m.doc FROM used_passages u "
                "JOIN passage_map m ON m.passage = u.passage EXCEPT SELECT docno FROM docs")
    _copy(con, "SELECT docno AS id, 'TREC document ' || docno || ' (text not in the TREC files)' AS text "
               "FROM docs ORDER BY docno", suite_dir / "documents.jsonl")
    if con.execute("SELECT count(*) FROM used_passages").fetchone()[0]:
        # Documents carry no version of their own: their chunks are cut from the corpus version.
        _copy(con, f"""SELECT m.passage AS id, m.doc, '{version.replace("'", "''")}' AS doc_version
                       FROM used_passages u JOIN passage_map m ON m.passage = u.passage ORDER BY m.passage""",
              suite_dir / "chunks.jsonl")
    _copy(con, """
        SELECT qid AS id, 'TREC topic ' || qid AS text, 'trec' AS type, 'dev' AS split, false AS critical,
               []::VARCHAR[] AS tags, map_from_entries(list((docno, grade) ORDER BY docno)) AS relevant,
               MAP {}::MAP(VARCHAR, VARCHAR[]) AS support
        FROM qrels GROUP BY qid ORDER BY qid""", suite_dir / "questions.jsonl")
    refusals.check()
    return written


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qrels", required=True, help="a TREC qrels file: `topic iteration docno grade` per line")
    parser.add_argument("--run", action="append", required=True, help="a TREC run file (repeat for several)")
    parser.add_argument("--chunk-map", help="TSV passage_id<TAB>doc_id: keep passage IDs as chunks")
    parser.add_argument("--k", type=int, default=IMPORT_K,
                        help=f"context cutoff written into each manifest; TREC run files do not record one (default "
                        f"{IMPORT_K})")
    parser.add_argument("--out", required=True, help="the workspace folder to write (see docs/formats.md, Importing)")


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    result = import_trec(args.qrels, args.run, out, chunk_map=args.chunk_map, k=args.k, skip_bad=args.skip_bad)
    result.refusals.report()
    unit = json.loads((out / "suites" / TREC_SUITE / "suite.json").read_text(encoding="utf-8")).get("unit", "document")
    print(f"wrote {out}: suite {TREC_SUITE} ({unit}-level labels), runs {', '.join(result.runs)}")
    print_notes(result)
    return 0


IMPORTER = Importer(
    "trec", "TREC qrels and run files to a suite and retrieval-only runs",
    ("ragslice import trec --qrels qrels.txt --run bm25.run --run dense.run --out ws/",
     "ragslice import trec --qrels qrels.txt --run bm25.run --k 20 --out ws/"),
    _arguments, _run)

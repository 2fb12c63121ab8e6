"""`ragslice import`: other tools' files -> a workspace (docs/formats.md).

TREC: the qrels become a suite `trec` (every judged grade kept; no expected claims, so answer
metrics are n/a) and each run file a retrieval-only run, ranked as trec_eval ranks (score
descending, ties by docno descending), cut at 1000. Documents carry no text in TREC files; each
gets a placeholder naming its docno. Topics of a run missing from the qrels are dropped (as
trec_eval does); qrels topics a run never mentions are scored `missing` by ragslice.

With a passage map (`--chunk-map MAP`, lines `passage_id<TAB>doc_id`), passage IDs are kept as
chunks: the passages the qrels or the runs name become the suite's `chunks.jsonl`, and the runs
keep ranking passage IDs. When the qrels judge passages, the suite is passage-level (`unit:
chunk`: labels match passages exactly, as trec_eval scores them); when they judge documents, each
retrieved passage stands for its document, counted once at the slot of its first passage
(docs/formats.md, "Chunks").

Ragas: ID-based samples (`user_input`, `retrieved_context_ids`, `reference_context_ids`,
`response`) become a suite `ragas` and one run. Ragas samples carry no claim labels, so support
and coverage are n/a and abstention cannot be judged from claims: read the answers.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from .errors import Problems, invalid
from .workspace import FOLDER_NAME, MAX_RETRIEVED, WORKSPACE_ID

IMPORT_K = 10
"""Context cutoff written into imported manifests (TREC and Ragas files do not record one)."""


def _manifest(run_id: str, suite: str, version: str, source: str, k: int) -> dict[str, Any]:
    return {
        "run_id": run_id, "suite": suite, "suite_version": version, "corpus_version": version,
        "created_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "code_revision": "unknown", "retrieval": {"source": source}, "k": k,
        "prompt_revision": "none", "model": "none", "generation": {}, "rubric_version": version,
        "notes": f"Imported from {source}.",
    }


def _suite_json(name: str, version: str, description: str) -> dict[str, Any]:
    return {"name": name, "version": version, "corpus_version": version, "rubric_version": version,
            "description": description}


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _run_id(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:56] or "run"
    candidate, n = base, 2
    while candidate in taken or not FOLDER_NAME.fullmatch(candidate):
        candidate, n = f"{base}-{n}", n + 1
    taken.add(candidate)
    return candidate


def _copy(con: duckdb.DuckDBPyConnection, query: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    path = str(target).replace("'", "''")
    con.execute(f"COPY ({query}) TO '{path}' (FORMAT json)")


MAX_MAP_PROBLEMS = 20

_READ_MAP = (
    "SELECT ordinality::INTEGER AS line, regexp_extract_all(l, '[^ \t\r]+') AS f "
    "FROM read_csv($path, columns={'l': 'VARCHAR'}, header=false, delim=chr(1), quote='', escape='', "
    "auto_detect=false) WITH ORDINALITY"
)


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


def import_trec(qrels: str, runs: list[str], out: Path, *, chunk_map: str | None = None) -> list[str]:
    """Write a workspace from TREC qrels and run files; returns the run IDs written.

    `chunk_map`: a passage map; passages keep their IDs and become the suite's chunks."""
    from .trec import load_qrels, load_run

    suite_dir = out / "suites" / "trec"
    con = duckdb.connect()
    load_qrels(con, qrels)
    con.execute("CREATE TEMP TABLE qrels AS SELECT * FROM trec_qrels")
    bad = con.execute(
        f"SELECT docno FROM qrels WHERE NOT regexp_full_match(docno, '{WORKSPACE_ID.pattern}') LIMIT 1"
    ).fetchall()
    if bad:
        raise invalid("a docno is 1-128 characters with no whitespace", "docno", bad[0][0], path=qrels)
    version = "trec-" + Path(qrels).name
    unit = "document"
    if chunk_map is None:
        con.execute("CREATE TEMP TABLE passage_map (passage VARCHAR, doc VARCHAR, line INTEGER)")
    else:
        load_chunk_map(con, chunk_map)
        judged_passage, judged_other = con.execute(
            "SELECT any_value(docno) FILTER (WHERE docno IN (SELECT passage FROM passage_map)), "
            "any_value(docno) FILTER (WHERE docno NOT IN (SELECT passage FROM passage_map)) FROM qrels").fetchone()
        if judged_passage is not None and judged_other is not None:
            raise invalid(f"the qrels judge passages of the map (e.g. {judged_passage!r}) and other IDs (e.g. "
                          f"{judged_other!r}); judge passages only (a passage-level suite) or documents only",
                          "docno", judged_other, path=qrels)
        unit = "chunk" if judged_passage is not None else "document"
    meta = _suite_json("trec", version, f"Imported from TREC qrels {Path(qrels).name}.")
    _write_json(suite_dir / "suite.json", meta | ({"unit": unit} if chunk_map is not None else {}))
    con.execute("CREATE TEMP TABLE docs (docno VARCHAR)")
    con.execute("CREATE TEMP TABLE used_passages (passage VARCHAR)")
    con.execute("INSERT INTO docs SELECT DISTINCT docno FROM qrels "
                "WHERE docno NOT IN (SELECT passage FROM passage_map)")
    con.execute("INSERT INTO used_passages SELECT DISTINCT docno FROM qrels WHERE docno IN (SELECT passage FROM "
                "passage_map)")
    written: list[str] = []
    taken: set[str] = set()
    for run_path in runs:
        run_id = _run_id(load_run(con, run_path), taken)
        run_dir = out / "runs" / run_id
        _write_json(run_dir / "manifest.json", _manifest(run_id, "trec", version, f"TREC run {Path(run_path).name}",
                                                         IMPORT_K))
        con.execute("""
            CREATE OR REPLACE TEMP TABLE ranked AS
            SELECT qid, docno, row_number() OVER (PARTITION BY qid ORDER BY score DESC, docno DESC) AS rank
            FROM trec_run WHERE qid IN (SELECT qid FROM qrels)""")
        con.execute(f"INSERT INTO docs SELECT DISTINCT docno FROM ranked WHERE rank <= {MAX_RETRIEVED} "
                    "AND docno NOT IN (SELECT passage FROM passage_map) EXCEPT SELECT docno FROM docs")
        con.execute(f"INSERT INTO used_passages SELECT DISTINCT docno FROM ranked WHERE rank <= {MAX_RETRIEVED} "
                    "AND docno IN (SELECT passage FROM passage_map) EXCEPT SELECT passage FROM used_passages")
        _copy(con, f"""
            SELECT qid AS question_id, list(docno ORDER BY rank) AS retrieved, NULL::VARCHAR AS answer,
                   []::STRUCT(id VARCHAR, citations VARCHAR[])[] AS claims, NULL::DOUBLE AS latency_ms,
                   NULL::DOUBLE AS cost_usd, NULL::VARCHAR AS error
            FROM ranked WHERE rank <= {MAX_RETRIEVED} GROUP BY qid ORDER BY qid""", run_dir / "records.jsonl")
        written.append(run_id)
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
    con.close()
    return written


def import_trec_command(qrels: str, runs: list[str], out: Path, *, chunk_map: str | None = None) -> int:
    written = import_trec(qrels, runs, out, chunk_map=chunk_map)
    unit = json.loads((out / "suites" / "trec" / "suite.json").read_text(encoding="utf-8")).get("unit", "document")
    print(f"wrote {out}: suite trec ({unit}-level labels), runs {', '.join(written)}")
    return 0


# --- Ragas ----------------------------------------------------------------------------------------

RAGAS_FIELDS = ("user_input", "retrieved_context_ids", "reference_context_ids", "response")


def _ragas_samples(path: Path, problems: Problems) -> list[tuple[int, dict[str, Any]]]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("[") or stripped.startswith("{") and "\n{" not in stripped.strip():
        try:
            value = json.loads(text)
        except ValueError as error:
            problems.add(f"not valid JSON ({error})", path=str(path))
            return []
        samples = value.get("samples", value) if isinstance(value, dict) else value
        if not isinstance(samples, list):
            problems.add("expected a JSON list of samples or {\"samples\": [...]}", path=str(path))
            return []
        return [(i + 1, s) for i, s in enumerate(samples)]
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((number, json.loads(line)))
            except ValueError as error:
                problems.add(f"not valid JSON ({error})", path=str(path), line=number)
    return out


def _ids(value: Any, field: str, problems: Problems, where: dict[str, Any]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.add("expected a list of context IDs", field, value, **where)
        return []
    ids = [str(v) for v in value]
    for item in ids:
        if not WORKSPACE_ID.fullmatch(item):
            problems.add("an ID is 1-128 characters with no whitespace", field, item, **where)
    return list(dict.fromkeys(ids))


def import_ragas(file: str, out: Path) -> str:
    """Write a workspace (suite `ragas`, one run named after the file) from Ragas samples."""
    path = Path(file)
    problems = Problems()
    samples = _ragas_samples(path, problems)
    docs: dict[str, str] = {}
    questions, records = [], []
    for number, sample in samples:
        where = {"path": str(path), "line": number}
        if not isinstance(sample, dict):
            problems.add("expected an object per sample", **where)
            continue
        if not isinstance(sample.get("user_input"), str) or not sample["user_input"].strip():
            problems.add("required field is missing or empty", "user_input", **where)
            continue
        retrieved = _ids(sample.get("retrieved_context_ids"), "retrieved_context_ids", problems, where)
        reference = _ids(sample.get("reference_context_ids"), "reference_context_ids", problems, where)
        texts = {
            **dict(zip(retrieved, sample.get("retrieved_contexts") or [])),
            **dict(zip(reference, sample.get("reference_contexts") or [])),
        }
        for doc in (*retrieved, *reference):
            text = texts.get(doc)
            docs.setdefault(doc, text if isinstance(text, str) and text.strip() else f"Context {doc} (text not in the samples)")
        qid = f"q-{len(questions) + 1:05d}"
        questions.append({"id": qid, "text": sample["user_input"], "type": "ragas", "split": "dev",
                          "critical": False, "tags": [], "relevant": reference, "support": {}})
        response = sample.get("response")
        records.append({"question_id": qid, "retrieved": retrieved[:MAX_RETRIEVED],
                        "answer": response if isinstance(response, str) else None, "claims": [],
                        "latency_ms": None, "cost_usd": None, "error": None})
    if not samples and not problems:
        problems.add("the file holds no samples", path=str(path))
    problems.raise_if_any()
    version = "ragas-" + path.name
    suite_dir = out / "suites" / "ragas"
    _write_json(suite_dir / "suite.json", _suite_json("ragas", version, f"Imported from Ragas samples {path.name}."))
    (suite_dir / "documents.jsonl").write_text(
        "".join(json.dumps({"id": d, "text": t}, ensure_ascii=False) + "\n" for d, t in docs.items()), encoding="utf-8")
    (suite_dir / "questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8")
    run_id = _run_id(path.stem, set())
    run_dir = out / "runs" / run_id
    _write_json(run_dir / "manifest.json", _manifest(run_id, "ragas", version, f"Ragas samples {path.name}", IMPORT_K))
    (run_dir / "records.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return run_id


def import_ragas_command(file: str, out: Path) -> int:
    run_id = import_ragas(file, out)
    print(f"wrote {out}: suite ragas, run {run_id}")
    print("note: Ragas samples carry no claim labels; support, coverage and abstention are n/a or need review")
    return 0

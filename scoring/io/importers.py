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

Ragas: single-turn samples (`EvaluationDataset.to_jsonl` output, or a JSON list) become a suite
`ragas` and one run. Contexts are documents, named by `retrieved_context_ids` /
`reference_context_ids` when given, else by a hash of their normalised text; relevance comes from
the reference contexts; k is the most contexts a sample delivered (or `--k`); a context repeated in
one ranking keeps its slot as a chunk of the run's chunk map. Ragas samples carry no claims: the
suite has no expected claims and the records none, so answer metrics are n/a (docs/formats.md,
"Ragas samples").
"""
from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from ..errors import Problems, ValidationError, invalid
from ..store.workspace import FOLDER_NAME, MAX_K, MAX_RETRIEVED, WORKSPACE_ID

IMPORT_K = 10
"""Context cutoff written into manifests imported from TREC runs (TREC files do not record one)."""


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


# --- Ragas ----------------------------------------------------------------------------------------

RAGAS_SUITE = "ragas"
RAGAS_FIELDS = ("user_input", "retrieved_contexts", "retrieved_context_ids", "reference_contexts",
                "reference_context_ids", "response", "reference", "id")
"""The fields of a Ragas single-turn sample that the import reads (`id` is not Ragas': an optional
question ID); any other field (`multi_responses`, `rubrics`, ...) is ignored."""
_CONTEXT_FIELDS = (("retrieved_contexts", "retrieved_context_ids"), ("reference_contexts", "reference_context_ids"))


def normalise_context(text: str) -> str:
    """The form in which two contexts are compared: Unicode NFC, every run of whitespace one space,
    no leading or trailing whitespace, casefolded. Contexts equal in this form are one document."""
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()


def context_id(text: str) -> str:
    """The document ID of a context given as text only: ``ctx-`` and the first 16 hex digits of the
    SHA-256 of its normalised form (UTF-8), so the same passage is one document across samples."""
    return "ctx-" + hashlib.sha256(normalise_context(text).encode("utf-8")).hexdigest()[:16]


def _no_text(doc: str) -> str:
    """The text of a document the samples name by ID only (documents need text; TREC's are marked alike)."""
    return f"Ragas context {doc} (text not in the Ragas samples)"


@dataclass
class _Contexts:
    """One side of a sample (retrieved or reference) as given: IDs and/or texts, None when absent."""

    ids: list[str] | None
    texts: list[str] | None


@dataclass
class _Sample:
    where: dict[str, Any]
    id: str | None
    text: str
    response: str | None
    reference: str | None
    retrieved: _Contexts
    references: _Contexts


@dataclass
class _Doc:
    text: str | None
    norm: str | None
    where: dict[str, Any]


def _place(where: dict[str, Any]) -> str:
    return f"{where['path']}:{where['line']}" if where.get("line") else where["path"]


def _read_ragas(path: Path, problems: Problems) -> list[tuple[dict[str, Any], Any]]:
    """(where, value) for each sample of a Ragas file: JSON Lines (`EvaluationDataset.to_jsonl`,
    one sample a line, blank lines skipped; `where` names the line), a JSON list of samples or
    ``{"samples": [...]}`` (`where` names the list index, ``file[i]``), or one JSON object."""
    if not path.is_file():
        problems.add("no such file", path=str(path))
        return []
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problems.add("the file is not valid UTF-8", path=str(path), line=raw[:error.start].count(b"\n") + 1)
        return []
    body = text.strip()
    if not body:
        problems.add("the file holds no samples", path=str(path))
        return []
    whole: Any = ...
    if body[0] in "[{":
        try:
            whole = json.loads(body)
        except ValueError as error:
            if body[0] == "[":
                problems.add(f"not valid JSON ({getattr(error, 'msg', error)})", path=str(path),
                             line=getattr(error, "lineno", None))
                return []
    if isinstance(whole, dict) and "samples" in whole and "user_input" not in whole:
        whole = whole["samples"]
        if not isinstance(whole, list):
            problems.add('expected a JSON list of samples or {"samples": [...]}', "samples", path=str(path))
            return []
    if isinstance(whole, list):
        return [({"path": f"{path}[{index}]"}, value) for index, value in enumerate(whole)]
    if isinstance(whole, dict):
        return [({"path": str(path), "line": text[:text.index("{")].count("\n") + 1}, whole)]
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(({"path": str(path), "line": number}, json.loads(line)))
            except ValueError as error:
                problems.add(f"not valid JSON ({getattr(error, 'msg', error)})", path=str(path), line=number)
    return out


def _context_texts(sample: dict[str, Any], field: str, problems: Problems, where: dict[str, Any]) -> list[str] | None:
    value = sample.get(field)
    if value is None:
        return None
    if not isinstance(value, list):
        problems.add("expected a list of context strings", field, value, **where)
        return None
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            problems.add("a context is a non-empty string", f"{field}[{index}]", item, **where)
    return value


def _context_ids(sample: dict[str, Any], field: str, problems: Problems, where: dict[str, Any]) -> list[str] | None:
    """IDs as strings: Ragas allows strings and integers and compares them as strings."""
    value = sample.get(field)
    if value is None:
        return None
    if not isinstance(value, list):
        problems.add("expected a list of context IDs", field, value, **where)
        return None
    ids = []
    for index, item in enumerate(value):
        if isinstance(item, int) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str) or not WORKSPACE_ID.fullmatch(item):
            problems.add("a context ID is a string of 1-128 characters with no whitespace or control characters, "
                         "or a whole number", f"{field}[{index}]", item, **where)
            continue
        ids.append(item)
    return ids


def _sample(where: dict[str, Any], value: Any, problems: Problems) -> _Sample | None:
    """The sample of one line (or list item), or None with every problem recorded."""
    before = len(problems.items)
    if not isinstance(value, dict):
        problems.add("expected a Ragas sample object", **where)
        return None
    user_input = value.get("user_input")
    if isinstance(user_input, list):
        problems.add("a multi-turn sample (a list of messages) cannot be scored; ragslice reads single-turn samples",
                     "user_input", **where)
        return None
    if not isinstance(user_input, str) or not user_input.strip():
        problems.add("required field is missing or empty (the question)", "user_input", **where)
    qid = value.get("id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if qid is not None and (not isinstance(qid, str) or not WORKSPACE_ID.fullmatch(qid)):
        problems.add("a question ID is 1-128 characters with no whitespace or control characters", "id", qid, **where)
    sides = []
    for text_field, id_field in _CONTEXT_FIELDS:
        texts = _context_texts(value, text_field, problems, where)
        ids = _context_ids(value, id_field, problems, where)
        if texts is not None and ids is not None and len(texts) != len(value[id_field]):
            problems.add(f"lists {len(value[id_field])} IDs but {text_field!r} lists {len(texts)}; each ID names the "
                         "context at its position", id_field, **where)
        sides.append(_Contexts(ids, texts))
    retrieved, references = sides
    if references.ids is not None and retrieved.ids is None and retrieved.texts:
        problems.add("relevance by ID needs the retrieved contexts' IDs: 'retrieved_context_ids' is missing, so "
                     "the retrieved contexts (text only) cannot be matched to these IDs", "reference_context_ids",
                     **where)
    if (references.ids is None and references.texts and retrieved.ids is not None and retrieved.texts is None
            and retrieved.ids):
        problems.add("reference contexts given as text are matched by text, but the retrieved contexts are IDs "
                     "without text; give 'reference_context_ids' or 'retrieved_contexts'", "reference_contexts",
                     **where)
    response, reference = value.get("response"), value.get("reference")
    if response is not None and not isinstance(response, str):
        problems.add("expected a string or null (the answer)", "response", response, **where)
    if len(problems.items) > before:
        return None
    return _Sample(where, qid, user_input, response,
                   reference if isinstance(reference, str) and reference.strip() else None, retrieved, references)


def import_ragas(file: str, out: Path, *, k: int | None = None) -> str:
    """Write a workspace (suite `ragas`, one run named after the file) from Ragas single-turn
    samples; returns the run ID. Nothing is written when any sample is refused.

    Contexts are documents, identified by their ID when given, else by `context_id` of their text.
    Relevance: `reference_context_ids`, else `reference_contexts` matched by normalised text. The
    run's `k` is the largest number of contexts a sample delivered, unless `k` is given. A context
    repeated in one sample's retrieved list keeps its slot as a chunk of the run's chunk map."""
    path = Path(file)
    problems = Problems()
    if k is not None and not 1 <= k <= MAX_K:
        problems.add(f"the context cutoff k is a whole number from 1 to {MAX_K}", "--k", k)
        raise ValidationError(problems.items)
    samples: list[_Sample] = []
    docs: dict[str, _Doc] = {}
    by_text: dict[str, str] = {}
    """Normalised text -> the first context ID given with it (file order)."""
    qids: dict[str, dict[str, Any]] = {}
    for position, (where, value) in enumerate(_read_ragas(path, problems), 1):
        sample = _sample(where, value, problems)
        if sample is None:
            continue
        qid = sample.id or f"q-{position:05d}"
        if qid in qids:
            rule = (f"duplicate question ID (first at {_place(qids[qid])})" if sample.id else
                    f"the question ID this sample gets from its position is the 'id' of the sample at "
                    f"{_place(qids[qid])}; give this sample an 'id'")
            problems.add(rule, "id", qid, **where)
            continue
        qids[qid] = where
        sample.id = qid
        for (text_field, id_field), side in zip(_CONTEXT_FIELDS, (sample.retrieved, sample.references)):
            texts = side.texts if side.texts is not None else [None] * len(side.ids or [])
            for index, (doc, text) in enumerate(zip(side.ids or [], texts)):
                norm = normalise_context(text) if text is not None else None
                known = docs.get(doc)
                if known is None:
                    docs[doc] = _Doc(text, norm, where)
                elif norm is not None and known.norm is not None and norm != known.norm:
                    problems.add(f"this ID names another text at {_place(known.where)}; an ID names one passage",
                                 f"{id_field}[{index}]", doc, **where)
                elif known.text is None:
                    known.text, known.norm = text, norm
                if norm is not None:
                    by_text.setdefault(norm, doc)
        samples.append(sample)
    if not samples and not problems:
        problems.add("the file holds no samples", path=str(path))
    if problems:
        raise ValidationError(problems.items)

    def by_text_id(text: str) -> str:
        norm = normalise_context(text)
        doc = by_text.get(norm)
        if doc is None:
            doc = context_id(text)
            known = docs.setdefault(doc, _Doc(text, norm, {}))
            if known.norm != norm:
                raise invalid(f"context ID {doc!r} is also the ID of a context with another text; rename that ID",
                              path=str(path))
        return doc

    rankings, relevance = [], []
    for sample in samples:
        ranking = sample.retrieved.ids if sample.retrieved.ids is not None else list(
            map(by_text_id, sample.retrieved.texts or []))
        if sample.references.ids is not None:
            relevant = sample.references.ids
        else:
            relevant = list(map(by_text_id, sample.references.texts or []))
        rankings.append(ranking)
        relevance.append(list(dict.fromkeys(relevant)))
    delivered = max(map(len, rankings))
    if not delivered:
        raise invalid("no sample lists retrieved contexts ('retrieved_contexts' or 'retrieved_context_ids'): "
                      "there is no ranking to score", path=str(path))
    if k is None:
        widest = next(s for s, r in zip(samples, rankings) if len(r) == delivered)
        if delivered > MAX_K:
            field = "retrieved_context_ids" if widest.retrieved.ids is not None else "retrieved_contexts"
            raise invalid(f"delivers {delivered} contexts; the context cutoff k is at most {MAX_K}: pass --k "
                          f"(1-{MAX_K}) to score the first k", field, **widest.where)
        k = delivered
    return _write_ragas(path, out, k, samples, rankings, relevance, docs)


def _write_ragas(path: Path, out: Path, k: int, samples: list[_Sample], rankings: list[list[str]],
                 relevance: list[list[str]], docs: dict[str, _Doc]) -> str:
    version = "ragas-" + path.name
    chunks: dict[tuple[str, int], str] = {}
    taken = set(docs)

    def slot_id(doc: str, n: int) -> str:
        """The chunk that fills the n-th slot (n >= 2) of document `doc` in one ranking."""
        if (doc, n) not in chunks:
            candidate = f"{doc}#{n}"
            if len(candidate) > 128 or candidate in taken:
                candidate = f"ctx-{hashlib.sha256(doc.encode('utf-8')).hexdigest()[:16]}#{n}"
            while candidate in taken:
                candidate += "+"
            taken.add(candidate)
            chunks[(doc, n)] = candidate
        return chunks[(doc, n)]

    questions, records = [], []
    for sample, ranking, relevant in zip(samples, rankings, relevance):
        seen: dict[str, int] = {}
        retrieved = []
        for doc in ranking[:MAX_RETRIEVED]:
            seen[doc] = seen.get(doc, 0) + 1
            retrieved.append(doc if seen[doc] == 1 else slot_id(doc, seen[doc]))
        question = {"id": sample.id, "text": sample.text, "type": "ragas", "split": "dev", "critical": False,
                    "tags": [], "relevant": relevant, "support": {}}
        if sample.reference is not None:
            question["x_reference"] = sample.reference
        questions.append(question)
        records.append({"question_id": sample.id, "retrieved": retrieved,
                        "context": "\n\n".join(sample.retrieved.texts) if sample.retrieved.texts else None,
                        "answer": sample.response, "claims": [], "latency_ms": None, "cost_usd": None, "error": None})
    suite_dir = out / "suites" / RAGAS_SUITE
    description = f"Imported from Ragas samples {path.name}."
    _write_json(suite_dir / "suite.json", _suite_json(RAGAS_SUITE, version, description))
    _write_lines(suite_dir / "documents.jsonl",
                 [{"id": d, "text": doc.text if doc.text is not None else _no_text(d)} for d, doc in docs.items()])
    _write_lines(suite_dir / "questions.jsonl", questions)
    run_id = _run_id(path.stem, set())
    run_dir = out / "runs" / run_id
    manifest = _manifest(run_id, RAGAS_SUITE, version, f"Ragas samples {path.name}", k)
    manifest["notes"] = (f"Imported from Ragas samples {path.name}; k = {k}, "
                         f"the most contexts a sample delivered is {max(map(len, rankings))}.")
    _write_json(run_dir / "manifest.json", manifest)
    _write_lines(run_dir / "records.jsonl", records)
    chunk_file = run_dir / "chunks.jsonl"
    if chunks:
        _write_lines(chunk_file, [{"id": c, "doc": d, "doc_version": version,
                                   **({"text": docs[d].text} if docs[d].text is not None else {})}
                                  for (d, _), c in chunks.items()])
    elif chunk_file.exists():
        chunk_file.unlink()
    return run_id


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")



"""`ragslice export`: a database's tables as files other tools read.

``--format csv|parquet``: the per-question tables, one file each. ``--format trec``: TREC files
for trec_eval, ranx or `ragslice trec` (docs/formats.md, "TREC export"): per suite
``<suite>/qrels.txt`` and per run ``<suite>/<run_id>.run``, written so that trec_eval's cut
measures at the run's k (``P_k``, ``recall_k``, ``ndcg_cut_k``, ``map_cut_k``) give the
database's own per-question figures on every question ragslice scores. ``--format trec-rag``: the
runs with answer sentences in the TREC RAG 2024 layout, which `ragslice import trec-rag` reads back.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ..errors import invalid
from ..store.database import Database
from .importing import counted
from ..store.schema import TABLES, VIEWS
from ..store.workspace import MAX_RETRIEVED

EXPORT_TABLES = ("question_scores", "claims", "retrieved", "records", "questions", "runs")
"""The per-question tables `export_tables` writes, one file each."""

NO_RANKING = "ragslice:no-ranking"
"""The docno written for a question whose record is missing or failed, or retrieved nothing: one
unjudged document at rank 1, so trec_eval scores the question 0, as ragslice does (trec_eval
leaves a topic the run does not name out of its mean)."""


def export_tables(db: Path, out: Path, *, fmt: str = "csv") -> list[Path]:
    """Write the per-question tables as one CSV or Parquet file each into `out`, or with
    ``fmt="trec"`` the TREC files of `export_trec`."""
    if fmt == "trec":
        return export_trec(db, out)
    if fmt == "trec-rag":
        return export_trec_rag(db, out).paths
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with Database(db).connect() as con:
        for table in EXPORT_TABLES:
            if table not in TABLES and table not in VIEWS:
                continue
            target = out / f"{table}.{fmt}"
            options = "(FORMAT parquet)" if fmt == "parquet" else "(FORMAT csv, HEADER true)"
            con.execute(f"COPY (SELECT * FROM {table}) TO '{_sql_path(target)}' {options}")
            written.append(target)
    return written


def export_trec(db: Path, out: Path) -> list[Path]:
    """Write ``<suite>/qrels.txt`` per suite and ``<suite>/<run_id>.run`` per run into `out`.

    qrels: every label as reviewed (`labels`), ``question_id 0 doc_id grade``, grades kept (0 and
    negative included). Run: one line per retrieved slot of an ``ok`` record, in rank order,
    ``question_id Q0 docno rank score run_id`` with score ``1001 - rank``. The docno is the
    document a slot counts for; a slot that counts for nothing (a later chunk of a document already
    ranked) keeps its chunk ID, which no label names, so every later slot keeps its rank; in a
    passage-level suite it is the retrieved chunk. A missing or failed record, or one that
    retrieved nothing, is one line naming `NO_RANKING` (trec_eval then scores it 0, as ragslice)."""
    written = []
    with Database(db).connect() as con:
        suites = con.execute("SELECT suite, unit FROM suites ORDER BY suite").fetchall()
        for suite, unit in suites:
            folder = out / suite
            folder.mkdir(parents=True, exist_ok=True)
            written.append(_write_qrels(con, suite, folder))
            placeholder = _unjudged(con, suite)
            for (run_id,) in con.execute("SELECT run_id FROM runs WHERE suite = ? ORDER BY run_id", [suite]).fetchall():
                target = folder / f"{run_id}.run"
                _write(target, _run_lines(con, run_id, unit, placeholder))
                written.append(target)
    return written


def _write_qrels(con: duckdb.DuckDBPyConnection, suite: str, folder: Path) -> Path:
    """``folder/qrels.txt``: every label of the suite as reviewed, ``question_id 0 doc_id grade``."""
    target = folder / "qrels.txt"
    lines = con.execute("SELECT question_id, doc_id, grade FROM labels WHERE suite = ? "
                        "ORDER BY question_id, doc_id", [suite]).fetchall()
    _write(target, (f"{q} 0 {d} {g}\n" for q, d, g in lines))
    return target


def _unjudged(con: duckdb.DuckDBPyConnection, suite: str) -> str:
    """`NO_RANKING`, or a variant of it when the suite labels a document of that name."""
    name = NO_RANKING
    while con.execute("SELECT count(*) FROM labels WHERE suite = ? AND doc_id = ?", [suite, name]).fetchone()[0]:
        name += "+"
    return name


def _run_lines(con: duckdb.DuckDBPyConnection, run_id: str, unit: str, placeholder: str):
    docno = "coalesce(r.chunk_id, r.doc_id)" if unit == "chunk" else \
        "CASE WHEN r.counted THEN r.doc_id ELSE coalesce(r.chunk_id, r.doc_id) END"
    rows = con.execute(f"""
        SELECT s.question_id, {docno} AS docno, r.rank
        FROM question_scores s
        LEFT JOIN retrieved r ON s.status = 'ok' AND r.run_id = s.run_id AND r.question_id = s.question_id
        WHERE s.run_id = ?
        ORDER BY s.question_id, r.rank""", [run_id]).fetchall()
    for question, doc, rank in rows:
        if rank is None:
            yield f"{question} Q0 {placeholder} 1 0 {run_id}\n"
        else:
            yield f"{question} Q0 {doc} {rank} {MAX_RETRIEVED + 1 - rank} {run_id}\n"


def _write(path: Path, lines) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(lines)


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


# --- TREC RAG --------------------------------------------------------------------------------------


@dataclass
class TrecRagExport:
    """What `export_trec_rag` wrote, and what it could not write (`notes`)."""

    paths: list[Path]
    notes: list[str]

def export_trec_rag(db: Path, out: Path) -> TrecRagExport:
    """Write, for each run of the database with answer sentences, ``<suite>/<run_id>.jsonl`` in the
    TREC RAG 2024 layout (one line per question whose record is ``ok``: ``run_id``, ``topic_id``,
    ``topic``, ``references`` = the ranking as recorded, ``response_length`` = the answer's words,
    ``answer`` = the sentences with index citations), beside ``<suite>/topics.tsv`` and
    ``<suite>/qrels.txt`` (labels as reviewed), so that `import_trec_rag` reads them back.

    A citation of an ID that is not in the record's ranking has no index: it is left out and
    counted in `notes`, as are missing and failed records (no line) and recorded claims."""

    paths: list[Path] = []
    notes: list[str] = []
    with Database(db).connect() as con:
        runs = con.execute("SELECT r.run_id, r.suite FROM runs r WHERE r.run_id IN (SELECT run_id FROM answer_sentences) "
                           "ORDER BY r.suite, r.run_id").fetchall()
        if not runs:
            raise invalid("no run of the database has answer sentences; --format trec-rag writes the runs that do",
                          "--format", "trec-rag")
        for suite in dict.fromkeys(s for _, s in runs):
            folder = out / suite
            folder.mkdir(parents=True, exist_ok=True)
            topics = con.execute("SELECT question_id, text FROM questions WHERE suite = ? ORDER BY position",
                                 [suite]).fetchall()
            _write(folder / "topics.tsv", (f"{q}\t{' '.join(text.split())}\n" for q, text in topics))
            paths += [folder / "topics.tsv", _write_qrels(con, suite, folder)]
        for run, suite in runs:
            target = out / suite / f"{run}.jsonl"
            lines, dropped = _trec_rag_lines(con, run, suite)
            _write(target, (json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
            paths.append(target)
            skipped, claimed = con.execute(
                "SELECT (SELECT count(*) FROM question_scores WHERE run_id = $run AND status <> 'ok'), "
                "(SELECT count(DISTINCT question_id) FROM claims WHERE run_id = $run AND aligned_by IS NULL)",
                {"run": run}).fetchone()
            if skipped:
                notes.append(f"run {run}: {counted(skipped, 'question')} with a missing or failed record not written "
                             "(the format has no failure; read back, they score as missing)")
            if dropped:
                notes.append(f"run {run}: {counted(dropped, 'citation')} of an ID outside the record's ranking left "
                             "out (a TREC RAG citation is an index into references)")
            if claimed:
                notes.append(f"run {run}: recorded claims of {counted(claimed, 'question')} not written (the format "
                             "has answer sentences only)")
    return TrecRagExport(paths, notes)

def _trec_rag_lines(con: duckdb.DuckDBPyConnection, run: str, suite: str) -> tuple[list[dict[str, Any]], int]:
    rankings = dict(con.execute("SELECT question_id, list(coalesce(chunk_id, doc_id) ORDER BY rank) FROM retrieved "
                                "WHERE run_id = ? GROUP BY question_id", [run]).fetchall())
    answers = dict(con.execute("SELECT question_id, list({'text': text, 'citations': citations} ORDER BY sentence) "
                               "FROM answer_sentences WHERE run_id = ? GROUP BY question_id", [run]).fetchall())
    rows = con.execute("""
        SELECT s.question_id, q.text FROM question_scores s
        JOIN questions q ON q.suite = ? AND q.question_id = s.question_id
        WHERE s.run_id = ? AND s.status = 'ok' ORDER BY q.position""", [suite, run]).fetchall()
    lines, dropped = [], 0
    for question, text in rows:
        references = rankings.get(question) or []
        index = {ref: i for i, ref in enumerate(references)}
        answer = []
        for sentence in answers.get(question) or []:
            sentence_text, citations = sentence["text"], sentence["citations"]
            kept = [index[c] for c in citations if c in index]
            dropped += len(citations) - len(kept)
            answer.append({"text": sentence_text, "citations": kept})
        lines.append({"run_id": run, "topic_id": question, "topic": " ".join(text.split()), "references": references,
                      "response_length": sum(len(s["text"].split()) for s in answer), "answer": answer})
    return lines, dropped

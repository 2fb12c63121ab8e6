"""`ragslice import beir FOLDER`: a BEIR dataset folder and TREC runs -> a workspace (docs/formats.md, "BEIR").

The folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
``text``) and ``qrels/<split>.tsv`` (header ``query-id<TAB>corpus-id<TAB>score``, then one
judgement a line). It becomes one suite, named after the folder:

- questions: the queries judged in the selected qrels files (``--split NAME``: that file; else
  every file), in queries.jsonl order, each with every grade its split judged. A BEIR split is
  defined by its qrels, so a query no selected file judges is not a question (BEIR's own loader
  drops it too) and run lines for it are ignored, as trec_eval ignores topics missing from the
  qrels. A question whose qrels give no positive grade has no relevant document: its retrieval
  metrics are n/a (never 0) and, with no expected claims in the suite, no answer is asked of it.
- splits: ragslice keeps two, ``dev`` and ``heldout``: BEIR's ``test`` becomes ``heldout``, any
  other split ``dev``; the BEIR name is kept as the tag ``beir:<split>`` (a slice of its own).
- documents: the corpus documents the qrels judge or the runs rank, with their ``title`` and
  ``text`` (the title when the text is empty); one the corpus lacks is kept with a text saying so.
- runs: one per TREC run file (``--run``), read and ranked as `ragslice import trec` reads them
  (score descending, ties by docno descending, the first 1000 kept); TREC run files do not say how
  many documents the answer stage received, so ``k`` is ``--k`` (default `IMPORT_K`).
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..store.files import MAX_GRADE
from ..store.workspace import MAX_RETRIEVED
from .importing import (ID_RULE, IMPORT_K, Importer, ImportResult, Refusals, Source, as_id, check_k, counted, manifest,
                        provenance, read_corpus, read_jsonl, read_text_lines, run_id, staged, suite_json, write_json,
                        report_import, write_lines)
from .trec_import import load_trec_file, ranked_topics

HEADER = ("query-id", "corpus-id", "score")
HELDOUT_SPLITS = ("test",)
"""BEIR splits that become ragslice's held-out split; every other split becomes `dev`."""
_GRADE = re.compile(r"[+-]?[0-9]+")


def _missing_text(doc: str) -> str:
    return f"BEIR document {doc} (not in corpus.jsonl)"


def _empty_text(doc: str) -> str:
    return f"BEIR document {doc} (empty title and text in corpus.jsonl)"


@dataclass
class _Question:
    id: str
    text: str
    position: int
    split: str | None = None
    where: dict[str, Any] | None = None
    """The first qrels line that judged it."""
    relevant: dict[str, int] = field(default_factory=dict)


def import_beir(folder: str | Path, out: Path, *, split: str | None = None, runs: Sequence[str] = (),
                k: int = IMPORT_K, suite: str | None = None, skip_bad: bool = False) -> ImportResult:
    """Write a workspace from a BEIR folder and TREC run files (module docstring); nothing is written
    when a line is refused (``skip_bad``: such lines are left out and listed in the result)."""
    refusals = Refusals(skip_bad)
    check_k(k, refusals)
    root = Path(folder)
    if not root.is_dir():
        refusals.fatal("no such folder", path=str(root))
        refusals.check()
    qrels_files = _qrels_files(root, split, refusals)
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (root / name).is_file():
            refusals.fatal(f"no {name} in the BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)",
                           path=str(root / name))
    refusals.check_fatal()
    questions = _read_queries(root / "queries.jsonl", refusals)
    for split_name, path in qrels_files:
        _read_qrels(path, split_name, questions, refusals)
    judged = [q for q in questions.values() if q.split is not None]
    if not judged:
        refusals.fatal("no query is judged in the selected qrels (" + ", ".join(str(p) for _, p in qrels_files)
                       + ")", path=str(root))
    refusals.check_fatal()
    name = run_id(suite or root.resolve().name, set())
    version = f"beir-{root.resolve().name}"
    inputs = [Source.of(root / "corpus.jsonl"), Source.of(root / "queries.jsonl")] + [
        Source.of(p) for _, p in qrels_files]
    con = duckdb.connect()
    try:
        con.execute("CREATE TEMP TABLE beir_questions AS SELECT unnest($ids::VARCHAR[]) AS qid",
                    {"ids": [q.id for q in judged]})
        rankings: list[tuple[str, str, dict[str, list[str]]]] = []
        notes: list[str] = []
        taken: set[str] = set()
        for run_path in runs:
            rid = run_id(load_trec_file(con, run_path, "run", refusals), taken)
            ranked_topics(con, "beir_questions")
            rows = con.execute(f"SELECT qid, list(docno ORDER BY rank) FROM ranked WHERE rank <= {MAX_RETRIEVED} "
                               "GROUP BY qid").fetchall()
            ignored = con.execute("SELECT count(*) FROM trec_run_topics "
                                  "WHERE qid NOT IN (SELECT qid FROM beir_questions)").fetchone()[0]
            ranking = dict(rows)
            if not ranking:
                refusals.fatal("no topic of the run is a question of the suite (a query judged in the selected "
                               "qrels): check that the run and the BEIR folder, and --split, belong together",
                               path=str(run_path))
            if ignored:
                notes.append(f"run {rid}: {counted(ignored, 'topic')} without qrels in the selected splits, not "
                             "questions of the suite: ignored, as trec_eval ignores topics missing from the qrels")
            unranked = len(judged) - len(ranking)
            if unranked:
                notes.append(f"run {rid}: ranks nothing for {unranked} of {counted(len(judged), 'question')}: scored "
                             "as missing (0 on every retrieval metric, in every denominator)")
            rankings.append((rid, run_path, ranking))
    finally:
        con.close()
    wanted = {d for q in judged for d in q.relevant} | {d for _, _, r in rankings for docs in r.values()
                                                         for d in docs}
    corpus, n_corpus = read_corpus(root / "corpus.jsonl", refusals, id_key="_id", empty_text=_empty_text,
                                   wanted=wanted)
    refusals.check()
    absent = sorted(wanted - corpus.keys())
    if absent:
        verb = "is" if len(absent) == 1 else "are"
        notes.append(f"{counted(len(absent), 'document')} the qrels or runs name {verb} not in corpus.jsonl (e.g. "
                     f"{absent[0]}): kept, with a text saying so")
    if n_corpus > len(corpus):
        notes.append(f"{counted(n_corpus - len(corpus), 'corpus document')} neither judged nor ranked: left out of "
                     "the suite")
    unlabelled = sum(1 for q in judged if not any(g > 0 for g in q.relevant.values()))
    if unlabelled:
        notes.append(f"{counted(unlabelled, 'question')} without a positively graded document in the qrels: "
                     "retrieval metrics n/a")
    notes.append("BEIR files carry no answers: the suite has no expected claims, so answer metrics are n/a")
    with staged(out) as temp:
        suite_dir = temp / "suites" / name
        write_json(suite_dir / "suite.json", suite_json(
            name, version, f"Imported from the BEIR folder {root.resolve().name}.", provenance("beir", None, inputs)))
        documents = [{"id": d, **corpus[d]} for d in corpus] + [{"id": d, "text": _missing_text(d)} for d in absent]
        write_lines(suite_dir / "documents.jsonl", documents)
        write_lines(suite_dir / "questions.jsonl", [{
            "id": q.id, "text": q.text, "type": "beir", "split": "heldout" if q.split in HELDOUT_SPLITS else "dev",
            "critical": False, "tags": [f"beir:{q.split}"], "relevant": q.relevant, "support": {}} for q in judged])
        for rid, run_path, ranking in rankings:
            run_dir = temp / "runs" / rid
            write_json(run_dir / "manifest.json", manifest(
                rid, name, version, f"TREC run {Path(run_path).name}", k,
                provenance("beir", Source.of(run_path), inputs)))
            write_lines(run_dir / "records.jsonl", [{
                "question_id": q.id, "retrieved": ranking[q.id], "answer": None, "claims": [], "latency_ms": None,
                "cost_usd": None, "error": None} for q in judged if q.id in ranking])
    splits: dict[str, int] = {}
    for q in judged:
        splits[q.split] = splits.get(q.split, 0) + 1
    return ImportResult(name, [rid for rid, _, _ in rankings], refusals, notes,
                        counts={"questions": len(judged), "documents": len(documents), **{
                            f"split:{s}": n for s, n in splits.items()}})


def _qrels_files(root: Path, split: str | None, refusals: Refusals) -> list[tuple[str, Path]]:
    """(split, path) of the qrels files read: ``qrels/<split>.tsv``, or every ``qrels/*.tsv`` by name."""
    folder = root / "qrels"
    found = sorted(folder.glob("*.tsv")) if folder.is_dir() else []
    if split is not None:
        path = folder / f"{split}.tsv"
        if not path.is_file():
            have = ", ".join(p.stem for p in found) or "none"
            refusals.fatal(f"no qrels/{split}.tsv in the BEIR folder (splits found: {have})", "--split", split,
                           path=str(root))
            return []
        return [(split, path)]
    if not found:
        refusals.fatal("no qrels/<split>.tsv in the BEIR folder", path=str(folder))
    return [(p.stem, p) for p in found]


def _read_queries(path: Path, refusals: Refusals) -> dict[str, _Question]:
    questions: dict[str, _Question] = {}
    lines: dict[str, int] = {}
    for where, value in read_jsonl(path, refusals):
        if not isinstance(value, dict):
            refusals.refuse("expected a query object {\"_id\", \"text\"}", **where)
            continue
        qid, text = as_id(value.get("_id")), value.get("text")
        bad = False
        if qid is None:
            refusals.refuse(ID_RULE, "_id", value.get("_id"), **where)
            bad = True
        if not isinstance(text, str) or not text.strip():
            refusals.refuse("required field is missing or empty (the query)", "text", text, **where)
            bad = True
        if bad:
            continue
        if qid in questions:
            refusals.refuse(f"duplicate query ID (first at line {lines[qid]})", "_id", qid, **where)
            continue
        refusals.check_id(qid, "_id", **where)
        lines[qid] = where["line"]
        questions[qid] = _Question(qid, text, len(questions))
    return questions


def _read_qrels(path: Path, split: str, questions: dict[str, _Question], refusals: Refusals) -> None:
    """Judgements of one split; the header is required, a query judged in another split is refused."""
    seen: dict[tuple[str, str], int] = {}
    header_seen = False
    for where, text in read_text_lines(path, refusals):
        fields = text.split("\t")
        if not header_seen:
            header_seen = True
            if tuple(f.strip() for f in fields) != HEADER:
                refusals.fatal("the first line is the header `query-id<TAB>corpus-id<TAB>score`, found "
                               f"{text[:60]!r}", **where)
                return
            continue
        if len(fields) != 3:
            refusals.refuse(f"expected 3 tab-separated fields (`query-id<TAB>corpus-id<TAB>score`), found "
                            f"{len(fields)}", **where)
            continue
        qid, doc, grade = fields
        problems = []
        if as_id(qid) is None:
            problems.append((ID_RULE, "query-id", qid))
        elif qid not in questions:
            problems.append(("not a query of queries.jsonl", "query-id", qid))
        if as_id(doc) is None:
            problems.append((ID_RULE, "corpus-id", doc))
        if not _GRADE.fullmatch(grade.strip()) or abs(int(grade)) > MAX_GRADE:
            problems.append((f"the score is a whole number from {-MAX_GRADE} to {MAX_GRADE}", "score", grade))
        if not problems and (qid, doc) in seen:
            problems.append((f"already judged for this query at line {seen[(qid, doc)]}; a document is judged "
                             "once per query", "corpus-id", doc))
        question = questions.get(qid)
        if not problems and question.split not in (None, split):
            problems.append((f"this query is judged in split {question.split!r} ({question.where['path']}); "
                             "a question has one split: import one of them with --split", "query-id", qid))
        for rule, name, value in problems:
            refusals.refuse(rule, name, value, question=qid if as_id(qid) else None, **where)
        if problems:
            continue
        seen[(qid, doc)] = where["line"]
        refusals.check_id(doc, "corpus-id", **where)
        if question.split is None:
            question.split, question.where = split, where
        question.relevant[doc] = int(grade)
    if not header_seen:
        refusals.fatal("the file is empty; expected the header `query-id<TAB>corpus-id<TAB>score` and judgements",
                       path=str(path))


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="the BEIR dataset folder")
    parser.add_argument("--split", help="import the queries of qrels/NAME.tsv only (default: every qrels file, each "
                        "query with its split; test becomes ragslice's heldout split, the others dev)")
    parser.add_argument("--run", action="append", help="a TREC run file over the corpus (repeat for several)")
    parser.add_argument("--k", type=int, default=IMPORT_K,
                        help=f"context cutoff written into each manifest; TREC run files do not record one (default "
                        f"{IMPORT_K})")
    parser.add_argument("--suite", help="suite name (default: the folder's name)")
    parser.add_argument("--out", required=True, help="workspace folder to write")


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    result = import_beir(args.folder, out, split=args.split, runs=args.run or [], k=args.k, suite=args.suite,
                         skip_bad=args.skip_bad)
    report_import(out, result, "split")
    return 0


IMPORTER = Importer(
    "beir", "A BEIR folder (corpus.jsonl, queries.jsonl, one qrels TSV per split) and TREC run files to a suite and "
    "retrieval-only runs",
    ("ragslice import beir scifact/ --split test --run bm25.trec --out ws/",
     "ragslice import beir scifact/ --run bm25.trec --run dense.trec --k 10 --out ws/"),
    _arguments, _run)

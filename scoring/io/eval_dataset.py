"""`ragslice import eval-dataset FILE`: an evaluation dataset of queries and relevant documents, and
runs of retrieved IDs -> a workspace (docs/formats.md, "Evaluation datasets").

The dataset is a JSON list of ``{"query", "relevant_docs": [...]}`` (JSON Lines of the same
objects are read too); each run a JSON list of ``{"query", "retrieved": [...]}``, matched to the
dataset by query text; the corpus, when given, JSON Lines of ``{"id", "text"}``.

- Questions: one per dataset item, in order, with the ID ``q-<position>-<hash>`` (`question_id`):
  the 1-based position in the file, four digits or more, and the first 8 hex digits of the SHA-256
  of the normalised query (`normalise_query`). Each relevant document has grade 1; an item with
  no relevant document has its retrieval metrics n/a.
- Matching: a run's query is compared with the dataset's after `normalise_query`; a query no
  dataset item has, a query a run lists twice and a query the dataset lists twice are refused at
  their position (``file[i]``).
- k: the most IDs any item of the run retrieved, unless ``--k`` says otherwise.
- Documents: every ID the dataset or a run names; its text from ``--corpus``, else a text saying
  the dataset does not give it. A document retrieved twice in one list keeps its slot as a chunk.
- A dataset question a run does not list is scored missing (0, in every denominator).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.files import FOLDER_NAME
from ..store.workspace import MAX_RETRIEVED
from .importing import (Importer, ImportResult, Refusals, RepeatSlots, Source, check_k, counted, id_list,
                        manifest, provenance, read_corpus, read_json_items, run_id, staged, suite_json, write_json,
                        write_lines, delivered_cutoff, report_import)

QUESTION_TYPE = "eval-dataset"


def normalise_query(text: str) -> str:
    """The form in which queries are matched: Unicode NFC, every run of whitespace one space, no
    leading or trailing whitespace; case is kept."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def question_id(position: int, text: str) -> str:
    """``q-`` + the 1-based position (at least four digits) + ``-`` + the first 8 hex digits of the
    SHA-256 of the normalised query (UTF-8): ``q-0001-3f2a9c1d``."""
    return f"q-{position:04d}-{hashlib.sha256(normalise_query(text).encode('utf-8')).hexdigest()[:8]}"


@dataclass
class _Question:
    id: str
    text: str
    relevant: list[str]
    where: dict[str, Any]


@dataclass
class _Run:
    id: str
    path: Path
    rankings: dict[str, list[str]]
    """Question ID -> retrieved IDs, as given."""
    widest: dict[str, Any] | None
    k: int


def _place(where: dict[str, Any]) -> str:
    return f"{where['path']}:{where['line']}" if where.get("line") else where["path"]


def import_eval_dataset(file: str | Path, out: Path, *, runs: Sequence[tuple[str | None, str]] = (),
                        corpus: str | None = None, k: int | None = None, suite: str | None = None,
                        skip_bad: bool = False) -> ImportResult:
    """Write a workspace from an evaluation dataset, its runs (``(name or None, path)``; a run
    without a name is named after its file) and optionally a corpus (module docstring). Nothing is
    written when a line is refused (``skip_bad``: refused items are left out and listed)."""
    refusals = Refusals(skip_bad)
    check_k(k, refusals)
    path = Path(file)
    names: set[str] = set()
    specs = []
    for name, run_path in runs:
        if name is not None and (not FOLDER_NAME.fullmatch(name) or name in names):
            rule = ("a run name is a folder name: 1-64 of letters, digits, '.', '_', '-'"
                    if not FOLDER_NAME.fullmatch(name) else "two runs have this name")
            refusals.fatal(rule, "--run", name)
            continue
        specs.append((name, Path(run_path)))
        if name is not None:
            names.add(name)
    refusals.check_fatal()
    questions = _read_dataset(path, refusals)
    by_text = {normalise_query(q.text): q for q in questions}
    taken = set(names)
    read_runs = [_read_run(name or run_id(p.stem, taken), p, by_text, k, refusals) for name, p in specs]
    documents = read_corpus(Path(corpus), refusals, id_key="id", empty_text=lambda doc: (
        f"Document {doc} (empty text in {Path(corpus).name})"))[0] if corpus is not None else None
    if not questions and not refusals.fatal_problems:
        refusals.fatal("the file holds no questions" if not refusals.lines else
                       "no question is left to import (every item was refused)", path=str(path))
    refusals.check()
    wanted = list(dict.fromkeys([d for q in questions for d in q.relevant] + [
        d for run in read_runs for ranking in run.rankings.values() for d in ranking]))
    notes = []
    texts: dict[str, dict[str, str]] = {}
    if documents is None:
        texts = {d: {"text": f"Document {d} (text not in the evaluation dataset)"} for d in wanted}
        notes.append("no --corpus: documents are kept with a text saying the dataset does not give it")
    else:
        absent = [d for d in wanted if d not in documents]
        texts = {d: documents.get(d) or {"text": f"Document {d} (not in the corpus file {Path(corpus).name})"}
                 for d in wanted}
        if absent:
            notes.append(f"{counted(len(absent), 'document')} the dataset or runs name "
                         f"{'is' if len(absent) == 1 else 'are'} not in the corpus (e.g. {absent[0]}): kept, with a "
                         "text saying so")
        if len(documents) > len(wanted):
            notes.append(f"{counted(len(documents) - len(wanted), 'corpus document')} neither relevant nor "
                         "retrieved: left out of the suite")
    unlabelled = sum(1 for q in questions if not q.relevant)
    if unlabelled:
        notes.append(f"{counted(unlabelled, 'question')} without relevant documents: retrieval metrics n/a")
    for run in read_runs:
        if len(run.rankings) < len(questions):
            notes.append(f"run {run.id}: lists {len(run.rankings)} of {counted(len(questions), 'question')}; the "
                         "others are scored as missing (0 on every retrieval metric, in every denominator)")
    notes.append("evaluation datasets carry no answers: the suite has no expected claims, so answer metrics are n/a")
    name = run_id(suite or path.stem, set())
    version = f"eval-dataset-{path.name}"
    inputs = [Source.of(path)] + ([Source.of(corpus)] if corpus is not None else [])
    with staged(out) as temp:
        suite_dir = temp / "suites" / name
        write_json(suite_dir / "suite.json", suite_json(name, version, f"Imported from the evaluation dataset "
                                                        f"{path.name}.", provenance("eval-dataset", None, inputs)))
        write_lines(suite_dir / "documents.jsonl", [{"id": d, **texts[d]} for d in wanted])
        write_lines(suite_dir / "questions.jsonl", [{
            "id": q.id, "text": q.text, "type": QUESTION_TYPE, "split": "dev", "critical": False, "tags": [],
            "relevant": q.relevant, "support": {}} for q in questions])
        for run in read_runs:
            run_dir = temp / "runs" / run.id
            slots = RepeatSlots(set(wanted))
            records = [{"question_id": q.id, "retrieved": slots.ranking(run.rankings[q.id][:MAX_RETRIEVED]),
                        "answer": None, "claims": [], "latency_ms": None, "cost_usd": None, "error": None}
                       for q in questions if q.id in run.rankings]
            delivered = max((len(r) for r in run.rankings.values()), default=0)
            write_json(run_dir / "manifest.json", manifest(
                run.id, name, version, f"evaluation run {run.path.name}", run.k,
                provenance("eval-dataset", Source.of(run.path), inputs),
                f"Imported from the evaluation run {run.path.name}; k = {run.k}, the most IDs an item retrieved is "
                f"{delivered}."))
            write_lines(run_dir / "records.jsonl", records)
            if slots.chunks:
                write_lines(run_dir / "chunks.jsonl", [{"id": c, "doc": d, "doc_version": version}
                                                       for (d, _), c in slots.chunks.items()])
    return ImportResult(name, [run.id for run in read_runs], refusals, notes,
                        counts={"questions": len(questions), "documents": len(wanted),
                                **{f"k:{run.id}": run.k for run in read_runs}})


def _query(value: Any, where: dict[str, Any], refusals: Refusals, *, what: str) -> str | None:
    if not isinstance(value, dict):
        refusals.refuse(f"expected an object {what}", **where)
        return None
    query = value.get("query")
    if not isinstance(query, str) or not query.strip():
        refusals.refuse("required field is missing or empty (the query text)", "query", query, **where)
        return None
    return query


def _read_dataset(path: Path, refusals: Refusals) -> list[_Question]:
    questions: list[_Question] = []
    seen: dict[str, dict[str, Any]] = {}
    for position, (where, value) in enumerate(read_json_items(path, refusals, noun="questions"), 1):
        query = _query(value, where, refusals, what='{"query", "relevant_docs": [...]}')
        relevant = id_list(value.get("relevant_docs"), "relevant_docs", refusals, where, what="document IDs") \
            if isinstance(value, dict) else None
        if query is None or relevant is None:
            continue
        key = normalise_query(query)
        if key in seen:
            refusals.refuse(f"the same query as the item at {_place(seen[key])}; a query is one question",
                            "query", query, **where)
            continue
        seen[key] = where
        questions.append(_Question(question_id(position, query), query, list(dict.fromkeys(relevant)), where))
    return questions


def _read_run(rid: str, path: Path, by_text: dict[str, _Question], k: int | None, refusals: Refusals) -> _Run:
    rankings: dict[str, list[str]] = {}
    first: dict[str, dict[str, Any]] = {}
    widest: dict[str, Any] | None = None
    delivered = 0
    for where, value in read_json_items(path, refusals, noun="results"):
        query = _query(value, where, refusals, what='{"query", "retrieved": [...]}')
        retrieved = id_list(value.get("retrieved"), "retrieved", refusals, where, what="retrieved IDs") \
            if isinstance(value, dict) else None
        if query is None or retrieved is None:
            continue
        question = by_text.get(normalise_query(query))
        if question is None:
            refusals.refuse("no question of the dataset has this query (queries are matched by their text, "
                            "whitespace and Unicode form aside)", "query", query, **where)
            continue
        if question.id in rankings:
            refusals.refuse(f"this run lists the query already at {_place(first[question.id])}; one result per "
                            "query", "query", query, **where)
            continue
        first[question.id] = where
        rankings[question.id] = retrieved
        if len(retrieved) > delivered:
            delivered, widest = len(retrieved), where
    if not rankings and not refusals.fatal_problems:
        refusals.fatal("no result of the run is left to import", path=str(path))
    if not refusals.fatal_problems:
        k = delivered_cutoff(k, delivered, refusals, verb="retrieves", noun="IDs", field="retrieved", widest=widest,
                             path=path, none_delivered="no result retrieved anything, so the run does not say how "
                             "many documents the answer stage received" if rankings else None)
    return _Run(rid, path, rankings, widest, k if k is not None else max(delivered, 1))


def run_spec(text: str) -> tuple[str | None, str]:
    """A ``--run`` value, ``NAME=FILE`` -> (NAME, FILE); a text whose part before the first ``=`` is
    not a run name (letters, digits, '.', '_', '-') is a file path: (None, FILE)."""
    name, sep, path = text.partition("=")
    return (name, path) if sep and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) else (None, text)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the dataset: a JSON list of {\"query\", \"relevant_docs\": [IDs]}")
    parser.add_argument("--run", action="append", metavar="NAME=FILE",
                        help="a run: a JSON list of {\"query\", \"retrieved\": [IDs]}, matched to the dataset by "
                        "query text; NAME is the run ID (default: the file's name); repeat for several")
    parser.add_argument("--corpus", help="JSON Lines of {\"id\", \"text\"}: the documents' texts (default: "
                        "documents are kept with a text saying the dataset does not give it)")
    parser.add_argument("--k", type=int, help="context cutoff of every run (default: per run, the most IDs any "
                        "query retrieved)")
    parser.add_argument("--suite", help="suite name (default: the dataset file's name)")
    parser.add_argument("--out", required=True, help="workspace folder to write")


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    runs = [run_spec(text) for text in args.run or []]
    result = import_eval_dataset(args.file, out, runs=runs, corpus=args.corpus, k=args.k, suite=args.suite,
                                 skip_bad=args.skip_bad)
    report_import(out, result, "k")
    return 0


IMPORTER = Importer(
    "eval-dataset", "An evaluation dataset (a JSON list of {\"query\", \"relevant_docs\"}) and runs (JSON lists of "
    "{\"query\", \"retrieved\"}) to a suite and retrieval-only runs",
    ("ragslice import eval-dataset eval_dataset.json --run fixed-500=run_a.json --run semantic=run_b.json --k 10 "
     "--out ws/",
     "ragslice import eval-dataset eval_dataset.json --run run_a.json --corpus corpus.jsonl --out ws/"),
    _arguments, _run)

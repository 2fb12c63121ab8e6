"""`ragslice import ragchecker FILE`: a RAGChecker input file -> a workspace (docs/formats.md, "RAGChecker inputs").

The file is one JSON document, ``{"results": [{"query_id", "query", "gt_answer", "response",
"retrieved_context": [{"doc_id", "text"}]}, ...]}``; entry i is named ``file[i]`` (``results[i]``).
It becomes one suite (named after the file, or ``--suite``) and one run (named after the file):

- questions: one per entry, its ``query_id`` the ID, ``query`` the text, type ``ragchecker``, split
  ``dev``; ``gt_answer`` is kept as ``x_reference`` for people reading the file. RAGChecker has no
  relevance labels, so ``relevant`` is empty: retrieval metrics are n/a and Judged@k is 0 until
  reviewers grade documents (``ragslice pool``, then ``ragslice review``).
- documents: the retrieved contexts, named by ``doc_id``, else by the ``doc_id`` the file gives
  the same normalised text elsewhere, else by `context_id` of the text.
- records: ``retrieved`` the contexts in order (a repeat keeps its slot as a chunk of the run's
  map), ``context`` their texts, ``answer`` the response and ``answer_sentences`` its sentences
  (`split_sentences`), citing nothing: RAGChecker records no citations. With no expected claims in
  the suite, answer metrics are n/a.
- k: the most contexts an entry delivered, unless ``--k``.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.workspace import MAX_CLAIMS, MAX_RETRIEVED
from .answer_text import split_sentences
from .importing import (Importer, ImportResult, Refusals, RepeatSlots, Source, as_id, check_k, context_id, counted,
                        manifest, normalise_context, parse_file_json, provenance, read_text, report_import, run_id,
                        staged, suite_json, write_json, write_lines, delivered_cutoff)

SOURCE_FORMAT = "ragchecker"
QUESTION_TYPE = "ragchecker"


@dataclass
class _Entry:
    where: dict[str, Any]
    id: str
    query: str
    reference: str | None
    response: str
    contexts: list[tuple[str | None, str]]
    """(doc_id or None, text) in retrieved order."""


def _place(where: dict[str, Any]) -> str:
    return where["path"]


def _entries(path: Path, refusals: Refusals) -> list[tuple[dict[str, Any], Any]]:
    """(where, value) of each item of ``results``; `where` names it ``file[i]``."""
    text = read_text(path, refusals)
    if text is None:
        return []
    whole = parse_file_json(text, path, refusals, column=True)
    if whole is ...:
        return []
    if not isinstance(whole, dict) or not isinstance(whole.get("results"), list):
        refusals.fatal('expected a RAGChecker input: {"results": [{"query_id", "query", "gt_answer", "response", '
                       '"retrieved_context": [...]}, ...]}', "results", path=str(path))
        return []
    if not whole["results"]:
        refusals.fatal("the file holds no results", "results", path=str(path))
    return [({"path": f"{path}[{index}]"}, value) for index, value in enumerate(whole["results"])]


def _entry(where: dict[str, Any], value: Any, refusals: Refusals) -> _Entry | None:
    """The entry of one item, or None with each problem refused."""
    if not isinstance(value, dict):
        refusals.refuse('expected an entry {"query_id", "query", "gt_answer", "response", "retrieved_context"}',
                        **where)
        return None
    before = len(refusals.lines)
    qid = as_id(value.get("query_id"))
    if qid is None:
        refusals.refuse("required: the query ID, a string of 1-128 characters with no whitespace or control "
                        "characters, or a whole number", "query_id", value.get("query_id"), **where)
    query, reference, response = value.get("query"), value.get("gt_answer"), value.get("response")
    if not isinstance(query, str) or not query.strip():
        refusals.refuse("required field is missing or empty (the question)", "query", query, **where)
    if reference is not None and not isinstance(reference, str):
        refusals.refuse("expected a string or null (the ground-truth answer)", "gt_answer", reference, **where)
    if not isinstance(response, str):
        refusals.refuse("required: the response, a string", "response", response, **where)
    contexts: list[tuple[str | None, str]] = []
    given = value.get("retrieved_context")
    if not isinstance(given, list):
        refusals.refuse('expected a list of {"doc_id", "text"} (use [] for none)', "retrieved_context", given,
                        **where)
    else:
        for index, item in enumerate(given):
            field = f"retrieved_context[{index}]"
            if not isinstance(item, dict):
                refusals.refuse('expected an object {"doc_id", "text"}', field, item, **where)
                continue
            doc, body = item.get("doc_id"), item.get("text")
            if doc is not None and as_id(doc) is None:
                refusals.refuse("a doc_id is a string of 1-128 characters with no whitespace or control characters, "
                                "a whole number, or null", f"{field}.doc_id", doc, **where)
            if not isinstance(body, str) or not body.strip():
                refusals.refuse("required: the context's text, a non-empty string", f"{field}.text", body, **where)
                continue
            contexts.append((as_id(doc) if doc is not None else None, body))
    if isinstance(response, str) and len(split_sentences(response)) > MAX_CLAIMS:
        refusals.refuse(f"the response has {len(split_sentences(response))} sentences; an answer has at most "
                        f"{MAX_CLAIMS}", "response", **where)
    if len(refusals.lines) > before:
        return None
    refusals.check_id(qid, "query_id", **where)
    for index, item in enumerate(given):
        refusals.check_id(as_id(item.get("doc_id")), f"retrieved_context[{index}].doc_id", **where)
    return _Entry(where, qid, query, reference if reference and reference.strip() else None, response, contexts)


def import_ragchecker(file: str | Path, out: Path, *, k: int | None = None, suite: str | None = None,
                      skip_bad: bool = False) -> ImportResult:
    """Write a workspace (one suite, one run, both named after the file unless `suite`) from a
    RAGChecker input file (module docstring). Nothing is written when an entry is refused
    (``skip_bad``: refused entries are left out and listed)."""
    path = Path(file)
    refusals = Refusals(skip_bad)
    check_k(k, refusals)
    entries: list[_Entry] = []
    seen: dict[str, dict[str, Any]] = {}
    texts: dict[str, tuple[str, dict[str, Any]]] = {}
    """doc_id -> (normalised text, where first given)."""
    for where, value in _entries(path, refusals):
        entry = _entry(where, value, refusals)
        if entry is None:
            continue
        if entry.id in seen:
            refusals.refuse(f"duplicate query_id (first at {_place(seen[entry.id])})", "query_id", entry.id, **where)
            continue
        pending: dict[str, tuple[str, dict[str, Any]]] = {}
        bad = False
        for index, (doc, body) in enumerate(entry.contexts):
            if doc is None:
                continue
            norm = normalise_context(body)
            known = pending.get(doc) or texts.get(doc)
            if known is not None and known[0] != norm:
                refusals.refuse(f"this doc_id names another text at {_place(known[1])}; a doc_id names one passage",
                                f"retrieved_context[{index}].doc_id", doc, **where)
                bad = True
            pending.setdefault(doc, (norm, where))
        if bad:
            continue
        seen[entry.id] = where
        for doc, known in pending.items():
            texts.setdefault(doc, known)
        entries.append(entry)
    if not entries and not refusals.fatal_problems:
        refusals.fatal("no entry is left to import (every entry was refused)", path=str(path))
    refusals.check()
    by_text: dict[str, str] = {}
    for doc, (norm, _) in texts.items():
        by_text.setdefault(norm, doc)
    documents: dict[str, str] = {}
    rankings = []
    for entry in entries:
        ranking = []
        for doc, body in entry.contexts:
            name = doc or by_text.get(normalise_context(body)) or context_id(body)
            if doc is None and name in texts and texts[name][0] != normalise_context(body):
                refusals.fatal(f"context ID {name!r} is also the doc_id of a context with another text; rename that "
                               "doc_id", path=str(path))
                refusals.check()
            documents.setdefault(name, body)
            ranking.append(name)
        rankings.append(ranking)
    delivered = max(map(len, rankings))
    widest = next(e for e, r in zip(entries, rankings) if len(r) == delivered)
    k = delivered_cutoff(k, delivered, refusals, noun="contexts", field="retrieved_context", widest=widest.where,
                         path=path, none_delivered="no entry has a retrieved context, so the file does not say how "
                         "many the answer stage received")
    refusals.check()
    name = run_id(suite or path.stem, set())
    rid = run_id(path.stem, set())
    version = f"ragchecker-{path.name}"
    source = Source.of(path)
    slots = RepeatSlots(set(documents))
    with staged(out) as temp:
        suite_dir = temp / "suites" / name
        write_json(suite_dir / "suite.json", suite_json(name, version, f"Imported from the RAGChecker input "
                                                        f"{path.name}.", provenance(SOURCE_FORMAT, None, [source])))
        write_lines(suite_dir / "documents.jsonl", [{"id": d, "text": t} for d, t in documents.items()])
        write_lines(suite_dir / "questions.jsonl", [{
            "id": e.id, "text": e.query, "type": QUESTION_TYPE, "split": "dev", "critical": False, "tags": [],
            "relevant": [], "support": {}, **({"x_reference": e.reference} if e.reference is not None else {})}
            for e in entries])
        run_dir = temp / "runs" / rid
        write_json(run_dir / "manifest.json", manifest(
            rid, name, version, f"RAGChecker input {path.name}", k, provenance(SOURCE_FORMAT, source),
            f"Imported from the RAGChecker input {path.name}; k = {k}, the most contexts an entry delivered is "
            f"{delivered}."))
        write_lines(run_dir / "records.jsonl", [{
            "question_id": e.id, "retrieved": slots.ranking(r[:MAX_RETRIEVED]),
            "context": "\n\n".join(body for _, body in e.contexts) or None, "answer": e.response,
            "answer_sentences": [{"text": s, "citations": []} for s in split_sentences(e.response)],
            "latency_ms": None, "cost_usd": None, "error": None} for e, r in zip(entries, rankings)])
        if slots.chunks:
            write_lines(run_dir / "chunks.jsonl", [{"id": c, "doc": d, "doc_version": version, "text": documents[d]}
                                                   for (d, _), c in slots.chunks.items()])
    notes = [
        "RAGChecker inputs carry no relevance labels: every question has no relevant document, so its retrieval "
        "metrics are n/a and Judged@k is 0; grade the retrieved documents (ragslice pool, then ragslice review) "
        "to score retrieval",
        "no expected claims either: answer metrics (Support, Coverage, Abstention, FalseAbstention) are n/a; the "
        "responses are stored as answer sentences (citing nothing) and gt_answer as the question's x_reference",
    ]
    if slots.chunks:
        notes.append(f"{counted(len(slots.chunks), 'context')} delivered twice in one entry: the repeat keeps its slot "
                     "as a chunk of the run's chunk map")
    return ImportResult(name, [rid], refusals, notes, counts={"questions": len(entries), "documents": len(documents),
                                                             f"k:{rid}": k})


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help='the RAGChecker input: {"results": [{"query_id", "query", "gt_answer", '
                        '"response", "retrieved_context": [{"doc_id", "text"}]}]}')
    parser.add_argument("--k", type=int, help="context cutoff (default: the most contexts any entry delivered)")
    parser.add_argument("--suite", help="suite name (default: the file's name)")
    parser.add_argument("--out", required=True, help="workspace folder to write")


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    result = import_ragchecker(args.file, out, k=args.k, suite=args.suite, skip_bad=args.skip_bad)
    report_import(out, result, "k")
    return 0


IMPORTER = Importer(
    "ragchecker", "A RAGChecker input file ({\"results\": [...]}) to a suite and a run: questions, documents from the "
    "retrieved contexts, responses as answer sentences; no relevance labels",
    ("ragslice import ragchecker checking_inputs.json --out ws/",
     "ragslice import ragchecker checking_inputs.json --suite rc --k 5 --out ws/"),
    _arguments, _run)

"""`ragslice import trec-rag`: TREC RAG 2024 and 2025 topics, run files and qrels -> a workspace
(docs/formats.md, "TREC RAG runs").

- Topics: a file whose first non-blank line starts with ``{`` is JSON Lines ``{"id", "title"}``
  (2025); any other is TSV ``topic_id<TAB>query`` (2024). Every topic is a question of one suite
  (``trec-rag`` unless ``--suite``), type ``trec-rag``, split ``dev``.
- Run files: each file's format is that of its first JSON object: with a ``metadata`` key it is
  TREC RAG 2025 (``metadata.run_id``, ``metadata.narrative_id``, ``references``, ``answer``), else
  2024 (``run_id``, ``topic_id``, ``references``, ``answer``). One run per file. A citation is a
  0-based index into the line's ``references`` or (2025) a segment ID among them; both become index
  citations of the record's ``answer_sentences``.
- Units: a segment ID ``<doc>#<rest>`` names its document by the part before the first ``#``; an
  ID without ``#`` is a document itself. At ``document`` unit the suite's documents are those, each
  run's chunk map sends its segments to their documents (a document counts once, at its first
  segment's slot; a citation of a segment credits its document) and a document's grade is the
  highest grade of its judged segments. At ``segment`` unit each segment is a document of its own.
- k: per run, the most references any line delivered, unless ``--k`` says otherwise.
- The files carry no expected claims: without support assessments the suite is retrieval-only and
  answer metrics are n/a; the answers are kept as sentences (aligned `unlabelled` or `no_claim` by the
  lexical aligner) for review.
- Support assessments (``--support``, `trec_rag_support`): each assessed sentence of a run becomes a
  claim of its record, ``<run>-s<i>``, citing its judged citations, and an assessed claim of the
  question (`assessed`: not expected) labelled with their grades, so Support and GradedSupport score
  the run's answers as the track judged them and Coverage stays n/a.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from ..metrics.registry import SUPPORT_LEVEL
from ..store.files import MAX_GRADE
from ..store.lines import Lines, Unreadable
from ..store.workspace import MAX_CLAIMS, MAX_RETRIEVED
from .importing import (
    ID_RULE,
    Importer,
    ImportResult,
    Refusals,
    RepeatSlots,
    Source,
    as_id,
    check_k,
    counted,
    delivered_cutoff,
    id_list,
    manifest,
    provenance,
    read_jsonl,
    read_text_lines,
    report_import,
    run_id,
    staged,
    suite_json,
    write_json,
    write_lines,
)
from .trec_import import load_trec_file
from .trec_rag_support import Assessments, read_support

TREC_RAG_SUITE = "trec-rag"
QUESTION_TYPE = "trec-rag"
Unit = Literal["document", "segment"]
UNITS: tuple[str, ...] = ("document", "segment")


def segment_doc(segment: str) -> str | None:
    """The document a segment ID names: the part before its first ``#`` (the ID itself when it has
    none), or None when that part is empty."""
    doc = segment.split("#", 1)[0]
    return doc or None


def detect_topics_format(path: Path) -> str:
    """``"2025"`` when the file's first non-blank line starts with ``{`` (JSON Lines), else ``"2024"`` (TSV)."""
    for _, text in Lines(path):
        text = (text.text if isinstance(text, Unreadable) else text).strip()
        if text:
            return "2025" if text.startswith("{") else "2024"
    return "2024"


@dataclass
class _Topic:
    id: str
    text: str
    where: dict[str, Any]
    relevant: dict[str, int] = field(default_factory=dict)


@dataclass
class _Line:
    topic: str
    references: list[str]
    sentences: list[dict[str, Any]]
    where: dict[str, Any]


@dataclass
class _RunFile:
    path: Path
    fmt: str | None = None
    name: str | None = None
    first: dict[str, Any] | None = None
    """Where the run's name was read."""
    meta: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, _Line] = field(default_factory=dict)
    mismatched: int = 0


def import_trec_rag(topics: str | Path, runs: Sequence[str | Path], out: Path, *, qrels: str | None = None,
                    unit: Unit = "document", k: int | None = None, suite: str | None = None,
                    skip_bad: bool = False, support: Sequence[str | Path] = ()) -> ImportResult:
    """Write a workspace from TREC RAG topics, run files (2024 or 2025, detected per file), optional
    qrels and optional support assessments (module docstring); nothing is written when a line is
    refused (``skip_bad``: such lines are left out and listed in the result)."""
    refusals = Refusals(skip_bad)
    check_k(k, refusals)
    if unit not in UNITS:
        refusals.fatal(f"the unit is one of {', '.join(UNITS)}", "--unit", unit)
    topics_path = Path(topics)
    if not topics_path.is_file():
        refusals.fatal("no such file", "--topics", str(topics_path), path=str(topics_path))
    if not runs:
        refusals.fatal("give at least one run file", "--run")
    refusals.check_fatal()
    questions = _read_topics(topics_path, refusals)
    if not questions:
        own = any(p.path == str(topics_path) for p in refusals.lines)
        refusals.fatal("no topic is left to import (every line was refused)" if own else "the file holds no topics",
                       path=str(topics_path))
        refusals.check()
    read_runs = [_read_run(Path(p), questions, unit, refusals) for p in runs]
    if qrels is not None:
        _read_qrels(qrels, questions, unit, refusals)
    assessed = _read_assessments([Path(p) for p in support], questions, read_runs, unit, refusals)
    for run in read_runs:
        if not run.lines and not refusals.fatal_problems:
            own = any(p.path == str(run.path) for p in refusals.lines)
            refusals.fatal("no line of the run is left to import" if own else "the file holds no run lines",
                           path=str(run.path))
    ks = {id(run): _run_k(run, k, refusals) for run in read_runs}
    refusals.check()

    name = run_id(suite or TREC_RAG_SUITE, set())
    version = f"trec-rag-{topics_path.name}"
    inputs = [Source.of(topics_path)] + ([Source.of(qrels)] if qrels is not None else [])
    docs: dict[str, None] = {}
    for question in questions.values():
        docs.update(dict.fromkeys(question.relevant))
    for run in read_runs:
        for line in run.lines.values():
            docs.update(dict.fromkeys(_unit_id(ref, unit) for ref in line.references))
    segments = {ref for run in read_runs for line in run.lines.values() for ref in line.references}
    notes = _notes(questions, read_runs, qrels, unit, assessed if support else None)
    labels = _assessed_labels(read_runs, assessed, unit)
    taken: set[str] = set()
    written: list[str] = []
    with staged(out) as temp:
        suite_dir = temp / "suites" / name
        origin = provenance("trec-rag", None, inputs) | {"unit": unit}
        write_json(suite_dir / "suite.json", suite_json(
            name, version, f"Imported from the TREC RAG topics {topics_path.name} ({unit} unit).", origin))
        what = "document" if unit == "document" else "segment"
        write_lines(suite_dir / "documents.jsonl", [
            {"id": d, "text": f"TREC RAG {what} {d} (text not in the TREC RAG files)"} for d in docs])
        write_lines(suite_dir / "questions.jsonl", [{
            "id": q.id, "text": q.text, "type": QUESTION_TYPE, "split": "dev", "critical": False, "tags": [],
            "relevant": q.relevant, "support": {}, **({"assessed": labels[q.id]} if labels.get(q.id) else {})}
            for q in questions.values()])
        for run in read_runs:
            rid = run_id(run.name or run.path.stem, taken)
            written.append(rid)
            run_dir = temp / "runs" / rid
            slots = RepeatSlots(set(docs) | segments)
            records, chunk_map = [], {}
            for question in questions.values():
                line = run.lines.get(question.id)
                if line is None:
                    continue
                ranking = slots.ranking(line.references)
                if unit == "document":
                    for ref in ranking:
                        doc = _unit_id(ref, unit)
                        if ref != doc and ref not in chunk_map:
                            chunk_map[ref] = doc
                judged = assessed.by_line.get((run.name or "", question.id))
                records.append({
                    "question_id": question.id, "retrieved": ranking,
                    "answer": " ".join(s["text"] for s in line.sentences) if line.sentences else None,
                    "answer_sentences": line.sentences, "latency_ms": None, "cost_usd": None, "error": None,
                    **({"claims": _assessed_claims(run, line, judged)} if judged is not None else {})})
            for (original, _), chunk in slots.chunks.items():
                chunk_map[chunk] = _unit_id(original, unit)
            delivered = max((len(line.references) for line in run.lines.values()), default=0)
            origin = provenance(f"trec-rag-{run.fmt}", Source.of(run.path), inputs) | {"unit": unit}
            meta = manifest(rid, name, version, f"TREC RAG {run.fmt} run {run.path.name}", ks[id(run)], origin,
                            f"Imported from the TREC RAG {run.fmt} run {run.path.name} ({unit} unit); k = "
                            f"{ks[id(run)]}, the most references a topic delivered is {delivered}.")
            meta["retrieval"] |= {key: value for key, value in run.meta.items() if value is not None}
            write_json(run_dir / "manifest.json", meta)
            write_lines(run_dir / "records.jsonl", records)
            if chunk_map:
                write_lines(run_dir / "chunks.jsonl", [{"id": c, "doc": d, "doc_version": version}
                                                       for c, d in chunk_map.items()])
    return ImportResult(name, written, refusals, notes, counts={
        "questions": len(questions), "documents": len(docs), **{f"k:{rid}": ks[id(run)]
                                                                 for rid, run in zip(written, read_runs)}})


def _read_assessments(paths: list[Path], questions: dict[str, _Topic], runs: list[_RunFile], unit: str,
                      refusals: Refusals) -> Assessments:
    """The support files' assessments (`trec_rag_support.read_support`), each of a run and topic imported,
    of the very answer the run gave (its sentences and citations)."""
    def parse(value: dict[str, Any], where: dict[str, Any]) -> Any:
        reader = _read_line_2025 if "metadata" in value else _read_line_2024
        return reader(value, where, unit, refusals)

    found = read_support(paths, parse, refusals)
    by_name = {run.name: run for run in runs}
    for (name, topic), assessment in list(found.by_line.items()):
        run = by_name.get(name)
        line = None if run is None else run.lines.get(topic)
        where = assessment.where
        if run is None:
            refusals.refuse(f"assesses run {name!r}, which no --run file holds (runs: "
                            f"{', '.join(sorted(n for n in by_name if n)) or 'none'})", "run_id", name, **where)
        elif topic not in questions or line is None:
            refusals.refuse(f"run {name!r} gave no answer to this topic", "topic_id", topic, **where)
        elif [(s["text"], s["citations"]) for s in line.sentences] != [(s["text"], s["citations"])
                                                                          for s in assessment.sentences]:
            refusals.refuse(f"the assessed answer is not the one run {name!r} gave ({line.where['path']}:"
                            f"{line.where['line']})", "answer", **where)
        else:
            continue
        del found.by_line[(name, topic)]
    return found


def _assessed_claims(run: _RunFile, line: _Line, assessment: Any) -> list[dict[str, Any]]:
    """A record's claims from its assessed answer: sentence i is claim ``<run>-s<i>`` citing the
    references its judged citations name (a null score's citation left out)."""
    return [{"id": f"{run.name}-s{i}", "citations": list(dict.fromkeys(line.references[j] for j, _ in judged)),
             "text": sentence["text"]}
            for i, (sentence, judged) in enumerate(zip(line.sentences, assessment.judged))]


def _assessed_labels(runs: list[_RunFile], assessed: Assessments, unit: str) -> dict[str, dict[str, dict[str, str]]]:
    """topic -> assessed claim -> unit -> grade: a cited segment's grade on its document (at document
    unit, the highest of its cited segments') or on itself."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    lines = {(run.name, topic): line for run in runs for topic, line in run.lines.items()}
    for (name, topic), assessment in assessed.by_line.items():
        line = lines[(name, topic)]
        for i, judged in enumerate(assessment.judged):
            grades: dict[str, str] = {}
            for j, grade in judged:
                key = _unit_id(line.references[j], unit)
                if key not in grades or SUPPORT_LEVEL[grade] > SUPPORT_LEVEL[grades[key]]:
                    grades[key] = grade
            out.setdefault(topic, {})[f"{name}-s{i}"] = grades
    return out


def _unit_id(ref: str, unit: str) -> str:
    return ref if unit == "segment" else segment_doc(ref) or ref


def _run_k(run: _RunFile, k: int | None, refusals: Refusals) -> int:
    """``--k``, else the most references a line of the run delivered (refused above `MAX_K`)."""
    widest = max(run.lines.values(), key=lambda line: len(line.references), default=None)
    return delivered_cutoff(k, len(widest.references) if widest else 0, refusals, noun="references",
                            field="references", widest=widest.where if widest else None, path=run.path,
                            none_delivered="no line has references, so the run does not say how many segments the "
                            "answer stage received" if widest is not None else None)


def _notes(questions: dict[str, _Topic], runs: list[_RunFile], qrels: str | None, unit: str,
           assessed: Assessments | None = None) -> list[str]:
    notes = []
    if qrels is None:
        notes.append("no --qrels: no question has relevance labels, so retrieval metrics are n/a")
    else:
        unjudged = sum(1 for q in questions.values() if not any(g > 0 for g in q.relevant.values()))
        if unjudged:
            notes.append(f"{counted(unjudged, 'topic')} without a positively graded {unit} in the qrels: "
                         "retrieval metrics n/a")
    for run in runs:
        if len(run.lines) < len(questions):
            notes.append(f"run {run.name or run.path.stem}: answers {len(run.lines)} of "
                         f"{counted(len(questions), 'topic')}; the others are scored as missing")
        if run.mismatched:
            notes.append(f"run {run.name or run.path.stem}: {counted(run.mismatched, 'line')} whose topic text "
                         "differs from the topics file (the topics file's text is kept)")
    if assessed is None:
        notes.append("TREC RAG files carry no expected claims: answer metrics (Support, Coverage, Abstention, "
                     "FalseAbstention) are n/a; the answers are kept as sentences with their citations for review")
        return notes
    grades = ", ".join(f"{n} {g}" for g, n in assessed.grades.items())
    notes.append(f"support assessments: {counted(len(assessed.by_line), 'answer')} of "
                 f"{counted(sum(len(run.lines) for run in runs), 'answer')} assessed; judged citations: {grades}"
                 + (f"; {counted(assessed.unread, 'citation')} with no readable score left unjudged"
                    if assessed.unread else ""))
    for run in runs:
        left = [t for t in run.lines if (run.name, t) not in assessed.by_line]
        if left:
            notes.append(f"run {run.name or run.path.stem}: {counted(len(left), 'answer')} not assessed, kept as "
                         "sentences: each is an unlabelled claim, unsupported (assess every answer of a run before "
                         "reading its Support)")
    notes.append("assessed claims count for Support and GradedSupport, not for Coverage (n/a: no expected claims)")
    return notes


# --- topics ----------------------------------------------------------------------------------------


def _read_topics(path: Path, refusals: Refusals) -> dict[str, _Topic]:
    topics: dict[str, _Topic] = {}
    if detect_topics_format(path) == "2025":
        rows = []
        for where, value in read_jsonl(path, refusals):
            if not isinstance(value, dict):
                refusals.refuse('expected a topic object {"id", "title"}', **where)
                continue
            rows.append((where, value.get("id"), value.get("title"), "id", "title"))
    else:
        rows = []
        for where, text in read_text_lines(path, refusals):
            if "\t" not in text:
                refusals.refuse("expected 2 tab-separated fields (`topic_id<TAB>query`)", **where)
                continue
            topic, query = text.split("\t", 1)
            rows.append((where, topic, query, "topic_id", "query"))
    for where, topic, query, id_field, text_field in rows:
        qid = as_id(topic)
        bad = False
        if qid is None:
            refusals.refuse(ID_RULE, id_field, topic, **where)
            bad = True
        if not isinstance(query, str) or not query.strip():
            refusals.refuse("required field is missing or empty (the topic's text)", text_field, query, **where)
            bad = True
        if bad:
            continue
        if qid in topics:
            refusals.refuse(f"duplicate topic ID (first at line {topics[qid].where['line']})", id_field, topic,
                            **where)
            continue
        refusals.check_id(qid, id_field, **where)
        topics[qid] = _Topic(qid, " ".join(query.split()), where)
    return topics


# --- run files -------------------------------------------------------------------------------------


def _read_run(path: Path, questions: dict[str, _Topic], unit: str, refusals: Refusals) -> _RunFile:
    run = _RunFile(path)
    for where, value in read_jsonl(path, refusals):
        if not isinstance(value, dict):
            refusals.refuse("expected a JSON object (one topic's answer) on each line", **where)
            continue
        fmt = "2025" if "metadata" in value else "2024"
        if run.fmt is None:
            run.fmt = fmt
        elif fmt != run.fmt:
            have = "has a metadata object" if fmt == "2025" else "has no metadata object"
            refusals.refuse(f"this line {have}, so it is TREC RAG {fmt}, but the file is TREC RAG {run.fmt} (its "
                            f"first line); one format per file", "metadata", **where)
            continue
        reader = _read_line_2025 if fmt == "2025" else _read_line_2024
        parsed = reader(value, where, unit, refusals)
        if parsed is None:
            continue
        name, topic, text, line, meta = parsed
        if run.name is None:
            run.name, run.first, run.meta = name, where, meta
        elif name != run.name:
            field_name = "metadata.run_id" if fmt == "2025" else "run_id"
            refusals.refuse(f"every line of a run file names one run (line {run.first['line']}: {run.name!r})",
                            field_name, name, **where)
            continue
        topic_field = "metadata.narrative_id" if fmt == "2025" else "topic_id"
        question = questions.get(topic)
        if question is None:
            refusals.refuse("not a topic of the topics file", topic_field, topic, **where)
            continue
        if topic in run.lines:
            refusals.refuse(f"this run answers the topic already at line {run.lines[topic].where['line']}; one "
                            "line per topic", topic_field, topic, **where)
            continue
        if isinstance(text, str) and " ".join(text.split()) != question.text:
            run.mismatched += 1
        run.lines[topic] = line
    if run.fmt is None:
        run.fmt = "2024"
    return run


_Parsed = tuple[str, str, Any, _Line, dict[str, Any]]
"""A usable run line: the run's name, the topic, the topic's text as the line gives it, the answer,
the metadata kept in the manifest."""


def _read_line_2024(value: dict[str, Any], where: dict[str, Any], unit: str, refusals: Refusals) -> _Parsed | None:
    """A 2024 line (``run_id``, ``topic_id``, ``topic``, ``references``, ``answer``), or None when refused."""
    name, topic = value.get("run_id"), as_id(value.get("topic_id"))
    ok = True
    if not isinstance(name, str) or not name.strip():
        refusals.refuse("required field is missing or empty (the run's name)", "run_id", value.get("run_id"), **where)
        ok = False
    if topic is None:
        refusals.refuse(ID_RULE, "topic_id", value.get("topic_id"), **where)
        ok = False
    text = value.get("topic")
    line = _answer(value, topic, where, unit, refusals, strings=False)
    if not ok or line is None:
        return None
    return name.strip(), topic, text, line, {}


def _read_line_2025(value: dict[str, Any], where: dict[str, Any], unit: str, refusals: Refusals) -> _Parsed | None:
    """A 2025 line (``metadata``: ``run_id``, ``narrative_id``, ...; ``references``, ``answer``), or None."""
    meta = value.get("metadata")
    if not isinstance(meta, dict):
        refusals.refuse('expected an object {"team_id", "run_id", "type", "narrative_id", "narrative", ...}',
                        "metadata", meta, **where)
        _answer(value, None, where, unit, refusals, strings=True)
        return None
    name, topic = meta.get("run_id"), as_id(meta.get("narrative_id"))
    ok = True
    if not isinstance(name, str) or not name.strip():
        refusals.refuse("required field is missing or empty (the run's name)", "metadata.run_id", name, **where)
        ok = False
    if topic is None:
        refusals.refuse(ID_RULE, "metadata.narrative_id", meta.get("narrative_id"), **where)
        ok = False
    line = _answer(value, topic, where, unit, refusals, strings=True)
    if not ok or line is None:
        return None
    kept = {key: meta[key] for key in ("team_id", "type") if isinstance(meta.get(key), (str, int))}
    return name.strip(), topic, meta.get("narrative"), line, kept


def _answer(value: dict[str, Any], topic: str | None, where: dict[str, Any], unit: str, refusals: Refusals, *,
            strings: bool) -> _Line | None:
    """The line's references and answer sentences, citations as 0-based indexes into references."""
    before = len(refusals.lines)
    references = id_list(value.get("references"), "references", refusals, where, what="segment IDs")
    if references is not None:
        if len(references) > MAX_RETRIEVED:
            refusals.refuse(f"a ranking holds at most {MAX_RETRIEVED} references", "references", len(references),
                            **where)
        for index, ref in enumerate(references):
            if unit == "document" and segment_doc(ref) is None:
                refusals.refuse("a segment ID names its document before '#'; this one has nothing there",
                                f"references[{index}]", ref, **where)
    answer = value.get("answer")
    sentences: list[dict[str, Any]] = []
    if not isinstance(answer, list):
        refusals.refuse('expected a list of {"text", "citations"} objects', "answer", answer, **where)
    elif len(answer) > MAX_CLAIMS:
        refusals.refuse(f"an answer holds at most {MAX_CLAIMS} sentences (each may become a claim)", "answer",
                        len(answer), **where)
    else:
        position = {ref: i for i, ref in reversed(list(enumerate(references or [])))}
        for i, sentence in enumerate(answer):
            name = f"answer[{i}]"
            if not isinstance(sentence, dict):
                refusals.refuse('expected an object {"text", "citations"}', name, sentence, **where)
                continue
            text, citations = sentence.get("text"), sentence.get("citations")
            if not isinstance(text, str) or not text.strip():
                refusals.refuse("required: a non-empty string", f"{name}.text", text, **where)
            if not isinstance(citations, list):
                refusals.refuse("expected a list of citations (use [] for none)", f"{name}.citations", citations,
                                **where)
                continue
            indexes: list[int] = []
            for j, cite in enumerate(citations):
                index = _citation(cite, references, position, strings)
                if isinstance(index, str):
                    refusals.refuse(index, f"{name}.citations[{j}]", cite, **where)
                elif index is not None and index not in indexes:
                    indexes.append(index)
            sentences.append({"text": text, "citations": indexes})
    if len(refusals.lines) > before or references is None:
        return None
    return _Line(topic or "", references, sentences, where)


def _citation(cite: Any, references: list[str] | None, position: dict[str, int], strings: bool) -> int | str | None:
    """The index a citation names, a rule it breaks (a string), or None when references are unusable."""
    if references is None:
        return None
    n = len(references)
    if isinstance(cite, int) and not isinstance(cite, bool):
        if 0 <= cite < n:
            return cite
        return f"is not an index into references (it holds {n}: indexes 0 to {n - 1})" if n else \
            "is not an index into references (the line has none)"
    if isinstance(cite, str) and strings:
        if cite in position:
            return position[cite]
        return "cites a segment that is not among the line's references; a citation names one of them"
    return ("a citation is a 0-based index into references or a segment ID among them" if strings else
            "a TREC RAG 2024 citation is a 0-based index into references")


# --- qrels -----------------------------------------------------------------------------------------


def _read_qrels(path: str, questions: dict[str, _Topic], unit: str, refusals: Refusals) -> None:
    """Relevance from qrels ``topic Q0 segment grade`` (`ragslice trec`'s rules); each line whose
    topic is not a topic, whose grade is out of range or whose segment names no document is refused.
    At document unit a document's grade is the highest of its judged segments'."""
    con = duckdb.connect()
    try:
        load_trec_file(con, path, "qrels", refusals)
        rows = con.execute("SELECT qid, docno, grade FROM trec_qrels").fetchall()
    finally:
        con.close()
    bad: dict[tuple[str, str], tuple[str, str, Any]] = {}
    for qid, doc, grade in rows:
        if qid not in questions:
            bad[(qid, doc)] = ("not a topic of the topics file", "qid", qid)
        elif abs(grade) > MAX_GRADE:
            bad[(qid, doc)] = (f"the grade is a whole number from {-MAX_GRADE} to {MAX_GRADE}", "grade", grade)
        elif unit == "document" and segment_doc(doc) is None:
            bad[(qid, doc)] = ("a segment ID names its document before '#'; this one has nothing there", "docno", doc)
    if bad:
        for number, text in Lines(path):
            fields = (text.text if isinstance(text, Unreadable) else text).split()
            if len(fields) == 4 and (fields[0], fields[2]) in bad:
                rule, name, value = bad[(fields[0], fields[2])]
                refusals.refuse(rule, name, value, path=str(path), line=number)
    for qid, doc, grade in rows:
        if (qid, doc) in bad:
            continue
        relevant = questions[qid].relevant
        key = _unit_id(doc, unit)
        relevant[key] = max(grade, relevant.get(key, grade))


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topics", required=True, help="TSV topic_id<TAB>query (2024) or JSON Lines {\"id\", "
                        "\"title\"} (2025; a file whose first line starts with '{')")
    parser.add_argument("--run", action="append", required=True,
                        help="a run file, one JSON object per topic, 2024 or 2025 layout (a first line with "
                        "'metadata' is 2025); repeat for several runs of the suite")
    parser.add_argument("--qrels", help="TREC qrels `topic Q0 segment_id grade` (default: no relevance labels, "
                        "retrieval metrics n/a)")
    parser.add_argument("--unit", choices=["document", "segment"], default="document",
                        help="document: a segment <doc>#<n> stands for its document (counted once, at its first "
                        "slot; graded by its best judged segment); segment: each segment is a document (default "
                        "document)")
    parser.add_argument("--k", type=int, help="context cutoff of every run (default: per run, the most references "
                        "any topic delivered)")
    parser.add_argument("--suite", help="suite name (default trec-rag)")
    parser.add_argument("--support", action="append", default=[],
                        help="the track's support assessments of runs' answers (its support evaluation output: "
                        "the run line with support_eval, FS/PS/NS per citation); repeat for several files")
    parser.add_argument("--out", required=True, help="workspace folder to write")


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    result = import_trec_rag(args.topics, args.run, out, qrels=args.qrels, unit=args.unit, k=args.k,
                             suite=args.suite, skip_bad=args.skip_bad, support=args.support)
    report_import(out, result, "k")
    return 0


IMPORTER = Importer(
    "trec-rag", "TREC RAG 2024 or 2025 topics, run files (answers with citations) and qrels to a suite and runs with "
    "answer sentences",
    ("ragslice import trec-rag --topics topics.rag24.tsv --run run-a.jsonl --run run-b.jsonl --qrels qrels.rag24.txt "
     "--out ws/",
     "ragslice import trec-rag --topics topics.rag25.jsonl --run run25.jsonl --unit segment --out ws/",
     "ragslice import trec-rag --topics topics.rag24.tsv --run run-a.jsonl --qrels qrels.rag24.txt "
     "--support support-eval.run-a.jsonl --out ws/"),
    _arguments, _run)

"""`ragslice import ragas`: Ragas single-turn samples -> a workspace (docs/formats.md, "Ragas samples").

Single-turn samples (`EvaluationDataset.to_jsonl` output, or a JSON list) become a suite `ragas`
and one run. Contexts are documents, named by `retrieved_context_ids` / `reference_context_ids`
when given, else by a hash of their normalised text; relevance comes from the reference contexts;
k is the most contexts a sample delivered (or `--k`); a context repeated in one ranking keeps its
slot as a chunk of the run's chunk map. Ragas samples carry no claims: the suite has no expected
claims and the records none, so answer metrics are n/a.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Problems
from ..store.files import WORKSPACE_ID
from ..store.workspace import MAX_RETRIEVED
from .importing import (Importer, ImportResult, Refusals, RepeatSlots, Source, check_k, context_id, counted,
                        manifest, normalise_context, print_notes, provenance, read_json_items, run_id, staged,
                        suite_json, write_json, write_lines, delivered_cutoff)

RAGAS_SUITE = "ragas"
RAGAS_FIELDS = ("user_input", "retrieved_contexts", "retrieved_context_ids", "reference_contexts",
                "reference_context_ids", "response", "reference", "id")
"""The fields of a Ragas single-turn sample that the import reads (`id` is not Ragas': an optional
question ID); any other field (`multi_responses`, `rubrics`, ...) is ignored."""
_CONTEXT_FIELDS = (("retrieved_contexts", "retrieved_context_ids"), ("reference_contexts", "reference_context_ids"))


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


def import_ragas(file: str, out: Path, *, k: int | None = None, skip_bad: bool = False) -> ImportResult:
    """Write a workspace (suite `ragas`, one run named after the file) from Ragas single-turn
    samples. Nothing is written when a sample is refused (``skip_bad``: refused samples are left
    out and listed in the result).

    Contexts are documents, identified by their ID when given, else by `context_id` of their text.
    Relevance: `reference_context_ids`, else `reference_contexts` matched by normalised text (every
    ID given with the text in the file is relevant; the import notes the texts held by several). The
    run's `k` is the largest number of contexts a sample delivered, unless `k` is given. A context
    repeated in one sample's retrieved list keeps its slot as a chunk of the run's chunk map."""
    path = Path(file)
    refusals = Refusals(skip_bad)
    check_k(k, refusals)
    samples: list[_Sample] = []
    docs: dict[str, _Doc] = {}
    by_text: dict[str, list[str]] = {}
    """Normalised text -> every context ID given with it, in file order."""
    qids: dict[str, dict[str, Any]] = {}
    items = read_json_items(path, refusals, noun="samples", wrapper="samples", marker="user_input")
    for position, (where, value) in enumerate(items, 1):
        problems = Problems()
        sample = _sample(where, value, problems)
        if sample is None:
            refusals.refuse_all(problems.items)
            continue
        qid = sample.id or f"q-{position:05d}"
        if qid in qids:
            rule = (f"duplicate question ID (first at {_place(qids[qid])})" if sample.id else
                    f"the question ID this sample gets from its position is the 'id' of the sample at "
                    f"{_place(qids[qid])}; give this sample an 'id'")
            refusals.refuse(rule, "id", qid, **where)
            continue
        pending: dict[str, _Doc] = {}
        texts: dict[str, list[str]] = {}
        for (text_field, id_field), side in zip(_CONTEXT_FIELDS, (sample.retrieved, sample.references)):
            given = side.texts if side.texts is not None else [None] * len(side.ids or [])
            for index, (doc, text) in enumerate(zip(side.ids or [], given)):
                norm = normalise_context(text) if text is not None else None
                known = pending.get(doc) or docs.get(doc)
                if known is None:
                    pending[doc] = _Doc(text, norm, where)
                elif norm is not None and known.norm is not None and norm != known.norm:
                    problems.add(f"this ID names another text at {_place(known.where)}; an ID names one passage",
                                 f"{id_field}[{index}]", doc, **where)
                elif known.text is None and text is not None:
                    pending[doc] = _Doc(text, norm, where)
                if norm is not None and doc not in texts.setdefault(norm, []):
                    texts[norm].append(doc)
        if problems:
            refusals.refuse_all(problems.items)
            continue
        qids[qid] = where
        if sample.id is not None:
            refusals.check_id(sample.id, "id", **where)
        for (_, id_field), side in zip(_CONTEXT_FIELDS, (sample.retrieved, sample.references)):
            for index, doc in enumerate(side.ids or []):
                refusals.check_id(doc, f"{id_field}[{index}]", **where)
        sample.id = qid
        docs.update(pending)
        for norm, ids in texts.items():
            known = by_text.setdefault(norm, [])
            known.extend(doc for doc in ids if doc not in known)
        samples.append(sample)
    if not samples and not refusals.fatal_problems:
        refusals.fatal("the file holds no samples" if not refusals.lines else
                       "no sample is left to import (every sample was refused)", path=str(path))
    refusals.check()

    def by_text_ids(text: str) -> list[str]:
        """Every context ID given with the text (file order), else the ID made of the text."""
        norm = normalise_context(text)
        ids = by_text.get(norm)
        if ids is None:
            doc = context_id(text)
            known = docs.setdefault(doc, _Doc(text, norm, {}))
            if known.norm != norm:
                refusals.fatal(f"context ID {doc!r} is also the ID of a context with another text; rename that ID",
                               path=str(path))
                refusals.check()
            ids = [doc]
        return ids

    rankings, relevance = [], []
    shared: dict[str, list[dict[str, Any]]] = {}
    """Normalised reference text held by several IDs -> the places of the samples it made all of them relevant."""
    for sample in samples:
        ranking = sample.retrieved.ids if sample.retrieved.ids is not None else [
            by_text_ids(text)[0] for text in sample.retrieved.texts or []]
        if sample.references.ids is not None:
            relevant = sample.references.ids
        else:
            relevant = []
            for text in sample.references.texts or []:
                ids = by_text_ids(text)
                relevant += ids
                if len(ids) > 1:
                    shared.setdefault(normalise_context(text), []).append(sample.where)
        rankings.append(ranking)
        relevance.append(list(dict.fromkeys(relevant)))
    delivered = max(map(len, rankings))
    if not delivered:
        refusals.fatal("no sample lists retrieved contexts ('retrieved_contexts' or 'retrieved_context_ids'): "
                       "there is no ranking to score", path=str(path))
    else:
        widest = next(s for s, r in zip(samples, rankings) if len(r) == delivered)
        field = "retrieved_context_ids" if widest.retrieved.ids is not None else "retrieved_contexts"
        k = delivered_cutoff(k, delivered, refusals, noun="contexts", field=field, widest=widest.where, path=path)
    refusals.check()
    with staged(out) as temp:
        rid = _write_ragas(path, temp, k, samples, rankings, relevance, docs)
    unlabelled = sum(1 for relevant in relevance if not relevant)
    notes = [f"reference context {docs[by_text[norm][0]].text!r} is the text of {len(by_text[norm])} context IDs "
             f"({', '.join(by_text[norm])}): each is relevant to the {counted(len(places), 'sample')} it is a "
             f"reference of (first at {_place(places[0])})" for norm, places in shared.items()]
    return ImportResult(RAGAS_SUITE, [rid], refusals, notes, counts={"questions": len(samples),
                                                                       "unlabelled": unlabelled, "k": k})


def _write_ragas(path: Path, out: Path, k: int, samples: list[_Sample], rankings: list[list[str]],
                 relevance: list[list[str]], docs: dict[str, _Doc]) -> str:
    version = "ragas-" + path.name
    slots = RepeatSlots(set(docs))
    questions, records = [], []
    for sample, ranking, relevant in zip(samples, rankings, relevance):
        question = {"id": sample.id, "text": sample.text, "type": "ragas", "split": "dev", "critical": False,
                    "tags": [], "relevant": relevant, "support": {}}
        if sample.reference is not None:
            question["x_reference"] = sample.reference
        questions.append(question)
        records.append({"question_id": sample.id, "retrieved": slots.ranking(ranking[:MAX_RETRIEVED]),
                        "context": "\n\n".join(sample.retrieved.texts) if sample.retrieved.texts else None,
                        "answer": sample.response, "claims": [], "latency_ms": None, "cost_usd": None, "error": None})
    source = Source.of(path)
    suite_dir = out / "suites" / RAGAS_SUITE
    description = f"Imported from Ragas samples {path.name}."
    write_json(suite_dir / "suite.json", suite_json(RAGAS_SUITE, version, description,
                                                    provenance("ragas", None, [source])))
    write_lines(suite_dir / "documents.jsonl",
                [{"id": d, "text": doc.text if doc.text is not None else _no_text(d)} for d, doc in docs.items()])
    write_lines(suite_dir / "questions.jsonl", questions)
    rid = run_id(path.stem, set())
    run_dir = out / "runs" / rid
    notes = (f"Imported from Ragas samples {path.name}; k = {k}, "
             f"the most contexts a sample delivered is {max(map(len, rankings))}.")
    write_json(run_dir / "manifest.json", manifest(rid, RAGAS_SUITE, version, f"Ragas samples {path.name}", k,
                                                   provenance("ragas", source), notes))
    write_lines(run_dir / "records.jsonl", records)
    if slots.chunks:
        write_lines(run_dir / "chunks.jsonl", [{"id": c, "doc": d, "doc_version": version,
                                                **({"text": docs[d].text} if docs[d].text is not None else {})}
                                               for (d, _), c in slots.chunks.items()])
    return rid


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="JSON Lines, one sample a line, or a JSON list of samples")
    parser.add_argument("--out", required=True, help="workspace folder to write (suite 'ragas', run named after FILE)")
    parser.add_argument("--k", type=int, help="context cutoff (default: the most contexts any sample delivered)")


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    result = import_ragas(args.file, out, k=args.k, skip_bad=args.skip_bad)
    result.refusals.report()
    counts = result.counts
    print(f"wrote {out}: suite {RAGAS_SUITE}, run {result.runs[0]}, {counts['questions']} questions, k = {counts['k']}")
    if counts["unlabelled"]:
        print(f"note: {counts['unlabelled']} samples have no reference contexts: their retrieval metrics are n/a")
    print_notes(result)
    print("note: Ragas samples carry no claims: the suite has no expected claims, so answer metrics (Support, "
          "Coverage, Abstention, FalseAbstention) are n/a; responses are stored as answers for review")
    return 0


IMPORTER = Importer(
    "ragas", "Ragas single-turn samples (EvaluationDataset.to_jsonl output, or a JSON list) to a suite and a run",
    ("ragslice import ragas samples.jsonl --out ws/", "ragslice import ragas samples.json --out ws/ --k 5"),
    _arguments, _run)

"""A suite's line files read and checked in Python: documents.jsonl, chunks.jsonl (a suite's or a run's chunk
map) and questions.jsonl, into `Document`, `Chunk` and `Question` objects of a `workspace.Suite`.

Each field's rule is declared in `scoring.store.formats`; `Checker.field` names the problem of a field
that breaks it, and `Format.fits` decides a clean line at once. Each line is first tried on that fast
path (`_clean_document`, `_clean_question`), which accepts only a line breaking no rule; any other
line gets the full field-by-field checks (`_checked_document`, `_checked_question`, `load_chunks`),
which record every problem. The rules across lines and files (an ID once per file, a label naming a
document of the suite, a supporting document labelled relevant) are written out here.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any, Protocol

from ..errors import Problems
from ..metrics.alignment import UNLABELLED_ID
from ..metrics.registry import SUPPORT_GRADES
from .files import MAX_GRADE, WORKSPACE_ID, iter_json_lines
from .formats import CHUNK, DOCUMENT, ID, ID_RULE, MAX_CITATIONS, MAX_LABELS, QUESTION, RULE, TEXT, Field



class Suite(Protocol):
    """What reading a suite's line files needs of the suite they fill (`scoring.store.workspace.Suite` has
    it): its identity and unit, its documents and questions by ID (filled in place), and the version a
    document has in it."""

    name: str
    version: str
    corpus_version: str
    unit: str
    documents: dict[str, Any]
    questions: dict[str, Any]

    def doc_version(self, doc_id: str) -> str: ...

UNLABELLED_CLAIM = re.compile(re.escape(UNLABELLED_ID).replace(re.escape("{sentence}"), r"\d+"))
"""Claim IDs reserved for unlabelled answer sentences (`scoring.metrics.alignment.UNLABELLED_ID`)."""
CHUNK_KEYS = set(CHUNK.names)
DOCUMENT_KEYS = set(DOCUMENT.names)
QUESTION_KEYS = set(QUESTION.names)


@dataclass
class Document:
    id: str
    text: str
    version: str | None
    title: str | None
    access: list[str]


@dataclass
class Chunk:
    """One line of a chunk map: a piece of document `doc` as it was at `doc_version`."""

    id: str
    doc: str
    doc_version: str
    text: str | None
    start: int | None
    end: int | None
    line: int


@dataclass
class Question:
    id: str
    position: int
    text: str
    type: str
    split: str
    critical: bool
    tags: list[str]
    caller: list[str] | None
    grades: dict[str, int]
    support: dict[str, list[str]]
    propositions: dict[str, str]
    disputed: str | None
    cluster: str | None = None
    """The source the question was written from (`formats.QUESTION`); None: a cluster of its own."""
    partial: dict[str, list[str]] = field(default_factory=dict)
    """claim -> the documents that only partly support it (a graded `support`); `support` holds the
    fully supporting ones, and every expected claim, even one with none."""
    assessed: dict[str, list[str]] = field(default_factory=dict)
    """Assessed claims (not expected): claim -> the documents that fully support it (`formats.QUESTION`)."""
    assessed_partial: dict[str, list[str]] = field(default_factory=dict)
    """Assessed claims -> the documents that partly support them."""


class Checker:
    """Field checks that record a problem and return a safe default instead of raising."""

    def __init__(self, problems: Problems, path: Path, line: int | None, question: str | None = None,
                 lines: dict[str, int] | None = None):
        self.problems, self.path, self.line, self.question = problems, str(path), line, question
        self.lines = lines or {}
        """For a whole-file object: the line of each top-level key ("" = the object's first line)."""

    def add(self, rule: str, name: str | None, value: Any = ...) -> None:
        line = self.line if self.line is not None else self.lines.get(name or "", self.lines.get(""))
        self.problems.add(rule, name, value, path=self.path, line=line, question=self.question)

    def text(self, obj: dict, name: str, *, required: bool = True, nonblank: bool = True) -> str | None:
        if name not in obj or obj[name] is None:
            if required:
                self.add("required field is missing", name)
            return None
        value = obj[name]
        if not isinstance(value, str) or (nonblank and not value.strip()):
            self.add("expected a non-empty string", name, value)
            return None
        return value

    def field(self, obj: dict, declared: Field) -> Any:
        """The value of a declared field (`scoring.store.formats`), or None with its problem recorded:
        absent (or null, where null reads as absent) when it is required, or not of its kind, or beyond
        a bound. An optional field absent (or null) is None too, with no problem."""
        name = declared.name
        value = obj.get(name)
        if value is None and (declared.null_absent or name not in obj):
            if declared.missing == RULE:
                self.add(declared.rule, name, None)
            elif declared.missing is not None:
                self.add(declared.missing, name)
            return None
        if not declared.kind.python(value):
            self.add(declared.rule, name, value)
            return None
        for bound in declared.bounds:
            if not bound.size and value > bound.most:
                self.add(bound.rule, name, value)
                return None
        return value

    def ident(self, value: Any, name: str) -> bool:
        if not ID.python(value):
            self.add(ID_RULE, name, value)
            return False
        return True

    def id_list(self, value: Any, name: str, limit: int) -> list[str]:
        if not isinstance(value, list):
            self.add("expected a list of IDs", name, value)
            return []
        if len(value) > limit:
            self.add(f"at most {limit} IDs are allowed, found {len(value)}", name, value)
            return []
        out: list[str] = []
        seen: set[str] = set()
        for item in value:
            if not self.ident(item, name):
                continue
            if item in seen:
                self.add("duplicate ID", name, item)
                continue
            seen.add(item)
            out.append(item)
        return out

    def unknown_keys(self, obj: dict, allowed: set[str]) -> None:
        for key in obj:
            if key not in allowed and not key.startswith("x_"):
                self.add(f"unknown field (allowed: {', '.join(sorted(allowed))}; prefix extensions with x_)", key)


# --- a suite's line files ---------------------------------------------------------------------


def load_chunks(path: Path, suite: Suite, problems: Problems, *, run_id: str | None = None,
                other_corpus: bool = False) -> dict[str, Chunk]:
    """Read and check a chunk map (the suite's, or run `run_id`'s own).

    Each chunk names a document of the suite and the version of it the chunk was cut from. That
    version must be the suite's (`Suite.doc_version`), except in a run whose manifest declares
    another corpus version (`other_corpus`: an index built from an older corpus)."""
    chunks: dict[str, Chunk] = {}
    for line, obj in iter_json_lines(path, problems):
        check = Checker(problems, path, line)
        check.unknown_keys(obj, CHUNK_KEYS)
        chunk_id = check.field(obj, CHUNK["id"])
        if chunk_id is None:
            continue
        if chunk_id in chunks:
            check.add(f"duplicate chunk ID (first on line {chunks[chunk_id].line})", "id", chunk_id)
            continue
        if chunk_id in suite.documents:
            check.add(f"is also a document of suite {suite.name!r}; a chunk ID must differ from every document ID",
                      "id", chunk_id)
            continue
        doc = check.field(obj, CHUNK["doc"])
        if doc is not None and doc not in suite.documents:
            check.add(f"is not a document of suite {suite.name!r} v{suite.version}", "doc", doc)
            doc = None
        version = check.field(obj, CHUNK["doc_version"])
        text = check.field(obj, CHUNK["text"])
        start, end = check.field(obj, CHUNK["start"]), check.field(obj, CHUNK["end"])
        if start is not None and end is not None and end < start:
            check.add(f"the chunk ends before it starts (start {start})", "end", end)
        if doc is not None and version is not None:
            current = suite.doc_version(doc)
            if version != current and not other_corpus:
                if run_id is None:
                    rule = (f"is not the version of document {doc!r} in suite {suite.name!r} ({current!r}): chunk "
                            f"{chunk_id!r} must be cut from the suite's version of its document")
                else:
                    rule = (f"is not the version of document {doc!r} in suite {suite.name!r} ({current!r}): chunk "
                            f"{chunk_id!r} of run {run_id!r} comes from a stale index; re-index against corpus "
                            f"{suite.corpus_version!r}, or declare the index's corpus_version in the manifest "
                            "(the run is then refused beside runs on the current corpus)")
                check.add(rule, "doc_version", version)
        # Registered even when a field is broken, so records naming it are not also flagged as unknown.
        chunks[chunk_id] = Chunk(chunk_id, doc or "", version or "", text, start, end, line)
    return chunks


_STRING_TYPE = {str}
_INT_TYPE = {int}


def load_documents(suite: Suite, path: Path, problems: Problems) -> None:
    """Fill `suite.documents` from documents.jsonl; the rules are `_checked_document`'s."""
    for line, obj in iter_json_lines(path, problems):
        document = _clean_document(obj, suite.documents)
        if document is None:
            document = _checked_document(obj, suite.documents, Checker(problems, path, line))
        if document is not None:
            suite.documents[document.id] = document


def _checked_document(obj: dict[str, Any], known: dict[str, Document], check: Checker) -> Document | None:
    """Every rule of a document line, each broken one recorded; the document to register, or None
    (its ID is malformed or taken). A document with other broken fields is still registered, so
    questions and records citing it are not also flagged."""
    check.unknown_keys(obj, DOCUMENT_KEYS)
    doc_id = check.field(obj, DOCUMENT["id"])
    if doc_id is None:
        return None
    if doc_id in known:
        check.add("duplicate document ID", "id", doc_id)
        return None
    text, version, title, access = (check.field(obj, DOCUMENT[name]) for name in ("text", "version", "title", "access"))
    return Document(doc_id, text or "", version, title, access or [])


def _clean_document(obj: dict[str, Any], known: dict[str, Document]) -> Document | None:
    """The document of a line that breaks no rule of `_checked_document`, built as it builds it;
    None when the line needs that full check (it may be valid still, e.g. with `x_` fields)."""
    if not DOCUMENT.fits(obj) or obj["id"] in known:
        return None
    get = obj.get
    return Document(obj["id"], obj["text"], get("version"), get("title"), get("access") or [])


@dataclass
class _QuestionRules:
    """What a suite's question lines are checked against."""

    suite: Suite
    labelled: Mapping[str, Any]
    """The IDs labels may name: the suite's documents, or its chunks in a passage-level suite."""
    not_labelled: str
    """The rule text for a label naming anything else."""
    claim_ids: set[str] = field(default_factory=set)
    """Claim IDs already seen well-formed (claim IDs repeat from question to question)."""


def add_questions(suite: Suite, path: Path, lines: Iterable[tuple[int, dict[str, Any]]], labelled: Mapping[str, Any],
                  problems: Problems) -> None:
    """Add the questions of `lines` ((line number, parsed object) of `path`) to `suite.questions`, checked
    by `_checked_question`'s rules; `labelled` holds the IDs labels may name (documents, or chunks in a
    passage-level suite)."""
    where = f"suite {suite.name!r} v{suite.version}"
    if suite.unit == "chunk":
        rules = _QuestionRules(suite, labelled, f"is not a chunk of {where} (unit 'chunk': labels name the "
                                                "chunks of chunks.jsonl)")
    else:
        rules = _QuestionRules(suite, labelled, f"is not a document of {where}")
    for line, obj in lines:
        question = _clean_question(obj, rules)
        if question is None:
            qid = obj.get("id")
            check = Checker(problems, path, line, qid if isinstance(qid, str) else None)
            question = _checked_question(obj, rules, check)
        if question is not None:
            suite.questions[question.id] = question


def _checked_question(obj: dict[str, Any], rules: _QuestionRules, check: Checker) -> Question | None:
    """Every rule of a question line (docs/formats.md), each broken one recorded; the question to
    register, or None (its ID is malformed or taken). A question with other broken fields is still
    registered, so records of it are not also flagged as unknown."""
    suite = rules.suite
    check.unknown_keys(obj, QUESTION_KEYS)
    qid = check.field(obj, QUESTION["id"])
    if qid is None:
        return None
    if qid in suite.questions:
        check.add("duplicate question ID", "id", qid)
        return None
    text, qtype, split, critical, tags, caller, relevant, raw_support, raw_claims, raw_assessed = (
        check.field(obj, QUESTION[name])
        for name in ("text", "type", "split", "critical", "tags", "caller", "relevant", "support", "claims",
                     "assessed"))

    grades: dict[str, int] = {}
    if isinstance(relevant, list):
        grades = {doc: 1 for doc in check.id_list(relevant, "relevant", MAX_LABELS)}
    elif isinstance(relevant, dict):
        if len(relevant) > MAX_LABELS:
            check.add(f"at most {MAX_LABELS} labelled documents, found {len(relevant)}", "relevant", relevant)
        for doc, grade in list(relevant.items())[:MAX_LABELS]:
            if not check.ident(doc, "relevant"):
                continue
            if not isinstance(grade, int) or isinstance(grade, bool):
                check.add("a relevance grade is a whole number", f"relevant[{doc!r}]", grade)
                continue
            if abs(grade) > MAX_GRADE:
                check.add(f"a relevance grade lies between -{MAX_GRADE} and {MAX_GRADE}", f"relevant[{doc!r}]", grade)
                continue
            grades[doc] = grade
    for doc in grades:
        if doc not in rules.labelled:
            check.add(rules.not_labelled, "relevant", doc)
    positive = {doc for doc, grade in grades.items() if grade > 0}

    support, partial = _claim_labels(raw_support, "support", rules, check, positive=positive)
    if support and not positive:
        check.add("expected claims need relevant documents", "support", sorted(support))

    propositions: dict[str, str] = {}
    for claim, words in (raw_claims or {}).items():
        if claim not in support:
            check.add("a proposition for a claim that is not an expected claim in 'support'", "claims", claim)
        elif not TEXT.python(words):
            check.add("a proposition is a non-empty string", f"claims[{claim!r}]", words)
        else:
            propositions[claim] = words
    assessed, assessed_partial = _claim_labels(raw_assessed, "assessed", rules, check, expected=support)
    disputed = check.field(obj, QUESTION["disputed"])
    cluster = check.field(obj, QUESTION["cluster"])
    return Question(qid, len(suite.questions), text or "", qtype or "", split or "", critical is True, tags or [],
                    caller, grades, support, propositions, disputed, cluster, partial, assessed, assessed_partial)


def _claim_labels(raw: Any, name: str, rules: _QuestionRules, check: Checker, *,
                  positive: set[str] | None = None, expected: Mapping[str, Any] | None = None
                  ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(claim -> fully supporting documents, claim -> partly supporting documents) of a question's
    `support` or `assessed` map, each claim ID well-formed and not reserved, its documents a list (full)
    or graded (`_graded_support`). Expected claims (`positive`: the question's relevant documents) need a
    document and may cite relevant documents only; assessed claims (`expected`: the question's expected
    claims) may have none, cite any document of the suite, and take no expected claim's ID."""
    full: dict[str, list[str]] = {}
    partial: dict[str, list[str]] = {}
    for claim, docs in (raw or {}).items():
        if not check.ident(claim, name):
            continue
        if UNLABELLED_CLAIM.fullmatch(claim):
            check.add("is reserved for the generated claim of an unlabelled answer sentence (unlabelled#<n>)",
                      name, claim)
        if expected is not None and claim in expected:
            check.add("is an expected claim in 'support': an assessed claim is one no expected claim holds", name,
                      claim)
        where = f"{name}[{claim!r}]"
        if isinstance(docs, dict):
            listed, partly = _graded_support(docs, where, rules, check, at_least_one=positive is not None)
        else:
            listed, partly = check.id_list(docs, where, MAX_CITATIONS), []
            if positive is not None and docs == []:
                check.add("an expected claim needs at least one supporting document", where, docs)
            if positive is None:
                for doc in listed:
                    if doc not in rules.labelled:
                        check.add(rules.not_labelled, where, doc)
        outside = [d for d in [*listed, *partly] if d not in positive] if positive is not None else []
        if outside:
            check.add("supporting documents must be labelled relevant (grade > 0)", where, outside)
        full[claim] = listed
        if partly:
            partial[claim] = partly
    return full, partial


def _graded_support(docs: dict[str, Any], name: str, rules: _QuestionRules, check: Checker, *,
                    at_least_one: bool = True) -> tuple[list[str], list[str]]:
    """A graded expected claim (document -> `SUPPORT_GRADES`): its fully and its partly supporting
    documents, in file order; "none" is recorded as judged and scored as unlisted. `at_least_one`: an
    expected claim needs a document at partial or above (an assessed claim may have none)."""
    if len(docs) > MAX_CITATIONS:
        check.add(f"at most {MAX_CITATIONS} graded documents, found {len(docs)}", name, docs)
        return [], []
    full: list[str] = []
    partly: list[str] = []
    for doc, grade in docs.items():
        if not check.ident(doc, name):
            continue
        if doc not in rules.labelled:
            check.add(rules.not_labelled, name, doc)
            continue
        if grade not in SUPPORT_GRADES:
            check.add(f"a support grade is one of {', '.join(map(repr, SUPPORT_GRADES))} (a list of documents means "
                      "'full' for each)", f"{name}[{doc!r}]", grade)
            continue
        (full if grade == "full" else partly if grade == "partial" else []).append(doc)
    if at_least_one and not full and not partly and not any(g not in SUPPORT_GRADES for g in docs.values()):
        check.add("an expected claim needs at least one supporting document (graded 'full' or 'partial')", name, docs)
    return full, partly


def _clean_question(obj: dict[str, Any], rules: _QuestionRules) -> Question | None:
    """The question of a line that breaks no rule of `_checked_question`, built as it builds it;
    None when the line needs that full check (it may be valid still, e.g. with `x_` fields).

    Labels and supporting documents are checked as sets: an ID the suite labels is well-formed."""
    if not QUESTION.fits(obj) or obj["id"] in rules.suite.questions:
        return None
    grades = _clean_grades(obj.get("relevant"), rules.labelled)
    if grades is None:
        return None
    positive = {doc for doc, grade in grades.items() if grade > 0}
    support, claims = obj.get("support", {}), obj.get("claims", {})
    if obj.get("assessed"):  # assessed claims: checked line by line
        return None
    if not (type(support) is dict and type(claims) is dict and _claim_ids_ok(support, rules.claim_ids)
            and all(map(_supporting_docs_ok, support.values(), repeat(positive)))
            and support.keys() >= claims.keys() and all(map(TEXT.python, claims.values()))):
        return None
    # The parsed line is not kept: its lists and maps are the question's own.
    get = obj.get
    return Question(obj["id"], len(rules.suite.questions), obj["text"], obj["type"], obj["split"],
                    get("critical", False), get("tags", []), get("caller"), grades, support, claims, get("disputed"),
                    get("cluster"))


def _clean_grades(relevant: Any, labelled: Mapping[str, Any]) -> dict[str, int] | None:
    """Label ID -> grade of a `relevant` field that breaks no rule: a list of distinct labelled IDs
    (grade 1 each) or a map labelled ID -> whole number, at most MAX_LABELS; else None."""
    if type(relevant) is dict:
        if (len(relevant) <= MAX_LABELS and labelled.keys() >= relevant.keys()
                and _INT_TYPE.issuperset(map(type, relevant.values()))
                and all(-MAX_GRADE <= grade <= MAX_GRADE for grade in relevant.values())):
            return relevant
    elif type(relevant) is list:
        if len(relevant) <= MAX_LABELS and _STRING_TYPE.issuperset(map(type, relevant)):
            ids = set(relevant)
            if len(ids) == len(relevant) and labelled.keys() >= ids:
                return dict.fromkeys(relevant, 1)
    return None


def _claim_ids_ok(support: dict[str, Any], seen_ok: set[str]) -> bool:
    """Whether every claim ID of `support` is well-formed and not reserved (`UNLABELLED_CLAIM`); those
    join `seen_ok`."""
    if seen_ok.issuperset(support):
        return True
    if not all(map(WORKSPACE_ID.fullmatch, support)) or any(map(UNLABELLED_CLAIM.fullmatch, support)):
        return False
    seen_ok.update(support)
    return True


def _supporting_docs_ok(docs: Any, positive: set[str]) -> bool:
    """Whether an expected claim's documents break no rule: 1 to MAX_CITATIONS distinct IDs, each
    graded > 0 (so each a well-formed, labelled ID)."""
    return (type(docs) is list and 0 < len(docs) <= MAX_CITATIONS and _STRING_TYPE.issuperset(map(type, docs))
            and positive.issuperset(docs) and len(set(docs)) == len(docs))

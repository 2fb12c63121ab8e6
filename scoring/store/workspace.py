"""Reading and validating a workspace: suites (labels) and runs (recorded outputs).

Layout (docs/formats.md):

    suites/<suite>/suite.json, documents.jsonl, questions.jsonl, chunks.jsonl (optional)
    runs/<run_id>/manifest.json, records.jsonl (or records.parquet), chunks.jsonl (optional)

Suites and manifests are checked here in Python (a suite's clean lines on a fast path of set
checks, the rest field by field); this module is the authority on the suite rules. A refresh reads a
clean suite faster set-based (`scoring.store.suite_bulk`, which leaves any doubt to this module).
Records can number millions and are staged and checked with set-based SQL in
`scoring.store.records`. Every problem names file, line, question and field, and every problem in
the workspace is reported, not just the first.
"""
from __future__ import annotations

import gc
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

from ..errors import Problems, ValidationError
from .files import (
    _FREEZE_AT, FOLDER_NAME, MAX_GRADE, WORKSPACE_ID, Digest, files_hash, gc_paused, hashing_ahead, iter_json_lines,
    read_json_file,
)
from .judges import JUDGEMENTS, JUDGES_FILE, load_judges, read_cache
from .reviews import Review, apply_reviews, read_reviews, review_files
from ..metrics.reference import MAX_CLAIMS
from ..metrics.alignment import UNLABELLED_ID
from .formats import (
    CHUNK, DOCUMENT, HELDOUT, ID, ID_RULE, MAX_CITATIONS, MAX_LABELS, MAX_OFFSET, MAX_RETRIEVED, QUESTION, RULE, SPLITS,
    TEXT, Field,
)

UNLABELLED_CLAIM = re.compile(re.escape(UNLABELLED_ID).replace(re.escape("{sentence}"), r"\d+"))
"""Claim IDs reserved for unlabelled answer sentences (`scoring.metrics.alignment.UNLABELLED_ID`)."""
MAX_REPEAT = 2**31 - 1
"""The largest repeat number a manifest may give (`runs.repeat` is an INTEGER)."""
MAX_K = 100

SUITE_KEYS = {"name", "version", "corpus_version", "rubric_version", "description", "unit", "max_claims"}
UNITS = ("document", "chunk")
"""What labels name: documents (the default; retrieved and cited chunks stand for their documents) or,
in a passage-level suite, the suite's chunks (matched exactly)."""
CHUNK_KEYS = set(CHUNK.names)
DOCUMENT_KEYS = set(DOCUMENT.names)
QUESTION_KEYS = set(QUESTION.names)
MANIFEST_REQUIRED = (
    "run_id", "suite", "suite_version", "corpus_version", "created_at", "code_revision",
    "retrieval", "k", "prompt_revision", "model", "generation", "rubric_version",
)
MANIFEST_OPTIONAL = ("group", "repeat", "notes", "release")


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


@dataclass
class Suite:
    name: str
    folder: Path
    version: str
    corpus_version: str
    rubric_version: str
    description: str | None
    unit: str = "document"
    max_claims: int = MAX_CLAIMS
    """The most claims an answer may make (suite.json `max_claims`, default the format's bound): a
    record with more is refused, and pooled Support charges a failed or missing record this many."""
    documents: dict[str, Document] = field(default_factory=dict)
    questions: dict[str, Question] = field(default_factory=dict)
    chunks: dict[str, Chunk] = field(default_factory=dict)
    """The suite's chunk map (`chunks.jsonl`), empty when the suite has none."""
    files_hash: str = ""
    """Content hash of all the suite's files (`suite_hash` of its `base_hash` and its review files')."""
    base_hash: str = ""
    """Content hash of the suite's files except its review files (`base_files`)."""
    loaded: bool = True
    """False when only suite.json was read because a database already holds this exact suite, or this
    suite but for its review files (`reviews_only`)."""
    reviews_only: bool = False
    """Only suite.json was read because a database holds every file of this suite but its review files:
    the decisions can be applied to the stored suite (`scoring.store.decisions`)."""
    deferred: bool = False
    """Only suite.json (and the judges) were read: documents, chunk map, questions and review files are
    left to be read set-based into a database (`scoring.store.suite_bulk`), or in Python on any doubt."""
    review: Review | None = None
    """What the reviewers' decisions (`reviews/*.jsonl`) did to the labels, once applied."""
    judges: dict[str, Any] = field(default_factory=dict)
    """The judges of `judges.toml` in precedence order (`scoring.store.judges.Judge`)."""
    judgements: dict[str, dict[str, Any]] = field(default_factory=dict)
    """judge -> request key -> cached answer (`scoring.store.judges.CachedAnswer`), from `judgements/`."""

    def doc_version(self, doc_id: str) -> str:
        """The version a document is at: its own `version`, else the suite's `corpus_version`."""
        return self.documents[doc_id].version or self.corpus_version


@dataclass
class Run:
    run_id: str
    folder: Path
    manifest: dict[str, Any]
    records_path: Path
    files_hash: str
    chunks: dict[str, Chunk] | None = None
    """The run's own chunk map (`runs/<run_id>/chunks.jsonl`); None: the suite's map applies."""

    @property
    def suite(self) -> str:
        return self.manifest["suite"]

    @property
    def k(self) -> int:
        return self.manifest["k"]


@dataclass
class Workspace:
    root: Path
    suites: dict[str, Suite]
    runs: dict[str, Run]


# --- field checks -----------------------------------------------------------------------------


class _Checker:
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
            if declared.missing is RULE:
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


# --- suites -----------------------------------------------------------------------------------


def base_files(folder: Path) -> list[Path]:
    """The files whose bytes make a suite's base hash: its own, its judges' declarations and their cached
    answers; everything but its reviewers' decisions."""
    chunks, judges = folder / "chunks.jsonl", folder / "judges.toml"
    judgements = folder / "judgements"
    return [folder / "suite.json", folder / "documents.jsonl", folder / "questions.jsonl"] + (
        [chunks] if chunks.exists() else []) + ([judges] if judges.exists() else []) + (
        sorted(judgements.glob("*.jsonl")) if judgements.is_dir() else [])


def suite_hash(base: str, reviews: str) -> str:
    """A suite's content hash (`suites.files_hash`) from its base hash and its review files' hash."""
    return hashlib.blake2b(f"{base}:{reviews}".encode(), digest_size=16).hexdigest()


def load_suite(folder: Path, problems: Problems, *, known_hash: str | None = None, known_base: str | None = None,
               digest: Digest = files_hash, defer: bool = False) -> Suite | None:
    """Read and check one suite folder; problems are recorded, not raised.

    With `known_hash` equal to the files' hash (a database already holds exactly this suite), only
    suite.json is read: documents, questions and chunks stay unloaded (`Suite.loaded` is False). So
    too with `known_base` equal to the base hash (the database holds this suite but for its review
    files): `Suite.reviews_only` is then True, and the decisions are read against the stored suite.
    With `defer`, the suite is read no further than suite.json and its judges (`Suite.deferred`)."""
    meta_path = folder / "suite.json"
    before = len(problems.items)
    meta_lines: dict[str, int] = {}
    meta = read_json_file(meta_path, problems, meta_lines)
    if meta is None:
        return None
    check = _Checker(problems, meta_path, None, lines=meta_lines)
    check.unknown_keys(meta, SUITE_KEYS)
    name = check.text(meta, "name")
    if name is not None and name != folder.name:
        check.add(f"must equal the folder name {folder.name!r}", "name", name)
    values = {key: check.text(meta, key) for key in ("version", "corpus_version", "rubric_version")}
    description = check.text(meta, "description", required=False, nonblank=False)
    unit = meta.get("unit", "document")
    if unit not in UNITS:
        check.add("expected 'document' (labels name documents) or 'chunk' (labels name the chunks of "
                  "chunks.jsonl)", "unit", unit)
        return None
    max_claims = meta.get("max_claims", MAX_CLAIMS)
    if type(max_claims) is not int or not 1 <= max_claims <= MAX_CLAIMS:
        check.add(f"expected a whole number from 1 to {MAX_CLAIMS}: the most claims an answer may make",
                  "max_claims", max_claims)
        return None
    if name is None or None in values.values():
        return None
    suite = Suite(name, folder, values["version"], values["corpus_version"], values["rubric_version"], description,
                  unit, max_claims)
    base = base_files(folder)
    if (known_hash is not None or defer) and all(p.exists() for p in base):
        _hash(suite, base, digest)
        if suite.files_hash == known_hash or suite.base_hash == known_base:
            suite.loaded, suite.reviews_only = False, suite.files_hash != known_hash
            return suite
        if defer:
            _load_judges(suite, problems)
            suite.loaded, suite.deferred = False, True
            return suite
    chunks_path = folder / "chunks.jsonl"
    with gc_paused():
        _load_documents(suite, folder / "documents.jsonl", problems)
        if chunks_path.exists():
            suite.chunks = load_chunks(chunks_path, suite, problems)
        elif unit == "chunk":
            problems.add("a passage-level suite (unit 'chunk') needs chunks.jsonl: its labels name those chunks",
                         path=str(chunks_path))
        _load_questions(suite, folder / "questions.jsonl", problems)
        if len(problems.items) == before:  # reviews are checked against a suite that reads cleanly
            suite.review = apply_reviews(suite, read_reviews(suite, problems), problems)
        _load_judges(suite, problems)
    if len(suite.documents) + len(suite.questions) + len(suite.chunks) >= _FREEZE_AT:
        gc.freeze()
    _hash(suite, base, digest)
    return suite


def _hash(suite: Suite, base: list[Path], digest: Digest) -> None:
    """Set the suite's `base_hash` (of its `base` files) and `files_hash` (with its review files')."""
    suite.base_hash = digest(base)
    suite.files_hash = suite_hash(suite.base_hash, digest(review_files(suite.folder)))


def _load_judges(suite: Suite, problems: Problems) -> None:
    """The suite's judges (`judges.toml`) and their cached answers (`judgements/<judge>.jsonl`); a cache
    file of a judge that is not declared is a problem (its answers would silently count for nothing)."""
    declared = suite.folder / JUDGES_FILE
    if declared.exists():
        try:
            suite.judges = load_judges(declared)
        except ValidationError as error:
            problems.items.extend(error.problems)
    folder = suite.folder / JUDGEMENTS
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        if path.stem not in suite.judges:
            problems.add(f"answers of a judge that {JUDGES_FILE} does not declare (judges: "
                         f"{', '.join(suite.judges) or 'none'}); declare it or remove the file", path=str(path))
            continue
        suite.judgements[path.stem] = read_cache(path, problems)


def load_chunks(path: Path, suite: Suite, problems: Problems, *, run_id: str | None = None,
                other_corpus: bool = False) -> dict[str, Chunk]:
    """Read and check a chunk map (the suite's, or run `run_id`'s own).

    Each chunk names a document of the suite and the version of it the chunk was cut from. That
    version must be the suite's (`Suite.doc_version`), except in a run whose manifest declares
    another corpus version (`other_corpus`: an index built from an older corpus)."""
    chunks: dict[str, Chunk] = {}
    for line, obj in iter_json_lines(path, problems):
        check = _Checker(problems, path, line)
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


# Each suite line is first tried on a fast path (`_clean_document`, `_clean_question`): set checks that
# accept only a line breaking no rule. Any other line gets the full field-by-field checks
# (`_checked_document`, `_checked_question`), which record every problem.

_STRING_TYPE = {str}
_INT_TYPE = {int}


def _load_documents(suite: Suite, path: Path, problems: Problems) -> None:
    """Fill `suite.documents` from documents.jsonl; the rules are `_checked_document`'s."""
    for line, obj in iter_json_lines(path, problems):
        document = _clean_document(obj, suite.documents)
        if document is None:
            document = _checked_document(obj, suite.documents, _Checker(problems, path, line))
        if document is not None:
            suite.documents[document.id] = document


def _checked_document(obj: dict[str, Any], known: dict[str, Document], check: _Checker) -> Document | None:
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


def _load_questions(suite: Suite, path: Path, problems: Problems) -> None:
    """Fill `suite.questions` from questions.jsonl, in file order; the rules are `_checked_question`'s."""
    add_questions(suite, path, iter_json_lines(path, problems), suite.chunks if suite.unit == "chunk"
                  else suite.documents, problems)


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
            check = _Checker(problems, path, line, qid if isinstance(qid, str) else None)
            question = _checked_question(obj, rules, check)
        if question is not None:
            suite.questions[question.id] = question


def _checked_question(obj: dict[str, Any], rules: _QuestionRules, check: _Checker) -> Question | None:
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
    text, qtype, split, critical, tags, caller, relevant, raw_support, raw_claims = (
        check.field(obj, QUESTION[name])
        for name in ("text", "type", "split", "critical", "tags", "caller", "relevant", "support", "claims"))

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

    support: dict[str, list[str]] = {}
    for claim, docs in (raw_support or {}).items():
        if not check.ident(claim, "support"):
            continue
        if UNLABELLED_CLAIM.fullmatch(claim):
            check.add("is reserved for the generated claim of an unlabelled answer sentence (unlabelled#<n>)",
                      "support", claim)
        listed = check.id_list(docs, f"support[{claim!r}]", MAX_CITATIONS)
        if docs == []:
            check.add("an expected claim needs at least one supporting document", f"support[{claim!r}]", docs)
        outside = [d for d in listed if d not in positive]
        if outside:
            check.add("supporting documents must be labelled relevant (grade > 0)", f"support[{claim!r}]", outside)
        support[claim] = listed
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
    disputed = check.field(obj, QUESTION["disputed"])
    return Question(qid, len(suite.questions), text or "", qtype or "", split or "", critical is True, tags or [],
                    caller, grades, support, propositions, disputed)


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
    if not (type(support) is dict and type(claims) is dict and _claim_ids_ok(support, rules.claim_ids)
            and all(map(_supporting_docs_ok, support.values(), repeat(positive)))
            and support.keys() >= claims.keys() and all(map(TEXT.python, claims.values()))):
        return None
    # The parsed line is not kept: its lists and maps are the question's own.
    get = obj.get
    return Question(obj["id"], len(rules.suite.questions), obj["text"], obj["type"], obj["split"], get("critical", False),
                    get("tags", []), get("caller"), grades, support, claims, get("disputed"))


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


# --- runs -------------------------------------------------------------------------------------


def load_run(folder: Path, suites: dict[str, Suite], problems: Problems,
             broken_suites: frozenset[str] = frozenset(), *, digest: Digest = files_hash) -> Run | None:
    """Read and check one run's manifest against its suite; records are checked in SQL later.

    A run of a suite in `broken_suites` (a folder whose suite.json has problems, already reported)
    is not loaded and not reported again."""
    found = Problems()
    try:
        return _load_run(folder, suites, found, broken_suites, digest)
    finally:
        if found:
            problems.extend(ValidationError(found.items))


def _load_run(folder: Path, suites: dict[str, Suite], problems: Problems,
              broken_suites: frozenset[str], digest: Digest) -> Run | None:
    """`load_run` with its own collector: a run with any problem is never returned (even past the
    workspace's problem limit), so no unchecked manifest value reaches staging."""
    path = folder / "manifest.json"
    before = len(problems.items)
    manifest_lines: dict[str, int] = {}
    manifest = read_json_file(path, problems, manifest_lines)
    jsonl, parquet = folder / "records.jsonl", folder / "records.parquet"
    records = [p for p in (jsonl, parquet) if p.exists()]
    if len(records) != 1:
        rule = "holds both records.jsonl and records.parquet" if records else "has no records.jsonl or records.parquet"
        problems.add(f"the run folder {rule}", path=str(folder))
    if manifest is None:
        return None
    check = _Checker(problems, path, None, lines=manifest_lines)
    check.unknown_keys(manifest, set(MANIFEST_REQUIRED) | set(MANIFEST_OPTIONAL))
    for key in MANIFEST_REQUIRED:
        if key not in manifest or manifest[key] is None:
            check.add("required manifest field is missing", key)
    for key in ("run_id", "suite", "suite_version", "corpus_version", "created_at", "code_revision",
                "prompt_revision", "model", "rubric_version"):
        if manifest.get(key) is not None and (not isinstance(manifest[key], str) or not manifest[key].strip()):
            check.add("expected a non-empty string", key, manifest[key])
    for key in ("retrieval", "generation"):
        if manifest.get(key) is not None and not isinstance(manifest[key], dict):
            check.add("expected an object of settings", key, manifest[key])
    if manifest.get("run_id") is not None and manifest["run_id"] != folder.name:
        check.add(f"must equal the folder name {folder.name!r}", "run_id", manifest["run_id"])
    k = manifest.get("k")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K):
        check.add(f"the context cutoff k is a whole number from 1 to {MAX_K}", "k", k)
    if manifest.get("group") is not None and (not isinstance(manifest["group"], str) or not manifest["group"].strip()):
        check.add("expected a non-empty string", "group", manifest["group"])
    repeat = manifest.get("repeat")
    if repeat is not None and (not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1):
        check.add("a repeat number is a whole number >= 1", "repeat", repeat)
    elif repeat is not None and repeat > MAX_REPEAT:
        check.add(f"a repeat number is at most {MAX_REPEAT}", "repeat", repeat)
    if manifest.get("notes") is not None and not isinstance(manifest["notes"], str):
        check.add("expected a string", "notes", manifest["notes"])
    if manifest.get("release") is not None and (not isinstance(manifest["release"], str)
                                                or not manifest["release"].strip()):
        check.add("expected a non-empty string naming the release", "release", manifest["release"])
    suite = suites.get(manifest.get("suite")) if isinstance(manifest.get("suite"), str) else None
    if suite is None and isinstance(manifest.get("suite"), str) and manifest["suite"] in broken_suites:
        return None
    if manifest.get("suite") is not None and suite is None and isinstance(manifest.get("suite"), str):
        check.add("is not a suite of this workspace", "suite", manifest["suite"])
    if suite is not None:
        # A run may declare another corpus_version (an index built from an older corpus): it is scored
        # against these labels, and the comparison guard refuses to set it beside runs on another corpus.
        for key, expected in (("suite_version", suite.version), ("rubric_version", suite.rubric_version)):
            if manifest.get(key) is not None and manifest[key] != expected:
                check.add(f"differs from suite {suite.name!r} ({key} {expected!r}); re-run against the current "
                          "suite or keep the older suite version in its own workspace", key, manifest[key])
    chunks_path = folder / "chunks.jsonl"
    chunks = None
    if chunks_path.exists() and suite is not None and not len(problems.items) > before:
        if suite.unit == "chunk":
            problems.add(f"suite {suite.name!r} is passage-level (unit 'chunk'): its labels name its own chunks, so "
                         "a run cannot bring another chunk map; score this run in a document-level suite",
                         path=str(chunks_path))
        else:
            chunks = load_chunks(chunks_path, suite, problems, run_id=folder.name,
                                 other_corpus=manifest.get("corpus_version") != suite.corpus_version)
    if len(problems.items) > before:
        return None
    hashed = [path, records[0]] + ([chunks_path] if chunks_path.exists() else [])
    return Run(folder.name, folder, manifest, records[0], digest(hashed), chunks)


def run_files(folder: Path) -> list[Path] | None:
    """The files whose bytes make a run's content hash; None when the folder holds not exactly one
    records file (a problem `load_run` reports)."""
    records = [p for p in (folder / "records.jsonl", folder / "records.parquet") if p.exists()]
    chunks = folder / "chunks.jsonl"
    return [folder / "manifest.json", *records] + ([chunks] if chunks.exists() else []) if len(records) == 1 else None


def discover(root: Path, problems: Problems) -> tuple[list[Path], list[Path]]:
    """Suite and run folders of a workspace, sorted by name."""
    if not root.is_dir():
        problems.add("the workspace folder does not exist", path=str(root))
        return [], []
    suite_dirs = sorted(p for p in (root / "suites").iterdir() if p.is_dir()) if (root / "suites").is_dir() else []
    run_dirs = sorted(p for p in (root / "runs").iterdir() if p.is_dir()) if (root / "runs").is_dir() else []
    if not suite_dirs:
        problems.add("a workspace needs suites/<suite>/ folders", path=str(root / "suites"))
    for folder in [*suite_dirs, *run_dirs]:
        if not FOLDER_NAME.fullmatch(folder.name):
            problems.add("a suite or run folder name is 1-64 of letters, digits, '.', '_', '-'", path=str(folder))
    return suite_dirs, run_dirs


def load_workspace(root: Path, problems: Problems, *, stored: dict[str, tuple[str, str]] | None = None,
                   runs: bool = True, defer: bool = False) -> Workspace:
    """Every suite and run manifest of a workspace, checked (the suites only, without `runs`);
    records are staged separately.

    `stored` maps suite -> (content hash, base hash) already held by a database: a suite with either
    hash equal is not parsed again (`load_suite`), unless a run brings its own chunk map (which is
    checked against the suite's documents). With `defer`, every other suite whose documents no run's
    chunk map needs is read no further than suite.json (`Suite.deferred`)."""
    suite_dirs, run_dirs = discover(root, problems)
    if not runs:
        run_dirs = []
    stored = dict(stored or {})
    mapped: set[Any] = set()  # suites a run brings its own chunk map for
    for folder in run_dirs:
        if (folder / "chunks.jsonl").exists():
            try:
                mapped.add(json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("suite"))
            except (OSError, ValueError, AttributeError, TypeError):
                pass
    for name in mapped:
        stored.pop(name, None)
    suites: dict[str, Suite] = {}
    found: dict[str, Run] = {}
    file_sets = [paths for folder in suite_dirs for paths in (base_files(folder), review_files(folder))] + [
        run_files(folder) for folder in run_dirs]
    with hashing_ahead([paths for paths in file_sets if paths is not None]) as digest:
        for folder in suite_dirs:
            known, base = stored.get(folder.name, (None, None))
            suite = load_suite(folder, problems, known_hash=known, known_base=base, digest=digest,
                               defer=defer and folder.name not in mapped)
            if suite is not None:
                suites[suite.name] = suite
        broken = frozenset(folder.name for folder in suite_dirs) - set(suites)
        for folder in run_dirs:
            run = load_run(folder, suites, problems, broken, digest=digest)
            if run is not None:
                found[run.run_id] = run
    return Workspace(root, suites, found)


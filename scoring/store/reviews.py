"""Reviewer decisions: label corrections and disputes kept as files beside the suite, applied on top of
its labels, never written into them.

One file per reviewer, so reviewers working on copies of a workspace never conflict::

    suites/<suite>/reviews/<reviewer>.jsonl

One decision a line (docs/formats.md, Reviews)::

    {"at": "2026-11-30T14:02:11Z", "reviewer": "ana", "kind": "relevance", "question_id": "q-0030",
     "doc_id": "pol-0008", "grade": 0, "note": "superseded by pol-0007"}
    {"at": "...", "reviewer": "ana", "kind": "support", "question_id": "q-0030", "claim_id": "tier1-reviewers",
     "doc_id": "pol-0007", "supports": true}
    {"at": "...", "reviewer": "ana", "kind": "support", "question_id": "q-0030", "claim_id": "tier1-reviewers",
     "doc_id": "pol-0002", "supports": "partial"}
    {"at": "...", "reviewer": "ben", "kind": "dispute", "question_id": "q-0041", "note": "two answers fit"}
    {"at": "...", "reviewer": "ana", "kind": "alignment", "question_id": "q-0030",
     "sentence": "Two reviewers approve a tier-1 deploy.", "claim_ids": ["tier1-reviewers"]}

The rules of applying them (`apply_reviews`):

- a decision is about one label: the grade of (question, document), or how far a document supports an
  expected claim (question, claim, document): `supports` true or "full", "partial", false or "none"; a
  dispute is about a question;
- each reviewer's latest decision on a label wins over their earlier ones (by `at`, then file order);
- when the latest decisions of two reviewers on one label differ, the label is disputed: it keeps the
  suite's value and the question is marked disputed, naming the disagreement; it is never resolved
  silently;
- a `dispute` marks its question disputed, with the reviewer's note;
- an `alignment` decides which expected claims an answer sentence states (`claim_ids`), or that it
  states something the rubric does not hold (`"unlabelled"`) or nothing (`"no_claim"`): it serves every
  run that wrote the same sentence (normalised text) for the question, and changes no label;
- the labels that result must still be a valid suite (an expected claim needs a supporting document, full
  or partial, labelled relevant): a decision that breaks that is refused with its file and line.

Every review line is checked like any other input (file, line, field, rule); a refresh that finds a
problem writes nothing.
"""
from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Collection, Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ..errors import Problems, invalid
from ..metrics.registry import SUPPORT_GRADES
from ..metrics.alignment import canonical_outcome
from ..metrics.reference import normalise_sentence
from .files import FOLDER_NAME, MAX_GRADE, iter_json_lines
from .times import format_time, now, parse_time



class Suite(Protocol):
    """What reading and applying decisions needs of a suite (`scoring.store.workspace.Suite` has it): its
    name, folder and unit, its documents and chunks by ID, and its questions by ID (changed in place)."""

    name: str
    folder: Path
    unit: str
    documents: Mapping[str, Any]
    chunks: Mapping[str, Any]
    questions: dict[str, Any]

KINDS: tuple[str, ...] = ("relevance", "support", "dispute", "alignment")
KEYS: dict[str, tuple[str, ...]] = {
    "relevance": ("doc_id", "grade"),
    "support": ("claim_id", "doc_id", "supports"),
    "dispute": (),
    "alignment": ("sentence", "claim_ids"),
}
"""The fields each kind requires besides `at`, `reviewer`, `kind` and `question_id`."""
OPTIONAL = ("note", "sample")
"""`sample`: the review sample the decided item was drawn in (`scoring.store.samples`)."""
SUPPORTS: dict[Any, str] = {True: "full", False: "none", **{grade: grade for grade in SUPPORT_GRADES}}
"""A support decision's `supports` value -> its grade: true is "full", false is "none"."""
REVIEWS = "reviews"
"""The suite's folder of review files."""


@dataclass(frozen=True)
class Decision:
    """One review line, as checked."""

    path: str
    line: int
    at: datetime
    reviewer: str
    kind: str
    question_id: str
    doc_id: str | None = None
    claim_id: str | None = None
    grade: int | None = None
    supports: bool | str | None = None
    """As the line holds it: true, false, or a grade of `SUPPORT_GRADES` (`support_grade` reads either)."""
    note: str | None = None
    sentence: str | None = None
    """An alignment decision's answer sentence, as the reviewer wrote it (matched on its normalised text)."""
    claim_ids: tuple[str, ...] | str | None = None
    """An alignment decision's claim IDs (sorted), or "unlabelled" / "no_claim"."""
    sample: str | None = None
    """The review sample whose item this decides (`scoring.store.samples`): None for a review made outside
    a sample, which counts as a label, never as the sample's."""

    @property
    def label(self) -> tuple[str, ...]:
        """What the decision decides: (kind, question[, claim], document), (alignment, question, normalised
        sentence), or (dispute, question, path:line)."""
        if self.kind == "relevance":
            return ("relevance", self.question_id, str(self.doc_id))
        if self.kind == "support":
            return ("support", self.question_id, str(self.claim_id), str(self.doc_id))
        if self.kind == "alignment":
            return ("alignment", self.question_id, normalise_sentence(str(self.sentence)))
        return ("dispute", self.question_id, f"{self.path}:{self.line}")

    @property
    def support_grade(self) -> str | None:
        """A support decision's grade: "full", "partial" or "none"; None for other kinds."""
        return None if self.kind != "support" else SUPPORTS[self.supports]

    @property
    def strictly_supports(self) -> bool | None:
        """Whether a support decision says the document fully supports the claim (the `reviews.supports`
        column: a partial decision is false there, "partial" in `support_grade`)."""
        return None if self.kind != "support" else self.support_grade == "full"

    @property
    def outcome(self) -> str | None:
        """An alignment decision's outcome: claims, unlabelled or no_claim."""
        if self.kind != "alignment":
            return None
        return self.claim_ids if isinstance(self.claim_ids, str) else "claims"

    @property
    def value(self) -> Any:
        if self.kind == "alignment":
            return canonical_outcome(str(self.outcome), self.claim_ids if isinstance(self.claim_ids, tuple) else ())
        if self.kind == "support":
            return _GRADE_VALUE[str(self.support_grade)]
        return self.grade if self.kind == "relevance" else self.note

    def as_json(self) -> dict[str, Any]:
        """The decision as its file line holds it."""
        out: dict[str, Any] = {"at": format_time(self.at), "reviewer": self.reviewer,
                               "kind": self.kind, "question_id": self.question_id}
        for name in ("doc_id", "claim_id", "grade", "supports", "sentence", "claim_ids", "note", "sample"):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out


def review_files(suite_folder: Path) -> list[Path]:
    """The suite's review files, by reviewer name."""
    folder = suite_folder / REVIEWS
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


@dataclass(frozen=True)
class Known:
    """What a decision is checked against: the suite's name, what its labels name (documents, or
    chunks in a passage-level suite), and each question's labels: its expected claims with their
    fully supporting documents (`claims`), its grades (`grades`, for the questions at hand) and its
    partly supporting documents (`partial`)."""

    suite: str
    units: Container[str]
    claims: Mapping[str, Mapping[str, Collection[str]]]
    unit: str = "document"
    grades: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    partial: Mapping[str, Mapping[str, Collection[str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, suite: Suite) -> Known:
        units = set(suite.chunks) if suite.unit == "chunk" else set(suite.documents)
        return cls.of_questions(suite.name, units, suite.questions.values(), suite.unit)

    @classmethod
    def of_questions(cls, suite: str, units: Container[str], questions: Iterable[Any], unit: str) -> Known:
        """What decisions on these questions (`suite_lines.Question`s, labels as they stand) are checked against."""
        questions = list(questions)
        return cls(suite, units, {q.id: q.support for q in questions}, unit, {q.id: q.grades for q in questions},
                   {q.id: q.partial for q in questions if q.partial})


def read_reviews(suite: Suite, problems: Problems, known: Known | None = None) -> list[Decision]:
    """Every decision of the suite's review files, checked against the suite, or what `known` says of it
    (problems recorded, the broken lines left out)."""

    known = known or Known.of(suite)
    out: list[Decision] = []
    for path in review_files(suite.folder):
        reviewer = path.stem
        if not FOLDER_NAME.fullmatch(reviewer):
            problems.add("a review file is named for its reviewer: letters, digits, '.', '_', '-' (at most 64)",
                         path=str(path))
            continue
        if path.stat().st_size == 0:
            continue
        for number, obj in iter_json_lines(path, problems):
            found = check_decision(obj, known, reviewer, str(path), number, problems)
            if found is not None:
                out.append(found)
    return out


def check_decision(obj: dict[str, Any], known: Known, reviewer: str, path: str, line: int,
                   problems: Problems) -> Decision | None:
    """One review line checked field by field (problems recorded with path and line); None when broken."""
    before = len(problems.items)
    question = obj.get("question_id") if isinstance(obj.get("question_id"), str) else None

    def add(rule: str, name: str | None, value: Any = ...) -> None:
        problems.add(rule, name, value, path=path, line=line, question=question)

    kind = obj.get("kind")
    if kind not in KINDS:
        add(f"expected one of {', '.join(KINDS)}", "kind", kind)
        return None
    allowed = {"at", "reviewer", "kind", "question_id", *KEYS[kind], *OPTIONAL}
    for key in obj:
        if key not in allowed and not key.startswith("x_"):
            add(f"unknown field for a {kind} decision (allowed: {', '.join(sorted(allowed))}; prefix extensions "
                "with x_)", key)
    at = parse_time(obj.get("at"))
    if at is None:
        add("expected an ISO-8601 time in UTC, such as 2026-11-30T14:02:11Z", "at", obj.get("at"))
    if obj.get("reviewer") != reviewer:
        add(f"must equal the file's reviewer {reviewer!r} (one file per reviewer)", "reviewer", obj.get("reviewer"))
    claims = known.claims.get(question) if question is not None else None
    if claims is None:
        add(f"is not a question of suite {known.suite!r}", "question_id", obj.get("question_id"))
    note = obj.get("note")
    if note is not None and (not isinstance(note, str) or not note.strip()):
        add("expected a non-empty string", "note", note)
    sample = obj.get("sample")
    if sample is not None and (not isinstance(sample, str) or not FOLDER_NAME.fullmatch(sample)):
        add("expected the name of a review sample (suites/<suite>/samples/<name>.jsonl)", "sample", sample)
    if sample is not None and kind == "dispute":
        add("a dispute is about a question, not a sampled item: leave sample out", "sample", sample)
    doc = obj.get("doc_id")
    if kind in ("relevance", "support") and (not isinstance(doc, str) or doc not in known.units):
        what = "a chunk" if known.unit == "chunk" else "a document"
        add(f"is not {what} of suite {known.suite!r}", "doc_id", doc)
    grade = obj.get("grade")
    if kind == "relevance" and (type(grade) is not int or not -MAX_GRADE <= grade <= MAX_GRADE):
        add(f"a grade is a whole number from {-MAX_GRADE} to {MAX_GRADE}", "grade", grade)
    claim = obj.get("claim_id")
    supports = obj.get("supports")
    if kind == "support":
        if claims is not None and claim not in claims:
            add(f"is not an expected claim of the question (its claims: {', '.join(claims) or 'none'})", "claim_id",
                claim)
        if type(supports) is not bool and (not isinstance(supports, str) or supports not in SUPPORT_GRADES):
            add(f"expected true or false, or a support grade ({', '.join(SUPPORT_GRADES)}; true is full, false "
                "is none)", "supports", supports)
    sentence, aligned = obj.get("sentence"), obj.get("claim_ids")
    if kind == "alignment":
        if not isinstance(sentence, str) or not sentence.strip():
            add("expected the answer sentence (a non-empty string)", "sentence", sentence)
        aligned = _check_claim_ids(aligned, claims, add)
    if len(problems.items) > before:
        return None
    return Decision(path, line, at, reviewer, kind, str(question), doc if kind in ("relevance", "support") else None,
                    claim if kind == "support" else None, grade if kind == "relevance" else None,
                    supports if kind == "support" else None, note, sentence if kind == "alignment" else None,
                    aligned if kind == "alignment" else None, sample)


def _check_claim_ids(value: Any, claims: Mapping[str, Any] | None, add: Any) -> tuple[str, ...] | str | None:
    """An alignment's `claim_ids`: a non-empty list of the question's expected claim IDs without repeats,
    or "unlabelled" / "no_claim"."""
    if value in ("unlabelled", "no_claim"):
        return str(value)
    if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
        add('expected a non-empty list of the question\'s claim IDs, "unlabelled" or "no_claim"', "claim_ids", value)
        return None
    if len(set(value)) < len(value):
        add("a claim ID appears twice", "claim_ids", value)
    if claims is not None:
        unknown = [c for c in value if c not in claims]
        if unknown:
            add(f"is not an expected claim of the question (its claims: {', '.join(claims) or 'none'})", "claim_ids",
                unknown[0] if len(unknown) == 1 else unknown)
    return tuple(sorted(value))


@dataclass(frozen=True)
class Change:
    """A label the reviews changed: its value in the suite's files and as reviewed."""

    question_id: str
    kind: str
    doc_id: str
    claim_id: str | None
    original: Any
    reviewed: Any
    reviewers: tuple[str, ...]


@dataclass(frozen=True)
class Disagreement:
    """A label whose reviewers' latest decisions differ: kept as the suite has it, and disputed."""

    question_id: str
    kind: str
    doc_id: str
    claim_id: str | None
    values: tuple[tuple[str, Any], ...]
    """(reviewer, value) of each reviewer's latest decision."""

    def describe(self) -> str:
        what = (f"the grade of {self.doc_id}" if self.kind == "relevance"
                else f"the alignment of the sentence {self.doc_id!r}" if self.kind == "alignment"
                else f"whether {self.doc_id} supports claim {self.claim_id}")
        shown = "; ".join(f"{reviewer}: {_shown(value)}" for reviewer, value in self.values)
        return f"reviewers disagree on {what} ({shown})"


_GRADE_VALUE: dict[str, Any] = {"full": True, "none": False, "partial": "partial"}
"""A support grade as a label's value (`Change.original` / `reviewed`, `Disagreement.values`): full and
none keep the binary labels' true and false, so a binary review reads and is stored as it always was."""


def _shown(value: Any) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def support_value(q: Any, claim: str, doc: str) -> Any:
    """How far `doc` supports expected claim `claim` of question `q` as a label's value: True (full),
    "partial" or False (none)."""
    if doc in q.support.get(claim, ()):
        return True
    return "partial" if doc in q.partial.get(claim, ()) else False


@dataclass
class Review:
    """What the decisions did to a suite's labels (`apply_reviews`)."""

    decisions: list[Decision] = field(default_factory=list)
    status: dict[tuple[str, int], str] = field(default_factory=dict)
    """(path, line) -> applied | superseded | disagreed | dispute."""
    changes: list[Change] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    disputes: dict[str, list[str]] = field(default_factory=dict)
    """question -> why it is disputed, in words (reviewers' disputes and disagreements)."""


def latest(decisions: Iterable[Decision]) -> dict[tuple[str, ...], dict[str, Decision]]:
    """label -> reviewer -> that reviewer's latest decision on it (by time, then file order)."""
    out: dict[tuple[str, ...], dict[str, Decision]] = {}
    for d in sorted(decisions, key=lambda d: (d.at, d.path, d.line)):
        out.setdefault(d.label, {})[d.reviewer] = d
    return out


def apply_reviews(suite: Suite, decisions: list[Decision], problems: Problems) -> Review:
    """Apply the decisions to the suite's questions in place (the rules in the module docstring);
    problems recorded for decisions whose result is no valid suite."""
    review = Review(decisions=list(decisions))
    for d in decisions:
        review.status[(d.path, d.line)] = "superseded"
    for label, by_reviewer in latest(decisions).items():
        kind, question_id = label[0], label[1]
        q = suite.questions[question_id]
        chosen = list(by_reviewer.values())
        if kind == "dispute":
            for d in chosen:
                review.status[(d.path, d.line)] = "dispute"
                review.disputes.setdefault(question_id, []).append(f"{d.reviewer}: {d.note or 'disputed'}")
            continue
        values = {d.value for d in chosen}
        if len(values) > 1:
            for d in chosen:
                review.status[(d.path, d.line)] = "disagreed"
            doc, claim = (label[2], None) if kind in ("relevance", "alignment") else (label[3], label[2])
            disagreement = Disagreement(question_id, kind, doc, claim,
                                        tuple(sorted((d.reviewer, d.value) for d in chosen)))
            review.disagreements.append(disagreement)
            review.disputes.setdefault(question_id, []).append(disagreement.describe())
            continue
        value = values.pop()
        for d in chosen:
            review.status[(d.path, d.line)] = "applied"
        reviewers = tuple(sorted(by_reviewer))
        if kind == "alignment":
            continue  # applied to answer sentences at scoring (`scoring.store.alignment`), not to the labels
        if kind == "relevance":
            doc = label[2]
            original = q.grades.get(doc)
            if original != value:
                q.grades = {**q.grades, doc: value}
                review.changes.append(Change(question_id, kind, doc, None, original, value, reviewers))
        else:
            claim, doc = label[2], label[3]
            original = support_value(q, claim, doc)
            if original != value:
                full = [x for x in q.support[claim] if x != doc]
                partly = [x for x in q.partial.get(claim, []) if x != doc]
                q.support = {**q.support, claim: [*full, doc] if value is True else full}
                partly = [*partly, doc] if value == "partial" else partly
                q.partial = {c: d for c, d in {**q.partial, claim: partly}.items() if d}
                review.changes.append(Change(question_id, kind, doc, claim, original, value, reviewers))
    _check_reviewed(suite, review, problems)
    for question_id, notes in review.disputes.items():
        q = suite.questions[question_id]
        q.disputed = "; ".join([*([q.disputed] if q.disputed else []), *notes])
    return review


def _check_reviewed(suite: Suite, review: Review, problems: Problems) -> None:
    """The reviewed labels of each changed question must still be a valid suite."""
    last = {}
    for d in review.decisions:
        if review.status.get((d.path, d.line)) == "applied":
            last[(d.question_id, d.kind, d.doc_id, d.claim_id)] = d
    for change in review.changes:
        q = suite.questions[change.question_id]
        d = last[(change.question_id, change.kind, change.doc_id, change.claim_id)]
        positive = {doc for doc, grade in q.grades.items() if grade > 0}
        where = {"path": d.path, "line": d.line, "question": d.question_id}
        if change.kind == "support" and change.reviewed and change.doc_id not in positive:
            problems.add(f"{change.doc_id} is not labelled relevant for the question (grade > 0): a supporting "
                         "document must be; decide its grade first", "supports", d.supports, **where)
        if change.kind == "support" and not q.support[str(change.claim_id)] and not q.partial.get(str(change.claim_id)):
            problems.add(f"claim {change.claim_id} would have no supporting document left; an expected claim "
                         "needs one (full or partial)", "supports", d.supports, **where)
        if change.kind == "relevance" and change.reviewed <= 0:
            for claim, docs in q.support.items():
                if change.doc_id in [*docs, *q.partial.get(claim, [])]:
                    problems.add(f"{change.doc_id} supports expected claim {claim}: it must stay relevant "
                                 "(grade > 0); decide that it does not support the claim first", "grade",
                                 change.reviewed, **where)


LABELS_HASH_SQL = """
SELECT sha256(concat_ws(':', ?::VARCHAR,
  (SELECT coalesce(sum(hash(question_id, doc_id, grade)), 0) FROM labels WHERE suite = ?)::VARCHAR,
  (SELECT coalesce(sum(hash(question_id, claim_id, list_sort(docs))::HUGEINT
                        + CASE WHEN len(partial_docs) > 0
                               THEN hash('partial', question_id, claim_id, list_sort(partial_docs))::HUGEINT
                               ELSE 0 END), 0)
   FROM expected_claims WHERE suite = ?)::VARCHAR,
  (SELECT coalesce(sum(hash('assessed', question_id, claim_id, list_sort(docs), list_sort(partial_docs))::HUGEINT),
                   0) FROM assessed_claims WHERE suite = ?)::VARCHAR))
"""
"""A hash of a suite's effective labels (grades and supporting documents, reviews applied), over the
rows of `labels`, `expected_claims` and `assessed_claims` in any order: it changes exactly when a label
does (a partly supporting document adds a term of its own, and assessed claims a sum of their own, 0
without any). Bind the suite four times."""


def record_decision(suite_folder: Path, known: Known, fields: dict[str, Any]) -> Decision:
    """Check one new decision (`fields`: as a review line holds them, `at` and the reviewer's file
    added here) against the suite and against the labels it would leave, then append it durably.
    ValidationError, nothing written, when it breaks a rule."""
    reviewer = str(fields.get("reviewer"))
    path = suite_folder / REVIEWS / f"{reviewer}.jsonl"
    obj = {"at": now(), **{k: v for k, v in fields.items() if v is not None}}
    problems = Problems()
    decision = check_decision(obj, known, reviewer, str(path), 0, problems)
    if decision is not None:
        for rule, name in result_problems(decision, known):
            problems.add(rule, name, decision.value, path=str(path), question=decision.question_id)
    problems.raise_if_any()
    assert decision is not None
    append_decision(suite_folder, decision.as_json())
    return decision


def result_problems(d: Decision, known: Known) -> list[tuple[str, str]]:
    """(rule, field) for what the decision would break in its question's current labels, were it applied."""
    grades = known.grades.get(d.question_id, {})
    support = known.claims.get(d.question_id, {})
    partial = known.partial.get(d.question_id, {})
    out = []
    backs = d.support_grade in ("full", "partial")
    if d.kind == "support" and backs and grades.get(str(d.doc_id), 0) <= 0:
        out.append((f"{d.doc_id} is not labelled relevant for the question (grade > 0): a supporting document "
                    "must be; decide its grade first", "supports"))
    if (d.kind == "support" and not backs
            and {*support.get(str(d.claim_id), ()), *partial.get(str(d.claim_id), ())} <= {d.doc_id}):
        out.append((f"claim {d.claim_id} would have no supporting document left; an expected claim needs one (full "
                    "or partial)", "supports"))
    if d.kind == "relevance" and d.grade is not None and d.grade <= 0:
        for claim in support:
            if d.doc_id in [*support[claim], *partial.get(claim, ())]:
                out.append((f"{d.doc_id} supports expected claim {claim}: it must stay relevant (grade > 0); decide "
                            "that it does not support the claim first", "grade"))
    return out


def append_decision(suite_folder: Path, decision: dict[str, Any]) -> Path:
    """Append one decision to its reviewer's file, durably (the line is flushed and fsynced under an
    exclusive lock before this returns), creating the folder and file when needed."""
    reviewer = decision.get("reviewer")

    if not isinstance(reviewer, str) or not FOLDER_NAME.fullmatch(reviewer):
        raise invalid("a reviewer name is 1-64 of letters, digits, '.', '_', '-'", "reviewer", reviewer)
    folder = suite_folder / REVIEWS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{reviewer}.jsonl"
    line = (json.dumps(decision, ensure_ascii=False) + "\n").encode("utf-8")
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            size = os.fstat(handle).st_size
            if size:  # a line cut short by a crash is closed, so this one starts a line of its own
                with open(path, "rb") as reader:
                    reader.seek(size - 1)
                    if reader.read(1) != b"\n":
                        os.write(handle, b"\n")
            os.write(handle, line)
            os.fsync(handle)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)
    return path


__all__ = ["KINDS", "LABELS_HASH_SQL", "REVIEWS", "SUPPORTS", "Change", "Decision", "Disagreement", "Known", "Review",
           "append_decision", "apply_reviews", "check_decision", "latest", "read_reviews",
           "record_decision", "result_problems", "review_files"]

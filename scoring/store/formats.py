"""The line formats of a workspace, declared once: a suite's documents.jsonl, chunks.jsonl and
questions.jsonl, and a run's records.jsonl (with its claims and answer sentences), field by field
(docs/formats.md says the same in words).

A field (`Field`) has a name, a kind of value (`Kind`: its JSON types, how DuckDB reads it, and the
test of a value beyond its type, in Python and in SQL), the problem of a value not of that kind, and
whether it is required (the problem of its absence), what null means (absence, or a wrong value),
its bounds (`Bound`) and, for an ID, the file it refers to. Every path that checks a line takes its
checks from here:

- the Python reader (`scoring.store.workspace`): `Format.fits` decides a clean line at once, and
  `_Checker.field` names the problem of each field of any other line;
- the set-based suite reader (`scoring.store.suite_bulk`): one SQL condition per field, over the
  JSON types and typed values of each line;
- the rule-by-rule record checks (`scoring.store.records`): one SQL rule per field (missing, of the
  wrong kind, beyond a bound), each naming file, line, field and rule;
- the bulk record path (`scoring.store.bulk`): the typed record (`Format.structure`), the JSON
  shapes a line may have (`Format.shape_ok`) and aggregate checks of the values.

Rules across lines and files (an ID once per file, a reference to another file, an item once per
list, a citation by index) are each path's own; each says which declared field it completes.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .files import ID_PATTERN, WHITESPACE, WORKSPACE_ID

MAX_RETRIEVED = 1000
"""A record's ranking may hold up to 1000 documents (TREC runs rank 1000)."""
MAX_CITATIONS = 100
"""A claim or an answer sentence cites at most 100 documents; an expected claim has at most 100."""
MAX_LABELS = 10_000
"""A question labels at most 10,000 documents."""
MAX_OFFSET = 2**63 - 1
"""The largest character offset a chunk may give (`chunks.start_offset` and `end_offset` are BIGINT)."""
HELDOUT = "heldout"
"""The split whose questions are held out: every comparison on it is logged against a budget."""
SPLITS = ("dev", HELDOUT)
MAX_CLAIMS_OF_SUITE = "max_claims"
"""A bound given by the suite (suite.json `max_claims`), not by the format."""

ID_RULE = "an ID is 1-128 characters with no whitespace or control characters"
NON_EMPTY = "expected a non-empty string"
REQUIRED = "required field is missing"
RULE = "the field's rule"
"""`Field.missing` of a field whose absence breaks its `rule`, shown with the value None."""


def nonblank_sql(text: str) -> str:
    """SQL: the string `text` holds more than whitespace (`files.WHITESPACE`, what `str.strip()`
    removes); NULL does not."""
    return f"coalesce(regexp_matches({text}, '[^{WHITESPACE}]'), false)"


def _nonblank(value: Any) -> bool:
    return type(value) is str and bool(value.strip())


@dataclass(frozen=True)
class Kind:
    """What a value may be, null aside (null is the field's business, `Field.null_absent`).

    `types`: its JSON types, as DuckDB's `json_type` names them; `cast`: how `json_transform` reads
    it (a JSON-able type: "VARCHAR", ["VARCHAR"], "JSON" keeps it a JSON value); `python`: whether a
    parsed value is of this kind (type and value); `sql`: SQL over a value of `types` read as `cast`,
    true when it is of this kind (None: every such value is); `rule`: the problem of a value of
    `types` that fails `sql`, when it is not the field's own (an ID's); `items`: a list's items (a
    kind, or the format of objects); `refused`: values of its types it refuses (the tests try them)."""

    name: str
    types: tuple[str, ...]
    cast: Any
    python: Callable[[Any], bool]
    sql: Callable[[str], str] | None = None
    rule: str | None = None
    items: Kind | Format | None = None
    refused: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Bound:
    """The most a field may hold: items of a list (`size`) or its value; `most` a number, or
    `MAX_CLAIMS_OF_SUITE`. `rule`: the problem (records name a suite's bound `{claim_bound}`)."""

    most: int | str
    rule: str
    size: bool = True


@dataclass(frozen=True)
class Field:
    """One field of a line format.

    `rule`: the problem of a value not of its `kind`. `missing`: None for an optional field, else the
    problem of its absence (`RULE`: the absence breaks `rule`, shown as None). `null_absent`: null reads
    as absence (else null is a value, not of its kind). `unless`: a required field may be absent
    when this other field is present. `refers`: what an ID names in another file (checked against it
    by each path; its IDs passed the ID rule there). `shows`: "object" when a problem of its absence
    or kind shows the whole object rather than the value (a claim without an ID)."""

    name: str
    kind: Kind
    rule: str
    missing: str | None = None
    null_absent: bool = True
    bounds: tuple[Bound, ...] = ()
    unless: str | None = None
    refers: str | None = None
    shows: str = "value"

    def fits(self) -> Callable[[Any], bool]:
        """Python: whether a present value (null included) breaks no rule of this field."""
        test = self.kind.python
        most = [b.most for b in self.bounds if not b.size]
        if most:
            plain, limit = test, min(most)
            test = lambda v: plain(v) and v <= limit  # noqa: E731
        if self.missing is None and self.null_absent:
            inner = test
            return lambda v: v is None or inner(v)
        return test


@dataclass(frozen=True)
class Format:
    """The fields of one kind of JSON object (a line, or an object in a list of a line), in the order
    they are checked. Any other key is an error unless it starts with `x_`; no key twice."""

    name: str
    fields: tuple[Field, ...]
    _tests: dict[str, Callable[[Any], bool]] = field(init=False, repr=False, compare=False)
    _required: frozenset[str] = field(init=False, repr=False, compare=False)
    _unless: tuple[tuple[str, str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_tests", {f.name: f.fits() for f in self.fields})
        object.__setattr__(self, "_required", frozenset(f.name for f in self.fields if f.missing and not f.unless))
        object.__setattr__(self, "_unless", tuple((f.name, f.unless) for f in self.fields if f.missing and f.unless))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def __getitem__(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def fits(self, obj: dict[str, Any]) -> bool:
        """Python: whether an object breaks no rule of its fields (`x_` extensions aside: a line with one
        is left to the field-by-field checks). Rules across fields and lines are the caller's."""
        tests = self._tests
        for key, value in obj.items():
            test = tests.get(key)
            if test is None or not test(value):
                return False
        if not obj.keys() >= self._required:
            return False
        return all(name in obj or other in obj for name, other in self._unless) if self._unless else True

    def casts(self) -> dict[str, Any]:
        """How `json_transform` reads an object of this format: field -> type."""
        return {f.name: f.kind.cast for f in self.fields}

    def structure(self) -> str:
        """`casts` as a `json_transform` structure."""
        return json.dumps(self.casts())

    def shape_ok(self, shape: Any) -> bool:
        """Whether a `json_structure` shape of such an object fits the format (JSON types only: the values
        are checked in SQL). Every key known (or an `x_` extension), every required key present, every
        value of an allowed type. Elements of a list share one shape, so a key missing from one of
        them, or a null element, shows in the values only."""
        if not isinstance(shape, dict) or any(name not in shape for name in self._required):
            return False
        if any(f.unless and f.name not in shape and f.unless not in shape for f in self.fields):
            return False
        fields = {f.name: f for f in self.fields}
        for key, value in shape.items():
            if key.startswith("x_"):
                continue
            f = fields.get(key)
            if f is None or not _value_shape_ok(f, value):
                return False
        return True


def _value_shape_ok(f: Field, shape: Any) -> bool:
    if f.null_absent and shape == "NULL":
        return True
    items = f.kind.items
    if items is None:
        return isinstance(shape, str) and shape in f.kind.types
    if not (isinstance(shape, list) and len(shape) == 1):
        return False
    if shape[0] == "NULL":  # an empty list (or one of nulls, refused by the values)
        return True
    if isinstance(items, Format):
        return items.shape_ok(shape[0])
    mixed = ("JSON",) if len(items.types) > 1 else ()  # a list of items of two types
    return isinstance(shape[0], str) and shape[0] in items.types + mixed


# --- kinds of values ---------------------------------------------------------------------------

ID = Kind("ID", ("VARCHAR",), "VARCHAR", lambda v: type(v) is str and WORKSPACE_ID.fullmatch(v) is not None,
          lambda v: f"regexp_full_match({v}, '{ID_PATTERN}')", ID_RULE,
          refused=("a b", "", "x" * 129, "a\u3000b", "a\x85b"))
"""A workspace ID (`files.ID_PATTERN`)."""
TEXT = Kind("text", ("VARCHAR",), "VARCHAR", _nonblank, nonblank_sql, refused=(" ", "\u00a0", "\t"))
"""A string with more than whitespace."""
STRING = Kind("string", ("VARCHAR",), "VARCHAR", lambda v: type(v) is str)
FLAG = Kind("flag", ("BOOLEAN",), "BOOLEAN", lambda v: v is True or v is False)
OFFSET = Kind("offset", ("UBIGINT",), "BIGINT", lambda v: type(v) is int and v >= 0, refused=(-1,))
"""A whole number >= 0 (a negative one is a BIGINT to DuckDB)."""
NUMBER = Kind("number", ("UBIGINT", "BIGINT", "DOUBLE"), "DOUBLE",
              lambda v: type(v) in (int, float) and math.isfinite(v) and v >= 0,
              lambda v: f"isfinite({v}) AND {v} >= 0", refused=(-1, -0.5))
"""A finite number >= 0."""
CITED = Kind("ID or index", ("VARCHAR", "UBIGINT", "BIGINT"), "JSON", lambda v: type(v) in (str, int),
             lambda v: f"json_type({v}) IN ('VARCHAR', 'UBIGINT', 'BIGINT')")
"""What an answer sentence cites: an ID, or a 0-based index into the record's `retrieved`."""
MAP = Kind("map", ("OBJECT",), "JSON", lambda v: type(v) is dict)
LABELS = Kind("labels", ("ARRAY", "OBJECT"), "JSON", lambda v: type(v) in (list, dict))
"""A question's labels: a list of IDs (grade 1 each) or a map ID -> grade (`MAX_LABELS`, `files.MAX_GRADE`)."""


def one_of(*choices: str) -> Kind:
    return Kind(" or ".join(choices), ("VARCHAR",), "VARCHAR", lambda v: v in choices,
                lambda v: f"list_contains({list(choices)!r}, {v})", refused=("test",))


def list_of(items: Kind | Format, *, cast: Any = None) -> Kind:
    """A list of `items` (values of a kind, or objects of a format); `cast`: how DuckDB reads the list
    (by default, a list of its items as they are read)."""
    if isinstance(items, Format):
        return Kind(f"list of {items.name}", ("ARRAY",), [items.casts()], lambda v: type(v) is list, items=items)
    test = items.python
    return Kind(f"list of {items.name}", ("ARRAY",), [items.cast] if cast is None else cast,
                lambda v: type(v) is list and all(map(test, v)), items=items,
                refused=tuple([value] for value in items.refused[:1]))


NAMES = list_of(TEXT, cast="JSON")
"""A list of names (groups, tags): each a string with more than whitespace."""


# --- a suite -------------------------------------------------------------------------------------

DOCUMENT = Format("document", (
    Field("id", ID, ID_RULE, RULE),
    Field("text", TEXT, NON_EMPTY, REQUIRED),
    Field("version", TEXT, NON_EMPTY),
    Field("title", STRING, NON_EMPTY),
    Field("access", NAMES, "expected a list of group names"),
))
"""documents.jsonl: an ID once per file (`duplicate document ID`)."""

OFFSET_RULE = "a character offset is a whole number >= 0"
_OFFSET_BOUND = (Bound(MAX_OFFSET, f"a character offset is at most {MAX_OFFSET} (a 64-bit whole number)", size=False),)

CHUNK = Format("chunk", (
    Field("id", ID, ID_RULE, RULE),
    Field("doc", ID, ID_RULE, "required field is missing (the document this chunk was cut from)",
          refers="a document of the suite"),
    Field("doc_version", TEXT, NON_EMPTY, REQUIRED),
    Field("text", STRING, NON_EMPTY),
    Field("start", OFFSET, OFFSET_RULE, bounds=_OFFSET_BOUND),
    Field("end", OFFSET, OFFSET_RULE, bounds=_OFFSET_BOUND),
))
"""chunks.jsonl: an ID once per file and no document's; `doc_version` the suite's version of `doc`
(unless a run declares another corpus); `end` not before `start`."""

QUESTION = Format("question", (
    Field("id", ID, ID_RULE, RULE),
    Field("text", TEXT, NON_EMPTY, REQUIRED),
    Field("type", TEXT, NON_EMPTY, REQUIRED),
    Field("split", one_of(*SPLITS), "expected 'dev' or 'heldout'", RULE),
    Field("critical", FLAG, "expected true or false", null_absent=False),
    Field("tags", NAMES, "expected a list of tag strings", null_absent=False),
    Field("caller", NAMES, "expected a list of group names"),
    Field("relevant", LABELS, "expected a list of document IDs or a map document ID -> grade",
          "required field is missing (use [] for an unanswerable question)",
          refers="a document (or chunk) of the suite"),
    Field("support", MAP, "expected a map claim ID -> supporting document IDs", null_absent=False),
    Field("claims", MAP, "expected a map claim ID -> proposition", null_absent=False),
    Field("disputed", TEXT, NON_EMPTY),
    Field("cluster", TEXT, NON_EMPTY),
    Field("assessed", MAP, "expected a map claim ID -> the documents judged for it (a list, or a map document "
          "-> support grade)", null_absent=False),
))
"""questions.jsonl: an ID once per file. The labels of `relevant` (at most `MAX_LABELS`, each ID once,
each grade a whole number within `files.MAX_GRADE`), the expected claims of `support` (claim ID ->
1 to `MAX_CITATIONS` documents, each labelled relevant; or a map document -> support grade, "full",
"partial" or "none", at least one at "partial" or above) and the propositions of `claims` (each a
non-empty string, for an expected claim) are checked by each path on its own. `cluster` names the
group of questions written from one source (a runbook, a policy): questions of a cluster move together,
and clustered statistics resample whole clusters (`scoring.decide.clusters`). `assessed`: claims some
run made whose support was judged (TREC RAG support assessments), in the form of `support` but not
expected: Support counts them, Coverage does not; read by the line reader only."""

# --- a run -------------------------------------------------------------------------------------------

CLAIM_ID_RULE = "required field is missing: every claim needs a string 'id'"
CLAIM = Format("claim", (
    Field("id", ID, CLAIM_ID_RULE, CLAIM_ID_RULE, null_absent=False, shows="object"),
    Field("citations", list_of(ID), "expected a list of document IDs (use [] for none)",
          "expected a list of document IDs (use [] for none)", null_absent=False,
          bounds=(Bound(MAX_CITATIONS, f"a claim cites at most {MAX_CITATIONS} documents"),)),
    Field("text", STRING, "expected a string or null"),
))
"""A record's claim: an ID once per answer, a document once per claim (any ID: a citation outside the
suite is valid, and unsupported)."""

SENTENCE_TEXT_RULE = "required: a non-empty string"
SENTENCE_CITATIONS_RULE = ("expected a list of document or chunk IDs, or 0-based indexes into retrieved "
                           "(use [] for none)")
SENTENCE = Format("sentence", (
    Field("text", TEXT, SENTENCE_TEXT_RULE, SENTENCE_TEXT_RULE, null_absent=False),
    Field("citations", list_of(CITED), SENTENCE_CITATIONS_RULE, SENTENCE_CITATIONS_RULE, null_absent=False,
          bounds=(Bound(MAX_CITATIONS, f"a sentence cites at most {MAX_CITATIONS} documents"),)),
))
"""A record's answer sentence: each index within the record's `retrieved`, each document once."""

RECORD = Format("record", (
    Field("question_id", ID, "expected a string ID", REQUIRED, null_absent=False, refers="a question of the suite"),
    Field("retrieved", list_of(ID), "expected a list of document IDs", REQUIRED, null_absent=False,
          bounds=(Bound(MAX_RETRIEVED, f"a ranking holds at most {MAX_RETRIEVED} documents"),),
          refers="a document of the suite or a chunk of the run's chunk map"),
    Field("context", STRING, "expected a string or null"),
    Field("answer", STRING, "expected a string or null"),
    Field("claims", list_of(CLAIM), 'expected a list of {"id", "citations", "text"} objects',
          "required field is missing (a record needs claims, answer_sentences or both)", null_absent=False,
          bounds=(Bound(MAX_CLAIMS_OF_SUITE, "an answer holds at most {claim_bound} claims"),),
          unless="answer_sentences"),
    Field("answer_sentences", list_of(SENTENCE), 'expected a list of {"text", "citations"} objects', null_absent=False,
          bounds=(Bound(MAX_CLAIMS_OF_SUITE,
                        "an answer holds at most {claim_bound} sentences (each may become a claim)"),)),
    Field("latency_ms", NUMBER, "expected a finite number >= 0 or null"),
    Field("cost_usd", NUMBER, "expected a finite number >= 0 or null"),
    Field("error", STRING, "expected null or a message string"),
))
"""records.jsonl (and records.parquet): a question once per run; a retrieved ID once per ranking."""

# --- a review sample -------------------------------------------------------------------------------

SAMPLE_UNITS = ("sentence", "document", "question")
"""What a review sample draws: answer sentences resting on an automatic alignment, (question, document)
pairs the runs ranked within their k, or (run, question) answers one or more of whose sentences rest on an
automatic alignment."""
SAMPLE_STRATA = ("type", "answerable", "run")
"""What a sample may be stratified by: the question's type, whether it is answerable, the run."""
PROBABILITY = Kind("probability", ("UBIGINT", "BIGINT", "DOUBLE"), "DOUBLE",
                   lambda v: type(v) in (int, float) and math.isfinite(v) and 0 < v <= 1,
                   lambda v: f"isfinite({v}) AND {v} > 0 AND {v} <= 1", refused=(0, 1.5, -0.1))
"""A probability above 0 and at most 1 (an item's inclusion probability)."""
COUNT = Kind("count", ("UBIGINT",), "BIGINT", lambda v: type(v) is int and v >= 1, refused=(0, -1))
"""A whole number >= 1."""
INDEX = OFFSET
"""A whole number >= 0."""

SAMPLE_DRAW = Format("sample draw", (
    Field("kind", one_of("draw"), "expected 'draw' (the first line of a sample file)", REQUIRED),
    Field("name", ID, ID_RULE, REQUIRED),
    Field("unit", one_of(*SAMPLE_UNITS), "expected 'sentence', 'document' or 'question'", REQUIRED),
    Field("runs", list_of(ID), "expected a list of run IDs", REQUIRED, null_absent=False),
    Field("seed", INDEX, "expected a whole number >= 0", REQUIRED),
    Field("size", COUNT, "expected a whole number >= 1 (the items asked for)", REQUIRED),
    Field("strata", list_of(one_of(*SAMPLE_STRATA)), "expected a list of type, answerable, run ([] for none)",
          REQUIRED, null_absent=False),
    Field("drawn_at", TEXT, NON_EMPTY, REQUIRED),
    Field("population", INDEX, "expected a whole number >= 0 (the frame's items)", REQUIRED),
))
"""A sample file's first line: the draw (its seed, what it was stratified by, the frame's size)."""

SAMPLE_ITEM = Format("sample item", (
    Field("kind", one_of("item"), "expected 'item' (every line after the first)", REQUIRED),
    Field("position", COUNT, "expected a whole number >= 1 (the item's place in the review queue)", REQUIRED),
    Field("stratum", STRING, "expected the stratum's name (a string; '' without strata)", REQUIRED,
          null_absent=False),
    Field("population", COUNT, "expected a whole number >= 1 (the stratum's items in the frame)", REQUIRED),
    Field("drawn", COUNT, "expected a whole number >= 1 (the stratum's items drawn)", REQUIRED),
    Field("inclusion", PROBABILITY, "expected a probability above 0 and at most 1", REQUIRED),
    Field("run_id", ID, ID_RULE, REQUIRED, refers="a run of the draw"),
    Field("question_id", ID, ID_RULE, REQUIRED, refers="a question of the suite"),
    Field("sentence", INDEX, "expected a whole number >= 0 (the sentence's index in the answer)"),
    Field("text", TEXT, NON_EMPTY),
    Field("doc_id", ID, ID_RULE),
))
"""Each further line: one drawn item, in queue order (`position` 1, 2, ...): a sentence (`sentence`, `text`)
of a run's answer, or a ranked document (`doc_id`). `inclusion` is `drawn / population` of its stratum."""

"""Every validation rule of a workspace, each with the message it must print.

Each case breaks one thing in the valid workspace of `fixtures.build` and expects the exact
problem lines (paths relative to the workspace): file, line, question, field, value and rule.
The expected lines are written by hand from docs/formats.md and the rule texts; a rule added to
`scoring.store.records` without a case here fails `test_every_sql_rule_has_a_case`.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.store import records as records_module
from scoring.store import files as files_module
from scoring.store import suite_lines as suite_lines_module
from scoring.errors import Problem, Problems, ValidationError
from scoring.store.refresh import refresh, stage, write_suite
from scoring.store.schema import create_schema
from scoring.store.workspace import load_suite, load_workspace
from fixtures import (
    SUITE_META, D, M, Q, R, S,
    DOCUMENTS, RECORDS, append_line, build, drop_field, drop_key, edit_line, lines, manifest,
    replace_line, run_file, set_field, set_key, write_json, write_jsonl,
)

ID_RULE = "an ID is 1-128 characters with no whitespace or control characters"
BASE = "runs/base/records.jsonl"
CAND = "runs/cand/records.jsonl"
MANIFEST = "runs/base/manifest.json"
SUITE_JSON = "suites/demo/suite.json"
DOCS = "suites/demo/documents.jsonl"
QUESTIONS = "suites/demo/questions.jsonl"
UNKNOWN_RECORD = ("unknown field (allowed: question_id, retrieved, context, answer, claims, answer_sentences, latency_ms, cost_usd, "
                  "error; prefix extensions with x_)")
TWICE = "a key appears twice in one object (parsers disagree on which wins)"


def check(ws: Path) -> list[str]:
    """The problem lines a refresh of `ws` reports (suites, manifests and records), root stripped."""
    problems = Problems()
    workspace = load_workspace(ws, problems)
    con = duckdb.connect(config={"threads": 1})
    try:
        create_schema(con)
        for suite in workspace.suites.values():
            write_suite(con, suite)
        stage(con, list(workspace.runs.values()), problems)
    finally:
        con.close()
    try:
        problems.raise_if_any()
    except ValidationError as error:
        return [line.replace(f"{ws}/", "").replace(str(ws), "") for line in str(error).splitlines()]
    return []


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return build(tmp_path / "ws")


def claim(change: Callable[[dict], object]) -> Callable[[Path], object]:
    """Mutate the first claim of base line 1 (question q-1, claim 'monday')."""
    return lambda ws: edit_line(R(ws), 1, lambda obj: change(obj["claims"][0]))


def exact_line(path: Path, line: int, size: int, end: bytes = b"\n") -> None:
    """Pad the record on `line` (its answer) to exactly `size` bytes before the line end."""
    obj = json.loads(lines(path)[line - 1])
    obj["answer"] = ""
    obj["answer"] = "x" * (size - len(json.dumps(obj)))
    rows = lines(path)
    rows[line - 1] = json.dumps(obj).encode() + end
    path.write_bytes(b"".join(rows))


def test_the_valid_workspace_has_no_problem(ws):
    assert check(ws) == []


# --- records: LINE_RULES, RETRIEVED_RULES, CLAIM_RULES, CITATION_RULES --------------------------

Q1 = f"{BASE}:1: question 'q-1': "
MONDAY = f"{Q1}field 'claims[\"monday\"]"

RECORD_CASES: list[tuple[str, Callable[[Path], object], list[str]]] = [
    # LINE_RULES
    ("not valid JSON", lambda ws: replace_line(R(ws), 2, '{"question_id": "q-2",'),
     [f"{BASE}:2: not valid JSON"]),
    ("a comma before the closing brace", lambda ws: replace_line(R(ws), 2, lines(R(ws))[1].rstrip()[:-1] + b", }"),
     [f"{BASE}:2: not valid JSON"]),
    ("a comma before a closing bracket, in a string", lambda ws: set_field(R(ws), 2, "answer", "a, ] b, }"), []),
    ("expected a JSON object on each line", lambda ws: replace_line(R(ws), 2, '["q-2"]'),
     [f"{BASE}:2: expected a JSON object on each line"]),
    ("question_id missing", lambda ws: drop_field(R(ws), 2, "question_id"),
     [f"{BASE}:2: field 'question_id': required field is missing"]),
    ("question_id a number", lambda ws: set_field(R(ws), 2, "question_id", 7),
     [f"{BASE}:2: field 'question_id': 7: expected a string ID"]),
    ("question_id null", lambda ws: set_field(R(ws), 2, "question_id", None),
     [f"{BASE}:2: field 'question_id': None: expected a string ID"]),
    ("question_id malformed", lambda ws: set_field(R(ws), 2, "question_id", "q 2"),
     [f"{BASE}:2: question 'q 2': field 'question_id': 'q 2': {ID_RULE}"]),
    ("question_id unknown", lambda ws: set_field(R(ws), 2, "question_id", "q-99"),
     [f"{BASE}:2: question 'q-99': field 'question_id': 'q-99' is not a question of suite 'demo'"]),
    ("record duplicated", lambda ws: append_line(R(ws), RECORDS["base"][0]),
     [f"{BASE}:5: question 'q-1': field 'question_id': 'q-1' appears on more than one line of this run "
      "(first on line 1)"]),
    ("retrieved missing", lambda ws: drop_field(R(ws), 1, "retrieved"),
     [f"{Q1}field 'retrieved': required field is missing"]),
    ("retrieved a string", lambda ws: set_field(R(ws), 1, "retrieved", "rb-3"),
     [f"{Q1}field 'retrieved': 'rb-3': expected a list of document IDs"]),
    ("retrieved of numbers", lambda ws: set_field(R(ws), 1, "retrieved", [3]),
     [f"{Q1}field 'retrieved': [3]: expected a list of document IDs"]),
    ("retrieved null", lambda ws: set_field(R(ws), 1, "retrieved", None),
     [f"{Q1}field 'retrieved': None: expected a list of document IDs"]),
    ("retrieved longer than 1000", lambda ws: set_field(R(ws), 1, "retrieved", [f"x{i}" for i in range(1001)]),
     [f"{Q1}field 'retrieved': 1001: a ranking holds at most 1000 documents"]),
    ("claims missing", lambda ws: drop_field(R(ws), 1, "claims"),
     [f"{Q1}field 'claims': required field is missing (a record needs claims, answer_sentences or both)"]),
    ("claims a map", lambda ws: set_field(R(ws), 1, "claims", {"monday": ["rb-3"]}),
     [f"{Q1}field 'claims': {{'monday': ['rb-3']}}: expected a list of {{\"id\", \"citations\", \"text\"}} objects"]),
    ("claims of strings", lambda ws: set_field(R(ws), 1, "claims", ["monday"]),
     [f"{Q1}field 'claims': ['monday']: expected a list of {{\"id\", \"citations\", \"text\"}} objects"]),
    ("claims null", lambda ws: set_field(R(ws), 1, "claims", None),
     [f"{Q1}field 'claims': None: expected a list of {{\"id\", \"citations\", \"text\"}} objects"]),
    ("claims more than 100",
     lambda ws: set_field(R(ws), 1, "claims", [{"id": f"c{i}", "citations": []} for i in range(101)]),
     [f"{Q1}field 'claims': 101: an answer holds at most 100 claims"]),
    ("claims more than the suite's max_claims",
     lambda ws: (set_key(S(ws), "max_claims", 2),
                 set_field(R(ws), 1, "claims", [{"id": f"c{i}", "citations": []} for i in range(3)])),
     [f"{Q1}field 'claims': 3: an answer holds at most 2 (the max_claims of suite demo) claims"]),
    ("answer a number", lambda ws: set_field(R(ws), 1, "answer", 1),
     [f"{Q1}field 'answer': 1: expected a string or null"]),
    ("context a list", lambda ws: set_field(R(ws), 1, "context", []),
     [f"{Q1}field 'context': []: expected a string or null"]),
    ("error an object", lambda ws: set_field(R(ws), 1, "error", {}),
     [f"{Q1}field 'error': {{}}: expected null or a message string"]),
    ("latency negative", lambda ws: set_field(R(ws), 1, "latency_ms", -1),
     [f"{Q1}field 'latency_ms': -1: expected a finite number >= 0 or null"]),
    ("latency NaN", lambda ws: replace_line(R(ws), 1, lines(R(ws))[0].replace(b"812.5", b"NaN")),
     [f"{Q1}field 'latency_ms': nan: expected a finite number >= 0 or null"]),
    ("latency Infinity", lambda ws: replace_line(R(ws), 1, lines(R(ws))[0].replace(b"812.5", b"Infinity")),
     [f"{Q1}field 'latency_ms': inf: expected a finite number >= 0 or null"]),
    ("latency overflowing", lambda ws: replace_line(R(ws), 1, lines(R(ws))[0].replace(b"812.5", b"1e400")),
     [f"{Q1}field 'latency_ms': inf: expected a finite number >= 0 or null"]),
    ("latency a string", lambda ws: set_field(R(ws), 1, "latency_ms", "5"),
     [f"{Q1}field 'latency_ms': '5': expected a finite number >= 0 or null"]),
    ("latency a boolean", lambda ws: set_field(R(ws), 1, "latency_ms", True),
     [f"{Q1}field 'latency_ms': True: expected a finite number >= 0 or null"]),
    ("cost negative", lambda ws: set_field(R(ws), 1, "cost_usd", -0.5),
     [f"{Q1}field 'cost_usd': -0.5: expected a finite number >= 0 or null"]),
    ("unknown record field", lambda ws: set_field(R(ws), 1, "score", 1),
     [f"{Q1}field '(record)': ['score']: {UNKNOWN_RECORD}"]),
    ("record key twice", lambda ws: replace_line(R(ws), 1, lines(R(ws))[0].replace(
        b'"question_id": "q-1"', b'"question_id": "q-1", "question_id": "q-2"')),
     [f"{Q1}field '(record)': ['question_id']: {TWICE}"]),
    # RETRIEVED_RULES
    ("retrieved ID malformed", lambda ws: set_field(R(ws), 1, "retrieved", ["rb-3", "rb 4"]),
     [f"{Q1}field 'retrieved': 'rb 4': {ID_RULE}"]),
    ("retrieved ID empty", lambda ws: set_field(R(ws), 1, "retrieved", ["", "rb-3"]),
     [f"{Q1}field 'retrieved': '': {ID_RULE}"]),
    ("retrieved ID of 129 characters", lambda ws: set_field(R(ws), 1, "retrieved", ["d" * 129]),
     [f"{Q1}field 'retrieved': '{'d' * 56}...: {ID_RULE}"]),
    ("retrieved ID with a C1 control character", lambda ws: set_field(R(ws), 1, "retrieved", ["rb-3\u0085"]),
     [f"{Q1}field 'retrieved': 'rb-3\\x85': {ID_RULE}"]),
    ("retrieved document unknown", lambda ws: set_field(R(ws), 1, "retrieved", ["rb-3", "nope"]),
     [f"{Q1}field 'retrieved': 'nope' is not a document of suite 'demo' v3"]),
    ("retrieved document twice", lambda ws: set_field(R(ws), 1, "retrieved", ["rb-4", "rb-3", "rb-4"]),
     [f"{Q1}field 'retrieved': 'rb-4' appears twice in the ranking (first at rank 1)"]),
    # CLAIM_RULES
    ("claim id missing", claim(lambda c: c.pop("id")),
     [f"{Q1}field 'claims[0].id': {{'citations': ['rb-3'], 'text': 'Starts Monday.'}}: "
      "required field is missing: every claim needs a string 'id'"]),
    ("claim id a number", claim(lambda c: c.__setitem__("id", 3)),
     [f"{Q1}field 'claims[0].id': {{'id': 3, 'citations': ['rb-3'], 'text': 'Starts Monday.'}}: "
      "required field is missing: every claim needs a string 'id'"]),
    ("claim id malformed", claim(lambda c: c.__setitem__("id", "a\tb")),
     [f"{Q1}field 'claims[\"a\\\\tb\"].id': 'a\\tb': {ID_RULE}"]),
    ("claim id with a no-break space", claim(lambda c: c.__setitem__("id", "a\u00a0b")),
     [f"{Q1}field 'claims[\"a\\xa0b\"].id': 'a\\xa0b': {ID_RULE}"]),
    ("claim twice in one answer", lambda ws: set_field(R(ws), 1, "claims", [
        {"id": "monday", "citations": ["rb-3"]}, {"id": "monday", "citations": []}]),
     [f"{MONDAY}.id': 'monday' is claimed twice in one answer"]),
    ("citations a string", claim(lambda c: c.__setitem__("citations", "rb-3")),
     [f"{MONDAY}.citations': 'rb-3': expected a list of document IDs (use [] for none)"]),
    ("citations missing", claim(lambda c: c.pop("citations")),
     [f"{MONDAY}.citations': expected a list of document IDs (use [] for none)"]),
    ("citations null", claim(lambda c: c.__setitem__("citations", None)),
     [f"{MONDAY}.citations': None: expected a list of document IDs (use [] for none)"]),
    ("citations a map", claim(lambda c: c.__setitem__("citations", {"rb-3": 1})),
     [f"{MONDAY}.citations': {{'rb-3': 1}}: expected a list of document IDs (use [] for none)"]),
    ("citations of numbers", claim(lambda c: c.__setitem__("citations", [1])),
     [f"{MONDAY}.citations': [1]: expected a list of document IDs (use [] for none)"]),
    ("citations more than 100", claim(lambda c: c.__setitem__("citations", [f"x{i}" for i in range(101)])),
     [f"{MONDAY}.citations': 101: a claim cites at most 100 documents"]),
    ("claim text a number", claim(lambda c: c.__setitem__("text", 5)),
     [f"{MONDAY}.text': 5: expected a string or null"]),
    ("unknown claim field", claim(lambda c: c.__setitem__("score", 0.9)),
     [f"{MONDAY}': ['score']: unknown field (allowed: id, citations, text; prefix extensions with x_)"]),
    ("claim key twice", lambda ws: replace_line(R(ws), 1, lines(R(ws))[0].replace(
        b'{"id": "monday"', b'{"id": "monday", "id": "other"')),
     [f"{MONDAY}': ['id']: {TWICE}"]),
    # CITATION_RULES
    ("citation ID malformed", claim(lambda c: c.__setitem__("citations", ["rb 3"])),
     [f"{MONDAY}.citations': 'rb 3': {ID_RULE}"]),
    ("citation twice", claim(lambda c: c.__setitem__("citations", ["rb-3", "rb-4", "rb-3"])),
     [f"{MONDAY}.citations': 'rb-3' is cited twice by one claim"]),
    # reading the file
    ("records with a byte-order mark", lambda ws: R(ws).write_bytes(b"\xef\xbb\xbf" + R(ws).read_bytes()),
     [f"{BASE}:1: the file starts with a byte-order mark; save it as UTF-8 without BOM"]),
    ("records line not UTF-8", lambda ws: replace_line(R(ws), 3, lines(R(ws))[2].replace(b"could", b"c\xf6uld")),
     [f"{BASE}:3: the line is not valid UTF-8"]),
    ("records line over 8 MiB", lambda ws: set_field(R(ws), 2, "answer", "x" * (8 * 1024 * 1024)),
     [f"{BASE}:2: line longer than 8 MiB"]),
    ("records line of 8 MiB and one byte", lambda ws: exact_line(R(ws), 2, 8 * 1024 * 1024 + 1),
     [f"{BASE}:2: line longer than 8 MiB"]),
    ("records line of exactly 8 MiB is valid", lambda ws: exact_line(R(ws), 2, 8 * 1024 * 1024), []),
    ("records line of exactly 8 MiB with CRLF is valid",
     lambda ws: exact_line(R(ws), 2, 8 * 1024 * 1024, end=b"\r\n"), []),
    ("records file empty", lambda ws: R(ws).write_bytes(b""),
     [f"{BASE}: the file holds no records"]),
    # answer sentences: SENTENCE_RULES and SENTENCE_CITATION_RULES (line 1: q-1, retrieved rb-3, rb-4)
    ("answer_sentences a string", lambda ws: set_field(R(ws), 1, "answer_sentences", "Monday."),
     [f"{Q1}field 'answer_sentences': 'Monday.': expected a list of {{\"text\", \"citations\"}} objects"]),
    ("answer_sentences beyond max_claims", lambda ws: (
        set_key(S(ws), "max_claims", 2),
        set_field(R(ws), 1, "answer_sentences", [{"text": t, "citations": []} for t in ("A.", "B.", "C.")])),
     [f"{Q1}field 'answer_sentences': 3: an answer holds at most 2 (the max_claims of suite demo) sentences (each "
      "may become a claim)"]),
    ("sentence without text", lambda ws: set_field(R(ws), 1, "answer_sentences", [{"citations": [0]}]),
     [f"{Q1}field 'answer_sentences[0].text': required: a non-empty string"]),
    ("sentence citations a string", lambda ws: set_field(R(ws), 1, "answer_sentences",
                                                         [{"text": "Monday.", "citations": "rb-3"}]),
     [f"{Q1}field 'answer_sentences[0].citations': 'rb-3': expected a list of document or chunk IDs, or 0-based "
      "indexes into retrieved (use [] for none)"]),
    ("sentence citing 101", lambda ws: set_field(R(ws), 1, "answer_sentences",
                                                 [{"text": "Monday.", "citations": [f"d{i}" for i in range(101)]}]),
     [f"{Q1}field 'answer_sentences[0].citations': 101: a sentence cites at most 100 documents"]),
    ("sentence unknown field", lambda ws: set_field(R(ws), 1, "answer_sentences",
                                                    [{"text": "Monday.", "citations": [], "score": 1}]),
     [f"{Q1}field 'answer_sentences[0]': ['score']: unknown field (allowed: text, citations; prefix extensions with "
      "x_)"]),
    ("sentence key twice", lambda ws: replace_line(R(ws), 1, json.dumps(RECORDS["base"][0])[:-1]
                                                   + ', "answer_sentences": [{"text": "A.", "text": "B.", '
                                                     '"citations": []}]}'),
     [f"{Q1}field 'answer_sentences[0]': ['text']: {TWICE}"]),
    ("sentence index outside retrieved", lambda ws: set_field(R(ws), 1, "answer_sentences",
                                                              [{"text": "Monday.", "citations": [2, -1]}]),
     [f"{Q1}field 'answer_sentences[0].citations': 2 is not an index into retrieved (it holds 2 IDs: indexes 0 "
      "to 1)",
      f"{Q1}field 'answer_sentences[0].citations': -1 is not an index into retrieved (it holds 2 IDs: indexes 0 "
      "to 1)"]),
    ("sentence citing a malformed ID", lambda ws: set_field(R(ws), 1, "answer_sentences",
                                                            [{"text": "Monday.", "citations": ["rb 3"]}]),
     [f"{Q1}field 'answer_sentences[0].citations': 'rb 3': {ID_RULE}"]),
    ("sentence citing one document twice", lambda ws: set_field(R(ws), 1, "answer_sentences",
                                                                [{"text": "Monday.", "citations": ["rb-3", 0]}]),
     [f"{Q1}field 'answer_sentences[0].citations': 'rb-3' is cited twice by one sentence"]),
    ("records file of blank lines", lambda ws: R(ws).write_bytes(b"\n  \n\t\n"),
     [f"{BASE}: the file holds no records"]),
    ("records.parquet unreadable", lambda ws: R(ws).rename(R(ws).with_suffix(".parquet")),
     None),  # DuckDB's own message follows the rule; checked by prefix below
]


@pytest.mark.parametrize("name, mutate, expected", RECORD_CASES, ids=[c[0] for c in RECORD_CASES])
@pytest.mark.cases(24)
def test_record_rule(ws, name, mutate, expected):
    mutate(ws)
    found = check(ws)
    if expected is None:
        assert len(found) == 1 and found[0].startswith("runs/base/records.parquet: cannot read the Parquet file (")
        return
    assert sorted(found) == sorted(expected)


def _rule_pattern(rule: str) -> str:
    return re.sub(r"\\\{\w+\\\}", ".*", re.escape(rule))


def test_every_sql_rule_has_a_case():
    """Each rule text of LINE_RULES, RETRIEVED_RULES, CLAIM_RULES, CITATION_RULES, SENTENCE_RULES and
    SENTENCE_CITATION_RULES is expected by a case."""
    expected = [line for _, _, lines_ in RECORD_CASES if lines_ for line in lines_]
    rules = [r[2] for r in records_module.LINE_RULES] + [r[0] for r in records_module.RETRIEVED_RULES] + \
        [r[2] for r in records_module.CLAIM_RULES] + [r[0] for r in records_module.CITATION_RULES] + \
        [r[2] for r in records_module.SENTENCE_RULES] + [r[1] for r in records_module.SENTENCE_CITATION_RULES]
    uncovered = [rule for rule in rules if not any(re.search(_rule_pattern(rule), line) for line in expected)]
    assert uncovered == []


def test_bounds_are_inclusive(ws):
    """1000 retrieved documents, 100 claims and 100 citations are allowed (docs/formats.md)."""
    many = [{"id": f"d{i}", "text": "t"} for i in range(1000)]
    write_jsonl(D(ws), DOCUMENTS + many)
    set_field(R(ws), 1, "retrieved", [d["id"] for d in many])
    set_field(R(ws), 2, "claims", [{"id": f"c{i}", "citations": [f"d{j}" for j in range(100)]} for i in range(100)])
    assert check(ws) == []


def test_accepted_variants(ws):
    """Blank lines, CRLF, x_ extensions, null optionals, big finite numbers and TREC-style IDs are valid."""
    base = R(ws)
    base.write_bytes(base.read_bytes().replace(b"\n", b"\r\n", 2) + b"\n \t\n")
    set_field(base, 2, "x_trace", {"span": [1, 2]})
    set_field(base, 3, "latency_ms", 2 ** 70)
    edit_line(base, 1, lambda o: o["claims"][0].update({"text": None, "x_score": 0.5}))
    drop_field(base, 3, "answer")
    assert check(ws) == []


def test_unknown_citations_are_valid_and_stored_as_citation_unknown(ws, tmp_path):
    """A citation outside the suite is valid input; its claim is unsupported with reason citation_unknown."""
    claim(lambda c: c.__setitem__("citations", ["elsewhere"]))(ws)
    assert check(ws) == []
    db = tmp_path / "scores.duckdb"
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT run_id, question_id, claim_id, citations, supported, reasons FROM claims "
            "WHERE list_contains(reasons, 'citation_unknown') ORDER BY run_id").fetchall()
        support = con.execute(
            "SELECT support FROM question_scores WHERE run_id = 'base' AND question_id = 'q-1'").fetchone()[0]
    # q-1 'monday' is an expected claim and 'elsewhere' is no document: only citation_unknown applies.
    # cand q-4 'band' cites hr-1 (restricted for caller 'engineering') and 'outside-doc'.
    assert rows == [
        ("base", "q-1", "monday", ["elsewhere"], False, ["citation_unknown"]),
        ("cand", "q-4", "band", ["hr-1", "outside-doc"], False, ["citation_unknown", "citation_restricted"]),
    ]
    assert support == 0.0  # one claim, unsupported: 0 / 1


# --- suites: suite.json, documents.jsonl, questions.jsonl ------------------------------------------

SUITE_CASES: list[tuple[str, Callable[[Path], object], list[str]]] = [
    # suite.json (pretty-printed: '{' on line 1, then name 2, version 3, corpus_version 4, rubric_version 5,
    # description 6)
    ("suite.json missing", lambda ws: S(ws).unlink(),
     [f"{SUITE_JSON}: cannot read the file (No such file or directory)"]),
    ("suite.json with a byte-order mark", lambda ws: S(ws).write_bytes(b"\xef\xbb\xbf" + S(ws).read_bytes()),
     [f"{SUITE_JSON}:1: the file starts with a byte-order mark; save it as UTF-8 without BOM"]),
    ("suite.json not UTF-8", lambda ws: S(ws).write_bytes(S(ws).read_bytes().replace(b"runbooks", b"r\xfcnbooks")),
     [f"{SUITE_JSON}:6: the file is not valid UTF-8"]),
    ("suite.json truncated", lambda ws: S(ws).write_bytes(S(ws).read_bytes()[:-30]),
     [f"{SUITE_JSON}:6: not valid JSON (Unterminated string starting at)"]),
    ("suite.json empty", lambda ws: S(ws).write_bytes(b""),
     [f"{SUITE_JSON}:1: not valid JSON (Expecting value)"]),
    ("suite.json a list", lambda ws: S(ws).write_text("\n[]\n"),
     [f"{SUITE_JSON}:2: expected a JSON object"]),
    ("suite.json with NaN", lambda ws: S(ws).write_text('{"name": "demo", "x_a": NaN}'),
     [f"{SUITE_JSON}: not valid JSON (NaN is not a JSON number)"]),
    ("suite.json key twice", lambda ws: S(ws).write_text(
        '{"name": "demo",\n "version": "3",\n "version": "4", "corpus_version": "c", "rubric_version": "r"}'),
     [f"{SUITE_JSON}: not valid JSON (a key appears twice in one object: 'version')"]),
    *[(f"suite max_claims {bad!r}", lambda ws, bad=bad: set_key(S(ws), "max_claims", bad),
       [f"{SUITE_JSON}:7: field 'max_claims': {bad!r}: expected a whole number from 1 to 100: the most claims an "
        "answer may make"]) for bad in (0, 101, "3", True, 2.0)],
    ("suite unknown field", lambda ws: set_key(S(ws), "owner", "me"),
     [f"{SUITE_JSON}:7: field 'owner': unknown field (allowed: corpus_version, description, max_claims, name, "
      "rubric_version, unit, version; prefix extensions with x_)"]),
    ("suite name missing", lambda ws: drop_key(S(ws), "name"),
     [f"{SUITE_JSON}:1: field 'name': required field is missing"]),
    ("suite name differs from its folder", lambda ws: set_key(S(ws), "name", "other"),
     [f"{SUITE_JSON}:2: field 'name': 'other' must equal the folder name 'demo'"]),
    ("suite version missing", lambda ws: drop_key(S(ws), "version"),
     [f"{SUITE_JSON}:1: field 'version': required field is missing"]),
    ("suite version a number", lambda ws: set_key(S(ws), "version", 3),
     [f"{SUITE_JSON}:3: field 'version': 3: expected a non-empty string"]),
    ("suite corpus_version blank", lambda ws: set_key(S(ws), "corpus_version", " "),
     [f"{SUITE_JSON}:4: field 'corpus_version': ' ': expected a non-empty string"]),
    ("suite rubric_version null", lambda ws: set_key(S(ws), "rubric_version", None),
     [f"{SUITE_JSON}:5: field 'rubric_version': required field is missing"]),
    ("suite description a list", lambda ws: set_key(S(ws), "description", ["x"]),
     [f"{SUITE_JSON}:6: field 'description': ['x']: expected a non-empty string"]),
    # documents.jsonl (line n = DOCUMENTS[n-1])
    ("documents file missing", lambda ws: D(ws).unlink(), None),
    ("documents with a byte-order mark", lambda ws: D(ws).write_bytes(b"\xef\xbb\xbf" + D(ws).read_bytes()),
     [f"{DOCS}:1: the file starts with a byte-order mark; save it as UTF-8 without BOM"]),
    ("document line not UTF-8", lambda ws: replace_line(D(ws), 7, lines(D(ws))[6].replace(b"archived", b"\xff")),
     [f"{DOCS}:7: the line is not valid UTF-8"]),
    ("document line not JSON", lambda ws: replace_line(D(ws), 7, '{"id": "spare", "text": '),
     [f"{DOCS}:7: not valid JSON (Expecting value)"]),
    ("document line not an object", lambda ws: replace_line(D(ws), 7, '"spare"'),
     [f"{DOCS}:7: expected a JSON object on each line"]),
    ("document line over 8 MiB", lambda ws: set_field(D(ws), 7, "text", "x" * (8 * 1024 * 1024 + 1)),
     [f"{DOCS}:7: line longer than 8 MiB"]),
    ("document line of exactly 8 MiB is valid",
     lambda ws: replace_line(D(ws), 7, '{"id": "spare", "text": "%s"}' % ("x" * (8 * 1024 * 1024 - 27))), []),
    ("document key twice", lambda ws: replace_line(D(ws), 7, '{"id": "spare", "text": "a", "text": "b"}'),
     [f"{DOCS}:7: not valid JSON (a key appears twice in one object: 'text')"]),
    ("documents file empty", lambda ws: D(ws).write_bytes(b""), None),
    ("document unknown field", lambda ws: set_field(D(ws), 2, "url", "http://x"),
     [f"{DOCS}:2: field 'url': unknown field (allowed: access, id, text, title, version; "
      "prefix extensions with x_)"]),
    ("document id missing", lambda ws: drop_field(D(ws), 7, "id"),
     [f"{DOCS}:7: field 'id': None: {ID_RULE}"]),
    ("document id a number", lambda ws: set_field(D(ws), 7, "id", 4),
     [f"{DOCS}:7: field 'id': 4: {ID_RULE}"]),
    ("document id with a space", lambda ws: set_field(D(ws), 7, "id", "spare note"),
     [f"{DOCS}:7: field 'id': 'spare note': {ID_RULE}"]),
    ("document id renamed: its references are unknown", lambda ws: set_field(D(ws), 4, "id", "rb-four"),
     [f"{BASE}:1: question 'q-1': field 'retrieved': 'rb-4' is not a document of suite 'demo' v3",
      f"{BASE}:2: question 'q-2': field 'retrieved': 'rb-4' is not a document of suite 'demo' v3",
      f"{BASE}:3: question 'q-3': field 'retrieved': 'rb-4' is not a document of suite 'demo' v3",
      f"{CAND}:4: question 'q-4': field 'retrieved': 'rb-4' is not a document of suite 'demo' v3",
      f"{QUESTIONS}:2: question 'q-2': field 'relevant': 'rb-4' is not a document of suite 'demo' v3"]),
    ("document duplicated", lambda ws: append_line(D(ws), DOCUMENTS[0]),
     [f"{DOCS}:8: field 'id': 'rb-1': duplicate document ID"]),
    ("document text missing: still a known document", lambda ws: drop_field(D(ws), 4, "text"),
     [f"{DOCS}:4: field 'text': required field is missing"]),
    ("document text blank", lambda ws: set_field(D(ws), 7, "text", "  "),
     [f"{DOCS}:7: field 'text': '  ': expected a non-empty string"]),
    ("document version a number", lambda ws: set_field(D(ws), 1, "version", 2),
     [f"{DOCS}:1: field 'version': 2: expected a non-empty string"]),
    ("document title a number", lambda ws: set_field(D(ws), 1, "title", 2),
     [f"{DOCS}:1: field 'title': 2: expected a non-empty string"]),
    ("document access a string", lambda ws: set_field(D(ws), 5, "access", "hr"),
     [f"{DOCS}:5: field 'access': 'hr': expected a list of group names"]),
    ("document access with a blank group", lambda ws: set_field(D(ws), 5, "access", ["hr", " "]),
     [f"{DOCS}:5: field 'access': ['hr', ' ']: expected a list of group names"]),
    # questions.jsonl (line n = QUESTIONS[n-1]; q-2 has graded relevance and two expected claims)
    ("question line not JSON", lambda ws: replace_line(Q(ws), 5, '{"id": "q-5"'),
     [f"{QUESTIONS}:5: not valid JSON (Expecting ',' delimiter)",
      # cand has a record for q-5, which is now no question of the suite
      f"{CAND}:5: question 'q-5': field 'question_id': 'q-5' is not a question of suite 'demo'"]),
    ("question unknown field", lambda ws: set_field(Q(ws), 3, "answer", "none"),
     [f"{QUESTIONS}:3: question 'q-3': field 'answer': unknown field (allowed: assessed, caller, claims, cluster, "
      "critical, disputed, id, relevant, split, support, tags, text, type; prefix extensions with x_)"]),
    ("question id malformed", lambda ws: set_field(Q(ws), 5, "id", "q\n5"),
     [f"{QUESTIONS}:5: question 'q\\n5': field 'id': 'q\\n5': {ID_RULE}",
      f"{CAND}:5: question 'q-5': field 'question_id': 'q-5' is not a question of suite 'demo'"]),
    ("question duplicated", lambda ws: append_line(Q(ws), {"id": "q-3", "text": "again", "type": "x",
                                                              "split": "dev", "relevant": []}),
     [f"{QUESTIONS}:6: question 'q-3': field 'id': 'q-3': duplicate question ID"]),
    ("question text missing", lambda ws: drop_field(Q(ws), 3, "text"),
     [f"{QUESTIONS}:3: question 'q-3': field 'text': required field is missing"]),
    ("question type missing", lambda ws: drop_field(Q(ws), 3, "type"),
     [f"{QUESTIONS}:3: question 'q-3': field 'type': required field is missing"]),
    ("question split unknown", lambda ws: set_field(Q(ws), 3, "split", "test"),
     [f"{QUESTIONS}:3: question 'q-3': field 'split': 'test': expected 'dev' or 'heldout'"]),
    ("question split missing", lambda ws: drop_field(Q(ws), 3, "split"),
     [f"{QUESTIONS}:3: question 'q-3': field 'split': None: expected 'dev' or 'heldout'"]),
    ("question critical a string", lambda ws: set_field(Q(ws), 3, "critical", "yes"),
     [f"{QUESTIONS}:3: question 'q-3': field 'critical': 'yes': expected true or false"]),
    ("question tags a string", lambda ws: set_field(Q(ws), 1, "tags", "release"),
     [f"{QUESTIONS}:1: question 'q-1': field 'tags': 'release': expected a list of tag strings"]),
    ("question caller of numbers", lambda ws: set_field(Q(ws), 4, "caller", [1]),
     [f"{QUESTIONS}:4: question 'q-4': field 'caller': [1]: expected a list of group names"]),
    ("question relevant missing", lambda ws: drop_field(Q(ws), 3, "relevant"),
     [f"{QUESTIONS}:3: question 'q-3': field 'relevant': required field is missing "
      "(use [] for an unanswerable question)"]),
    ("question relevant a string", lambda ws: set_field(Q(ws), 3, "relevant", "rb-1"),
     [f"{QUESTIONS}:3: question 'q-3': field 'relevant': 'rb-1': expected a list of document IDs or a map "
      "document ID -> grade"]),
    ("question relevant list too long", lambda ws: set_field(Q(ws), 3, "relevant", ["rb-1"] * 10_001),
     [f"{QUESTIONS}:3: question 'q-3': field 'relevant': ['rb-1', 'rb-1', 'rb-1', 'rb-1', 'rb-1', 'rb-1', "
      "'rb-1', ...: at most 10000 IDs are allowed, found 10001"]),
    ("question relevant map too long",
     lambda ws: set_field(Q(ws), 3, "relevant", {f"rb-{i}": 0 for i in range(10_001)}), None),
    ("question relevant ID malformed", lambda ws: set_field(Q(ws), 3, "relevant", ["rb 1"]),
     [f"{QUESTIONS}:3: question 'q-3': field 'relevant': 'rb 1': {ID_RULE}"]),
    ("question relevant ID twice", lambda ws: set_field(Q(ws), 3, "relevant", ["rb-1", "rb-1"]),
     [f"{QUESTIONS}:3: question 'q-3': field 'relevant': 'rb-1': duplicate ID"]),
    ("question grade a float", lambda ws: edit_line(Q(ws), 2, lambda o: o["relevant"].__setitem__("rb-4", 0.5)),
     [f"{QUESTIONS}:2: question 'q-2': field \"relevant['rb-4']\": 0.5: a relevance grade is a whole number"]),
    ("question grade a boolean", lambda ws: edit_line(Q(ws), 2, lambda o: o["relevant"].__setitem__("rb-4", True)),
     [f"{QUESTIONS}:2: question 'q-2': field \"relevant['rb-4']\": True: a relevance grade is a whole number"]),
    ("question relevant document unknown", lambda ws: set_field(Q(ws), 3, "relevant", {"nope": 0}),
     [f"{QUESTIONS}:3: question 'q-3': field 'relevant': 'nope' is not a document of suite 'demo' v3"]),
    ("question support a list", lambda ws: set_field(Q(ws), 5, "support", ["FR940202-2-00150"]),
     [f"{QUESTIONS}:5: question 'q-5': field 'support': ['FR940202-2-00150']: expected a map claim ID -> "
      "supporting document IDs"]),
    ("question support claim ID malformed", lambda ws: set_field(Q(ws), 5, "support", {"a b": ["FR940202-2-00150"]}),
     [f"{QUESTIONS}:5: question 'q-5': field 'support': 'a b': {ID_RULE}"]),
    ("question support documents a string", lambda ws: set_field(Q(ws), 5, "support", {"c": "FR940202-2-00150"}),
     [f"{QUESTIONS}:5: question 'q-5': field \"support['c']\": 'FR940202-2-00150': expected a list of IDs"]),
    ("question support documents more than 100",
     lambda ws: set_field(Q(ws), 5, "support", {"c": [f"d{i}" for i in range(101)]}), None),
    ("question support documents empty", lambda ws: set_field(Q(ws), 5, "support", {"c": []}),
     [f"{QUESTIONS}:5: question 'q-5': field \"support['c']\": []: an expected claim needs at least one "
      "supporting document"]),
    ("question support document not labelled relevant",
     lambda ws: edit_line(Q(ws), 2, lambda o: o["support"].__setitem__("old", ["rb-4"])),
     [f"{QUESTIONS}:2: question 'q-2': field \"support['old']\": ['rb-4']: supporting documents must be labelled "
      "relevant (grade > 0)"]),
    ("question support without relevant documents", lambda ws: set_field(Q(ws), 3, "support", {"x": ["rb-1"]}),
     [f"{QUESTIONS}:3: question 'q-3': field \"support['x']\": ['rb-1']: supporting documents must be labelled "
      "relevant (grade > 0)",
      f"{QUESTIONS}:3: question 'q-3': field 'support': ['x']: expected claims need relevant documents"]),
    ("question claims a list", lambda ws: set_field(Q(ws), 1, "claims", ["The window starts on Monday."]),
     [f"{QUESTIONS}:1: question 'q-1': field 'claims': ['The window starts on Monday.']: expected a map claim ID "
      "-> proposition"]),
    ("question proposition for an unknown claim",
     lambda ws: edit_line(Q(ws), 1, lambda o: o["claims"].__setitem__("friday", "Friday.")),
     [f"{QUESTIONS}:1: question 'q-1': field 'claims': 'friday': a proposition for a claim that is not an "
      "expected claim in 'support'"]),
    ("question proposition blank", lambda ws: edit_line(Q(ws), 1, lambda o: o["claims"].__setitem__("monday", "")),
     [f"{QUESTIONS}:1: question 'q-1': field \"claims['monday']\": '': a proposition is a non-empty string"]),
    ("question disputed a boolean", lambda ws: set_field(Q(ws), 2, "disputed", True),
     [f"{QUESTIONS}:2: question 'q-2': field 'disputed': True: expected a non-empty string"]),
    ("question cluster a number", lambda ws: set_field(Q(ws), 2, "cluster", 7),
     [f"{QUESTIONS}:2: question 'q-2': field 'cluster': 7: expected a non-empty string"]),
    ("question cluster blank", lambda ws: set_field(Q(ws), 3, "cluster", " "),
     [f"{QUESTIONS}:3: question 'q-3': field 'cluster': ' ': expected a non-empty string"]),
    ("question cluster a list", lambda ws: set_field(Q(ws), 1, "cluster", ["rb-1"]),
     [f"{QUESTIONS}:1: question 'q-1': field 'cluster': ['rb-1']: expected a non-empty string"]),
    ("question cluster null is absent", lambda ws: set_field(Q(ws), 1, "cluster", None), []),
    ("question cluster named", lambda ws: set_field(Q(ws), 1, "cluster", "release-runbook"), []),
]


@pytest.mark.parametrize("name, mutate, expected", SUITE_CASES, ids=[c[0] for c in SUITE_CASES])
@pytest.mark.cases(24)
def test_suite_rule(ws, name, mutate, expected):
    mutate(ws)
    found = check(ws)
    if expected is None:
        return _check_special(name, found)
    assert sorted(found) == sorted(expected)


def _check_special(name: str, found: list[str]) -> None:
    """Cases whose full output is long: the named problem and no traceback-shaped line."""
    first = {
        "documents file missing": f"{DOCS}: cannot read the file (No such file or directory)",
        "documents file empty": f"{DOCS}: the file holds no records",
        "question relevant map too long": f"{QUESTIONS}:3: question 'q-3': field 'relevant': ",
        "question support documents more than 100": f"{QUESTIONS}:5: question 'q-5': field \"support['c']\": ",
    }[name]
    rule = {
        "question relevant map too long": "at most 10000 labelled documents, found 10001",
        "question support documents more than 100": "at most 100 IDs are allowed, found 101",
    }.get(name, "")
    assert any(line.startswith(first) and line.endswith(rule) for line in found), found
    # With no documents every reference to a document is also reported, in file and line order.
    assert all(re.match(r"^(runs|suites)/[\w./-]+(:\d+)?: ", line) for line in found[:-1]), found
    assert re.match(r"^(runs|suites)/[\w./-]+(:\d+)?: |^\.\.\. and \d+ more problems$", found[-1]), found


# --- suites read on the fast path are read exactly as the full checks read them -------------------
#
# `scoring.store.workspace` accepts a clean document or question line after set checks, and a JSON line after
# a plain parse whose keys it counts; everything else goes through the full field-by-field checks and
# the strict parser. These cases and the property test below hold both routes to the same problems
# and the same suite content.

ABSENT = object()
"""A field left out of the line."""


class Pairs(list):
    """A JSON object written from (key, value) pairs, so a key can appear twice."""


def _render(value: Any, colon: str) -> str:
    if isinstance(value, Pairs):
        return "{" + ", ".join(f"{json.dumps(k)}{colon}{_render(v, colon)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_render(v, colon) for v in value) + "]"
    return json.dumps(value)


def _pairs(fields: dict[str, Any]) -> Pairs:
    return Pairs((k, v) for k, v in fields.items() if v is not ABSENT)


def _maps(*maps: dict[str, Any]) -> list[Any]:
    """Each map as an object, and once more with its first key twice."""
    out: list[Any] = []
    for m in maps:
        out.append(Pairs(m.items()))
        if m:
            key, value = next(iter(m.items()))
            out.append(Pairs([*m.items(), (key, value)]))
    return out


DOCUMENT_OPTIONS: dict[str, list[Any]] = {
    "id": ["rb-9", "rb-1", "a b", "x" * 129, "é-1", "q\u3000", 5, None, "", ABSENT],
    "text": ["words: with a colon", " ", "\u00a0", "", 3, None, ["x"], ABSENT],
    "version": ["v2", " ", 2, None, ABSENT], "title": ["T", "", 2, None, ABSENT],
    "access": [[], ["hr"], ["hr", " "], [1], "hr", None, ABSENT],
    "x_note": [1, Pairs([("a", 1), ("a", 2)])], "url": ["http://x"],
}
QUESTION_OPTIONS: dict[str, list[Any]] = {
    "id": ["q-1", "q 3", 7, None, ABSENT], "text": DOCUMENT_OPTIONS["text"], "type": [" ", None, ABSENT],
    "split": ["heldout", "test", None, ABSENT], "critical": [True, None, "yes", 0, ABSENT],
    "tags": DOCUMENT_OPTIONS["access"], "caller": DOCUMENT_OPTIONS["access"],
    "relevant": [["rb-1"], ["rb-1", "rb-1"], ["rb-1", "rb-2"], ["nope"], ["a b"], [3], [], "rb-1", None, ABSENT,
                 *_maps({"rb-1": 2, "rb-2": 0}, {"rb-1": True}, {"rb-1": 1.5}, {"rb-1": -1}, {"nope": 1}, {},
                       {"rb-1": 1, "rb-2": 1001}, {"rb-1": 1, "rb-2": -1000}, {"rb-1": 1, "rb-2": 2**63},
                       {"rb-1": 1, "rb-2": 10**20})],
    "support": [ABSENT, None, [], *_maps({"c": ["rb-1"]}, {"c": []}, {"c": ["rb-2"]}, {"c": ["rb-1"], "c c": ["rb-1"]},
                                         {"c": "rb-1"}, {"c": ["rb-1", "rb-1"]}, {"c": [1]}, {},
                                         {"c": ["rb-1"], "unlabelled#1": ["rb-1"]})],
    "claims": [ABSENT, None, [], *_maps({"c": "Words."}, {"c": " "}, {"d": "Words."}, {"c": 1}, {})],
    "disputed": ["note", " ", True, None, ABSENT], "cluster": ["rb-1", "", " ", 3, ["rb-1"], None, ABSENT],
    "x_note": ["a: b", Pairs([("a", Pairs([("b", 1), ("b", 2)]))])],
    "answer": ["none"],
}
VALID_DOCUMENT = {"id": "rb-9", "text": "Nine.", "version": "v1", "title": "Nine", "access": ["hr"]}
VALID_QUESTION = {"id": "q-1", "text": "Which?", "type": "lookup", "split": "dev", "critical": False,
                  "tags": ["t"], "caller": ["hr"], "relevant": Pairs([("rb-1", 2), ("rb-2", 0)]),
                  "support": Pairs([("c", ["rb-1"])]), "claims": Pairs([("c", "Words.")]), "disputed": "note"}


def _lines_near(valid: dict[str, Any], options: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A valid line with zero to two fields changed to an option (a broken value, another valid one, or
    left out), so that lines one rule away from clean are common."""
    change = st.lists(st.sampled_from(sorted(options)), max_size=2, unique=True).flatmap(
        lambda keys: st.fixed_dictionaries({key: st.sampled_from(options[key]) for key in keys}))
    return change.map(lambda changed: {**valid, **changed})


DOCUMENT_LINE = _lines_near(VALID_DOCUMENT, DOCUMENT_OPTIONS)
QUESTION_LINE = _lines_near(VALID_QUESTION, QUESTION_OPTIONS)


def _read_suite(folder: Path) -> tuple[list[Problem], Any]:
    problems = Problems()
    suite = load_suite(folder, problems)
    return problems.items, suite and (suite.documents, suite.questions)


def _read_suite_by_full_checks(folder: Path) -> tuple[list[Problem], Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(suite_lines_module, "_clean_document", lambda *args: None)
        patch.setattr(suite_lines_module, "_clean_question", lambda *args: None)
        patch.setattr(files_module, "_loads_object_line", files_module._loads)
        return _read_suite(folder)


def _both_routes(folder: Path, documents: list[dict], questions: list[dict], colon: str = ": ", *,
                 set_based: bool = True) -> bool:
    """Write a suite (rb-1 and rb-2 first, then `documents`; `questions`) and read it both ways, and
    set-based (`_read_set_based`) unless told not to; whether the set-based reader took it."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "suite.json", SUITE_META)
    known = [{"id": "rb-1", "text": "One."}, {"id": "rb-2", "text": "Two."}]
    for name, rows in (("documents.jsonl", [*known, *documents]), ("questions.jsonl", questions)):
        (folder / name).write_text("".join(_render(_pairs(row), colon) + "\n" for row in rows), encoding="utf-8")
    assert _read_suite(folder) == _read_suite_by_full_checks(folder)
    return set_based and _read_set_based(folder)


def _read_set_based(folder: Path) -> bool:
    """Stage the suite set-based (`scoring.store.suite_bulk`); when it is taken, the Python reader finds no
    problem in it and its staged rows are the rows `write_suite` writes of the Python reader's suite, in
    order. Whether it was taken."""
    from scoring.store.suite_bulk import STAGED, stage_suite
    from scoring.store.suite_tables import document_columns, question_columns

    problems = Problems()
    suite = load_suite(folder, problems)
    con = duckdb.connect()
    deferred = load_suite(folder, Problems(), defer=True)
    assert deferred is not None and deferred.deferred and not deferred.questions
    if not stage_suite(con, deferred):
        return False
    assert problems.items == []
    for name, table in zip(STAGED, (document_columns(suite), *question_columns(suite))):
        con.register("expected", table)
        assert con.execute(f"SELECT * FROM {name}").fetchall() == con.execute("SELECT * FROM expected").fetchall()
        assert con.execute(f"DESCRIBE {name}").fetchall() == con.execute("DESCRIBE expected").fetchall()
        con.unregister("expected")
    return True


SINGLE_CHANGES = [("document", key, value) for key, values in DOCUMENT_OPTIONS.items() for value in values] + [
    ("question", key, value) for key, values in QUESTION_OPTIONS.items() for value in values]


@pytest.mark.parametrize("kind, key, value", SINGLE_CHANGES,
                         ids=[f"{kind}-{key}-{i}" for i, (kind, key, _) in enumerate(SINGLE_CHANGES)])
@pytest.mark.cases(40)
def test_every_single_change_reads_as_the_full_checks_do(tmp_path, kind, key, value):
    document = {**VALID_DOCUMENT, key: value} if kind == "document" else VALID_DOCUMENT
    question = {**VALID_QUESTION, key: value} if kind == "question" else VALID_QUESTION
    # The changed line, then the same line again (a duplicate ID, or a second clean line); a question
    # twice is never read set-based
    _both_routes(tmp_path / "suites" / "demo", [document, {**document, "id": "rb-8"}],
                 [question, {**question, "id": "q-2"}, question], set_based=False)
    # and once without the repeated question, so that a clean change is read set-based
    clean = _both_routes(tmp_path / "suites" / "demo", [document], [question, {**question, "id": "q-2"}])
    if (kind, key, value) in SET_BASED:
        assert clean, "a clean suite was left to the Python reader"


SET_BASED = [("document", "id", "rb-9"), ("document", "title", ""), ("document", "access", []),
             ("document", "version", None), ("question", "relevant", ["rb-1", "rb-2"]),
             ("question", "critical", True), ("question", "caller", ABSENT), ("question", "disputed", None),
             ("question", "cluster", "rb-1")]
"""Single changes that leave the suite clean: each is read set-based (the reader is not idle)."""


def _numbered(rows: list[dict[str, Any]], valid: dict[str, Any]) -> list[dict[str, Any]]:
    """Each line its own ID (the valid one with a number), unless its ID is the field changed."""
    return [{**row, "id": f"{valid['id']}{i}"} if row["id"] == valid["id"] else row for i, row in enumerate(rows)]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=st.lists(DOCUMENT_LINE, min_size=1, max_size=4),
       questions=st.lists(QUESTION_LINE, min_size=1, max_size=4), colon=st.sampled_from([": ", ":", " : ", "\t:"]))
def test_the_fast_path_reads_suites_as_the_full_checks_do(tmp_path, documents, questions, colon):
    _both_routes(tmp_path / "suites" / "demo", _numbered(documents, VALID_DOCUMENT),
                 _numbered(questions, VALID_QUESTION), colon)


SPACED_TWICE = '{"id" : "spare", "text" : "a: b", "text"\t: "c"}'


@pytest.mark.parametrize("raw, expected", [
    (SPACED_TWICE, [f"{DOCS}:7: not valid JSON (a key appears twice in one object: 'text')"]),
    ('{"id": "spare", "text": "a", "x_meta": {"k": {"n": 1, "n": 2}}}',
     [f"{DOCS}:7: not valid JSON (a key appears twice in one object: 'n')"]),
    ('{"id": "spare", "text": "\\"quoted\\": with colons: \\":"}', []),
    ('{"id": "spare", "text": "a", "access": [], "title": "t: u"}', []),
], ids=["a key twice with spaces before the colons", "a key twice two objects deep",
        "quotes and colons inside a string", "colons in two strings"])
def test_keys_twice_are_found_however_the_line_is_spaced(ws, raw, expected):
    replace_line(D(ws), 7, raw)
    assert check(ws) == expected


def test_a_clean_suite_is_read_on_the_fast_path(ws, monkeypatch):
    """The valid workspace's suite lines need neither the full checks nor the strict parser (which
    still reads the whole-file JSON of suite.json and the manifests)."""
    strict: list[str] = []

    def refuse(*args: object) -> None:
        raise AssertionError("the full checks ran on a clean line")

    def loads(text: str) -> Any:
        strict.append(text)
        return json.loads(text)

    monkeypatch.setattr(suite_lines_module, "_checked_document", refuse)
    monkeypatch.setattr(suite_lines_module, "_checked_question", refuse)
    monkeypatch.setattr(files_module, "_loads", loads)
    assert check(ws) == []
    assert len(strict) == 3 and all(text.startswith("{\n") for text in strict)   # suite.json, two manifests


def test_the_suite_tables_hold_the_checked_suite(ws):
    """Every row `write_suite` writes for the valid suite, written out by hand from tests/fixtures.py:
    absent fields take their documented defaults, `answerable` is some grade > 0, `n_relevant` counts
    grades >= 1, an expected claim without a proposition has a NULL one."""
    workspace = load_workspace(ws, Problems())
    con = duckdb.connect()
    create_schema(con)
    write_suite(con, workspace.suites["demo"])
    assert con.execute("SELECT current_setting('preserve_insertion_order')").fetchall() == [(True,)]   # restored
    rows = {table: con.execute(f"SELECT * EXCLUDE (suite) FROM {table} ORDER BY ALL").fetchall()
            for table in ("documents", "questions", "labels", "expected_claims")}
    suite_row = con.execute("SELECT * EXCLUDE (files_hash, labels_hash, base_hash) FROM suites").fetchall()
    assert suite_row == [("demo", "3", "corpus-1", "rubric-1", "Small runbooks and policies.", 7, 5, "document", 100)]
    assert rows["documents"] == [
        ("FR940202-2-00150", None, None, "A TREC-style document number.", []),
        ("hr-1", None, "Salary bands", "L5 band is secret.", ["hr"]),
        ("rb-1", "v2", "Rollback runbook", "Switch traffic back to the previous version.", []),
        ("rb-2", None, "Smoke test", "After rollback, run the smoke test.", []),
        ("rb-3", None, "Release window", "The release window starts on Monday.", []),
        ("rb-4", None, "Old plan", "An archived planning note.", []),
        ("spare", None, "Unused note", "Nobody retrieves this archived note.", []),
    ]
    # question_id, position, text, type, split, critical, tags, caller, answerable, disputed, n_relevant, n_expected,
    # cluster
    assert rows["questions"] == [
        ("q-1", 0, "When does the release window start?", "lookup", "dev", True, ["release"], None, True, None, 1, 1,
         None),
        ("q-2", 1, "What are the two rollback actions?", "multi-evidence", "heldout", False, [], None, True,
         "rb-4 may also count.", 2, 2, None),
        ("q-3", 2, "Which region hosts the backup?", "unanswerable", "dev", False, [], None, False, None, 0, 0, None),
        ("q-4", 3, "What is the L5 salary band?", "permission", "dev", True, [], ["engineering"], True, None, 1, 1,
         None),
        ("q-5", 4, "Which document number?", "lookup", "dev", False, [], None, True, None, 1, 0, None),
    ]
    assert rows["labels"] == [("q-1", "rb-3", 1), ("q-2", "rb-1", 3), ("q-2", "rb-2", 2), ("q-2", "rb-4", 0),
                              ("q-4", "hr-1", 1), ("q-5", "FR940202-2-00150", 1)]
    assert rows["expected_claims"] == [("q-1", "monday", "The release window starts on Monday.", ["rb-3"], []),
                                       ("q-2", "smoke", None, ["rb-2"], []), ("q-2", "switch", None, ["rb-1"], []),
                                       ("q-4", "band", None, ["hr-1"], [])]


# --- manifests and run folders -----------------------------------------------------------------------------

# manifest.json as written: '{' line 1, run_id 2, suite 3, suite_version 4, corpus_version 5, created_at 6,
# code_revision 7, retrieval 8-11, k 12, prompt_revision 13, model 14, generation 15-17, rubric_version 18,
# group 19, repeat 20, notes 21.
MANIFEST_LINES = {"run_id": 2, "suite": 3, "suite_version": 4, "corpus_version": 5, "created_at": 6,
                  "code_revision": 7, "retrieval": 8, "k": 12, "prompt_revision": 13, "model": 14,
                  "generation": 15, "rubric_version": 18, "group": 19, "repeat": 20, "notes": 21}
REQUIRED = ("run_id", "suite", "suite_version", "corpus_version", "created_at", "code_revision", "retrieval", "k",
            "prompt_revision", "model", "generation", "rubric_version")
K_RULE = "the context cutoff k is a whole number from 1 to 100"


def test_manifest_lines_are_as_documented_above(ws):
    text = M(ws).read_text().splitlines()
    for key, line in MANIFEST_LINES.items():
        assert text[line - 1].lstrip().startswith(f'"{key}"'), key


@pytest.mark.parametrize("key", REQUIRED)
def test_manifest_required_field_missing(ws, key):
    drop_key(M(ws), key)
    assert check(ws) == [f"{MANIFEST}:1: field '{key}': required manifest field is missing"]


@pytest.mark.parametrize("key", REQUIRED)
def test_manifest_required_field_null(ws, key):
    set_key(M(ws), key, None)
    assert check(ws) == [f"{MANIFEST}:{MANIFEST_LINES[key]}: field '{key}': required manifest field is missing"]


@pytest.mark.parametrize("k", [0, 101, 1000, -1, 2.5, 2.0, "3", True])
def test_manifest_k_outside_1_to_100(ws, k):
    set_key(M(ws), "k", k)
    assert check(ws) == [f"{MANIFEST}:12: field 'k': {k!r}: {K_RULE}"]


@pytest.mark.parametrize("k", [1, 100])
def test_manifest_k_at_the_bounds_is_valid(ws, k):
    set_key(M(ws), "k", k)
    assert check(ws) == []


DIFFERS = "re-run against the current suite or keep the older suite version in its own workspace"

MANIFEST_CASES: list[tuple[str, Callable[[Path], object], list[str]]] = [
    ("manifest missing", lambda ws: M(ws).unlink(),
     [f"{MANIFEST}: cannot read the file (No such file or directory)"]),
    ("manifest truncated after '\"k\": '",
     lambda ws: M(ws).write_text(M(ws).read_text()[:M(ws).read_text().index('"k": ') + 5]),
     [f"{MANIFEST}:12: not valid JSON (Expecting value)"]),
    ("manifest with a byte-order mark", lambda ws: M(ws).write_bytes(b"\xef\xbb\xbf" + M(ws).read_bytes()),
     [f"{MANIFEST}:1: the file starts with a byte-order mark; save it as UTF-8 without BOM"]),
    ("manifest a list", lambda ws: M(ws).write_text("[1]"), [f"{MANIFEST}:1: expected a JSON object"]),
    ("manifest unknown field", lambda ws: set_key(M(ws), "temperature", 0.2),
     [f"{MANIFEST}:22: field 'temperature': unknown field (allowed: code_revision, corpus_version, created_at, "
      "generation, group, k, model, notes, prompt_revision, release, repeat, retrieval, rubric_version, run_id, suite, "
      "suite_version; prefix extensions with x_)"]),
    ("manifest model a number", lambda ws: set_key(M(ws), "model", 7),
     [f"{MANIFEST}:14: field 'model': 7: expected a non-empty string"]),
    ("manifest created_at blank", lambda ws: set_key(M(ws), "created_at", ""),
     [f"{MANIFEST}:6: field 'created_at': '': expected a non-empty string"]),
    ("manifest retrieval a string", lambda ws: set_key(M(ws), "retrieval", "bm25"),
     [f"{MANIFEST}:8: field 'retrieval': 'bm25': expected an object of settings"]),
    ("manifest generation a list", lambda ws: set_key(M(ws), "generation", []),
     [f"{MANIFEST}:15: field 'generation': []: expected an object of settings"]),
    ("manifest run_id differs from its folder", lambda ws: set_key(M(ws), "run_id", "cand"),
     [f"{MANIFEST}:2: field 'run_id': 'cand' must equal the folder name 'base'"]),
    ("manifest group blank", lambda ws: set_key(M(ws), "group", " "),
     [f"{MANIFEST}:19: field 'group': ' ': expected a non-empty string"]),
    ("manifest repeat 0", lambda ws: set_key(M(ws), "repeat", 0),
     [f"{MANIFEST}:20: field 'repeat': 0: a repeat number is a whole number >= 1"]),
    ("manifest repeat a string", lambda ws: set_key(M(ws), "repeat", "1"),
     [f"{MANIFEST}:20: field 'repeat': '1': a repeat number is a whole number >= 1"]),
    ("manifest repeat beyond an INTEGER", lambda ws: set_key(M(ws), "repeat", 2**31),
     [f"{MANIFEST}:20: field 'repeat': 2147483648: a repeat number is at most 2147483647"]),
    ("manifest notes a number", lambda ws: set_key(M(ws), "notes", 1),
     [f"{MANIFEST}:21: field 'notes': 1: expected a string"]),
    ("manifest suite unknown", lambda ws: set_key(M(ws), "suite", "other"),
     [f"{MANIFEST}:3: field 'suite': 'other' is not a suite of this workspace"]),
    ("manifest suite_version differs", lambda ws: set_key(M(ws), "suite_version", "2"),
     [f"{MANIFEST}:4: field 'suite_version': '2' differs from suite 'demo' (suite_version '3'); {DIFFERS}"]),
    # A run declared against another (older) corpus is valid; comparisons refuse it (docs/formats.md).
    ("manifest corpus_version differs", lambda ws: set_key(M(ws), "corpus_version", "corpus-0"), []),
    ("manifest rubric_version differs", lambda ws: set_key(M(ws), "rubric_version", "rubric-2"),
     [f"{MANIFEST}:18: field 'rubric_version': 'rubric-2' differs from suite 'demo' (rubric_version 'rubric-1'); "
      f"{DIFFERS}"]),
    ("manifest key twice", lambda ws: M(ws).write_text(M(ws).read_text().replace('"k": 2,', '"k": 2, "k": 3,')),
     [f"{MANIFEST}: not valid JSON (a key appears twice in one object: 'k')"]),
    ("run folder without records", lambda ws: R(ws).unlink(),
     ["runs/base: the run folder has no records.jsonl or records.parquet"]),
    ("run folder with both records files", lambda ws: shutil.copy(R(ws), R(ws).with_suffix(".parquet")),
     ["runs/base: the run folder holds both records.jsonl and records.parquet"]),
    ("run folder name malformed", lambda ws: (ws / "runs" / "base").rename(ws / "runs" / "my run"),
     ["runs/my run: a suite or run folder name is 1-64 of letters, digits, '.', '_', '-'",
      "runs/my run/manifest.json:2: field 'run_id': 'base' must equal the folder name 'my run'"]),
    ("suite folder name too long", lambda ws: (ws / "suites" / "demo").rename(ws / "suites" / ("s" * 65)),
     None),
    ("no suites folder", lambda ws: shutil.rmtree(ws / "suites"),
     ["suites: a workspace needs suites/<suite>/ folders",
      f"{MANIFEST}:3: field 'suite': 'demo' is not a suite of this workspace",
      "runs/cand/manifest.json:3: field 'suite': 'demo' is not a suite of this workspace"]),
    ("suite.json broken: its runs are not reported again", lambda ws: S(ws).write_text("{"),
     [f"{SUITE_JSON}:1: not valid JSON (Expecting property name enclosed in double quotes)"]),
]


@pytest.mark.parametrize("name, mutate, expected", MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES])
@pytest.mark.cases(12)
def test_manifest_and_folder_rule(ws, name, mutate, expected):
    mutate(ws)
    found = check(ws)
    if expected is None:  # the long folder name: named once, and its suite's runs not re-reported
        name_rule = "a suite or run folder name is 1-64 of letters, digits, '.', '_', '-'"
        assert f"suites/{'s' * 65}: {name_rule}" in found
        return
    assert sorted(found) == sorted(expected)


def test_workspace_folder_missing(tmp_path):
    with pytest.raises(ValidationError) as caught:
        refresh(tmp_path / "nowhere", tmp_path / "scores.duckdb")
    assert str(caught.value) == f"{tmp_path}/nowhere: the workspace folder does not exist"


# --- every problem at once, through refresh ----------------------------------------------------------------


def test_problems_in_a_suite_and_two_runs_are_all_reported(ws, tmp_path):
    set_field(Q(ws), 3, "split", "test")                      # suite
    set_key(M(ws), "k", 0)                                    # run base: manifest
    set_field(run_file(ws, "cand"), 2, "latency_ms", -5)      # run cand: two records
    set_field(run_file(ws, "cand"), 4, "retrieved", ["nope"])
    db = tmp_path / "scores.duckdb"
    with pytest.raises(ValidationError) as caught:
        refresh(ws, db)
    assert not db.exists()
    shown = [line.replace(f"{ws}/", "") for line in str(caught.value).splitlines()]
    assert shown == [
        f"{MANIFEST}:12: field 'k': 0: {K_RULE}",
        f"{CAND}:2: question 'q-2': field 'latency_ms': -5: expected a finite number >= 0 or null",
        f"{CAND}:4: question 'q-4': field 'retrieved': 'nope' is not a document of suite 'demo' v3",
        f"{QUESTIONS}:3: question 'q-3': field 'split': 'test': expected 'dev' or 'heldout'",
    ]
    assert len(caught.value.problems) == 4
    assert [(p.path.replace(f"{ws}/", ""), p.line, p.question, p.field) for p in caught.value.problems] == [
        (MANIFEST, 12, None, "k"), (CAND, 2, "q-2", "latency_ms"), (CAND, 4, "q-4", "retrieved"),
        (QUESTIONS, 3, "q-3", "split"),
    ]


def test_many_problems_are_counted_beyond_the_first_fifty(ws):
    for line in range(1, 5):
        set_field(R(ws), line, "latency_ms", -1)
        set_field(R(ws), line, "cost_usd", -1)
        set_field(R(ws), line, "answer", 0)
    rows = [json.loads(raw) for raw in lines(R(ws))]
    write_jsonl(R(ws), [dict(rows[i % 4], question_id=f"q-x{i}") for i in range(60)])
    found = check(ws)
    assert found[-1] == "... and 190 more problems"   # 60 lines x 4 problems (unknown question + 3 fields)
    assert len(found) == 51


def test_a_new_run_with_a_bad_manifest_is_reported_on_a_refresh_that_changes_nothing_else(ws, tmp_path):
    """A refresh must fail on any problem, even when no stored suite or run changed."""
    db = tmp_path / "scores.duckdb"
    refresh(ws, db)
    write_json(ws / "runs" / "late" / "manifest.json", manifest("late", k=0))
    write_jsonl(ws / "runs" / "late" / "records.jsonl", RECORDS["base"])
    with pytest.raises(ValidationError, match=r"runs/late/manifest.json:12: field 'k': 0: "):
        refresh(ws, db)


def test_the_id_rule_reads_alike_in_python_and_in_sql():
    """`WHITESPACE` is every character Python counts as whitespace, and the ID pattern refuses each one
    in DuckDB as in Python (RE2's `\\s` alone is ASCII)."""
    from scoring.store.files import ID_PATTERN, WHITESPACE, WORKSPACE_ID

    assert set(WHITESPACE) == {chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()}
    samples = [f"a{c}b" for c in WHITESPACE] + ["a\x00b", "a\x9fb", "doc#3", "é-1", "x" * 128, "x" * 129, ""]
    con = duckdb.connect()
    in_sql = [con.execute("SELECT regexp_full_match(?, ?)", [s, ID_PATTERN]).fetchone()[0] for s in samples]
    assert in_sql == [WORKSPACE_ID.fullmatch(s) is not None for s in samples]
    assert in_sql[-5:] == [True, True, True, False, False] and not any(in_sql[:-5])


# --- every declared field, broken alone, is refused by every path at the same file, line and field ------
#
# The cases come from the declaration (`scoring.store.formats`), not from a list written here: for each
# field of each line format, its absence (when required), null (when null is no value of it), a value of
# another JSON type, a list holding an item of another type, the values its kind refuses, and one more
# than each bound. A suite line is read by the Python reader's fast path and its full checks (which must
# agree) and by the set-based reader (which must refuse it); a record by the rule-by-rule checks (which
# must name it) and by the bulk path (which must refuse it).

from scoring.metrics.reference import MAX_CLAIMS  # noqa: E402
from scoring.store import formats  # noqa: E402
from test_bulk import _bulk_verdict  # noqa: E402

_JSON_TYPES = ((7, "UBIGINT"), ("word", "VARCHAR"), (True, "BOOLEAN"), ([], "ARRAY"), ({}, "OBJECT"))
"""A value of each JSON type, as DuckDB's `json_type` names it."""


def _sample(kind: formats.Kind, i: int = 0) -> Any:
    """A value of `kind` (the `i`-th of many distinct ones, for an ID)."""
    if isinstance(kind.items, formats.Format):
        return []
    return {"ID": f"x{i}", "ID or index": f"x{i}", "number": 1}.get(kind.name, [] if kind.items else "Words.")


def _item(kind: formats.Kind, i: int) -> Any:
    """The `i`-th of many distinct valid items of the list kind `kind`."""
    if isinstance(kind.items, formats.Format):
        return {f.name: _sample(f.kind, i) for f in kind.items.fields if f.missing is not None}
    return _sample(kind.items, i)


def _violations(declared: formats.Field) -> list[tuple[str, Any]]:
    """(label, value) that break `declared` alone; ABSENT: the field left out."""
    kind = declared.kind
    out: list[tuple[str, Any]] = []
    if declared.missing is not None:
        out.append(("absent", ABSENT))
    if declared.missing is not None or not declared.null_absent:
        out.append(("null", None))
    out += [(f"a {name} value", value) for value, name in _JSON_TYPES if name not in kind.types][:2]
    if kind.items is not None:
        item_types = ("OBJECT",) if isinstance(kind.items, formats.Format) else kind.items.types
        out.append(("an item of another type", [next(v for v, name in _JSON_TYPES if name not in item_types)]))
    out += [(f"refused {value!r}"[:40], value) for value in kind.refused]
    for bound in declared.bounds:
        most = MAX_CLAIMS if bound.most == formats.MAX_CLAIMS_OF_SUITE else bound.most
        out.append((f"beyond {most}", [_item(kind, i) for i in range(most + 1)] if bound.size else most + 1))
    return out


DECLARED_CASES = [(name, f.name, label, value) for name, declared in (
    ("document", formats.DOCUMENT), ("chunk", formats.CHUNK), ("question", formats.QUESTION),
    ("record", formats.RECORD), ("claim", formats.CLAIM), ("sentence", formats.SENTENCE))
    for f in declared.fields for label, value in _violations(f)]

VALID_CHUNK = {"id": "rb-1#0", "doc": "rb-1", "doc_version": SUITE_META["corpus_version"], "text": "One.",
               "start": 0, "end": 4}


def _with(valid: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    return {k: v for k, v in {**valid, key: value}.items() if v is not ABSENT}


def _suite_refused_alike(folder: Path, kind: str, key: str, value: Any) -> None:
    """The suite with one field of one line broken: the Python reader's routes report the same problems,
    each on that line, one of them on that field; the set-based reader refuses the suite."""
    document = _with(VALID_DOCUMENT, key, value) if kind == "document" else VALID_DOCUMENT
    question = _with(VALID_QUESTION, key, value) if kind == "question" else VALID_QUESTION
    chunk = _with(VALID_CHUNK, key, value) if kind == "chunk" else VALID_CHUNK
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chunks.jsonl").write_text(json.dumps(chunk) + "\n", encoding="utf-8")
    taken = _both_routes(folder, [document], [question])   # fast route and full checks agree
    assert not taken, "the set-based reader took a suite the rules refuse"
    problems, _ = _read_suite(folder)
    file, line = {"document": ("documents.jsonl", 3), "chunk": ("chunks.jsonl", 1),
                  "question": ("questions.jsonl", 1)}[kind]
    where = {(Path(p.path).name, p.line) for p in problems}
    assert where == {(file, line)}, [str(p) for p in problems]
    assert key in {p.field for p in problems}, [str(p) for p in problems]


def _record_refused_alike(ws: Path, kind: str, key: str, value: Any) -> None:
    """The fixture with one field of base line 1 (or of its first claim, or of an answer sentence) broken:
    the rule-by-rule checks name that line and field, the bulk path refuses the runs."""
    if kind == "record":
        edit_line(R(ws), 1, lambda row: row.pop(key) if value is ABSENT else row.__setitem__(key, value))
        field = key
    elif kind == "claim":
        claim(lambda c: c.pop(key) if value is ABSENT else c.__setitem__(key, value))(ws)
        field = f".{key}"
    else:
        set_field(R(ws), 1, "answer_sentences", [_with({"text": "Monday.", "citations": [0]}, key, value)])
        field = f"answer_sentences[0].{key}"
    assert not _bulk_verdict(ws), "the bulk path took records the rules refuse"
    found = [line for line in check(ws) if line.startswith(f"{BASE}:1: ")]
    assert any(f"field '{field}'" in line if kind == "record" else
               re.search(rf"field '[^']*{re.escape(field)}'", line) for line in found), (field, check(ws))


@pytest.mark.parametrize("kind, key, label, value", DECLARED_CASES,
                         ids=[f"{kind}-{key}-{label}" for kind, key, label, _ in DECLARED_CASES])
@pytest.mark.cases(48)
def test_every_declared_field_broken_alone_is_refused_alike_by_every_path(tmp_path, kind, key, label, value):
    if kind in ("document", "chunk", "question"):
        _suite_refused_alike(tmp_path / "suites" / "demo", kind, key, value)
    else:
        _record_refused_alike(build(tmp_path / "ws"), kind, key, value)


def test_the_unbroken_lines_of_the_declared_cases_are_taken_by_every_path(tmp_path):
    """The cases above start from lines every path takes: a refusal there is the broken field's."""
    folder = tmp_path / "suites" / "demo"
    folder.mkdir(parents=True)
    (folder / "chunks.jsonl").write_text(json.dumps(VALID_CHUNK) + "\n", encoding="utf-8")
    assert _both_routes(folder, [VALID_DOCUMENT], [VALID_QUESTION])
    ws = build(tmp_path / "ws")
    set_field(R(ws), 1, "answer_sentences", [{"text": "Monday.", "citations": [0]}])
    assert _bulk_verdict(ws) and check(ws) == []


def test_every_declared_field_has_a_case():
    """No field, and no kind of violation a field's declaration implies, is left without a case."""
    for declared in (formats.DOCUMENT, formats.CHUNK, formats.QUESTION, formats.RECORD, formats.CLAIM,
                     formats.SENTENCE):
        for f in declared.fields:
            labels = [label for kind, key, label, _ in DECLARED_CASES if (kind, key) == (declared.name, f.name)]
            assert any(label.startswith("a ") for label in labels), (declared.name, f.name)
            assert ("absent" in labels) == (f.missing is not None), (declared.name, f.name)
            assert len([label for label in labels if label.startswith("beyond")]) == len(f.bounds)

"""A corpus of hostile workspaces: each is refused with exit code 2, a message naming file, line and
rule, no traceback, and the database byte-for-byte as it was.

Every case starts from a database that holds a good refresh of the valid workspace, breaks one
file, and runs `ragslice refresh` (in-process through `scoring.cli.main`; a handful also as real
subprocesses). Inputs that docs/formats.md declares valid (blank lines, CRLF, `x_` fields, citations
outside the suite) are in the `accepted_*` cases and must refresh cleanly instead.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb
import pytest

from scoring.cli import main
from fixtures import (
    D, M, Q, R, S,
    DOCUMENTS, QUESTIONS, RECORDS, append_line, build, drop_field, drop_key, edit_line, fingerprint, lines,
    manifest, replace_line, set_field, set_key, write_json, write_jsonl,
)

RAGSLICE = Path(sys.executable).with_name("ragslice")
BASE = "runs/base/records.jsonl"
CAND = "runs/cand/records.jsonl"
MANIFEST = "runs/base/manifest.json"
SUITE_JSON = "suites/demo/suite.json"
DOCS = "suites/demo/documents.jsonl"
QUESTIONS_FILE = "suites/demo/questions.jsonl"
MiB = 1024 * 1024


@dataclass(frozen=True)
class Bad:
    name: str
    mutate: Callable[[Path], object]
    path: str
    line: int | None
    rule: str
    """A fragment of the rule text expected on the reported line."""


def truncate(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


def raw_edit(path: Path, line: int, old: bytes, new: bytes) -> None:
    assert old in lines(path)[line - 1]
    replace_line(path, line, lines(path)[line - 1].replace(old, new))


def claim(change: Callable[[dict], object]) -> Callable[[Path], object]:
    return lambda ws: edit_line(R(ws), 1, lambda obj: change(obj["claims"][0]))


def new_run(ws: Path, run_id: str, *, k: object = 2, records: bool = True) -> None:
    write_json(ws / "runs" / run_id / "manifest.json", manifest(run_id, k=k))
    if records:
        write_jsonl(ws / "runs" / run_id / "records.jsonl", RECORDS["base"])


CASES: list[Bad] = [
    # truncated JSON
    Bad("truncated records file", lambda ws: truncate(R(ws), len(R(ws).read_bytes()) - 25), BASE, 4, "not valid JSON"),
    Bad("truncated manifest", lambda ws: truncate(M(ws), M(ws).read_text().index('"model"') + 3), MANIFEST, 14,
        "not valid JSON"),
    Bad("truncated suite.json", lambda ws: truncate(S(ws), S(ws).read_text().index('"corpus_version"')), SUITE_JSON, 4,
        "not valid JSON (Expecting property name enclosed in double quotes)"),
    Bad("truncated questions file", lambda ws: truncate(Q(ws), len(Q(ws).read_bytes()) - 10), QUESTIONS_FILE, 5,
        "not valid JSON"),
    Bad("truncated documents line", lambda ws: replace_line(D(ws), 2, '{"id": "rb-2", "te'), DOCS, 2,
        "not valid JSON"),
    # wrong types
    Bad("record is an array", lambda ws: replace_line(R(ws), 2, '["q-2", ["rb-1"]]'), BASE, 2,
        "expected a JSON object on each line"),
    Bad("retrieved is a string", lambda ws: set_field(R(ws), 1, "retrieved", "rb-3 rb-4"), BASE, 1,
        "field 'retrieved': 'rb-3 rb-4': expected a list of document IDs"),
    Bad("claims is a map", lambda ws: set_field(R(ws), 1, "claims", {"monday": ["rb-3"]}), BASE, 1,
        "field 'claims': {'monday': ['rb-3']}: expected a list of"),
    Bad("latency is a string", lambda ws: set_field(R(ws), 3, "latency_ms", "300ms"), BASE, 3,
        "field 'latency_ms': '300ms': expected a finite number >= 0 or null"),
    Bad("question text is a number", lambda ws: set_field(Q(ws), 3, "text", 42), QUESTIONS_FILE, 3,
        "field 'text': 42: expected a non-empty string"),
    Bad("grade beyond any scale", lambda ws: set_field(Q(ws), 1, "relevant", {"rb-3": 2**40}), QUESTIONS_FILE, 1,
        "field \"relevant['rb-3']\": 1099511627776: a relevance grade lies between -1000 and 1000"),
    Bad("k is a string", lambda ws: set_key(M(ws), "k", "5"), MANIFEST, 12,
        "field 'k': '5': the context cutoff k is a whole number from 1 to 100"),
    Bad("manifest is an array", lambda ws: M(ws).write_text('[{"run_id": "base"}]'), MANIFEST, 1,
        "expected a JSON object"),
    Bad("question_id is null", lambda ws: set_field(R(ws), 2, "question_id", None), BASE, 2,
        "field 'question_id': None: expected a string ID"),
    # byte-order marks and non-UTF-8 bytes
    Bad("BOM in records", lambda ws: R(ws).write_bytes(b"\xef\xbb\xbf" + R(ws).read_bytes()), BASE, 1,
        "byte-order mark"),
    Bad("BOM in documents", lambda ws: D(ws).write_bytes(b"\xef\xbb\xbf" + D(ws).read_bytes()), DOCS, 1,
        "byte-order mark"),
    Bad("BOM in manifest", lambda ws: M(ws).write_bytes(b"\xef\xbb\xbf" + M(ws).read_bytes()), MANIFEST, 1,
        "byte-order mark"),
    Bad("Latin-1 byte in records", lambda ws: raw_edit(R(ws), 2, b"Switch", b"Sw\xeftch"), BASE, 2,
        "the line is not valid UTF-8"),
    Bad("Latin-1 byte in questions", lambda ws: raw_edit(Q(ws), 3, b"region", b"r\xe9gion"), QUESTIONS_FILE, 3,
        "the line is not valid UTF-8"),
    Bad("Latin-1 byte in suite.json", lambda ws: S(ws).write_bytes(S(ws).read_bytes().replace(b"Small", b"Sm\xe0ll")),
        SUITE_JSON, 6, "the file is not valid UTF-8"),
    Bad("UTF-16 records", lambda ws: R(ws).write_bytes(R(ws).read_text().encode("utf-16-le")), BASE, 1,
        "not valid JSON"),
    Bad("NUL byte in a record", lambda ws: raw_edit(R(ws), 2, b'"answer"', b'"ans\x00wer"'), BASE, 2,
        "not valid JSON"),
    # empty files
    Bad("empty records file", lambda ws: R(ws).write_bytes(b""), BASE, None, "the file holds no records"),
    Bad("records file of blank lines", lambda ws: R(ws).write_bytes(b"\n\n  \n"), BASE, None,
        "the file holds no records"),
    Bad("empty documents file", lambda ws: D(ws).write_bytes(b""), DOCS, None, "the file holds no records"),
    Bad("empty questions file", lambda ws: Q(ws).write_bytes(b""), QUESTIONS_FILE, None, "the file holds no records"),
    Bad("empty manifest", lambda ws: M(ws).write_bytes(b""), MANIFEST, 1, "not valid JSON"),
    Bad("empty suite.json", lambda ws: S(ws).write_bytes(b""), SUITE_JSON, 1, "not valid JSON"),
    # lines of several megabytes
    Bad("9 MB record line", lambda ws: set_field(R(ws), 2, "context", "x" * (9 * MiB)), BASE, 2,
        "line longer than 8 MiB"),
    Bad("9 MB document line", lambda ws: set_field(D(ws), 7, "text", "y" * (9 * MiB)), DOCS, 7,
        "line longer than 8 MiB"),
    Bad("9 MB ranking of document IDs",
        lambda ws: set_field(R(ws), 1, "retrieved", ["d" * 100] * (9 * MiB // 104)), BASE, 1,
        "line longer than 8 MiB"),
    # duplicate and malformed IDs
    Bad("duplicate record", lambda ws: append_line(R(ws), RECORDS["base"][1]), BASE, 5,
        "'q-2' appears on more than one line of this run (first on line 2)"),
    Bad("duplicate document", lambda ws: append_line(D(ws), DOCUMENTS[2]), DOCS, 8,
        "field 'id': 'rb-3': duplicate document ID"),
    Bad("duplicate question", lambda ws: append_line(Q(ws), QUESTIONS[4]), QUESTIONS_FILE, 6,
        "field 'id': 'q-5': duplicate question ID"),
    Bad("duplicate claim in an answer", lambda ws: set_field(R(ws), 1, "claims", [
        {"id": "monday", "citations": ["rb-3"]}, {"id": "monday", "citations": ["rb-4"]}]), BASE, 1,
        "'monday' is claimed twice in one answer"),
    Bad("duplicate retrieved document", lambda ws: set_field(R(ws), 2, "retrieved", ["rb-1", "rb-2", "rb-1"]),
        BASE, 2, "'rb-1' appears twice in the ranking (first at rank 1)"),
    Bad("duplicate citation", claim(lambda c: c.__setitem__("citations", ["rb-3", "rb-3"])), BASE, 1,
        "'rb-3' is cited twice by one claim"),
    Bad("record key twice", lambda ws: raw_edit(R(ws), 1, b'"error": null', b'"error": null, "error": "x"'), BASE, 1,
        "a key appears twice in one object"),
    Bad("question ID with a space", lambda ws: set_field(R(ws), 2, "question_id", "q 2"), BASE, 2,
        "field 'question_id': 'q 2': an ID is 1-128 characters"),
    Bad("retrieved ID with a tab", lambda ws: set_field(R(ws), 2, "retrieved", ["rb-1", "rb\t2"]), BASE, 2,
        "field 'retrieved': 'rb\\t2': an ID is 1-128 characters"),
    Bad("document ID of 129 characters", lambda ws: set_field(D(ws), 7, "id", "s" * 129), DOCS, 7,
        "an ID is 1-128 characters"),
    Bad("claim ID empty", claim(lambda c: c.__setitem__("id", "")), BASE, 1, "an ID is 1-128 characters"),
    Bad("question ID in suite with a newline", lambda ws: set_field(Q(ws), 5, "id", "q\n5"), QUESTIONS_FILE, 5,
        "an ID is 1-128 characters"),
    # unknown documents and questions
    Bad("unknown retrieved document", lambda ws: set_field(R(ws), 2, "retrieved", ["rb-1", "rb-99"]), BASE, 2,
        "'rb-99' is not a document of suite 'demo' v3"),
    Bad("unknown relevant document", lambda ws: set_field(Q(ws), 3, "relevant", ["rb-99"]), QUESTIONS_FILE, 3,
        "'rb-99' is not a document of suite 'demo' v3"),
    Bad("unknown question", lambda ws: set_field(R(ws), 3, "question_id", "q-99"), BASE, 3,
        "'q-99' is not a question of suite 'demo'"),
    Bad("unknown suite", lambda ws: set_key(M(ws), "suite", "elsewhere"), MANIFEST, 3,
        "'elsewhere' is not a suite of this workspace"),
    # version mismatches
    Bad("suite version mismatch", lambda ws: set_key(S(ws), "version", "4"), MANIFEST, 4,
        "field 'suite_version': '3' differs from suite 'demo' (suite_version '4')"),
    Bad("rubric version mismatch", lambda ws: set_key(M(ws), "rubric_version", "rubric-0"), MANIFEST, 18,
        "field 'rubric_version': 'rubric-0' differs from suite 'demo'"),
    # missing manifest fields
    Bad("manifest without model", lambda ws: drop_key(M(ws), "model"), MANIFEST, 1,
        "field 'model': required manifest field is missing"),
    Bad("manifest without k", lambda ws: drop_key(M(ws), "k"), MANIFEST, 1,
        "field 'k': required manifest field is missing"),
    Bad("manifest with null suite_version", lambda ws: set_key(M(ws), "suite_version", None), MANIFEST, 4,
        "field 'suite_version': required manifest field is missing"),
    # NaN and negative latency
    Bad("NaN latency", lambda ws: raw_edit(R(ws), 1, b"812.5", b"NaN"), BASE, 1,
        "field 'latency_ms': nan: expected a finite number >= 0 or null"),
    Bad("negative latency", lambda ws: set_field(R(ws), 2, "latency_ms", -640), BASE, 2,
        "field 'latency_ms': -640: expected a finite number >= 0 or null"),
    Bad("infinite cost", lambda ws: raw_edit(R(ws), 1, b"0.0031", b"-Infinity"), BASE, 1,
        "field 'cost_usd': -inf: expected a finite number >= 0 or null"),
    # k of 0 or 1000
    Bad("k of 0", lambda ws: set_key(M(ws), "k", 0), MANIFEST, 12, "field 'k': 0: the context cutoff k"),
    Bad("k of 1000", lambda ws: set_key(M(ws), "k", 1000), MANIFEST, 12, "field 'k': 1000: the context cutoff k"),
    # citations lists that are not lists, 101-item lists
    Bad("citations a string", claim(lambda c: c.__setitem__("citations", "rb-3")), BASE, 1,
        "citations': 'rb-3': expected a list of document IDs (use [] for none)"),
    Bad("citations null", claim(lambda c: c.__setitem__("citations", None)), BASE, 1,
        "citations': None: expected a list of document IDs"),
    Bad("citations an object", claim(lambda c: c.__setitem__("citations", {"rb-3": True})), BASE, 1,
        "citations': {'rb-3': True}: expected a list of document IDs"),
    Bad("101 citations", claim(lambda c: c.__setitem__("citations", [f"d{i}" for i in range(101)])), BASE, 1,
        "citations': 101: a claim cites at most 100 documents"),
    Bad("101 claims", lambda ws: set_field(R(ws), 2, "claims", [{"id": f"c{i}", "citations": []} for i in range(101)]),
        BASE, 2, "field 'claims': 101: an answer holds at most 100 claims"),
    Bad("1001 retrieved", lambda ws: set_field(R(ws), 2, "retrieved", [f"d{i}" for i in range(1001)]), BASE, 2,
        "field 'retrieved': 1001: a ranking holds at most 1000 documents"),
    Bad("101 supporting documents", lambda ws: set_field(Q(ws), 5, "support", {"c": [f"d{i}" for i in range(101)]}),
        QUESTIONS_FILE, 5, "at most 100 IDs are allowed, found 101"),
    # run folders
    Bad("run_id differs from the folder", lambda ws: set_key(M(ws), "run_id", "other"), MANIFEST, 2,
        "must equal the folder name 'base'"),
    Bad("records.parquet that is not Parquet", lambda ws: R(ws).rename(R(ws).with_suffix(".parquet")),
        "runs/base/records.parquet", None, "cannot read the Parquet file"),
    Bad("records.jsonl and records.parquet together", lambda ws: shutil.copy(R(ws), R(ws).with_suffix(".parquet")),
        "runs/base", None, "holds both records.jsonl and records.parquet"),
    Bad("deeply nested record", lambda ws: replace_line(R(ws), 2, "[" * 50_000 + "]" * 50_000), BASE, 2,
        "expected a JSON object on each line"),
    Bad("deeply nested manifest", lambda ws: M(ws).write_text('{"x_a": ' + "[" * 50_000 + "]" * 50_000 + "}"),
        MANIFEST, None, "not valid JSON (nested too deeply)"),
    # a new run added next to unchanged, stored ones: nothing stored changes, the refresh must still fail
    Bad("new run with k of 0", lambda ws: new_run(ws, "late", k=0), "runs/late/manifest.json", 12,
        "field 'k': 0: the context cutoff k"),
    Bad("new run without records", lambda ws: new_run(ws, "late", records=False), "runs/late", None,
        "has no records.jsonl or records.parquet"),
]

ACCEPTED: list[tuple[str, Callable[[Path], object]]] = [
    ("accepted_blank_lines_between_records", lambda ws: R(ws).write_bytes(R(ws).read_bytes().replace(b"\n", b"\n\n"))),
    ("accepted_whitespace_only_line", lambda ws: append_line(Q(ws), b" \t \r")),
    ("accepted_crlf_line_ends", lambda ws: D(ws).write_bytes(D(ws).read_bytes().replace(b"\n", b"\r\n"))),
    ("accepted_x_extension_fields", lambda ws: (set_field(R(ws), 2, "x_trace", {"id": 1}),
                                                 set_field(D(ws), 1, "x_source", "wiki"))),
    ("accepted_citation_outside_the_suite", claim(lambda c: c.__setitem__("citations", ["not-in-suite"]))),
    ("accepted_null_latency_and_cost", lambda ws: (set_field(R(ws), 2, "latency_ms", None),
                                                    set_field(R(ws), 2, "cost_usd", None))),
    ("accepted_missing_optional_answer_and_context", lambda ws: (drop_field(R(ws), 1, "answer"),
                                                                 drop_field(R(ws), 1, "context"))),
    ("accepted_no_trailing_newline", lambda ws: R(ws).write_bytes(R(ws).read_bytes().rstrip(b"\n"))),
    ("accepted_declared_older_corpus_version", lambda ws: set_key(M(ws), "corpus_version", "corpus-0")),
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A folder holding the valid workspace `ws/` and `scores.duckdb`, a good refresh of it."""
    root = tmp_path_factory.mktemp("stored")
    build(root / "ws")
    assert main(["refresh", str(root / "ws"), "--db", str(root / "scores.duckdb"), "--quiet"]) == 0
    return root


@pytest.fixture
def case_dir(stored: Path, tmp_path: Path) -> Path:
    shutil.copytree(stored, tmp_path / "case")
    return tmp_path / "case"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def expected_prefix(ws: Path, case: Bad) -> str:
    return f"{ws}/{case.path}:{case.line}: " if case.line else f"{ws}/{case.path}: "


def assert_refused(case: Bad, ws: Path, db: Path, before: str, code: int, err: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines_ = err.splitlines()
    assert lines_[0] == "ragslice refresh: invalid input"
    prefix = expected_prefix(ws, case)
    assert any(line.startswith(prefix) and case.rule in line for line in lines_[1:]), (prefix, case.rule, err)
    assert digest(db) == before
    assert [p.name for p in db.parent.iterdir() if p.name.startswith(".scores.duckdb.refresh-")] == []


def test_the_corpus_has_at_least_40_cases():
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.cases(24)
def test_bad_input_is_refused_and_the_database_is_unchanged(case: Bad, case_dir: Path, capsys):
    ws, db = case_dir / "ws", case_dir / "scores.duckdb"
    before = digest(db)
    case.mutate(ws)
    code = main(["refresh", str(ws), "--db", str(db), "--quiet"])
    out, err = capsys.readouterr()
    assert out == ""
    assert_refused(case, ws, db, before, code, err)


SUBPROCESS_CASES = ["truncated records file", "Latin-1 byte in records", "k of 1000", "NaN latency", "9 MB record line"]


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_input_through_the_real_command(name: str, case_dir: Path):
    case = next(c for c in CASES if c.name == name)
    ws, db = case_dir / "ws", case_dir / "scores.duckdb"
    before = digest(db)
    case.mutate(ws)
    result = subprocess.run([str(RAGSLICE), "refresh", str(ws), "--db", str(db)], capture_output=True, text=True,
                            timeout=120)
    assert result.stdout == ""
    assert_refused(case, ws, db, before, result.returncode, result.stderr)


@pytest.mark.parametrize("name, mutate", ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_documented_variants_are_accepted(name: str, mutate, case_dir: Path, capsys):
    ws, db = case_dir / "ws", case_dir / "scores.duckdb"
    before = fingerprint(db)
    mutate(ws)
    code = main(["refresh", str(ws), "--db", str(db), "--quiet"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.startswith(f"refreshed {db}: ")
    after = fingerprint(db)
    # Every question of both runs is still scored (5 questions x 2 runs).
    assert after["question_scores"] == before["question_scores"] == 10


def test_every_case_is_small(stored: Path):
    """The corpus stays fast: the stored workspace is a few kilobytes."""
    size = sum(p.stat().st_size for p in (stored / "ws").rglob("*") if p.is_file())
    assert size < 20_000
    with duckdb.connect(str(stored / "scores.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 2

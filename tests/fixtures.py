"""Workspaces for tests: a small valid workspace, line-level edits, a large generator, DB fingerprints.

`build(root)` writes the valid workspace `demo` (one suite, two runs) and returns its root. A test
then breaks exactly one thing with `set_field`, `drop_field`, `replace_line`, `edit_json`, ... and
expects the error to name that file and line. Everything is written below the given folder only.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Callable

import duckdb

SUITE = "demo"

SUITE_META: dict[str, Any] = {
    "name": SUITE, "version": "3", "corpus_version": "corpus-1", "rubric_version": "rubric-1",
    "description": "Small runbooks and policies.",
}

DOCUMENTS: list[dict[str, Any]] = [
    {"id": "rb-1", "title": "Rollback runbook", "text": "Switch traffic back to the previous version.",
     "version": "v2"},
    {"id": "rb-2", "title": "Smoke test", "text": "After rollback, run the smoke test."},
    {"id": "rb-3", "title": "Release window", "text": "The release window starts on Monday."},
    {"id": "rb-4", "title": "Old plan", "text": "An archived planning note."},
    {"id": "hr-1", "title": "Salary bands", "text": "L5 band is secret.", "access": ["hr"]},
    {"id": "FR940202-2-00150", "text": "A TREC-style document number."},
    {"id": "spare", "title": "Unused note", "text": "Nobody retrieves this archived note."},
]
"""Line 7 (`spare`) is labelled and retrieved nowhere: breaking it affects no other line."""

QUESTIONS: list[dict[str, Any]] = [
    {"id": "q-1", "text": "When does the release window start?", "type": "lookup", "split": "dev",
     "critical": True, "tags": ["release"], "relevant": ["rb-3"], "support": {"monday": ["rb-3"]},
     "claims": {"monday": "The release window starts on Monday."}},
    {"id": "q-2", "text": "What are the two rollback actions?", "type": "multi-evidence", "split": "heldout",
     "critical": False, "tags": [], "relevant": {"rb-1": 3, "rb-2": 2, "rb-4": 0},
     "support": {"switch": ["rb-1"], "smoke": ["rb-2"]}, "disputed": "rb-4 may also count."},
    {"id": "q-3", "text": "Which region hosts the backup?", "type": "unanswerable", "split": "dev",
     "critical": False, "tags": [], "relevant": [], "support": {}},
    {"id": "q-4", "text": "What is the L5 salary band?", "type": "permission", "split": "dev",
     "critical": True, "tags": [], "caller": ["engineering"], "relevant": ["hr-1"],
     "support": {"band": ["hr-1"]}},
    {"id": "q-5", "text": "Which document number?", "type": "lookup", "split": "dev",
     "relevant": ["FR940202-2-00150"]},
]


def manifest(run_id: str, k: int = 2, **changes: Any) -> dict[str, Any]:
    base = {
        "run_id": run_id, "suite": SUITE, "suite_version": "3", "corpus_version": "corpus-1",
        "created_at": "2026-11-20T09:12:00Z", "code_revision": "a1b2c3d",
        "retrieval": {"retriever": "bm25", "top_n": 50}, "k": k, "prompt_revision": "answer-v7",
        "model": "example-model", "generation": {"temperature": 0.0}, "rubric_version": "rubric-1",
        "group": None, "repeat": None, "notes": "A test run.",
    }
    base.update(changes)
    return base


RECORDS: dict[str, list[dict[str, Any]]] = {
    "base": [
        {"question_id": "q-1", "retrieved": ["rb-3", "rb-4"], "context": "The release window ...",
         "answer": "Monday.", "claims": [{"id": "monday", "citations": ["rb-3"], "text": "Starts Monday."}],
         "latency_ms": 812.5, "cost_usd": 0.0031, "error": None},
        {"question_id": "q-2", "retrieved": ["rb-1", "rb-4", "rb-2"], "answer": "Switch back.",
         "claims": [{"id": "switch", "citations": ["rb-1"], "text": "Switch traffic back."}],
         "latency_ms": 640, "cost_usd": 0.002, "error": None},
        {"question_id": "q-3", "retrieved": ["rb-4"], "answer": "I could not find this.", "claims": [],
         "latency_ms": 300, "cost_usd": 0, "error": None},
        {"question_id": "q-4", "retrieved": [], "answer": None, "claims": [], "latency_ms": 30000,
         "cost_usd": 0, "error": "upstream timeout"},
    ],
    "cand": [
        {"question_id": "q-1", "retrieved": ["rb-3"], "answer": "Monday.",
         "claims": [{"id": "monday", "citations": ["rb-3"], "text": None}], "latency_ms": None, "cost_usd": None,
         "error": None, "x_trace": "abc"},
        {"question_id": "q-2", "retrieved": ["rb-2", "rb-1"], "answer": "Switch back, then smoke test.",
         "claims": [{"id": "switch", "citations": ["rb-1"]}, {"id": "smoke", "citations": ["rb-2", "rb-1"]}],
         "latency_ms": 700, "cost_usd": 0.004, "error": None},
        {"question_id": "q-3", "retrieved": [], "answer": "Nothing found.", "claims": [],
         "latency_ms": 10, "cost_usd": 0, "error": None},
        {"question_id": "q-4", "retrieved": ["hr-1", "rb-4"], "answer": "Secret.",
         "claims": [{"id": "band", "citations": ["hr-1", "outside-doc"]}], "latency_ms": 1, "cost_usd": 0,
         "error": None},
        {"question_id": "q-5", "retrieved": ["FR940202-2-00150"], "answer": "That one.",
         "claims": [{"id": "doc", "citations": ["FR940202-2-00150"]}], "latency_ms": 1, "cost_usd": 0,
         "error": None},
    ],
}
"""Two runs. Line numbers are 1-based: `base` line 4 is q-4 (failed); `base` has no record for q-5."""


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def build(root: Path) -> Path:
    """Write the valid workspace `demo` into `root` (created) and return `root`."""
    suite = root / "suites" / SUITE
    write_json(suite / "suite.json", SUITE_META)
    write_jsonl(suite / "documents.jsonl", DOCUMENTS)
    write_jsonl(suite / "questions.jsonl", QUESTIONS)
    for run_id, rows in RECORDS.items():
        write_json(root / "runs" / run_id / "manifest.json", manifest(run_id, k=2 if run_id == "base" else 3))
        write_jsonl(root / "runs" / run_id / "records.jsonl", rows)
    return root


# --- paths -------------------------------------------------------------------------------------


def suite_file(root: Path, name: str) -> Path:
    return root / "suites" / SUITE / name


def run_file(root: Path, run_id: str, name: str = "records.jsonl") -> Path:
    return root / "runs" / run_id / name


# --- edits ---------------------------------------------------------------------------------------



# Short names for the base workspace's files: records (R) and manifest (M) of run 'base'; the
# suite's suite.json (S), documents.jsonl (D) and questions.jsonl (Q).
def R(ws: Path) -> Path:
    return run_file(ws, "base")


def M(ws: Path) -> Path:
    return run_file(ws, "base", "manifest.json")


def S(ws: Path) -> Path:
    return suite_file(ws, "suite.json")


def D(ws: Path) -> Path:
    return suite_file(ws, "documents.jsonl")


def Q(ws: Path) -> Path:
    return suite_file(ws, "questions.jsonl")

def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def replace_line(path: Path, line: int, raw: bytes | str) -> Path:
    """Replace 1-based `line` with `raw` (a newline is added when missing)."""
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    if not data.endswith(b"\n"):
        data += b"\n"
    rows = lines(path)
    rows[line - 1] = data
    path.write_bytes(b"".join(rows))
    return path


def append_line(path: Path, raw: bytes | str | dict) -> Path:
    data = json.dumps(raw) if isinstance(raw, dict) else raw
    data = data.encode("utf-8") if isinstance(data, str) else data
    if not data.endswith(b"\n"):
        data += b"\n"
    path.write_bytes(path.read_bytes() + data)
    return path


def edit_line(path: Path, line: int, change: Callable[[dict], Any]) -> Path:
    """Parse JSON `line`, let `change` mutate it in place (its return value is ignored), write it back."""
    obj = json.loads(lines(path)[line - 1])
    change(obj)
    return replace_line(path, line, json.dumps(obj))


def set_field(path: Path, line: int, key: str, value: Any) -> Path:
    return edit_line(path, line, lambda obj: obj.__setitem__(key, value))


def drop_field(path: Path, line: int, key: str) -> Path:
    return edit_line(path, line, lambda obj: obj.pop(key))


def edit_json(path: Path, change: Callable[[dict], Any]) -> Path:
    """Parse a JSON file, let `change` mutate it in place (its return value is ignored), write it back."""
    obj = json.loads(path.read_text(encoding="utf-8"))
    change(obj)
    return write_json(path, obj)


def set_key(path: Path, key: str, value: Any) -> Path:
    return edit_json(path, lambda obj: obj.__setitem__(key, value))


def drop_key(path: Path, key: str) -> Path:
    return edit_json(path, lambda obj: obj.pop(key))


# --- a large workspace ---------------------------------------------------------------------------


def build_large(root: Path, *, questions: int = 2000, runs: int = 4, docs_per_question: int = 3,
                seed: int = 0, variant: int = 0) -> Path:
    """A valid workspace of `questions` x `runs` records, written fast with plain string joins.

    `variant` changes the suite's description and every run's retrievals and claims (a different,
    equally valid state with the same labels)."""
    rng = random.Random(seed * 1000 + variant)
    suite = root / "suites" / "big"
    write_json(suite / "suite.json", {"name": "big", "version": "1", "corpus_version": "c1", "rubric_version": "r1",
                                      "description": f"variant {variant}"})
    n_docs = questions * docs_per_question
    write_text_lines(suite / "documents.jsonl",
                     (json.dumps({"id": f"d{i}", "text": f"document {i}"}) for i in range(n_docs)))
    qrows = []
    for q in range(questions):
        docs = [f"d{q * docs_per_question + j}" for j in range(docs_per_question)]
        answerable = q % 10 != 0
        qrows.append(json.dumps({
            "id": f"q{q}", "text": f"question {q}", "type": "lookup" if answerable else "unanswerable",
            "split": "dev" if q % 3 else "heldout", "relevant": docs[:2] if answerable else [],
            "support": {"c0": docs[:1], "c1": docs[1:2]} if answerable else {},
        }))
    write_text_lines(suite / "questions.jsonl", qrows)
    for r in range(runs):
        run_id = f"run{r}"
        write_json(root / "runs" / run_id / "manifest.json",
                   {**manifest(run_id, k=3), "suite": "big", "suite_version": "1", "corpus_version": "c1",
                    "rubric_version": "r1"})
        rows = []
        for q in range(questions):
            pool = [f"d{(q * docs_per_question + j) % n_docs}" for j in range(6)]
            rng.shuffle(pool)
            retrieved = pool[: rng.randint(0, 6)]
            claims = [{"id": f"c{c}", "citations": retrieved[c:c + 1]} for c in range(rng.randint(0, 2))]
            if rng.random() < 0.05:
                continue
            rows.append(json.dumps({"question_id": f"q{q}", "retrieved": retrieved, "claims": claims,
                                    "answer": "x", "latency_ms": rng.randint(1, 900), "cost_usd": 0.001,
                                    "error": "timeout" if rng.random() < 0.02 else None}))
        write_text_lines(root / "runs" / run_id / "records.jsonl", rows)
    return root


def write_text_lines(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")


# --- database fingerprints -----------------------------------------------------------------------

FINGERPRINT_TABLES = ("suites", "documents", "questions", "labels", "expected_claims", "runs", "records",
                      "retrieved", "claims", "question_scores")


def fingerprint(db: Path) -> dict[str, Any]:
    """Row counts per table and order-independent checksums of the scored tables, read-only."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out: dict[str, Any] = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in FINGERPRINT_TABLES}
        for table in ("question_scores", "retrieved", "claims", "records"):
            out[f"{table}#"] = con.execute(f"SELECT sum(hash(t)) FROM {table} t").fetchone()[0]
        out["runs#"] = con.execute("SELECT sum(hash(run_id, files_hash, n_records)) FROM runs").fetchone()[0]
        out["suites#"] = con.execute("SELECT sum(hash(suite, description, files_hash)) FROM suites").fetchone()[0]
        return out
    finally:
        con.close()



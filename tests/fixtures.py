"""Fixtures of the test suite: one set of workspace writers, the workspaces built with them, a running
dashboard and a headless Chromium.

- Files: `write_json` (indented, so a manifest or suite.json has one key a line), `write_jsonl`.
- Imported workspaces: `stored_scores` (refresh, then the per-question scores), `near`, `sha256_of`,
  `import_leftovers`.
- A suite folder (`write_suite_folder`: suite.json, documents, questions, chunks) and a run folder
  (`write_run_folder`: manifest.json and records.jsonl; `run_manifest` fills in `RUN_DEFAULTS`), with
  the small constructors `question`, `record`, `claim`, `hit`, `miss`, `abstain`; `write_workspace_files`
  writes a one-suite workspace from questions and runs with them.
- The valid workspace `demo` (`build`): a test breaks exactly one thing with `set_field`,
  `drop_field`, `replace_line`, `edit_json`, ... and expects the error to name that file and line.
- `build_large` (a valid workspace of any size), `fingerprint` (a database's rows, read-only), and
  `build_dashboard_workspace` (the seed-lab plus repeats, hostile text and a macro/pooled flip).
- The SQL engine fed seed-shaped Python data (`engine_rows`, `engine_scores`) and the seed table's
  number format (`display`).
- The demo's database and synthetic suites' databases, built once per test run across xdist workers
  (`built_once`: `demo_db`, `synth_db`; `copy_database` for a test that writes).
- A running dashboard (`running_dashboard`: `ragslice dashboard` as a subprocess, up when its health
  endpoint answers, always stopped) and the pieces other ways of starting it share (`launch`,
  `wait_for_health`, `stop`); Debian's headless Chromium (`chromium`, the `chrome` fixture, `new_tab`)
  and the page helpers every browser test waits with (`settle`, `visit`).

Everything is written below the given folder only.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from urllib.parse import parse_qs, urlparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
SEED_LAB = REPO / "data" / "seed-lab"

# --- files ---------------------------------------------------------------------------------------


def write_json(path: Path, value: Any) -> Path:
    """`value` as indented JSON and a final newline (a key's line number is stable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    """One JSON value a line (line n is `rows[n - 1]`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[Any]:
    """The JSON values of a JSON-lines file, blank lines skipped."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_text_lines(path: Path, rows: Iterable[str]) -> Path:
    """Rows already serialised, one a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")
    return path


# --- imported workspaces -------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file's bytes, as import provenance records it."""
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_leftovers(folder: Path) -> list[str]:
    """Temporary folders an import left beside its workspace (there should be none)."""
    return [p.name for p in folder.iterdir() if ".importing-" in p.name]


def stored_scores(ws: Path, db: Path, columns: str) -> dict[tuple[str, str], tuple]:
    """`ragslice refresh` the workspace, then (run_id, question_id) -> the `question_scores` columns."""
    from scoring.cli import main

    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(f"SELECT run_id, question_id, {columns} FROM question_scores").fetchall()
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def near(*values: float | None) -> tuple:
    """`values` for comparison to 1e-12, None (n/a) exactly."""
    return tuple(None if v is None else pytest.approx(v, abs=1e-12) for v in values)


# --- suites, runs and records --------------------------------------------------------------------

RUN_DEFAULTS: dict[str, Any] = {
    "created_at": "2026-11-01T00:00:00Z", "code_revision": "abc", "retrieval": {"m": "x"}, "k": 2,
    "prompt_revision": "p1", "model": "m1", "generation": {},
}
"""The manifest fields a run needs besides its ID and its suite's identity (docs/formats.md); `group`,
`repeat` and `notes` are optional and absent unless given."""


def write_suite_folder(root: Path, name: str, documents: Iterable[dict[str, Any]],
                       questions: Iterable[dict[str, Any]], *, version: str = "1", corpus_version: str = "c1",
                       rubric_version: str = "r1", chunks: Iterable[dict[str, Any]] | None = None,
                       **meta: Any) -> Path:
    """`root/suites/<name>/`: suite.json (name, versions, then `meta`: description, max_claims, unit,
    ...), documents.jsonl, questions.jsonl and, when given, chunks.jsonl. Returns the folder."""
    folder = root / "suites" / name
    write_json(folder / "suite.json", {"name": name, "version": version, "corpus_version": corpus_version,
                                       "rubric_version": rubric_version, **meta})
    write_jsonl(folder / "documents.jsonl", documents)
    if chunks is not None:
        write_jsonl(folder / "chunks.jsonl", chunks)
    write_jsonl(folder / "questions.jsonl", questions)
    return folder


def run_manifest(run_id: str, *, suite: str, suite_version: str = "1", corpus_version: str = "c1",
                 rubric_version: str = "r1", **fields: Any) -> dict[str, Any]:
    """A manifest in the documented key order: `RUN_DEFAULTS` with `fields` applied (a default keeps
    its place; a new field comes last)."""
    return {"run_id": run_id, "suite": suite, "suite_version": suite_version, "corpus_version": corpus_version,
            **RUN_DEFAULTS, "rubric_version": rubric_version, **fields}


def write_run_folder(root: Path, manifest: dict[str, Any], records: Iterable[dict[str, Any]]) -> Path:
    """`root/runs/<run_id>/` named by the manifest: manifest.json (see `run_manifest`, `manifest`) and
    records.jsonl, one record a line in the given order. Returns the folder."""
    folder = root / "runs" / manifest["run_id"]
    write_json(folder / "manifest.json", manifest)
    write_jsonl(folder / "records.jsonl", records)
    return folder


def copy_run(root: Path, source: str, target: str, **changes: Any) -> Path:
    """A new run `target`: a copy of run folder `source` whose manifest names `target`, `changes` applied."""
    folder = shutil.copytree(root / "runs" / source, root / "runs" / target)
    edit_json(folder / "manifest.json", lambda m: m.update(run_id=target, **changes))
    return folder


def claim(claim_id: str, citations: Iterable[str], text: str | None = None) -> dict[str, Any]:
    """A stated claim; `text` only when given."""
    return {"id": claim_id, "citations": list(citations), **({"text": text} if text is not None else {})}


def record(question_id: str, retrieved: Iterable[str] = (), claims: Iterable[dict[str, Any]] = (), *,
           answer: str | None = "an answer", **fields: Any) -> dict[str, Any]:
    """A record with every required field: no latency, cost or error unless `fields` sets them."""
    return {"question_id": question_id, "retrieved": list(retrieved), "claims": list(claims), "answer": answer,
            "latency_ms": None, "cost_usd": None, "error": None, **fields}


def question(i: int, **extra: Any) -> dict[str, Any]:
    """Question q<i> (lookup, dev, not critical, no tags): one relevant document d<i>, one expected
    claim x supported by it."""
    return {"id": f"q{i}", "text": f"Question {i}?", "relevant": [f"d{i}"], "support": {"x": [f"d{i}"]},
            "type": "lookup", "split": "dev", "critical": False, "tags": [], **extra}


def hit(i: int, **extra: Any) -> dict[str, Any]:
    """A record that retrieves d<i> and states x citing it: recall, support, coverage 1."""
    return record(f"q{i}", [f"d{i}"], [claim("x", [f"d{i}"])], answer="yes", **extra)


def miss(i: int, **extra: Any) -> dict[str, Any]:
    """Retrieves the wrong document and cites it: recall, support, coverage 0."""
    return record(f"q{i}", ["other"], [claim("x", ["other"])], answer="no", **extra)


def abstain(i: int, **extra: Any) -> dict[str, Any]:
    """Retrieves nothing and states nothing."""
    return record(f"q{i}", [], [], answer="", **extra)


def documents_for(questions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A document for every labelled ID of `questions`, and `other` (labelled nowhere)."""
    ids = sorted({d for q in questions for d in (q.get("relevant") or [])} | {"other"})
    return [{"id": d, "text": f"Text of {d}."} for d in ids]


def write_workspace_files(root: Path, questions: list[dict[str, Any]], runs: dict[str, dict[str, Any]], *,
                          suite: str = "s", version: str = "1", corpus: str = "c1",
                          documents: list[dict[str, Any]] | None = None) -> Path:
    """A one-suite workspace under `root`: `questions` (see `question`), `documents` (default
    `documents_for(questions)`) and `runs[run_id] = {"records": [...], **manifest fields}`. Returns `root`."""
    write_suite_folder(root, suite, documents_for(questions) if documents is None else documents, questions,
                       version=version, corpus_version=corpus)
    for run_id, spec in runs.items():
        spec = dict(spec)
        records = spec.pop("records")
        write_run_folder(root, run_manifest(run_id, **{"suite": suite, "suite_version": version,
                                                       "corpus_version": corpus, **spec}), records)
    return root


def write_policy(path: Path, body: str, name: str = "rg") -> Path:
    """An acceptance policy named `name` with the TOML `body` (its gates)."""
    path.write_text(f'name = "{name}"\n{body}')
    return path


# --- the valid workspace `demo` ------------------------------------------------------------------

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


DEMO_RUN: dict[str, Any] = {
    "suite": SUITE, "suite_version": "3", "corpus_version": "corpus-1", "created_at": "2026-11-20T09:12:00Z",
    "code_revision": "a1b2c3d", "retrieval": {"retriever": "bm25", "top_n": 50}, "prompt_revision": "answer-v7",
    "model": "example-model", "generation": {"temperature": 0.0}, "rubric_version": "rubric-1",
    "group": None, "repeat": None, "notes": "A test run.",
}
"""The manifest fields of a run of `demo`: every field, so each has a line of its own to break."""


def manifest(run_id: str, k: int = 2, **changes: Any) -> dict[str, Any]:
    """The manifest of a run of `demo` at cutoff `k`, with `changes` applied."""
    return run_manifest(run_id, **{**DEMO_RUN, "k": k, **changes})


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


def build(root: Path) -> Path:
    """Write the valid workspace `demo` into `root` (created) and return `root`."""
    write_suite_folder(root, SUITE, DOCUMENTS, QUESTIONS, **{k: v for k, v in SUITE_META.items() if k != "name"})
    for run_id, rows in RECORDS.items():
        write_run_folder(root, manifest(run_id, k=2 if run_id == "base" else 3), rows)
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
                   manifest(run_id, k=3, suite="big", suite_version="1", corpus_version="c1", rubric_version="r1"))
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


# --- the dashboard's workspace -------------------------------------------------------------------

HOSTILE = "<script>alert(1)</script> [x](javascript:alert(1)) :red[boom] **bold** <img src=x onerror=alert(1)>"
HOSTILE_ID = "[h1](javascript:alert(1))"
HOSTILE_GROUP = "<b>g</b> :red[g] [g](javascript:alert(1))"
DASHBOARD_RUN: dict[str, Any] = {"created_at": "2026-11-02T00:00:00Z", "code_revision": "r1",
                                 "retrieval": {"method": "bm25"}, "generation": {"temperature": 0.7}}
"""The manifest fields the dashboard workspace's own runs share (cutoff 2)."""


def timed_record(question_id: str, retrieved: list[str], claims: list[tuple[str, list[str]]],
                 **fields: Any) -> dict[str, Any]:
    """A record that took 100 ms and cost $0.001; each claim `(id, citations)` has the text `claim <id>`."""
    return record(question_id, retrieved, [claim(c, cites, f"claim {c}") for c, cites in claims],
                  **{"latency_ms": 100.0, "cost_usd": 0.001, **fields})


def build_dashboard_workspace(root: Path) -> Path:
    """The bundled seed-lab (runs A and B) copied to `root/ws`, plus:
    - runs C1, C2 of seed-lab, group `c`: copies of B, except that C2 cites `archive` for `aurora`;
    - suite `hostile`: markup in every text field (and in a question ID), runs H1 and H2 (H2 the only
      repeat of group `HOSTILE_GROUP`);
    - suite `flip`: two questions where macro and pooled support move in opposite directions.
    Returns `root/ws`."""
    ws = root / "ws"
    shutil.copytree(SEED_LAB, ws)
    b_manifest = json.loads((ws / "runs" / "B" / "manifest.json").read_text())
    b_records = [json.loads(line) for line in (ws / "runs" / "B" / "records.jsonl").read_text().splitlines() if line]
    for repeat, run_id in enumerate(("C1", "C2"), 1):
        write_json(ws / "runs" / run_id / "manifest.json",
                   {**b_manifest, "run_id": run_id, "group": "c", "repeat": repeat,
                    "created_at": "2026-11-02T00:00:00Z", "notes": f"Repeat {repeat} of B's configuration."})
        records = json.loads(json.dumps(b_records))
        if run_id == "C2":
            owner = next(r for r in records if r["question_id"] == "owner")
            owner["claims"] = [{"id": "aurora", "citations": ["archive"]}]
        write_jsonl(ws / "runs" / run_id / "records.jsonl", records)

    write_suite_folder(ws, "hostile", [{"id": "d1", "title": HOSTILE, "text": HOSTILE},
                                       {"id": "d2", "text": "restricted", "access": ["hr"]},
                                       {"id": "d3", "text": "plain"}], [
        {"id": HOSTILE_ID, "text": HOSTILE, "type": "lookup", "split": "dev", "critical": True, "tags": [":red[tag]"],
         "caller": ["eng"], "relevant": ["d1"], "support": {"c1": ["d1"]}, "claims": {"c1": HOSTILE},
         "disputed": HOSTILE},
        {"id": "h2", "text": "Unanswerable " + HOSTILE, "type": "unanswerable", "split": "dev", "relevant": [],
         "support": {}},
        {"id": "h3", "text": "Plain", "type": "lookup", "split": "heldout", "relevant": ["d3"],
         "support": {"k": ["d3"]}},
    ], description=HOSTILE)
    # H1: supports c1, abstains on h2, answers h3. H2 (a group of one, with a hostile name): cites nothing
    # for c1 and shows the restricted d2 to the `eng` caller, fails on h2, has no record for h3.
    earlier = "2026-11-01T00:00:00Z"
    write_run_folder(ws, run_manifest("H1", **{**DASHBOARD_RUN, "suite": "hostile", "created_at": earlier,
                                               "notes": HOSTILE}), [
        timed_record(HOSTILE_ID, ["d1"], [("c1", ["d1"])], answer=HOSTILE, context=HOSTILE),
        timed_record("h2", [], [], answer=HOSTILE),
        timed_record("h3", ["d3"], [("k", ["d3"])]),
    ])
    write_run_folder(ws, run_manifest("H2", **{**DASHBOARD_RUN, "suite": "hostile", "retrieval": {"method": HOSTILE},
                                               "group": HOSTILE_GROUP, "repeat": 1}), [
        timed_record(HOSTILE_ID, ["d2", "d1"], [("c1", [])], answer=HOSTILE, context=HOSTILE),
        timed_record("h2", [], [], answer=None, error=HOSTILE),
    ])

    write_suite_folder(ws, "flip", [{"id": "d1", "text": "one"}, {"id": "d2", "text": "two"}], [
        {"id": "q1", "text": "One claim", "type": "lookup", "split": "dev", "relevant": ["d1"],
         "support": {"m": ["d1"]}},
        {"id": "q2", "text": "Three claims", "type": "multi-evidence", "split": "dev", "relevant": ["d2"],
         "support": {"a": ["d2"], "b": ["d2"], "c": ["d2"]}},
    ])
    write_run_folder(ws, run_manifest("F1", **{**DASHBOARD_RUN, "suite": "flip", "created_at": earlier}), [
        timed_record("q1", ["d1"], [("m", ["d1"])]),
        timed_record("q2", ["d2"], [("a", ["d1"]), ("b", ["d1"]), ("c", ["d1"]), ("x", ["d1"])]),
    ])
    write_run_folder(ws, run_manifest("F2", suite="flip", **DASHBOARD_RUN), [
        timed_record("q1", ["d1"], [("m", ["d2"])]),
        timed_record("q2", ["d2"], [("a", ["d2"]), ("b", ["d2"]), ("c", ["d2"]), ("x", ["d1"])]),
    ])
    return ws


# --- databases: comparisons and fingerprints -----------------------------------------------------


def comparison(db: Path, baseline: str, candidate: str, **kw: Any):
    """`scoring.decide.comparison.compare` of two runs or groups on a read-only connection to `db`."""
    from scoring.decide.comparison import compare

    with duckdb.connect(str(db), read_only=True) as con:
        return compare(con, baseline, candidate, **kw)


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


# --- the SQL engine on seed-shaped data ----------------------------------------------------------


def engine_rows(corpus, cases, outputs, *, k, access=None, statuses=None, suite="s", max_claims=None):
    """`outputs[(run, question)]` is a seed run dict; `statuses[(run, question)]` is ok|missing|failed.

    `k` is one cutoff or a sequence of them (one eval_pairs row per pair and cutoff); `max_claims`
    the suite's (None: no eval_suites row, the format's bound applies)."""
    from scoring.metrics import engine
    from scoring.metrics.reference import graded_support

    access = access or {}
    statuses = statuses or {}
    rows = {name: [] for name in engine.INPUT_COLUMNS}
    if max_claims is not None:
        rows["eval_suites"] = [(suite, max_claims)]
    rows["eval_documents"] = [(suite, d, list(access.get(d, ()))) for d in corpus]
    for q, case in cases.items():
        rel = case["relevant"]
        grades = rel if isinstance(rel, dict) else {d: 1 for d in rel}
        rows["eval_labels"] += [(suite, q, d, g) for d, g in grades.items()]
        full, partial = graded_support(case["support"])
        rows["eval_support"] += [(suite, q, c, d) for c, docs in full.items() for d in sorted(docs)]
        rows["eval_partial_support"] += [(suite, q, c, d) for c, docs in partial.items() for d in sorted(docs)]
        caller = case.get("caller")
        rows["eval_callers"].append((suite, q, None if caller is None else list(caller)))
    for (run, q), out in outputs.items():
        status = statuses.get((run, q), "ok")
        rows["eval_pairs"] += [(run, suite, q, cut, status) for cut in ((k,) if isinstance(k, int) else k)]
        if status == "missing":
            continue
        rows["eval_retrieved"] += [(run, q, r, d) for r, d in enumerate(out["retrieved"], 1)]
        for pos, (claim, cites) in enumerate(out["claims"]):
            rows["eval_claims"].append((run, q, claim, pos))
            rows["eval_citations"] += [(run, q, claim, i, d) for i, d in enumerate(cites)]
    return rows


def engine_scores(rows, *, level=1, by_cutoff=False, con=None):
    """Run the SQL engine; return {(run, question): {column: value}} and the claim verdicts
    {(run, question, claim): (citations, reasons)}; `by_cutoff` adds k after the question.
    Pass `con` to reuse an open DuckDB connection (its eval_* tables are replaced)."""
    from scoring.metrics import engine

    own = con is None
    con = duckdb.connect() if own else con
    engine.load_inputs(con, rows)
    cur = con.execute(engine.question_scores_sql(), {"level": level})
    names = [d[0] for d in cur.description]
    rows_at_once = cur.fetchall()
    scores = {(r[0], r[1], *((r[2],) if by_cutoff else ())): dict(zip(names, r)) for r in rows_at_once}
    # The refresh computes restricted exposures and verdicts once, then scores from them: same rows.
    con.execute(f"CREATE OR REPLACE TEMP TABLE once_restricted AS {engine.restricted_sql()}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE once_verdicts AS {engine.verdicts_sql('once_restricted')}")
    in_steps = con.execute(engine.question_scores_sql(verdicts_from="once_verdicts", restricted_from="once_restricted"),
                           {"level": level}).fetchall()
    assert sorted(in_steps, key=repr) == sorted(rows_at_once, key=repr), "scores computed in steps differ"
    cur = con.execute(engine.verdicts_sql())
    names = [d[0] for d in cur.description]
    verdicts = {}
    for r in cur.fetchall():
        v = dict(zip(names, r))
        key = (v["run_id"], v["question_id"], *((v["k"],) if by_cutoff else ()), v["claim_id"])
        verdicts[key] = (tuple(v["citations"]), tuple(v["reasons"]))
    if own:
        con.close()
    return scores, verdicts


def display(value) -> str:
    """A score as the seed's table prints it: n/a, yes/no, or two decimals."""
    if value is None:
        return "n/a"
    if type(value) is bool:
        return "yes" if value else "no"
    return f"{value:.2f}"


# --- a running dashboard -------------------------------------------------------------------------


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at `address` right now."""
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def healthy(url: str, timeout: float = 2.0) -> bool:
    """Whether the Streamlit server at `url` answers `ok` on its health endpoint."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout) as response:
            return response.read().decode().strip() == "ok"
    except OSError:
        return False


def launch(args: list[str], log: Path) -> subprocess.Popen:
    """`ragslice ARGS` run as `python -m scoring.cli` from the checkout (the code under test, not an
    installed copy), in a session of its own, its output and errors to `log`."""
    with log.open("w") as out:
        return subprocess.Popen([sys.executable, "-m", "scoring.cli", *args], cwd=REPO, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_health(url: str, process: subprocess.Popen, log: Path, *, timeout: float = 90.0) -> None:
    """Return once the server at `url` is healthy; fail with `log` when `process` ends first or
    `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while not healthy(url):
        if process.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {process.returncode}" if process.poll() is not None else f"not up in {timeout:.0f} s"
            pytest.fail(f"the server at {url} did not start ({state}); its log {log}:\n{log.read_text()}")
        time.sleep(0.2)


def stop(process: subprocess.Popen, timeout: float = 20.0) -> bool:
    """SIGTERM (`ragslice dashboard` and `ragslice demo` pass it on to the server), then SIGKILL to
    the whole process group (`launch` starts one) if it has not ended after `timeout` seconds.
    Returns whether it ended without the SIGKILL."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
        process.wait()
        return False


@dataclass(frozen=True)
class Server:
    url: str
    port: int
    process: subprocess.Popen
    log: Path


@contextmanager
def running_dashboard(db: Path, log: Path, *, address: str | None = None, policy: Path | None = None,
                      extra: Sequence[str] = (), timeout: float = 90.0) -> Iterator[Server]:
    """`ragslice dashboard --db DB --port FREE [--address A] [--policy P] [EXTRA...]` (see `launch`), up
    once its health endpoint answers `ok`; fails with the server's log otherwise. Always stopped (`stop`)."""
    host = address or "127.0.0.1"
    port = free_port(host)
    args = ["dashboard", "--db", str(db), "--port", str(port)]
    if address is not None:
        args += ["--address", address]
    if policy is not None:
        args += ["--policy", str(policy)]
    process = launch([*args, *extra], log)
    try:
        url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
        wait_for_health(url, process, log, timeout=timeout)
        yield Server(url, port, process, log)
    finally:
        stop(process)


# --- the bundled demo --------------------------------------------------------------------------


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Path]) -> Path:
    """What `build(folder)` returns, built once per test run: the first xdist worker to ask builds it
    under a file lock in the run's shared temporary folder, the others wait and read the same files.
    Shared between processes: open a database read-only, or work on a copy."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / f"built-{name}"
    with FileLock(str(folder) + ".lock"):
        done = folder / "BUILT"
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            built = build(folder)
            done.write_text(str(built.relative_to(folder)), encoding="utf-8")
        return folder / done.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """The database `ragslice demo` serves (the bundled demo and seed-lab merged, the demo verdict
    recorded: `scoring.io.demo.build_demo`), built once per test run (`built_once`).
    Shared: open it read-only, or work on `copy_database(demo_db, tmp_path)`."""
    from scoring.io.demo import build_demo

    return built_once(tmp_path_factory, "demo", build_demo)


def synth_db(tmp_path_factory: pytest.TempPathFactory, questions: int, runs: int, *, seed: int,
             repeats: int = 1) -> Path:
    """The database of `ragslice synth --questions Q --runs R --seed S [--repeats N]`, refreshed once per
    test run for each set of arguments (`built_once`); its workspace is the `ws` folder beside it."""
    from scoring.io.synth import write_workspace
    from scoring.store.refresh import refresh

    def build(folder: Path) -> Path:
        write_workspace(questions, runs, repeats=repeats, seed=seed, out=folder / "ws")
        refresh(folder / "ws", folder / "synth.duckdb")
        return folder / "synth.duckdb"

    return built_once(tmp_path_factory, f"synth-{questions}-{runs}-{repeats}-{seed}", build)


def copy_database(db: Path, folder: Path) -> Path:
    """A private copy of the database file `db` in `folder` (a test that writes must not share one)."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(db, folder / db.name))


# --- a headless Chromium -------------------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Headless, no sandbox (root), and no calls to outside hosts, which this network refuses."""
VIEWPORT = {"width": 1400, "height": 2600}


def require_chromium() -> None:
    """Skip without Debian's Chromium, unless CI is set: then the browser tests must run."""
    if CHROMIUM.exists():
        return
    message = f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI is set, so the browser tests must run")
    pytest.skip(message)


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright (skipped or failed as `require_chromium` says)."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def chrome() -> Iterator[Any]:
    """One headless Chromium for a test module (see `chromium`)."""
    with chromium() as browser:
        yield browser


def new_tab(browser: Any, **context: Any) -> Any:
    """A page in a fresh context (`VIEWPORT` unless `context` says otherwise) that dismisses every
    dialog and records its message in `tab.dialogs`."""
    tab = browser.new_context(**{"viewport": VIEWPORT, **context}).new_page()
    tab.dialogs = []
    tab.on("dialog", lambda d: (tab.dialogs.append(d.message), d.dismiss()))
    return tab


IDLE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !!app.querySelector('h1')
    && !document.querySelector('[data-testid="stStatusWidget"]')
    && !document.querySelector('[data-testid="stSkeleton"]');
}"""
"""No script run is drawn as running (Streamlit's own run-state attribute on the app root) and the
page has drawn. Sound on its own after a page load only: the page of a rerun's previous run already
has its heading, and a short rerun may never be drawn as running."""


def settle(page: Any, timeout: float = 60_000) -> None:
    """Wait until the dashboard page is `IDLE` and the network is quiet (lazy elements have drawn)."""
    page.wait_for_function(IDLE, timeout=timeout)
    page.wait_for_load_state("networkidle")


def visit(page: Any, url: str, timeout: float = 60_000) -> None:
    """Open `url` and `settle`."""
    page.goto(url)
    settle(page, timeout)


def tile(page: Any, label: str) -> str:
    """The value shown by the metric tile labelled `label`."""
    metric = page.locator('[data-testid="stMetric"]').filter(has=page.get_by_text(label, exact=True)).first
    return metric.locator('[data-testid="stMetricValue"]').inner_text().strip()


def exceptions(page: Any) -> list[str]:
    """The texts of the exceptions the page shows (none when the script ran cleanly)."""
    return page.locator('[data-testid="stException"]').all_inner_texts()


GRID_COLUMN = """([key, column]) => [...document.querySelectorAll(`.st-key-box_${key} [role="row"]`)]
  .slice(1)
  .map(row => row.querySelectorAll('[role="gridcell"]'))
  .filter(cells => cells.length > column)
  .map(cells => cells[column].innerText.trim())"""


def grid_column(page, table: str, column: int) -> list[str]:
    """The cell texts of one column of a dataframe (Glide's accessible grid cells), read in one step in
    the page: a rerun that redraws the grid between two separate reads would leave a row to wait for."""
    return page.evaluate(GRID_COLUMN, [table, column])


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the selectbox or multiselect labelled `label`, then wait for the rerun."""
    widget = page.locator('[data-testid="stSelectbox"], [data-testid="stMultiSelect"]').filter(
        has=page.get_by_text(label, exact=True)).first
    box = widget.get_by_role("combobox")
    box.click()
    box.fill(option)
    page.get_by_role("option", name=option, exact=True).first.click()
    # A multiselect keeps its menu open: Escape closes it. A selectbox closes its own, and Escape on one
    # with nothing preset (clearable) would clear the choice just made.
    if page.get_by_role("listbox").count():
        page.keyboard.press("Escape")
    settle(page)


def query(page) -> dict[str, list[str]]:
    """The query parameters of the address bar (read from the page: Playwright's `page.url` does
    not follow `history.replaceState`)."""
    return parse_qs(urlparse(page.evaluate("location.href")).query)


def eventually(read, expected, timeout: float = 20.0):
    """Poll `read()` until it returns `expected` (a rerun can land after the URL has changed)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value == expected or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def download(page, button: str, attempts: int = 3) -> str:
    """Click a download button and return the downloaded file's path. The file is made when asked
    for; a click that lands while a rerun replaces the button asks for the old one and gets nothing,
    so the page is settled and the click repeated (at most `attempts` times)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    def attempt() -> str:
        settle(page)
        with page.expect_download(timeout=10_000) as started:
            page.get_by_role("button", name=button).click()
        return str(started.value.path())

    for _ in range(attempts - 1):
        try:
            return attempt()
        except PlaywrightTimeout:
            continue
    return attempt()

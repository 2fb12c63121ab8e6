"""Fuzzing the refresh: valid workspaces mutated at random never crash it and never half-write.

Each example copies a stored (workspace, database) pair, applies 1-3 random mutations (delete a key,
change a type, duplicate / drop / swap lines, truncate a file, insert random bytes, flip an ID, add a
run, ...), and runs `ragslice refresh` in-process. The outcome must be one of:

- exit 0: the database opens read-only and holds exactly the new state, i.e. the same scores as
  scoring the mutated workspace from scratch in memory;
- exit 2: a `path[:line]: ...` report, and the database file byte-for-byte unchanged.

Anything else (another exit code, an exception, a traceback, a stray temporary copy) fails.
The number of examples is bounded (RAGSLICE_FUZZ_EXAMPLES, default 60) so the file runs in well under
a minute; shrinking is off because each example is a short, readable list of mutations.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import duckdb
import pytest
import tiers
from tiers import examples
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from scoring.cli import main
from scoring.store.refresh import score_workspace_in_memory
from fixtures import build, fingerprint, manifest, write_json

EXAMPLES = int(os.environ.get("RAGSLICE_FUZZ_EXAMPLES", examples(60, least=12)))
OUTCOMES: dict[str, int] = {"accepted": 0, "refused": 0}

KNOWN_IDS = ["q-1", "q-2", "q-3", "q-4", "q-5", "rb-1", "rb-2", "rb-3", "rb-4", "hr-1", "spare", "monday",
             "switch", "smoke", "band", "demo", "base", "cand", "FR940202-2-00150"]
ID_TEXT = re.compile(r'"(' + "|".join(re.escape(i) for i in KNOWN_IDS) + r')"')

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)
odd_values = st.sampled_from([None, "", " ", -1, 0, 101, 1001, 2.5, True, [], {}, [None], ["rb-1", "rb-1"],
                              "q 1", "x" * 129, "\u0085", [{"id": "c"}], "NaN"])


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-stored")
    build(root / "ws")
    assert main(["refresh", str(root / "ws"), "--db", str(root / "scores.duckdb"), "--quiet"]) == 0
    return root


def workspace_files(ws: Path) -> list[Path]:
    return sorted(p for p in ws.rglob("*") if p.is_file())


# --- mutations: each takes (ws, data) and changes the workspace in place ------------------------------


def _json_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _pick_object(data, path: Path):
    """(index, object, rows) of a parsable JSON object in `path`, or None. rows is None for a .json file."""
    if path.suffix == ".json":
        try:
            obj = json.loads(path.read_bytes())
        except ValueError:
            return None
        return (None, obj, None) if isinstance(obj, dict) else None
    rows = _json_lines(path)
    if not rows:
        return None
    index = data.draw(st.integers(0, len(rows) - 1), label="line index")
    try:
        obj = json.loads(rows[index])
    except ValueError:
        return None
    return (index, obj, rows) if isinstance(obj, dict) else None


def _write_object(path: Path, index, obj, rows) -> None:
    if rows is None:
        path.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
    else:
        rows[index] = json.dumps(obj).encode() + b"\n"
        path.write_bytes(b"".join(rows))


def _containers(value, trail=()):
    """Every (trail, container) inside a JSON value, the value itself first."""
    if isinstance(value, (dict, list)):
        yield trail, value
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            yield from _containers(child, (*trail, key))


def delete_key(ws, data, path):
    picked = _pick_object(data, path)
    if picked is None:
        return "no object"
    index, obj, rows = picked
    spots = [(t, c) for t, c in _containers(obj) if isinstance(c, dict) and c]
    if not spots:
        return "no key"
    trail, container = data.draw(st.sampled_from(spots), label="container")
    key = data.draw(st.sampled_from(sorted(container)), label="key")
    del container[key]
    _write_object(path, index, obj, rows)
    return f"delete {trail}/{key}"


def set_value(ws, data, path):
    picked = _pick_object(data, path)
    if picked is None:
        return "no object"
    index, obj, rows = picked
    spots = [(t, c) for t, c in _containers(obj) if c]
    if not spots:
        return "no value"
    trail, container = data.draw(st.sampled_from(spots), label="container")
    key = data.draw(st.sampled_from(sorted(container) if isinstance(container, dict) else range(len(container))),
                    label="key")
    container[key] = data.draw(odd_values | json_values, label="value")
    _write_object(path, index, obj, rows)
    return f"set {trail}/{key}"


def add_key(ws, data, path):
    picked = _pick_object(data, path)
    if picked is None:
        return "no object"
    index, obj, rows = picked
    key = data.draw(st.sampled_from(["x_note", "extra", "id", "question_id", "claims", "k", "text"]), label="new key")
    obj[key] = data.draw(json_values, label="value")
    _write_object(path, index, obj, rows)
    return f"add {key}"


def line_edit(ws, data, path):
    rows = _json_lines(path)
    if not rows:
        return "empty"
    op = data.draw(st.sampled_from(["duplicate", "drop", "swap", "blank"]), label="line op")
    i = data.draw(st.integers(0, len(rows) - 1), label="line")
    j = data.draw(st.integers(0, len(rows) - 1), label="other line")
    if op == "duplicate":
        rows.insert(j, rows[i] if rows[i].endswith(b"\n") else rows[i] + b"\n")
    elif op == "drop":
        del rows[i]
    elif op == "swap":
        rows[i], rows[j] = rows[j], rows[i]
    else:
        rows.insert(j, b"  \n")
    path.write_bytes(b"".join(r if r.endswith(b"\n") else r + b"\n" for r in rows))
    return f"{op} line {i}"


def truncate(ws, data, path):
    raw = path.read_bytes()
    cut = data.draw(st.integers(0, len(raw)), label="cut")
    path.write_bytes(raw[:cut])
    return f"truncate at {cut}"


def insert_bytes(ws, data, path):
    raw = path.read_bytes()
    at = data.draw(st.integers(0, len(raw)), label="offset")
    junk = data.draw(st.binary(min_size=1, max_size=8) | st.sampled_from(
        [b"\xef\xbb\xbf", b"\x00", b"\xff\xfe", b"\n", b"\r", b'"', b"{", b"}", b",", b"NaN", b"\xc3"]), label="bytes")
    path.write_bytes(raw[:at] + junk + raw[at:])
    return f"insert {junk!r} at {at}"


def flip_id(ws, data, path):
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    spots = list(ID_TEXT.finditer(text))
    if not spots:
        return "no ID"
    spot = data.draw(st.sampled_from(spots), label="ID")
    new = data.draw(st.sampled_from(KNOWN_IDS) | st.sampled_from(["q 1", "", "Q-1", "rb-1 ", "nope", "x" * 129])
                    | st.text(min_size=0, max_size=6), label="new ID")
    text = text[:spot.start(1)] + json.dumps(new)[1:-1] + text[spot.end(1):]
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return f"flip {spot.group(1)!r} -> {new!r}"


def replace_file(ws, data, path):
    op = data.draw(st.sampled_from(["empty", "delete", "not json", "bom"]), label="file op")
    if op == "empty":
        path.write_bytes(b"")
    elif op == "delete":
        path.unlink()
    elif op == "not json":
        path.write_bytes(b"not json\n")
    else:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    return f"{op} file"


def add_run(ws, data, path):
    """A new run next to the stored ones: a copy of `base` or `cand`, valid or with a bad manifest value."""
    source = data.draw(st.sampled_from(["base", "cand"]), label="copy of")
    target = ws / "runs" / data.draw(st.sampled_from(["late", "late-2", "bad name!"]), label="run folder")
    if not (ws / "runs" / source).is_dir() or target.exists():
        return "no source"
    shutil.copytree(ws / "runs" / source, target)
    changes = data.draw(st.sampled_from([{}, {"k": 0}, {"suite_version": "2"}, {"model": None}]), label="manifest")
    write_json(target / "manifest.json", {**manifest(target.name, k=3), **changes})
    return f"add run {target.name} {changes}"


DOC_IDS = ["rb-1", "rb-2", "rb-3", "rb-4", "hr-1", "spare", "FR940202-2-00150"]
valid_claims = st.lists(
    st.fixed_dictionaries({"id": st.sampled_from(["monday", "switch", "smoke", "band", "other"]),
                           "citations": st.lists(st.sampled_from([*DOC_IDS, "outside"]), unique=True, max_size=3)}),
    unique_by=lambda c: c["id"], max_size=3)


def valid_edit(ws, data, path):
    """A change the format allows (new ranking, claims, latency, error, answer): the refresh must accept it
    unless another mutation broke something."""
    if path.name != "records.jsonl":
        return "not records"
    picked = _pick_object(data, path)
    if picked is None:
        return "no object"
    index, obj, rows = picked
    field = data.draw(st.sampled_from(["retrieved", "claims", "latency_ms", "error", "answer"]), label="field")
    obj[field] = data.draw({
        "retrieved": st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=7),
        "claims": valid_claims,
        "latency_ms": st.none() | st.floats(0, 1e6) | st.integers(0, 10 ** 6),
        "error": st.none() | st.text(max_size=10),
        "answer": st.none() | st.text(max_size=20),
    }[field], label="value")
    _write_object(path, index, obj, rows)
    return f"valid {field}"


MUTATIONS = [delete_key, set_value, add_key, line_edit, truncate, insert_bytes, flip_id, replace_file, add_run,
             valid_edit, valid_edit, valid_edit]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def score_fingerprint(con: duckdb.DuckDBPyConnection) -> tuple:
    """Order-independent fingerprint of every score, comparable between a file and an in-memory database."""
    return con.execute(
        "SELECT count(*), sum(hash(run_id, question_id, status, precision, recall, rr, ndcg, ap, support, coverage, "
        "abstention_correct, n_claims, n_supported, latency_ms)) FROM question_scores").fetchone()


def check_outcome(ws: Path, db: Path, before: str, code: int, out: str, err: str) -> str:
    assert "Traceback" not in err
    strays = [p.name for p in db.parent.iterdir() if ".refresh-" in p.name]
    assert strays == []
    if code == 2:
        assert out == ""
        head, *problems = err.splitlines()
        assert head == "ragslice refresh: invalid input"
        assert problems
        for line in problems:
            assert line.startswith(f"{ws}") or re.fullmatch(r"\.\.\. and \d+ more problems", line), line
        assert digest(db) == before
        return "refused"
    assert code == 0, (code, err)
    assert err == ""
    # The refreshed file holds exactly what scoring the same files from scratch gives.
    with duckdb.connect(str(db), read_only=True) as con:
        stored = score_fingerprint(con)
        runs = {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()}
    fresh = score_workspace_in_memory(ws)
    # The bulk path accepted the records: the rule-by-rule path must accept them and score the same.
    by_rules = score_workspace_in_memory(ws, bulk=False)
    try:
        assert stored == score_fingerprint(fresh) == score_fingerprint(by_rules)
        assert runs == {r for (r,) in fresh.execute("SELECT DISTINCT run_id FROM question_scores").fetchall()}
    finally:
        fresh.close()
        by_rules.close()
    fingerprint(db)  # every table opens and counts
    return "accepted"


@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          derandomize=not tiers.full,  # the fast tier's few examples are the same every run: both outcomes
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_workspace_refreshes_cleanly_or_is_refused_untouched(stored: Path, data):
    with tempfile.TemporaryDirectory(prefix="ragslice-fuzz-") as tmp:
        root = Path(tmp) / "case"
        shutil.copytree(stored, root)
        ws, db = root / "ws", root / "scores.duckdb"
        before = digest(db)
        steps = []
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            files = workspace_files(ws)
            if not files:
                break
            mutation = data.draw(st.sampled_from(MUTATIONS), label="mutation")
            path = data.draw(st.sampled_from(files), label="file")
            steps.append(f"{path.relative_to(ws)}: {mutation(ws, data, path)}")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["refresh", str(ws), "--db", str(db), "--quiet"])
        outcome = check_outcome(ws, db, before, code, out.getvalue(), err.getvalue())
        OUTCOMES[outcome] += 1


def test_fuzzing_saw_both_outcomes():
    """Runs after the fuzz test (file order): the mutations produce accepted and refused workspaces."""
    total = sum(OUTCOMES.values())
    if total < EXAMPLES:
        pytest.skip("the fuzz test did not run to the end in this session")
    print(f"\nfuzzed refreshes: {total} ({OUTCOMES['accepted']} accepted, {OUTCOMES['refused']} refused)")
    assert OUTCOMES["refused"] > 0
    assert OUTCOMES["accepted"] > 0

"""Crash safety and incremental bookkeeping of `ragslice refresh`.

A refresh writes a private copy and publishes it with one atomic rename (scoring/store/database.py), or,
when only review decisions changed, writes the live file in one transaction. These tests hold it to
that with real processes: SIGKILL in the middle and at ten seeded random moments
must leave a database that opens and equals the state before (S0) or after (S1), never a mix; a
reader querying in a loop during a refresh keeps working; and the next refresh cleans up.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from scoring.errors import ValidationError
from scoring.store.refresh import refresh
from fixtures import build, build_large, edit_line, fingerprint, run_file, set_field, suite_file

RAGSLICE = Path(sys.executable).with_name("ragslice")
KILLS = 10
SEED = 20261129


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def strays(db: Path) -> list[str]:
    return sorted(p.name for p in db.parent.iterdir() if p.name.startswith(f".{db.name}.refresh-"))


def start_refresh(ws: Path, db: Path) -> subprocess.Popen:
    return subprocess.Popen([str(RAGSLICE), "refresh", str(ws), "--db", str(db), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def writing(db: Path) -> bool:
    """A refresh is writing its working copy: the copy's write-ahead log exists (from its first write
    until its checkpoint, before the rename)."""
    return any(name.endswith(".tmp.wal") for name in strays(db))


def freeze_while_writing(proc: subprocess.Popen, db: Path) -> None:
    """Stop the refresh `proc` (SIGSTOP) once it writes its working copy, and return when it is
    stopped in that state: the rename has not happened and cannot until SIGCONT."""
    deadline = time.monotonic() + 60
    while not writing(db) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the refresh ended before it wrote its working copy"
    os.kill(proc.pid, signal.SIGSTOP)
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), "the refresh ended before it could be stopped"
    assert writing(db), "the refresh was stopped outside the writes to its working copy"


@pytest.fixture(scope="module")
def states(tmp_path_factory) -> dict:
    """Workspaces ws0 / ws1 (2,000 questions x 4 runs each), the database S0 of ws0, and the
    fingerprints of S0 and S1 (S0 refreshed with ws1 by a complete subprocess, timed)."""
    root = tmp_path_factory.mktemp("crash")
    ws0 = build_large(root / "ws0", questions=2000, runs=4, variant=0)
    ws1 = build_large(root / "ws1", questions=2000, runs=4, variant=1)
    s0 = root / "s0" / "scores.duckdb"
    s0.parent.mkdir()
    refresh(ws0, s0)
    full = root / "full" / "scores.duckdb"
    full.parent.mkdir()
    shutil.copyfile(s0, full)
    started = time.perf_counter()
    done = start_refresh(ws1, full)
    out, err = done.communicate(timeout=300)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, err
    fp0, fp1 = fingerprint(s0), fingerprint(full)
    assert fp0 != fp1
    assert fp1["question_scores"] == fp0["question_scores"] == 8000
    return {"root": root, "ws0": ws0, "ws1": ws1, "s0": s0, "fp0": fp0, "fp1": fp1, "seconds": seconds}


def fresh_copy(states: dict, name: str) -> Path:
    db = states["root"] / name / "scores.duckdb"
    db.parent.mkdir()
    shutil.copyfile(states["s0"], db)
    return db


@pytest.mark.slow
def test_a_refresh_killed_in_the_middle_leaves_the_database_identical(states):
    db = fresh_copy(states, "middle")
    before = digest(db)
    proc = start_refresh(states["ws1"], db)
    freeze_while_writing(proc, db)       # inside staging and scoring, before the rename
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert digest(db) == before
    assert strays(db)                    # the killed refresh left its working copy behind
    assert fingerprint(db) == states["fp0"]
    summary = refresh(states["ws1"], db)
    assert (summary.runs_scored, summary.runs_skipped) == (4, 0)
    assert strays(db) == []
    assert fingerprint(db) == states["fp1"]


def held_by_writer(db: Path) -> bool:
    """A writer holds the live file itself (a refresh applying review decisions in place): it cannot be
    opened, even read-only."""
    try:
        duckdb.connect(str(db), read_only=True).close()
    except duckdb.IOException as error:
        return "lock" in str(error).lower()
    return False


@pytest.mark.slow
def test_a_label_decision_refresh_killed_while_it_writes_in_place_leaves_the_old_or_the_new_state(states):
    """Only a review file changed, so the refresh applies the decision to the live file in one transaction
    (one question re-scored in every run, no private copy): killed while it holds the file, the database
    opens and holds the state before the decision or after it, never a mix, and the next refresh ends
    where a refresh from scratch does."""
    ws = states["root"] / "ws-decided"
    shutil.copytree(states["ws0"], ws)
    from scoring.cli import main
    assert main(["review", str(ws), "--reviewer", "ana", "--question", "q1", "--doc", "d5", "--grade", "2"]) == 0
    scratch = states["root"] / "decision-scratch.duckdb"
    refresh(ws, scratch)
    decided = fingerprint(scratch)
    assert decided != states["fp0"]
    # the refresh holds the file about 0.2 s here: killed at once, then later and later into its work
    for attempt, delay in enumerate((0.0, 0.04, 0.08, 0.12, 0.16, 0.2)):
        db = fresh_copy(states, f"decision-{attempt}")
        proc = start_refresh(ws, db)
        deadline = time.monotonic() + 60
        while not held_by_writer(db) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, "the refresh ended before it held the live file"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert strays(db) == []  # nothing was copied
        assert fingerprint(db) in (states["fp0"], decided)
        summary = refresh(ws, db)
        assert fingerprint(db) == decided
        if summary.runs_scored:  # the kill came before the commit: the decision is applied now, in place
            assert (summary.decisions_only, summary.runs_rescored, summary.questions_rescored, summary.records) == (
                True, 4, 1, 0)


@pytest.mark.slow
def test_ten_kills_at_random_moments_leave_the_old_or_the_new_state(states):
    rng = random.Random(SEED)
    window = states["seconds"] * 1.3       # the last part falls after the rename: S1
    seen = {"S0": 0, "S1": 0, "with a stray copy": 0}
    for kill in range(KILLS):
        db = fresh_copy(states, f"kill{kill}")
        delay = rng.uniform(0.0, window)
        proc = start_refresh(states["ws1"], db)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        found = fingerprint(db)          # opens read-only: fails on a damaged file
        assert found in (states["fp0"], states["fp1"]), f"kill {kill} at {delay:.2f} s left a mixed state"
        seen["S0" if found == states["fp0"] else "S1"] += 1
        seen["with a stray copy"] += bool(strays(db))
        refresh(states["ws1"], db)       # the next refresh succeeds and cleans up
        assert strays(db) == []
        assert fingerprint(db) == states["fp1"]
    print(f"\n{KILLS} kills within {window:.1f} s: {seen}")
    assert seen["S0"] + seen["S1"] == KILLS


READER = r"""
import json, sys, time, duckdb
db, stop = sys.argv[1], sys.argv[2]
held = duckdb.connect(db, read_only=True)
query = "SELECT count(*), sum(hash(t))::VARCHAR FROM question_scores t"
while True:
    try:
        print(json.dumps(list(held.execute(query).fetchone())), flush=True)
    except Exception as error:
        print(json.dumps({"error": repr(error)}), flush=True)
    try:
        open(stop).close()
        break
    except FileNotFoundError:
        time.sleep(0.01)
"""


def checksum(db: Path) -> list:
    with duckdb.connect(str(db), read_only=True) as con:
        return list(con.execute("SELECT count(*), sum(hash(t))::VARCHAR FROM question_scores t").fetchone())


class Reads:
    """What a reader read, in order, appended by the thread that reads."""

    def __init__(self) -> None:
        self.items: list = []
        self.changed = threading.Condition()

    def add(self, item) -> None:
        with self.changed:
            self.items.append(item)
            self.changed.notify_all()

    def wait_past(self, n: int, what: str) -> None:
        """Return once more than `n` reads are in."""
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.items) > n, timeout=60), f"{what}: no read in 60 s"

    def count(self) -> int:
        with self.changed:
            return len(self.items)


@pytest.mark.slow
def test_readers_keep_working_during_a_refresh_and_new_connections_see_the_new_data(states):
    """Two readers loop over the live file: one connection opened before the refresh and held, and a
    new connection per query (as the dashboard does). Each reads before the refresh, while it is
    stopped in the middle of writing its copy, and after it published (reads started after the
    rename: the one under way then is not counted)."""
    db = fresh_copy(states, "readers")
    old = checksum(db)
    stop = db.parent / "stop"
    held = subprocess.Popen([sys.executable, "-c", READER, str(db), str(stop)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    held_reads, fresh_reads = Reads(), Reads()
    refreshing = threading.Event()
    refreshing.set()

    def held_reader() -> None:
        for line in held.stdout:
            held_reads.add(json.loads(line))

    def fresh_reader() -> None:
        """A new read-only connection per query, as the dashboard does."""
        while refreshing.is_set():
            try:
                fresh_reads.add(checksum(db))
            except Exception as error:  # noqa: BLE001 - every failure is a finding
                fresh_reads.add({"error": repr(error)})
            time.sleep(0.01)

    pump = threading.Thread(target=held_reader)
    pump.start()
    reader = threading.Thread(target=fresh_reader)
    reader.start()
    proc = None
    try:
        held_reads.wait_past(0, "the held connection before the refresh")
        fresh_reads.wait_past(0, "new connections before the refresh")
        proc = start_refresh(states["ws1"], db)
        freeze_while_writing(proc, db)
        held_reads.wait_past(held_reads.count() + 1, "the held connection during the refresh")
        fresh_reads.wait_past(fresh_reads.count() + 1, "new connections during the refresh")
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        held_reads.wait_past(held_reads.count() + 1, "the held connection after the refresh")
        fresh_reads.wait_past(fresh_reads.count() + 1, "new connections after the refresh")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        refreshing.clear()
        reader.join(timeout=60)
        stop.touch()
        held.wait(timeout=60)
        pump.join(timeout=60)
        held_err = held.stderr.read()
    new = checksum(db)
    assert new != old
    assert fingerprint(db) == states["fp1"]
    assert held.returncode == 0, held_err
    assert held_reads.items and all(seen == old for seen in held_reads.items)   # the open connection keeps S0
    fresh = fresh_reads.items
    assert [r for r in fresh if isinstance(r, dict)] == []
    assert set(map(tuple, fresh)) <= {tuple(old), tuple(new)}
    assert fresh[0] == old and fresh[-1] == new


# --- incremental refresh -------------------------------------------------------------------------------


def run_rows(db: Path, run_id: str) -> dict:
    with duckdb.connect(str(db), read_only=True) as con:
        return {table: con.execute(f"SELECT count(*), sum(hash(t)) FROM {table} t WHERE run_id = ?",
                                   [run_id]).fetchone() for table in ("runs", "records", "retrieved", "claims",
                                                                      "question_scores")}


def scores(db: Path, run_id: str, question: str) -> tuple:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT precision, recall, latency_ms FROM question_scores WHERE run_id = ? AND "
                           "question_id = ?", [run_id, question]).fetchone()


def test_incremental_refresh_skips_rescores_and_removes(tmp_path):
    ws = build(tmp_path / "ws")
    db = tmp_path / "scores.duckdb"

    first = refresh(ws, db)
    assert (first.runs_scored, first.runs_skipped, first.runs_removed, first.records) == (2, 0, 0, 9)
    before = digest(db)
    again = refresh(ws, db)
    assert (again.runs_scored, again.runs_skipped, again.runs_removed, again.records) == (0, 2, 0, 0)
    assert digest(db) == before          # nothing changed: the file is not rewritten

    # A changed run is re-scored; the other is kept as it was.
    cand = run_rows(db, "cand")
    set_field(run_file(ws, "base"), 2, "latency_ms", 99.5)
    changed = refresh(ws, db)
    assert (changed.runs_scored, changed.runs_skipped, changed.runs_removed, changed.records) == (1, 1, 0, 4)
    assert scores(db, "base", "q-2")[2] == 99.5
    assert run_rows(db, "cand") == cand

    # A changed suite re-scores its runs: rb-4 becomes relevant (grade 1) for q-2.
    # base q-2 retrieved [rb-1, rb-4, rb-2] at k=2: P@2 1/2 -> 2/2, R@2 1/2 -> 2/3.
    assert scores(db, "base", "q-2")[:2] == (0.5, 0.5)
    edit_line(suite_file(ws, "questions.jsonl"), 2, lambda q: q["relevant"].__setitem__("rb-4", 1))
    relabelled = refresh(ws, db)
    assert (relabelled.runs_scored, relabelled.runs_skipped, relabelled.runs_removed) == (2, 0, 0)
    assert scores(db, "base", "q-2")[:2] == (1.0, pytest.approx(2 / 3))

    # A removed run disappears from every run table.
    shutil.rmtree(ws / "runs" / "cand")
    removed = refresh(ws, db)
    assert (removed.runs_scored, removed.runs_skipped, removed.runs_removed) == (0, 1, 1)
    assert run_rows(db, "cand") == {t: (0, None) for t in ("runs", "records", "retrieved", "claims",
                                                          "question_scores")}
    assert run_rows(db, "base")["question_scores"][0] == 5

    # The refresh log holds one row per refresh that wrote the file.
    with duckdb.connect(str(db), read_only=True) as con:
        log = con.execute("SELECT runs_scored, runs_skipped, runs_removed FROM refresh_log "
                          "ORDER BY refreshed_at").fetchall()
    assert log == [(2, 0, 0), (1, 1, 0), (2, 0, 0), (0, 1, 1)]


def test_a_refused_refresh_after_a_good_one_keeps_the_file_and_the_next_good_one_applies(tmp_path):
    ws = build(tmp_path / "ws")
    db = tmp_path / "scores.duckdb"
    refresh(ws, db)
    before = digest(db)
    set_field(run_file(ws, "cand"), 1, "latency_ms", -1)
    with pytest.raises(ValidationError, match=r"runs/cand/records.jsonl:1: question 'q-1': field 'latency_ms': -1"):
        refresh(ws, db)
    assert digest(db) == before and strays(db) == []
    set_field(run_file(ws, "cand"), 1, "latency_ms", 5)
    fixed = refresh(ws, db)
    assert (fixed.runs_scored, fixed.runs_skipped) == (1, 1)
    assert scores(db, "cand", "q-1")[2] == 5


def test_a_stray_copy_from_a_killed_refresh_is_removed_by_the_next_one(tmp_path):
    ws = build(tmp_path / "ws")
    db = tmp_path / "scores.duckdb"
    refresh(ws, db)
    for stray in (f".{db.name}.refresh-999999.tmp", f".{db.name}.refresh-999999.tmp.wal"):
        (tmp_path / stray).write_bytes(b"half-written")
    spill = tmp_path / f".{db.name}.refresh-999999.tmp.tmp"  # DuckDB's spill folder
    spill.mkdir()
    (spill / "duckdb_temp_storage-0.tmp").write_bytes(b"spilled")
    summary = refresh(ws, db)            # nothing to score, but the lock holder cleans up
    assert summary.runs_scored == 0
    assert strays(db) == []
    assert os.path.exists(db)


def test_a_change_committed_in_place_but_not_checkpointed_survives_the_next_refresh(tmp_path):
    """A writer killed after its commit leaves the change in the file's write-ahead log: the next refresh
    merges the log before copying the file, so the change is kept and no log is left beside the new file."""
    ws = build(tmp_path / "ws")
    db = tmp_path / "scores.duckdb"
    refresh(ws, db)
    script = ("import duckdb, os, sys; con = duckdb.connect(sys.argv[1]); con.execute('BEGIN'); "
              "con.execute(\"INSERT INTO refresh_log VALUES (now(), 'committed-in-place', 0, 0, 0, 0, 0)\"); "
              "con.execute('COMMIT'); os._exit(0)")
    subprocess.run([sys.executable, "-c", script, str(db)], check=True)
    assert Path(f"{db}.wal").exists()
    set_field(run_file(ws, "cand"), 1, "latency_ms", 77.0)  # a run changed: the refresh copies the file
    summary = refresh(ws, db)
    assert summary.runs_scored == 1
    assert not Path(f"{db}.wal").exists()
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM refresh_log WHERE workspace = 'committed-in-place'").fetchone() == (1,)
        assert con.execute("SELECT latency_ms FROM records WHERE run_id = 'cand' AND line = 1").fetchone() == (77.0,)

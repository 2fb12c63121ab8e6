"""The file-hash cache: a refresh does not read again files whose status is unchanged since the last
refresh read them, and never trusts a status that could hide a change (docs/performance.md)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pytest

from scoring.errors import Problems
from scoring.store import database, hashes
from scoring.store.hashes import HashCache, files_hash
from scoring.store.refresh import refresh
from scoring.store.workspace import load_workspace

from test_rescore import tables

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"


def _reads(ws: Path, db: Path) -> tuple[int, dict[str, str]]:
    """How many file sets a workspace load reads with the database's cache; each run's hash."""
    cache = database.stored_hashes(db)[2]
    loaded = load_workspace(ws, Problems(), hashes=cache)
    return cache.read, {r.run_id: r.files_hash for r in loaded.runs.values()}


@pytest.fixture
def settled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A refreshed copy of the demo whose files count as older than the refresh's reads."""
    monkeypatch.setattr(hashes, "RACY_NS", 0)
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    return ws, db


def test_unchanged_files_are_not_read_again_and_hash_as_read(settled):
    ws, db = settled
    read, cached = _reads(ws, db)
    assert read == 0
    fresh = load_workspace(ws, Problems())  # no cache: every set read
    assert fresh.hashes.read > 0 and cached == {r.run_id: r.files_hash for r in fresh.runs.values()}


def test_a_change_that_keeps_size_and_modification_time_is_read(settled, tmp_path):
    ws, db = settled
    records = ws / "runs" / "rerank-v2" / "records.jsonl"
    before = records.stat()
    text = records.read_text()
    changed = text.replace('"latency_ms": 1', '"latency_ms": 2', 1)
    assert changed != text and len(changed) == len(text)
    records.write_text(changed)
    os.utime(records, ns=(before.st_atime_ns, before.st_mtime_ns))  # the change time still moves
    assert records.stat().st_size == before.st_size and records.stat().st_mtime_ns == before.st_mtime_ns
    read, cached = _reads(ws, db)
    assert read == 1 and cached["rerank-v2"] == files_hash([ws / "runs" / "rerank-v2" / p
                                                            for p in ("manifest.json", "records.jsonl")])
    summary = refresh(ws, db)
    assert summary.runs_scored == 1
    scratch = tmp_path / "scratch.duckdb"
    refresh(ws, scratch)
    assert tables(db) == tables(scratch)


def test_files_touched_just_before_their_read_are_read_again(tmp_path):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)  # the copy was written within RACY_NS of this refresh's reads
    read, _ = _reads(ws, db)
    assert read > 0


def test_the_cache_lives_in_meta_and_forgets_what_left_the_workspace(settled):
    ws, db = settled
    shutil.rmtree(ws / "runs" / "chunk-160")
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT value FROM meta WHERE key = ?", [hashes.HASHES_KEY]).fetchone()[0]
    assert "chunk-160" not in stored and "rerank-v2" in stored
    assert HashCache.loads("not json").known == {} and HashCache.loads(None).known == {}

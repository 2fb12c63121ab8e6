"""A refresh that runs out of memory or disk: one line naming the step and what to change (exit code 4),
never a traceback, and nothing written; the memory budget follows the machine or `--memory`."""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from scoring.cli import main
from scoring.errors import OutOfResources
from scoring.store import database
from scoring.store.refresh import refresh

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"


def test_out_of_memory_is_one_line_naming_the_step_and_the_database_is_untouched(tmp_path, capsys):
    ws = Path(shutil.copytree(DEMO, tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 0
    before = db.read_bytes()
    records = ws / "runs" / "rerank-v2" / "records.jsonl"
    records.write_text(records.read_text().replace('"latency_ms": 1', '"latency_ms": 2', 1))
    capsys.readouterr()
    assert main(["refresh", str(ws), "--db", str(db), "--quiet", "--memory", "20MB"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("ragslice refresh: out of memory (DuckDB's budget is 20MB) while ")
    assert "nothing was written; give it more with --memory" in err
    assert db.read_bytes() == before and not list(tmp_path.glob("*.tmp*"))
    assert main(["refresh", str(ws), "--db", str(db), "--quiet", "--memory", "2GB"]) == 0


def test_a_bad_memory_size_is_refused_naming_the_option(tmp_path, capsys):
    assert main(["refresh", str(DEMO), "--db", str(tmp_path / "db.duckdb"), "--quiet", "--memory", "lots"]) == 2
    assert "field '--memory': 'lots': a memory size" in capsys.readouterr().err


def test_the_budget_follows_the_machine():
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert database.memory_budget() == f"{max(2, int(total * 0.4 / 2 ** 30))}GB"
    assert database.memory_budget("512 MB") == "512MB"


def test_a_full_disk_is_one_line_naming_the_step(tmp_path, monkeypatch):
    """The working copy cannot be published (the disk is full): the step is named, nothing is written."""
    db = tmp_path / "db.duckdb"

    def full(temp, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(database, "publish", full)
    with pytest.raises(OutOfResources) as raised:
        refresh(DEMO, db)
    assert str(raised.value).startswith("out of disk space while writing the database file: nothing was written")
    assert not db.exists() and [p.name for p in tmp_path.iterdir()] == [".db.duckdb.lock"]  # the writer's lock

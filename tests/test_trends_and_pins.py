"""Trends across releases (ordered by manifest time, grouped by the manifest's `release`, each recorded
verdict marked) and the standing baseline pinned per suite (`ragslice pin`, published by refresh).

The workspace: four questions, each with one relevant document. Runs, by manifest time:
zeta (1 Jan, misses all: R@k 0), beta (2 Jan, release v2, hits q0 q1: 0.5), alpha (3 Jan, release
v2, hits all: 1), gamma (4 Jan, hits q0: 0.25). Releases in order: zeta, v2 (mean of 0.5 and 1 =
0.75, its time beta's), gamma; neither run ID order nor name order gives that.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from fixtures import REPO, hit, miss, question, write_policy, write_workspace_files
from scoring.cli import main
from scoring.errors import ValidationError
from scoring.store.refresh import refresh

APP = REPO / "dashboard" / "app.py"


def _workspace(root: Path) -> Path:
    qs = [question(i) for i in range(4)]
    return write_workspace_files(root, qs, {
        "zeta": {"records": [miss(i) for i in range(4)], "created_at": "2026-01-01T00:00:00Z"},
        "beta": {"records": [hit(0), hit(1), miss(2), miss(3)], "created_at": "2026-01-02T00:00:00Z",
                 "release": "v2"},
        "alpha": {"records": [hit(i) for i in range(4)], "created_at": "2026-01-03T00:00:00Z", "release": "v2"},
        "gamma": {"records": [hit(0), miss(1), miss(2), miss(3)], "created_at": "2026-01-04T00:00:00+00:00"},
    })


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(workspace, database) with two recorded verdicts: alpha passes (R@k 1 >= 0.5), gamma fails."""
    root = tmp_path_factory.mktemp("trends")
    ws = _workspace(root / "ws")
    db = root / "t.duckdb"
    refresh(ws, db)
    policy = write_policy(root / "p.toml", '[[gates]]\nname = "recall"\nmetric = "recall"\nslice = "all"\nmin = 0.5\n')
    assert main(["compare", "zeta", "alpha", "gamma", "--db", str(db), "--policy", str(policy)]) == 1
    return ws, db


def _page(db: Path, monkeypatch, page: str, **params) -> AppTest:
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params.update(params)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _frame(at: AppTest, key: str):
    """The page's tables in order: releases, then the verdict history."""
    return at.dataframe[{"w_releases": 0, "w_verdict_history": 1}[key]].value


def test_releases_follow_manifest_time_and_carry_their_verdicts(built, monkeypatch):
    _, db = built
    at = _page(db, monkeypatch, "trends", suite="s", metrics=["recall"])
    releases = _frame(at, "w_releases")
    assert list(releases["release"]) == ["zeta", "v2", "gamma"]
    assert list(releases["runs"]) == ["zeta", "beta, alpha", "gamma"]
    assert list(releases["recall"]) == pytest.approx([0.0, 0.75, 0.25])
    assert list(releases["verdict"]) == ["", "pass", "fail"]
    history = _frame(at, "w_verdict_history")
    assert sorted(zip(history["candidate"], history["release"], history["verdict"])) == [
        ("alpha", "v2", "pass"), ("gamma", "gamma", "fail")]
    charts = at.get("vega_lite_chart")
    assert len(charts) == 1
    spec = json.loads(charts[0].proto.spec)
    x_orders = [layer["encoding"]["x"].get("sort") for layer in spec["layer"]]
    assert x_orders == [["zeta", "v2", "gamma"]] * 2


def test_a_release_field_must_be_a_non_empty_string(tmp_path):
    ws = _workspace(tmp_path / "ws")
    manifest = ws / "runs" / "gamma" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["release"] = ""
    manifest.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match="release.*non-empty string naming the release"):
        refresh(ws, tmp_path / "t.duckdb")


def test_pin_is_written_to_the_workspace_published_by_refresh_and_is_the_default_baseline(built, tmp_path,
                                                                                          monkeypatch, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(built[0], ws)
    db = tmp_path / "t.duckdb"
    shutil.copyfile(built[1], db)
    refresh(ws, db)
    at = _page(db, monkeypatch, "release_review", suite="s")
    assert at.selectbox(key="w_baseline").value == "zeta"  # nothing pinned: the newest verdict's baseline

    assert main(["pin", str(ws), "--run", "beta", "--note", "v2 in production"]) == 0
    assert "pinned beta as the standing baseline of suite s" in capsys.readouterr().out
    lines = (ws / "suites" / "s" / "baseline.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["baseline"] == "beta"
    assert json.loads(lines[0])["note"] == "v2 in production" and json.loads(lines[0])["pinned_at"].endswith("Z")
    summary = refresh(ws, db)
    assert summary.runs_scored == 0  # pinning rescores nothing, but is published
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT suite, line, baseline, note FROM baseline_pins").fetchall() == [
            ("s", 1, "beta", "v2 in production")]

    at = _page(db, monkeypatch, "release_review", suite="s")
    assert at.selectbox(key="w_baseline").value == "beta"
    at = _page(db, monkeypatch, "release_review", suite="s", baseline="gamma")  # the URL overrides the pin
    assert at.selectbox(key="w_baseline").value == "gamma"
    at = _page(db, monkeypatch, "trends", suite="s")
    assert any("Standing baseline of s: beta" in c.value.replace("\\", "") for c in at.sidebar.caption)
    assert list(_frame(at, "w_releases")["pinned"]) == [False, True, False]
    at = _page(db, monkeypatch, "release_matrix", suite="s")
    assert at.selectbox(key="w_baseline").value == "beta"

    assert main(["pin", str(ws), "--run", "gamma"]) == 0  # the last line wins; the first stays as history
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT line, baseline FROM baseline_pins ORDER BY line").fetchall() == [
            (1, "beta"), (2, "gamma")]


def test_pin_refuses_an_unknown_run_and_refresh_a_broken_pin_file(built, tmp_path, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(built[0], ws)
    assert main(["pin", str(ws), "--run", "nope"]) == 2
    assert "no suite of the workspace has a run or group of that name" in capsys.readouterr().err
    assert not (ws / "suites" / "s" / "baseline.jsonl").exists()
    pins = ws / "suites" / "s" / "baseline.jsonl"
    pins.write_text('{"baseline": "beta", "pinned_at": "2026-01-05"}\n{"baseline": "gone", "pinned_at": '
                    '"2026-01-06T00:00:00Z", "by": "ana"}\n')
    with pytest.raises(ValidationError) as error:
        refresh(ws, tmp_path / "t.duckdb")
    text = str(error.value)
    assert f"{pins}:1: field 'pinned_at'" in text and "ISO 8601 time with its offset" in text
    assert f"{pins}:2: field 'by'" in text and "unknown key" in text
    assert f"{pins}:2: field 'baseline': 'gone'" in text and "must be a run or a group of suite s" in text

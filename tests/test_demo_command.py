"""`ragslice demo`: the bundled workspaces scored into a cache folder and the demo verdict recorded
once, without piling up verdicts on every start; the `--policy` flags of `demo` and `dashboard`.

The real-browser run of `ragslice demo` is in test_dashboard_browser.py.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest

from fixtures import free_port
from scoring.cli import build_parser, main
from scoring.io.demo import DEMO_BASELINE, DEMO_CANDIDATE, record_demo_verdict, review_url
from scoring.store.refresh import RefreshSummary
from scoring.serve import streamlit_command

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "data" / "demo" / "policy.toml"
RUNS = sorted(p.name for p in (REPO / "data" / "demo" / "runs").iterdir() if (p / "manifest.json").is_file()) + [
    "A", "B"]


def verdict_rows(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT baseline, candidate, baseline_runs, candidate_runs, suite, policy_name, policy_hash, verdict "
            "FROM verdicts ORDER BY created_at").fetchall()


def build(cache: Path, capsys, *extra: str) -> str:
    assert main(["demo", "--build-only", "--cache", str(cache), *extra]) == 0
    return capsys.readouterr().out


def test_build_only_records_the_demo_verdict_once(tmp_path, capsys):
    cache = tmp_path / "cache"
    out = build(cache, capsys)
    db = cache / "demo.duckdb"
    lines = out.splitlines()
    assert lines[0].startswith(f"refreshed {db}: {len(RUNS)} runs scored, 0 unchanged")
    sha = hashlib.sha256(POLICY.read_bytes()).hexdigest()
    assert lines[1] == (f"recorded verdict FAIL for {DEMO_CANDIDATE} against {DEMO_BASELINE} "
                        f"(policy release-gate, sha256 {sha[:12]})")
    assert lines[-1] == str(db)
    assert verdict_rows(db) == [(DEMO_BASELINE, DEMO_CANDIDATE, [DEMO_BASELINE], [DEMO_CANDIDATE], "demo",
                                 "release-gate", sha, "fail")]
    with duckdb.connect(str(db), read_only=True) as con:
        assert sorted(r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()) == sorted(RUNS)
        refreshes = con.execute("SELECT count(*) FROM refresh_log").fetchone()[0]
        heldout = con.execute("SELECT count(*) FROM heldout_log").fetchone()[0]
    assert heldout == 1

    # A second start re-scores nothing and records nothing.
    out = build(cache, capsys)
    assert f"0 runs scored, {len(RUNS)} unchanged and skipped, 0 removed, 0 records" in out.splitlines()[0]
    assert "already recorded" in out.splitlines()[1]
    assert len(verdict_rows(db)) == 1
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM refresh_log").fetchone()[0] == refreshes
        assert con.execute("SELECT count(*) FROM heldout_log").fetchone()[0] == 1


def test_decisions_recorded_in_the_demo_survive_its_next_start(tmp_path, capsys):
    """The demo's workspace is rebuilt from the bundled files on every start, but review files are
    append-only: one that extends the bundled file, and one of a new reviewer, are kept."""
    cache = tmp_path / "cache"
    build(cache, capsys)
    reviews = cache / "workspace" / "suites" / "demo" / "reviews"
    bundled = (REPO / "data" / "demo" / "suites" / "demo" / "reviews" / "kofi.jsonl").read_bytes()
    assert main(["review", str(cache / "workspace"), "--reviewer", "kofi", "--question", "q-0100", "--doc",
                 "dr-0001", "--grade", "2"]) == 0
    assert main(["review", str(cache / "workspace"), "--reviewer", "lee", "--question", "q-0100", "--dispute"]) == 0
    extended = (reviews / "kofi.jsonl").read_bytes()
    assert extended.startswith(bundled) and len(extended) > len(bundled)
    build(cache, capsys)
    assert (reviews / "kofi.jsonl").read_bytes() == extended and (reviews / "lee.jsonl").is_file()
    with duckdb.connect(str(cache / "demo.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM reviews WHERE reviewer = 'lee' OR doc_id = 'dr-0001'"
                           ).fetchone()[0] == 2
    (reviews / "kofi.jsonl").write_bytes(b"")  # not an extension of the bundled file: restored
    build(cache, capsys)
    assert (reviews / "kofi.jsonl").read_bytes() == bundled


def test_an_edited_policy_is_recorded_beside_the_old_verdict(tmp_path, capsys):
    cache = tmp_path / "cache"
    build(cache, capsys)
    edited = tmp_path / "policy.toml"
    edited.write_bytes(POLICY.read_bytes().replace(b"max = 3000", b"max = 5000"))
    out = build(cache, capsys, "--policy", str(edited))
    assert "recorded verdict" in out
    hashes = [row[6] for row in verdict_rows(cache / "demo.duckdb")]
    assert hashes == [hashlib.sha256(POLICY.read_bytes()).hexdigest(), hashlib.sha256(edited.read_bytes()).hexdigest()]
    build(cache, capsys, "--policy", str(edited))
    assert len(verdict_rows(cache / "demo.duckdb")) == 2


def test_a_rebuilt_database_gets_a_new_verdict(tmp_path, capsys):
    cache = tmp_path / "cache"
    build(cache, capsys)
    db = cache / "demo.duckdb"
    assert record_demo_verdict(db, POLICY, RefreshSummary(db, 0, len(RUNS), 0, 0, 0.0)) is None
    assert record_demo_verdict(db, POLICY, RefreshSummary(db, 1, len(RUNS) - 1, 0, 10, 0.0)) is not None
    assert record_demo_verdict(db, POLICY, RefreshSummary(db, 0, len(RUNS) - 1, 1, 0, 0.0)) is not None
    assert [row[7] for row in verdict_rows(db)] == ["fail", "fail", "fail"]


def test_a_broken_policy_is_a_line_numbered_input_error(tmp_path, capsys):
    broken = tmp_path / "policy.toml"
    broken.write_text('name = "x"\n\n[[gates]]\nname = "g"\nmetric = "nope"\nslice = "all"\nmin = 1\n', encoding="utf-8")
    # Reported before anything is built.
    assert main(["demo", "--build-only", "--cache", str(tmp_path / "cache"), "--policy", str(broken)]) == 2
    assert f"{broken}:5" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()
    # `ragslice dashboard --policy` checks the file before starting a server.
    build(tmp_path / "cache", capsys)
    db = tmp_path / "cache" / "demo.duckdb"
    assert main(["dashboard", "--db", str(db), "--port", "8599", "--policy", str(broken)]) == 2
    assert f"{broken}:5" in capsys.readouterr().err


def test_policy_flags_reach_the_dashboard(tmp_path):
    args = build_parser().parse_args(["dashboard", "--db", "x.duckdb", "--policy", "p.toml"])
    assert args.policy == "p.toml"
    assert build_parser().parse_args(["demo", "--policy", "p.toml"]).policy == "p.toml"
    assert build_parser().parse_args(["demo"]).policy is None
    command = streamlit_command(tmp_path / "x.duckdb", port=8599, address="127.0.0.1", policy=tmp_path / "p.toml")
    assert command[-5:] == ["--", "--db", str(tmp_path / "x.duckdb"), "--policy", str(tmp_path / "p.toml")]


def test_the_printed_url_opens_the_demo_comparison():
    assert review_url(8765) == "http://127.0.0.1:8765/?suite=demo&baseline=prod-baseline&candidate=rerank-v2"


@pytest.mark.parametrize("port", ["0", "70000"])
def test_a_bad_port_is_refused_before_building(tmp_path, capsys, port):
    assert main(["demo", "--cache", str(tmp_path / "cache"), "--port", port]) == 2
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(("address", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("dashboard.example", False),
])
def test_only_a_loopback_address_is_served_without_the_exposure_warning(address: str, loopback: bool) -> None:
    from scoring.serve import is_loopback

    assert is_loopback(address) is loopback


def test_review_mode_serves_on_loopback_only_unless_the_user_allows_it(tmp_path, capsys):
    """Checked before anything starts: a non-loopback address in review mode is refused (exit 2, and
    why); with --allow-remote-review the same command passes that check and stops at the next one."""
    ws = REPO / "data" / "seed-lab"
    args = ["dashboard", "--db", str(tmp_path / "absent.duckdb"), "--workspace", str(ws), "--reviewer", "carl",
            "--address", "0.0.0.0", "--port", str(free_port())]
    assert main(args) == 2
    refused = capsys.readouterr().err
    assert "serves on this machine only" in refused and "--allow-remote-review" in refused
    assert main([*args, "--allow-remote-review"]) == 2
    assert "no database here" in capsys.readouterr().err

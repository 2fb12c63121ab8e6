"""The standing baseline of a suite: `suites/<suite>/baseline.jsonl`, published by refresh.

The workspace is the source of truth: `ragslice pin WORKSPACE --suite S --run R` appends one line
to the suite's `baseline.jsonl` (one JSON object a line: ``baseline``, the run ID or group name;
``pinned_at``, an ISO 8601 time with its offset; optional ``note``), and the next refresh publishes
every line into the table `baseline_pins` (docs/schema.md). The last line is the standing baseline;
the earlier lines are its history. Every line is checked (file, line, field, rule); the last line's
baseline must be a run or a group of runs of the suite, so a removed run cannot stay pinned. A
refresh publishes the pins even when no run changed (pinning rescoring nothing).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from ..errors import Problems, invalid
from .files import parse_json_line
from .lines import split_lines
from .workspace import Workspace

PIN_FILE = "baseline.jsonl"
PIN_KEYS = ("baseline", "pinned_at", "note")
PIN_COLUMNS = """
    suite VARCHAR NOT NULL,
    line INTEGER NOT NULL,
    baseline VARCHAR NOT NULL,
    pinned_at TIMESTAMP NOT NULL,
    note VARCHAR"""
"""The `baseline_pins` table: one row per line of a suite's baseline.jsonl; `pinned_at` in UTC."""


@dataclass(frozen=True)
class Pin:
    suite: str
    line: int
    baseline: str
    pinned_at: datetime
    """Naive UTC."""
    note: str | None


def side_names(ws: Workspace, suite: str) -> set[str]:
    """The run IDs of the suite's runs and the names of their groups."""
    runs = [r for r in ws.runs.values() if r.suite == suite]
    return {r.run_id for r in runs} | {str(r.manifest["group"]) for r in runs if r.manifest.get("group")}


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def read_pins(ws: Workspace, problems: Problems) -> list[Pin]:
    """Every line of every suite's baseline.jsonl, checked; problems are added, not raised."""
    out: list[Pin] = []
    for suite in ws.suites.values():
        path = suite.folder / PIN_FILE
        if not path.exists():
            continue
        shown = str(path)
        pins: list[Pin] = []
        for number, raw in enumerate(split_lines(path.read_text(encoding="utf-8")), start=1):
            if not raw.strip():
                continue
            try:
                row = parse_json_line(raw)
            except ValueError as error:
                problems.add(f"not valid JSON ({getattr(error, 'msg', error)})", path=shown, line=number)
                continue
            if not isinstance(row, dict):
                problems.add("expected a JSON object", path=shown, line=number)
                continue
            for key in sorted(set(row) - set(PIN_KEYS)):
                problems.add(f"unknown key (allowed: {', '.join(PIN_KEYS)})", key, path=shown, line=number)
            baseline, when, note = row.get("baseline"), row.get("pinned_at"), row.get("note")
            ok = True
            if not isinstance(baseline, str) or not baseline.strip():
                problems.add("expected a run ID or group name (a non-empty string)", "baseline",
                             baseline if "baseline" in row else ..., path=shown, line=number)
                ok = False
            moment = _moment(when) if isinstance(when, str) else None
            if moment is None:
                problems.add("expected an ISO 8601 time with its offset, e.g. 2026-11-20T09:12:00Z", "pinned_at",
                             when if "pinned_at" in row else ..., path=shown, line=number)
                ok = False
            if note is not None and not isinstance(note, str):
                problems.add("expected a string", "note", note, path=shown, line=number)
                ok = False
            if ok:
                pins.append(Pin(suite.name, number, baseline, moment, note))  # type: ignore[arg-type]
        if pins and pins[-1].baseline not in side_names(ws, suite.name):
            problems.add(f"the standing baseline (the last line) must be a run or a group of suite {suite.name}",
                         "baseline", pins[-1].baseline, path=shown, line=pins[-1].line)
        out += pins
    return out


def stored_pins(con: duckdb.DuckDBPyConnection) -> list[Pin]:
    """The pins a database holds (none when it has no `baseline_pins` table)."""
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'baseline_pins' "
                        "AND database_name = current_database()").fetchone()[0]
    if not found:
        return []
    rows = con.execute("SELECT suite, line, baseline, pinned_at, note FROM baseline_pins ORDER BY suite, line")
    return [Pin(*r) for r in rows.fetchall()]


def write_pins(con: duckdb.DuckDBPyConnection, pins: list[Pin]) -> None:
    """Replace `baseline_pins` with `pins` (read-write connection)."""
    con.execute(f"CREATE OR REPLACE TABLE baseline_pins ({PIN_COLUMNS}\n)")
    if pins:
        con.executemany("INSERT INTO baseline_pins VALUES (?, ?, ?, ?, ?)",
                        [(p.suite, p.line, p.baseline, p.pinned_at, p.note) for p in pins])


def pin(workspace: Path, baseline: str, *, suite: str | None = None, note: str | None = None,
        now: datetime | None = None) -> tuple[str, Path]:
    """Append a pin of `baseline` (a run ID or group name of the suite) to the suite's baseline.jsonl;
    returns (suite, file). The suite defaults to the one whose runs hold that name. Raises
    ValidationError for an unknown suite or a name that is no run or group of it."""
    from .workspace import load_workspace

    problems = Problems()
    ws = load_workspace(workspace, problems)
    problems.raise_if_any()
    if suite is None:
        holding = [s for s in ws.suites if baseline in side_names(ws, s)]
        if len(holding) != 1:
            where = "no suite" if not holding else f"suites {', '.join(holding)}"
            raise invalid(f"{where} of the workspace has a run or group of that name; name the suite with --suite",
                          "--run", baseline)
        suite = holding[0]
    if suite not in ws.suites:
        raise invalid(f"not a suite of this workspace (suites: {', '.join(ws.suites)})", "--suite", suite)
    if baseline not in side_names(ws, suite):
        raise invalid(f"not a run or group of suite {suite} (runs: {', '.join(sorted(side_names(ws, suite))[:20])})",
                      "--run", baseline)
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    row = {"baseline": baseline, "pinned_at": moment.isoformat().replace("+00:00", "Z"),
           **({"note": note} if note else {})}
    path = ws.suites[suite].folder / PIN_FILE
    existing = path.read_bytes() if path.exists() else b""
    with path.open("ab") as out:
        if existing and not existing.endswith(b"\n"):
            out.write(b"\n")
        out.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
    return suite, path


__all__ = ["PIN_COLUMNS", "PIN_FILE", "Pin", "pin", "read_pins", "side_names", "stored_pins", "write_pins"]

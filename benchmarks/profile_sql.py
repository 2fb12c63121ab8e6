"""Where a refresh or a `ragslice trec` spends its time: every SQL statement and Python phase, timed.

    python benchmarks/profile_sql.py refresh WORKSPACE [--db FILE] [--top 25]
    python benchmarks/profile_sql.py trec QRELS RUN [-m P@10 R@10 nDCG@10 RR AP]

Runs one refresh of WORKSPACE into FILE (default: a temporary file), or one evaluation of a TREC
run, with the DuckDB connection wrapped so that each `execute` is timed, and prints the slowest
statements and phases. The code profiled is unchanged; only the timing wrapper is added around it.
"""
from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from scoring.store import refresh as refresh_module
from scoring.store import database as store


class TimedConnection:
    """A DuckDB connection whose execute/executemany calls are timed into `log`."""

    def __init__(self, con, log: list[tuple[str, float]]):
        self._con, self._log = con, log

    def _timed(self, method: str, sql: str, *args):
        started = time.perf_counter()
        try:
            return getattr(self._con, method)(sql, *args)
        finally:
            self._log.append((statement_label(sql), time.perf_counter() - started))

    def execute(self, sql: str, *args):
        return self._timed("execute", sql, *args)

    def executemany(self, sql: str, *args):
        return self._timed("executemany", sql, *args)

    def __getattr__(self, name: str):
        return getattr(self._con, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._con.close()


def statement_label(sql: str) -> str:
    """A short, stable name for a statement: its first words and the table it writes."""
    text = " ".join(sql.split())
    match = re.match(r"(CREATE (?:OR REPLACE )?TEMP (?:TABLE|VIEW) \w+|INSERT INTO \w+|DELETE FROM \w+|UPDATE \w+|"
                     r"DROP TABLE IF EXISTS \w+|CHECKPOINT|SELECT \* FROM \(SELECT run_id, line, qid, [^,]+)", text)
    if match:
        return match.group(1)
    return text[:90]


def timed(label: str, func, phases: dict[str, float]):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            phases[label] += time.perf_counter() - started
    return wrapper


PHASES = ("load_workspace", "read_deferred", "write_suite", "read_lines", "stage_records", "score_staged", "write_runs", "snapshot_suite",
          "changed_questions", "rescore_questions", "build_summaries", "stored_part", "write_part")
"""Functions of `scoring.store.refresh` timed as phases (a phase holds the phases and statements it calls)."""


def profile(workspace: Path, db: Path) -> tuple[float, list[tuple[str, float]], dict[str, float]]:
    """(total seconds, statement timings, phase timings) of one refresh."""
    log: list[tuple[str, float]] = []
    phases: dict[str, float] = defaultdict(float)
    originals = {
        "open_for_write": store.open_for_write, "working_copy": store.working_copy, "publish": store.publish,
        "load_workspace": refresh_module.load_workspace, "read_deferred": refresh_module.read_deferred,
        "write_suite": refresh_module.write_suite,
        "read_lines": refresh_module.read_lines, "stage_records": refresh_module.stage_records,
        "score_staged": refresh_module.score_staged, "write_runs": refresh_module.write_runs,
        "snapshot_suite": refresh_module.snapshot_suite, "changed_questions": refresh_module.changed_questions,
        "rescore_questions": refresh_module.rescore_questions, "build_summaries": refresh_module.build_summaries,
        "stored_part": refresh_module.stored_part, "write_part": refresh_module.write_part,
        "connect_for_write": store.connect_for_write,
    }
    store.open_for_write = timed("open + create schema", lambda path, *rest: TimedConnection(originals["open_for_write"](path, *rest), log), phases)
    store.connect_for_write = timed("open the live file (decisions in place)", lambda path, **kw: TimedConnection(
        originals["connect_for_write"](path, **kw), log), phases)
    store.working_copy = timed("working copy (file copy)", originals["working_copy"], phases)
    store.publish = timed("publish (fsync + rename)", originals["publish"], phases)
    for name in PHASES:
        setattr(refresh_module, name, timed(name, originals[name], phases))
    try:
        started = time.perf_counter()
        refresh_module.refresh(workspace, db)
        total = time.perf_counter() - started
    finally:
        store.open_for_write, store.working_copy, store.publish = (
            originals["open_for_write"], originals["working_copy"], originals["publish"])
        store.connect_for_write = originals["connect_for_write"]
        for name in PHASES:
            setattr(refresh_module, name, originals[name])
    return total, log, dict(phases)


def report(total: float, log: list[tuple[str, float]], phases: dict[str, float], top: int = 25) -> str:
    by_label: dict[str, float] = defaultdict(float)
    for label, seconds in log:
        by_label[label] += seconds
    lines = [f"total {total:8.2f} s", "phases (nested: a phase holds the statements it runs):"]
    lines += [f"  {seconds:8.2f} s  {label}" for label, seconds in sorted(phases.items(), key=lambda kv: -kv[1])]
    lines.append(f"slowest statements (of {len(log)}, {sum(s for _, s in log):.2f} s in SQL):")
    lines += [f"  {seconds:8.2f} s  {label}" for label, seconds in sorted(by_label.items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(lines)


def profile_trec(qrels: Path, run: Path, measures: list[str]) -> tuple[float, list[tuple[str, float]], dict[str, float]]:
    """(total seconds, statement timings, phase timings) of one `scoring.io.trec.evaluate_files`."""
    import duckdb

    from scoring.io import trec

    log: list[tuple[str, float]] = []
    phases: dict[str, float] = defaultdict(float)

    class Shim:
        """Stands in for the duckdb module inside scoring.io.trec: connections come back timed."""

        def __getattr__(self, name: str):
            return getattr(duckdb, name)

        @staticmethod
        def connect(*args, **kwargs):
            return TimedConnection(duckdb.connect(*args, **kwargs), log)

    names = ("load_qrels", "load_run", "build_inputs")
    originals = {name: getattr(trec, name) for name in names}
    trec.duckdb = Shim()
    for name in names:
        setattr(trec, name, timed(name, originals[name], phases))
    try:
        started = time.perf_counter()
        trec.evaluate_files(qrels, run, measures)
        total = time.perf_counter() - started
    finally:
        trec.duckdb = duckdb
        for name in names:
            setattr(trec, name, originals[name])
    return total, log, dict(phases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("refresh")
    r.add_argument("workspace", type=Path)
    r.add_argument("--db", type=Path)
    r.add_argument("--top", type=int, default=25)
    t = sub.add_parser("trec")
    t.add_argument("qrels", type=Path)
    t.add_argument("run", type=Path)
    t.add_argument("-m", "--measures", nargs="+", default=["P@10", "R@10", "nDCG@10", "RR", "AP"])
    t.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    import scoring

    print(f"code profiled: {Path(scoring.__file__).parent}")
    if args.what == "trec":
        print(report(*profile_trec(args.qrels, args.run, args.measures), top=args.top))
        return
    with tempfile.TemporaryDirectory(prefix="ragslice-profile-") as tmp:
        db = args.db or Path(tmp) / "profile.duckdb"
        print(report(*profile(args.workspace, db), top=args.top))


if __name__ == "__main__":
    main()

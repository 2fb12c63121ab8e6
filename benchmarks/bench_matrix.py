"""The Release matrix page at TREC scale: one baseline against 149 candidates on 300 questions.

    python benchmarks/bench_matrix.py [--questions 300] [--runs 150] [--repeats 5] [--work /tmp/ragslice-bench]

Builds a synthetic suite (`ragslice synth --questions 300 --runs 150`) and refreshes it, then loads
the Release matrix page through Streamlit's AppTest: one untimed load first (the server's modules
imported, as after a refresh), then `--repeats` cold loads, each after clearing Streamlit's caches
(`st.cache_data` and `st.cache_resource`): the whole page script, the database read and the
statistics of every cell included. Two selections: the default (four metrics on all questions) and
four metrics on three slices. Beside the wall clock, the processor time of the load (every thread
of this process). The set-based computation alone (`scoring.decide.matrix.matrix`) is timed too.
Figures are printed; nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

TARGET_SECONDS = 2.0
APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"


def build(work: Path, questions: int, runs: int) -> Path:
    """The synthetic workspace's database (reused when present)."""
    from scoring.io.synth import write_workspace
    from scoring.store.refresh import refresh

    ws = work / f"matrix-{questions}x{runs}"
    db = work / f"matrix-{questions}x{runs}.duckdb"
    if not db.exists():
        write_workspace(questions, runs, out=ws)
        refresh(ws, db)
    return db


def page_loads(db: Path, repeats: int, params: dict[str, list[str] | str]) -> list[tuple[float, float]]:
    """(wall, processor) seconds of `repeats` cold loads of the page with these query parameters."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["RAGSLICE_DB"] = str(db)
    os.environ.pop("RAGSLICE_POLICY", None)
    at = AppTest.from_file(str(APP), default_timeout=600)
    at.query_params.update(params)
    at.switch_page("views/release_matrix.py").run()  # untimed: modules imported, as on a running server
    if at.exception:
        raise RuntimeError([e.value for e in at.exception])
    out = []
    for _ in range(repeats):
        st.cache_data.clear()
        st.cache_resource.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        at.run()
        out.append((time.perf_counter() - wall, time.process_time() - cpu))
        if at.exception:
            raise RuntimeError([e.value for e in at.exception])
    return out


def compute_only(db: Path, repeats: int, metrics: list[str], slice_names: list[str]) -> list[float]:
    import duckdb

    from scoring.decide import matrix, sides
    from scoring.store.schema import table_names

    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        with duckdb.connect(str(db), read_only=True) as con:
            runs = sides.read_runs(con, table_names(con))
            every = sides.sides_of(runs)
            matrix.matrix(con, every[0], every[1:], metrics, slice_names)
        out.append(time.perf_counter() - started)
    return out


def run(args: argparse.Namespace) -> dict[str, float]:
    from streamlit import logger

    logger.set_log_level("error")
    args.work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    db = build(args.work, args.questions, args.runs)
    print(f"\nRelease matrix: {args.runs} runs x {args.questions} questions ({db}, built or reused in "
          f"{time.perf_counter() - started:.1f} s)")
    metrics = ["ndcg", "recall", "support", "coverage"]
    results: dict[str, float] = {}
    for label, slice_names in (("4 metrics x all", []), ("4 metrics x 3 slices", ["all", "critical", "split:heldout"])):
        params: dict[str, list[str] | str] = {"metrics": metrics}
        if slice_names:
            params["slices"] = slice_names
        loads = page_loads(db, args.repeats, params)
        walls = [w for w, _ in loads]
        cpus = [c for _, c in loads]
        compute = compute_only(db, args.repeats, metrics, slice_names or ["all"])
        print(f"  page, cold ({label}): median {statistics.median(walls):.2f} s, worst {max(walls):.2f} s wall; "
              f"median {statistics.median(cpus):.2f} s processor; the matrix alone: median "
              f"{statistics.median(compute):.2f} s  (target < {TARGET_SECONDS:g} s)")
        results[label] = statistics.median(walls)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragslice-bench"))
    run(parser.parse_args())


if __name__ == "__main__":
    main()

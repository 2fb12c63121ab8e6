"""Refresh at scale: full refresh, the floor, one added run, the reference loop, dashboard queries.

    python benchmarks/bench_refresh.py --records 10000 100000 1000000 [--work /tmp/ragslice-bench]

For each size N it writes a synthetic workspace with `ragslice synth` (N / 5 questions x 6 runs),
holds the sixth run back, and measures in child processes (wall time, peak RSS):

- floor: DuckDB reading the same five records files into typed columns in memory, nothing else
  (the fastest of three runs, so that ratios against it are conservative);
- the store floor: the floor, then the records written to a new database file (one row per record,
  one per retrieved slot, as docs/schema.md keeps them) and checkpointed; nothing checked or scored.
  No refresh that keeps what it scores can be faster: it bounds the refresh targets from below;
- full refresh of the five runs (N records) into a new database;
- adding the sixth run (N / 5 records) to it: a second refresh that scores only the new run;
- the reference loop (`json.loads` + `scoring.evaluate` per record) over the same records, on a
  sample of at most --reference-sample records, extrapolated linearly to N (printed as such);
- the dashboard's queries on a copy of the N-record database (largest size only; see
  bench_dashboard.py).

Times are the measured work inside each process (start-up and imports excluded); files are warm in
the page cache for every step alike. Nothing is asserted: figures are printed.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from common import best_of, heading, machine, mib, note, ragslice, row, run_child, secs, task, verdict

RUNS = 5


def bench_size(records: int, work: Path, *, reference_sample: int, seed: int,
               dashboard_repeats: int | None = None) -> dict:
    """Every figure for one workspace size; the returned dict feeds the targets summary.

    `dashboard_repeats`: also time the dashboard's queries on the full database, that many calls each."""
    questions = records // RUNS
    ws, held, db = work / f"ws-{records}", work / f"held-{records}", work / f"db-{records}.duckdb"
    for path in (ws, held):
        shutil.rmtree(path, ignore_errors=True)
    for path in work.glob(f"*db-{records}.duckdb*"):
        path.unlink()
    heading(f"{records:,} records ({questions:,} questions x {RUNS} runs; one more run of {questions:,} held back)")
    synth = ragslice("synth", "--questions", questions, "--runs", RUNS + 1, "--seed", seed, "--out", ws)
    extra = sorted((ws / "runs").iterdir())[-1]
    held.mkdir(parents=True)
    extra.rename(held / extra.name)
    size = sum(p.stat().st_size for p in (ws / "runs").glob("*/records.jsonl"))
    row("synth (6 runs, all files)", secs(synth.wall), mib(synth.peak_mb), "")
    row("records files (5 runs)", f"{size / 2**20:.0f} MiB", "", "")

    floor = best_of(3, "floor", ws)
    lines = best_of(3, "lines", ws)
    store = best_of(3, "store", ws)
    coded = best_of(3, "store_coded", ws)
    full = task("refresh", ws, db)
    row("", "time", "peak RSS", "ratio")
    row("floor: DuckDB read_json, typed, in memory", secs(floor.seconds), mib(floor.peak_mb), "1.0x floor")
    row("lines: DuckDB read_csv lines (as refresh)", secs(lines.seconds), mib(lines.peak_mb),
        f"{lines.seconds / floor.seconds:.1f}x floor")
    row("store floor: floor + write records and slots", secs(store.seconds), mib(store.peak_mb),
        f"{store.seconds / floor.seconds:.1f}x floor")
    note(f"store floor: read {secs(store.report['read_seconds'])}, write records "
         f"{secs(store.report['records_seconds'])}, write {store.report['slots']:,} retrieved slots "
         f"{secs(store.report['retrieved_seconds'])}")
    for layout, label in (("slots", "a row of codes per slot"), ("lists", "a list of codes per record")):
        figures = coded.report[layout]
        row(f"store floor, coded layout: {label}", secs(figures["seconds"]), "",
            f"{figures['seconds'] / floor.seconds:.1f}x floor")
        note(f"  read {secs(figures['read_seconds'])}, write records {secs(figures['records_seconds'])}, write "
             f"rankings {secs(figures['retrieved_seconds'])}; file {figures['file_mib']:.0f} MiB")
    row("full refresh", secs(full.seconds), mib(full.peak_mb), f"{full.seconds / floor.seconds:.1f}x floor")
    note(f"`ragslice refresh` as a command: {secs(full.wall)} wall, start-up and imports included")
    suite = best_of(3, "suite", ws)
    report = suite.report
    row(f"suite read floor: DuckDB read_json, typed ({report['documents']:,} documents, "
        f"{report['questions']:,} questions)", secs(report["read_floor_seconds"]), "", "1.0x suite floor")
    row("suite read and checked set-based, as the refresh reads it", secs(suite.seconds), mib(suite.peak_mb),
        f"{suite.seconds / report['read_floor_seconds']:.1f}x suite floor"
        + ("" if report["set_based"] else " (doubted: read in Python)"))
    row("suite read and checked in Python", secs(report["python_seconds"]), "",
        f"{report['python_seconds'] / report['read_floor_seconds']:.1f}x suite floor")
    note(f"the suite's tables written from the set-based read: {secs(report['write_seconds'])}")
    db_size = db.stat().st_size
    dashboard_db = work / f"dashboard-{records}.duckdb"
    if dashboard_repeats:
        shutil.copyfile(db, dashboard_db)  # the N-record state, for the dashboard after the addition

    (held / extra.name).rename(ws / "runs" / extra.name)
    add = task("refresh", ws, db)

    n_sample = min(records, reference_sample)
    ref = task("reference", ws, n_sample)
    per_record = ref.seconds / ref.report["records"]
    ref_total = per_record * records
    basis = "measured" if ref.report["records"] >= records * 0.99 else (
        f"extrapolated from {ref.report['records']:,} records")
    row("reference loop: json.loads + evaluate", secs(ref_total), mib(ref.peak_mb), basis)
    note(f"reference loop: {per_record * 1e6:.0f} us per record, evaluate alone "
         f"{ref.report['evaluate_seconds'] / ref.report['records'] * 1e6:.0f} us; "
         f"the full refresh is {ref_total / full.seconds:.1f}x faster")

    heading(f"adding one run of {add.report['records']:,} records to the {records:,}-record database")
    row("incremental refresh", secs(add.seconds), mib(add.peak_mb),
        f"{add.seconds / full.seconds:.2f}x full")
    note(f"runs scored {add.report['runs_scored']}, unchanged and skipped {add.report['runs_skipped']}; "
         f"database before the addition {db_size / 2**20:.0f} MiB")

    dashboard = None
    if dashboard_repeats:
        dashboard = run_child([sys.executable, str(Path(__file__).with_name("bench_dashboard.py")),
                               "--db", str(dashboard_db), "--repeats", str(dashboard_repeats)], check=False)
        heading(f"dashboard queries on {records:,} records (cold page loads: cache cleared before each)")
        print(dashboard.stdout.rstrip() or dashboard.stderr.strip()[-2000:], flush=True)
        dashboard_db.unlink()
    return {"records": records, "floor": floor.seconds, "store": store.seconds, "suite": suite.seconds,
            "suite_floor": suite.report["read_floor_seconds"],
            "store_coded": min(coded.report["slots"]["seconds"], coded.report["lists"]["seconds"]),
            "full": full.seconds, "full_peak_mb": full.peak_mb,
            "add": add.seconds, "add_scored": add.report["runs_scored"], "reference": ref_total,
            "reference_basis": basis, "synth": synth.wall,
            "dashboard_stdout": dashboard.stdout if dashboard else ""}


def targets(result: dict) -> list[tuple[str, str, bool | None]]:
    """The issue's refresh targets, each with the measured figure and whether it holds."""
    n = result["records"]
    return [
        (f"full refresh of {n:,} at most 12x the plain read of the records files",
         f"{result['full'] / result['floor']:.1f}x", result["full"] / result["floor"] <= 12),
        (f"full refresh of {n:,} under 4 GB peak memory",
         mib(result["full_peak_mb"]), result["full_peak_mb"] < 4 * 1024),
        *[(f"adding one run in under {share} of a full refresh",
           f"{result['add'] / result['full']:.2f}x" if result["add_scored"] == 1
           else f"{result['add_scored']} runs re-scored", result["add"] / result["full"] < bound
           if result["add_scored"] == 1 else None) for share, bound in (("a quarter", 0.25), ("a sixth", 1 / 6))],
        ("the suite read and checked in about the time of reading it (set-based / typed read)",
         f"{result['suite'] / result['suite_floor']:.1f}x", None),
    ]


def bounds(result: dict) -> list[tuple[str, str]]:
    """What the store floor leaves of the refresh targets: a refresh that keeps the records it scores
    takes at least the store floor, before any suite is read, rule checked or metric computed."""
    floor, store, reference = result["floor"], result["store"], result["reference"]
    coded = result.get("store_coded")
    return [
        ("store floor, as a multiple of the floor (target for the refresh: <= 3x)", f"{store / floor:.1f}x"),
        *([("store floor of the coded layout (the faster of its two forms), as a multiple of the floor",
            f"{coded / floor:.1f}x")] if coded else []),
        ("reference loop / store floor (target for the refresh: >= 8x)", f"{reference / store:.1f}x"),
        ("time left at 8x the reference loop for suite, checks, scoring, summaries",
         secs(max(reference / 8 - store, 0.0))),
    ]


def print_bounds(result: dict) -> None:
    heading(f"bounds at {result['records']:,} records (the store floor: no refresh that keeps the records is faster)")
    for label, figure in bounds(result):
        row(label, figure, width=72)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragslice-bench"))
    parser.add_argument("--reference-sample", type=int, default=50_000)
    parser.add_argument("--dashboard-repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the workspaces and databases")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> list[dict]:
    args.work.mkdir(parents=True, exist_ok=True)
    largest = max(args.records)
    results = [bench_size(n, args.work, reference_sample=args.reference_sample, seed=args.seed,
                          dashboard_repeats=args.dashboard_repeats if n == largest else None)
               for n in sorted(args.records)]
    if not args.keep:
        for path in args.work.glob("*-*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return results


def main() -> None:
    args = parse_args()
    print(f"ragslice refresh benchmark: {machine()}")
    results = run(args)
    heading("targets (refresh)")
    for label, figure, ok in targets(results[-1]):
        row(label, figure, verdict(ok), width=64)
    print_bounds(results[-1])
    print(f"\nfinished: {machine()}")


if __name__ == "__main__":
    main()

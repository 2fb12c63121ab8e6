"""Re-scoring only what changed: one label decision, one edited question and one added run on a large
database, and the demo's refresh.

    python benchmarks/bench_rescore.py [--records 1000000] [--decisions 3] [--demo-repeats 5]
                                       [--work /tmp/ragslice-bench] [--keep]

It writes a synthetic workspace with `ragslice synth` (--records / 5 questions x 6 runs), holds the
sixth run back, refreshes the five others into a new database, and measures in child processes:

- one label decision, from the review file's line to the published database: `ragslice review
  --db` appends a grade for a document the question's labels do not name (the command's wall
  time, start-up included), then `ragslice refresh` publishes it (its measured work, and its wall
  time as a command); --decisions times, on different questions, medians printed;
- one edited question: a question's line in questions.jsonl gains a relevance label, then refresh;
- adding the sixth run (--records / 5 records) against the full refresh of the five;
- what bounds a decision's refresh at this size: copying the live database into the working copy,
  reading and checking the suite's files, and writing the suite's tables (`bounds` task);
- the demo: the bundled workspaces merged as `ragslice demo` does, refreshed into a new database
  (the median of --demo-repeats refreshes, each into a new file).

Times are the measured work inside each process (start-up and imports excluded) unless marked as a
command's wall time. Nothing is asserted: figures are printed.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
from pathlib import Path

from common import heading, machine, mib, note, ragslice, row, secs, task, verdict

RUNS = 5
REVIEWER = "bench"


def _decision(ws: Path, index: int) -> tuple[str, str]:
    """(question, document): the `index`-th question of the suite and a document its labels do not name."""
    suite = next((ws / "suites").iterdir())
    with (suite / "questions.jsonl").open(encoding="utf-8") as handle:
        for n, line in enumerate(handle):
            if n == index:
                question = json.loads(line)
                break
    labelled = set(question["relevant"])  # a list of IDs or a map ID -> grade
    with (suite / "documents.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)["id"]
            if doc not in labelled:
                return question["id"], doc
    raise SystemExit("no unlabelled document found")


def _edit_question(ws: Path, index: int) -> str:
    """Give the `index`-th question of questions.jsonl one more relevance label (grade 1); its ID."""
    path = next((ws / "suites").iterdir()) / "questions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    question = json.loads(lines[index])
    documents = next((ws / "suites").iterdir()) / "documents.jsonl"
    with documents.open(encoding="utf-8") as handle:
        ids = [json.loads(line)["id"] for _, line in zip(range(100), handle)]
    relevant = question["relevant"]
    grades = dict.fromkeys(relevant, 1) if isinstance(relevant, list) else dict(relevant)
    grades[next(d for d in ids if d not in grades)] = 1
    question["relevant"] = grades
    lines[index] = json.dumps(question) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    return question["id"]


def bench_large(records: int, work: Path, *, decisions: int, seed: int) -> dict:
    questions = records // RUNS
    ws, held, db = work / f"rescore-ws-{records}", work / f"rescore-held-{records}", work / f"rescore-{records}.duckdb"
    for path in (ws, held):
        shutil.rmtree(path, ignore_errors=True)
    for path in work.glob(f"rescore-{records}.duckdb*"):
        path.unlink()
    heading(f"{records:,} records ({questions:,} questions x {RUNS} runs; one more run of {questions:,} held back)")
    ragslice("synth", "--questions", questions, "--runs", RUNS + 1, "--seed", seed, "--out", ws)
    extra = max((ws / "runs").iterdir())
    held.mkdir(parents=True)
    extra.rename(held / extra.name)
    full = task("refresh", ws, db)
    row("", "work", "wall", "peak RSS")
    row("full refresh (5 runs)", secs(full.seconds), secs(full.wall), mib(full.peak_mb))
    if full.report.get("cpu_seconds") is not None:
        note(f"processor time of the full refresh (all threads): {secs(full.report['cpu_seconds'])}")
    note(f"database {db.stat().st_size / 2**20:.0f} MiB")

    review_walls, refresh_work, refresh_walls, refresh_cpu, rescored = [], [], [], [], []
    for n in range(decisions):
        question, doc = _decision(ws, 1 + n * 997)
        review = ragslice("review", ws, "--reviewer", REVIEWER, "--question", question, "--doc", doc, "--grade", 2,
                          "--db", db)
        again = task("refresh", ws, db)
        review_walls.append(review.wall)
        refresh_work.append(again.seconds)
        refresh_cpu.append(again.report.get("cpu_seconds"))
        refresh_walls.append(again.wall)
        rescored.append((again.report.get("runs_scored"), again.report.get("questions_rescored")))
    decision = {"review_wall": statistics.median(review_walls), "refresh": statistics.median(refresh_work),
                "refresh_wall": statistics.median(refresh_walls)}
    row("one label decision: `ragslice review` (command)", "", secs(decision["review_wall"]), "")
    row("  then refresh", secs(decision["refresh"]), secs(decision["refresh_wall"]), "")
    row("  decision line to published database", "", secs(decision["review_wall"] + decision["refresh_wall"]), "")
    note(f"medians of {decisions} decisions (refresh work {', '.join(secs(s) for s in refresh_work)}; processor "
         f"time {', '.join(secs(s) for s in refresh_cpu if s is not None) or 'not reported'}); "
         f"(runs scored from files, question rows re-scored): {rescored}")

    _edit_question(ws, 5)
    edited = task("refresh", ws, db)
    row("one edited question, refresh", secs(edited.seconds), secs(edited.wall), mib(edited.peak_mb))

    bound = task("bounds", ws, db)
    note(f"bounds at this size: copying the database {secs(bound.report['copy_seconds'])}, reading and checking "
         f"the suite {secs(bound.report['suite_seconds'])}, writing its tables "
         f"{secs(bound.report['write_suite_seconds'])}")

    (held / extra.name).rename(ws / "runs" / extra.name)
    add = task("refresh", ws, db)
    row(f"adding one run of {add.report['records']:,} records", secs(add.seconds), secs(add.wall), mib(add.peak_mb))
    note(f"adding / full: {add.seconds / full.seconds:.2f}")
    return {"records": records, "full": full.seconds, "full_cpu": full.report.get("cpu_seconds"),
            "full_peak_mb": full.peak_mb, "decision": decision, "decision_refreshes": refresh_work,
            "decision_cpu": refresh_cpu, "edited_cpu": edited.report.get("cpu_seconds"),
            "add_cpu": add.report.get("cpu_seconds"), "edited": edited.seconds, "add": add.seconds,
            "add_records": add.report["records"], "bounds": bound.report}


def bench_demo(work: Path, repeats: int) -> dict:
    from scoring.io.demo import BUNDLED, bundled_root, merge_workspaces

    ws = work / "rescore-demo"
    shutil.rmtree(ws, ignore_errors=True)
    merge_workspaces([bundled_root() / name for name in BUNDLED], ws)
    times, cpu = [], []
    for n in range(repeats):
        db = work / f"rescore-demo-{n}.duckdb"
        db.unlink(missing_ok=True)
        measured = task("refresh", ws, db)
        times.append(measured.seconds)
        cpu.append(measured.report.get("cpu_seconds"))
        db.unlink()
    heading("demo (bundled workspaces, as `ragslice demo` builds them)")
    row("full refresh into a new database", secs(statistics.median(times)), f"min {secs(min(times))}",
        f"max {secs(max(times))}")
    if None not in cpu:
        note(f"processor time of the refresh (all threads): median {secs(statistics.median(cpu))}")
    return {"demo": statistics.median(times), "demo_times": times, "demo_cpu": cpu}


def run(records: int, work: Path, *, decisions: int = 3, demo_repeats: int = 5, seed: int = 0,
        keep: bool = False) -> dict:
    """Every figure of this benchmark (the demo, then the `records`-record workspace)."""
    work.mkdir(parents=True, exist_ok=True)
    results = bench_demo(work, demo_repeats)
    results |= bench_large(records, work, decisions=decisions, seed=seed)
    if not keep:
        for path in work.glob("rescore-*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return results


def targets(result: dict, floor: float | None = None) -> list[tuple[str, str, bool | None]]:
    """The re-scoring targets, each with its figure and whether it holds; `floor`: the plain read of the
    same records files (`bench_refresh.py`), which one label decision's refresh may take at most twice."""
    n, decision = result["records"], result["decision"]
    against_read = [] if floor is None else [
        (f"one label decision at most 2x the plain read of the records files ({secs(floor)})",
         f"{decision['refresh'] / floor:.1f}x", decision["refresh"] / floor <= 2)]
    return against_read + [
        (f"one label decision published in under 2 s at {n:,} records (refresh command)",
         secs(decision["refresh_wall"]), decision["refresh_wall"] < 2),
        (f"adding a {result['add_records']:,}-record run under a sixth of a full refresh",
         f"{result['add'] / result['full']:.2f}x", result["add"] / result["full"] < 1 / 6),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--decisions", type=int, default=3)
    parser.add_argument("--demo-repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragslice-bench"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    print(f"ragslice re-scoring benchmark: {machine()}")
    results = run(args.records, args.work, decisions=args.decisions, demo_repeats=args.demo_repeats, seed=args.seed,
                  keep=args.keep)
    heading("targets (re-scoring)")
    for label, figure, ok in targets(results):
        row(label, figure, verdict(ok), width=72)
    print(json.dumps(results))


if __name__ == "__main__":
    main()

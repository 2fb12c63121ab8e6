"""`ragslice trec` against pytrec_eval (and trec_eval's C program when on PATH), end to end.

    python benchmarks/bench_trec.py [--sizes 2000x1000 10000x1000] [--repeat 3] [--work /tmp/ragslice-bench]

For each size QxD it writes a qrels file (50 judged documents per query: 5 graded 2, 10 graded 1,
35 graded 0) and a run file (D ranked documents per query, the judged ones among the first 100),
then times, each in its own process, files in and numbers out (`--repeat N`: N times, the two
sides in turn, so each pair of runs meets the same load; the medians are reported, and the ratio
is the median of the pairs' ratios):

- `ragslice trec QRELS RUN -m P@10 R@10 nDCG@10 RR AP` (wall time of the command);
- pytrec_eval: the files parsed in Python into its dicts, evaluated, means printed (wall time of
  the process; its own split into parsing and evaluating is shown too);
- `trec_eval -m P.10 -m recall.10 -m ndcg_cut.10 -m recip_rank -m map QRELS RUN` when found on PATH
  (run in turn with the other two, `--repeat` times).

The means of the three are compared (every query has a relevant document, so the n/a conventions
do not differ). Nothing is asserted: figures are printed.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from statistics import median

from common import heading, machine, mib, note, ragslice, row, run_child, secs, task, verdict
from tasks import TREC_EVAL_ARGS, TREC_NAMES

MEASURES = ("P@10", "R@10", "nDCG@10", "RR", "AP")
JUDGED = 50


def write_files(queries: int, depth: int, folder: Path) -> tuple[Path, Path]:
    """Deterministic qrels and run files written by DuckDB (seconds even at 10M lines), in a child
    process: Linux keeps a process's peak RSS across exec, so every child forked after DuckDB had
    worked in this process would report this process's memory as its own peak."""
    folder.mkdir(parents=True, exist_ok=True)
    qrels, run = folder / f"qrels-{queries}x{depth}.txt", folder / f"run-{queries}x{depth}.txt"
    subprocess.run([sys.executable, "-c", "import sys, bench_trec; bench_trec.generate(*sys.argv[1:])",
                    str(queries), str(depth), str(qrels), str(run)], cwd=Path(__file__).resolve().parent, check=True)
    return qrels, run


def generate(queries: str, depth: str, qrels: str, run: str) -> None:
    """Write the qrels and run files of `write_files` (runs in its child process)."""
    import duckdb

    queries, depth = int(queries), int(depth)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    # Document of query q at slot m: the judged ones are m < JUDGED; the run puts slots 0..99 in a
    # per-query shuffled order at ranks 1..100, then slots 100.. in order.
    doc = "'D' || lpad(((q * 7919 + m * 104729) % 10000000)::VARCHAR, 7, '0')"
    con.execute(f"""COPY (
        SELECT 'Q' || lpad(q::VARCHAR, 6, '0') AS qid, 0 AS iter, {doc} AS docno,
               CASE WHEN m < 5 THEN 2 WHEN m < 15 THEN 1 ELSE 0 END AS grade
        FROM range({queries}) t(q), range({JUDGED}) s(m) ORDER BY q, m
    ) TO '{qrels}' (FORMAT csv, DELIMITER ' ', HEADER false)""")
    con.execute(f"""COPY (
        SELECT qid, 'Q0', {doc} AS docno, r + 1 AS rank, round({depth} - r - 0.5, 1) AS score, 'bench' AS runid
        FROM (SELECT 'Q' || lpad(q::VARCHAR, 6, '0') AS qid, q, r,
                     CASE WHEN r < 100 THEN (r * 37 + q * 11) % 100 ELSE r END AS m
              FROM range({queries}) t(q), range({depth}) s(r))
        ORDER BY q, r
    ) TO '{run}' (FORMAT csv, DELIMITER ' ', HEADER false)""")


def parse_means(stdout: str, names: dict[str, str] | None = None) -> dict[str, float]:
    """`MEASURE all VALUE` lines (ragslice, trec_eval) as measure -> mean."""
    wanted = {v: k for k, v in (names or {}).items()}
    means = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all":
            name = wanted.get(parts[0], parts[0])
            if name in MEASURES:
                means[name] = float(parts[2])
    return means


def bench_size(queries: int, depth: int, work: Path, repeat: int = 1) -> dict:
    heading(f"TREC {queries:,} queries x {depth:,} documents ({queries * depth:,} run lines)")
    qrels, run = write_files(queries, depth, work / "trec")
    binary = shutil.which("trec_eval")
    pairs, c_runs = [], []
    for _ in range(repeat):  # the programs in turn, so each meets the same load
        ours = ragslice("trec", qrels, run, "-m", *MEASURES)
        theirs = task("pytrec", qrels, run, *MEASURES)
        pairs.append((ours, theirs))
        if binary:
            c_runs.append(run_child([binary, *(f"-m{TREC_EVAL_ARGS[m]}" for m in MEASURES), str(qrels), str(run)]))
    if repeat > 1:
        row("", "ragslice", "pytrec_eval", "ratio")
        for ours, theirs in pairs:
            row("  one pair of runs", secs(ours.wall), secs(theirs.wall), f"{theirs.wall / ours.wall:.2f}x")
    ours_wall = median([o.wall for o, _ in pairs])
    theirs_wall = median([t.wall for _, t in pairs])
    ratio = median([t.wall / o.wall for o, t in pairs])
    ours, theirs = pairs[-1]
    label = " (median)" if repeat > 1 else ""
    row("", "wall", "peak RSS", "")
    row(f"ragslice trec (end to end){label}", secs(ours_wall), mib(max(o.peak_mb for o, _ in pairs)), "")
    row(f"pytrec_eval (end to end){label}", secs(theirs_wall), mib(max(t.peak_mb for _, t in pairs)),
        f"ragslice {ratio:.1f}x faster")
    parsing = median([t.report["parse_seconds"] for _, t in pairs])
    note(f"pytrec_eval: {secs(parsing)} of it parsing the files in Python")
    ours_means, theirs_means = parse_means(ours.stdout), theirs.report["means"]
    diff = max(abs(ours_means[m] - theirs_means[m]) for m in MEASURES)
    note(f"largest difference of the means, ragslice vs pytrec_eval: {diff:.5f} (ragslice prints 4 decimals)")
    result = {"queries": queries, "lines": queries * depth, "ours": ours_wall, "pytrec": theirs_wall, "ratio": ratio,
              "trec_eval": None}
    if binary:
        c_wall = median([c.wall for c in c_runs])
        row(f"trec_eval C program{label}", secs(c_wall), mib(max(c.peak_mb for c in c_runs)),
            f"ragslice {c_wall / ours_wall:.2f}x as fast")
        note(f"trec_eval: {binary}")
        c_means = parse_means(c_runs[-1].stdout, TREC_NAMES)
        if set(c_means) != set(MEASURES):
            raise RuntimeError(f"trec_eval printed means for {sorted(c_means)}, not {list(MEASURES)}")
        note(f"largest difference of the means, ragslice vs trec_eval: "
             f"{max(abs(ours_means[m] - c_means[m]) for m in MEASURES):.5f}")
        result["trec_eval"] = c_wall
    else:
        row("trec_eval C program", "not on PATH", "", "skipped")
    return result


def targets(results: list[dict]) -> list[tuple[str, str, bool | None]]:
    out = []
    for r in results:
        out.append((f"trec {r['queries']:,}x: >= 2x faster than pytrec_eval end to end",
                    f"{r['ratio']:.1f}x", r["ratio"] >= 2))
    big = max(results, key=lambda r: r["lines"])
    ok = None if big["trec_eval"] is None else big["ours"] <= big["trec_eval"]
    figure = "no trec_eval" if big["trec_eval"] is None else f"{big['trec_eval'] / big['ours']:.2f}x"
    out.append((f"trec at {big['lines'] / 1e6:g}M lines as fast as trec_eval", figure, ok))
    return out


def parse_size(text: str) -> tuple[int, int]:
    queries, depth = text.lower().split("x")
    return int(queries), int(depth)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_size, nargs="+", default=[(2000, 1000), (10000, 1000)])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side per size, in turn (medians shown)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragslice-bench"))
    parser.add_argument("--keep", action="store_true")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> list[dict]:
    results = [bench_size(q, d, args.work, getattr(args, "repeat", 1)) for q, d in args.sizes]
    if not args.keep:
        shutil.rmtree(args.work / "trec", ignore_errors=True)
    return results


def main() -> None:
    args = parse_args()
    print(f"ragslice trec benchmark: {machine()}")
    results = run(args)
    heading("targets (trec)")
    for label, figure, ok in targets(results):
        row(label, figure, verdict(ok), width=64)


if __name__ == "__main__":
    main()

"""Every benchmark of the issue "Scale and speed" in one run, on the same data, then the targets.

    python benchmarks/run_all.py [--records 10000 100000 1000000] [--trec 2000x1000 10000x1000]
                                 [--trec-repeat 3] [--work /tmp/ragslice-bench] [--keep]

Refresh sizes, the floor, one added run, the reference loop and the dashboard queries come from
bench_refresh.py (the dashboard on the largest database); `ragslice trec` against pytrec_eval and
trec_eval from bench_trec.py; a label decision, an edited question and an added run on the largest
size, and the demo's refresh, from bench_rescore.py. At 1M records the whole run takes a few minutes on 2 cores: start
it in the background (`nohup python benchmarks/run_all.py > /tmp/bench.log 2>&1 &`). Targets are
ratios measured in this one run; nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import bench_matrix
import bench_refresh
import bench_rescore
import bench_trec
from common import heading, machine, row, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--trec", type=bench_trec.parse_size, nargs="+", default=[(2000, 1000), (10000, 1000)])
    parser.add_argument("--trec-repeat", type=int, default=3,
                        help="runs of each program per TREC size, in turn (medians; the ratio is the median pair's)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragslice-bench"))
    parser.add_argument("--reference-sample", type=int, default=50_000)
    parser.add_argument("--dashboard-repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--matrix-repeats", type=int, default=5, help="cold loads of the Release matrix page")
    parser.add_argument("--keep", action="store_true", help="keep the generated files and databases")
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"ragslice benchmarks: {machine()}")
    refresh_results = bench_refresh.run(args)
    trec_results = bench_trec.run(argparse.Namespace(sizes=args.trec, work=args.work, keep=args.keep,
                                                     repeat=args.trec_repeat))
    heading("re-scoring what changed (bench_rescore.py)")
    rescore_results = bench_rescore.run(max(args.records), args.work, seed=args.seed, keep=args.keep)

    matrix_results = bench_matrix.run(argparse.Namespace(questions=300, runs=150, repeats=args.matrix_repeats,
                                                          work=args.work))

    heading("targets (ratios measured in this run)")
    rows = (bench_refresh.targets(refresh_results[-1]) + bench_rescore.targets(rescore_results, refresh_results[-1]["floor"])
            + bench_trec.targets(trec_results))
    dashboard = refresh_results[-1]["dashboard_stdout"].strip().splitlines()
    if dashboard and dashboard[-1].startswith("{"):
        worst = json.loads(dashboard[-1])
        rows.append((f"every page's queries < 300 ms at p95 on {refresh_results[-1]['records']:,} records",
                     f"{worst['slowest_page']} {worst['p95_ms']:.0f} ms", worst["p95_ms"] < 300))
    else:
        rows.append(("every page's queries < 300 ms at p95", "not measured", None))
    cold = matrix_results["4 metrics x all"]
    rows.append(("Release matrix page cold < 2 s (150 runs x 300 questions)", f"{cold:.2f} s",
                 cold < bench_matrix.TARGET_SECONDS))
    for label, figure, ok in rows:
        row(label, figure, verdict(ok), width=64)
    bench_refresh.print_bounds(refresh_results[-1])
    print(f"\nfinished in {(time.perf_counter() - started) / 60:.1f} min: {machine()}")


if __name__ == "__main__":
    main()

"""p50/p95 latency of every dashboard page's queries, outside Streamlit's cache.

    python benchmarks/bench_dashboard.py --db FILE [--repeats 20]

The pages are those the router `dashboard/app.py` serves. A page's queries are the
`dashboard.data` functions its file calls (found in its source), plus the
sidebar's (`selection.comparison`: schema check, suites, runs, sides, compatibility) when the page
uses it. Each is called directly with a realistic selection (the suite's first run as baseline,
its last as candidate, the first question) against FILE, in the page's order, with Streamlit's
caches (`st.cache_data` and `st.cache_resource`) cleared before each page load: a page's figure is a
cold load, as after a refresh (what a page reads is read once per load, as in the app: a call that
reuses what an earlier call of the same load read is timed as such). One untimed load of every page
comes first: after a refresh the server process is already running, its modules imported (the very
first request after starting the server pays that once). Per-function figures are the same calls,
timed one by one. Beside each page's wall-clock figures, the median processor time of a
load (every thread of this process: DuckDB's and the statistics' workers): on a machine shared
with other work, the wall clock varies with the load, the processor time much less.
"""
from __future__ import annotations

import argparse
import inspect
import logging
import os
import re
import statistics
import time
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[1] / "dashboard"
SIDEBAR = ("schema_problem", "suites", "runs", "sides", "compatibility")
NOT_QUERIES = {"db_path", "signature", "flatten"}
"""Helpers of the data module that read no table."""
TARGET_MS = 300.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def page_files() -> list[Path]:
    """The pages the router (`dashboard/app.py`) serves, in its order: every `"views/x.py"` it names (the
    Labels page, served in review mode, included)."""
    router = DASHBOARD / "app.py"
    if not router.exists():
        return []
    found = re.findall(r"[\"'](views/[^\"']+\.py)[\"']", router.read_text(encoding="utf-8"))
    return [DASHBOARD / name for name in dict.fromkeys(found) if (DASHBOARD / name).exists()]


def page_calls(path: Path, available: set[str]) -> list[str]:
    """The data functions a page calls, in order of first appearance, sidebar first."""
    source = path.read_text(encoding="utf-8")
    calls = list(dict.fromkeys(re.findall(r"\bdata\.(\w+)\(", source)))
    if "comparison(" in source:
        calls = [*SIDEBAR, *(c for c in calls if c not in SIDEBAR)]
    return [c for c in calls if c in available and c not in NOT_QUERIES]


def selection_context(data) -> dict:
    """Arguments by parameter name: the choices a user lands on when opening the dashboard."""
    suite = str(data.suites()["suite"].iloc[0])
    options = data.sides(suite)
    runs = [s for s in options if s.kind == "run"]
    base, cand = runs[0], runs[-1]
    if hasattr(data, "question_choices"):
        question = str(data.question_choices(suite)["question_id"].iloc[0])
    elif hasattr(data, "questions"):
        question = str(data.questions(suite)["question_id"].iloc[0])
    else:
        question = None
    families = list(getattr(data, "SLICE_COLUMNS", {"all": None}))
    return {"suite": suite, "base": base, "cand": cand, "baseline": base, "candidate": cand,
            "metric": "precision", "question_id": question, "question": question,
            "run_id": base.run_ids[0], "run_ids": (base.run_ids[0], cand.run_ids[0]), "families": families,
            "by": families[-1], "family": families[-1]}


def call(func, context: dict):
    params = inspect.signature(func).parameters
    args = {name: context[name] for name, p in params.items()
            if name in context and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    missing = [n for n, p in params.items() if p.default is p.empty and n not in args
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if missing:
        raise NotAQuery(", ".join(missing))
    return func(**args)


class NotAQuery(Exception):
    """The function takes another call's result (a table, gates), not a selection: not timed."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds per page: stop loading a page again after this (at least 5 loads)")
    args = parser.parse_args()
    os.environ["RAGSLICE_DB"] = str(args.db)
    logging.disable(logging.WARNING)  # Streamlit warns that no app is running: expected here
    try:
        import streamlit as st

        from dashboard import data
    except ImportError as error:
        print(f"  dashboard data module not found ({error})")
        return
    available = {name for name, obj in vars(data).items() if inspect.isfunction(obj) and not name.startswith("_")}
    context = selection_context(data)
    with_records = data.runs(context["suite"])
    print(f"  suite {context['suite']}: {len(with_records)} runs; baseline {context['base'].name}, "
          f"candidate {context['cand'].name}, question {context['question_id']}; up to {args.repeats} loads "
          f"per page ({args.budget:.0f} s budget, at least 5)")

    per_function: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    derived: set[str] = set()
    pages = page_files()
    if not pages:
        print("  no pages found in dashboard/app.py")
    page_totals: dict[str, list[float]] = {}

    def load(calls: list[str], record: bool) -> tuple[float, float]:
        """One cold load of a page's calls: wall milliseconds of its queries, processor milliseconds."""
        total = 0.0
        st.cache_data.clear()
        st.cache_resource.clear()
        cpu_started = time.process_time()
        for name in calls:
            if name in errors or name in derived:
                continue
            started = time.perf_counter()
            try:
                call(getattr(data, name), context)
            except NotAQuery:
                derived.add(name)
                continue
            except Exception as error:  # noqa: BLE001 - reported, not hidden
                errors[name] = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"[:200]
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if record:
                per_function.setdefault(name, []).append(elapsed)
            total += elapsed
        return total, (time.process_time() - cpu_started) * 1000

    # The server is running when a user opens a page: modules are imported and thread pools exist,
    # so one untimed load of every page comes first (what the first request after start pays).
    for page in pages:
        load(page_calls(page, available), record=False)
    for page in pages:
        calls = page_calls(page, available)
        totals, cpu = [], []
        page_started = time.perf_counter()
        for attempt in range(args.repeats):
            if attempt >= 5 and time.perf_counter() - page_started > args.budget:
                break
            total, processor = load(calls, record=True)
            totals.append(total)
            cpu.append(processor)
        failed = [c for c in calls if c in errors]
        if not failed:
            page_totals[page.stem] = totals
        timed_calls = [c for c in calls if c not in derived]
        print(f"  page {page.stem:<22} p50 {percentile(totals, 50):7.1f} ms  p95 {percentile(totals, 95):7.1f} ms"
              f"  cpu {percentile(cpu, 50):7.1f} ms"
              f"  ({len(totals)} loads; {len(timed_calls)} calls: {', '.join(timed_calls)})"
              + (f"  INCOMPLETE: {', '.join(failed)} failed" if failed else ""), flush=True)
    print("  per function (within cold page loads):")
    for name, values in sorted(per_function.items(), key=lambda kv: -percentile(kv[1], 95)):
        print(f"    {name:<24} p50 {percentile(values, 50):7.1f} ms  p95 {percentile(values, 95):7.1f} ms"
              f"  mean {statistics.fmean(values):7.1f} ms")
    for name, error in errors.items():
        print(f"    {name:<24} FAILED: {error}")
    if derived:
        print(f"    not timed (take another call's result, read no table): {', '.join(sorted(derived))}")
    worst = max(page_totals.items(), key=lambda kv: percentile(kv[1], 95)) if page_totals else None
    if errors:
        print("  some calls failed: no page figure is complete enough for the target")
    elif worst:
        p95 = percentile(worst[1], 95)
        print(f"  slowest page: {worst[0]} at p95 {p95:.1f} ms "
              f"(target every page < {TARGET_MS:.0f} ms: {'holds' if p95 < TARGET_MS else 'MISSED'})")
        print(f'{{"slowest_page": "{worst[0]}", "p95_ms": {p95:.1f}}}')


if __name__ == "__main__":
    main()

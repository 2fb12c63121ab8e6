"""The `ragslice` command line: argument parsing, and one function per command that calls the library
and prints what it did.

Exit codes: 0 success; 1 a release gate failed (`compare`); 2 bad input (a ValidationError,
reported as `path:line: ... rule`, never a traceback); 3 the verdict is inconclusive (`compare`: no gate
failed, and a gate's sample could not detect a drop of its margin with the policy's ``min_power``).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .errors import OutOfResources, ValidationError

DEFAULT_DB = "ragslice.duckdb"


def _examples(*lines: str) -> str:
    return "example:\n" + "\n".join(f"  {line}" for line in lines)


def cmd_trec(args: argparse.Namespace) -> int:
    from .io.trec import DEFAULT_MEASURES, evaluate_files, format_scores

    scores = evaluate_files(args.qrels, args.run, args.measures or list(DEFAULT_MEASURES), level=args.level,
                            exclude_na=args.exclude_na)
    sys.stdout.write(format_scores(scores, per_query=args.q))
    return 0


def cmd_refresh(args: argparse.Namespace) -> int:
    from .store.refresh import refresh

    print(refresh(Path(args.workspace), Path(args.db), progress=not args.quiet, memory=args.memory).line())
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    from .store.database import Database
    from .store.refresh import rescore_stored, score_table, score_workspace_in_memory

    runs = [r for r in args.runs.split(",") if r] if args.runs else None
    if not args.db:
        con = score_workspace_in_memory(Path(args.workspace), k=args.k, runs=runs)
    elif args.k is not None:
        con = rescore_stored(Path(args.db), k=args.k)
    else:
        con = Database(args.db).connect()
    with con:
        print(score_table(con, runs))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .io.export import export_tables

    if args.format == "trec-rag":
        from .io.export import export_trec_rag

        result = export_trec_rag(Path(args.db), Path(args.out))
        for path in result.paths:
            print(path)
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        return 0
    for path in export_tables(Path(args.db), Path(args.out), fmt=args.format):
        print(path)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """The importer of ``args.source`` (`scoring.io.importers`) runs and prints its summary."""
    return args.importer.run(args)


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the demo database (and record its verdict), then serve on 127.0.0.1 with the policy
    evaluated live."""
    from .decide.policy import load_policy
    from .io.demo import DEMO_BASELINE, DEMO_CANDIDATE, build_demo, bundled_policy, commands, review_url
    from .serve import check_port, serve_dashboard

    port = check_port(args.port)
    policy = Path(args.policy) if args.policy else bundled_policy()
    load_policy(policy)  # a broken policy is reported before anything is built
    db = build_demo(Path(args.cache) if args.cache else None, policy=policy)
    if args.build_only:
        print(db)
        return 0
    print(f"ragslice demo: release review of {DEMO_CANDIDATE} against {DEMO_BASELINE}: {review_url(port)}", flush=True)
    print("From the command line, in another terminal:\n" + "\n".join(f"  {line}" for line in commands(db, policy.resolve())),
          flush=True)
    return serve_dashboard(db, port=port, address="127.0.0.1", policy=policy,
                           workspace=db.parent / "workspace" if args.reviewer else None, reviewer=args.reviewer)


def cmd_dashboard(args: argparse.Namespace) -> int:
    from .serve import serve_dashboard

    return serve_dashboard(Path(args.db), port=args.port, address=args.address,
                           policy=Path(args.policy) if args.policy else None,
                           workspace=Path(args.workspace) if args.workspace else None, reviewer=args.reviewer,
                           remote_review=args.allow_remote_review)


EXIT_FAIL = 1
EXIT_BAD_INPUT = 2
EXIT_INCONCLUSIVE = 3
EXIT_RESOURCES = 4
"""A refresh ran out of memory or disk (one line names the step and what to change); nothing was written."""


def cmd_compare(args: argparse.Namespace) -> int:
    """0 when every candidate's gates pass or no policy was given (no verdict), 1 when a gate of any
    candidate fails, 3 when none fails and a candidate's verdict is inconclusive."""
    import json

    from .decide import report
    from .decide.comparison import run_comparisons

    family = run_comparisons(args.baseline, args.candidate, db=Path(args.db), policy=args.policy)
    if args.format == "json":
        print(json.dumps(family.to_dict(), indent=2, default=str))
    elif args.format == "markdown":
        print(report.family_markdown(family))
    else:
        print(report.family_text(family))
    return EXIT_FAIL if family.failed else EXIT_INCONCLUSIVE if family.inconclusive else 0


def cmd_plan(args: argparse.Namespace) -> int:
    import json

    from .decide.clusters import parse_cluster_by
    from .decide.plan import adhoc_gate, plan, plan_text, statistical_gates
    from .decide.policy import load_policy
    from .errors import invalid

    policy = load_policy(args.policy) if args.policy else None
    named = None
    if args.metric is not None or args.margin is not None or args.slice is not None:
        if args.metric is None or args.margin is None:
            raise invalid("a gate named on the command line needs --metric and --margin (and --slice, default all)",
                          "--metric" if args.metric is None else "--margin", "")
        alpha = args.alpha if args.alpha is not None else (policy.gates[0].alpha if policy and policy.gates else 0.05)
        named = adhoc_gate(args.metric, args.slice or "all", args.margin, alpha=alpha, test=args.test)
    gates = statistical_gates(policy, named)
    if args.cluster_by is not None:
        try:
            parse_cluster_by(args.cluster_by)
        except ValueError as error:
            raise invalid(str(error), "--cluster-by", args.cluster_by) from None
    cluster_by = args.cluster_by if args.cluster_by is not None else (policy.cluster_by if policy is not None else None)
    power = args.power if args.power is not None else (policy.power if policy is not None else None)
    if args.db:
        from .store.database import Database

        source = Database(args.db).command()
    elif args.workspace:
        from .store.refresh import score_workspace_in_memory

        source = score_workspace_in_memory(Path(args.workspace))
    else:
        raise invalid("give the workspace to score in memory, or --db with a database written by ragslice refresh",
                      "workspace", "")
    from .decide.detect import POWER

    with source as con:
        rows = plan(con, args.baseline, args.candidate, gates, power=power or POWER, cluster_by=cluster_by)
    if args.format == "json":
        print(json.dumps({"baseline": args.baseline, "candidate": args.candidate,
                          "spread": "observed" if args.candidate else "assumed",
                          "gates": [r.to_dict() for r in rows]}, indent=2))
    else:
        print(plan_text(rows, args.baseline, args.candidate))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .decide.present import write_slides
    from .errors import invalid
    from .decide.report import verdict_line, write_family_report

    out = Path(args.o)
    if args.slides:
        if len(args.candidate) != 1:
            raise invalid("the slides present one decision: give one candidate (several make the release matrix "
                          "of the full report)", "candidate", args.candidate)
        comparison = write_slides(args.baseline, args.candidate[0], db=Path(args.db), policy=args.policy, out=out)
        print(f"wrote {out} (slides): verdict {comparison.verdict.verdict} ({verdict_line(comparison)})")
        return 0
    family = write_family_report(args.baseline, args.candidate, db=Path(args.db), policy=args.policy, out=out)
    if family.single:
        comparison = family.comparisons[0]
        print(f"wrote {out}: verdict {comparison.verdict.verdict} ({verdict_line(comparison)})")
        return 0
    print(f"wrote {out}: verdict {family.verdict} over {len(family.comparisons)} candidates")
    for comparison in family.comparisons:
        print(f"  {comparison.candidate.name}: {verdict_line(comparison)}")
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from .errors import Problems, invalid
    from .store.reviews import Known, record_decision
    from .store.workspace import load_workspace

    workspace = Path(args.workspace)
    problems = Problems()
    db = Path(args.db) if args.db is not None else None
    ws = load_workspace(workspace, problems, runs=False, stored=_stored_suites(db))
    problems.raise_if_any()
    suite = _suite_of(ws, args.suite, args.question, db)
    known = None
    if not suite.loaded:  # the database holds this suite's files but perhaps its review files
        from .store.database import Database
        from .store.decisions import stored_part

        with Database(db).command() as con:
            found = stored_part(con, suite, problems, question=args.question, doc=args.doc)
        if found is None:  # its lines are not what the database holds: read the suite after all
            from .store.workspace import load_suite

            suite = load_suite(suite.folder, problems) or suite
        else:
            known = found[1]
    problems.raise_if_any()
    if args.dispute:
        fields = {"kind": "dispute"}
    elif args.align is not None:
        aligned = args.align if args.align in ("unlabelled", "no_claim") else [c for c in args.align.split(",") if c]
        fields = {"kind": "alignment", "sentence": args.sentence, "claim_ids": aligned}
    elif args.claim is not None:
        fields = {"kind": "support", "claim_id": args.claim, "doc_id": args.doc,
                  "supports": {"yes": True, "no": False}.get(args.supports, args.supports)}
    else:
        fields = {"kind": "relevance", "doc_id": args.doc, "grade": args.grade}
    if args.sample is not None:
        from .store.samples import SAMPLES

        if not (suite.folder / SAMPLES / f"{args.sample}.jsonl").exists():
            raise invalid(f"no sample of this name in {suite.folder / SAMPLES}", "--sample", args.sample)
    decision = record_decision(suite.folder, known or Known.of(suite), {"reviewer": args.reviewer,
                                                                        "question_id": args.question, **fields,
                                                                        "note": args.note, "sample": args.sample})
    print(f"recorded {decision.kind} decision by {decision.reviewer} on {decision.question_id} in "
          f"{suite.folder / 'reviews' / (decision.reviewer + '.jsonl')}; refresh to score it")
    return 0


def _stored_suites(db: Path | None) -> dict[str, tuple[str, str]]:
    """suite -> (files hash, base hash) the database at `db` holds (none without a database of this
    schema): `load_workspace` then reads only suite.json of a suite whose files it holds."""
    from .store.database import stored_hashes

    return stored_hashes(db)[0] if db is not None else {}


def _suite_of(ws, name: str | None, question: str, db: Path | None = None):
    from .errors import invalid

    if name is not None:
        if name not in ws.suites:
            raise invalid(f"not a suite of this workspace (suites: {', '.join(ws.suites)})", "--suite", name)
        return ws.suites[name]
    unread = [s.name for s in ws.suites.values() if not s.loaded]
    stored = set()
    if unread:
        from .store.database import Database

        with Database(db).command() as con:
            stored = {s for (s,) in con.execute("SELECT DISTINCT suite FROM questions WHERE question_id = ? "
                                                "AND list_contains(?::VARCHAR[], suite)", [question, unread]).fetchall()}
    holding = [s for s in ws.suites.values() if question in s.questions or s.name in stored]
    if len(holding) != 1:
        where = "no suite" if not holding else f"suites {', '.join(s.name for s in holding)}"
        raise invalid(f"{where} of the workspace holds this question; name the suite with --suite", "--question",
                      question)
    return holding[0]


def cmd_pool(args: argparse.Namespace) -> int:
    import json

    from .decide.pool import unjudged
    from .errors import invalid
    from .store.refresh import score_workspace_in_memory

    runs = [r for r in args.runs.split(",") if r]
    con = score_workspace_in_memory(Path(args.workspace), runs=runs)
    with con:
        if args.suite is not None:
            wrong = [r for (r,) in con.execute("SELECT run_id FROM runs WHERE suite <> ?", [args.suite]).fetchall()]
            if wrong:
                raise invalid(f"run {wrong[0]} is not on suite {args.suite}", "--suite", args.suite)
        pool = unjudged(con, runs, depth=args.depth)
    lines = [json.dumps({"question_id": r.question_id, "doc_id": r.doc_id, "runs": list(r.runs),
                         "best_rank": int(r.best_rank)}) for r in pool.itertuples()]
    text = "".join(line + "\n" for line in lines)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}: {len(lines)} unjudged (question, document) pairs", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    """Draw a review sample and write it beside the suite, or (--status) say how far its review is."""
    from .errors import invalid
    from .store.refresh import score_workspace_in_memory
    from .store.samples import draw, write_sample

    runs = [r for r in (args.runs or "").split(",") if r]
    if not runs:
        raise invalid("name the runs whose items to sample (comma-separated)", "--runs", args.runs)
    if args.db:
        from .store.database import Database

        source = Database(args.db).command()
    else:
        source = score_workspace_in_memory(Path(args.workspace), runs=runs)
    with source as con:
        suites = {s for (s,) in con.execute("SELECT DISTINCT suite FROM runs WHERE list_contains(?::VARCHAR[], run_id)",
                                            [runs]).fetchall()}
        unknown = sorted(set(runs) - {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()})
        if unknown:
            raise invalid("not a run of the workspace", "--runs", unknown[0])
        if len(suites) != 1:
            raise invalid("the runs of one sample are on one suite", "--runs", ",".join(runs))
        suite = suites.pop()
        if args.status:
            print(sample_status(con, suite, runs, args.name))
            return 0
        if args.size is None:
            raise invalid("give the number of items to draw (or --status)", "--size", None)
        strata = [s for s in (args.strata or "").split(",") if s]
        sample = draw(con, runs, unit=args.unit, size=args.size, strata=strata, seed=args.seed,
                      name=args.name or f"{args.unit}-{args.seed}")
    path = write_sample(Path(args.workspace) / "suites" / suite, sample)
    by_stratum: dict[str, tuple[int, int]] = {}
    for item in sample.items:
        by_stratum[item.stratum] = (item.drawn, item.population)
    print(f"wrote {path}: {len(sample.items)} of {sample.population} {args.unit}s drawn (seed {sample.seed})")
    for stratum, (drawn, population) in sorted(by_stratum.items()):
        print(f"  {stratum or 'all'}: {drawn} of {population} (inclusion probability {drawn / population:.3f})")
    print(f"review them in queue order: ragslice review {args.workspace} --reviewer NAME --sample {sample.name}")
    return 0


def sample_status(con, suite: str, runs: list[str], name: str | None) -> str:
    """How far a sample's review is, and what one more review is worth per stratum (`decide.corrected`):
    for a sentence sample, of the corrected Support; for a question sample, of each question metric."""
    from .decide.corrected import CORRECTABLE, UNIT, corrected_metric, next_review_gain, projected_at_sample
    from .decide.frames import answers_reviewed, latest_sample, question_frames, sample_unit
    from .metrics.registry import display_name

    unit = sample_unit(con, suite, name) if name else None
    if name and unit is None:
        return f"no review sample {name} of suite {suite} in the database: draw one with ragslice sample --size N"
    if unit is None and latest_sample(con, suite, runs) is None and latest_sample(con, suite, runs, "question"):
        unit = "question"
    metrics = [m for m in CORRECTABLE if UNIT[m] == (unit or "sentence")]
    lines: list[str] = []
    for metric in metrics:
        found = corrected_metric(con, suite, runs, metric, sample=name)
        if found is None:
            if metric == "support":
                return "the runs answer in no sentences: their Support rests on no alignment"
            continue
        if found.sample is None:
            return f"no review sample covers {', '.join(runs)}: draw one with ragslice sample --size N"
        c = found.corrected
        what = "Support" if metric == "support" else display_name(metric)
        if not lines and metric == "support":
            lines.append(f"sample {found.sample}: {c.reviewed} of {c.sampled} sampled sentences reviewed "
                         f"({c.frame} judged)")
        elif not lines:
            drawn, reviewed = answers_reviewed(question_frames(con, suite, runs, found.sample))
            lines.append(f"sample {found.sample}: {reviewed} of {drawn} sampled answers reviewed")
        lines.append(found.words(",".join(runs)))
        full = projected_at_sample(con, suite, runs, sample=found.sample, metric=metric)
        if c.half_width is not None and full is not None:
            lines.append(f"{what} +/-{c.half_width:.3f} now, about +/-{full:.3f} at {c.sampled}")
        for row in next_review_gain(con, suite, runs, sample=found.sample, metric=metric):
            gain = row["gain_per_review"]
            lines.append(f"  {row['stratum'] or 'all'}: {row['reviewed']} of {row['sampled']} reviewed ({row['frame']} "
                         "judged)" + ("" if gain is None else
                                      f"; one more review narrows the interval by about {max(gain, 0.0):.4f}"))
    return "\n".join(lines) or "the runs' answers make no claim a question sample can correct"


def cmd_align(args: argparse.Namespace) -> int:
    from .io.align import align

    runs = [r for r in args.runs.split(",") if r]
    result = align(Path(args.workspace), runs, args.judge, suite=args.suite, repeat=args.repeat,
                   sample=args.sample, seed=args.seed)
    run = result.run
    print(f"judge {run.judge} on suite {result.suite}: {run.requested} sentences, {run.cached} answered before "
          f"(cached), {run.answered} answered now, {run.failed} failed")
    for failure in run.failures:
        print(f"  failed: {failure.question_id}: {failure.sentence!r}: {failure.reason}", file=sys.stderr)
    if run.failed:
        print("failed sentences stay unaligned by this judge (refresh uses the next aligner); align again to retry",
              file=sys.stderr)
    again = result.repeated
    if again is not None:
        from .decide.agreement import self_agreement_words

        print(f"asked again: {again.sampled} sampled sentences x {args.repeat} (seed {again.seed}), "
              f"{again.repeats} answers, {again.failed} failed; "
              + self_agreement_words([(a.label, b.label) for _, _, a, b in again.pairs]))
    return 1 if run.failed or (again is not None and again.failed) else 0


def cmd_pin(args: argparse.Namespace) -> int:
    from .store.pins import pin

    suite, path = pin(Path(args.workspace), args.run, suite=args.suite, note=args.note)
    print(f"pinned {args.run} as the standing baseline of suite {suite} in {path}; refresh to publish it")
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    import time

    from .io.synth import write_workspace

    out = Path(args.out)
    started = time.perf_counter()
    counts = write_workspace(args.questions, args.runs, repeats=args.repeats, seed=args.seed, out=out)
    print(f"wrote {out}: {counts['questions']} questions, {counts['documents']} documents, "
          f"{counts['runs']} runs, {counts['records']} records ({counts['missing']} missing, "
          f"{counts['failed']} failed) in {time.perf_counter() - started:.1f} s")
    return 0


def _add_import_sources(isub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    """One ``ragslice import <source>`` per declared format (`scoring.io.importers`: importing it imports
    every format's module)."""
    from .io.importers import importers

    for importer in importers():
        i = isub.add_parser(importer.source, help=importer.help, description=importer.help + ".",
                            formatter_class=fmt, epilog=_examples(*importer.examples))
        i.add_argument("--skip-bad", action="store_true",
                       help="leave out the lines that cannot be imported, listing each with its reason on standard "
                       "error (default: refuse the import, exit code 2, nothing written)")
        importer.arguments(i)
        i.set_defaults(importer=importer)


def build_parser(*, sources: bool = True) -> argparse.ArgumentParser:
    """The command line. `sources` False leaves out the formats of ``ragslice import`` (each is a module
    to import, a fifth of a second together): `main` builds them only for ``import``."""
    parser = argparse.ArgumentParser(
        prog="ragslice",
        description="Score recorded RAG runs against a grounded test set, store every score in DuckDB, review releases.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fmt = argparse.RawDescriptionHelpFormatter

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str, *example: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_, epilog=_examples(*example), formatter_class=fmt)
        p.set_defaults(func=func)
        return p

    p = add("trec", cmd_trec, "Evaluate a TREC run against TREC qrels, trec_eval style.",
            "ragslice trec qrels.test results.test -q -m P@5 nDCG@10 RR AP")
    p.add_argument("qrels", help="qrels file: qid 0 docno grade")
    p.add_argument("run", help="run file: qid Q0 docno rank score runid (rank and any later field ignored; "
                   "ordered by score, a decimal number such as 12.5 or -3.1e-2)")
    p.add_argument("-q", action="store_true", help="also print one line per query")
    p.add_argument("-l", "--level", type=int, default=1, help="relevance level for binary measures (default 1)")
    p.add_argument("--exclude-na", action="store_true",
                   help="ragslice's n/a rule: a query without a relevant document at the level (-l) is n/a "
                   "(its -q lines print n/a) and the `all` line is the mean over the other queries (n/a if "
                   "none is left). Default: trec_eval's mean, over every query in both files, such a query "
                   "scoring what trec_eval prints for it (0; nDCG its graded value, as trec_eval's nDCG "
                   "ignores -l)")
    p.add_argument("-m", "--measures", action="extend", nargs="+", metavar="MEASURE",
                   help="measures such as P@5 nDCG@20 RR AP Bpref; over the judged documents only P'@5 "
                   "nDCG'@10 AP' (condensed lists, as trec_eval -J and ir_measures' P(judged_only=True)@5); or as "
                   "trec_eval prints them (P_5 ndcg_cut_20 recip_rank map bpref); repeat -m, or list several "
                   "after one -m (default, when no -m is given: P@10 R@10 nDCG@10 RR AP)")

    p = add("refresh", cmd_refresh, "Validate a workspace, score every changed run, write the DuckDB file all-or-nothing.",
            "ragslice refresh data/demo --db ragslice.duckdb")
    p.add_argument("workspace", help="the workspace folder: suites/ and runs/ (docs/formats.md)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"database file (default {DEFAULT_DB} in this folder)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--memory", help="DuckDB's memory budget, e.g. 8GB (default: 40%% of this machine's memory, at "
                   "least 2GB); past it, joins and sorts spill to disk")

    p = add("table", cmd_table, "Print the per-question score table of a workspace (the seed's layout).",
            "ragslice table data/seed-lab", "ragslice table data/seed-lab --k 1 --runs A,B")
    p.add_argument("workspace", help="the workspace folder: suites/ and runs/")
    p.add_argument("--db", help="read scores from this database (default: score the workspace in memory)")
    p.add_argument("--k", type=int, help="re-score at this context cutoff instead of each run's own k")
    p.add_argument("--runs", help="comma-separated run IDs (default: every run)")

    p = add("export", cmd_export, "Write the per-question tables of a database as CSV or Parquet files, or its "
            "labels and rankings as TREC qrels and run files.",
            "ragslice export --db ragslice.duckdb --out scores/ --format parquet",
            "ragslice export --db ragslice.duckdb --out trec/ --format trec   # then: trec_eval -m ndcg_cut.5 "
            "trec/demo/qrels.txt trec/demo/rerank-v2.run",
            "ragslice export --db ragslice.duckdb --out rag/ --format trec-rag")
    p.add_argument("--db", default=DEFAULT_DB, help=f"the database written by ragslice refresh (default {DEFAULT_DB})")
    p.add_argument("--out", required=True, help="the folder to write into (created when absent)")
    p.add_argument("--format", choices=["csv", "parquet", "trec", "trec-rag"], default="csv",
                   help="csv or parquet: one file per table; trec: <suite>/qrels.txt and <suite>/<run_id>.run, "
                   "to recheck any retrieval score with trec_eval or ranx at the run's k; trec-rag: for runs with "
                   "answer sentences, <suite>/<run_id>.jsonl in the TREC RAG 2024 layout with <suite>/topics.tsv and "
                   "<suite>/qrels.txt, which `ragslice import trec-rag` reads back (default csv)")

    p = add("import", cmd_import, "Turn TREC files, Ragas samples, BEIR folders, evaluation datasets, TREC RAG runs, "
            "OpenInference spans or RAGChecker inputs into a workspace.",
            "ragslice import trec --qrels qrels.txt --run bm25.run --run dense.run --out ws/",
            "ragslice import ragas samples.jsonl --out ws/")
    isub = p.add_subparsers(dest="source", required=True)
    if sources:
        _add_import_sources(isub, fmt)

    p = add("demo", cmd_demo, "Build the demo database from the bundled data and start the dashboard.",
            "ragslice demo --port 8501")
    p.add_argument("--port", type=int, default=8501, help="port to serve the dashboard on (default 8501)")
    p.add_argument("--cache", help="folder for the demo database (default: the user cache folder)")
    p.add_argument("--build-only", action="store_true", help="build the database, print its path, do not serve")
    p.add_argument("--policy", help="acceptance policy TOML (default: the bundled demo policy)")
    p.add_argument("--reviewer", help="review mode: record label decisions under this name (adds a Labels page)")

    p = add("dashboard", cmd_dashboard, "Start the dashboard over a database written by `ragslice refresh`.",
            "ragslice dashboard --db ragslice.duckdb --port 8501")
    p.add_argument("--db", default=DEFAULT_DB, help=f"the database written by `ragslice refresh` (default {DEFAULT_DB})")
    p.add_argument("--port", type=int, default=8501, help="port to serve the dashboard on (default 8501)")
    p.add_argument("--address", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--policy", help="acceptance policy TOML: the release review evaluates its verdict live")
    p.add_argument("--workspace", help="review mode: the workspace whose review files decisions go to")
    p.add_argument("--reviewer", help="review mode: record label decisions under this name (adds a Labels page)")
    p.add_argument("--allow-remote-review", action="store_true",
                   help="serve review mode on a non-loopback --address (anyone who reaches it writes as --reviewer)")

    p = add("compare", cmd_compare, "Paired comparison of two runs (or groups) and the release verdict. Exit "
            "code 0 pass (or no policy), 1 fail, 2 bad input, 3 inconclusive (no gate fails, but a gate's questions "
            "cannot detect a drop of its margin with the policy's min_power).",
            "ragslice compare prod-2024-06 rerank-v2 --policy policy.toml --format markdown",
            "ragslice compare prod-2024-06 rerank-v2 hybrid-v1 chunk-512 --policy policy.toml   # a release matrix")
    p.add_argument("baseline", help="run ID or group name")
    p.add_argument("candidate", nargs="+", help="run ID or group name; several give a matrix, each candidate "
                   "judged on its own, p_holm adjusted across every candidate x metric x slice (exit 1 when any "
                   "candidate fails, else 3 when any is inconclusive)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"the database written by ragslice refresh (default {DEFAULT_DB})")
    p.add_argument("--policy", help="acceptance policy TOML (docs/policy.md); without one there is no verdict")
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text",
                   help="text for a terminal, json for programs, markdown for a pull-request comment (default text)")

    p = add("plan", cmd_plan, "Sample-size advice: for each statistical (max_drop) gate of a policy, or one named "
            "here, the questions its slice has, the smallest drop detectable now, and the questions needed to detect "
            "its margin at the observed spread.",
            "ragslice plan --db ragslice.duckdb --baseline prod-baseline --candidate hybrid-v1 --policy policy.toml",
            "ragslice plan data/demo --baseline prod-baseline --metric coverage --slice type:outdated --margin 0.02")
    p.add_argument("workspace", nargs="?", help="the workspace to score in memory (or give --db)")
    p.add_argument("--db", help="a database written by ragslice refresh (instead of scoring the workspace)")
    p.add_argument("--baseline", required=True, help="run ID or group name")
    p.add_argument("--candidate", help="run ID or group name: the spread is then its observed paired differences' "
                   "(default: none, and an assumed spread of sqrt(2) x the baseline's)")
    p.add_argument("--policy", help="acceptance policy TOML: advice for each of its max_drop gates")
    p.add_argument("--power", type=float, help="the power to plan for (default: the policy's power or min_power, "
                   "else 0.8)")
    p.add_argument("--metric", help="a gate named here: the registry metric (with --margin)")
    p.add_argument("--slice", help="a gate named here: its slice (default all)")
    p.add_argument("--margin", type=float, help="a gate named here: the drop it tolerates (max_drop)")
    p.add_argument("--alpha", type=float, help="a gate named here: its one-sided alpha (default: the policy's, else "
                   "0.05)")
    p.add_argument("--test", choices=["randomization", "ttest", "wilcoxon"], default="randomization",
                   help="a gate named here: its test (default randomization)")
    p.add_argument("--cluster-by", help="how the questions are clustered: cluster (their own), type, tag:<prefix> "
                   "or none (default: the policy's cluster_by, else the questions' own cluster)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="text for a terminal, json for programs")

    p = add("report", cmd_report, "Write a self-contained HTML release report, or with --slides the decision in "
            "five screens for a meeting.",
            "ragslice report prod rerank --policy policy.toml -o report.html",
            "ragslice report prod rerank --policy policy.toml --slides -o decision.html")
    p.add_argument("baseline", help="run ID or group name")
    p.add_argument("candidate", nargs="+", help="one or more candidates: several give the release matrix, then "
                   "each candidate's report")
    p.add_argument("--db", default=DEFAULT_DB, help=f"the database written by ragslice refresh (default {DEFAULT_DB})")
    p.add_argument("--policy", required=True, help="acceptance policy TOML (docs/policy.md)")
    p.add_argument("-o", required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--slides", action="store_true",
                   help="write the decision in five screens for a meeting (arrow keys move; one offline HTML file) "
                        "instead of the full report")

    p = add("review", cmd_review, "Record a reviewer's decision: a grade, a support, a dispute, or the alignment of "
            "an answer sentence.",
            "ragslice review data/demo --reviewer ana --question q-0030 --doc pol-0008 --grade 0 --note superseded",
            "ragslice review data/demo --reviewer ana --question q-0030 --claim tier1-reviewers --doc pol-0007 --supports yes",
            "ragslice review data/demo --reviewer ben --question q-0041 --dispute --note 'two answers fit'",
            "ragslice review data/demo --reviewer ana --question q-0030 --sentence 'A tier-1 deploy needs two "
            "reviewers.' --align tier1-reviewers")
    p.add_argument("workspace", help="the workspace folder: suites/ and runs/")
    p.add_argument("--reviewer", required=True, help="your name: the decision goes to suites/<suite>/reviews/NAME.jsonl")
    p.add_argument("--question", required=True, help="the question's ID")
    p.add_argument("--suite", help="the suite (default: the one suite holding the question)")
    p.add_argument("--doc", help="the document (or chunk, in a passage-level suite) the decision is about")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--grade", type=int, help="relevance grade of --doc for the question (0: not relevant)")
    what.add_argument("--claim", help="expected claim whose support by --doc you decide (with --supports)")
    what.add_argument("--dispute", action="store_true", help="mark the question's labels disputed")
    what.add_argument("--align", metavar="CLAIMS", help="the expected claims --sentence states (comma-separated), "
                                                        "or unlabelled, or no_claim")
    p.add_argument("--supports", choices=["yes", "no", "full", "partial"],
                   help="with --claim: how far --doc supports it: full (or yes), partial, or no")
    p.add_argument("--sentence", help="with --align: the answer sentence, as the run wrote it")
    p.add_argument("--note", help="why, in words")
    p.add_argument("--sample", help="the review sample the item was drawn in (suites/<suite>/samples/NAME.jsonl): the "
                   "decision then counts as that sample's review; without it, as a label only")
    p.add_argument("--db", help="the workspace's database (written by `ragslice refresh`): when it holds the suite's "
                                "files, the decision is checked against it instead of reading the whole suite (faster "
                                "on a large suite; the same checks)")

    p = add("pool", cmd_pool, "List the documents the runs ranked that nobody judged, most influential first.",
            "ragslice pool data/demo --runs prod-baseline,rerank-v2 --depth 5 --out to-judge.jsonl")
    p.add_argument("workspace", help="the workspace folder: suites/ and runs/")
    p.add_argument("--runs", required=True, help="comma-separated run IDs (of one suite)")
    p.add_argument("--depth", type=int, help="look at the first N of each ranking (default: each run's k)")
    p.add_argument("--suite", help="check that the runs are on this suite")
    p.add_argument("--out", help="write JSON Lines here (default: standard output)")

    p = add("sample", cmd_sample, "Draw a seeded random sample of the answer sentences resting on an automatic "
            "alignment (or of the documents the runs ranked) for reviewers, or say how far its review is.",
            "ragslice sample data/demo --runs prod-text --unit sentence --size 100 --strata type,answerable --seed 7",
            "ragslice sample data/demo --runs prod-text --status")
    p.add_argument("workspace", help="the workspace folder: suites/ and runs/")
    p.add_argument("--runs", required=True, help="comma-separated run IDs (of one suite)")
    p.add_argument("--unit", choices=["sentence", "document", "question"], default="sentence",
                   help="sentence: answer sentences resting on an automatic alignment (corrects Support); question: "
                   "answers one or more of whose sentences do (corrects Coverage and the abstention rates); document: "
                   "(question, document) pairs the runs ranked within k (default sentence)")
    p.add_argument("--size", type=int, help="items to draw")
    p.add_argument("--strata", help="stratify by some of type, answerable, run (comma-separated; default none)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed draws the same sample (default 0)")
    p.add_argument("--name", help="the sample's name: suites/<suite>/samples/NAME.jsonl (default UNIT-SEED); with "
                   "--status, the sample to report (default the latest covering the runs)")
    p.add_argument("--status", action="store_true", help="report the sample's review progress, the corrected "
                   "Support and what each further review is worth, instead of drawing")
    p.add_argument("--db", help="a database written by ragslice refresh (instead of scoring the workspace)")

    p = add("align", cmd_align, "Ask a judge of the suite's judges.toml to align the runs' answer sentences its "
            "cache does not hold; refresh then reads the cache.",
            "ragslice align data/demo --runs prod-text --judge checker")
    p.add_argument("workspace", help="the workspace folder: suites/ and runs/")
    p.add_argument("--runs", required=True, help="comma-separated run IDs whose answers are sentences")
    p.add_argument("--judge", required=True, help="a judge declared in suites/<suite>/judges.toml")
    p.add_argument("--suite", help="the suite (default: the one suite of the runs)")
    p.add_argument("--repeat", type=int, help="then ask the judge again, this many times each, about a seeded "
                   "sample of the sentences it answered (with --sample): its self-agreement; the answers go to "
                   "judgements/repeats/<judge>.jsonl, never to the cache")
    p.add_argument("--sample", type=int, help="how many sentences to ask again (with --repeat)")
    p.add_argument("--seed", type=int, default=0, help="the repeated sample's seed (default 0)")

    p = add("pin", cmd_pin, "Pin a run or group as the suite's standing baseline (the dashboard's default "
            "baseline); refresh publishes it.",
            "ragslice pin data/demo --suite demo --run prod-baseline --note 'in production since 2026-11-02'")
    p.add_argument("workspace", help="the workspace folder: suites/ and runs/")
    p.add_argument("--run", required=True, help="the run ID or group name to pin")
    p.add_argument("--suite", help="the suite (default: the one suite holding that run or group)")
    p.add_argument("--note", help="why, in words")

    p = add("synth", cmd_synth, "Write a synthetic workspace of any size in the normal formats.",
            "ragslice synth --questions 10000 --runs 10 --out /tmp/ws")
    p.add_argument("--questions", type=int, required=True, help="questions in the suite")
    p.add_argument("--runs", type=int, required=True, help="runs (configurations) of the suite")
    p.add_argument("--repeats", type=int, default=1, help="repeats of each run, as a group (default 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed writes the same files (default 0)")
    p.add_argument("--out", required=True, help="the workspace folder to write")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(sources=not argv or argv[0] == "import").parse_args(argv)
    try:
        return args.func(args)
    except ValidationError as error:
        from .io.demo import newcomer_hints

        print(f"ragslice {args.command}: invalid input", file=sys.stderr)
        print(str(error), file=sys.stderr)
        for hint in newcomer_hints(error.problems):
            print(hint, file=sys.stderr)
        return EXIT_BAD_INPUT
    except OutOfResources as error:
        print(f"ragslice {args.command}: {error}", file=sys.stderr)
        return EXIT_RESOURCES
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

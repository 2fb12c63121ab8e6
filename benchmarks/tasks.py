"""Measured work, one task per child process: `python benchmarks/tasks.py TASK ARGS...`.

Each task prints a JSON object as its last line with `seconds`, the time of the measured work
alone (interpreter start-up and imports excluded), and task-specific counts.

    floor WORKSPACE              DuckDB reads every records file into typed columns in memory, nothing else
    lines WORKSPACE              DuckDB reads every records file as numbered raw lines (refresh's first step)
    store WORKSPACE              the store floor: the floor, then the records written to a new database file
                                 (one row per record, one per retrieved slot), nothing checked or scored
    store_coded WORKSPACE        the store floor of a compact layout: integer codes for runs, questions and
                                 documents; slots as rows of codes, or one list of codes per record
    refresh WORKSPACE DB         scoring.store.refresh.refresh (validate, score, write the database)
    bounds WORKSPACE DB          copy DB, read and check the workspace's suites, write their tables in memory
    suite WORKSPACE              the first suite: DuckDB's typed read (the floor), read and checked set-based
                                 as a refresh reads it, read and checked in Python, its tables written
    reference WORKSPACE LIMIT    the reference loop: json.loads + scoring.evaluate per record, over the
                                 first LIMIT records (split evenly over the runs); 0 = every record
    pytrec QRELS RUN MEASURE...  pytrec_eval end to end: parse both files in Python, evaluate, mean
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

RECORD_COLUMNS = (
    "{'question_id': 'VARCHAR', 'retrieved': 'VARCHAR[]', 'context': 'VARCHAR', 'answer': 'VARCHAR', "
    "'claims': 'STRUCT(id VARCHAR, citations VARCHAR[], text VARCHAR)[]', 'latency_ms': 'DOUBLE', "
    "'cost_usd': 'DOUBLE', 'error': 'VARCHAR'}"
)


def _files(workspace: str) -> list[str]:
    return sorted(str(p) for p in Path(workspace, "runs").glob("*/records.jsonl"))


def floor(workspace: str) -> dict:
    import duckdb

    con = duckdb.connect()
    started = time.perf_counter()
    con.execute(f"CREATE TEMP TABLE records AS SELECT * FROM read_json(?, format = 'newline_delimited', "
                f"columns = {RECORD_COLUMNS})", [_files(workspace)])
    seconds = time.perf_counter() - started
    rows, retrieved = con.execute("SELECT count(*), sum(len(retrieved)) FROM records").fetchone()
    return {"seconds": seconds, "records": rows, "retrieved": int(retrieved)}


def store(workspace: str) -> dict:
    """The least any refresh that keeps what it scores must do: read the records (the floor) and
    write them to a database file: `records` one row per record (run ID, its fields, claims as a
    list), `retrieved` one row per slot (run ID, question, rank, document), as docs/schema.md
    requires; then a checkpoint. No suite, no rule checked, nothing scored."""
    import tempfile

    import duckdb

    files = _files(workspace)
    # each file read with its run's ID (its folder's name) as a constant, as the refresh reads them
    source = " UNION ALL ".join(f"SELECT ${i} AS run_id, * FROM read_json(${len(files) + i}, "
                                f"format = 'newline_delimited', columns = {RECORD_COLUMNS})"
                                for i in range(1, len(files) + 1))
    params = [Path(f).parent.name for f in files] + files
    with tempfile.TemporaryDirectory() as folder:
        con = duckdb.connect(str(Path(folder, "store.duckdb")))
        started = time.perf_counter()
        con.execute(f"CREATE TEMP TABLE typed AS {source}", params)
        read = time.perf_counter()
        con.execute("CREATE TABLE records AS SELECT * EXCLUDE (retrieved) FROM typed")
        con.execute("CHECKPOINT")
        written = time.perf_counter()
        con.execute("CREATE TABLE retrieved AS SELECT run_id, question_id, unnest(retrieved) AS doc_id, "
                    "unnest(range(1, len(retrieved) + 1)) AS rank FROM typed")
        con.execute("CHECKPOINT")
        done = time.perf_counter()
        slots = con.execute("SELECT count(*) FROM retrieved").fetchone()[0]
        con.close()
    return {"seconds": done - started, "read_seconds": read - started, "records_seconds": written - read,
            "retrieved_seconds": done - written, "slots": slots}


def store_coded(workspace: str) -> dict:
    """The store floor of a compact layout: the same records, with runs, questions and documents coded
    as integers (the codes of the suite's questions and documents, read from its files as a refresh's
    suite tables would hold them) and each retrieved slot stored as (run code, question code, rank,
    document code) in small integer types; strings are resolved by joins at read time. Then the
    same rows with each ranking kept as one list of document codes per record instead of a row per
    slot. Both written to new database files and checkpointed; nothing checked or scored."""
    import tempfile

    import duckdb

    files = _files(workspace)
    suite = next(Path(workspace, "suites").iterdir())
    source = " UNION ALL ".join(f"SELECT {i}::USMALLINT AS run_code, * FROM read_json(${i}, "
                                f"format = 'newline_delimited', columns = {RECORD_COLUMNS})"
                                for i in range(1, len(files) + 1))
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for layout in ("slots", "lists"):
            con = duckdb.connect(str(Path(folder, f"{layout}.duckdb")))
            con.execute("CREATE TABLE documents AS SELECT (row_number() OVER () - 1)::UINTEGER AS doc_code, id AS doc_id "
                        "FROM read_json(?, format = 'newline_delimited', columns = {'id': 'VARCHAR'})",
                        [str(suite / "documents.jsonl")])
            con.execute("CREATE TABLE questions AS SELECT (row_number() OVER () - 1)::UINTEGER AS question_code, "
                        "id AS question_id FROM read_json(?, format = 'newline_delimited', columns = {'id': 'VARCHAR'})",
                        [str(suite / "questions.jsonl")])
            started = time.perf_counter()
            con.execute(f"CREATE TEMP TABLE typed AS {source}", files)
            read = time.perf_counter()
            con.execute("CREATE TEMP TABLE coded AS SELECT t.* EXCLUDE (question_id), q.question_code "
                        "FROM typed t JOIN questions q USING (question_id)")
            con.execute("CREATE TABLE records AS SELECT * EXCLUDE (retrieved) FROM coded")
            con.execute("CHECKPOINT")
            written = time.perf_counter()
            slots = """SELECT s.run_code, s.question_code, s.rank, d.doc_code
                       FROM (SELECT run_code, question_code, unnest(retrieved) AS doc_id,
                                    unnest(range(1, len(retrieved) + 1))::USMALLINT AS rank FROM coded) s
                       JOIN documents d USING (doc_id)"""
            if layout == "slots":
                con.execute(f"CREATE TABLE retrieved AS {slots}")
            else:
                con.execute(f"CREATE TABLE rankings AS SELECT run_code, question_code, list(doc_code ORDER BY rank) "
                            f"AS doc_codes FROM ({slots}) GROUP BY ALL")
            con.execute("CHECKPOINT")
            done = time.perf_counter()
            con.close()
            out[layout] = {"seconds": done - started, "read_seconds": read - started,
                           "records_seconds": written - read, "retrieved_seconds": done - written,
                           "file_mib": Path(folder, f"{layout}.duckdb").stat().st_size / 2**20}
    return {"seconds": out["slots"]["seconds"], "slots": out["slots"], "lists": out["lists"]}


def lines(workspace: str) -> dict:
    import duckdb

    con = duckdb.connect()
    started = time.perf_counter()
    con.execute("CREATE TEMP TABLE lines AS SELECT filename, ordinality AS line, raw FROM read_csv(?, "
                "columns = {'raw': 'VARCHAR'}, header = false, delim = chr(1), quote = '', escape = '', "
                "auto_detect = false, filename = true) WITH ORDINALITY", [_files(workspace)])
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "records": con.execute("SELECT count(*) FROM lines").fetchone()[0]}


def refresh(workspace: str, db: str) -> dict:
    from scoring.store.refresh import refresh as run_refresh

    started, cpu = time.perf_counter(), time.process_time()
    summary = run_refresh(Path(workspace), Path(db))
    return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
            "records": summary.records,
            "runs_scored": summary.runs_scored, "runs_skipped": summary.runs_skipped,
            "questions_rescored": getattr(summary, "questions_rescored", None)}


def bounds(workspace: str, db: str) -> dict:
    """What a refresh that reads a suite in full does before it scores anything: copy the live database
    into its working copy, read and check the suite's files (set-based, as the refresh reads them),
    write the suite's tables."""
    import shutil
    import tempfile

    import duckdb

    from scoring.errors import Problems
    from scoring.store.refresh import read_deferred
    from scoring.store.schema import create_schema
    from scoring.store.suite_tables import write_suite
    from scoring.store.workspace import load_workspace

    with tempfile.TemporaryDirectory(dir=Path(db).parent) as folder:
        started = time.perf_counter()
        shutil.copyfile(db, Path(folder, "copy.duckdb"))
        copied = time.perf_counter()
    problems = Problems()
    con = duckdb.connect()
    create_schema(con)
    started_suite = time.perf_counter()
    ws = load_workspace(Path(workspace), problems, runs=False, defer=True)
    suites = [read_deferred(con, suite, problems) if suite.deferred else suite for suite in ws.suites.values()]
    loaded = time.perf_counter()
    for suite in suites:
        write_suite(con, suite)
    written = time.perf_counter()
    return {"seconds": written - started, "copy_seconds": copied - started, "suite_seconds": loaded - started_suite,
            "write_suite_seconds": written - loaded}


def suite(workspace: str) -> dict:
    """The workspace's first suite read four ways, in memory: the read floor (DuckDB `read_json` of its
    documents and questions into typed columns, nothing checked), read and checked set-based as a
    refresh reads it (`scoring.store.suite_bulk`, decisions applied), read and checked in Python
    (`load_suite`), and its tables written from the set-based read."""
    import duckdb

    from scoring.errors import Problems
    from scoring.store.refresh import read_deferred
    from scoring.store.schema import create_schema
    from scoring.store.suite_tables import write_suite
    from scoring.store.workspace import load_suite

    folder = sorted(Path(workspace, "suites").iterdir())[0]
    con = duckdb.connect()
    started = time.perf_counter()
    con.execute("CREATE TEMP TABLE d AS SELECT * FROM read_json(?, format = 'newline_delimited', columns = "
                "{id: 'VARCHAR', text: 'VARCHAR', version: 'VARCHAR', title: 'VARCHAR', access: 'VARCHAR[]'})",
                [str(folder / "documents.jsonl")])
    con.execute("CREATE TEMP TABLE q AS SELECT * FROM read_json(?, format = 'newline_delimited', columns = "
                "{id: 'VARCHAR', text: 'VARCHAR', type: 'VARCHAR', split: 'VARCHAR', critical: 'BOOLEAN', "
                "tags: 'VARCHAR[]', caller: 'VARCHAR[]', relevant: 'JSON', support: 'MAP(VARCHAR, VARCHAR[])', "
                "claims: 'MAP(VARCHAR, VARCHAR)', disputed: 'VARCHAR'})", [str(folder / "questions.jsonl")])
    read = time.perf_counter() - started
    documents, questions = (con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("d", "q"))
    con.close()

    problems = Problems()
    con = duckdb.connect()
    create_schema(con)
    started = time.perf_counter()
    deferred = load_suite(folder, problems, defer=True)
    staged = read_deferred(con, deferred, problems)
    set_based = time.perf_counter() - started
    taken = staged.deferred  # False: the set-based reader doubted, and the suite was read in Python
    started = time.perf_counter()
    write_suite(con, staged)
    written = time.perf_counter() - started
    con.close()

    started = time.perf_counter()
    load_suite(folder, Problems())
    python = time.perf_counter() - started
    return {"seconds": set_based, "read_floor_seconds": read, "python_seconds": python, "write_seconds": written,
            "set_based": taken, "documents": documents, "questions": questions, "problems": len(problems.items)}


def reference(workspace: str, limit: str) -> dict:
    from scoring.metrics.reference import evaluate

    started = time.perf_counter()
    suite = next(Path(workspace, "suites").iterdir())
    corpus, access = {}, {}
    with (suite / "documents.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[doc["id"]] = doc["text"]
            if doc.get("access"):
                access[doc["id"]] = doc["access"]
    with (suite / "questions.jsonl").open(encoding="utf-8") as handle:
        cases = {case["id"]: case for case in map(json.loads, handle)}
    setup = time.perf_counter() - started

    runs = sorted(p for p in Path(workspace, "runs").iterdir() if p.is_dir())
    per_run = -(-int(limit) // len(runs)) if int(limit) else None
    n = 0
    in_evaluate = 0.0
    started = time.perf_counter()
    for run in runs:
        k = json.loads((run / "manifest.json").read_text(encoding="utf-8"))["k"]
        with (run / "records.jsonl").open(encoding="utf-8") as handle:
            for count, line in enumerate(handle):
                if per_run is not None and count >= per_run:
                    break
                record = json.loads(line)
                output = {"retrieved": record["retrieved"],
                          "claims": [(c["id"], c["citations"]) for c in record["claims"]]}
                tick = time.perf_counter()
                evaluate(corpus, cases[record["question_id"]], output, k=k, access=access)
                in_evaluate += time.perf_counter() - tick
                n += 1
    return {"seconds": time.perf_counter() - started, "evaluate_seconds": in_evaluate, "records": n,
            "setup_seconds": setup}


TREC_EVAL_ARGS = {"P@10": "P.10", "R@10": "recall.10", "nDCG@10": "ndcg_cut.10", "RR": "recip_rank", "AP": "map"}
"""The `-m` arguments that ask trec_eval for the compared measures (measure, then `.` and its cutoffs)."""
TREC_NAMES = {m: arg.replace(".", "_") for m, arg in TREC_EVAL_ARGS.items()}
"""The names trec_eval prints for them and pytrec_eval takes (`P_10`, `ndcg_cut_10`)."""


def pytrec(qrels_path: str, run_path: str, *measures: str) -> dict:
    import pytrec_eval

    started = time.perf_counter()
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8") as handle:
        for line in handle:
            qid, _, docno, grade = line.split()
            qrels.setdefault(qid, {})[docno] = int(grade)
    run: dict[str, dict[str, float]] = {}
    with open(run_path, encoding="utf-8") as handle:
        for line in handle:
            qid, _, docno, _, score, _ = line.split()
            run.setdefault(qid, {})[docno] = float(score)
    parsed = time.perf_counter() - started
    names = [TREC_NAMES[m] for m in measures]
    results = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
    means = {m: sum(r[name] for r in results.values()) / len(results) for m, name in zip(measures, names)}
    for m in measures:
        print(f"{m}\tall\t{means[m]:.4f}")
    return {"seconds": time.perf_counter() - started, "parse_seconds": parsed, "topics": len(results), "means": means}


TASKS = {"floor": floor, "lines": lines, "store": store, "store_coded": store_coded, "refresh": refresh,
         "suite": suite,
         "bounds": bounds, "reference": reference, "pytrec": pytrec}

if __name__ == "__main__":
    result = TASKS[sys.argv[1]](*sys.argv[2:])
    print(json.dumps(result))

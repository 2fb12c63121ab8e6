"""Helpers shared by tests: turn seed-shaped Python data into the SQL engine's input rows."""
from __future__ import annotations

import duckdb

from scoring.metrics import engine


def engine_rows(corpus, cases, outputs, *, k, access=None, statuses=None, suite="s", max_claims=None):
    """`outputs[(run, question)]` is a seed run dict; `statuses[(run, question)]` is ok|missing|failed.

    `k` is one cutoff or a sequence of them (one eval_pairs row per pair and cutoff); `max_claims`
    the suite's (None: no eval_suites row, the format's bound applies)."""
    access = access or {}
    statuses = statuses or {}
    rows = {name: [] for name in engine.INPUT_COLUMNS}
    if max_claims is not None:
        rows["eval_suites"] = [(suite, max_claims)]
    rows["eval_documents"] = [(suite, d, list(access.get(d, ()))) for d in corpus]
    for q, case in cases.items():
        rel = case["relevant"]
        grades = rel if isinstance(rel, dict) else {d: 1 for d in rel}
        rows["eval_labels"] += [(suite, q, d, g) for d, g in grades.items()]
        rows["eval_support"] += [(suite, q, c, d) for c, docs in case["support"].items() for d in docs]
        caller = case.get("caller")
        rows["eval_callers"].append((suite, q, None if caller is None else list(caller)))
    for (run, q), out in outputs.items():
        status = statuses.get((run, q), "ok")
        rows["eval_pairs"] += [(run, suite, q, cut, status) for cut in ((k,) if isinstance(k, int) else k)]
        if status == "missing":
            continue
        rows["eval_retrieved"] += [(run, q, r, d) for r, d in enumerate(out["retrieved"], 1)]
        for pos, (claim, cites) in enumerate(out["claims"]):
            rows["eval_claims"].append((run, q, claim, pos))
            rows["eval_citations"] += [(run, q, claim, i, d) for i, d in enumerate(cites)]
    return rows


def engine_scores(rows, *, level=1, by_cutoff=False, con=None):
    """Run the SQL engine; return {(run, question): {column: value}} and the claim verdicts
    {(run, question, claim): (citations, reasons)}; `by_cutoff` adds k after the question.
    Pass `con` to reuse an open DuckDB connection (its eval_* tables are replaced)."""
    own = con is None
    con = duckdb.connect() if own else con
    engine.load_inputs(con, rows)
    cur = con.execute(engine.question_scores_sql(), {"level": level})
    names = [d[0] for d in cur.description]
    rows_at_once = cur.fetchall()
    scores = {(r[0], r[1], *((r[2],) if by_cutoff else ())): dict(zip(names, r)) for r in rows_at_once}
    # The refresh computes restricted exposures and verdicts once, then scores from them: same rows.
    con.execute(f"CREATE OR REPLACE TEMP TABLE once_restricted AS {engine.restricted_sql()}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE once_verdicts AS {engine.verdicts_sql('once_restricted')}")
    in_steps = con.execute(engine.question_scores_sql(verdicts_from="once_verdicts", restricted_from="once_restricted"),
                           {"level": level}).fetchall()
    assert sorted(in_steps, key=repr) == sorted(rows_at_once, key=repr), "scores computed in steps differ"
    cur = con.execute(engine.verdicts_sql())
    names = [d[0] for d in cur.description]
    verdicts = {}
    for r in cur.fetchall():
        v = dict(zip(names, r))
        key = (v["run_id"], v["question_id"], *((v["k"],) if by_cutoff else ()), v["claim_id"])
        verdicts[key] = (tuple(v["citations"]), tuple(v["reasons"]))
    if own:
        con.close()
    return scores, verdicts


def display(value) -> str:
    """A score as the seed's table prints it: n/a, yes/no, or two decimals."""
    if value is None:
        return "n/a"
    if type(value) is bool:
        return "yes" if value else "no"
    return f"{value:.2f}"

"""Helpers shared by tests: turn seed-shaped Python data into the SQL engine's input rows."""
from __future__ import annotations

import duckdb

from scoring import engine


def engine_rows(corpus, cases, outputs, *, k, access=None, statuses=None, suite="s"):
    """`outputs[(run, question)]` is a seed run dict; `statuses[(run, question)]` is ok|missing|failed."""
    access = access or {}
    statuses = statuses or {}
    rows = {name: [] for name in engine.INPUT_COLUMNS}
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
        rows["eval_pairs"].append((run, suite, q, k, status))
        if status == "missing":
            continue
        rows["eval_retrieved"] += [(run, q, r, d) for r, d in enumerate(out["retrieved"], 1)]
        for pos, (claim, cites) in enumerate(out["claims"]):
            rows["eval_claims"].append((run, q, claim, pos))
            rows["eval_citations"] += [(run, q, claim, i, d) for i, d in enumerate(cites)]
    return rows


def engine_scores(rows, *, level=1):
    """Run the SQL engine; return {(run, question): {column: value}} and the claim verdicts."""
    con = duckdb.connect()
    engine.load_inputs(con, rows)
    cur = con.execute(engine.question_scores_sql(), {"level": level})
    names = [d[0] for d in cur.description]
    scores = {(r[0], r[1]): dict(zip(names, r)) for r in cur.fetchall()}
    verdicts = {
        (r[0], r[1], r[2]): (tuple(r[4]), tuple(r[5]))
        for r in con.execute(engine.verdicts_sql()).fetchall()
    }
    con.close()
    return scores, verdicts

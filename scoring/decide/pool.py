"""Pools to judge: the documents some run ranked that nobody labelled for the question.

An unjudged document counts as not relevant, so a retriever that surfaces documents nobody judged can
read as a regression (the pooling bias of IR evaluation). `unjudged` lists them for the runs given,
the most influential first: retrieved by more of the runs, then at a better rank, then on questions
whose outcome differs between the runs (a label there can change the comparison), then suite order.
"""
from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pandas as pd

from ..errors import invalid
from ..metrics.registry import REGISTRY
from .change import TIE

POOL_COLUMNS: tuple[str, ...] = ("question_id", "doc_id", "runs", "best_rank", "differs")

_DIFFERS = " OR ".join(
    f"(max({m.key}::DOUBLE) - min({m.key}::DOUBLE) > {TIE!r} OR (count({m.key}) > 0 AND count({m.key}) < count(*)))"
    for m in REGISTRY)
"""SQL over one question's rows of several runs: whether any metric's value differs between them."""


def unjudged(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], *, depth: int | None = None,
             limit: int | None = None) -> pd.DataFrame:
    """(question_id, doc_id, runs, best_rank, differs) for each document one of the runs ranked
    within `depth` (None: each run's own k) that carries no label for the question, most influential
    first (module docstring); at most `limit` rows. `runs`: the runs that ranked it, `best_rank` the
    best of their ranks, `differs` whether the question's outcome (a status or a metric) differs
    between the runs. The runs must be on one suite."""
    runs = list(dict.fromkeys(run_ids))
    found = con.execute("SELECT run_id, suite FROM runs WHERE list_contains(?::VARCHAR[], run_id)", [runs]).fetchall()
    missing = sorted(set(runs) - {r for r, _ in found})
    if missing:
        raise invalid("not a run of this database", "--runs", missing[0])
    suites = sorted({s for _, s in found})
    if len(suites) > 1:
        raise invalid(f"the runs are on different suites ({', '.join(suites)}): pool runs of one suite", "--runs",
                      ",".join(runs))
    if depth is not None and depth < 1:
        raise invalid("a depth is a whole number >= 1", "--depth", depth)
    return con.execute(f"""
        WITH pooled AS (
          -- what labels name: the document, or in a passage-level suite the chunk as ranked
          SELECT t.question_id, CASE WHEN s.unit = 'chunk' THEN coalesce(t.chunk_id, t.doc_id) ELSE t.doc_id END
                   AS doc_id,
                 list(DISTINCT t.run_id ORDER BY t.run_id) AS runs, min(t.rank) AS best_rank
          FROM retrieved t JOIN runs r ON r.run_id = t.run_id JOIN suites s ON s.suite = r.suite
          WHERE list_contains($runs, t.run_id) AND t.counted AND t.grade IS NULL
            AND t.rank <= coalesce($depth, r.k)
          GROUP BY ALL
        ),
        outcome AS (
          SELECT question_id, count(DISTINCT status) > 1 OR {_DIFFERS} AS differs
          FROM question_scores WHERE list_contains($runs, run_id) GROUP BY question_id
        )
        SELECT p.question_id, p.doc_id, p.runs, p.best_rank, coalesce(o.differs, false) AS differs
        FROM pooled p
        JOIN questions q ON q.suite = $suite AND q.question_id = p.question_id
        LEFT JOIN outcome o ON o.question_id = p.question_id
        ORDER BY len(p.runs) DESC, p.best_rank, differs DESC, q.position, p.doc_id
        LIMIT $limit""", {"runs": runs, "depth": depth, "suite": suites[0] if suites else "",
                          "limit": limit if limit is not None else 2**62}).df()


__all__ = ["POOL_COLUMNS", "unjudged"]

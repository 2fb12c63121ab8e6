"""Pools to judge: the documents some run ranked that nobody labelled for the question.

An unjudged document counts as not relevant, so a retriever that surfaces documents nobody judged can
read as a regression (the pooling bias of IR evaluation). `unjudged` lists them for the runs given,
the most influential first: retrieved by more of the runs, then at a better rank, then on questions
whose outcome differs between the runs (a label there can change the comparison), then suite order.
`label_gaps` marks the regressions that may be such a reading.
"""
from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd

from ..errors import invalid
from ..metrics.registry import REGISTRY
from .change import STATUSES, TIE

POOL_COLUMNS: tuple[str, ...] = ("question_id", "doc_id", "runs", "best_rank", "differs")

_DIFFERS = " OR ".join(
    f"(max({m.key}::DOUBLE) - min({m.key}::DOUBLE) > {TIE!r} OR (count({m.key}) > 0 AND count({m.key}) < count(*)))"
    for m in REGISTRY)
"""SQL over one question's rows of several runs: whether any metric's value differs between them."""

_STATUS_DIFFERS = "coalesce(min(status) <> max(status), false)"
"""SQL over one question's rows of several runs: whether their statuses differ (more than one distinct
status, without the cost of a distinct aggregate)."""


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
    if len(runs) > _MASK_BITS:
        return _unjudged_wide(con, runs, depth, suites[0] if suites else "", limit)
    k_of = dict(con.execute("SELECT run_id, k FROM runs WHERE list_contains(?::VARCHAR[], run_id)", [runs]).fetchall())
    unit = con.execute("SELECT unit FROM suites WHERE suite = ?", [suites[0]]).fetchone() if suites else None
    ordered = sorted(runs)  # a group's runs, in the order `list(DISTINCT run_id ORDER BY run_id)` gives
    reach = {r: depth if depth is not None else k_of[r] for r in ordered}
    params: dict[str, object] = {f"r{i}": r for i, r in enumerate(ordered)}
    within = ("" if len(set(reach.values())) < 2 else  # one depth for every run: `$reach` is the rule
              "AND t.rank <= CASE t.run_id " + " ".join(f"WHEN $r{i} THEN $k{i}" for i in range(len(ordered))) + " END")
    if within:
        params.update({f"k{i}": reach[r] for i, r in enumerate(ordered)})
    listed = ", ".join(f"$r{i}" for i in range(len(ordered)))
    bit = " ".join(f"WHEN $r{i} THEN {1 << i}::UBIGINT" for i in range(len(ordered)))
    chunked = unit is not None and unit[0] == "chunk"
    params.update({"ordered": ordered, "reach": max(reach.values(), default=0), "suite": suites[0] if suites else "",
                   "limit": limit if limit is not None else 2**62})
    return con.execute(f"""
        WITH coded AS (
          -- grouped on the stored codes (`retrieved_slots`), question and document in one integer (a
          -- single key groups 34M slots in a third of the time two keys take), read as IDs once grouped:
          -- what labels name is the document, or in a passage-level suite the chunk as ranked; `mask`:
          -- bit i for the i-th of the runs in order (an integer aggregate: no list of strings per document)
          SELECT (t.question_code::BIGINT << 32) | t.doc_code AS codes,
                 {"t.chunk_id" if chunked else "NULL::VARCHAR"} AS chunk_id,
                 bit_or(CASE t.run_id {bit} END) AS mask, min(t.rank) AS best_rank
          FROM retrieved_slots t
          WHERE t.run_id IN ({listed}) AND t.rank <= $reach AND t.counted AND t.grade IS NULL
            {within}
          GROUP BY ALL
        ),
        cut AS (
          -- the `limit`-th row's (runs, best rank): only rows at or before it can be listed
          SELECT bit_count(mask) AS n, best_rank FROM coded ORDER BY n DESC, best_rank
          LIMIT 1 OFFSET greatest($limit, 1) - 1
        ),
        kept AS MATERIALIZED (
          SELECT p.* FROM coded p LEFT JOIN cut c ON true
          WHERE c.n IS NULL OR bit_count(p.mask) > c.n OR (bit_count(p.mask) = c.n AND p.best_rank <= c.best_rank)
        ),
        listed AS MATERIALIZED (
          -- only the rows kept are read as IDs
          SELECT q.question_id, q.position, coalesce(p.chunk_id, d.doc_id) AS doc_id, p.mask, p.best_rank
          FROM kept p
          JOIN questions q ON q.suite = $suite AND q.position = (p.codes >> 32)::INTEGER
          JOIN document_codes d ON d.suite = $suite AND d.doc_code = (p.codes & 4294967295)::INTEGER
        ),
        outcome AS (
          SELECT question_id, {_STATUS_DIFFERS} OR {_DIFFERS} AS differs
          FROM question_scores
          WHERE run_id IN ({listed}) AND question_id IN (SELECT question_id FROM listed)
          GROUP BY question_id
        )
        SELECT p.question_id, p.doc_id,
               list_filter($ordered::VARCHAR[], lambda r, i: (p.mask >> (i - 1)::UBIGINT) & 1::UBIGINT = 1) AS runs,
               p.best_rank, coalesce(o.differs, false) AS differs
        FROM listed p
        LEFT JOIN outcome o ON o.question_id = p.question_id
        ORDER BY bit_count(p.mask) DESC, p.best_rank, differs DESC, p.position, p.doc_id
        LIMIT $limit""", params).df()


_MASK_BITS = 64
"""Runs a pool marks in one integer per document; more runs are pooled with a list per document."""


def _unjudged_wide(con: duckdb.DuckDBPyConnection, runs: list[str], depth: int | None, suite: str,
                   limit: int | None) -> pd.DataFrame:
    """`unjudged` for more runs than `_MASK_BITS` (the same rows, one list of runs per document)."""
    return con.execute(f"""
        WITH pooled AS (
          SELECT t.question_id, CASE WHEN s.unit = 'chunk' THEN coalesce(t.chunk_id, t.doc_id) ELSE t.doc_id END
                   AS doc_id,
                 list(DISTINCT t.run_id ORDER BY t.run_id) AS runs, min(t.rank) AS best_rank
          FROM retrieved t JOIN runs r ON r.run_id = t.run_id JOIN suites s ON s.suite = r.suite
          WHERE list_contains($runs, t.run_id) AND t.counted AND t.grade IS NULL
            AND t.rank <= coalesce($depth, r.k)
          GROUP BY ALL
        ),
        outcome AS (
          SELECT question_id, {_STATUS_DIFFERS} OR {_DIFFERS} AS differs
          FROM question_scores WHERE list_contains($runs, run_id) GROUP BY question_id
        )
        SELECT p.question_id, p.doc_id, p.runs, p.best_rank, coalesce(o.differs, false) AS differs
        FROM pooled p
        JOIN questions q ON q.suite = $suite AND q.question_id = p.question_id
        LEFT JOIN outcome o ON o.question_id = p.question_id
        ORDER BY len(p.runs) DESC, p.best_rank, differs DESC, q.position, p.doc_id
        LIMIT $limit""", {"runs": runs, "depth": depth, "suite": suite,
                          "limit": limit if limit is not None else 2**62}).df()


def label_gaps(codes: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """Per question: regressed (`codes`, its status as `scoring.decide.change.status_codes` numbers it)
    while the candidate's first k hold a document nobody judged (`judged`, the candidate's Judged@k, below
    1 by more than `TIE`; never where it is n/a): the regression may be a label gap."""
    with np.errstate(invalid="ignore"):
        return (np.asarray(codes) == STATUSES.index("regressed")) & (np.asarray(judged, dtype=float) < 1 - TIE)


__all__ = ["POOL_COLUMNS", "label_gaps", "unjudged"]

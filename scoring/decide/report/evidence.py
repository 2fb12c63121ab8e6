"""The evidence behind a report's regressions: what each side answered, claimed and retrieved on the
regressed questions (first run of each side), and the claims the labels expect."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ...store.database import Database
from ..comparison import Comparison, compare
from ..policy import Policy


@dataclass
class Evidence:
    """What each side did on the regressed questions (first run of each side), and the labels."""

    answers: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    claims: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    retrieved: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    expected: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


PER_QUESTION_MAX = 64
"""Up to this many questions, `load_evidence` reads each question's rows of each run with its own equality filter."""


def _rows_of(con: duckdb.DuckDBPyConnection, columns: str, table: str, order: str, match: str,
             keys: list[tuple[Any, ...]], where: str, params: list[Any]) -> list[tuple]:
    """`columns` of `table`'s rows ordered by `order`: those matching `match` (``?`` bound to a key)
    for one of `keys` (given when they are few), else those meeting `where` (bound to `params`).
    An equality per key lets a scan skip the row groups that cannot hold the key (their min / max
    say so), which a list of IDs does not."""
    if keys:
        extra = "".join(f", {o}" for o in order.split(", ") if o not in columns.split(", "))
        one = f"SELECT {columns}{extra} FROM {table} WHERE {match}"
        sql = f"SELECT {columns} FROM ({' UNION ALL '.join([one] * len(keys))}) ORDER BY {order}"
        return con.execute(sql, [x for key in keys for x in key]).fetchall()
    return con.execute(f"SELECT {columns} FROM {table} WHERE {where} ORDER BY {order}", params).fetchall()


def load_evidence(con: duckdb.DuckDBPyConnection, c: Comparison, question_ids: Iterable[str]) -> Evidence:
    """Answers, claims with verdicts, retrieved rankings and expected claims for `question_ids`."""
    ids = sorted(set(question_ids))
    ev = Evidence()
    if not ids:
        return ev
    runs = {c.baseline.run_ids[0]: "baseline", c.candidate.run_ids[0]: "candidate"}
    few = len(ids) <= PER_QUESTION_MAX
    pairs = [(q, r) for q in ids for r in runs] if few else []
    match, where = "question_id = ? AND run_id = ?", \
        "list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id)"
    params = [list(runs), ids]
    for run, q, answer, error, latency, cost in _rows_of(
            con, "run_id, question_id, answer, error, latency_ms, cost_usd", "records", "run_id, question_id",
            match, pairs, where, params):
        ev.answers[(runs[run], q)] = {"answer": answer, "error": error, "latency_ms": latency, "cost_usd": cost}
    for run, q, claim, text_, citations, supported, reasons in _rows_of(
            con, "run_id, question_id, claim_id, text, citations, supported, reasons", "claims",
            "run_id, question_id, position", match, pairs, where, params):
        ev.claims.setdefault((runs[run], q), []).append(
            {"claim": claim, "text": text_, "citations": list(citations), "supported": supported,
             "reasons": list(reasons)})
    for run, q, rank, doc, relevant, visible, restricted in _rows_of(
            con, "run_id, question_id, rank, doc_id, relevant, visible, restricted", "retrieved",
            "run_id, question_id, rank", match, pairs, where, params):
        ev.retrieved.setdefault((runs[run], q), []).append(
            {"rank": rank, "doc": doc, "relevant": relevant, "visible": visible, "restricted": restricted})
    for q, claim, proposition, docs in _rows_of(
            con, "question_id, claim_id, proposition, docs", "expected_claims", "question_id, claim_id",
            "question_id = ? AND suite = ?", [(q, c.suite) for q in ids] if few else [],
            "suite = ? AND list_contains(?::VARCHAR[], question_id)", [c.suite, ids]):
        ev.expected.setdefault(q, []).append({"claim": claim, "proposition": proposition, "docs": list(docs)})
    return ev



def compare_with_evidence(baseline: str, candidate: str, *, db: Path, policy: Policy | None,
                          limit: int) -> tuple[Comparison, Evidence]:
    """The comparison (read-only) and the evidence of its first `limit` regressed questions."""
    with Database(db).command() as con:
        comparison = compare(con, baseline, candidate, policy=policy)
        ids = set(comparison.regressed_questions(limit)["question_id"])
        return comparison, load_evidence(con, comparison, ids)


__all__ = ["Evidence", "PER_QUESTION_MAX", "compare_with_evidence", "load_evidence"]

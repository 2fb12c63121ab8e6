"""What the automatic aligners' own answers say about them, beside their agreement on alignments
(`scoring.decide.agreement`): how their grade of each citation agrees with the reviewed support labels,
how often a judge changes its own answer when asked again, and what a judge's answers cost.

**Support grades.** An aligner that grades citations (the lexical aligner always; a judge declared with
``grades = true``) gives each citation of a sentence it aligned to claims a grade: none, partial or full
(`scoring.metrics.alignment.LEXICAL_SUPPORT_RULES`). The reviewed labels grade the same pair: a citation d
of a sentence aligned to claims C is ``min over c in C`` of full (d is labelled as fully supporting c),
partial (labelled as partly supporting it) or none. The items are the (sentence, citation) pairs, a
sentence counted once however many runs wrote it (its question, normalised text and citations). Agreement
is Cohen's quadratic-weighted kappa over the levels none 0, partial 1, full 2 (`agreement.weighted_kappa`;
a full against a none disagrees four times as much as a full against a partial), with its bootstrap
interval (`agreement.weighted_kappa_interval`), and the share of exact agreement.

**Self-agreement.** `ragslice align --repeat N --sample M` asks a judge again about a seeded sample of the
sentences it answered (`judge_repeats`); each repeated answer is compared with the judge's first (cached)
answer to the same request: the share equal and Cohen's kappa over the alignment labels
(`alignment.canonical_outcome`), with its bootstrap interval.

**Cost.** Per run and judge, the distinct requests the run's sentences put to the judge (a request two runs
share counts for each), and the sums of the tokens and cost its cached answers report, with the count of
answers that report them, and the median and 95th percentile of the latencies measured.
"""
from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd

from ..metrics.alignment import canonical_outcome
from ..metrics.registry import SUPPORT_GRADES, SUPPORT_LEVEL
from ..metrics.reference import normalise_sentence
from .agreement import agreement, weighted_kappa, weighted_kappa_interval
from .frames import has_tables

SUPPORT_COLUMNS = ("aligner", "decided_by", "n", "agreed", "weighted_kappa", "kappa_low", "kappa_high", "confusion")
SELF_COLUMNS = ("judge", "sampled", "repeats", "agreed", "share", "kappa", "kappa_low", "kappa_high")
COST_COLUMNS = ("run_id", "judge", "requests", "reported", "prompt_tokens", "completion_tokens", "cost_usd",
                "latency_p50_ms", "latency_p95_ms")

GRADED_SQL = """
SELECT a.aligner, a.decided_by, a.question_id, a.text, a.citations, a.claim_ids, a.support
FROM alignments a JOIN runs r ON r.run_id = a.run_id
WHERE r.suite = ? AND a.aligner <> 'human' AND a.outcome = 'claims' AND len(coalesce(a.support, [])) > 0
"""

SELF_SQL = """
SELECT p.judge, p.key, p.repeat, p.sample_seed, p.outcome AS again, p.claim_ids AS again_ids,
       g.outcome AS first, g.claim_ids AS first_ids
FROM judge_repeats p JOIN judgements g ON g.suite = p.suite AND g.judge = p.judge AND g.key = p.key
WHERE p.suite = ?
QUALIFY row_number() OVER (PARTITION BY p.judge, p.key, p.repeat, p.sample_seed ORDER BY p.line DESC) = 1
ORDER BY p.judge, p.key, p.sample_seed, p.repeat
"""
"""Each repeated answer (the last line of a (judge, request, repeat, seed)) beside the cached one."""

COST_SQL = """
WITH asked AS (
  SELECT DISTINCT a.run_id, r.suite, a.decided_by AS judge, a.judgement_key AS key
  FROM alignments a JOIN runs r ON r.run_id = a.run_id
  WHERE a.aligner = 'judge' AND a.judgement_key IS NOT NULL AND list_contains(?::VARCHAR[], a.run_id)
)
SELECT s.run_id, s.judge, count(*) AS requests, count(g.cost_usd) AS reported,
       sum(g.prompt_tokens) AS prompt_tokens, sum(g.completion_tokens) AS completion_tokens,
       sum(g.cost_usd) AS cost_usd, median(g.latency_ms) AS latency_p50_ms,
       quantile_cont(g.latency_ms, 0.95) AS latency_p95_ms
FROM asked s JOIN judgements g ON g.suite = s.suite AND g.judge = s.judge AND g.key = s.key
GROUP BY s.run_id, s.judge ORDER BY s.run_id, s.judge
"""


def label_grades(expected: pd.DataFrame) -> dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]:
    """(question, claim) -> (documents labelled fully supporting it, documents labelled partly), from rows
    of `expected_claims` (question_id, claim_id, docs, partial_docs)."""
    return {(q, c): (frozenset(full), frozenset(partial if partial is not None else ()))
            for q, c, full, partial in zip(expected["question_id"], expected["claim_id"], expected["docs"],
                                           expected["partial_docs"])}


def labelled_grade(labels: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]], question: str,
                   claims: Sequence[str], doc: str) -> str:
    """The reviewed grade of a citation of a sentence aligned to `claims`: the weakest over the claims."""
    levels = []
    for claim in claims:
        full, partial = labels.get((question, claim), (frozenset(), frozenset()))
        levels.append(SUPPORT_LEVEL["full" if doc in full else "partial" if doc in partial else "none"])
    return SUPPORT_GRADES[min(levels)] if levels else "none"


def support_agreement(rows: pd.DataFrame, labels: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]
                      ) -> pd.DataFrame:
    """Per aligner that graded citations, its grades against the reviewed labels (module docstring):
    `SUPPORT_COLUMNS`, `confusion` as (label's grade, aligner's grade, count)."""
    out = []
    if rows.empty:
        return pd.DataFrame(columns=list(SUPPORT_COLUMNS))
    for (aligner, decided_by), own in rows.groupby(["aligner", "decided_by"], sort=True):
        seen: set[tuple] = set()
        truth, given = [], []
        for q, text, citations, claims, grades in zip(own["question_id"], own["text"], own["citations"],
                                                      own["claim_ids"], own["support"]):
            item = (q, normalise_sentence(text), tuple(citations))
            if item in seen or len(grades) != len(citations):
                continue
            seen.add(item)
            for doc, grade in zip(citations, grades):
                truth.append(labelled_grade(labels, q, list(claims), doc))
                given.append(grade)
        if not truth:
            continue
        x = np.array([SUPPORT_LEVEL[g] for g in truth], dtype=float)
        y = np.array([SUPPORT_LEVEL[g] for g in given], dtype=float)
        interval = weighted_kappa_interval(x, y)
        pairs = pd.Series(list(zip(truth, given))).value_counts()
        out.append({"aligner": aligner, "decided_by": decided_by, "n": len(truth),
                    "agreed": int(sum(a == b for a, b in zip(truth, given))), "weighted_kappa": weighted_kappa(x, y),
                    "kappa_low": None if interval is None else interval[0],
                    "kappa_high": None if interval is None else interval[1],
                    "confusion": [[a, b, int(n)] for (a, b), n in sorted(pairs.items())]})
    return pd.DataFrame(out, columns=list(SUPPORT_COLUMNS))


def self_agreement(rows: pd.DataFrame) -> pd.DataFrame:
    """Per judge with repeated answers, their agreement with its first answers (module docstring):
    `SELF_COLUMNS` (`sampled`: distinct requests asked again; `repeats`: answers compared)."""
    out = []
    for judge, own in rows.groupby("judge", sort=True):
        first = [canonical_outcome(o, list(ids)) for o, ids in zip(own["first"], own["first_ids"])]
        again = [canonical_outcome(o, list(ids)) for o, ids in zip(own["again"], own["again_ids"])]
        found = agreement(first, again)
        out.append({"judge": judge, "sampled": int(own["key"].nunique()), "repeats": found.n, "agreed": found.agreed,
                    "share": found.accuracy, "kappa": found.kappa, "kappa_low": found.kappa_low,
                    "kappa_high": found.kappa_high})
    return pd.DataFrame(out, columns=list(SELF_COLUMNS))


def read_judging(con: duckdb.DuckDBPyConnection, suite: str, run_ids: Sequence[str]
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(support agreement, self-agreement, cost per run and judge of `run_ids`) of the suite, each empty
    when there is nothing to measure (or the database predates them)."""
    empty = (pd.DataFrame(columns=list(SUPPORT_COLUMNS)), pd.DataFrame(columns=list(SELF_COLUMNS)),
             pd.DataFrame(columns=list(COST_COLUMNS)))
    if not has_tables(con, "alignments", "judge_repeats", "judgements"):
        return empty
    graded = con.execute(GRADED_SQL, [suite]).df()
    expected = con.execute("SELECT question_id, claim_id, docs, partial_docs FROM expected_claims WHERE suite = ?",
                           [suite]).df()
    support = support_agreement(graded, label_grades(expected)) if not graded.empty else empty[0]
    repeats = con.execute(SELF_SQL, [suite]).df()
    own = self_agreement(repeats) if not repeats.empty else empty[1]
    costs = con.execute(COST_SQL, [list(run_ids)]).df()
    return support, own, costs if not costs.empty else empty[2]


__all__ = ["COST_COLUMNS", "SELF_COLUMNS", "SUPPORT_COLUMNS", "label_grades", "labelled_grade",
           "read_judging", "self_agreement", "support_agreement"]

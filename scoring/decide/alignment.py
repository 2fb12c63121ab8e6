"""What the alignment of free-text answers means for one comparison: each side's sentences by aligner,
its generated claims by the least reviewed aligner behind them, the questions whose claims rest on an
automatic alignment, each automatic aligner's measured agreement with the reviewers (`agreement`), and
its grades of citations against the reviewed labels, a judge's agreement with itself and its cost
(`judging`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd

from .agreement import SLICE_COLUMNS, aligner_agreement, aligner_agreement_by_slice
from .judging import COST_COLUMNS, SELF_COLUMNS, SUPPORT_COLUMNS, read_judging
from .stats import CONFIDENCE

AUTOMATIC = ("judge", "lexical")
ORDER = ("recorded", "human", "judge", "lexical")
AS_WORDS = {"recorded": "recorded as claims", "human": "aligned by reviewers", "judge": "aligned by a judge",
            "lexical": "aligned by the lexical aligner"}


@dataclass(frozen=True)
class AlignmentFacts:
    """Per side: `sentences` (aligner -> applied alignments), `claims` (recorded | human | judge | lexical
    -> generated claims); `automatic_questions` (either side); `agreement` (`agreement.ALIGNER_COLUMNS`,
    measured over every run of the suite) and `agreement_by_slice` (`agreement.SLICE_COLUMNS`)."""

    sentences: dict[str, dict[str, int]]
    claims: dict[str, dict[str, int]]
    automatic_questions: frozenset[str]
    agreement: pd.DataFrame = field(repr=False)
    agreement_by_slice: pd.DataFrame = field(repr=False, default_factory=lambda: pd.DataFrame(columns=SLICE_COLUMNS))
    """Each automatic aligner's kappa on answerable, unanswerable and each question type
    (`agreement.aligner_agreement_by_slice`)."""
    support_agreement: pd.DataFrame = field(repr=False, default_factory=lambda: pd.DataFrame(columns=SUPPORT_COLUMNS))
    """Each aligner's grades of citations against the reviewed labels (`judging.support_agreement`)."""
    self_agreement: pd.DataFrame = field(repr=False, default_factory=lambda: pd.DataFrame(columns=SELF_COLUMNS))
    """Each judge's repeated answers against its first (`judging.self_agreement`)."""
    judge_costs: pd.DataFrame = field(repr=False, default_factory=lambda: pd.DataFrame(columns=COST_COLUMNS))
    """Per run of either side and judge: its requests, tokens, cost and latency (`judging.COST_SQL`)."""

    def aligner_name(self, aligner: str, decided_by: str) -> str:
        return "lexical" if aligner == "lexical" else f"judge {decided_by}"

    def automatic_aligners(self, resting: dict[tuple[str, str], int]) -> list[tuple[str, float | None, int]]:
        """(name, kappa or None, claims) for each automatic aligner in `resting` ((aligner, decided_by) -> claims)."""
        kappas = {(r.aligner, r.decided_by): (None if pd.isna(r.kappa) else float(r.kappa))
                  for r in self.agreement.itertuples()}
        return [(self.aligner_name(a, d), kappas.get((a, d)), n) for (a, d), n in sorted(resting.items())]

    def aligner_intervals(self, resting: dict[tuple[str, str], int]) -> dict[str, tuple[float, float] | None]:
        """Name -> the bootstrap interval of its kappa (`agreement.kappa_interval`; None when too few
        sentences or no kappa) for each automatic aligner in `resting`, as `automatic_aligners` names them."""
        found = {(r.aligner, r.decided_by): (None if pd.isna(r.kappa_low) or pd.isna(r.kappa_high) else
                                             (float(r.kappa_low), float(r.kappa_high)))
                 for r in self.agreement.itertuples()}
        return {self.aligner_name(a, d): found.get((a, d)) for (a, d) in sorted(resting)}

    def summary(self) -> list[str]:
        """Plain sentences: each side's claims by aligner, the questions resting on automatic ones, and each
        automatic aligner's measured agreement with the reviewers."""
        lines = []
        for side in ("baseline", "candidate"):
            claims = self.claims[side]
            if not set(claims) - {"recorded"}:
                continue
            parts = [f"{n} {AS_WORDS.get(k, k)}" for k, n in sorted(claims.items(), key=lambda kv: ORDER.index(kv[0]))]
            unreviewed = sum(n for k, n in claims.items() if k in AUTOMATIC)
            lines.append(f"The {side}'s {sum(claims.values())} claims: {', '.join(parts)}; {unreviewed} rest on "
                         "unreviewed automatic alignments.")
        lines.append(f"{len(self.automatic_questions)} question(s) have a claim resting on an automatic alignment.")
        for r in self.agreement.itertuples():
            if r.aligner == "human":
                continue
            name = "the lexical aligner" if r.aligner == "lexical" else self.aligner_name(r.aligner, r.decided_by)
            name = name[0].upper() + name[1:]
            if int(r.n) == 0:
                lines.append(f"{name} is not measured: no sentence both it and a reviewer decided.")
                continue
            kappa = "no kappa: one label only" if pd.isna(r.kappa) else f"kappa {float(r.kappa):.3f}"
            if not pd.isna(r.kappa) and not pd.isna(r.kappa_low):
                kappa += f", {CONFIDENCE:.0%} interval {float(r.kappa_low):.3f} to {float(r.kappa_high):.3f}"
            lines.append(f"{name} agrees with the reviewers on {int(r.agreed)} of {int(r.n)} reviewed sentences "
                         f"({kappa}).")
            by_slice = self.slice_words(r.aligner, r.decided_by)
            if by_slice:
                lines.append(f"{name}'s kappa by slice: {by_slice}.")
        return lines + self.judging_words()

    def judging_words(self) -> list[str]:
        """Plain sentences: each aligner's support grades against the labels, each judge's self-agreement,
        and each judge's cost per run."""
        lines = []
        for r in self.support_agreement.itertuples():
            name = "The lexical aligner" if r.aligner == "lexical" else f"Judge {r.decided_by}"
            kappa = "no weighted kappa: one grade only" if _na(r.weighted_kappa) else \
                f"weighted kappa {float(r.weighted_kappa):.3f}" + (
                    "" if _na(r.kappa_low) else f", {CONFIDENCE:.0%} {float(r.kappa_low):.3f} to {float(r.kappa_high):.3f}")
            lines.append(f"{name} grades citations full, partial or none: {int(r.agreed)} of {int(r.n)} as the "
                         f"reviewed labels grade them ({kappa}).")
        for r in self.self_agreement.itertuples():
            kappa = "kappa n/a: one label only" if _na(r.kappa) else f"kappa {float(r.kappa):.3f}"
            lines.append(f"Judge {r.judge} asked again: {int(r.agreed)} of {int(r.repeats)} repeated answers about "
                         f"{int(r.sampled)} sentences equal its first ({float(r.share):.1%}; {kappa}).")
        for r in self.judge_costs.itertuples():
            cost = "no cost reported" if not int(r.reported) else f"{float(r.cost_usd):.4f} USD reported by " \
                f"{int(r.reported)} of them"
            latency = "" if _na(r.latency_p50_ms) else f"; latency p50 {float(r.latency_p50_ms):.0f} ms, p95 " \
                f"{float(r.latency_p95_ms):.0f} ms"
            lines.append(f"Judge {r.judge} on {r.run_id}: {int(r.requests)} requests, {cost}{latency}.")
        return lines

    def slice_words(self, aligner: str, decided_by: str) -> str:
        """"answerable 0.950 (n 90), unanswerable n/a (6 sentences: fewer than 10), ..." for one aligner."""
        own = self.agreement_by_slice[(self.agreement_by_slice["aligner"] == aligner)
                                      & (self.agreement_by_slice["decided_by"] == decided_by)]
        parts = []
        for r in own.itertuples():
            if r.reason is None or (isinstance(r.reason, float) and pd.isna(r.reason)):
                parts.append(f"{r.slice} {float(r.kappa):.3f} (n {int(r.n)})")
            else:
                parts.append(f"{r.slice} n/a (n {int(r.n)}: {r.reason})")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": {"sentences": self.sentences["baseline"], "claims": self.claims["baseline"],
                         "unreviewed_claims": sum(n for k, n in self.claims["baseline"].items() if k in AUTOMATIC)},
            "candidate": {"sentences": self.sentences["candidate"], "claims": self.claims["candidate"],
                          "unreviewed_claims": sum(n for k, n in self.claims["candidate"].items() if k in AUTOMATIC)},
            "questions_resting_on_automatic_alignments": len(self.automatic_questions),
            "agreement": _records(self.agreement),
            "agreement_by_slice": _records(self.agreement_by_slice),
            "support_agreement": _records(self.support_agreement),
            "self_agreement": _records(self.self_agreement),
            "judge_costs": _records(self.judge_costs),
        }


def _na(value: Any) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value))


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows as JSON-ready dicts: NaN as None, numpy numbers as Python's."""
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({k: (None if _na(v) else v.item() if hasattr(v, "item") else v) for k, v in row.items()})
    return out


def read_alignment(con: duckdb.DuckDBPyConnection, suite: str, baseline_runs: tuple[str, ...],
                   candidate_runs: tuple[str, ...]) -> tuple[AlignmentFacts, dict[tuple[str, str], int]] | None:
    """The facts for these sides, and (aligner, decided_by) -> claims of either side resting on it; None
    when no run of the suite answers in sentences (or the database predates free-text answers)."""
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "alignments" not in tables:
        return None
    rows = con.execute("""
        SELECT a.run_id, a.question_id, a.text, a.citations, a.aligner, a.decided_by, a.outcome, a.claim_ids, a.applied
        FROM alignments a JOIN runs r ON r.run_id = a.run_id WHERE r.suite = ?""", [suite]).df()
    if rows.empty:
        return None
    sides = {"baseline": list(baseline_runs), "candidate": list(candidate_runs)}
    applied = rows[rows["applied"]]
    sentences = {name: {str(k): int(v) for k, v in applied[applied["run_id"].isin(runs)]["aligner"]
                        .value_counts().sort_index().items()} for name, runs in sides.items()}
    every = [*baseline_runs, *candidate_runs]
    claims_rows = con.execute("""
        SELECT run_id, question_id, coalesce(aligned_by, 'recorded') AS aligned_by, claim_id
        FROM claims WHERE list_contains(?::VARCHAR[], run_id)""", [every]).df()
    claims = {name: {str(k): int(v) for k, v in claims_rows[claims_rows["run_id"].isin(runs)]["aligned_by"]
                     .value_counts().sort_index().items()} for name, runs in sides.items()}
    mine = applied[applied["run_id"].isin(every) & applied["aligner"].isin(AUTOMATIC)]
    # the automatic alignments the generated claims rest on: one per (run, question, claim) and aligner
    resting_rows = con.execute("""
        SELECT a.aligner, a.decided_by, count(DISTINCT (c.run_id, c.question_id, c.claim_id)) AS n
        FROM claims c
        JOIN alignments a ON a.run_id = c.run_id AND a.question_id = c.question_id AND a.applied
             AND a.aligner <> 'human'
             AND (list_contains(a.claim_ids, c.claim_id) OR c.claim_id = 'unlabelled#' || a.sentence::VARCHAR)
        WHERE list_contains(?::VARCHAR[], c.run_id)
        GROUP BY ALL""", [every]).fetchall()
    resting = {(a, d): int(n) for a, d, n in resting_rows}
    questions = con.execute("SELECT question_id, type, answerable FROM questions WHERE suite = ? ORDER BY question_id",
                            [suite]).df()
    support, itself, costs = read_judging(con, suite, every)
    facts = AlignmentFacts(sentences, claims, frozenset(mine["question_id"]), aligner_agreement(rows),
                           aligner_agreement_by_slice(rows, questions), support, itself, costs)
    return facts, resting


__all__ = ["AUTOMATIC", "AlignmentFacts", "read_alignment"]

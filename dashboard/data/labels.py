"""Labels and their review: the documents the sides ranked that nobody judged (`scoring.decide.pool`),
what the comparison's claims rest on and the sentences left to align (`scoring.decide.alignment`),
recording a reviewer's decision (review mode), the reviews and the reviewers' agreement
(`scoring.decide.agreement`), and what the reviews changed (`scoring.decide.relabel`).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scoring.decide.sides import Side
from scoring.store.database import Signature

from .database import (copied, current, db_path, file_signature, has, policy_path, query, query_many, reading,
                       review_mode, shared, suites)
from .questions import question

REVIEW_TABLES = ("reviews", "label_changes")


def pool(suite: str, base: Side, cand: Side, limit: int = 50, search: str = "") -> pd.DataFrame:
    """The documents the two sides ranked within their k that nobody judged, most influential first
    (`scoring.decide.pool.unjudged`), with the question's text and the document's title and text.
    `search`: only those whose question ID, question text or document ID contains it (case-insensitive);
    the first `limit` of them."""
    from scoring.decide.pool import unjudged

    needle = search.strip().lower()
    with reading(db_path()) as con:
        found = unjudged(con, [*base.run_ids, *cand.run_ids], limit=None if needle else limit)
        if needle and not found.empty:
            texts = con.execute("SELECT question_id, lower(text) AS q FROM questions WHERE suite = ?", [suite]).df()
            asked = dict(zip(texts["question_id"], texts["q"]))
            keep = [needle in str(q).lower() or needle in str(d).lower() or needle in str(asked.get(q, ""))
                    for q, d in zip(found["question_id"], found["doc_id"])]
            found = found[keep].head(limit).reset_index(drop=True)
        if found.empty:
            return found.assign(question=[], title=[], text=[])
        extra = con.execute(
            """SELECT p.question_id, p.doc_id, q.text AS question, d.title, d.text
               FROM (SELECT unnest(?::VARCHAR[]) AS question_id, unnest(?::VARCHAR[]) AS doc_id) p
               JOIN questions q ON q.suite = ? AND q.question_id = p.question_id
               LEFT JOIN documents d ON d.suite = ? AND d.doc_id = p.doc_id""",
            [list(found["question_id"]), list(found["doc_id"]), suite, suite]).df()
    return found.merge(extra, on=["question_id", "doc_id"], how="left")


def rankings_of(suite: str, run_ids: Sequence[str], question_id: str, doc_id: str) -> pd.DataFrame:
    """Where each run ranked a document for a question (run_id, rank, visible)."""
    return query("SELECT run_id, rank, visible FROM retrieved WHERE question_id = ? AND doc_id = ? "
                 "AND list_contains(?::VARCHAR[], run_id) ORDER BY run_id, rank",
                 [question_id, doc_id, list(run_ids)])


def alignment_facts(suite: str, base: Side, cand: Side) -> dict[str, Any] | None:
    """What the comparison's claims rest on (`scoring.decide.alignment`): per side sentences and claims
    by aligner, and each automatic aligner's agreement with the reviewers; None when no run of the suite
    answers in sentences."""
    return _alignment_facts(*current(), suite, tuple(base.run_ids), tuple(cand.run_ids))


@copied(max_entries=16)
def _alignment_facts(path: str, sig: Signature, suite: str, base_runs: tuple[str, ...],
                     cand_runs: tuple[str, ...]) -> dict[str, Any] | None:
    from scoring.decide.alignment import read_alignment

    with reading(path, sig) as con:
        found = read_alignment(con, suite, base_runs, cand_runs)
    if found is None:
        return None
    facts, resting = found
    return facts.to_dict() | {"resting": [{"aligner": name, "kappa": kappa, "claims": n}
                                          for name, kappa, n in facts.automatic_aligners(resting)]}


CORRECTED_COLUMNS = ("metric", "side", "judge_only", "corrected", "low", "high", "reviewed_only", "n_sampled",
                     "n_reviewed", "n_judged", "sample", "reason")


def corrected_estimates(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Per side whose figures rest on an automatic alignment, on all questions three ways
    (`scoring.decide.corrected.corrected_metric`): pooled Support, and Coverage and the abstention rates
    where a question sample covers the side; judge-only, corrected with its 95% interval (None with
    `reason` when the sample cannot give one), reviewed-only, and the sample's counts (`CORRECTED_COLUMNS`;
    `metric` the display name); empty when neither side rests on one."""
    return _corrected_estimates(*current(), suite, tuple(base.run_ids), tuple(cand.run_ids))


@copied(max_entries=16)
def _corrected_estimates(path: str, sig: Signature, suite: str, base_runs: tuple[str, ...],
                         cand_runs: tuple[str, ...]) -> pd.DataFrame:
    from scoring.decide.corrected import CORRECTABLE, estimates
    from scoring.metrics.registry import display_name

    with reading(path, sig) as con:
        found = {side: estimates(con, suite, runs) for side, runs in (("baseline", base_runs), ("candidate", cand_runs))}
    rows = []
    for metric in CORRECTABLE:
        for side in ("baseline", "candidate"):
            c = found[side].get(metric)
            if c is None or not c.judged or (metric != "support" and c.sample is None):
                continue
            k = c.corrected
            rows.append({"metric": display_name(metric), "side": side, "judge_only": c.judge, "corrected": k.estimate,
                         "low": k.low, "high": k.high, "reviewed_only": c.reviewed_only.estimate,
                         "n_sampled": k.sampled, "n_reviewed": k.reviewed, "n_judged": c.judged, "sample": c.sample,
                         "reason": k.reason})
    return pd.DataFrame(rows, columns=list(CORRECTED_COLUMNS))


def sample_progress(suite: str, base: Side, cand: Side) -> list[dict[str, Any]]:
    """Per side and review sample that covers it (a sentence sample: Support; a question sample: the
    question metric whose interval is widest): the sample, its unit, the metric, its items (sentences or
    answers) sampled and reviewed, and the half-width of the corrected interval now and about once every sampled item is
    reviewed (`scoring.decide.corrected.projected_at_sample`; None when there is no interval)."""
    return _sample_progress(*current(), suite, tuple(base.run_ids), tuple(cand.run_ids))


@copied(max_entries=16)
def _sample_progress(path: str, sig: Signature, suite: str, base_runs: tuple[str, ...],
                     cand_runs: tuple[str, ...]) -> list[dict[str, Any]]:
    from scoring.decide.corrected import sample_progress as progress
    from scoring.metrics.registry import display_name

    out = []
    with reading(path, sig) as con:
        for side, runs in (("baseline", base_runs), ("candidate", cand_runs)):
            for p in progress(con, suite, runs):
                out.append({"side": side, "sample": p.sample, "unit": p.unit,
                            "metric": "Support" if p.metric == "support" else display_name(p.metric),
                            "n_sampled": p.sampled, "n_reviewed": p.reviewed, "half_width": p.half_width,
                            "at_sample": p.at_sample})
    return out


ALIGNMENT_QUEUE_SQL = """
WITH auto AS (
  SELECT a.question_id, a.text, a.citations, a.aligner, a.decided_by, a.outcome, a.claim_ids, a.confidence,
         a.applied, a.reviewed, a.run_id
  FROM alignments a WHERE list_contains(?::VARCHAR[], a.run_id) AND NOT a.reviewed
),
items AS (
  SELECT question_id, {normalised} AS norm, any_value(text) AS sentence, any_value(citations) AS citations,
         list(DISTINCT CASE WHEN aligner = 'lexical' THEN 'lexical' ELSE 'judge ' || decided_by END || ': ' ||
              CASE WHEN outcome = 'claims' THEN array_to_string(claim_ids, ', ') ELSE outcome END) AS opinions,
         count(DISTINCT CASE WHEN outcome = 'claims' THEN array_to_string(claim_ids, '+') ELSE outcome END) > 1
           AS aligners_disagree,
         min(confidence) FILTER (WHERE applied) AS confidence,
         list(DISTINCT run_id ORDER BY run_id) AS runs
  FROM auto GROUP BY question_id, norm
),
drawn AS (  -- a sentence sample's sentences; a question sample's answers, sentence by sentence
  SELECT question_id, text, sample, position::DOUBLE AS position, drawn_at
  FROM samples WHERE suite = ? AND unit = 'sentence' AND list_contains(?::VARCHAR[], run_id)
  UNION ALL
  SELECT p.question_id, s.text, p.sample, p.position + s.sentence / 1000.0 AS position, p.drawn_at
  FROM samples p JOIN answer_sentences s ON s.run_id = p.run_id AND s.question_id = p.question_id
  WHERE p.suite = ? AND p.unit = 'question' AND list_contains(?::VARCHAR[], p.run_id)
),
sampled AS (
  SELECT question_id, {normalised} AS norm, arg_max(sample, drawn_at) AS sample,
         arg_max(position, drawn_at) AS sample_position
  FROM drawn GROUP BY question_id, norm
)
SELECT i.*, s.sample, s.sample_position, q.text AS question FROM items i
JOIN questions q ON q.suite = ? AND q.question_id = i.question_id
LEFT JOIN sampled s ON s.question_id = i.question_id AND s.norm = i.norm
ORDER BY s.sample_position IS NULL, s.sample_position, i.aligners_disagree DESC, i.confidence ASC NULLS FIRST,
         i.question_id, i.norm
LIMIT ?
"""
"""A review sample's sentences come first, in the sample's order (the queue order `ragslice sample --status`
lists; a question sample's answers sentence by sentence): reviewed in that order, the reviewed ones are a
random subset of the sample."""


def alignment_queue(suite: str, base: Side, cand: Side, limit: int = 10) -> pd.DataFrame:
    """Sentences of either side no reviewer aligned yet: a review sample's first, in its order (`sample`,
    `sample_position`: the latest sentence sample that drew the sentence from these runs, else None), then
    those the automatic aligners disagree on, then the lowest confidence of the alignment applied:
    question, sentence, citations, each aligner's opinion, the runs that wrote it."""
    from scoring.store.alignment import normalised

    if not has("alignments") or not has("samples"):
        return pd.DataFrame(columns=["question_id", "norm", "sentence", "citations", "opinions", "aligners_disagree",
                                     "confidence", "runs", "sample", "sample_position", "question"])
    sql = ALIGNMENT_QUEUE_SQL.replace("{normalised}", normalised("text"))  # both tables name the sentence `text`
    runs = [*base.run_ids, *cand.run_ids]
    return query(sql, [runs, suite, runs, suite, runs, suite, limit])


class _Units:
    """The suite's documents (or chunks, in a passage-level suite), looked up one at a time."""

    def __init__(self, suite: str, unit: str):
        self.suite, self.unit = suite, unit

    def __contains__(self, item: object) -> bool:
        table = "chunks" if self.unit == "chunk" else "documents"
        column = "chunk_id" if self.unit == "chunk" else "doc_id"
        extra = " AND run_id IS NULL" if self.unit == "chunk" else ""
        found = query(f"SELECT count(*) AS n FROM {table} WHERE suite = ? AND {column} = ?{extra}",
                      [self.suite, str(item)])
        return bool(found["n"].iloc[0])


def record_decision(suite: str, fields: dict[str, Any]) -> Any:
    """Check one decision of the reviewer (review mode) against the question's labels as the database
    holds them, append it to the reviewer's file (durable before this returns) and ask for a refresh.
    Raises ValidationError, nothing written, when it breaks a rule."""
    from scoring.store.background import refresher
    from scoring.store.reviews import Known
    from scoring.store.reviews import record_decision as record

    mode = review_mode()
    if mode is None:
        raise RuntimeError("the dashboard is not in review mode")
    workspace, reviewer = mode
    question_id = str(fields.get("question_id"))
    grades, claims = query_many(
        ("SELECT doc_id, grade FROM labels WHERE suite = ? AND question_id = ?", [suite, question_id]),
        ("SELECT claim_id, docs FROM expected_claims WHERE suite = ? AND question_id = ?", [suite, question_id]))
    exists = question(suite, question_id) is not None
    unit = str(suites().set_index("suite").loc[suite, "unit"])
    known = Known(suite, _Units(suite, unit),
                  {question_id: {c: list(d) for c, d in zip(claims["claim_id"], claims["docs"])}} if exists else {},
                  unit, {question_id: dict(zip(grades["doc_id"], grades["grade"].astype(int)))})
    decision = record(workspace / "suites" / suite, known, {**fields, "reviewer": reviewer})
    refresher(workspace, db_path()).request()
    return decision


def refresh_status() -> Any:
    """Where the refreshes this dashboard asked for stand (`scoring.store.background.Status`); None
    outside review mode."""
    from scoring.store.background import refresher

    mode = review_mode()
    return None if mode is None else refresher(mode[0], db_path()).status()


def reviews(suite: str) -> pd.DataFrame:
    """Every review decision of the suite, newest first, with what became of it (table `reviews`)."""
    if not has("reviews"):
        return pd.DataFrame(columns=["reviewer", "line", "decided_at", "kind", "question_id", "doc_id", "claim_id",
                                     "grade", "supports", "note", "status", "support_grade"])
    return query("SELECT * EXCLUDE (suite) FROM reviews WHERE suite = ? ORDER BY decided_at DESC, reviewer, line",
                 [suite])


def disputes(suite: str) -> pd.DataFrame:
    """The questions a reviewer disputed (one row per dispute decision, by question, then time)."""
    found = reviews(suite)
    return found[found["status"] == "dispute"].sort_values(["question_id", "decided_at", "reviewer"]) \
        .reset_index(drop=True)


def grade_scale(suite: str) -> list[int]:
    """The grades a reviewer chooses from: those the suite's labels use, with 0 (not relevant) and 1
    (relevant) always offered, in order."""
    used = query("SELECT DISTINCT grade FROM labels WHERE suite = ?", [suite])["grade"]
    return sorted({0, 1, *(int(g) for g in used.dropna())})


def disagreements(suite: str) -> pd.DataFrame:
    """The labels whose reviewers' latest decisions differ (one row per label and reviewer)."""
    found = reviews(suite)
    return found[found["status"] == "disagreed"].sort_values(["question_id", "kind", "doc_id", "reviewer"]) \
        .reset_index(drop=True)


def reviewer_agreement(suite: str) -> pd.DataFrame:
    """Per kind and pair of reviewers, their agreement (`scoring.decide.agreement.reviewer_agreement`)."""
    from scoring.decide.agreement import reviewer_agreement as agreement

    return agreement(reviews(suite))


def decisions_since(suite: str, moment: Any) -> tuple[int, int]:
    """(decisions, reviewers) recorded on the suite after `moment` (a recorded verdict's time)."""
    found = reviews(suite)
    if found.empty:
        return 0, 0
    later = found[pd.to_datetime(found["decided_at"]) > pd.Timestamp(moment)]
    return len(later), int(later["reviewer"].nunique())


def labels_hash(suite: str) -> str:
    """The suite's effective labels as scored (`suites.labels_hash`)."""
    return str(suites().set_index("suite").loc[suite, "labels_hash"])


def relabelling(base: Side, cand: Side) -> Any:
    """What the reviews changed for this comparison (`scoring.decide.relabel.relabelling`), with the live
    policy's verdict under each set of labels; cached until the database or the policy changes."""
    policy = policy_path()
    return _relabelling(*current(), base.spec, cand.spec, None if policy is None else str(policy),
                        file_signature(policy))


@shared(max_entries=8)
def _relabelling(path: str, sig: Signature, base: str, cand: str, policy: str | None,
                 policy_sig: Any) -> Any:
    del sig, policy_sig  # cache keys only
    from scoring.decide.policy import load_policy
    from scoring.decide.relabel import relabelling as compute

    return compute(Path(path), base, cand, policy=load_policy(policy) if policy else None)

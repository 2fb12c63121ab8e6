"""One question: finding it, its labels, both sides' scores on it, and what each run did on it
(record, scores, ranking, claims, answer sentences), with the answers' word diff
(`scoring.decide.answer_diff`) and each run's case (`scoring.decide.diagnosis`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from scoring.decide import change
from scoring.decide import scores as scoring_scores
from scoring.decide.sides import Side
from scoring.metrics import REGISTRY

from .database import (METRIC_KEYS, Signature, allowed_metric, copied, current, has, query, query_many, reading,
                       suites)
from .pair import STATUSES

QUESTION_CHOICES = 200
"""`question_choices` lists at most this many questions."""


def question_choices(suite: str, search: str = "", limit: int = QUESTION_CHOICES) -> pd.DataFrame:
    """`question_id` and `text` of the first `limit` questions of the suite (suite order) whose ID or
    text contains `search`, case-insensitively (empty: every question)."""
    needle = search.lower()
    if not needle:  # the first positions (0 .. n - 1 in suite order): the scan skips the other row groups
        first = query("SELECT question_id, text FROM questions WHERE suite = ? AND position < ? ORDER BY position",
                      [suite, int(limit)])
        if len(first) == min(int(limit), int(suites().set_index("suite").loc[suite, "n_questions"])):
            return first
    return query("SELECT question_id, text FROM questions WHERE suite = ? AND (? = '' "
                 "OR contains(lower(question_id), ?) OR contains(lower(text), ?)) ORDER BY position LIMIT ?",
                 [suite, needle, needle, needle, int(limit)])


def question(suite: str, question_id: str) -> dict[str, Any] | None:
    """The question's row of `questions` as a dict; None when the suite has no such question."""
    rows = query("SELECT * FROM questions WHERE suite = ? AND question_id = ?", [suite, question_id])
    return rows.iloc[0].to_dict() if len(rows) else None


def question_labels(suite: str, question_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(relevant documents with grade, title and access; expected claims with proposition and docs)."""
    docs, claims = query_many(
        ("""SELECT l.doc_id, l.grade, d.title, d.access
            FROM labels l LEFT JOIN documents d ON d.suite = l.suite AND d.doc_id = l.doc_id
            WHERE l.suite = ? AND l.question_id = ? ORDER BY l.grade DESC, l.doc_id""", [suite, question_id]),
        ("SELECT claim_id, proposition, docs FROM expected_claims WHERE suite = ? AND question_id = ? ORDER BY claim_id",
         [suite, question_id]),
    )
    return docs, claims


def question_pair(suite: str, base: Side, cand: Side, question_id: str) -> pd.DataFrame:
    """One row per registry metric for one question: baseline, candidate (for a group, the mean over
    its repeats, `scoring.decide.scores.question_side_scores`), delta and status, as in `question_deltas`."""
    found = question(suite, question_id)
    metrics = ", ".join(f"CAST(s.{allowed_metric(k)} AS DOUBLE) AS {k}" for k in METRIC_KEYS)
    if found is not None and has("scores_by_position"):
        where, key = "s.position = $key", int(found["position"])
        source = "scores_by_position s"
    else:
        where, key, source = "s.question_id = $key", question_id, "question_scores s"
    rows = query(f"SELECT s.run_id, s.missing, s.failed, {metrics} FROM {source} "
                 f"WHERE s.suite = $suite AND {where} AND list_contains($runs, s.run_id)",
                 {"suite": suite, "key": key, "runs": [*base.run_ids, *cand.run_ids]})
    if found is None:  # not a question of the suite
        return pd.DataFrame(columns=["metric", "baseline", "candidate", "delta", "status"])
    scores = scoring_scores.question_side_scores(rows, base.run_ids, cand.run_ids, int(found["position"]), METRIC_KEYS)
    record = change.record_codes(*scoring_scores.pair_records(scores))
    b = np.array([scores.columns[0][k][0] for k in METRIC_KEYS])
    c = np.array([scores.columns[1][k][0] for k in METRIC_KEYS])
    codes = [int(change.status_codes(scores.columns[0][m.key], scores.columns[1][m.key], m.higher_is_better,
                                     record)[0]) for m in REGISTRY]
    return pd.DataFrame({"metric": list(METRIC_KEYS), "baseline": b, "candidate": c, "delta": c - b,
                         "status": [STATUSES[i] for i in codes]})


# -- what each run did on it -----------------------------------------------------------------------

RETRIEVED_COLUMNS = ("rank", "doc_id", "chunk_id", "grade", "relevant", "cited", "visible", "restricted", "counted",
                     "title", "doc_version", "chunk_text")
CLAIM_COLUMNS = ("claim_id", "supported", "reasons", "citations", "cited_docs", "text", "aligned_by")
OPTIONAL_COLUMNS = ("chunk_id", "doc_version", "chunk_text", "aligned_by")
"""Display order of the columns `question_runs` returns: those the database has, without chunk
columns that are empty for the run (document-level retrieval)."""


def question_runs(suite: str, run_ids: Sequence[str], question_id: str) -> dict[str, dict[str, Any]]:
    """What each run did on one question, by run: `record` (dict or None), `scores` (dict or None),
    `retrieved` (rank order, with title and the relevant / visible / restricted marks) and `claims`
    (answer order, with verdict and reasons). One read of each per-record table for all the runs."""
    ids = list(dict.fromkeys(run_ids))
    marks = ", ".join("?" for _ in ids)
    found = question(suite, question_id)
    if found is not None and has("scores_by_position"):
        scores_sql = (f"SELECT * FROM scores_by_position WHERE suite = ? AND position = ? AND run_id IN ({marks})",
                      [suite, int(found["position"]), *ids])
    else:
        scores_sql = (f"SELECT * FROM question_scores WHERE suite = ? AND question_id = ? AND run_id IN ({marks})",
                      [suite, question_id, *ids])
    record, scores, retrieved, claims = query_many(
        (f"SELECT run_id, answer, context, latency_ms, cost_usd, error, line FROM records "
         f"WHERE question_id = ? AND run_id IN ({marks})", [question_id, *ids]),
        scores_sql,
        (f"SELECT * EXCLUDE (question_id) FROM retrieved WHERE question_id = ? AND run_id IN ({marks}) "
         "ORDER BY run_id, rank", [question_id, *ids]),
        (f"SELECT * EXCLUDE (question_id) FROM claims WHERE question_id = ? AND run_id IN ({marks}) "
         "ORDER BY run_id, position", [question_id, *ids]),
    )
    titles: dict[str, Any] = {}
    shown_docs = sorted(set(retrieved["doc_id"].astype(str)))
    if shown_docs:  # the titles of these few documents only (a join would hash every document)
        marks_docs = ", ".join("?" for _ in shown_docs)
        found_titles = query(f"SELECT doc_id, title FROM documents WHERE suite = ? AND doc_id IN ({marks_docs})",
                             [suite, *shown_docs])
        titles = dict(zip(found_titles["doc_id"], found_titles["title"]))
    retrieved = retrieved.assign(title=retrieved["doc_id"].map(lambda d: titles.get(d)) if len(retrieved) else None)
    out = {}
    for run_id in ids:
        own_record = record[record["run_id"] == run_id].drop(columns="run_id")
        own_scores = scores[scores["run_id"] == run_id]
        own_retrieved = retrieved[retrieved["run_id"] == run_id].drop(columns="run_id").reset_index(drop=True)
        own_claims = claims[claims["run_id"] == run_id].drop(columns="run_id").reset_index(drop=True)
        cited = {str(d) for docs in own_claims.get("cited_docs", pd.Series([], dtype=object)) if docs is not None
                 for d in docs} | {str(d) for docs in own_claims.get("citations", pd.Series([], dtype=object))
                                   if docs is not None for d in docs}
        own_retrieved = own_retrieved.assign(cited=[str(d) in cited or (c is not None and str(c) in cited)
                                                    for d, c in zip(own_retrieved["doc_id"],
                                                                    own_retrieved.get("chunk_id", [None] * len(own_retrieved)))])
        own_retrieved = own_retrieved[[c for c in RETRIEVED_COLUMNS if c in own_retrieved.columns
                                       and not (c in OPTIONAL_COLUMNS and own_retrieved[c].isna().all())]]
        out[run_id] = {
            "record": own_record.iloc[0].to_dict() if len(own_record) else None,
            "scores": own_scores.iloc[0].to_dict() if len(own_scores) else None,
            "retrieved": own_retrieved,
            "claims": own_claims[[c for c in CLAIM_COLUMNS if c in own_claims.columns
                                  and not (c in OPTIONAL_COLUMNS and own_claims[c].isna().all())]],
        }
    return out


def answer_change(shown: dict[str, dict[str, Any]], base_run: str, cand_run: str) -> tuple[str, Any] | None:
    """The two shown runs' answers as a word-level diff (escaped HTML, `scoring.decide.answer_diff`) and
    the documents the candidate's claims stopped or started citing; None when either has no record."""
    from scoring.decide.answer_diff import citation_change, diff_html, word_diff

    base, cand = shown[base_run], shown[cand_run]
    if base["record"] is None or cand["record"] is None:
        return None

    def text(side: dict[str, Any]) -> str | None:
        answer = side["record"]["answer"]
        return None if answer is None or (isinstance(answer, float) and pd.isna(answer)) else str(answer)

    def cited(side: dict[str, Any]) -> list[list[str]]:
        column = side["claims"].get("cited_docs", pd.Series([], dtype=object))
        return [[str(d) for d in docs] for docs in column if docs is not None]

    return diff_html(word_diff(text(base), text(cand))), citation_change(cited(base), cited(cand))


def diagnoses(suite: str, run_ids: Sequence[str], question_id: str) -> dict[str, Any]:
    """Each run's case on one question (`scoring.decide.diagnosis`: the record failed, retrieval
    missed the evidence, the answer misused it, or neither), by run."""
    from scoring.decide.diagnosis import DIAGNOSIS_SQL, diagnoses as diagnose

    params = {"suite": suite, "q": question_id, "runs": list(dict.fromkeys(run_ids))}
    frames = query_many(*((sql, {k: v for k, v in params.items() if f"${k}" in sql}) for sql in DIAGNOSIS_SQL))
    return diagnose(frames, list(run_ids))



SENTENCES_SQL = """
WITH s AS (
  SELECT run_id, question_id, sentence, text, citations FROM answer_sentences
  WHERE question_id = ? AND list_contains(?::VARCHAR[], run_id)
),
cited AS (
  SELECT s.run_id, s.sentence, c.doc, c.pos FROM s, unnest(s.citations) WITH ORDINALITY AS c(doc, pos)
),
marks AS (
  SELECT c.run_id, c.sentence,
         list(c.doc || ' (' || array_to_string(list_value(
                CASE WHEN coalesce(r.visible, false) THEN 'visible' ELSE 'not in the first k' END,
                CASE WHEN l.doc_id IS NOT NULL THEN 'labelled for ' || l.claims END,
                CASE WHEN coalesce(r.restricted, false) THEN 'restricted' END), ', ') || ')' ORDER BY c.pos) AS marked
  FROM cited c
  LEFT JOIN (SELECT run_id, coalesce(chunk_id, doc_id) AS item, bool_or(visible) AS visible,
                    bool_or(restricted) AS restricted
             FROM retrieved WHERE question_id = ? GROUP BY ALL) r ON r.run_id = c.run_id AND r.item = c.doc
  LEFT JOIN (SELECT d AS doc_id, string_agg(claim_id, ', ' ORDER BY claim_id) AS claims
             FROM (SELECT claim_id, unnest(docs) AS d FROM expected_claims WHERE suite = ? AND question_id = ?)
             GROUP BY d) l ON l.doc_id = c.doc
  GROUP BY c.run_id, c.sentence
),
others AS (
  SELECT run_id, sentence,
         string_agg(CASE aligner WHEN 'lexical' THEN 'lexical' WHEN 'judge' THEN 'judge ' || decided_by
                    ELSE 'reviewer ' || decided_by END || ': '
                    || CASE WHEN outcome = 'claims' THEN array_to_string(claim_ids, ', ') ELSE outcome END, '; '
                    ORDER BY aligner, decided_by) AS overruled
  FROM alignments WHERE question_id = ? AND NOT applied AND list_contains(?::VARCHAR[], run_id) GROUP BY ALL
)
SELECT s.run_id, s.sentence + 1 AS "#", s.text AS sentence, coalesce(m.marked, []) AS citations,
       CASE WHEN a.outcome IS NULL THEN 'kept for display (the record has claims)'
            WHEN a.outcome = 'claims' THEN array_to_string(a.claim_ids, ', ')
            WHEN a.outcome = 'unlabelled' THEN 'unlabelled (a claim no label supports)'
            ELSE 'no claim (not counted)' END AS aligned_to,
       CASE a.aligner WHEN 'human' THEN 'reviewer ' || a.decided_by
            WHEN 'judge' THEN 'judge ' || a.decided_by || coalesce(' (' || round(a.confidence, 2)::VARCHAR || ')', '')
            WHEN 'lexical' THEN 'lexical (' || round(a.confidence, 2)::VARCHAR || ')' END AS decided_by,
       o.overruled AS other_aligners
FROM s
LEFT JOIN alignments a ON a.run_id = s.run_id AND a.question_id = ? AND a.sentence = s.sentence AND a.applied
LEFT JOIN marks m ON m.run_id = s.run_id AND m.sentence = s.sentence
LEFT JOIN others o ON o.run_id = s.run_id AND o.sentence = s.sentence
ORDER BY s.run_id, s.sentence
"""


def answer_sentences(suite: str, run_ids: Sequence[str], question_id: str) -> dict[str, pd.DataFrame]:
    """Each run's answer sentence by sentence (runs that answered in sentences only): the sentence, its
    citations marked visible / labelled (for which expected claims) / restricted, what it is aligned to,
    who decided it (reviewer, judge and confidence, or lexical and its overlap) and what the other aligners
    said, and whether a review sample drew it (`sample`: reviewed in that sample, to review, or None: not
    sampled: `scoring.decide.corrected.sample_status`)."""
    if not has("answer_sentences"):
        return {}
    ids = list(dict.fromkeys(run_ids))
    found = query(SENTENCES_SQL, [question_id, ids, question_id, suite, question_id, question_id, ids, question_id])
    status = _sample_status(*current(), suite, tuple(ids), question_id) if has("samples") else {}
    out = {}
    for run_id, own in found.groupby("run_id"):
        own = own.drop(columns="run_id").reset_index(drop=True)
        marks = status.get(run_id, {})
        own["sample"] = [marks.get(int(n) - 1) for n in own["#"]]
        out[run_id] = own
    return out


@copied(max_entries=64)
def _sample_status(path: str, sig: Signature, suite: str, run_ids: tuple[str, ...], question_id: str
                   ) -> dict[str, dict[int, str]]:
    from scoring.decide.corrected import sample_status

    with reading(path, sig) as con:
        return {run_id: sample_status(con, suite, run_id, question_id) for run_id in run_ids}


def question_claims(suite: str, question_id: str) -> pd.DataFrame:
    """The question's expected claims (claim_id, proposition), in claim ID order."""
    return query("SELECT claim_id, proposition FROM expected_claims WHERE suite = ? AND question_id = ? "
                 "ORDER BY claim_id", [suite, question_id])

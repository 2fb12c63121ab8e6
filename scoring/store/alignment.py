"""Free-text answers at scoring: every staged answer sentence aligned, the aligned sentences made claims.

After the records are staged (`scoring.store.records`: `stage_sentences`, `stage_sentence_citations`),
`align_staged` decides each sentence of a record without `claims` by every aligner that can
(`scoring.metrics.alignment.ALIGNERS`): a reviewer's decision (rows of `reviews`), a judge's cached
answer (rows of `judgements`, matched by the request key of `scoring.store.judges`), and the lexical
aligner, which decides every sentence. The first in precedence is applied. The result is
`stage_alignments` (all of them, `applied` marking the one used); the applied ones become the
record's generated claims in `stage_claims` and `stage_citations` (`alignment.CLAIM_RULES`), so the
engine scores them like recorded claims. Set-based SQL throughout; the reference is
`scoring.metrics.reference` (`lexical_alignment`, `sentence_claims`).
"""
from __future__ import annotations

import duckdb

from ..errors import Problems
from ..metrics.alignment import (LEXICAL_SUPPORT_THRESHOLD, LEXICAL_THRESHOLD, MIN_CONTENT_TOKENS, STOPWORDS,
                                 UNLABELLED_ID)


def normalised(expr: str) -> str:
    """SQL for a sentence's normalised text (`alignment.NORMALISATION`)."""
    return f"trim(regexp_replace(nfc_normalize({expr}), '[ \\t\\n\\r\\f\\v]+', ' ', 'g'), ' ')"


_STOPWORDS = "[" + ", ".join(f"'{w}'" for w in sorted(STOPWORDS)) + "]"


def tokens(expr: str) -> str:
    """SQL for a text's distinct content tokens (`alignment.LEXICAL_RULES`)."""
    return (f"list_distinct(list_filter(regexp_extract_all(lower({expr}), '[\\pL\\pN]+'), "
            f"lambda t: NOT list_contains({_STOPWORDS}, t)))")


REQUEST_KEY = (
    "sha256(concat_ws(chr(10), j.declaration_hash, f.question_id, q.text, f.norm, "
    "array_to_string(f.citations, chr(9)), coalesce(c.claims, '')))"
)
"""The cache key of a sentence's request to judge `j` (`scoring.store.judges.request_key`): the judge's
declaration hash, the question ID and text, the normalised sentence, its citations joined by tabs,
and the question's claims as `id<TAB>proposition` lines in claim ID order, joined by line breaks."""

PRECEDENCE = "CASE aligner WHEN 'human' THEN 0 WHEN 'judge' THEN 1 ELSE 2 END"

ALIGN = f"""
CREATE OR REPLACE TEMP TABLE stage_alignments AS
WITH free AS (
  SELECT s.run_id, r.suite, s.question_id, s.sentence, s.text, s.citations, {normalised("s.text")} AS norm
  FROM stage_sentences s JOIN stage_runs r ON r.run_id = s.run_id
  WHERE s.free
),
question_claims AS (
  SELECT suite, question_id, list(claim_id) AS claim_ids,
         string_agg(claim_id || chr(9) || coalesce(proposition, ''), chr(10) ORDER BY claim_id) AS claims
  FROM expected_claims GROUP BY ALL
),
human AS (
  -- reviewers' latest decisions that agree (status applied): one row per sentence
  SELECT suite, question_id, {normalised("sentence")} AS norm, any_value(outcome) AS outcome,
         any_value(coalesce(list_sort(claim_ids), [])) AS claim_ids,
         string_agg(DISTINCT reviewer, ', ' ORDER BY reviewer) AS decided_by,
         string_agg(note, '; ' ORDER BY reviewer) AS rationale
  FROM reviews WHERE kind = 'alignment' AND status = 'applied'
  GROUP BY suite, question_id, {normalised("sentence")}
),
by_human AS (
  SELECT f.*, 'human' AS aligner, h.decided_by, h.outcome, h.claim_ids, NULL::DOUBLE AS confidence, h.rationale,
         0 AS judge_position, NULL::VARCHAR[] AS support, NULL::VARCHAR AS judgement_key
  FROM free f JOIN human h ON h.suite = f.suite AND h.question_id = f.question_id AND h.norm = f.norm
),
by_judge AS (
  SELECT f.*, 'judge' AS aligner, j.judge AS decided_by, g.outcome, list_sort(g.claim_ids) AS claim_ids,
         g.confidence, g.rationale, j.position AS judge_position, g.support, g.key AS judgement_key
  FROM free f
  JOIN judges j ON j.suite = f.suite
  JOIN questions q ON q.suite = f.suite AND q.question_id = f.question_id
  LEFT JOIN question_claims c ON c.suite = f.suite AND c.question_id = f.question_id
  JOIN judgements g ON g.suite = f.suite AND g.judge = j.judge AND g.key = {REQUEST_KEY}
  -- a cached answer naming a claim the question does not have (an edited cache) decides nothing
  WHERE g.outcome <> 'claims' OR len(list_filter(g.claim_ids,
        lambda x: NOT list_contains(coalesce(c.claim_ids, []), x))) = 0
),
overlap_rows AS (
  SELECT f.run_id, f.question_id, f.sentence, w.words, p.claim_id,
         CASE WHEN len(p.wanted) = 0 THEN 0.0 ELSE len(list_intersect(w.words, p.wanted)) / len(p.wanted) END
           AS overlap
  FROM free f
  JOIN (SELECT run_id, question_id, sentence, {tokens("norm")} AS words FROM free) w
    ON w.run_id = f.run_id AND w.question_id = f.question_id AND w.sentence = f.sentence
  LEFT JOIN (SELECT suite, question_id, claim_id, {tokens("coalesce(proposition, '')")} AS wanted
             FROM expected_claims) p ON p.suite = f.suite AND p.question_id = f.question_id
),
lexical AS (
  SELECT run_id, question_id, sentence, any_value(words) AS words, coalesce(max(overlap), 0.0) AS best,
         coalesce(list_sort(list(claim_id) FILTER (WHERE overlap >= $threshold)), []) AS matched
  FROM overlap_rows GROUP BY ALL
),
cited AS (  -- each citation of a sentence, in order, with the cited document's tokens
  SELECT c.run_id, c.question_id, c.sentence, c.pos, d.words
  FROM (SELECT run_id, suite, question_id, sentence, unnest(citations) AS doc_id,
               generate_subscripts(citations, 1) AS pos FROM free) c
  LEFT JOIN (SELECT suite, doc_id, {tokens("coalesce(title, '') || ' ' || text")} AS words FROM documents
             WHERE doc_id IN (SELECT unnest(citations) FROM free)) d ON d.suite = c.suite AND d.doc_id = c.doc_id
),
lexical_support AS (  -- `alignment.LEXICAL_SUPPORT_RULES`: partial or none, never full
  SELECT c.run_id, c.question_id, c.sentence,
         list(CASE WHEN len(x.words) > 0 AND len(list_intersect(x.words, coalesce(c.words, [])))
                        >= $support_threshold * len(x.words) THEN 'partial' ELSE 'none' END ORDER BY c.pos) AS support
  FROM cited c JOIN lexical x ON x.run_id = c.run_id AND x.question_id = c.question_id AND x.sentence = c.sentence
  GROUP BY ALL
),
by_lexical AS (
  SELECT f.*, 'lexical' AS aligner, 'lexical' AS decided_by,
         CASE WHEN len(x.matched) > 0 THEN 'claims'
              WHEN len(f.citations) = 0 AND len(x.words) < $min_tokens THEN 'no_claim'
              ELSE 'unlabelled' END AS outcome,
         x.matched AS claim_ids,
         CASE WHEN len(x.matched) > 0 THEN x.best ELSE 1 - x.best END AS confidence,
         'token overlap ' || round(x.best, 3)::VARCHAR AS rationale, 0 AS judge_position,
         coalesce(s.support, []) AS support, NULL::VARCHAR AS judgement_key
  FROM free f JOIN lexical x ON x.run_id = f.run_id AND x.question_id = f.question_id AND x.sentence = f.sentence
  LEFT JOIN lexical_support s ON s.run_id = f.run_id AND s.question_id = f.question_id AND s.sentence = f.sentence
),
every AS (
  SELECT * FROM by_human UNION ALL BY NAME SELECT * FROM by_judge UNION ALL BY NAME SELECT * FROM by_lexical
)
SELECT run_id, suite, question_id, sentence, text, citations, aligner, decided_by, outcome,
       CASE WHEN outcome = 'claims' THEN claim_ids ELSE [] END AS claim_ids, confidence, rationale,
       row_number() OVER (PARTITION BY run_id, question_id, sentence
                          ORDER BY {PRECEDENCE}, judge_position) = 1 AS applied,
       bool_or(aligner = 'human') OVER (PARTITION BY run_id, question_id, sentence) AS reviewed,
       support, judgement_key
FROM every
"""

CLAIMED = f"""
CREATE OR REPLACE TEMP TABLE aligned_claims AS
WITH applied AS (
  SELECT run_id, question_id, sentence, text, aligner,
         CASE WHEN outcome = 'claims' THEN claim_ids ELSE ['{UNLABELLED_ID.format(sentence="")}' || sentence::VARCHAR] END
           AS ids
  FROM stage_alignments WHERE applied AND outcome <> 'no_claim'
),
members AS (
  SELECT run_id, question_id, sentence, text, aligner, unnest(ids) AS claim_id FROM applied
)
SELECT run_id, question_id, claim_id,
       (row_number() OVER (PARTITION BY run_id, question_id ORDER BY min(sentence), claim_id) - 1)::INTEGER
         AS position,
       string_agg(text, ' ' ORDER BY sentence) AS text,
       list(sentence ORDER BY sentence) AS sentences,
       -- the least reviewed aligner among its sentences
       CASE WHEN bool_or(aligner = 'lexical') THEN 'lexical' WHEN bool_or(aligner = 'judge') THEN 'judge'
            ELSE 'human' END AS aligned_by
FROM members GROUP BY run_id, question_id, claim_id
"""

CLAIM_CITATIONS = """
CREATE OR REPLACE TEMP TABLE aligned_citations AS
WITH cited AS (
  SELECT a.run_id, a.question_id, a.claim_id, c.sentence, c.position AS cite_pos, c.doc_id, c.unit_id
  FROM (SELECT run_id, question_id, claim_id, unnest(sentences) AS sentence FROM aligned_claims) a
  JOIN stage_sentence_citations c
    ON c.run_id = a.run_id AND c.question_id = a.question_id AND c.sentence = a.sentence
),
firsts AS (  -- the union: each cited ID once, at its first citation
  SELECT * FROM cited
  QUALIFY row_number() OVER (PARTITION BY run_id, question_id, claim_id, doc_id ORDER BY sentence, cite_pos) = 1
)
SELECT run_id, question_id, claim_id,
       (row_number() OVER (PARTITION BY run_id, question_id, claim_id ORDER BY sentence, cite_pos) - 1)::INTEGER
         AS position,
       doc_id, unit_id,
       row_number() OVER (PARTITION BY run_id, question_id, claim_id, unit_id ORDER BY sentence, cite_pos) = 1
         AS counted
FROM firsts
"""


def align_staged(con: duckdb.DuckDBPyConnection, problems: Problems, paths: dict[str, str]) -> None:
    """`stage_alignments` for every sentence of a record without claims, and those records' generated
    claims appended to `stage_claims` and `stage_citations`; an answer whose aligned sentences make
    more claims than its suite's `max_claims` is a problem of its record's line (`paths`: run -> file)."""
    con.execute(ALIGN, {"threshold": LEXICAL_THRESHOLD, "min_tokens": MIN_CONTENT_TOKENS,
                        "support_threshold": LEXICAL_SUPPORT_THRESHOLD})
    con.execute(CLAIMED)
    con.execute(CLAIM_CITATIONS)
    for run_id, line, question, n, bound in con.execute("""
        SELECT a.run_id, r.line, a.question_id, count(*), any_value(x.max_claims)
        FROM aligned_claims a
        JOIN stage_records r ON r.run_id = a.run_id AND r.question_id = a.question_id
        JOIN stage_runs s ON s.run_id = a.run_id JOIN suites x ON x.suite = s.suite
        GROUP BY a.run_id, r.line, a.question_id HAVING count(*) > any_value(x.max_claims)
        ORDER BY 1, 2 LIMIT 1000""").fetchall():
        problems.add(f"aligned, the sentences make {n} claims, more than the suite's max_claims ({bound}); raise "
                     "max_claims in suite.json or merge sentences", "answer_sentences", ..., path=paths[run_id],
                     line=line, question=question)
    con.execute("""
        INSERT INTO stage_claims BY NAME
        SELECT a.run_id, a.question_id, a.claim_id, a.position, a.text,
               coalesce(c.citations, []) AS citations
        FROM aligned_claims a
        LEFT JOIN (SELECT run_id, question_id, claim_id, list(doc_id ORDER BY position) AS citations
                   FROM aligned_citations GROUP BY ALL) c
          ON c.run_id = a.run_id AND c.question_id = a.question_id AND c.claim_id = a.claim_id
    """)
    con.execute("INSERT INTO stage_citations BY NAME SELECT * FROM aligned_citations")


def write_alignments(con: duckdb.DuckDBPyConnection) -> None:
    """The staged sentences and alignments into `answer_sentences` and `alignments`, and each generated
    claim's aligner into `claims.aligned_by` (after `score_staged` wrote the claims)."""
    con.execute("INSERT INTO answer_sentences BY NAME SELECT * FROM stage_sentences")
    con.execute("INSERT INTO alignments BY NAME SELECT * EXCLUDE (suite) FROM stage_alignments")
    con.execute("""
        UPDATE claims SET aligned_by = a.aligned_by FROM aligned_claims a
        WHERE claims.run_id = a.run_id AND claims.question_id = a.question_id AND claims.claim_id = a.claim_id""")


__all__ = ["REQUEST_KEY", "align_staged", "normalised", "tokens", "write_alignments"]

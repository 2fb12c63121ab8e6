"""The set-based SQL engine: scores every (run, question) pair of whole tables in one query.

The caller provides these relations (tables or views) on a DuckDB connection; `store` and
`trec` each build them from their own inputs:

    eval_pairs(run_id, suite, question_id, k, status)   status: ok | missing | failed; one row
                                                         per pair and cutoff (WHOLE_RANKING = none)
    eval_suites(suite, max_claims)                       the most claims an answer may make: what a
                                                         failed or missing record is charged, pooled
                                                         (absent: the format's bound, MAX_CLAIMS)
    eval_labels(suite, question_id, doc_id, grade)       graded relevance labels
    eval_support(suite, question_id, claim_id, doc_id)   expected claims and the documents that fully
                                                         support them
    eval_partial_support(suite, question_id, claim_id, doc_id)
                                                         documents that only partly support an expected
                                                         claim (a claim may have only these)
    eval_claim_labels(suite, question_id, claim_id, expected)
                                                         every labelled claim: expected (Coverage's
                                                         denominator) or assessed (a claim a run made
                                                         whose support was judged: Support only); the
                                                         support views hold both kinds' documents
    eval_documents(suite, doc_id, access)                access: VARCHAR[] ([] = public)
    eval_callers(suite, question_id, caller)             caller: VARCHAR[] or NULL (unrestricted)
    eval_retrieved(run_id, question_id, rank, doc_id)    ranks >= 1, unique per pair; gaps allowed
                                                         (a rank is a context slot, see docs/formats.md);
                                                         every slot within k, and beyond k at least the
                                                         judged ones (condensed lists reach past k)
    eval_claims(run_id, question_id, claim_id, position)
    eval_citations(run_id, question_id, claim_id, position, doc_id)

Formulas are keyed by the registry (`scoring.metrics`); definitions live there. The reference
implementation in `scoring.metrics.reference` must agree with every query here (property-tested).
"""
from __future__ import annotations

from .reference import MAX_CLAIMS, PARTIAL_REASON, REASONS
from .registry import JUDGED_ONLY_KEYS, PARTIAL_WEIGHT, RANKING_KEYS, REGISTRY

WHOLE_RANKING = 2**31 - 1
"""The cutoff that stands for "no cutoff": every retrieved document counts."""

def restricted(caller: str = "q.caller", access: str = "d.access") -> str:
    """The permission rule over a question's caller groups (NULL = unrestricted) and a document's
    access groups ([] = public), as SQL over the two given columns: the caller may not see it."""
    return f"{caller} IS NOT NULL AND len({access}) > 0 AND len(list_intersect({access}, {caller})) = 0"


RESTRICTED = restricted()
"""The permission rule over a question `q` and a document `d`."""

# Per-pair ingredients: n_hits, n_relevant, k, first_rank, dcg, idcg, ap_sum, and over the condensed list
# (judged documents only) c_hits, c_dcg, c_ap_sum, with bpref_sum (retrieval);
# status, n_generated (claims of an ok record), n_supported, n_expected, n_expected_supported, and their graded
# (weighted) counts n_supported_graded, n_expected_supported_graded,
# answerable, asks (the question asks for an answer: `metrics.ASKS_ANSWER`), n_disclosed (answer).
FORMULAS: dict[str, str] = {
    "precision": "n_hits / k",
    "recall": "n_hits / n_relevant",
    "rr": "coalesce(1 / first_rank, 0.0)",
    "ndcg": "CASE WHEN idcg > 0 THEN dcg / idcg ELSE 0.0 END",
    "ap": "ap_sum / n_relevant",
    "f1": "CASE WHEN n_hits = 0 THEN 0.0 ELSE 2 * (n_hits / k) * (n_hits / n_relevant) "
    "/ ((n_hits / k) + (n_hits / n_relevant)) END",
    "success": "CASE WHEN n_hits > 0 THEN 1.0 ELSE 0.0 END::DOUBLE",
    "judged": "CASE WHEN n_retrieved > 0 THEN n_judged / n_retrieved END",
    "precision_condensed": "c_hits / k",
    "ndcg_condensed": "CASE WHEN idcg > 0 THEN c_dcg / idcg ELSE 0.0 END",
    "ap_condensed": "c_ap_sum / n_relevant",
    "bpref": "bpref_sum / n_relevant",
    "support": "CASE WHEN NOT asks THEN NULL WHEN status <> 'ok' THEN 0.0 WHEN n_generated > 0 "
    "THEN n_supported / n_generated END",
    "coverage": "CASE WHEN n_expected > 0 THEN n_expected_supported / n_expected END",
    "support_graded": "CASE WHEN NOT asks THEN NULL WHEN status <> 'ok' THEN 0.0 WHEN n_generated > 0 "
    "THEN n_supported_graded / n_generated END",
    "coverage_graded": "CASE WHEN n_expected > 0 THEN n_expected_supported_graded / n_expected END",
    "abstention_correct": "CASE WHEN asks AND NOT answerable THEN status = 'ok' AND n_generated = 0 END",
    "false_abstention": "CASE WHEN asks AND answerable THEN status <> 'ok' OR n_generated = 0 END",
    "disclosures": "n_disclosed",
}
assert set(FORMULAS) == {m.key for m in REGISTRY}, "every registry metric needs exactly one SQL formula"


CLAIM_WEIGHT = (f"CASE WHEN len(reasons) = 0 THEN 1.0 WHEN reasons = ['{PARTIAL_REASON}'] "
                f"THEN {float(PARTIAL_WEIGHT)!r} ELSE 0.0 END")
"""What a verdict row counts in the graded metrics (`reference.claim_weight`): the registry's declared
`PARTIAL_WEIGHT`, a constant of the code, written into the SQL as a literal."""


def _metric_columns() -> str:
    cols = []
    for m in REGISTRY:
        expr = FORMULAS[m.key]
        if m.relevance_required:
            expr = f"CASE WHEN n_relevant = 0 THEN NULL ELSE ({expr}) END"
        cols.append(f"{expr} AS {m.key}")
    return ",\n    ".join(cols)


RANKING_CTES = """
rel_counts AS (
  SELECT suite, question_id, count(*) FILTER (WHERE grade >= $level) AS n_relevant,
         count(*) FILTER (WHERE grade < $level) AS n_nonrelevant
  FROM eval_labels GROUP BY suite, question_id
),
ranked AS (
  -- Only positively graded documents gain or hit at any level >= 1, so the window runs over those.
  SELECT p.run_id, p.question_id, p.k, r.rank, l.grade
  FROM eval_pairs p
  JOIN eval_retrieved r ON r.run_id = p.run_id AND r.question_id = p.question_id AND r.rank <= p.k
  JOIN eval_labels l ON l.suite = p.suite AND l.question_id = p.question_id AND l.doc_id = r.doc_id
  WHERE p.status = 'ok' AND l.grade > 0
),
gained AS (
  SELECT run_id, question_id, k,
         count(*) FILTER (WHERE grade >= $level) AS n_hits,
         min(rank) FILTER (WHERE grade >= $level) AS first_rank,
         sum(grade / log2(rank + 1)) AS dcg,
         sum(hits_so_far / rank) FILTER (WHERE grade >= $level) AS ap_sum
  FROM (SELECT *, sum(CASE WHEN grade >= $level THEN 1 ELSE 0 END) OVER (
          PARTITION BY run_id, question_id, k ORDER BY rank ROWS UNBOUNDED PRECEDING) AS hits_so_far
        FROM ranked)
  GROUP BY run_id, question_id, k
),
ideal AS (
  SELECT suite, question_id, grade,
         row_number() OVER (PARTITION BY suite, question_id ORDER BY grade DESC) AS pos
  FROM eval_labels WHERE grade > 0
),
ideal_dcg AS (
  SELECT p.run_id, p.question_id, p.k, sum(i.grade / log2(i.pos + 1)) AS idcg
  FROM eval_pairs p JOIN ideal i ON i.suite = p.suite AND i.question_id = p.question_id AND i.pos <= p.k
  GROUP BY p.run_id, p.question_id, p.k
)"""
"""The CTEs of the ranking metrics (`RANKING_KEYS`): relevant documents at their ranks, the ideal DCG."""

JUDGED_CTES = """
judged_list AS (
  -- The condensed list (Sakai 2007): the judged documents of each ranking, unjudged ones removed, at
  -- their rank in it (judged_rank); and for bpref the judged non-relevant documents ranked so far.
  SELECT *, row_number() OVER w AS judged_rank,
         sum(CASE WHEN grade >= $level THEN 1 ELSE 0 END) OVER w AS judged_hits_so_far,
         sum(CASE WHEN grade < $level THEN 1 ELSE 0 END) OVER w AS nonrelevant_so_far
  FROM (SELECT p.run_id, p.question_id, p.k, p.suite, r.rank, l.grade
        FROM eval_pairs p
        JOIN eval_retrieved r ON r.run_id = p.run_id AND r.question_id = p.question_id
        JOIN eval_labels l ON l.suite = p.suite AND l.question_id = p.question_id AND l.doc_id = r.doc_id
        WHERE p.status = 'ok')
  WINDOW w AS (PARTITION BY run_id, question_id, k ORDER BY rank ROWS UNBOUNDED PRECEDING)
),
condensed AS (
  -- P', nDCG', AP' over the first k of the condensed list; bpref over the first k slots, each relevant
  -- document's term 1 - min(n, R) / min(R, N) (1 when n = 0), n the judged non-relevant ranked above it
  SELECT j.run_id, j.question_id, j.k,
         count(*) FILTER (WHERE j.grade >= $level AND j.judged_rank <= j.k) AS c_hits,
         sum(j.grade / log2(j.judged_rank + 1)) FILTER (WHERE j.grade > 0 AND j.judged_rank <= j.k) AS c_dcg,
         sum(j.judged_hits_so_far / j.judged_rank) FILTER (WHERE j.grade >= $level AND j.judged_rank <= j.k)
           AS c_ap_sum,
         sum(CASE WHEN j.nonrelevant_so_far = 0 THEN 1.0
                  ELSE 1 - least(j.nonrelevant_so_far, c.n_relevant) / least(c.n_relevant, c.n_nonrelevant) END)
           FILTER (WHERE j.grade >= $level AND j.rank <= j.k) AS bpref_sum
  FROM judged_list j JOIN rel_counts c ON c.suite = j.suite AND c.question_id = j.question_id
  GROUP BY j.run_id, j.question_id, j.k
)"""
"""The CTEs of the metrics over judged documents only (`JUDGED_ONLY_KEYS`): the condensed list, bpref."""

_RETRIEVAL = """
retrieval AS (
  SELECT p.run_id, p.question_id, p.k, p.suite, p.status,
         coalesce(c.n_relevant, 0) AS n_relevant,
         coalesce(g.n_hits, 0) AS n_hits,
         g.first_rank,
         coalesce(g.dcg, 0.0) AS dcg,
         coalesce(i.idcg, 0.0) AS idcg,
         coalesce(g.ap_sum, 0.0) AS ap_sum,
{judged_columns}  FROM eval_pairs p
  LEFT JOIN rel_counts c ON c.suite = p.suite AND c.question_id = p.question_id
  LEFT JOIN gained g ON g.run_id = p.run_id AND g.question_id = p.question_id AND g.k = p.k
  LEFT JOIN ideal_dcg i ON i.run_id = p.run_id AND i.question_id = p.question_id AND i.k = p.k
{judged_join})"""


def retrieval_ctes(*, judged: bool = True) -> str:
    """The retrieval CTEs, ending in `retrieval` (one row per eval_pairs row, every metric's
    ingredients); without `judged`, those of `JUDGED_ONLY_KEYS` are left out (their ingredients read 0:
    select none of them)."""
    columns = """         coalesce(d.c_hits, 0) AS c_hits,
         coalesce(d.c_dcg, 0.0) AS c_dcg,
         coalesce(d.c_ap_sum, 0.0) AS c_ap_sum,
         coalesce(d.bpref_sum, 0.0) AS bpref_sum
""" if judged else "         0 AS c_hits, 0.0 AS c_dcg, 0.0 AS c_ap_sum, 0.0 AS bpref_sum\n"
    join = ("  LEFT JOIN condensed d ON d.run_id = p.run_id AND d.question_id = p.question_id AND d.k = p.k\n"
            if judged else "")
    parts = [RANKING_CTES, *([JUDGED_CTES] if judged else []),
             _RETRIEVAL.replace("{judged_columns}", columns).replace("{judged_join}", join)]
    return ",\n".join(part.strip("\n") for part in parts)


RETRIEVAL_CTES = retrieval_ctes()

VISIBLE_CTE = """
visible AS (
  SELECT p.run_id, p.question_id, p.k, r.doc_id
  FROM eval_pairs p
  JOIN eval_retrieved r ON r.run_id = p.run_id AND r.question_id = p.question_id AND r.rank <= p.k
)"""
"""The documents in each (run, question, k)'s first k slots."""

RESTRICTED_CTES = """
guarded AS (
  -- only a question with caller groups can show a restricted document
  SELECT p.run_id, p.question_id, p.k, p.suite, q.caller
  FROM eval_pairs p JOIN eval_callers q ON q.suite = p.suite AND q.question_id = p.question_id
  WHERE q.caller IS NOT NULL
),
shown AS (
  SELECT g.run_id, g.question_id, g.k, g.suite, g.caller, v.doc_id
  FROM guarded g JOIN visible v ON v.run_id = g.run_id AND v.question_id = g.question_id AND v.k = g.k
  UNION
  SELECT g.run_id, g.question_id, g.k, g.suite, g.caller, c.doc_id
  FROM guarded g JOIN eval_citations c ON c.run_id = g.run_id AND c.question_id = g.question_id
),
restricted AS (
  SELECT s.run_id, s.question_id, s.k, s.doc_id
  FROM shown s
  JOIN eval_documents d ON d.suite = s.suite AND d.doc_id = s.doc_id
  WHERE {restricted}
)""".replace("{restricted}", restricted("s.caller", "d.access"))
"""Which documents each (run, question, k) showed (visible in the first k slots, or cited) that its
caller may not see."""

EXPOSURE_CTES = f"{VISIBLE_CTE},{RESTRICTED_CTES}"

VERDICT_CTES = """
cited AS (
  SELECT c.run_id, c.question_id, p.k, c.claim_id, c.position, t.position AS cite_pos, t.doc_id,
         d.doc_id IS NOT NULL AS known,
         s.doc_id IS NOT NULL AS labelled,
         h.doc_id IS NOT NULL AS partial,
         v.doc_id IS NOT NULL AS is_visible,
         x.doc_id IS NOT NULL AS is_restricted,
         EXISTS (SELECT 1 FROM eval_claim_labels e WHERE e.suite = p.suite AND e.question_id = c.question_id
                 AND e.claim_id = c.claim_id) AS claim_labelled
  FROM eval_claims c
  JOIN eval_pairs p ON p.run_id = c.run_id AND p.question_id = c.question_id AND p.status = 'ok'
  LEFT JOIN eval_citations t ON t.run_id = c.run_id AND t.question_id = c.question_id AND t.claim_id = c.claim_id
  LEFT JOIN eval_documents d ON d.suite = p.suite AND d.doc_id = t.doc_id
  LEFT JOIN eval_support s ON s.suite = p.suite AND s.question_id = c.question_id
                          AND s.claim_id = c.claim_id AND s.doc_id = t.doc_id
  LEFT JOIN eval_partial_support h ON h.suite = p.suite AND h.question_id = c.question_id
                                  AND h.claim_id = c.claim_id AND h.doc_id = t.doc_id
  LEFT JOIN visible v ON v.run_id = c.run_id AND v.question_id = c.question_id AND v.k = p.k
                      AND v.doc_id = t.doc_id
  LEFT JOIN restricted x ON x.run_id = c.run_id AND x.question_id = c.question_id AND x.k = p.k
                         AND x.doc_id = t.doc_id
),
flags AS (
  SELECT run_id, question_id, k, claim_id, any_value(position) AS position,
         coalesce(list(doc_id ORDER BY cite_pos) FILTER (WHERE doc_id IS NOT NULL), []) AS citations,
         count(doc_id) = 0 AS no_citation,
         NOT bool_or(claim_labelled) AS unlabelled_claim,
         coalesce(bool_or(known AND NOT labelled AND NOT partial) FILTER (WHERE doc_id IS NOT NULL), false)
           AS citation_not_supporting,
         coalesce(bool_or(partial) FILTER (WHERE doc_id IS NOT NULL), false) AS citation_partial,
         coalesce(bool_or((labelled OR partial) AND NOT is_visible) FILTER (WHERE doc_id IS NOT NULL), false)
           AS citation_not_visible,
         coalesce(bool_or(NOT known) FILTER (WHERE doc_id IS NOT NULL), false) AS citation_unknown,
         coalesce(bool_or(is_restricted) FILTER (WHERE doc_id IS NOT NULL), false) AS citation_restricted
  FROM cited GROUP BY run_id, question_id, k, claim_id
),
verdicts AS (
  SELECT run_id, question_id, k, claim_id, position, citations,
         list_filter([{reasons}], lambda r: r IS NOT NULL) AS reasons
  FROM flags
)""".replace("{reasons}", ", ".join(f"CASE WHEN {r} THEN '{r}' END" for r in REASONS))
"""Every generated claim's reasons for not being supported (none: supported)."""


def _claim_ctes(restricted_from: str | None = None) -> str:
    """The exposure and verdict CTEs; `restricted_from` names a relation already holding `restricted`."""
    if restricted_from is None:
        return f"{EXPOSURE_CTES},{VERDICT_CTES}"
    return f"{VISIBLE_CTE},\nrestricted AS (SELECT * FROM {restricted_from}),{VERDICT_CTES}"


def restricted_sql() -> str:
    """One row per (run, question, k, document) shown to a caller who may not see it."""
    return f"WITH {EXPOSURE_CTES}\nSELECT run_id, question_id, k, doc_id FROM restricted"


def verdicts_sql(restricted_from: str | None = None) -> str:
    """One row per generated claim of an `ok` record and cutoff k: citations (in order), reasons,
    supported, k (last, so the leading columns match the `claims` table). `restricted_from`: a
    relation holding `restricted_sql()`'s rows, computed once for several queries."""
    return f"""WITH {_claim_ctes(restricted_from)}
SELECT run_id, question_id, claim_id, position, citations, reasons, len(reasons) = 0 AS supported, k
FROM verdicts"""


def retrieval_sql(extra_select: str = "", *, judged: bool = True) -> str:
    """One row per eval_pairs row: retrieval ingredients and every metric judged against the labels at
    `k` (`RANKING_KEYS`, then with `judged` `JUDGED_ONLY_KEYS`). The first need in eval_labels and
    eval_retrieved only the relevant documents (at their ranks), the second every judged document of
    the ranking."""
    cols = ",\n    ".join(
        f"CASE WHEN n_relevant = 0 THEN NULL ELSE ({FORMULAS[key]}) END AS {key}"
        for key in (*RANKING_KEYS, *(JUDGED_ONLY_KEYS if judged else ()))
    )
    return f"""WITH {retrieval_ctes(judged=judged)}
SELECT run_id, question_id, k, n_relevant, n_hits{extra_select},
    {cols}
FROM retrieval"""


def question_scores_sql(*, verdicts_from: str | None = None, restricted_from: str | None = None) -> str:
    """One row per eval_pairs row with every registry metric (column = registry key) and the
    counts that pooled aggregates need. Bind `$level` (relevance level, >= 1). `verdicts_from` and
    `restricted_from` name relations holding `verdicts_sql()` and `restricted_sql()` rows, when the
    caller computed them once already."""
    if verdicts_from is None:
        claim_ctes = _claim_ctes(restricted_from)
    else:
        restricted_cte = (f"restricted AS (SELECT * FROM {restricted_from})" if restricted_from is not None
                          else EXPOSURE_CTES)
        claim_ctes = f"{restricted_cte},\nverdicts AS (SELECT * FROM {verdicts_from})"
    return f"""WITH {RETRIEVAL_CTES},
{claim_ctes},
assessed_ids AS (
  -- claims judged for support but not expected: they count for Support, never for Coverage
  SELECT p.run_id, p.question_id, p.k, e.claim_id FROM eval_pairs p
  JOIN eval_claim_labels e ON e.suite = p.suite AND e.question_id = p.question_id AND NOT e.expected
),
claim_counts AS (
  SELECT v.run_id, v.question_id, v.k, count(*) AS n_claims,
         count(*) FILTER (WHERE len(reasons) = 0) AS n_supported,
         coalesce(sum({CLAIM_WEIGHT}), 0.0) AS n_supported_graded,
         count(*) FILTER (WHERE len(reasons) = 0 AND a.claim_id IS NULL) AS n_expected_supported,
         coalesce(sum({CLAIM_WEIGHT}) FILTER (WHERE a.claim_id IS NULL), 0.0) AS n_expected_supported_graded
  FROM verdicts v LEFT JOIN assessed_ids a USING (run_id, question_id, k, claim_id)
  GROUP BY v.run_id, v.question_id, v.k
),
expected AS (
  SELECT suite, question_id, count(DISTINCT claim_id) FILTER (WHERE expected) AS n_expected,
         count(DISTINCT claim_id) AS n_labelled
  FROM eval_claim_labels GROUP BY suite, question_id
),
answerable AS (
  SELECT DISTINCT suite, question_id FROM eval_labels WHERE grade > 0
),
asking AS (
  -- a suite with labelled claims (expected or assessed) asks for answers
  SELECT DISTINCT suite FROM eval_claim_labels
),
disclosed AS (
  SELECT run_id, question_id, k, count(*) AS n_disclosed FROM restricted GROUP BY run_id, question_id, k
),
judged_counts AS (
  -- Judged@k: the documents within k that carry any label (0 and negative grades included)
  SELECT p.run_id, p.question_id, p.k, count(*) AS n_retrieved, count(l.doc_id) AS n_judged
  FROM eval_pairs p
  JOIN eval_retrieved r ON r.run_id = p.run_id AND r.question_id = p.question_id AND r.rank <= p.k
  LEFT JOIN eval_labels l ON l.suite = p.suite AND l.question_id = p.question_id AND l.doc_id = r.doc_id
  WHERE p.status = 'ok'
  GROUP BY p.run_id, p.question_id, p.k
),
joined AS (
  SELECT r.*,
         coalesce(cc.n_claims, 0) AS n_generated,
         coalesce(cc.n_supported, 0) AS n_supported,
         coalesce(e.n_expected, 0) AS n_expected,
         coalesce(e.n_labelled, 0) AS n_labelled,
         coalesce(cc.n_expected_supported, 0) AS n_expected_supported,
         coalesce(cc.n_supported_graded, 0.0) AS n_supported_graded,
         coalesce(cc.n_expected_supported_graded, 0.0) AS n_expected_supported_graded,
         a.question_id IS NOT NULL AS answerable,
         s.suite IS NOT NULL AS answers_asked,
         coalesce(m.max_claims, {MAX_CLAIMS}) AS max_claims,
         coalesce(d.n_disclosed, 0) AS n_disclosed,
         coalesce(j.n_retrieved, 0) AS n_retrieved,
         coalesce(j.n_judged, 0) AS n_judged
  FROM retrieval r
  LEFT JOIN claim_counts cc ON cc.run_id = r.run_id AND cc.question_id = r.question_id AND cc.k = r.k
  LEFT JOIN expected e ON e.suite = r.suite AND e.question_id = r.question_id
  LEFT JOIN answerable a ON a.suite = r.suite AND a.question_id = r.question_id
  LEFT JOIN asking s ON s.suite = r.suite
  LEFT JOIN eval_suites m ON m.suite = r.suite
  LEFT JOIN disclosed d ON d.run_id = r.run_id AND d.question_id = r.question_id AND d.k = r.k
  LEFT JOIN judged_counts j ON j.run_id = r.run_id AND j.question_id = r.question_id AND j.k = r.k
),
ingredients AS (
  SELECT *, n_labelled > 0 OR (NOT answerable AND answers_asked) AS asks FROM joined
)
SELECT run_id, question_id, k, status, answerable,
    {_metric_columns()},
    -- pooled Support charges a failed or missing record max_claims unsupported claims
    CASE WHEN status <> 'ok' AND asks THEN max_claims ELSE n_generated END AS n_claims,
    n_supported, n_expected, n_expected_supported, n_relevant, n_hits, n_judged, n_retrieved,
    n_supported_graded, n_expected_supported_graded
FROM ingredients"""


INPUT_COLUMNS: dict[str, str] = {
    "eval_pairs": "run_id VARCHAR, suite VARCHAR, question_id VARCHAR, k INTEGER, status VARCHAR",
    "eval_suites": "suite VARCHAR, max_claims INTEGER",
    "eval_labels": "suite VARCHAR, question_id VARCHAR, doc_id VARCHAR, grade INTEGER",
    "eval_support": "suite VARCHAR, question_id VARCHAR, claim_id VARCHAR, doc_id VARCHAR",
    "eval_partial_support": "suite VARCHAR, question_id VARCHAR, claim_id VARCHAR, doc_id VARCHAR",
    "eval_claim_labels": "suite VARCHAR, question_id VARCHAR, claim_id VARCHAR, expected BOOLEAN",
    "eval_documents": "suite VARCHAR, doc_id VARCHAR, access VARCHAR[]",
    "eval_callers": "suite VARCHAR, question_id VARCHAR, caller VARCHAR[]",
    "eval_retrieved": "run_id VARCHAR, question_id VARCHAR, rank INTEGER, doc_id VARCHAR",
    "eval_claims": "run_id VARCHAR, question_id VARCHAR, claim_id VARCHAR, position INTEGER",
    "eval_citations": "run_id VARCHAR, question_id VARCHAR, claim_id VARCHAR, position INTEGER, doc_id VARCHAR",
}


def load_inputs(con, rows: dict[str, list[tuple]]) -> None:
    """Create the engine's input relations as temporary tables from Python rows (tests, small
    batches). Relations absent from `rows` are created empty."""
    import pandas as pd

    for name, columns in INPUT_COLUMNS.items():
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} ({columns})")
        data = rows.get(name) or []
        if data:
            names = [c.split()[0] for c in columns.split(", ")]
            frame = pd.DataFrame(data, columns=names, dtype=object)
            con.register("_incoming", frame)
            con.execute(f"INSERT INTO {name} SELECT * FROM _incoming")
            con.unregister("_incoming")
    if not rows.get("eval_claim_labels"):  # every claim of the support relations, expected
        con.execute("""INSERT INTO eval_claim_labels SELECT DISTINCT suite, question_id, claim_id, true
                       FROM (SELECT suite, question_id, claim_id FROM eval_support
                             UNION ALL SELECT suite, question_id, claim_id FROM eval_partial_support)""")

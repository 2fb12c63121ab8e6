"""The DuckDB schema: the documented interface between scoring and the dashboard (docs/schema.md).

Every table is rewritten only by `ragslice refresh`; users may query them with their own SQL.
n/a is NULL, never 0.
"""
from __future__ import annotations

from ..metrics.registry import REGISTRY

SCHEMA_VERSION = 11
"""Per-record tables (records, retrieved, claims, question_scores) declare no PRIMARY KEY: a refresh
validates their keys before writing, and an index on tens of millions of rows would dominate the
write. Their keys are documented in docs/schema.md."""
"""2: chunks (the `chunks` table; chunk columns of `retrieved`; `claims.cited_docs`; `suites.unit`;
`runs.chunk_map`). A refresh rebuilds the scored tables of a database written by an older version.
3: rows in no particular order. 4: `suites.max_claims`; a failed or missing record's `n_claims` is the
suite's max_claims (pooled Support's charge); answer metrics n/a where a question asks for no answer.
5: Judged@k (`question_scores.judged`, `n_judged`, `n_retrieved`); reviews (`reviews`, `label_changes`,
`suites.labels_hash`, `runs.labels_hash`). 6: free-text answers (`answer_sentences`, `alignments`,
`judges`, `judgements`; `reviews.sentence`, `claim_ids`, `outcome`). 7: `suites.base_hash` (the suite's
files but its review files: a refresh that finds only new decisions applies them to the stored suite).
8: the metrics over judged documents only (`question_scores.precision_condensed`, `ndcg_condensed`,
`ap_condensed`, `bpref`: P'@k, nDCG'@k, AP'@k, Bpref@k). 9: `questions.cluster` (the source a question
was written from; clustered statistics resample whole clusters); review samples (`samples`;
`reviews.sample`); graded support labels (`expected_claims.partial_docs`, `reviews.support_grade`) and the
graded answer metrics (`question_scores.support_graded`, `coverage_graded`, `n_supported_graded`,
`n_expected_supported_graded`). 10: what a judge's answer cost and how it graded each citation
(`judgements.support`, `prompt_tokens`, `completion_tokens`, `cost_usd`, `latency_ms`), its repeated
answers (`judge_repeats`), and each alignment's citation grades and cached answer (`alignments.support`,
`judgement_key`); assessed claims (`assessed_claims`: claims runs made whose support was judged, counted
by Support and not by Coverage). 11: the coded layout: ranked slots are stored with integer codes
(`retrieved_slots`: a question by its `questions.position`, a document by its code in the dictionary
`document_codes`) and `retrieved` is a view with the columns it had."""

_SQL_TYPES = {"rate": "DOUBLE", "flag": "BOOLEAN", "count": "INTEGER"}
_METRIC_COLUMNS = ",\n    ".join(
    f"{m.key} {_SQL_TYPES[m.value]}"
    for m in REGISTRY
)

_JUDGE_ANSWER = """
    suite VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,
    line INTEGER NOT NULL,
    key VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    sentence VARCHAR NOT NULL,
    citations VARCHAR[] NOT NULL,
    outcome VARCHAR NOT NULL,
    claim_ids VARCHAR[] NOT NULL,
    confidence DOUBLE,
    rationale VARCHAR,
    answered_at VARCHAR,
    support VARCHAR[],
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    cost_usd DOUBLE,
    latency_ms DOUBLE"""
"""The columns of a judge's answer: a cached one (`judgements`), and a repeated one (`judge_repeats`)."""

TABLES: dict[str, str] = {
    "meta": """
    key VARCHAR PRIMARY KEY,
    value VARCHAR""",
    "suites": """
    suite VARCHAR PRIMARY KEY,
    version VARCHAR NOT NULL,
    corpus_version VARCHAR NOT NULL,
    rubric_version VARCHAR NOT NULL,
    description VARCHAR,
    n_documents INTEGER NOT NULL,
    n_questions INTEGER NOT NULL,
    files_hash VARCHAR NOT NULL,
    unit VARCHAR NOT NULL,
    max_claims INTEGER NOT NULL,
    labels_hash VARCHAR NOT NULL,
    base_hash VARCHAR NOT NULL""",
    "documents": """
    suite VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    version VARCHAR,
    title VARCHAR,
    text VARCHAR NOT NULL,
    access VARCHAR[] NOT NULL,
    PRIMARY KEY (suite, doc_id)""",
    "document_codes": """
    suite VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    doc_code INTEGER NOT NULL""",
    "questions": """
    suite VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    text VARCHAR NOT NULL,
    type VARCHAR NOT NULL,
    split VARCHAR NOT NULL,
    critical BOOLEAN NOT NULL,
    tags VARCHAR[] NOT NULL,
    caller VARCHAR[],
    answerable BOOLEAN NOT NULL,
    disputed VARCHAR,
    n_relevant INTEGER NOT NULL,
    n_expected INTEGER NOT NULL,
    cluster VARCHAR,
    PRIMARY KEY (suite, question_id)""",
    "reviews": """
    suite VARCHAR NOT NULL,
    reviewer VARCHAR NOT NULL,
    line INTEGER NOT NULL,
    decided_at TIMESTAMP NOT NULL,
    kind VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    doc_id VARCHAR,
    claim_id VARCHAR,
    grade INTEGER,
    supports BOOLEAN,
    note VARCHAR,
    status VARCHAR NOT NULL,
    sentence VARCHAR,
    claim_ids VARCHAR[],
    outcome VARCHAR,
    sample VARCHAR,
    support_grade VARCHAR""",
    "samples": """
    suite VARCHAR NOT NULL,
    sample VARCHAR NOT NULL,
    line INTEGER NOT NULL,
    unit VARCHAR NOT NULL,
    seed BIGINT NOT NULL,
    runs VARCHAR[] NOT NULL,
    strata VARCHAR[] NOT NULL,
    size INTEGER NOT NULL,
    drawn_at VARCHAR NOT NULL,
    frame INTEGER NOT NULL,
    position INTEGER NOT NULL,
    stratum VARCHAR NOT NULL,
    population INTEGER NOT NULL,
    drawn INTEGER NOT NULL,
    inclusion DOUBLE NOT NULL,
    run_id VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    sentence INTEGER,
    text VARCHAR,
    doc_id VARCHAR""",
    "judges": """
    suite VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    kind VARCHAR NOT NULL,
    declaration_hash VARCHAR NOT NULL,
    declaration JSON NOT NULL,
    PRIMARY KEY (suite, judge)""",
    "judgements": _JUDGE_ANSWER,
    "judge_repeats": _JUDGE_ANSWER + """,
    repeat INTEGER NOT NULL,
    sample_seed INTEGER NOT NULL""",
    "label_changes": """
    suite VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    claim_id VARCHAR,
    original VARCHAR,
    reviewed VARCHAR NOT NULL,
    reviewers VARCHAR[] NOT NULL""",
    "chunks": """
    suite VARCHAR NOT NULL,
    run_id VARCHAR,
    chunk_id VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    doc_version VARCHAR NOT NULL,
    text VARCHAR,
    start_offset INTEGER,
    end_offset INTEGER,
    line INTEGER NOT NULL""",
    "labels": """
    suite VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    grade INTEGER NOT NULL,
    PRIMARY KEY (suite, question_id, doc_id)""",
    "expected_claims": """
    suite VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    claim_id VARCHAR NOT NULL,
    proposition VARCHAR,
    docs VARCHAR[] NOT NULL,
    partial_docs VARCHAR[] NOT NULL,
    PRIMARY KEY (suite, question_id, claim_id)""",
    "assessed_claims": """
    suite VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    claim_id VARCHAR NOT NULL,
    docs VARCHAR[] NOT NULL,
    partial_docs VARCHAR[] NOT NULL,
    PRIMARY KEY (suite, question_id, claim_id)""",
    "runs": """
    run_id VARCHAR PRIMARY KEY,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    corpus_version VARCHAR NOT NULL,
    created_at VARCHAR NOT NULL,
    code_revision VARCHAR NOT NULL,
    retrieval JSON NOT NULL,
    k INTEGER NOT NULL,
    prompt_revision VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    generation JSON NOT NULL,
    rubric_version VARCHAR NOT NULL,
    run_group VARCHAR,
    repeat INTEGER,
    notes VARCHAR,
    manifest JSON NOT NULL,
    files_hash VARCHAR NOT NULL,
    n_records INTEGER NOT NULL,
    n_missing INTEGER NOT NULL,
    n_failed INTEGER NOT NULL,
    chunk_map VARCHAR,
    labels_hash VARCHAR""",
    "records": """
    run_id VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    line INTEGER NOT NULL,
    answer VARCHAR,
    context VARCHAR,
    latency_ms DOUBLE,
    cost_usd DOUBLE,
    error VARCHAR""",
    "retrieved_slots": """
    run_id VARCHAR NOT NULL,
    question_code INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    doc_code INTEGER NOT NULL,
    grade INTEGER,
    relevant BOOLEAN NOT NULL,
    visible BOOLEAN NOT NULL,
    restricted BOOLEAN NOT NULL,
    chunk_id VARCHAR,
    doc_version VARCHAR,
    counted BOOLEAN NOT NULL,
    chunk_text VARCHAR""",
    "claims": """
    run_id VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    claim_id VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    text VARCHAR,
    citations VARCHAR[] NOT NULL,
    supported BOOLEAN,
    reasons VARCHAR[],
    cited_docs VARCHAR[] NOT NULL,
    aligned_by VARCHAR""",
    "answer_sentences": """
    run_id VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    sentence INTEGER NOT NULL,
    text VARCHAR NOT NULL,
    citations VARCHAR[] NOT NULL,
    free BOOLEAN NOT NULL""",
    "alignments": """
    run_id VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    sentence INTEGER NOT NULL,
    text VARCHAR NOT NULL,
    citations VARCHAR[] NOT NULL,
    aligner VARCHAR NOT NULL,
    decided_by VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,
    claim_ids VARCHAR[] NOT NULL,
    confidence DOUBLE,
    rationale VARCHAR,
    applied BOOLEAN NOT NULL,
    reviewed BOOLEAN NOT NULL,
    support VARCHAR[],
    judgement_key VARCHAR""",
    "question_scores": f"""
    run_id VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    k INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    answerable BOOLEAN NOT NULL,
    {_METRIC_COLUMNS},
    n_claims INTEGER NOT NULL,
    n_supported INTEGER NOT NULL,
    n_expected INTEGER NOT NULL,
    n_expected_supported INTEGER NOT NULL,
    n_relevant INTEGER NOT NULL,
    n_hits INTEGER NOT NULL,
    n_judged INTEGER NOT NULL,
    n_retrieved INTEGER NOT NULL,
    n_supported_graded DOUBLE NOT NULL,
    n_expected_supported_graded DOUBLE NOT NULL,
    missing BOOLEAN NOT NULL,
    failed BOOLEAN NOT NULL,
    latency_ms DOUBLE,
    cost_usd DOUBLE""",
    "metrics": """
    key VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    family VARCHAR NOT NULL,
    level VARCHAR NOT NULL,
    numerator VARCHAR NOT NULL,
    denominator VARCHAR NOT NULL,
    na_rule VARCHAR NOT NULL,
    failure VARCHAR NOT NULL,
    higher_is_better BOOLEAN NOT NULL,
    pooled_numerator VARCHAR,
    pooled_denominator VARCHAR,
    pooling VARCHAR NOT NULL,
    help VARCHAR NOT NULL,
    aliases VARCHAR[] NOT NULL""",
    "refresh_log": """
    refreshed_at TIMESTAMP NOT NULL,
    workspace VARCHAR NOT NULL,
    runs_scored INTEGER NOT NULL,
    runs_skipped INTEGER NOT NULL,
    runs_removed INTEGER NOT NULL,
    records INTEGER NOT NULL,
    seconds DOUBLE NOT NULL""",
}


VERDICT_TABLES: dict[str, str] = {
    "verdicts": """
    verdict_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    baseline VARCHAR NOT NULL,
    candidate VARCHAR NOT NULL,
    baseline_runs VARCHAR[] NOT NULL,
    candidate_runs VARCHAR[] NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    policy_name VARCHAR NOT NULL,
    policy_hash VARCHAR NOT NULL,
    policy_text VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL,
    gates JSON NOT NULL,
    verdict_without_disputed VARCHAR,
    warnings JSON NOT NULL,
    labels_hash VARCHAR""",
    "heldout_log": """
    created_at TIMESTAMP NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    baseline VARCHAR NOT NULL,
    candidate VARCHAR NOT NULL,
    policy_hash VARCHAR,
    n_heldout INTEGER NOT NULL,
    comparison_key VARCHAR""",
}
"""Tables `scoring.decide.verdicts.record` creates (if absent) in the database, outside a refresh;
documented in docs/schema.md."""


VIEWS: dict[str, str] = {
    # a slot's question is the question at its position in the run's suite, its document the
    # suite's document of its code: the codes a refresh wrote with the rows (`RETRIEVED_INSERT`)
    "retrieved": """
        SELECT t.run_id, q.question_id, t.rank, d.doc_id, t.grade, t.relevant, t.visible, t.restricted,
               t.chunk_id, t.doc_version, t.counted, t.chunk_text
        FROM retrieved_slots t
        JOIN runs r ON r.run_id = t.run_id
        JOIN questions q ON q.suite = r.suite AND q.position = t.question_code
        JOIN document_codes d ON d.suite = r.suite AND d.doc_code = t.doc_code""",
}
"""Relations kept as views over coded tables, with the names and columns users query (docs/schema.md)."""


def create_schema(con) -> None:
    """Create every table (if absent), then every view, on a read-write connection."""
    for name, columns in TABLES.items():
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns}\n)")
    for name, sql in VIEWS.items():
        if _kind(con, name) is None:  # present, it is this schema's or an older one's (rebuilt by a refresh)
            con.execute(f"CREATE VIEW {name} AS {sql}")


def _kind(con, name: str, catalog: str = "current_database()") -> str | None:
    """'BASE TABLE', 'VIEW' or None: what `name` is in the catalog."""
    found = con.execute(f"SELECT table_type FROM information_schema.tables WHERE table_catalog = {catalog} "
                        "AND table_name = ?", [name]).fetchone()
    return None if found is None else found[0]


def drop_relation(con, name: str, *, temp: bool = False) -> None:
    """Drop the table or view `name` (an allow-listed name) of the current database, or with `temp` the
    temporary one, whichever it is."""
    kind = _kind(con, name, "'temp'" if temp else "current_database()")
    if kind is not None:
        con.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} {name}")


def table_names(con) -> set[str]:
    """The tables of the connection's current database (other attached databases are not looked at)."""
    return {name for (name,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database()").fetchall()}

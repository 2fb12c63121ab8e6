"""What the dashboard's pages read: queries through the one door to the database, cached, shaped
for the pages. The pages use `from dashboard import data` and `data.<name>`: this package's public
names, each defined in the module that holds its kind of read.

- `database`: the one door. Which file (`$RAGSLICE_DB`, the policy, review mode), read-only
  connections, both caches, `query` / `query_many`, the catalog (meta, suites, runs).
- `pair`: the two sides of a comparison and their per-question scores, read once and shared, and
  what `scoring.decide.aggregates` computes from them (headline, slices, aggregation choices).
- `deltas`: the per-question deltas of one metric, filtered and ordered.
- `questions`: one question, its labels, and what each run did on it.
- `releases`: each run's totals and configuration, the standing baseline, the history of releases.
- `verdicts`: the verdicts `ragslice compare --policy` recorded.
- `stats`: paired statistics and the live verdict (`scoring.decide.comparison`), and the slides.
- `labels`: unjudged documents, alignments, review decisions and what the reviews changed.
- `matrix`: one baseline against many candidates.

No scoring rule lives here: statuses and the rule of change come from `scoring.decide.change`,
aggregates from `scoring.decide.aggregates`, which sides may be compared from `scoring.decide.sides`,
statistics and verdicts from `scoring.decide.comparison` and `scoring.decide.gates`.
"""
from __future__ import annotations

from scoring.decide.sides import Compatibility, Side

from .database import (CATALOG, DB_ENV, DEFAULT_DB, METRIC_KEYS, POLICY_ENV, REVIEWER_ENV, WORKSPACE_ENV,
                       DatabaseMissing, Statement, db_path, meta, policy_path, query, query_many, review_mode, runs,
                       schema_problem, suites)
from .deltas import DELTA_COLUMNS, DELTA_ROWS, ORDERS, Deltas, deltas_csv, question_deltas, question_facets, \
    worst_regressions
from .labels import (ALIGNMENT_QUEUE_SQL, CORRECTED_COLUMNS, REVIEW_TABLES, alignment_facts, alignment_queue,
                     corrected_estimates, decisions_since,
                     disagreements, disputes, grade_scale, labels_hash, pool, rankings_of, record_decision,
                     refresh_status, relabelling, reviewer_agreement, reviews, sample_progress)
from .matrix import matrix_candidates, matrix_verdicts, release_matrix
from .pair import (SLICE_COLUMNS, STATUSES, aggregate, aggregates, aggregation_choices, compatibility, headline,
                   sides)
from .questions import (CLAIM_COLUMNS, OPTIONAL_COLUMNS, QUESTION_CHOICES, RETRIEVED_COLUMNS, SENTENCES_SQL,
                        answer_change, answer_sentences, diagnoses, question, question_choices, question_claims,
                        question_labels, question_pair, question_runs)
from .releases import (configuration_changes, group_spread, manifest_diff, marked_releases, pinned_baseline,
                       release_history, run_stats)
from .stats import (P_COLUMNS, SLICE_FAMILIES, PolicyInfo, Statistics, StatisticsUnavailable, presentation,
                    release_statistics, statistics, statistics_rows)
from .verdicts import (GATE_COLUMNS, HISTORY_COLUMNS, SUITE_VERDICT_COLUMNS, gates_frame, latest_verdict,
                       newest_verdict, recorded_verdicts, suite_verdicts, verdict_history)

__all__ = [
    "ALIGNMENT_QUEUE_SQL", "CATALOG", "CLAIM_COLUMNS", "CORRECTED_COLUMNS", "DB_ENV", "DEFAULT_DB", "DELTA_COLUMNS", "DELTA_ROWS",
    "GATE_COLUMNS", "HISTORY_COLUMNS", "METRIC_KEYS", "OPTIONAL_COLUMNS", "ORDERS", "POLICY_ENV", "P_COLUMNS",
    "QUESTION_CHOICES", "RETRIEVED_COLUMNS", "REVIEWER_ENV", "REVIEW_TABLES", "SENTENCES_SQL", "SLICE_COLUMNS",
    "SLICE_FAMILIES", "STATUSES", "SUITE_VERDICT_COLUMNS", "WORKSPACE_ENV", "Compatibility", "DatabaseMissing",
    "Deltas", "PolicyInfo", "Side", "Statement", "Statistics", "StatisticsUnavailable", "aggregate", "aggregates",
    "aggregation_choices", "alignment_facts", "alignment_queue", "answer_change", "answer_sentences", "compatibility",
    "configuration_changes", "corrected_estimates", "db_path", "decisions_since", "deltas_csv", "diagnoses", "disagreements", "disputes",
    "gates_frame", "grade_scale", "group_spread", "headline", "labels_hash", "latest_verdict", "manifest_diff", "marked_releases",
    "matrix_candidates",
    "matrix_verdicts", "meta", "newest_verdict", "pinned_baseline", "policy_path", "pool", "presentation", "query",
    "query_many", "question", "question_choices", "question_claims", "question_deltas", "question_facets",
    "question_labels", "question_pair", "question_runs", "rankings_of", "record_decision", "recorded_verdicts",
    "refresh_status", "relabelling", "release_history", "release_matrix", "release_statistics", "review_mode",
    "reviewer_agreement", "reviews", "run_stats", "sample_progress", "runs", "schema_problem", "sides", "statistics", "statistics_rows",
    "suite_verdicts", "suites", "verdict_history", "worst_regressions",
]

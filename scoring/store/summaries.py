"""Tables derived from the scored tables, laid out for fast reading (docs/schema.md).

`build_summaries(con)` (re)creates them from `question_scores`, `questions`, `records` and `runs`
inside the caller's open transaction; a refresh calls it after writing the scored tables and
replaces only the rows of the runs it scored or removed, and of the questions it re-scored. They hold nothing that those tables do
not: a reader that finds a summary absent computes the same rows from the scored tables
(`run_totals_sql` is that query for `run_totals`), only slower.

- `scores_by_position`: every `question_scores` row with the question's `position` in its suite in
  place of its `question_id`, written run by run in `position` order. One run's scores are then
  consecutive rows: reading them skips the other runs' row groups and needs no join on IDs.
- `run_totals`: one row per run: questions scored, missing and failed records, latency p50 / p95
  and total / mean cost over its records, and the macro mean of every registry metric.
- `slice_sums`: one row per run and slice of each family of `SLICE_FAMILIES` (all; answerable /
  unanswerable; each question type; each split): the run's questions in the slice, and per
  registry metric the sum of its values and the number of questions it scores (`<metric>__sum`,
  `<metric>__n`; the macro mean is their ratio) and, for a metric that pools, the sums of its
  pooled numerator and denominator columns over those scored questions (`<metric>__num`,
  `<metric>__den`; NULL when none is scored).
"""
from __future__ import annotations

import duckdb

from ..metrics.registry import REGISTRY
from ..metrics.slices import PARTITIONS, family
from .schema import table_names

SUMMARY_TABLES: tuple[str, ...] = ("scores_by_position", "run_totals", "slice_sums")
SLICE_FAMILIES: dict[str, str] = {name: family(name).sql("q") for name in PARTITIONS}
"""The families that partition a suite (`scoring.decide.slices`): name -> SQL expression over
`questions q` giving each question's slice."""
RUN_TOTAL_COLUMNS: tuple[str, ...] = (
    "questions", "missing", "failed", "latency_p50", "latency_p95", "cost_total", "cost_mean",
    *(m.key for m in REGISTRY),
)


def run_totals_sql(*, runs: str | None = None) -> str:
    """The rows of `run_totals`, computed from the scored tables: per run, `questions` (its
    question_scores rows: every question of its suite), `missing`, `failed` (questions with no
    record / a failed record), `latency_p50`, `latency_p95` (continuous quantiles over records with
    a latency, ms), `cost_total`, `cost_mean` (over records with a cost, USD; NULL without any) and
    each metric's macro mean over the questions it scores (NULL when none is scored). With `runs`, a
    relation of `run_id`s, only those runs' rows (each scan filtered before its aggregate)."""
    only = f"IN (SELECT run_id FROM {runs})" if runs else ""
    where = f"WHERE run_id {only}" if runs else ""
    means = ", ".join(f"avg(s.{m.key}::DOUBLE) AS {m.key}" for m in REGISTRY)
    return f"""WITH lat AS (
  SELECT run_id, quantile_cont(latency_ms, 0.5) AS latency_p50, quantile_cont(latency_ms, 0.95) AS latency_p95,
         sum(cost_usd) AS cost_total, avg(cost_usd) AS cost_mean
  FROM records {where} GROUP BY run_id
), sc AS (
  SELECT s.run_id, count(*) AS questions, count(*) FILTER (WHERE s.missing) AS missing,
         count(*) FILTER (WHERE s.failed) AS failed, {means}
  FROM question_scores s {where} GROUP BY s.run_id
)
SELECT r.run_id, {", ".join(f"{'lat' if c.startswith(('latency', 'cost')) else 'sc'}.{c}" for c in RUN_TOTAL_COLUMNS)}
FROM runs r LEFT JOIN sc USING (run_id) LEFT JOIN lat USING (run_id)
{f"WHERE r.run_id {only}" if runs else ""}"""


def slice_sums_sql(*, by_position: bool = False, runs: str | None = None) -> str:
    """The rows of `slice_sums`, computed from `question_scores` and `questions` (from
    `scores_by_position` when `by_position`: the same rows, joined on the integer position); with
    `runs`, a relation of `run_id`s, only those runs' rows (each family's scan filtered before its
    aggregate, not its result after)."""
    cols = []
    for m in REGISTRY:
        cols += [f"sum(s.{m.key}::DOUBLE) AS {m.key}__sum", f"count(s.{m.key}) AS {m.key}__n"]
        if m.pooled:
            num, den = m.pooled
            cols += [f"sum(s.{num}::DOUBLE) FILTER (WHERE s.{m.key} IS NOT NULL) AS {m.key}__num",
                     f"sum(s.{den}::DOUBLE) FILTER (WHERE s.{m.key} IS NOT NULL) AS {m.key}__den"]
    source = ("scores_by_position s JOIN questions q ON q.suite = s.suite AND q.position = s.position" if by_position
              else "question_scores s JOIN questions q ON q.suite = s.suite AND q.question_id = s.question_id")
    where = f"WHERE s.run_id IN (SELECT run_id FROM {runs})\n" if runs else ""
    return "\nUNION ALL\n".join(
        f"""SELECT s.run_id, '{family}' AS family, CAST({expression} AS VARCHAR) AS slice, count(*) AS questions,
  {", ".join(cols)}
FROM {source}
{where}GROUP BY s.run_id, slice"""
        for family, expression in SLICE_FAMILIES.items())


SCORES_BY_POSITION_SQL = """SELECT s.* EXCLUDE (question_id), q.position
FROM question_scores s JOIN questions q ON q.suite = s.suite AND q.question_id = s.question_id"""
"""The rows of `scores_by_position`."""


def build_summaries(con: duckdb.DuckDBPyConnection, *, scored: str | None = None,
                    rescored: str | None = None) -> None:
    """Bring every summary table up to date with the scored tables (idempotent; no transaction of
    its own). Without `scored`, each is dropped and rebuilt. With `scored`, a relation holding the
    `run_id`s just (re)scored, and `rescored`, one holding the (`run_id`, `question_id`) pairs
    re-scored in other runs (their labels changed), the rows of `scores_by_position` are replaced for
    those runs and pairs, and removed for runs no longer in `runs`; `slice_sums` and `run_totals`
    rows are recomputed for every run with a row (re-)scored (a pair changes its run's sums and
    means) and removed for runs no longer in `runs`. The other runs' rows are kept: neither their
    scores nor their questions changed."""
    if scored is None or not set(SUMMARY_TABLES) <= table_names(con):
        con.execute(f"CREATE OR REPLACE TABLE scores_by_position AS {SCORES_BY_POSITION_SQL} "
                    "ORDER BY s.run_id, q.position")
        con.execute(f"CREATE OR REPLACE TABLE slice_sums AS {slice_sums_sql(by_position=True)} "
                    "ORDER BY run_id, family, slice")
        con.execute(f"CREATE OR REPLACE TABLE run_totals AS {run_totals_sql()}")
        return
    touched = f"(SELECT run_id FROM {scored}" + (f" UNION SELECT run_id FROM {rescored})" if rescored else ")")
    gone = "run_id NOT IN (SELECT run_id FROM runs)"
    con.execute(f"DELETE FROM scores_by_position WHERE run_id IN (SELECT run_id FROM {scored}) OR {gone}")
    if rescored:
        # a re-scored question's row is found by its position, which moved with it if the suite's
        # questions were reordered: every question whose position changed is re-scored, so the
        # positions they hold now are the positions they held before, and no other row's
        con.execute(f"""DELETE FROM scores_by_position t USING (
            SELECT p.run_id, q.position FROM {rescored} p JOIN runs r ON r.run_id = p.run_id
            JOIN questions q ON q.suite = r.suite AND q.question_id = p.question_id) x
            WHERE t.run_id = x.run_id AND t.position = x.position""")
    con.execute(f"INSERT INTO scores_by_position BY NAME {SCORES_BY_POSITION_SQL} "
                f"WHERE s.run_id IN (SELECT run_id FROM {scored}) ORDER BY s.run_id, q.position")
    if rescored:
        con.execute(f"INSERT INTO scores_by_position BY NAME {SCORES_BY_POSITION_SQL} "
                    f"SEMI JOIN {rescored} p ON p.run_id = s.run_id AND p.question_id = s.question_id "
                    "ORDER BY s.run_id, q.position")
    con.execute(f"DELETE FROM slice_sums WHERE run_id IN {touched} OR {gone}")
    con.execute(f"INSERT INTO slice_sums BY NAME SELECT * FROM "
                f"({slice_sums_sql(by_position=True, runs=touched)}) ORDER BY run_id, family, slice")
    con.execute(f"DELETE FROM run_totals WHERE run_id IN {touched} OR {gone}")
    con.execute(f"INSERT INTO run_totals BY NAME SELECT * FROM ({run_totals_sql(runs=touched)}) ORDER BY run_id")

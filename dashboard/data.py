"""The dashboard's one door to the database: read-only queries, bound parameters, cached results.

`ragslice refresh` replaces the database file atomically (write a new file, then rename), so no
connection is held between queries: each query opens a read-only connection, reads, and closes it.
Results are cached on (SQL, parameters, file signature); the signature is the file's inode, size and
modification time, so the first rerun after a refresh reads the new file.

Rules: every value is a bound parameter; the only identifiers spliced into SQL are metric columns
from the registry (`scoring.metrics.REGISTRY`) and slice columns from `SLICE_COLUMNS`. Definitions
(names, denominators, n/a rules, direction) live in the registry; this module only aggregates.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
import pandas as pd
import streamlit as st

from scoring.metrics import BY_KEY, REGISTRY
from scoring.schema import SCHEMA_VERSION

DB_ENV = "RAGSLICE_DB"
POLICY_ENV = "RAGSLICE_POLICY"
DEFAULT_DB = "ragslice.duckdb"
METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY)
HIGHER_IS_BETTER: list[str] = [m.key for m in REGISTRY if m.higher_is_better]
UNCHANGED_TOLERANCE = 1e-9
"""Deltas within this distance of 0 count as unchanged (float noise from averaging repeats)."""

SLICE_COLUMNS: dict[str, str] = {
    "all": "'all'",
    "answerable": "CASE WHEN q.answerable THEN 'answerable' ELSE 'unanswerable' END",
    "type": "q.type",
    "split": "q.split",
}
"""Slice families: name -> SQL expression over `questions q` (an allow-list; never user text)."""

STATUSES: tuple[str, ...] = ("regressed", "improved", "unchanged", "n/a", "missing", "failed")


class DatabaseMissing(RuntimeError):
    """The database file does not exist or is not a ragslice database."""


# -- the connection ------------------------------------------------------------------------------


def _option(env: str, flag: str) -> str | None:
    """`$env`, else `flag VALUE` (or `flag=VALUE`) after `--` on the streamlit command line."""
    value = os.environ.get(env)
    if value:
        return value
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f"{flag}="):
            return arg.removeprefix(f"{flag}=")
    return None


def db_path() -> Path:
    """The database: `$RAGSLICE_DB`, else `--db FILE` after `--` on the streamlit command line,
    else ./ragslice.duckdb."""
    return Path(_option(DB_ENV, "--db") or DEFAULT_DB)


def policy_path() -> Path | None:
    """The acceptance policy evaluated live: `$RAGSLICE_POLICY`, else `--policy FILE` after `--` on
    the streamlit command line, else None (no live verdict)."""
    value = _option(POLICY_ENV, "--policy")
    return Path(value) if value else None


def signature(path: Path) -> tuple[int, int, int]:
    """(inode, size, mtime_ns): changes whenever a refresh replaces the file."""
    try:
        st_ = path.stat()
    except FileNotFoundError as error:
        raise DatabaseMissing(f"no database at {path}") from error
    return (st_.st_ino, st_.st_size, st_.st_mtime_ns)


LOCK_RETRIES = 40
LOCK_WAIT = 0.05
"""A writer (`ragslice compare` recording a verdict) locks the file briefly; retry for up to 2 s."""


def _connect(path: str) -> duckdb.DuckDBPyConnection:
    for _ in range(LOCK_RETRIES - 1):
        try:
            return duckdb.connect(path, read_only=True)
        except duckdb.IOException as error:
            if "lock" not in str(error).lower():
                raise
            time.sleep(LOCK_WAIT)
    return duckdb.connect(path, read_only=True)


Statement = tuple[str, Any]
"""(SQL, bound parameters): a list or a dict of `$name` values."""


@st.cache_data(show_spinner=False, max_entries=512)
def _cached(path: str, sig: tuple[int, int, int], statements: tuple[Statement, ...]) -> list[pd.DataFrame]:
    del sig  # part of the cache key only
    with _connect(path) as con:
        return [con.execute(sql, params).df() for sql, params in statements]


def query_many(*statements: Statement) -> list[pd.DataFrame]:
    """Run read-only queries with bound parameters on one short-lived connection; the results are
    cached together until the file changes."""
    path = db_path()
    sig = signature(path)
    try:
        return _cached(str(path), sig, tuple(statements))
    except (duckdb.CatalogException, duckdb.IOException, duckdb.InvalidInputException) as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error


def query(sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> pd.DataFrame:
    """Run one read-only query with bound parameters; cached until the file changes."""
    return query_many((sql, params))[0]


def _catalog() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, frozenset[str]]:
    """meta, suites, runs and the table names: what every page needs, read on one connection."""
    meta_rows, suite_rows, run_rows, tables = query_many(
        ("SELECT key, value FROM meta", []),
        ("SELECT * FROM suites ORDER BY suite", []),
        ("SELECT * FROM runs ORDER BY created_at, run_id", []),
        ("SELECT table_name FROM duckdb_tables()", []),
    )
    return meta_rows, suite_rows, run_rows, frozenset(tables["table_name"])


def meta() -> dict[str, str]:
    """The `meta` table as a dict; raises DatabaseMissing when the file is absent or foreign."""
    rows = _catalog()[0]
    return dict(zip(rows["key"], rows["value"]))


def schema_problem() -> str | None:
    """A sentence when the database was written by a different schema version, else None."""
    version = meta().get("schema_version")
    if version != str(SCHEMA_VERSION):
        return (
            f"The database has schema version {version}; this dashboard reads version {SCHEMA_VERSION}. "
            "Run `ragslice refresh` again with this version of ragslice."
        )
    return None


# -- suites, runs and the two sides of a comparison ----------------------------------------------


def suites() -> pd.DataFrame:
    return _catalog()[1]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a single run, or a group of repeats (values are means over its runs)."""

    name: str
    kind: Literal["run", "group"]
    run_ids: tuple[str, ...]

    @property
    def label(self) -> str:
        if self.kind == "run":
            return self.name
        return f"{self.name} (group: mean over {len(self.run_ids)} repeats)"


def runs(suite: str | None = None) -> pd.DataFrame:
    """Runs (manifest columns and record counts), oldest first."""
    table = _catalog()[2]
    if suite is None:
        return table
    return table[table["suite"] == suite].reset_index(drop=True)


def sides(suite: str) -> list[Side]:
    """Every run of the suite, then every group of repeats (a name shared by a run and a group
    refers to the run)."""
    table = runs(suite)
    out = [Side(r, "run", (r,)) for r in table["run_id"]]
    taken = set(table["run_id"])
    grouped = table[table["run_group"].notna()].sort_values(["run_group", "repeat", "run_id"], na_position="last")
    for group, members in grouped.groupby("run_group", sort=True):
        if group not in taken:
            out.append(Side(str(group), "group", tuple(members["run_id"])))
    return out


def _params(suite: str, base: Side, cand: Side, **extra: Any) -> dict[str, Any]:
    return {"suite": suite, "base": list(base.run_ids), "cand": list(cand.run_ids), **extra}


def _metric(key: str) -> str:
    """Allow-list check: a metric identifier may reach SQL only if the registry declares it."""
    if key not in BY_KEY:
        raise ValueError(f"unknown metric {key!r}")
    return key


# Per (side, question): the mean over the side's runs of every metric and pooling count.
# A single run is a group of one. Booleans average as 0/1.
_SIDE_CTE = """
members AS (
  SELECT 'baseline' AS side, unnest($base::VARCHAR[]) AS run_id
  UNION ALL SELECT 'candidate', unnest($cand::VARCHAR[])
),
per_side AS (
  SELECT m.side, s.question_id, count(*) AS n_runs,
         bool_or(s.missing) AS missing, bool_or(s.failed) AS failed,
         {metric_means},
         {count_means}
  FROM question_scores s JOIN members m ON m.run_id = s.run_id
  WHERE s.suite = $suite
  GROUP BY m.side, s.question_id
)"""

_COUNT_COLUMNS = ("k", "n_claims", "n_supported", "n_expected", "n_expected_supported", "n_relevant", "n_hits")


def _side_cte() -> str:
    means = ",\n         ".join(f"avg(s.{_metric(k)}::DOUBLE) AS {k}" for k in METRIC_KEYS)
    counts = ",\n         ".join(f"avg(s.{c}::DOUBLE) AS {c}" for c in _COUNT_COLUMNS)
    return _SIDE_CTE.format(metric_means=means, count_means=counts)


def _paired_cte() -> str:
    """Adds `paired`: one row per (metric, question) with baseline, candidate, delta and status."""
    keys = ", ".join(_metric(k) for k in METRIC_KEYS)
    return f"""{_side_cte()},
long AS (
  SELECT side, question_id, missing, failed, metric, value
  FROM per_side UNPIVOT INCLUDE NULLS (value FOR metric IN ({keys}))
),
grid AS (
  SELECT q.question_id, m.metric
  FROM questions q CROSS JOIN (SELECT unnest($keys::VARCHAR[]) AS metric) m
  WHERE q.suite = $suite
),
paired AS (
  SELECT g.metric, g.question_id, b.value AS baseline, c.value AS candidate, c.value - b.value AS delta,
         CASE WHEN coalesce(b.missing, true) OR coalesce(c.missing, true) THEN 'missing'
              WHEN b.failed OR c.failed THEN 'failed'
              WHEN b.value IS NULL OR c.value IS NULL THEN 'n/a'
              WHEN (c.value - b.value) * (CASE WHEN list_contains($higher, g.metric) THEN 1 ELSE -1 END) > $tol
                THEN 'improved'
              WHEN (c.value - b.value) * (CASE WHEN list_contains($higher, g.metric) THEN 1 ELSE -1 END) < -$tol
                THEN 'regressed'
              ELSE 'unchanged' END AS status
  FROM grid g
  LEFT JOIN long b ON b.side = 'baseline' AND b.question_id = g.question_id AND b.metric = g.metric
  LEFT JOIN long c ON c.side = 'candidate' AND c.question_id = g.question_id AND c.metric = g.metric
)"""


def _paired_params(suite: str, base: Side, cand: Side, **extra: Any) -> dict[str, Any]:
    return _params(suite, base, cand, keys=list(METRIC_KEYS), higher=HIGHER_IS_BETTER,
                   tol=UNCHANGED_TOLERANCE, **extra)


# -- per-question deltas -------------------------------------------------------------------------


def question_deltas(suite: str, base: Side, cand: Side, metric: str) -> pd.DataFrame:
    """One row per question of the suite, in suite order: its labels, the baseline and candidate
    value of `metric` (for a group: the mean over its repeats), delta = candidate - baseline, and a
    status, first match wins: missing (a side has no record) > failed (a side's record has an
    error) > n/a (a value is NULL) > improved / regressed (delta with / against the registry's
    direction, beyond UNCHANGED_TOLERANCE) > unchanged."""
    sql = f"""WITH {_paired_cte()}
SELECT q.question_id, q.position, q.text, q.type, q.split, q.critical, q.tags, q.answerable, q.disputed,
       p.baseline, p.candidate, p.delta, p.status
FROM questions q JOIN paired p ON p.question_id = q.question_id AND p.metric = $metric
WHERE q.suite = $suite
ORDER BY q.position"""
    return query(sql, _paired_params(suite, base, cand, metric=_metric(metric)))


def headline(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """One row per registry metric (registry order): macro mean over scored questions per side and
    its delta; scored n and n/a count per side; the number of questions per status (see
    `question_deltas`)."""
    counts = ",\n  ".join(f"count(*) FILTER (WHERE status = '{s}') AS \"{s}\"" for s in STATUSES)
    sql = f"""WITH {_paired_cte()}
SELECT metric,
  avg(baseline) AS baseline, avg(candidate) AS candidate, avg(candidate) - avg(baseline) AS delta,
  count(baseline) AS n_baseline, count(candidate) AS n_candidate,
  count(*) - count(baseline) AS na_baseline, count(*) - count(candidate) AS na_candidate,
  {counts}
FROM paired GROUP BY metric"""
    frame = query(sql, _paired_params(suite, base, cand))
    order = {k: i for i, k in enumerate(METRIC_KEYS)}
    return frame.sort_values("metric", key=lambda s: s.map(order)).reset_index(drop=True)


def question_pair(suite: str, base: Side, cand: Side, question_id: str) -> pd.DataFrame:
    """One row per registry metric for one question: baseline, candidate (means over repeats for a
    group), delta and status, as in `question_deltas`."""
    sql = f"""WITH {_paired_cte()}
SELECT metric, baseline, candidate, delta, status FROM paired WHERE question_id = $question"""
    frame = query(sql, _paired_params(suite, base, cand, question=question_id))
    order = {k: i for i, k in enumerate(METRIC_KEYS)}
    return frame.sort_values("metric", key=lambda s: s.map(order)).reset_index(drop=True)


# -- aggregates by slice ---------------------------------------------------------------------------


def aggregate(suite: str, base: Side, cand: Side, by: str) -> pd.DataFrame:
    """Per slice of family `by` (a SLICE_COLUMNS key) and metric, both sides side by side
    (prefix `b_` baseline, `c_` candidate):

    - `questions`: questions in the slice;
    - `*_macro` = `*_sum` / `*_n`: mean over the questions scored (NULLs skipped), `*_na` excluded;
    - `*_num`, `*_den`, `*_pooled`: the registry's pooled numerator and denominator summed over the
      scored questions, and their ratio (NULL where the registry says pooling equals the macro mean,
      or the denominator is 0);
    - `delta_macro`, `delta_pooled`: candidate - baseline.

    For a group of repeats every count is first averaged per question over the repeats."""
    return aggregates(suite, base, cand, (by,))[by]


def aggregates(suite: str, base: Side, cand: Side, families: Sequence[str]) -> dict[str, pd.DataFrame]:
    """`aggregate` for several slice families, in one query (the per-question means are computed once)."""
    families = tuple(dict.fromkeys(families))
    for by in families:
        if by not in SLICE_COLUMNS:
            raise ValueError(f"unknown slice family {by!r}")
    wide = query(_aggregate_sql(families), _params(suite, base, cand))
    return {by: _side_by_side(wide[wide["family"] == by]) for by in families}


def _aggregate_sql(families: Sequence[str]) -> str:
    cols = []
    for m in REGISTRY:
        k = _metric(m.key)
        cols += [f"sum(p.{k}) AS {k}__sum", f"count(p.{k}) AS {k}__n"]
        if m.pooled:
            num, den = m.pooled
            cols += [f"sum(p.{num}) FILTER (WHERE p.{k} IS NOT NULL) AS {k}__num",
                     f"sum(p.{den}) FILTER (WHERE p.{k} IS NOT NULL) AS {k}__den"]
    selects = [
        f"""SELECT '{by}' AS family, p.side, CAST({SLICE_COLUMNS[by]} AS VARCHAR) AS slice, count(*) AS questions,
  {", ".join(cols)}
FROM per_side p JOIN questions q ON q.suite = $suite AND q.question_id = p.question_id
GROUP BY ALL"""
        for by in families
    ]
    return f"WITH {_side_cte()}\n" + "\nUNION ALL\n".join(selects)


def _side_by_side(wide: pd.DataFrame) -> pd.DataFrame:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    keys = list(METRIC_KEYS)
    for rec in wide.to_dict("records"):
        prefix = "b_" if rec["side"] == "baseline" else "c_"
        for key in keys:
            row = rows.setdefault((str(rec["slice"]), key), {"slice": str(rec["slice"]), "metric": key})
            n = int(rec[f"{key}__n"])
            total = rec[f"{key}__sum"]
            num, den = rec.get(f"{key}__num"), rec.get(f"{key}__den")
            row[f"{prefix}questions"] = int(rec["questions"])
            row[f"{prefix}n"] = n
            row[f"{prefix}na"] = int(rec["questions"]) - n
            row[f"{prefix}sum"] = None if n == 0 else float(total)
            row[f"{prefix}macro"] = None if n == 0 else float(total) / n
            row[f"{prefix}num"] = None if num is None or pd.isna(num) else float(num)
            row[f"{prefix}den"] = None if den is None or pd.isna(den) else float(den)
            row[f"{prefix}pooled"] = (
                float(num) / float(den) if row[f"{prefix}num"] is not None and row[f"{prefix}den"] else None
            )
    out = pd.DataFrame(list(rows.values()), columns=["slice", "metric"] if not rows else None)
    for col in ("questions", "n", "na", "sum", "macro", "num", "den", "pooled"):
        for prefix in ("b_", "c_"):
            if f"{prefix}{col}" not in out:
                out[f"{prefix}{col}"] = None
    out["questions"] = out[["b_questions", "c_questions"]].max(axis=1)
    out["delta_macro"] = pd.to_numeric(out["c_macro"]) - pd.to_numeric(out["b_macro"])
    out["delta_pooled"] = pd.to_numeric(out["c_pooled"]) - pd.to_numeric(out["b_pooled"])
    order = {k: i for i, k in enumerate(keys)}
    return out.sort_values(["slice", "metric"], key=lambda s: s.map(order) if s.name == "metric" else s).reset_index(
        drop=True
    )


def aggregation_choices(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Long table, one row per (metric, aggregation): macro over all questions, pooled, macro over
    answerable questions only, and macro per question type; each with baseline and candidate value,
    numerator, denominator, n/a excluded, and delta. `direction`: +1 improved, -1 worse, 0 unchanged
    or n/a, in the registry's direction. Per metric: `flip` (macro, pooled and answerable-only
    disagree on the direction) and `hidden` (questions that regressed while the macro mean over all
    questions improved); per type row: `against_macro` (the type moves against the overall macro)."""
    path = db_path()
    return _aggregation_choices(str(path), signature(path), suite, base, cand)


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


@st.cache_data(show_spinner=False, max_entries=64)
def _aggregation_choices(path: str, sig: tuple[int, int, int], suite: str, base: Side, cand: Side) -> pd.DataFrame:
    del path, sig  # cache key only: the inputs below are read from this file
    frames = aggregates(suite, base, cand, ("all", "answerable", "type"))
    head = headline(suite, base, cand)
    regressed = dict(zip(head["metric"], head["regressed"]))
    records = {by: frame.to_dict("records") for by, frame in frames.items()}
    rows: list[dict[str, Any]] = []
    for m in REGISTRY:
        sign = 1 if m.higher_is_better else -1
        mine = {by: [r for r in recs if r["metric"] == m.key] for by, recs in records.items()}
        overall = mine["all"][0]
        entries = [("macro", "all questions", overall, "macro", "sum", "n")]
        if m.pooled:
            entries.append(("pooled", "all questions", overall, "pooled", "num", "den"))
        entries += [("macro", "answerable only", r, "macro", "sum", "n") for r in mine["answerable"]
                    if r["slice"] == "answerable"]
        entries += [("macro", f"type: {r['slice']}", r, "macro", "sum", "n")
                    for r in sorted(mine["type"], key=lambda r: str(r["slice"]))]
        metric_rows = []
        for how, scope, r, value, num, den in entries:
            b, c = _number(r[f"b_{value}"]), _number(r[f"c_{value}"])
            delta = None if b is None or c is None else c - b
            direction = 0 if delta is None or abs(delta) <= UNCHANGED_TOLERANCE else (1 if delta * sign > 0 else -1)
            metric_rows.append({
                "metric": m.key, "aggregation": how, "scope": scope,
                "baseline": b, "b_numerator": _number(r[f"b_{num}"]), "b_denominator": _number(r[f"b_{den}"]),
                "b_na": int(r["b_na"]),
                "candidate": c, "c_numerator": _number(r[f"c_{num}"]), "c_denominator": _number(r[f"c_{den}"]),
                "c_na": int(r["c_na"]),
                "delta": delta, "direction": direction,
            })
        overall_moves = {r["direction"] for r in metric_rows
                         if r["scope"] in ("all questions", "answerable only") and r["direction"] != 0}
        macro = metric_rows[0]["direction"]
        for r in metric_rows:
            r["flip"] = len(overall_moves) > 1
            r["against_macro"] = r["scope"].startswith("type: ") and r["direction"] != 0 and r["direction"] == -macro
            r["hidden"] = int(regressed.get(m.key, 0)) if macro > 0 else 0
        rows += metric_rows
    return pd.DataFrame(rows)


# -- one question ----------------------------------------------------------------------------------


def questions(suite: str) -> pd.DataFrame:
    return query("SELECT * FROM questions WHERE suite = ? ORDER BY position", [suite])


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


RETRIEVED_COLUMNS = ("rank", "doc_id", "chunk_id", "relevant", "visible", "restricted", "counted", "grade", "title",
                     "doc_version", "chunk_text")
CLAIM_COLUMNS = ("claim_id", "supported", "reasons", "citations", "cited_docs", "text")
OPTIONAL_COLUMNS = ("chunk_id", "doc_version", "chunk_text")
"""Display order of the columns `question_run` returns: those the database has, without chunk
columns that are empty for the run (document-level retrieval)."""


def question_run(run_id: str, question_id: str) -> dict[str, Any]:
    """What one run did on one question: `record` (dict or None), `scores` (dict or None),
    `retrieved` (rank order, with title and the relevant / visible / restricted marks) and `claims`
    (answer order, with verdict and reasons)."""
    pair = [run_id, question_id]
    record, scores, retrieved, claims = query_many(
        ("SELECT answer, context, latency_ms, cost_usd, error, line FROM records WHERE run_id = ? AND question_id = ?",
         pair),
        ("SELECT * FROM question_scores WHERE run_id = ? AND question_id = ?", pair),
        ("""SELECT r.* EXCLUDE (run_id, question_id), d.title
            FROM retrieved r JOIN runs u ON u.run_id = r.run_id
            LEFT JOIN documents d ON d.suite = u.suite AND d.doc_id = r.doc_id
            WHERE r.run_id = ? AND r.question_id = ? ORDER BY r.rank""", pair),
        ("SELECT * EXCLUDE (run_id, question_id) FROM claims WHERE run_id = ? AND question_id = ? ORDER BY position",
         pair),
    )
    retrieved = retrieved[[c for c in RETRIEVED_COLUMNS if c in retrieved.columns
                           and not (c in OPTIONAL_COLUMNS and retrieved[c].isna().all())]]
    claims = claims[[c for c in CLAIM_COLUMNS if c in claims.columns]]
    return {
        "record": record.iloc[0].to_dict() if len(record) else None,
        "scores": scores.iloc[0].to_dict() if len(scores) else None,
        "retrieved": retrieved,
        "claims": claims,
    }


# -- runs ------------------------------------------------------------------------------------------


def run_stats(suite: str) -> pd.DataFrame:
    """Per run of the suite: questions, records, missing, failed, latency p50 / p95 (ms, over
    records with a latency), total and mean cost (USD, over records with a cost), and the macro mean
    of every metric."""
    means = ", ".join(f"avg(s.{_metric(k)}::DOUBLE) AS {k}" for k in METRIC_KEYS)
    sql = f"""WITH lat AS (
  SELECT run_id, quantile_cont(latency_ms, 0.5) AS latency_p50, quantile_cont(latency_ms, 0.95) AS latency_p95,
         sum(cost_usd) AS cost_total, avg(cost_usd) AS cost_mean
  FROM records GROUP BY run_id
), sc AS (
  SELECT s.run_id, count(*) AS questions, count(*) FILTER (WHERE s.missing) AS missing,
         count(*) FILTER (WHERE s.failed) AS failed, {means}
  FROM question_scores s WHERE s.suite = $suite GROUP BY s.run_id
)
SELECT r.run_id, r.run_group, r.repeat, r.created_at, r.k, r.model, r.n_records AS records,
       sc.questions, sc.missing, sc.failed, lat.latency_p50, lat.latency_p95, lat.cost_total, lat.cost_mean,
       {", ".join(f"sc.{k}" for k in METRIC_KEYS)}
FROM runs r LEFT JOIN sc USING (run_id) LEFT JOIN lat USING (run_id)
WHERE r.suite = $suite ORDER BY r.created_at, r.run_id"""
    return query(sql, {"suite": suite})


def group_spread(suite: str) -> pd.DataFrame:
    """Per group of repeats and metric: the runs, and the lowest, mean and highest macro mean over
    the repeats (how much one configuration moves from run to run)."""
    stats = run_stats(suite)
    grouped = stats[stats["run_group"].notna()]
    rows = []
    for group, members in grouped.groupby("run_group", sort=True):
        for key in METRIC_KEYS:
            values = pd.to_numeric(members[key]).dropna()
            rows.append({
                "group": str(group), "runs": ", ".join(members["run_id"].astype(str)), "repeats": len(members),
                "metric": key,
                "lowest": values.min() if len(values) else None,
                "mean": values.mean() if len(values) else None,
                "highest": values.max() if len(values) else None,
            })
    return pd.DataFrame(rows, columns=["group", "runs", "repeats", "metric", "lowest", "mean", "highest"])


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """A manifest as {dotted.field: JSON text of the leaf value}."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: json.dumps(value, sort_keys=True)}


def manifest_diff(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Manifest fields whose value differs between the sides (field, baseline, candidate). A side
    whose repeats disagree on a field shows every distinct value, joined by ' | '."""
    table = runs(suite).set_index("run_id")

    def side_fields(side: Side) -> dict[str, str]:
        flat = [flatten(json.loads(table.loc[r, "manifest"])) for r in side.run_ids if r in table.index]
        fields = sorted({f for m in flat for f in m})
        return {f: " | ".join(dict.fromkeys(m.get(f, "(absent)") for m in flat)) for f in fields}

    b, c = side_fields(base), side_fields(cand)
    rows = [(f, b.get(f, "(absent)"), c.get(f, "(absent)")) for f in sorted(set(b) | set(c))]
    return pd.DataFrame([r for r in rows if r[1] != r[2]], columns=["field", "baseline", "candidate"])


# -- the release verdict ---------------------------------------------------------------------------


def latest_verdict(suite: str, base: Side, cand: Side) -> dict[str, Any] | None:
    """The newest verdict `ragslice compare --policy` recorded for exactly these runs (table
    `verdicts`, see docs/schema.md), with `gates` and `warnings` decoded; None when there is none.
    The dashboard only reads it: the statistics and gates live in `scoring.compare` / `scoring.policy`."""
    if "verdicts" not in _catalog()[3]:
        return None
    rows = query(
        """SELECT verdict_id, created_at, baseline, candidate, policy_name, policy_hash, verdict, gates,
                  verdict_without_disputed, warnings
           FROM verdicts
           WHERE suite = ? AND list_sort(baseline_runs) = list_sort(?::VARCHAR[])
             AND list_sort(candidate_runs) = list_sort(?::VARCHAR[])
           ORDER BY created_at DESC LIMIT 1""",
        [suite, list(base.run_ids), list(cand.run_ids)],
    )
    if rows.empty:
        return None
    out = rows.iloc[0].to_dict()
    out["gates"] = pd.DataFrame(json.loads(out["gates"]))
    out["warnings"] = list(json.loads(out["warnings"]))
    out["refreshed_at"] = meta().get("refreshed_at")
    out["refreshed_after"] = _later(out["refreshed_at"], out["created_at"])
    return out


def _later(refreshed_at: Any, created_at: Any) -> bool:
    """Whether the last refresh (ISO text, UTC) happened after the verdict (naive UTC timestamp)."""
    try:
        refreshed = pd.Timestamp(refreshed_at)
        created = pd.Timestamp(created_at)
    except (TypeError, ValueError):
        return False
    if refreshed.tzinfo is not None:
        refreshed = refreshed.tz_convert("UTC").tz_localize(None)
    if created.tzinfo is not None:
        created = created.tz_convert("UTC").tz_localize(None)
    return bool(refreshed > created)


# -- can these two sides be compared? -------------------------------------------------------------

FEW_QUESTIONS = 30
"""Below this many paired questions the page warns that one question moves the averages a lot."""


@dataclass(frozen=True)
class Compatibility:
    """`refusals`: reasons the comparison is meaningless; `warnings`: caveats. Plain sentences."""

    refusals: tuple[str, ...]
    warnings: tuple[str, ...]


def compatibility(suite: str, base: Side, cand: Side) -> Compatibility:
    """Refuse when the runs were recorded against different suite or corpus versions (or another
    suite); warn on rubric or cutoff differences, runs recorded against an older suite version,
    repeats that disagree, few questions, and missing or failed records."""
    table = runs(suite).set_index("run_id")
    suite_row = suites().set_index("suite").loc[suite]
    refusals: list[str] = []
    warnings: list[str] = []
    members = {"baseline": base, "candidate": cand}
    absent = [r for s in members.values() for r in s.run_ids if r not in table.index]
    if absent:
        return Compatibility((f"Run(s) {', '.join(absent)} are not runs of suite {suite}.",), ())
    picked = table.loc[[r for s in members.values() for r in s.run_ids]]
    for field, words in (("suite_version", "suite versions"), ("corpus_version", "corpus versions")):
        values = sorted(set(picked[field]))
        if len(values) > 1:
            detail = "; ".join(f"{r}: {v}" for r, v in picked[field].items())
            refusals.append(
                f"The runs were recorded against different {words} ({detail}). Questions, labels or "
                "documents changed between them, so per-question deltas would compare different tests. "
                "Re-run both configurations on the same frozen suite and corpus."
            )
    for field, words in (("rubric_version", "rubric versions"), ("k", "context cutoffs (k)")):
        values = sorted({str(v) for v in picked[field]})
        if len(values) > 1:
            detail = "; ".join(f"{r}: {v}" for r, v in picked[field].items())
            warnings.append(f"The runs use different {words} ({detail}); cutoff and answer metrics are not like for like.")
    stale = picked[picked["suite_version"] != suite_row["version"]]
    if len(stale):
        warnings.append(
            f"Run(s) {', '.join(stale.index)} were recorded against suite version "
            f"{', '.join(sorted(set(stale['suite_version'])))}; the suite is now version {suite_row['version']}."
        )
    for name, side in members.items():
        if side.kind == "group":
            rows = table.loc[list(side.run_ids)]
            differing = [f for f in ("k", "model", "prompt_revision", "code_revision", "retrieval", "rubric_version")
                         if rows[f].astype(str).nunique() > 1]
            if differing:
                warnings.append(f"The {name} group {side.name} has repeats that differ in {', '.join(differing)}.")
        rows = table.loc[list(side.run_ids)]
        missing, failed = int(rows["n_missing"].sum()), int(rows["n_failed"].sum())
        if missing or failed:
            runs_word = "its runs" if side.kind == "group" else "it"
            warnings.append(
                f"The {name} {side.name} has {missing} question(s) with no record and {failed} failed record(s) "
                f"across {runs_word}; they count as failures (0) in every denominator, not as n/a."
            )
    n_questions = int(suite_row["n_questions"])
    if n_questions < FEW_QUESTIONS:
        warnings.append(
            f"Only {n_questions} questions: one question moves every average by at least {100 / n_questions:.0f} "
            "percentage points. Read the per-question table rather than the averages."
        )
    if base.run_ids == cand.run_ids:
        warnings.append("Baseline and candidate are the same run(s): every delta is 0.")
    return Compatibility(tuple(refusals), tuple(warnings))


def newest_verdict() -> tuple[str, str, str] | None:
    """(suite, baseline, candidate) of the newest recorded verdict, names as `ragslice compare` took
    them; None when none was recorded. The sidebar opens on this comparison when the URL names none."""
    if "verdicts" not in _catalog()[3]:
        return None
    rows = query("SELECT suite, baseline, candidate FROM verdicts ORDER BY created_at DESC LIMIT 1")
    if rows.empty:
        return None
    return tuple(str(v) for v in rows.iloc[0])  # type: ignore[return-value]


HISTORY_COLUMNS = ("created_at", "baseline", "candidate", "policy_name", "policy_hash", "verdict",
                   "verdict_without_disputed", "this_comparison")


def verdict_history(suite: str, base: Side, cand: Side) -> pd.DataFrame:
    """Every verdict recorded for the suite (table `verdicts`), newest first: when (UTC), the sides
    by name, the policy's name and sha256, the verdict, the verdict without disputed questions, and
    `this_comparison` (recorded for exactly these runs). Empty when none was recorded."""
    if "verdicts" not in _catalog()[3]:
        return pd.DataFrame(columns=list(HISTORY_COLUMNS))
    return query(
        """SELECT created_at, baseline, candidate, policy_name, policy_hash, verdict, verdict_without_disputed,
                  list_sort(baseline_runs) = list_sort($base::VARCHAR[])
                    AND list_sort(candidate_runs) = list_sort($cand::VARCHAR[]) AS this_comparison
           FROM verdicts WHERE suite = $suite ORDER BY created_at DESC, verdict_id""",
        {"suite": suite, "base": list(base.run_ids), "cand": list(cand.run_ids)},
    )


# -- paired statistics and the live verdict (computed by scoring.compare) -------------------------


class StatisticsUnavailable(RuntimeError):
    """`scoring.compare` refused the comparison; the message says why (e.g. the sides share runs)."""


@dataclass(frozen=True)
class PolicyInfo:
    """Which acceptance policy a live verdict applied: its name, sha256 of its text, and its file."""

    name: str
    sha256: str
    path: str
    description: str | None


@dataclass(frozen=True)
class Statistics:
    """What `scoring.compare.compare` computed for two sides on the current database (nothing recorded).

    - `table`: one row per metric x slice with n >= 1 (`scoring.compare.COMPARISON_COLUMNS`): n
      paired questions (both sides scored; n/a excluded, never 0), both macro means, the mean paired
      delta and its bootstrap interval (`ci_low`, `ci_high`), p-values (t-test, Wilcoxon,
      sign-flip randomization, and the randomization p Holm-adjusted across every row), questions
      improved / regressed / unchanged, and warnings (too few pairs for a test to mean anything);
    - `flaky`: per side with repeats, the question x metric (or `status`) whose repeats disagree,
      with the values per repeat;
    - `settings`: the resampling and test settings in words; `warnings`: about the comparison;
    - `verdict`: the policy's verdict evaluated now (`scoring.policy.Verdict`), None without a
      policy; `policy`: which policy; `policy_error`: why the policy file could not be used;
    - `confidence`: the interval's confidence level; `seconds`: how long `compare` took.
    """

    table: pd.DataFrame
    flaky: pd.DataFrame
    settings: str
    confidence: float
    warnings: tuple[str, ...]
    n_questions: int
    verdict: Any
    policy: PolicyInfo | None
    policy_error: str | None
    seconds: float


def side_spec(side: Side) -> str:
    """The side as `ragslice compare` names it, kind forced (`run:A`, `group:c`), so a run and a
    group of the same name cannot be confused."""
    return f"{side.kind}:{side.name}"


def _file_signature(path: Path | None) -> tuple[int, int, int] | None:
    if path is None:
        return None
    try:
        st_ = path.stat()
    except OSError:
        return None
    return (st_.st_ino, st_.st_size, st_.st_mtime_ns)


def statistics(base: Side, cand: Side) -> Statistics:
    """Paired statistics for the two sides and, when a policy file is known (`policy_path`), its
    verdict evaluated live. Computed by `scoring.compare.compare` on a read-only connection, cached
    on the database's and the policy file's signatures and the two sides. Raises
    StatisticsUnavailable when scoring refuses the comparison."""
    path = db_path()
    policy = policy_path()
    return _statistics(str(path), signature(path), side_spec(base), side_spec(cand),
                       None if policy is None else str(policy), _file_signature(policy))


SNAPSHOT_TABLES = ("suites", "questions", "runs", "meta", "metrics")
SNAPSHOT_LOGS = ("verdicts", "heldout_log")


def _snapshot(path: str, sides: tuple[str, ...]) -> duckdb.DuckDBPyConnection:
    """An in-memory copy of what a comparison reads (the two sides' scores and the suite tables),
    so the file is closed again before the statistics run and a verdict write is never blocked."""
    mem = duckdb.connect()
    for attempt in range(LOCK_RETRIES):
        try:
            mem.execute("ATTACH ? AS src (READ_ONLY)", [path])
            break
        except duckdb.IOException as error:
            if "lock" not in str(error).lower() or attempt == LOCK_RETRIES - 1:
                raise
            time.sleep(LOCK_WAIT)
    try:
        present = {name for (name,) in mem.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'src'").fetchall()}
        for table in SNAPSHOT_TABLES + SNAPSHOT_LOGS:
            if table in present:
                mem.execute(f"CREATE TABLE memory.{table} AS SELECT * FROM src.{table}")
        mem.execute(
            """CREATE TABLE memory.question_scores AS
               SELECT s.* FROM src.question_scores s JOIN src.runs r USING (run_id)
               WHERE list_contains($sides, r.run_id) OR list_contains($sides, r.run_group)""",
            {"sides": [side.split(":", 1)[-1] for side in sides]},
        )
    finally:
        mem.execute("DETACH src")
    return mem


@st.cache_data(show_spinner=False, max_entries=32)
def _statistics(path: str, sig: tuple[int, int, int], base: str, cand: str, policy: str | None,
                policy_sig: tuple[int, int, int] | None) -> Statistics:
    del sig, policy_sig  # cache key only
    from scoring.compare import compare
    from scoring.errors import ValidationError
    from scoring.policy import load_policy

    loaded, problem = None, None
    if policy is not None:
        try:
            loaded = load_policy(policy)
        except ValidationError as error:
            problem = str(error)
    started = time.perf_counter()
    try:
        with _snapshot(path, (base, cand)) as con:
            result = compare(con, base, cand, policy=loaded)
    except ValidationError as error:
        raise StatisticsUnavailable(str(error)) from None
    except (duckdb.CatalogException, duckdb.IOException, duckdb.InvalidInputException) as error:
        raise DatabaseMissing(f"{path} is not a readable ragslice database ({error})") from error
    seconds = time.perf_counter() - started
    return Statistics(
        table=result.table.reset_index(drop=True),
        flaky=result.flaky.reset_index(drop=True),
        settings=result.settings.describe(),
        confidence=float(result.settings.confidence),
        warnings=tuple(result.warnings),
        n_questions=int(len(result.questions)),
        verdict=result.verdict if loaded is not None else None,
        policy=None if loaded is None else PolicyInfo(loaded.name, loaded.sha256, str(policy), loaded.description),
        policy_error=problem,
        seconds=seconds,
    )


GATE_COLUMNS = ("name", "passed", "observed", "threshold", "n", "reason", "metric", "slice", "aggregate", "baseline",
                "p_value", "warning", "line")
"""Display order of a verdict's gate table (live or recorded)."""


def gates_frame(gates: Any) -> pd.DataFrame:
    """A verdict's gates as a table in `GATE_COLUMNS` order: from `scoring.policy.GateResult`s (a
    live verdict) or the decoded JSON of a recorded one (a DataFrame)."""
    from dataclasses import asdict

    frame = gates if isinstance(gates, pd.DataFrame) else pd.DataFrame([asdict(g) for g in gates])
    return frame[[c for c in GATE_COLUMNS if c in frame.columns]].reset_index(drop=True)


SLICE_FAMILIES: tuple[str, ...] = ("all", "answerability", "critical", "type", "split", "tag")
P_COLUMNS: dict[str, str] = {
    "p_holm": "Holm-adjusted randomization p",
    "p_randomization": "randomization p (unadjusted)",
    "p_ttest": "paired t-test p (unadjusted)",
    "p_wilcoxon": "Wilcoxon signed-rank p (unadjusted)",
}


def slice_family(slice_: str) -> str:
    """The family of a slice name of `scoring.compare.default_slices`: all, answerability
    (answerable, unanswerable), critical, type, split or tag."""
    if slice_ in ("answerable", "unanswerable"):
        return "answerability"
    return slice_.split(":", 1)[0]


def statistics_rows(
    table: pd.DataFrame,
    *,
    metrics: Sequence[str] = (),
    families: Sequence[str] = (),
    alpha: float = 0.05,
    p_column: str = "p_holm",
    significant_only: bool = False,
    regressions_only: bool = False,
) -> pd.DataFrame:
    """The rows of `Statistics.table` the filters keep (empty `metrics` / `families`: all), with
    three columns added: `family` (`slice_family`), `significant` (`p_column` <= `alpha`; False
    where that p-value is n/a) and `moves` (better / worse / unchanged: the mean paired delta with /
    against the registry's direction, beyond `scoring.stats.TIE`). `regressions_only` keeps the
    rows that move worse."""
    from scoring.stats import TIE

    if p_column not in P_COLUMNS:
        raise ValueError(f"unknown p-value column {p_column!r}")
    out = table.copy()
    out["family"] = out["slice"].map(slice_family)
    p = pd.to_numeric(out[p_column], errors="coerce")
    out["significant"] = (p <= alpha).fillna(False).astype(bool)
    gain = pd.to_numeric(out["delta"], errors="coerce") * out["higher_is_better"].map({True: 1.0, False: -1.0})
    out["moves"] = "unchanged"
    out.loc[gain > TIE, "moves"] = "better"
    out.loc[gain < -TIE, "moves"] = "worse"
    keep = pd.Series(True, index=out.index)
    if metrics:
        keep &= out["metric"].isin(list(metrics))
    if families:
        keep &= out["family"].isin(list(families))
    if significant_only:
        keep &= out["significant"]
    if regressions_only:
        keep &= out["moves"] == "worse"
    return out[keep].reset_index(drop=True)

"""`ragslice refresh` and `ragslice table`: workspace files -> validated, scored DuckDB tables.

A refresh validates every changed suite and run first, then scores with the SQL engine, then
replaces the database atomically (see `scoring.store.database`). Runs whose files and suite did not change
are kept as they are; runs no longer in the workspace are removed.
When only review files changed, their decisions are applied to the live file in one transaction
instead (`apply_decisions`); `refresh` names its three routes.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

import duckdb

from ..errors import OutOfResources, Problems
from ..metrics import engine
from ..metrics.registry import SEED_KEYS
from . import database as store
from .bulk import stage_bulk
from .chunks import chunk_joins, unit_sql, write_chunks
from .database import Database
from .hashes import HASHES_KEY
from .alignment import align_staged, write_alignments
from .pins import read_pins, stored_pins, write_pins
from .records import read_lines, stage_records, stage_runs
from . import schema
from .schema import SCHEMA_VERSION, VIEWS, create_schema
from .suite_bulk import drop_staged, stage_suite
from .suite_tables import SUITE_TABLES, insert_frame, write_suite
from .rescore import changed_questions, drop_relation, pairs_to_rescore, restage_stored, snapshot_suite
from .summaries import build_summaries
from .decisions import review_staged, stored_part, write_part
from .workspace import Run, Suite, Workspace, load_suite, load_workspace

if TYPE_CHECKING:
    import pandas as pd

RUN_TABLES = ("runs", "records", "retrieved_slots", "claims", "question_scores", "chunks", "answer_sentences",
              "alignments")
"""`chunks` holds the suite's map (run_id NULL) and runs' own maps; a suite's rows go with the suite
(its runs are re-scored with it), a run's with the run."""

def eval_retrieved_sql(codes: str | None = None) -> str:
    """`eval_retrieved`: the stored slots of the runs being scored (chunks were mapped at staging:
    rank = slot, one counted row per document), their codes read as the `retrieved` view reads them
    (the staged runs' rows of `runs` are written after scoring); only the first k slots can score, and
    the judged slots beyond them (a condensed list, P'@k, takes its first k judged documents). With
    `codes` (a relation of run_id, question_code), only those questions' slots, found before decoding."""
    only = (f" SEMI JOIN {codes} c ON c.run_id = t.run_id AND c.question_code = t.question_code"
            if codes else "")
    return f"""
        SELECT t.run_id, q.question_id, t.rank,
               CASE WHEN s.unit = 'chunk' THEN coalesce(t.chunk_id, d.doc_id) ELSE d.doc_id END AS doc_id
        FROM retrieved_slots t{only} JOIN stage_runs r ON r.run_id = t.run_id JOIN suites s ON s.suite = r.suite
        JOIN questions q ON q.suite = r.suite AND q.position = t.question_code
        JOIN document_codes d ON d.suite = r.suite AND d.doc_code = t.doc_code
        WHERE t.counted AND (t.rank <= r.k OR t.grade IS NOT NULL)"""


# The engine's input relations, as views over the staging tables and the suite tables.
EVAL_VIEWS = {
    "eval_pairs": """
        SELECT r.run_id, r.suite, q.question_id, r.k,
               CASE WHEN s.question_id IS NULL THEN 'missing' WHEN s.error IS NOT NULL THEN 'failed' ELSE 'ok' END
                 AS status
        FROM stage_runs r JOIN questions q ON q.suite = r.suite
        LEFT JOIN stage_records s ON s.run_id = r.run_id AND s.question_id = q.question_id""",
    "eval_suites": "SELECT suite, max_claims FROM suites",
    "eval_labels": "SELECT suite, question_id, doc_id, grade FROM labels",
    "eval_support": """
        SELECT suite, question_id, claim_id, unnest(docs) AS doc_id FROM expected_claims
        UNION ALL SELECT suite, question_id, claim_id, unnest(docs) AS doc_id FROM assessed_claims""",
    "eval_partial_support": """
        SELECT suite, question_id, claim_id, unnest(partial_docs) AS doc_id FROM expected_claims
        UNION ALL SELECT suite, question_id, claim_id, unnest(partial_docs) AS doc_id FROM assessed_claims""",
    "eval_claim_labels": """
        SELECT suite, question_id, claim_id, true AS expected FROM expected_claims
        UNION ALL SELECT suite, question_id, claim_id, false AS expected FROM assessed_claims""",
    # In a passage-level suite a chunk is a unit of its own, with its document's access groups.
    "eval_documents": """
        SELECT suite, doc_id, access FROM documents
        UNION ALL
        SELECT c.suite, c.chunk_id, d.access FROM chunks c
        JOIN suites s ON s.suite = c.suite AND s.unit = 'chunk'
        JOIN documents d ON d.suite = c.suite AND d.doc_id = c.doc_id
        WHERE c.run_id IS NULL""",
    "eval_callers": "SELECT suite, question_id, caller FROM questions",
    "eval_retrieved": eval_retrieved_sql(),
    "eval_claims": "SELECT run_id, question_id, claim_id, position FROM stage_claims",
    "eval_citations": "SELECT run_id, question_id, claim_id, position, unit_id AS doc_id FROM stage_citations "
    "WHERE counted",
}

# Every staged ranking into `retrieved`, one row per slot. Per-record facts (cutoff, caller, chunk
# map) are joined before the ranking is unnested. In a run with a chunk map a chunk stands for its
# document (`scoring.store.chunks`): the document counts at its first chunk's slot; a run without one
# repeats no ID (checked at staging), so each of its IDs counts. A question's labels travel with its
# record as two lists and are looked up per slot: joining them to the unnested slots made DuckDB
# hash all slots (20M at 1M records) and spill. The CTEs are inlined (NOT MATERIALIZED): a
# materialized one is scanned by fewer threads than the staged records it came from.
RETRIEVED_INSERT = f"""
INSERT INTO retrieved_slots BY NAME
WITH rec AS NOT MATERIALIZED (
  SELECT g.run_id, g.question_id, g.items, r.suite, r.k, r.chunk_map, s.corpus_version, s.unit, q.caller,
         q.position AS question_code, l.label_units, l.label_grades
  FROM stage_rankings g
  JOIN stage_runs r ON r.run_id = g.run_id
  JOIN suites s ON s.suite = r.suite
  JOIN questions q ON q.suite = r.suite AND q.question_id = g.question_id
  LEFT JOIN (SELECT suite, question_id, list(doc_id) AS label_units, list(grade) AS label_grades
             FROM labels GROUP BY ALL) l ON l.suite = r.suite AND l.question_id = g.question_id
),
flat AS NOT MATERIALIZED (
  SELECT * EXCLUDE (items), unnest(items) AS item, unnest(range(1, len(items) + 1))::INTEGER AS rank FROM rec
),
plain AS (
  SELECT * EXCLUDE (chunk_map, item), item AS doc_id, NULL::VARCHAR AS chunk_id, NULL::VARCHAR AS chunk_version,
         NULL::VARCHAR AS chunk_text, item AS unit_id, true AS counted
  FROM flat WHERE chunk_map IS NULL
),
mapped AS (
  SELECT *, row_number() OVER (PARTITION BY run_id, question_id, unit_id ORDER BY rank) = 1 AS counted
  FROM (SELECT f.* EXCLUDE (chunk_map, item), coalesce(rc.doc_id, sc.doc_id, f.item) AS doc_id,
               coalesce(rc.chunk_id, sc.chunk_id) AS chunk_id, coalesce(rc.doc_version, sc.doc_version) AS chunk_version,
               coalesce(rc.text, sc.text) AS chunk_text,
               {unit_sql("f.unit", "f.item")} AS unit_id
        FROM flat f {chunk_joins("f", "f.item")}
        WHERE f.chunk_map IS NOT NULL)
),
slots AS (
  SELECT *, label_grades[list_position(label_units, unit_id)] AS grade
  FROM (SELECT * FROM plain UNION ALL BY NAME SELECT * FROM mapped)
)
SELECT t.run_id, t.question_code, t.rank, d.doc_code, t.grade, coalesce(t.grade, 0) >= $level AS relevant,
       t.rank <= t.k AS visible, coalesce({engine.restricted("t.caller", "d.access")}, false) AS restricted,
       t.chunk_id, coalesce(t.chunk_version, d.version, t.corpus_version) AS doc_version, t.counted, t.chunk_text
FROM slots t
LEFT JOIN (SELECT d.suite, d.doc_id, d.version, d.access, c.doc_code
           FROM documents d JOIN document_codes c ON c.suite = d.suite AND c.doc_id = d.doc_id) d
  ON d.suite = t.suite AND d.doc_id = t.doc_id
"""

# Staging relations as views over a stored database (attached as `stored`), for re-scoring at
# another cutoff.
STORED_STAGING = {
    "stage_records": "SELECT run_id, question_id, line, answer, context, latency_ms, cost_usd, error "
    "FROM stored.records",
    "stage_claims": "SELECT run_id, question_id, claim_id, position, text, citations FROM stored.claims",
    "stage_citations": """
        SELECT run_id, question_id, claim_id, unnest(range(0, len(cited_docs)))::INTEGER AS position,
               unnest(cited_docs) AS unit_id, true AS counted
        FROM stored.claims""",
}


@dataclass(frozen=True)
class RefreshSummary:
    """What a refresh did. `runs_scored`: runs with any score written (staged from their files, or
    only their questions whose labels changed); `runs_skipped`: the other runs of the workspace;
    `records`: records read from runs' files; `questions_rescored`: questions whose labels changed
    (a review decision, an edited question), re-scored in the `runs_rescored` runs whose files did
    not change."""

    db: Path
    runs_scored: int
    runs_skipped: int
    runs_removed: int
    records: int
    seconds: float
    questions_rescored: int = 0
    runs_rescored: int = 0
    decisions_only: bool = False
    """Only review files changed: their decisions were applied to the stored suites in place
    (`apply_decisions`)."""

    def line(self) -> str:
        rescored = (f" ({self.questions_rescored} changed questions re-scored in {self.runs_rescored} of them)"
                    if self.questions_rescored else "")
        if self.decisions_only:
            rescored += " (only review decisions changed: applied to the stored suite)"
        return (f"refreshed {self.db}: {self.runs_scored} runs scored{rescored}, {self.runs_skipped} unchanged and "
                f"skipped, {self.runs_removed} removed, {self.records} records, {self.seconds:.2f} s")


# --- scoring ------------------------------------------------------------------------------------


def define_eval_views(con: duckdb.DuckDBPyConnection, *, pairs: str | None = None) -> None:
    """The engine's input relations; `eval_pairs`, which every engine query joins, is computed once.
    With `pairs` (a relation of run_id, question_id), only those pairs of the staged runs."""
    for name, sql in EVAL_VIEWS.items():
        if name == "eval_pairs":
            only = f" SEMI JOIN {pairs} x ON x.run_id = r.run_id AND x.question_id = q.question_id" if pairs else ""
            con.execute(f"CREATE OR REPLACE TEMP TABLE scored_pairs AS {sql}{only}")
            sql = "SELECT * FROM scored_pairs"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")


def score_staged(con: duckdb.DuckDBPyConnection, *, level: int = 1, pairs: str | None = None) -> None:
    """Score every staged run into `question_scores`, `retrieved` and `claims` (set-based); with
    `pairs` (a relation of run_id, question_id), only those pairs, whose records alone are staged.

    `retrieved` is written first: the engine reads the rankings back from it (`eval_retrieved`)."""
    define_eval_views(con, pairs=pairs)
    # Insertion order is kept: rows land run by run in file order, so one record's rows share row
    # groups and a reader's lookup of one question skips the rest.
    con.execute("INSERT INTO records BY NAME SELECT * FROM stage_records")
    con.execute(RETRIEVED_INSERT, {"level": level})
    if pairs:
        # the pairs' slots, found by their codes and read once: the view would read every slot of the
        # staged runs as IDs
        con.execute(f"""CREATE OR REPLACE TEMP TABLE scored_retrieved AS
            WITH codes AS (SELECT x.run_id, q.position AS question_code FROM {pairs} x
                           JOIN stage_runs r ON r.run_id = x.run_id
                           JOIN questions q ON q.suite = r.suite AND q.question_id = x.question_id)
            {eval_retrieved_sql("codes")}""")
        con.execute("CREATE OR REPLACE TEMP VIEW eval_retrieved AS SELECT * FROM scored_retrieved")
    # Claim verdicts and restricted exposures, computed once for both question_scores and claims.
    con.execute(f"CREATE OR REPLACE TEMP TABLE scored_restricted AS {engine.restricted_sql()}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE scored_verdicts AS {engine.verdicts_sql('scored_restricted')}")
    con.execute(
        f"""INSERT INTO question_scores BY NAME
        SELECT s.*, r.suite, s.status = 'missing' AS missing, s.status = 'failed' AS failed,
               rec.latency_ms, rec.cost_usd
        FROM ({engine.question_scores_sql(verdicts_from='scored_verdicts', restricted_from='scored_restricted')}) s
        JOIN stage_runs r ON r.run_id = s.run_id
        LEFT JOIN stage_records rec ON rec.run_id = s.run_id AND rec.question_id = s.question_id""",
        {"level": level},
    )
    con.execute(
        """INSERT INTO claims BY NAME
        SELECT c.run_id, c.question_id, c.claim_id, c.position, c.text, c.citations, v.supported, v.reasons,
               -- without a chunk map a claim's citations are its documents (a repeat was refused)
               CASE WHEN r.chunk_map IS NULL THEN c.citations ELSE coalesce(m.cited_docs, []) END AS cited_docs
        FROM stage_claims c
        JOIN stage_runs r ON r.run_id = c.run_id
        LEFT JOIN (SELECT t.run_id, t.question_id, t.claim_id,
                          list(t.unit_id ORDER BY t.position) FILTER (WHERE t.counted) AS cited_docs
                   FROM stage_citations t JOIN stage_runs r ON r.run_id = t.run_id
                   WHERE r.chunk_map IS NOT NULL GROUP BY ALL) m
          ON m.run_id = c.run_id AND m.question_id = c.question_id AND m.claim_id = c.claim_id
        LEFT JOIN scored_verdicts v
          ON v.run_id = c.run_id AND v.question_id = c.question_id AND v.claim_id = c.claim_id"""
    )


def count_records(con: duckdb.DuckDBPyConnection, runs: str) -> None:
    """`runs.n_records`, `n_missing`, `n_failed` of the runs in the relation `runs` (run_id), from
    their `question_scores` rows."""
    con.execute(f"""
        UPDATE runs SET n_records = c.n_records, n_missing = c.n_missing, n_failed = c.n_failed
        FROM (SELECT run_id, count(*) FILTER (WHERE NOT missing) AS n_records,
                     count(*) FILTER (WHERE missing) AS n_missing, count(*) FILTER (WHERE failed) AS n_failed
              FROM question_scores WHERE run_id IN (SELECT run_id FROM {runs}) GROUP BY run_id) c
        WHERE runs.run_id = c.run_id""")


def write_runs(con: duckdb.DuckDBPyConnection, runs: list[Run]) -> None:
    import json

    import pandas as pd

    insert_frame(con, "runs", pd.DataFrame([{
        "run_id": r.run_id, "suite": r.suite, "suite_version": r.manifest["suite_version"],
        "corpus_version": r.manifest["corpus_version"], "created_at": r.manifest["created_at"],
        "code_revision": r.manifest["code_revision"], "retrieval": json.dumps(r.manifest["retrieval"]),
        "k": r.k, "prompt_revision": r.manifest["prompt_revision"], "model": r.manifest["model"],
        "generation": json.dumps(r.manifest["generation"]), "rubric_version": r.manifest["rubric_version"],
        "run_group": r.manifest.get("group"), "repeat": r.manifest.get("repeat"), "notes": r.manifest.get("notes"),
        "manifest": json.dumps(r.manifest), "files_hash": r.files_hash, "n_records": 0, "n_missing": 0,
        "n_failed": 0,
    } for r in runs], dtype=object))
    count_records(con, "stage_runs")
    con.execute("UPDATE runs SET chunk_map = s.chunk_map FROM stage_runs s WHERE runs.run_id = s.run_id")
    con.execute("UPDATE runs SET labels_hash = x.labels_hash FROM stage_runs s JOIN suites x ON x.suite = s.suite "
                "WHERE runs.run_id = s.run_id")


def read_deferred(con: duckdb.DuckDBPyConnection, suite: Suite, problems: Problems) -> Suite:
    """A suite left unread (`Suite.deferred`), read: staged set-based (`scoring.store.suite_bulk`) with
    its reviewers' decisions applied (`scoring.store.decisions.review_staged`), or on any doubt read
    in Python, which names every problem."""
    if stage_suite(con, suite):
        if review_staged(con, suite, problems):
            return suite
        drop_staged(con)
    full = load_suite(suite.folder, problems)
    return full if full is not None else dataclasses.replace(suite, deferred=False)


def override_k(con: duckdb.DuckDBPyConnection, k: int | None, table: str = "stage_runs") -> None:
    """The what-if cutoff: every run in `table` (the staged runs, or `runs` of an in-memory
    database) takes cutoff `k` instead of its own; None keeps each run's own k."""
    if table not in ("stage_runs", "runs"):
        raise ValueError(f"not a table of runs: {table!r}")
    if k is not None:
        con.execute(f"UPDATE {table} SET k = ?", [k])


def stage(con: duckdb.DuckDBPyConnection, runs: list[Run], problems: Problems, *, k: int | None = None,
          bulk: bool = True) -> None:
    """Read, check and stage the records of `runs`; `k` overrides every run's cutoff (what-if).

    The bulk path (`scoring.store.bulk`) stages a clean workspace; on any doubt, or with `bulk=False`, the
    rule-by-rule path (`scoring.store.records`) checks and stages, naming every problem.
    """
    for run in runs:
        write_chunks(con, run.suite, run.run_id, run.chunks or {})
    stage_runs(con, runs)
    if not (bulk and stage_bulk(con, runs)):
        read_lines(con, runs, problems)
        stage_records(con, runs, problems)
    if not problems:
        align_staged(con, problems, {run.run_id: str(run.records_path) for run in runs})
    override_k(con, k)


# --- the refresh --------------------------------------------------------------------------------


def _progress(enabled: bool):
    from contextlib import nullcontext

    if not enabled or not sys.stderr.isatty():
        return nullcontext(None)
    from rich.progress import Progress

    return Progress(transient=True)


@dataclass(frozen=True)
class _Changes:
    """What differs between the workspace and the live database: what `refresh` routes on.

    `ws`: the workspace (suites the database holds byte for byte left unread); `suites`: the changed
    suites (new, edited or with new review files); `run_ids`: the runs to score from their files
    (new or changed, or every run when the database was scored at another relevance level);
    `outdated`: the database was written with another schema version (its scored tables are rebuilt).
    """

    ws: Workspace
    pins: list
    outdated: bool
    exists: bool
    old_suites: dict[str, tuple[str, str]]
    suites: list[Suite]
    run_ids: set[str]
    removed_runs: list[str]
    removed_suites: list[str]
    pins_changed: bool

    @property
    def nothing(self) -> bool:
        """Whether the database is up to date with the workspace."""
        return not (self.suites or self.run_ids or self.removed_runs or self.removed_suites or self.pins_changed) \
            and self.exists and not self.outdated

    @property
    def decisions_only(self) -> bool:
        """Whether the only files that changed are review files (`Suite.reviews_only`)."""
        return all(s.reviews_only for s in self.suites) and not (
            self.run_ids or self.removed_runs or self.removed_suites or self.pins_changed or self.outdated)


def _changes(workspace: Path, db: Path, problems: Problems, level: int) -> _Changes:
    """Read the workspace (suites the database holds byte for byte are not parsed again) and compare
    it with the live database's hashes, pins and relevance level; problems found go to `problems`."""
    stored_version = Database(db).schema_version()
    # A database of an older schema keeps its verdicts and logs; its scored tables are rebuilt.
    outdated = stored_version is not None and stored_version != str(SCHEMA_VERSION)
    old_suites, old_runs, hashes = store.stored_hashes(db)
    ws = load_workspace(workspace, problems, stored=old_suites, defer=True, hashes=hashes)
    pins = read_pins(ws, problems)  # the standing baselines: published even when no run changed
    pins_changed = pins != _stored_pins(db, outdated)
    changed_suites = [s for s in ws.suites.values() if old_suites.get(s.name, ("",))[0] != s.files_hash]
    changed_runs = {r.run_id for r in ws.runs.values() if old_runs.get(r.run_id) != r.files_hash}
    if not outdated and db.exists() and _stored_level(db) != level:
        changed_runs = set(ws.runs)  # every score was taken at another relevance level
    removed_runs = sorted(set(old_runs) - set(ws.runs))
    removed_suites = sorted(set(old_suites) - set(ws.suites))
    return _Changes(ws, pins, outdated, db.exists(), old_suites, changed_suites, changed_runs, removed_runs,
                    removed_suites, pins_changed)


def refresh(workspace: Path, db: Path, *, progress: bool = False, level: int = 1, bulk: bool = True,
            memory: str | None = None) -> RefreshSummary:
    """Validate `workspace`, score what changed, and replace `db` atomically.

    A run whose files changed (or that is new) is staged from its files and scored; a removed run's
    rows go. A changed suite re-scores its runs: only the questions whose rows changed
    (`scoring.store.rescore`), from the rows the database holds, when nothing suite-wide changed;
    every run of the suite from its files otherwise. The result equals a refresh from scratch.

    Raises ValidationError listing every problem; the database is then untouched. `bulk=False`
    checks every record rule by rule even when the workspace is clean (slower; for cross-checks).
    `memory`: DuckDB's memory budget (`database.memory_budget`: by default a share of the machine's);
    running out of it, or of disk, raises `OutOfResources` naming the step, the database untouched.

    One of three routes, by what changed (`_changes`): nothing (`_unchanged`: nothing written);
    only review files, in a clean workspace (`apply_decisions`: in place, one transaction); anything
    else, or decisions the stored suites do not match (`_rescore_copy`: on a private copy published
    in one rename; a new database, or one of another schema version, is built whole this way).
    """
    started = time.perf_counter()
    problems = Problems()
    budget = store.memory_budget(memory)
    with store.writer_lock(db):
        store.remove_stale_copies(db)
        store.settle(db)
        changes = _changes(workspace, db, problems, level)
        if changes.nothing:
            return _unchanged(db, changes, problems, started)
        if changes.decisions_only and not problems:
            with _resources("applying the review decisions", budget):
                summary = apply_decisions(workspace, db, changes.ws, changes.suites, problems, level=level,
                                          started=started, memory=budget)
            if summary is not None:
                return summary
        return _rescore_copy(workspace, db, changes, problems, progress=progress, level=level, bulk=bulk,
                             started=started, memory=budget)


class _Step:
    """The step a refresh is in, for the error that names it (`_resources`)."""

    def __init__(self, name: str):
        self.name = name


@contextlib.contextmanager
def _resources(step: str | _Step, budget: str) -> Iterator[None]:
    """Turn DuckDB's out-of-memory error, and a full disk, into `OutOfResources` naming the step (a
    `_Step` names the one it is in when the error comes) and what to change."""
    try:
        yield
    except duckdb.OutOfMemoryException as error:
        name = step.name if isinstance(step, _Step) else step
        raise OutOfResources(name, f"memory (DuckDB's budget is {budget})",
                             "give it more with --memory, e.g. --memory 16GB") from error
    except (duckdb.IOException, OSError) as error:
        if "No space left on device" not in str(error) and getattr(error, "errno", None) != errno.ENOSPC:
            raise
        name = step.name if isinstance(step, _Step) else step
        raise OutOfResources(name, "disk space", "free space where the database and its working copy live (and "
                             "DuckDB's spill folder beside it)") from error


def _unchanged(db: Path, changes: _Changes, problems: Problems, started: float) -> RefreshSummary:
    """The route when the database is up to date with the workspace: nothing is written. Raises
    ValidationError for a problem of the workspace (a file the database holds unchanged, or a pin)."""
    problems.raise_if_any()
    return RefreshSummary(db, 0, len(changes.ws.runs), 0, 0, time.perf_counter() - started)


def _rescore_copy(workspace: Path, db: Path, changes: _Changes, problems: Problems, *, progress: bool, level: int,
                  bulk: bool, started: float, memory: str | None = None) -> RefreshSummary:
    """The route for any change but review decisions alone: runs and suites new, changed or removed,
    pins, another relevance level or schema version, a workspace with problems, or decisions the
    stored suites do not match. Works on a private copy of the database (`store.working_copy`) and
    publishes it in one atomic rename: all or nothing, the live file untouched until then. Raises
    ValidationError listing every problem, the copy removed."""
    ws, changed_runs, outdated, removed_runs = changes.ws, changes.run_ids, changes.outdated, changes.removed_runs
    for suite in [s for s in changes.suites if s.reviews_only]:  # read in full after all
        full = load_suite(suite.folder, problems, defer=True)
        ws.suites[suite.name] = full if full is not None else suite
    changed_suites = [ws.suites[s.name] for s in changes.suites]

    budget = store.memory_budget(memory)
    step = _Step("copying the database")
    with _resources(step, budget):
        temp = store.working_copy(db)
        con = store.open_for_write(temp, budget)
        if outdated:
            for name in dict.fromkeys((*VIEWS, *SUITE_TABLES, *RUN_TABLES)):
                schema.drop_relation(con, name)
            create_schema(con)
    try:
        with _resources(step, budget), _progress(progress) as bar:
            task = bar.add_task("scoring", total=4) if bar else None
            step.name = "writing the suites"
            questions = _write_suites(con, ws, changed_suites, changes, problems)
            changed_suites = [ws.suites[s.name] for s in changed_suites]
            changed_names = {s.name for s in changed_suites}
            to_score = [r for r in ws.runs.values()
                        if r.run_id in changed_runs or (r.suite in changed_names and r.suite not in questions)]
            to_rescore = [r for r in ws.runs.values() if r.run_id not in changed_runs and questions.get(r.suite)]
            for run_id in [*removed_runs, *(r.run_id for r in to_score)]:
                for table in RUN_TABLES:
                    con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            for run in ws.runs.values():
                # rewriting a suite's tables removed its runs' own chunk maps; staging writes those
                # of the runs it stages
                if run.suite in changed_names and run.run_id not in {r.run_id for r in to_score}:
                    write_chunks(con, run.suite, run.run_id, run.chunks or {})
            bar and bar.advance(task)
            records = 0
            con.execute("CREATE OR REPLACE TEMP TABLE scored_runs (run_id VARCHAR)")
            if to_score or problems:
                step.name = "reading the runs' records"
                stage(con, to_score, problems, bulk=bulk)
                problems.raise_if_any()
                bar and bar.advance(task)
                step.name = "scoring the runs"
                score_staged(con, level=level)
                write_alignments(con)
                records = con.execute("SELECT count(*) FROM stage_records").fetchall()[0][0]
                write_runs(con, to_score)
                con.execute("INSERT INTO scored_runs SELECT run_id FROM stage_runs")
            step.name = "re-scoring the questions whose labels changed"
            rescore_questions(con, to_rescore, problems, level=level)
            # every run carries its suite's labels hash, whichever way its scores were brought up to date
            con.execute("UPDATE runs SET labels_hash = x.labels_hash FROM suites x "
                        "WHERE x.suite = runs.suite AND runs.labels_hash IS DISTINCT FROM x.labels_hash")
            bar and bar.advance(task)
            write_pins(con, changes.pins)
            step.name = "building the summary tables"
            build_summaries(con, scored=None if outdated else "scored_runs",
                            rescored="rescore_pairs" if to_rescore else None)
            runs_scored = len(to_score) + len(to_rescore)
            skipped = len(ws.runs) - runs_scored
            _log(con, ws, level, runs_scored, skipped, len(removed_runs), records, started)
            step.name = "writing the database file"
            con.execute("CHECKPOINT")
            con.close()
            bar and bar.advance(task)
            store.publish(temp, db)
    except BaseException:
        con.close()
        temp.unlink(missing_ok=True)
        temp.with_name(temp.name + ".wal").unlink(missing_ok=True)
        raise
    return RefreshSummary(db, runs_scored, skipped, len(removed_runs), records, time.perf_counter() - started,
                          questions_rescored=sum(questions[s] for s in {r.suite for r in to_rescore}),
                          runs_rescored=len(to_rescore))


def _write_suites(con: duckdb.DuckDBPyConnection, ws: Workspace, suites: list[Suite], changes: _Changes,
                  problems: Problems) -> dict[str, int]:
    """Remove the removed suites' rows and write the changed `suites` (a deferred one is read first,
    and replaces its entry in `ws.suites`). Returns suite -> how many of its questions to re-score in
    its unchanged runs, listed in the temp table `rescore_questions`; a suite absent from it re-scores
    all its runs from their files."""
    for suite_name in changes.removed_suites:
        for table in SUITE_TABLES:
            con.execute(f"DELETE FROM {table} WHERE suite = ?", [suite_name])
    questions: dict[str, int] = {}
    con.execute("CREATE OR REPLACE TEMP TABLE rescore_questions (suite VARCHAR, question_id VARCHAR)")
    for suite in suites:
        if suite.deferred:
            suite = ws.suites[suite.name] = read_deferred(con, suite, problems)
        # a workspace with problems is refused: every run of a changed suite is then
        # checked from its files, so that the report names all of them
        partial = suite.name in changes.old_suites and not problems
        if partial:
            snapshot_suite(con, suite.name)
        same_documents = write_suite(con, suite, changes_only=partial)
        found = changed_questions(con, suite.name) if partial and same_documents else None
        if found is not None:
            questions[suite.name] = found
    return questions


def _log(con: duckdb.DuckDBPyConnection, ws: Workspace, level: int, runs_scored: int, skipped: int, removed: int,
         records: int, started: float) -> None:
    """The registry, `meta` (with the file sets' hashes for the next refresh) and this refresh's
    `refresh_log` row."""
    store.write_registry(con)
    store.write_meta(con, workspace=str(ws.root), refreshed_at=datetime.now(timezone.utc).isoformat(),
                     relevance_level=level, **{HASHES_KEY: ws.hashes.dumps()})
    con.execute("INSERT INTO refresh_log VALUES (now(), ?, ?, ?, ?, ?, ?)",
                [str(ws.root), runs_scored, skipped, removed, records, time.perf_counter() - started])


def _stored_level(db: Path) -> int | None:
    """The relevance level the live database was scored at (None when it does not say)."""
    with store.connect_readonly(db) as con:
        row = con.execute("SELECT value FROM meta WHERE key = 'relevance_level'").fetchone()
    return None if row is None else int(row[0])


def apply_decisions(workspace: Path, db: Path, ws: Workspace, suites: list[Suite], problems: Problems, *,
                    level: int, started: float, memory: str | None = None) -> RefreshSummary | None:
    """The refresh when the only files that changed are review files of `suites` (`Suite.reviews_only`):
    the decisions are applied to the stored suites (`scoring.store.decisions`) and the questions whose
    labels changed re-scored in every run of their suite, all in one transaction on the live file. A
    change of a few rows needs no private copy of the database: DuckDB commits a transaction whole or
    not at all, a killed process included (its write-ahead log replays committed transactions only),
    and readers wait for the writer (`scoring.store.database`). None, nothing written, when a stored
    suite does not match its files (the caller then reads the suites in full); raises ValidationError
    for a problem of the review files, nothing written."""
    con = store.connect_for_write(db, wait_seconds=60.0, what="apply the decisions",
                                  config={"memory_limit": store.memory_budget(memory)})
    try:
        con.execute("BEGIN TRANSACTION")
        parts = {}
        for suite in suites:
            found = stored_part(con, suite, problems)
            if found is None:
                con.execute("ROLLBACK")
                return None
            parts[suite.name] = found[0]
        problems.raise_if_any()
        con.execute("CREATE OR REPLACE TEMP TABLE rescore_questions (suite VARCHAR, question_id VARCHAR)")
        questions = {suite.name: write_part(con, suite, parts[suite.name]) for suite in suites}
        to_rescore = [r for r in ws.runs.values() if questions.get(r.suite)]
        con.execute("CREATE OR REPLACE TEMP TABLE scored_runs (run_id VARCHAR)")
        rescore_questions(con, to_rescore, problems, level=level)
        con.execute("UPDATE runs SET labels_hash = x.labels_hash FROM suites x "
                    "WHERE x.suite = runs.suite AND runs.labels_hash IS DISTINCT FROM x.labels_hash")
        build_summaries(con, scored="scored_runs", rescored="rescore_pairs" if to_rescore else None)
        _log(con, ws, level, len(to_rescore), len(ws.runs) - len(to_rescore), 0, 0, started)
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass  # no transaction is open (it ended, or never began)
        raise
    finally:
        con.close()
    return RefreshSummary(db, len(to_rescore), len(ws.runs) - len(to_rescore), 0, 0, time.perf_counter() - started,
                          questions_rescored=sum(questions[s] for s in {r.suite for r in to_rescore}),
                          runs_rescored=len(to_rescore), decisions_only=True)


def rescore_questions(con: duckdb.DuckDBPyConnection, runs: list[Run], problems: Problems, *,
                      level: int = 1) -> None:
    """Re-score, in `runs` (whose files did not change), the questions of their suites listed in
    `rescore_questions` (suite, question_id), from the rows the database holds
    (`scoring.store.rescore`); `rescore_pairs` (run_id, question_id) is left for the summaries. Raises
    when an answer's aligned sentences now make more claims than the suite allows (the record's file
    and line)."""
    for name in ("stage_records", "stage_rankings"):  # views over the bulk path's parsed lines
        drop_relation(con, name)
    con.execute("DROP TABLE IF EXISTS bulk")
    stage_runs(con, runs)
    pairs_to_rescore(con)
    if not runs:
        return
    restage_stored(con)
    align_staged(con, problems, {run.run_id: str(run.records_path) for run in runs})
    problems.raise_if_any()
    score_staged(con, level=level, pairs="rescore_pairs")
    write_alignments(con)
    count_records(con, "stage_runs")


def _stored_pins(db: Path, outdated: bool) -> list:
    """The pins the live database holds (none when there is no database)."""
    if outdated or not db.exists():
        return []
    with store.connect_readonly(db) as con:
        return stored_pins(con)


# --- the score table ----------------------------------------------------------------------------

TABLE_COLUMNS = SEED_KEYS


def _display(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.2f}"


def score_workspace_in_memory(workspace: Path, *, k: int | None = None, runs: list[str] | None = None,
                              level: int = 1, bulk: bool = True) -> duckdb.DuckDBPyConnection:
    """Validate and score a workspace into an in-memory database (nothing written to disk)."""
    problems = Problems()
    ws = load_workspace(workspace, problems)
    problems.raise_if_any()
    selected = _select_runs(ws, runs)
    con = duckdb.connect()
    create_schema(con)
    for suite in ws.suites.values():
        write_suite(con, suite)
    stage(con, selected, problems, k=k, bulk=bulk)
    problems.raise_if_any()
    score_staged(con, level=level)
    write_alignments(con)
    write_runs(con, selected)
    override_k(con, k, "runs")
    return con


def _select_runs(ws: Workspace, runs: list[str] | None) -> list[Run]:
    from ..errors import invalid

    if runs is None:
        return list(ws.runs.values())
    unknown = [r for r in runs if r not in ws.runs]
    if unknown:
        raise invalid(f"not a run of this workspace (runs: {', '.join(ws.runs)})", "--runs", unknown[0])
    return [ws.runs[r] for r in runs]


def rescore_stored(db: Path, *, k: int, level: int = 1) -> duckdb.DuckDBPyConnection:
    """Re-score a stored database at another cutoff, in memory (the file is only read)."""
    Database(db).connect().close()  # a missing file, or one of another schema version, is a clear error
    con = duckdb.connect()
    con.execute("ATTACH ? AS stored (READ_ONLY)", [str(db)])
    con.execute("USE stored")
    for name, sql in STORED_STAGING.items():
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
    con.execute("CREATE OR REPLACE TEMP TABLE stage_runs AS SELECT run_id, suite, k FROM runs")
    override_k(con, k)
    con.execute("CREATE OR REPLACE TEMP TABLE question_scores AS SELECT * FROM stored.question_scores LIMIT 0")
    define_eval_views(con)
    con.execute(
        f"""INSERT INTO temp.question_scores BY NAME
        SELECT s.*, r.suite, s.status = 'missing' AS missing, s.status = 'failed' AS failed, NULL AS latency_ms,
               NULL AS cost_usd
        FROM ({engine.question_scores_sql()}) s JOIN stage_runs r ON r.run_id = s.run_id""",
        {"level": level},
    )
    return con


def _unreviewed_support(column: str, grade: str) -> str:
    """The stored (claim, document) pairs of `column` at one support grade (`grade`, as review files write
    it: ``true``, ``"partial"``) with each review's change undone: a pair a review gave that grade goes,
    a pair a review took from it comes back."""
    return f"""
        (SELECT suite, question_id, claim_id, unnest({column}) AS doc_id FROM stored.expected_claims
         EXCEPT
         SELECT suite, question_id, claim_id, doc_id FROM stored.label_changes
         WHERE kind = 'support' AND reviewed = '{grade}')
        UNION
        SELECT suite, question_id, claim_id, doc_id FROM stored.label_changes
        WHERE kind = 'support' AND original = '{grade}'"""


UNREVIEWED_LABELS = {
    # the stored (reviewed) labels with each label change undone: a grade a review added goes, a changed
    # one takes its value in the suite's files back
    "eval_labels": """
        SELECT l.suite, l.question_id, l.doc_id, coalesce(TRY_CAST(c.original AS INTEGER), l.grade) AS grade
        FROM stored.labels l
        LEFT JOIN stored.label_changes c ON c.suite = l.suite AND c.question_id = l.question_id
                                        AND c.kind = 'relevance' AND c.doc_id = l.doc_id
        WHERE c.question_id IS NULL OR c.original IS NOT NULL""",
    "eval_support": _unreviewed_support("docs", "true") + """
        UNION ALL SELECT suite, question_id, claim_id, unnest(docs) AS doc_id FROM stored.assessed_claims""",
    "eval_partial_support": _unreviewed_support("partial_docs", '"partial"') + """
        UNION ALL SELECT suite, question_id, claim_id, unnest(partial_docs) AS doc_id FROM stored.assessed_claims""",
    "eval_claim_labels": """
        SELECT suite, question_id, claim_id, true AS expected FROM stored.expected_claims
        UNION ALL SELECT suite, question_id, claim_id, false AS expected FROM stored.assessed_claims""",
}
"""The engine's label relations as the suite's files have them, before any review."""


def rescore_unreviewed(con: duckdb.DuckDBPyConnection, run_ids: list[str], question_ids: list[str], *,
                       level: int = 1) -> pd.DataFrame:
    """`question_scores` rows of these runs and questions scored under the suite's labels before any
    review (`UNREVIEWED_LABELS`), from a stored database attached as `stored` (`Database.scratch`)."""
    for name, sql in STORED_STAGING.items():
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
    con.execute("CREATE OR REPLACE TEMP TABLE stage_runs AS SELECT run_id, suite, k FROM stored.runs "
                "WHERE list_contains(?::VARCHAR[], run_id)", [list(run_ids)])
    define_eval_views(con)
    con.execute("DELETE FROM scored_pairs WHERE NOT list_contains(?::VARCHAR[], question_id)", [list(question_ids)])
    for name, sql in UNREVIEWED_LABELS.items():
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
    return con.execute(f"SELECT * FROM ({engine.question_scores_sql()})", {"level": level}).df()


def score_table(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None) -> str:
    """The seed's table: header, then one line per question (suite order) and run (ID order)."""
    rows = con.execute(
        f"""SELECT s.question_id, s.run_id, s.k, s.status, {', '.join('s.' + c for c in TABLE_COLUMNS)}
        FROM question_scores s JOIN questions q ON q.suite = s.suite AND q.question_id = s.question_id
        WHERE ?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], s.run_id)
        ORDER BY s.suite, q.position, s.run_id""",
        [runs, runs],
    ).fetchall()
    cutoffs = {row[2] for row in rows}
    k = str(cutoffs.pop()) if len(cutoffs) == 1 else "k"
    lines = [f"case system | P@{k} R@{k} RR@{k} support coverage abstention"]
    for question, run, _, status, *values in rows:
        note = "" if status == "ok" else f"  [{status}]"
        lines.append(f"{question} {run} | {' '.join(_display(v) for v in values)}{note}")
    return "\n".join(lines)



"""The pool to judge and what the relabelling changed give what their plain formulations give.

`scoring.decide.pool.unjudged` (one integer of runs per document, only the rows up to the `limit`-th
scored for their question's outcome) against the query that lists every unjudged document with its
runs and outcome before sorting; `scoring.decide.relabel.relabelling` (re-scoring on a copy cut to the
touched questions, no second comparison when no review touched the compared questions) against the
re-scoring of the whole file. On the bundled demo (a group of repeats, two reviewers) and on a
synthetic suite with and without review decisions.
"""
from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from tiers import sized, some

from fixtures import synth_db

from scoring.decide import pool as P
from scoring.decide.comparison import compare, read_inputs
from scoring.decide.policy import parse_policy
from scoring.decide.relabel import CHANGE_COLUMNS, relabelling
from scoring.decide.scores import SCORE_COLUMNS
from scoring.errors import ValidationError
from scoring.metrics.registry import BY_KEY
from scoring.store.database import Database
from scoring.store.refresh import refresh, rescore_unreviewed

T = "2026-11-30T10:00:00Z"


# -- the plain formulations --------------------------------------------------------------------------------

def reference_unjudged(con: duckdb.DuckDBPyConnection, runs: list[str], *, depth: int | None = None,
                       limit: int | None = None) -> pd.DataFrame:
    """Every unjudged (question, document) of the runs with its runs and its question's outcome, sorted."""
    runs = list(dict.fromkeys(runs))
    suite = con.execute("SELECT suite FROM runs WHERE run_id = ?", [runs[0]]).fetchone()[0]
    return con.execute(f"""
        WITH pooled AS (
          SELECT t.question_id, CASE WHEN s.unit = 'chunk' THEN coalesce(t.chunk_id, t.doc_id) ELSE t.doc_id END
                   AS doc_id,
                 list(DISTINCT t.run_id ORDER BY t.run_id) AS runs, min(t.rank) AS best_rank
          FROM retrieved t JOIN runs r ON r.run_id = t.run_id JOIN suites s ON s.suite = r.suite
          WHERE list_contains($runs, t.run_id) AND t.counted AND t.grade IS NULL
            AND t.rank <= coalesce($depth, r.k)
          GROUP BY ALL
        ),
        outcome AS (
          SELECT question_id, count(DISTINCT status) > 1 OR {P._DIFFERS} AS differs
          FROM question_scores WHERE list_contains($runs, run_id) GROUP BY question_id
        )
        SELECT p.question_id, p.doc_id, p.runs, p.best_rank, coalesce(o.differs, false) AS differs
        FROM pooled p
        JOIN questions q ON q.suite = $suite AND q.question_id = p.question_id
        LEFT JOIN outcome o ON o.question_id = p.question_id
        ORDER BY len(p.runs) DESC, p.best_rank, differs DESC, q.position, p.doc_id
        LIMIT $limit""", {"runs": runs, "depth": depth, "suite": suite,
                          "limit": limit if limit is not None else 2**62}).df()


def reference_relabelling(db: Path, baseline: str, candidate: str, *, policy=None):
    """Both comparisons, the touched questions re-scored on the whole file; (changes, values, reviewed, unreviewed)."""
    door = Database(db)
    with door.connect() as con:
        inputs = read_inputs(con, baseline, candidate, with_text=False)
        changes = con.execute("SELECT * FROM label_changes WHERE suite = ? ORDER BY question_id, doc_id",
                              [inputs.baseline.suite]).df()
    reviewed = compare(inputs, baseline, candidate, policy=policy)
    touched = sorted(set(changes["question_id"]) & set(inputs.questions.index))
    runs = [*inputs.baseline.run_ids, *inputs.candidate.run_ids]
    with door.scratch() as scratch:
        rescored = rescore_unreviewed(scratch, runs, touched) if touched else pd.DataFrame()
    unreviewed = compare(_reference_swapped(inputs, rescored), baseline, candidate, policy=policy)
    rows = []
    for q in touched:
        for key in BY_KEY:
            old = [unreviewed.values[s][key].get(q) for s in ("baseline", "candidate")]
            new = [reviewed.values[s][key].get(q) for s in ("baseline", "candidate")]
            if any(_differs(a, b) for a, b in zip(old, new)):
                rows.append({"question_id": q, "metric": key, "baseline_unreviewed": old[0], "baseline": new[0],
                             "candidate_unreviewed": old[1], "candidate": new[1]})
    return changes, pd.DataFrame(rows, columns=list(CHANGE_COLUMNS)), reviewed, unreviewed


def _differs(a, b) -> bool:
    a_na, b_na = a is None or a != a, b is None or b != b
    return a_na != b_na or (not a_na and abs(float(a) - float(b)) > 1e-12)


def _reference_swapped(inputs, rescored: pd.DataFrame):
    if rescored.empty:
        return inputs
    rows = inputs.rows
    slot_of = {q: i for i, q in enumerate(inputs.questions.index)}
    run_of = {r: i for i, r in enumerate(rows.run_ids)}
    values = rows.values.copy()
    at = {(int(r), int(s)): i for i, (r, s) in enumerate(zip(rows.run, rows.slot))}
    for _, row in rescored.iterrows():
        i = at.get((run_of.get(row["run_id"], -1), slot_of.get(row["question_id"], -1)))
        if i is None:
            continue
        values[i] = [np.nan if row[c] is None or pd.isna(row[c]) else float(row[c]) for c in SCORE_COLUMNS]
    questions = inputs.questions.copy()
    answerable = rescored.groupby("question_id")["answerable"].first()
    questions.loc[answerable.index.intersection(questions.index), "answerable"] = answerable.astype(bool)
    return replace(inputs, rows=replace(rows, values=np.asfortranarray(values)), questions=questions)


# -- the databases -----------------------------------------------------------------------------------------

def _review_some(workspace: Path, db: Path) -> int:
    """Grade decisions on the synthetic suite: unjudged documents a run ranks first made relevant (on
    two questions nothing was relevant for: they become answerable), relevant ones it ranks first given
    a higher grade; returns how many."""
    with duckdb.connect(str(db), read_only=True) as con:
        suite = con.execute("SELECT suite FROM suites").fetchone()[0]
        added = con.execute("SELECT question_id, doc_id FROM retrieved WHERE rank = 1 AND grade IS NULL "
                            "ORDER BY question_id, run_id LIMIT 6").fetchall()
        unanswerable = con.execute(
            "SELECT t.question_id, t.doc_id FROM retrieved t JOIN questions q ON q.question_id = t.question_id "
            "WHERE t.rank = 1 AND NOT q.answerable ORDER BY t.question_id, t.run_id LIMIT 2").fetchall()
        raised = con.execute("SELECT question_id, doc_id FROM retrieved WHERE rank = 1 AND grade BETWEEN 1 AND 2 "
                              "ORDER BY question_id DESC, run_id LIMIT 4").fetchall()
    lines = [{"at": T, "reviewer": "ana", "kind": "relevance", "question_id": q, "doc_id": d, "grade": g}
             for (q, d), g in [*((pair, 2) for pair in dict.fromkeys(added + unanswerable)), *((pair, 3) for pair in dict.fromkeys(raised))]]
    path = workspace / "suites" / suite / "reviews" / "ana.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return len(lines)


@pytest.fixture(scope="module")
def databases(demo_db, tmp_path_factory) -> dict[str, Path]:
    """name -> database: the bundled demo; a synthetic suite (3 runs; 2,000 questions, 1,500 in the fast
    tier: still above `stats.LARGE_SAMPLE`) without and with review decisions."""
    synth = synth_db(tmp_path_factory, sized(2000, 1500), 3, seed=5)
    root = tmp_path_factory.mktemp("reviewed")
    workspace = Path(shutil.copytree(synth.parent / "ws", root / "ws"))
    assert _review_some(workspace, synth) == 12
    refresh(workspace, root / "reviewed.duckdb")
    return {"demo": demo_db, "synth": synth, "reviewed": root / "reviewed.duckdb"}


def _run_sets(db: Path) -> list[list[str]]:
    """Every pair of runs of a suite (both orders of the first), and every suite's runs together."""
    with duckdb.connect(str(db), read_only=True) as con:
        by_suite = con.execute("SELECT suite, list(run_id ORDER BY run_id) FROM runs GROUP BY suite ORDER BY suite"
                               ).fetchall()
    sets = []
    for _, runs in by_suite:
        pairs = [list(p) for p in itertools.combinations(runs, 2)]
        sets += pairs[:4] + [pairs[0][::-1]] if pairs else []
        sets.append(list(runs))
    return sets


def _sides(db: Path) -> list[tuple[str, str]]:
    """(baseline, candidate) names: pairs of single runs of a suite, and a group against a run."""
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute("SELECT suite, run_id, run_group FROM runs ORDER BY suite, run_id").fetchall()
    singles = [(s, r) for s, r, g in runs if g is None]
    pairs = [(a, b) for (sa, a), (sb, b) in itertools.permutations(singles, 2) if sa == sb][:3]
    groups = sorted({(s, g) for s, _, g in runs if g is not None})
    for suite, group in groups[:1]:
        other = next((r for s, r in singles if s == suite), None)
        if other is not None:
            pairs.append((group, other))
    return pairs


# -- the pool ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["demo", "synth", "reviewed"])
def test_the_pool_is_the_plain_query_s(databases, name):
    db = databases[name]
    checked = 0
    with duckdb.connect(str(db), read_only=True) as con:
        for runs in _run_sets(db):
            for depth, limit in [(None, None), (None, 1), (None, 7), (None, 50), (1, 50), (3, None), (2, 3)]:
                found = P.unjudged(con, runs, depth=depth, limit=limit)
                expected = reference_unjudged(con, runs, depth=depth, limit=limit)
                pd.testing.assert_frame_equal(found, expected, check_exact=True)
                checked += len(expected)
    assert checked > 100


def test_the_pool_of_more_runs_than_one_integer_marks_is_the_plain_query_s(databases, monkeypatch):
    monkeypatch.setattr(P, "_MASK_BITS", 1)
    with duckdb.connect(str(databases["reviewed"]), read_only=True) as con:
        runs = _run_sets(databases["reviewed"])[-1]
        for depth, limit in [(None, None), (2, 20)]:
            pd.testing.assert_frame_equal(P.unjudged(con, runs, depth=depth, limit=limit),
                                          reference_unjudged(con, runs, depth=depth, limit=limit), check_exact=True)


def test_the_pool_lists_a_document_both_runs_ranked_first():
    """Two runs, k = 2: A ranks x, y; B ranks x, z (no labels). x is ranked by both (first), then y and z
    by one each at rank 2, in document order; with limit 2 the cut falls inside the (1 run, rank 2) rows."""
    con = duckdb.connect()
    con.execute("CREATE TABLE suites (suite VARCHAR, unit VARCHAR)")
    con.execute("INSERT INTO suites VALUES ('s', 'document')")
    con.execute("CREATE TABLE runs (run_id VARCHAR, suite VARCHAR, k INTEGER)")
    con.execute("INSERT INTO runs VALUES ('A', 's', 2), ('B', 's', 2)")
    con.execute("CREATE TABLE questions (suite VARCHAR, question_id VARCHAR, position INTEGER)")
    con.execute("INSERT INTO questions VALUES ('s', 'q', 0)")
    con.execute("CREATE TABLE document_codes (suite VARCHAR, doc_id VARCHAR, doc_code INTEGER)")
    con.execute("INSERT INTO document_codes VALUES ('s', 'w', 0), ('s', 'x', 1), ('s', 'y', 2), ('s', 'z', 3)")
    con.execute("CREATE TABLE retrieved_slots (run_id VARCHAR, question_code INTEGER, rank INTEGER, doc_code INTEGER, "
                "chunk_id VARCHAR, grade INTEGER, counted BOOLEAN)")
    con.execute("INSERT INTO retrieved_slots VALUES ('A', 0, 1, 1, NULL, NULL, true), ('A', 0, 2, 2, NULL, NULL, true), "
                "('A', 0, 3, 0, NULL, NULL, true), ('B', 0, 1, 1, NULL, NULL, true), "
                "('B', 0, 2, 3, NULL, NULL, true)")
    con.execute("CREATE TABLE question_scores AS SELECT 'A' AS run_id, 'q' AS question_id, 'ok' AS status, "
                + ", ".join(f"NULL::DOUBLE AS {key}" for key in BY_KEY))
    found = P.unjudged(con, ["B", "A"])
    assert [(r.doc_id, list(r.runs), r.best_rank) for r in found.itertuples()] == [
        ("x", ["A", "B"], 1), ("y", ["A"], 2), ("z", ["B"], 2)]
    assert list(P.unjudged(con, ["A", "B"], limit=2)["doc_id"]) == ["x", "y"]


# -- the relabelling ---------------------------------------------------------------------------------------

POLICY = parse_policy('name = "p"\n[[gates]]\nmetric = "precision"\nslice = "answerable"\nmin = 0.3\n[[gates]]\nmetric = "recall"\nmax_regressions = 3\n')


@pytest.mark.parametrize("name", ["demo", "reviewed", "synth"])
@pytest.mark.cases(2)  # the fast tier: the demo's reviews and the synthetic suite without any
def test_the_relabelling_is_the_re_scoring_of_the_whole_file_s(databases, name):
    db = databases[name]
    moved = 0
    for (baseline, candidate), policy in some(list(itertools.product(_sides(db), [None, POLICY])), 2, seed=1):
        found = relabelling(db, baseline, candidate, policy=policy)
        changes, values, reviewed, unreviewed = reference_relabelling(db, baseline, candidate, policy=policy)
        pd.testing.assert_frame_equal(found.changes, changes)
        pd.testing.assert_frame_equal(found.values, values, check_exact=True)
        for mine, theirs in ((found.reviewed, reviewed), (found.unreviewed, unreviewed)):
            pd.testing.assert_frame_equal(mine.table, theirs.table, check_exact=True)
            pd.testing.assert_frame_equal(mine.questions, theirs.questions)
            if policy is not None:
                assert mine.verdict.verdict == theirs.verdict.verdict
                assert [(g.name, g.passed) for g in mine.verdict.gates] == [(g.name, g.passed) for g in theirs.verdict.gates]
        moved += len(values)
    if name == "synth":
        assert moved == 0  # no review: nothing to re-score, one comparison for both labels
        assert found.reviewed is found.unreviewed
    else:
        assert moved > 0  # the reviews touch compared questions: the re-scored values are compared


def test_the_relabelling_of_sides_that_cannot_be_compared_is_refused_when_asked(databases):
    with duckdb.connect(str(databases["synth"]), read_only=True) as con:
        run = con.execute("SELECT min(run_id) FROM runs").fetchone()[0]
    with pytest.raises(ValidationError, match="candidate"):
        relabelling(databases["synth"], run, run)

"""The slides' inputs read the short way are the inputs of the long way: the worst regressions taken from
the per-question values (`Comparison.regressed_questions(limit)`, `n_regressed_questions`) are the first rows
of the list built from every question x metric delta, and the deck the dashboard's Present page builds is,
byte for byte, the one `ragslice report --slides` writes (`present.slides_html` of `compare` and
`load_evidence`), on the bundled demo and on a synthetic suite, for every pair of sides."""
from __future__ import annotations

import itertools
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from tiers import sized, some

from fixtures import synth_db, write_policy

from scoring.decide import present
from scoring.decide.comparison import Comparison, compare
from scoring.decide.report import PER_QUESTION_MAX, Evidence, load_evidence

WHEN = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def databases(demo_db, tmp_path_factory) -> dict[str, Path]:
    """The bundled demo (runs and groups of repeats) and `ragslice synth --questions 2000 --runs 3` (1,500
    questions in the fast tier: still above `stats.LARGE_SAMPLE`, so its normal-approximation rows are read)."""
    return {"demo": demo_db, "synth": synth_db(tmp_path_factory, sized(2000, 1500), 3, seed=5)}


def _pairs(db: Path) -> list[tuple[str, str]]:
    """Every ordered pair of runs of a suite, and every pair of groups of a suite."""
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute("SELECT suite, run_id FROM runs ORDER BY suite, run_id").fetchall()
        groups = con.execute("SELECT DISTINCT suite, run_group FROM runs WHERE run_group IS NOT NULL "
                             "ORDER BY 1, 2").fetchall()
    pairs = [(f"run:{a}", f"run:{b}") for (sa, a), (sb, b) in itertools.permutations(runs, 2) if sa == sb]
    pairs += [(f"group:{a}", f"group:{b}") for (sa, a), (sb, b) in itertools.permutations(groups, 2) if sa == sb]
    return pairs


def every_regressed_question(c: Comparison) -> pd.DataFrame:
    """The list as built from every regressed question x metric row of `Comparison.deltas`: the rows
    of `regressions()` grouped by question, critical first, then more metrics, then suite order."""
    regs = c.regressions()
    cols = ["question_id", "text", "type", "split", "critical", "answerable", "disputed", "position",
            "n_metrics", "changes"]
    if not len(regs):
        return pd.DataFrame(columns=cols)
    changes: dict[str, list[tuple[str, float, float]]] = {}
    for q, name, b, k in zip(regs["question_id"].tolist(), regs["metric_name"].tolist(),
                             regs["baseline"].tolist(), regs["candidate"].tolist()):
        changes.setdefault(q, []).append((name, b, k))
    out = regs.drop_duplicates("question_id")[cols[:-2]].copy()
    out["n_metrics"] = [len(changes[q]) for q in out["question_id"]]
    out["changes"] = [changes[q] for q in out["question_id"]]
    out = out.sort_values(["critical", "n_metrics", "position"], ascending=[False, False, True])
    return out[cols].reset_index(drop=True)


@pytest.mark.sampled
def test_the_worst_regressions_are_the_first_of_every_regressed_question(databases):
    checked = 0
    for name, db in databases.items():
        for base, cand in some(_pairs(db), 4, seed=3):
            with duckdb.connect(str(db), read_only=True) as con:
                c = compare(con, base, cand)
            expected = every_regressed_question(c)
            assert c.n_regressed_questions == len(expected), (name, base, cand)
            for limit in (0, 1, present.WORST, len(expected) + 5):
                pd.testing.assert_frame_equal(c.regressed_questions(limit), expected.head(limit),
                                              check_index_type=False, obj=f"{name} {base} {cand} {limit}")
            pd.testing.assert_frame_equal(c.regressed_questions(), expected, check_index_type=False)
            checked += len(expected) > present.WORST
    assert checked >= 3  # pairs with more regressed questions than the screen shows


@pytest.mark.sampled
@pytest.mark.parametrize("with_policy", [False, True])
def test_the_present_page_shows_the_slides_file_s_deck(databases, with_policy, monkeypatch, tmp_path):
    """The dashboard's `presentation` gives, byte for byte, the deck written from the full comparison
    (every record, the questions' text) and the evidence of its first WORST regressed questions; without
    a policy two single runs are compared on the per-question scores the other pages share."""
    import streamlit as st

    from dashboard import data

    class Fixed(datetime):
        @classmethod
        def now(cls, tz=None):
            return WHEN

    monkeypatch.setattr(present, "datetime", Fixed)
    gate = write_policy(tmp_path / "gate.toml", '[[gates]]\nname = "coverage"\nmetric = "coverage"\n'
                                                 'slice = "all"\nmin = 0.5\n') if with_policy else None
    if gate is not None:
        monkeypatch.setenv(data.POLICY_ENV, str(gate))
    else:
        monkeypatch.delenv(data.POLICY_ENV, raising=False)
    checked = 0
    for name, db in databases.items():
        monkeypatch.setenv(data.DB_ENV, str(db))
        st.cache_data.clear()
        st.cache_resource.clear()
        for suite in data.suites()["suite"]:
            options = data.sides(suite)
            pairs = list(itertools.permutations(options, 2))
            for b, k in some([p for p in pairs if p[0].kind == p[1].kind == "run"][:4], 2, seed=4) + \
                    some([p for p in pairs if "group" in (p[0].kind, p[1].kind)][:3], 2, seed=4):
                with duckdb.connect(str(db), read_only=True) as con:
                    c = compare(con, b.spec, k.spec, policy=gate)
                    ids = every_regressed_question(c)["question_id"].head(present.WORST)
                    expected = present.slides_html(c, load_evidence(con, c, ids), generated=WHEN)
                shown = data.presentation(b, k)
                assert shown == expected, (name, b.spec, k.spec)
                checked += f"the {present.WORST} worst" in shown
    assert checked >= 3


def evidence_of_lists(con: duckdb.DuckDBPyConnection, c: Comparison, question_ids: list[str]) -> Evidence:
    """The evidence read with one statement per table filtering on the list of IDs."""
    ids = sorted(set(question_ids))
    ev = Evidence()
    runs = {c.baseline.run_ids[0]: "baseline", c.candidate.run_ids[0]: "candidate"}
    params = [list(runs), ids]
    for run, q, answer, error, latency, cost in con.execute(
            "SELECT run_id, question_id, answer, error, latency_ms, cost_usd FROM records "
            "WHERE list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id)", params).fetchall():
        ev.answers[(runs[run], q)] = {"answer": answer, "error": error, "latency_ms": latency, "cost_usd": cost}
    for run, q, claim, text_, citations, supported, reasons in con.execute(
            "SELECT run_id, question_id, claim_id, text, citations, supported, reasons FROM claims "
            "WHERE list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id) "
            "ORDER BY run_id, question_id, position", params).fetchall():
        ev.claims.setdefault((runs[run], q), []).append(
            {"claim": claim, "text": text_, "citations": list(citations), "supported": supported,
             "reasons": list(reasons)})
    for run, q, rank, doc, relevant, visible, restricted in con.execute(
            "SELECT run_id, question_id, rank, doc_id, relevant, visible, restricted FROM retrieved "
            "WHERE list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id) "
            "ORDER BY run_id, question_id, rank", params).fetchall():
        ev.retrieved.setdefault((runs[run], q), []).append(
            {"rank": rank, "doc": doc, "relevant": relevant, "visible": visible, "restricted": restricted})
    for q, claim, proposition, docs in con.execute(
            "SELECT question_id, claim_id, proposition, docs FROM expected_claims "
            "WHERE suite = ? AND list_contains(?::VARCHAR[], question_id) ORDER BY question_id, claim_id",
            [c.suite, ids]).fetchall():
        ev.expected.setdefault(q, []).append({"claim": claim, "proposition": proposition, "docs": list(docs)})
    return ev


def test_the_evidence_of_a_few_questions_is_read_question_by_question_as_a_list_reads_it(databases):
    """A few questions (one equality each) and many (a list) give the evidence a list of IDs gives:
    the same answers, and the claims and rankings in the same order."""
    db = databases["synth"]
    with duckdb.connect(str(db), read_only=True) as con:
        c = compare(con, "run:sys-000", "run:sys-002")
        every = c.regressed_questions()["question_id"].tolist()
        for ids in (every[:1], every[:present.WORST], every[:PER_QUESTION_MAX], every[:PER_QUESTION_MAX + 1],
                    every[:300] + ["no-such-question"]):
            ev = load_evidence(con, c, ids)
            assert ev == evidence_of_lists(con, c, ids), len(ids)
            assert sum(map(len, ev.retrieved.values())) > 0 and sum(map(len, ev.claims.values())) > 0

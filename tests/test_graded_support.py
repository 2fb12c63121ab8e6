"""Graded support labels (none / partial / full) and the graded answer metrics beside the strict ones.

The suite is the seed lab with two claims graded: owner's `aurora` is fully supported by `owners` and
partly by `archive`; rollback's `smoke` only partly by `checklist` (and `rollback` judged "none"). Every
expected figure below is hand arithmetic with the registry's declared weight, PARTIAL_WEIGHT = 0.5.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from scoring.cli import main
from scoring.metrics.reference import claim_verdicts, evaluate
from scoring.metrics.registry import BY_KEY, LENIENT, PARTIAL_WEIGHT, metric
from scoring.store.refresh import refresh

REPO = Path(__file__).resolve().parents[1]
SEED_LAB = REPO / "data" / "seed-lab"
QUESTIONS = Path("suites") / "seed-lab" / "questions.jsonl"
T = "2026-11-30T10:00:00Z"


def _graded(ws: Path) -> Path:
    """The seed lab's questions with aurora and smoke graded."""
    path = ws / QUESTIONS
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for q in rows:
        if q["id"] == "owner":
            q["relevant"] = ["owners", "archive"]
            q["support"] = {"aurora": {"owners": "full", "archive": "partial"}}
        if q["id"] == "rollback":
            q["support"]["smoke"] = {"checklist": "partial", "rollback": "none"}
    path.write_text("".join(json.dumps(q) + "\n" for q in rows))
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = Path(shutil.copytree(SEED_LAB, tmp_path / "ws"))
    _graded(ws)
    return ws


def scores(db: Path, columns: str) -> dict[tuple[str, str], tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {(r[0], r[1]): tuple(r[2:]) for r in con.execute(
            f"SELECT run_id, question_id, {columns} FROM question_scores").fetchall()}


def test_the_weight_is_declared_once_and_each_graded_metric_names_its_strict_twin():
    assert PARTIAL_WEIGHT == 0.5
    assert {key: twin.key for key, twin in LENIENT.items()} == {"support": "support_graded",
                                                                "coverage": "coverage_graded"}
    for key, twin in LENIENT.items():
        strict = BY_KEY[key]
        assert (twin.level, twin.cutoff, twin.higher_is_better) == (strict.level, strict.cutoff, True)
        assert twin.pooled[1] == strict.pooled[1]  # the same denominator
    assert metric("support_graded").key == "support_graded" and metric("GradedCoverage").key == "coverage_graded"


def test_strict_and_graded_figures_by_hand(ws, tmp_path):
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    got = scores(db, "support, support_graded, coverage, coverage_graded, n_supported, n_supported_graded, n_claims")
    # owner A cites archive (partial) for aurora: strict 0, graded 0.5; B cites owners (full): 1 and 1
    assert got[("A", "owner")] == (0.0, 0.5, 0.0, 0.5, 0, 0.5, 1)
    assert got[("B", "owner")] == (1.0, 1.0, 1.0, 1.0, 1, 1.0, 1)
    # rollback B: switch full (1), smoke cites checklist, partial (0.5): strict 1/2, graded 1.5/2
    assert got[("B", "rollback")] == (0.5, 0.75, 0.5, 0.75, 1, 1.5, 2)
    # rollback A makes only switch: support 1/1 both ways; coverage 1/2 both ways (smoke not made)
    assert got[("A", "rollback")] == (1.0, 1.0, 0.5, 0.5, 1, 1.0, 1)
    # region (unanswerable) keeps the strict n/a and failure rules: A's claim is unlabelled, B abstains
    assert got[("A", "region")][:4] == (0.0, 0.0, None, None) and got[("B", "region")][:4] == (None,) * 4
    with duckdb.connect(str(db), read_only=True) as con:
        pooled = dict(con.execute("SELECT run_id, sum(n_supported_graded) / sum(n_claims) FROM question_scores "
                                  "GROUP BY run_id").fetchall())
        reasons = con.execute("SELECT reasons, supported FROM claims WHERE run_id = 'B' AND claim_id = 'smoke'"
                              ).fetchone()
        stored = con.execute("SELECT docs, partial_docs FROM expected_claims WHERE claim_id IN ('aurora', 'smoke') "
                             "ORDER BY claim_id").fetchall()
    # A: monday 1 + switch 1 + aurora 0.5 + region 0 over 4 claims; B: 1 + 0 (bonus) + 1 + 0.5 + 1 over 5
    assert pooled == {"A": pytest.approx(2.5 / 4), "B": pytest.approx(3.5 / 5)}
    assert reasons == (["citation_partial"], False)  # the per-claim reason says "partial"
    assert stored == [(["owners"], ["archive"]), ([], ["checklist"])]


def test_the_seed_entry_point_takes_graded_support():
    corpus = {"owners": "The Aurora team owns the alert.", "archive": "Aurora was mentioned once."}
    case = {"relevant": ("owners", "archive"), "support": {"aurora": {"owners": "full", "archive": "partial"}}}
    partial_run = {"retrieved": ("archive", "owners"), "claims": (("aurora", ("archive",)),)}
    both = {"retrieved": ("archive", "owners"), "claims": (("aurora", ("archive", "owners")),)}
    hidden = {"retrieved": ("owners",), "claims": (("aurora", ("archive",)),)}
    got = evaluate(corpus, case, partial_run, k=2)
    assert (got["support"], got["support_graded"], got["coverage"], got["coverage_graded"]) == (0.0, 0.5, 0.0, 0.5)
    # one full and one partial citation: every citation at least partial, one only partial -> 0.5
    assert evaluate(corpus, case, both, k=2)["support_graded"] == 0.5
    # a partial citation outside the first k counts nothing, and says both reasons
    assert evaluate(corpus, case, hidden, k=1)["support_graded"] == 0.0
    assert claim_verdicts(corpus, case, hidden, k=1)[0].reasons == ("citation_partial", "citation_not_visible")


def test_an_old_suite_scores_exactly_as_before(tmp_path):
    """No partial label: the graded metrics equal their strict twins on every row."""
    ws = Path(shutil.copytree(SEED_LAB, tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    for row in scores(db, "support, support_graded, coverage, coverage_graded, n_supported, n_supported_graded"
                      ).values():
        assert row[0] == row[1] and row[2] == row[3] and row[4] == row[5]


BAD_GRADES = [
    ("a grade that is not one", {"aurora": {"owners": "half"}}, "field \"support['aurora']['owners']\": 'half': "
     "a support grade is one of 'none', 'partial', 'full'"),
    ("only none", {"aurora": {"owners": "none"}}, "an expected claim needs at least one supporting document "
     "(graded 'full' or 'partial')"),
    ("partial support from a document not relevant", {"aurora": {"owners": "full", "launch": "partial"}},
     "supporting documents must be labelled relevant (grade > 0)"),
    ("a document of no suite", {"aurora": {"owners": "full", "ghost": "none"}}, "'ghost'"),
]


@pytest.mark.parametrize("name, support, words", BAD_GRADES, ids=[c[0] for c in BAD_GRADES])
def test_a_bad_grade_is_refused_with_file_line_and_field(tmp_path, capsys, name, support, words):
    ws = Path(shutil.copytree(SEED_LAB, tmp_path / "ws"))
    path = ws / QUESTIONS
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[2]["support"] = support
    path.write_text("".join(json.dumps(q) + "\n" for q in rows))
    assert main(["refresh", str(ws), "--db", str(tmp_path / "db.duckdb"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: " in err and words in err, err


def _decide(ws: Path, reviewer: str, supports, doc: str = "archive", claim: str = "aurora", at: str = T) -> None:
    path = ws / "suites" / "seed-lab" / "reviews" / f"{reviewer}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(json.dumps({"at": at, "reviewer": reviewer, "kind": "support", "question_id": "owner",
                              "claim_id": claim, "doc_id": doc, "supports": supports}) + "\n")


def test_a_review_grades_support_and_reviewers_who_differ_on_a_grade_dispute_it(ws, tmp_path):
    db = tmp_path / "db.duckdb"
    _decide(ws, "ana", "full")  # archive fully supports aurora, says ana
    refresh(ws, db)
    assert scores(db, "support, support_graded")[("A", "owner")] == (1.0, 1.0)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT original, reviewed FROM label_changes").fetchall() == [('"partial"', "true")]
        assert con.execute("SELECT supports, support_grade, status FROM reviews").fetchall() == [(True, "full",
                                                                                                   "applied")]
    _decide(ws, "ben", "partial")
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        disputed = con.execute("SELECT disputed FROM questions WHERE question_id = 'owner'").fetchone()[0]
        statuses = con.execute("SELECT reviewer, supports, support_grade, status FROM reviews ORDER BY reviewer"
                               ).fetchall()
    assert "reviewers disagree on whether archive supports claim aurora (ana: yes; ben: partial)" in disputed
    assert statuses == [("ana", True, "full", "disagreed"), ("ben", False, "partial", "disagreed")]
    assert scores(db, "support, support_graded")[("A", "owner")] == (0.0, 0.5)  # the suite's grade stands


def test_the_review_command_records_a_partial_grade(tmp_path, capsys):
    ws = Path(shutil.copytree(SEED_LAB, tmp_path / "ws"))
    db = tmp_path / "db.duckdb"
    assert main(["review", str(ws), "--reviewer", "ana", "--question", "rollback", "--claim", "smoke",
                 "--doc", "checklist", "--supports", "partial"]) == 0
    line = json.loads((ws / "suites" / "seed-lab" / "reviews" / "ana.jsonl").read_text())
    assert line["supports"] == "partial"
    refresh(ws, db)
    assert scores(db, "support, support_graded")[("B", "rollback")] == (0.5, 0.75)
    # taking the last supporting document away is refused; "no" on the partial one of a full claim is not
    assert main(["review", str(ws), "--reviewer", "ana", "--question", "rollback", "--claim", "smoke",
                 "--doc", "checklist", "--supports", "no"]) == 2
    assert "claim smoke would have no supporting document left" in capsys.readouterr().err


def test_relabelling_undoes_a_partial_grade(ws, tmp_path):
    """The unreviewed labels (what the suite's files say) come back for a grade a review changed."""
    from scoring.store.database import Database
    from scoring.store.refresh import rescore_unreviewed

    db = tmp_path / "db.duckdb"
    _decide(ws, "ana", "none", doc="archive")  # archive does not support aurora at all
    _decide(ws, "ana", "partial", doc="owners")  # and owners only partly
    refresh(ws, db)
    assert scores(db, "support, support_graded")[("B", "owner")] == (0.0, 0.5)
    with Database(db).scratch() as con:
        before = rescore_unreviewed(con, ["A", "B"], ["owner"]).set_index("run_id")
    assert (before.loc["A", "support"], before.loc["A", "support_graded"]) == (0.0, 0.5)
    assert (before.loc["B", "support"], before.loc["B", "support_graded"]) == (1.0, 1.0)


def test_compare_shows_strict_and_graded_and_a_gate_names_either(ws, tmp_path, capsys):
    db, policy = tmp_path / "db.duckdb", tmp_path / "policy.toml"
    refresh(ws, db)
    policy.write_text('name = "graded"\n' + "".join(
        f'[[gates]]\nname = "{key} floor"\nmetric = "{key}"\nslice = "all"\naggregate = "pooled"\nmin = 0.65\n'
        for key in ("support_graded", "support")))
    assert main(["compare", "A", "B", "--db", str(db), "--policy", str(policy)]) == 1
    out = capsys.readouterr().out
    # pooled, by hand: B graded 3.5 / 5 = 0.700 passes 0.65; strict 3 / 5 = 0.600 fails it
    assert "pass  support_graded floor: candidate GradedSupport (pooled) on all = 0.700" in out
    assert "FAIL  support floor: candidate Support (pooled) on all = 0.600" in out.replace("fail ", "FAIL ")
    assert "GradedSupport    all" in out and "GradedCoverage   all" in out


def test_the_demo_s_catalog_pages_partly_support_claims_so_graded_support_differs(demo_db):
    """Each service's catalog page states one clause of a few of its facts (it fails over to a warm standby,
    not where; its certificates are rotated, not how often) and is labelled partial for them where relevant:
    strict Support is as it was (prod-baseline 241 of 324), graded Support is higher for every run that
    cites a page for such a claim, and the reason given for those claims is `citation_partial`."""
    import duckdb

    with duckdb.connect(str(demo_db), read_only=True) as con:
        partial = con.execute("SELECT count(*) FROM expected_claims WHERE suite = 'demo' AND len(partial_docs) > 0"
                              ).fetchone()[0]
        rows = dict(con.execute("""
            SELECT run_id, [sum(n_supported), sum(n_claims), sum(n_supported_graded)] FROM question_scores
            WHERE suite = 'demo' GROUP BY run_id""").fetchall())
        reasons = con.execute("""SELECT count(*) FROM claims WHERE run_id = 'chunk-160'
                                 AND list_contains(reasons, 'citation_partial')""").fetchone()[0]
    assert partial == 21
    assert rows["prod-baseline"][:2] == [241, 324]
    assert all(graded > supported for supported, _, graded in rows.values())
    chunk = rows["chunk-160"]
    assert chunk[2] / chunk[1] - chunk[0] / chunk[1] > 0.01 and reasons > 0

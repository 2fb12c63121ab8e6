"""Reviewer decisions: checked like any input, applied on top of the suite's labels, versioned, audited."""
from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import duckdb
import pytest

from scoring.cli import main
from scoring.decide.agreement import agreement, reviewer_agreement
from scoring.decide.pool import unjudged
from scoring.decide.policy import parse_policy
from scoring.decide.relabel import relabelling
from scoring.store.refresh import refresh, score_workspace_in_memory
from scoring.store.reviews import append_decision

REPO = Path(__file__).resolve().parents[1]
SEED_LAB = REPO / "data" / "seed-lab"
REVIEWS = Path("suites") / "seed-lab" / "reviews"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SEED_LAB, tmp_path / "ws"))


def write_reviews(ws: Path, reviewer: str, *lines: dict | str) -> Path:
    path = ws / REVIEWS / f"{reviewer}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def decision(reviewer: str, at: str, **fields) -> dict:
    return {"at": at, "reviewer": reviewer, **fields}


def grade(reviewer: str, at: str, question: str, doc: str, value: int, **extra) -> dict:
    return decision(reviewer, at, kind="relevance", question_id=question, doc_id=doc, grade=value, **extra)


def rows(db: Path, sql: str, params=()) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, params).fetchall()


# --- every rule of a review line, refused with file and line, nothing written -------------------------------

T = "2026-11-30T10:00:00Z"
BAD_LINES = [
    ("kind unknown", decision("ana", T, kind="opinion", question_id="launch"),
     "field 'kind': 'opinion': expected one of relevance, support, dispute"),
    ("question unknown", grade("ana", T, "nope", "archive", 1),
     "field 'question_id': 'nope' is not a question of suite 'seed-lab'"),
    ("document unknown", grade("ana", T, "launch", "ghost", 1),
     "field 'doc_id': 'ghost' is not a document of suite 'seed-lab'"),
    ("grade out of range", grade("ana", T, "launch", "archive", 1001),
     "field 'grade': 1001: a grade is a whole number from -1000 to 1000"),
    ("grade not a number", grade("ana", T, "launch", "archive", "1"),
     "field 'grade': '1': a grade is a whole number from -1000 to 1000"),
    ("time without zone", grade("ana", "2026-11-30T10:00:00", "launch", "archive", 1),
     "field 'at': '2026-11-30T10:00:00': expected an ISO-8601 time in UTC"),
    ("time not a time", grade("ana", "yesterday", "launch", "archive", 1), "field 'at': 'yesterday'"),
    ("reviewer of another file", grade("ben", T, "launch", "archive", 1),
     "field 'reviewer': 'ben' must equal the file's reviewer 'ana'"),
    ("claim unknown", decision("ana", T, kind="support", question_id="launch", claim_id="friday", doc_id="launch",
                               supports=True), "field 'claim_id': 'friday' is not an expected claim of the question"),
    ("supports not a boolean", decision("ana", T, kind="support", question_id="launch", claim_id="monday",
                                        doc_id="launch", supports="yes"), "field 'supports': 'yes': expected true or false"),
    ("unknown field", decision("ana", T, kind="dispute", question_id="launch", grade=2), "field 'grade': unknown field"),
    ("not JSON", '{"kind": ', "not valid JSON"),
    ("support of a document that is not relevant",
     decision("ana", T, kind="support", question_id="launch", claim_id="monday", doc_id="archive", supports=True),
     "archive is not labelled relevant for the question (grade > 0)"),
    ("the last supporting document taken away",
     decision("ana", T, kind="support", question_id="launch", claim_id="monday", doc_id="launch", supports=False),
     "claim monday would have no supporting document left"),
    ("a supporting document graded not relevant", grade("ana", T, "launch", "launch", 0),
     "launch supports expected claim monday: it must stay relevant"),
]


@pytest.mark.parametrize("name, line, words", BAD_LINES, ids=[c[0] for c in BAD_LINES])
@pytest.mark.cases(6)
def test_a_bad_review_line_is_refused_with_its_file_and_line(ws, tmp_path, capsys, name, line, words):
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    before = db.read_bytes()
    path = write_reviews(ws, "ana", grade("ana", "2026-11-29T09:00:00Z", "owner", "archive", 0), line)
    assert main(["refresh", str(ws), "--db", str(db), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: " in err and words in err, err
    assert db.read_bytes() == before  # nothing written


def test_a_review_file_is_named_for_its_reviewer(ws, tmp_path, capsys):
    (ws / REVIEWS).mkdir(parents=True)
    (ws / REVIEWS / "ana smith.jsonl").write_text(json.dumps(grade("ana smith", T, "launch", "archive", 1)) + "\n")
    assert main(["refresh", str(ws), "--db", str(tmp_path / "db.duckdb"), "--quiet"]) == 2
    assert "a review file is named for its reviewer" in capsys.readouterr().err


# --- applying the decisions ------------------------------------------------------------------------------


def test_decisions_apply_in_time_order_per_reviewer_and_disagreements_are_disputed(ws, tmp_path):
    write_reviews(ws, "ana",
                  grade("ana", "2026-11-30T10:00:00Z", "launch", "archive", 2),
                  grade("ana", "2026-11-30T09:00:00Z", "launch", "archive", 1),  # earlier: superseded, file order aside
                  grade("ana", "2026-11-30T10:00:00Z", "owner", "archive", 1))
    write_reviews(ws, "ben",
                  grade("ben", "2026-11-30T11:00:00Z", "launch", "archive", 2),  # agrees with ana's latest
                  grade("ben", "2026-11-30T11:00:00Z", "owner", "archive", 0),   # disagrees: owner disputed
                  decision("ben", "2026-11-30T12:00:00Z", kind="dispute", question_id="rollback",
                           note="checklist may be outdated"))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    assert rows(db, "SELECT question_id, doc_id, grade FROM labels WHERE doc_id = 'archive' ORDER BY 1") == \
        [("launch", "archive", 2)]  # owner keeps the suite's value (no label): the reviewers disagree
    assert rows(db, "SELECT question_id, kind, doc_id, original, reviewed, reviewers FROM label_changes") == \
        [("launch", "relevance", "archive", None, "2", ["ana", "ben"])]
    status = dict(((r, line), s) for r, line, s in rows(db, "SELECT reviewer, line, status FROM reviews"))
    assert status == {("ana", 1): "applied", ("ana", 2): "superseded", ("ana", 3): "disagreed",
                      ("ben", 1): "applied", ("ben", 2): "disagreed", ("ben", 3): "dispute"}
    disputed = dict(rows(db, "SELECT question_id, disputed FROM questions WHERE disputed IS NOT NULL"))
    assert disputed == {"owner": "reviewers disagree on the grade of archive (ana: 1; ben: 0)",
                        "rollback": "ben: checklist may be outdated"}
    # the reviewed grade is scored: launch ranks launch, archive (now relevant) in its first two slots
    assert rows(db, "SELECT run_id, precision FROM question_scores WHERE question_id = 'launch' ORDER BY 1") == \
        [("A", 1.0), ("B", 1.0)]


def test_the_labels_hash_changes_exactly_when_an_effective_label_changes(ws, tmp_path):
    def labels_hash() -> str:
        db = tmp_path / f"db{len(list(tmp_path.glob('db*')))}.duckdb"
        refresh(ws, db)
        (suite_hash,), = rows(db, "SELECT labels_hash FROM suites")
        assert {h for (h,) in rows(db, "SELECT labels_hash FROM runs")} == {suite_hash}
        return suite_hash

    original = labels_hash()
    write_reviews(ws, "ana", decision("ana", T, kind="dispute", question_id="launch", note="unsure"))
    assert labels_hash() == original  # a dispute changes no label
    write_reviews(ws, "ana", grade("ana", T, "owner", "owners", 1))
    assert labels_hash() == original  # the grade the suite already has
    write_reviews(ws, "ana", grade("ana", T, "owner", "owners", 2))
    changed = labels_hash()
    assert changed != original
    write_reviews(ws, "ana", grade("ana", T, "owner", "owners", 2), grade("ana", "2026-12-01T00:00:00Z", "owner",
                                                                            "owners", 1))
    assert labels_hash() == original  # changed back


def test_ragslice_review_appends_checked_decisions(ws, capsys):
    args = ["review", str(ws), "--reviewer", "ana", "--question", "launch"]
    assert main([*args, "--claim", "monday", "--doc", "archive", "--supports", "yes"]) == 2  # archive not relevant
    assert "archive is not labelled relevant for the question" in capsys.readouterr().err
    assert main([*args, "--doc", "archive", "--grade", "1", "--note", "mentions <Monday>"]) == 0
    # checked against the labels as reviewed so far: archive is relevant now
    assert main([*args, "--claim", "monday", "--doc", "archive", "--supports", "yes"]) == 0
    lines = [json.loads(x) for x in (ws / REVIEWS / "ana.jsonl").read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["relevance", "support"]
    assert lines[0] | {"at": None} == {"at": None, "reviewer": "ana", "kind": "relevance", "question_id": "launch",
                                      "doc_id": "archive", "grade": 1, "note": "mentions <Monday>"}
    assert main([*args, "--dispute", "--note", "two answers fit"]) == 0
    assert main([*args, "--doc", "ghost", "--grade", "1"]) == 2
    assert "'ghost' is not a document of suite 'seed-lab'" in capsys.readouterr().err


def _append_many(folder: str, reviewer: str, count: int) -> None:
    for i in range(count):
        append_decision(Path(folder), grade(reviewer, T, "launch", "archive", i % 3, note=f"decision {i}"))


def test_two_reviewers_and_two_writers_of_one_file_lose_no_decision(ws):
    folder = str(ws / "suites" / "seed-lab")
    workers = [multiprocessing.Process(target=_append_many, args=(folder, name, 50))
               for name in ("ana", "ben", "ana", "ben")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    for name in ("ana", "ben"):
        lines = (ws / REVIEWS / f"{name}.jsonl").read_text().splitlines()
        assert len(lines) == 100 and all(json.loads(x)["reviewer"] == name for x in lines)
        assert sorted(json.loads(x)["note"] for x in lines) == sorted([f"decision {i}" for i in range(50)] * 2)


# --- agreement, pools, and what the relabelling changed ----------------------------------------------------


def test_kappa_and_confusion_by_hand():
    found = agreement([1, 1, 0, 0, 1, 0], [1, 0, 0, 0, 1, 1])
    # agree on 4 of 6; each rater says 1 half the time: chance agreement 0.5, kappa (4/6 - 0.5) / 0.5 = 1/3
    assert (found.n, found.agreed, found.accuracy) == (6, 4, pytest.approx(4 / 6))
    assert found.kappa == pytest.approx(1 / 3)
    assert found.confusion == ((0, 0, 2), (0, 1, 1), (1, 0, 1), (1, 1, 2))
    assert agreement([1, 1], [1, 1]).kappa is None  # one label only: chance explains everything
    assert agreement([0, 1], [1, 0]).kappa == pytest.approx(-1.0)


def test_reviewer_agreement_per_kind_on_their_latest_decisions(ws, tmp_path):
    write_reviews(ws, "ana", grade("ana", T, "launch", "archive", 1), grade("ana", T, "owner", "archive", 0),
                  grade("ana", "2026-12-01T00:00:00Z", "launch", "archive", 0))
    write_reviews(ws, "ben", grade("ben", T, "launch", "archive", 0), grade("ben", T, "owner", "archive", 1))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        table = reviewer_agreement(con.execute("SELECT * FROM reviews").df())
    row = table.iloc[0]
    # launch: 0 and 0 (ana's latest) agree; owner: 0 and 1 disagree
    assert (row["kind"], row["first"], row["second"], row["n"], row["agreed"]) == ("relevance", "ana", "ben", 2, 1)
    assert row["kappa"] == pytest.approx(0.0)


def test_pool_lists_unjudged_documents_most_influential_first(ws):
    with score_workspace_in_memory(ws) as con:
        pool = unjudged(con, ["A", "B"])
        deeper = unjudged(con, ["A", "B"], depth=1)
    # within k = 2: launch's archive (A and B, rank 2), owner's archive (A rank 1, B rank 2), region A's archive
    assert [(r.question_id, r.doc_id, list(r.runs), r.best_rank) for r in pool.itertuples()] == [
        ("owner", "archive", ["A", "B"], 1), ("launch", "archive", ["A", "B"], 2), ("region", "archive", ["A"], 1)]
    assert [(r.question_id, r.doc_id) for r in deeper.itertuples()] == [("owner", "archive"), ("region", "archive")]


def test_pool_command_writes_json_lines(ws, tmp_path, capsys):
    out = tmp_path / "pool.jsonl"
    assert main(["pool", str(ws), "--runs", "A,B", "--out", str(out)]) == 0
    first = json.loads(out.read_text().splitlines()[0])
    assert first == {"question_id": "owner", "doc_id": "archive", "runs": ["A", "B"], "best_rank": 1}
    assert main(["pool", str(ws), "--runs", "A,Z"]) == 2


def test_what_the_relabelling_changed(ws, tmp_path):
    """ana grades archive relevant for launch: P@2 of both runs goes 0.5 -> 1.0 there, and a gate on
    answerable P@k (A: (0.5 + 0.5 + 0.5) / 3 -> (1 + 0.5 + 0.5) / 3) moves."""
    write_reviews(ws, "ana", grade("ana", T, "launch", "archive", 1))
    db = tmp_path / "db.duckdb"
    refresh(ws, db)
    policy = parse_policy('name = "p"\n[[gates]]\nmetric = "precision"\nslice = "answerable"\nmin = 0.6\n')
    found = relabelling(db, "B", "A", policy=policy)
    precision = found.values.set_index("metric").loc["precision"]
    assert (precision["baseline_unreviewed"], precision["baseline"]) == (0.5, 1.0)
    assert found.unreviewed.verdict.verdict == "fail" and found.reviewed.verdict.verdict == "pass"
    assert found.verdict_moves and found.gates_that_move() == ["P@k on answerable"]


def test_judges_reviews_and_workspace_import_one_another_without_a_cycle():
    """The store modules that read a suite's files import in one direction: the times they share live in
    `scoring.store.times`, and reviews names `workspace.Suite` for type checking only."""
    import ast

    store = REPO / "scoring" / "store"
    modules = ("judges", "reviews", "workspace", "times", "files", "lines")
    graph = {}
    for name in modules:
        tree = ast.parse((store / f"{name}.py").read_text(encoding="utf-8"))
        graph[name] = {node.module for node in tree.body  # top level only: not under `if TYPE_CHECKING:`
                       if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in modules}
    assert graph["judges"] >= {"times"} and "reviews" not in graph["judges"]
    assert "workspace" not in graph["reviews"]

    def reaches(start: str, goal: str, seen: frozenset = frozenset()) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in graph[start])

    assert [name for name in modules if reaches(name, name)] == []

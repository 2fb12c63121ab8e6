"""One baseline against several candidates: `ragslice compare BASELINE CANDIDATE [CANDIDATE ...]`.

Each candidate's figures and verdict are its single comparison's; only p_holm changes, adjusted
once across the whole family (candidate x metric x slice). Exit code 0 when every candidate
passes, 1 when any fails, 2 on bad input.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from fixtures import hit, miss, question, write_workspace_files
from scoring.cli import main
from scoring.decide import comparison as C
from scoring.decide import report
from scoring.store.refresh import refresh

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"
POLICY = DEMO / "policy.toml"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    refresh(DEMO, db)
    return db


@pytest.fixture()
def demo_copy(demo_db, tmp_path) -> Path:
    """A private copy for tests that record verdicts."""
    target = tmp_path / "demo.duckdb"
    shutil.copyfile(demo_db, target)
    return target


def _without_p_holm(doc: dict) -> dict:
    """The document without what the family adjusts: p_holm and p_fdr, and the resolution they span."""
    out = {k: v for k, v in doc.items() if k != "resolution"}
    out["comparisons"] = [{k: v for k, v in row.items() if k not in ("p_holm", "p_fdr")} for row in doc["comparisons"]]
    return out


def test_each_candidate_of_a_family_is_its_single_comparison_but_for_p_holm(demo_db):
    """Every key of every candidate's document equals the single comparison's, p_holm and p_fdr aside
    (and the resolution: the family's size); p_holm is the Holm adjustment over the concatenated
    p-values of every candidate, p_fdr their Benjamini-Hochberg adjustment. 426 tests: the family
    is small enough for its sampled tests, so no randomization p is recomputed."""
    from scoring.decide import stats

    candidates = ["rerank-v2", "hybrid-v1"]
    with duckdb.connect(str(demo_db), read_only=True) as con:
        family = C.compare_many(con, "prod-baseline", candidates, policy=POLICY)
        singles = [C.compare(con, "prod-baseline", name, policy=POLICY) for name in candidates]
    doc = family.to_dict()
    assert [c["candidate"]["name"] for c in doc["candidates"]] == candidates
    assert doc["verdict"] == "fail" and doc["baseline"]["name"] == "prod-baseline"
    for got, single in zip(doc["candidates"], singles):
        want = single.to_dict()
        assert set(got) == set(want)
        assert _without_p_holm(got) == _without_p_holm(want)
    p_all = [None if r["p_randomization"] is None else r["p_randomization"]
             for c in doc["candidates"] for r in c["comparisons"]]
    assert [r["p_holm"] for c in doc["candidates"] for r in c["comparisons"]] == stats.holm(p_all)
    assert [r["p_fdr"] for c in doc["candidates"] for r in c["comparisons"]] == stats.benjamini_hochberg(p_all)
    assert doc["holm"]["tests"] == sum(p is not None for p in p_all) and doc["holm"]["candidates"] == 2
    assert doc["resolution"]["tests"] == 426 and doc["resolution"]["refined_patterns"] is None
    # a larger family never lowers an adjusted p
    for got, single in zip(doc["candidates"], singles):
        for row, alone in zip(got["comparisons"], single.to_dict()["comparisons"]):
            if alone["p_holm"] is not None:
                assert row["p_holm"] >= alone["p_holm"]


def test_holm_across_the_family_by_hand(tmp_path):
    """16 questions; the baseline misses every one, c1 hits all 16, c2 hits 15. Sixteen metrics move
    (P, R, RR, nDCG, AP, F1, Success, Judged, P', nDCG', AP', Bpref, Support, Coverage, GradedSupport,
    GradedCoverage) on four identical slices (all, answerable, type:lookup, split:dev): 64 rows per
    candidate, exact sign-flip p = 2 / 2^16 for c1 and 2 / 2^15 for c2; FalseAbstention and Disclosures do
    not move (8 rows of p = 1). Alone, a candidate is a family of 72 tests: c1 72 / 2^15, c2 72 / 2^14.
    Together, 144 tests: c1's 64 rows come first, 144 / 2^15; c2's next, at rank 65, 80 / 2^14; the
    unmoved rows stay 1."""
    qs = [question(i) for i in range(16)]
    ws = write_workspace_files(tmp_path / "ws", qs, {
        "base": {"records": [miss(i) for i in range(16)]},
        "c1": {"records": [hit(i) for i in range(16)]},
        "c2": {"records": [hit(i) for i in range(15)] + [miss(15)]},
    })
    db = tmp_path / "s.duckdb"
    refresh(ws, db)
    with duckdb.connect(str(db), read_only=True) as con:
        family = C.compare_many(con, "base", ["c1", "c2"])
        alone = {name: C.compare(con, "base", name) for name in ("c1", "c2")}
    assert family.n_tests == 144
    for name, p, single, together in (("c1", 2 / 2**16, 72 / 2**15, 144 / 2**15),
                                      ("c2", 2 / 2**15, 72 / 2**14, 80 / 2**14)):
        c = next(x for x in family.comparisons if x.candidate.name == name)
        moved = c.table[c.table["p_randomization"] < 1]
        assert len(moved) == 64 and set(moved["slice"]) == {"all", "answerable", "type:lookup", "split:dev"}
        assert list(moved["p_randomization"]) == pytest.approx([p] * 64)
        assert list(moved["p_holm"]) == pytest.approx([together] * 64)
        t = alone[name].table
        assert list(t.loc[t["p_randomization"] < 1, "p_holm"]) == pytest.approx([single] * 64)
        assert set(c.table.loc[c.table["p_randomization"] == 1, "p_holm"]) == {1.0}
    assert family.matrix()["significant"].sum() == 32  # 16 metrics x 2 candidates on slice all


def test_one_candidate_keeps_the_document_and_adds_candidates(demo_copy, capsys):
    assert main(["compare", "prod-baseline", "rerank-v2", "--db", str(demo_copy), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["candidate"]["name"] == "rerank-v2" and "comparisons" in doc and "gates" in doc
    assert len(doc["candidates"]) == 1
    assert {k: v for k, v in doc.items() if k not in ("candidates", "holm")} == doc["candidates"][0]
    assert doc["holm"] == {"of": "p_randomization", "across": "candidate x metric x slice", "candidates": 1,
                           "tests": sum(r["p_randomization"] is not None for r in doc["comparisons"]),
                           "warning": None}


@pytest.mark.parametrize("candidates, code", [
    (["prod-text"], 0),
    (["prod-text", "rerank-v2"], 1),
    (["rerank-v2", "prod-text"], 1),
    (["prod-text", "prod-text"], 2),
    (["prod-text", "no-such-run"], 2),
])
def test_exit_codes_with_mixed_verdicts(demo_copy, candidates, code, capsys):
    """0 when every candidate passes the demo policy, 1 when one fails, 2 on a bad candidate list
    (and then no verdict is recorded for anyone)."""
    def stored() -> int:
        with duckdb.connect(str(demo_copy), read_only=True) as con:
            tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
            return con.execute("SELECT count(*) FROM verdicts").fetchone()[0] if "verdicts" in tables else 0

    before = stored()
    got = main(["compare", "prod-baseline", *candidates, "--db", str(demo_copy), "--policy", str(POLICY),
                "--format", "json"])
    out, err = capsys.readouterr()
    assert got == code
    if code == 2:
        assert "invalid input" in err and stored() == before
        return
    doc = json.loads(out)
    verdicts = {c["candidate"]["name"]: c["verdict"] for c in doc["candidates"]}
    assert verdicts["prod-text"] == "pass"
    assert doc["verdict"] == ("pass" if code == 0 else "fail")
    assert stored() == before + len(candidates)


def test_text_and_markdown_show_the_matrix_then_each_candidates_gates(demo_copy, capsys):
    args = ["compare", "prod-baseline", "rerank-v2", "prod-text", "--db", str(demo_copy), "--policy", str(POLICY)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "VERDICT: FAIL: 1 of 2 candidates pass, 1 fail" in out
    matrix = out[out.index("Matrix"):out.index("rerank-v2: FAIL")]
    assert "candidate" in matrix and "R@k" in matrix and "rerank-v2" in matrix and "prod-text" in matrix
    assert "+0.087" in matrix  # rerank-v2's R@k delta, as its single comparison gives it
    assert "Holm-adjusted across the whole family (2 candidates x metric x slice" in out
    assert out.index("rerank-v2: FAIL") < out.index("prod-text: PASS")
    assert main([*args, "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert "| `rerank-v2` | **FAIL** |" in md and "| `prod-text` | pass |" in md
    assert "### `rerank-v2`: FAIL" in md and "| critical coverage | **FAIL** |" in md


def test_a_family_too_large_for_resampled_p_values_says_so(demo_db, monkeypatch):
    """725 tests with at most 10,000 sign patterns per test (the cap): a resampled p is at least
    1/10,001, so Holm cannot bring one below 0.05, and the family says so."""
    from scoring.decide import family as F

    monkeypatch.setattr(F, "MAX_PATTERNS", 10_000)
    with duckdb.connect(str(demo_db), read_only=True) as con:
        family = C.compare_many(con, "prod-baseline", ["hybrid-v1", "rerank-v2", "chunk-160", "prod-text", "temp07"])
    assert family.n_tests == 1065
    assert "no row tested by resampling can reach p_holm < 0.05" in family.resolution_warning()
    assert "smallest p_holm is 0.106" in family.resolution_warning()
    assert "Warning: Holm over 1,065 tests" in report.family_text(family)
    assert family.to_dict()["resolution"]["warning"] == family.resolution_warning()
    with duckdb.connect(str(demo_db), read_only=True) as con:
        assert C.compare_many(con, "prod-baseline", ["rerank-v2", "prod-text"]).resolution_warning() is None


ALL_CANDIDATES = ["chunk-160", "hybrid-v1", "prod-text", "rerank-v2", "temp07-r1", "temp07-r2", "temp07-r3", "temp07"]


def test_a_family_of_every_candidate_resolves_its_p_values_and_marks_rerank_v2(demo_db, capsys):
    """Every other run and group against prod-baseline: 1,704 tests, too many for 10,000 sign patterns
    (1,704 / 10,001 > 0.05). The small sampled p-values are recomputed (exactly where the sign-flip sum
    takes few values, else with 20 x 1,704 / 0.05 = 681,600 patterns), so rerank-v2's R@k gain on
    multi-evidence questions and its Judged@k drop are marked, by Holm and by BH; the p-values nobody
    could mark are those of the single comparisons."""
    assert main(["compare", "prod-baseline", *ALL_CANDIDATES, "--db", str(demo_db), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    res = doc["resolution"]
    assert (res["tests"], res["patterns"], res["refined_patterns"], res["warning"]) == (1704, 10_000, 681_600, None)
    assert 0 < res["exact"] <= res["refined"] and res["smallest_sampled_p_holm"] == pytest.approx(1704 / 681_601)
    assert doc["holm"]["warning"] is None
    rows = {(r["metric"], r["slice"]): r for c in doc["candidates"] if c["candidate"]["name"] == "rerank-v2"
            for r in c["comparisons"]}
    for key, delta in ((("recall", "type:multi-evidence"), 0.241), (("judged", "all"), -0.214)):
        r = rows[key]
        assert r["delta"] == pytest.approx(delta, abs=5e-4)
        assert r["p_holm"] < 0.05 and r["p_fdr"] < 0.05 and r["p_fdr"] <= r["p_holm"]
        assert r["p_floor"] <= r["p_randomization"]
    with duckdb.connect(str(demo_db), read_only=True) as con:
        family = C.compare_many(con, "prod-baseline", ALL_CANDIDATES)
        alone = C.compare(con, "prod-baseline", "rerank-v2")
    cells = {(r["candidate"], r["metric"]): r for r in family.matrix().to_dict("records")}
    assert cells["rerank-v2", "judged"]["significant"] and cells["rerank-v2", "judged"]["fdr_significant"]
    # a p-value above REFINE_BELOW is the single comparison's
    t = alone.table.set_index(["metric", "slice"])
    for (metric, slice_), r in rows.items():
        if r["p_randomization"] is not None and r["p_randomization"] > 0.05:
            assert r["p_randomization"] == t.loc[(metric, slice_), "p_randomization"]


def test_report_accepts_several_candidates(demo_copy, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "prod-baseline", "rerank-v2", "prod-text", "--db", str(demo_copy), "--policy",
                 str(POLICY), "-o", str(out)]) == 0
    assert "verdict fail over 2 candidates" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert page.count('id="c1-verdict"') == 1 and page.count('id="c2-verdict"') == 1
    found = {text: text in page for text in ('<a href="#c1-verdict">rerank-v2</a>', "Release matrix", "<script",
                                             'src="http', "<link")}  # booleans: no diff of a whole page
    assert found == {'<a href="#c1-verdict">rerank-v2</a>': True, "Release matrix": True, "<script": False,
                     'src="http': False, "<link": False}

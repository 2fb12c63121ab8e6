"""The Release matrix: the set-based matrix against single comparisons, the page in AppTest, and a
cell click in Chromium that lands on Question deltas for that pair and slice (URL state)."""
from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures import REPO, new_tab, query, require_chromium, running_dashboard, settle
from scoring.decide import comparison as C
from scoring.decide import matrix as M
from scoring.decide import sides as S
from scoring.store.refresh import refresh
from scoring.store.schema import table_names

DEMO = REPO / "data" / "demo"
APP = REPO / "dashboard" / "app.py"
PAIR = {"suite": "demo", "baseline": "prod-baseline", "candidates": ["rerank-v2", "temp07"],
        "metrics": ["recall", "support"], "slices": ["all", "critical"]}


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("matrix") / "demo.duckdb"
    refresh(DEMO, db)
    return db


def _sides(con) -> dict[str, S.Side]:
    return {s.name: s for s in S.sides_of(S.read_runs(con, table_names(con)))}


def test_the_matrix_cells_are_the_single_comparisons_rows(demo_db):
    """n, both means, delta, counts and randomization p of every cell equal the same row of
    `compare` (groups included); p_holm is Holm across the matrix's own cells."""
    from scoring.decide import stats

    with duckdb.connect(str(demo_db), read_only=True) as con:
        by = _sides(con)
        mx = M.matrix(con, by["prod-baseline"], [by["rerank-v2"], by["temp07"]], ["recall", "support", "judged"],
                      ["all", "critical", "type:outdated"])
        singles = {n: C.compare(con, "prod-baseline", n) for n in ("rerank-v2", "temp07")}
    assert len(mx.cells) == 2 * 3 * 3
    for r in mx.cells.itertuples():
        t = singles[r.candidate].table
        row = t[(t["metric"] == r.metric) & (t["slice"] == r.slice)].iloc[0]
        assert (r.n, r.improved, r.regressed, r.unchanged) == (row["n"], row["improved"], row["regressed"],
                                                               row["unchanged"])
        assert (r.baseline, r.candidate_mean, r.delta, r.p_randomization) == pytest.approx(
            (row["baseline"], row["candidate"], row["delta"], row["p_randomization"]))
    assert list(mx.cells["p_holm"]) == stats.holm(list(mx.cells["p_randomization"]))
    assert mx.n_tests == 18
    ops = mx.operations.set_index("candidate")
    for name, c in singles.items():
        o = c.operations.set_index("side").loc["candidate"]
        assert (ops.loc[name, "failure_rate"], ops.loc[name, "latency_p95"], ops.loc[name, "cost_mean"]) == \
            pytest.approx((o["failure_rate"], o["latency_p95"], o["cost_mean"]))
    # temp07 is a group of three repeats: 3 x 257 records
    assert ops.loc["temp07", "records"] == 771


def _page(db: Path, monkeypatch, policy: Path | None = None, **params) -> AppTest:
    monkeypatch.setenv("RAGSLICE_DB", str(db))
    if policy is not None:
        monkeypatch.setenv("RAGSLICE_POLICY", str(policy))
    else:
        monkeypatch.delenv("RAGSLICE_POLICY", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params.update(params)
    at.switch_page("views/release_matrix.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table(at: AppTest) -> str:
    found = [m.value for m in at.markdown if 'id="release-matrix"' in m.value]
    assert len(found) == 1
    return found[0]


def test_a_matrix_as_large_as_a_family_resolves_its_p_values_as_the_family_does(demo_db):
    """Every metric on every slice for every other run and group: the same 1,704 tests as `ragslice
    compare` with every candidate, so the same small p-values are recomputed the same way (exactly,
    or with 681,600 seeded patterns over the same differences) and every adjusted p agrees."""
    from scoring.decide import stats
    from scoring.metrics import REGISTRY

    names = ["chunk-160", "hybrid-v1", "prod-text", "rerank-v2", "temp07-r1", "temp07-r2", "temp07-r3", "temp07"]
    with duckdb.connect(str(demo_db), read_only=True) as con:
        by = _sides(con)
        family = C.compare_many(con, "prod-baseline", names)
        slices_ = list(family.comparisons[0].table["slice"].drop_duplicates())
        mx = M.matrix(con, by["prod-baseline"], [by[n] for n in names], [m.key for m in REGISTRY], slices_)
    assert mx.n_tests == family.n_tests == 1704 and mx.resolution == family.resolution
    rows = {(c.candidate.name, r["metric"], r["slice"]): r for c in family.comparisons
            for r in c.table.to_dict("records")}
    for cell in mx.cells.to_dict("records"):
        row = rows[cell["candidate"], cell["metric"], cell["slice"]]
        for column in ("p_randomization", "p_floor", "p_holm", "p_fdr"):
            assert cell[column] == pytest.approx(row[column], rel=1e-12), column
    assert list(mx.cells["p_fdr"]) == stats.benjamini_hochberg(list(mx.cells["p_randomization"]))
    marked = mx.cells.set_index(["candidate", "metric", "slice"])
    assert marked.loc[("rerank-v2", "recall", "type:multi-evidence"), "significant"]
    assert marked.loc[("rerank-v2", "judged", "all"), "fdr_significant"]


def _cells(html: str) -> dict[str, list[str]]:
    """Row (candidate) -> the cells' texts, markup removed."""
    rows = {}
    for tr in re.findall(r'<tr data-candidate="([^"]+)">(.*?)</tr>', html):
        rows[unescape(tr[0])] = [unescape(re.sub(r"<[^>]+>", "", td)) for td in re.findall(r"<td.*?</td>", tr[1])]
    return rows


def test_page_shows_each_cell_with_its_mark_its_n_and_its_link(demo_db, monkeypatch):
    at = _page(demo_db, monkeypatch, **PAIR)
    html = _table(at)
    rows = _cells(html)
    assert list(rows) == ["rerank-v2", "temp07"]
    head = re.findall(r"<th>(.*?)</th>", html)
    assert head[:5] == ["candidate", "R@k · all", "R@k · critical", "Support · all", "Support · critical"]
    # rerank-v2's R@k on all: delta +0.087 (compare's row), p 1/10,001 x 8 cells = 0.0008: marked
    assert rows["rerank-v2"][1] == "+0.087†"
    assert rows["rerank-v2"][2] == "-0.027"  # critical: p 0.52, not marked
    assert 'title="n = 225 paired questions; baseline 0.830, candidate 0.918' in html
    link = re.search(r'<tr data-candidate="rerank-v2">.*?href="([^"]+)"', html).group(1)
    assert parse_qs(urlparse(unescape(link)).query) == {
        "suite": ["demo"], "baseline": ["prod-baseline"], "candidate": ["rerank-v2"], "metric": ["recall"]}
    critical = re.findall(r'href="([^"]+)"', html.split('data-candidate="rerank-v2"')[1])[1]
    assert parse_qs(urlparse(unescape(critical)).query)["critical"] == ["critical only"]
    assert 'class="better"' in html and 'class="worse"' in html
    assert "temp07 (group: mean over 3 repeats)" in html
    assert "verdict" not in head  # no policy, no verdict column


def test_page_defaults_to_every_comparable_side_and_shows_live_verdicts(demo_db, monkeypatch):
    at = _page(demo_db, monkeypatch, policy=DEMO / "policy.toml", suite="demo", baseline="prod-baseline",
               metrics=["recall"])
    html = _table(at)
    rows = _cells(html)
    assert sorted(rows) == sorted(["rerank-v2", "hybrid-v1", "temp07-r1", "temp07-r2", "temp07-r3", "chunk-160",
                                   "prod-text", "temp07"])
    head = re.findall(r"<th>(.*?)</th>", html)
    assert head[:3] == ["candidate", "verdict", "R@k · all"]  # the verdict first, then the deltas
    assert rows["prod-text"][1] == "pass" and rows["rerank-v2"][1] == "fail"
    # coloured as the verdict card colours them: red for a fail, green for a pass
    assert re.search(r'<tr data-candidate="rerank-v2"><td>[^<]*</td><td class="verdict fail" style="background: '
                     r'rgba\(207, 34, 46', html)
    assert re.search(r'<tr data-candidate="prod-text"><td>[^<]*</td><td class="verdict pass" style="background: '
                     r'rgba\(46, 160, 67', html)


def test_page_sorts_by_any_column(demo_db, monkeypatch):
    at = _page(demo_db, monkeypatch, suite="demo", baseline="prod-baseline", metrics=["recall"], sort_by="R@k · all",
               desc="1")
    order = list(_cells(_table(at)))
    assert order[0] == "rerank-v2" and order[-1] == "chunk-160"  # +0.087 ... -0.066
    at = _page(demo_db, monkeypatch, suite="demo", baseline="prod-baseline", metrics=["recall"], sort_by="R@k · all")
    assert list(_cells(_table(at)))[0] == "chunk-160"


@pytest.mark.browser
def test_a_cell_click_opens_question_deltas_for_that_pair_and_slice(demo_db, tmp_path):
    require_chromium()
    from fixtures import chromium

    with running_dashboard(demo_db, tmp_path / "server.log") as server, chromium() as browser:
        page = new_tab(browser)
        params = urlencode({k: v for k, v in PAIR.items()}, doseq=True)
        page.goto(f"{server.url}/release_matrix?{params}")
        settle(page)
        cell = page.locator('#release-matrix tr[data-candidate="rerank-v2"] td').nth(2).locator("a")
        assert cell.inner_text() == "-0.027"
        cell.click()
        page.wait_for_function("() => location.pathname.endsWith('/question_deltas')")
        settle(page)
        page.screenshot(path=tmp_path / "question_deltas.png")
        assert page.locator("h1").first.inner_text() == "Question deltas"
        got = query(page)
        assert (got["suite"], got["baseline"], got["candidate"], got["metric"], got["critical"]) == (
            ["demo"], ["prod-baseline"], ["rerank-v2"], ["recall"], ["critical only"])
        boxes = page.locator('[data-testid="stSelectbox"]')
        shown = dict(zip(boxes.all_inner_texts(), (boxes.nth(i).locator("input").input_value()
                                                   for i in range(boxes.count()))))
        assert (shown["Candidate"], shown["Metric"], shown["Critical"]) == ("rerank-v2", "R@k", "critical only")
        with duckdb.connect(str(demo_db), read_only=True) as con:  # the suite's critical questions
            (critical,), = con.execute("SELECT count(*) FROM questions WHERE suite = 'demo' AND critical").fetchall()
        captions = " ".join(page.locator('[data-testid="stCaptionContainer"]').all_inner_texts())
        assert f"{critical} of 257 questions match the filters" in captions
        page.context.close()


def test_a_cell_says_what_its_questions_can_detect(demo_db):
    with duckdb.connect(str(demo_db), read_only=True) as con:
        runs = S.read_runs(con)
        base, cand = S.resolve_side(runs, "prod-baseline", "baseline"), S.resolve_side(runs, "hybrid-v1", "candidate")
        cells = M.matrix(con, base, [cand], ["coverage"], ["all", "type:outdated"]).cells.set_index("slice")
        table = C.compare(con, "prod-baseline", "hybrid-v1").table
    rows = table[table["metric"] == "coverage"].set_index("slice")
    # the same figures as the comparison's table: 31 outdated questions with 3 differing pairs, so the
    # randomization test cannot reach 0.05 (1/8) and no drop of any size is detectable
    assert pd.isna(cells.loc["type:outdated", "mde"]) and pd.isna(rows.loc["type:outdated", "mde"])
    for name in ("all", "type:outdated"):
        assert cells.loc[name, "bound"] == pytest.approx(rows.loc[name, "bound"], rel=1e-12)
    assert cells.loc["all", "mde"] == pytest.approx(rows.loc["all", "mde"], rel=1e-12) and cells.loc["all", "mde"] < 0.1

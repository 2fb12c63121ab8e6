"""The dashboard in a real headless Chromium (Debian's /usr/bin/chromium) through Playwright.

A real server is started with `ragslice dashboard` over a database written by the real refresh
(the workspace of `fixtures.build_dashboard_workspace`, which the AppTest tests use too), driven like
a user would, and always stopped; one test runs `ragslice demo` itself. Each test saves a screenshot
of every page it visits under its tmp_path.
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from fixtures import (
    HOSTILE, HOSTILE_GROUP, HOSTILE_ID, build_dashboard_workspace, choose, download, eventually, exceptions, free_port,
    grid_column, healthy, launch, new_tab, query, require_chromium, running_dashboard, settle, stop, tile,
    wait_for_health,
)
from scoring.store.refresh import refresh

pytestmark = pytest.mark.browser

SEED = {"suite": "seed-lab", "baseline": "A", "candidate": "B", "metric": "support"}
PAGES = ("", "statistics", "question_deltas", "question_detail", "present", "slices", "aggregation", "runs",
         "release_matrix", "trends")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """URL of `ragslice dashboard` over the fixture database; the server is stopped afterwards."""
    require_chromium()
    root = tmp_path_factory.mktemp("browser")
    db = root / "dashboard.duckdb"
    refresh(build_dashboard_workspace(root), db)
    with running_dashboard(db, root / "server.log") as running:
        yield running.url


@pytest.fixture
def page(chrome):
    tab = new_tab(chrome, accept_downloads=True)
    try:
        yield tab
    finally:
        tab.context.close()


def visit(page, server: str, name: str, **params: str) -> float:
    """Open a page with query parameters; return the seconds until it settled (recorded, never asserted)."""
    started = time.perf_counter()
    page.goto(f"{server}/{name}?{urlencode(params)}")
    settle(page)
    assert exceptions(page) == []
    return time.perf_counter() - started


def test_release_review_flow(server, page, tmp_path):
    visit(page, server, "", **SEED)
    assert page.locator("h1").first.inner_text() == "Release review"
    assert tile(page, "Support") == "0.833"
    assert tile(page, "R@k") == "1.000"
    worst = page.locator('.st-key-worst_0')
    assert "launch" in worst.inner_text() and "1.000 → 0.500" in worst.inner_text()
    assert page.locator('.st-key-worst_1').count() == 0
    page.screenshot(path=tmp_path / "release_review.png")

    choose(page, "Metric", "R@k")
    assert eventually(lambda: query(page).get("metric"), ["recall"]) == ["recall"]
    page.get_by_text("No question regressed on this metric.").wait_for(timeout=20_000)
    settle(page)
    page.screenshot(path=tmp_path / "release_review_recall.png")

    visit(page, server, "", **SEED)
    page.locator('.st-key-worst_0').get_by_role("link", name="Question detail").click()
    page.wait_for_function("() => location.pathname.endsWith('/question_detail')")
    settle(page)
    params = query(page)
    assert (params["q"], params["baseline"], params["candidate"]) == (["launch"], ["A"], ["B"])
    page.get_by_text("When does the release window start?", exact=True).wait_for(timeout=20_000)
    page.screenshot(path=tmp_path / "question_detail.png")
    assert page.dialogs == []


def test_question_deltas_flow(server, page, tmp_path):
    visit(page, server, "question_deltas", **SEED, sort="suite order")
    order = ["launch", "rollback", "owner", "region"]
    assert eventually(lambda: grid_column(page, "w_delta_table", 0), order) == order
    page.screenshot(path=tmp_path / "question_deltas.png")

    # Click the first bar (the best delta: owner, support 0 -> 1): the table narrows to it.
    bars = page.locator('[data-testid="stVegaLiteChart"] .mark-rect path')
    assert bars.count() == 3
    bars.first.click()
    page.wait_for_function("() => location.search.includes('pick=owner')")
    settle(page)
    assert eventually(lambda: grid_column(page, "w_delta_table", 0), ["owner"]) == ["owner"]
    page.screenshot(path=tmp_path / "question_deltas_picked.png")
    page.get_by_role("button", name="Clear chart pick").click()
    settle(page)
    assert eventually(lambda: "pick" in query(page), False) is False
    assert eventually(lambda: len(grid_column(page, "w_delta_table", 0)), 4) == 4

    choose(page, "Status", "regressed")
    assert eventually(lambda: query(page).get("status"), ["regressed"]) == ["regressed"]
    assert eventually(lambda: grid_column(page, "w_delta_table", 0), ["launch"]) == ["launch"]
    page.screenshot(path=tmp_path / "question_deltas_regressed.png")
    lines = Path(download(page, "Download the filtered table (CSV)")).read_text().splitlines()
    assert lines[0] == "question_id,type,baseline,candidate,delta,status,critical,split,tags,text,label_gap"
    assert lines[1:] == ["launch,lookup,1.0,0.5,-0.5,regressed,False,dev,,When does the release window start?,True"]


def test_every_page_renders_in_the_browser(server, page, tmp_path):
    timings = {}
    for name in PAGES:
        timings[name or "release_review"] = visit(page, server, name, **SEED, q="owner")
        page.screenshot(path=tmp_path / f"{name or 'release_review'}.png")
        assert page.locator('[data-testid="stSidebarNav"] a').count() == 10
    (tmp_path / "timings.txt").write_text("".join(f"{k} {v:.2f}s\n" for k, v in timings.items()))


def test_present_moves_between_screens_with_the_arrow_keys(server, page, tmp_path):
    visit(page, server, "present", **SEED)
    frame = page.frame_locator('[data-testid="stMain"] iframe')
    shown = lambda: frame.locator("section.screen:visible").first.get_attribute("id")  # noqa: E731
    assert eventually(shown, "verdict") == "verdict"
    frame.locator("body").click()  # the slides take the keys once clicked, as a presenter would
    seen = []
    for _ in range(4):
        page.keyboard.press("ArrowRight")
        seen.append(eventually(shown, ["where", "worst", "changed", "limits"][len(seen)]))
    assert seen == ["where", "worst", "changed", "limits"]
    page.keyboard.press("ArrowLeft")
    assert eventually(shown, "changed") == "changed"
    assert frame.locator("#counter").inner_text() == "4 / 5"
    page.screenshot(path=tmp_path / "present.png")
    assert page.dialogs == []


def test_hostile_text_stays_inert(server, page, tmp_path):
    params = {"suite": "hostile", "baseline": "H1", "candidate": HOSTILE_GROUP, "metric": "support"}
    for name in PAGES:
        visit(page, server, name, **params, q=HOSTILE_ID)
        page.screenshot(path=tmp_path / f"hostile_{name or 'release_review'}.png")
        assert page.locator('[data-testid="stMain"] a[href^="javascript"]').count() == 0
        assert page.locator('[data-testid="stMain"] img[src="x"]').count() == 0
        assert page.locator('[data-testid="stMain"] b').count() == 0
        slides = page.frame_locator('[data-testid="stMain"] iframe')
        if name == "present":  # the slides are a document of their own: the same text, as text
            assert HOSTILE in slides.locator("#worst").text_content()
            assert slides.locator('img[src="x"], a[href^="javascript"]').count() == 0
    visit(page, server, "question_detail", **params, q=HOSTILE_ID)
    assert page.get_by_text(HOSTILE, exact=True).first.is_visible()
    assert page.dialogs == []


def test_demo_starts_and_serves_the_release_review(chrome, tmp_path):
    """`ragslice demo` starts and serves the release review page (real browser)."""
    import duckdb

    from scoring.decide.comparison import compare

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "demo.log"
    # The real command, run from the checkout so the code under test serves.
    process = launch(["demo", "--port", str(port), "--cache", str(tmp_path / "cache")], log_path)
    try:
        wait_for_health(base, process, log_path, timeout=120)
        # Printed (and flushed) before the server starts, so in the log once the server answers.
        found = re.search(r"^ragslice demo: release review of .*: (http://\S+)$", log_path.read_text(), re.M)
        assert found, log_path.read_text()
        url = found.group(1)
        assert url == f"{base}/?suite=demo&baseline=prod-baseline&candidate=rerank-v2"
        page = new_tab(chrome, viewport={"width": 1400, "height": 2400})
        try:
            started = time.perf_counter()
            page.goto(url)
            settle(page, timeout=120_000)
            first = time.perf_counter() - started
            assert page.locator('[data-testid="stException"]').count() == 0
            assert page.locator("h1").first.inner_text() == "Release review"
            verdict = page.locator(".st-key-verdict")
            # The card leads with the verdict and the first failing gate; live and recorded verdicts and
            # every gate's figures are one click away, under Details.
            assert verdict.locator("h2").first.inner_text().strip().endswith("FAIL")
            assert "critical coverage" in verdict.locator(".st-key-gate_0").inner_text()
            details = page.locator('[data-testid="stExpander"]').filter(has_text="Details:").first
            details.locator("summary").click()
            details.get_by_text("Live verdict: FAIL", exact=True).wait_for(timeout=20_000)
            assert details.get_by_text("Recorded verdict: FAIL", exact=True).is_visible()
            gates = eventually(lambda: grid_column(page, "w_live_gates", 0)[:1], ["critical coverage"])
            assert gates == ["critical coverage"]
            tiles = {label: tile(page, label) for label in ("R@k", "nDCG@k", "Support", "Coverage", "Abstention",
                                                            "Disclosures")}
            assert all(re.fullmatch(r"\d\.\d{3}", v) for v in tiles.values()), tiles
            assert page.get_by_text(re.compile(r"^paired n 225 · baseline \d\.\d{3} · CI \[")).count() >= 1
            page.screenshot(path=tmp_path / "demo_release_review.png")
            started = time.perf_counter()
            page.reload()
            settle(page, timeout=120_000)
            again = time.perf_counter() - started
        finally:
            page.context.close()
        (tmp_path / "timings.txt").write_text(f"first visit {first:.2f}s\nreload {again:.2f}s\n")
    finally:
        ended = stop(process, timeout=30)
    assert ended, "`ragslice demo` did not end on SIGTERM"
    assert not healthy(base), "the server outlived `ragslice demo`"
    # Every tile shows the candidate's paired mean that scoring.decide.comparison reports, as Statistics does.
    with duckdb.connect(str(tmp_path / "cache" / "demo.duckdb"), read_only=True) as con:
        table = compare(con, "prod-baseline", "rerank-v2").table
    overall = table[table["slice"] == "all"].set_index("metric_name")
    for label, shown in tiles.items():
        assert shown == f"{overall.loc[label, 'candidate']:.3f}", label

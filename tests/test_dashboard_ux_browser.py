"""The dashboard's three users in a real headless Chromium at projector size (1280x720), over the bundled
demo served by `ragslice dashboard --policy` (prod-baseline against rerank-v2, the demo policy live).

Every wait is for a condition the page reaches (`settle`, a URL, an element), never for a time.
"""
from __future__ import annotations

from urllib.parse import urlencode

import pytest

from fixtures import (
    eventually, exceptions, grid_column, new_tab, query, require_chromium, running_dashboard, settle,
)

pytestmark = pytest.mark.browser

DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}
PROJECTOR = {"width": 1280, "height": 720}
DRAWN = "() => document.querySelectorAll('.st-key-box_w_delta_table [role=\"row\"] [role=\"gridcell\"]').length > 0"
PAGES = ("", "statistics", "question_deltas", "question_detail", "slices", "aggregation", "runs")


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_db):
    require_chromium()
    from scoring.io.demo import bundled_policy

    root = tmp_path_factory.mktemp("ux-browser")
    with running_dashboard(demo_db, root / "server.log", policy=bundled_policy()) as running:
        yield running.url


@pytest.fixture
def page(chrome):
    tab = new_tab(chrome, viewport=PROJECTOR)
    try:
        yield tab
    finally:
        tab.context.close()


def visit(page, server: str, name: str, **params: str) -> None:
    page.goto(f"{server}/{name}?{urlencode(params)}")
    settle(page)
    assert exceptions(page) == []


def test_verdict_card_is_first_on_a_projector_and_its_gate_opens_the_filtered_questions(server, page, tmp_path):
    visit(page, server, "", **DEMO)
    card = page.locator(".st-key-verdict")
    heading = card.locator("h2").first
    assert heading.inner_text().strip().endswith("FAIL")
    first = card.locator(".st-key-gate_0")
    assert "critical coverage: Coverage on critical questions is 0.732, below the minimum 0.9" in first.inner_text()
    # The verdict and the first failing gate are on the first screen, above any tile or table.
    assert heading.bounding_box()["y"] + heading.bounding_box()["height"] < PROJECTOR["height"]
    assert first.bounding_box()["y"] + first.bounding_box()["height"] < PROJECTOR["height"]
    page.screenshot(path=tmp_path / "verdict.png")
    first.get_by_role("link").click()
    page.wait_for_function("() => location.pathname.endsWith('/question_deltas')")
    settle(page)
    params = query(page)
    assert (params["metric"], params["critical"]) == (["coverage"], ["critical only"])
    grid = page.locator('.st-key-box_w_delta_table [data-testid="stDataFrameResizable"]')
    grid.scroll_into_view_if_needed()
    # critical coverage regressions first: q-0026 (critical, coverage 1 -> 0) leads the list (the grid draws its
    # rows once scrolled into view: read until they are there)
    rows = eventually(lambda: grid_column(page, "w_delta_table", 0)[:2], ["q-0026", "q-0039"])
    assert rows == ["q-0026", "q-0039"], rows


def test_one_click_from_a_row_to_its_question(server, page, tmp_path):
    visit(page, server, "question_deltas", **DEMO, metric="coverage", worse="1")
    grid = page.locator('.st-key-box_w_delta_table [data-testid="stDataFrameResizable"]')
    grid.scroll_into_view_if_needed()
    page.wait_for_function(DRAWN)  # the grid draws its rows once scrolled into view
    first = grid_column(page, "w_delta_table", 0)[0]
    assert grid_column(page, "w_delta_table", 1)[0].endswith(f"&q={first}")  # the row's detail link
    box = grid.bounding_box()
    # The first row's "detail" link: the grid is drawn on a canvas; the link sits right of the ID column
    # (q-NNNN, about 70 px wide) in the first row under the 35 px header.
    at = (box["x"] + 95, box["y"] + 35 + 17)
    page.mouse.move(*at)
    with page.context.expect_page() as opened:
        page.mouse.click(*at)  # one click
    detail = opened.value
    detail.wait_for_load_state()
    settle(detail)
    assert detail.evaluate("location.pathname").endswith("/question_detail")
    assert query(detail)["q"] == [first] and query(detail)["candidate"] == ["rerank-v2"]
    assert detail.locator(".st-key-diagnosis").get_by_text("Candidate rerank-v2", exact=False).first.is_visible()
    detail.screenshot(path=tmp_path / "detail.png")


@pytest.mark.parametrize(("question", "kind", "words"), [
    ("q-0039", "Retrieval missed the evidence", "rb-0017 not delivered"),
    ("q-0030", "Evidence delivered, but the answer misused it", "pol-0007 (rank 3)"),
    ("q-0063", "The record failed", "answer model timed out"),
])
def test_the_diagnosis_line_reads_in_the_browser(server, page, question, kind, words):
    visit(page, server, "question_detail", **DEMO, q=question)
    line = page.locator(".st-key-diagnosis [data-testid='stAlert']").first.inner_text()
    assert f"Candidate rerank-v2: {kind}:" in line and words in line, line


@pytest.mark.parametrize(("name", "params", "words"), [
    ("", {"candidate": "doesnotexist"}, "candidate 'doesnotexist', which is not available here; showing rerank-v2"),
    ("", {"suite": "nosuch"}, "suite 'nosuch', which is not available here; showing demo"),
    ("question_detail", {"q": "q-9999"}, "question 'q-9999', which is not available here; showing q-0001"),
    ("question_deltas", {"type": "nosuchtype"}, "question type 'nosuchtype', which is not available here; showing "
                                                "every question type (no filter)"),
])
def test_an_unknown_value_in_a_link_is_named_on_the_page(server, page, name, params, words):
    visit(page, server, name, **{**DEMO, **params})
    warning = page.locator("[data-testid='stAlert']").filter(has_text="The link asks for").first
    assert words in warning.inner_text()
    assert warning.bounding_box()["y"] < PROJECTOR["height"]  # seen without scrolling


def test_a_zero_change_is_neutral_and_no_change_is_said(server, page):
    # prod-text answers in sentences that align to production's claims exactly: every headline delta is 0.
    visit(page, server, "", suite="demo", baseline="prod-baseline", candidate="prod-text")
    tiles = page.locator('[data-testid="stMetric"]').filter(has=page.get_by_text("Support", exact=True)).first
    delta = tiles.locator('[data-testid="stMetricDelta"]')
    assert delta.inner_text().strip() == "0.000"
    assert delta.locator("svg").count() == 0  # no arrow
    visit(page, server, "question_deltas", suite="demo", baseline="prod-baseline", candidate="prod-text")
    assert page.get_by_text("No question changed on Support", exact=False).first.is_visible()
    assert page.locator('[data-testid="stVegaLiteChart"]').count() == 0


def test_navigation_links_show_focus_and_tables_let_tab_through(server, page):
    visit(page, server, "question_deltas", **DEMO)
    for _ in range(40):  # Tab from the top of the page until a navigation link holds the focus
        page.keyboard.press("Tab")
        if page.evaluate("() => !!document.activeElement.closest('[data-testid=\"stSidebarNav\"]')"):
            break
    style = page.evaluate("() => { const s = getComputedStyle(document.activeElement); "
                          "return [s.outlineStyle, s.outlineWidth]; }")
    assert style == ["solid", "3px"], style
    # Tab on through the page: it reaches the table, and the next Tab leaves it (the grid keeps no focus trap).
    page.locator(".st-key-w_gap input").first.focus()
    inside = ("() => { const a = document.activeElement; return !!a.closest('.st-key-box_w_delta_table') && "
              "(a.tagName === 'CANVAS' || a.getAttribute('role') === 'gridcell'); }")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate(inside):
            break
    assert page.evaluate(inside), "Tab never reached the table's grid"
    page.keyboard.press("Tab")
    page.wait_for_function("() => !document.activeElement.closest('.st-key-box_w_delta_table')")
    assert query(page).get("q") is None and page.evaluate("location.pathname").endswith("/question_deltas")


@pytest.mark.parametrize("name", PAGES)
def test_every_page_fits_a_projector_without_a_sideways_scroll(server, page, name, tmp_path):
    visit(page, server, name, **DEMO, q="q-0030")
    wide = page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]'); "
                         "return [m.scrollWidth, m.clientWidth]; }")
    assert wide[0] <= wide[1], wide
    page.screenshot(path=tmp_path / f"{name or 'release_review'}.png")

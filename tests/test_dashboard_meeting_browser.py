"""The pages a meeting reads, in a real headless Chromium at 1280x720 (a projector) and 1024x600 (a small
laptop), over a copy of the bundled demo served in review mode with the demo policy live: no horizontal
scroll, no console error, no page showing its own source text; the diagnosis of a disclosure, a retrieval
miss, a misuse and a failure; an unknown page path said.

Every wait is for a condition the page reaches (`settle`, an element), never for a time.
"""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest

from fixtures import REPO, copy_database, exceptions, new_tab, require_chromium, running_dashboard, settle

pytestmark = pytest.mark.browser

DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}
SIZES = [{"width": 1280, "height": 720}, {"width": 1024, "height": 600}]
VIEWS = REPO / "dashboard" / "views"
# Every page, with a question whose detail has something to show (the disclosure of q-0017).
PAGES = {"": DEMO, "question_detail": {**DEMO, "q": "q-0017"}, "trends": {"suite": "demo"},
         "labels": {**DEMO, "pool_search": "q-0100"}, "release_matrix": {"suite": "demo", "baseline": "prod-baseline"},
         "statistics": DEMO, "question_deltas": DEMO, "present": DEMO, "slices": DEMO, "aggregation": DEMO,
         "runs": {"suite": "demo"}}
STREAMLIT_PROBE = re.compile(r"/[a-z_]+/_stcore/(health|host-config)$")
"""Streamlit's own first requests from a deep link: it tries the page path as the app's base path (a 404),
then the root. Not an error of the page."""


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_db):
    require_chromium()
    from scoring.io.demo import bundled_policy

    root = tmp_path_factory.mktemp("meeting-browser")
    db = copy_database(demo_db, root / "db")
    workspace = Path(shutil.copytree(demo_db.parent / "workspace", root / "workspace"))
    with running_dashboard(db, root / "server.log", policy=bundled_policy(),
                           extra=["--workspace", str(workspace), "--reviewer", "reader"]) as running:
        yield running.url


@pytest.fixture(params=SIZES, ids=lambda s: f"{s['width']}x{s['height']}")
def page(chrome, request):
    tab = new_tab(chrome, viewport=request.param)
    tab.console_errors = []
    tab.on("console", lambda m: tab.console_errors.append(m) if m.type == "error" else None)
    try:
        yield tab
    finally:
        tab.context.close()


def visit(page, server: str, name: str, **params: str) -> None:
    page.goto(f"{server}/{name}?{urlencode(params)}")
    settle(page)
    assert exceptions(page) == []


def errors(page) -> list[str]:
    """The console errors of the page, Streamlit's own deep-link probes left out."""
    return [m.text for m in page.console_errors
            if not (m.text.startswith("Failed to load resource") and STREAMLIT_PROBE.search(m.location.get("url", "")))]


def unshown_strings(path: Path) -> list[str]:
    """A page script's docstrings and bare strings, as a reader would see them rendered (backticks gone),
    cut to their first 60 characters."""
    tree = ast.parse(path.read_text())
    return [" ".join(node.value.value.replace("`", "").split())[:60] for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_fits_its_screen_and_shows_no_source_text(server, page, name, tmp_path):
    visit(page, server, name, **PAGES[name])
    width = page.evaluate("() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth, "
                          "document.querySelector('[data-testid=stMain]').scrollWidth, "
                          "document.querySelector('[data-testid=stMain]').clientWidth]")
    assert width[0] <= width[1] and width[2] <= width[3], width  # no horizontal scroll
    assert errors(page) == []
    shown = " ".join(page.locator("[data-testid='stMain']").inner_text().split())
    script = VIEWS / f"{name or 'release_review'}.py"
    leaked = [text for text in unshown_strings(script) + unshown_strings(REPO / "dashboard" / "app.py") if text in shown]
    assert not leaked, leaked
    page.screenshot(path=tmp_path / f"{name or 'release_review'}.png")


@pytest.mark.parametrize(("question", "kind", "words"), [
    ("q-0017", "A restricted document reached the caller", "sec-0004 (delivered at rank 2 of the first 5)"),
    ("q-0039", "Retrieval missed the evidence", "rb-0017 not delivered"),
    ("q-0030", "Evidence delivered, but the answer misused it", "pol-0007 (rank 3)"),
    ("q-0063", "The record failed", "answer model timed out"),
])
def test_the_diagnosis_names_each_cause(server, page, question, kind, words):
    visit(page, server, "question_detail", **DEMO, q=question)
    line = page.locator(".st-key-diagnosis [data-testid='stAlert']").filter(has_text="Candidate rerank-v2").first
    text = line.inner_text()
    assert f"Candidate rerank-v2: {kind}:" in text and words in text, text


def headers(page, key: str) -> list[str]:
    """The column headers of the table keyed `key`, once its grid has drawn (it does when scrolled into view)."""
    page.locator(f".st-key-box_{key}").scroll_into_view_if_needed()
    page.wait_for_function(f"() => document.querySelectorAll('.st-key-box_{key} [role=\"columnheader\"]').length > 0")
    return page.locator(f".st-key-box_{key} [role='columnheader']").all_inner_texts()


def test_the_rankings_and_the_sentences_show_the_columns_they_are_read_by(server, page):
    if page.viewport_size["width"] != 1280:
        pytest.skip("the meeting's projector width")
    visit(page, server, "question_detail", **DEMO, q="q-0100")
    assert headers(page, "w_retrieved_candidate")[:4] == ["rank", "doc_id", "grade", "what happened to it"]
    visit(page, server, "question_detail", suite="demo", baseline="prod-baseline", candidate="prod-text", q="q-0030")
    heads = headers(page, "w_sentences_candidate")
    assert "aligned to" in heads and "decided by" in heads
    # The grid draws on a canvas inside a scroller: every column is in view when nothing is left to scroll.
    scroll = page.locator(".st-key-box_w_sentences_candidate .dvn-scroller").first.evaluate(
        "e => [e.scrollWidth, e.clientWidth]")
    assert scroll[0] <= scroll[1] + 1, scroll


def test_an_unknown_page_path_is_said(server, page):
    page.goto(f"{server}/nosuchpage?{urlencode(DEMO)}")
    settle(page)
    assert page.locator("h1").first.inner_text() == "Release review"
    warning = page.locator("[data-testid='stAlert']").filter(has_text="The link asks for page").first
    assert "page 'nosuchpage', which is not available here; showing Release review instead" in warning.inner_text()
    assert warning.bounding_box()["y"] < page.viewport_size["height"]  # seen without scrolling

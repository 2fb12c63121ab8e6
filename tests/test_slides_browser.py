"""The decision's screens in a real headless Chromium at 1280x720 (a projector) and 1024x600 (a small laptop),
over the bundled demo (prod-baseline against rerank-v2, the demo policy): every screen of `ragslice report
--slides` fits its window without scrolling, at full type; on the Present page the frame fits the window below
the title, its first screen shows every failing gate, the keys move the slides and never the page, and no key
throws.

Every wait is for a condition the page reaches (`settle`, an element), never for a time.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest

from fixtures import copy_database, exceptions, new_tab, require_chromium, running_dashboard, settle

pytestmark = pytest.mark.browser

DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}
SIZES = [{"width": 1280, "height": 720}, {"width": 1024, "height": 600}]
KEYS = ("End", "Home", "ArrowRight", "ArrowDown", "PageDown", " ", "ArrowLeft", "ArrowUp", "PageUp", "End", "Home")

SCREEN = """() => {
  const s = document.querySelector('section.screen.on');
  const footer = document.querySelector('footer').getBoundingClientRect().top;
  const bottom = Math.max(...[...s.querySelectorAll('*')].map(e => e.getBoundingClientRect().bottom));
  return {id: s.id, scroll: s.scrollHeight, height: s.clientHeight, window: innerHeight, bottom, footer,
          fit: s.getAttribute('data-fit'), page: document.documentElement.scrollHeight};
}"""
"""The screen shown: its content's height against its window, the bottom of its lowest element against the
footer's top, and the type's scale (data-fit: 1 unless the script had to shrink it)."""
ERRORS = "() => { window.__errors = []; window.addEventListener('error', e => window.__errors.push(e.message)); }"
SCROLLED = "() => [window.scrollY, document.querySelector('[data-testid=\"stMain\"]').scrollTop]"


@pytest.fixture(scope="module")
def slides(tmp_path_factory, demo_db) -> Path:
    """`ragslice report --slides` of the demo comparison (on a copy: it records the verdict)."""
    from scoring.cli import main
    from scoring.io.demo import bundled_policy

    root = tmp_path_factory.mktemp("slides-browser")
    db = copy_database(demo_db, root / "db")
    out = root / "decision.html"
    assert main(["report", DEMO["baseline"], DEMO["candidate"], "--db", str(db), "--policy", str(bundled_policy()),
                 "--slides", "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_db):
    require_chromium()
    from scoring.io.demo import bundled_policy

    root = tmp_path_factory.mktemp("present-browser")
    with running_dashboard(copy_database(demo_db, root / "db"), root / "server.log",
                           policy=bundled_policy()) as running:
        yield running.url


@pytest.fixture(params=SIZES, ids=lambda s: f"{s['width']}x{s['height']}")
def page(chrome, request):
    tab = new_tab(chrome, viewport=request.param)
    tab.errors = []
    tab.on("pageerror", lambda e: tab.errors.append(str(e)))
    try:
        yield tab
    finally:
        tab.context.close()


def failing_gates(demo_db: Path) -> list[str]:
    from scoring.decide.policy import load_policy
    from scoring.decide.report import compare_with_evidence
    from scoring.io.demo import bundled_policy

    c, _ = compare_with_evidence(DEMO["baseline"], DEMO["candidate"], db=demo_db, policy=load_policy(bundled_policy()),
                                 limit=0)
    return [g.name for g in c.verdict.failed_gates]


def test_every_screen_of_the_slides_fits_its_window_at_full_type(slides, page):
    page.goto(slides.as_uri())
    n = page.locator("section.screen").count()
    seen = []
    for _ in range(n):
        s = page.evaluate(SCREEN)
        seen.append(s["id"])
        assert s["scroll"] <= s["height"] == s["window"], s  # nothing below the window, nothing to scroll
        assert s["page"] <= s["window"], s
        assert s["bottom"] <= s["footer"] + 1, s  # the footer covers nothing
        assert s["fit"] == "1", s  # laid out to fit (present.BODY_LINES), not shrunk to fit
        page.keyboard.press("ArrowRight")
    assert seen[0] == "verdict" and seen[-1].startswith("limits") and len(set(seen)) == n
    assert {"where", "worst", "worst-2", "worst-3", "changed"} <= set(seen)  # one regression a screen
    assert page.errors == []


def test_the_first_screen_names_every_failing_gate(slides, page, demo_db):
    page.goto(slides.as_uri())
    shown = page.locator("#verdict li.fail b").all_inner_texts()
    assert shown == failing_gates(demo_db) and len(shown) == 6


def test_the_present_frame_fits_the_window_and_its_first_screen_every_failing_gate(server, page, demo_db):
    page.goto(f"{server}/present?{urlencode(DEMO)}")
    settle(page)
    assert exceptions(page) == []
    frame_element = page.locator(".st-key-slides iframe")
    box = frame_element.bounding_box()
    height = page.viewport_size["height"]
    assert box["y"] >= 60 and box["y"] + box["height"] <= height, box  # below Streamlit's header, whole in view
    frame = frame_element.element_handle().content_frame()
    frame.locator("section.screen.on").wait_for()
    s = frame.evaluate(SCREEN)
    assert s["id"] == "verdict" and s["scroll"] <= s["height"] and s["bottom"] <= s["footer"] + 1, s
    assert frame.locator("#verdict .big").inner_text() == "FAIL"
    assert frame.locator("#verdict li.fail b").all_inner_texts() == failing_gates(demo_db)


def test_the_keys_move_the_slides_never_the_page_and_throw_nothing(server, page):
    page.goto(f"{server}/present?{urlencode(DEMO)}")
    settle(page)
    frame_element = page.locator(".st-key-slides iframe")
    frame = frame_element.element_handle().content_frame()
    frame.locator("section.screen.on").wait_for()
    frame.evaluate(ERRORS)
    frame_element.click(position={"x": 10, "y": 10})
    before = page.evaluate(SCROLLED)
    n = frame.locator("section.screen").count()
    shown = []
    for key in KEYS:
        page.keyboard.press(key)
        shown.append(frame.evaluate("() => document.querySelector('section.screen.on').id"))
        assert page.evaluate(SCROLLED) == before, key  # the page around the frame stays where it was
    ids = frame.evaluate("() => [...document.querySelectorAll('section.screen')].map(s => s.id)")
    assert len(ids) == n and shown[0] == ids[-1] and shown[1] == ids[0] and shown[-1] == ids[0]
    assert shown[2:6] == ids[1:5] and shown[6:9] == [ids[3], ids[2], ids[1]]
    assert frame.evaluate("() => window.__errors") == [] and page.errors == []

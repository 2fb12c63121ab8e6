"""Hostile text stays inert: in every dashboard page, in a real browser, and in the HTML report.

The workspace of `hostile.build_hostile_workspace` puts HTML, script tags, `javascript:` links
(markdown and HTML), Streamlit directives, markdown emphasis, LaTeX, template syntax and a style
sheet into every free-text field (questions, answers, contexts, claim texts, document titles and
texts, chunk texts, reviewer notes, tags, types, access groups, manifest values, the policy name and
gate names) and, without whitespace, into question, document, chunk and claim IDs and the group
name. `ragslice report` writes the HTML report (and records the verdict, so the release review
shows the hostile policy too); `ragslice dashboard` serves the database.

A real headless Chromium visits every page the sidebar lists (new pages are covered without
editing this file), opens every expander, and asserts: no dialog fired, `window.__pwned` is
undefined, no element a payload would create exists (see `hostile.INJECTED`), and the payloads
are shown as literal text. The report is opened from file:// with every other request aborted.
A control test shows the detector finds each interpreted payload, so a pass means something.
"""
from __future__ import annotations

import subprocess
import sys
import time
from html import escape
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

import hostile as H
from fixtures import REPO, exceptions, new_tab, running_dashboard, settle, visit
from scoring.store.refresh import refresh

pytestmark = pytest.mark.browser

PARAMS = {"suite": H.SUITE, "baseline": H.BASELINE, "candidate": H.GROUP, "metric": "support", "q": H.QUESTION_ID}
"""The comparison every page opens on; `q` selects the hostile question on the detail page."""

EVERY_PAYLOAD = tuple(H.PAYLOADS.values())
SHOWN: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # page path: (literal in the visible text, literal anywhere in the DOM text, e.g. grid cells)
    "": (EVERY_PAYLOAD + (H.QUESTION_ID,), ()),  # worst regression's text, recorded policy name
    "question_detail": (EVERY_PAYLOAD + (H.QUESTION_ID, H.QUESTION_TYPE),
                        (H.DOC_ID, H.RESTRICTED_DOC_ID, H.CHUNK_ID, H.CLAIM_ID, H.EXTRA_CLAIM_ID)),
    "question_deltas": ((), (H.QUESTION_ID, H.UNANSWERABLE_ID)),
    "runs": (EVERY_PAYLOAD, ()),
    "statistics": ((H.QUESTION_TYPE,), ()),
    "slices": ((H.QUESTION_TYPE,), ()),
    "aggregation": ((H.QUESTION_TYPE,), ()),
}
"""What each known page shows of the hostile data, verbatim. Every page (known or new) must also
show the candidate's group name `H.GROUP` verbatim (the comparison caption)."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, Path]:
    """The hostile database (refreshed, with the verdict `ragslice report` recorded) and the report."""
    root = tmp_path_factory.mktemp("hostile")
    db = root / "hostile.duckdb"
    refresh(H.build_hostile_workspace(root), db)
    policy = root / "policy.toml"
    policy.write_text(H.POLICY, encoding="utf-8")
    report = root / "report.html"
    done = subprocess.run([sys.executable, "-m", "scoring.cli", "report", H.BASELINE, H.GROUP, "--db", str(db),
                           "--policy", str(policy), "-o", str(report)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return {"root": root, "db": db, "report": report}


@pytest.fixture(scope="module")
def server(hostile):
    with running_dashboard(hostile["db"], hostile["root"] / "server.log") as running:
        yield running


EXPANDERS_DRAWN = """() => [...document.querySelectorAll('[data-testid="stExpander"] details')].every(d => d.open
  && [...d.querySelectorAll('[data-testid="stDataFrame"]')].every(f => f.querySelector('[role="grid"]'))
  && [...d.querySelectorAll('[data-testid="stVegaLiteChart"]')].every(c => c.querySelector('.marks')))"""
"""Every expander is open and has drawn its tables (Glide's accessible grid appears once the canvas has
drawn) and charts (Vega's marks): an expander's content is drawn only when it opens."""


def open_expanders(page) -> int:
    """Open every closed expander and wait until their content has drawn; returns how many."""
    summaries = page.locator('[data-testid="stExpander"] details:not([open]) > summary')
    n = summaries.count()
    for _ in range(n):
        summaries.first.click()
    if n:
        page.wait_for_function(EXPANDERS_DRAWN, timeout=30_000)
        settle(page)
    return n


def page_texts(page) -> tuple[str, str]:
    """(visible text, all DOM text) of the page."""
    return page.evaluate("document.body.innerText"), page.evaluate("document.body.textContent")


def shown_texts(page, in_visible, in_dom, *, seconds: float = 15.0) -> tuple[str, str]:
    """`page_texts` once every expected string is there, or after `seconds` (grids and charts draw
    after the script run ends, later on a busy machine); the caller asserts on what it got."""
    deadline = time.monotonic() + seconds
    while True:
        visible, dom = page_texts(page)
        complete = all(s in visible for s in in_visible) and all(s in dom for s in in_dom)
        if complete or time.monotonic() > deadline:
            return visible, dom
        page.wait_for_timeout(250)


def test_the_detector_finds_every_interpreted_payload(chrome):
    """Control: the same checks on a page where the payloads ARE interpreted find each of them."""
    page = new_tab(chrome)
    page.route("**/*", lambda route: route.abort())
    interpreted = " ".join(f'<span style="color:red">{w}</span>' for w in H.WORDS) + '<span class="katex">x</span>'
    # set_content returns after the load event: the inline script has run (its alert, answered by the
    # dialog handler, held the parse until then), the aborted image's onerror and the svg's and
    # iframe's onload have fired.
    page.set_content(f"<html><body><p>{H.TEXT}</p><p>{interpreted}</p></body></html>")
    found = H.injected(page)
    assert set(found) == {*H.INJECTED, "script from the data", "style from the data", "<b>/<i> from the data",
                          "window.__pwned",
                          *(f"interpreted {word}" for word in H.WORDS)}, found
    assert page.dialogs  # the script payload's alert fired
    page.context.close()


def test_every_dashboard_page_shows_hostile_text_as_inert_text(server, chrome, tmp_path):
    page = new_tab(chrome)
    visit(page, f"{server.url}/?{urlencode(PARAMS)}")
    links = page.locator('[data-testid="stSidebarNav"] a')
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    paths = [urlsplit(h).path.strip("/") for h in hrefs]
    assert len(paths) >= 7 and set(SHOWN) <= set(paths), paths

    report = []
    for path in paths:
        visit(page, f"{server.url}/{path}?{urlencode(PARAMS)}")
        name = path or "release_review"
        assert exceptions(page) == [], name
        assert H.injected(page) == {}, name
        opened = open_expanders(page)
        page.screenshot(path=tmp_path / f"{name}.png")
        assert H.injected(page) == {}, f"{name}, expanders open"
        in_visible, in_dom = SHOWN.get(path, ((), ()))
        visible, dom = shown_texts(page, (H.GROUP, *in_visible), in_dom)
        assert H.GROUP in visible, name
        assert [s for s in in_visible if s not in visible] == [], name
        assert [s for s in in_dom if s not in dom] == [], name
        report.append(f"{name}: {opened} expanders opened, {sum(p in visible for p in EVERY_PAYLOAD)} of "
                      f"{len(EVERY_PAYLOAD)} payloads shown verbatim")
    # The detail page selected the hostile question from the URL (its ID is shown as typed).
    visit(page, f"{server.url}/question_detail?{urlencode(PARAMS)}")
    assert page.locator('[data-testid="stText"]').filter(has_text=f"id: {H.QUESTION_ID}").count() == 1
    assert page.dialogs == []
    (tmp_path / "pages.txt").write_text("\n".join(report) + "\n")


def test_the_html_report_shows_hostile_text_as_inert_text(hostile, chrome, tmp_path):
    html = hostile["report"].read_text(encoding="utf-8")
    markup = [t for t in (*EVERY_PAYLOAD, H.QUESTION_ID, H.GROUP, H.QUESTION_TYPE, H.DOC_ID, H.CHUNK_ID)
              if escape(t) != t]
    assert len(markup) >= 10
    assert [t for t in markup if t in html] == []  # every one is escaped in the file

    uri = hostile["report"].as_uri()
    page = new_tab(chrome)
    requests: list[str] = []

    def route(r) -> None:
        requests.append(r.request.url)
        if r.request.url == uri:
            r.continue_()
        else:
            r.abort()

    page.route("**/*", route)
    page.goto(uri)  # returns after the load event: every payload that could fire has fired by then
    page.screenshot(path=tmp_path / "report.png", full_page=True)
    assert page.locator("#verdict-banner").inner_text() == "Verdict: FAIL"
    assert H.injected(page) == {}
    visible, _ = page_texts(page)
    assert [p for p in EVERY_PAYLOAD if p not in visible] == []
    assert H.QUESTION_ID in visible and H.GROUP in visible
    assert page.dialogs == []
    assert requests == [uri]

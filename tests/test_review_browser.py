"""Review mode in a real headless Chromium: a reviewer grades two unjudged documents on the Labels
page, the background refresh lands, and the question deltas show the new numbers."""
from __future__ import annotations

import csv
import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest

from fixtures import choose, download, eventually, grid_column, new_tab, require_chromium, running_dashboard, settle
from scoring.store.refresh import refresh

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SEED = {"suite": "seed-lab", "baseline": "A", "candidate": "B"}


def deltas(page, url: str) -> dict[str, tuple[str, str]]:
    """Question deltas of P@k as the page's CSV gives them: question -> (baseline, candidate)."""
    page.goto(f"{url}/question_deltas?{urlencode(SEED | {'metric': 'precision', 'sort': 'suite order'})}")
    settle(page)
    with open(download(page, "Download the filtered table (CSV)"), newline="") as f:
        return {row["question_id"]: (row["baseline"], row["candidate"]) for row in csv.DictReader(f)}


def first_in_queue(page) -> str:
    return page.locator(".st-key-judge_0 [data-testid='stText']").first.inner_text().split(":")[0]


def test_two_grades_on_the_labels_page_change_the_question_deltas(chrome, tmp_path):
    require_chromium()
    ws = Path(shutil.copytree(REPO / "data" / "seed-lab", tmp_path / "ws"))
    db = tmp_path / "seed.duckdb"
    refresh(ws, db)
    page = new_tab(chrome, accept_downloads=True)
    with running_dashboard(db, tmp_path / "server.log", extra=["--workspace", str(ws), "--reviewer", "carl"]) as server:
        before = deltas(page, server.url)
        # archive, ranked within k = 2 by both runs on launch and owner, carries no label: not relevant
        assert (before["launch"], before["owner"]) == (("0.5", "0.5"), ("0.5", "0.5"))

        page.goto(f"{server.url}/labels?{urlencode(SEED)}")
        settle(page)
        decisions = ws / "suites" / "seed-lab" / "reviews" / "carl.jsonl"
        for n, question in enumerate(("owner", "launch"), 1):  # most influential first; a saved pair leaves at once
            assert eventually(lambda: first_in_queue(page), question) == question
            choose(page, "Grade", "1 related")
            page.locator(".st-key-w_save_0 button").click()
            assert eventually(lambda: decisions.exists() and len(decisions.read_text().splitlines()), n) == n
        assert all('"grade": 1' in line for line in decisions.read_text().splitlines())

        # the page reruns when the background refresh lands: its decisions table then lists both as applied
        assert eventually(lambda: grid_column(page, "w_reviews", 0), ["carl", "carl"], timeout=90) == ["carl", "carl"]
        page.screenshot(path=tmp_path / "labels.png")
        after = deltas(page, server.url)
        assert (after["launch"], after["owner"]) == (("1.0", "1.0"), ("1.0", "1.0"))
        assert after["rollback"] == before["rollback"]
    page.context.close()

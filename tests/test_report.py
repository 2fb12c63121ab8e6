"""Renderings: escaped markdown, a self-contained HTML report, and that report in headless Chromium."""
from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from scoring.decide import report
from scoring.cli import main
from scoring.store.refresh import refresh
from fixtures import (
    SEED_LAB, abstain, chromium, comparison, hit, miss, new_tab, question, write_policy, write_workspace_files,
)

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> | **bold** [link](http://example.com)'


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    """Question text, answers, claim text and manifest notes carry markup; q1 regresses on the candidate."""
    root = tmp_path_factory.mktemp("hostile")
    questions = [question(1, text=HOSTILE, critical=True, disputed=HOSTILE,
                          claims={"x": HOSTILE}), question(2), question(3, relevant=[], support={})]
    bad = {**miss(1), "answer": HOSTILE, "claims": [{"id": "x", "citations": ["other"], "text": HOSTILE}]}
    runs = {
        "base": {"records": [hit(1), hit(2), miss(3)], "notes": HOSTILE},
        "cand": {"records": [bad, hit(2), abstain(3)], "notes": "candidate", "model": "m2"},
    }
    ws = write_workspace_files(root / "ws", questions, runs)
    db = root / "h.duckdb"
    refresh(ws, db)
    return db


@pytest.fixture()
def hostile_copy(hostile_db, tmp_path) -> Path:
    target = tmp_path / "h.duckdb"
    shutil.copyfile(hostile_db, target)
    return target


def policy_file(tmp_path: Path) -> Path:
    return write_policy(tmp_path / "gate.toml", '[[gates]]\nname = "critical coverage"\nmetric = "coverage"\n'
                                                'slice = "critical"\nmin = 0.9\n[[gates]]\nname = "abstains"\n'
                                                'metric = "abstention"\nslice = "unanswerable"\nmin = 1\n')


def build_html(db: Path, tmp_path: Path) -> str:
    out = tmp_path / "report.html"
    assert main(["report", "base", "cand", "--db", str(db), "--policy", str(policy_file(tmp_path)),
                 "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_markdown_escapes_data(hostile_db):
    c = comparison(hostile_db, "base", "cand")
    text = report.markdown(c)
    assert "<script>" not in text and "<img" not in text
    assert "&lt;script&gt;alert(\"x\")&lt;/script&gt;" in text
    assert "| `q1` (critical) " in text  # the regression row
    line = next(x for x in text.splitlines() if x.startswith("| `q1`"))
    assert line.count(" | ") == 3  # the hostile '|' does not add a column
    assert report.md("a|b\nc") == r"a\|b c"
    assert report.md("<b> & *x*") == r"&lt;b&gt; &amp; \*x\*"


SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "h3", "h4", "p", "div", "span",
             "nav", "a", "section", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "pre", "code", "b",
             "i", "details", "summary", "svg", "text", "line", "rect"}


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes."""

    def __init__(self):
        super().__init__()
        self.seen: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.seen.append((tag, attrs))


def test_html_is_escaped_and_self_contained(hostile_copy, tmp_path):
    page = build_html(hostile_copy, tmp_path)
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")  # only as escaped text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    # nothing to fetch: no src/href to anything but in-page anchors, no url(), no @import
    tags = Tags()
    tags.feed(page)
    assert {t for t, _ in tags.seen} <= SAFE_TAGS, {t for t, _ in tags.seen} - SAFE_TAGS
    assert [v for _, attrs in tags.seen for k, v in attrs if k in ("src", "href", "action", "srcset")] == [
        f"#{sid}" for sid in ("verdict", "policy", "headline", "slices", "aggregation", "regressions", "flaky",
                              "operations", "labels", "manifests", "caveats", "method")]
    assert "url(" not in page and "@import" not in page
    assert "Content-Security-Policy\" content=\"default-src 'none'" in page
    assert "http://" not in page.replace("http://example.com", "").replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<svg" in page


def test_html_sections_and_evidence(hostile_copy, tmp_path):
    page = build_html(hostile_copy, tmp_path)
    assert 'id="verdict-banner">Verdict: PASS' not in page  # critical coverage fails
    assert 'id="verdict-banner">Verdict: FAIL' in page
    for heading in ("Verdict and gates", "The acceptance policy", "Headline deltas", "Slices",
                    "Aggregation side by side", "Every regression, with its evidence", "Flaky questions",
                    "Manifests", "What this evaluation does not measure", "Method"):
        assert f"<h2>{heading}</h2>" in page
    policy_text = (tmp_path / "gate.toml").read_text()
    assert report.e(policy_text) in page
    # the regression on q1 shows the candidate's unsupported claim and why
    assert "citation_not_supporting" in page
    # the manifest diff names the changed model
    assert "<td>model</td><td>&quot;m1&quot;</td><td>&quot;m2&quot;</td>" in page
    for caveat in report.CAVEATS:
        assert report.e(caveat) in page


def test_forest_chart_geometry():
    rows = pd.DataFrame([
        {"metric_name": "R@k", "n": 10, "delta": 0.5, "ci_low": 0.25, "ci_high": 0.75, "higher_is_better": True},
        {"metric_name": "Disclosures", "n": 10, "delta": 0.5, "ci_low": None, "ci_high": None,
         "higher_is_better": False},
    ])
    svg = report.forest_svg(rows, "t")
    # span = 0.75 x 1.1 = 0.825; plot from x = 130 over 430 px: zero at 345, 0.5 at 345 + 0.5 / 0.825 x 215
    zero = 130 + 430 / 2
    assert f'x1="{zero:.1f}"' in svg
    bar_end = zero + 0.5 / 0.825 * 215
    assert f'width="{bar_end - zero:.1f}"' in svg
    assert svg.count("<rect") == 2
    assert svg.count('fill="#2da44e"') == 1 and svg.count('fill="#cf222e"') == 1  # disclosures up is worse
    assert svg.count("<line") == 1 + 3  # the zero line, one whisker with two caps


def test_manifest_diff(hostile_db):
    c = comparison(hostile_db, "base", "cand")
    fields = [f for f, _, _ in report.manifest_diff(c)]
    assert fields == ["model", "notes", "run_id"]


def test_report_of_the_seed(tmp_path):
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    pol = write_policy(tmp_path / "p.toml", '[[gates]]\nmetric = "coverage"\nslice = "answerable"\nmin = 0.9\n')
    out = tmp_path / "r.html"
    assert main(["report", "A", "B", "--db", str(db), "--policy", str(pol), "-o", str(out)]) == 0
    page = out.read_text()
    assert 'id="verdict-banner">Verdict: PASS' in page
    assert "launch" in page and "unlabelled_claim" in page
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT verdict FROM verdicts").fetchall() == [("pass",)]


def test_report_requires_a_valid_policy(tmp_path, capsys):
    db = tmp_path / "seed.duckdb"
    refresh(SEED_LAB, db)
    bad = write_policy(tmp_path / "p.toml", '[[gates]]\nmetric = "coverage"\nslice = "nowhere"\nmin = 0.9\n')
    assert main(["report", "A", "B", "--db", str(db), "--policy", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    assert f"{bad}:4:" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.browser
def test_report_opens_offline_in_headless_chromium(hostile_copy, tmp_path):
    page_file = tmp_path / "report.html"
    build_html(hostile_copy, tmp_path)
    requests: list[str] = []
    with chromium() as browser:
        page = new_tab(browser, viewport={"width": 1200, "height": 900}, java_script_enabled=True)

        def route(r):
            requests.append(r.request.url)
            if r.request.url == page_file.as_uri():
                r.continue_()
            else:
                r.abort()

        page.route("**/*", route)
        page.goto(page_file.as_uri())
        banner = page.locator("#verdict-banner")
        assert banner.is_visible()
        assert banner.inner_text() == "Verdict: FAIL"
        assert page.locator("section#regressions .card").count() == 1
        assert page.locator("svg").count() >= 2
        assert HOSTILE in page.locator("section#regressions").inner_text()  # shown as text
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        dialogs = page.dialogs
    assert requests == [page_file.as_uri()]  # the page itself, nothing else
    assert dialogs == []
    assert (tmp_path / "report.png").stat().st_size > 10_000

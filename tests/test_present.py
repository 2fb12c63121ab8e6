"""The decision in five screens: `ragslice report --slides`, offline in headless Chromium."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixtures import (
    chromium,
    comparison,
    hit,
    miss,
    new_tab,
    question,
    write_policy,
    write_workspace_files,
)

from scoring.cli import main
from scoring.decide import present, report
from scoring.decide.gate_words import gate_sentence

SCRIPT_TAG = '<script>alert("x")</script>'


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """q1 (critical) regresses: the candidate retrieves and cites the wrong document; q2 and q3 hold; the
    candidate's manifest
    changes the model and, as bookkeeping, the notes."""
    from scoring.store.refresh import refresh

    root = tmp_path_factory.mktemp("present")
    questions = [question(1, text=f"Who approves {SCRIPT_TAG}?", critical=True), question(2), question(3)]
    runs = {"base": {"records": [hit(i, latency_ms=400) for i in (1, 2, 3)], "notes": "production"},
            "cand": {"records": [{**miss(1, latency_ms=500), "answer": SCRIPT_TAG}, hit(2, latency_ms=400),
                                 hit(3, latency_ms=400)], "notes": "try", "model": "m2"}}
    ws = write_workspace_files(root / "ws", questions, runs)
    target = root / "p.duckdb"
    refresh(ws, target)
    return target


def policy(tmp_path: Path) -> Path:
    return write_policy(tmp_path / "gate.toml", '[[gates]]\nname = "critical coverage"\nmetric = "coverage"\n'
                                                'slice = "critical"\nmin = 0.9\n[[gates]]\nname = "latency"\n'
                                                'metric = "latency"\naggregate = "p95"\nmax = 100000\n')


def test_five_screens_tell_the_comparison_s_own_numbers(db, tmp_path):
    c = comparison(db, "base", "cand", policy=policy(tmp_path))
    screens = present.screens(c, report.load_evidence(report.Database(db).connect(), c, ["q1"]))
    assert [s.key for s in screens] == ["verdict", "where", "worst", "changed", "limits"]
    verdict, where, worst, changed, limits = screens
    # one gate of two fails: the failing gate first, with its reason; the passing one after it
    assert verdict.message == "1 of 2 gates fail."
    assert verdict.body.index("critical coverage") < verdict.body.index("latency")
    # worded as the verdict card words it (gate_words), not in the policy's own terms
    failing = next(g for g in c.verdict.gates if not g.passed)
    assert report.e(gate_sentence(failing)) in verdict.body and report.e(failing.reason) not in verdict.body
    # every slice x metric that got worse, from the comparison's table; q1 is the one regression
    worse = c.table[(c.table["delta"] < 0) & c.table["higher_is_better"] & (c.table["metric"] != "judged")]
    assert f"then {len(worse)} slice x metric pairs worse on a quality measure" in where.message
    assert "critical coverage" in where.body.split("</tr>")[1]  # the failing gate's row leads
    assert worst.message.startswith("1 of 3 questions scored worse") and "q1" in worst.body
    assert report.e(SCRIPT_TAG) in worst.body and SCRIPT_TAG not in worst.body  # escaped
    assert "citation_not_supporting" in worst.body
    # the model changed; run_id and notes are bookkeeping
    assert [f for f, _, _ in present.changed_settings(c)] == ["model"]
    assert changed.message == "1 setting(s) differ between the two runs."
    assert all(report.e(x) in limits.body for x in report.CAVEATS)


@pytest.mark.browser
def test_the_slides_open_offline_and_move_with_the_arrow_keys(db, tmp_path):
    copy = tmp_path / "p.duckdb"
    shutil.copyfile(db, copy)
    out = tmp_path / "decision.html"
    assert main(["report", "base", "cand", "--db", str(copy), "--policy", str(policy(tmp_path)), "--slides",
                 "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text and "src=" not in text
    requests: list[str] = []
    with chromium() as browser:
        page = new_tab(browser, viewport={"width": 1280, "height": 720}, java_script_enabled=True)

        def route(r):
            requests.append(r.request.url)
            r.continue_() if r.request.url == out.as_uri() else r.abort()

        page.route("**/*", route)
        page.goto(out.as_uri())
        visible = lambda: page.locator("section.screen:visible").get_attribute("id")  # noqa: E731
        seen = [visible()]
        assert page.locator("section.screen:visible").count() == 1
        assert page.locator("#verdict .big").inner_text() == "FAIL"
        for _ in range(5):  # past the last screen it stays there
            page.keyboard.press("ArrowRight")
            seen.append(visible())
        assert seen == ["verdict", "where", "worst", "changed", "limits", "limits"]
        assert page.locator("#counter").inner_text() == "5 / 5" and page.url.endswith("#limits")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        assert visible() == "worst"
        assert "q1" in page.locator("#worst").inner_text()
        page.goto(out.as_uri() + "#changed")  # a link to a screen opens it
        page.reload()
        assert visible() == "changed"
        dialogs = page.dialogs
    assert set(requests) == {out.as_uri(), out.as_uri() + "#changed"} or set(requests) == {out.as_uri()}
    assert dialogs == []


def test_the_slides_present_one_candidate(db, tmp_path, capsys):
    out = tmp_path / "decision.html"
    assert main(["report", "base", "cand", "base", "--db", str(db), "--policy", str(policy(tmp_path)), "--slides",
                 "-o", str(out)]) == 2
    assert "the slides present one decision: give one candidate" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("command", [["compare", "a", "b"], ["compare", "a", "b", "c"], ["report", "a", "b", "-o"],
                                     ["report", "a", "b", "--slides", "-o"]])
def test_a_database_that_cannot_be_read_is_named_never_a_traceback(command, tmp_path, capsys):
    import duckdb

    db = tmp_path / "foreign.duckdb"
    with duckdb.connect(str(db)) as con:  # the three tables a ragslice database has, with other columns
        for table in ("runs", "questions", "question_scores"):
            con.execute(f"CREATE TABLE {table} (x INTEGER)")
    args = [*command, str(tmp_path / "out.html")] if command[-1] == "-o" else command
    assert main([*args, "--db", str(db), "--policy", str(policy(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "field 'db': " in err and "cannot read the database: Binder Error" in err
    assert not (tmp_path / "out.html").exists()

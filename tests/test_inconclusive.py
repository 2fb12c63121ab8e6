"""Inconclusive verdicts end to end, and sample-size advice: `ragslice compare` exits 3, the verdict is
recorded and shown (text, markdown, HTML report, slides, the verdict card, Trends), and `ragslice plan`
prints each statistical gate's questions, MDE and questions needed."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from dashboard import charts
from dashboard import verdict as card
from scoring.cli import main
from scoring.decide import report
from scoring.decide.comparison import compare_many
from scoring.decide.policy import parse_policy
from scoring.decide.present import slides_html
from scoring.store.refresh import refresh
from fixtures import SEED_LAB

UNSURE = ('name = "g"\nmin_power = 0.8\n[[gates]]\nname = "recall"\nmetric = "recall"\nmax_drop = 0.05\n'
          '[[gates]]\nname = "failures"\nmetric = "failure_rate"\nmax = 1\n')
"""Seed-lab B against A: R@k is paired on 3 questions, 1 of which differs: the sign-flip test cannot reach
0.05 (its floor is 1/8 with 3 shifted differences), so no drop is detectable and the gate is inconclusive."""


@pytest.fixture(scope="module")
def seed_db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("unsure")
    ws = shutil.copytree(SEED_LAB, root / "ws")
    refresh(ws, root / "seed.duckdb")
    return root / "seed.duckdb"


def policy_file(tmp_path: Path, text: str = UNSURE) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_compare_exits_3_and_records_an_inconclusive_verdict(seed_db, tmp_path, capsys):
    db = tmp_path / "seed.duckdb"
    shutil.copyfile(seed_db, db)
    assert main(["compare", "A", "B", "--db", str(db), "--policy", str(policy_file(tmp_path)), "--format",
                 "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    recall, failures = doc["gates"]
    assert doc["verdict"] == "inconclusive" and doc["candidates"][0]["verdict"] == "inconclusive"
    assert (recall["outcome"], recall["passed"], recall["mde"], recall["power_at_margin"]) == (
        "inconclusive", False, None, 0.0)
    assert recall["min_power"] == 0.8 and recall["questions_needed"] > 3 and failures["outcome"] == "pass"
    with duckdb.connect(str(db), read_only=True) as con:
        stored, gates = con.execute("SELECT verdict, gates FROM verdicts").fetchone()
    assert stored == "inconclusive" and json.loads(gates)[0]["outcome"] == "inconclusive"
    # without min_power the same gate passes, flagged in words; a failing gate makes the verdict fail (exit 1)
    plain = UNSURE.replace("min_power = 0.8\n", "")
    assert main(["compare", "A", "B", "--db", str(db), "--policy", str(policy_file(tmp_path, plain))]) == 0
    out = capsys.readouterr().out
    assert "VERDICT: PASS" in out and "power: 3 questions cannot detect a drop of any size" in out
    failing = UNSURE.replace("max = 1\n", "min = 0.5\n")
    assert main(["compare", "A", "B", "--db", str(db), "--policy", str(policy_file(tmp_path, failing))]) == 1
    assert "VERDICT: FAIL: 0 of 2 gates pass, 1 fail, 1 inconclusive" in capsys.readouterr().out


def test_every_rendering_says_inconclusive_and_what_would_make_it_conclusive(seed_db):
    with duckdb.connect(str(seed_db), read_only=True) as con:
        family = compare_many(con, "A", ["B"], policy=parse_policy(UNSURE))
    c = family.comparisons[0]
    assert family.verdict == "inconclusive" and family.inconclusive and not family.failed
    text = report.family_text(family)
    assert "VERDICT: INCONCLUSIVE: 1 of 2 gates pass, 1 inconclusive" in text
    assert re.search(r"Could not tell:\n  recall: 3 questions cannot detect a drop of any size .* about [\d,]+ "
                     r"questions would make it conclusive at the observed spread", text)
    assert "  INCONCLUSIVE  recall: " in text and "detects: MDE none" in text
    markdown = report.family_markdown(family)
    assert markdown.startswith("## ❔ ragslice: INCONCLUSIVE") and "| recall | **INCONCLUSIVE** |" in markdown
    assert "**Could not tell:**" in markdown
    evidence = report.Evidence()
    html = report.html_report(c, evidence)
    assert '<div class="verdict inconclusive" id="verdict-banner">Verdict: INCONCLUSIVE</div>' in html
    assert '<span class="inconclusive">INCONCLUSIVE</span>' in html and "Could not tell." in html
    slides = slides_html(c, evidence)
    assert '<div class="big inconclusive">INCONCLUSIVE</div>' in slides and "could not tell" in slides
    # the comparison table carries mde and bound: R@k on all has 1 differing pair of 3, nothing detectable
    row = c.table[(c.table["metric"] == "recall") & (c.table["slice"] == "all")].iloc[0]
    assert pd.isna(row["mde"]) and row["bound"] == pytest.approx(-1 / 6 + 2.919986 * (1 / 12) ** 0.5 / 3 ** 0.5,
                                                                 rel=1e-5)


def test_the_verdict_card_lists_failing_then_inconclusive_then_passing_gates():
    def gate(name, outcome):
        return {"name": name, "kind": "drop", "metric": "recall", "slice": "all", "passed": outcome == "pass",
                "outcome": outcome, "observed": -0.01, "n": 31, "max_drop": 0.02, "alpha": 0.05,
                "test": "randomization", "rule": "significant_drop", "p_value": 0.5, "mde": 0.14, "power": 0.8,
                "power_at_margin": 0.1, "min_power": 0.8, "questions_needed": 1531, "reason": "r"}
    lines = card.gate_lines([gate("a", "pass"), gate("b", "inconclusive"), gate("c", "fail"),
                             {**gate("d", "fail"), "outcome": None}])  # recorded before outcomes: from passed
    assert [(line.name, line.outcome) for line in lines] == [("c", "fail"), ("d", "fail"), ("b", "inconclusive"),
                                                            ("a", "pass")]
    assert lines[2].inconclusive and "inconclusive: 31 questions can only detect a drop of 0.14" in lines[2].sentence
    assert "about 1,531 questions would make it conclusive" in lines[2].sentence
    assert "31 questions can only detect a drop of 0.14 or more; the margin is 0.02" in lines[3].sentence
    assert card.VERDICT_MARKS["inconclusive"].endswith("INCONCLUSIVE]")


def test_trends_marks_an_inconclusive_verdict_with_its_own_shape():
    frame = pd.DataFrame({"release": ["r1", "r2"], "metric": ["R@k", "R@k"], "value": [0.8, 0.7]})
    marks = frame.assign(verdict=["pass", "inconclusive"])
    spec = charts.release_trend(frame, marks).to_dict()
    scale = spec["layer"][1]["encoding"]["shape"]["scale"]
    assert scale["domain"] == ["pass", "fail", "inconclusive"] and len(scale["range"]) == 3


def test_plan_prints_questions_mde_and_questions_needed(seed_db, tmp_path, capsys):
    pol = policy_file(tmp_path)
    assert main(["plan", "--db", str(seed_db), "--baseline", "A", "--candidate", "B", "--policy", str(pol)]) == 0
    out = capsys.readouterr().out
    assert "recall: R@k on all, margin 0.05 (significant drop, randomization" in out
    assert "questions now: 3 (paired)" in out and "none: the test cannot reach alpha" in out
    assert main(["plan", str(SEED_LAB), "--baseline", "A", "--metric", "recall", "--margin", "0.1", "--test",
                 "ttest", "--power", "0.9", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["gates"]
    assert (doc["spread"], row["spread"], row["test"], row["power"], row["margin"]) == (
        "assumed", "assumed", "ttest", 0.9, 0.1)
    assert row["questions_needed"] >= 2 and row["more"] == max(0, row["questions_needed"] - row["n"])
    # errors name the argument: no gate at all, a gate without a margin, a non-statistical policy
    assert main(["plan", "--db", str(seed_db), "--baseline", "A"]) == 2
    assert main(["plan", "--db", str(seed_db), "--baseline", "A", "--metric", "recall"]) == 2
    only = policy_file(tmp_path, 'name = "g"\n[[gates]]\nmetric = "recall"\nmin = 0.5\n')
    assert main(["plan", "--db", str(seed_db), "--baseline", "A", "--policy", str(only)]) == 2
    assert "no max_drop gate" in capsys.readouterr().err

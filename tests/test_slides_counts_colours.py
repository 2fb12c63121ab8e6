"""What the decision's screens and pages say about the demo (prod-baseline against rerank-v2, the demo policy):
the slides lead with the gates, worded as the verdict card words them, and keep label gaps on a line of their own;
each count says its n and its n/a, and a gate's link opens exactly the questions behind it; colour follows the
evidence and the size of a change.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.util import patch_config_options

from fixtures import REPO

from scoring.decide import change, present
from scoring.decide.gate_words import gate_sentence, questions_behind
from scoring.decide.report import e

DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}
APP = REPO / "dashboard" / "app.py"


@pytest.fixture(scope="module")
def demo(demo_db):
    """The demo comparison (read-only) with the evidence its slides show, and its screens."""
    from scoring.decide.policy import load_policy
    from scoring.decide.report import compare_with_evidence
    from scoring.io.demo import bundled_policy

    c, ev = compare_with_evidence(DEMO["baseline"], DEMO["candidate"], db=demo_db,
                                  policy=load_policy(bundled_policy()), limit=present.WORST)
    return c, present.screens(c, ev)


@pytest.fixture
def app(demo_db, monkeypatch):
    import tomllib

    from scoring.io.demo import bundled_policy

    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    monkeypatch.setenv("RAGSLICE_POLICY", str(bundled_policy()))
    found = tomllib.loads((APP.parent / ".streamlit" / "config.toml").read_text())
    with patch_config_options({f"{s}.{k}": v for s, o in found.items() for k, v in o.items()}):
        yield AppTest.from_file(str(APP), default_timeout=120)


def open_page(at: AppTest, page: str, **params) -> AppTest:
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [x.value for x in at.exception]
    return at


# -- what the slides say -------------------------------------------------------------------------------------


def test_the_slides_lead_with_every_failing_gate_in_the_verdict_card_s_words(demo):
    c, screens = demo
    first = screens[0]
    assert first.key == "verdict" and first.message == "6 of 11 gates fail."
    for g in c.verdict.failed_gates:  # on the first screen, as gate_words words them, not the policy's reason
        assert e(gate_sentence(g)) in first.body and e(g.reason) not in first.body
    assert "one-sided randomization p = " not in "".join(s.body for s in screens)


def test_where_it_regressed_leads_with_the_gates_rows_and_keeps_label_gaps_apart(demo):
    c, screens = demo
    where = next(s for s in screens if s.key == "where")
    rows = re.findall(r"<tr( class=\"gate\")?><td>(.*?)</td>", where.body)
    gate_rows = [text for gate, text in rows if gate]
    failing = [g for g in c.verdict.failed_gates if (g.metric, g.slice) in set(zip(c.table["metric"], c.table["slice"]))]
    assert len(gate_rows) == len({(g.metric, g.slice) for g in failing}) == 5
    assert [text for _, text in rows][:len(gate_rows)] == gate_rows  # the gates' rows first
    assert e("✗ critical coverage: Coverage on critical questions") in gate_rows[0]
    assert "66 (6 n/a)" in where.body  # the row's n and the slice's n/a beside it
    assert not any("Judged@k" in text for _, text in rows)  # label coverage is not a regression of the system
    gap = re.search(r'<p class="gap">(.*?)</p>', where.body).group(1)
    assert gap.startswith("Label gaps, not quality: Judged@k fell on") and "0.786" in gap


def test_the_worst_regressions_say_what_they_count_and_take_a_screen_each(demo):
    c, screens = demo
    worst = [s for s in screens if s.key.startswith("worst")]
    assert [s.key for s in worst] == ["worst", "worst-2", "worst-3"]
    assert worst[0].message.startswith(f"{c.n_regressed_questions} of {len(c.questions)} questions scored worse on "
                                       "at least one measure (Judged@k included")


def test_a_long_part_continues_on_the_next_screen_and_never_drops_an_item():
    items = [f"caveat {i} " + "x" * 300 for i in range(9)]
    screens = present.fill(items, lambda t: present.lines(t, 0.9, gap=0.35))
    assert [x for screen in screens for x in screen] == items and len(screens) > 1
    assert all(sum(present.lines(t, 0.9, gap=0.35) for t in screen) <= present.BODY_LINES for screen in screens)


# -- counts that agree ---------------------------------------------------------------------------------------


def test_a_gate_says_its_n_a_and_its_link_opens_exactly_the_questions_behind_it(demo, app):
    from dashboard.verdict import gate_line

    c, _ = demo
    checked = 0
    for g in c.verdict.gates:
        line = gate_line(g.to_dict())
        if not line.page.endswith("question_deltas.py"):
            continue
        behind = questions_behind(g)
        if g.n_na:
            assert f"{g.n_na} n/a left out" in line.sentence
        at = open_page(app, "question_deltas", **DEMO, **line.params)
        matched = next(int(m.group(1)) for x in at.caption
                       if (m := re.match(r"(\d+) of 257 questions match the filters", x.value)))
        expected = behind["count"] if behind["count"] is not None else 1  # the disclosure: one question disclosed
        assert matched == expected, (g.name, line.params)
        checked += 1
    assert checked == 7


def test_the_matrix_and_the_review_show_one_judged_figure(demo, demo_db):
    import duckdb

    from scoring.decide import sides
    from scoring.decide.matrix import matrix

    c, _ = demo
    with duckdb.connect(str(demo_db), read_only=True) as con:
        table = con.execute("SELECT * FROM runs").df()
        by_name = {s.name: s for s in sides.sides_of(table[table["suite"] == "demo"].reset_index(drop=True))}
        mx = matrix(con, by_name["prod-baseline"], [by_name["rerank-v2"]], ["ndcg"], ["all"])
    shown = mx.operations.set_index("candidate").loc["rerank-v2", "judged"]
    paired = c.table[(c.table["metric"] == "judged") & (c.table["slice"] == "all")].iloc[0]["candidate"]
    assert f"{shown:.3f}" == f"{paired:.3f}" == "0.786"


# -- colour that means something -----------------------------------------------------------------------------


def test_colour_strength_follows_evidence_then_size():
    # not significant: neutral, at most FAINT, whatever its size
    assert change.strength(-0.3, True, False, 0.3) == ("worse", change.FAINT)
    assert change.strength(-0.001, True, False, 0.037)[1] < 0.01
    # significant: from 0.35 (tiny) to 1 (the largest in its column): 0.35 + 0.65 * 0.001 / 0.037 = 0.368
    assert change.strength(-0.001, True, True, 0.037) == ("worse", 0.368)
    assert change.strength(-0.037, True, True, 0.037) == ("worse", 1.0)
    assert change.strength(0.02, False, True, 0.04) == ("worse", 0.675)  # lower is better: a rise is worse
    assert change.strength(0.0, True, True, 0.04) == ("unchanged", 0.0)
    assert change.strength(None, True, True, 0.04) == ("unchanged", 0.0)


def test_a_change_that_is_not_significant_reads_neutral_on_a_tile():
    from dashboard.display import delta_look

    assert delta_look(0.087, True, significant=False)["delta_color"] == "off"
    assert delta_look(0.087, True, significant=True)["delta_color"] == "normal"
    assert delta_look(0.087, False, significant=True)["delta_color"] == "inverse"
    assert delta_look(0.087, True)["delta_color"] == "normal"  # significance unknown: coloured by direction


def test_the_review_tiles_colour_only_significant_changes(app, demo):
    from streamlit.proto.Metric_pb2 import Metric

    c, _ = demo
    at = open_page(app, "release_review", **DEMO)
    paired = c.table[c.table["slice"] == "all"].set_index("metric_name")
    checked = 0
    for tile in at.metric:
        if tile.label not in paired.index or tile.proto.delta in ("", "0.000"):
            continue
        significant = bool(paired.loc[tile.label, "p_holm"] < 0.05)
        grey = tile.proto.color == Metric.MetricColor.GRAY
        assert grey != significant, (tile.label, paired.loc[tile.label, "p_holm"])
        checked += 1
    assert checked >= 4  # R@k, nDCG@k, Support, Coverage rise, none significantly: all grey


def test_missing_and_failed_have_colours_of_their_own():
    from dashboard.charts import CHANGE_COLORS

    colours = dict(zip(CHANGE_COLORS.domain, CHANGE_COLORS.range))
    assert len(set(colours.values())) == len(colours)
    assert colours["missing"] != colours["failed"]


def test_a_matrix_cell_is_coloured_by_its_evidence_and_size(app):
    at = open_page(app, "release_matrix", suite="demo", baseline="prod-baseline")
    html = next(m.value for m in at.markdown if 'id="release-matrix"' in m.value)
    cells = re.findall(r'rgba\(([0-9, ]+), ([0-9.]+)\)" class="(\w+)" data-strength="([0-9.]+)" '
                       r'data-significant="(yes|no)"', html)
    assert len(cells) == 8 * 4  # 8 candidates x 4 metrics on all questions
    for rgb, alpha, how, shade, called in cells:
        assert float(alpha) == pytest.approx(0.5 * float(shade), abs=1e-3)
        assert (float(shade) > change.FAINT) == (called == "yes")  # evidence first
        assert rgb == {"better": "46, 160, 67", "worse": "207, 34, 46", "unchanged": "0, 0, 0"}[how]
    assert {called for *_, called in cells} == {"yes", "no"}

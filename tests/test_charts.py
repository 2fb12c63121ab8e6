"""The dashboard's Altair builders: pure functions of DataFrames, checked on their Vega-Lite specs."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from dashboard import charts

NAN = math.nan


def deltas() -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": ["launch", "rollback", "owner", "region", "extra"],
        "type": ["lookup", "multi-evidence", "lookup", "unanswerable", "lookup"],
        "baseline": [1.0, 1.0, 0.0, NAN, 0.2],
        "candidate": [0.5, 1.0, 1.0, NAN, 0.4],
        "delta": [-0.5, 0.0, 1.0, NAN, 0.2],
        "status": ["regressed", "unchanged", "improved", "n/a", "improved"],
    })


def values(spec: dict) -> list[dict]:
    return next(iter(spec["datasets"].values()))


def test_delta_bars_sorted_best_to_worst_without_na():
    spec = charts.delta_bars(deltas(), metric_name="Support", higher_is_better=True).to_dict()
    assert spec["encoding"]["x"]["sort"] == ["owner", "extra", "rollback", "launch"]
    assert [row["question_id"] for row in values(spec)] == ["owner", "extra", "rollback", "launch"]
    assert spec["mark"]["type"] == "bar"
    # coloured by change, never by type: a red bar is a regression whatever the question's type
    assert spec["encoding"]["color"]["field"] == "status"
    assert spec["encoding"]["color"]["scale"]["domain"][:3] == ["regressed", "improved", "unchanged"]
    assert spec["encoding"]["color"]["scale"]["range"][:3] == ["#c62828", "#2e7d32", "#9e9e9e"]
    assert spec["title"] == "Support: candidate - baseline, 4 questions with a value (higher is better)"


def test_delta_bars_lower_is_better_reverses_the_order():
    frame = deltas().assign(delta=[1.0, 0.0, -1.0, NAN, 2.0])
    spec = charts.delta_bars(frame, metric_name="Disclosures", higher_is_better=False).to_dict()
    # Fewer disclosures is the improvement: owner (-1) first, extra (+2) last.
    assert spec["encoding"]["x"]["sort"] == ["owner", "rollback", "launch", "extra"]
    assert "lower is better" in spec["title"]


def test_delta_bars_ties_keep_a_stable_order_by_question():
    frame = deltas().assign(delta=[0.0, 0.0, 0.0, NAN, 0.0])
    spec = charts.delta_bars(frame, metric_name="Support", higher_is_better=True).to_dict()
    assert spec["encoding"]["x"]["sort"] == ["extra", "launch", "owner", "rollback"]


def test_delta_bars_selection_is_a_point_on_question_id():
    spec = charts.delta_bars(deltas(), metric_name="Support", higher_is_better=True).to_dict()
    (param,) = spec["params"]
    assert param["name"] == charts.PICK
    assert param["select"]["type"] == "point" and param["select"]["fields"] == ["question_id"]
    assert spec["encoding"]["opacity"]["condition"]["param"] == charts.PICK


def test_delta_bars_of_an_empty_frame_is_an_empty_chart():
    frame = deltas().iloc[0:0]
    spec = charts.delta_bars(frame, metric_name="Support", higher_is_better=True).to_dict()
    assert spec["encoding"]["x"]["sort"] == []
    assert "0 questions with a value" in spec["title"]


def test_delta_bars_does_not_mutate_its_input():
    frame = deltas()
    before = frame.copy()
    charts.delta_bars(frame, metric_name="Support", higher_is_better=True)
    pd.testing.assert_frame_equal(frame, before)


def test_slice_bars_label_every_bar_with_its_n_and_skip_na():
    frame = pd.DataFrame({
        "slice": ["answerable", "unanswerable"],
        "b_macro": [2 / 3, 0.0], "c_macro": [2.5 / 3, NAN],
        "b_n": [3, 1], "c_n": [3, 0],
    })
    spec = charts.slice_bars(frame, metric_name="Support", family="answerability").to_dict()
    rows = values(spec)
    assert [(r["slice"], r["side"], r["n"], r["label"]) for r in rows] == [
        ("answerable", "baseline", 3, "n=3"),
        ("answerable", "candidate", 3, "n=3"),
        ("unanswerable", "baseline", 1, "n=1"),
    ]
    assert [r["value"] for r in rows] == pytest.approx([2 / 3, 2.5 / 3, 0.0])
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar", "text"]
    assert spec["title"] == "Support by answerability (macro mean; n = questions scored)"


def test_aggregation_dots_colour_by_direction():
    frame = pd.DataFrame({
        "aggregation": ["macro", "pooled", "macro"],
        "scope": ["all questions", "all questions", "type: lookup"],
        "delta": [-0.125, 0.4, NAN],
        "direction": [-1, 1, 0],
    })
    spec = charts.aggregation_dots(frame, metric_name="Support").to_dict()
    dots = spec["layer"][1]
    rows = spec["datasets"][dots["data"]["name"]]
    assert [(r["choice"], r["moves"]) for r in rows] == [("macro / all questions", "worsens"),
                                                        ("pooled / all questions", "improves")]
    assert dots["encoding"]["color"]["scale"]["domain"] == ["improves", "worsens", "unchanged"]


def test_latency_bars_skip_runs_without_latency():
    frame = pd.DataFrame({"run_id": ["A", "B"], "latency_p50": [100.0, NAN], "latency_p95": [250.0, NAN]})
    spec = charts.latency_bars(frame).to_dict()
    assert [(r["run_id"], r["quantile"], r["ms"]) for r in values(spec)] == [("A", "p50", 100.0), ("A", "p95", 250.0)]
    assert spec["encoding"]["x"]["sort"] == ["A", "B"]


def intervals() -> pd.DataFrame:
    return pd.DataFrame({
        "slice": ["all", "type:lookup", "unanswerable", "split:dev"],
        "n": [3, 2, 0, 1],
        "delta": [0.5, -0.25, NAN, 1.0],
        "ci_low": [0.0, -0.5, NAN, NAN],
        "ci_high": [1.0, 0.0, NAN, NAN],
        "p": [0.03125, None, None, None],
        "significant": [True, False, False, False],
    })


def test_delta_intervals_keep_the_table_order_and_skip_rows_without_a_delta():
    spec = charts.delta_intervals(intervals(), metric_name="Support").to_dict()
    zero, bars, dots = spec["layer"]
    rows = spec["datasets"][dots["data"]["name"]] if "data" in dots else values(spec)
    assert [r["slice"] for r in rows] == ["all", "type:lookup", "split:dev"]
    assert dots["encoding"]["y"]["sort"] == ["all", "type:lookup", "split:dev"]
    assert [r["judged"] for r in rows] == ["significant", "not significant", "not significant"]
    # The bar runs from ci_low to ci_high; a single pair has no interval (its bar is empty, its point stays).
    assert (bars["encoding"]["x"]["field"], bars["encoding"]["x2"]["field"]) == ("ci_low", "ci_high")
    assert rows[2]["ci_low"] is None and rows[2]["delta"] == 1.0
    assert zero["mark"]["type"] == "rule" and dots["mark"]["type"] == "circle"
    assert spec["height"] == {"step": 24}
    assert spec["title"] == "Support: mean paired delta and its interval per slice"


def test_delta_intervals_does_not_mutate_its_input():
    frame = intervals()
    before = frame.copy()
    charts.delta_intervals(frame, metric_name="Support")
    pd.testing.assert_frame_equal(frame, before)

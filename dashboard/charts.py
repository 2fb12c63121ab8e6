"""Altair chart builders: pure functions of DataFrames (no Streamlit, no database), testable alone.

Text from the data reaches charts only as Vega data values (axis labels, tooltips), which Vega
draws as text, never as HTML.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from scoring.decide import change

PICK = "pick"
"""Name of the point selection on the per-question delta chart (`event.selection[PICK]`)."""

SIDE_COLORS = alt.Scale(domain=["baseline", "candidate"], range=["#9aa5b1", "#1f77b4"])


CHANGE_COLORS = alt.Scale(domain=["regressed", "improved", "unchanged", "missing", "failed"],
                          range=["#c62828", "#2e7d32", "#9e9e9e", "#6d4c41", "#ef6c00"])
"""A question's status as a bar colour: red for worse, green for better, grey for no change, brown for a missing
record and orange for a failed one (each counts as a failure; the legend tells them apart)."""


def delta_bars(frame: pd.DataFrame, *, metric_name: str, higher_is_better: bool, height: int = 260) -> alt.Chart:
    """Per-question deltas as sorted diverging bars coloured by change (`CHANGE_COLORS`: regressed,
    improved, unchanged, missing, failed); the question type is in the tooltip.

    `frame`: question_id, type, baseline, candidate, delta, status. Rows without a delta (n/a) are
    left out. Bars run from the largest improvement (left) to the worst regression (right) in the
    registry's direction. Clicking a bar selects its question (point selection `PICK` on
    question_id; shift-click adds)."""
    sign = 1 if higher_is_better else -1
    data = frame.loc[frame["delta"].notna(), ["question_id", "type", "baseline", "candidate", "delta", "status"]].copy()
    data["gain"] = data["delta"] * sign
    data = data.sort_values(["gain", "question_id"], ascending=[False, True], kind="mergesort")
    order = data["question_id"].astype(str).tolist()
    data = data.drop(columns="gain")
    pick = alt.selection_point(name=PICK, fields=["question_id"], on="click", clear="dblclick")
    direction = "higher is better" if higher_is_better else "lower is better"
    return (
        alt.Chart(data, title=f"{metric_name}: candidate - baseline, {len(data)} questions with a value ({direction})")
        .mark_bar()
        .encode(
            x=alt.X("question_id:N", sort=order, axis=alt.Axis(labels=False, ticks=False, title="questions, best to worst")),
            y=alt.Y("delta:Q", title=f"delta {metric_name}"),
            color=alt.Color("status:N", title="change", scale=CHANGE_COLORS),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)),
            tooltip=[
                alt.Tooltip("question_id:N", title="question"),
                alt.Tooltip("type:N"),
                alt.Tooltip("baseline:Q", format=".3f"),
                alt.Tooltip("candidate:Q", format=".3f"),
                alt.Tooltip("delta:Q", format="+.3f"),
                alt.Tooltip("status:N"),
            ],
        )
        .add_params(pick)
        .properties(height=height)
    )


def slice_bars(frame: pd.DataFrame, *, metric_name: str, family: str, height: int = 240) -> alt.Chart:
    """Baseline and candidate macro mean of one metric per slice, bars side by side, each labelled
    with its n (questions scored).

    `frame`: slice, b_macro, c_macro, b_n, c_n (one row per slice, as `data.aggregate` returns for
    one metric). Slices where both sides are n/a are left out."""
    rows = []
    for _, r in frame.iterrows():
        for side, prefix in (("baseline", "b_"), ("candidate", "c_")):
            value = r[f"{prefix}macro"]
            if value is None or pd.isna(value):
                continue
            rows.append({"slice": str(r["slice"]), "side": side, "value": float(value), "n": int(r[f"{prefix}n"])})
    long = pd.DataFrame(rows, columns=["slice", "side", "value", "n"])
    long["label"] = "n=" + long["n"].astype(str)
    base = alt.Chart(long).encode(
        x=alt.X("slice:N", title=family, sort=sorted(long["slice"].unique().tolist()), axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("side:N", sort=["baseline", "candidate"]),
        y=alt.Y("value:Q", title=metric_name),
    )
    bars = base.mark_bar().encode(
        color=alt.Color("side:N", scale=SIDE_COLORS, title=None),
        tooltip=[alt.Tooltip("slice:N", title=family), "side:N", alt.Tooltip("value:Q", format=".3f"), "n:Q"],
    )
    labels = base.mark_text(dy=-6, fontSize=10).encode(text="label:N")
    return (bars + labels).properties(title=f"{metric_name} by {family} (macro mean; n = questions scored)", height=height)


def slice_delta_bars(frame: pd.DataFrame, *, metric_name: str, family: str, higher_is_better: bool,
                     height: int = 220) -> alt.LayerChart:
    """Candidate - baseline macro mean of one metric per slice: one bar from 0 each, green when it moves in
    the metric's direction, red against it, grey when it is no change (`scoring.decide.change.moved`); each
    bar labelled with its delta and the questions scored on each side (so 0.01 differences are visible).

    `frame`: slice, b_macro, c_macro, b_n, c_n, delta_macro (one row per slice, one metric). Slices whose
    delta is n/a are left out."""
    data = frame.loc[frame["delta_macro"].notna(), ["slice", "b_macro", "c_macro", "b_n", "c_n", "delta_macro"]].copy()
    data["delta"] = pd.to_numeric(data["delta_macro"])
    data["moves"] = [change.moved(d, higher_is_better) for d in data["delta"]]
    data["label"] = [f"{d:+.3f} (n={int(b)}/{int(c)})" for d, b, c in zip(data["delta"], data["b_n"], data["c_n"])]
    data["slice"] = data["slice"].astype(str)
    order = sorted(data["slice"].unique().tolist())
    x = alt.X("slice:N", title=family, sort=order, axis=alt.Axis(labelAngle=0))
    bars = alt.Chart(data).mark_bar().encode(
        x=x, y=alt.Y("delta:Q", title=f"delta {metric_name}"),
        color=alt.Color("moves:N", title=None, scale=alt.Scale(domain=["better", "worse", "unchanged"],
                                                                range=["#2e7d32", "#c62828", "#9e9e9e"])),
        tooltip=[alt.Tooltip("slice:N", title=family), alt.Tooltip("b_macro:Q", title="baseline", format=".3f"),
                 alt.Tooltip("c_macro:Q", title="candidate", format=".3f"),
                 alt.Tooltip("delta:Q", format="+.3f"), "label:N"])
    labels = alt.Chart(data).mark_text(dy=-8, fontSize=11).encode(x=x, y="delta:Q", text="label:N")
    zero = alt.Chart(pd.DataFrame({"delta": [0.0]})).mark_rule(color="#888").encode(y="delta:Q")
    return (zero + bars + labels).properties(
        title=f"{metric_name} by {family}: candidate - baseline (macro mean; n = questions scored, baseline/candidate)",
        height=height)


def aggregation_dots(frame: pd.DataFrame, *, metric_name: str, height: int | None = None) -> alt.Chart:
    """Delta of one metric under each aggregation (macro, pooled, answerable only, per type) as
    dots on a shared axis, coloured by direction, so a flip is visible at a glance.

    `frame`: aggregation, scope, delta, direction (rows of `data.aggregation_choices` for one metric)."""
    data = frame.loc[frame["delta"].notna(), ["aggregation", "scope", "delta", "direction"]].copy()
    data["choice"] = data["aggregation"] + " / " + data["scope"]
    data["moves"] = data["direction"].map({1: "improves", -1: "worsens", 0: "unchanged"})
    zero = alt.Chart(pd.DataFrame({"delta": [0.0]})).mark_rule(color="#888").encode(x="delta:Q")
    dots = (
        alt.Chart(data, title=f"{metric_name}: candidate - baseline under each aggregation")
        .mark_circle(size=90)
        .encode(
            x=alt.X("delta:Q", title=f"delta {metric_name}"),
            y=alt.Y("choice:N", title=None, sort=data["choice"].tolist(), axis=alt.Axis(labelLimit=320)),
            color=alt.Color("moves:N", scale=alt.Scale(domain=["improves", "worsens", "unchanged"],
                                                         range=["#2ca02c", "#d62728", "#999999"]), title=None),
            tooltip=["choice:N", alt.Tooltip("delta:Q", format="+.4f"), "moves:N"],
        )
    )
    return (zero + dots).properties(height=height or alt.Step(24))


def latency_bars(frame: pd.DataFrame, height: int = 220) -> alt.Chart:
    """Latency p50 and p95 (ms) per run. `frame`: run_id, latency_p50, latency_p95."""
    long = frame.melt(id_vars=["run_id"], value_vars=["latency_p50", "latency_p95"], var_name="quantile", value_name="ms")
    long = long[long["ms"].notna()]
    long["quantile"] = long["quantile"].str.removeprefix("latency_")
    return (
        alt.Chart(long, title="Latency per run (ms)")
        .mark_bar()
        .encode(
            x=alt.X("run_id:N", title="run", sort=frame["run_id"].astype(str).tolist(), axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("quantile:N", sort=["p50", "p95"]),
            y=alt.Y("ms:Q", title="ms"),
            color=alt.Color("quantile:N", title=None),
            tooltip=["run_id:N", "quantile:N", alt.Tooltip("ms:Q", format=".0f")],
        )
        .properties(height=height)
    )


def delta_intervals(frame: pd.DataFrame, *, metric_name: str, height: int | None = None) -> alt.LayerChart:
    """Mean paired delta of one metric per slice with its confidence interval (a forest plot), on a
    shared axis with a rule at 0; points coloured by whether the chosen test calls the row
    significant.

    `frame`: slice, n, delta, ci_low, ci_high, p (the p-value judged), significant (bool), in the
    order to show. Rows without a delta are left out; a row without an interval shows its point only."""
    data = frame.loc[frame["delta"].notna(), ["slice", "n", "delta", "ci_low", "ci_high", "p", "significant"]].copy()
    for column in ("delta", "ci_low", "ci_high", "p"):
        data[column] = pd.to_numeric(data[column], errors="coerce")
    data["judged"] = data["significant"].map({True: "significant", False: "not significant"})
    order = data["slice"].astype(str).tolist()
    y = alt.Y("slice:N", sort=order, title=None, axis=alt.Axis(labelLimit=240))
    tooltip = [alt.Tooltip("slice:N"), alt.Tooltip("n:Q", title="paired n"), alt.Tooltip("delta:Q", format="+.4f"),
               alt.Tooltip("ci_low:Q", format="+.4f", title="interval low"),
               alt.Tooltip("ci_high:Q", format="+.4f", title="interval high"), alt.Tooltip("p:Q", format=".4f")]
    zero = alt.Chart(pd.DataFrame({"delta": [0.0]})).mark_rule(color="#888").encode(x="delta:Q")
    bars = alt.Chart(data).mark_rule(strokeWidth=2, color="#7f8c8d").encode(
        y=y, x=alt.X("ci_low:Q", title=f"delta {metric_name} (candidate - baseline)"), x2="ci_high:Q", tooltip=tooltip)
    dots = alt.Chart(data).mark_circle(size=80, opacity=1).encode(
        y=y, x="delta:Q",
        color=alt.Color("judged:N", title=None, scale=alt.Scale(domain=["significant", "not significant"],
                                                                 range=["#ff7f0e", "#9aa5b1"])),
        tooltip=tooltip,
    )
    return (zero + bars + dots).properties(
        title=f"{metric_name}: mean paired delta and its interval per slice",
        height=height or alt.Step(24),
    )


VERDICTS = ("pass", "fail", "inconclusive")
"""Recorded verdicts a release can carry: each its own mark on the Trends chart."""


def release_trend(frame: pd.DataFrame, marks: pd.DataFrame, *, height: int = 320) -> alt.LayerChart:
    """Headline metrics per release as lines, releases in the order given, with each release's
    recorded verdict marked on its points (pass, fail, inconclusive). The value axis spans the values
    shown (with a margin), not 0 to 1: releases differ by hundredths, which a full-range axis flattens.

    `frame`: release, metric (display name), value (NaN: n/a, left out); `marks`: release, verdict
    (pass | fail | inconclusive), metric, value: the points to mark."""
    order = list(dict.fromkeys(frame["release"].astype(str)))
    x = alt.X("release:N", sort=order, title="release (oldest first)", axis=alt.Axis(labelAngle=-30, labelLimit=160))
    data = frame[frame["value"].notna()]
    y = alt.Y("value:Q", title="macro mean", scale=alt.Scale(domain=value_span(data["value"]), nice=False))
    lines = alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=40)).encode(
        x=x, y=y, color=alt.Color("metric:N", title=None),
        tooltip=["release:N", "metric:N", alt.Tooltip("value:Q", format=".3f")])
    verdicts = alt.Chart(marks[marks["value"].notna()]).mark_point(size=110, filled=False, strokeWidth=2,
                                                                    opacity=0.9).encode(
        x=x, y=y,
        shape=alt.Shape("verdict:N", title="recorded verdict", scale=alt.Scale(domain=list(VERDICTS),
                                                                              range=["circle", "cross", "diamond"])),
        stroke=alt.Stroke("verdict:N", legend=None, scale=alt.Scale(domain=list(VERDICTS),
                                                                    range=["#2ca02c", "#d62728", "#e67e00"])),
        tooltip=["release:N", "verdict:N", "metric:N", alt.Tooltip("value:Q", format=".3f")])
    return (lines + verdicts).properties(height=height)


def value_span(values: pd.Series) -> list[float]:
    """The value axis of a trend: the values' range with a margin of a tenth of it (at least 0.01 each
    side), kept inside 0..1 when the values are (rates)."""
    found = pd.to_numeric(values, errors="coerce").dropna()
    if found.empty:
        return [0.0, 1.0]
    low, high = float(found.min()), float(found.max())
    margin = max((high - low) * 0.1, 0.01)
    low, high = low - margin, high + margin
    if float(found.min()) >= 0 and float(found.max()) <= 1:
        low, high = max(low, 0.0), min(high, 1.0)
    return [round(low, 4), round(high, 4)]

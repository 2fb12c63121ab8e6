"""Where does the change land? Answerable vs unanswerable, then by question type and by split."""
import streamlit as st

from dashboard import charts, data, selection
from dashboard.display import escape, metric_help, metric_name, table
from scoring.metrics import BY_KEY, slices

st.title("Slices")
cmp = selection.comparison(drives="the charts and the per-type and per-split tables")
selection.sides_caption(cmp)
selection.show_compatibility(cmp)

COLUMNS = {
    "metric": st.column_config.TextColumn("metric"),
    "b_macro": st.column_config.NumberColumn("baseline", format="%.3f"),
    "b_n": st.column_config.NumberColumn("n baseline", help="questions scored (the denominator of the mean)"),
    "b_na": st.column_config.NumberColumn("n/a baseline", help="questions excluded as n/a"),
    "c_macro": st.column_config.NumberColumn("candidate", format="%.3f"),
    "c_n": st.column_config.NumberColumn("n candidate", help="questions scored (the denominator of the mean)"),
    "c_na": st.column_config.NumberColumn("n/a candidate", help="questions excluded as n/a"),
    "delta_macro": st.column_config.NumberColumn("delta", format="%+.3f"),
}
NAMES = {m: metric_name(m) for m in data.METRIC_KEYS}


def metric_rows(rows):
    """Compact rows for a half-width table: n and n/a as 'baseline / candidate'."""
    shown = rows[["metric", "b_macro", "c_macro", "delta_macro"]].copy()
    shown["metric"] = shown["metric"].map(NAMES)
    shown["n"] = rows["b_n"].astype(int).astype(str) + " / " + rows["c_n"].astype(int).astype(str)
    shown["n/a"] = rows["b_na"].astype(int).astype(str) + " / " + rows["c_na"].astype(int).astype(str)
    return shown


COMPACT = COLUMNS | {
    "n": st.column_config.TextColumn("n", help="questions scored, baseline / candidate (the denominator of the mean)"),
    "n/a": st.column_config.TextColumn("n/a", help="questions excluded as n/a, baseline / candidate"),
}


def family_chart(frame, family: str, key: str) -> None:
    rows = frame[frame["metric"] == cmp.metric]
    st.altair_chart(charts.slice_delta_bars(rows, metric_name=metric_name(cmp.metric),
                                            family=slices.family(family).label,
                                            higher_is_better=BY_KEY[cmp.metric].higher_is_better), key=key)


st.caption("Every value is a macro mean over the questions it scores; n is that count and n/a the questions "
           "excluded.")
st.caption(metric_help(cmp.metric).split("\n\n")[0])

st.header("Answerable vs unanswerable")
frames = data.aggregates(cmp.suite, cmp.baseline, cmp.candidate, ("answerable", "type", "split"))
answer = frames["answerable"]
sides = st.columns(2)
for column, name in zip(sides, ("answerable", "unanswerable")):
    rows = answer[answer["slice"] == name]
    with column:
        st.subheader(name.capitalize())
        if rows.empty:
            st.info(f"No {name} question in this suite.")
            continue
        st.metric("questions", int(rows["questions"].iloc[0]), border=True)
        table(metric_rows(rows), column_config=COMPACT, key=f"w_slice_{name}", height="content")
family_chart(answer, "answerable", "w_chart_answerable")

st.header("Critical questions")
try:
    with st.spinner("Computing the paired statistics..."):
        # the release review's statistics: every row holds n, the means and the delta (intervals only for `all`)
        critical = data.release_statistics(cmp.baseline, cmp.candidate, data.METRIC_KEYS).table
    critical = critical[critical["slice"] == "critical"]
except data.StatisticsUnavailable as error:
    critical = None
    st.info(escape(f"Not available: {error}"))
if critical is not None and critical.empty:
    st.info("No question of this suite is marked critical.")
elif critical is not None:
    st.caption("The questions the suite marks critical, paired: each metric over the questions both sides score "
               "(n); the delta is the mean paired change, as the Statistics page computes it.")
    shown = critical[["metric", "n", "baseline", "candidate", "delta"]].assign(
        metric=critical["metric"].map(NAMES))
    table(shown, key="w_slice_critical", height="content", column_config={
        "n": st.column_config.NumberColumn("n", help="critical questions scored on both sides"),
        "baseline": st.column_config.NumberColumn("baseline", format="%.3f"),
        "candidate": st.column_config.NumberColumn("candidate", format="%.3f"),
        "delta": st.column_config.NumberColumn("delta", format="%+.3f")})

for family, title in (("type", "By question type"), ("split", "By split")):
    st.header(title)
    frame = frames[family]
    family_chart(frame, family, f"w_chart_{family}")
    chosen = frame[frame["metric"] == cmp.metric]
    detail = chosen[["slice", "questions", "b_macro", "b_n", "b_na", "c_macro", "c_n", "c_na", "delta_macro"]]
    st.caption(f"{metric_name(cmp.metric)} per {family}; pick another metric in the sidebar.")
    table(detail, key=f"w_slice_{family}",
                 column_config=COLUMNS | {"slice": st.column_config.TextColumn(family)})
    with st.expander(f"Every metric by {family}"):
        every = frame[["slice", "metric", "questions", "b_macro", "b_n", "b_na", "c_macro", "c_n", "c_na", "delta_macro"]].copy()
        every["metric"] = every["metric"].map(NAMES)
        table(every, key=f"w_every_{family}",
                     column_config=COLUMNS | {"slice": st.column_config.TextColumn(family)})

"""Does the answer depend on how we average? Macro, pooled, answerable-only and per-type side by side."""
import streamlit as st

from dashboard import charts, data, selection
from dashboard.display import escape, metric_help, metric_name, signed, table
from scoring.metrics import BY_KEY

st.title("Aggregation")
cmp = selection.comparison()
selection.sides_caption(cmp)
selection.show_compatibility(cmp)

choices = data.aggregation_choices(cmp.suite, cmp.baseline, cmp.candidate)
WORDS = {1: "improves", -1: "worsens", 0: "unchanged"}

st.caption("Macro: mean over the questions a metric scores (each question weighs the same). Pooled: the "
           "registry's numerator summed over those questions divided by its denominator summed (longer answers "
           "and more relevant documents weigh more). Answerable only and per type: macro over that slice.")

summary = []
for key in data.METRIC_KEYS:
    rows = choices[choices["metric"] == key]
    overall = rows[rows["scope"].isin(["all questions", "answerable only"])]
    against = rows[rows["against_macro"]]
    flags = []
    if bool(rows["flip"].iloc[0]):
        flags.append("aggregation flips the direction")
    if int(rows["hidden"].iloc[0]):
        flags.append(f"mean improves while {int(rows['hidden'].iloc[0])} question(s) regressed")
    if len(against):
        flags.append(f"{len(against)} type(s) move the other way")
    entry = {"metric": metric_name(key)}
    for _, r in overall.iterrows():
        label = f"{r['aggregation']} ({r['scope']})" if r["aggregation"] == "macro" else "pooled"
        entry[label] = r["delta"] if label != "pooled" else signed(r["delta"], 4)
    if not BY_KEY[key].pooled:  # the registry pools it as the macro mean: nothing else to show
        entry["pooled"] = "same as macro"
    entry["flags"] = "; ".join(flags)
    summary.append(entry)
    if rows["flip"].iloc[0]:
        moves = ", ".join(f"{r['aggregation']} over {r['scope']} {WORDS[int(r['direction'])]} ({signed(r['delta'], 4)})"
                          for _, r in overall.iterrows())
        st.warning(escape(f"{metric_name(key)}: the aggregation decides the direction: {moves}."))

st.subheader("Delta under each aggregation")
table(
    summary,
    key="w_agg_summary",
    height="content",
    column_config={
        "macro (all questions)": st.column_config.NumberColumn(format="%+.4f"),
        "pooled": st.column_config.TextColumn("pooled", help="Summed numerators over summed denominators; 'same as "
                                                        "macro' where the registry pools the metric as its macro "
                                                        "mean (one value per question)."),
        "macro (answerable only)": st.column_config.NumberColumn(format="%+.4f"),
        "flags": st.column_config.TextColumn("flags", width="large"),
    },
)

st.subheader(f"{metric_name(cmp.metric)} in detail")
st.caption(metric_help(cmp.metric))
rows = choices[choices["metric"] == cmp.metric]
st.altair_chart(charts.aggregation_dots(rows, metric_name=metric_name(cmp.metric)), key="w_agg_chart")
detail = rows.drop(columns=["metric", "flip", "hidden"]).assign(
    moves=lambda f: f["direction"].map(WORDS)
).drop(columns="direction")
NUMBERS = {
    "baseline": st.column_config.NumberColumn(format="%.4f"),
    "candidate": st.column_config.NumberColumn(format="%.4f"),
    "b_numerator": st.column_config.NumberColumn("baseline numerator", format="%.3f"),
    "b_denominator": st.column_config.NumberColumn("baseline denominator", format="%.3f"),
    "b_na": st.column_config.NumberColumn("baseline n/a excluded"),
    "c_numerator": st.column_config.NumberColumn("candidate numerator", format="%.3f"),
    "c_denominator": st.column_config.NumberColumn("candidate denominator", format="%.3f"),
    "c_na": st.column_config.NumberColumn("candidate n/a excluded"),
    "delta": st.column_config.NumberColumn(format="%+.4f"),
    "against_macro": st.column_config.CheckboxColumn("moves against the overall macro"),
}
table(detail, key="w_agg_detail", column_config=NUMBERS, height="content")

with st.expander("Every metric, every aggregation"):
    every = choices.drop(columns=["hidden"]).assign(metric=lambda f: f["metric"].map(metric_name),
                                                    moves=lambda f: f["direction"].map(WORDS)).drop(columns="direction")
    table(every, key="w_agg_every",
                 column_config=NUMBERS | {"flip": st.column_config.CheckboxColumn("aggregation flips")})

"""Which questions moved, and how? One row per question, filters, a delta chart, CSV download."""
import streamlit as st

from dashboard import charts, data, selection
from dashboard.display import escape, metric_help, table
from scoring.metrics import BY_KEY

st.title("Question deltas")
cmp = selection.comparison()
selection.sides_caption(cmp)
selection.show_compatibility(cmp)
metric = BY_KEY[cmp.metric]
types_, splits_, tags_ = data.question_facets(cmp.suite)

with st.container(border=True, key="filters"):
    a, b, c, d = st.columns(4)
    types = selection.multiselect("Question type", types_, param="type", where=a)
    slice_ = selection.select("Slice", ["all", "answerable", "unanswerable"], param="slice", where=b)
    splits = selection.multiselect("Split", splits_, param="split", where=c)
    critical = selection.select("Critical", ["all", "critical only", "not critical"], param="critical", where=d)
    e, f, g, h = st.columns(4)
    tags = selection.multiselect("Tags (any of)", tags_, param="tags", where=e)
    statuses = selection.multiselect("Status", list(data.STATUSES), param="status", where=f)
    search = selection.text("Search question text or ID", param="search", where=g)
    order = selection.select("Sort", list(data.ORDERS), param="sort", where=h)
    label_gap = selection.check("Only regressions that may be a label gap", param="gap", where=st,
                                help="Regressed, while the candidate's first k hold a document nobody judged: unjudged "
                                     "documents count as not relevant, so a label may be all that is missing.")

filters = dict(types=types, answerable=None if slice_ == "all" else slice_ == "answerable", splits=splits,
               critical=None if critical == "all" else critical == "critical only", tags=tags, statuses=statuses,
               search=search, order=order, label_gap=label_gap)
deltas = data.question_deltas(cmp.suite, cmp.baseline, cmp.candidate, cmp.metric, **filters)
shown = deltas.rows


# The chart's own selection cannot be cleared from Python; "Clear" gives the chart a new key
# (a new, empty selection). The pick itself lives in the URL (`pick`).
chart_key = f"w_delta_chart_{st.session_state.get('delta_chart_resets', 0)}"


def _picked() -> None:
    event = st.session_state.get(chart_key) or {}
    points = (event.get("selection") or {}).get(charts.PICK) or []
    selection.set_param("pick", [str(p["question_id"]) for p in points if "question_id" in p])


def _clear_pick() -> None:
    selection.set_param("pick", [])
    st.session_state["delta_chart_resets"] = st.session_state.get("delta_chart_resets", 0) + 1


chart = charts.delta_bars(shown, metric_name=metric.name, higher_is_better=metric.higher_is_better)
st.altair_chart(chart, key=chart_key, on_select=_picked, selection_mode=charts.PICK, width="stretch")
picked = selection.param_list("pick")
selection.set_param("pick", picked)
if picked:
    shown = shown[shown["question_id"].isin(picked)]
    left, right = st.columns([5, 1])
    left.caption(f"Narrowed to {len(shown)} question(s) picked on the chart (click a bar; shift-click adds).")
    right.button("Clear chart pick", key="w_clear_pick", on_click=_clear_pick)
else:
    st.caption("Click a bar to narrow the table to that question; shift-click adds more.")

listed = (f" The first {len(deltas.rows):,} in this order are listed and charted; the download holds all "
          f"{deltas.matched:,}." if deltas.matched > len(deltas.rows) else "")
st.caption(escape(f"{deltas.matched:,} of {deltas.total:,} questions match the filters.{listed}") + " "
           + metric_help(cmp.metric).split("\n\n")[0])
view = shown[["question_id", "type", "baseline", "candidate", "delta", "status", "label_gap", "critical", "split",
               "tags", "text"]]
event = table(
    view,
    key="w_delta_table",
    on_select="rerun",
    selection_mode="single-row",
    column_config={
        "question_id": st.column_config.TextColumn("question"),
        "text": st.column_config.TextColumn("question text", width="large"),
        "tags": st.column_config.ListColumn("tags"),
        "critical": st.column_config.CheckboxColumn("critical"),
        "baseline": st.column_config.NumberColumn(f"baseline {metric.name}", format="%.3f", help=metric_help(cmp.metric)),
        "candidate": st.column_config.NumberColumn(f"candidate {metric.name}", format="%.3f", help=metric_help(cmp.metric)),
        "delta": st.column_config.NumberColumn("delta", format="%+.3f", help="candidate - baseline; n/a when either side is n/a"),
        "status": st.column_config.TextColumn("status"),
        "label_gap": st.column_config.CheckboxColumn(
            "may be a label gap", help="Regressed, while the candidate's first k hold a document nobody judged: it "
                                       "counts as not relevant, so a label may be all that is missing."),
    },
)
rows = event.selection.rows if event is not None else []
if rows:
    qid = str(view.iloc[rows[0]]["question_id"])
    st.page_link("views/question_detail.py", label="Open the selected question's detail",
                 query_params=cmp.link_params(q=qid))
st.download_button(
    "Download the filtered table (CSV)",
    data=data.deltas_csv(cmp.suite, cmp.baseline, cmp.candidate, cmp.metric, picked=picked, **filters),
    file_name=f"question-deltas-{cmp.suite}-{cmp.metric}.csv",
    mime="text/csv",
    key="w_download",
    on_click="ignore",  # a download changes nothing shown: no rerun, so a click never races one
)

"""Which questions moved, and how? One row per question, filters, a delta chart, CSV download."""
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from dashboard import charts, data, selection
from dashboard.display import STATUS_COLORS, escape, metric_help, metric_name, table
from scoring.decide import change
from scoring.metrics import BY_KEY

st.title("Question deltas")
cmp = selection.comparison(drives="every value, status, count and bar of this page")

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
    i, j = st.columns(2)
    worse = selection.check("Only questions that scored worse", param="worse", where=i,
                            help="Regressed, or scored lower because a record is missing or failed.")
    label_gap = selection.check("Only regressions that may be a label gap", param="gap", where=j,
                                help="Regressed, while the candidate's first k hold a document nobody judged: unjudged "
                                     "documents count as not relevant, so a label may be all that is missing.")

filters = dict(types=types, answerable=None if slice_ == "all" else slice_ == "answerable", splits=splits,
               critical=None if critical == "all" else critical == "critical only", tags=tags, statuses=statuses,
               search=search, order=order, label_gap=label_gap, worse=worse)
deltas = data.question_deltas(cmp.suite, cmp.baseline, cmp.candidate, cmp.metric, **filters)
shown = deltas.rows


def _only_status(status: str) -> None:
    """A count's click: filter to that status, or back to every status when it is the only one shown."""
    selection.set_param("status", [] if statuses == [status] else [status])


with st.container(key="status_counts"):
    st.caption(escape(f"Questions by status on {metric_name(cmp.metric)} under the other filters; click a count to "
                      "show only those questions (click it again for every status)."))
    for column, status in zip(st.columns(len(data.STATUSES)), data.STATUSES):
        n = (deltas.counts or {}).get(status, 0)
        chosen = statuses == [status]
        column.button(f"{status} {n}", key=f"w_count_{status.replace('/', '')}", on_click=_only_status,
                      args=(status,), type="primary" if chosen else "secondary", width="stretch",
                      help=f"Show only the {status} questions" if not chosen else "Show every status again")


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


moved = change.gain(shown["baseline"].to_numpy(dtype=float), shown["candidate"].to_numpy(dtype=float),
                    metric.higher_is_better)
if not (abs(moved[~pd.isna(moved)]) > change.TIE).any():
    st.info(escape(f"No question changed on {metric.name}: every listed question has the same value on both sides "
                   "(or is n/a on one), so there is nothing to chart."))
else:
    chart = charts.delta_bars(shown, metric_name=metric.name, higher_is_better=metric.higher_is_better)
    st.altair_chart(chart, key=chart_key, on_select=_picked, selection_mode=charts.PICK, width="stretch")
picked = selection.param_list("pick")
unknown_picks = [p for p in picked if data.question(cmp.suite, p) is None]
if unknown_picks:
    selection.unknown_value("picked question", unknown_picks, "the other picks" if len(unknown_picks) < len(picked)
                            else "every question that matches the filters")
    picked = [p for p in picked if p not in unknown_picks]
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
view = shown[["question_id", "status", "delta", "baseline", "candidate", "critical", "type", "text", "label_gap",
               "split", "tags"]]
# The question ID is a link to its detail (one click; it opens in a new tab, every selection in its address).
view = view.assign(open=[f"question_detail?{urlencode(cmp.link_params(q=str(q)))}" for q in view["question_id"]])

st.caption("Click a row's \"detail\" link to open that question's detail (in a new tab).")
table(
    view.style.map(lambda s: f"color: {STATUS_COLORS.get(s, ('', ''))[0]}; font-weight: 600", subset=["status"]),
    key="w_delta_table",
    column_order=["question_id", "open", *[c for c in view.columns if c not in ("open", "question_id")]],
    column_config={
        "question_id": st.column_config.TextColumn("question", pinned=True),
        "open": st.column_config.LinkColumn("detail", display_text="detail ↗", width="small",
                                            help="Opens the question's detail: its diagnosis, rankings and claims"),
        "text": st.column_config.TextColumn("question text", width="large"),
        "tags": st.column_config.ListColumn("tags"),
        "critical": st.column_config.CheckboxColumn("critical"),
        "baseline": st.column_config.NumberColumn("baseline", format="%.3f", width="small",
                                                  help=f"{metric.name} of the baseline. " + metric_help(cmp.metric)),
        "candidate": st.column_config.NumberColumn("candidate", format="%.3f", width="small",
                                                   help=f"{metric.name} of the candidate. " + metric_help(cmp.metric)),
        "delta": st.column_config.NumberColumn("delta", format="%+.3f", help="candidate - baseline; n/a when either side is n/a"),
        "status": st.column_config.TextColumn("status"),
        "label_gap": st.column_config.CheckboxColumn(
            "may be a label gap", help="Regressed, while the candidate's first k hold a document nobody judged: it "
                                       "counts as not relevant, so a label may be all that is missing."),
    },
)
st.download_button(
    "Download the filtered table (CSV)",
    data=data.deltas_csv(cmp.suite, cmp.baseline, cmp.candidate, cmp.metric, picked=picked, **filters),
    file_name=f"question-deltas-{cmp.suite}-{cmp.metric}.csv",
    mime="text/csv",
    key="w_download",
    on_click="ignore",  # a download changes nothing shown: no rerun, so a click never races one
)

"""Which of many candidates beat the baseline, and where? Every run or group of the suite against one
baseline: paired deltas per metric x slice, significance across the matrix, operations, verdicts."""
from html import escape as html_escape
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from dashboard import data, selection
from dashboard.display import escape, metric_name, number, say, signed
from scoring.decide.change import strength
from scoring.decide.family import FDR_MARK, SIGNIFICANT_MARK, cell_mark
from scoring.decide.gate_words import row_detection_words
from scoring.metrics import REGISTRY

DEFAULT_METRICS = ("ndcg", "recall", "support", "coverage")
DELTAS_PAGE = "question_deltas"
"""The URL path of the Question deltas page (its file name, as the router registers it)."""
COLOURS = {"better": "46, 160, 67", "worse": "207, 34, 46", "unchanged": "0, 0, 0"}
"""A cell's colour (RGB) by how its mean moved; its strength (`scoring.decide.change.strength`) sets the opacity."""
VERDICT_COLOURS = {"pass": COLOURS["better"], "fail": COLOURS["worse"], "inconclusive": "237, 125, 49"}
"""A verdict cell's colour, as the verdict card colours the verdict (green, red, orange)."""
OPERATIONS = {"failure_rate": ("failure rate", 3), "latency_p95": ("latency p95 (ms)", 0),
              "cost_mean": ("mean cost (USD)", 5), "judged": ("Judged@k", 3)}

st.title("Release matrix")
selection.database_or_stop()
suites = list(data.suites()["suite"])
suite = selection.select("Suite", suites, param="suite", help="The frozen test set: questions, labels, corpus.")
options = data.sides(suite)
if not options:
    say("info", f"Suite {suite} has no run yet.")
    st.stop()
by_name = {s.name: s for s in options}
pinned = data.pinned_baseline(suite)
default_base = pinned if pinned in by_name else options[0].name
baseline = by_name[selection.select("Baseline", list(by_name), param="baseline", default=default_base,
                                    format_func=lambda n: by_name[n].label + (" (pinned)" if n == pinned else ""),
                                    help="The run (or group) every candidate is compared with; the suite's pinned "
                                         "baseline unless the URL names another.")]
comparable, refused = data.matrix_candidates(suite, baseline)
chosen = selection.multiselect("Candidates (none: every run and group)", [s.name for s in comparable],
                               param="candidates", help="A subset of the suite's runs and groups; kept in the URL.")
candidates = [s for s in comparable if s.name in chosen] if chosen else comparable
metrics = selection.multiselect("Metrics", [m.key for m in REGISTRY], param="metrics", format_func=metric_name,
                                help="Columns of the matrix (none: nDCG@k, R@k, Support, Coverage).") \
    or [m for m in DEFAULT_METRICS if m in {r.key for r in REGISTRY}]
if not candidates:
    say("info", f"No run or group of suite {suite} can be compared with {baseline.name}.")
    st.stop()

with st.spinner("Computing the matrix"):
    first = data.release_matrix(suite, baseline, candidates, metrics, ("all",))
slice_names = selection.multiselect("Slices", list(first.slices), param="slices",
                                    help="Columns per metric (none: all questions).") or ["all"]
mx = first if list(slice_names) == ["all"] else data.release_matrix(suite, baseline, candidates, metrics, slice_names)
verdicts = data.matrix_verdicts(baseline, candidates)
recorded = data.recorded_verdicts(suite, baseline)

cells = mx.cells
columns = [(m, s) for m in metrics for s in slice_names
           if ((cells["metric"] == m) & (cells["slice"] == s)).any()]
ops = mx.operations.set_index("candidate")
shown_ops = [k for k in OPERATIONS if ops[k].notna().any()]
sort_options = ["candidate", *[f"{metric_name(m)} · {s}" for m, s in columns], *[OPERATIONS[k][0] for k in shown_ops]]
sort_by = selection.select("Sort by", sort_options, param="sort_by", where=st.sidebar)
descending = selection.check("Largest first", param="desc")

by_cell = {(r.candidate, r.metric, r.slice): r for r in cells.itertuples(index=False)}
rows = []
for cand in candidates:
    row = {"candidate": cand.name}
    for m, s in columns:
        r = by_cell.get((cand.name, m, s))
        row[f"{metric_name(m)} · {s}"] = None if r is None else r.delta
    for k in shown_ops:
        value = ops.loc[cand.name, k]
        row[OPERATIONS[k][0]] = None if pd.isna(value) else float(value)
    rows.append(row)
frame = pd.DataFrame(rows)
frame = frame.sort_values(sort_by, ascending=not descending, na_position="last", kind="stable") \
    if sort_by in frame.columns else frame


def deltas_link(cand: str, metric: str, slice_: str) -> str:
    """Question deltas for this pair, metric and slice: the slice as that page's filters."""
    params: dict[str, str] = {"suite": suite, "baseline": baseline.name, "candidate": cand, "metric": metric}
    family, _, value = slice_.partition(":")
    if slice_ in ("answerable", "unanswerable"):
        params["slice"] = slice_
    elif slice_ == "critical":
        params["critical"] = "critical only"
    elif family == "type":
        params["type"] = value
    elif family == "split":
        params["split"] = value
    elif family == "tag":
        params["tags"] = value
    return f"{DELTAS_PAGE}?{urlencode(params)}"


span = {(m, s): float(cells.loc[(cells["metric"] == m) & (cells["slice"] == s), "delta"].abs().max())
        for m, s in columns}  # a column's largest change: the one coloured fully


def cell(cand: str, metric: str, slice_: str) -> str:
    r = by_cell.get((cand, metric, slice_))
    if r is None:
        return '<td class="na">n/a</td>'
    direction, shade = strength(float(r.delta), bool(r.higher_is_better), bool(r.significant),
                                span[(metric, slice_)])
    mark = cell_mark(bool(r.significant), bool(r.fdr_significant))
    title = (f"n = {r.n} paired questions; baseline {number(r.baseline)}, candidate {number(r.candidate_mean)}; "
             f"{r.improved} improved, {r.regressed} regressed, {r.unchanged} unchanged; "
             f"p_holm {number(r.p_holm)}, p_fdr {number(r.p_fdr)} (randomization p {number(r.p_randomization)}); "
             + row_detection_words(getattr(r, "mde", None), getattr(r, "bound", None))
             + ("; significant" if r.significant else "; not significant: coloured faintly"))
    return (f'<td style="background: rgba({COLOURS[direction]}, {0.5 * shade:.3f})" class="{direction}" '
            f'data-strength="{shade}" data-significant="{"yes" if r.significant else "no"}" '
            f'title="{html_escape(title)}">'
            f'<a target="_self" href="{html_escape(deltas_link(cand, metric, slice_))}">'
            f"{html_escape(signed(r.delta))}{mark}</a></td>")


def verdict_cell(verdict: str | None) -> str:
    """A verdict, coloured as the verdict card colours it; empty without one."""
    if not verdict:
        return '<td class="verdict"></td>'
    colour = VERDICT_COLOURS.get(verdict)
    style = f' style="background: rgba({colour}, 0.22); font-weight: 600"' if colour else ""
    return f'<td class="verdict {html_escape(verdict)}"{style}>{html_escape(verdict)}</td>'


verdict_heads = [*(["verdict"] if verdicts else []), *(["recorded verdict"] if not recorded.empty else [])]
head = "".join(f"<th>{html_escape(c)}</th>" for c in ["candidate", *verdict_heads,
                                                      *[f"{metric_name(m)} · {s}" for m, s in columns],
                                                      *[OPERATIONS[k][0] for k in shown_ops]])
base_ops = "".join(f"<td>{number(ops.loc[baseline.name, k], OPERATIONS[k][1])}</td>" for k in shown_ops)
body = [f'<tr class="baseline"><td>{html_escape(baseline.label)} (baseline)</td>'
        + "<td></td>" * (len(verdict_heads) + len(columns)) + base_ops + "</tr>"]
recorded_by = dict(zip(recorded["candidate"], recorded["verdict"]))
for cand in frame["candidate"]:
    tds = verdict_cell(verdicts.get(cand, "n/a")) if verdicts else ""
    tds += verdict_cell(recorded_by.get(cand)) if not recorded.empty else ""
    tds += "".join(cell(cand, m, s) for m, s in columns)
    tds += "".join(f"<td>{number(ops.loc[cand, k], OPERATIONS[k][1])}</td>" for k in shown_ops)
    body.append(f'<tr data-candidate="{html_escape(cand)}"><td>{html_escape(by_name[cand].label)}</td>{tds}</tr>')

st.caption(escape(
    f"{len(candidates)} candidates against {baseline.name} on suite {suite}. Each cell: the mean paired delta "
    f"(candidate - baseline over the questions both score; n/a excluded), green where the metric moved the "
    f"better way, red the worse, the stronger the larger the change in its column; a change that is not "
    f"significant stays nearly plain; {SIGNIFICANT_MARK} where p_holm < 0.05, the randomization p "
    f"Holm-adjusted across the {mx.n_tests:,} cells of this matrix (candidates x metrics x slices shown; ragslice "
    f"compare adjusts across every candidate x metric x slice): a claim, the chance of any false {SIGNIFICANT_MARK} "
    f"is at most 0.05. {FDR_MARK} where only p_fdr < 0.05, the same p Benjamini-Hochberg-adjusted: worth exploring, "
    f"no claim (among the marked cells, at most 5% false on average). Hover a cell for n, both means, both "
    f"p-values and the smallest drop it can detect; click it for the question deltas."))
if mx.resolution is not None and mx.resolution.warning():
    say("warning", f"{mx.resolution.warning()}.")
st.markdown(
    "<style>table#release-matrix {font-size: 0.85rem; width: 100%}"
    " #release-matrix td, #release-matrix th {padding: 2px 5px; text-align: right; white-space: nowrap}"
    " #release-matrix td.verdict {text-align: center}"
    " #release-matrix th {white-space: normal; vertical-align: bottom}"
    " #release-matrix td:first-child {white-space: normal; min-width: 7rem}"
    " #release-matrix td:first-child, #release-matrix th:first-child {text-align: left}"
    " #release-matrix a {color: inherit} #release-matrix tr.baseline td {font-weight: 600}</style>"
    f'<div style="overflow-x:auto"><table id="release-matrix"><thead><tr>{head}</tr></thead>'
    f"<tbody>{''.join(body)}</tbody></table></div>",
    unsafe_allow_html=True)
if refused:
    st.caption(escape("Not compared: " + "; ".join(f"{n} ({why})" for n, why in refused)))
if verdicts:
    st.caption("Verdict: the live policy's, evaluated for each candidate as ragslice compare does.")

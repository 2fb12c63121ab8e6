"""What was run, and what differs? Manifests, configuration diff, latency, cost, failures, repeats."""
import json

import pandas as pd
import streamlit as st

from dashboard import charts, data, selection
from dashboard.display import metric_name, table

st.title("Runs")
cmp = selection.comparison(with_metric=False)
selection.sides_caption(cmp)
selection.show_compatibility(cmp, stop_on_refusal=False)

st.subheader("Configuration diff: baseline vs candidate")
diff = data.manifest_diff(cmp.suite, cmp.baseline, cmp.candidate)
if diff.empty:
    st.info("The manifests agree on every field.")
else:
    st.caption("Only manifest fields that differ. Values are JSON; a group shows each distinct value of its repeats, "
               "separated by ' | '.")
    table(diff, key="w_diff", placeholder="", height="content")

stats = data.run_stats(cmp.suite)
st.subheader("Latency, cost and failures per run")
table(
    stats[["run_id", "run_group", "repeat", "questions", "records", "missing", "failed",
           "latency_p50", "latency_p95", "cost_total", "cost_mean"]].assign(
        run_group=stats["run_group"].fillna(""),
        repeat=stats["repeat"].map(lambda r: "" if pd.isna(r) else str(int(r)))), key="w_stats",
    column_config={
        "run_group": st.column_config.TextColumn("group", help="the group of repeats the run belongs to (empty: a "
                                                               "single run)"),
        "repeat": st.column_config.TextColumn("repeat", help="its place in the group (empty: a single run)"),
        "missing": st.column_config.NumberColumn("missing", help="suite questions with no record"),
        "failed": st.column_config.NumberColumn("failed", help="records with an error"),
        "latency_p50": st.column_config.NumberColumn("latency p50 (ms)", format="%.0f"),
        "latency_p95": st.column_config.NumberColumn("latency p95 (ms)", format="%.0f"),
        "cost_total": st.column_config.NumberColumn("cost total (USD)", format="%.4f"),
        "cost_mean": st.column_config.NumberColumn("cost per record (USD)", format="%.5f"),
    },
)
if stats["latency_p50"].notna().any():
    st.altair_chart(charts.latency_bars(stats), key="w_latency_chart")

st.subheader("Repeats")
spread = data.group_spread(cmp.suite)
if spread.empty:
    st.info("No run in this suite belongs to a group of repeats.")
else:
    st.caption("Each group: its runs, and the lowest, mean and highest macro mean over the repeats.")
    spread["metric"] = spread["metric"].map(metric_name)
    table(spread, key="w_spread", height="content", column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in ("lowest", "mean", "highest")})

st.subheader("Manifests")
manifests = data.runs(cmp.suite)
table(
    manifests[["run_id", "run_group", "repeat", "created_at", "code_revision", "model", "k", "prompt_revision",
           "rubric_version", "suite_version", "corpus_version", "retrieval", "generation", "notes",
           "n_records", "n_missing", "n_failed"]], placeholder="", key="w_manifests",
)
run_id = selection.select("Full manifest of run", list(manifests["run_id"]), param="run", where=st)
st.json(json.loads(manifests.set_index("run_id").loc[run_id, "manifest"]), expanded=True)

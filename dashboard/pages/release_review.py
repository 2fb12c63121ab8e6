"""Should the candidate replace the baseline? Headline metrics, question counts, worst regressions."""
import streamlit as st

from dashboard import data, selection
from dashboard.display import escape, metric_help, metric_name, missing, number, say, signed, table
from scoring.metrics import BY_KEY

KEY_METRICS = ("recall", "ndcg", "support", "coverage", "abstention_correct", "disclosures")
WORST = 10

st.title("Release review")
cmp = selection.comparison()
selection.sides_caption(cmp)
selection.show_compatibility(cmp)

# RELEASE VERDICT (issue "Release decision"): the verdict `ragslice compare --policy` recorded for
# exactly these runs. The statistics and gates are computed by scoring.compare / scoring.policy;
# this page only reads the stored result.
with st.container(border=True, key="verdict"):
    st.subheader("Release verdict")
    verdict = data.latest_verdict(cmp.suite, cmp.baseline, cmp.candidate)
    if verdict is None:
        st.info("No verdict recorded for this comparison yet. The acceptance policy's gates are evaluated "
                "(with paired tests) and recorded by:")
        st.code(f"ragslice compare {cmp.baseline.name} {cmp.candidate.name} --db {data.db_path()} "
                "--policy policy.toml", language=None)
    else:
        outcome = str(verdict["verdict"]).upper()
        (st.success if verdict["verdict"] == "pass" else st.error)(f"Verdict: {escape(outcome)}")
        st.caption(escape(
            f"Policy {verdict['policy_name']} (sha256 {str(verdict['policy_hash'])[:12]}), recorded "
            f"{verdict['created_at']} for {verdict['baseline']} vs {verdict['candidate']}."
        ))
        if verdict["refreshed_after"]:
            say("warning", f"The database was refreshed at {verdict['refreshed_at']}, after this verdict: "
                           "if these runs changed, record the comparison again.")
        if not missing(verdict["verdict_without_disputed"]) and verdict["verdict_without_disputed"] != verdict["verdict"]:
            say("warning", f"Without the disputed questions the verdict would be {verdict['verdict_without_disputed']}.")
        for warning in verdict["warnings"]:
            say("warning", str(warning))
        gates = verdict["gates"]
        shown = [c for c in ("name", "passed", "metric", "slice", "aggregate", "threshold", "observed", "baseline",
                             "n", "p_value", "reason", "warning") if c in gates.columns]
        table(gates[shown], key="w_gates", placeholder="", height="content", column_config={
            "passed": st.column_config.CheckboxColumn("passed"),
            "reason": st.column_config.TextColumn("reason", width="large"),
        })

head = data.headline(cmp.suite, cmp.baseline, cmp.candidate).set_index("metric")

st.subheader("Headline metrics")
st.caption("Macro mean over the questions each metric scores. Each tile: candidate value and delta; "
           "below it the baseline, n scored (baseline / candidate) and n/a excluded.")
columns = st.columns(len(KEY_METRICS))
for column, key in zip(columns, KEY_METRICS):
    row = head.loc[key]
    with column:
        better_up = BY_KEY[key].higher_is_better
        st.metric(
            metric_name(key),
            number(row["candidate"]),
            delta=None if row["delta"] != row["delta"] else signed(row["delta"]),
            delta_color="normal" if better_up else "inverse",
            help=metric_help(key),
            border=True,
        )
        n = {c: int(row[c]) for c in ("n_baseline", "n_candidate", "na_baseline", "na_candidate", "improved", "regressed")}
        st.caption(escape(
            f"baseline {number(row['baseline'])} · n {n['n_baseline']} / {n['n_candidate']} · "
            f"n/a {n['na_baseline']} / {n['na_candidate']} · {n['improved']} improved, {n['regressed']} regressed"
        ))

st.subheader(f"Questions by status on {metric_name(cmp.metric)}")
row = head.loc[cmp.metric]
counts = st.columns(len(data.STATUSES))
for column, status in zip(counts, data.STATUSES):
    column.metric(status, int(row[status]), border=True)
st.caption("Status per question: missing (a side has no record) > failed (a record has an error) > n/a (a value "
           "is n/a) > improved / regressed (in the metric's direction) > unchanged.")

st.subheader(f"Worst regressions on {metric_name(cmp.metric)}")
frame = data.question_deltas(cmp.suite, cmp.baseline, cmp.candidate, cmp.metric)
sign = 1 if BY_KEY[cmp.metric].higher_is_better else -1
frame = frame.assign(gain=frame["delta"] * sign)
# A missing or failed candidate record scores as a failure, so it can be a regression too.
worse = frame[frame["status"].isin(["regressed", "missing", "failed"]) & (frame["gain"] < -data.UNCHANGED_TOLERANCE)]
worst = worse.sort_values(["critical", "gain", "position"], ascending=[False, True, True]).head(WORST)
if worst.empty:
    st.info("No question regressed on this metric.")
else:
    st.caption(f"Critical questions first, then by size of the drop; at most {WORST} of {len(worse)} questions that "
               "scored worse (regressed, or scored lower because a record is missing or failed).")
    for i, r in enumerate(worst.itertuples(index=False)):
        with st.container(border=True, key=f"worst_{i}"):
            left, middle, right = st.columns([7, 2, 2], vertical_alignment="center")
            left.text(("CRITICAL  " if r.critical else "") + f"{r.question_id}  ·  {r.type}  ·  {r.status}")
            left.text(r.text)
            middle.text(f"{number(r.baseline)} → {number(r.candidate)}\n({signed(r.delta)})")
            right.page_link("pages/question_detail.py", label="Question detail",
                            query_params=cmp.link_params(q=str(r.question_id)))

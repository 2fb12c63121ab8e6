"""Is the difference more than noise? Every metric x slice with its paired tests, and the questions
whose outcome flips between repeats. The figures come from `scoring.decide.comparison`; this page filters and shows."""
import streamlit as st

from dashboard import charts, data, selection
from dashboard.display import escape, metric_name, say, sentence, table
from scoring.decide import change
from scoring.decide.significance import significant
from scoring.metrics import BY_KEY, slices

ALPHAS = ("0.01", "0.05", "0.1")
SUMMARY_ALPHA = 0.05  # the opening sentence calls a change very likely real at this Holm-adjusted p

st.title("Statistics")
cmp = selection.comparison()
selection.sides_caption(cmp)
selection.show_compatibility(cmp)

try:
    with st.spinner("Computing the paired statistics..."):
        stats = data.statistics(cmp.baseline, cmp.candidate)
except data.StatisticsUnavailable as error:
    say("info", f"No statistics for this comparison: {error}")
    st.stop()

overall = stats.table[stats.table["slice"] == "all"]
real = overall[significant(overall["p_holm"], SUMMARY_ALPHA)]
moves = [change.moved(float(d), BY_KEY[m].higher_is_better) for m, d in zip(real["metric"], real["delta"])]
better = [metric_name(m) for m, how in zip(real["metric"], moves) if how == "better"]
worse = [metric_name(m) for m, how in zip(real["metric"], moves) if how == "worse"]
noise = len(overall) - len(real)
said = []
if better:
    said.append(f"{', '.join(better)} very likely improved")
if worse:
    said.append(f"{', '.join(worse)} very likely got worse")
st.markdown(escape(
    (f"Over all {stats.n_questions} questions, {' and '.join(said)}" if said else
     f"Over all {stats.n_questions} questions, no change is clearly more than noise")
    + f" (Holm-adjusted p below {SUMMARY_ALPHA:g}); the other {noise} metric{'' if noise == 1 else 's'}' changes "
      "could be noise. The table below does the same for every slice."))
with st.expander("How these figures are computed"):
    st.markdown(
        "Samples are questions, paired by ID; repeats of a group are first averaged per question. Each row compares "
        "the two sides on the questions both score (n). The interval is a paired bootstrap of the mean delta; "
        "the three tests ask whether the delta could be 0; Holm's adjustment keeps the chance of any false "
        "alarm across every metric x slice row at alpha: judge claims by p Holm. Benjamini-Hochberg's adjustment "
        "(p FDR) keeps the expected share of false alarms among the rows it marks at alpha: it marks more rows, "
        "worth exploring, none of them a claim on its own. p floor is the smallest randomization p a row's test "
        "could give (exact over every sign pattern, a share of random patterns, or the normal approximation); "
        "when a family is too large for random patterns, its small p-values are recomputed finer. The rules are "
        "in `docs/policy.md` (*Rules the verdict follows*, *Statistics*) and `docs/statistics.md`.")
    st.caption(escape(
        f"Computed by scoring.decide.comparison over the {stats.n_questions} questions of the suite in "
        f"{stats.seconds:.1f} s (kept until the database changes): {stats.settings}."))
for warning in stats.warnings:
    say("warning", sentence(warning))

present = [f for f in data.SLICE_FAMILIES if f in set(stats.table["slice"].map(slices.family_of))]
with st.container(border=True, key="filters"):
    a, b, c, d = st.columns(4)
    metrics = selection.multiselect("Metrics", list(data.METRIC_KEYS), param="metrics", format_func=metric_name,
                                    where=a, help="Empty: every metric.")
    families = selection.multiselect("Slice family", present, param="family", where=b,
                                     format_func=lambda f: slices.family(f).label, help="Empty: every slice.",
                                     aliases=lambda f: slices.family(f).name if f in slices.ALIASES else f)
    p_column = selection.select("Judge significance by", list(data.P_COLUMNS), param="p", default="p_holm",
                                format_func=data.P_COLUMNS.get, where=c,
                                help="Holm's adjustment accounts for testing every metric x slice at once (for "
                                     "claims); Benjamini-Hochberg's (false discovery rate) marks more rows, for "
                                     "exploring; the unadjusted p-values do not account for it.")
    alpha = float(selection.select("Alpha", ALPHAS, param="alpha", default="0.05", where=d,
                                   help="A row is significant when the chosen p-value is below alpha."))
    e, f, _, _ = st.columns(4)
    significant_only = selection.check("Significant only", param="significant", where=e,
                                       help="Keep rows whose chosen p-value is below alpha.")
    regressions_only = selection.check("Regressions only", param="regressions", where=f,
                                       help="Keep rows whose mean paired delta is against the metric's direction "
                                            "(lower, or higher for Disclosures).")

rows = data.statistics_rows(stats.table, metrics=metrics, families=families, alpha=alpha, p_column=p_column,
                            significant_only=significant_only, regressions_only=regressions_only)

chosen = data.statistics_rows(stats.table, metrics=[cmp.metric], families=families, alpha=alpha, p_column=p_column)
if len(chosen):
    st.altair_chart(charts.delta_intervals(chosen.assign(p=chosen[p_column]), metric_name=metric_name(cmp.metric)),
                    key="w_stats_chart")
    st.caption(escape(f"{metric_name(cmp.metric)} (pick another metric in the sidebar): a point is the mean paired "
                      f"delta, its bar the {stats.confidence:.0%} bootstrap interval; orange when "
                      f"{data.P_COLUMNS[p_column]} < {alpha:g}."))

st.caption(escape(f"{len(rows)} of {len(stats.table)} metric x slice rows shown."))
shown = rows.assign(
    metric=rows["metric"].map(metric_name),
    p_holm=rows["p_holm"].astype(float),
    p_fdr=rows["p_fdr"].astype(float),
    warnings=rows["warnings"].map(lambda w: "; ".join(str(x) for x in w) if w is not None else ""),
)[["metric", "slice", "n", "baseline", "candidate", "delta", "ci_low", "ci_high", "p_ttest", "p_wilcoxon",
   "p_randomization", "p_holm", "p_fdr", "significant", "moves", "improved", "regressed", "unchanged", "method",
   "p_floor", "clusters", "warnings"]]
P = "%.4f"
COLUMNS = {
    "metric": st.column_config.TextColumn("metric", help="The registry's name; its numerator, denominator and n/a "
                                                         "rule are listed under 'What the columns mean'."),
    "slice": st.column_config.TextColumn("slice", help="all, answerable / unanswerable, critical, type:<type>, "
                                                       "split:<split>."),
    "n": st.column_config.NumberColumn("n", help="Paired questions: scored on both sides. A question that is n/a on "
                                                 "either side (the metric's n/a rule) is left out, never counted as 0; "
                                                 "missing and failed records are scored (0), not left out."),
    "baseline": st.column_config.NumberColumn("baseline", format="%.4f", help="Mean over the n paired questions."),
    "candidate": st.column_config.NumberColumn("candidate", format="%.4f", help="Mean over the n paired questions."),
    "delta": st.column_config.NumberColumn("delta", format="%+.4f", help="Mean of candidate - baseline over the n "
                                                                        "pairs."),
    "ci_low": st.column_config.NumberColumn("CI low", format="%+.4f",
                                            help=f"{stats.confidence:.0%} paired bootstrap interval of the mean "
                                                 "delta: lower end (n/a below 2 pairs)."),
    "ci_high": st.column_config.NumberColumn("CI high", format="%+.4f", help="The interval's upper end."),
    "p_ttest": st.column_config.NumberColumn("p t-test", format=P, help="Paired t-test, two-sided, unadjusted."),
    "p_wilcoxon": st.column_config.NumberColumn("p Wilcoxon", format=P,
                                                help="Wilcoxon signed-rank test, two-sided, unadjusted."),
    "p_randomization": st.column_config.NumberColumn("p randomization", format=P,
                                                     help="Sign-flip randomization test, two-sided, unadjusted."),
    "p_holm": st.column_config.NumberColumn("p Holm", format=P,
                                            help="The randomization p-value Holm-adjusted across every metric x "
                                                 "slice row of the comparison (not only the rows shown): the chance "
                                                 "of any false alarm among them is at most alpha. Judge claims by "
                                                 "it."),
    "p_fdr": st.column_config.NumberColumn("p FDR", format=P,
                                           help="The randomization p-value Benjamini-Hochberg-adjusted across every "
                                                "metric x slice row: among the rows it marks, the expected share of "
                                                "false alarms is at most alpha. It marks more rows than Holm: rows "
                                                "worth exploring, not claims."),
    "significant": st.column_config.CheckboxColumn("significant", help="The chosen p-value is below alpha."),
    "moves": st.column_config.TextColumn("moves", help="better / worse: the mean delta is with / against the "
                                                       "metric's direction (Disclosures: lower is better)."),
    "improved": st.column_config.NumberColumn("improved", help="Paired questions that moved in the metric's "
                                                               "direction."),
    "regressed": st.column_config.NumberColumn("regressed", help="Paired questions that moved against it."),
    "unchanged": st.column_config.NumberColumn("unchanged", help="Paired questions whose value did not move."),
    "method": st.column_config.TextColumn("method", help="resampling: bootstrap interval and sign-flip "
                                                         "randomization test; normal: their large-sample (normal) "
                                                         "forms, used above 1,000 pairs that differ. Empty below 2 "
                                                         "pairs."),
    "p_floor": st.column_config.NumberColumn("p floor", format="%.2e",
                                             help="The smallest randomization p the row's test could give: 2^(1-m) "
                                                  "over every sign pattern of m differing pairs, 1/(B+1) with B "
                                                  "random patterns, 0 for the normal approximation. A family too "
                                                  "large for B recomputes its small p-values finer."),
    "clusters": st.column_config.NumberColumn("clusters", help="When the suite's questions carry clusters (the "
                                                               "source each was written from): the clusters among "
                                                               "the row's pairs; its interval and tests resample "
                                                               "whole clusters. Empty: questions taken as "
                                                               "independent."),
    "warnings": st.column_config.TextColumn("warnings", width="large",
                                            help="Where n, or the number of pairs that differ, is too small for a "
                                                 "test to mean anything."),
}
table(shown, key="w_stats_table", column_config=COLUMNS)
st.download_button("Download the shown rows (CSV)", data=shown.to_csv(index=False).encode("utf-8"),
                   file_name=f"statistics-{cmp.suite}.csv", mime="text/csv", key="w_download_stats",
                   on_click="ignore")  # a download changes nothing shown: no rerun

with st.expander("What the columns mean"):
    st.markdown("One row per metric x slice. Each column:")
    table([{"column": (config.get("label") or name), "means": config.get("help") or ""}
           for name, config in ((n, dict(c)) for n, c in COLUMNS.items())],
          key="w_stats_columns", height="content", column_config={"means": st.column_config.TextColumn(width="large")})
    st.markdown("Each metric's numerator, denominator and n/a rule, from the metric registry:")
    listed = metrics or list(data.METRIC_KEYS)
    table([{"metric": BY_KEY[k].name, "numerator": BY_KEY[k].numerator, "denominator": BY_KEY[k].denominator,
            "n/a": BY_KEY[k].na_rule, "direction": "higher is better" if BY_KEY[k].higher_is_better
            else "lower is better"} for k in listed],
          key="w_stats_registry", height="content",
          column_config={"n/a": st.column_config.TextColumn("n/a", width="large")})

st.subheader("Flaky questions")
groups = [s for s in (cmp.baseline, cmp.candidate) if s.kind == "group"]
if not groups:
    st.info("Both sides are single runs. Flaky questions show when a side is a group of repeats (runs sharing the "
            "manifest's group).")
elif stats.flaky.empty:
    st.info("No question's outcome differs between the repeats.")
else:
    flaky = stats.flaky
    if metrics:
        flaky = flaky[flaky["metric"].isin([*metrics, "status"])]
    shown_flaky = flaky.assign(
        metric=flaky["metric"].map(lambda m: metric_name(m) if m in BY_KEY else str(m)),
        values=flaky["values"].map(lambda vs: " / ".join(
            "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v)) for v in vs)),
    )[["side", "question_id", "metric", "values"]]
    st.caption(escape(
        f"{len(shown_flaky)} question x metric (of {len(stats.flaky)}) on {shown_flaky['question_id'].nunique()} "
        "question(s) whose repeats disagree: a value further apart than 1e-9, a value in some repeats and n/a in "
        "others, or a different status (ok / missing / failed). Values are per repeat, in repeat order. Select a "
        "row to open the question."
    ))
    event = table(shown_flaky, key="w_flaky", on_select="rerun", selection_mode="single-row", column_config={
        "question_id": st.column_config.TextColumn("question"),
        "values": st.column_config.TextColumn("values per repeat", width="large"),
    })
    picked = event.selection.rows if event is not None else []
    if picked:
        qid = str(shown_flaky.iloc[picked[0]]["question_id"])
        st.page_link("views/question_detail.py", label="Open the selected question's detail",
                     query_params=cmp.link_params(q=qid))

"""How does this release compare with the last ones? Headline metrics per release, with each
recorded verdict marked, and the verdict history."""
import streamlit as st

from dashboard import charts, data, selection
from dashboard.display import escape, metric_name, moment, say, table
from scoring.metrics import REGISTRY

HEADLINE = ("ndcg", "recall", "support", "coverage")

st.title("Trends")
selection.database_or_stop()
suite = selection.select("Suite", list(data.suites()["suite"]), param="suite",
                         help="The frozen test set: questions, labels, corpus.")
metrics = selection.multiselect("Metrics", [m.key for m in REGISTRY], param="metrics", format_func=metric_name,
                                help="Lines of the chart (none: nDCG@k, R@k, Support, Coverage).") or list(HEADLINE)
pinned = data.pinned_baseline(suite)
st.sidebar.caption(escape(f"Standing baseline of {suite}: {pinned}" if pinned else
                          f"No standing baseline pinned for {suite} (ragslice pin WORKSPACE --suite {suite} --run RUN)."))

marked = data.marked_releases(suite)
every_run = selection.check("Every run, not only releases", param="every_run",
                            help="Releases are the runs whose manifest names a release, the pinned baselines and the "
                                 "runs a recorded verdict compared; the other runs are experiments.")
history = data.release_history(suite, None if every_run or not marked else marked)
if history.empty:
    st.info(f"Suite {suite} has no run yet.")
    st.stop()
verdicts = data.suite_verdicts(suite)
release_of = {r: row.release for row in history.itertuples() for r in row.runs}


def verdict_release(runs) -> str | None:
    """The release a recorded candidate belongs to: the one holding all of its runs."""
    found = {release_of.get(str(r)) for r in runs}
    return found.pop() if len(found) == 1 else None


verdicts["release"] = [verdict_release(r) for r in verdicts["candidate_runs"]]
newest = verdicts[verdicts["release"].notna()].groupby("release").tail(1).set_index("release")["verdict"]

long = history.melt(id_vars=["release"], value_vars=[m for m in metrics if m in history.columns], var_name="key",
                    value_name="value")
long["metric"] = long["key"].map(metric_name)
marks = long[long["release"].isin(newest.index)].assign(verdict=lambda f: f["release"].map(newest))
if not marked:
    say("info", f"No run of suite {suite} is marked as a release, so every run is shown. A run is a release when its "
                "manifest names one (\"release\": \"2026.11\"), when it is pinned as the standing baseline (ragslice "
                "pin), or when a recorded verdict compared it (ragslice compare --policy).")
st.caption(escape(("Every run" if every_run or not marked else "Releases only: the runs whose manifest names a release, "
                   "the pinned baselines and the runs a recorded verdict compared (tick 'Every run' for the "
                   "experiments too)") + ", in order of their manifests' time (created_at); a run whose manifest names "
                  "a release counts under it, a group's repeats as their group, the others each on their own. A value "
                  "is the mean over the release's runs of each run's macro mean; the axis spans the values shown. A "
                  "ring marks a release whose newest recorded verdict passed, a cross one that failed, a diamond "
                  "one that was inconclusive (ragslice compare --policy records them)."))
st.altair_chart(charts.release_trend(long, marks), key="w_trend_chart", width="stretch")

st.subheader("Releases")
groups = sorted({g for gs in history["groups"] for g in gs})
if groups:
    st.caption(escape("Groups of repeats among these runs: " + "; ".join(groups) + ". A release holding a group's "
                      "repeats averages them with its other runs."))
shown = history.assign(runs=history["runs"].map(", ".join), groups=history["groups"].map(", ".join), verdict=[newest.get(r, "") for r in history["release"]],
                       pinned=history["runs"].map(lambda rs: pinned in rs) | (history["release"] == pinned))
table(shown[["release", "created_at", "runs", "groups", "verdict", "pinned", *[m for m in metrics if m in shown.columns]]],
      key="w_releases", column_config={m: st.column_config.NumberColumn(metric_name(m), format="%.3f")
                                       for m in metrics})

st.subheader("Verdict history")
if verdicts.empty:
    st.info("No verdict was recorded for this suite yet (ragslice compare BASELINE CANDIDATE --policy FILE).")
else:
    view = verdicts.assign(created_at=verdicts["created_at"].map(moment), release=verdicts["release"].fillna(""))
    table(view[["created_at", "release", "baseline", "candidate", "policy_name", "verdict",
                "verdict_without_disputed"]].iloc[::-1].reset_index(drop=True), key="w_verdict_history")

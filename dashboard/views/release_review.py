"""Should the candidate replace the baseline? The verdict (live and recorded), headline metrics with
their significance, question counts, worst regressions."""
import shlex

import pandas as pd
import streamlit as st

from dashboard import data, selection
from dashboard import verdict as verdict_words
from dashboard.display import (
    delta_look, escape, file_path, metric_help, metric_name, missing, moment, number, say, sentence, shown_zero, signed,
    table,
)
from scoring.decide import change
from scoring.decide.comparison import label_gap_warning
from scoring.decide.gate_words import gate_fields
from scoring.decide.significance import significant
from scoring.errors import ValidationError
from scoring.metrics import BY_KEY

KEY_METRICS = ("recall", "ndcg", "support", "coverage", "abstention_correct", "disclosures")
WORST = 10
ALPHA = 0.05  # a headline delta is called significant when its Holm-adjusted p-value is below this (the one rule)

st.title("Release review")
cmp = selection.comparison(drives="the question counts and the worst regressions below, and adds its own headline "
                                  "tile when it is not one of the six")
selection.sides_caption(cmp)
selection.show_compatibility(cmp, warnings=False)  # a refusal stops the page; the caveats go under Details

# The statistics and the live verdict come from scoring.decide.comparison (cached); nothing is recorded here.
try:
    with st.spinner("Computing the paired statistics..."):
        stats = data.release_statistics(cmp.baseline, cmp.candidate, KEY_METRICS)
    unavailable = None
except data.StatisticsUnavailable as error:
    stats, unavailable = None, str(error)

KAPPA_INTERVAL = {"kappa_low": st.column_config.NumberColumn("95% low", format="%.3f"),
                  "kappa_high": st.column_config.NumberColumn("95% high", format="%.3f")}
"""How an agreement table shows a kappa's 95% bootstrap interval."""

GATE_COLUMNS = {
    "passed": st.column_config.CheckboxColumn("passed"),
    "outcome": st.column_config.TextColumn("outcome", help="pass, fail, or inconclusive: the gate's questions could "
                                                           "not detect a drop of its margin with the policy's min_power"),
    "observed": st.column_config.TextColumn("observed",
                                            help="the candidate's value the threshold is checked against"),
    "threshold": st.column_config.TextColumn("threshold"),
    "n": st.column_config.NumberColumn("n", help="questions (or paired questions, or records) the gate used"),
    "reason": st.column_config.TextColumn("reason", width="large"),
    "baseline": st.column_config.NumberColumn("baseline", format="%.4g"),
    "p_value": st.column_config.NumberColumn("p", format="%.4f", help="one-sided p-value of a max_drop gate"),
    "line": st.column_config.NumberColumn("policy line"),
}


def with_outcomes(frame: pd.DataFrame, gates) -> pd.DataFrame:
    # each gate's outcome (pass, fail, inconclusive), as the verdict recorded it
    rows = gates.to_dict("records") if hasattr(gates, "to_dict") else list(gates)
    outcomes = [gate_fields(g)["outcome"] for g in rows]
    if len(outcomes) != len(frame) or "passed" not in frame.columns:
        return frame
    return frame.assign(outcome=outcomes)  # last: the columns before it keep their places


def outcome(label: str, verdict: str) -> None:
    show = st.success if verdict == "pass" else st.warning if verdict == "inconclusive" else st.error
    show(f"{label}: {escape(str(verdict).upper())}")


recorded = data.latest_verdict(cmp.suite, cmp.baseline, cmp.candidate)
policy_file = data.policy_path()
live = stats.verdict if stats is not None else None
head = data.headline(cmp.suite, cmp.baseline, cmp.candidate, (*KEY_METRICS, cmp.metric)).set_index("metric")
significance = None if stats is None else stats.table[stats.table["slice"] == "all"].set_index("metric")

def headline_moves() -> dict[str, list[str]]:
    """The headline metrics whose mean (paired when the statistics hold it) reads better or worse."""
    moves: dict[str, list[str]] = {"better": [], "worse": []}
    for key in KEY_METRICS:
        paired = significance.loc[key] if significance is not None and key in significance.index else None
        delta = paired["delta"] if paired is not None else head.loc[key, "delta"]
        if missing(delta) or shown_zero(delta):
            continue
        moves[change.moved(float(delta), BY_KEY[key].higher_is_better)].append(metric_name(key))
    return {k: v for k, v in moves.items() if v}


def configuration_lines() -> None:
    changed = data.configuration_changes(cmp.suite, cmp.baseline, cmp.candidate)
    if changed.empty:
        st.caption("Configured the same: the two manifests differ only in bookkeeping (run ID, time, code "
                   "revision, notes).")
        return
    st.markdown(f"**What was configured differently** ({len(changed)} manifest "
                f"field{'' if len(changed) == 1 else 's'}; run ID, time, code revision and notes left out)")
    table(changed, key="w_config_changes", placeholder="", height="content", column_config={
        "field": st.column_config.TextColumn("manifest field"),
        "baseline": st.column_config.TextColumn("baseline", width="medium"),
        "candidate": st.column_config.TextColumn("candidate", width="medium")})


aligned = data.alignment_facts(cmp.suite, cmp.baseline, cmp.candidate)
with st.container(border=True, key="verdict"):
    if live is not None:
        source, gates, verdict_now = "Live verdict", [g.to_dict() for g in live.gates], live.verdict
        under = (f"The policy {stats.policy.name} applied now to this database, not recorded")
    elif recorded is not None:
        source, gates, verdict_now = "Recorded verdict", recorded["gates"], recorded["verdict"]
        under = (f"The verdict recorded {moment(recorded['created_at'])} under policy {recorded['policy_name']}; "
                 "no policy file is evaluated live")
    else:
        source, gates, verdict_now, under = None, [], None, None
    if verdict_now is None:
        st.markdown("## Release verdict: :gray[none]")
        st.caption("No policy file was given and no verdict is recorded for these runs: see Details for the "
                   "command that records one.")
    else:
        lines = verdict_words.gate_lines(gates)
        failed = [line for line in lines if line.outcome == "fail"]
        unsure = [line for line in lines if line.inconclusive]
        passed_now = str(verdict_now) == "pass"
        mark = verdict_words.VERDICT_MARKS.get(str(verdict_now), verdict_words.VERDICT_MARKS["fail"])
        st.markdown(f"## Release verdict: {mark}")
        st.caption(escape(f"{source}. {under}; {len(failed)} of {len(lines)} gates failed"
                          + (f", {len(unsure)} could not tell." if unsure else ".")))
        if unsure and not failed:
            # inconclusive: no gate failed, but these gates' questions could not detect a drop of their margin
            st.markdown(escape(
                f"No gate fails, but {len(unsure)} could not tell: their questions cannot detect a drop of their "
                "margin with the policy's min_power. Each says how many questions would make it conclusive at "
                "the observed spread (ragslice plan prints the same)."))
        moves = headline_moves()
        if not passed_now and moves.get("better"):
            st.markdown(escape(
                f"Better on average ({', '.join(moves['better'])}), yet FAIL: the gates check slices and single "
                "questions, which an average over every question can hide. The failing gates say where."))
        elif passed_now and moves.get("worse"):
            st.markdown(escape(
                f"Worse on average ({', '.join(moves['worse'])}), yet PASS: no gate of the policy bounds these "
                "averages."))

        def gate_row(i: int, line: verdict_words.GateLine) -> None:
            with st.container(key=f"gate_{i}"):
                # the link's column holds its label whole at 1024 px (a card 530 px wide): never clipped
                left, right = st.columns([4, 1], vertical_alignment="center")
                icon = verdict_words.GATE_ICONS.get(line.outcome, verdict_words.GATE_ICONS["fail"])
                text = escape(line.sentence)
                shown = {"fail": f":red[{text}]", "inconclusive": f":orange[{text}]"}.get(line.outcome, text)
                left.markdown(f"{icon} **{escape(line.name)}**: " + shown)
                right.page_link(line.page, label="Questions" if line.page == verdict_words.PAGE_OF_QUESTIONS
                                else "Runs", help=line.link_label,
                                query_params=cmp.link_params(**line.params) if line.page != verdict_words.PAGE_OF_RUNS
                                else cmp.link_params())

        for i, line in enumerate(failed + unsure):
            gate_row(i, line)
        passing = lines[len(failed) + len(unsure):]
        if passing:
            with st.expander(f"{len(passing)} gate{'' if len(passing) == 1 else 's'} passed",
                             expanded=not failed and not unsure):
                for i, line in enumerate(passing, start=len(failed) + len(unsure)):
                    gate_row(i, line)
    resting = [f"{aligned[role]['unreviewed_claims']} of the {role}'s" for role in ("baseline", "candidate")
               if aligned is not None and aligned[role]["unreviewed_claims"]]
    if resting:  # the verdict reads these claims as an automatic aligner decided them
        st.markdown(escape(f"Resting on a judge: {' and '.join(resting)} claims stand on unreviewed automatic "
                           "alignments (Free-text answers below; the Labels page reviews them)."),
                    help="A judge or the lexical aligner decided which expected claim each answer sentence states; "
                         "no reviewer checked these. Their agreement with reviewers and the Support corrected by a "
                         "review sample are below the card.")
    configuration_lines()

notices = list(cmp.compat.warnings)
if recorded is not None and live is not None and stats.policy.sha256 != recorded["policy_hash"]:
    notices.append(f"The policy file (sha256 {stats.policy.sha256[:12]}) differs from the policy this verdict was "
                   f"recorded with (sha256 {str(recorded['policy_hash'])[:12]}).")
elif recorded is not None and live is not None and live.verdict != recorded["verdict"]:
    notices.append(f"The live verdict ({live.verdict}) differs from the recorded one ({recorded['verdict']}) under "
                   "the same policy: the data changed since.")
details = ("Details: live and recorded verdicts, policy hashes and paths, every gate's figures"
           + (f"; {len(notices)} notice{'' if len(notices) == 1 else 's'}" if notices else ""))
with st.expander(details, expanded=False):
    for notice in notices:
        say("warning", notice)
    live_column, recorded_column = st.columns(2)
    with live_column:
        st.markdown("**Live**: the policy file applied now to this database (not recorded)")
        if policy_file is None:
            st.info("No policy file was given, so nothing is evaluated live. Start the dashboard with one:")
            st.code(f"ragslice dashboard --db {file_path(data.db_path(), shell=True)} --policy policy.toml",
                    language=None)
        elif stats is None:
            say("info", f"Not evaluated: {unavailable}")
        elif stats.policy_error:
            say("error", f"The policy file {file_path(policy_file)} cannot be used:")
            st.code(stats.policy_error, language=None)
        else:
            outcome("Live verdict", live.verdict)
            failed_n = len(live.failed_gates)
            st.caption(escape(
                f"Policy {stats.policy.name} (sha256 {stats.policy.sha256[:12]}) from "
                f"{file_path(stats.policy.path)}; "
                f"{failed_n} of {len(live.gates)} gates failed. Evaluated on the current database, not recorded."
            ))
    with recorded_column:
        st.markdown("**Recorded**: the newest verdict stored for exactly these runs")
        if recorded is None:
            st.info("No verdict recorded for this comparison yet. The acceptance policy's gates are evaluated "
                    "(with paired tests) and recorded by:")
            st.code(f"ragslice compare {shlex.quote(cmp.baseline.name)} {shlex.quote(cmp.candidate.name)} "
                    f"--db {file_path(data.db_path(), shell=True)} "
                    f"--policy {file_path(policy_file, shell=True) if policy_file else 'policy.toml'}", language=None)
        else:
            outcome("Recorded verdict", recorded["verdict"])
            st.caption(escape(
                f"Policy {recorded['policy_name']} (sha256 {str(recorded['policy_hash'])[:12]}), recorded "
                f"{moment(recorded['created_at'])} for {recorded['baseline']} vs {recorded['candidate']}."
            ))
            if recorded["refreshed_after"]:
                say("warning", f"The database was refreshed at {recorded['refreshed_at']}, after this verdict: "
                               "if these runs changed, record the comparison again.")
            labels_then = recorded.get("labels_hash")
            if isinstance(labels_then, str) and labels_then != data.labels_hash(cmp.suite):
                decisions, reviewers = data.decisions_since(cmp.suite, recorded["created_at"])
                say("warning", f"The labels changed since this verdict: {decisions} review decision"
                               f"{'' if decisions == 1 else 's'} since, by {reviewers} reviewer"
                               f"{'' if reviewers == 1 else 's'}. Record the comparison again; see what the "
                               "relabelling changed below.")
            if (not missing(recorded["verdict_without_disputed"])
                    and recorded["verdict_without_disputed"] != recorded["verdict"]):
                say("warning", f"Without the disputed questions the recorded verdict would be "
                               f"{recorded['verdict_without_disputed']}.")

    if live is not None:
        st.markdown("**Gates, live**")
        if live.disputed is not None and live.disputed.verdict != live.verdict:
            say("warning", f"Without the {live.disputed.n_disputed} disputed questions the verdict would be "
                           f"{live.disputed.verdict}: " + "; ".join(live.disputed.differences))
        for warning in live.warnings:
            say("warning", sentence(warning))
        table(with_outcomes(data.gates_frame(live.gates), live.gates), key="w_live_gates", placeholder="",
              height="content", column_config=GATE_COLUMNS)
    if recorded is not None:
        st.markdown("**Gates as recorded** " + escape(moment(recorded["created_at"])))
        for warning in recorded["warnings"]:
            say("warning", sentence(warning))
        table(with_outcomes(data.gates_frame(recorded["gates"]), recorded["gates"]), key="w_gates", placeholder="",
              height="content", column_config=GATE_COLUMNS)
    history = data.verdict_history(cmp.suite, cmp.baseline, cmp.candidate)
    st.markdown(f"**Verdict history**: {len(history)} recorded on this suite")
    if history.empty:
        st.caption("No verdict was recorded on this suite yet (`ragslice compare --policy` records one).")
    else:
        table(history.assign(policy_hash=history["policy_hash"].str.slice(0, 12)), key="w_history",
              placeholder="", height="content", column_config={
                  "created_at": st.column_config.DatetimeColumn("recorded (UTC)"),
                  "policy_hash": st.column_config.TextColumn("policy sha256"),
                  "verdict_without_disputed": st.column_config.TextColumn("without disputed"),
                  "this_comparison": st.column_config.CheckboxColumn("these runs"),
              })

gap = None if stats is None else label_gap_warning(stats.table)
if gap:
    say("warning", gap[0].upper() + gap[1:] + ".")

if aligned is not None:
    unreviewed = {role: aligned[role]["unreviewed_claims"] for role in ("baseline", "candidate")}
    with st.expander(f"Free-text answers: {unreviewed['baseline']} of the baseline's and {unreviewed['candidate']} "
                     "of the candidate's claims rest on unreviewed automatic alignments"):
        st.caption("Claims made of answer sentences, by the least reviewed aligner behind each (recorded: the run "
                   "gave claims itself), and each automatic aligner's agreement with the reviewers on the sentences "
                   "both decided. Review sentences on the Labels page (review mode) to measure and replace them.")
        by_aligner = pd.DataFrame([{"side": role, **aligned[role]["claims"]} for role in ("baseline", "candidate")])
        table(by_aligner.fillna(0), key="w_claims_by_aligner", placeholder="0")
        resting = pd.DataFrame(aligned["resting"], columns=["aligner", "kappa", "claims"])
        if not resting.empty:
            table(resting, key="w_resting", placeholder="not measured",
                  column_config={"kappa": st.column_config.NumberColumn("measured kappa", format="%.3f"),
                                 "claims": st.column_config.NumberColumn("claims resting on it")})
        measured = pd.DataFrame(aligned["agreement"], columns=["aligner", "decided_by", "n", "kappa", "kappa_low",
                                                               "kappa_high"])
        if not measured.empty:
            st.caption("Each aligner's kappa with its 95% bootstrap interval over the n sentences it and a reviewer "
                       "both decided (empty below 10 sentences): a policy's alignment_kappa_bound = \"lower\" judges "
                       "the interval's lower end.")
            table(measured, key="w_kappa_intervals", placeholder="n/a",
                  column_config={"kappa": st.column_config.NumberColumn("kappa", format="%.3f"), **KAPPA_INTERVAL})
        by_slice = pd.DataFrame(aligned.get("agreement_by_slice", []),
                                columns=["aligner", "decided_by", "slice", "n", "agreed", "kappa", "reason"])
        if not by_slice.empty:
            # An aligner can be good on answers and poor on refusals: its kappa per slice (n/a with the reason).
            st.caption("Each aligner's kappa on answerable and unanswerable questions and on each question type, "
                       "over the sentences it and a reviewer both decided there (n/a below 10 sentences or with "
                       "one label only).")
            table(by_slice, key="w_kappa_by_slice", placeholder="n/a",
                  column_config={"kappa": st.column_config.NumberColumn("kappa", format="%.3f"),
                                 "reason": st.column_config.TextColumn("why n/a")})
        grades = pd.DataFrame(aligned.get("support_agreement", []),
                              columns=["aligner", "decided_by", "n", "agreed", "weighted_kappa", "kappa_low",
                                       "kappa_high"])
        if not grades.empty:
            st.caption("Each aligner's grade of each citation (full, partial or none) against the reviewed support "
                       "labels: citations graded as the labels grade them, and the quadratic-weighted kappa with its "
                       "95% bootstrap interval (the lexical aligner never says full: shared words cannot tell).")
            table(grades, key="w_support_grades", placeholder="n/a",
                  column_config={"n": st.column_config.NumberColumn("citations"),
                                 "agreed": st.column_config.NumberColumn("as labelled"),
                                 "weighted_kappa": st.column_config.NumberColumn("weighted kappa", format="%.3f"),
                                 **KAPPA_INTERVAL})
        itself = pd.DataFrame(aligned.get("self_agreement", []),
                              columns=["judge", "sampled", "repeats", "agreed", "share", "kappa"])
        costs = pd.DataFrame(aligned.get("judge_costs", []),
                             columns=["run_id", "judge", "requests", "reported", "prompt_tokens", "completion_tokens",
                                      "cost_usd", "latency_p50_ms", "latency_p95_ms"])
        if not itself.empty or not costs.empty:
            st.caption("What each judge costs and how much it varies: asked again about a seeded sample of the "
                       "sentences it answered (ragslice align --repeat N --sample M), how many answers equal its "
                       "first; and per run, the requests its sentences put to the judge with the tokens, cost and "
                       "latency its answers report (blank: not reported).")
        if not itself.empty:
            table(itself, key="w_self_agreement", placeholder="n/a",
                  column_config={"sampled": st.column_config.NumberColumn("sentences asked again"),
                                 "repeats": st.column_config.NumberColumn("repeated answers"),
                                 "agreed": st.column_config.NumberColumn("equal to the first"),
                                 "share": st.column_config.NumberColumn("share", format="%.3f"),
                                 "kappa": st.column_config.NumberColumn("kappa", format="%.3f")})
        if not costs.empty:
            table(costs, key="w_judge_costs", placeholder="",
                  column_config={"reported": st.column_config.NumberColumn("reporting cost"),
                                 "cost_usd": st.column_config.NumberColumn("cost (USD)", format="%.4f"),
                                 "latency_p50_ms": st.column_config.NumberColumn("latency p50 (ms)", format="%.0f"),
                                 "latency_p95_ms": st.column_config.NumberColumn("latency p95 (ms)", format="%.0f")})

corrected = data.corrected_estimates(cmp.suite, cmp.baseline, cmp.candidate)
if not corrected.empty:
    # Figures resting on a judge, three ways: as the judge aligned the sentences, corrected by a review sample
    # (with its interval) and from the reviewed items alone; scoring.decide.corrected computes them.
    only_support = set(corrected["metric"]) == {"Support"}
    with st.expander(("Support corrected by the review sample" if only_support else
                      "Support, Coverage and abstention corrected by the review samples")
                     + ": judge-only, corrected (95% interval) and reviewed-only"):
        st.caption("Pooled Support on all questions of a side whose sentences rest on an automatic alignment"
                   + ("" if only_support else ", and pooled Coverage and the abstention rates of a side whose "
                      "answers a question sample covers") + ". Judge-only takes every such sentence as the judge "
                   "aligned it; corrected adds what a random sample, reviewed, shows the judge gets wrong "
                   "(prediction-powered inference, docs/statistics.md); reviewed-only uses the reviewed items "
                   "alone. Review the rest of the sample, in queue order, on the Labels page to narrow the "
                   "interval. Coverage and the abstention rates are corrected by a sample of whole answers "
                   "(ragslice sample --unit question).")
        table(corrected, key="w_corrected_support", placeholder="n/a",
              column_config={"judge_only": st.column_config.NumberColumn("judge-only", format="%.3f"),
                             "corrected": st.column_config.NumberColumn("corrected", format="%.3f"),
                             "low": st.column_config.NumberColumn("95% low", format="%.3f"),
                             "high": st.column_config.NumberColumn("95% high", format="%.3f"),
                             "reviewed_only": st.column_config.NumberColumn("reviewed-only", format="%.3f"),
                             "n_sampled": st.column_config.NumberColumn("sampled"),
                             "n_reviewed": st.column_config.NumberColumn("reviewed"),
                             "n_judged": st.column_config.NumberColumn("judged items"),
                             "reason": st.column_config.TextColumn("why no interval")})

with st.expander("What the relabelling changed: this comparison under the suite's own labels and under the "
                 "reviewed ones"):
    changes = data.reviews(cmp.suite)
    if changes.empty:
        st.caption("No reviewer changed a label of this suite.")
    else:
        try:
            relabel = data.relabelling(cmp.baseline, cmp.candidate)
        except ValidationError as error:  # a comparison scoring refuses (e.g. the sides share runs): said
            relabel, why = None, str(error)
        if relabel is None:
            say("info", f"Not available: {why}")
        else:
            st.caption(escape(f"{len(relabel.changes)} labels changed by review, on "
                              f"{relabel.changes['question_id'].nunique()} questions. Each row: a changed question's "
                              "value of a metric under the suite's labels and under the reviewed labels."))
            if stats is not None and stats.verdict is not None:
                before, after = relabel.unreviewed.verdict.verdict, relabel.reviewed.verdict.verdict
                moved = relabel.gates_that_move()
                say("warning" if before != after else "info",
                    f"Verdict under the suite's labels: {before.upper()}; under the reviewed labels: {after.upper()}"
                    + (f" (gates that move: {', '.join(moved)})" if moved else " (no gate moves)"))
            values = relabel.values.assign(metric=relabel.values["metric"].map(metric_name))
            table(values, key="w_relabel", placeholder="n/a", column_config={
                c: st.column_config.NumberColumn(c.replace("_", " "), format="%.3f")
                for c in ("baseline_unreviewed", "baseline", "candidate_unreviewed", "candidate")})

st.subheader("Headline metrics")
st.caption(
    "Paired: each tile compares the two sides on the questions both of them score (n/a excluded on either side), "
    "as the Statistics page does. The tile shows the candidate's mean over those questions and the mean paired "
    f"delta; below it the baseline's mean, the paired n, the {stats.confidence:.0%} bootstrap interval and the "
    f"Holm-adjusted p-value (significant when below {ALPHA:g}); then each side's own macro mean over every "
    "question it scores (unpaired)."
    if stats is not None else
    "Unpaired: each tile shows each side's own macro mean over the questions it scores, and their difference; "
    "the paired comparison is unavailable (see the note)."
)
if unavailable:
    say("info", f"No paired comparison: {unavailable}")


def tile(key: str) -> None:
    """One headline tile: paired when the statistics hold the metric, else unpaired and labelled so."""
    row = head.loc[key]
    paired = significance.loc[key] if significance is not None and key in significance.index else None
    value, delta = (paired["candidate"], paired["delta"]) if paired is not None else (row["candidate"], row["delta"])
    # coloured only when significant (scoring.decide.change.strength): a change that is not reads as neutral
    called = None if paired is None or missing(paired["p_holm"]) else bool(significant(paired["p_holm"], ALPHA))
    st.metric(
        metric_name(key) + ("" if paired is not None else " (unpaired)"),
        number(value),
        **delta_look(delta, BY_KEY[key].higher_is_better, significant=called),
        help=metric_help(key),
        border=True,
    )
    if paired is not None:
        p = paired["p_holm"]
        judged = "n/a" if missing(p) else ("significant" if significant(p, ALPHA) else "not significant")
        st.caption(escape(
            f"paired n {int(paired['n'])} · baseline {number(paired['baseline'])} · CI [{signed(paired['ci_low'])}, "
            f"{signed(paired['ci_high'])}] · Holm p {number(p)} · {judged}"))
    elif significance is not None:
        st.caption("paired n 0: no question is scored on both sides, no paired delta")
    n = {c: int(row[c]) for c in ("n_baseline", "n_candidate", "na_baseline", "na_candidate", "improved", "regressed")}
    st.caption(escape(
        f"unpaired macro: baseline {number(row['baseline'])} (n {n['n_baseline']}, n/a {n['na_baseline']}) · "
        f"candidate {number(row['candidate'])} (n {n['n_candidate']}, n/a {n['na_candidate']}) · "
        f"{n['improved']} improved, {n['regressed']} regressed"))


TILES = KEY_METRICS if cmp.metric in KEY_METRICS else (*KEY_METRICS, cmp.metric)
for column, key in zip(st.columns(len(TILES)), TILES):
    with column:
        tile(key)

st.subheader(f"Questions by status on {metric_name(cmp.metric)}")
row = head.loc[cmp.metric]
counts = st.columns(len(data.STATUSES))
for column, status in zip(counts, data.STATUSES):
    column.metric(status, int(row[status]), border=True)
st.caption("Status per question: missing (a side has no record) > failed (a record has an error) > n/a (a value "
           "is n/a) > improved / regressed (in the metric's direction) > unchanged.")

st.subheader(f"Worst regressions on {metric_name(cmp.metric)}")
worst = data.worst_regressions(cmp.suite, cmp.baseline, cmp.candidate, cmp.metric, limit=WORST)
if worst.rows.empty:
    st.info("No question regressed on this metric.")
else:
    listed = (f"the {WORST} first of the {worst.matched} questions" if worst.matched > WORST else
              f"the {worst.matched} question{'' if worst.matched == 1 else 's'}")
    st.caption(f"Critical questions first, then by size of the drop: {listed} that scored worse (regressed, or "
               "scored lower because a record is missing or failed).")
    for i, r in enumerate(worst.rows.itertuples(index=False)):
        with st.container(border=True, key=f"worst_{i}"):
            left, middle, right = st.columns([7, 2, 2], vertical_alignment="center")
            left.text(("CRITICAL  " if r.critical else "") + f"{r.question_id}  ·  {r.type}  ·  {r.status}")
            left.text(r.text)
            middle.text(f"{number(r.baseline)} → {number(r.candidate)}\n({signed(r.delta)})")
            right.page_link("views/question_detail.py", label="Question detail",
                            query_params=cmp.link_params(q=str(r.question_id)))

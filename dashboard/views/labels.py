"""Which documents should a reviewer judge next, and where do reviewers disagree? The queue of unjudged
documents the two sides ranked (review mode only), reviewers' disagreements and their agreement."""
import pandas as pd
import streamlit as st

from dashboard import data, selection
from dashboard.display import escape, items, say, table
from dashboard.review import decision_form, grade_words, refresh_progress, save
from scoring.decide.agreement import reviewer_alpha

QUEUE = 10  # unjudged documents shown at once

st.title("Labels")
cmp = selection.comparison(with_metric=False)
selection.sides_caption(cmp)
mode = data.review_mode()
if mode is None:
    say("info", "The dashboard is read-only. Start it in review mode to record label decisions: ragslice dashboard "
                "--db DB --workspace WORKSPACE --reviewer NAME (or ragslice demo --reviewer NAME).")
    st.stop()
workspace, reviewer = mode
st.caption(escape(f"Reviewing as {reviewer}: each decision is appended to "
                  f"{workspace / 'suites' / cmp.suite / 'reviews' / (reviewer + '.jsonl')} and the database is "
                  "refreshed in the background; the suite's own files are never rewritten."))
refresh_progress()

st.subheader("Documents nobody judged")
st.caption("Documents the baseline or the candidate ranked within its k that carry no label for the question: they "
           "count as not relevant, so a retriever that finds them can read as worse than it is. Most influential "
           "first: ranked by both sides, then at a better rank, then on questions whose outcome differs.")
search = selection.text("Find a question or a document in the queue", param="pool_search", where=st,
                        placeholder="part of a question's ID or text, or of a document ID",
                        help=f"The queue shows {QUEUE} documents at once; this finds any of them.")
skipped = st.session_state.setdefault("skipped", set())
decided = st.session_state.setdefault("decided", set())  # recorded here, maybe not yet refreshed
hidden = skipped | decided
queue = data.pool(cmp.suite, cmp.baseline, cmp.candidate, limit=QUEUE + len(hidden), search=search)
queue = queue[[(q, d) not in hidden for q, d in zip(queue["question_id"], queue["doc_id"])]].head(QUEUE)
grades = data.grade_scale(cmp.suite)
if queue.empty and search.strip():
    say("info", f"No unjudged document of these runs matches {search.strip()!r}.")
elif queue.empty:
    st.success("Every document the two sides ranked within k is judged.")
for i, row in enumerate(queue.itertuples(index=False)):
    with st.container(border=True, key=f"judge_{i}"):
        st.text(f"{row.question_id}: {row.question}")
        st.text(f"document {row.doc_id}" + (f": {row.title}" if isinstance(row.title, str) else ""))
        st.code(str(row.text) if isinstance(row.text, str) else "(no text)", language=None, wrap_lines=True)
        where = data.rankings_of(cmp.suite, [*cmp.baseline.run_ids, *cmp.candidate.run_ids], row.question_id,
                                 row.doc_id)
        st.caption(escape("ranked by " + ", ".join(f"{r} at {k}" for r, k in zip(where["run_id"], where["rank"]))))
        labelled, _ = data.question_labels(cmp.suite, row.question_id)
        st.caption(escape("labels of the question: " + (", ".join(
            f"{d} {g}" for d, g in zip(labelled["doc_id"], labelled["grade"])) or "none")))
        grade_col, note_col, save_col, skip_col = st.columns([2, 5, 1, 1], vertical_alignment="bottom")
        grade = grade_col.selectbox("Grade", grades, key=f"w_grade_{i}", index=None, format_func=grade_words,
                                    placeholder="Choose a grade")
        note = note_col.text_input("Note (optional)", key=f"w_note_{i}")
        if save_col.button("Save", key=f"w_save_{i}"):
            if grade is None:
                say("warning", "Not recorded: choose a grade first.")
            else:
                decision = {"kind": "relevance", "question_id": row.question_id, "doc_id": row.doc_id,
                            "grade": int(grade), "note": note or None}
                if save(cmp.suite, decision, f"{row.doc_id} graded {grade} for {row.question_id}"):
                    decided.add((row.question_id, row.doc_id))
                    st.rerun()
        if skip_col.button("Skip", key=f"w_skip_{i}"):
            skipped.add((row.question_id, row.doc_id))
            st.rerun()

st.subheader("Answer sentences to align")
# A review sample's progress: how much of it is reviewed, and what the rest would buy (scoring computes both).
for progress in data.sample_progress(cmp.suite, cmp.baseline, cmp.candidate):
    now, later = progress["half_width"], progress["at_sample"]
    what = "sentences" if progress["unit"] == "sentence" else "answers"
    key = f"sample_progress_{progress['side']}" + ("" if progress["unit"] == "sentence" else "_question")
    st.container(key=key).markdown(escape(
        f"Review sample {progress['sample']} ({progress['side']}): {progress['n_reviewed']} of "
        f"{progress['n_sampled']} sampled {what} reviewed; {progress['metric']} "
        + (f"+/-{now:.3f} now" if now is not None else "has no interval yet")
        + (f", about +/-{later:.3f} at {progress['n_sampled']}" if later is not None else "")
        + ". Review its " + ("sentences" if what == "sentences" else "answers, every sentence of each,")
        + " in queue order (ragslice sample --status lists them)."))
sentences = data.alignment_queue(cmp.suite, cmp.baseline, cmp.candidate, limit=QUEUE + len(hidden))
sentences = sentences[[(q, n) not in hidden for q, n in zip(sentences["question_id"], sentences["norm"])]].head(QUEUE)
if sentences.empty:
    st.caption("No answer sentence of these runs waits for a reviewer: every one was aligned by a reviewer, or no "
               "run answers in sentences.")
else:
    st.caption("Sentences of free-text answers that only an automatic aligner decided: a review sample's first, in "
               "its order (your decision is marked as the sample's), then those the aligners disagree on, then the "
               "least confident. Your decision serves every run that wrote the same sentence, and the agreement of "
               "each aligner with the reviewers is measured on these decisions.")
for i, row in enumerate(sentences.itertuples(index=False)):
    with st.container(border=True, key=f"align_{i}"):
        st.text(f"{row.question_id}: {row.question}")
        st.code(str(row.sentence), language=None, wrap_lines=True)
        st.caption(escape(f"cites: {', '.join(items(row.citations) or []) or 'nothing'}; written by "
                          f"{', '.join(items(row.runs) or [])}; aligners said: {'; '.join(items(row.opinions) or [])}"
                          + (" (they disagree)" if row.aligners_disagree else "")
                          + (f"; item {int(row.sample_position)} of review sample {row.sample}"
                             if isinstance(row.sample, str) else "")))
        claims = data.question_claims(cmp.suite, row.question_id)
        propositions = dict(zip(claims["claim_id"], claims["proposition"]))
        outcome_col, claims_col, save_col = st.columns([2, 5, 1], vertical_alignment="bottom")
        outcome = outcome_col.selectbox("The sentence", ["states claims", "unlabelled", "no_claim"], index=None,
                                        placeholder="Choose what it states",
                                        key=f"w_align_outcome_{i}", format_func=lambda o: {
                                            "states claims": "states expected claims",
                                            "unlabelled": "states something no claim holds",
                                            "no_claim": "states nothing (not a claim)"}[o])
        chosen = claims_col.multiselect("Expected claims it states", list(propositions), key=f"w_align_claims_{i}",
                                        format_func=lambda c: f"{c}: {propositions.get(c) or ''}"[:120])
        if save_col.button("Save", key=f"w_align_save_{i}"):
            if outcome is None:
                say("warning", "Not recorded: choose what the sentence states first.")
            else:
                aligned = chosen if outcome == "states claims" else outcome
                decision = {"kind": "alignment", "question_id": row.question_id, "sentence": str(row.sentence),
                            "claim_ids": aligned, **({"sample": row.sample} if isinstance(row.sample, str) else {})}
                if save(cmp.suite, decision, f"the alignment of a sentence of {row.question_id}"):
                    decided.add((row.question_id, row.norm))
                    st.rerun()

st.subheader("Agreement of the automatic aligners with the reviewers")
aligned = data.alignment_facts(cmp.suite, cmp.baseline, cmp.candidate)
if aligned is None or not aligned["agreement"]:
    st.caption("No automatic aligner has decided a sentence a reviewer also decided.")
else:
    st.caption("Over the sentences a reviewer aligned: how many each automatic aligner decided the same way, and "
               "Cohen's kappa (empty: one label only on both sides, so chance explains the agreement) with its 95% "
               "bootstrap interval over the sentences (empty below 10 sentences).")
    table(pd.DataFrame(aligned["agreement"]).drop(columns="confusion"), key="w_aligner_agreement", placeholder="n/a",
          column_config={"accuracy": st.column_config.NumberColumn("agree", format="%.3f"),
                         "kappa": st.column_config.NumberColumn("kappa", format="%.3f"),
                         "kappa_low": st.column_config.NumberColumn("kappa 95% low", format="%.3f"),
                         "kappa_high": st.column_config.NumberColumn("kappa 95% high", format="%.3f")})

st.subheader("Disagreements between reviewers")
disputed = data.disputes(cmp.suite)
if not disputed.empty:
    st.caption("Questions a reviewer disputed: each is marked disputed, and the release review also gives the "
               "verdict without them. A later decision does not withdraw a dispute; removing its line from the "
               "reviewer's file does.")
    table(disputed[["question_id", "reviewer", "note", "decided_at"]], key="w_disputes", placeholder="")
disagree = data.disagreements(cmp.suite)
if disagree.empty:
    st.caption("No label has reviewers whose latest decisions differ.")
else:
    st.caption("A label whose reviewers' latest decisions differ keeps the suite's value and marks its question "
               "disputed until they agree: record your decision again (here or on Question detail) to resolve it.")
    table(disagree[["question_id", "kind", "doc_id", "claim_id", "reviewer", "grade", "support_grade", "note",
                    "decided_at"]], key="w_disagreements", placeholder="")
    mine = disagree[disagree["reviewer"] == reviewer]
    for i, row in enumerate(mine.itertuples(index=False)):
        others = disagree[(disagree["question_id"] == row.question_id) & (disagree["doc_id"] == row.doc_id)
                          & (disagree["kind"] == row.kind) & (disagree["reviewer"] != reviewer)]
        for j, other in enumerate(others.itertuples(index=False)):
            value = other.grade if row.kind == "relevance" else other.support_grade
            if st.button(escape(f"Agree with {other.reviewer} on {row.question_id} / {row.doc_id}: {value}"),
                         key=f"w_agree_{i}_{j}"):
                fields = {"kind": row.kind, "question_id": row.question_id, "doc_id": row.doc_id,
                          "note": f"agreed with {other.reviewer}"}
                fields |= {"grade": int(value)} if row.kind == "relevance" else {"claim_id": row.claim_id,
                                                                                 "supports": value}
                if save(cmp.suite, fields, None):
                    st.rerun()

st.subheader("Agreement between reviewers")
agreed = data.reviewer_agreement(cmp.suite)
if agreed.empty:
    st.caption("No label was decided by two reviewers yet.")
else:
    st.caption("Where two reviewers decided the same label, each on their latest decision: n labels, the share "
               "they agree on, and Cohen's kappa (agreement beyond what each reviewer's own label frequencies would "
               "give by chance; empty when they used one label only) with its 95% bootstrap interval over the labels "
               "(empty below 10 labels); for relevance grades also the quadratic-weighted kappa, where a grade 3 "
               "against a 2 disagrees less than a 3 against a 0.")
    table(agreed, key="w_agreement", placeholder="n/a", column_config={
        "accuracy": st.column_config.NumberColumn("agree", format="%.3f"),
        "kappa": st.column_config.NumberColumn("kappa", format="%.3f"),
        "kappa_low": st.column_config.NumberColumn("kappa 95% low", format="%.3f"),
        "kappa_high": st.column_config.NumberColumn("kappa 95% high", format="%.3f"),
        "weighted_kappa": st.column_config.NumberColumn("weighted kappa", format="%.3f")})
    alpha = reviewer_alpha(data.reviews(cmp.suite))
    if not alpha.empty:
        st.caption("Where more than two reviewers decided labels: Krippendorff's alpha over all of them, on the "
                   "labels at least two decided (ordinal for grades, nominal for support; 1 is full agreement, 0 "
                   "what chance gives).")
        table(alpha, key="w_alpha", placeholder="n/a",
              column_config={"alpha": st.column_config.NumberColumn("Krippendorff's alpha", format="%.3f")})

with st.expander("Record another decision on a question"):
    decision_form(cmp.suite, key="labels")

st.subheader("Decisions")
table(data.reviews(cmp.suite), key="w_reviews", placeholder="")

"""What exactly happened on this question? Labels, then baseline and candidate side by side."""
import streamlit as st

from dashboard import data, selection
from dashboard.display import (RANKING_MARKS_HELP, escape, grade_text, items, metric_name, missing, number,
                               ranking_marks, say, table, wrapped_table)
from dashboard.review import decision_form, refresh_progress
from scoring.decide.diagnosis import KINDS, REASON_WORDS, reason_words

st.title("Question detail")
cmp = selection.comparison()
selection.sides_caption(cmp)
selection.show_compatibility(cmp, stop_on_refusal=False)

search = selection.text("Find a question (ID or text)", param="qsearch", where=st,
                        placeholder="part of an ID or of the question's text")
choices = data.question_choices(cmp.suite, search)
texts = dict(zip(choices["question_id"], choices["text"]))
requested = selection.current("q")
if requested and str(requested) not in texts and data.question(cmp.suite, str(requested)) is not None:
    texts = {str(requested): data.question(cmp.suite, str(requested))["text"], **texts}
if not texts:
    say("info", f"No question of suite {cmp.suite} contains {search!r}.")
    st.stop()
if len(choices) >= data.QUESTION_CHOICES:
    st.caption(f"The first {data.QUESTION_CHOICES} questions in suite order are listed; type part of an ID or "
               "text to find another.")
qid = selection.select(
    "Question", list(texts), param="q", where=st,
    format_func=lambda q: f"{q}: {str(texts.get(q, ''))[:90]}",
)
q = data.question(cmp.suite, qid)

with st.container(border=True, key="question"):
    st.text(q["text"])
    tags = ", ".join(items(q["tags"]) or []) or "none"
    caller = items(q["caller"])
    caller = "unrestricted" if caller is None else ", ".join(caller) or "(no group)"
    st.text(
        f"id: {qid}   type: {q['type']}   split: {q['split']}   critical: {'yes' if q['critical'] else 'no'}   "
        f"answerable: {'yes' if q['answerable'] else 'no'}\ntags: {tags}   caller groups: {caller}"
    )
    if not missing(q["disputed"]):
        st.caption("Disputed label; the reviewer's note:")
        st.text(q["disputed"])

# Filled once the repeats to show are known (below): which of the two failures happened, per side.
diagnosis_box = st.container(border=True, key="diagnosis")

if data.review_mode() is not None:
    with st.expander("Review this question's labels: correct a grade or a support, or dispute them"):
        st.caption("Your decision is appended to your review file; the database is refreshed in the background "
                   "and this page shows the new numbers when the refresh lands.")
        refresh_progress()
        decision_form(cmp.suite, key="detail", question_id=qid)

docs, expected = data.question_labels(cmp.suite, qid)
relevant, not_relevant = docs[docs["grade"] > 0], docs[docs["grade"] <= 0]
left, right = st.columns(2)
with left:
    st.subheader("Relevant documents")
    st.caption("Grade >= 1 is relevant; access lists the groups allowed to see a document (empty: public).")
    table(relevant, key="w_labels", placeholder="",
          column_config={"access": st.column_config.ListColumn("access")})
    if len(not_relevant):
        st.caption(escape(f"Judged not relevant (grade 0 or below): {len(not_relevant)} document"
                          f"{'' if len(not_relevant) == 1 else 's'}, " + ", ".join(not_relevant["doc_id"].astype(str))
                          + ". A ranked document with no label is unjudged: it counts as not relevant too."))
with right:
    st.subheader("Expected claims")
    table(expected, key="w_expected", placeholder="",
                 column_config={"docs": st.column_config.ListColumn("supporting documents"),
                                "proposition": st.column_config.TextColumn("proposition", width="large")})

st.subheader("Scores")
pair = data.question_pair(cmp.suite, cmp.baseline, cmp.candidate, qid)
pair["metric"] = pair["metric"].map(metric_name)
table(pair, key="w_pair", height="content", column_config={
    "baseline": st.column_config.NumberColumn(format="%.3f"),
    "candidate": st.column_config.NumberColumn(format="%.3f"),
    "delta": st.column_config.NumberColumn(format="%+.3f"),
})
st.caption("A group's values are the mean over its repeats; its runs are shown one at a time below.")

RETRIEVED = {
    "rank": st.column_config.NumberColumn("rank", width=48),
    "grade": st.column_config.TextColumn("grade", width=78, help="The document's label for this question (1 or "
                                         "more: relevant, a green row); unjudged: nobody labelled it, so it counts "
                                         "as not relevant until a reviewer judges it"),
    "marks": st.column_config.TextColumn("what happened to it", width=170, help=RANKING_MARKS_HELP),
    "chunk_text": st.column_config.TextColumn("chunk text", width="medium"),
}
# The rankings as shown in a half column: the flags (relevant, cited, visible, restricted, counted) stay in the
# table's data but read as one column of words, so rank, document, grade and what happened fit side by side.
RANKED_ORDER = ("rank", "chunk_id", "doc_id", "grade", "marks", "title", "doc_version", "chunk_text")
CLAIMS = {
    "text": st.column_config.TextColumn("claim", width="large"),
    "citations": st.column_config.ListColumn("citations"),
    "cited_docs": st.column_config.ListColumn("cited documents"),
    "supported": st.column_config.CheckboxColumn("supported"),
    "reasons": st.column_config.ListColumn(
        "why not supported", width="large", help="Each reason in words; the codes the database stores: "
        + "; ".join(f"{code} = {words}" for code, words in REASON_WORDS.items())),
    "aligned_by": st.column_config.TextColumn("aligned by", help="for a claim made of answer sentences: the least "
                                              "reviewed aligner behind it (human, judge or lexical)"),
}
# The claims table's columns, in order, as headed (a static table: long text wraps).
CLAIM_HEADINGS = {"claim_id": "claim", "supported": "supported", "text": "text", "reasons": "why not supported",
                  "cited_docs": "cites", "aligned_by": "aligned by"}
# Widths that keep every column in view in the page's main area at 1280 px (about 820 px); a long sentence
# is cut in its cell (a click shows it whole; the answer is shown whole above and word by word below).
SENTENCES = {
    "#": st.column_config.NumberColumn("#", width=36),
    "sentence": st.column_config.TextColumn("sentence", width=220),
    "citations": st.column_config.ListColumn("citations (visible, labelled, restricted)", width=170),
    "aligned_to": st.column_config.TextColumn("aligned to", width=100),
    "decided_by": st.column_config.TextColumn("decided by", width=100),
    "other_aligners": st.column_config.TextColumn("what the other aligners said", width=110),
    "sample": st.column_config.TextColumn("sample", width=70, help=(
        "Whether a review sample (ragslice sample) drew this sentence: 'reviewed' in that sample, or 'to review' "
        "(the Labels page queues it first); empty: not sampled. The corrected Support reads the reviewed ones.")),
}

every_run = list(dict.fromkeys([*cmp.baseline.run_ids, *cmp.candidate.run_ids]))
cases = data.diagnoses(cmp.suite, every_run, qid)


def worst_repeat(side: data.Side) -> str:
    """The repeat to show first: when the repeats' cases differ or one failed, the worst of them
    (`scoring.decide.diagnosis.KINDS` order, then repeat order); else the first."""
    kinds = [cases[r].kind for r in side.run_ids]
    if len(set(kinds)) == 1 and kinds[0] != "failed":
        return side.run_ids[0]
    return min(side.run_ids, key=lambda r: (KINDS.index(cases[r].kind), side.run_ids.index(r)))


shown_runs = {}
for role, side in (("baseline", cmp.baseline), ("candidate", cmp.candidate)):
    shown_runs[role] = side.run_ids[0]
columns = st.columns(2)
for column, role, side in zip(columns, ("baseline", "candidate"), (cmp.baseline, cmp.candidate)):
    with column:
        st.subheader(role.capitalize())
        if side.kind == "group":
            differ = len({cases[r].kind for r in side.run_ids}) > 1
            shown_runs[role] = selection.select(
                "Repeat to show", list(side.run_ids), param=f"{role}_run", where=st, default=worst_repeat(side),
                format_func=lambda r: f"{r}: {cases[r].headline.lower()}" + (" (differs)" if differ else ""),
                help="A group's runs are shown one at a time; the scores above are their mean. When the repeats "
                     "differ, the worst one is shown first.")
evidence = data.question_runs(cmp.suite, list(shown_runs.values()), qid)

MARKS = {"failed": (st.warning, ":material/error:"), "disclosure": (st.error, ":material/lock_open:"),
         "retrieval": (st.error, ":material/search_off:"), "answer": (st.error, ":material/rule:"),
         "ok": (st.success, ":material/check_circle:")}
with diagnosis_box:
    for role in ("candidate", "baseline"):
        case = cases[shown_runs[role]]
        box, icon = MARKS[case.kind]
        box(f"**{escape(role.capitalize())} {escape(shown_runs[role])}: {escape(case.headline)}**: "
            f"{escape(case.detail)}", icon=icon)
    st.caption("What a release gate can fail on, worst first: the record failed (nothing else is judged), a "
               "document the caller may not see was delivered or cited, the retriever missed the evidence, or the "
               "answer misused the evidence it got (declined it, or answered a question the corpus cannot answer). "
               "Relevant rows are green and cited ones amber in the rankings below.")


def marked_rows(frame):
    """The rankings with relevant rows green and cited ones amber (green and bold when both)."""
    def paint(row):
        relevant, cited = bool(row.get("relevant")), bool(row.get("cited"))
        style = ("background-color: #c8e6c9; font-weight: 600" if relevant and cited else
                 "background-color: #c8e6c9" if relevant else "background-color: #ffe0b2" if cited else "")
        return [style] * len(row)
    return frame.style.apply(paint, axis=1) if len(frame) else frame
sentences = data.answer_sentences(cmp.suite, list(shown_runs.values()), qid)
for column, role in zip(columns, ("baseline", "candidate")):
    with column:
        run_id = shown_runs[role]
        st.text(f"run: {run_id}")
        shown = evidence[run_id]
        record, scores = shown["record"], shown["scores"]
        if scores is not None:
            st.text(f"status: {scores['status']}   k: {scores['k']}")
        if record is None:
            say("warning", "No record: the run has no output for this question (scored as a failure).")
            continue
        st.text(f"latency: {number(record['latency_ms'], 0)} ms   cost: {number(record['cost_usd'], 5)} USD   "
                f"records line: {record['line']}")
        if not missing(record["error"]):
            st.caption("Error")
            st.code(str(record["error"]), language=None, wrap_lines=True)
        st.caption("Retrieved, in rank order, each with its grade for this question (unjudged: nobody labelled it)")
        ranked = shown["retrieved"]
        if "grade" in ranked:
            ranked = ranked.assign(grade=ranked["grade"].map(grade_text))
        ranked = ranked.assign(marks=[ranking_marks(row) for row in ranked.to_dict("records")])
        table(marked_rows(ranked), key=f"w_retrieved_{role}", placeholder="", column_config=RETRIEVED,
              column_order=[c for c in RANKED_ORDER if c in ranked.columns],
              row_height=60 if "chunk_text" in shown["retrieved"] else None)
        st.caption("Claims, in answer order, with the verdict (empty for a failed record: not judged)")
        claims_shown = shown["claims"]
        codes = sorted({str(c) for found in claims_shown.get("reasons", []) if found is not None for c in found})
        if "reasons" in claims_shown:
            claims_shown = claims_shown.assign(reasons=claims_shown["reasons"].map(
                lambda found: None if found is None else reason_words(list(found))))
        wrapped_table(claims_shown, key=f"w_claims_{role}", columns=CLAIM_HEADINGS)
        if codes:
            st.caption(escape("Reasons as the database stores them: " + "; ".join(
                f"{code} = {REASON_WORDS.get(code, code)}" for code in codes) + "."))
        st.caption("Answer")
        st.code(str(record["answer"]) if not missing(record["answer"]) else "(no answer text)", language=None,
                wrap_lines=True)
        context = str(record["context"]) if not missing(record["context"]) else "(no context recorded)"
        with st.expander(f"Delivered context ({len(context)} characters)"):
            st.code(context, language=None, wrap_lines=True)

# The answers sentence by sentence, full width: each table has six columns of text, too many for a half column.
answered_in_sentences = [(role, shown_runs[role]) for role in ("baseline", "candidate") if shown_runs[role] in sentences]
if answered_in_sentences:
    st.subheader("The answers sentence by sentence")
    st.caption("What each sentence is aligned to and who decided it. A reviewer's decision comes first, then a "
               "judge's cached answer, then the lexical aligner (token overlap). Sentences aligned to one claim form "
               "that claim with the union of their citations; an unlabelled sentence is a claim of its own that no "
               "label supports.")
for role, run_id in answered_in_sentences:
    st.caption(escape(f"{role.capitalize()} {run_id}"))
    table(sentences[run_id], key=f"w_sentences_{role}", column_config=SENTENCES, placeholder="")

DIFF_STYLE = ("<style>.answer-diff { white-space: pre-wrap; line-height: 1.6; } .answer-diff del { background: #ffd7d5; "
              "text-decoration: line-through; } .answer-diff ins { background: #ccffd8; text-decoration: none; }</style>")
st.subheader("The two answers, word by word")
change = data.answer_change(evidence, shown_runs["baseline"], shown_runs["candidate"])
if change is None:
    st.caption("One side has no record for this question: there is nothing to set side by side.")
else:
    diff, cites = change
    st.caption(escape(f"{shown_runs['baseline']} -> {shown_runs['candidate']}: struck-through words are only in the "
                      "baseline's answer, highlighted words only in the candidate's."))
    st.html(f'{DIFF_STYLE}<div class="answer-diff" id="answer-diff">{diff or "(neither side has answer text)"}</div>')
    parts = [f"{label}: {', '.join(docs)}" for label, docs in (("no longer cited", cites.dropped),
                                                              ("newly cited", cites.added),
                                                              ("cited by both", cites.kept)) if docs]
    st.caption(escape("Citations (documents the claims cite): " + ("; ".join(parts) if parts else "none on either "
                                                                                                 "side") + "."))

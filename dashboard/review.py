"""Review mode's shared pieces: the form that records a decision, and the progress of the refresh it asks for.

A decision is appended to the reviewer's file (and flushed to disk) before the page says it is recorded;
the refresh then runs in the background (`scoring.store.background`) and the page reruns when it lands,
showing the new numbers. The database is written only by that refresh.
"""
from __future__ import annotations

import time
from typing import Any

import streamlit as st

from dashboard import data
from dashboard.display import escape, say
from scoring.errors import ValidationError

KINDS = {"relevance": "grade a document", "support": "say whether a document supports an expected claim",
         "dispute": "dispute the question's labels", "alignment": "align an answer sentence to expected claims"}

GRADE_WORDS = {0: "not relevant", 1: "related", 2: "answers", 3: "essential"}
"""How a grade reads beside its number where the suite does not say (`grade_words`)."""


def grade_words(grade: int) -> str:
    """A grade as a reviewer picks it: `1 related`; a negative grade is judged not relevant."""
    words = GRADE_WORDS.get(int(grade)) or ("judged not relevant" if grade < 0 else "")
    return f"{grade} {words}".strip()


def decision_form(suite: str, *, key: str, question_id: str | None = None) -> None:
    """A form recording one decision of the reviewer on a question (review mode only): first what to
    decide, then only that decision's fields, none of them answered in advance (the grade from the
    suite's grade scale)."""
    if data.review_mode() is None:
        return
    kind = st.selectbox("Decision", list(KINDS), format_func=KINDS.get, key=f"w_{key}_kind", index=None,
                        placeholder="Choose what to decide")
    if kind is None:
        return
    with st.form(f"decide_{key}_{kind}", clear_on_submit=True, border=False):
        qid = question_id or st.text_input("Question ID", key=f"w_{key}_question")
        fields: dict[str, Any] = {"kind": kind}
        missing: list[str] = []
        if kind in ("relevance", "support"):
            fields["doc_id"] = st.text_input("Document ID", key=f"w_{key}_doc")
            missing += [] if fields["doc_id"].strip() else ["a document ID"]
        if kind == "relevance":
            grade = st.selectbox("Grade", data.grade_scale(suite), index=None, format_func=grade_words,
                                 key=f"w_{key}_grade", placeholder="Choose a grade")
            fields["grade"] = None if grade is None else int(grade)
            missing += [] if grade is not None else ["a grade"]
        elif kind == "support":
            fields["claim_id"] = st.text_input("Expected claim ID", key=f"w_{key}_claim")
            # yes and no keep the binary label's true and false; partial is a support grade of its own
            supports = st.radio("Supports the claim?", ["yes", "partial", "no"], index=None, horizontal=True,
                                key=f"w_{key}_supports")
            fields["supports"] = None if supports is None else {"yes": True, "no": False}.get(supports, supports)
            missing += [] if fields["claim_id"].strip() else ["an expected claim ID"]
            missing += [] if supports is not None else ["whether it supports the claim"]
        elif kind == "alignment":
            sentence = st.text_input("Answer sentence", key=f"w_{key}_sentence")
            aligned = st.text_input("Claims it states, comma-separated, or unlabelled, or no_claim",
                                    key=f"w_{key}_aligned").strip()
            fields |= {"sentence": sentence, "claim_ids": aligned if aligned in ("unlabelled", "no_claim") else
                       [c.strip() for c in aligned.split(",") if c.strip()]}
            missing += ([] if sentence.strip() else ["the sentence"]) + ([] if aligned else ["what it states"])
        note = st.text_input("Note" + (" (why you dispute the labels)" if kind == "dispute" else " (optional)"),
                             key=f"w_{key}_note")
        if not st.form_submit_button("Record the decision"):
            return
    if missing:
        say("error", f"Not recorded: choose or type {', '.join(missing)}.")
        return
    if save(suite, {**fields, "question_id": qid, "note": note or None}, f"your {kind} decision on {qid}"):
        st.rerun()


def save(suite: str, decision: dict[str, Any], what: str | None) -> bool:
    """Append `decision` to the reviewer's file: say why it was not recorded, or (with `what`) that it was
    (`decision_recorded`). Returns whether it was recorded."""
    try:
        data.record_decision(suite, decision)
    except ValidationError as error:
        say("error", f"Not recorded: {error}")
        return False
    if what is not None:
        decision_recorded(what)
    return True


def decision_recorded(what: str) -> None:
    """Say that a decision was recorded (a toast), and wait for its refresh to say the numbers changed."""
    st.toast(escape(f"Recorded {what}; the numbers update when the refresh lands"))
    st.session_state.pop("updated_at", None)
    st.session_state["decisions_waiting"] = st.session_state.get("decisions_waiting", 0) + 1


@st.fragment(run_every=1.0)
def refresh_progress() -> None:
    """The background refresh, while it runs; when a new one lands, the whole page reruns to show it, and
    says so (a toast, and a line that stays until the next decision)."""
    status = data.refresh_status()
    if status is None:
        return
    seen = st.session_state.setdefault("refreshes_seen", status.finished)
    if status.running:
        waited = time.monotonic() - (status.started or time.monotonic())
        queued = " (another decision is queued behind it)" if status.pending else ""
        st.info(f"Refreshing the scores with your decisions: {waited:.0f} s{queued}")
    elif status.finished != seen:
        st.session_state["refreshes_seen"] = status.finished
        if status.ok:
            if st.session_state.pop("decisions_waiting", 0):
                st.session_state["updated_at"] = time.strftime("%H:%M:%S")
                st.session_state["updated_toast"] = True
            st.rerun(scope="app")
        say("error", f"The refresh after your decision failed: {status.message}")
    elif status.ok is False:
        say("error", f"The last refresh failed: {status.message}")
    elif "updated_at" in st.session_state:
        if st.session_state.pop("updated_toast", False):
            st.toast("Updated: the numbers now include your decisions", icon="✅")
        st.success(f"Updated at {st.session_state['updated_at']}: the numbers on this page include your decisions.")

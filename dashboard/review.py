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


def decision_form(suite: str, *, key: str, question_id: str | None = None) -> None:
    """A form recording one decision of the reviewer on a question (review mode only)."""
    if data.review_mode() is None:
        return
    with st.form(f"decide_{key}", clear_on_submit=True, border=False):
        qid = question_id or st.text_input("Question ID", key=f"w_{key}_question")
        kind = st.selectbox("Decision", list(KINDS), format_func=KINDS.get, key=f"w_{key}_kind")
        doc = st.text_input("Document ID (for a grade or a support)", key=f"w_{key}_doc")
        left, right = st.columns(2)
        grade = left.number_input("Grade (relevance)", min_value=-1000, max_value=1000, value=0, step=1,
                                  key=f"w_{key}_grade")
        claim = right.text_input("Expected claim ID (support)", key=f"w_{key}_claim")
        supports = st.radio("Supports the claim?", ["yes", "no"], horizontal=True, key=f"w_{key}_supports")
        sentence = st.text_input("Answer sentence (alignment)", key=f"w_{key}_sentence")
        aligned = st.text_input("Claims it states, comma-separated, or unlabelled, or no_claim (alignment)",
                                key=f"w_{key}_aligned")
        note = st.text_input("Note", key=f"w_{key}_note")
        if not st.form_submit_button("Record the decision"):
            return
    fields: dict[str, Any] = {"kind": kind, "question_id": qid, "note": note or None}
    if kind == "relevance":
        fields |= {"doc_id": doc, "grade": int(grade)}
    elif kind == "support":
        fields |= {"doc_id": doc, "claim_id": claim, "supports": supports == "yes"}
    elif kind == "alignment":
        text = aligned.strip()
        fields |= {"sentence": sentence, "claim_ids": text if text in ("unlabelled", "no_claim") else
                   [c.strip() for c in text.split(",") if c.strip()]}
    try:
        data.record_decision(suite, fields)
    except ValidationError as error:
        say("error", f"Not recorded: {error}")
        return
    st.toast(escape(f"Recorded your {kind} decision on {qid}"))
    st.rerun()


@st.fragment(run_every=1.0)
def refresh_progress() -> None:
    """The background refresh, while it runs; when a new one lands, the whole page reruns to show it."""
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
            st.rerun(scope="app")
        say("error", f"The refresh after your decision failed: {status.message}")
    elif status.ok is False:
        say("error", f"The last refresh failed: {status.message}")

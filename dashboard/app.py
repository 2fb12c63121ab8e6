"""The dashboard's entry file: only routes. Each page answers one question about a release."""
import streamlit as st

st.set_page_config(page_title="ragslice", layout="wide")

st.navigation(
    {
        "Review": [
            st.Page("pages/release_review.py", title="Release review", default=True),
            st.Page("pages/question_deltas.py", title="Question deltas"),
            st.Page("pages/question_detail.py", title="Question detail"),
        ],
        "Break down": [
            st.Page("pages/slices.py", title="Slices"),
            st.Page("pages/aggregation.py", title="Aggregation"),
        ],
        "Configuration": [
            st.Page("pages/runs.py", title="Runs"),
        ],
    }
).run()

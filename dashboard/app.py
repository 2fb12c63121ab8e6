"""The dashboard's entry file: only routes. Each page answers one question about a release.

The pages live in `views/`, not `pages/`: Streamlit runs a sibling `pages/` folder as an old-style
multipage app (bypassing this router) until the first visit to the root URL, so a shared deep link
opened first on a fresh server would lose the navigation and the page settings."""
import streamlit as st

from dashboard import data
from dashboard.display import page_style

st.set_page_config(page_title="ragslice", layout="wide")
page_style()

st.navigation(
    {
        "Review": [
            st.Page("views/release_review.py", title="Release review", default=True),
            st.Page("views/release_matrix.py", title="Release matrix"),
            st.Page("views/trends.py", title="Trends"),
            st.Page("views/statistics.py", title="Statistics"),
            st.Page("views/question_deltas.py", title="Question deltas"),
            st.Page("views/question_detail.py", title="Question detail"),
            st.Page("views/present.py", title="Present"),
        ],
        "Break down": [
            st.Page("views/slices.py", title="Slices"),
            st.Page("views/aggregation.py", title="Aggregation"),
        ],
        "Configuration": [
            st.Page("views/runs.py", title="Runs"),
            *([st.Page("views/labels.py", title="Labels")] if data.review_mode() else []),
        ],
    }
).run()

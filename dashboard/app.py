"""The dashboard's entry file: only routes. Each page answers one question about a release.

The pages live in `views/`, not `pages/`: Streamlit runs a sibling `pages/` folder as an old-style
multipage app (bypassing this router) until the first visit to the root URL, so a shared deep link
opened first on a fresh server would lose the navigation and the page settings."""
from pathlib import Path

import streamlit as st

from dashboard import data, selection
from dashboard.display import page_style

st.set_page_config(page_title="ragslice", layout="wide")
page_style()

# Each section's pages as (file, title); the first page is the default, served at the root URL.
SECTIONS = {
    "Review": [
        ("views/release_review.py", "Release review"),
        ("views/release_matrix.py", "Release matrix"),
        ("views/trends.py", "Trends"),
        ("views/statistics.py", "Statistics"),
        ("views/question_deltas.py", "Question deltas"),
        ("views/question_detail.py", "Question detail"),
        ("views/present.py", "Present"),
    ],
    "Break down": [
        ("views/slices.py", "Slices"),
        ("views/aggregation.py", "Aggregation"),
    ],
    "Configuration": [
        ("views/runs.py", "Runs"),
        *([("views/labels.py", "Labels")] if data.review_mode() else []),
    ],
}
DEFAULT = "views/release_review.py"

page = st.navigation({section: [st.Page(path, title=title, default=path == DEFAULT) for path, title in pages]
                      for section, pages in SECTIONS.items()})
# A link to a page that does not exist shows the default page: say so, naming what the link asked for.
asked = selection.unknown_page(st.context.url, ["", *(Path(path).stem for pages in SECTIONS.values()
                                                      for path, _ in pages)])
if asked is not None:
    selection.unknown_value("page", [asked], page.title)
page.run()

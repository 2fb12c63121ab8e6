"""The decision for the meeting room: five screens, one message each, in large type (the same file
`ragslice report --slides` writes). Click the slides, then the arrow keys move between screens."""
import streamlit as st

from dashboard import data, selection
from dashboard.display import say

st.title("Present")
cmp = selection.comparison(with_metric=False)
selection.sides_caption(cmp)
selection.show_compatibility(cmp)
st.caption("The verdict and the gates that decided it, where it regressed, the three worst regressions with their "
           "evidence, what changed between the runs, and what this evaluation does not measure. Click the slides, "
           "then use the arrow keys (or Page Up / Page Down); press F11 for full screen.")
try:
    with st.spinner("Preparing the screens..."):
        slides = data.presentation(cmp.baseline, cmp.candidate)
except data.StatisticsUnavailable as error:
    say("error", f"These two cannot be presented: {error}")
    st.stop()
if data.policy_path() is None:
    say("info", "No policy file was given to the dashboard, so the first screen has no verdict. Start it with "
                "--policy policy.toml.")
st.iframe(slides, height=720)  # every data string in it is escaped (scoring.decide.present)
st.download_button("Download the slides (one offline HTML file)", slides,
                   file_name=f"{cmp.baseline.name}-vs-{cmp.candidate.name}-slides.html", mime="text/html",
                   key="w_present_download", on_click="ignore")

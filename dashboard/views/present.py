"""The decision for the meeting room: the screens of `ragslice report --slides`, in large type, in a frame
that fits the window below the page's title. Click the slides, then the keys move between screens."""
import streamlit as st

from dashboard import data, selection
from dashboard.display import say

FRAME_TOP = "9.5rem"  # the title and Streamlit's header above the frame: the frame takes the rest of the window

st.title("Present")
cmp = selection.comparison(with_metric=False)
try:
    with st.spinner("Preparing the screens..."):
        slides = data.presentation(cmp.baseline, cmp.candidate)
except data.StatisticsUnavailable as error:
    say("error", f"These two cannot be presented: {error}")
    st.stop()
# The frame first, sized to the window (never taller: the first screen, with every failing gate, is seen whole
# without scrolling the page); what it shows is said below it.
st.markdown(f"<style>.st-key-slides iframe {{ height: calc(100vh - {FRAME_TOP}) !important; min-height: 18rem; }}"
            "</style>", unsafe_allow_html=True)
with st.container(key="slides"):
    st.iframe(slides, height=560)  # every data string in it is escaped (scoring.decide.present)
selection.sides_caption(cmp)
selection.show_compatibility(cmp)
if data.policy_path() is None:
    say("info", "No policy file was given to the dashboard, so the first screen has no verdict. Start it with "
                "--policy policy.toml.")
st.caption("The verdict and every gate that decided it, where it regressed, the three worst regressions with their "
           "evidence, what changed between the runs, and what this evaluation does not measure. Click the slides, "
           "then use the arrow keys, Page Up / Page Down, Home and End; press F11 for full screen.")
st.download_button("Download the slides (one offline HTML file)", slides,
                   file_name=f"{cmp.baseline.name}-vs-{cmp.candidate.name}-slides.html", mime="text/html",
                   key="w_present_download", on_click="ignore")

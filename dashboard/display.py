"""Small display helpers shared by pages: number formatting, metric help from the registry, and
markdown escaping for the few sentences that mention a value from the data.

Text from the data is shown with `st.text`, `st.code` or `st.dataframe`. When a sentence of ours
must name a run or a question, `escape` neutralises every markdown, directive and HTML character,
so `[x](javascript:...)`, `:red[...]` and `<script>` render as typed.
"""
from __future__ import annotations

import re
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

import streamlit as st

from scoring.decide import change
from scoring.decide.gate_words import missing
from scoring.metrics import BY_KEY, Metric

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|:~$&=\"'^%@/])")


def escape(text: Any) -> str:
    """`text` as inert markdown: every punctuation character that markdown, Streamlit directives
    (`:red[...]`, `:material/...:`, emoji shortcodes), LaTeX or HTML could read is backslash-escaped;
    newlines become spaces."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def items(value: Any) -> list[str] | None:
    """A list column's value as a Python list; None for NULL."""
    if value is None or isinstance(value, (str, bytes)):
        return None if value is None else [str(value)]
    try:
        return [str(v) for v in value]
    except TypeError:
        return None


def number(value: Any, digits: int = 3) -> str:
    """A score as text; n/a for NULL (never 0)."""
    if missing(value):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{float(value):.{digits}f}"


def grade_text(value: Any) -> str:
    """A ranked document's label for the question as text: its grade, or `unjudged` when nobody labelled it
    (NULL: it counts as not relevant, like a grade 0, but nobody said so)."""
    return "unjudged" if missing(value) else str(int(value))


RANKING_MARKS_HELP = ("in first k: delivered to the answer stage; cited: a claim of the answer cites it (an amber "
                      "row); restricted: the question's caller may not see it; not counted: a later chunk of a "
                      "document already ranked")


def ranking_marks(row: dict[str, Any]) -> str:
    """What happened to one ranked document, in words (`RANKING_MARKS_HELP`): `in first k`, `cited`,
    `restricted`, `not counted`, comma-separated; empty for a document beyond k, uncited."""
    def on(name: str) -> bool:
        return not missing(row.get(name)) and bool(row.get(name))

    counted = row.get("counted")
    marks = [("in first k", on("visible")), ("cited", on("cited")), ("restricted", on("restricted")),
             ("not counted", not missing(counted) and not bool(counted))]
    return ", ".join(word for word, shown in marks if shown)


def signed(value: Any, digits: int = 3) -> str:
    if missing(value):
        return "n/a"
    return f"{float(value):+.{digits}f}"


def wrapped_table(frame: Any, *, key: str, columns: dict[str, str] | None = None) -> None:
    """A short table whose long cells wrap instead of being cut (`st.table`), inside a container keyed
    `box_<key>`: lists shown comma-separated, booleans as yes / no, NULL as empty, text escaped (the
    table reads markdown: text from the data shows as typed); `columns` renames and orders the
    columns shown."""
    import pandas as pd

    shown = frame.copy()
    for column in shown.columns:  # st.table reads a cell as markdown: every cell is escaped (`escape`)
        shown[column] = shown[column].map(lambda v: "" if v is None or (isinstance(v, float) and v != v) else
                                          ("yes" if v else "no") if isinstance(v, bool) else
                                          escape(", ".join(str(x) for x in v)) if not isinstance(v, str) and
                                          hasattr(v, "__iter__") else escape(v))
    if columns:
        shown = shown[[c for c in columns if c in shown.columns]].rename(columns=columns)
    with st.container(key=f"box_{key}"):
        st.table(pd.DataFrame(shown).reset_index(drop=True), hide_index=True)


STATUS_COLORS: dict[str, tuple[str, str]] = {
    "regressed": ("#c62828", ":material/arrow_downward:"),
    "improved": ("#2e7d32", ":material/arrow_upward:"),
    "unchanged": ("#616161", ":material/drag_handle:"),
    "n/a": ("#616161", ":material/remove:"),
    "missing": ("#e65100", ":material/error:"),
    "failed": ("#e65100", ":material/error:"),
}
"""A question status's colour (text on white, contrast at least 4.5:1) and icon, wherever a status is shown."""


def shown_zero(value: Any, digits: int = 3) -> bool:
    """Whether a change reads as zero at `digits` decimals (+0.000): it is shown neutral, with no
    arrow and no colour, whatever its sign beyond the digits shown."""
    return not missing(value) and round(abs(float(value)), digits) == 0


def delta_look(value: Any, higher_is_better: bool, digits: int = 3, significant: bool | None = None
               ) -> dict[str, Any]:
    """`st.metric` arguments for a change: its text, and green for better / red for worse in the
    metric's direction when the change is significant (or its significance is not known: None); grey
    when it is not (`scoring.decide.change.strength`: a change that is not significant reads as
    neutral); no arrow and no colour for n/a or a change that reads as zero."""
    if missing(value):
        return {"delta": None}
    if shown_zero(value, digits):
        return {"delta": f"{0:.{digits}f}", "delta_color": "off", "delta_arrow": "off"}
    _, strong = change.strength(float(value), higher_is_better, significant is not False, abs(float(value)))
    if strong <= change.FAINT:
        return {"delta": signed(value, digits), "delta_color": "off"}
    return {"delta": signed(value, digits), "delta_color": "normal" if higher_is_better else "inverse"}


def sentence(text: Any) -> str:
    """A message as a sentence: its first letter capitalised (scoring's messages start in lowercase
    to read inside other sentences)."""
    text = str(text).strip()
    return text[:1].upper() + text[1:] if text else text


def moment(value: Any) -> str:
    """A stored timestamp (naive UTC) as `YYYY-MM-DD HH:MM:SS UTC`; the text as given when it is not one."""
    try:
        return f"{datetime.fromisoformat(str(value)):%Y-%m-%d %H:%M:%S} UTC"
    except ValueError:
        return str(value)


def file_path(path: Any, *, shell: bool = False) -> str:
    """A file's path as a reader can type it here: relative to the working directory when the file is
    inside it (`data/demo/policy.toml`), else as given; `shell`: quoted for a command line."""
    try:
        shown = str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        shown = str(path)
    return shlex.quote(shown) if shell else shown


def metric_name(key: str) -> str:
    """Canonical registry name (`P@k`, `Support`)."""
    return BY_KEY[key].name


def metric_help(key: str) -> str:
    """Tooltip text assembled from the registry entry: help, numerator, denominator, n/a rule,
    pooling, direction. Escaped: registry wording may contain markdown characters."""
    m: Metric = BY_KEY[key]
    direction = "higher is better" if m.higher_is_better else "lower is better"
    parts = [
        m.help,
        f"Numerator: {m.numerator}.",
        f"Denominator: {m.denominator}.",
        f"n/a: {m.na_rule}.",
        f"A failed or missing record: {m.failure}.",
        f"Pooled: {m.pooling}.",
        f"Direction: {direction}.",
    ]
    return "\n\n".join(escape(p) for p in parts)


def metric_caption(key: str) -> str:
    """One escaped line for a caption: name, denominator and n/a rule from the registry."""
    m = BY_KEY[key]
    return escape(f"{m.name}: {m.numerator} / {m.denominator}. {m.na_rule}.")


def say(kind: str, text: str) -> None:
    """Show a sentence (which may name runs or questions) in an alert box, escaped."""
    box = {"error": st.error, "warning": st.warning, "info": st.info, "success": st.success}[kind]
    box(escape(text))


def table(frame: Any, *, key: str, placeholder: str = "n/a", widget_key: str | None = None, **kwargs: Any) -> Any:
    """`st.dataframe` as every page uses it: no index, full width, NULL shown as `placeholder`
    (n/a for scores), inside a container keyed `box_<key>` so tests and styles can find it (the
    dataframe's own key is `widget_key`, default `key`). Cells are plain text."""
    kwargs.setdefault("hide_index", True)
    kwargs.setdefault("width", "stretch")
    with st.container(key=f"box_{key}"):
        return st.dataframe(frame, key=widget_key or key, placeholder=placeholder, **kwargs)


PAGE_STYLE = """<style>
/* projector: less empty space above the title, so a 1280x720 screen shows the verdict */
[data-testid="stMainBlockContainer"] { padding-top: 1.5rem; }
/* keyboard: a visible focus ring on navigation links, page links, buttons and widgets */
[data-testid="stSidebarNav"] a:focus-visible, [data-testid="stPageLink"] a:focus-visible,
button:focus-visible, [role="combobox"]:focus-visible, summary:focus-visible, input:focus-visible {
  outline: 3px solid #1565c0 !important; outline-offset: 2px; border-radius: 4px;
}
</style>"""
"""Styles every page shares (`page_style`)."""


TAB_OUT_OF_TABLES = """<script>
if (!window.ragsliceTabOut) {
  window.ragsliceTabOut = true;
  // A table's grid keeps Tab for moving between its cells: Tab (Shift+Tab) from a cell or from the grid's
  // canvas moves on to the next (previous) control of the page instead; arrows still move inside the grid.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target;
    const grid = target && target.closest && target.closest('[data-testid="stDataFrame"]');
    if (!grid || !(target.tagName === "CANVAS" || target.closest('[role="grid"], [role="gridcell"]'))) return;
    const controls = [...document.querySelectorAll(
      'a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])')]
      .filter((el) => !el.disabled && el.offsetParent !== null && !grid.contains(el));
    const side = event.shiftKey ? Node.DOCUMENT_POSITION_PRECEDING : Node.DOCUMENT_POSITION_FOLLOWING;
    const beyond = controls.filter((el) => grid.compareDocumentPosition(el) & side);
    const next = event.shiftKey ? beyond[beyond.length - 1] : beyond[0];
    if (next) { event.preventDefault(); event.stopPropagation(); next.focus(); }
  }, true);
}
</script>"""
"""Keyboard: Tab never stays inside a table (Streamlit's grid would move from cell to cell for ever)."""


def page_style() -> None:
    """Apply `PAGE_STYLE` and `TAB_OUT_OF_TABLES` (our own constants: no text from the data)."""
    st.html(PAGE_STYLE)
    st.html(TAB_OUT_OF_TABLES, unsafe_allow_javascript=True)

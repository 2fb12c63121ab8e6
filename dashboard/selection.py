"""Selections that live in the URL: suite, baseline, candidate, metric, filters, the selected question.

A widget's value comes from its query parameter, so a pasted link reproduces the view. Navigating
between pages drops the query parameters; the last value of each is kept in session state and
written back to the URL, so the comparison survives a page switch. Every widget has a stable key
(`w_<param>`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import streamlit as st

from scoring.metrics import REGISTRY

from . import data
from .display import escape, file_path, metric_help, metric_name, say

DEFAULT_METRIC = "support"


def _keep(param: str) -> str:
    return f"keep_{param}"


def _remember(param: str, value: Any) -> None:
    """Keep `value` for page switches and write it to the URL (only when it changed)."""
    st.session_state[_keep(param)] = value
    if value in (None, "", []):
        if param in st.query_params:
            del st.query_params[param]
    elif isinstance(value, list):
        if st.query_params.get_all(param) != [str(v) for v in value]:
            st.query_params[param] = [str(v) for v in value]
    elif st.query_params.get_all(param) != [str(value)]:
        st.query_params[param] = str(value)


def _wanted(param: str, many: bool = False) -> Any:
    if param in st.query_params:
        return st.query_params.get_all(param) if many else st.query_params.get(param)
    return st.session_state.get(_keep(param))


def _from_link(param: str) -> bool:
    """Whether the value of `param` comes from the address (a link), not from this session's own choice."""
    return param in st.query_params and st.query_params.get_all(param) != _as_texts(st.session_state.get(_keep(param)))


def _as_texts(value: Any) -> list[str]:
    if value in (None, "", []):
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


NOUNS = {"tags": "tag", "metrics": "metric", "type": "question type", "family": "slice family"}
"""How a warning names the value of a repeated parameter whose label is not a noun."""


def unknown_value(label: str, asked: Sequence[str], shown: str) -> None:
    """Say, in the page, that the address asked for values the page does not have and what it shows
    instead (a mistyped link never shows another view without a word)."""
    values = ", ".join(repr(str(a)) for a in asked)
    st.warning(escape(f"The link asks for {label} {values}, which is not available here; showing {shown} instead."),
               icon=":material/link_off:")


def unknown_page(url: str | None, known: Sequence[str]) -> str | None:
    """The page path a link asked for when no page has it (None when it names a page, or the address is
    not known): `url` is the address the browser shows (`st.context.url`, query removed), `known` the
    pages' URL paths ("" for the root)."""
    if not url:
        return None
    path = unquote(urlparse(url).path).strip("/")
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):].strip("/")
    return None if path in known else path


def select(
    label: str,
    options: Sequence[Any],
    *,
    param: str,
    default: Any = None,
    format_func: Callable[[Any], str] = str,
    help: str | None = None,
    where: Any = None,
) -> Any:
    """A selectbox bound to query parameter `param` (widget key `w_<param>`)."""
    where = where or st.sidebar
    key = f"w_{param}"
    options = list(options)
    by_text = {str(o): o for o in options}
    fallback = default if default in options else (options[0] if options else None)
    asked = _wanted(param)
    wanted = by_text.get(str(asked), fallback)
    if asked not in (None, "") and str(asked) not in by_text and _from_link(param):
        unknown_value(f"{label.lower()}", [str(asked)],
                      format_func(fallback) if fallback is not None else "nothing")
    st.session_state[key] = wanted
    value = where.selectbox(label, options, key=key, format_func=format_func, help=help,
                            on_change=lambda: _remember(param, st.session_state[key]))
    _remember(param, value)
    return value


def multiselect(
    label: str,
    options: Sequence[Any],
    *,
    param: str,
    format_func: Callable[[Any], str] = str,
    help: str | None = None,
    where: Any = None,
    aliases: Callable[[str], str] | None = None,
) -> list[Any]:
    """A multiselect bound to a repeated query parameter; empty means no filter. `aliases` maps a
    value an older link may carry to its option's text."""
    where = where or st.sidebar
    key = f"w_{param}"
    by_text = {str(o): o for o in options}
    wanted = [aliases(str(w)) if aliases else w for w in _wanted(param, many=True) or [] if str(w) != ""]
    unknown = [str(w) for w in dict.fromkeys(str(w) for w in wanted) if w not in by_text]
    st.session_state[key] = [by_text[w] for w in dict.fromkeys(str(w) for w in wanted) if w in by_text]
    if unknown and _from_link(param):
        kept = st.session_state[key]
        noun = NOUNS.get(param, label.lower())
        unknown_value(noun, unknown, "the filter with " + ", ".join(format_func(k) for k in kept)
                      if kept else f"every {noun} (no filter)")
    value = where.multiselect(label, list(options), key=key, format_func=format_func, help=help,
                              on_change=lambda: _remember(param, list(st.session_state[key])))
    _remember(param, list(value))
    return list(value)


def check(label: str, *, param: str, help: str | None = None, where: Any = None) -> bool:
    """A checkbox bound to a query parameter (`1` when ticked, absent when not)."""
    where = where or st.sidebar
    key = f"w_{param}"
    asked = _wanted(param)
    st.session_state[key] = str(asked) in ("1", "true")
    if asked not in (None, "", "1", "true", "0", "false") and _from_link(param):
        unknown_value(f"{label.lower()} =", [str(asked)], "it unticked (the link may say 1 or 0)")
    value = where.checkbox(label, key=key, help=help,
                           on_change=lambda: _remember(param, "1" if st.session_state[key] else None))
    _remember(param, "1" if value else None)
    return bool(value)


def text(label: str, *, param: str, help: str | None = None, where: Any = None, placeholder: str = "") -> str:
    """A text input bound to a query parameter."""
    where = where or st.sidebar
    key = f"w_{param}"
    st.session_state[key] = str(_wanted(param) or "")
    value = where.text_input(label, key=key, help=help, placeholder=placeholder,
                             on_change=lambda: _remember(param, st.session_state[key]))
    _remember(param, value)
    return value


def current(param: str) -> Any:
    """The value a widget bound to `param` will start from: the URL's, else the kept one (or None)."""
    return _wanted(param)


def param_list(name: str) -> list[str]:
    """A repeated query parameter that has no widget; falls back to the kept value. An empty value
    (`pick=`) stands for none."""
    return [str(v) for v in _wanted(name, many=True) or [] if str(v) != ""]


def set_param(name: str, value: Any) -> None:
    """Write a widget-less selection to the URL (and keep it across page switches)."""
    _remember(name, value)


# -- the comparison every page shares -----------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    suite: str
    baseline: data.Side
    candidate: data.Side
    metric: str
    compat: data.Compatibility

    def link_params(self, **extra: str) -> dict[str, str]:
        """Query parameters that reproduce this comparison on another page."""
        return {"suite": self.suite, "baseline": self.baseline.name, "candidate": self.candidate.name,
                "metric": self.metric, **extra}


def database_or_stop() -> None:
    """Stop the page with a plain explanation when there is no usable database."""
    path = data.db_path()
    try:
        problem = data.schema_problem()
        have_suites = len(data.suites()) > 0
    except data.DatabaseMissing as error:
        say("error", f"No ragslice database to show: {error}. Build one with: ragslice refresh WORKSPACE "
                     f"--db {file_path(path, shell=True)}")
        st.stop()
    if problem:
        say("error", problem)
        st.stop()
    if not have_suites:
        say("info", f"The database {path} holds no suite yet. Add a suite and runs to the workspace, then refresh.")
        st.stop()


def _default_sides(suite: str, options: list[data.Side]) -> tuple[data.Side, data.Side]:
    """The sides of the newest recorded verdict on this suite when both still exist (and its baseline
    is the pinned one, when a baseline is pinned); else baseline: the suite's pinned standing baseline
    (`data.pinned_baseline`), else the oldest run; candidate: the newest other run outside any group
    (else the newest other run, else the baseline itself)."""
    by_name = {s.name: s for s in options}
    pinned = data.pinned_baseline(suite)
    newest = data.newest_verdict()
    if newest is not None and newest[0] == suite and (pinned is None or pinned == newest[1]):
        if newest[1] in by_name and newest[2] in by_name:
            return by_name[newest[1]], by_name[newest[2]]
    runs = data.runs(suite)
    grouped = set(runs.loc[runs["run_group"].notna(), "run_id"])
    singles = [s for s in options if s.kind == "run"]
    base = by_name[pinned] if pinned in by_name else singles[0]
    others = [s for s in singles if s != base]
    ungrouped = [s for s in others if s.name not in grouped]
    return base, (ungrouped or others or [base])[-1]


BASELINE_HELP = ("The side the candidate is judged against, usually what runs in production now: a run, or a group "
                 "of repeats of one configuration (each question's value is then the mean over its repeats).")
CANDIDATE_HELP = ("The new version that would replace the baseline: a run, or a group of repeats (each question's "
                  "value is then the mean over its repeats). Deltas are candidate - baseline.")


def comparison(*, with_metric: bool = True, drives: str | None = None) -> Comparison:
    """Render the sidebar (suite, baseline, candidate, metric) and return the comparison. `drives`:
    what the Metric selector changes on this page, said under it."""
    database_or_stop()
    suites = list(data.suites()["suite"])
    newest = data.newest_verdict()
    suite = select("Suite", suites, param="suite", default=newest[0] if newest else None,
                   help="The frozen test set: questions, labels, corpus.")
    options = data.sides(suite)
    if not options:
        say("info", f"Suite {suite} has no run yet.")
        st.stop()
    by_name = {s.name: s for s in options}
    base_default, cand_default = _default_sides(suite, options)
    names = list(by_name)
    pinned = data.pinned_baseline(suite)
    baseline = by_name[select("Baseline", names, param="baseline", default=base_default.name,
                              format_func=lambda n: by_name[n].label + (" (pinned)" if n == pinned else ""),
                              help=BASELINE_HELP + " The suite's pinned standing baseline unless the URL names another.")]
    candidate = by_name[select("Candidate", names, param="candidate", default=cand_default.name,
                               format_func=lambda n: by_name[n].label, help=CANDIDATE_HELP)]
    metric = DEFAULT_METRIC
    if with_metric:
        metric = select("Metric", [m.key for m in REGISTRY], param="metric", default=DEFAULT_METRIC,
                        format_func=metric_name, help="Definitions come from the metric registry: open "
                                                      "'What it measures' below.")
        if drives:
            st.sidebar.caption(f"On this page the metric drives {drives}.")
        with st.sidebar.popover(f"What {escape(metric_name(metric))} measures", icon=":material/help:"):
            st.markdown(metric_help(metric))
    compat = data.compatibility(suite, baseline, candidate)
    return Comparison(suite, baseline, candidate, metric, compat)


def side_note(side: data.Side) -> str:
    """A plain sentence: what the side's values are."""
    if side.kind == "group":
        return f"{side.name}: mean over {len(side.run_ids)} repeats ({', '.join(side.run_ids)})"
    return f"{side.name}: a single run"


def show_compatibility(cmp: Comparison, *, stop_on_refusal: bool = True, warnings: bool = True) -> None:
    """Refusals as errors (and stop the page), warnings as warnings (unless the page shows them
    itself: `warnings=False`), in plain words."""
    for reason in cmp.compat.refusals:
        say("error", "These two cannot be compared. " + reason)
    if cmp.compat.refusals and stop_on_refusal:
        st.stop()
    for warning in cmp.compat.warnings if warnings else ():
        say("warning", warning)


def sides_caption(cmp: Comparison) -> None:
    st.caption(escape(f"Baseline {side_note(cmp.baseline)}. Candidate {side_note(cmp.candidate)}. Suite {cmp.suite}."))

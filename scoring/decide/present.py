"""The decision told in screens, for the meeting room: `ragslice report --slides` and the dashboard's
Present page show the same screens, built here from one comparison. Five parts, each one screen, or
more where it would not fit one (never a screen that scrolls, never a failing gate left out):

1. the verdict and every gate that decided it, worded as the verdict card words them (`gate_words`),
   failing gates first;
2. where it regressed: first the rows the gates read (their measure on their slice), then the other
   quality measures that got worse, with n, n/a and Holm's p; label gaps (Judged@k) on a line of their own;
3. the three worst regressions (critical first, then the most measures), one screen each, with both
   sides' evidence;
4. what changed between the two runs: the manifest fields, bookkeeping left out;
5. what this evaluation does not measure.

Every number is the comparison's own (`Comparison.table`, `verdict`, `regressed_questions`): the
screens select and word, they compute nothing. A screen is filled up to `BODY_LINES` lines of body
text (`lines`), the type being sized from the window (``slides.css``) so that the same budget fits
1280x720, 1024x600 and the Present page's frame. The slides file is one HTML file with inline CSS and
an inline script for the keys; it loads nothing. Its HTML comes from the Jinja2 templates
``slides.html.j2`` and ``slides_parts.html.j2`` (autoescaped, as the report's).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
from markupsafe import Markup

from ..metrics import slices
from ..metrics.registry import display_name
from ..metrics.slices import parse_slice
from .comparison import Comparison, label_gap_warning
from .gate_words import gate_sentence, measure_words, slice_words
from .policy import load_policy
from .report import CAVEATS, Evidence, compare_with_evidence, is_setting, manifest_diff, num, pval, signed
from .report.as_html import render, templates
from .significance import significant
from .verdicts import record

T = TypeVar("T")

WORST = 3
"""Regressions shown with their evidence, one screen each."""
WHERE_LIMIT = 8
"""Slice x metric rows, beyond the gates' own, shown on the "where it regressed" screen at most."""
SIGNIFICANT = 0.05
"""Holm-adjusted p below which a change is called significant."""
LABEL_COVERAGE = ("judged",)
"""Measures of how far the labels reach into a ranking, not of the system's quality: their drops are
label gaps, said on a line of their own, never among the regressions."""

CHARS_PER_LINE = 100
"""Characters of body text (1em) a screen's line holds at the narrowest window the type allows
(``slides.css``: the type is at most 1.75% of the width; a character about half its size)."""
BODY_LINES = 20.0
"""Lines of body text (1em) a screen holds below its title and message, at the shortest window the
type allows (at most 2.6% of the height), the footer and margins left free."""
TEXT_LIMIT = 220
"""Characters of a question, an answer or an expected claim shown on a regression's screen."""
CLAIMS_LIMIT = 3
"""Claims of a side shown on a regression's screen ("and N more" after them)."""
SETTING_LIMIT = 70
"""Characters of a manifest value shown on the "what changed" screen."""


def lines(text: str, size: float = 1.0, width: float = 1.0, gap: float = 0.0) -> float:
    """The body lines (of 1em) a paragraph of `text` takes at type `size` (em) across `width` of the
    screen, plus `gap` lines after it."""
    per_line = CHARS_PER_LINE * width / size
    return max(1, math.ceil(len(text) / per_line)) * size + gap


def fill(items: Sequence[T], cost: Callable[[T], float], budget: float = BODY_LINES,
         first: float | None = None) -> list[list[T]]:
    """`items` in order, cut into screens of at most `budget` lines (`first` for the first screen);
    an item longer than a screen gets one of its own. At least one (maybe empty) screen."""
    out: list[list[T]] = [[]]
    used, room = 0.0, budget if first is None else first
    for item in items:
        c = cost(item)
        if out[-1] and used + c > room:
            out.append([])
            used, room = 0.0, budget
        out[-1].append(item)
        used += c
    return out


def clip(text: Any, limit: int = TEXT_LIMIT) -> str:
    """`text` up to `limit` characters, cut at a word with an ellipsis when longer."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


@dataclass(frozen=True)
class Screen:
    """One screen: an id for links, a title, its one message in a sentence, and its body as HTML
    (every data string in it escaped)."""

    key: str
    title: str
    message: str
    body: str


def _parts(key: str, title: str, messages: Sequence[str], bodies: Sequence[str]) -> list[Screen]:
    """A part's screens: `key`, then `key-2`, ...; the title numbered when there are several."""
    n = len(bodies)
    return [Screen(key if i == 0 else f"{key}-{i + 1}", title if n == 1 else f"{title} ({i + 1} of {n})",
                   message, body) for i, (message, body) in enumerate(zip(messages, bodies))]


def changed_settings(c: Comparison) -> list[tuple[str, str, str]]:
    """(field, baseline, candidate) for every manifest field that differs, bookkeeping left out."""
    return [(f, b, k) for f, b, k in manifest_diff(c) if is_setting(f)]


def worse_slices(c: Comparison) -> pd.DataFrame:
    """The slice x metric rows whose mean moved the wrong way, significant ones first, then by size
    (every metric, label coverage included: `quality_worse` leaves it out)."""
    t = c.table.copy()
    worse = t[t["delta"].notna() & (t["delta"] != 0)
              & ((t["delta"] < 0) == t["higher_is_better"].astype(bool))].copy()
    worse["significant"] = significant(worse["p_holm"], SIGNIFICANT)
    worse["size"] = worse["delta"].abs()
    return worse.sort_values(["significant", "size"], ascending=[False, False], kind="stable")


def quality_worse(c: Comparison) -> pd.DataFrame:
    """`worse_slices` without the label-coverage measures (`LABEL_COVERAGE`)."""
    worse = worse_slices(c)
    return worse[~worse["metric"].isin(LABEL_COVERAGE)]


def _body(screen: str, **values: Any) -> str:
    """A screen's body: its macro of ``templates/slides_parts.html.j2`` over `values` (autoescaped)."""
    return getattr(templates().get_template("slides_parts.html.j2").module, screen)(values)


def _gate_item(g: Any) -> dict[str, str]:
    return {"name": g.name, "sentence": gate_sentence(g)}


def _verdict_screens(c: Comparison) -> list[Screen]:
    v = c.verdict
    word = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}.get(v.verdict, "NO VERDICT")
    if c.policy is None:
        return [Screen("verdict", "The verdict", "No policy was given, so there is no verdict.",
                       _body("verdict", word=word, policy=False))]
    failing = [_gate_item(g) for g in v.failed_gates]
    unsure = [_gate_item(g) for g in v.inconclusive_gates]
    passing = " · ".join(g.name for g in v.gates if g.passed)
    if failing:
        message = f"{len(failing)} of {len(v.gates)} gates fail."
    elif unsure:
        message = (f"No gate fails, but {len(unsure)} of {len(v.gates)} could not tell: their questions cannot "
                   "detect a drop of their margin.")
    else:
        message = f"All {len(v.gates)} gates pass."
    items = [("fail", g) for g in failing] + [("inconclusive", g) for g in unsure]
    cost = lambda item: lines(f"✗ {item[1]['name']}: {item[1]['sentence']}", 0.9, gap=0.2)  # noqa: E731
    tail = lines(f"✓ passing: {passing}", 0.9, gap=0.2) if passing else 0.0
    big = 2.6 * 1.15 / 1.35  # the verdict's word
    screens = fill(items, cost, BODY_LINES - tail, first=BODY_LINES - big - tail)
    bodies = []
    for i, chunk in enumerate(screens):
        last = i == len(screens) - 1
        more = "" if last else f"The remaining {sum(len(x) for x in screens[i + 1:])} on the next screen."
        bodies.append(_body("verdict", word=word if i == 0 else "", verdict=v.verdict, policy=True,
                            failing=[g for k, g in chunk if k == "fail"],
                            unsure=[g for k, g in chunk if k == "inconclusive"],
                            passing=passing if last else "", more=more))
    messages = [message] + [f"{message[:-1]}, continued." for _ in bodies[1:]]
    return _parts("verdict", "The verdict", messages, bodies)


def slice_size(c: Comparison, name: str) -> int:
    """How many of the suite's questions a slice holds (read from the questions' slice columns, which a
    comparison holds with or without the questions' IDs)."""
    return int(slices.mask(c.questions, parse_slice(name)).sum())


def _where_row(c: Comparison, r: pd.Series, gate: str | None) -> dict[str, Any]:
    n, size = int(r["n"]), slice_size(c, str(r["slice"]))
    p = r["p_holm"]
    return {"gate": gate, "what": (f"✗ {gate}: " if gate else "") + f"{measure_words(str(r['metric']))} on "
            f"{slice_words(str(r['slice']))}", "n": f"{n}" + (f" ({size - n} n/a)" if size > n else ""),
            "means": f"{num(r['baseline'])} → {num(r['candidate'])}", "delta": signed(r["delta"]),
            "p": pval(p) + (" ●" if significant(pd.Series([p]), SIGNIFICANT).iloc[0] else "")}


def label_gap_line(c: Comparison) -> str | None:
    """The label gaps in one line: on how many slices the label-coverage measures fell, and why that is
    not a regression of the system (`label_gap_warning`); None when they did not fall."""
    gaps = worse_slices(c)
    gaps = gaps[gaps["metric"].isin(LABEL_COVERAGE)]
    if gaps.empty:
        return None
    names = ", ".join(dict.fromkeys(measure_words(str(m)) for m in gaps["metric"]))
    warning = label_gap_warning(c.table)
    return (f"Label gaps, not quality: {names} fell on {len(gaps)} slices ({int(gaps['significant'].sum())} "
            "significant). " + (warning[0].upper() + warning[1:] + "." if warning else
                                "Unjudged documents count as not relevant: judge them before reading a "
                                "retrieval drop as real."))


def judge_line(c: Comparison) -> str | None:
    """Each figure a review sample corrects (pooled Support; Coverage and the abstention rates where a
    question sample covers a side) as the judge aligned it beside the sample's corrected estimate
    (`scoring.decide.corrected`), for each side where the two differ; None when no side's figure rests on
    a judge, or when every corrected estimate agrees (or has no interval yet)."""
    facts = c.corrected
    if facts is None:
        return None
    parts = []
    for metric in facts.sampled_metrics():
        what = "pooled Support" if metric == "support" else display_name(metric)
        items = "sentences" if metric == "support" else "answers"
        parts += [f"the {side}'s {what} is {found.judge:.3f} as the judge aligned its sentences, "
                  f"{k.estimate:.3f} corrected by the review sample (95% {k.low:.3f} to {k.high:.3f}; "
                  f"{k.reviewed} of {k.sampled} sampled {items} reviewed)"
                  for side, found in facts.judged_sides(metric=metric) if found.differs and (k := found.corrected).valid]
    return f"Judge vs reviewers: {'; '.join(parts)}." if parts else None


def _where_screen(c: Comparison) -> Screen:
    t = c.table.set_index(["metric", "slice"])
    gate_rows, seen = [], set()
    gates = [*c.verdict.failed_gates, *c.verdict.inconclusive_gates] if c.policy is not None else []
    for g in gates:
        if (g.metric, g.slice) in t.index and (g.metric, g.slice) not in seen:
            seen.add((g.metric, g.slice))
            row = pd.Series({**t.loc[(g.metric, g.slice)].to_dict(), "metric": g.metric, "slice": g.slice})
            gate_rows.append(_where_row(c, row, g.name))
    worse = quality_worse(c)
    others = worse[[(m, sl) not in seen for m, sl in zip(worse["metric"], worse["slice"])]]
    gap, judge = label_gap_line(c), judge_line(c)
    legend = ("n: questions both sides score there (n/a: the slice's questions left out). ● significant after "
              "Holm's adjustment over every metric x slice.")
    room = BODY_LINES - 1.2 - lines(legend, 0.8) - sum(lines(t, 0.85, gap=0.6) for t in (gap, judge) if t) - 0.8
    fit_rows = max(0, int(room / 1.15) - len(gate_rows))
    shown = [_where_row(c, r, None) for _, r in others.head(min(WHERE_LIMIT, fit_rows)).iterrows()]
    if not gate_rows and worse.empty:
        message = "No slice got worse on a quality measure."
    else:
        n_sig = int(worse["significant"].sum())
        lead = (f"The failing gates' rows first ({len(gate_rows)}); then " if gate_rows else "")
        message = (f"{lead}{len(worse)} slice x metric pairs worse on a quality measure, {n_sig} of them "
                   f"significant (Holm p < {SIGNIFICANT}).")
    more = len(others) - len(shown)
    if more > 0:
        legend += f" … and {more} more worse pairs (the Statistics page and the report list every one)."
    head = ("gate, measure on slice" if gate_rows else "measure on slice", "n", "baseline → candidate", "delta",
            "p (Holm)")
    return Screen("where", "Where it regressed", message,
                  _body("where", head=head, rows=gate_rows + shown, legend=legend, gap=gap, judge=judge)
                  if gate_rows or shown or gap or judge else "")


def _side(ev: Evidence, side: str, q: str) -> dict[str, Any]:
    answer = ev.answers.get((side, q))
    if answer is None:
        return {"side": side, "answer": None}
    every = ev.claims.get((side, q), [])
    claims = [{"supported": cl["supported"], "claim": clip(cl["claim"], 60),
               "citations": clip(", ".join(cl["citations"]) or "nothing", 60), "reasons": ", ".join(cl["reasons"])}
              for cl in every[:CLAIMS_LIMIT]]
    context = ", ".join(f'{r["doc"]}{" ✓" if r["relevant"] else ""}'
                        for r in ev.retrieved.get((side, q), []) if r["visible"]) or "nothing"
    return {"side": side, "answer": clip(answer["answer"] or "", TEXT_LIMIT // 2 + 40), "claims": claims,
            "more_claims": max(len(every) - CLAIMS_LIMIT, 0), "context": clip(context, 90),
            "error": clip(answer["error"], 120) if answer["error"] else None}


def _worst_screens(c: Comparison, ev: Evidence) -> list[Screen]:
    total = c.n_regressed_questions
    if not total:
        return [Screen("worst", "The worst regressions", "No question got worse.", "")]
    bodies = []
    for _, r in c.regressed_questions(WORST).iterrows():
        q = str(r["question_id"])
        flags = ", ".join(x for x in (str(r["type"]), "critical" if r["critical"] else "",
                                      "answerable" if r["answerable"] else "unanswerable") if x)
        card = {
            "question": q, "flags": flags, "text": clip(r["text"]),
            "changes": "; ".join(f"{name} {num(b)} → {num(k)}" for name, b, k in r["changes"][:4]),
            "more": max(len(r["changes"]) - 4, 0),
            "expected": clip("; ".join(f"{x['claim']} (from {', '.join(x['docs'])})" for x in ev.expected.get(q, []))),
            "baseline": _side(ev, "baseline", q), "candidate": _side(ev, "candidate", q)}
        bodies.append(_body("worst", cards=[card]))
    shown = len(bodies)
    message = (f"{total} of {len(c.questions)} questions scored worse on at least one measure (Judged@k included; "
               f"a gate counts its own measure and slice); the {shown} worst, critical first, then the most measures.")
    messages = [message] + [f"The {shown} worst regressions, critical first: what each side answered and cited."
                            for _ in bodies[1:]]
    return _parts("worst", "The worst regressions", messages, bodies)


def _changed_screens(c: Comparison) -> list[Screen]:
    diff = [(f, clip(b, SETTING_LIMIT), clip(k, SETTING_LIMIT)) for f, b, k in changed_settings(c)]
    if not diff:
        return [Screen("changed", "What changed", "The two runs' manifests declare the same settings.", "")]
    cost = lambda row: max(lines(row[0], 0.85, 0.3), lines(row[1], 0.85, 0.35), lines(row[2], 0.85, 0.35)) + 0.3  # noqa: E731
    screens = fill(diff, cost, BODY_LINES - 1.5)
    message = f"{len(diff)} setting(s) differ between the two runs."
    return _parts("changed", "What changed", [message] * len(screens),
                  [_body("changed", rows=rows, more="") for rows in screens])


def _limits_screens() -> list[Screen]:
    screens = fill(CAVEATS, lambda text: lines(text, 0.9, width=0.95, gap=0.35))
    return _parts("limits", "What this evaluation does not measure",
                  ["These numbers are evidence about this test set, not about everything."] * len(screens),
                  [_body("limits", caveats=caveats) for caveats in screens])


def screens(c: Comparison, ev: Evidence) -> list[Screen]:
    """The screens of the decision, in order: the verdict, where it regressed, the worst regressions,
    what changed, what this evaluation does not measure (a part that does not fit one screen continues on
    the next: keys ``worst``, ``worst-2``, ...)."""
    return [*_verdict_screens(c), _where_screen(c), *_worst_screens(c, ev), *_changed_screens(c),
            *_limits_screens()]


def slides_html(c: Comparison, ev: Evidence, *, generated: datetime | None = None) -> str:
    """The screens as one offline HTML file: one screen at a time, the keys to move, printable."""
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    return render("slides.html.j2", screens=[replace(s, body=Markup(s.body)) for s in screens(c, ev)],
                  baseline=c.baseline.name, candidate=c.candidate.name, suite=c.suite, suite_version=c.suite_version,
                  n_questions=len(c.questions), when=when)


def write_slides(baseline: str, candidate: str, *, db: Path, policy: str | Path | None, out: Path) -> Comparison:
    """Compare (read-only; the verdict recorded as `ragslice compare` does when there is a policy) and
    write the slides to `out`."""
    pol = load_policy(policy) if policy is not None else None
    comparison, evidence = compare_with_evidence(baseline, candidate, db=db, policy=pol, limit=WORST)
    if pol is not None:
        record(db, comparison)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(slides_html(comparison, evidence), encoding="utf-8")
    return comparison


__all__ = ["BODY_LINES", "LABEL_COVERAGE", "Screen", "changed_settings", "clip", "fill", "judge_line", "label_gap_line",
           "lines", "quality_worse", "screens", "slides_html", "worse_slices", "write_slides"]

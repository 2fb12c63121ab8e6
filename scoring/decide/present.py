"""The decision told in five screens, for the meeting room: `ragslice report --slides` and the
dashboard's Present page show the same screens, built here from one comparison.

1. the verdict and the gates that decided it (failing gates first);
2. where it regressed: the slices and question types whose mean got worse, with n and Holm's p;
3. the three worst regressions (critical first, then the most metrics), with both sides' evidence;
4. what changed between the two runs: the manifest fields, bookkeeping left out;
5. what this evaluation does not measure.

Every number is the comparison's own (`Comparison.table`, `verdict`, `regressed_questions`): the
screens select and word, they compute nothing. The slides file is one HTML file with inline CSS and
an inline script for the arrow keys; it loads nothing. Its HTML comes from the Jinja2 templates
``slides.html.j2`` and ``slides_parts.html.j2`` (autoescaped, as the report's).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup

from .comparison import Comparison
from .gate_words import inconclusive_words
from .policy import load_policy
from .report import CAVEATS, Evidence, compare_with_evidence, is_setting, manifest_diff, num, signed
from .report.as_html import render, templates
from .significance import significant
from .verdicts import record

WORST = 3
"""Regressions shown with their evidence."""
WHERE_LIMIT = 8
"""Slice x metric rows shown on the "where it regressed" screen."""
SIGNIFICANT = 0.05
"""Holm-adjusted p below which a change is called significant."""


@dataclass(frozen=True)
class Screen:
    """One screen: an id for links, a title, its one message in a sentence, and its body as HTML
    (every data string in it escaped)."""

    key: str
    title: str
    message: str
    body: str


def changed_settings(c: Comparison) -> list[tuple[str, str, str]]:
    """(field, baseline, candidate) for every manifest field that differs, bookkeeping left out."""
    return [(f, b, k) for f, b, k in manifest_diff(c) if is_setting(f)]


def worse_slices(c: Comparison) -> pd.DataFrame:
    """The slice x metric rows whose mean moved the wrong way, significant ones first, then by size."""
    t = c.table.copy()
    worse = t[t["delta"].notna() & (t["delta"] != 0)
              & ((t["delta"] < 0) == t["higher_is_better"].astype(bool))].copy()
    worse["significant"] = significant(worse["p_holm"], SIGNIFICANT)
    worse["size"] = worse["delta"].abs()
    return worse.sort_values(["significant", "size"], ascending=[False, False], kind="stable")


def _body(screen: str, **values: Any) -> str:
    """A screen's body: its macro of ``templates/slides_parts.html.j2`` over `values` (autoescaped)."""
    return getattr(templates().get_template("slides_parts.html.j2").module, screen)(values)


def _verdict_screen(c: Comparison) -> Screen:
    v = c.verdict
    word = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}.get(v.verdict, "NO VERDICT")
    if c.policy is None:
        return Screen("verdict", "The verdict", "No policy was given, so there is no verdict.",
                      _body("verdict", word=word, policy=False))
    failing = list(v.failed_gates)
    unsure = [{"name": g.name, "words": inconclusive_words(g)} for g in v.inconclusive_gates]
    passing = [g for g in v.gates if g.passed]
    if failing:
        message = f"{len(failing)} of {len(v.gates)} gates fail."
    elif unsure:
        message = (f"No gate fails, but {len(unsure)} of {len(v.gates)} could not tell: their questions cannot "
                   "detect a drop of their margin.")
    else:
        message = f"All {len(v.gates)} gates pass."
    body = _body("verdict", word=word, verdict=v.verdict, policy=True, failing=failing, unsure=unsure,
                 passing=" · ".join(g.name for g in passing))
    return Screen("verdict", "The verdict", message, body)


def _where_screen(c: Comparison) -> Screen:
    worse = worse_slices(c)
    if worse.empty:
        return Screen("where", "Where it regressed", "No slice got worse on any metric.", "")
    n_sig = int(worse["significant"].sum())
    slices = list(dict.fromkeys(worse["slice"]))
    message = (f"Worse on {len(worse)} slice x metric pairs across {len(slices)} slices; {n_sig} of them "
               f"significant (Holm p < {SIGNIFICANT}).")
    rows = [(str(r["slice"]), str(r["metric_name"]), str(int(r["n"])), f"{num(r['baseline'])} → {num(r['candidate'])}",
             signed(r["delta"]), f"{num(r['p_holm'])}{' ●' if r['significant'] else ''}")
            for _, r in worse.head(WHERE_LIMIT).iterrows()]
    return Screen("where", "Where it regressed", message,
                  _body("where", rows=rows, more=max(len(worse) - WHERE_LIMIT, 0)))


def _side(ev: Evidence, side: str, q: str) -> dict[str, Any]:
    answer = ev.answers.get((side, q))
    if answer is None:
        return {"side": side, "answer": None}
    claims = [{"supported": cl["supported"], "claim": cl["claim"],
               "citations": ", ".join(cl["citations"]) or "nothing", "reasons": ", ".join(cl["reasons"])}
              for cl in ev.claims.get((side, q), [])]
    context = ", ".join(f'{r["doc"]}{" ✓" if r["relevant"] else ""}'
                        for r in ev.retrieved.get((side, q), []) if r["visible"]) or "nothing"
    return {"side": side, "answer": str(answer["answer"] or ""), "claims": claims, "context": context,
            "error": str(answer["error"]) if answer["error"] else None}


def _worst_screen(c: Comparison, ev: Evidence) -> Screen:
    total = c.n_regressed_questions
    if not total:
        return Screen("worst", "The worst regressions", "No question got worse.", "")
    cards = []
    for _, r in c.regressed_questions(WORST).iterrows():
        q = str(r["question_id"])
        flags = ", ".join(x for x in (str(r["type"]), "critical" if r["critical"] else "",
                                      "answerable" if r["answerable"] else "unanswerable") if x)
        cards.append({
            "question": q, "flags": flags, "text": str(r["text"]),
            "changes": "; ".join(f"{name} {num(b)} → {num(k)}" for name, b, k in r["changes"][:4]),
            "more": max(len(r["changes"]) - 4, 0),
            "expected": "; ".join(f"{x['claim']} (from {', '.join(x['docs'])})" for x in ev.expected.get(q, [])),
            "baseline": _side(ev, "baseline", q), "candidate": _side(ev, "candidate", q)})
    message = (f"{total} questions are worse on at least one metric; the {min(WORST, total)} worst, "
               "critical first, with what each side answered and cited.")
    return Screen("worst", "The worst regressions", message, _body("worst", cards=cards))


def _changed_screen(c: Comparison) -> Screen:
    diff = changed_settings(c)
    if not diff:
        return Screen("changed", "What changed", "The two runs' manifests declare the same settings.", "")
    return Screen("changed", "What changed", f"{len(diff)} setting(s) differ between the two runs.",
                  _body("changed", rows=diff))


def _limits_screen() -> Screen:
    return Screen("limits", "What this evaluation does not measure",
                  "These numbers are evidence about this test set, not about everything.",
                  _body("limits", caveats=CAVEATS))


def screens(c: Comparison, ev: Evidence) -> list[Screen]:
    """The five screens of the decision, in order."""
    return [_verdict_screen(c), _where_screen(c), _worst_screen(c, ev), _changed_screen(c), _limits_screen()]


def slides_html(c: Comparison, ev: Evidence, *, generated: datetime | None = None) -> str:
    """The screens as one offline HTML file: one screen at a time, arrow keys to move, printable."""
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


__all__ = ["Screen", "changed_settings", "screens", "slides_html", "worse_slices", "write_slides"]

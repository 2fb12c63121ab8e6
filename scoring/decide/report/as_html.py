"""The offline HTML report: one self-contained file, inline CSS, charts as inline SVG, no script and no
external resource.

Python gathers each section's values (`view`); the Jinja2 templates in ``scoring/decide/templates``
lay them out with autoescape on, so every data string (question text, answers, claim text, manifest
values, policy text) is escaped where it is printed, quotes included, as `html.escape` spells them.
"""
from __future__ import annotations

import difflib
import html
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from functools import cache
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

from ...metrics.registry import display_name
from .. import ppi
from ..comparison import HOLM_FAMILY, Comparison, Family
from ..gate_words import detection_line, detection_words, threshold_words
from .evidence import Evidence
from .wording import (
    CAVEATS, DETECTION_LEGEND, EVIDENCE_LIMIT, FLAKY_LIMIT, MARK_LEGEND, all_warnings, family_verdict_line,
    gate_result, inconclusive_lines, interval, manifest_diff, marks, matrix_cells, matrix_legend, mde_text,
    metric_label, missing, num, pval, repeat_value, side_text, signed, verdict_line,
)

COMPARISON_HEAD = ("metric", "slice", "n", "baseline", "candidate", "delta", "95% CI", "p t-test", "p Wilcoxon",
                   "p randomization", "p Holm", "+ / − / =", "mde", "bound", "marks")


def _escaped(value: Any) -> Any:
    """Every value a template prints, escaped as `html.escape` escapes (quotes too); markup that a
    template rendered (a `Markup`) passes as it is."""
    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape(str(value)))


@cache
def templates() -> jinja2.Environment:
    """The report's and the slides' templates (package data of `scoring.decide`), autoescaped."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("scoring.decide", "templates"), autoescape=True,
                             finalize=_escaped, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.globals["comparison_head"] = COMPARISON_HEAD
    return env


def render(template: str, **values: Any) -> str:
    """One template of ``scoring/decide/templates`` rendered with `values`."""
    return templates().get_template(template).render(**values)


# --- the chart -----------------------------------------------------------------------------------


def forest_svg(rows: pd.DataFrame, title: str) -> str:
    """Horizontal bars of the mean delta with bootstrap-interval whiskers, one row per metric.

    Green when the change is better for the metric's direction, red when worse, grey when zero.
    """
    rows = rows.reset_index(drop=True)
    if not len(rows):
        return ""
    values = [v for col in ("delta", "ci_low", "ci_high") for v in rows[col] if not missing(v)]
    span = max([abs(float(v)) for v in values] + [0.05]) * 1.1
    width, left, right, row_h, top = 760, 130, 200, 24, 28
    plot = width - left - right
    height = top + row_h * len(rows) + 20

    def x(v: float) -> float:
        return left + (float(v) + span) / (2 * span) * plot

    chart: dict[str, Any] = {
        "title": title, "width": width, "height": height, "left": left, "zero": f"{x(0):.1f}", "top": top - 6,
        "bottom": height - 14, "axis": height - 2, "name_x": left - 8, "label_x": width - right + 8,
        "ticks": [{"x": f"{x(-span):.1f}", "label": f"{-span:+.2f}"}, {"x": f"{x(0) - 4:.1f}", "label": "0"},
                  {"x": f"{x(span) - 36:.1f}", "label": f"{span:+.2f}"}],
        "rows": []}
    for i, r in rows.iterrows():
        y = top + i * row_h + row_h / 2
        delta = r["delta"]
        row: dict[str, Any] = {"name": str(r["metric_name"]), "n": int(r["n"]), "y": f"{y:.1f}",
                               "text_y": f"{y + 4:.1f}", "bar": None, "whisker": None,
                               "label": f"{signed(delta)} {interval(r['ci_low'], r['ci_high'])}"}
        if not missing(delta):
            better = float(delta) if r["higher_is_better"] else -float(delta)
            colour = "#2da44e" if better > 1e-9 else "#cf222e" if better < -1e-9 else "#8c959f"
            x0, x1 = sorted((x(0), x(delta)))
            row["bar"] = {"x": f"{x0:.1f}", "y": f"{y - 7:.1f}", "width": f"{max(x1 - x0, 1.5):.1f}", "colour": colour}
        if not (missing(r["ci_low"]) or missing(r["ci_high"])):
            row["whisker"] = {"low": f"{x(r['ci_low']):.1f}", "high": f"{x(r['ci_high']):.1f}",
                              "cap_top": f"{y - 5:.1f}", "cap_bottom": f"{y + 5:.1f}"}
        chart["rows"].append(row)
    return render("forest.svg.j2", c=chart)


# --- one comparison's values ---------------------------------------------------------------------


def _comparison_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    return [{"cells": (r["metric_name"], r["slice"], str(r["n"]), num(r["baseline"]), num(r["candidate"]),
                       signed(r["delta"]), interval(r["ci_low"], r["ci_high"]), pval(r["p_ttest"]),
                       pval(r["p_wilcoxon"]), pval(r["p_randomization"]), pval(r["p_holm"]),
                       f"{r['improved']} / {r['regressed']} / {r['unchanged']}", mde_text(r.get("mde"), r["n"]),
                       num(r.get("bound"))),
             "warnings": "; ".join(r["warnings"]), "marks": marks(r["warnings"])}
            for _, r in table.iterrows()]


def _chart_and_rows(rows: pd.DataFrame, title: str) -> dict[str, Any]:
    return {"chart": Markup(forest_svg(rows, title)), "rows": _comparison_rows(rows)}


def _gates(c: Comparison) -> list[dict[str, Any]] | None:
    if c.policy is None:
        return None
    return [{"name": g.name, "passed": g.passed, "outcome": g.outcome, "result": gate_result(g),
             "observed": g.observed_text, "threshold": threshold_words(g), "slice": g.slice, "n": g.n,
             "reason": g.reason, "warning": g.warning, "power": detection_words(g), "detects": detection_line(g)}
            for g in c.verdict.gates]


def _aggregation(c: Comparison) -> list[tuple[Any, ...]]:
    t = c.table[c.table["baseline_pooled"].notna() | c.table["candidate_pooled"].notna()]
    t = t[t["slice"].isin(["all", "answerable", "critical"])]
    return [(r["metric_name"], r["slice"], str(r["n"]), num(r["baseline"]), num(r["baseline_pooled"]),
             num(r["candidate"]), num(r["candidate_pooled"])) for _, r in t.iterrows()]


def _side_evidence(ev: Evidence, side: str, q: str) -> dict[str, Any]:
    answer = ev.answers.get((side, q))
    claims = [{"claim": cl["claim"], "text": cl["text"] or "", "citations": ", ".join(cl["citations"]) or "none",
               "supported": cl["supported"], "reasons": ", ".join(cl["reasons"])}
              for cl in ev.claims.get((side, q), [])]
    retrieved = ", ".join(
        f"{r['rank']}. {r['doc']}{' ✓' if r['relevant'] else ''}{'' if r['visible'] else ' (beyond k)'}"
        f"{' ⚠ restricted' if r['restricted'] else ''}" for r in ev.retrieved.get((side, q), []))
    shown = None if answer is None else {"error": str(answer["error"]) if answer["error"] else None,
                                         "answer": None if answer["answer"] is None else str(answer["answer"])}
    return {"side": side, "answer": shown, "claims": claims, "retrieved": retrieved}


def _regressions(c: Comparison, ev: Evidence) -> dict[str, Any] | None:
    questions = c.regressed_questions()
    if not len(questions):
        return None
    regs = c.regressions()
    more = len(questions) > EVIDENCE_LIMIT
    intro = (f"{len(regs)} question x metric pairs are worse than the baseline, on {len(questions)} questions "
             "(critical first, then the most metrics). Evidence shows the first run of each side"
             + (f"; the first {EVIDENCE_LIMIT} questions have evidence cards, and the table after them lists every "
                "regressed question" if more else ""))
    by_question = dict(tuple(regs.groupby("question_id", sort=False)))
    cards = []
    for q in questions.head(EVIDENCE_LIMIT)["question_id"]:
        group = by_question[q]
        first = group.iloc[0]
        flags = ", ".join(x for x in (first["type"], first["split"], "critical" if first["critical"] else "",
                                      "answerable" if first["answerable"] else "unanswerable") if x)
        expected = "; ".join(x["claim"] + (f" ({x['proposition']})" if x["proposition"] else "")
                             + f" from {', '.join(x['docs'])}" for x in ev.expected.get(str(q), []))
        cards.append({
            "question": str(q), "flags": flags, "text": str(first["text"]),
            "disputed": str(first["disputed"]) if first["disputed"] else None,
            "changes": [(r["metric_name"], num(r["baseline"]), num(r["candidate"]), signed(r["delta"]))
                        for _, r in group.iterrows()],
            "expected": expected, "baseline": _side_evidence(ev, "baseline", str(q)),
            "candidate": _side_evidence(ev, "candidate", str(q))})
    every = [(str(r["question_id"]), str(r["text"]), str(r["type"]), str(r["split"]), "yes" if r["critical"] else "",
              "; ".join(f"{name} {num(b)} → {num(k)}" for name, b, k in r["changes"]))
             for _, r in questions.iterrows()] if more else None
    return {"intro": intro, "cards": cards, "every": every}


def _flaky(c: Comparison) -> dict[str, Any]:
    if not len(c.flaky):
        repeats = len(c.baseline.run_ids) > 1 or len(c.candidate.run_ids) > 1
        return {"rows": None, "intro": "No question's outcome differs between repeats." if repeats
                else "Neither side has repeats, so flakiness cannot be observed."}
    per_question = c.flaky.groupby(["side", "question_id"], sort=False)
    rows = []
    for (side, q), group in per_question:
        if len(rows) >= FLAKY_LIMIT:
            break
        rows.append({"side": str(side), "question": str(q), "lines": [
            f"{metric_label(m)}: {' / '.join(repeat_value(x) for x in v)}"
            for m, v in zip(group["metric"], group["values"])]})
    return {"rows": rows, "limit": FLAKY_LIMIT, "truncated": per_question.ngroups > FLAKY_LIMIT,
            "intro": f"{per_question.ngroups} side x question pairs ({len(c.flaky)} question x metric) differ "
                     "between repeats; values are listed in repeat order"}


def _manifests(c: Comparison) -> dict[str, Any]:
    runs = [{"role": role, "run": run, "json": json.dumps(side.manifests[run], indent=2, sort_keys=True)}
            for role, side in (("baseline", c.baseline), ("candidate", c.candidate)) for run in side.run_ids]
    first_b = json.dumps(c.baseline.manifests[c.baseline.run_ids[0]], indent=2, sort_keys=True).splitlines()
    first_c = json.dumps(c.candidate.manifests[c.candidate.run_ids[0]], indent=2, sort_keys=True).splitlines()
    unified = [{"text": line, "cls": "diff-add" if line.startswith("+") and not line.startswith("+++") else
                "diff-del" if line.startswith("-") and not line.startswith("---") else ""}
               for line in difflib.unified_diff(first_b, first_c, "baseline", "candidate", lineterm="", n=1)]
    return {"diff": manifest_diff(c), "runs": runs, "unified": unified}


def _recheck(check: Any) -> dict[str, Any] | None:
    return None if check is None else {"n_disputed": check.n_disputed, "verdict": check.verdict,
                                       "differences": list(check.differences)}


def view(c: Comparison, evidence: Evidence, across: str = "metric x slice") -> dict[str, Any]:
    """Every value one comparison's report shows, section by section (``sections``: (id, title) in
    order); `across`: what its p_holm spans."""
    sections = [("verdict", "Verdict and gates")]
    if c.policy is not None:
        sections.append(("policy", "The acceptance policy"))
    sections += [("headline", "Headline deltas"), ("slices", "Slices"), ("aggregation", "Aggregation side by side"),
                 ("regressions", "Every regression, with its evidence"), ("flaky", "Flaky questions"),
                 ("operations", "Failures, latency and cost"), ("labels", "Disputed labels and held-out use"),
                 ("manifests", "Manifests"), ("caveats", "What this evaluation does not measure"),
                 ("method", "Method")]
    disputed = None
    if c.n_disputed:
        q = c.questions[c.questions["disputed"].notna()]
        disputed = {"questions": [(str(i), str(r["disputed"])) for i, r in q.iterrows()],
                    "recheck": _recheck(c.verdict.disputed)}
    heldout = None if c.heldout is None else c.heldout.describe()
    return {
        "sections": sections,
        "baseline": c.baseline.name, "candidate": c.candidate.name, "suite": c.suite,
        "suite_version": c.suite_version, "corpus_version": c.corpus_version, "n_questions": len(c.questions),
        "verdict_word": c.verdict.verdict, "verdict_line": verdict_line(c),
        "baseline_text": side_text(c, "baseline"), "candidate_text": side_text(c, "candidate"),
        "heldout": heldout, "heldout_sentence": None if heldout is None else heldout[0].upper() + heldout[1:],
        "gates": _gates(c), "warnings": all_warnings(c), "could_not_tell": inconclusive_lines(c),
        "policy": None if c.policy is None else {"name": c.policy.name, "path": c.policy.path,
                                                 "sha256": c.policy.sha256, "text": c.policy.text},
        "headline": _chart_and_rows(c.table[c.table["slice"] == "all"], "All questions: mean delta and 95% interval"),
        "slices": [{"name": s, **_chart_and_rows(c.table[c.table["slice"] == s], f"{s}: mean delta and 95% interval")}
                   for s in dict.fromkeys(c.table["slice"]) if s != "all"],
        "aggregation": _aggregation(c),
        "regressions": _regressions(c, evidence),
        "flaky": _flaky(c),
        "operations": [(r["side"], str(r["records"]), num(r["failure_rate"]), num(r["latency_p50"], 0),
                        num(r["latency_p95"], 0), num(r["cost_mean"], 4), num(r["cost_total"], 4))
                       for _, r in c.operations.iterrows()],
        "disputed": disputed,
        "alignment": None if c.alignment is None else {"summary": list(c.alignment.summary()),
                                                       "recheck": _recheck(c.verdict.unreviewed)},
        "corrected": _corrected(c),
        "manifests": _manifests(c),
        "caveats": CAVEATS,
        "method": c.method(across), "legend": MARK_LEGEND, "detection_legend": DETECTION_LEGEND,
    }


def _corrected(c: Comparison) -> dict[str, Any] | None:
    """Per metric a sample corrects (Support; Coverage and the abstention rates where a question sample
    covers a side) and side resting on an automatic alignment: judge-only, corrected with its 95% interval
    (or why there is none), reviewed-only, the sample, sampled and reviewed (`scoring.decide.corrected`);
    the paired deltas' sentences with them."""
    facts = c.corrected
    if facts is None:
        return None
    rows = []
    metrics = facts.sampled_metrics()
    for metric in metrics:
        for side, found in facts.judged_sides(metric=metric):
            k = found.corrected
            interval = f"{k.low:.3f} to {k.high:.3f}" if k.valid else f"none: {k.reason}"
            rows.append((display_name(metric), side, num(found.judge), num(k.estimate), interval,
                         num(found.reviewed_only.estimate), found.sample or "none", str(k.sampled), str(k.reviewed),
                         str(found.judged)))
    if not rows:
        return None
    what = "Support" if metrics == ["support"] else "Support, Coverage and abstention"
    intro = ("Pooled Support on all questions of each side resting on an automatic alignment: as the judge aligned "
             f"it, corrected by the review sample {facts.sample} ({ppi.METHOD}), and from the reviewed sentences "
             "alone." + ("" if metrics == ["support"] else " Coverage and the abstention rates likewise, from a "
                         "sample of whole answers (each answer's sentences all reviewed)."))
    return {"rows": rows, "summary": list(facts.summary()), "sample": facts.sample, "method": ppi.METHOD,
            "what": what, "intro": intro}


def _when(generated: datetime | None) -> str:
    return (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")


def html_report(c: Comparison, evidence: Evidence, *, generated: datetime | None = None) -> str:
    """The self-contained HTML report (no script, no external resource)."""
    return render("report.html.j2", v=view(c, evidence), when=_when(generated),
                  verdict_text=c.verdict.verdict.upper() if c.policy is not None else "FAIL")


def family_html(f: Family, evidence: Sequence[Evidence], *, generated: datetime | None = None) -> str:
    """One self-contained HTML file for one or more candidates: one candidate as `html_report`; several
    as the family's verdict and matrix, then each candidate's full report (its sections' anchors
    prefixed with the candidate's position, ``c1-verdict`` ...)."""
    if f.single:
        return html_report(f.comparisons[0], evidence[0], generated=generated)
    first = f.comparisons[0]
    names, rows = matrix_cells(f)
    family = {
        "baseline": f.baseline.name, "suite": first.suite, "suite_version": first.suite_version,
        "corpus_version": first.corpus_version, "n_questions": len(first.questions), "verdict_word": f.verdict,
        "verdict_line": family_verdict_line(f), "baseline_text": side_text(first, "baseline"),
        "legend": matrix_legend(f), "floor": f.resolution_warning(), "matrix_head": ["candidate", "verdict", *names],
        "matrix": [{"name": name, "verdict": c.verdict.verdict, "cells": cells}
                   for (name, cells), c in zip(rows, f.comparisons)],
        "candidates": [view(c, ev, HOLM_FAMILY) for c, ev in zip(f.comparisons, evidence)],
    }
    return render("family.html.j2", f=family, when=_when(generated), verdict_text=f.verdict.upper())


__all__ = ["COMPARISON_HEAD", "family_html", "forest_svg", "html_report", "render", "templates", "view"]

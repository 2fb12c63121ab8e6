"""The pull-request rendering of a comparison (``ragslice compare --format markdown``), and of a
release matrix. Every data string goes through `md`: markdown's special characters escaped, HTML's
as entities, newlines flattened, so no text adds a table column or markup."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..comparison import HOLM_FAMILY, Comparison, Family
from ..gate_words import detection_line, detection_words, threshold_words
from ..gates import GateResult
from .wording import (
    DETECTION_LEGEND, MARK_LEGEND, MARKDOWN_LIMIT, all_warnings, family_verdict_line, gate_result, inconclusive_lines,
    interval, marks, matrix_cells, matrix_legend, mde_text, metric_label, num, plural, pval, repeat_value, signed,
    verdict_line,
)

ICONS = {"pass": "✅", "fail": "❌", "inconclusive": "❔"}
"""The verdict's icon in a pull-request comment (➖ without a verdict)."""


_MD_SPECIAL = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                             **{c: f"\\{c}" for c in "\\`*_[]|#"}})


def md(value: Any) -> str:
    """Text safe inside a markdown table cell: markup characters escaped (HTML ones as entities),
    newlines flattened."""
    return str(value).replace("\r", " ").replace("\n", " ").translate(_MD_SPECIAL)


def _gates_table(gates: Sequence[GateResult]) -> list[str]:
    """The gates as a markdown table: result, observed value, bound (`gate_words.threshold_words`), n, reason."""
    out = ["| gate | result | observed | threshold | n | reason |", "| --- | --- | ---: | --- | ---: | --- |"]
    for g in gates:
        reason = md(g.reason) + (f" *Note: {md(g.warning)}*" if g.warning else "")
        words, figures = detection_words(g), detection_line(g)
        reason += (f" *Power: {md(words)}.*" if words else "") + (f" *Detects: {md(figures)}.*" if figures else "")
        result = gate_result(g)
        out.append(f"| {md(g.name)} | {result if result == 'pass' else f'**{result}**'} | {md(g.observed_text)} | "
                   f"{md(threshold_words(g))} | {g.n} | {reason} |")
    return out


def markdown(c: Comparison) -> str:
    """A pull-request comment: verdict, gates, headline deltas, regressions, warnings, method."""
    v = c.verdict
    icon = ICONS.get(v.verdict, "➖")
    out = [
        f"## {icon} ragslice: {md(verdict_line(c))}",
        "",
        f"**Baseline** `{md(c.baseline.name)}` ({md(', '.join(c.baseline.run_ids))}) → **candidate** "
        f"`{md(c.candidate.name)}` ({md(', '.join(c.candidate.run_ids))}) on suite `{md(c.suite)}` version "
        f"`{md(c.suite_version)}`, corpus `{md(c.corpus_version)}`, {len(c.questions)} questions.",
        "",
    ]
    if c.heldout is not None:
        out += [f"**Held-out:** {md(c.heldout.describe())}.", ""]
    if v.inconclusive:
        out += ["**Could not tell:**", ""] + [f"- {md(line)}" for line in inconclusive_lines(c)] + [""]
    if c.policy is not None:
        out += [f"Policy **{md(c.policy.name)}** (`{md(c.policy.path)}`, sha256 `{c.policy.sha256[:12]}`)", "",
                *_gates_table(v.gates), ""]
    if v.disputed is not None:
        out += [f"**Without the {v.disputed.n_disputed} disputed question(s):** {v.disputed.verdict}", ""]
        out += [f"- {md(d)}" for d in v.disputed.differences] + [""]
    if c.alignment is not None:
        out += ["**Free-text answers:**", ""] + [f"- {md(s)}" for s in c.alignment.summary()] + [""]
    if c.corrected is not None and c.corrected.summary():
        out += ["**Judge vs corrected (prediction-powered, from a review sample):**", ""] + [
            f"- {md(s)}" for s in c.corrected.summary()] + [""]
    if v.unreviewed is not None:
        out += [f"**Without the {v.unreviewed.n_disputed} question(s) resting on unreviewed automatic alignments:** "
                f"{v.unreviewed.verdict}", ""]
        out += [f"- {md(d)}" for d in v.unreviewed.differences] + [""]
    headline = c.table[c.table["slice"] == "all"]
    out += ["### Headline (all questions, paired)", "",
            "| metric | n | baseline | candidate | delta | 95% CI | p (randomization) | p (Holm) | + / − / = |",
            "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
    for _, r in headline.iterrows():
        out.append(f"| {md(r['metric_name'])} | {r['n']} | {num(r['baseline'])} | {num(r['candidate'])} | "
                   f"{signed(r['delta'])} | {interval(r['ci_low'], r['ci_high'])} | {pval(r['p_randomization'])} | "
                   f"{pval(r['p_holm'])} | {r['improved']} / {r['regressed']} / {r['unchanged']} |")
    regs = c.regressed_questions()
    out += ["", f"### Regressions ({plural(len(regs), 'question')}, critical first)", ""]
    if len(regs):
        out += ["| question | type | split | worse on (baseline → candidate) |", "| --- | --- | --- | --- |"]
        for _, r in regs.head(MARKDOWN_LIMIT).iterrows():
            crit = " (critical)" if r["critical"] else ""
            changes = "; ".join(f"{md(name)} {num(b)} → {num(k)}" for name, b, k in r["changes"])
            out.append(f"| `{md(r['question_id'])}`{crit} {md(r['text'])} | {md(r['type'])} | {md(r['split'])} | "
                       f"{changes} |")
        if len(regs) > MARKDOWN_LIMIT:
            out += ["", f"… and {len(regs) - MARKDOWN_LIMIT} more questions (every one in the HTML report)."]
    else:
        out.append("No question is worse on any metric.")
    if len(c.flaky):
        out += ["", f"### Flaky between repeats ({len(c.flaky)} question x metric)", ""]
        out += [f"- {md(f['side'])} `{md(f['question_id'])}` {md(metric_label(f['metric']))}: "
                f"{md(' / '.join(repeat_value(x) for x in f['values']))}"
                for _, f in c.flaky.head(MARKDOWN_LIMIT).iterrows()]
        if len(c.flaky) > MARKDOWN_LIMIT:
            out.append(f"- … and {len(c.flaky) - MARKDOWN_LIMIT} more")
    warnings = all_warnings(c)
    if warnings:
        out += ["", "### Warnings", ""] + [f"- {md(w)}" for w in warnings]
    out += ["", "<details><summary>Every metric x slice</summary>", "",
            "| metric | slice | n | baseline | candidate | delta | 95% CI | p t-test | p Wilcoxon | p randomization "
            "| p Holm | + | − | = | mde | bound | marks |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
            "| --- |"]
    for _, r in c.table.iterrows():
        out.append(f"| {md(r['metric_name'])} | {md(r['slice'])} | {r['n']} | {num(r['baseline'])} | "
                   f"{num(r['candidate'])} | {signed(r['delta'])} | {interval(r['ci_low'], r['ci_high'])} | "
                   f"{pval(r['p_ttest'])} | {pval(r['p_wilcoxon'])} | {pval(r['p_randomization'])} | "
                   f"{pval(r['p_holm'])} | {r['improved']} | {r['regressed']} | {r['unchanged']} | "
                   f"{mde_text(r.get('mde'), r['n'])} | {num(r.get('bound'))} | {md(marks(r['warnings']))} |")
    out += ["", md(MARK_LEGEND), "", md(DETECTION_LEGEND), "", "</details>", "",
            f"*Method: {md(c.method())}.*"]
    return "\n".join(out)



def family_markdown(f: Family) -> str:
    """A pull-request comment for one or more candidates: one candidate as `markdown`; several as the
    family's verdict, the matrix and each candidate's gates."""
    if f.single:
        return markdown(f.comparisons[0])
    first = f.comparisons[0]
    icon = ICONS.get(f.verdict, "➖")
    out = [
        f"## {icon} ragslice: {md(family_verdict_line(f))}",
        "",
        f"**Baseline** `{md(f.baseline.name)}` ({md(', '.join(f.baseline.run_ids))}) against "
        f"{len(f.comparisons)} candidates on suite `{md(first.suite)}` version `{md(first.suite_version)}`, corpus "
        f"`{md(first.corpus_version)}`, {len(first.questions)} questions.",
        "",
    ]
    names, rows = matrix_cells(f)
    out += ["| candidate | verdict | " + " | ".join(md(n) for n in names) + " |",
            "| --- | --- | " + " | ".join("---:" for _ in names) + " |"]
    for (name, cells), c in zip(rows, f.comparisons):
        verdict = {"pass": "pass", "fail": "**FAIL**", "inconclusive": "**INCONCLUSIVE**"}.get(c.verdict.verdict,
                                                                                          c.verdict.verdict)
        out.append(f"| `{md(name)}` | {verdict} | " + " | ".join(cells) + " |")
    out += ["", md(matrix_legend(f)) + ".", ""]
    if f.resolution_warning():
        out += [f"**Warning:** {md(f.resolution_warning())}.", ""]
    for c in f.comparisons:
        out += [f"### `{md(c.candidate.name)}`: {md(verdict_line(c))}", ""]
        if c.verdict.gates:
            out += [*_gates_table(c.verdict.gates), ""]
        warnings = all_warnings(c)
        if warnings:
            out += [f"- {md(w)}" for w in warnings] + [""]
    out.append(f"*Method: {md(first.method(HOLM_FAMILY))}.*")
    return "\n".join(out)



__all__ = ["family_markdown", "markdown", "md"]

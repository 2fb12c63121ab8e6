"""The terminal rendering of a comparison (``ragslice compare``), and of a release matrix."""
from __future__ import annotations

import pandas as pd

from ..comparison import HOLM_FAMILY, Comparison, Family
from ..gate_words import detection_line, detection_words
from ..gates import GateResult
from .wording import (
    DETECTION_LEGEND, MARK_LEGEND, TEXT_LIMIT, all_warnings, family_verdict_line, gate_result, inconclusive_lines,
    interval, marks, matrix_cells, matrix_legend, mde_text, metric_label, num, plural, pval, repeat_value, side_text,
    signed, verdict_line,
)




def text(c: Comparison) -> str:
    """The terminal rendering of ``ragslice compare``."""
    lines = [
        f"ragslice compare {c.baseline.name} -> {c.candidate.name}",
        f"suite {c.suite} version {c.suite_version}, corpus {c.corpus_version}; {len(c.questions)} questions",
        side_text(c, "baseline"),
        side_text(c, "candidate"),
        "",
        f"VERDICT: {verdict_line(c)}",
    ]
    if c.heldout is not None:
        lines.append(f"Held-out: {c.heldout.describe()} on {c.suite} version {c.suite_version}")
    if c.verdict.inconclusive:
        lines += ["Could not tell:"] + [f"  {line}" for line in inconclusive_lines(c)]
    v = c.verdict
    if c.policy is not None:
        lines += ["", f"Gates (policy {c.policy.name}, {c.policy.path}, sha256 {c.policy.sha256[:12]})"]
        lines += [line for g in v.gates for line in _gate_lines(g)]
    if v.disputed is not None:
        d = v.disputed
        lines += ["", f"Without the {d.n_disputed} disputed question(s): {d.verdict.upper()}"]
        lines += [f"  {diff}" for diff in d.differences] or ["  no gate value changes"]
    if c.alignment is not None:
        lines += ["", "Free-text answers"] + [f"  {s}" for s in c.alignment.summary()]
    if c.corrected is not None and c.corrected.summary():
        lines += ["", "Judge vs corrected (prediction-powered, from a review sample)"] + [
            f"  {s}" for s in c.corrected.summary()]
    if v.unreviewed is not None:
        u = v.unreviewed
        lines += ["", f"Without the {u.n_disputed} question(s) resting on unreviewed automatic alignments: "
                      f"{u.verdict.upper()}"]
        lines += [f"  {diff}" for diff in u.differences] or ["  no gate value changes"]
    lines += ["", "Comparisons (delta = candidate - baseline over paired questions; n/a pairs excluded)",
              _text_table(c.table)]
    lines += ["", f"Marks: {MARK_LEGEND}", f"Columns: {DETECTION_LEGEND}", f"Method: {c.method()}."]
    regs = c.regressed_questions()
    n_pairs = int(regs["n_metrics"].sum()) if len(regs) else 0
    lines += ["", f"Regressions ({plural(len(regs), 'question')}, {n_pairs} question x metric; critical first)"]
    for _, r in regs.head(TEXT_LIMIT).iterrows():
        changes = "; ".join(f"{name} {num(b)} -> {num(k)}" for name, b, k in r["changes"])
        lines.append(f"  {r['question_id']} [{r['type']}, {r['split']}{', critical' if r['critical'] else ''}]: "
                     f"{changes}")
    if len(regs) > TEXT_LIMIT:
        lines.append(f"  ... and {len(regs) - TEXT_LIMIT} more questions (every one: --format json or ragslice report)")
    if not len(regs):
        lines.append("  none")
    if len(c.flaky):
        lines += ["", f"Flaky (outcome differs between repeats): {len(c.flaky)} question x metric"]
        for _, f in c.flaky.head(TEXT_LIMIT).iterrows():
            lines.append(f"  {f['side']} {f['question_id']} {metric_label(f['metric'])}: "
                         f"{' / '.join(repeat_value(x) for x in f['values'])}")
        if len(c.flaky) > TEXT_LIMIT:
            lines.append(f"  ... and {len(c.flaky) - TEXT_LIMIT} more (every one: --format json or ragslice report)")
    ops = _operations_lines(c)
    if ops:
        lines += ["", "Operations (every record of every repeat)", *ops]
    warnings = all_warnings(c)
    if warnings:
        lines += ["", "Warnings"] + [f"  - {w}" for w in warnings]
    return "\n".join(lines)



def _gate_lines(g: GateResult) -> list[str]:
    """A gate as the terminal lists it: pass, FAIL or INCONCLUSIVE, its name and reason, its note when it
    has one, and for a max_drop gate what its sample can detect (with the words when it cannot detect
    its margin)."""
    lines = [f"  {gate_result(g)}  {g.name}: {g.reason}"]
    if g.warning:
        lines.append(f"        note: {g.warning}")
    words, figures = detection_words(g), detection_line(g)
    if words:
        lines.append(f"        power: {words}")
    if figures:
        lines.append(f"        detects: {figures}")
    return lines


def _text_table(table: pd.DataFrame) -> str:
    head = ("metric", "slice", "n", "baseline", "candidate", "delta", "95% CI", "p_t", "p_w", "p_rand", "p_holm",
            "+", "-", "=", "mde", "bound", "")
    rows = [head]
    for _, r in table.iterrows():
        rows.append((r["metric_name"], r["slice"], str(r["n"]), num(r["baseline"]), num(r["candidate"]),
                     signed(r["delta"]), interval(r["ci_low"], r["ci_high"]), pval(r["p_ttest"]),
                     pval(r["p_wilcoxon"]), pval(r["p_randomization"]), pval(r["p_holm"]), str(r["improved"]),
                     str(r["regressed"]), str(r["unchanged"]), mde_text(r.get("mde"), r["n"]), num(r.get("bound")),
                     marks(r["warnings"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    right = {2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15}
    out = []
    for row in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    return "\n".join(out)


def _operations_lines(c: Comparison) -> list[str]:
    ops = c.operations
    if not len(ops):
        return []
    out = []
    has_latency = ops["latency_p95"].notna().any()
    has_cost = ops["cost_mean"].notna().any()
    for _, r in ops.iterrows():
        parts = [f"failure rate {num(r['failure_rate'])}"]
        if has_latency:
            parts.append(f"latency p50 {num(r['latency_p50'], 0)} ms, p95 {num(r['latency_p95'], 0)} ms")
        if has_cost:
            parts.append(f"cost {num(r['cost_mean'], 4)} USD per record, {num(r['cost_total'], 4)} USD per pass")
        out.append(f"  {r['side']}: " + "; ".join(parts))
    return out



def family_text(f: Family) -> str:
    """The terminal rendering of ``ragslice compare`` with one or more candidates: one candidate as
    `text`; several as a matrix (candidate rows, per metric the delta marked when significant across
    the family) and then each candidate's verdict and gates."""
    if f.single:
        return text(f.comparisons[0])
    first = f.comparisons[0]
    lines = [
        f"ragslice compare {f.baseline.name} -> {len(f.comparisons)} candidates",
        f"suite {first.suite} version {first.suite_version}, corpus {first.corpus_version}; "
        f"{len(first.questions)} questions",
        side_text(first, "baseline"),
        "",
        f"VERDICT: {family_verdict_line(f)}",
        "",
        "Matrix (" + matrix_legend(f) + ")",
    ]
    names, rows = matrix_cells(f)
    head = ["candidate", "verdict", *names]
    table = [head] + [[name, c.verdict.verdict, *cells] for (name, cells), c in zip(rows, f.comparisons)]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        lines.append("  " + "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                                      for i, (cell, w) in enumerate(zip(r, widths))).rstrip())
    for c in f.comparisons:
        lines += ["", f"{c.candidate.name}: {verdict_line(c)}", "  " + side_text(c, "candidate")]
        if c.heldout is not None:
            lines.append(f"  Held-out: {c.heldout.describe()}")
        lines += [f"  could not tell: {line}" for line in inconclusive_lines(c)]
        lines += [line for g in c.verdict.gates for line in _gate_lines(g)]
        if c.verdict.disputed is not None:
            lines.append(f"  Without the {c.verdict.disputed.n_disputed} disputed question(s): "
                         f"{c.verdict.disputed.verdict.upper()}")
        lines += [f"  warning: {w}" for w in all_warnings(c)]
    if f.resolution_warning():
        lines += ["", f"Warning: {f.resolution_warning()}"]
    lines += ["", f"Method: {first.method(HOLM_FAMILY)}.",
              "Every metric x slice of one candidate, its regressions and operations: ragslice compare "
              f"{f.baseline.name} CANDIDATE, or --format json (each candidate under \"candidates\")."]
    return "\n".join(lines)



__all__ = ["family_text", "text"]

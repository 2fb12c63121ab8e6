"""Renderings of a comparison: plain text, pull-request markdown, and the offline HTML report.

The HTML report is one self-contained file: inline CSS, charts as inline SVG generated here, no
script, no external resource. Every data string (question text, answers, claim text, manifest
values, policy text) is escaped with `html.escape`; markdown escapes its own special characters.
"""
from __future__ import annotations

import difflib
import html
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from ..metrics.registry import display_name
from ..store.database import Database
from . import manifests
from .comparison import HOLM_FAMILY, SIGNIFICANT, Comparison, Family, compare, compare_many
from .manifests import BOOKKEEPING, is_setting
from .policy import GateResult, Policy, load_policy
from .verdicts import record

# --- number formatting ---------------------------------------------------------------------------


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def num(v: Any, digits: int = 3) -> str:
    """A value for display; n/a for None / NaN."""
    if _missing(v):
        return "n/a"
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return str(v)
    return f"{float(v):.{digits}f}"


def signed(v: Any, digits: int = 3) -> str:
    return "n/a" if _missing(v) else f"{float(v):+.{digits}f}"


def pval(v: Any) -> str:
    if _missing(v):
        return "n/a"
    return "<0.001" if float(v) < 0.001 else f"{float(v):.3f}"


def interval(low: Any, high: Any) -> str:
    return "n/a" if _missing(low) or _missing(high) else f"[{float(low):+.3f}, {float(high):+.3f}]"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _marks(warnings: Sequence[str]) -> str:
    """* : n < 10; ! : the sign-based tests cannot reach p < 0.05; # : n = 1 or nothing differs."""
    text = " ".join(warnings)
    out = ""
    if "n = 1:" in text or "every paired difference is zero" in text:
        out += "#"
    if "cannot reach" in text:
        out += "!"
    if "bootstrap interval is too narrow" in text:
        out += "*"
    return out


TEXT_LIMIT = 25
"""Regressed questions and flaky pairs listed in the terminal before '... and N more'."""
MARKDOWN_LIMIT = 30
"""The same for pull-request markdown (comments have a size limit)."""
EVIDENCE_LIMIT = 100
"""Regressed questions that get evidence cards in the HTML report; a table lists every one."""
FLAKY_LIMIT = 1000
"""Side x question rows of the HTML flaky table."""

MARK_LEGEND = ("* fewer than 10 paired questions: the interval is too narrow and the t-test's normality cannot be "
               "checked;  ! too few differing pairs for the Wilcoxon and randomization tests to reach p < 0.05;  "
               "# one pair, or no pair differs: nothing to test")


def _gate_value(g: GateResult) -> str:
    return g.observed_text


def verdict_line(c: Comparison) -> str:
    v = c.verdict
    if c.policy is None:
        return "NONE (no policy given: no gate was checked, so there is no verdict)"
    failed = len(v.failed_gates)
    head = v.verdict.upper()
    return f"{head}: {len(v.gates) - failed} of {len(v.gates)} gates pass" + (
        f", {failed} fail" if failed else "")


def _side_text(c: Comparison, role: str) -> str:
    side = c.baseline if role == "baseline" else c.candidate
    runs = ", ".join(side.run_ids)
    k = "/".join(str(k) for k in sorted(set(side.k)))
    return f"{role} {side.name}: {'run' if side.kind == 'run' else 'group of'} {runs} (k {k})"


def _all_warnings(c: Comparison) -> list[str]:
    return [*c.warnings, *c.verdict.warnings]


# --- text ----------------------------------------------------------------------------------------


def text(c: Comparison) -> str:
    """The terminal rendering of ``ragslice compare``."""
    lines = [
        f"ragslice compare {c.baseline.name} -> {c.candidate.name}",
        f"suite {c.suite} version {c.suite_version}, corpus {c.corpus_version}; {len(c.questions)} questions",
        _side_text(c, "baseline"),
        _side_text(c, "candidate"),
        "",
        f"VERDICT: {verdict_line(c)}",
    ]
    if c.heldout is not None:
        lines.append(f"Held-out: {c.heldout.describe()} on {c.suite} version {c.suite_version}")
    v = c.verdict
    if c.policy is not None:
        lines += ["", f"Gates (policy {c.policy.name}, {c.policy.path}, sha256 {c.policy.sha256[:12]})"]
        for g in v.gates:
            lines.append(f"  {'pass' if g.passed else 'FAIL'}  {g.name}: {g.reason}")
            if g.warning:
                lines.append(f"        note: {g.warning}")
    if v.disputed is not None:
        d = v.disputed
        lines += ["", f"Without the {d.n_disputed} disputed question(s): {d.verdict.upper()}"]
        lines += [f"  {diff}" for diff in d.differences] or ["  no gate value changes"]
    if c.alignment is not None:
        lines += ["", "Free-text answers"] + [f"  {s}" for s in c.alignment.summary()]
    if v.unreviewed is not None:
        u = v.unreviewed
        lines += ["", f"Without the {u.n_disputed} question(s) resting on unreviewed automatic alignments: "
                      f"{u.verdict.upper()}"]
        lines += [f"  {diff}" for diff in u.differences] or ["  no gate value changes"]
    lines += ["", "Comparisons (delta = candidate - baseline over paired questions; n/a pairs excluded)",
              _text_table(c.table)]
    lines += ["", f"Marks: {MARK_LEGEND}", f"Method: {c.settings.describe()}."]
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
            lines.append(f"  {f['side']} {f['question_id']} {_metric_label(f['metric'])}: "
                         f"{' / '.join(_repeat_value(x) for x in f['values'])}")
        if len(c.flaky) > TEXT_LIMIT:
            lines.append(f"  ... and {len(c.flaky) - TEXT_LIMIT} more (every one: --format json or ragslice report)")
    ops = _operations_lines(c)
    if ops:
        lines += ["", "Operations (every record of every repeat)", *ops]
    warnings = _all_warnings(c)
    if warnings:
        lines += ["", "Warnings"] + [f"  - {w}" for w in warnings]
    return "\n".join(lines)


def _metric_label(key: str) -> str:
    return "status" if key == "status" else display_name(key)


def _repeat_value(v: Any) -> str:
    return v if isinstance(v, str) else num(v)


def _text_table(table: pd.DataFrame) -> str:
    head = ("metric", "slice", "n", "baseline", "candidate", "delta", "95% CI", "p_t", "p_w", "p_rand", "p_holm",
            "+", "-", "=", "")
    rows = [head]
    for _, r in table.iterrows():
        rows.append((r["metric_name"], r["slice"], str(r["n"]), num(r["baseline"]), num(r["candidate"]),
                     signed(r["delta"]), interval(r["ci_low"], r["ci_high"]), pval(r["p_ttest"]),
                     pval(r["p_wilcoxon"]), pval(r["p_randomization"]), pval(r["p_holm"]), str(r["improved"]),
                     str(r["regressed"]), str(r["unchanged"]), _marks(r["warnings"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    right = {2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13}
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


# --- markdown ------------------------------------------------------------------------------------

_MD_SPECIAL = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                             **{c: f"\\{c}" for c in "\\`*_[]|#"}})


def md(value: Any) -> str:
    """Text safe inside a markdown table cell: markup characters escaped (HTML ones as entities),
    newlines flattened."""
    return str(value).replace("\r", " ").replace("\n", " ").translate(_MD_SPECIAL)


def markdown(c: Comparison) -> str:
    """A pull-request comment: verdict, gates, headline deltas, regressions, warnings, method."""
    v = c.verdict
    icon = "✅" if v.passed else "❌" if v.failed else "➖"
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
    if c.policy is not None:
        out += [f"Policy **{md(c.policy.name)}** (`{md(c.policy.path)}`, sha256 `{c.policy.sha256[:12]}`)", "",
                "| gate | result | observed | threshold | n | reason |", "| --- | --- | ---: | --- | ---: | --- |"]
        for g in v.gates:
            reason = md(g.reason) + (f" *Note: {md(g.warning)}*" if g.warning else "")
            out.append(f"| {md(g.name)} | {'pass' if g.passed else '**FAIL**'} | {md(_gate_value(g))} | "
                       f"{md(g.threshold)} | {g.n} | {reason} |")
        out.append("")
    if v.disputed is not None:
        out += [f"**Without the {v.disputed.n_disputed} disputed question(s):** {v.disputed.verdict}", ""]
        out += [f"- {md(d)}" for d in v.disputed.differences] + [""]
    if c.alignment is not None:
        out += ["**Free-text answers:**", ""] + [f"- {md(s)}" for s in c.alignment.summary()] + [""]
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
        out += [f"- {md(f['side'])} `{md(f['question_id'])}` {md(_metric_label(f['metric']))}: "
                f"{md(' / '.join(_repeat_value(x) for x in f['values']))}"
                for _, f in c.flaky.head(MARKDOWN_LIMIT).iterrows()]
        if len(c.flaky) > MARKDOWN_LIMIT:
            out.append(f"- … and {len(c.flaky) - MARKDOWN_LIMIT} more")
    warnings = _all_warnings(c)
    if warnings:
        out += ["", "### Warnings", ""] + [f"- {md(w)}" for w in warnings]
    out += ["", "<details><summary>Every metric x slice</summary>", "",
            "| metric | slice | n | baseline | candidate | delta | 95% CI | p t-test | p Wilcoxon | p randomization "
            "| p Holm | + | − | = | marks |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for _, r in c.table.iterrows():
        out.append(f"| {md(r['metric_name'])} | {md(r['slice'])} | {r['n']} | {num(r['baseline'])} | "
                   f"{num(r['candidate'])} | {signed(r['delta'])} | {interval(r['ci_low'], r['ci_high'])} | "
                   f"{pval(r['p_ttest'])} | {pval(r['p_wilcoxon'])} | {pval(r['p_randomization'])} | "
                   f"{pval(r['p_holm'])} | {r['improved']} | {r['regressed']} | {r['unchanged']} | "
                   f"{md(_marks(r['warnings']))} |")
    out += ["", md(MARK_LEGEND), "", "</details>", "", f"*Method: {md(c.settings.describe())}.*"]
    return "\n".join(out)


# --- several candidates ---------------------------------------------------------------------------


SIGNIFICANT_MARK = "†"
"""Marks a matrix delta whose family-wide Holm p is below `SIGNIFICANT`."""


def _family_verdict_line(f: Family) -> str:
    if f.policy is None:
        return "NONE (no policy given: no gate was checked, so there is no verdict)"
    failed = sum(c.verdict.failed for c in f.comparisons)
    n = len(f.comparisons)
    return f"{f.verdict.upper()}: {n - failed} of {n} candidates pass" + (f", {failed} fail" if failed else "")


def _matrix_cells(f: Family, slice_: str = "all") -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(metric names, [(candidate, [delta with its mark per metric])]) of the family's matrix on `slice_`."""
    m = f.matrix(slice_)
    names = list(dict.fromkeys(m["metric_name"]))
    rows = []
    for c in f.comparisons:
        own = m[m["candidate"] == c.candidate.name].set_index("metric_name")
        cells = []
        for name in names:
            if name not in own.index:
                cells.append("n/a")
                continue
            r = own.loc[name]
            cells.append(signed(r["delta"]) + (SIGNIFICANT_MARK if r["significant"] else ""))
        rows.append((c.candidate.name, cells))
    return names, rows


def _matrix_legend(f: Family) -> str:
    return (f"delta = candidate - baseline, mean over the paired questions (all questions; n/a pairs excluded); "
            f"{SIGNIFICANT_MARK} p_holm < {SIGNIFICANT:g}, p_holm being the {f.holm_text()}")


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
        _side_text(first, "baseline"),
        "",
        f"VERDICT: {_family_verdict_line(f)}",
        "",
        "Matrix (" + _matrix_legend(f) + ")",
    ]
    names, rows = _matrix_cells(f)
    head = ["candidate", "verdict", *names]
    table = [head] + [[name, c.verdict.verdict, *cells] for (name, cells), c in zip(rows, f.comparisons)]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        lines.append("  " + "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                                      for i, (cell, w) in enumerate(zip(r, widths))).rstrip())
    for c in f.comparisons:
        lines += ["", f"{c.candidate.name}: {verdict_line(c)}", "  " + _side_text(c, "candidate")]
        if c.heldout is not None:
            lines.append(f"  Held-out: {c.heldout.describe()}")
        for g in c.verdict.gates:
            lines.append(f"  {'pass' if g.passed else 'FAIL'}  {g.name}: {g.reason}")
            if g.warning:
                lines.append(f"        note: {g.warning}")
        if c.verdict.disputed is not None:
            lines.append(f"  Without the {c.verdict.disputed.n_disputed} disputed question(s): "
                         f"{c.verdict.disputed.verdict.upper()}")
        lines += [f"  warning: {w}" for w in _all_warnings(c)]
    if f.resolution_warning():
        lines += ["", f"Warning: {f.resolution_warning()}"]
    lines += ["", f"Method: {first.settings.describe(HOLM_FAMILY)}.",
              "Every metric x slice of one candidate, its regressions and operations: ragslice compare "
              f"{f.baseline.name} CANDIDATE, or --format json (each candidate under \"candidates\")."]
    return "\n".join(lines)


def family_markdown(f: Family) -> str:
    """A pull-request comment for one or more candidates: one candidate as `markdown`; several as the
    family's verdict, the matrix and each candidate's gates."""
    if f.single:
        return markdown(f.comparisons[0])
    first = f.comparisons[0]
    icon = "✅" if f.verdict == "pass" else "❌" if f.verdict == "fail" else "➖"
    out = [
        f"## {icon} ragslice: {md(_family_verdict_line(f))}",
        "",
        f"**Baseline** `{md(f.baseline.name)}` ({md(', '.join(f.baseline.run_ids))}) against "
        f"{len(f.comparisons)} candidates on suite `{md(first.suite)}` version `{md(first.suite_version)}`, corpus "
        f"`{md(first.corpus_version)}`, {len(first.questions)} questions.",
        "",
    ]
    names, rows = _matrix_cells(f)
    out += ["| candidate | verdict | " + " | ".join(md(n) for n in names) + " |",
            "| --- | --- | " + " | ".join("---:" for _ in names) + " |"]
    for (name, cells), c in zip(rows, f.comparisons):
        verdict = {"pass": "pass", "fail": "**FAIL**"}.get(c.verdict.verdict, c.verdict.verdict)
        out.append(f"| `{md(name)}` | {verdict} | " + " | ".join(cells) + " |")
    out += ["", md(_matrix_legend(f)) + ".", ""]
    if f.resolution_warning():
        out += [f"**Warning:** {md(f.resolution_warning())}.", ""]
    for c in f.comparisons:
        out += [f"### `{md(c.candidate.name)}`: {md(verdict_line(c))}", ""]
        if c.verdict.gates:
            out += ["| gate | result | observed | threshold | n | reason |", "| --- | --- | ---: | --- | ---: | --- |"]
            for g in c.verdict.gates:
                reason = md(g.reason) + (f" *Note: {md(g.warning)}*" if g.warning else "")
                out.append(f"| {md(g.name)} | {'pass' if g.passed else '**FAIL**'} | {md(_gate_value(g))} | "
                           f"{md(g.threshold)} | {g.n} | {reason} |")
            out.append("")
        warnings = _all_warnings(c)
        if warnings:
            out += [f"- {md(w)}" for w in warnings] + [""]
    out.append(f"*Method: {md(first.settings.describe(HOLM_FAMILY))}.*")
    return "\n".join(out)


# --- evidence for the HTML report ---------------------------------------------------------------


@dataclass
class Evidence:
    """What each side did on the regressed questions (first run of each side), and the labels."""

    answers: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    claims: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    retrieved: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    expected: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


PER_QUESTION_MAX = 64
"""Up to this many questions, `load_evidence` reads each question's rows of each run with its own equality filter."""


def _rows_of(con: duckdb.DuckDBPyConnection, columns: str, table: str, order: str, match: str,
             keys: list[tuple[Any, ...]], where: str, params: list[Any]) -> list[tuple]:
    """`columns` of `table`'s rows ordered by `order`: those matching `match` (``?`` bound to a key)
    for one of `keys` (given when they are few), else those meeting `where` (bound to `params`).
    An equality per key lets a scan skip the row groups that cannot hold the key (their min / max
    say so), which a list of IDs does not."""
    if keys:
        extra = "".join(f", {o}" for o in order.split(", ") if o not in columns.split(", "))
        one = f"SELECT {columns}{extra} FROM {table} WHERE {match}"
        sql = f"SELECT {columns} FROM ({' UNION ALL '.join([one] * len(keys))}) ORDER BY {order}"
        return con.execute(sql, [x for key in keys for x in key]).fetchall()
    return con.execute(f"SELECT {columns} FROM {table} WHERE {where} ORDER BY {order}", params).fetchall()


def load_evidence(con: duckdb.DuckDBPyConnection, c: Comparison, question_ids: Iterable[str]) -> Evidence:
    """Answers, claims with verdicts, retrieved rankings and expected claims for `question_ids`."""
    ids = sorted(set(question_ids))
    ev = Evidence()
    if not ids:
        return ev
    runs = {c.baseline.run_ids[0]: "baseline", c.candidate.run_ids[0]: "candidate"}
    few = len(ids) <= PER_QUESTION_MAX
    pairs = [(q, r) for q in ids for r in runs] if few else []
    match, where = "question_id = ? AND run_id = ?", \
        "list_contains(?::VARCHAR[], run_id) AND list_contains(?::VARCHAR[], question_id)"
    params = [list(runs), ids]
    for run, q, answer, error, latency, cost in _rows_of(
            con, "run_id, question_id, answer, error, latency_ms, cost_usd", "records", "run_id, question_id",
            match, pairs, where, params):
        ev.answers[(runs[run], q)] = {"answer": answer, "error": error, "latency_ms": latency, "cost_usd": cost}
    for run, q, claim, text_, citations, supported, reasons in _rows_of(
            con, "run_id, question_id, claim_id, text, citations, supported, reasons", "claims",
            "run_id, question_id, position", match, pairs, where, params):
        ev.claims.setdefault((runs[run], q), []).append(
            {"claim": claim, "text": text_, "citations": list(citations), "supported": supported,
             "reasons": list(reasons)})
    for run, q, rank, doc, relevant, visible, restricted in _rows_of(
            con, "run_id, question_id, rank, doc_id, relevant, visible, restricted", "retrieved",
            "run_id, question_id, rank", match, pairs, where, params):
        ev.retrieved.setdefault((runs[run], q), []).append(
            {"rank": rank, "doc": doc, "relevant": relevant, "visible": visible, "restricted": restricted})
    for q, claim, proposition, docs in _rows_of(
            con, "question_id, claim_id, proposition, docs", "expected_claims", "question_id, claim_id",
            "question_id = ? AND suite = ?", [(q, c.suite) for q in ids] if few else [],
            "suite = ? AND list_contains(?::VARCHAR[], question_id)", [c.suite, ids]):
        ev.expected.setdefault(q, []).append({"claim": claim, "proposition": proposition, "docs": list(docs)})
    return ev


# --- HTML ----------------------------------------------------------------------------------------

e = html.escape

CSS = """
:root { --pass: #17663a; --fail: #a31515; --muted: #5b6470; --line: #d8dde3; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 20px 0 6px; }
.verdict { font-size: 30px; font-weight: 700; padding: 12px 18px; border-radius: 8px; display: inline-block;
  margin: 12px 0; }
.verdict.pass { background: #dafbe1; color: var(--pass); } .verdict.fail { background: #ffebe9; color: var(--fail); }
.muted { color: var(--muted); }
.pass { color: var(--pass); font-weight: 600; } .fail { color: var(--fail); font-weight: 600; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; width: 100%; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg); } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
pre { background: var(--bg); padding: 12px; overflow-x: auto; font-size: 12px; border-radius: 6px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; margin: 12px 0; }
.warn { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; margin: 6px 0; }
ul.warnings { padding-left: 0; list-style: none; }
nav a { margin-right: 12px; } svg text { font: 12px system-ui, sans-serif; }
.diff-del { background: #ffebe9; } .diff-add { background: #dafbe1; }
"""

CAVEATS = (
    "Whether an answer is true. Claims are identified by claim IDs; ragslice does not judge whether a sentence "
    "follows from a document. Free-text answers are aligned to claim IDs by reviewers, a judge or a lexical "
    "overlap, and only the reviewed alignments are known right. A well-formed label can still be wrong.",
    "Whether the labels are complete. A useful document nobody labelled counts as a miss; a stale or "
    "contradictory source is not detected. Disputed questions are reported, not resolved.",
    "Answer quality beyond support and coverage: clarity, relevance, tone, contradictions and usefulness are not "
    "scored. Abstention is an empty claim list; a refusal in words is not recognised and its helpfulness is not "
    "judged.",
    "Graded or joint evidence beyond the declared metrics: claims that need several passages together, "
    "document-length effects and partial support are not modelled.",
    "Disclosure through paraphrase. Disclosures count restricted documents placed in the visible context or cited; "
    "restricted facts restated without a citation are not detected.",
    "Latency and cost as a benchmark: they are the values the run recorded, in an environment this report does "
    "not control.",
    "General performance. The questions are a sample; with few questions the figures are arithmetic on those "
    "cases, and repeats of the same questions are not new evidence about other questions.",
    "The future. A verdict holds for these versions of the corpus, questions, prompts and providers; a change to "
    "any of them needs a new, versioned evaluation.",
)


def _td(value: str, numeric: bool = False, cls: str = "") -> str:
    classes = " ".join(c for c in ("num" if numeric else "", cls) if c)
    return f"<td class=\"{classes}\">{value}</td>" if classes else f"<td>{value}</td>"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Collection[int] = ()) -> str:
    """An HTML table; cells are already-escaped HTML."""
    out = ["<table><thead><tr>", *(f"<th>{e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(_td(cell, i in numeric) for i, cell in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def forest_svg(rows: pd.DataFrame, title: str) -> str:
    """Horizontal bars of the mean delta with bootstrap-interval whiskers, one row per metric.

    Green when the change is better for the metric's direction, red when worse, grey when zero.
    """
    rows = rows.reset_index(drop=True)
    if not len(rows):
        return ""
    values = [v for col in ("delta", "ci_low", "ci_high") for v in rows[col] if not _missing(v)]
    span = max([abs(float(v)) for v in values] + [0.05]) * 1.1
    width, left, right, row_h, top = 760, 130, 200, 24, 28
    plot = width - left - right
    height = top + row_h * len(rows) + 20

    def x(v: float) -> float:
        return left + (float(v) + span) / (2 * span) * plot

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}"><title>{e(title)}</title>',
             f'<text x="{left}" y="16" fill="#5b6470">{e(title)}</text>',
             f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{height - 14}" stroke="#8c959f" '
             'stroke-dasharray="3,3"/>',
             f'<text x="{x(-span):.1f}" y="{height - 2}" fill="#5b6470">{-span:+.2f}</text>',
             f'<text x="{x(0) - 4:.1f}" y="{height - 2}" fill="#5b6470">0</text>',
             f'<text x="{x(span) - 36:.1f}" y="{height - 2}" fill="#5b6470">{span:+.2f}</text>']
    for i, r in rows.iterrows():
        y = top + i * row_h + row_h / 2
        delta = r["delta"]
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{e(str(r["metric_name"]))}'
                     f' (n={int(r["n"])})</text>')
        if not _missing(delta):
            better = float(delta) if r["higher_is_better"] else -float(delta)
            colour = "#2da44e" if better > 1e-9 else "#cf222e" if better < -1e-9 else "#8c959f"
            x0, x1 = sorted((x(0), x(delta)))
            parts.append(f'<rect x="{x0:.1f}" y="{y - 7:.1f}" width="{max(x1 - x0, 1.5):.1f}" height="14" '
                         f'fill="{colour}" opacity="0.75"/>')
        if not (_missing(r["ci_low"]) or _missing(r["ci_high"])):
            lo, hi = x(r["ci_low"]), x(r["ci_high"])
            parts.append(f'<line x1="{lo:.1f}" y1="{y:.1f}" x2="{hi:.1f}" y2="{y:.1f}" stroke="#1f2328" '
                         'stroke-width="1.5"/>')
            parts += [f'<line x1="{p:.1f}" y1="{y - 5:.1f}" x2="{p:.1f}" y2="{y + 5:.1f}" stroke="#1f2328" '
                      'stroke-width="1.5"/>' for p in (lo, hi)]
        label = f"{signed(delta)} {interval(r['ci_low'], r['ci_high'])}"
        parts.append(f'<text x="{width - right + 8}" y="{y + 4:.1f}">{e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _gates_html(c: Comparison) -> str:
    v = c.verdict
    if c.policy is None:
        return '<p class="warn">No policy was given, so no gate was checked.</p>'
    rows = []
    for g in v.gates:
        result = '<span class="pass">pass</span>' if g.passed else '<span class="fail">FAIL</span>'
        reason = e(g.reason) + (f'<div class="warn">{e(g.warning)}</div>' if g.warning else "")
        rows.append((e(g.name), result, e(_gate_value(g)), e(g.threshold), e(g.slice), str(g.n), reason))
    return _table(("gate", "result", "observed", "threshold", "slice", "n", "reason"), rows, numeric={2, 5})


def _comparison_rows(table: pd.DataFrame) -> list[tuple[str, ...]]:
    return [(e(r["metric_name"]), e(r["slice"]), str(r["n"]), num(r["baseline"]), num(r["candidate"]),
             signed(r["delta"]), interval(r["ci_low"], r["ci_high"]), pval(r["p_ttest"]), pval(r["p_wilcoxon"]),
             pval(r["p_randomization"]), pval(r["p_holm"]), f"{r['improved']} / {r['regressed']} / {r['unchanged']}",
             f'<span title="{e("; ".join(r["warnings"]))}">{e(_marks(r["warnings"]))}</span>')
            for _, r in table.iterrows()]


COMPARISON_HEAD = ("metric", "slice", "n", "baseline", "candidate", "delta", "95% CI", "p t-test", "p Wilcoxon",
                   "p randomization", "p Holm", "+ / − / =", "marks")


def _aggregation_html(c: Comparison) -> str:
    t = c.table[c.table["baseline_pooled"].notna() | c.table["candidate_pooled"].notna()]
    t = t[t["slice"].isin(["all", "answerable", "critical"])]
    if not len(t):
        return "<p>No metric here pools differently from its macro mean.</p>"
    rows = [(e(r["metric_name"]), e(r["slice"]), str(r["n"]), num(r["baseline"]), num(r["baseline_pooled"]),
             num(r["candidate"]), num(r["candidate_pooled"])) for _, r in t.iterrows()]
    return ("<p>Macro averaging gives every question equal weight; pooling sums numerators and denominators "
            "(e.g. supported claims over claims), so longer answers weigh more. Both over the same paired "
            "questions.</p>"
            + _table(("metric", "slice", "n", "baseline macro", "baseline pooled", "candidate macro",
                      "candidate pooled"), rows, numeric={2, 3, 4, 5, 6}))


def _side_evidence(ev: Evidence, side: str, q: str) -> str:
    ans = ev.answers.get((side, q))
    parts = [f"<h4>{e(side)}</h4>"]
    if ans is None:
        parts.append("<p class=\"muted\">No record (missing).</p>")
    else:
        if ans["error"]:
            parts.append(f"<p class=\"fail\">Failed: {e(str(ans['error']))}</p>")
        parts.append(f"<p><b>Answer:</b> {e(str(ans['answer'])) if ans['answer'] is not None else '<i>none</i>'}</p>")
    claims = ev.claims.get((side, q), [])
    if claims:
        parts.append(_table(("claim", "text", "citations", "supported", "why not"), [
            (e(cl["claim"]), e(cl["text"] or ""), e(", ".join(cl["citations"]) or "none"),
             '<span class="pass">yes</span>' if cl["supported"] else '<span class="fail">no</span>',
             e(", ".join(cl["reasons"]))) for cl in claims]))
    elif ans is not None:
        parts.append("<p class=\"muted\">No claim (an abstention).</p>")
    ranking = ev.retrieved.get((side, q), [])
    if ranking:
        parts.append("<p><b>Retrieved:</b> " + ", ".join(
            f"{r['rank']}. {e(r['doc'])}{' ✓' if r['relevant'] else ''}{'' if r['visible'] else ' (beyond k)'}"
            f"{' ⚠ restricted' if r['restricted'] else ''}" for r in ranking) + "</p>")
    return "".join(parts)


def _regressions_html(c: Comparison, ev: Evidence) -> str:
    questions = c.regressed_questions()
    if not len(questions):
        return "<p>No question is worse than the baseline on any metric.</p>"
    regs = c.regressions()
    shown = questions.head(EVIDENCE_LIMIT)
    out = [f"<p>{len(regs)} question x metric pairs are worse than the baseline, on {len(questions)} questions "
           "(critical first, then the most metrics). Evidence shows the first run of each side"
           + (f"; the first {EVIDENCE_LIMIT} questions have evidence cards, and the table after them lists every "
              "regressed question" if len(questions) > EVIDENCE_LIMIT else "") + ".</p>"]
    by_question = dict(tuple(regs.groupby("question_id", sort=False)))
    for q in shown["question_id"]:
        group = by_question[q]
        first = group.iloc[0]
        flags = ", ".join(x for x in (first["type"], first["split"], "critical" if first["critical"] else "",
                                      "answerable" if first["answerable"] else "unanswerable") if x)
        out.append(f'<div class="card"><h3>{e(str(q))} <span class="muted">({e(flags)})</span></h3>'
                   f"<p>{e(str(first['text']))}</p>")
        if first["disputed"]:
            out.append(f'<p class="warn">Disputed label: {e(str(first["disputed"]))}</p>')
        out.append(_table(("metric", "baseline", "candidate", "delta"), [
            (e(r["metric_name"]), num(r["baseline"]), num(r["candidate"]), signed(r["delta"]))
            for _, r in group.iterrows()], numeric={1, 2, 3}))
        expected = ev.expected.get(str(q), [])
        if expected:
            out.append("<p><b>Expected claims:</b> " + "; ".join(
                f"{e(x['claim'])}" + (f" ({e(x['proposition'])})" if x["proposition"] else "")
                + f" from {e(', '.join(x['docs']))}" for x in expected) + "</p>")
        out.append(_side_evidence(ev, "baseline", str(q)) + _side_evidence(ev, "candidate", str(q)) + "</div>")
    if len(questions) > EVIDENCE_LIMIT:
        out.append("<h3>Every regressed question</h3>" + _table(
            ("question", "text", "type", "split", "critical", "worse on (baseline → candidate)"),
            [(e(str(r["question_id"])), e(str(r["text"])), e(str(r["type"])), e(str(r["split"])),
              "yes" if r["critical"] else "",
              e("; ".join(f"{name} {num(b)} → {num(k)}" for name, b, k in r["changes"])))
             for _, r in questions.iterrows()]))
    return "".join(out)


def _flaky_html(c: Comparison) -> str:
    if not len(c.flaky):
        repeats = len(c.baseline.run_ids) > 1 or len(c.candidate.run_ids) > 1
        return ("<p>No question's outcome differs between repeats.</p>" if repeats
                else "<p>Neither side has repeats, so flakiness cannot be observed.</p>")
    per_question = c.flaky.groupby(["side", "question_id"], sort=False)
    intro = (f"<p>{per_question.ngroups} side x question pairs ({len(c.flaky)} question x metric) differ between "
             "repeats; values are listed in repeat order"
             + (f"; the first {FLAKY_LIMIT} are shown, every one is in <code>ragslice compare --format json</code>"
                if per_question.ngroups > FLAKY_LIMIT else "") + ".</p>")
    rows = []
    for (side, q), group in per_question:
        if len(rows) >= FLAKY_LIMIT:
            break
        rows.append((e(str(side)), e(str(q)), "<br>".join(
            f"{e(_metric_label(m))}: {e(' / '.join(_repeat_value(x) for x in v))}"
            for m, v in zip(group["metric"], group["values"]))))
    return intro + _table(("side", "question", "metric: value per repeat"), rows)


def manifest_diff(c: Comparison) -> list[tuple[str, str, str]]:
    """(field, baseline, candidate) for every manifest field the sides set differently, over every run
    of each side (`manifests.manifest_diff`: repeats that differ show each value)."""
    return manifests.manifest_diff([c.baseline.manifests[r] for r in c.baseline.run_ids],
                                   [c.candidate.manifests[r] for r in c.candidate.run_ids])


def _manifests_html(c: Comparison) -> str:
    diff = manifest_diff(c)
    out = ["<h3>What changed (every run of each side; where repeats differ, each value)</h3>"]
    out.append(_table(("field", "baseline", "candidate"), [(e(f), e(b), e(k)) for f, b, k in diff])
               if diff else "<p>The manifests are identical.</p>")
    for role, side in (("baseline", c.baseline), ("candidate", c.candidate)):
        for run in side.run_ids:
            out.append(f"<details><summary>{e(role)} manifest: {e(run)}</summary>"
                       f"<pre>{e(json.dumps(side.manifests[run], indent=2, sort_keys=True))}</pre></details>")
    first_b = json.dumps(c.baseline.manifests[c.baseline.run_ids[0]], indent=2, sort_keys=True).splitlines()
    first_c = json.dumps(c.candidate.manifests[c.candidate.run_ids[0]], indent=2, sort_keys=True).splitlines()
    lines = []
    for line in difflib.unified_diff(first_b, first_c, "baseline", "candidate", lineterm="", n=1):
        cls = "diff-add" if line.startswith("+") and not line.startswith("+++") else \
            "diff-del" if line.startswith("-") and not line.startswith("---") else ""
        lines.append(f'<span class="{cls}">{e(line)}</span>' if cls else e(line))
    if lines:
        out.append("<details><summary>Unified diff (first run of each side)</summary><pre>" + "\n".join(lines)
                   + "</pre></details>")
    return "".join(out)


def _operations_html(c: Comparison) -> str:
    ops = c.operations
    rows = [(e(r["side"]), str(r["records"]), num(r["failure_rate"]), num(r["latency_p50"], 0),
             num(r["latency_p95"], 0), num(r["cost_mean"], 4), num(r["cost_total"], 4)) for _, r in ops.iterrows()]
    return _table(("side", "records", "failure rate", "latency p50 (ms)", "latency p95 (ms)", "cost per record (USD)",
                   "cost per pass (USD)"), rows, numeric={1, 2, 3, 4, 5, 6})


def _disputed_html(c: Comparison) -> str:
    d = c.verdict.disputed
    if c.n_disputed == 0:
        return "<p>No question's labels are marked disputed.</p>"
    q = c.questions[c.questions["disputed"].notna()]
    out = [_table(("question", "reviewer note"), [(e(str(i)), e(str(r["disputed"]))) for i, r in q.iterrows()])]
    if d is None:
        out.append("<p>No policy: no verdict to recompute.</p>")
    else:
        out.append(f"<p>Verdict without the {d.n_disputed} disputed question(s): <b>{e(d.verdict)}</b> "
                   f"(with them: <b>{e(c.verdict.verdict)}</b>).</p>")
        out.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in d.differences) + "</ul>" if d.differences
                   else "<p>No gate value changes.</p>")
    return "".join(out)


def _alignment_html(c: Comparison) -> str:
    if c.alignment is None:
        return ""
    out = ["<h3>Free-text answers</h3><ul>" + "".join(f"<li>{e(s)}</li>" for s in c.alignment.summary()) + "</ul>"]
    u = c.verdict.unreviewed
    if u is not None:
        out.append(f"<p>Verdict without the {u.n_disputed} question(s) resting on unreviewed automatic alignments: "
                   f"<b>{e(u.verdict)}</b> (with them: <b>{e(c.verdict.verdict)}</b>).</p>")
        out.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in u.differences) + "</ul>" if u.differences
                   else "<p>No gate value changes.</p>")
    return "".join(out)


def _heldout_html(c: Comparison) -> str:
    h = c.heldout
    if h is None:
        return "<p>This suite has no held-out questions in this comparison.</p>"
    return (f"<p>{e(h.describe())} on {e(c.suite)} version {e(c.suite_version)}. A comparison is its runs, its "
            "policy text and its labels: printing it again, in any format, is no new use. Every invocation is "
            "logged in <code>heldout_log</code>.</p>")


def _sections(c: Comparison, evidence: Evidence, across: str = "metric x slice") -> list[tuple[str, str, str]]:
    """(id, title, HTML) of every section of one comparison's report; `across`: what its p_holm spans."""
    headline = c.table[c.table["slice"] == "all"]
    sections: list[tuple[str, str, str]] = []
    gates = _gates_html(c)
    warnings = _all_warnings(c)
    warn_html = ('<ul class="warnings">' + "".join(f'<li class="warn">{e(w)}</li>' for w in warnings) + "</ul>"
                 if warnings else "<p>None.</p>")
    sections.append(("verdict", "Verdict and gates", gates + "<h3>Warnings</h3>" + warn_html))
    if c.policy is not None:
        sections.append(("policy", "The acceptance policy", (
            f"<p><b>{e(c.policy.name)}</b> from <code>{e(c.policy.path)}</code>, sha256 "
            f"<code>{e(c.policy.sha256)}</code>. The verdict is stored with this text and hash.</p>"
            f"<pre>{e(c.policy.text)}</pre>")))
    sections.append(("headline", "Headline deltas", (
        "<p>Candidate minus baseline over the questions both sides score (n/a excluded), with 95% paired-bootstrap "
        "intervals. Green is better for the metric's direction, red worse.</p>"
        + forest_svg(headline, "All questions: mean delta and 95% interval")
        + _table(COMPARISON_HEAD, _comparison_rows(headline), numeric=set(range(2, 12))))))
    slice_parts = []
    for s in dict.fromkeys(c.table["slice"]):
        if s == "all":
            continue
        rows = c.table[c.table["slice"] == s]
        slice_parts.append(f"<h3>{e(s)}</h3>" + forest_svg(rows, f"{s}: mean delta and 95% interval")
                           + _table(COMPARISON_HEAD, _comparison_rows(rows), numeric=set(range(2, 12))))
    sections.append(("slices", "Slices", "".join(slice_parts) or "<p>No slice beyond all questions.</p>"))
    sections.append(("aggregation", "Aggregation side by side", _aggregation_html(c)))
    sections.append(("regressions", "Every regression, with its evidence", _regressions_html(c, evidence)))
    sections.append(("flaky", "Flaky questions", _flaky_html(c)))
    sections.append(("operations", "Failures, latency and cost", _operations_html(c)))
    sections.append(("labels", "Disputed labels and held-out use", _disputed_html(c) + _alignment_html(c)
                                                                         + _heldout_html(c)))
    sections.append(("manifests", "Manifests", _manifests_html(c)))
    sections.append(("caveats", "What this evaluation does not measure",
                     "<ul>" + "".join(f"<li>{e(x)}</li>" for x in CAVEATS) + "</ul>"))
    sections.append(("method", "Method", f"<p>{e(c.settings.describe(across))}.</p><p>{e(MARK_LEGEND)}</p>"))
    return sections


def html_report(c: Comparison, evidence: Evidence, *, generated: datetime | None = None) -> str:
    """The self-contained HTML report (no script, no external resource)."""
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    v = c.verdict
    sections = _sections(c, evidence)
    nav = "".join(f'<a href="#{sid}">{e(title)}</a>' for sid, title, _ in sections)
    body = "".join(f'<section id="{sid}"><h2>{e(title)}</h2>{content}</section>' for sid, title, content in sections)
    verdict_text = "PASS" if v.passed else "FAIL"
    subtitle = (f"{e(c.baseline.name)} → {e(c.candidate.name)} · suite {e(c.suite)} version {e(c.suite_version)}, "
                f"corpus {e(c.corpus_version)} · {len(c.questions)} questions · generated {e(when)}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">"
        f"<title>ragslice release report: {e(c.baseline.name)} → {e(c.candidate.name)}: {verdict_text}</title>"
        f"<style>{CSS}</style></head><body><main>"
        f"<h1>Release report</h1><p class=\"muted\">{subtitle}</p>"
        f"<div class=\"verdict {v.verdict}\" id=\"verdict-banner\">Verdict: {verdict_text}</div>"
        f"<p>{e(verdict_line(c))}. {e(_side_text(c, 'baseline'))}; {e(_side_text(c, 'candidate'))}."
        + (f" {e(c.heldout.describe()[0].upper() + c.heldout.describe()[1:])}." if c.heldout is not None else "")
        + "</p>"
        f"<nav>{nav}</nav>{body}</main></body></html>\n"
    )


def compare_with_evidence(baseline: str, candidate: str, *, db: Path, policy: Policy | None,
                          limit: int) -> tuple[Comparison, Evidence]:
    """The comparison (read-only) and the evidence of its first `limit` regressed questions."""
    with Database(db).command() as con:
        comparison = compare(con, baseline, candidate, policy=policy)
        ids = set(comparison.regressed_questions(limit)["question_id"])
        return comparison, load_evidence(con, comparison, ids)


def write_report(baseline: str, candidate: str, *, db: Path, policy: str | Path, out: Path) -> Comparison:
    """Compare (read-only), record the verdict as `ragslice compare` does, and write the HTML report to
    `out`; returns the comparison."""
    comparison, evidence = compare_with_evidence(baseline, candidate, db=db, policy=load_policy(policy),
                                                 limit=EVIDENCE_LIMIT)
    record(db, comparison)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html_report(comparison, evidence), encoding="utf-8")
    return comparison


def family_html(f: Family, evidence: Sequence[Evidence], *, generated: datetime | None = None) -> str:
    """One self-contained HTML file for one or more candidates: one candidate as `html_report`; several
    as the family's verdict and matrix, then each candidate's full report (its sections' anchors
    prefixed with the candidate's position, ``c1-verdict`` ...)."""
    if f.single:
        return html_report(f.comparisons[0], evidence[0], generated=generated)
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    first = f.comparisons[0]
    names, rows = _matrix_cells(f)
    matrix = _table(["candidate", "verdict", *names],
                    [[f'<a href="#c{i}-verdict">{e(name)}</a>', e(c.verdict.verdict), *map(e, cells)]
                     for i, ((name, cells), c) in enumerate(zip(rows, f.comparisons), start=1)],
                    numeric=set(range(2, 2 + len(names))))
    floor = f"<p class=\"warn\">{e(f.resolution_warning())}.</p>" if f.resolution_warning() else ""
    parts = [f"<section id=\"matrix\"><h2>Release matrix</h2><p>{e(_matrix_legend(f))}.</p>{floor}{matrix}</section>"]
    for i, (c, ev) in enumerate(zip(f.comparisons, evidence), start=1):
        inner = "".join(f'<section id="c{i}-{sid}"><h3>{e(title)}</h3>{content}</section>'
                        for sid, title, content in _sections(c, ev, HOLM_FAMILY))
        parts.append(f'<article id="c{i}"><h2>{e(c.candidate.name)}: {e(verdict_line(c))}</h2>'
                     f"<p>{e(_side_text(c, 'candidate'))}.</p>{inner}</article>")
    verdict_text = f.verdict.upper()
    subtitle = (f"{e(f.baseline.name)} → {len(f.comparisons)} candidates · suite {e(first.suite)} version "
                f"{e(first.suite_version)}, corpus {e(first.corpus_version)} · {len(first.questions)} questions · "
                f"generated {e(when)}")
    nav = '<a href="#matrix">Release matrix</a>' + "".join(
        f'<a href="#c{i}">{e(c.candidate.name)}</a>' for i, c in enumerate(f.comparisons, start=1))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">"
        f"<title>ragslice release report: {e(f.baseline.name)} → {len(f.comparisons)} candidates: {verdict_text}</title>"
        f"<style>{CSS}</style></head><body><main>"
        f"<h1>Release report</h1><p class=\"muted\">{subtitle}</p>"
        f"<div class=\"verdict {f.verdict}\" id=\"verdict-banner\">Verdict: {verdict_text}</div>"
        f"<p>{e(_family_verdict_line(f))}. {e(_side_text(first, 'baseline'))}.</p>"
        f"<nav>{nav}</nav>{''.join(parts)}</main></body></html>\n"
    )


def write_family_report(baseline: str, candidates: Sequence[str], *, db: Path, policy: str | Path, out: Path
                        ) -> Family:
    """`write_report` for one or more candidates (`family_html`); records each candidate's verdict."""
    pol = load_policy(policy)
    with Database(db).command() as con:
        family = compare_many(con, baseline, candidates, policy=pol)
        evidence = [load_evidence(con, c, set(c.regressed_questions()["question_id"].head(EVIDENCE_LIMIT)))
                    for c in family.comparisons]
    for comparison in family.comparisons:
        record(db, comparison)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(family_html(family, evidence), encoding="utf-8")
    return family


__all__ = ["BOOKKEEPING", "CAVEATS", "Evidence", "is_setting", "compare_with_evidence", "forest_svg", "html_report", "load_evidence",
           "manifest_diff", "markdown", "md", "verdict_line", "write_report", "text", "family_html", "family_markdown",
           "family_text", "write_family_report"]

"""The decision told in five screens, for the meeting room: `ragslice report --slides` and the
dashboard's Present page show the same screens, built here from one comparison.

1. the verdict and the gates that decided it (failing gates first);
2. where it regressed: the slices and question types whose mean got worse, with n and Holm's p;
3. the three worst regressions (critical first, then the most metrics), with both sides' evidence;
4. what changed between the two runs: the manifest fields, bookkeeping left out;
5. what this evaluation does not measure.

Every number is the comparison's own (`Comparison.table`, `verdict`, `regressed_questions`): the
screens select and word, they compute nothing. The slides file is one HTML file with inline CSS and
an inline script for the arrow keys; it loads nothing.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .comparison import Comparison
from .policy import load_policy
from .report import CAVEATS, Evidence, compare_with_evidence, is_setting, manifest_diff, num, signed
from .verdicts import record

e = html.escape

WORST = 3
"""Regressions shown with their evidence."""
WHERE_LIMIT = 8
"""Slice x metric rows shown on the "where it regressed" screen."""
SIGNIFICANT = 0.05
"""Holm-adjusted p below which a change is called significant."""


@dataclass(frozen=True)
class Screen:
    """One screen: an id for links, a title, its one message in a sentence, and its body as HTML."""

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
    worse["significant"] = worse["p_holm"].fillna(1.0) < SIGNIFICANT
    worse["size"] = worse["delta"].abs()
    return worse.sort_values(["significant", "size"], ascending=[False, False], kind="stable")


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]], numeric: set[int] = frozenset()) -> str:
    cells = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f'<td class="num">{v}</td>' if i in numeric else f"<td>{v}</td>"
                                     for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _verdict_screen(c: Comparison) -> Screen:
    v = c.verdict
    word = "PASS" if v.passed else "FAIL" if v.failed else "NO VERDICT"
    if c.policy is None:
        return Screen("verdict", "The verdict", "No policy was given, so there is no verdict.",
                      f'<div class="big none">{word}</div><p>Give a policy to decide a release.</p>')
    failing = [g for g in v.gates if not g.passed]
    passing = [g for g in v.gates if g.passed]
    message = (f"{len(failing)} of {len(v.gates)} gates fail." if failing
               else f"All {len(v.gates)} gates pass.")
    items = "".join(f'<li class="fail"><span class="mark">✗</span> <b>{e(g.name)}</b>: {e(g.reason)}</li>'
                    for g in failing)
    if passing:
        items += (f'<li class="pass"><span class="mark">✓</span> {"passing: " if failing else ""}'
                  + " · ".join(e(g.name) for g in passing) + "</li>")
    return Screen("verdict", "The verdict", message,
                  f'<div class="big {v.verdict}">{word}</div><ul class="gates">{items}</ul>')


def _where_screen(c: Comparison) -> Screen:
    worse = worse_slices(c)
    if worse.empty:
        return Screen("where", "Where it regressed", "No slice got worse on any metric.", "")
    n_sig = int(worse["significant"].sum())
    slices = list(dict.fromkeys(worse["slice"]))
    message = (f"Worse on {len(worse)} slice x metric pairs across {len(slices)} slices; {n_sig} of them "
               f"significant (Holm p < {SIGNIFICANT}).")
    rows = [(e(str(r["slice"])), e(str(r["metric_name"])), str(int(r["n"])),
             f"{num(r['baseline'])} → {num(r['candidate'])}", signed(r["delta"]),
             f"{num(r['p_holm'])}{' ●' if r['significant'] else ''}")
            for _, r in worse.head(WHERE_LIMIT).iterrows()]
    more = (f'<p class="muted">… and {len(worse) - WHERE_LIMIT} more (the Statistics page and the report list '
            "every one).</p>" if len(worse) > WHERE_LIMIT else "")
    return Screen("where", "Where it regressed", message,
                  _table(("slice", "metric", "n", "baseline → candidate", "delta", "p (Holm)"), rows, {2, 4, 5})
                  + '<p class="muted">n: questions both sides score there. ● significant after Holm\'s adjustment '
                    "over every metric x slice.</p>" + more)


def _side(ev: Evidence, side: str, q: str) -> str:
    answer = ev.answers.get((side, q))
    if answer is None:
        return f'<div class="side"><h4>{side}</h4><p class="muted">No record: scored as missing.</p></div>'
    parts = [f'<div class="side"><h4>{side}</h4>']
    if answer["error"]:
        parts.append(f'<p class="fail">Failed: {e(str(answer["error"]))}</p>')
    parts.append(f"<p>{e(str(answer['answer'] or ''))}</p>")
    claims = ev.claims.get((side, q), [])
    parts += [f'<p class="{"pass" if cl["supported"] else "fail"}">{"✓" if cl["supported"] else "✗"} '
              f'{e(cl["claim"])} cites {e(", ".join(cl["citations"]) or "nothing")}'
              + (f' ({e(", ".join(cl["reasons"]))})' if cl["reasons"] else "") + "</p>" for cl in claims]
    if not claims and not answer["error"]:
        parts.append('<p class="muted">No claim: an abstention.</p>')
    shown = [r for r in ev.retrieved.get((side, q), []) if r["visible"]]
    parts.append('<p class="muted">Context: ' + (", ".join(
        f'{e(r["doc"])}{" ✓" if r["relevant"] else ""}' for r in shown) or "nothing") + "</p></div>")
    return "".join(parts)


def _worst_screen(c: Comparison, ev: Evidence) -> Screen:
    total = c.n_regressed_questions
    if not total:
        return Screen("worst", "The worst regressions", "No question got worse.", "")
    cards = []
    for _, r in c.regressed_questions(WORST).iterrows():
        q = str(r["question_id"])
        flags = ", ".join(x for x in (str(r["type"]), "critical" if r["critical"] else "",
                                      "answerable" if r["answerable"] else "unanswerable") if x)
        changes = "; ".join(f"{name} {num(b)} → {num(k)}" for name, b, k in r["changes"][:4])
        expected = "; ".join(f"{x['claim']} (from {', '.join(x['docs'])})" for x in ev.expected.get(q, []))
        cards.append(f'<div class="card"><h3>{e(q)} <span class="muted">{e(flags)}</span></h3>'
                     f'<p class="lead">{e(str(r["text"]))}</p><p>{e(changes)}'
                     + (f" and {len(r['changes']) - 4} more" if len(r["changes"]) > 4 else "") + "</p>"
                     + (f'<p class="muted">Expected: {e(expected)}</p>' if expected else "")
                     + f'<div class="sides">{_side(ev, "baseline", q)}{_side(ev, "candidate", q)}</div></div>')
    message = (f"{total} questions are worse on at least one metric; the {min(WORST, total)} worst, "
               "critical first, with what each side answered and cited.")
    return Screen("worst", "The worst regressions", message, "".join(cards))


def _changed_screen(c: Comparison) -> Screen:
    diff = changed_settings(c)
    if not diff:
        return Screen("changed", "What changed", "The two runs' manifests declare the same settings.", "")
    return Screen("changed", "What changed", f"{len(diff)} setting(s) differ between the two runs.",
                  _table(("setting", "baseline", "candidate"), [(e(f), e(b), e(k)) for f, b, k in diff]))


def _limits_screen() -> Screen:
    return Screen("limits", "What this evaluation does not measure",
                  "These numbers are evidence about this test set, not about everything.",
                  "<ul>" + "".join(f"<li>{e(x)}</li>" for x in CAVEATS) + "</ul>")


def screens(c: Comparison, ev: Evidence) -> list[Screen]:
    """The five screens of the decision, in order."""
    return [_verdict_screen(c), _where_screen(c), _worst_screen(c, ev), _changed_screen(c), _limits_screen()]


CSS = """
:root { --pass: #17663a; --fail: #a31515; --muted: #5b6470; --line: #d8dde3; }
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { font: 24px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; }
.screen { display: none; min-height: 100vh; padding: 28px 64px 72px; }
.screen.on { display: block; }
h1 { font-size: 44px; margin: 0 0 8px; } h3 { font-size: 26px; margin: 0 0 6px; } h4 { margin: 0 0 4px; }
.message { font-size: 30px; font-weight: 600; margin: 0 0 18px; }
.big { font-size: 96px; font-weight: 800; line-height: 1; margin: 0 0 12px; }
.big.pass, .pass { color: var(--pass); } .big.fail, .fail { color: var(--fail); } .big.none { color: var(--muted); }
.muted { color: var(--muted); font-size: 20px; } .lead { font-size: 26px; }
ul.gates { list-style: none; padding: 0; font-size: 20px; } ul.gates li { margin: 4px 0; } .mark { font-weight: 800; }
table { border-collapse: collapse; font-size: 22px; } th, td { border-bottom: 1px solid var(--line); padding: 6px 14px;
  text-align: left; vertical-align: top; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.card { border: 2px solid var(--line); border-radius: 10px; padding: 14px 20px; margin: 0 0 16px; font-size: 20px; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 20px; } .side p { margin: 4px 0; }
footer { position: fixed; bottom: 0; left: 0; right: 0; padding: 10px 64px; font-size: 18px; color: var(--muted);
  background: #fff; border-top: 1px solid var(--line); display: flex; justify-content: space-between; }
@media print { .screen { display: block; page-break-after: always; } footer { display: none; } }
"""

SCRIPT = """
(function () {
  var screens = Array.prototype.slice.call(document.querySelectorAll('.screen'));
  var counter = document.getElementById('counter');
  function show(i) {
    i = Math.max(0, Math.min(screens.length - 1, i));
    screens.forEach(function (s, j) { s.classList.toggle('on', j === i); });
    counter.textContent = (i + 1) + ' / ' + screens.length;
    if (location.hash !== '#' + screens[i].id) history.replaceState(null, '', '#' + screens[i].id);
    document.body.setAttribute('data-screen', String(i + 1));
  }
  function current() { return screens.findIndex(function (s) { return s.classList.contains('on'); }); }
  document.addEventListener('keydown', function (ev) {
    if (['ArrowRight', 'PageDown', ' ', 'Enter'].indexOf(ev.key) >= 0) { show(current() + 1); ev.preventDefault(); }
    else if (['ArrowLeft', 'PageUp', 'Backspace'].indexOf(ev.key) >= 0) { show(current() - 1); ev.preventDefault(); }
    else if (ev.key === 'Home') { show(0); } else if (ev.key === 'End') { show(screens.length - 1); }
  });
  var start = screens.findIndex(function (s) { return '#' + s.id === location.hash; });
  show(start < 0 ? 0 : start);
})();
"""


def slides_html(c: Comparison, ev: Evidence, *, generated: datetime | None = None) -> str:
    """The screens as one offline HTML file: one screen at a time, arrow keys to move, printable."""
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    parts = screens(c, ev)
    body = "".join(
        f'<section class="screen{" on" if i == 0 else ""}" id="{s.key}"><h1>{e(s.title)}</h1>'
        f'<p class="message">{e(s.message)}</p>{s.body}</section>' for i, s in enumerate(parts))
    subtitle = (f"{e(c.baseline.name)} → {e(c.candidate.name)} · suite {e(c.suite)} version {e(c.suite_version)} · "
                f"{len(c.questions)} questions · {e(when)}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">"
        f"<title>ragslice: {e(c.baseline.name)} → {e(c.candidate.name)}</title><style>{CSS}</style></head>"
        f"<body data-screen=\"1\">{body}<footer><span>{subtitle}</span>"
        f"<span>← → to move · <span id=\"counter\">1 / {len(parts)}</span></span></footer>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


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

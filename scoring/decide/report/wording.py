"""What every rendering of a comparison says the same way: numbers as text, the verdict line, a
side in words, the release matrix's cells, the limits on listed rows, the caveats, and the manifest
fields that changed.

The text, markdown and HTML renderings (`as_text`, `as_markdown`, `as_html`) and the slides
(`scoring.decide.present`) read these; none words them again.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...metrics.registry import display_name
from .. import manifests
from ..comparison import SIGNIFICANT, Comparison, Family
from ..gate_words import inconclusive_words

# --- number formatting ---------------------------------------------------------------------------


def missing(v: Any) -> bool:
    """None or NaN."""
    return v is None or (isinstance(v, float) and v != v)


def num(v: Any, digits: int = 3) -> str:
    """A value for display; n/a for None / NaN."""
    if missing(v):
        return "n/a"
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return str(v)
    return f"{float(v):.{digits}f}"


def signed(v: Any, digits: int = 3) -> str:
    """A change with its sign; n/a for None / NaN."""
    return "n/a" if missing(v) else f"{float(v):+.{digits}f}"


def pval(v: Any) -> str:
    """A p-value to three decimals, ``<0.001`` below that; n/a for None / NaN."""
    if missing(v):
        return "n/a"
    return "<0.001" if float(v) < 0.001 else f"{float(v):.3f}"


def interval(low: Any, high: Any) -> str:
    """A confidence interval of changes, ``[-0.100, +0.050]``; n/a when an end is missing."""
    return "n/a" if missing(low) or missing(high) else f"[{float(low):+.3f}, {float(high):+.3f}]"


def plural(n: int, word: str) -> str:
    """``1 question``, ``2 questions``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def marks(warnings: Sequence[str]) -> str:
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


DETECTION_LEGEND = ("mde: the smallest drop (in the metric's direction) a one-sided test at alpha 0.05 detects with "
                    "power 0.8 at the row's spread (paired t, noncentral; inf: too few differing pairs for the "
                    "randomization test to reach 0.05 at all); bound: the one-sided 95% upper confidence bound of the "
                    "drop (Student t; negative: an improvement is shown). docs/statistics.md")


def mde_text(value: Any, n: Any) -> str:
    """A row's MDE: ``inf`` where no drop of any size is detectable, n/a below two pairs."""
    if missing(n) or int(n) < 2:
        return "n/a"
    return "inf" if missing(value) else num(value)


def verdict_line(c: Comparison) -> str:
    """The verdict in one line: ``FAIL: 7 of 9 gates pass, 2 fail``, ``INCONCLUSIVE: 9 of 10 gates pass, 1
    inconclusive``, or NONE without a policy."""
    v = c.verdict
    if c.policy is None:
        return "NONE (no policy given: no gate was checked, so there is no verdict)"
    failed, unsure = len(v.failed_gates), len(v.inconclusive_gates)
    head = v.verdict.upper()
    return f"{head}: {len(v.gates) - failed - unsure} of {len(v.gates)} gates pass" + (
        f", {failed} fail" if failed else "") + (f", {unsure} inconclusive" if unsure else "")


RESULT_WORDS = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}
"""A gate's outcome as the text and markdown renderings print it."""


def gate_result(g: Any) -> str:
    """``pass``, ``FAIL`` or ``INCONCLUSIVE``."""
    return RESULT_WORDS[str(getattr(g, "outcome", None) or ("pass" if g.passed else "fail"))]


def inconclusive_lines(c: Comparison) -> list[str]:
    """For an inconclusive verdict: each gate that could not tell, and the questions that would make it
    conclusive at the observed spread (`gate_words.inconclusive_words`)."""
    return [f"{g.name}: {inconclusive_words(g)}" for g in c.verdict.inconclusive_gates]


def side_text(c: Comparison, role: str) -> str:
    """One side in words: ``baseline prod: run prod-1 (k 5)``."""
    side = c.baseline if role == "baseline" else c.candidate
    runs = ", ".join(side.run_ids)
    k = "/".join(str(k) for k in sorted(set(side.k)))
    return f"{role} {side.name}: {'run' if side.kind == 'run' else 'group of'} {runs} (k {k})"


def all_warnings(c: Comparison) -> list[str]:
    """The comparison's warnings, then the verdict's."""
    return [*c.warnings, *c.verdict.warnings]


def metric_label(key: str) -> str:
    """A flaky row's measure: the registry's name, or ``status``."""
    return "status" if key == "status" else display_name(key)


def repeat_value(v: Any) -> str:
    """One repeat's value in a flaky row: a status as written, a number as `num`."""
    return v if isinstance(v, str) else num(v)


# --- several candidates ---------------------------------------------------------------------------


SIGNIFICANT_MARK = "†"
"""Marks a matrix delta whose family-wide Holm p is below `SIGNIFICANT`."""


def family_verdict_line(f: Family) -> str:
    """The family's verdict in one line: ``FAIL: 1 of 2 candidates pass, 1 fail`` (``, 1 inconclusive``)."""
    if f.policy is None:
        return "NONE (no policy given: no gate was checked, so there is no verdict)"
    failed = sum(c.verdict.failed for c in f.comparisons)
    unsure = sum(c.verdict.inconclusive for c in f.comparisons)
    n = len(f.comparisons)
    return f"{f.verdict.upper()}: {n - failed - unsure} of {n} candidates pass" + (
        f", {failed} fail" if failed else "") + (f", {unsure} inconclusive" if unsure else "")


def matrix_cells(f: Family, slice_: str = "all") -> tuple[list[str], list[tuple[str, list[str]]]]:
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


def matrix_legend(f: Family) -> str:
    """What a matrix cell holds, and what its mark means."""
    return (f"delta = candidate - baseline, mean over the paired questions (all questions; n/a pairs excluded); "
            f"{SIGNIFICANT_MARK} p_holm < {SIGNIFICANT:g}, p_holm being the {f.holm_text()}")


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
"""What this evaluation does not measure: the last section of the report and of the slides."""


def manifest_diff(c: Comparison) -> list[tuple[str, str, str]]:
    """(field, baseline, candidate) for every manifest field the sides set differently, over every run
    of each side (`manifests.manifest_diff`: repeats that differ show each value)."""
    return manifests.manifest_diff([c.baseline.manifests[r] for r in c.baseline.run_ids],
                                   [c.candidate.manifests[r] for r in c.candidate.run_ids])


__all__ = ["CAVEATS", "DETECTION_LEGEND", "EVIDENCE_LIMIT", "FLAKY_LIMIT", "MARKDOWN_LIMIT", "MARK_LEGEND",
           "RESULT_WORDS", "SIGNIFICANT_MARK", "TEXT_LIMIT", "all_warnings", "family_verdict_line", "gate_result",
           "inconclusive_lines", "interval", "manifest_diff", "marks", "matrix_cells", "matrix_legend", "mde_text",
           "metric_label", "missing", "num", "plural", "pval", "repeat_value", "side_text", "signed", "verdict_line"]

"""The report files ``ragslice report`` writes: compare read-only, record each verdict as ``ragslice
compare`` does, then write the HTML (`as_html`)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...store.database import Database
from ..comparison import Comparison, Family, compare_many
from ..policy import load_policy
from ..verdicts import record
from .as_html import family_html, html_report
from .evidence import compare_with_evidence, load_evidence
from .wording import EVIDENCE_LIMIT


def write_report(baseline: str, candidate: str, *, db: Path, policy: str | Path, out: Path) -> Comparison:
    """Compare (read-only), record the verdict as `ragslice compare` does, and write the HTML report to
    `out`; returns the comparison."""
    comparison, evidence = compare_with_evidence(baseline, candidate, db=db, policy=load_policy(policy),
                                                 limit=EVIDENCE_LIMIT)
    record(db, comparison)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html_report(comparison, evidence), encoding="utf-8")
    return comparison


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




__all__ = ["write_family_report", "write_report"]

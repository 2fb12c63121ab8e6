"""Renderings of a comparison: plain text (`as_text`), pull-request markdown (`as_markdown`) and the
offline HTML report (`as_html`, through the Jinja2 templates in ``scoring/decide/templates``), with what
they share (`wording`), the evidence of the regressions (`evidence`) and the files ``ragslice report``
writes (`files`).

The HTML report is one self-contained file: inline CSS, charts as inline SVG, no script, no external
resource. Every data string (question text, answers, claim text, manifest values, policy text) is
escaped by the templates' autoescape, as `html.escape` (`e`) escapes it; markdown escapes its own
special characters (`md`).
"""
from __future__ import annotations

from html import escape as e

from ...store.database import Database
from ..manifests import BOOKKEEPING, is_setting
from .as_html import COMPARISON_HEAD, family_html, forest_svg, html_report
from .as_markdown import family_markdown, markdown, md
from .as_text import family_text, text
from .evidence import PER_QUESTION_MAX, Evidence, compare_with_evidence, load_evidence
from .files import write_family_report, write_report
from .wording import (
    CAVEATS, EVIDENCE_LIMIT, FLAKY_LIMIT, MARK_LEGEND, MARKDOWN_LIMIT, SIGNIFICANT_MARK, TEXT_LIMIT, interval,
    manifest_diff, num, plural, pval, signed, verdict_line,
)

__all__ = ["BOOKKEEPING", "CAVEATS", "COMPARISON_HEAD", "Database", "EVIDENCE_LIMIT", "Evidence", "FLAKY_LIMIT",
           "MARKDOWN_LIMIT", "MARK_LEGEND", "PER_QUESTION_MAX", "SIGNIFICANT_MARK", "TEXT_LIMIT",
           "compare_with_evidence", "e", "family_html", "family_markdown", "family_text", "forest_svg", "html_report",
           "interval", "is_setting", "load_evidence", "manifest_diff", "markdown", "md", "num", "plural", "pval",
           "signed", "text", "verdict_line", "write_family_report", "write_report"]

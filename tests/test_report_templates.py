"""The report's templates: autoescaped, with `html.escape`'s spelling, and shipped as package data."""
from __future__ import annotations

import html

import pandas as pd

from scoring.decide.report import as_html

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> \'quoted\' & more'


def test_every_printed_value_is_escaped_as_html_escape_spells_it():
    page = as_html.templates().from_string('<p title="{{ t }}">{{ t }}</p>').render(t=HOSTILE)
    assert page == f'<p title="{html.escape(HOSTILE)}">{html.escape(HOSTILE)}</p>'
    assert as_html.templates().autoescape


def test_the_chart_escapes_its_title_and_metric_names():
    rows = pd.DataFrame([{"metric_name": HOSTILE, "n": 3, "delta": -0.5, "ci_low": -0.75, "ci_high": -0.25,
                          "higher_is_better": True}])
    svg = as_html.forest_svg(rows, HOSTILE)
    assert "<script" not in svg and "<img" not in svg
    assert svg.count(html.escape(HOSTILE)) == 3  # <title>, the heading text and the row's name
    assert svg.count('fill="#cf222e"') == 1  # worse for a higher-is-better metric


def test_the_templates_load_from_the_package():
    names = set(as_html.templates().list_templates())
    assert {"report.html.j2", "family.html.j2", "report_parts.html.j2", "forest.svg.j2", "slides.html.j2",
            "slides_parts.html.j2", "report.css", "slides.css", "slides.js"} <= names

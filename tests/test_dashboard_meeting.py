"""The dashboard in a meeting, over the bundled demo (prod-baseline against rerank-v2 under the demo policy):
no page shows its own source text, a diagnosis for every way a gate can fail, rankings that show each grade,
releases-only trends, a review flow with no preset answer, and the newcomer's commands.

Expected figures are the demo's own, read from its records (the comments say where).
"""
from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.util import patch_config_options

from fixtures import REPO

APP = REPO / "dashboard" / "app.py"
VIEWS = REPO / "dashboard" / "views"
DEMO = {"suite": "demo", "baseline": "prod-baseline", "candidate": "rerank-v2"}


def app_config() -> dict[str, object]:
    """The options of the dashboard's own .streamlit/config.toml, as `section.option` (Streamlit reads the
    file beside the entry file; AppTest does not, so the tests apply it)."""
    found = tomllib.loads((APP.parent / ".streamlit" / "config.toml").read_text())
    return {f"{section}.{key}": value for section, options in found.items() for key, value in options.items()}


@pytest.fixture
def demo(demo_db, monkeypatch) -> AppTest:
    from scoring.io.demo import bundled_policy

    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    monkeypatch.setenv("RAGSLICE_POLICY", str(bundled_policy()))
    with patch_config_options(app_config()):
        yield AppTest.from_file(str(APP), default_timeout=120)


def open_page(at: AppTest, page: str, **params: str | list[str]) -> AppTest:
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plain(text: str) -> str:
    """Markdown as read: escapes removed."""
    return text.replace("\\", "")


# -- 6. no page shows its own source text ------------------------------------------------------------------


def unshown_strings(path: Path) -> set[str]:
    """The string literals of a page script that no call receives: docstrings and bare strings, the text
    Streamlit's magic would write to the page."""
    tree = ast.parse(path.read_text())
    return {" ".join(node.value.value.split()) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def shown_texts(at: AppTest) -> list[str]:
    """Every markdown-like text element the run drew (magic writes with st.markdown)."""
    out = []
    for kind in ("markdown", "caption", "text", "info", "warning", "error", "success", "title", "header",
                 "subheader"):
        for element in at.get(kind):
            out.append(" ".join(str(getattr(element, "value", None) or getattr(element.proto, "body", "")).split()))
    return out


def test_the_dashboard_runs_without_magic():
    # A bare string at the top of a page script is a source comment, never page text.
    assert app_config()["runner.magicEnabled"] is False


@pytest.mark.parametrize("page", sorted(p.stem for p in VIEWS.glob("*.py") if p.stem != "__init__"))
def test_no_page_shows_a_string_from_its_own_source(demo, demo_db, monkeypatch, page):
    if page == "labels":  # the Labels page exists in review mode only
        monkeypatch.setenv("RAGSLICE_WORKSPACE", str(demo_db.parent / "workspace"))
        monkeypatch.setenv("RAGSLICE_REVIEWER", "reader")
    at = open_page(demo, page, **DEMO, q="q-0017")
    source = unshown_strings(VIEWS / f"{page}.py") | unshown_strings(APP)
    assert source, "the page has no docstring or bare string to look for"
    shown = [text for text in shown_texts(at) if text]
    assert shown, "the page drew no text"
    leaked = [text for text in shown if text in source or plain(text) in source]
    assert not leaked, leaked

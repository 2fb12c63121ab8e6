"""The README's generated sections match the code (the registry and the CLI)."""
from __future__ import annotations

from pathlib import Path

from scoring.docs import render
from scoring.metrics import REGISTRY

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_generated_sections_are_current():
    text = README.read_text(encoding="utf-8")
    assert render(text) == text, "run `python -m scoring.docs` to regenerate README.md"


def test_metric_table_lists_every_registry_metric_with_its_denominator():
    text = README.read_text(encoding="utf-8")
    for m in REGISTRY:
        assert f"| `{m.name}` | `{m.key}` |" in text
        assert m.denominator in text


def test_quick_start_has_exactly_the_two_commands():
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line for line in quick.splitlines() if line.startswith("pip ")]
    assert commands == ['pip install . && ragslice demo', 'pip install -e ".[test]" && pytest']

"""The README's generated sections match the code (the registry and the CLI)."""
from __future__ import annotations

from pathlib import Path

from scoring.docs import FILES, render
from scoring.metrics import REGISTRY

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_generated_sections_are_current():
    text = README.read_text(encoding="utf-8")
    assert render(text) == text, "run `python -m scoring.docs` to regenerate README.md"


def test_formats_generated_sections_are_current():
    path = README.parent / "docs" / "formats.md"
    text = path.read_text(encoding="utf-8")
    assert render(text, FILES["docs/formats.md"]) == text, "run `python -m scoring.docs` to regenerate docs/formats.md"


def test_alignment_rules_in_formats_are_the_registry_s():
    from scoring.metrics import alignment

    text = (README.parent / "docs" / "formats.md").read_text(encoding="utf-8")
    for rule in alignment.CLAIM_RULES + alignment.LEXICAL_RULES:
        assert rule in text
    assert f"at least {alignment.LEXICAL_THRESHOLD}" in text


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


def test_every_command_argument_says_what_it_takes():
    import argparse

    from scoring.cli import build_parser

    silent = []

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*prefix, name])
            elif not action.help and action.dest != "help":
                silent.append(" ".join([*prefix, *(action.option_strings or [action.dest])]))

    walk(build_parser(), ["ragslice"])
    assert silent == []

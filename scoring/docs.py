"""Documentation sections generated from the code, so they cannot drift from it.

`python -m scoring.docs` rewrites the parts of README.md and docs/formats.md between
`<!-- BEGIN name -->` and `<!-- END name -->` markers; a test fails when a committed file differs.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from .metrics import alignment
from .metrics.registry import REGISTRY


def metric_table() -> str:
    """The metric contract: name, numerator, denominator, n/a rule, pooling, direction."""
    lines = [
        "| metric | seed key | level | numerator | denominator | n/a when | a failed or missing record | pooled as "
        "| better |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in REGISTRY:
        better = "higher" if m.higher_is_better else "lower"
        lines.append(
            f"| `{m.name}` | `{m.key}` | {m.level} | {m.numerator} | {m.denominator} | {m.na_rule} | {m.failure} | "
            f"{m.pooling} | {better} |"
        )
    return "\n".join(lines)


def _subcommands(parser):
    """The sub-parsers of `parser` by name (empty when it has none)."""
    actions = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return actions[0].choices if actions else {}


def cli_reference() -> str:
    """One line per command with its description and first example; a command with subcommands
    (`ragslice import trec`, ...) is followed by one line per subcommand."""
    from .cli import build_parser

    lines = ["| command | what it does | example |", "| --- | --- | --- |"]

    def row(name: str, command) -> str:
        example = (command.epilog or "").splitlines()[1].strip() if command.epilog else ""
        return f"| `ragslice {name}` | {command.description} | `{example}` |"

    for name, command in _subcommands(build_parser()).items():
        lines.append(row(name, command))
        lines += [row(f"{name} {sub}", subcommand) for sub, subcommand in _subcommands(command).items()]
    return "\n".join(lines)


def alignment_rules() -> str:
    """How answer sentences become claims (`scoring.metrics.alignment`): outcomes, aligners in
    precedence, the claim rules, normalisation and the lexical aligner's rules."""
    lines = ["| outcome | meaning |", "| --- | --- |"]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in alignment.OUTCOMES.items()]
    lines += ["", "Aligners, first in precedence first; a sentence takes the outcome of the first that decided it:", ""]
    lines += [f"{i}. `{name}`: {rule}" for i, (name, rule) in enumerate(alignment.ALIGNERS.items(), 1)]
    lines += ["", "From sentences to generated claims:", ""]
    lines += [f"- {rule}" for rule in alignment.CLAIM_RULES]
    lines += ["", alignment.NORMALISATION, "", "The lexical aligner:", ""]
    lines += [f"- {rule}" for rule in alignment.LEXICAL_RULES]
    lines += [f"- Stopwords: {', '.join(sorted(alignment.STOPWORDS))}."]
    return "\n".join(lines)


SECTIONS = {"metrics": metric_table, "cli": cli_reference}
"""README.md's generated sections."""
FILES: dict[str, dict] = {"README.md": SECTIONS, "docs/formats.md": {"alignment": alignment_rules}}
"""Every generated file, relative to the repository root, with its sections."""


def render(text: str, sections: dict | None = None) -> str:
    """`text` with each of `sections` (default: README.md's) rebuilt between its markers."""
    for name, build in (SECTIONS if sections is None else sections).items():
        pattern = re.compile(rf"(<!-- BEGIN {name} -->\n).*?(<!-- END {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"no <!-- BEGIN {name} --> ... <!-- END {name} --> markers")
        text = pattern.sub(lambda m: m.group(1) + build() + "\n" + m.group(2), text)
    return text


def main(argv: list[str] | None = None) -> int:
    """Rewrite every generated file under the root given (default: the current folder)."""
    root = Path(argv[0] if argv else ".")
    if root.is_file():  # an older habit: the README's path
        root = root.parent
    for name, sections in FILES.items():
        path = root / name
        path.write_text(render(path.read_text(encoding="utf-8"), sections), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

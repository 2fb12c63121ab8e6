"""The demo's prose, kept beside the builder as data: `prose/<name>.toml` holds the texts (documents,
questions, answers, notes) as templates, `files/` the workspace files written as they are."""
from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@cache
def prose(name: str) -> dict[str, Any]:
    """The tables of ``prose/<name>.toml``, in the order the file declares them."""
    return tomllib.loads((HERE / "prose" / f"{name}.toml").read_text(encoding="utf-8"))


def verbatim(name: str) -> str:
    """``files/<name>``, a file the workspace holds exactly as written here."""
    return (HERE / "files" / name).read_text(encoding="utf-8")


def fill(template: str, **values: object) -> str:
    """`template` with its ``{field}`` placeholders filled from `values` (`str.format`). ``{s}`` and
    ``{p}`` are left as they are: a fact's clause keeps them for the question that joins clauses."""
    return template.format_map({"s": "{s}", "p": "{p}"} | values)

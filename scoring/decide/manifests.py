"""Run manifests compared: a manifest as dotted fields, and the fields two sides set differently.

One rule for every rendering (the report, the slides, the dashboard):

- a field is a dotted path to a leaf (``generation.temperature``) whose value is its JSON text;
- an empty object is a value, ``{}``: ``"generation": {}`` differs from a manifest without
  ``generation`` (shown as ``(absent)``); an empty manifest has no field;
- a side of several runs (a group of repeats) shows a field the runs agree on as that one value, and a
  field they set differently, or that some lack, as each distinct value in run order joined by
  `` | `` (``1 | 2``): a varying field differs from any single value of the other side.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

ABSENT = "(absent)"
"""The value of a field a manifest does not have."""
VARYING = " | "
"""Joins the distinct values of a field the runs of one side set differently."""

BOOKKEEPING = ("run_id", "created_at", "code_revision", "notes", "group", "repeat")
"""Manifest fields that differ between any two runs and explain no change in the scores; `x_` extension
fields (an importer's provenance) are bookkeeping too."""


def is_setting(field: str) -> bool:
    """Whether a (flattened, dotted) manifest field configures the run, not its bookkeeping."""
    top = field.split(".")[0]
    return top not in BOOKKEEPING and not top.startswith("x_")


def flatten(manifest: Mapping[str, Any]) -> dict[str, str]:
    """{dotted.field: JSON text of its value} in key order; a nested empty object is the value ``{}``."""
    return _flatten(manifest, "")


def _flatten(value: Any, prefix: str) -> dict[str, str]:
    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for key in sorted(value, key=str):
            out.update(_flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out or ({prefix: "{}"} if prefix else {})
    return {prefix: json.dumps(value, sort_keys=True)}


def side_fields(manifests: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every field of one side's runs (`manifests`, in run order) with its value: the one value the
    runs agree on, else each distinct value (`ABSENT` for a run without the field) joined by `VARYING`."""
    flat = [flatten(m) for m in manifests]
    fields = sorted({f for m in flat for f in m})
    return {f: VARYING.join(dict.fromkeys(m.get(f, ABSENT) for m in flat)) for f in fields}


def manifest_diff(baseline: Sequence[Mapping[str, Any]], candidate: Sequence[Mapping[str, Any]]
                  ) -> list[tuple[str, str, str]]:
    """(field, baseline value, candidate value) for every field whose value differs between the sides,
    by field name; each side is its runs' manifests (`side_fields`), a field one side lacks is `ABSENT`."""
    b, c = side_fields(baseline), side_fields(candidate)
    rows = [(f, b.get(f, ABSENT), c.get(f, ABSENT)) for f in sorted(set(b) | set(c))]
    return [row for row in rows if row[1] != row[2]]


__all__ = ["ABSENT", "BOOKKEEPING", "VARYING", "flatten", "is_setting", "manifest_diff", "side_fields"]

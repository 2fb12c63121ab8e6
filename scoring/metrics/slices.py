"""Slices: the sets of a suite's questions a comparison is read over, declared once.

A slice is named ``all``, ``answerable``, ``unanswerable``, ``critical``, ``type:<type>``,
``split:<split>`` or ``tag:<tag>``. Each belongs to a family, declared here by the `questions` column
it reads and how that column selects:

- ``all``: every question;
- ``answerable``: the flag `answerable`: true -> ``answerable``, false -> ``unanswerable``;
- ``critical``: the flag `critical`: true -> ``critical`` (the other questions are in no slice of it);
- ``type``, ``split``: the column's value, one slice per value;
- ``tag``: the list `tags`, one slice per tag (a question is in as many as it has tags).

Every form a reader needs is derived from that declaration: the SQL expression over ``questions q``
(`Family.sql`, for the families that partition the suite: what `slice_sums` stores), the boolean
mask over a questions frame (`mask`), the per-question codes of a partition (`codes`), and the
family of a slice name (`family_of`). Nothing else restates which question is in which slice.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..errors import invalid

if TYPE_CHECKING:
    import pandas as pd

Selects = Literal["everything", "flag", "value", "list"]


@dataclass(frozen=True)
class Family:
    """A way to cut the suite's questions into slices (see the module docstring)."""

    name: str
    label: str
    column: str | None
    selects: Selects
    slices: tuple[str, ...] = ()
    """The slice names of a flag family: (when true, when false or None)."""
    aliases: tuple[str, ...] = ()

    @property
    def partitions(self) -> bool:
        """Whether every question is in exactly one slice of the family."""
        return self.selects in ("everything", "value") or (self.selects == "flag" and None not in self.slices)

    @property
    def valued(self) -> bool:
        """Whether its slices are written ``<family>:<value>``."""
        return self.selects in ("value", "list")

    def sql(self, alias: str = "q") -> str:
        """SQL over the questions relation `alias` giving each question's slice name (a partition only)."""
        if not self.partitions:
            raise ValueError(f"family {self.name} does not partition the questions")
        if self.selects == "everything":
            return "'all'"
        if self.selects == "flag":
            yes, no = self.slices
            return f"CASE WHEN {alias}.{self.column} THEN '{yes}' ELSE '{no}' END"
        return f"{alias}.{self.column}"


FAMILIES: tuple[Family, ...] = (
    Family("all", "all questions", None, "everything", ("all",)),
    Family("answerable", "answerability", "answerable", "flag", ("answerable", "unanswerable"),
           aliases=("answerability",)),
    Family("critical", "critical", "critical", "flag", ("critical", None)),
    Family("type", "question type", "type", "value"),
    Family("split", "split", "split", "value"),
    Family("tag", "tag", "tags", "list"),
)
BY_NAME: dict[str, Family] = {f.name: f for f in FAMILIES}
_LOOKUP: dict[str, Family] = {alias: f for f in FAMILIES for alias in (f.name, *f.aliases)}
ALIASES: frozenset[str] = frozenset(_LOOKUP)
"""Every name a family answers to (its own, and older ones that links may still carry)."""
PARTITIONS: tuple[str, ...] = tuple(f.name for f in FAMILIES if f.partitions)
"""The families that put every question in one slice: the ones `slice_sums` stores."""
PLAIN: tuple[str, ...] = tuple(name for f in FAMILIES if not f.valued for name in f.slices if name)
"""The slice names without a value: all, answerable, unanswerable, critical."""


def family(name: str) -> Family:
    """The family of that name (or alias); ValueError otherwise."""
    found = _LOOKUP.get(name)
    if found is None:
        raise ValueError(f"unknown slice family {name!r}")
    return found


@dataclass(frozen=True)
class Slice:
    """A set of the suite's questions: ``all``, ``answerable``, ``critical``, ``type:lookup``, ..."""

    kind: str
    value: str | None = None

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value}"

    @property
    def family(self) -> Family:
        return BY_NAME[self.kind] if self.value is not None else _PLAIN_FAMILY[self.kind]


_PLAIN_FAMILY: dict[str, Family] = {name: f for f in FAMILIES if not f.valued for name in f.slices if name}


def parse_slice(text: str) -> Slice:
    """Parse a slice name; ValidationError naming the accepted forms otherwise."""
    raw = text.strip()
    if raw in PLAIN:
        return Slice(raw)
    kind, sep, value = raw.partition(":")
    if sep and kind in BY_NAME and BY_NAME[kind].valued and value.strip():
        return Slice(kind, value.strip())
    forms = [*PLAIN, *(f"{f.name}:<{f.name}>" for f in FAMILIES if f.valued)]
    raise invalid(f"a slice is {', '.join(forms[:-1])} or {forms[-1]}", "slice", text)


def family_of(name: str) -> str:
    """The family of a slice name (``type:lookup`` -> ``type``, ``unanswerable`` -> ``answerable``)."""
    return parse_slice(name).family.name


def mask(questions: pd.DataFrame, slice_: Slice) -> np.ndarray:
    """The questions of a frame (columns as `questions`) that are in the slice, as booleans."""
    f = slice_.family
    if f.selects == "everything":
        return np.ones(len(questions), dtype=bool)
    column = questions[f.column]
    if f.selects == "flag":
        flag = column.to_numpy(dtype=bool)
        return flag if slice_.kind == f.slices[0] else ~flag
    if f.selects == "value":
        return (column == slice_.value).to_numpy(dtype=bool)
    return column.map(lambda tags: slice_.value in tags).to_numpy(dtype=bool)


def values(questions: pd.DataFrame, name: str) -> list[str]:
    """The values a valued family takes in these questions (types, splits: first-seen order; tags
    sorted); [] for a family without values."""
    f = family(name)
    if f.selects == "value":
        return [str(v) for v in questions[f.column].unique()]
    if f.selects == "list":
        return sorted({str(t) for tags in questions[f.column] for t in tags})
    return []


def codes(questions: pd.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Each question's slice of a partitioning family as a code into the family's slice names, sorted."""
    f = family(name)
    if not f.partitions:
        raise ValueError(f"family {f.name} does not partition the questions")
    if f.selects == "everything":
        return np.zeros(len(questions), dtype=np.int64), np.array(list(f.slices), dtype=object)
    if f.selects == "flag":
        names = np.array(sorted(f.slices), dtype=object)
        chosen = np.where(questions[f.column].to_numpy(dtype=bool), f.slices[0], f.slices[1])
        return np.searchsorted(names, chosen).astype(np.int64), names
    found, names = questions[f.column].astype(str).factorize(sort=True)
    return np.asarray(found, dtype=np.int64), np.asarray(names, dtype=object)


def default_slices(questions: pd.DataFrame, families: Sequence[str] = ("all", "answerable", "critical", "type",
                                                                       "split")) -> list[Slice]:
    """The slices a comparison reports: every plain slice of `families`, then each type (first-seen
    order), then each split (dev first)."""
    out: list[Slice] = []
    for name in families:
        f = family(name)
        if not f.valued:
            out += [Slice(s) for s in f.slices if s]
        elif f.name == "split":
            out += [Slice("split", v) for v in sorted(values(questions, "split"), key=lambda s: (s != "dev", s))]
        else:
            out += [Slice(f.name, v) for v in values(questions, f.name)]
    return out


__all__ = ["ALIASES", "BY_NAME", "FAMILIES", "PARTITIONS", "PLAIN", "Family", "Slice", "codes", "default_slices", "family",
           "family_of", "mask", "parse_slice", "values"]

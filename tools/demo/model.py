"""The demo suite's identity and sizes, and the records the builder makes: documents, facts, traps,
questions and services."""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

SEED = 20261101
SUITE = "demo"
SUITE_VERSION = "2026.11"
CORPUS_VERSION = "corpus-2026-11-01"
RUBRIC_VERSION = "rubric-3"
MAX_CLAIMS = 5
"""The most claims a demo answer may make (its answers make at most 4): what pooled Support charges a
failed or missing record."""
K = 5
RETURNED = 10
CONTEXT_SEPARATOR = "\n\n"
"""A record's `context` is the texts of its first k retrieved documents (or chunks) joined by this."""
CHUNK_CHARS = 160
"""The chunked run's chunk size: whole sentences, at most this many characters (a longer sentence is a
chunk of its own)."""


@dataclass
class Doc:
    """One document of the corpus."""

    id: str
    title: str
    text: str
    version: str | None = None
    access: tuple[str, ...] = ()

    def row(self) -> dict[str, object]:
        row: dict[str, object] = {"id": self.id, "title": self.title, "text": self.text}
        if self.version is not None:
            row["version"] = self.version
        if self.access:
            row["access"] = list(self.access)
        return row


@dataclass
class Fact:
    """A reviewed proposition, the documents that state it and the ways a question asks for it.

    `clause` asks for the fact inside a longer question; ``{s}`` is its subject and ``{p}`` its
    possessive (the service name the first time, "it" and "its" afterwards). `docs` lists the
    supporting documents, primary first.
    """

    key: str
    kind: str
    text: str
    question: str
    clause: str
    subject: str
    docs: tuple[str, ...]
    tags: tuple[str, ...]
    critical: bool = False
    contested: bool = False


@dataclass
class Trap:
    """A passage that states a different value for an expected claim: superseded, a staging or
    draft twin, or a non-authoritative page. An answer that follows it makes `wrong_id`."""

    claim: str
    doc: str
    wrong_id: str
    wrong_text: str


@dataclass
class Question:
    """One test question with its labels and what the simulated systems may get wrong."""

    text: str
    type: str
    tags: tuple[str, ...]
    critical: bool
    grades: dict[str, int]
    claims: dict[str, tuple[str, tuple[str, ...]]]
    traps: list[Trap] = field(default_factory=list)
    note: str | None = None
    caller: tuple[str, ...] | None = None
    disputed: str | None = None
    lure: tuple[str, str, str] | None = None
    restricted: str | None = None
    pool: list[str] = field(default_factory=list)
    id: str = ""
    split: str = "dev"
    partial: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """claim -> documents labelled as partly supporting it (they state one of its clauses)."""

    @property
    def source(self) -> str | None:
        """The document the question was written from, its cluster: the first document of its highest
        grade, else the document an unanswerable question's lure comes from, else the restricted
        document a permission question asks about."""
        top = max(self.grades.values(), default=0)
        if top > 0:
            return next(d for d, g in self.grades.items() if g == top)
        if self.lure is not None:
            return self.lure[0]
        return self.restricted

    def row(self) -> dict[str, object]:
        row: dict[str, object] = {
            "id": self.id, "text": self.text, "type": self.type, "split": self.split,
            "critical": self.critical, "tags": list(self.tags),
        }
        if self.source is not None:
            row["cluster"] = self.source
        if self.caller is not None:
            row["caller"] = list(self.caller)
        row["relevant"] = dict(self.grades)
        row["support"] = {c: ({d: "full" for d in docs} | {d: "partial" for d in self.partial[c]}
                              if c in self.partial else list(docs)) for c, (_, docs) in self.claims.items()}
        row["claims"] = {c: text for c, (text, _) in self.claims.items()}
        if self.disputed:
            row["disputed"] = self.disputed
        return row

    @property
    def answerable(self) -> bool:
        return any(g > 0 for g in self.grades.values())


@dataclass
class Service:
    code: str
    name: str
    desc: str
    tier: int
    features: tuple[str, str, str]
    endpoint: str
    team: str = ""
    region: str = ""
    standby: str = ""
    rto: int = 0
    rpo: int = 0
    ttl: int = 0
    lag: int = 0
    err: float = 0.0
    err_minutes: int = 0
    duration: int = 0
    alert: str = ""
    dashboard: str = ""
    major: int = 0
    minor: int = 0
    dates: tuple[str, str, str] = ("", "", "")
    timeouts: tuple[int, int, int] = (0, 0, 0)
    third: str = ""
    removal: str = ""
    docs: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Fact] = field(default_factory=dict)

    def version(self, i: int) -> str:
        return f"{self.major}.{self.minor + i}"

    def values(self) -> dict[str, object]:
        """The service's single values by field name, to fill the prose templates with."""
        return {name: value for name, value in vars(self).items() if isinstance(value, (str, int, float))}


def draw_date(rng: random.Random, year: int, months: tuple[int, int]) -> str:
    return f"{year}-{rng.randint(*months):02d}-{rng.randint(1, 28):02d}"


def join_names(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

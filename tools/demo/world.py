"""The corpus and its facts (`World`) with the building blocks the corpus modules write with; the
corpus itself is written by `corpus.build_world`."""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from .model import Doc, Fact, Service, Trap
from .prose import fill


class World:
    """The corpus, its facts, and what the test set needs to know about particular documents and facts."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.docs: dict[str, Doc] = {}
        self.facts: dict[str, Fact] = {}
        self.topics: dict[str, list[str]] = {}
        self._counters: dict[str, int] = {}
        self.services: list[Service] = []
        self.traps: dict[str, list[Trap]] = {}
        self.disputes: dict[str, str] = {}
        # what the test set needs to know about particular documents and facts
        self.freeze_doc = ""
        self.handbook = ""
        self.oncall_facts: dict[str, Fact] = {}
        self.team_conflicts: list[tuple[str, str, str, str]] = []
        self.owner_conflicts: list[tuple[Service, str, str]] = []
        self.postmortems: list[dict[str, Any]] = []
        self.security: list[dict[str, Any]] = []
        self.restricted_facts: list[Fact] = []
        self.label_gap = ""
        """The question whose regression under the reranker is a label gap (`labels.plant_label_gap`)."""

    # building blocks

    def doc(self, prefix: str, title: str, text: str, *, topics: Sequence[str], version: str | None = None,
            access: Sequence[str] = ()) -> str:
        self._counters[prefix] = self._counters.get(prefix, 0) + 1
        doc_id = f"{prefix}-{self._counters[prefix]:04d}"
        self.docs[doc_id] = Doc(doc_id, title, text, version, tuple(access))
        if not access:
            for topic in topics:
                self.topics.setdefault(topic, []).append(doc_id)
        return doc_id

    def fact(self, key: str, kind: str, text: str, question: str, clause: str, subject: str,
             docs: Sequence[str], tags: Sequence[str], *, critical: bool = False) -> Fact:
        if key in self.facts:
            raise ValueError(f"duplicate fact key {key!r}")
        fact = Fact(key, kind, text, question, clause, subject, tuple(docs), tuple(tags), critical)
        self.facts[key] = fact
        return fact

    def declared_fact(self, spec: dict[str, Any], docs: Sequence[str], tags: Sequence[str], *, key: str = "",
                      kind: str = "", subject: str = "", **values: object) -> Fact:
        """A fact declared in the prose (`key`, `kind`, `text`, `question`, `clause`, `tags`,
        `critical`), its templates filled with `values`; `key` and `kind` override the declared ones."""
        return self.fact(key or spec["key"], kind or spec.get("kind", spec["key"]), fill(spec["text"], **values),
                         fill(spec["question"], **values), fill(spec.get("clause", ""), **values), subject, docs,
                         (*tags, *spec.get("tags", ())), critical=spec.get("critical", False))

    def trap(self, fact: Fact, doc: str, suffix: str, wrong_text: str) -> None:
        fact.contested = True
        self.traps.setdefault(fact.key, []).append(Trap(fact.key, doc, f"{fact.key}-{suffix}", wrong_text))

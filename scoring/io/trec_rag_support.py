"""The TREC RAG track's support assessments (`ragslice import trec-rag --support FILE`): each answer
sentence of a run graded, citation by citation, full, partial or no support (docs/formats.md,
"Support assessments").

The layout is the one the track's support evaluation writes (the organizers' ``support_eval`` output,
Thakur et al. 2025, arXiv 2504.15205): one JSON object per line, the run's line as submitted (2024:
``run_id``, ``topic_id``, ``references``, ``answer``; 2025: ``metadata``, ``references``, ``answer``)
with, added:

- ``support_eval``: one entry per sentence of ``answer``, in order: ``{"answer": the sentence's text,
  "citations": its citations, "count": how many, "eval_scores": [...], "<model>_responses": [...]}``;
  ``eval_scores`` grades the sentence's first citations (the track judged at most three), each
  ``"FS"`` (full support), ``"PS"`` (partial support), ``"NS"`` (no support), or null when the
  assessor's response could not be read;
- ``segments``: the judged segments' text (not kept).

Each graded citation becomes a label of an assessed claim of the sentence (`GRADES`); a null score
leaves its citation unjudged, and the claim does not cite it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .importing import Refusals, read_jsonl

GRADES = {"FS": "full", "PS": "partial", "NS": "none"}
"""The track's support scores as ragslice's support grades."""


@dataclass
class Assessment:
    """One run's assessed answer to one topic: per answer sentence, its judged citations as (index into
    the line's references, grade); and the sentences as the assessed line gives them."""

    run: str
    topic: str
    judged: list[list[tuple[int, str]]]
    sentences: list[dict[str, Any]]
    where: dict[str, Any]
    unread: int = 0
    """Citations whose score is null (not judged)."""


@dataclass
class Assessments:
    """Every assessed (run, topic), and the counts the import reports."""

    by_line: dict[tuple[str, str], Assessment] = field(default_factory=dict)
    grades: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GRADES.values(), 0))
    unread: int = 0


def read_support(paths: list[Path], parse_line: Callable[[dict[str, Any], dict[str, Any]], Any],
                 refusals: Refusals) -> Assessments:
    """Every line of the support files, checked (refused with file, line and field): the run line by
    `parse_line` (the run file's own reader: its name, topic and answer), and ``support_eval`` one entry
    per answer sentence, its citations indexes into the line's references or segment IDs among them, its
    scores one of `GRADES` or null, no more scores than citations; a (run, topic) assessed once."""
    found = Assessments()
    for path in paths:
        for where, value in read_jsonl(path, refusals):
            if not isinstance(value, dict):
                refusals.refuse("expected a JSON object (one topic's assessed answer) on each line", **where)
                continue
            parsed = parse_line(value, where)
            entries = value.get("support_eval")
            if not isinstance(entries, list):
                refusals.refuse("expected a list: one support evaluation per answer sentence", "support_eval",
                                entries, **where)
                continue
            if parsed is None:
                continue
            name, topic, _, line, _ = parsed
            if len(entries) != len(line.sentences):
                refusals.refuse(f"expected one entry per answer sentence ({len(line.sentences)})", "support_eval",
                                len(entries), **where)
                continue
            assessment = Assessment(name, topic, [], line.sentences, where)
            for i, entry in enumerate(entries):
                judged = _entry(entry, line.references, f"support_eval[{i}]", where, refusals)
                if judged is None:
                    continue
                grades, unread = judged
                assessment.judged.append(grades)
                assessment.unread += unread
            if len(assessment.judged) != len(line.sentences):
                continue
            if (name, topic) in found.by_line:
                first = found.by_line[(name, topic)].where
                refusals.refuse(f"run {name!r} is assessed on this topic already ({first['path']}:{first['line']})",
                                "support_eval", **where)
                continue
            found.by_line[(name, topic)] = assessment
            found.unread += assessment.unread
            for grades in assessment.judged:
                for _, grade in grades:
                    found.grades[grade] += 1
    return found


def _entry(entry: Any, references: list[str], name: str, where: dict[str, Any], refusals: Refusals
           ) -> tuple[list[tuple[int, str]], int] | None:
    """(judged citations as (index into references, grade), null scores) of one sentence's evaluation,
    the j-th score grading the j-th of its citations (an index, or a segment ID among the references);
    None when refused."""
    if not isinstance(entry, dict):
        refusals.refuse('expected an object {"answer", "citations", "eval_scores", ...}', name, entry, **where)
        return None
    citations, scores = entry.get("citations"), entry.get("eval_scores")
    if not isinstance(citations, list):
        refusals.refuse("expected the sentence's citations (a list)", f"{name}.citations", citations, **where)
        return None
    if not isinstance(scores, list) or len(scores) > len(citations):
        refusals.refuse(f"expected a list of at most one score per citation ({len(citations)})",
                        f"{name}.eval_scores", scores, **where)
        return None
    judged: list[tuple[int, str]] = []
    unread = 0
    for j, score in enumerate(scores):
        cite = citations[j]
        index = cite if isinstance(cite, int) and not isinstance(cite, bool) and 0 <= cite < len(references) else \
            references.index(cite) if isinstance(cite, str) and cite in references else None
        if index is None:
            refusals.refuse("a citation is a 0-based index into references or a segment ID among them",
                            f"{name}.citations[{j}]", cite, **where)
            return None
        if score is None:
            unread += 1
        elif score not in GRADES:
            refusals.refuse(f"a support score is one of {', '.join(GRADES)} or null", f"{name}.eval_scores[{j}]",
                            score, **where)
            return None
        elif index not in (i for i, _ in judged):
            judged.append((index, GRADES[score]))
    return judged, unread


__all__ = ["GRADES", "Assessment", "Assessments", "read_support"]

"""Two answers to one question, side by side: a word-level diff of their text and the citations each
side added or dropped. Question detail and the Present view show it; nothing here scores.

Words are compared as runs of letters and digits (joined by `-`, `.`, `/` or `:` inside them, so a
citation ID such as `pol-0007`, a version `2.1` or a date `2026-11-02` is one word), single punctuation
marks and runs of white space, so a changed number or a dropped "not" stands out; a run of white space
never anchors a match on its own, so two different sentences read as one replaced, not as a patchwork of
words between spaces. In the HTML, a space separates a removed and an added run that touch without one
(`two three`, never `twothree`): only the display gains it. Citations are
compared as the documents the claims (or answer sentences) cite, each once.
"""
from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Op = Literal["same", "removed", "added"]
TOKEN = re.compile(r"\s+|\w+(?:[-./:]\w+)*|[^\w\s]", re.UNICODE)


def _tokens(text: str | None) -> list[str]:
    return TOKEN.findall(text or "")


def word_diff(before: str | None, after: str | None) -> list[tuple[Op, str]]:
    """The baseline's text turned into the candidate's: ("same" | "removed" | "added", text) segments in
    reading order, neighbours of one kind joined; a missing answer is the empty text."""
    a, b = _tokens(before), _tokens(after)
    out: list[tuple[Op, str]] = []

    def push(op: Op, words: Sequence[str]) -> None:
        text = "".join(words)
        if not text:
            return
        if out and out[-1][0] == op:
            out[-1] = (op, out[-1][1] + text)
        else:
            out.append((op, text))

    matcher = difflib.SequenceMatcher(str.isspace, a, b, autojunk=False)  # a space alone never anchors a match
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            push("same", a[i1:i2])
        else:
            push("removed", a[i1:i2])
            push("added", b[j1:j2])
    return out


@dataclass(frozen=True)
class CitationChange:
    """The documents only the baseline cites, only the candidate cites, and both cite (first-cited order)."""

    dropped: tuple[str, ...]
    added: tuple[str, ...]
    kept: tuple[str, ...]


def citation_change(baseline: Iterable[Iterable[str]], candidate: Iterable[Iterable[str]]) -> CitationChange:
    """`baseline`, `candidate`: each claim's (or sentence's) cited documents, in answer order."""
    first_b = list(dict.fromkeys(d for cited in baseline for d in cited))
    first_c = list(dict.fromkeys(d for cited in candidate for d in cited))
    return CitationChange(tuple(d for d in first_b if d not in first_c), tuple(d for d in first_c if d not in first_b),
                          tuple(d for d in first_c if d in first_b))


def diff_html(segments: Sequence[tuple[Op, str]]) -> str:
    """The diff as escaped HTML: removed words in `<del>`, added in `<ins>`; a space between a removed and
    an added run that would otherwise touch (`reviewers` struck, `Every` added reads `reviewers Every`)."""
    tag = {"same": "{}", "removed": '<del class="diff-del">{}</del>', "added": '<ins class="diff-add">{}</ins>'}
    out = []
    for i, (op, text) in enumerate(segments):
        if i and op != "same" and segments[i - 1][0] != "same" and not (
                segments[i - 1][1][-1:].isspace() or text[:1].isspace()):
            out.append(" ")
        out.append(tag[op].format(html.escape(text)))
    return "".join(out)


__all__ = ["CitationChange", "citation_change", "diff_html", "word_diff"]

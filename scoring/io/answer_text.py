"""Free-text answers -> `answer_sentences` (docs/formats.md, "OpenInference spans", "RAGChecker inputs").

Formats that record an answer as one text (OpenInference's ``output.value``, RAGChecker's
``response``) give ragslice no sentences: `split_sentences` cuts the text, and `marked_sentences`
also reads citation markers such as ``[1]`` or ``[1, 3]`` as 1-based positions in the ranking the
answer stage received, written as the 0-based index citations of the record format.

Sentence rule: the text is cut at line breaks, and after ``.``, ``!`` or ``?`` (with any citation
markers right after it) followed by whitespace; each piece with non-blank text is a sentence, its
whitespace collapsed. Abbreviations ("e.g. ") therefore end a sentence; alignment is by sentence, so
that costs a sentence, never a citation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = re.compile(r"\[(\d+(?:[ \t]*,[ \t]*\d+)*)\]")
"""A citation marker: ``[n]`` or ``[n, m, ...]``, n a 1-based position in the delivered ranking."""
_END = re.compile(r"[.!?]+(?:[ \t]*\[\d+(?:[ \t]*,[ \t]*\d+)*\])*(?=\s)")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class Sentence:
    text: str
    markers: tuple[int, ...] = ()
    """The 1-based marker numbers in the sentence, in order, each once."""


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` (module docstring), whitespace collapsed; markers stay in the text."""
    out = []
    for line in text.splitlines():
        start = 0
        for end in _END.finditer(line):
            out.append(line[start:end.end()])
            start = end.end()
        out.append(line[start:])
    return [" ".join(s.split()) for s in out if s.strip()]


def marked_sentences(text: str) -> list[Sentence]:
    """The sentences of `text`, each with its citation markers read and removed from its text (a
    sentence that was only markers adds them to the sentence before it)."""
    out: list[Sentence] = []
    for piece in split_sentences(text):
        numbers = [int(n) for group in MARKER.findall(piece) for n in re.split(r"[ \t]*,[ \t]*", group)]
        bare = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(MARKER.sub(" ", piece).split()))
        if not bare.strip(" .!?"):
            if out:
                out[-1] = Sentence(out[-1].text, tuple(dict.fromkeys(out[-1].markers + tuple(numbers))))
            continue
        out.append(Sentence(bare, tuple(dict.fromkeys(numbers))))
    return out

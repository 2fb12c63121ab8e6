"""The alignment rules: how a free-text answer's sentences become generated claims, declared once.

A record may give its answer as `answer_sentences` (docs/formats.md, "Answer sentences") instead of
claims keyed to the suite's claim IDs. Each sentence is then aligned to the question's expected
claims by the first aligner in `ALIGNERS` that decided it, and the aligned sentences become the
record's generated claims by `CLAIM_RULES`; Support, Coverage and Abstention are then computed as
for any claims. The SQL that applies these rules is `scoring.store.alignment`; the reference is
`scoring.metrics.reference` (`lexical_alignment`, `sentence_claims`); both read the constants here.
"""
from __future__ import annotations

from typing import Literal

Outcome = Literal["claims", "unlabelled", "no_claim"]
OUTCOMES: dict[str, str] = {
    "claims": "the sentence states one or more of the question's expected claims (their IDs)",
    "unlabelled": "it states something the rubric does not hold: a generated claim without a support label, so "
                  "unsupported",
    "no_claim": "it has no factual content (\"Here is what I found:\"): not a claim, not counted",
}

ALIGNERS: dict[str, str] = {
    "human": "a reviewer's decision of kind `alignment` (review files), matched on the question and the sentence's "
             "normalised text, so one decision serves every run that wrote the same sentence; reviewers whose "
             "latest decisions differ make the question disputed and decide nothing",
    "judge": "a judge declared in the suite's judges.toml, from its cached answers (`ragslice align` fills the "
             "cache; refresh never calls a judge); judges in the order they are declared",
    "lexical": "the built-in aligner: token overlap between the sentence and each claim's proposition "
               "(`LEXICAL_RULES`); decides every sentence",
}
"""Aligners in precedence order: a sentence takes the outcome of the first one that decided it."""

UNLABELLED_ID = "unlabelled#{sentence}"
"""The ID of the generated claim an `unlabelled` sentence becomes (`sentence`: its 0-based number); no
expected claim may be named like it."""

CLAIM_RULES: tuple[str, ...] = (
    "A sentence aligned to claims becomes part of a generated claim with each of those IDs.",
    "The sentences aligned to one claim form one generated claim whose citations are the union of theirs (in "
    "sentence order), so one wrong citation is never cancelled by a right one.",
    f"An `unlabelled` sentence becomes a generated claim of its own (ID `{UNLABELLED_ID}`) with its citations; no "
    "label supports it.",
    "A `no_claim` sentence is not a claim. An answer whose sentences are all `no_claim` has no claim: it abstains.",
    "A citation that is an integer is a 0-based index into the record's `retrieved` list (the TREC RAG "
    "convention) and stands for that ID.",
    "A record with both `claims` and `answer_sentences` is scored on its claims; its sentences are kept for "
    "display and not aligned.",
)

NORMALISATION = ("Sentences are matched on their normalised text: Unicode NFC, every run of spaces, tabs and line "
                 "breaks made one space, leading and trailing spaces removed; case is kept.")

LEXICAL_THRESHOLD = 0.6
"""A sentence states a claim when at least this share of the proposition's distinct content tokens
appear in it."""
MIN_CONTENT_TOKENS = 3
"""A sentence that cites nothing and has fewer content tokens than this has no factual content."""
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have here how i if in into is it its
me my of on or our so than that the their them then there these they this those to was we were what when where
which while who will with would you your
""".split())
"""Function words that carry no claim; dropped before tokens are compared."""

LEXICAL_RULES: tuple[str, ...] = (
    "Tokens: the text in lower case, cut into maximal runs of letters and digits (Unicode categories L and N); "
    "stopwords dropped; each token counted once.",
    f"Overlap with a claim: the share of the proposition's tokens found in the sentence; the sentence is aligned "
    f"to every claim whose overlap is at least {LEXICAL_THRESHOLD}. Confidence: the highest overlap.",
    f"Otherwise it is `no_claim` when it cites nothing and has fewer than {MIN_CONTENT_TOKENS} tokens, else "
    "`unlabelled`; confidence: 1 minus the highest overlap.",
)


LEXICAL_SUPPORT_THRESHOLD = 0.6
"""The lexical aligner grades a cited document `partial` when at least this share of the sentence's
distinct content tokens appear in the document (title and text)."""

LEXICAL_SUPPORT_RULES: tuple[str, ...] = (
    "Each citation of a sentence is graded on its own, in citation order, with the tokens of `LEXICAL_RULES`.",
    f"`partial` when at least {LEXICAL_SUPPORT_THRESHOLD} of the sentence's tokens appear in the cited document's "
    "title and text; otherwise, or when the sentence has no token or the document is not in the suite, `none`.",
    "Never `full`: shared words cannot tell that a document states everything the sentence says (a superseded "
    "figure shares every word but the number), so token overlap claims at most part of it.",
)
"""How the lexical aligner grades the support of each citation (beside its alignment); a judge declared with
``grades = true`` grades them too, and each is measured against the reviewed support labels."""


def canonical_outcome(outcome: str, claim_ids: tuple[str, ...] | list[str]) -> str:
    """One label per alignment, for agreement between aligners: the sorted claim IDs joined by '+', or
    the outcome's name."""
    return "+".join(sorted(claim_ids)) if outcome == "claims" else outcome


__all__ = ["ALIGNERS", "CLAIM_RULES", "LEXICAL_RULES", "LEXICAL_SUPPORT_RULES", "LEXICAL_SUPPORT_THRESHOLD", "LEXICAL_THRESHOLD", "MIN_CONTENT_TOKENS", "NORMALISATION",
           "OUTCOMES", "Outcome", "STOPWORDS", "UNLABELLED_ID", "canonical_outcome"]

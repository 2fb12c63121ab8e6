"""Agreement between raters who labelled the same items: two reviewers, or an automatic judge and the
reviewers it is measured against.

For two raters over the n items both labelled: the share of items they agree on (`accuracy`), Cohen's
kappa ``(p_o - p_e) / (1 - p_e)`` where p_o is that share and p_e the agreement expected by chance from
each rater's own label frequencies (None when p_e = 1: both raters used one and the same label, so chance
explains everything), and the confusion counts (first rater's label, second rater's label, count).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations

import pandas as pd


@dataclass(frozen=True)
class Agreement:
    """Two raters over the items both labelled."""

    n: int
    agreed: int
    kappa: float | None
    confusion: tuple[tuple[Hashable, Hashable, int], ...]

    @property
    def accuracy(self) -> float | None:
        return self.agreed / self.n if self.n else None


def agreement(first: Sequence[Hashable], second: Sequence[Hashable]) -> Agreement:
    """Agreement of two raters' labels of the same items, item by item (equal lengths)."""
    if len(first) != len(second):
        raise ValueError(f"two raters label the same items: {len(first)} and {len(second)} labels")
    n = len(first)
    agreed = sum(1 for a, b in zip(first, second) if a == b)
    pairs = Counter(zip(first, second))
    confusion = tuple(sorted(((a, b, c) for (a, b), c in pairs.items()), key=lambda t: (str(t[0]), str(t[1]))))
    if n == 0:
        return Agreement(0, 0, None, ())
    left, right = Counter(first), Counter(second)
    expected = sum(left[c] * right[c] for c in left) / (n * n)
    observed = agreed / n
    kappa = None if expected == 1 else (observed - expected) / (1 - expected)
    return Agreement(n, agreed, kappa, confusion)


REVIEWER_COLUMNS: tuple[str, ...] = ("kind", "first", "second", "n", "agreed", "accuracy", "kappa")


def reviewer_agreement(reviews: pd.DataFrame) -> pd.DataFrame:
    """Per kind (relevance, support) and pair of reviewers, their agreement over the labels both
    decided, each on their latest decision (`reviews`: rows of the `reviews` table)."""
    rows = []
    decided = reviews[reviews["kind"].isin(["relevance", "support"])].copy()
    if decided.empty:
        return pd.DataFrame(columns=list(REVIEWER_COLUMNS))
    decided["value"] = decided["grade"].where(decided["kind"] == "relevance", decided["supports"])
    decided = decided.sort_values(["decided_at", "line"])
    label = ["kind", "question_id", "claim_id", "doc_id"]
    latest = decided.groupby([*label, "reviewer"], dropna=False, sort=False).tail(1)
    for kind, own in latest.groupby("kind", sort=True):
        by_label = own.pivot_table(index=label[1:], columns="reviewer", values="value", aggfunc="first",
                                   dropna=False)
        for a, b in combinations(sorted(by_label.columns), 2):
            both = by_label[[a, b]].dropna()
            found = agreement(list(both[a]), list(both[b]))
            if found.n:
                rows.append({"kind": kind, "first": a, "second": b, "n": found.n, "agreed": found.agreed,
                             "accuracy": found.accuracy, "kappa": found.kappa})
    return pd.DataFrame(rows, columns=list(REVIEWER_COLUMNS))




ALIGNER_COLUMNS: tuple[str, ...] = ("aligner", "decided_by", "n", "agreed", "accuracy", "kappa", "confusion")


def aligner_agreement(alignments: pd.DataFrame) -> pd.DataFrame:
    """Per automatic aligner (the lexical aligner, each judge), its agreement with the reviewers over the
    sentences both decided (`alignments`: rows of the `alignments` table). A sentence is its question, its
    normalised text and its citations, counted once however many runs wrote it; an alignment's label is
    `alignment.canonical_outcome` (claim IDs, "unlabelled" or "no_claim"). `confusion`: (reviewers' label,
    aligner's label, count)."""
    from ..metrics.alignment import canonical_outcome
    from ..metrics.reference import normalise_sentence

    if alignments.empty:
        return pd.DataFrame(columns=list(ALIGNER_COLUMNS))
    frame = alignments.assign(
        item=[(q, normalise_sentence(t), tuple(c)) for q, t, c in
              zip(alignments["question_id"], alignments["text"], alignments["citations"])],
        label=[canonical_outcome(o, list(ids)) for o, ids in zip(alignments["outcome"], alignments["claim_ids"])])
    frame = frame.drop_duplicates(["item", "aligner", "decided_by"])
    human = dict(zip(frame.loc[frame["aligner"] == "human", "item"], frame.loc[frame["aligner"] == "human", "label"]))
    rows = []
    automatic = frame[frame["aligner"] != "human"]
    for (aligner, decided_by), own in automatic.groupby(["aligner", "decided_by"], sort=True):
        both = [(human[i], label) for i, label in zip(own["item"], own["label"]) if i in human]
        found = agreement([h for h, _ in both], [a for _, a in both])
        rows.append({"aligner": aligner, "decided_by": decided_by, "n": found.n, "agreed": found.agreed,
                     "accuracy": found.accuracy, "kappa": found.kappa, "confusion": [list(c) for c in found.confusion]})
    return pd.DataFrame(rows, columns=list(ALIGNER_COLUMNS))


__all__ = ["ALIGNER_COLUMNS", "REVIEWER_COLUMNS", "Agreement", "agreement", "aligner_agreement", "reviewer_agreement"]

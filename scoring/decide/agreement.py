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


__all__ = ["REVIEWER_COLUMNS", "Agreement", "agreement", "reviewer_agreement"]

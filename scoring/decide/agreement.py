"""Agreement between raters who labelled the same items: two reviewers, or an automatic judge and the
reviewers it is measured against.

For two raters over the n items both labelled: the share of items they agree on (`accuracy`), Cohen's
kappa ``(p_o - p_e) / (1 - p_e)`` where p_o is that share and p_e the agreement expected by chance from
each rater's own label frequencies (None when p_e = 1: both raters used one and the same label, so chance
explains everything), and the confusion counts (first rater's label, second rater's label, count).

Kappa comes with its uncertainty (`kappa_interval`): the percentile bootstrap over items (Efron and
Tibshirani 1993, ch. 13): `resamples` resamples of the n items with replacement, drawn as
``default_rng(seed).integers(0, n, (resamples, n))``, kappa of each, and the ``(1 - confidence) / 2``
and ``(1 + confidence) / 2`` quantiles of those (numpy's linear interpolation); a resample whose kappa
is undefined (both raters used one label) is left out. Assumes the items are a random sample of the
items the raters will label, rated independently of each other; below `MIN_ITEMS` items there is no
interval (the bootstrap of a handful of items is too narrow to mean anything).

For graded labels (relevance grades; support graded none, partial, full) `weighted_kappa` is Cohen's
quadratic-weighted kappa
``1 - sum w O / sum w E`` with weights ``(x_i - x_j)**2`` of the grade values, O the observed and E the
chance-expected joint shares (Cohen 1968): a grade 3 against a grade 2 disagrees less than 3 against
0. When more than two reviewers decided the same labels, `reviewer_alpha` gives Krippendorff's alpha
over all of them (the `krippendorff` package; Krippendorff 2011), ordinal for both kinds (with two
values, yes and no, ordinal and nominal alpha are one).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np
import pandas as pd

from ..metrics.registry import SUPPORT_LEVEL
from .stats import BOOTSTRAP_RESAMPLES, CONFIDENCE, SMALL_N

MIN_ITEMS = SMALL_N
"""Below this many items both raters labelled, kappa has no interval."""


@dataclass(frozen=True)
class Agreement:
    """Two raters over the items both labelled; `kappa_low` / `kappa_high`: kappa's bootstrap
    interval (None below `MIN_ITEMS` items or when kappa is undefined)."""

    n: int
    agreed: int
    kappa: float | None
    confusion: tuple[tuple[Hashable, Hashable, int], ...]
    kappa_low: float | None = None
    kappa_high: float | None = None

    @property
    def accuracy(self) -> float | None:
        return self.agreed / self.n if self.n else None


def _codes(first: Sequence[Hashable], second: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray, int]:
    """Both raters' labels as codes 0..L-1 of their union (in order of first appearance), and L."""
    index: dict[Hashable, int] = {}
    a = np.array([index.setdefault(x, len(index)) for x in first], dtype=np.int64)
    b = np.array([index.setdefault(x, len(index)) for x in second], dtype=np.int64)
    return a, b, max(1, len(index))


def _kappas(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each confusion table (... x L x L counts); NaN where p_e = 1."""
    n = tables.sum(axis=(-2, -1))
    observed = np.trace(tables, axis1=-2, axis2=-1) / n
    expected = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected >= 1 - 1e-12, np.nan, (observed - expected) / (1 - expected))


def kappa_interval(first: Sequence[Hashable], second: Sequence[Hashable], *, resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = 0, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The percentile bootstrap interval of Cohen's kappa over the items (module docstring); None below
    `MIN_ITEMS` items, when kappa itself is undefined, or when no resample defines it."""
    if len(first) != len(second):
        raise ValueError(f"two raters label the same items: {len(first)} and {len(second)} labels")
    n = len(first)
    if n < MIN_ITEMS:
        return None
    a, b, size = _codes(first, second)
    return _interval((a * size + b).tobytes(), size, resamples, seed, confidence)


@lru_cache(maxsize=4096)
def _interval(cells: bytes, size: int, resamples: int, seed: int, confidence: float) -> tuple[float, float] | None:
    """`kappa_interval` of the items' cells (first label's code * `size` + second's, int64 bytes); kept per
    process: a comparison measures the same judge against the same reviews for every candidate."""
    cell = np.frombuffer(cells, dtype=np.int64)
    n = len(cell)
    whole = np.bincount(cell, minlength=size * size).reshape(size, size)
    if np.isnan(_kappas(whole[None])[0]):
        return None
    drawn = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    pair = cell[drawn] + (np.arange(resamples) * size * size)[:, None]
    tables = np.bincount(pair.ravel(), minlength=resamples * size * size).reshape(resamples, size, size)
    kappas = _kappas(tables)
    kappas = kappas[~np.isnan(kappas)]
    if not len(kappas):
        return None
    tail = (1 - confidence) / 2
    low, high = np.quantile(kappas, [tail, 1 - tail])
    return float(low), float(high)


def weighted_kappa(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Cohen's quadratic-weighted kappa of two raters' numeric grades of the same items (module
    docstring); None without items or when chance explains every disagreement (the expected weighted
    disagreement is 0: both raters gave one and the same grade)."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if len(x) != len(y):
        raise ValueError(f"two raters label the same items: {len(x)} and {len(y)} labels")
    if not len(x):
        return None
    observed = float(np.mean((x - y) ** 2))
    expected = float(np.mean((x[:, None] - y[None, :]) ** 2))  # every grade of one against every grade of the other
    return None if expected == 0 else 1 - observed / expected


def weighted_kappa_interval(first: Sequence[float], second: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                            seed: int = 0, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The percentile bootstrap interval of `weighted_kappa` over the items, drawn as `kappa_interval`'s;
    None below `MIN_ITEMS` items, when the weighted kappa itself is undefined, or when no resample defines
    it. The chance term of a resample is ``mean(x^2) + mean(y^2) - 2 mean(x) mean(y)`` (every grade of one
    rater against every grade of the other, as `weighted_kappa` counts it)."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    n = len(x)
    if n < MIN_ITEMS or weighted_kappa(x, y) is None:
        return None
    drawn = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    xs, ys = x[drawn], y[drawn]
    observed = ((xs - ys) ** 2).mean(axis=1)
    expected = (xs ** 2).mean(axis=1) + (ys ** 2).mean(axis=1) - 2 * xs.mean(axis=1) * ys.mean(axis=1)
    defined = expected > 1e-12
    if not defined.any():
        return None
    kappas = 1 - observed[defined] / expected[defined]
    tail = (1 - confidence) / 2
    low, high = np.quantile(kappas, [tail, 1 - tail])
    return float(low), float(high)


def agreement(first: Sequence[Hashable], second: Sequence[Hashable], *, seed: int = 0) -> Agreement:
    """Agreement of two raters' labels of the same items, item by item (equal lengths), with kappa's
    bootstrap interval (`kappa_interval`, seeded)."""
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
    interval = kappa_interval(first, second, seed=seed) if kappa is not None else None
    return Agreement(n, agreed, kappa, confusion, *(interval or (None, None)))


def self_agreement_words(pairs: Sequence[tuple[Hashable, Hashable]]) -> str:
    """"58 of 60 repeated answers equal the first (96.7%; kappa 0.953, 95% 0.89 to 1.00)": a judge's
    answers asked again against its first (cached) answers, `pairs` of (first, again) labels."""
    if not pairs:
        return "no repeated answer to compare"
    found = agreement([a for a, _ in pairs], [b for _, b in pairs])
    kappa = "kappa n/a: one label only" if found.kappa is None else f"kappa {found.kappa:.3f}" + (
        f", {CONFIDENCE:.0%} {found.kappa_low:.3f} to {found.kappa_high:.3f}" if found.kappa_low is not None else "")
    return (f"{found.agreed} of {found.n} repeated answers equal the first "
            f"({found.accuracy:.1%}; {kappa})")


REVIEWER_COLUMNS: tuple[str, ...] = ("kind", "first", "second", "n", "agreed", "accuracy", "kappa", "kappa_low",
                                     "kappa_high", "weighted_kappa")


def _latest_by_label(reviews: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per kind (relevance, support): one row per label (question, claim, document), one column per
    reviewer, holding the reviewer's latest decision (a grade, or whether the document supports the
    claim); NaN where the reviewer did not decide the label."""
    decided = reviews[reviews["kind"].isin(["relevance", "support"])].copy()
    if decided.empty:
        return {}
    support = decided["supports"].map({True: 2, False: 0})  # yes / no: full / none
    if "support_grade" in decided:
        support = decided["support_grade"].map(SUPPORT_LEVEL).fillna(support)
    decided["value"] = decided["grade"].where(decided["kind"] == "relevance", support)
    decided = decided.sort_values(["decided_at", "line"])
    label = ["kind", "question_id", "claim_id", "doc_id"]
    latest = decided.groupby([*label, "reviewer"], dropna=False, sort=False).tail(1)
    return {str(kind): own.pivot_table(index=label[1:], columns="reviewer", values="value", aggfunc="first",
                                       dropna=False) for kind, own in latest.groupby("kind", sort=True)}


def reviewer_agreement(reviews: pd.DataFrame) -> pd.DataFrame:
    """Per kind (relevance, support) and pair of reviewers, their agreement over the labels both
    decided, each on their latest decision (`reviews`: rows of the `reviews` table): kappa with its
    bootstrap interval, and the quadratic-weighted kappa over the grades (relevance grades; support on
    the three levels none 0, partial 1, full 2)."""
    rows = []
    for kind, by_label in _latest_by_label(reviews).items():
        for a, b in combinations(sorted(by_label.columns), 2):
            both = by_label[[a, b]].dropna()
            found = agreement(list(both[a]), list(both[b]))
            if found.n:
                weighted = weighted_kappa(list(both[a]), list(both[b]))
                rows.append({"kind": kind, "first": a, "second": b, "n": found.n, "agreed": found.agreed,
                             "accuracy": found.accuracy, "kappa": found.kappa, "kappa_low": found.kappa_low,
                             "kappa_high": found.kappa_high, "weighted_kappa": weighted})
    return pd.DataFrame(rows, columns=list(REVIEWER_COLUMNS))


ALPHA_COLUMNS: tuple[str, ...] = ("kind", "reviewers", "labels", "level", "alpha")
ALPHA_LEVELS = {"relevance": "ordinal", "support": "ordinal"}
"""Krippendorff's level of measurement per kind: relevance grades and support grades (none, partial,
full) are ordered."""


def reviewer_alpha(reviews: pd.DataFrame) -> pd.DataFrame:
    """Per kind where more than two reviewers decided labels: Krippendorff's alpha over every reviewer's
    latest decisions (`reviews`: rows of the `reviews` table), computed by the `krippendorff` package
    over the labels at least two of them decided (`labels`), at the kind's level (`ALPHA_LEVELS`);
    alpha is None when those labels hold a single value (no variation to agree on)."""
    import krippendorff  # imported on first use: reviews with three reviewers are rare

    rows = []
    for kind, by_label in _latest_by_label(reviews).items():
        if by_label.shape[1] < 3:
            continue
        values = by_label.astype(float)
        values = values[values.notna().sum(axis=1) >= 2]
        alpha = None
        if len(values) and values.stack().nunique() > 1:
            alpha = float(krippendorff.alpha(reliability_data=values.to_numpy().T,
                                             level_of_measurement=ALPHA_LEVELS[kind]))
        rows.append({"kind": kind, "reviewers": int(by_label.shape[1]), "labels": int(len(values)),
                     "level": ALPHA_LEVELS[kind], "alpha": alpha})
    return pd.DataFrame(rows, columns=list(ALPHA_COLUMNS))




ALIGNER_COLUMNS: tuple[str, ...] = ("aligner", "decided_by", "n", "agreed", "accuracy", "kappa", "confusion",
                                    "kappa_low", "kappa_high")


def _aligner_pairs(alignments: pd.DataFrame) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """(aligner, decided_by) -> (question, reviewers' label, aligner's label) over the sentences both decided
    (`aligner_agreement`'s items), aligners in order."""
    from ..metrics.alignment import canonical_outcome
    from ..metrics.reference import normalise_sentence

    frame = alignments.assign(
        item=[(q, normalise_sentence(t), tuple(c)) for q, t, c in
              zip(alignments["question_id"], alignments["text"], alignments["citations"])],
        label=[canonical_outcome(o, list(ids)) for o, ids in zip(alignments["outcome"], alignments["claim_ids"])])
    frame = frame.drop_duplicates(["item", "aligner", "decided_by"])
    human = dict(zip(frame.loc[frame["aligner"] == "human", "item"], frame.loc[frame["aligner"] == "human", "label"]))
    automatic = frame[frame["aligner"] != "human"]
    return {(str(aligner), str(decided_by)): [(i[0], human[i], label) for i, label in zip(own["item"], own["label"])
                                              if i in human]
            for (aligner, decided_by), own in automatic.groupby(["aligner", "decided_by"], sort=True)}


SLICE_COLUMNS: tuple[str, ...] = ("aligner", "decided_by", "slice", "n", "agreed", "kappa", "reason")
MIN_SLICE_ITEMS = MIN_ITEMS
"""Below this many sentences in a slice an aligner's kappa there is n/a (too few to read)."""


def aligner_agreement_by_slice(alignments: pd.DataFrame, questions: pd.DataFrame) -> pd.DataFrame:
    """Per automatic aligner and slice (answerable, unanswerable, each question type: `questions` holds the
    suite's question_id, type and answerable), its agreement with the reviewers over the sentences of that
    slice's questions both decided (`aligner_agreement`'s items): n, agreed, Cohen's kappa. Kappa is None
    (n/a) with `reason` "fewer than 10 sentences" below `MIN_SLICE_ITEMS`, or "one label only" when the
    slice's labels leave no variation (p_e = 1); a slice without a sentence is left out."""
    from ..metrics.slices import mask, parse_slice

    if alignments.empty or questions.empty:
        return pd.DataFrame(columns=list(SLICE_COLUMNS))
    names = ["answerable", "unanswerable", *(f"type:{t}" for t in sorted(questions["type"].dropna().unique()))]
    members = {name: set(questions.loc[mask(questions, parse_slice(name)), "question_id"]) for name in names}
    rows = []
    for (aligner, decided_by), both in _aligner_pairs(alignments).items():
        for name in names:
            mine = [(h, a) for q, h, a in both if q in members[name]]
            if not mine:
                continue
            found = agreement([h for h, _ in mine], [a for _, a in mine])
            reason = None
            if found.n < MIN_SLICE_ITEMS:
                reason = f"fewer than {MIN_SLICE_ITEMS} sentences"
            elif found.kappa is None:
                reason = "one label only"
            rows.append({"aligner": aligner, "decided_by": decided_by, "slice": name, "n": found.n,
                         "agreed": found.agreed, "kappa": None if reason else found.kappa, "reason": reason})
    return pd.DataFrame(rows, columns=list(SLICE_COLUMNS))


def aligner_agreement(alignments: pd.DataFrame) -> pd.DataFrame:
    """Per automatic aligner (the lexical aligner, each judge), its agreement with the reviewers over the
    sentences both decided (`alignments`: rows of the `alignments` table). A sentence is its question, its
    normalised text and its citations, counted once however many runs wrote it; an alignment's label is
    `alignment.canonical_outcome` (claim IDs, "unlabelled" or "no_claim"). `confusion`: (reviewers' label,
    aligner's label, count); `kappa_low` / `kappa_high`: kappa's bootstrap interval."""
    if alignments.empty:
        return pd.DataFrame(columns=list(ALIGNER_COLUMNS))
    rows = []
    for (aligner, decided_by), both in _aligner_pairs(alignments).items():
        found = agreement([h for _, h, _ in both], [a for _, _, a in both])
        rows.append({"aligner": aligner, "decided_by": decided_by, "n": found.n, "agreed": found.agreed,
                     "accuracy": found.accuracy, "kappa": found.kappa, "confusion": [list(c) for c in found.confusion],
                     "kappa_low": found.kappa_low, "kappa_high": found.kappa_high})
    return pd.DataFrame(rows, columns=list(ALIGNER_COLUMNS))


__all__ = ["ALIGNER_COLUMNS", "ALPHA_COLUMNS", "MIN_SLICE_ITEMS", "REVIEWER_COLUMNS", "SLICE_COLUMNS", "Agreement",
           "agreement", "aligner_agreement", "aligner_agreement_by_slice",
           "kappa_interval", "reviewer_agreement", "reviewer_alpha", "self_agreement_words", "weighted_kappa", "weighted_kappa_interval"]

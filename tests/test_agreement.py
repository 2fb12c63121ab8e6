"""Agreement with its uncertainty: Cohen's kappa and its bootstrap interval, quadratic-weighted kappa for
grades, Krippendorff's alpha for more than two reviewers, and the alignment gate on kappa's lower bound.

Hand arithmetic first, then the library (`krippendorff`), then the interval's coverage by simulation
(small in the fast tier, full when `tiers.full`; benchmarks/calibrate_family.py prints a larger table).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import tiers
from scoring.decide import agreement as A
from scoring.decide import gates as G
from scoring.decide import policy as P


def test_kappa_interval_is_seeded_and_holds_kappa():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 60)
    b = np.where(rng.random(60) < 0.7, a, rng.integers(0, 3, 60))
    found = A.agreement(list(a), list(b))
    assert found.kappa_low < found.kappa < found.kappa_high
    assert A.kappa_interval(list(a), list(b)) == (found.kappa_low, found.kappa_high)
    assert A.kappa_interval(list(a), list(b), seed=1) != (found.kappa_low, found.kappa_high)
    assert A.kappa_interval(list(a), list(b), confidence=0.5)[0] > found.kappa_low


def test_kappa_interval_by_hand_when_every_resample_is_the_same():
    # ten items, every one agreed on, two labels used by both: each resample that uses both labels has
    # kappa 1; a resample drawing one label only has no kappa and is left out: the interval is (1, 1)
    assert A.kappa_interval([0, 1] * 5, [0, 1] * 5) == (1.0, 1.0)
    # below ten items, or without kappa (one label on both sides), no interval
    assert A.kappa_interval([0, 1] * 4, [0, 1] * 4) is None
    assert A.kappa_interval([1] * 12, [1] * 12) is None
    assert A.agreement([0, 1, 1], [0, 1, 0]).kappa_low is None
    with pytest.raises(ValueError, match="same items"):
        A.kappa_interval([0, 1], [0])


def test_kappa_interval_draws_as_documented():
    """Resample r takes the items default_rng(seed).integers(0, n, (resamples, n))[r]."""
    rng = np.random.default_rng(3)
    a = list(rng.integers(0, 2, 25))
    b = [x if rng.random() < 0.8 else 1 - x for x in a]
    drawn = np.random.default_rng(7).integers(0, 25, size=(300, 25))
    kappas = [A.agreement([a[i] for i in row], [b[i] for i in row]).kappa for row in drawn]
    kappas = np.array([k for k in kappas if k is not None])
    assert A.kappa_interval(a, b, resamples=300, seed=7) == pytest.approx(tuple(np.quantile(kappas, [0.025, 0.975])))


def test_weighted_kappa_by_hand():
    # grades 0 1 2 3 against 0 2 2 1: observed squared gaps (0 + 1 + 0 + 4) / 4 = 1.25; expected: every grade
    # of one against every grade of the other, (9 + 3 + 5 + 15) / 16 = 2; weighted kappa 1 - 1.25 / 2
    assert A.weighted_kappa([0, 1, 2, 3], [0, 2, 2, 1]) == pytest.approx(0.375)
    assert A.weighted_kappa([0, 1, 2, 3], [0, 1, 2, 3]) == 1.0
    assert A.weighted_kappa([2, 2], [2, 2]) is None and A.weighted_kappa([], []) is None
    # two grades: the squared gap is 0 or 1, so it is Cohen's kappa
    a, b = [1, 1, 0, 0, 1, 0], [1, 0, 0, 0, 1, 1]
    assert A.weighted_kappa(a, b) == pytest.approx(A.agreement(a, b).kappa)
    # 3 against 2 disagrees less than 3 against 0
    assert A.weighted_kappa([3, 3, 0, 0], [2, 2, 0, 0]) > A.weighted_kappa([3, 3, 0, 0], [0, 0, 3, 3])


def _reviews(rows: list[tuple[str, str, str, int]]) -> pd.DataFrame:
    """Rows of the reviews table: (reviewer, question, kind, value)."""
    return pd.DataFrame([{
        "kind": kind, "question_id": q, "claim_id": "c" if kind == "support" else None, "doc_id": "d",
        "reviewer": who, "grade": value if kind == "relevance" else None,
        "supports": bool(value) if kind == "support" else None, "decided_at": "2026-01-01T00:00:00Z", "line": i}
        for i, (who, q, kind, value) in enumerate(rows)])


def test_krippendorff_alpha_by_hand():
    """Three reviewers, four labels (support yes/no: ordinal, which with two values is nominal): q1 1 1 1;
    q2 0 0 1; q3 0 0 0; q4 1 1 and no third. Coincidences: o00 = 1 + 3 = 4, o01 = o10 = 1, o11 = 3 + 2 = 5; n = 11 (5 zeros, 6 ones). Observed
    disagreement 2 / 11, expected 2 x 5 x 6 / (11 x 10) = 6 / 11: alpha = 1 - (2/11) / (6/11) = 2/3."""
    values = {"q1": (1, 1, 1), "q2": (0, 0, 1), "q3": (0, 0, 0), "q4": (1, 1, None)}
    rows = [(who, q, "support", v) for q, vs in values.items() for who, v in zip(("ana", "ben", "cy"), vs)
            if v is not None]
    found = A.reviewer_alpha(_reviews(rows))
    assert found.to_dict("records") == [{"kind": "support", "reviewers": 3, "labels": 4, "level": "ordinal",
                                         "alpha": pytest.approx(2 / 3)}]
    # two reviewers: kappa says it, no alpha row
    assert A.reviewer_alpha(_reviews([r for r in rows if r[0] != "cy"])).empty


def test_reviewers_grading_support_agree_by_weighted_kappa_on_three_levels():
    """ana and ben grade 12 support labels none, partial or full; ben reads three of ana's fulls as partial and
    one none as partial: weighted kappa on the levels 0, 1, 2 by hand, and it counts a full read as partial
    as a small disagreement (above plain kappa)."""
    ana = ["full", "full", "full", "full", "partial", "partial", "none", "none", "none", "full", "partial", "none"]
    ben = ["partial", "partial", "partial", "full", "partial", "partial", "partial", "none", "none", "full",
           "partial", "none"]
    frame = _reviews([(who, f"q{i:02d}", "support", 1) for who, grades in (("ana", ana), ("ben", ben))
                      for i in range(12)])
    frame["support_grade"] = ana + ben
    [row] = A.reviewer_agreement(frame).to_dict("records")
    level = {"none": 0, "partial": 1, "full": 2}
    x, y = np.array([level[g] for g in ana], float), np.array([level[g] for g in ben], float)
    by_hand = 1 - np.mean((x - y) ** 2) / np.mean((x[:, None] - y[None, :]) ** 2)
    assert (row["kind"], row["n"], row["agreed"]) == ("support", 12, 8)
    assert row["weighted_kappa"] == pytest.approx(by_hand) and row["weighted_kappa"] > row["kappa"]


def test_reviewer_agreement_gives_the_interval_and_weighted_kappa_for_grades():
    rng = np.random.default_rng(5)
    grades = rng.integers(0, 4, 30)
    rows = [("ana", f"q{i}", "relevance", int(g)) for i, g in enumerate(grades)]
    rows += [("ben", f"q{i}", "relevance", int(min(3, g + (rng.random() < 0.3)))) for i, g in enumerate(grades)]
    table = A.reviewer_agreement(_reviews(rows))
    row = table.iloc[0]
    order = sorted(range(30), key=lambda i: f"q{i}")  # labels in question order: q0, q1, q10, ...
    a = [rows[i][3] for i in order]
    b = [rows[30 + i][3] for i in order]
    assert (row["kind"], row["n"]) == ("relevance", 30)
    assert (row["kappa_low"], row["kappa_high"]) == A.kappa_interval(a, b)
    assert row["weighted_kappa"] == pytest.approx(A.weighted_kappa(a, b)) and row["weighted_kappa"] > row["kappa"]
    alpha = A.reviewer_alpha(_reviews(rows + [("cy", f"q{i}", "relevance", int(g)) for i, g in enumerate(grades)]))
    assert alpha.iloc[0]["level"] == "ordinal" and 0 < alpha.iloc[0]["alpha"] <= 1


@pytest.mark.sampled
def test_kappa_interval_covers_at_about_its_nominal_rate():
    """Two raters drawn from a known joint distribution of three labels (population kappa 0.669): the 95%
    interval over 80 items holds the population kappa in about 95% of samples."""
    joint = np.array([[0.30, 0.05, 0.02], [0.04, 0.25, 0.04], [0.02, 0.05, 0.23]])
    observed = np.trace(joint)
    expected = float(joint.sum(axis=1) @ joint.sum(axis=0))
    kappa = (observed - expected) / (1 - expected)
    rng = np.random.default_rng(8)
    runs = 4 * tiers.examples(90)
    covered = 0
    for r in range(runs):
        cells = rng.choice(9, size=80, p=joint.ravel())
        low, high = A.kappa_interval(list(cells // 3), list(cells % 3), resamples=1000, seed=r)
        covered += low <= kappa <= high
    assert abs(covered / runs - 0.95) <= 3 * math.sqrt(0.95 * 0.05 / runs) + 0.02


# --- the alignment gate on kappa's lower bound --------------------------------------------------------


class _Evidence:
    def __init__(self, aligners, intervals):
        self._aligners, self._intervals = aligners, intervals

    def automatic_aligners(self):
        return self._aligners

    def aligner_intervals(self):
        return self._intervals


def test_alignment_gate_states_the_interval_and_can_judge_its_lower_end():
    evidence = _Evidence([("judge checker", 0.848, 30), ("lexical", 0.7, 5)],
                         {"judge checker": (0.701, 0.95), "lexical": None})
    estimate = G.alignment_gate(0.6, evidence)
    assert estimate.passed and estimate.observed == 0.7
    assert "(judge checker: kappa 0.848 (95% interval 0.701 to 0.950); lexical: kappa 0.700)" in estimate.reason
    lower = G.alignment_gate(0.6, evidence, "lower")
    # the lexical aligner has no interval (too few sentences): unmeasured, so the gate fails
    assert not lower.passed and lower.observed is None
    assert "lexical: not measured (too few sentences both it and a reviewer decided for an interval)" in lower.reason
    assert "judge checker: kappa's lower bound 0.701 (95% interval 0.701 to 0.950)" in lower.reason
    narrow = G.alignment_gate(0.75, _Evidence([("judge checker", 0.848, 30)], {"judge checker": (0.701, 0.95)}),
                              "lower")
    assert not narrow.passed and narrow.observed == 0.701 and narrow.reason.endswith("kappa's lower bound 0.75")
    assert G.alignment_gate(0.75, _Evidence([("judge checker", 0.848, 30)], {"judge checker": (0.701, 0.95)})).passed


def test_policy_reads_alignment_kappa_bound():
    text = 'name = "p"\nmin_alignment_kappa = 0.6\nalignment_kappa_bound = "lower"\n[[gates]]\nmetric = "support"\n' \
           'slice = "all"\nmin = 0.5\n'
    assert P.parse_policy(text).alignment_kappa_bound == "lower"
    assert P.parse_policy(text.replace('alignment_kappa_bound = "lower"\n', "")).alignment_kappa_bound == "estimate"
    with pytest.raises(P.ValidationError, match="alignment_kappa_bound"):
        P.parse_policy(text.replace('"lower"', '"upper"'))


def test_aligner_kappa_by_slice_by_hand():
    # q-a (answerable, type lookup): 10 sentences, the judge right on 9 (5 "c1", 4 "c2"; one c2 read as c1);
    # q-r (unanswerable, type refusal): 4 sentences, reviewers say no_claim, the judge twice "unlabelled"
    def row(q, i, aligner, label):
        outcome = label if label in ("no_claim", "unlabelled") else "claims"
        return {"question_id": q, "text": f"sentence {i}", "citations": [], "aligner": aligner,
                "decided_by": "j" if aligner == "judge" else "ann", "outcome": outcome,
                "claim_ids": [label] if outcome == "claims" else []}

    truth = ["c1"] * 5 + ["c2"] * 5
    judged = ["c1"] * 6 + ["c2"] * 4
    rows = [row("q-a", i, "human", t) for i, t in enumerate(truth)] + \
        [row("q-a", i, "judge", j) for i, j in enumerate(judged)] + \
        [row("q-r", i, "human", "no_claim") for i in range(4)] + \
        [row("q-r", i, "judge", "no_claim" if i < 2 else "unlabelled") for i in range(4)]
    questions = pd.DataFrame({"question_id": ["q-a", "q-r"], "type": ["lookup", "refusal"],
                              "answerable": [True, False]})
    found = A.aligner_agreement_by_slice(pd.DataFrame(rows), questions).set_index("slice")
    assert list(found.index) == ["answerable", "unanswerable", "type:lookup", "type:refusal"]
    # answerable: p_o = 9/10, p_e = (5*6 + 5*4) / 100 = 0.5: kappa = 0.4 / 0.5 = 0.8
    assert (found.loc["answerable", "n"], found.loc["answerable", "agreed"]) == (10, 9)
    assert found.loc["answerable", "kappa"] == pytest.approx(0.8)
    assert found.loc["type:lookup", "kappa"] == pytest.approx(0.8)
    # unanswerable: 4 sentences, below 10: n/a with the reason (never 0)
    assert (found.loc["unanswerable", "n"], found.loc["unanswerable", "agreed"]) == (4, 2)
    assert pd.isna(found.loc["unanswerable", "kappa"])
    assert found.loc["unanswerable", "reason"] == "fewer than 10 sentences"


def test_aligner_kappa_by_slice_without_variation_is_n_a():
    rows = [{"question_id": "q", "text": f"s {i}", "citations": [], "aligner": a, "decided_by": a,
             "outcome": "claims", "claim_ids": ["c"]} for i in range(12) for a in ("human", "judge")]
    found = A.aligner_agreement_by_slice(pd.DataFrame(rows), pd.DataFrame(
        {"question_id": ["q"], "type": ["lookup"], "answerable": [True]}))
    assert list(found["slice"]) == ["answerable", "type:lookup"]
    assert found["kappa"].isna().all() and set(found["reason"]) == {"one label only"}

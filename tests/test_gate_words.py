"""A gate in words: every kind's sentence from the gate's fields, never from its threshold text."""
from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from scoring.decide import gate_words as W
from scoring.decide import gates as G
from scoring.decide import policy as P


def result(**fields) -> G.GateResult:
    base = dict(name="g", kind="threshold", metric="coverage", slice="critical", aggregate="macro", threshold="",
                passed=False, observed=0.7321, baseline=0.9293, n=66, reason="the reason", observed_text="0.732")
    base.update(fields)
    gate = G.GateResult(**base)
    return replace(gate, threshold=W.threshold_words(gate))


SUPPORT_REGRESSIONS = dict(kind="regressions", metric="support", slice="answerable", aggregate="per question",
                           observed=9.0, baseline=None, n=205, observed_text="9 regressed", max_regressions=0)
OUTDATED_DROP = dict(kind="drop", metric="coverage", slice="type:outdated", aggregate="per question",
                     observed=-0.2580645, baseline=0.74, n=31, p_value=0.00999, observed_text="delta -0.258",
                     max_drop=0.02, alpha=0.05, test="randomization")

CASES = [
    (dict(min=0.9), "Coverage on critical questions is 0.732, below the minimum 0.9 (66 questions; baseline 0.929)."),
    (dict(min=0.9, passed=True, observed=0.917, observed_text="0.917"),
     "Coverage on critical questions is 0.917, within the bound (at least 0.9) (66 questions; baseline 0.929)."),
    (dict(min=0.2, max=0.99, passed=True, metric="support", slice="answerable", observed_text="0.833"),
     "Support on answerable questions is 0.833, within the bound (at least 0.2 and at most 0.99) (66 questions; "
     "baseline 0.929)."),
    (dict(min=0.99, max=0.995, observed=1.0, observed_text="1", metric="recall", slice="all"),
     "R@k on all questions is 1, above the maximum 0.995 (66 questions; baseline 0.929)."),
    (dict(min=0.99, max=0.995, observed=0.5, observed_text="0.500", metric="recall", slice="all"),
     "R@k on all questions is 0.500, below the minimum 0.99 (66 questions; baseline 0.929)."),
    (dict(max=0.0, metric="disclosures", slice="all", aggregate="total", observed=1.0, observed_text="1", baseline=0,
          n=257), "Disclosures, total, on all questions is 1, above the maximum 0 (257 questions; baseline 0)."),
    (dict(max=3000.0, metric="latency", slice="all", aggregate="p95", observed=2546.2, observed_text="2546",
          baseline=2374.0, n=257, passed=True),
     "Latency (ms), p95, on all questions is 2546, within the bound (at most 3000) (257 records; baseline 2374)."),
    (dict(max=0.02, metric="failure_rate", slice="all", aggregate="rate", observed=0.037, observed_text="0.037",
          baseline=0.07407, n=27),
     "Failure rate on all questions is 0.037, above the maximum 0.02 (27 records; baseline 0.074)."),
    (dict(min=0.1, slice="type:nothing", observed=None, baseline=None, n=0, observed_text="n/a",
          reason="slice type:nothing has no question; a gate over an empty slice fails"),
     "Coverage on nothing questions: no value (slice type:nothing has no question; a gate over an empty slice "
     "fails)."),
    (SUPPORT_REGRESSIONS,
     "9 of 205 answerable questions scored worse on Support than the baseline (allowed 0)."),
    (OUTDATED_DROP, "Coverage on outdated questions dropped by 0.258 (31 questions): more than the 0.02 allowed, and "
                    "significant (one-sided p 0.010, alpha 0.05)."),
    (dict(OUTDATED_DROP, passed=True, observed=0.0322, p_value=1.0, observed_text="delta +0.032"),
     "Coverage on outdated questions rose by 0.032 (31 questions): within the 0.02 allowed, or not significant "
     "(one-sided p 1.000)."),
    (dict(OUTDATED_DROP, passed=True, p_value=None, test="ttest"),
     "Coverage on outdated questions dropped by 0.258 (31 questions): within bounds."),
    (dict(kind="agreement", metric="alignment", slice="all", aggregate="kappa", min=0.8, passed=True, observed=None,
          baseline=None, n=0, reason="no claim rests on an automatic alignment"),
     "Alignment agreement: no claim rests on an automatic alignment."),
]


@pytest.mark.parametrize("fields, sentence", CASES)
def test_every_kind_of_gate_reads_as_one_sentence(fields, sentence):
    gate = result(**fields)
    assert W.gate_sentence(gate) == sentence
    # the same from the stored JSON, and from a DataFrame record of it (absent numbers as NaN)
    stored = json.loads(json.dumps([gate.to_dict(), result(**CASES[0][0]).to_dict()]))
    assert W.gate_sentence(stored[0]) == sentence
    assert W.gate_sentence(pd.DataFrame(stored).to_dict("records")[0]) == sentence


@pytest.mark.parametrize("fields, sentence", CASES)
def test_rewording_the_threshold_text_leaves_the_sentence(fields, sentence, monkeypatch):
    gate = replace(result(**fields), threshold="at most a little, said differently")
    assert W.gate_sentence(gate) == sentence
    assert W.gate_sentence(gate.to_dict()) == sentence
    monkeypatch.setattr(W, "threshold_words", lambda g: "reworded")
    assert W.gate_sentence(result(**fields)) == sentence


def test_the_bound_in_words_for_every_kind():
    assert result(min=0.9).threshold == ">= 0.9"
    assert result(min=0.2, max=0.99).threshold == ">= 0.2 and <= 0.99"
    assert result(max=3000.0).threshold == "<= 3000"
    assert result(**SUPPORT_REGRESSIONS).threshold == "<= 0 regressed questions"
    assert result(**OUTDATED_DROP).threshold == ("drop <= 0.02 unless significant (randomization, one-sided alpha "
                                                  "0.05)")
    assert result(kind="agreement", min=0.6).threshold == "kappa >= 0.6"


def test_evaluation_keeps_the_bounds_as_fields():
    pol = P.parse_policy('name = "p"\nalpha = 0.1\nmin_alignment_kappa = 0.7\n'
                         '[[gates]]\nmetric = "coverage"\nmin = 0.5\nmax = 0.9\n'
                         '[[gates]]\nmetric = "support"\nmax_regressions = 2\n'
                         '[[gates]]\nmetric = "recall"\nmax_drop = 0.05\ntest = "ttest"\n')
    threshold, regressions, drop = (G.GateResult(name="", kind=g.kind, metric=g.metric, slice=str(g.slice),
                                                 aggregate=g.aggregate, threshold=g.threshold, passed=True,
                                                 observed=None, baseline=None, n=0, reason="", **g.bounds())
                                    for g in pol.gates)
    assert (threshold.min, threshold.max, threshold.alpha, threshold.test) == (0.5, 0.9, None, None)
    assert (regressions.max_regressions, regressions.max_drop) == (2, None)
    assert (drop.max_drop, drop.alpha, drop.test) == (0.05, 0.1, "ttest")
    assert [W.threshold_words(g) for g in (threshold, regressions, drop)] == [g.threshold for g in pol.gates]
    kappa = G.alignment_gate(0.7, object())
    assert (kappa.min, kappa.threshold) == (0.7, "kappa >= 0.7")
    assert set(W.BOUNDS) <= set(drop.to_dict())


@pytest.mark.parametrize("recorded, sentence", [
    ({"kind": "threshold", "metric": "coverage", "slice": "critical", "aggregate": "macro", "threshold": ">= 0.9",
      "passed": False, "observed": 0.5, "baseline": 0.9, "n": 4, "reason": "r"},
     "Coverage on critical questions is 0.500, below the minimum 0.9 (4 questions; baseline 0.900)."),
    ({"kind": "threshold", "metric": "support", "slice": "answerable", "aggregate": "macro",
      "threshold": ">= 0.2 and <= 0.99", "passed": True, "observed": 0.8333, "observed_text": "0.833",
      "baseline": 0.9, "n": 3},
     "Support on answerable questions is 0.833, within the bound (at least 0.2 and at most 0.99) (3 questions; "
     "baseline 0.900)."),
    ({"kind": "regressions", "metric": "support", "slice": "answerable", "threshold": "<= 0 regressed questions",
      "passed": False, "observed": 9.0, "n": 205},
     "9 of 205 answerable questions scored worse on Support than the baseline (allowed 0)."),
    ({"kind": "drop", "metric": "coverage", "slice": "type:outdated", "passed": False, "observed": -0.258, "n": 31,
      "threshold": "drop <= 0.02 unless significant (randomization, one-sided alpha 0.05)", "p_value": 0.00999,
      "observed_text": "delta -0.258"},
     "Coverage on outdated questions dropped by 0.258 (31 questions): more than the 0.02 allowed, and significant "
     "(one-sided p 0.010, alpha 0.05)."),
])
def test_a_gate_recorded_before_its_bounds_were_fields_reads_as_it_did(recorded, sentence):
    assert W.gate_sentence(recorded) == sentence
    assert W.gate_sentence(pd.DataFrame([recorded]).to_dict("records")[0]) == sentence

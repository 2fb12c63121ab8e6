"""Acceptance policies: parsing with line numbers, and every gate kind passing and failing."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pytest

from scoring.decide import gate_words as W
from scoring.decide import gates as G
from scoring.decide import policy as P
from scoring.metrics import OPERATIONAL
from scoring.errors import ValidationError

ISSUE_POLICY = '''name = "release-gate"
[[gates]]
name = "critical coverage"
metric = "coverage"        # registry name or seed alias
slice = "critical"         # all | answerable | unanswerable | critical | type:<t> | split:<s> | tag:<t>
aggregate = "macro"        # macro | pooled
min = 0.9                  # candidate aggregate >= min   (also: max)
[[gates]]
name = "no answerable question loses support"
metric = "support"
slice = "answerable"
max_regressions = 0        # questions whose value drops vs baseline
[[gates]]
name = "recall not significantly worse"
metric = "recall"
slice = "answerable"
max_drop = 0.02            # with alpha: fail only when the drop beyond max_drop is significant
alpha = 0.05
'''


def parse(text: str) -> P.Policy:
    return P.parse_policy(text, path="policy.toml")


def problems(text: str) -> list[str]:
    with pytest.raises(ValidationError) as info:
        parse(text)
    return [str(p) for p in info.value.problems]


# --- parsing -------------------------------------------------------------------------------------


def test_the_issue_example_parses():
    pol = parse(ISSUE_POLICY)
    assert pol.name == "release-gate"
    assert pol.sha256 == hashlib.sha256(ISSUE_POLICY.encode()).hexdigest()
    assert pol.text == ISSUE_POLICY
    cov, sup, rec = pol.gates
    assert (cov.kind, cov.metric, str(cov.slice), cov.aggregate, cov.min, cov.line) == (
        "threshold", "coverage", "critical", "macro", 0.9, 2)
    assert (sup.kind, sup.metric, str(sup.slice), sup.max_regressions, sup.line) == (
        "regressions", "support", "answerable", 0, 8)
    assert (rec.kind, rec.metric, rec.max_drop, rec.alpha, rec.test, rec.line) == (
        "drop", "recall", 0.02, 0.05, "randomization", 13)


def test_hash_is_of_the_file_bytes(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_bytes(ISSUE_POLICY.replace("\n", "\r\n").encode())
    pol = P.load_policy(path)
    assert pol.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert pol.path == str(path)


def test_registry_names_aliases_and_operational_metrics():
    pol = parse('''name = "x"
[[gates]]
metric = "R@k"
min = 0.5
[[gates]]
metric = "nDCG"
slice = "type:lookup"
min = 0.5
[[gates]]
metric = "Disclosures"
aggregate = "total"
max = 0
[[gates]]
metric = "latency_p95"
max = 2000
[[gates]]
metric = "cost"
aggregate = "total"
max = 1.5
[[gates]]
metric = "failure_rate"
slice = "tag:billing"
max = 0.01
''')
    assert [g.metric for g in pol.gates] == ["recall", "ndcg", "disclosures", "latency", "cost", "failure_rate"]
    assert [g.aggregate for g in pol.gates] == ["macro", "macro", "total", "p95", "total", "rate"]
    assert str(pol.gates[1].slice) == "type:lookup" and str(pol.gates[5].slice) == "tag:billing"
    assert pol.gates[0].name == "R@k on all"  # a default name when none is given


def test_toml_syntax_error_names_the_line():
    found = problems('name = "x"\n[[gates]]\nmetric = "recall"\nmin = = 3\n')
    assert len(found) == 1
    assert found[0].startswith("policy.toml:4: not valid TOML")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('name = "x"\ncolour = 1\n[[gates]]\nmetric = "recall"\nmin = 0.5\n', 2, "unknown key"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmin = 0.5\nmnimum = 3\n', 5, "unknown key"),
        ('name = "x"\n[[gates]]\nname = "a"\n\nmetric = "covrage"\nmin = 0.5\n', 5, "unknown metric"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nslice = "critic"\nmin = 0.5\n', 4, "a slice is"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nslice = "type:"\nmin = 0.5\n', 4, "a slice is"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmin = 0.5\n[[gates]]\nmetric = "support"\n', 5,
         "needs a threshold"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmin = 0.5\nmax_regressions = 0\n', 5, "one kind of threshold"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmin = 0.5\nalpha = 0.1\n', 5, "applies only to max_drop"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmin = 0.9\nmax = 0.5\n', 4, "above max"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmax_regressions = -1\n', 4, "whole number >= 0"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmax_regressions = true\n', 4, "whole number >= 0"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmax_drop = -0.1\n', 4, "max_drop is >= 0"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmax_drop = 0.1\nalpha = 1.5\n', 5, "between 0 and 1"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmax_drop = 0.1\ntest = "bayes"\n', 5, "test is one of"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmin = "high"\n', 4, "a number"),
        ('name = "x"\n[[gates]]\nmetric = "latency"\naggregate = "pooled"\nmax = 5\n', 4, "aggregate for latency"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\naggregate = "total"\nmin = 5\n', 4, "aggregate for R@k"),
        ('name = "x"\n[[gates]]\nmetric = "cost"\nmax_regressions = 0\n', 4, "measured per run"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\naggregate = "pooled"\nmax_drop = 0.1\n', 4,
         "aggregate does not apply"),
        ('name = "x"\nheldout_budget = -2\n[[gates]]\nmetric = "recall"\nmin = 0.1\n', 2, "heldout_budget"),
        ('name = "x"\n[[gates]]\nname = "same"\nmetric = "recall"\nmin = 0.1\n'
         '[[gates]]\nname = "same"\nmetric = "support"\nmin = 0.1\n', 6, "unique"),
    ],
)
def test_semantic_errors_name_the_line(text, line, words):
    found = problems(text)
    assert any(p.startswith(f"policy.toml:{line}:") and words in p for p in found), found


def test_missing_name_and_gates():
    found = problems('description = "nothing"\n')
    assert any("needs a name" in p for p in found)
    assert any("at least one [[gates]]" in p for p in found)


def test_every_problem_is_reported_at_once():
    found = problems('name = "x"\n[[gates]]\nmetric = "nope"\nmin = 1\n'
                     '[[gates]]\nmetric = "recall"\nslice = "?"\nmin = 1\n')
    assert [p.split(":")[1] for p in found] == ["3", "7"]


def test_load_policy_missing_file(tmp_path):
    with pytest.raises(ValidationError, match="cannot read the policy file"):
        P.load_policy(tmp_path / "absent.toml")


def test_parse_slice():
    assert P.parse_slice("split:heldout") == P.Slice("split", "heldout")
    assert str(P.parse_slice(" critical ")) == "critical"
    with pytest.raises(ValidationError):
        P.parse_slice("kind:x")


# --- evaluation against a stand-in comparison -----------------------------------------------------


@dataclass
class FakeEvidence:
    """Per-question values for a handful of questions; every question is in `all`.

    `values[side][metric]` maps question -> value (None = n/a); `slices` maps slice name -> questions.
    """

    values: dict[str, dict[str, dict[str, float | None]]]
    slices: dict[str, list[str]]
    disputed: set[str] = field(default_factory=set)
    operational: dict[tuple[str, str, str], float | None] = field(default_factory=dict)

    def slice_questions(self, slice_, *, exclude=None):
        qs = self.slices.get(str(slice_), [])
        return [q for q in qs if not (exclude == "disputed" and q in self.disputed)]

    def slice_values(self, kind):
        return sorted({k.split(":", 1)[1] for k in self.slices if k.startswith(kind + ":")})

    def paired_values(self, key, slice_, *, exclude=None):
        qs = self.slice_questions(slice_, exclude=exclude)
        b = [self.values["baseline"][key].get(q) for q in qs]
        c = [self.values["candidate"][key].get(q) for q in qs]
        keep = [i for i in range(len(qs)) if b[i] is not None and c[i] is not None]
        return np.array([b[i] for i in keep], float), np.array([c[i] for i in keep], float)

    def aggregate(self, side, key, slice_, aggregate, *, exclude=None):
        if key in OPERATIONAL:
            value = self.operational.get((side, key, aggregate))
            return value, 0 if value is None else 5
        qs = self.slice_questions(slice_, exclude=exclude)
        vals = [self.values[side][key].get(q) for q in qs]
        vals = [v for v in vals if v is not None]
        if not vals:
            return None, 0
        return (sum(vals) if aggregate == "total" else sum(vals) / len(vals)), len(vals)


QS = [f"q{i}" for i in range(1, 9)]


def evidence() -> FakeEvidence:
    # coverage: baseline all 1.0; candidate 1.0 except q2 = 0.5 and q3 = 0 (2 regressions)
    cov_b = {q: 1.0 for q in QS}
    cov_c = {**cov_b, "q2": 0.5, "q3": 0.0}
    # recall: candidate 0.1 worse on each of the 8 questions
    rec_b = {q: 0.8 for q in QS}
    rec_c = {q: 0.7 for q in QS}
    # disclosures: lower is better; candidate shows one restricted document on q4
    dis_b = {q: 0.0 for q in QS}
    dis_c = {**dis_b, "q4": 1.0}
    # support: n/a everywhere on the baseline
    return FakeEvidence(
        values={
            "baseline": {"coverage": cov_b, "recall": rec_b, "disclosures": dis_b, "support": {}},
            "candidate": {"coverage": cov_c, "recall": rec_c, "disclosures": dis_c, "support": {"q1": 1.0}},
        },
        slices={"all": QS, "critical": ["q1", "q2", "q3"], "answerable": QS, "type:lookup": ["q1", "q5"]},
        disputed={"q3"},
        operational={("candidate", "latency", "p95"): 880.0, ("baseline", "latency", "p95"): 700.0,
                     ("candidate", "failure_rate", "rate"): 0.2},
    )


def gate(text: str) -> P.Gate:
    return parse('name = "t"\n[[gates]]\n' + text).gates[0]


def run(text: str, ev: FakeEvidence | None = None, **kw) -> G.GateResult:
    return G.evaluate_gate(gate(text), ev or evidence(), **kw)


def test_threshold_min_and_max():
    # candidate coverage on critical: (1 + 0.5 + 0) / 3 = 0.5
    ok = run('metric = "coverage"\nslice = "critical"\nmin = 0.5\n')
    assert ok.passed and ok.observed == pytest.approx(0.5) and ok.n == 3 and ok.baseline == pytest.approx(1.0)
    low = run('metric = "coverage"\nslice = "critical"\nmin = 0.6\n')
    assert not low.passed and "below min 0.6" in low.reason
    high = run('metric = "coverage"\nslice = "critical"\nmax = 0.4\n')
    assert not high.passed and "above max 0.4" in high.reason
    both = run('metric = "coverage"\nslice = "critical"\nmin = 0.4\nmax = 0.6\n')
    assert both.passed


def test_threshold_total_on_a_count_metric():
    r = run('metric = "disclosures"\naggregate = "total"\nmax = 0\n')
    assert not r.passed and r.observed == 1.0
    assert run('metric = "disclosures"\naggregate = "total"\nmax = 1\n').passed


def test_regressions_gate():
    r = run('metric = "coverage"\nmax_regressions = 1\n')
    assert not r.passed and r.observed == 2 and r.n == 8
    assert run('metric = "coverage"\nmax_regressions = 2\n').passed


def test_regressions_follow_the_metric_direction():
    # disclosures going from 0 to 1 is a regression (lower is better)
    r = run('metric = "disclosures"\nmax_regressions = 0\n')
    assert not r.passed and r.observed == 1


def test_drop_gate_fails_only_when_the_drop_is_significant():
    # recall 0.1 worse on all 8: shifted by margin 0.02 every difference is -0.08; exact one-sided p = 1/256
    r = run('metric = "recall"\nmax_drop = 0.02\nalpha = 0.05\n')
    assert not r.passed and r.p_value == pytest.approx(1 / 256)
    assert r.observed == pytest.approx(-0.1)
    # a margin of 0.1 covers the drop: shifted differences are 0, p = 1
    tolerant = run('metric = "recall"\nmax_drop = 0.1\n')
    assert tolerant.passed and tolerant.p_value == pytest.approx(1.0)
    # on 2 questions the test cannot reach alpha: the gate passes and says it cannot fail
    small = run('metric = "recall"\nslice = "type:lookup"\nmax_drop = 0.02\n')
    assert small.passed and small.p_value == pytest.approx(1 / 4)
    assert "cannot fail" in small.warning
    # the t-test on 8 identical differences is undefined: passes, with the reason
    t = run('metric = "recall"\nmax_drop = 0.02\ntest = "ttest"\n')
    assert t.passed and t.p_value is None and "undefined" in t.warning


def test_operational_threshold_gates():
    assert run('metric = "latency"\nmax = 900\n').passed
    slow = run('metric = "latency"\nmax = 800\n')
    assert not slow.passed and slow.observed == 880.0 and slow.baseline == 700.0
    assert not run('metric = "failure_rate"\nmax = 0.1\n').passed
    nothing = run('metric = "cost"\nmax = 1\n')
    assert not nothing.passed and "no record in the slice has a USD value" in nothing.reason


@pytest.mark.parametrize("body", [
    'metric = "coverage"\nslice = "type:missing"\nmin = 0\n',
    'metric = "coverage"\nslice = "type:missing"\nmax_regressions = 5\n',
    'metric = "coverage"\nslice = "type:missing"\nmax_drop = 1\n',
    'metric = "latency"\nslice = "tag:none"\nmax = 10000\n',
])
def test_an_empty_slice_fails_for_every_gate_kind(body):
    r = run(body)
    assert not r.passed and r.n == 0 and "empty slice fails" in r.reason


def test_empty_slice_names_the_known_values():
    r = run('metric = "coverage"\nslice = "type:lokup"\nmin = 0\n')
    assert "type values in this suite: lookup" in r.reason


def test_all_na_pairs_fail_like_an_empty_slice():
    r = run('metric = "support"\nmax_regressions = 5\n')
    assert not r.passed and r.n == 0 and "all n/a" in r.reason
    r = run('metric = "support"\nslice = "type:lookup"\nmin = 0\n', ev=_without_support())
    assert not r.passed and "n/a" in r.reason


def _without_support() -> FakeEvidence:
    ev = evidence()
    ev.values["candidate"]["support"] = {}
    return ev


def test_verdict_pass_fail_and_disputed_recheck():
    pol = parse('name = "rg"\n'
                '[[gates]]\nname = "critical coverage"\nmetric = "coverage"\nslice = "critical"\nmin = 0.7\n'
                '[[gates]]\nname = "no coverage loss"\nmetric = "coverage"\nmax_regressions = 1\n')
    v = G.evaluate(pol, evidence(), n_disputed=1)
    assert v.verdict == "fail" and [g.passed for g in v.gates] == [False, False]
    assert v.policy_hash == pol.sha256 and v.policy_name == "rg"
    # without the disputed q3: critical coverage (1 + 0.5) / 2 = 0.75 passes; 1 regression passes
    assert v.disputed is not None and v.disputed.verdict == "pass"
    assert len(v.disputed.differences) == 2
    assert "fails with disputed questions, passes without them" in v.disputed.differences[0]
    assert any("depends on 1 disputed" in w for w in v.warnings)
    no_dispute = G.evaluate(pol, evidence(), n_disputed=0)
    assert no_dispute.disputed is None


def test_verdict_passes_only_when_every_gate_passes():
    pol = parse('name = "rg"\n[[gates]]\nmetric = "coverage"\nmin = 0.5\n')
    assert G.evaluate(pol, evidence()).verdict == "pass"


def test_heldout_warning():
    pol = parse('name = "rg"\nheldout_budget = 2\n[[gates]]\nmetric = "coverage"\nmin = 0.5\n')
    assert G.heldout_warning(pol, 2, "s", "1") is None
    text = G.heldout_warning(pol, 3, "s", "1")
    assert "used in 3 comparisons" in text and "heldout_budget of 2" in text and "development data" in text
    assert G.heldout_warning(parse(ISSUE_POLICY), 50, "s", "1") is None


@pytest.mark.parametrize("metric, aggregate, observed, bound, shown", [
    ("cost", "mean", 0.00327, "max = 0.00325", "0.00327"),   # three decimals would show 0.003: under the max
    ("latency", "p95", 2546.4, "max = 2546.3", "2546.4"),    # four significant digits would show 2546
    ("latency", "p95", 2546.2, "max = 2546.3", "2546"),      # on the right side already: 2546 <= 2546.3
    ("cost", "mean", 0.0031, "max = 0.004", "0.003"),        # far from the bound: the usual three decimals
])
def test_a_gate_line_never_rounds_across_its_threshold(metric, aggregate, observed, bound, shown):
    ev = evidence()
    ev.operational[("candidate", metric, aggregate)] = observed
    r = run(f'metric = "{metric}"\naggregate = "{aggregate}"\n{bound}\n', ev)
    threshold = float(bound.split("= ")[1])
    assert r.passed == (observed <= threshold)
    assert r.observed_text == shown
    assert f"= {shown} is " in r.reason
    assert (float(r.observed_text) <= threshold) == r.passed  # the figure shown reads as the verdict does


def test_format_value_keeps_a_value_off_its_bounds():
    assert P.format_value(0.9004, 0.9) == "0.9004" and P.format_value(0.8996, 0.9) == "0.8996"
    assert P.format_value(0.9 + 1e-12, 0.9) == "0.900"  # within the tie tolerance: equal to it
    assert P.format_value(0.123, None) == "0.123" and P.format_value(None, 0.5) == "n/a"
    assert P.format_bound(0.00325) == "0.00325" and P.format_bound(3000.0) == "3000"
    assert P.format_bound(0.123456789) == "0.123456789"  # printed in full, not to six digits


# --- rules, power and inconclusive verdicts -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmax_drop = 0.1\nrule = "equivalence"\n', 5, "rule is one of"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmin = 0.5\nrule = "non_inferiority"\n', 5,
         "applies only to max_drop"),
        ('name = "x"\n[[gates]]\nmetric = "recall"\nmax_drop = 0.1\ntest = "wilcoxon"\nrule = "non_inferiority"\n',
         5, "bounds a median shift"),
        ('name = "x"\nmin_power = 1.2\n[[gates]]\nmetric = "recall"\nmin = 0.1\n', 2, "min_power is a number"),
        ('name = "x"\npower = 0\n[[gates]]\nmetric = "recall"\nmin = 0.1\n', 2, "power is a number"),
        ('name = "x"\nlatency_budget_ms = -5\n[[gates]]\nmetric = "recall"\nmin = 0.1\n', 2, "latency_budget_ms"),
        ('name = "x"\ncost_budget_usd = "a lot"\n[[gates]]\nmetric = "recall"\nmin = 0.1\n', 2, "cost_budget_usd"),
    ],
)
def test_rule_power_and_budget_errors_name_the_line(text, line, words):
    found = problems(text)
    assert any(p.startswith(f"policy.toml:{line}:") and words in p for p in found), found


def test_rule_power_and_budgets_parse_with_their_defaults():
    pol = parse('name = "x"\n[[gates]]\nmetric = "recall"\nmax_drop = 0.1\n'
                '[[gates]]\nmetric = "coverage"\nmax_drop = 0.1\nrule = "non_inferiority"\ntest = "ttest"\n')
    old, ni = pol.gates
    assert (old.rule, old.power, old.min_power, pol.min_power, pol.power) == ("significant_drop", 0.8, None, None, 0.8)
    assert (ni.rule, ni.test) == ("non_inferiority", "ttest")
    assert ni.threshold == "upper 95% bound of the drop < 0.1 (ttest, non-inferiority)"
    assert old.threshold == "drop <= 0.1 unless significant (randomization, one-sided alpha 0.05)"
    pol = parse('name = "x"\nmin_power = 0.9\nlatency_budget_ms = 3000\ncost_budget_usd = 0.01\n'
                '[[gates]]\nmetric = "recall"\nmax_drop = 0.1\n[[gates]]\nmetric = "latency"\nmax = 2000\n'
                '[[gates]]\nmetric = "cost"\nmax = 0.004\n')
    drop, latency, cost = pol.gates
    assert (drop.power, drop.min_power, pol.power) == (0.9, 0.9, 0.9)  # power follows min_power unless set
    assert (latency.budget, cost.budget, drop.budget) == (3000.0, 0.01, None)
    assert parse('name = "x"\nmin_power = 0.9\npower = 0.7\n[[gates]]\nmetric = "recall"\nmax_drop = 0.1\n'
                 ).gates[0].power == 0.7


def spread_evidence(base: list[float], cand: list[float]) -> FakeEvidence:
    qs = [f"q{i}" for i in range(len(base))]
    return FakeEvidence(values={"baseline": {"recall": dict(zip(qs, base))},
                                "candidate": {"recall": dict(zip(qs, cand))}},
                        slices={"all": qs})


def test_a_non_inferiority_gate_passes_only_when_the_bound_is_below_the_margin():
    # 8 questions, recall 0.1 worse on each: the drop is shown to be about 0.1, not below 0.05
    r = run('metric = "recall"\nmax_drop = 0.05\nrule = "non_inferiority"\ntest = "ttest"\n')
    assert not r.passed and r.outcome == "fail" and r.bound == pytest.approx(0.1)  # no spread: the bound is the drop
    assert "not shown within it" in r.reason
    # a margin of 0.2 is shown: every difference -0.1 + 0.2 > 0, the one-sided p is 1/256 (randomization)
    r = run('metric = "recall"\nmax_drop = 0.2\nrule = "non_inferiority"\n')
    assert r.passed and r.p_value == pytest.approx(1 / 256) and "below the margin 0.2" in r.reason
    assert r.bound == pytest.approx(0.1, abs=1e-4)
    # 4 differing pairs cannot show anything at alpha 0.05 with the sign-flip test (1/16): it fails, no bound
    r = run('metric = "recall"\nslice = "type:lookup"\nmax_drop = 0.5\nrule = "non_inferiority"\n')
    assert not r.passed and r.p_value == pytest.approx(1 / 4) and r.bound is None and r.mde is None


def test_min_power_makes_an_underpowered_gate_inconclusive_not_passed():
    rng = np.random.default_rng(5)
    base = [0.5] * 12
    cand = list(0.5 + rng.normal(0, 0.3, 12))
    body = 'metric = "recall"\nmax_drop = 0.02\ntest = "ttest"\n'
    plain = G.evaluate_gate(gate(body), spread_evidence(base, cand))
    assert plain.passed and plain.outcome == "pass" and plain.power_at_margin < 0.2 and plain.mde > 0.2
    pol = parse('name = "t"\nmin_power = 0.8\n[[gates]]\n' + body)
    unsure = G.evaluate_gate(pol.gates[0], spread_evidence(base, cand))
    assert unsure.outcome == "inconclusive" and not unsure.passed and unsure.inconclusive
    assert unsure.questions_needed > 1000 and unsure.min_power == 0.8
    v = G.evaluate(pol, spread_evidence(base, cand))
    assert v.verdict == "inconclusive" and v.inconclusive and not v.failed and not v.passed
    assert v.inconclusive_gates == v.gates and v.failed_gates == ()
    # a failing gate decides: fail, whatever the others could not tell
    both = parse('name = "t"\nmin_power = 0.8\n[[gates]]\n' + body
                 + '[[gates]]\nname = "high"\nmetric = "recall"\nmin = 0.99\n')
    assert G.evaluate(both, spread_evidence(base, cand)).verdict == "fail"
    # a gate that fails is never made inconclusive: a significant drop is conclusive at any power
    drop = parse('name = "t"\nmin_power = 0.99\n[[gates]]\nmetric = "recall"\nmax_drop = 0.02\n')
    assert G.evaluate(drop, evidence()).gates[0].outcome == "fail"


def test_verdict_of_orders_fail_inconclusive_pass():
    def g(outcome):
        return G.GateResult(name=outcome, kind="drop", metric="recall", slice="all", aggregate="per question",
                            threshold="", passed=outcome == "pass", observed=0.0, baseline=0.0, n=3, reason="",
                            outcome=outcome)
    assert G.verdict_of([g("pass"), g("inconclusive")]) == "inconclusive"
    assert G.verdict_of([g("inconclusive"), g("fail")]) == "fail"
    assert G.verdict_of([g("pass")]) == "pass"
    with pytest.raises(ValueError, match="contradicts"):
        G.GateResult(name="x", kind="drop", metric="recall", slice="all", aggregate="", threshold="", passed=True,
                     observed=0.0, baseline=0.0, n=3, reason="", outcome="inconclusive")
    assert g("inconclusive").to_dict()["outcome"] == "inconclusive"


def test_every_drop_gate_reports_what_it_can_detect():
    r = run('metric = "recall"\nmax_drop = 0.02\n')  # 8 identical differences: no spread
    assert r.mde == 0.0 and r.power_at_margin == 1.0 and r.power == 0.8 and r.sd == 0.0
    small = run('metric = "recall"\nslice = "type:lookup"\nmax_drop = 0.02\n')  # 2 pairs: 1/4 > 0.05
    assert small.mde is None and small.power_at_margin == 0.0
    assert "cannot detect a drop of any size" in W.detection_words(small)

"""The metric registry is the one declaration both implementations and every reader follow."""
from __future__ import annotations

import pytest
from seed_fixture import CASES, CORPUS, RUNS
from fixtures import engine_rows, engine_scores

from scoring import REGISTRY, ValidationError, evaluate, metric, parse_measure
from scoring.metrics import engine
from scoring.metrics.reference import Labels, Output, score_question

KEYS = [m.key for m in REGISTRY]
COUNTS = ("n_claims", "n_supported", "n_expected", "n_expected_supported", "n_relevant", "n_hits", "n_judged", "n_retrieved",
          "n_supported_graded", "n_expected_supported_graded", "k")


def _reference_row() -> dict:
    labels = Labels({"owners": 1}, {"aurora": frozenset({"owners"})})
    return score_question(labels, Output(("owners",), (("aurora", ("owners",)),)), k=2, known=CORPUS)


def _engine_rows() -> dict:
    outputs = {(s, q): RUNS[q][s] for q in CASES for s in RUNS[q]}
    scores, _ = engine_scores(engine_rows(CORPUS, CASES, outputs, k=2))
    return scores


def test_every_metric_has_one_sql_formula_and_every_formula_a_metric():
    assert set(engine.FORMULAS) == set(KEYS)
    assert len(KEYS) == len(set(KEYS))


def test_every_metric_has_a_reference_value_and_evaluate_returns_exactly_the_registry():
    row = _reference_row()
    assert set(KEYS) <= set(row)
    assert set(row) - set(KEYS) <= set(COUNTS)
    assert set(evaluate(CORPUS, CASES["owner"], RUNS["owner"]["B"])) == set(KEYS)


def test_every_metric_and_pooling_count_is_a_column_of_both_implementations():
    row = _reference_row()
    engine_row = next(iter(_engine_rows().values()))
    for m in REGISTRY:
        assert m.key in engine_row, m.key
        for count in m.pooled or ():
            assert count in row and count in engine_row, (m.key, count)
    assert set(COUNTS) <= set(engine_row)


def test_engine_metric_columns_have_the_stored_types():
    """Rates are DOUBLE, flags BOOLEAN, counts whole numbers, as `question_scores` stores them."""
    assert {m.key for m in REGISTRY if m.value == "flag"} == {"abstention_correct", "false_abstention"}
    assert {m.key for m in REGISTRY if m.value == "count"} == {"disclosures"}
    python_type = {"rate": float, "flag": bool, "count": int}
    for row in _engine_rows().values():
        for m in REGISTRY:
            value = row[m.key]
            if value is not None:
                assert type(value) is python_type[m.value], (m.key, type(value))


@pytest.mark.parametrize(
    "name, canonical",
    [
        ("precision", "P@k"),
        ("recall", "R@k"),
        ("rr", "RR@k"),
        ("mrr", "RR@k"),
        ("recip_rank", "RR@k"),
        ("ndcg", "nDCG@k"),
        ("map", "AP@k"),
        ("ap", "AP@k"),
        ("f1", "F1@k"),
        ("success", "Success@k"),
        ("support", "Support"),
        ("coverage", "Coverage"),
        ("abstention_correct", "Abstention"),
        ("abstention", "Abstention"),
        ("disclosures", "Disclosures"),
        ("P@k", "P@k"),
        ("  NDCG  ", "nDCG@k"),
    ],
)
def test_names_and_seed_aliases_resolve(name, canonical):
    assert metric(name).name == canonical


def test_every_declared_name_resolves_to_its_own_metric():
    for m in REGISTRY:
        for name in (m.name, m.family, m.key, *m.aliases, m.family.upper(), m.family.lower()):
            assert metric(name) is m, name


def test_seed_keys_are_registry_keys():
    seed_keys = ("precision", "recall", "rr", "support", "coverage", "abstention_correct")
    assert [metric(key).key for key in seed_keys] == list(seed_keys)


def test_every_metric_declares_its_contract():
    for m in REGISTRY:
        assert m.level in ("retrieval", "answer")
        assert m.cutoff in ("required", "optional", "none")
        assert m.numerator and m.denominator and m.na_rule and m.help and m.failure, m.key
        assert (m.level == "retrieval") == (m.cutoff != "none"), m.key
    assert [m.key for m in REGISTRY if not m.higher_is_better] == ["false_abstention", "disclosures"]


@pytest.mark.parametrize(
    "text",
    ["P@1", "P@5", "R@10", "nDCG@20", "nDCG@100000", "F1@3", "Success@1", "RR", "RR@10", "AP", "AP@100",
     "P(rel=2)@5", "RR(rel=3)", "nDCG(rel=2)@10",
     "Support", "Coverage", "Abstention", "Disclosures"],
)
def test_canonical_measures_round_trip(text):
    assert str(parse_measure(text)) == text
    assert parse_measure(str(parse_measure(text))) == parse_measure(text)


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("P_10", "P@10"),
        ("P.10", "P@10"),
        ("ndcg_cut.10", "nDCG@10"),
        ("recall_5", "R@5"),
        ("ndcg_cut_20", "nDCG@20"),
        ("map_cut_100", "AP@100"),
        ("success_1", "Success@1"),
        ("recip_rank", "RR"),
        ("map", "AP"),
        ("mrr@10", "RR@10"),
        ("precision@2", "P@2"),
        ("NDCG@5", "nDCG@5"),
    ],
)
def test_trec_names_and_aliases_parse_to_canonical_measures(text, canonical):
    assert str(parse_measure(text)) == canonical


def test_default_cutoff_applies_only_where_a_cutoff_is_required():
    assert str(parse_measure("precision", default_cutoff=5)) == "P@5"
    assert str(parse_measure("RR", default_cutoff=5)) == "RR"
    assert str(parse_measure("support", default_cutoff=5)) == "Support"
    assert parse_measure("AP").cutoff is None


@pytest.mark.parametrize(
    "text, rule",
    [
        ("bleu", "unknown metric"),
        ("Q@5", "unknown metric"),
        ("", "unknown metric"),
        ("Support@5", "takes no cutoff"),
        ("Coverage@1", "takes no cutoff"),
        ("Abstention@2", "takes no cutoff"),
        ("Disclosures@3", "takes no cutoff"),
        ("P", "needs a cutoff"),
        ("nDCG", "needs a cutoff"),
        ("P@0", "whole number from 1"),
        ("P@-1", "whole number from 1"),
        ("P@1.5", "whole number from 1"),
        ("P@", "whole number from 1"),
        ("P@ten", "whole number from 1"),
        ("P@100001", "whole number from 1"),
        ("P(rel=0)@5", "relevance level is a whole number >= 1"),
        ("P(rel=two)@5", "relevance level is a whole number >= 1"),
        ("Support(rel=2)", "does not depend on a relevance level"),
        ("P(rel=2@5", "a measure is a metric name"),
    ],
)
def test_bad_measures_are_rejected_with_the_rule(text, rule):
    with pytest.raises(ValidationError) as err:
        parse_measure(text)
    assert rule in str(err.value)
    # The message quotes the offending part: the whole measure, or its unknown metric name.
    assert repr(text) in str(err.value) or repr(text.partition("@")[0]) in str(err.value)


def test_the_dashboard_tooltip_states_every_part_of_the_contract():
    from dashboard.display import escape, metric_help

    for m in REGISTRY:
        shown = metric_help(m.key)
        for part in (m.help, m.numerator, m.denominator, m.na_rule, m.failure, m.pooling):
            assert escape(part) in shown, (m.key, part)
